/*
 * cli.h - shared pieces of the allocrr command line: the command table's
 * entry points, exit codes and the one place that formats errors.
 *
 * Every command: `--help` prints usage to stdout and exits 0; `--version`
 * prints the version; bad usage exits 2 with a one-line message and a hint;
 * bad input exits 1 with `allocrr: 'FILE': what at offset N`. Options are
 * parsed, and --help written, from one table per command (options.h).
 */
#ifndef ARR_CLI_H
#define ARR_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "allocrr/trace.h"

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* "allocrr: " + message, to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Bad usage: message, then "try 'allocrr CMD --help'". Returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report a trace error with file, offset and detail. Returns EXIT_BAD_INPUT. */
int cli_trace_error(const char *path, const struct arr_trace *tr, int rc);
/* Print "allocrr CMD VERSION". Returns 0. */
int cli_version(void);
/* "1.5 MiB": b in the largest binary unit that keeps it >= 1. */
void cli_human_bytes(char *buf, size_t cap, uint64_t b);
/* A whole number grouped in thousands, as every table prints counts: 1,201,506. */
void cli_count(char *buf, size_t cap, double v);

/* Long work's progress on stderr, one line rewritten in place (the caller
 * shows it only when stderr is a terminal): what, a bar of frac (0 to 1),
 * the rate in unit per second and the time left, within 80 columns. */
void cli_progress(const char *what, double frac, double rate, const char *unit, double elapsed);
void cli_progress_clear(void);
/* Directory holding the running allocrr executable. */
const char *cli_exe_dir(void);

/* ---- replays.c: the replay-side driver, shared by replay, analyze and report ---- */
#include <stddef.h>

#include "allocrr/replay.h"
#include "allocrr/replay_analysis.h"

/* What to replay, how often and how to talk about it. */
struct cli_replay_plan {
	const char *cmd;                       /* for usage errors: "try 'allocrr CMD --help'" */
	unsigned runs;                         /* timed replays per allocator, >= 1: medians and min-max */
	int zeroing;                           /* also replay calloc as malloc, and as malloc + memset */
	int fragmentation;                     /* one more replay that tracks live and usable bytes */
	struct arr_replay_options opt;         /* threads, touch, samples, latency sampling */
	int touch_set;                         /* opt.touch was asked for: no automatic choice */
	const char *cache_dir;                 /* workload cache; NULL: TRACE.wl */
	int partial, rebuild;                  /* replay a truncated trace; prepare even if cached */
	int quiet;                             /* no notes on stderr */
	int progress;                          /* a progress line on stderr (when it is a terminal) */
	unsigned points;                       /* timeline points in the document, at most */
	const struct arr_replay_phase *phases; /* RSS growth per phase (call ranges) */
	size_t nphases;
	/* When not NULL: timed[i] gets spec i's timed run of median wall time (the
	 * caller releases it) and timed_ok[i] says whether it ran. */
	struct arr_replay_result *timed;
	int *timed_ok;
};
#define CLI_REPLAY_PLAN_INIT                                                                               \
	{                                                                                                  \
		"replay", 1, 1, 1, ARR_REPLAY_OPTIONS_INIT, 0, NULL, 0, 0, 0, 0, 2000, NULL, 0, NULL, NULL \
	}

/* Where the engine and the built-in allocator are. */
struct cli_replay_env {
	char engine[4096];
	char builtin_lib[4096]; /* may not exist */
};
/* Find them; 0, or EXIT_BAD_INPUT with the error printed. */
int cli_replay_env_find(struct cli_replay_env *env);
/* The default allocators (glibc, and builtin if built) into specs[2]; returns how many. */
size_t cli_replay_default_specs(const struct cli_replay_env *env, const char **specs);
/* Resolve one spec: 0, EXIT_USAGE (unknown, bad tunables) or EXIT_BAD_INPUT, error printed. */
int cli_replay_resolve(const char *cmd, const struct cli_replay_env *env, const char *spec, struct arr_allocator *out);
/* Make sure trace's workload exists (prepare it if absent or stale): 0 and wl_path,
 * *info, or an exit code with the error printed (trace errors name the offset). */
int cli_replay_workload(const char *trace, const struct cli_replay_plan *plan, char *wl_path, size_t cap,
			struct arr_workload_info *info);
/* One replay in a fresh engine: 0 and *res, or EXIT_BAD_INPUT with the error printed. */
int cli_replay_once(const struct cli_replay_env *env, const struct arr_allocator *a, const char *wl_path,
		    const struct arr_replay_options *opt, struct arr_replay_result *res);

/*
 * The replay-side analyses of trace into each allocator of specs (glibc and
 * builtin when n is 0): one object appended to `allocators` (an arr_doc
 * array) per allocator, keys as docs/report.md "Replay analyses". Returns 0,
 * or the exit code of the first failure (EXIT_USAGE for a bad spec, before
 * anything runs; EXIT_BAD_INPUT for a bad trace, a missing library or an
 * engine that failed: the other allocators still run). Errors are printed,
 * one line each.
 */
int cli_replays_analyze(const char *trace, const char *const *specs, size_t n, const struct cli_replay_plan *plan,
			struct arr_doc *allocators);

/*
 * Trace families (family.c): the traces one `allocrr record` wrote for a
 * process tree, FILE and FILE.PID[.N], found from any one of them and read
 * from their headers and chunk headers only (no events decoded).
 */
struct cli_family_member {
	char *path;
	const char *program; /* last component of exe */
	char *exe, *argv;
	int64_t pid, ppid;
	uint64_t start_ns; /* CLOCK_REALTIME at the trace's start */
	uint64_t events;   /* events of the process's threads (not RSS samples) */
	uint64_t duration_ns;
	uint64_t file_size;
	int clean;           /* ended with an END chunk */
	unsigned end_reason; /* enum arr_end_reason; ARR_END_NONE when truncated */
	int parent;          /* index of the parent member, -1 for a top one */
	int by_exec;         /* the parent is the image this process exec'd from */
	int head, next;      /* the process's first image; its next (exec), or -1 */
	int marked;          /* among the largest traces that hold most events */
};
struct cli_family {
	char *base;                  /* FILE */
	struct cli_family_member *m; /* by start time */
	size_t n;
	uint64_t events;
	char *bad_path; /* after a failed open: the trace that could not be read */
};
/* FILE.PID or FILE.PID.N as a name of base's family. */
int cli_family_is_member_name(const char *name, const char *base);
/* The family of the trace at path (path itself, or FILE of FILE.PID).
 * Returns 0 or a negative code (f->bad_path names the unreadable trace);
 * release f in either case. */
int cli_family_open(struct cli_family *f, const char *path);
void cli_family_release(struct cli_family *f);
/* The largest member whose program (exe's or argv[0]'s last component) or
 * pid is select; the largest of all when select is NULL or "". -1: none. */
int cli_family_select(const struct cli_family *f, const char *select);
/* The tree: pid, program, events, duration, trace, the largest marked;
 * unless all: beyond a dozen traces, the processes that lead to no marked
 * one summed in a line, and a family of one trace in one line. */
void cli_family_print_tree(FILE *out, const struct cli_family *f, int all);
/*
 * A command's TRACE argument: a trace, any trace of a family, or FILE@NAME,
 * with --select NAME (or NULL): the path of the chosen trace into out. Says
 * on stderr which it chose when the family has several (unless quiet).
 * Returns 0, or an exit code after printing the error.
 */
int cli_family_resolve(const char *arg, const char *select, int quiet, char *out, size_t cap);

#endif

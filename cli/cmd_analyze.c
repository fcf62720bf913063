/*
 * cmd_analyze.c - `allocrr analyze`: the trace-side analyses of one or more
 * traces in one pass each (analyzers/), as text or as the JSON document
 * documented in docs/report.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/analysis.h"
#include "allocrr/stacks.h"
#include "cli.h"
#include "options.h"

#ifndef ALLOCRR_VERSION
#define ALLOCRR_VERSION "0.0.0"
#endif

#define MAX_ALLOCATORS 16
#define MAX_PHASES 64

static const struct cli_usage usage = {
	"analyze",
	"usage: allocrr analyze [--what LIST] [-a ALLOCATOR]... [--trace-only] [--json]\n"
	"                       [--top N] [--points N] [--phase NAME:FROM:TO]...\n"
	"                       [--collapsed FILE] TRACE[@NAME]...\n",
	"Analyse where a recorded program's memory goes, in one pass over each\n"
	"trace: calls and sizes, lifetimes and temporary allocations, live bytes\n"
	"over time, leaks and failed calls, cross-thread frees, recorded RSS\n"
	"against live bytes, calloc on fresh or reused memory, and phases.\n",
	"Progress (events, rate, time left) goes to stderr when it is a terminal.\n"
	"Exit status: 0, 1 for an unreadable or damaged trace, 2 for bad usage.\n",
	NULL,
	0,
};

struct progress {
	const char *path;
	struct timespec start;
	int shown;
};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void show_progress(void *ctx, uint64_t events, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	double s = since(&p->start);
	cli_progress(p->path, total ? (double)done / (double)total : 0, s > 0 ? (double)events / s : 0, "events", s);
	p->shown = 1;
}

/* "1.5", "200ms", "3000ev": 0 and *v (ns or events), *events set (2: a
 * bare number, seconds unless the other bound is in events); else -1 */
static int parse_pos(const char *s, size_t n, uint64_t *v, int *events)
{
	char buf[64];
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	char *end;
	errno = 0;
	double x = strtod(buf, &end);
	if (end == buf || errno || x < 0 || !isfinite(x))
		return -1;
	double mul = 1e9;
	*events = 0;
	if (!strcmp(end, "ev")) {
		*events = 1;
		mul = 1;
	} else if (!strcmp(end, "ms")) {
		mul = 1e6;
	} else if (!strcmp(end, "us")) {
		mul = 1e3;
	} else if (!strcmp(end, "ns")) {
		mul = 1;
	} else if (*end && strcmp(end, "s")) {
		return -1;
	} else if (!*end) {
		*events = 2;
	}
	double r = x * mul;
	if (r >= 1.8e19)
		return -1;
	*v = (uint64_t)r;
	return 0;
}

static int parse_phase(const char *arg, struct arr_phase_spec *ph)
{
	const char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || c1 == arg || (size_t)(c1 - arg) >= sizeof ph->name)
		return -1;
	memset(ph, 0, sizeof *ph);
	memcpy(ph->name, arg, (size_t)(c1 - arg));
	int ev_from, ev_to;
	if (parse_pos(c1 + 1, (size_t)(c2 - c1 - 1), &ph->from, &ev_from))
		return -1;
	if (!c2[1]) {
		ph->to = UINT64_MAX;
		ev_to = ev_from;
	} else if (parse_pos(c2 + 1, strlen(c2 + 1), &ph->to, &ev_to)) {
		return -1;
	}
	/* a bare number takes the other bound's unit when that one counts events */
	if (ev_from == 2 && ev_to == 1)
		ph->from /= 1000000000u, ev_from = 1;
	if (ev_to == 2 && ev_from == 1 && ph->to != UINT64_MAX)
		ph->to /= 1000000000u, ev_to = 1;
	ev_from = ev_from == 2 ? 0 : ev_from;
	ev_to = ev_to == 2 ? 0 : ev_to;
	if (ev_from != ev_to || ph->to <= ph->from)
		return -1;
	ph->by_events = ev_from;
	return 0;
}

/* --what: the sections, and that they were picked. */
struct what_arg {
	uint32_t *what;
	int *given;
};

static int parse_what(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct what_arg *w = target;
	const char *bad;
	size_t n;
	if (arr_analysis_parse_what(arg, w->what, &bad, &n))
		return cli_usage_error(cmd, "%s: unknown section '%.*s'", opt, (int)n, bad);
	*w->given = 1;
	return 0;
}

struct phases {
	struct arr_phase_spec *v;
	size_t n;
};

static int add_phase(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct phases *p = target;
	if (p->n == MAX_PHASES)
		return cli_usage_error(cmd, "at most %d phases", MAX_PHASES);
	if (parse_phase(arg, &p->v[p->n]))
		return cli_usage_error(cmd, "%s: want NAME:FROM:TO (e.g. warmup:0:1.5s or load:1000ev:), not '%s'", opt,
				       arg);
	p->n++;
	return 0;
}

/* Analyse one trace into a new element of traces. Returns an exit status. */
static int analyze_one(const char *path, const struct arr_analysis_options *opt, struct arr_doc *traces)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	if (rc) {
		rc = cli_trace_error(path, tr, rc);
		arr_trace_close(tr);
		return rc;
	}
	struct arr_analysis_options o = *opt;
	uint32_t all = (1u << ARR_AN_COUNT_) - 1;
	if ((((opt->what & (1u << ARR_AN_SITES)) && opt->what != all) || opt->collapsed) &&
	    !(arr_trace_meta(tr)->features & ARR_TRACE_FEAT_STACKS))
		fprintf(stderr, "allocrr analyze: note: '%s' has no call stacks (record with --stacks): no sites\n",
			path);
	struct progress pr = {.path = path};
	if (isatty(STDERR_FILENO)) {
		clock_gettime(CLOCK_MONOTONIC, &pr.start);
		o.progress = show_progress;
		o.progress_ctx = &pr;
	}
	struct arr_doc *doc = arr_doc_push_obj(traces);
	rc = doc ? arr_analyze_trace(tr, &o, doc) : ARR_ENOMEM;
	if (pr.shown)
		fputs("\r\033[K", stderr);
	int status = 0;
	if (rc == ARR_ENOMEM) {
		cli_error("'%s': %s", path, arr_strerror(rc));
		status = EXIT_BAD_INPUT;
	} else if (rc) {
		status = cli_trace_error(path, tr, rc);
		/* Cut before its first events chunk, a trace has nothing to show but zeros,
		 * which read as a program that allocated nothing: the error alone says it.
		 * Cut later, what was read stands, marked as a part of the run. */
		double events = 0;
		arr_doc_as_num(arr_doc_path(doc, "trace.events"), &events);
		if (events == 0) {
			arr_doc_free(traces->items[--traces->len]);
		} else {
			struct arr_doc *ti = arr_doc_get(doc, "trace");
			arr_doc_set_bool(ti, "partial", 1);
			arr_doc_set_int(ti, "cut_at", (int64_t)arr_trace_error_offset(tr));
		}
	}
	arr_trace_close(tr);
	return status;
}

/* The command line of one `allocrr analyze`. */
struct analyze_args {
	struct arr_analysis_options opt;
	struct phases phases;
	const char *allocators[MAX_ALLOCATORS];
	size_t nalloc;
	int json, what_given, trace_only, replays;
	struct what_arg what_arg;
	unsigned runs;
	const char *select, *collapsed;
	char **traces;
	int ntraces;
};

/* Returns -1 to go on, or the exit code. */
static int parse_args(struct analyze_args *a, int argc, char **argv)
{
	static struct arr_phase_spec phase_v[MAX_PHASES];
	memset(a, 0, sizeof *a);
	a->opt = (struct arr_analysis_options)ARR_ANALYSIS_OPTIONS_INIT;
	a->phases.v = phase_v;
	a->what_arg = (struct what_arg){&a->opt.what, &a->what_given};
	a->runs = 1;
	int first;
	const struct cli_option opts[] = {
		CLI_CALLBACK('w', "what", CLI_ARG_REQUIRED, "LIST", &a->what_arg, parse_what,
			     "sections to compute, comma-separated (default all):\n"
			     "summary,sizes,lifetimes,live,leaks,threads,rss,\n"
			     "zeroing,phases,sites"),
		CLI_LIST('a', "allocator", "A", a->allocators, &a->nalloc, MAX_ALLOCATORS,
			 "replay into allocator A too (repeatable): fragmentation,\n"
			 "zeroing cost, latency and RSS per allocator. Without\n"
			 "-a, --what or --trace-only: glibc, and builtin if built"),
		CLI_FLAG(0, "trace-only", &a->trace_only, "no replays: the trace's own analyses alone"),
		CLI_UINT(0, "runs", "N", &a->runs, 1, 1000,
			 "timed replays per allocator (medians, min-max; default 1)"),
		CLI_STRING(0, "select", "NAME", &a->select,
			   "of a family of traces (TRACE, TRACE.PID... of one\n"
			   "recording), the largest of program NAME (or pid);\n"
			   "TRACE@NAME says the same; default: the largest trace\n"
			   "when TRACE is the top one of its family"),
		CLI_FLAG('j', "json", &a->json, "print the analysis document as JSON (docs/report.md)"),
		CLI_STRING(0, "collapsed", "FILE", &a->collapsed,
			   "also write collapsed stacks (traces recorded with\n"
			   "`allocrr record --stacks`): bytes allocated, leaked and\n"
			   "live at the peak, one line per path, outermost frame\n"
			   "first, under the roots allocations, leaks, live_at_peak\n"
			   "(\"allocations;main;f;g 1234\"; _estimated when sampled).\n"
			   "One graph: grep '^leaks;' FILE | flamegraph.pl"),
		CLI_UINT(0, "top", "N", &a->opt.top, 1, 100000,
			 "rows in the \"most frequent\"/\"largest\" tables and in\n"
			 "each call-site table (default 20)"),
		CLI_UINT(0, "points", "N", &a->opt.timeline_points, 2, 1000000,
			 "points in timelines, at most (default 2000)"),
		CLI_CALLBACK('p', "phase", CLI_ARG_REQUIRED, "NAME:FROM:TO", &a->phases, add_phase,
			     "a phase of the trace: FROM and TO are times since\n"
			     "the start (units s, ms, us, ns; default s) or event\n"
			     "numbers with the suffix ev; an empty TO is the end.\n"
			     "Marks the program recorded make phases of their own."),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error("analyze", "no trace given");
	if (a->nalloc && a->trace_only)
		return cli_usage_error("analyze", "--trace-only and --allocator exclude each other");
	if (a->collapsed && a->what_given && !(a->opt.what & (1u << ARR_AN_SITES)))
		return cli_usage_error("analyze", "--collapsed needs the sites section in --what");
	/* Replays when asked (-a), or by default when no section was picked. */
	a->replays = a->nalloc || (!a->what_given && !a->trace_only);
	a->opt.phases = a->phases.v;
	a->opt.nphases = a->phases.n;
	a->traces = argv + first;
	a->ntraces = argc - first;
	return -1;
}

/* Each trace's analyses, and its replays, into root's "traces". Returns 0
 * or the exit code of the last trace that failed (the others still ran). */
static int analyze_all(const struct analyze_args *a, struct arr_doc *root)
{
	struct arr_doc *traces = arr_doc_set_arr(root, "traces");
	int status = 0;
	for (int i = 0; i < a->ntraces; i++) {
		char chosen[4096];
		int rc = cli_family_resolve(a->traces[i], a->select, 0, chosen, sizeof chosen);
		if (rc) {
			status = rc;
			continue;
		}
		rc = analyze_one(chosen, &a->opt, traces);
		if (rc)
			status = rc;
		struct arr_doc *tdoc = arr_doc_at(traces, traces ? traces->len - 1 : 0);
		if (rc || !a->replays || !tdoc)
			continue;
		struct cli_replay_plan plan = CLI_REPLAY_PLAN_INIT;
		plan.cmd = "analyze";
		plan.runs = a->runs;
		plan.progress = 1;
		if (a->opt.timeline_points)
			plan.points = a->opt.timeline_points;
		if ((rc = cli_replays_analyze(chosen, a->allocators, a->nalloc, &plan,
					      arr_doc_set_arr(tdoc, "allocators"))))
			status = rc;
	}
	return status;
}

/* The document on stdout. Returns 0 or EXIT_BAD_INPUT. */
static int render(const struct arr_doc *root, int json)
{
	if (arr_doc_status(root)) {
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	int wrc = json ? arr_doc_write_json(stdout, root, 1) : arr_doc_render_text(stdout, root);
	if (json)
		fputc('\n', stdout);
	if (fflush(stdout) || wrc) {
		cli_error("cannot write the output: %s", strerror(errno));
		return EXIT_BAD_INPUT;
	}
	return 0;
}

int cmd_analyze(int argc, char **argv)
{
	static struct analyze_args a;
	int status = parse_args(&a, argc, argv);
	if (status >= 0)
		return status;
	/* written beside and renamed when done: a failed analysis leaves an
	 * earlier FILE as it was */
	char ctmp[4096];
	if (a.collapsed) {
		snprintf(ctmp, sizeof ctmp, "%s.tmp", a.collapsed);
		if (!(a.opt.collapsed = fopen(ctmp, "w"))) {
			cli_error("cannot write '%s': %s", a.collapsed, strerror(errno));
			return EXIT_BAD_INPUT;
		}
	}
	struct arr_doc *root = arr_doc_object();
	arr_doc_set_str(root, "allocrr", ALLOCRR_VERSION);
	status = analyze_all(&a, root);
	/* no trace analysed: the error said it all, no empty document after it */
	const struct arr_doc *done = arr_doc_get(root, "traces");
	int rc = status && (!done || !done->len) ? 0 : render(root, a.json);
	status = rc ? rc : status;
	arr_doc_free(root);
	if (a.opt.collapsed) {
		if (fclose(a.opt.collapsed)) {
			cli_error("cannot write '%s': %s", a.collapsed, strerror(errno));
			status = EXIT_BAD_INPUT;
		}
		if (status || rename(ctmp, a.collapsed)) {
			if (!status) {
				cli_error("cannot write '%s': %s", a.collapsed, strerror(errno));
				status = EXIT_BAD_INPUT;
			}
			unlink(ctmp);
		}
	}
	return status;
}

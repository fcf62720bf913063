/*
 * cmd_record.c - `allocrr record`: run a command with the recorder preloaded.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"

#ifndef ALLOCRR_LIBDIR_REL
#define ALLOCRR_LIBDIR_REL "lib/allocrr"
#endif

static const struct cli_usage usage = {
	"record",
	"usage: allocrr record [-o FILE] [--rss-interval MS] [--no-children] [--stacks[=DEPTH]]\n"
	"                      [--stack-sample BYTES] [--] CMD [ARG...]\n",
	"Run CMD with liballocrr-record.so preloaded and record every allocation call\n"
	"(malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign,\n"
	"valloc, pvalloc, reallocarray) of CMD and of the processes it starts.\n"
	"Exits with CMD's status.\n",
	"Without the CLI: ALLOCRR_OUTPUT=FILE LD_PRELOAD=.../liballocrr-record.so CMD\n",
	NULL,
	1, /* what follows CMD is CMD's */
};

/* --stacks[=DEPTH]: 64 frames unless told. */
static int parse_stacks(const char *cmd, const char *opt, const char *arg, void *target)
{
	long *stacks = target;
	char *end = NULL;
	errno = 0;
	*stacks = arg ? strtol(arg, &end, 10) : 64;
	if (arg && (errno || *end || !*arg || *stacks < 1 || *stacks > 120))
		return cli_usage_error(cmd, "bad %s '%s': want a depth, 1 to 120", opt, arg);
	return 0;
}

/* The preload library: beside us in the build tree, or installed. */
static int find_preload(char *out, size_t cap)
{
	const char *env = getenv("ALLOCRR_PRELOAD_LIB");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	const char *dir = cli_exe_dir();
	const char *rel[] = {"../lib/liballocrr-record.so", "../" ALLOCRR_LIBDIR_REL "/liballocrr-record.so"};
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, rel[i]);
		if (realpath(path, out) && access(out, R_OK) == 0)
			return 0;
	}
	snprintf(out, cap, "%s/../lib/liballocrr-record.so", dir);
	return -1;
}

static void split_path(const char *path, char *dir, size_t dcap, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (slash) {
		snprintf(dir, dcap, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
		*base = slash + 1;
	} else {
		snprintf(dir, dcap, ".");
		*base = path;
	}
}

/* What a name in the output's place holds. Only an allocrr trace (by its
 * magic) in a regular file is ours to replace: never a symlink (it is not
 * followed), a device, a fifo or a file of the user's. */
enum old_file { OLD_NONE, OLD_TRACE, OLD_OTHER, OLD_SPECIAL };

static enum old_file classify(const char *path)
{
	struct stat st, fst;
	if (lstat(path, &st))
		return errno == ENOENT ? OLD_NONE : OLD_OTHER;
	if (!S_ISREG(st.st_mode))
		return OLD_SPECIAL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return OLD_OTHER;
	char head[16];
	ssize_t n = read(fd, head, sizeof head);
	/* the file read is the one looked at, not one swapped in meanwhile */
	int same = fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino && fst.st_dev == st.st_dev;
	close(fd);
	return same && n > 0 && arr_trace_has_magic(head, (size_t)n) ? OLD_TRACE : OLD_OTHER;
}

static int by_version(const void *a, const void *b) { return strverscmp(*(char *const *)a, *(char *const *)b); }

/* Remove the traces of an earlier run to FILE: FILE and FILE.<pid>[.<n>]
 * that are traces, and say which. Anything else stays; the output itself
 * must then be a trace or absent. Returns 0 or an exit code. */
static int remove_old_traces(const char *output, const char *shown, int quiet)
{
	char dir[PATH_MAX];
	const char *base;
	split_path(output, dir, sizeof dir, &base);
	switch (classify(output)) {
	case OLD_NONE:
	case OLD_TRACE:
		break;
	case OLD_SPECIAL:
		cli_error("'%s' is not a regular file; not replacing it (choose another -o)", shown);
		return EXIT_USAGE;
	case OLD_OTHER:
		cli_error("'%s' exists and is not an allocrr trace; not replacing it (remove it or choose "
			  "another -o)",
			  shown);
		return EXIT_USAGE;
	}
	char **gone = NULL;
	size_t ngone = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, base) && !cli_family_is_member_name(e->d_name, base))
			continue;
		char p[PATH_MAX * 2];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (classify(p) != OLD_TRACE || unlink(p))
			continue;
		if (ngone == cap) {
			char **g = realloc(gone, (cap = cap ? 2 * cap : 8) * sizeof *gone);
			if (!g)
				break;
			gone = g;
		}
		if ((gone[ngone] = strdup(e->d_name)))
			ngone++;
	}
	if (d)
		closedir(d);
	if (ngone && !quiet) {
		qsort(gone, ngone, sizeof *gone, by_version);
		fprintf(stderr, "allocrr: replaced %zu earlier trace%s: ", ngone, ngone > 1 ? "s" : "");
		for (size_t i = 0; i < ngone && i < 20; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", gone[i]);
		if (ngone > 20)
			fprintf(stderr, " and %zu more", ngone - 20);
		fputc('\n', stderr);
	}
	for (size_t i = 0; i < ngone; i++)
		free(gone[i]);
	free(gone);
	return 0;
}

/* The family written, as a tree on stderr; returns how many traces. */
static size_t show_family(const char *output)
{
	struct cli_family f;
	size_t n = 0;
	if (cli_family_open(&f, output) == 0 && (n = f.n))
		cli_family_print_tree(stderr, &f, 0);
	cli_family_release(&f);
	return n;
}

/* The file execvp would run for cmd, into out; 0 when found. */
static int find_command(const char *cmd, char *out, size_t cap)
{
	if (strchr(cmd, '/')) {
		snprintf(out, cap, "%s", cmd);
		return access(out, X_OK);
	}
	const char *path = getenv("PATH");
	for (const char *p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(out, cap, "%.*s/%s", (int)n ? (int)n : 1, n ? p : ".", cmd);
		if (!access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

/*
 * Say before it runs when the loader will not preload the recorder into
 * cmd: a statically linked program has no loader, a set-user/group-id one
 * (of another user than ours) runs in secure mode, which drops LD_PRELOAD.
 * The program still runs, unrecorded: recording never changes what it does.
 */
static void warn_unrecordable(const char *cmd)
{
	char file[PATH_MAX];
	struct stat st;
	if (find_command(cmd, file, sizeof file) || stat(file, &st))
		return;
	if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		cli_error("'%s' is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it, so it "
			  "cannot be recorded (it runs unrecorded)",
			  file);
		return;
	}
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf64_Ehdr eh;
	int is_static = 0;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 4096) {
		is_static = 1;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph ||
			    ph.p_type == PT_INTERP) { /* static-pie has PT_DYNAMIC, no loader */
				is_static = 0;
				break;
			}
		}
	}
	close(fd);
	if (is_static)
		cli_error("'%s' is statically linked: no loader runs to preload the recorder into it, so it "
			  "cannot be recorded (it runs unrecorded)",
			  file);
}

/* The command line of one `allocrr record`, and what load() derives from it. */
struct record_args {
	const char *output;
	long rss_ms, stacks;
	uint64_t sample; /* --stack-sample: mean bytes between stacks; 0: every allocation */
	int no_children, quiet;
	char **cmd;                 /* CMD [ARG...], NULL-terminated */
	char abs_out[PATH_MAX * 2]; /* the output, absolute: the program may chdir */
	char preload[PATH_MAX * 2]; /* LD_PRELOAD for it */
};

/* Returns -1 to go on, or the exit code. */
static int parse_args(struct record_args *a, int argc, char **argv)
{
	a->output = "allocrr.atr";
	a->rss_ms = 10;
	int first;
	const struct cli_option opts[] = {
		CLI_STRING('o', "output", "FILE", &a->output,
			   "trace file (default: allocrr.atr); a forked or exec'd\n"
			   "child writes FILE.PID (FILE.PID.N after an exec).\n"
			   "Earlier traces there are replaced (and listed); a\n"
			   "FILE that is not a trace is refused, never replaced"),
		CLI_LONG(0, "rss-interval", "MS", &a->rss_ms, 0, 3600000,
			 "sample resident memory every MS milliseconds\n"
			 "(default 10, 0 = off)"),
		CLI_FLAG(0, "no-children", &a->no_children, "record only the top process"),
		CLI_CALLBACK(0, "stacks", CLI_ARG_OPTIONAL, "DEPTH", &a->stacks, parse_stacks,
			     "record the call stack (return addresses, at most DEPTH\n"
			     "frames, 1 to 120, default 64) of every allocating call,\n"
			     "whole, through code without frame pointers (ALLOCRR_STACKS=DEPTH\n"
			     "without the CLI; ALLOCRR_UNWIND=fp: frame pointers only)"),
		CLI_SIZE(0, "stack-sample", "BYTES", &a->sample, 1, 1ll << 40,
			 "with stacks (implies --stacks): every call is still\n"
			 "recorded, but only a Poisson sample of the allocations,\n"
			 "one per BYTES allocated on average (512K is tcmalloc's\n"
			 "default; K, M, G suffixes), carries its stack; analyses\n"
			 "scale the sampled figures back up (ALLOCRR_STACK_SAMPLE=BYTES)"),
		CLI_FLAG('q', "quiet", &a->quiet,
			 "do not show the traces written (by default: the\n"
			 "family as a process tree, the largest marked)"),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error("record", "no command to record");
	a->cmd = argv + first;
	if (a->sample && !a->stacks)
		a->stacks = 64;
	return -1;
}

/* The recorder library, the output's place (earlier traces there removed).
 * Returns 0 or the exit code. */
static int load(struct record_args *a)
{
	char lib[PATH_MAX];
	if (find_preload(lib, sizeof lib) < 0) {
		cli_error("cannot find the recorder library '%s'", lib);
		return EXIT_BAD_INPUT;
	}
	char dir[PATH_MAX], rdir[PATH_MAX];
	const char *base;
	split_path(a->output, dir, sizeof dir, &base);
	if (!*base)
		return cli_usage_error("record", "output '%s' is a directory", a->output);
	if (!realpath(dir, rdir)) {
		cli_error("cannot write '%s': %s", a->output, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	snprintf(a->abs_out, sizeof a->abs_out, "%s/%s", strcmp(rdir, "/") ? rdir : "", base);
	int rc = remove_old_traces(a->abs_out, a->output, a->quiet);
	if (rc)
		return rc;
	const char *old = getenv("LD_PRELOAD");
	snprintf(a->preload, sizeof a->preload, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
	return 0;
}

/* In the child: the recorder's environment, then CMD. Never returns. */
static void exec_recorded(const struct record_args *a)
{
	char root[32], rss[32];
	snprintf(root, sizeof root, "%d", (int)getpid());
	snprintf(rss, sizeof rss, "%ld", a->rss_ms);
	setenv("ALLOCRR_OUTPUT", a->abs_out, 1);
	setenv("ALLOCRR_ROOT_PID", root, 1);
	setenv("ALLOCRR_RSS_INTERVAL_MS", rss, 1);
	if (a->stacks) {
		char depth[16];
		snprintf(depth, sizeof depth, "%ld", a->stacks);
		setenv("ALLOCRR_STACKS", depth, 1);
	} else {
		unsetenv("ALLOCRR_STACKS");
	}
	if (a->sample) {
		char b[24];
		snprintf(b, sizeof b, "%llu", (unsigned long long)a->sample);
		setenv("ALLOCRR_STACK_SAMPLE", b, 1);
	} else {
		unsetenv("ALLOCRR_STACK_SAMPLE");
	}
	if (a->no_children)
		setenv("ALLOCRR_NO_CHILDREN", "1", 1);
	else
		unsetenv("ALLOCRR_NO_CHILDREN");
	setenv("LD_PRELOAD", a->preload, 1);
	execvp(a->cmd[0], a->cmd);
	cli_error("cannot run '%s': %s", a->cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* Run CMD recorded and wait for it: its wait status into *status. Returns 0 or the exit code. */
static int run(const struct record_args *a, int *status)
{
	/* Like time(1): the terminal's ^C is for the child; we wait for it. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		exec_recorded(a);
	}
	int rc = 0;
	if (pid < 0) {
		cli_error("cannot fork: %s", strerror(errno));
		rc = EXIT_BAD_INPUT;
	} else {
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return rc;
}

/* The traces written, and CMD's status as ours. */
static int render(const struct record_args *a, int status)
{
	if (!a->quiet && show_family(a->output) == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) >= 126))
		cli_error("no trace was written: '%s' never loaded the recorder "
			  "(statically linked, or setuid?)",
			  a->cmd[0]);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		if (!a->quiet)
			fprintf(stderr, "allocrr: %s killed by signal %d (%s)\n", a->cmd[0], WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return EXIT_BAD_INPUT;
}

int cmd_record(int argc, char **argv)
{
	static struct record_args a;
	memset(&a, 0, sizeof a);
	int status, rc = parse_args(&a, argc, argv);
	if (rc >= 0)
		return rc;
	if ((rc = load(&a)))
		return rc;
	if (!a.quiet)
		warn_unrecordable(a.cmd[0]);
	if ((rc = run(&a, &status)))
		return rc;
	return render(&a, status);
}

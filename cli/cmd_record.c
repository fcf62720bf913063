/*
 * cmd_record.c - `allocrr record`: run a command with the recorder preloaded.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#ifndef ALLOCRR_LIBDIR_REL
#define ALLOCRR_LIBDIR_REL "lib/allocrr"
#endif

static const char usage[] =
	"usage: allocrr record [-o FILE] [--rss-interval MS] [--no-children] [--stacks[=DEPTH]]\n"
	"                      [--stack-sample [BYTES]] [--] CMD [ARG...]\n"
	"\n"
	"Run CMD with liballocrr-record.so preloaded and record every allocation call\n"
	"(malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign,\n"
	"valloc, pvalloc, reallocarray) of CMD and of the processes it starts.\n"
	"Exits with CMD's status.\n"
	"\n"
	"  -o, --output FILE     trace file (default: allocrr.atr); a forked or exec'd\n"
	"                        child writes FILE.PID (FILE.PID.N after an exec).\n"
	"                        Earlier traces there are replaced (and listed); a\n"
	"                        FILE that is not a trace is refused, never replaced\n"
	"      --rss-interval MS sample resident memory every MS milliseconds\n"
	"                        (default 10, 0 = off)\n"
	"      --no-children     record only the top process\n"
	"      --stacks[=DEPTH]  record the call stack (return addresses, at most DEPTH\n"
	"                        frames, 1 to 120, default 64) of every allocating call,\n"
	"                        whole, through code without frame pointers (ALLOCRR_STACKS=DEPTH\n"
	"                        without the CLI; ALLOCRR_UNWIND=fp: frame pointers only)\n"
	"      --stack-sample [BYTES]  with stacks (implies --stacks): every call is still\n"
	"                        recorded, but only a Poisson sample of the allocations,\n"
	"                        one per BYTES allocated on average (default 512K; K, M,\n"
	"                        G suffixes), carries its stack; analyses scale the\n"
	"                        sampled figures back up (ALLOCRR_STACK_SAMPLE=BYTES)\n"
	"  -q, --quiet           do not show the traces written (by default: the\n"
	"                        family as a process tree, the largest marked)\n"
	"  -h, --help            show this help\n"
	"  -V, --version         show the version\n"
	"\n"
	"Without the CLI: ALLOCRR_OUTPUT=FILE LD_PRELOAD=.../liballocrr-record.so CMD\n";

/* "512K", "1M", "4096": bytes, 1 to 2^40; -1 if it is not that. */
static long long parse_bytes(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v < 1)
		return -1;
	int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
	if (shift)
		end++;
	if (*end || v > (1ll << 40) >> shift)
		return -1;
	return v << shift;
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

static int by_version(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

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
			  "another -o)", shown);
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
			  "cannot be recorded (it runs unrecorded)", file);
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
			  "cannot be recorded (it runs unrecorded)", file);
}

int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"rss-interval", required_argument, 0, 'r'},
		{"no-children", no_argument, 0, 'n'},  {"quiet", no_argument, 0, 'q'},
		{"stacks", optional_argument, 0, 's'}, {"stack-sample", optional_argument, 0, 'S'},
		{"help", no_argument, 0, 'h'},         {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *output = "allocrr.atr";
	long rss_ms = 10;
	int no_children = 0, quiet = 0, opt;
	long stacks = 0;
	long long sample = 0;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+o:qhV", opts, NULL)) != -1) {
		int rc = cli_common_option(opt, usage);
		if (rc >= 0)
			return rc;
		switch (opt) {
		case 'o': output = optarg; break;
		case 'n': no_children = 1; break;
		case 'q': quiet = 1; break;
		case 's': {
			char *end = NULL;
			errno = 0;
			stacks = optarg ? strtol(optarg, &end, 10) : 64;
			if (optarg && (errno || *end || !*optarg || stacks < 1 || stacks > 120))
				return cli_usage_error("record", "bad --stacks '%s': want a depth, 1 to 120", optarg);
			break;
		}
		case 'S': /* the value may follow as the next word: --stack-sample 512K */
			if (!optarg && optind < argc && parse_bytes(argv[optind]) > 0)
				optarg = argv[optind++];
			sample = optarg ? parse_bytes(optarg) : 512 * 1024;
			if (sample < 0)
				return cli_usage_error("record", "bad --stack-sample '%s': want bytes, e.g. 512K", optarg);
			break;
		case 'r': {
			char *end;
			errno = 0;
			rss_ms = strtol(optarg, &end, 10);
			if (errno || *end || rss_ms < 0 || rss_ms > 3600000)
				return cli_usage_error("record", "bad --rss-interval '%s': want milliseconds, 0 to 3600000", optarg);
			break;
		}
		default:
			return cli_usage_error("record", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("record", "no command to record");
	if (sample && !stacks)
		stacks = 64;

	char lib[PATH_MAX];
	if (find_preload(lib, sizeof lib) < 0) {
		cli_error("cannot find the recorder library '%s'", lib);
		return EXIT_BAD_INPUT;
	}
	/* The recorded program may chdir: give it an absolute output path. */
	char abs_out[PATH_MAX * 2], dir[PATH_MAX], rdir[PATH_MAX];
	const char *base;
	split_path(output, dir, sizeof dir, &base);
	if (!*base)
		return cli_usage_error("record", "output '%s' is a directory", output);
	if (!realpath(dir, rdir)) {
		cli_error("cannot write '%s': %s", output, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	snprintf(abs_out, sizeof abs_out, "%s/%s", strcmp(rdir, "/") ? rdir : "", base);
	int rc = remove_old_traces(abs_out, output, quiet);
	if (rc)
		return rc;

	char preload[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(preload, sizeof preload, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
	char rss[32];
	snprintf(rss, sizeof rss, "%ld", rss_ms);

	if (!quiet)
		warn_unrecordable(argv[optind]);

	/* Like time(1): the terminal's ^C is for the child; we wait for it. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("cannot fork: %s", strerror(errno));
		return EXIT_BAD_INPUT;
	}
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		char root[32];
		snprintf(root, sizeof root, "%d", (int)getpid());
		setenv("ALLOCRR_OUTPUT", abs_out, 1);
		setenv("ALLOCRR_ROOT_PID", root, 1);
		setenv("ALLOCRR_RSS_INTERVAL_MS", rss, 1);
		if (stacks) {
			char depth[16];
			snprintf(depth, sizeof depth, "%ld", stacks);
			setenv("ALLOCRR_STACKS", depth, 1);
		} else {
			unsetenv("ALLOCRR_STACKS");
		}
		if (sample) {
			char b[24];
			snprintf(b, sizeof b, "%lld", sample);
			setenv("ALLOCRR_STACK_SAMPLE", b, 1);
		} else {
			unsetenv("ALLOCRR_STACK_SAMPLE");
		}
		if (no_children)
			setenv("ALLOCRR_NO_CHILDREN", "1", 1);
		else
			unsetenv("ALLOCRR_NO_CHILDREN");
		setenv("LD_PRELOAD", preload, 1);
		execvp(argv[optind], argv + optind);
		cli_error("cannot run '%s': %s", argv[optind], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (!quiet && show_family(output) == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) >= 126))
		cli_error("no trace was written: '%s' never loaded the recorder "
			  "(statically linked, or setuid?)", argv[optind]);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		if (!quiet)
			fprintf(stderr, "allocrr: %s killed by signal %d (%s)\n", argv[optind],
				WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return EXIT_BAD_INPUT;
}

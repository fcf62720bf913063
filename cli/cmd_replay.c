/*
 * cmd_replay.c - `allocrr replay`: prepare (or reuse) the workload of a
 * trace, replay it into each allocator in a fresh engine process, and show
 * the results side by side.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/replay.h"
#include "cli.h"

#define MAX_ALLOCATORS 16

static const char usage[] =
	"usage: allocrr replay [--allocator A]... [--threads serial|parallel]\n"
	"                      [--touch none|page|all] [--samples N] [--json]\n"
	"                      [--select NAME] TRACE[@NAME]\n"
	"\n"
	"Replay every allocation call of TRACE, with the same functions, arguments\n"
	"and order, into each allocator in its own fresh process, and compare time,\n"
	"latency, page faults and resident memory.\n"
	"\n"
	"  -a, --allocator A     builtin, glibc, jemalloc, mimalloc, tcmalloc or a path\n"
	"                        to a malloc .so, with tunables after a colon:\n"
	"                        glibc:mmap_threshold=131072, builtin:purge_delay=0\n"
	"                        (repeatable; default: glibc, and builtin if built)\n"
	"  -t, --threads MODE    serial: one thread, recorded order (deterministic);\n"
	"                        parallel: a thread per recorded thread, cross-thread\n"
	"                        order kept (default when the trace has several)\n"
	"      --touch MODE      write to new blocks: none, page (one byte per page,\n"
	"                        default) or all (every byte)\n"
	"      --samples N       RSS timeline samples (default 1000)\n"
	"      --latency-every N time one call in N (default 1; 0 = no timing)\n"
	"      --cache-dir DIR   keep the workload in DIR (default: TRACE.wl)\n"
	"      --rebuild         prepare the workload again even if cached\n"
	"      --partial         replay the complete part of a truncated trace\n"
	"      --select NAME     of a family of traces (TRACE, TRACE.PID... written by\n"
	"                        one recording), the largest of program NAME (or pid);\n"
	"                        TRACE@NAME says the same; default: the largest\n"
	"                        trace when TRACE is the top one of its family\n"
	"  -j, --json            one JSON document\n"
	"  -q, --quiet           no progress notes on stderr\n"
	"  -h, --help            show this help\n"
	"  -V, --version         show the version\n";

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_uint(const char *s, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 100000000 || *s == '-')
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Make sure the workload of trace is in wl_path; trace errors are reported here. */
static int ensure_workload(const char *trace, const char *wl_path, int rebuild, int partial, int quiet,
			   struct arr_workload_info *info)
{
	int rc = rebuild ? ARR_ESTALE : arr_workload_check(wl_path, trace, info);
	if (rc == 0)
		return 0;
	if (rc != ARR_ESTALE && rc != -ENOENT) {
		if (access(trace, R_OK)) {
			cli_error("cannot open '%s': %s", trace, strerror(errno));
			return EXIT_BAD_INPUT;
		}
		cli_error("'%s': %s", wl_path, arr_strerror(rc));
		return EXIT_BAD_INPUT;
	}
	struct arr_trace *tr;
	double t0 = now_s();
	rc = arr_trace_open(&tr, trace);
	if (rc) {
		rc = cli_trace_error(trace, tr, rc);
		arr_trace_close(tr);
		return rc;
	}
	rc = arr_workload_build(tr, wl_path, partial, info);
	if (rc == ARR_ETRUNCATED || rc == ARR_ECORRUPT || rc == ARR_EDECOMPRESS || rc == ARR_EBADMAGIC ||
	    rc == ARR_EVERSION) {
		rc = cli_trace_error(trace, tr, rc);
		if (rc && arr_trace_error_offset(tr) && !partial)
			fprintf(stderr, "hint: --partial replays the complete part of a truncated trace\n");
		arr_trace_close(tr);
		return rc;
	}
	arr_trace_close(tr);
	if (rc) {
		cli_error("cannot write workload '%s': %s%s", wl_path, arr_strerror(rc),
			  rc == -EACCES || rc == -EROFS ? " (try --cache-dir)" : "");
		return EXIT_BAD_INPUT;
	}
	double dt = now_s() - t0;
	if (!quiet)
		fprintf(stderr,
			"allocrr: prepared '%s': %" PRIu64 " events, %" PRIu64 " calls, %u threads, %" PRIu64
			" sync points in %.3f s (%.1fM events/s)\n",
			wl_path, info->events, info->calls, info->nthreads, info->syncs, dt,
			dt > 0 ? (double)info->events / dt / 1e6 : 0.0);
	return 0;
}

static const char *const lat_keys[] = {NULL, "malloc", "calloc", "realloc", "free", "posix_memalign",
				       "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray"};

static void print_json(const char *trace, const char *wl_path, const struct arr_workload_info *info,
		       const struct arr_allocator *al, const struct arr_replay_result *res, const int *ok, int n)
{
	printf("{\"trace\":");
	arr_json_fputs(stdout, trace);
	printf(",\"workload\":{\"path\":");
	arr_json_fputs(stdout, wl_path);
	printf(",\"events\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"threads\":%u,\"sync_points\":%" PRIu64
	       ",\"slots\":%" PRIu64 ",\"ideal_rss\":%" PRIu64 ",\"repairs\":{",
	       info->events, info->calls, info->nthreads, info->syncs, info->nslots, info->ideal_rss);
	for (unsigned i = 0; i < ARR_REPAIR_COUNT_; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", arr_repair_name(i), info->repairs[i]);
	printf("}},\"results\":[");
	int first = 1;
	for (int i = 0; i < n; i++) {
		if (!ok[i])
			continue;
		const struct arr_replay_result *r = &res[i];
		printf("%s{\"allocator\":", first ? "" : ",");
		first = 0;
		arr_json_fputs(stdout, al[i].name);
		printf(",\"library\":");
		arr_json_fputs(stdout, al[i].lib[0] ? al[i].lib : "libc.so.6");
		printf(",\"threads\":%u,\"wall_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"ops\":%" PRIu64
		       ",\"ns_per_op\":%.2f,\"peak_rss\":%" PRIu64 ",\"final_rss\":%" PRIu64 ",\"ideal_rss\":%" PRIu64
		       ",\"peak_over_ideal\":%.3f,\"baseline_rss\":%" PRIu64 ",\"minor_faults\":%" PRIu64
		       ",\"major_faults\":%" PRIu64 ",\"sync_wait_ns\":%" PRIu64 ",\"anomalies\":%" PRIu64
		       ",\"divergence\":{\"failed_now\":%" PRIu64 ",\"succeeded_now\":%" PRIu64
		       ",\"sync_mismatch\":%" PRIu64 ",\"substituted_functions\":%" PRIu64 "}"
		       ",\"timer_overhead_ns\":%.2f,\"latency\":{",
		       r->threads_used, r->wall_ns, r->cpu_ns, r->ops, r->ops ? (double)r->wall_ns / (double)r->ops : 0.0,
		       r->peak_rss, r->final_rss, r->ideal_rss,
		       r->ideal_rss ? (double)r->peak_rss / (double)r->ideal_rss : 0.0, r->baseline_rss,
		       r->minor_faults, r->major_faults, r->sync_wait_ns, r->anomalies, r->div.failed_now,
		       r->div.succeeded_now, r->div.sync_mismatch, r->div.substituted,
		       (double)r->timer_overhead_ns_x100 / 100.0);
		int lf = 1;
		for (unsigned op = 1; op <= 10; op++) {
			const struct arr_latency *l = &r->latency[op];
			if (!l->count)
				continue;
			printf("%s\"%s\":{\"count\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p90\":%" PRIu64 ",\"p99\":%" PRIu64
			       ",\"max\":%" PRIu64 "}",
			       lf ? "" : ",", lat_keys[op], l->count, l->p50, l->p90, l->p99, l->max);
			lf = 0;
		}
		printf("}");
		if (r->has_mallinfo)
			printf(",\"mallinfo2\":{\"arena\":%" PRIu64 ",\"hblkhd\":%" PRIu64 ",\"uordblks\":%" PRIu64
			       ",\"fordblks\":%" PRIu64 ",\"keepcost\":%" PRIu64 "}",
			       r->mi_arena, r->mi_hblkhd, r->mi_uordblks, r->mi_fordblks, r->mi_keepcost);
		if (r->has_builtin)
			printf(",\"builtin_stats\":{\"mapped\":%" PRIu64 ",\"resident\":%" PRIu64
			       ",\"live_usable\":%" PRIu64 ",\"live_blocks\":%" PRIu64 ",\"pages_purged\":%" PRIu64 "}",
			       r->bi_mapped, r->bi_resident, r->bi_live_usable, r->bi_live_blocks, r->bi_pages_purged);
		printf(",\"rss_timeline\":[");
		for (uint32_t s = 0; s < r->nsamples; s++)
			printf("%s[%" PRIu64 ",%" PRIu64 "]", s ? "," : "", r->timeline[s][0], r->timeline[s][1]);
		printf("]}");
	}
	printf("]}\n");
}

/* One table row: a label and a cell per successful allocator. */
typedef void (*cell_fn)(char *buf, size_t cap, const struct arr_replay_result *r);

static void row(const char *label, cell_fn fn, const struct arr_replay_result *res, const int *ok, int n)
{
	printf("%-22s", label);
	for (int i = 0; i < n; i++) {
		if (!ok[i])
			continue;
		char buf[64] = "";
		fn(buf, sizeof buf, &res[i]);
		printf(" %20s", buf);
	}
	putchar('\n');
}

#define CELL(name, ...)                                                       \
	static void name(char *b, size_t cap, const struct arr_replay_result *r) \
	{                                                                     \
		snprintf(b, cap, __VA_ARGS__);                                 \
	}
CELL(c_threads, "%u", r->threads_used)
CELL(c_wall, "%.3f ms", (double)r->wall_ns / 1e6)
CELL(c_cpu, "%.3f ms", (double)r->cpu_ns / 1e6)
CELL(c_ops, "%" PRIu64, r->ops)
CELL(c_nsop, "%.1f ns", r->ops ? (double)r->wall_ns / (double)r->ops : 0.0)
CELL(c_minor, "%" PRIu64, r->minor_faults)
CELL(c_major, "%" PRIu64, r->major_faults)
CELL(c_wait, "%.3f ms", (double)r->sync_wait_ns / 1e6)
CELL(c_anom, "%" PRIu64, r->anomalies)
CELL(c_ratio, "%.2f", r->ideal_rss ? (double)r->peak_rss / (double)r->ideal_rss : 0.0)
static void c_peak(char *b, size_t cap, const struct arr_replay_result *r) { cli_human_bytes(b, cap, r->peak_rss); }
static void c_final(char *b, size_t cap, const struct arr_replay_result *r) { cli_human_bytes(b, cap, r->final_rss); }
static void c_ideal(char *b, size_t cap, const struct arr_replay_result *r) { cli_human_bytes(b, cap, r->ideal_rss); }
static void c_base(char *b, size_t cap, const struct arr_replay_result *r) { cli_human_bytes(b, cap, r->baseline_rss); }
static void c_stat(char *b, size_t cap, const struct arr_replay_result *r)
{
	if (r->has_mallinfo)
		cli_human_bytes(b, cap, r->mi_arena + r->mi_hblkhd);
	else if (r->has_builtin)
		cli_human_bytes(b, cap, r->bi_mapped);
	else
		snprintf(b, cap, "-");
}

static void print_table(const char *trace, const struct arr_workload_info *info, const struct arr_allocator *al,
			const struct arr_replay_result *res, const int *ok, int n)
{
	printf("%s: %" PRIu64 " calls, %u threads, %" PRIu64 " sync points\n\n", trace, info->calls, info->nthreads,
	       info->syncs);
	printf("%-22s", "");
	for (int i = 0; i < n; i++)
		if (ok[i])
			printf(" %20.20s", al[i].name);
	putchar('\n');
	row("threads", c_threads, res, ok, n);
	row("wall time", c_wall, res, ok, n);
	row("cpu time", c_cpu, res, ok, n);
	row("calls", c_ops, res, ok, n);
	row("wall per call", c_nsop, res, ok, n);
	row("peak RSS", c_peak, res, ok, n);
	row("final RSS", c_final, res, ok, n);
	row("ideal RSS", c_ideal, res, ok, n);
	row("peak / ideal", c_ratio, res, ok, n);
	row("engine baseline RSS", c_base, res, ok, n);
	row("minor faults", c_minor, res, ok, n);
	row("major faults", c_major, res, ok, n);
	row("sync wait", c_wait, res, ok, n);
	row("anomalies", c_anom, res, ok, n);
	row("allocator mapped", c_stat, res, ok, n);
	printf("latency ns p50/p90/p99/max\n");
	for (unsigned op = 1; op <= 10; op++) {
		int any = 0;
		for (int i = 0; i < n; i++)
			any |= ok[i] && res[i].latency[op].count;
		if (!any)
			continue;
		printf("  %-20s", lat_keys[op]);
		for (int i = 0; i < n; i++) {
			if (!ok[i])
				continue;
			const struct arr_latency *l = &res[i].latency[op];
			char buf[80];
			snprintf(buf, sizeof buf, "%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64, l->p50, l->p90, l->p99,
				 l->max);
			printf(" %20s", buf);
		}
		putchar('\n');
	}
	int header = 0;
	for (unsigned i = 0; i < ARR_REPAIR_COUNT_; i++)
		if (info->repairs[i]) {
			if (!header++)
				printf("\nrepairs while preparing:\n");
			printf("  %-18s %10" PRIu64 "  %s\n", arr_repair_name(i), info->repairs[i], arr_repair_desc(i));
		}
	for (int i = 0; i < n; i++) {
		const struct arr_replay_divergence *d = &res[i].div;
		if (ok[i] && (d->failed_now || d->succeeded_now || d->sync_mismatch || d->substituted))
			printf("%s: %" PRIu64 " calls failed that succeeded when recorded, %" PRIu64
			       " succeeded that had failed, %" PRIu64 " sync mismatches, %" PRIu64
			       " functions emulated (missing from the library)\n",
			       al[i].name, d->failed_now, d->succeeded_now, d->sync_mismatch, d->substituted);
	}
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{"allocator", required_argument, 0, 'a'}, {"threads", required_argument, 0, 't'},
		{"touch", required_argument, 0, 'T'},     {"samples", required_argument, 0, 's'},
		{"latency-every", required_argument, 0, 'L'}, {"cache-dir", required_argument, 0, 'C'},
		{"rebuild", no_argument, 0, 'R'},         {"partial", no_argument, 0, 'P'},
		{"json", no_argument, 0, 'j'},            {"quiet", no_argument, 0, 'q'},
		{"select", required_argument, 0, 'S'},
		{"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	struct arr_replay_options ro = ARR_REPLAY_OPTIONS_INIT;
	const char *specs[MAX_ALLOCATORS];
	int nspecs = 0, json = 0, quiet = 0, rebuild = 0, partial = 0, opt;
	const char *cache_dir = NULL, *select = NULL;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":a:t:jqhV", opts, NULL)) != -1) {
		int rc = cli_common_option(opt, usage);
		if (rc >= 0)
			return rc;
		switch (opt) {
		case 'a':
			if (nspecs == MAX_ALLOCATORS)
				return cli_usage_error("replay", "at most %d allocators", MAX_ALLOCATORS);
			specs[nspecs++] = optarg;
			break;
		case 't':
			if (!strcmp(optarg, "serial"))
				ro.threads = ARR_THREADS_SERIAL;
			else if (!strcmp(optarg, "parallel"))
				ro.threads = ARR_THREADS_PARALLEL;
			else
				return cli_usage_error("replay", "--threads must be serial or parallel, not '%s'", optarg);
			break;
		case 'T':
			if (!strcmp(optarg, "none"))
				ro.touch = ARR_TOUCH_NONE;
			else if (!strcmp(optarg, "page"))
				ro.touch = ARR_TOUCH_PAGE;
			else if (!strcmp(optarg, "all"))
				ro.touch = ARR_TOUCH_ALL;
			else
				return cli_usage_error("replay", "--touch must be none, page or all, not '%s'", optarg);
			break;
		case 'S':
			select = optarg;
			break;
		case 's':
			if (parse_uint(optarg, &ro.samples) || ro.samples == 0 || ro.samples > 1000000)
				return cli_usage_error("replay", "--samples wants a number from 1 to 1000000, not '%s'",
						       optarg);
			break;
		case 'L':
			if (parse_uint(optarg, &ro.latency_every))
				return cli_usage_error("replay", "--latency-every wants a number, not '%s'", optarg);
			break;
		case 'C':
			cache_dir = optarg;
			break;
		case 'R':
			rebuild = 1;
			break;
		case 'P':
			partial = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case ':':
			return cli_usage_error("replay", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("replay", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("replay", "no trace given");
	if (optind + 1 < argc)
		return cli_usage_error("replay", "one trace at a time ('%s' is extra)", argv[optind + 1]);
	char chosen[PATH_MAX];
	int frc = cli_family_resolve(argv[optind], select, quiet, chosen, sizeof chosen);
	if (frc)
		return frc;
	const char *trace = chosen;

	/* The built-in allocator: beside us in the build tree, or installed. */
	char builtin_lib[PATH_MAX], engine[PATH_MAX];
	static const char *const lib_dirs[] = {"../lib", "../" ALLOCRR_LIBDIR_REL_PARENT};
	for (size_t i = 0; i < sizeof lib_dirs / sizeof *lib_dirs; i++) {
		char real[PATH_MAX];
		snprintf(builtin_lib, sizeof builtin_lib, "%s/%s/liballocrr-malloc.so", cli_exe_dir(), lib_dirs[i]);
		if (realpath(builtin_lib, real) && !access(real, R_OK)) {
			snprintf(builtin_lib, sizeof builtin_lib, "%s", real);
			break;
		}
	}
	const char *env_engine = getenv("ALLOCRR_REPLAY_ENGINE");
	snprintf(engine, sizeof engine, "%s", env_engine && *env_engine ? env_engine : "");
	if (!engine[0])
		snprintf(engine, sizeof engine, "%s/allocrr-replay-engine", cli_exe_dir());
	if (access(engine, X_OK)) {
		cli_error("cannot run the replay engine '%s': %s", engine, strerror(errno));
		return EXIT_BAD_INPUT;
	}

	static struct arr_allocator al[MAX_ALLOCATORS];
	int n = 0;
	if (!nspecs) {
		specs[nspecs++] = "glibc";
		if (!access(builtin_lib, R_OK))
			specs[nspecs++] = "builtin";
	}
	for (int i = 0; i < nspecs; i++, n++) {
		int rc = arr_allocator_resolve(specs[i], builtin_lib, &al[n]);
		if (rc == ARR_EINVAL)
			return cli_usage_error("replay",
					       "unknown allocator '%s' (known: builtin, glibc, jemalloc, mimalloc, "
					       "tcmalloc, or a path to a .so)",
					       specs[i]);
		if (rc == ARR_ESYNTAX)
			return cli_usage_error("replay", "bad tunables in '%s' (want NAME:key=value,...)", specs[i]);
		if (rc == ARR_ENOTFOUND) {
			if (al[n].package)
				cli_error("allocator '%s': %s not found; install the Debian package %s", specs[i],
					  al[n].lib, al[n].package);
			else if (al[n].is_builtin)
				cli_error("allocator 'builtin': %s not found; build the allocrr-malloc target",
					  al[n].lib);
			else
				cli_error("allocator '%s': cannot read '%s'", specs[i], al[n].lib);
			return EXIT_BAD_INPUT;
		}
		if (rc) {
			cli_error("allocator '%s': %s", specs[i], arr_strerror(rc));
			return EXIT_BAD_INPUT;
		}
	}

	char wl_path[PATH_MAX];
	int rc = arr_workload_cache_path(wl_path, sizeof wl_path, trace, cache_dir);
	if (rc) {
		cli_error("cannot open '%s': %s", trace, arr_strerror(rc));
		return EXIT_BAD_INPUT;
	}
	struct arr_workload_info info;
	if ((rc = ensure_workload(trace, wl_path, rebuild, partial, quiet, &info)))
		return rc;

	static struct arr_replay_result res[MAX_ALLOCATORS];
	int ok[MAX_ALLOCATORS] = {0}, status = 0, nok = 0;
	for (int i = 0; i < n; i++) {
		int st;
		rc = arr_replay_spawn(engine, &al[i], wl_path, &ro, &res[i], &st);
		if (rc == 0) {
			ok[i] = 1;
			nok++;
			continue;
		}
		status = EXIT_BAD_INPUT;
		if (WIFSIGNALED(st))
			cli_error("replay into '%s' failed: the engine was killed by signal %d (%s)", al[i].name,
				  WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (WIFEXITED(st) && WEXITSTATUS(st))
			cli_error("replay into '%s' failed: the engine exited with status %d", al[i].name,
				  WEXITSTATUS(st));
		else
			cli_error("replay into '%s' failed: %s", al[i].name, arr_strerror(rc));
	}
	if (nok) {
		if (json)
			print_json(trace, wl_path, &info, al, res, ok, n);
		else
			print_table(trace, &info, al, res, ok, n);
	}
	for (int i = 0; i < n; i++)
		if (ok[i])
			arr_replay_result_release(&res[i]);
	return status;
}

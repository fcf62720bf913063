/*
 * cmd_replay.c - `allocrr replay`: prepare (or reuse) the workload of a
 * trace, replay it into each allocator in a fresh engine process, and show
 * the results side by side.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/doc.h"
#include "allocrr/replay.h"
#include "cli.h"
#include "options.h"

#define MAX_ALLOCATORS 16
#define MAX_PHASES 64

static const struct cli_usage usage = {
	"replay",
	"usage: allocrr replay [--allocator A]... [--threads serial|parallel|auto]\n"
	"                      [--touch none|page|all] [--samples N] [--runs N]\n"
	"                      [--zeroing] [--fragmentation] [--json]\n"
	"                      [--select NAME] TRACE[@NAME]\n",
	"Replay every allocation call of TRACE, with the same functions, arguments\n"
	"and order, into each allocator in its own fresh process, and compare time,\n"
	"latency, page faults and resident memory.\n",
	NULL,
	NULL,
	0,
};

static int parse_threads(const char *cmd, const char *opt, const char *arg, void *target)
{
	if (arr_replay_threads_parse(arg, target))
		return cli_usage_error(cmd, "%s must be serial, parallel or auto, not '%s'", opt, arg);
	return 0;
}

/* --touch: the mode, and that it was asked for (no automatic choice then). */
struct touch_arg {
	enum arr_replay_touch *touch;
	int *set;
};

static int parse_touch(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct touch_arg *t = target;
	if (arr_replay_touch_parse(arg, t->touch))
		return cli_usage_error(cmd, "%s must be none, page or all, not '%s'", opt, arg);
	*t->set = 1;
	return 0;
}

struct phases {
	struct arr_replay_phase *v;
	size_t n;
};

static int parse_phase(char *s, struct arr_replay_phase *ph);

static int add_phase(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct phases *p = target;
	if (p->n == MAX_PHASES)
		return cli_usage_error(cmd, "at most %d phases", MAX_PHASES);
	if (parse_phase((char *)arg, &p->v[p->n]))
		return cli_usage_error(cmd, "%s wants NAME=FROM..TO or NAME:FROM:TO (call indexes), not '%s'", opt,
				       arg);
	p->n++;
	return 0;
}

/* NAME=FROM..TO, or NAME:FROM:TO as `analyze --phase` writes it (here in
 * call indexes only); TO optional; s is kept (the name points into it). */
static int parse_phase(char *s, struct arr_replay_phase *ph)
{
	char *eq = strchr(s, '='), *dots = NULL, *end;
	size_t seplen = 2; /* ".." */
	if (eq) {
		dots = strstr(eq, "..");
	} else if ((eq = strchr(s, ':'))) {
		dots = strchr(eq + 1, ':');
		seplen = 1;
	}
	if (!eq || eq == s || !dots)
		return -1;
	char sep = *eq;
	*eq = 0;
	ph->name = s;
	errno = 0;
	ph->from_op = strtoull(eq + 1, &end, 10);
	int bad = errno || end != dots || eq[1] == '-' || end == eq + 1;
	ph->to_op = UINT64_MAX;
	if (!bad && dots[seplen]) {
		ph->to_op = strtoull(dots + seplen, &end, 10);
		bad = errno || *end || dots[seplen] == '-' || ph->to_op <= ph->from_op;
	}
	if (bad)
		*eq = sep; /* the message quotes it whole */
	return bad ? -1 : 0;
}

static enum arr_replay_touch touch_used; /* after arr_replay_choose_touch() */

/* The driver's sections of entry e, after the flat keys of a result. */
static void print_sections(const struct arr_doc *e)
{
	static const char *const keys[] = {"runs", "time", "fragmentation", "zeroing", "rss"};
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		const struct arr_doc *v = arr_doc_get(e, keys[k]);
		if (!v)
			continue;
		printf(",\"%s\":", keys[k]);
		arr_doc_write_json(stdout, v, 0);
	}
}

static void print_json(const char *trace, const char *wl_path, const struct arr_workload_info *info,
		       const struct arr_allocator *al, const struct arr_replay_result *res, const int *ok, int n,
		       const struct arr_doc *entries)
{
	size_t ei = 0;
	printf("{\"trace\":");
	arr_json_fputs(stdout, trace);
	printf(",\"touch\":\"%s\"", arr_replay_touch_name(touch_used));
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
		const struct arr_doc *entry = arr_doc_at(entries, ei++);
		printf("%s{\"allocator\":", first ? "" : ",");
		first = 0;
		arr_json_fputs(stdout, al[i].name);
		printf(",\"library\":");
		arr_json_fputs(stdout, al[i].lib[0] ? al[i].lib : "libc.so.6");
		printf(",\"threads\":%u,\"wall_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"ops\":%" PRIu64
		       ",\"ns_per_op\":%.2f,\"peak_rss\":%" PRIu64 ",\"final_rss\":%" PRIu64 ",\"ideal_rss\":%" PRIu64
		       ",\"peak_over_ideal\":%.3f,\"baseline_rss\":%" PRIu64 ",\"allocator_code\":%" PRIu64
		       ",\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64 ",\"sync_wait_ns\":%" PRIu64
		       ",\"anomalies\":%" PRIu64 ",\"divergence\":{\"failed_now\":%" PRIu64
		       ",\"succeeded_now\":%" PRIu64 ",\"sync_mismatch\":%" PRIu64 ",\"substituted_functions\":%" PRIu64
		       "}"
		       ",\"timer_overhead_ns\":%.2f,\"latency\":{",
		       r->threads_used, r->wall_ns, r->cpu_ns, r->ops,
		       r->ops ? (double)r->wall_ns / (double)r->ops : 0.0, r->peak_rss, r->final_rss, r->ideal_rss,
		       r->ideal_rss ? (double)r->peak_rss / (double)r->ideal_rss : 0.0, r->baseline_rss, r->code_rss,
		       r->minor_faults, r->major_faults, r->sync_wait_ns, r->anomalies, r->div.failed_now,
		       r->div.succeeded_now, r->div.sync_mismatch, r->div.substituted,
		       (double)r->timer_overhead_ns_x100 / 100.0);
		int lf = 1;
		for (unsigned op = 1; op <= 10; op++) {
			const struct arr_latency *l = &r->latency[op];
			if (!l->count)
				continue;
			printf("%s\"%s\":{\"count\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p90\":%" PRIu64
			       ",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64 ",\"max\":%" PRIu64
			       ",\"resolution_ns\":%" PRIu64 "}",
			       lf ? "" : ",", arr_op_name(op), l->count, l->p50, l->p90, l->p99, l->p999, l->max,
			       arr_replay_resolution_ns(r));
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
			printf("%s[%" PRIu64 ",%" PRIu64 "]", s ? "," : "", r->timeline[s].t_ns, r->timeline[s].rss);
		printf("]");
		if (entry)
			print_sections(entry);
		printf("}");
	}
	printf("]}\n");
}

/* The table: a label column, then a column per allocator whose replay
 * succeeded, each as wide as its widest cell (name, figures, latencies). */
typedef void (*cell_fn)(char *buf, size_t cap, const struct arr_replay_result *r);

static int colw[MAX_ALLOCATORS];

static void row(const char *label, cell_fn fn, const struct arr_replay_result *res, const int *ok, int n)
{
	printf("%-22s", label);
	for (int i = 0; i < n; i++) {
		if (!ok[i])
			continue;
		char buf[64] = "";
		fn(buf, sizeof buf, &res[i]);
		printf(" %*s", colw[i], buf);
	}
	putchar('\n');
}

#define CELL(name, ...) \
	static void name(char *b, size_t cap, const struct arr_replay_result *r) { snprintf(b, cap, __VA_ARGS__); }
CELL(c_threads, "%u", r->threads_used)
CELL(c_wall, "%.3f ms", (double)r->wall_ns / 1e6)
CELL(c_cpu, "%.3f ms", (double)r->cpu_ns / 1e6)
CELL(c_nsop, "%.1f ns", r->ops ? (double)r->wall_ns / (double)r->ops : 0.0)
CELL(c_wait, "%.3f ms", (double)r->sync_wait_ns / 1e6)
CELL(c_ratio, "%.2f", r->ideal_rss ? (double)r->peak_rss / (double)r->ideal_rss : 0.0)
static void c_ops(char *b, size_t cap, const struct arr_replay_result *r) { cli_count(b, cap, r->ops); }
static void c_minor(char *b, size_t cap, const struct arr_replay_result *r) { cli_count(b, cap, r->minor_faults); }
static void c_major(char *b, size_t cap, const struct arr_replay_result *r) { cli_count(b, cap, r->major_faults); }
static void c_anom(char *b, size_t cap, const struct arr_replay_result *r) { cli_count(b, cap, r->anomalies); }
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

/* A row of the driver's figures: path in each entry, shown as bytes, ms, a count or a ratio.
 * The entries are the successful replays, in order: entry k is the k-th column shown. */
enum dkind { D_BYTES, D_MS, D_COUNT, D_RATIO };

static void drow(const char *label, const struct arr_doc *entries, const char *path, enum dkind kind, const int *ok,
		 int n)
{
	int any = 0;
	for (size_t i = 0; entries && i < entries->len; i++)
		any |= arr_doc_path(entries->items[i], path) != NULL;
	if (!any)
		return;
	printf("%-22s", label);
	size_t k = 0;
	for (int i = 0; i < n && k < entries->len; i++) {
		if (!ok[i])
			continue;
		double v;
		char buf[64] = "-";
		if (!arr_doc_as_num(arr_doc_path(entries->items[k++], path), &v)) {
			if (kind == D_BYTES && v < 0) {
				buf[0] = '-';
				cli_human_bytes(buf + 1, sizeof buf - 1, (uint64_t)-v);
			} else if (kind == D_BYTES)
				cli_human_bytes(buf, sizeof buf, (uint64_t)v);
			else if (kind == D_MS)
				snprintf(buf, sizeof buf, "%.3f ms", v / 1e6);
			else if (kind == D_COUNT)
				cli_count(buf, sizeof buf, v);
			else
				snprintf(buf, sizeof buf, "%.3f", v);
		}
		printf(" %*s", colw[i], buf);
	}
	putchar('\n');
}

/* A latency figure in ns, u (us) from 10 us, m (ms) from 1 ms, or "<N" below
 * the timer's resolution: analyze's cells. */
static int lat_cell(char *b, size_t cap, uint64_t v, uint64_t res_ns)
{
	if (v < res_ns)
		return snprintf(b, cap, "<%" PRIu64, res_ns);
	if (v >= 1000000)
		return snprintf(b, cap, "%.1fm", (double)v / 1e6);
	if (v >= 10000)
		return snprintf(b, cap, "%.1fu", (double)v / 1e3);
	return snprintf(b, cap, "%" PRIu64, v);
}

/* One allocator's p50/p90/p99/p99.9/max of one function. */
static void lat_cells(char *buf, size_t cap, const struct arr_replay_result *r, unsigned op)
{
	const struct arr_latency *l = &r->latency[op];
	uint64_t rn = arr_replay_resolution_ns(r), v[5] = {l->p50, l->p90, l->p99, l->p999, l->max};
	size_t len = 0;
	buf[0] = 0;
	for (int k = 0; k < 5 && len < cap; k++) {
		if (k)
			buf[len++] = '/', buf[len] = 0;
		int w = lat_cell(buf + len, cap - len, v[k], rn);
		len += w > 0 ? (size_t)w : 0;
	}
}

static int any_latency(const struct arr_replay_result *res, const int *ok, int n, unsigned op)
{
	for (int i = 0; i < n; i++)
		if (ok[i] && res[i].latency[op].count)
			return 1;
	return 0;
}

/* Each column as wide as its name and its latency cells (20 at least). */
static void set_widths(const struct arr_allocator *al, const struct arr_replay_result *res, const int *ok, int n)
{
	for (int i = 0; i < n; i++) {
		colw[i] = strlen(al[i].name) > 20 ? (int)strlen(al[i].name) : 20;
		for (unsigned op = 1; ok[i] && op <= 10; op++) {
			char buf[128];
			lat_cells(buf, sizeof buf, &res[i], op);
			if (res[i].latency[op].count && (int)strlen(buf) > colw[i])
				colw[i] = (int)strlen(buf);
		}
	}
}

static void print_main(const struct arr_allocator *al, const struct arr_replay_result *res, const int *ok, int n)
{
	printf("%-22s", "");
	for (int i = 0; i < n; i++)
		if (ok[i])
			printf(" %*s", colw[i], al[i].name);
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
}

/* --runs: medians and ranges; --fragmentation and --zeroing: their replays. */
static void print_driver(const struct arr_doc *entries, const int *ok, int n)
{
	if (entries && entries->len && arr_doc_path(entries->items[0], "runs") &&
	    arr_doc_path(entries->items[0], "time.wall_ns_min")) {
		drow("runs", entries, "runs", D_COUNT, ok, n);
		drow("wall time, median", entries, "time.wall_ns", D_MS, ok, n);
		drow("wall time, min", entries, "time.wall_ns_min", D_MS, ok, n);
		drow("wall time, max", entries, "time.wall_ns_max", D_MS, ok, n);
		drow("peak RSS, median", entries, "fragmentation.peak_rss", D_BYTES, ok, n);
		drow("peak RSS, min", entries, "fragmentation.peak_rss_min", D_BYTES, ok, n);
		drow("peak RSS, max", entries, "fragmentation.peak_rss_max", D_BYTES, ok, n);
	}
	if (arr_doc_path(entries, "0.fragmentation.at")) {
		printf("fragmentation (a run tracking live and usable bytes)\n");
		drow("  live peak (this replay)", entries, "fragmentation.replay_peak_live", D_BYTES, ok, n);
		drow("  final live", entries, "fragmentation.final_live", D_BYTES, ok, n);
		drow("  internal at peak RSS", entries, "fragmentation.internal_bytes", D_BYTES, ok, n);
		drow("  external at peak RSS", entries, "fragmentation.external_bytes", D_BYTES, ok, n);
		drow("  external at peak live", entries, "fragmentation.at.peak_live.external", D_BYTES, ok, n);
		drow("  external at the end", entries, "fragmentation.at.end.external", D_BYTES, ok, n);
		drow("  J&W avg over time", entries, "fragmentation.jw.avg_over_time", D_RATIO, ok, n);
		drow("  J&W at peak live", entries, "fragmentation.jw.at_peak_live", D_RATIO, ok, n);
		drow("  J&W at peak RSS", entries, "fragmentation.jw.at_peak_rss", D_RATIO, ok, n);
		drow("  J&W peak vs peak", entries, "fragmentation.jw.peak_vs_peak", D_RATIO, ok, n);
	}
	if (arr_doc_path(entries, "0.zeroing")) {
		printf("zeroing (blocks untouched; calloc as recorded / as malloc / as malloc+memset)\n");
		drow("  time as recorded", entries, "zeroing.as_recorded_ns", D_MS, ok, n);
		drow("  calloc as malloc", entries, "zeroing.calloc_as_malloc_ns", D_MS, ok, n);
		drow("  as malloc+memset", entries, "zeroing.calloc_as_malloc_memset_ns", D_MS, ok, n);
		drow("  faults as recorded", entries, "zeroing.as_recorded_minor_faults", D_COUNT, ok, n);
		drow("  calloc as malloc", entries, "zeroing.calloc_as_malloc_minor_faults", D_COUNT, ok, n);
		drow("  as malloc+memset", entries, "zeroing.calloc_as_malloc_memset_minor_faults", D_COUNT, ok, n);
		drow("  peak RSS as recorded", entries, "zeroing.as_recorded_peak_rss", D_BYTES, ok, n);
		drow("  calloc as malloc", entries, "zeroing.calloc_as_malloc_peak_rss", D_BYTES, ok, n);
		drow("  as malloc+memset", entries, "zeroing.calloc_as_malloc_memset_peak_rss", D_BYTES, ok, n);
	}
}

static void print_latency(const struct arr_replay_result *res, const int *ok, int n)
{
	printf("latency p50/p90/p99/p99.9/max (ns; u = us, m = ms)\n");
	for (unsigned op = 1; op <= 10; op++) {
		if (!any_latency(res, ok, n, op))
			continue;
		printf("  %-20s", arr_op_name(op));
		for (int i = 0; i < n; i++) {
			if (!ok[i])
				continue;
			char buf[128];
			lat_cells(buf, sizeof buf, &res[i], op);
			printf(" %*s", colw[i], buf);
		}
		putchar('\n');
	}
}

/* What preparing the workload repaired, and where a replay diverged from the recording. */
static void print_repairs(const struct arr_workload_info *info, const struct arr_allocator *al,
			  const struct arr_replay_result *res, const int *ok, int n)
{
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

static void print_table(const char *trace, const struct arr_workload_info *info, const struct arr_allocator *al,
			const struct arr_replay_result *res, const int *ok, int n, const struct arr_doc *entries)
{
	char calls[32], syncs[32];
	cli_count(calls, sizeof calls, (double)info->calls);
	cli_count(syncs, sizeof syncs, (double)info->syncs);
	printf("%s: %s calls, %u thread%s, %s sync point%s\n\n", trace, calls, info->nthreads,
	       info->nthreads == 1 ? "" : "s", syncs, info->syncs == 1 ? "" : "s");
	set_widths(al, res, ok, n);
	print_main(al, res, ok, n);
	print_driver(entries, ok, n);
	print_latency(res, ok, n);
	print_repairs(info, al, res, ok, n);
}

/* One `allocrr replay`: its options, then what each phase makes. */
struct replay {
	struct arr_replay_options ro;
	const char *specs[MAX_ALLOCATORS];
	size_t nspecs;
	int json, quiet, rebuild, partial, zeroing, frag, analysis, touch_set;
	unsigned runs;
	struct phases phases;
	struct touch_arg touch;
	const char *cache_dir, *select;
	char trace[PATH_MAX]; /* the one chosen of its family */
	/* load */
	struct cli_replay_env env;
	struct arr_allocator al[MAX_ALLOCATORS];
	int n;
	char wl_path[PATH_MAX];
	struct arr_workload_info info;
	/* run */
	struct arr_replay_result res[MAX_ALLOCATORS];
	int ok[MAX_ALLOCATORS], nok;
	struct arr_doc *entries;
};

/* Options and the trace. Returns -1 to go on, or the exit code. */
static int parse_args(struct replay *r, int argc, char **argv)
{
	static struct arr_replay_phase phase_v[MAX_PHASES];
	r->ro = (struct arr_replay_options)ARR_REPLAY_OPTIONS_INIT;
	r->runs = 1;
	r->phases = (struct phases){phase_v, 0};
	r->touch = (struct touch_arg){&r->ro.touch, &r->touch_set};
	int first;
	const struct cli_option opts[] = {
		CLI_LIST('a', "allocator", "A", r->specs, &r->nspecs, MAX_ALLOCATORS,
			 "builtin, glibc, jemalloc, mimalloc, tcmalloc or a path\n"
			 "to a malloc .so, with tunables after a colon:\n"
			 "glibc:mmap_threshold=131072, builtin:purge_delay=0\n"
			 "(repeatable; default: glibc, and builtin if built)"),
		CLI_CALLBACK('t', "threads", CLI_ARG_REQUIRED, "MODE", &r->ro.threads, parse_threads,
			     "serial: one thread, recorded order (deterministic);\n"
			     "parallel: a thread per recorded thread, cross-thread\n"
			     "order kept; auto (default): parallel when the trace\n"
			     "has several threads"),
		CLI_CALLBACK(0, "touch", CLI_ARG_REQUIRED, "MODE", &r->touch, parse_touch,
			     "write to new blocks: none, page (one byte per page,\n"
			     "default) or all (every byte). The default becomes\n"
			     "none when the program touched little of what it\n"
			     "allocated (recorded RSS under half its peak live\n"
			     "memory) or touching would not fit in the available\n"
			     "memory; an explicit page/all that cannot fit is refused"),
		CLI_UINT(0, "samples", "N", &r->ro.samples, 1, 1000000, "RSS timeline samples (default 1000)"),
		CLI_UINT(0, "latency-every", "N", &r->ro.latency_every, 0, 100000000,
			 "time one call in N (default 1; 0 = no timing)"),
		CLI_UINT(0, "pace", "N", &r->ro.pace, 0, 100000000,
			 "parallel replay: a thread runs at most ~2N entries\n"
			 "ahead of the recorded interleaving, so the live set\n"
			 "stays the recorded one (default 256; 0 = only\n"
			 "cross-thread frees order threads)"),
		CLI_UINT(0, "runs", "N", &r->runs, 1, 1000,
			 "timed replays per allocator; medians and min-max\n"
			 "(default 1)"),
		CLI_FLAG(0, "zeroing", &r->zeroing,
			 "also replay with every calloc made a malloc, and a\n"
			 "malloc + memset: what zeroing costs, what calloc saves"),
		CLI_FLAG(0, "fragmentation", &r->frag,
			 "one more replay tracking live and usable bytes:\n"
			 "internal and external fragmentation over time"),
		CLI_CALLBACK(0, "phase", CLI_ARG_REQUIRED, "NAME=FROM..TO", &r->phases, add_phase,
			     "RSS growth of the calls FROM to TO (call indexes\n"
			     "from 0, TO excluded, empty: the end; NAME:FROM:TO\n"
			     "as analyze writes it works too); repeatable"),
		CLI_FLAG(0, "analysis", &r->analysis,
			 "with --json: print the analysis document's\n"
			 "'allocators' entries instead (docs/report.md)"),
		CLI_STRING(0, "cache-dir", "DIR", &r->cache_dir, "keep the workload in DIR (default: TRACE.wl)"),
		CLI_FLAG(0, "rebuild", &r->rebuild, "prepare the workload again even if cached"),
		CLI_FLAG(0, "partial", &r->partial, "replay the complete part of a truncated trace"),
		CLI_STRING(0, "select", "NAME", &r->select,
			   "of a family of traces (TRACE, TRACE.PID... written by\n"
			   "one recording), the largest of program NAME (or pid);\n"
			   "TRACE@NAME says the same; default: the largest\n"
			   "trace when TRACE is the top one of its family"),
		CLI_FLAG('j', "json", &r->json, "one JSON document"),
		CLI_FLAG('q', "quiet", &r->quiet, "no progress notes on stderr"),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error("replay", "no trace given");
	if (first + 1 < argc)
		return cli_usage_error("replay", "one trace at a time ('%s' is extra)", argv[first + 1]);
	rc = cli_family_resolve(argv[first], r->select, r->quiet, r->trace, sizeof r->trace);
	return rc ? rc : -1;
}

/* The allocators and the workload (prepared if need be), and the touch mode. Returns 0 or the exit code. */
static int load(struct replay *r)
{
	int rc = cli_replay_env_find(&r->env);
	if (rc)
		return rc;
	if (!r->nspecs)
		r->nspecs = cli_replay_default_specs(&r->env, r->specs);
	for (size_t i = 0; i < r->nspecs; i++, r->n++)
		if ((rc = cli_replay_resolve("replay", &r->env, r->specs[i], &r->al[r->n])))
			return rc;
	struct cli_replay_plan plan = CLI_REPLAY_PLAN_INIT;
	plan.cache_dir = r->cache_dir;
	plan.rebuild = r->rebuild;
	plan.partial = r->partial;
	plan.quiet = r->quiet;
	if ((rc = cli_replay_workload(r->trace, &plan, r->wl_path, sizeof r->wl_path, &r->info)))
		return rc;
	char note[512];
	if (arr_replay_choose_touch(&r->info, r->touch_set, &r->ro.touch, note, sizeof note)) {
		cli_error("'%s': %s", r->trace, note);
		return EXIT_BAD_INPUT;
	}
	if (*note && !r->quiet)
		fprintf(stderr, "allocrr: %s\n", note);
	touch_used = r->ro.touch;
	return 0;
}

/* Every allocator's replays. Returns 0 or the exit code of the first that failed (the others ran). */
static int run(struct replay *r)
{
	struct cli_replay_plan plan = CLI_REPLAY_PLAN_INIT;
	plan.cache_dir = r->cache_dir;
	plan.partial = r->partial;
	plan.touch_set = 1; /* chosen by load() */
	plan.opt = r->ro;
	plan.runs = r->runs;
	plan.zeroing = r->zeroing;
	plan.fragmentation = r->frag;
	plan.quiet = 1; /* the workload is ready: said by load() */
	plan.progress = !r->quiet;
	plan.phases = r->phases.v;
	plan.nphases = r->phases.n;
	plan.timed = r->res;
	plan.timed_ok = r->ok;
	if (!(r->entries = arr_doc_array())) {
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	int status = cli_replays_analyze(r->trace, r->specs, r->nspecs, &plan, r->entries);
	for (int i = 0; i < r->n; i++)
		r->nok += r->ok[i];
	return status;
}

static void render(struct replay *r)
{
	if (!r->nok)
		return;
	if (r->analysis && r->json) {
		struct arr_doc *d = arr_doc_object();
		arr_doc_set_str(d, "trace", r->trace);
		arr_doc_set(d, "allocators", r->entries); /* owns it now, even on failure */
		r->entries = NULL;
		arr_doc_write_json(stdout, d, 0);
		putchar('\n');
		arr_doc_free(d);
	} else if (r->json) {
		print_json(r->trace, r->wl_path, &r->info, r->al, r->res, r->ok, r->n, r->entries);
	} else {
		print_table(r->trace, &r->info, r->al, r->res, r->ok, r->n, r->entries);
	}
}

int cmd_replay(int argc, char **argv)
{
	static struct replay r; /* results and allocators are large */
	memset(&r, 0, sizeof r);
	int status = parse_args(&r, argc, argv);
	if (status >= 0)
		return status;
	if (!(status = load(&r))) {
		status = run(&r);
		render(&r);
	}
	for (int i = 0; i < r.n; i++)
		if (r.ok[i])
			arr_replay_result_release(&r.res[i]);
	arr_doc_free(r.entries);
	return status;
}

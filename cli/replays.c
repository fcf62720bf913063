/*
 * replays.c - the replay-side driver shared by `allocrr replay`, `analyze -a`
 * and `report`: find the engine and the built-in allocator, resolve
 * allocator specs, make sure the trace's workload exists, replay it into
 * each allocator (a fresh engine process per run) and write what the runs
 * measured into the analysis document, one `allocators` entry per allocator
 * (keys in docs/report.md, "Replay analyses").
 *
 * Runs per allocator: plan->runs timed replays as recorded (medians and
 * min-max of time, faults and RSS; latency and the timeline come from the
 * run of median wall time), then, when asked, plan->runs replays with every
 * calloc made a malloc and plan->runs with every calloc made a malloc +
 * memset (the zeroing figures), and one untimed replay that tracks live and
 * usable bytes (the fragmentation figures).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/doc.h"
#include "allocrr/replay.h"
#include "cli.h"

#define MAX_RUNS 1000

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- finding things ---- */

int cli_replay_env_find(struct cli_replay_env *env)
{
	/* The built-in allocator: beside us in the build tree, or installed. */
	static const char *const lib_dirs[] = {"../lib", "../" ALLOCRR_LIBDIR_REL_PARENT};
	for (size_t i = 0; i < sizeof lib_dirs / sizeof *lib_dirs; i++) {
		char real[PATH_MAX];
		snprintf(env->builtin_lib, sizeof env->builtin_lib, "%s/%s/liballocrr-malloc.so", cli_exe_dir(),
			 lib_dirs[i]);
		if (realpath(env->builtin_lib, real) && !access(real, R_OK)) {
			snprintf(env->builtin_lib, sizeof env->builtin_lib, "%s", real);
			break;
		}
	}
	const char *env_engine = getenv("ALLOCRR_REPLAY_ENGINE");
	if (env_engine && *env_engine)
		snprintf(env->engine, sizeof env->engine, "%s", env_engine);
	else
		snprintf(env->engine, sizeof env->engine, "%s/allocrr-replay-engine", cli_exe_dir());
	if (access(env->engine, X_OK)) {
		cli_error("cannot run the replay engine '%s': %s", env->engine, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	return 0;
}

size_t cli_replay_default_specs(const struct cli_replay_env *env, const char **specs)
{
	size_t n = 0;
	specs[n++] = "glibc";
	if (!access(env->builtin_lib, R_OK))
		specs[n++] = "builtin";
	return n;
}

int cli_replay_resolve(const char *cmd, const struct cli_replay_env *env, const char *spec,
		       struct arr_allocator *out)
{
	int rc = arr_allocator_resolve(spec, env->builtin_lib, out);
	if (rc == ARR_EINVAL)
		return cli_usage_error(cmd,
				       "unknown allocator '%s' (known: builtin, glibc, jemalloc, mimalloc, "
				       "tcmalloc, or a path to a .so)",
				       spec);
	if (rc == ARR_ESYNTAX)
		return cli_usage_error(cmd, "bad tunables in '%s' (want NAME:key=value,...)", spec);
	if (rc == ARR_ENOTFOUND) {
		if (out->package)
			cli_error("allocator '%s': %s not found; install the Debian package %s", spec, out->lib,
				  out->package);
		else if (out->is_builtin)
			cli_error("allocator 'builtin': %s not found; build the allocrr-malloc target", out->lib);
		else
			cli_error("allocator '%s': cannot read '%s'", spec, out->lib);
		return EXIT_BAD_INPUT;
	}
	if (rc) {
		cli_error("allocator '%s': %s", spec, arr_strerror(rc));
		return EXIT_BAD_INPUT;
	}
	return 0;
}

int cli_replay_workload(const char *trace, const struct cli_replay_plan *plan, char *wl_path, size_t cap,
			struct arr_workload_info *info)
{
	int rc = arr_workload_cache_path(wl_path, cap, trace, plan->cache_dir);
	if (rc) {
		cli_error("cannot open '%s': %s", trace, arr_strerror(rc));
		return EXIT_BAD_INPUT;
	}
	rc = plan->rebuild ? ARR_ESTALE : arr_workload_check(wl_path, trace, info);
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
	rc = arr_workload_build(tr, wl_path, plan->partial, info);
	if (rc == ARR_ETRUNCATED || rc == ARR_ECORRUPT || rc == ARR_EDECOMPRESS || rc == ARR_EBADMAGIC ||
	    rc == ARR_EVERSION) {
		rc = cli_trace_error(trace, tr, rc);
		if (rc && arr_trace_error_offset(tr) && !plan->partial)
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
	if (!plan->quiet)
		fprintf(stderr,
			"allocrr: prepared '%s': %" PRIu64 " events, %" PRIu64 " calls, %u threads, %" PRIu64
			" sync points in %.3f s (%.1fM events/s)\n",
			wl_path, info->events, info->calls, info->nthreads, info->syncs, dt,
			dt > 0 ? (double)info->events / dt / 1e6 : 0.0);
	return 0;
}

int cli_replay_once(const struct cli_replay_env *env, const struct arr_allocator *a, const char *wl_path,
		    const struct arr_replay_options *opt, struct arr_replay_result *res)
{
	int st = 0;
	int rc = arr_replay_spawn(env->engine, a, wl_path, opt, res, &st);
	if (rc == 0)
		return 0;
	if (WIFSIGNALED(st))
		cli_error("replay into '%s' failed: the engine was killed by signal %d (%s)", a->name, WTERMSIG(st),
			  strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st))
		cli_error("replay into '%s' failed: the engine exited with status %d", a->name, WEXITSTATUS(st));
	else
		cli_error("replay into '%s' failed: %s", a->name, arr_strerror(rc));
	return EXIT_BAD_INPUT;
}

/* ---- progress: one line on a terminal, rewritten ---- */

struct progress {
	int on;
	unsigned done, total;
	double t0;
};

static void progress_step(struct progress *p, const char *alloc, const char *what)
{
	if (!p->on)
		return;
	double el = now_s() - p->t0;
	char eta[32] = "";
	if (p->done)
		snprintf(eta, sizeof eta, ", ETA %.0f s", el / p->done * (p->total - p->done));
	fprintf(stderr, "\r\033[Kallocrr: replay %u/%u: %s, %s (%.0f s%s)", p->done + 1, p->total, alloc, what,
		el, eta);
	fflush(stderr);
}

static void progress_end(struct progress *p)
{
	if (p->on)
		fputs("\r\033[K", stderr);
}

/* ---- figures over runs ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct spread {
	uint64_t med, min, max;
};

static struct spread spread_of(const struct arr_replay_result *r, unsigned n, size_t field)
{
	uint64_t v[MAX_RUNS];
	for (unsigned i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&r[i] + field, sizeof v[i]);
	qsort(v, n, sizeof *v, cmp_u64);
	struct spread s = {n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] & v[n / 2] & 1), v[0],
			   v[n - 1]};
	return s;
}

/* key, key_min, key_max (min-max only with more than one run) */
static void set_spread(struct arr_doc *o, const char *key, struct spread s, unsigned runs)
{
	arr_doc_set_int(o, key, (int64_t)s.med);
	if (runs > 1) {
		char k[128];
		snprintf(k, sizeof k, "%s_min", key);
		arr_doc_set_int(o, k, (int64_t)s.min);
		snprintf(k, sizeof k, "%s_max", key);
		arr_doc_set_int(o, k, (int64_t)s.max);
	}
}

#define SPREAD(r, n, field) spread_of(r, n, offsetof(struct arr_replay_result, field))

/* The run of median wall time: its latency and timeline stand for all. */
static unsigned median_run(const struct arr_replay_result *r, unsigned n)
{
	struct spread s = SPREAD(r, n, wall_ns);
	unsigned best = 0;
	for (unsigned i = 1; i < n; i++) {
		uint64_t d = r[i].wall_ns > s.med ? r[i].wall_ns - s.med : s.med - r[i].wall_ns;
		uint64_t b = r[best].wall_ns > s.med ? r[best].wall_ns - s.med : s.med - r[best].wall_ns;
		if (d < b)
			best = i;
	}
	return best;
}

static const char *op_key(unsigned op)
{
	const char *s = arr_op_name(op);
	return s ? s : "?";
}

static void put_latency(struct arr_doc *e, const struct arr_replay_result *r)
{
	struct arr_doc *lat = arr_doc_set_obj(e, "latency");
	/* Below the cost of reading the timer a figure says nothing but "less". */
	uint64_t res_ns = (r->timer_overhead_ns_x100 + 99) / 100;
	if (res_ns < 1)
		res_ns = 1;
	for (unsigned op = 1; op < ARR_OP_MAX_; op++) {
		const struct arr_latency *l = &r->latency[op];
		if (!l->count)
			continue;
		struct arr_doc *o = arr_doc_set_obj(lat, op_key(op));
		arr_doc_set_int(o, "count", (int64_t)l->count);
		arr_doc_set_int(o, "p50", (int64_t)l->p50);
		arr_doc_set_int(o, "p90", (int64_t)l->p90);
		arr_doc_set_int(o, "p99", (int64_t)l->p99);
		arr_doc_set_int(o, "p999", (int64_t)l->p999);
		arr_doc_set_int(o, "max", (int64_t)l->max);
		arr_doc_set_int(o, "resolution_ns", (int64_t)res_ns);
	}
}

/* Least-squares slope of rss over t, bytes per second. */
static double growth_per_s(const struct arr_replay_result *r)
{
	if (r->nsamples < 2)
		return 0;
	double st = 0, sr = 0, stt = 0, str = 0, n = r->nsamples;
	for (uint32_t i = 0; i < r->nsamples; i++) {
		double t = (double)r->timeline[i].t_ns / 1e9, v = (double)r->timeline[i].rss;
		st += t, sr += v, stt += t * t, str += t * v;
	}
	double den = n * stt - st * st;
	return den > 0 ? (n * str - st * sr) / den : 0;
}

/* The timeline in at most `points` buckets, each kept by its sample of highest RSS. */
static void put_timeline(struct arr_doc *o, const struct arr_replay_result *r, unsigned points, int with_live)
{
	struct arr_doc *tl = arr_doc_set_obj(o, "timeline");
	struct arr_doc *t = arr_doc_set_arr(tl, "t"), *rss = arr_doc_set_arr(tl, "rss"),
		       *ix = arr_doc_set_arr(tl, "op_index"), *live = NULL, *usable = NULL;
	if (with_live) {
		live = arr_doc_set_arr(tl, "live");
		usable = arr_doc_set_arr(tl, "usable");
	}
	uint32_t n = r->nsamples;
	if (!points)
		points = 1;
	for (uint64_t b = 0, from = 0; from < n; b++) {
		uint64_t to = n <= points ? from + 1 : (b + 1) * n / points;
		if (to <= from)
			to = from + 1;
		uint64_t best = from;
		for (uint64_t i = from + 1; i < to; i++)
			if (r->timeline[i].rss > r->timeline[best].rss)
				best = i;
		const struct arr_rss_sample *s = &r->timeline[best];
		arr_doc_push_int(t, (int64_t)s->t_ns);
		arr_doc_push_int(rss, (int64_t)s->rss);
		arr_doc_push_int(ix, (int64_t)s->op_index);
		if (with_live) {
			arr_doc_push_int(live, (int64_t)s->live);
			arr_doc_push_int(usable, (int64_t)s->usable);
		}
		from = to;
	}
}

/* ---- one allocator's entry ---- */

/* The sets of runs of one allocator: timed as recorded, then the three zeroing modes. */
enum { S_TIMED, S_ZERO, S_N = S_ZERO + ARR_ZERO_MODES };

static void put_time(struct arr_doc *e, const struct arr_replay_result *r, unsigned n)
{
	struct arr_doc *t = arr_doc_set_obj(e, "time");
	set_spread(t, "wall_ns", SPREAD(r, n, wall_ns), n);
	set_spread(t, "cpu_ns", SPREAD(r, n, cpu_ns), n);
	set_spread(t, "minor_faults", SPREAD(r, n, minor_faults), n);
	set_spread(t, "major_faults", SPREAD(r, n, major_faults), n);
	set_spread(t, "sync_wait_ns", SPREAD(r, n, sync_wait_ns), n);
	struct spread w = SPREAD(r, n, wall_ns);
	arr_doc_set_num(t, "ns_per_call", r[0].ops ? (double)w.med / (double)r[0].ops : 0.0);
}

static void put_stats(struct arr_doc *e, const struct arr_replay_result *r)
{
	if (r->has_mallinfo) {
		struct arr_doc *m = arr_doc_set_obj(e, "mallinfo2");
		arr_doc_set_int(m, "arena", (int64_t)r->mi_arena);
		arr_doc_set_int(m, "hblkhd", (int64_t)r->mi_hblkhd);
		arr_doc_set_int(m, "uordblks", (int64_t)r->mi_uordblks);
		arr_doc_set_int(m, "fordblks", (int64_t)r->mi_fordblks);
		arr_doc_set_int(m, "keepcost", (int64_t)r->mi_keepcost);
	}
	if (r->has_builtin) {
		struct arr_doc *m = arr_doc_set_obj(e, "builtin_stats");
		arr_doc_set_int(m, "mapped", (int64_t)r->bi_mapped);
		arr_doc_set_int(m, "resident", (int64_t)r->bi_resident);
		arr_doc_set_int(m, "live_usable", (int64_t)r->bi_live_usable);
		arr_doc_set_int(m, "live_blocks", (int64_t)r->bi_live_blocks);
		arr_doc_set_int(m, "pages_purged", (int64_t)r->bi_pages_purged);
	}
}

static void put_entry(struct arr_doc *e, const struct arr_allocator *a, const struct arr_workload_info *info,
		      struct arr_replay_result *const z[S_N], const int have[S_N], unsigned runs,
		      const struct cli_replay_plan *plan)
{
	const struct arr_replay_result *rec = z[S_TIMED];
	const struct arr_replay_result *m = &rec[median_run(rec, runs)];
	arr_doc_set_str(e, "allocator", a->name);
	arr_doc_set_str(e, "library", a->lib[0] ? a->lib : "libc.so.6");
	arr_doc_set_int(e, "runs", runs);
	arr_doc_set_int(e, "threads", m->threads_used);
	arr_doc_set_int(e, "calls", (int64_t)m->ops);
	put_time(e, rec, runs);

	struct spread peak = SPREAD(rec, runs, peak_rss), fin = SPREAD(rec, runs, final_rss);
	struct arr_doc *f = arr_doc_set_obj(e, "fragmentation");
	set_spread(f, "peak_rss", peak, runs);
	arr_doc_set_int(f, "peak_live", (int64_t)info->ideal_rss);
	set_spread(f, "final_rss", fin, runs);
	arr_doc_set_int(f, "ideal_rss", (int64_t)info->ideal_rss);
	arr_doc_set_num(f, "peak_over_ideal", info->ideal_rss ? (double)peak.med / (double)info->ideal_rss : 0.0);

	if (have[S_ZERO]) {
		struct arr_doc *zo = arr_doc_set_obj(e, "zeroing");
		arr_doc_set_str(zo, "touch", "none");
		for (int k = 0; k < ARR_ZERO_MODES; k++) {
			const struct arr_replay_result *zr = z[S_ZERO + k];
			const char *name = arr_replay_zeroing_name((enum arr_replay_zeroing)k);
			char key[96];
			snprintf(key, sizeof key, "%s_ns", name);
			set_spread(zo, key, SPREAD(zr, runs, wall_ns), runs);
			snprintf(key, sizeof key, "%s_cpu_ns", name);
			set_spread(zo, key, SPREAD(zr, runs, cpu_ns), runs);
			snprintf(key, sizeof key, "%s_minor_faults", name);
			set_spread(zo, key, SPREAD(zr, runs, minor_faults), runs);
			snprintf(key, sizeof key, "%s_peak_rss", name);
			set_spread(zo, key, SPREAD(zr, runs, peak_rss), runs);
		}
	}

	put_latency(e, m);

	struct arr_doc *rs = arr_doc_set_obj(e, "rss");
	set_spread(rs, "peak", peak, runs);
	set_spread(rs, "final", fin, runs);
	arr_doc_set_int(rs, "baseline", (int64_t)m->baseline_rss);
	arr_doc_set_num(rs, "growth_bytes_per_s", growth_per_s(m));
	put_timeline(rs, m, plan->points, 0);

	arr_doc_set_int(e, "anomalies", (int64_t)m->anomalies);
	struct arr_doc *d = arr_doc_set_obj(e, "divergence");
	arr_doc_set_int(d, "failed_now", (int64_t)m->div.failed_now);
	arr_doc_set_int(d, "succeeded_now", (int64_t)m->div.succeeded_now);
	arr_doc_set_int(d, "sync_mismatch", (int64_t)m->div.sync_mismatch);
	arr_doc_set_int(d, "substituted_functions", (int64_t)m->div.substituted);
	put_stats(e, m);
}

int cli_replays_analyze(const char *trace, const char *const *specs, size_t n, const struct cli_replay_plan *plan,
			struct arr_doc *allocators)
{
	const char *cmd = plan->cmd ? plan->cmd : "replay";
	struct cli_replay_env env;
	int rc = cli_replay_env_find(&env);
	if (rc)
		return rc;
	const char *defaults[2];
	if (!n) {
		n = cli_replay_default_specs(&env, defaults);
		specs = defaults;
	}
	unsigned runs = plan->runs ? plan->runs : 1;
	if (runs > MAX_RUNS)
		return cli_usage_error(cmd, "at most %d runs", MAX_RUNS);

	struct arr_allocator *al = calloc(n, sizeof *al);
	if (!al) {
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = cli_replay_resolve(cmd, &env, specs[i], &al[i]))) {
			free(al);
			return rc;
		}
	char wl_path[PATH_MAX];
	struct arr_workload_info info;
	if ((rc = cli_replay_workload(trace, plan, wl_path, sizeof wl_path, &info))) {
		free(al);
		return rc;
	}

	struct arr_replay_result *res = calloc((size_t)S_N * runs, sizeof *res);
	if (!res) {
		free(al);
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	unsigned nsets = plan->zeroing ? S_N : 1;
	struct progress pg = {plan->progress && isatty(2), 0, (unsigned)(n * nsets * runs), now_s()};
	int status = 0;
	for (size_t i = 0; i < n; i++) {
		struct arr_replay_result *z[S_N];
		int have[S_N] = {0}, failed = 0;
		for (unsigned k = 0; k < S_N; k++)
			z[k] = res + (size_t)k * runs;
		for (unsigned k = 0; k < nsets && !failed; k++) {
			struct arr_replay_options o = plan->opt;
			o.measure_usable = 0;
			if (k >= S_ZERO) {
				/* Untouched blocks: the differences are then what zeroing touches. */
				o.zeroing = (enum arr_replay_zeroing)(k - S_ZERO);
				o.touch = ARR_TOUCH_NONE;
				o.latency_every = 0;
			}
			unsigned r;
			for (r = 0; r < runs; r++) {
				progress_step(&pg, al[i].name,
					      k == S_TIMED ? "timed" : arr_replay_zeroing_name(o.zeroing));
				if (cli_replay_once(&env, &al[i], wl_path, &o, &z[k][r])) {
					failed = 1;
					break;
				}
				pg.done++;
			}
			have[k] = r == runs;
			if (!have[k])
				for (unsigned q = 0; q < r; q++)
					arr_replay_result_release(&z[k][q]);
		}
		if (!failed) {
			struct arr_doc *e = arr_doc_push_obj(allocators);
			put_entry(e, &al[i], &info, z, have, runs, plan);
		} else if (!status) {
			status = EXIT_BAD_INPUT;
		}
		for (unsigned k = 0; k < S_N; k++)
			if (have[k])
				for (unsigned r = 0; r < runs; r++)
					arr_replay_result_release(&z[k][r]);
	}
	progress_end(&pg);
	free(res);
	free(al);
	if (!status && arr_doc_status(allocators)) {
		cli_error("out of memory");
		status = EXIT_BAD_INPUT;
	}
	return status;
}

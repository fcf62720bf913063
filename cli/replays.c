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
#include "allocrr/replay_analysis.h"
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

int cli_replay_resolve(const char *cmd, const struct cli_replay_env *env, const char *spec, struct arr_allocator *out)
{
	int rc = arr_allocator_resolve(spec, env->builtin_lib, out);
	if (rc == ARR_EINVAL)
		return cli_usage_error(cmd,
				       "unknown allocator '%s' (known: builtin, glibc, jemalloc, mimalloc, "
				       "tcmalloc, or a path to a .so)",
				       spec);
	if (rc == ARR_ESYNTAX || rc == ARR_ERANGE)
		return cli_usage_error(cmd, "allocator '%s': %s", spec, out->why);
	if (rc == ARR_EUNSUPPORTED) {
		cli_error("allocator '%s': '%s' is not a malloc library: %s", spec, out->lib, out->why);
		return EXIT_BAD_INPUT;
	}
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
	if (rc == -EEXIST) {
		cli_error("'%s' exists and is not an allocrr workload; not replacing it (remove it, or choose "
			  "--cache-dir DIR)",
			  wl_path);
		return EXIT_BAD_INPUT;
	}
	if (rc == 0 && info->truncated_at && !plan->partial) { /* cached by an earlier --partial */
		cli_error("'%s': %s at offset %" PRIu64, trace, arr_strerror(ARR_ETRUNCATED), info->truncated_at);
		fprintf(stderr, "hint: --partial replays the complete part of a truncated trace\n");
		return EXIT_BAD_INPUT;
	}
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
		int brc = rc;
		rc = cli_trace_error(trace, tr, rc);
		if (rc == EXIT_BAD_INPUT && arr_trace_error_offset(tr) && !plan->partial && brc == ARR_ETRUNCATED)
			fprintf(stderr, "hint: --partial replays the complete part of a truncated trace\n");
		arr_trace_close(tr);
		return rc;
	}
	arr_trace_close(tr);
	if (rc == -EEXIST) { /* --rebuild, or planted since the check */
		cli_error("'%s' exists and is not an allocrr workload; not replacing it (remove it, or choose "
			  "--cache-dir DIR)",
			  wl_path);
		return EXIT_BAD_INPUT;
	}
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
	uint64_t calls; /* a replay's calls: the rate is of calls replayed */
};

static void progress_step(struct progress *p, const char *alloc, const char *what)
{
	if (!p->on)
		return;
	double el = now_s() - p->t0;
	char label[160];
	snprintf(label, sizeof label, "replay %u/%u %s, %s", p->done + 1, p->total, alloc, what);
	cli_progress(label, p->total ? (double)p->done / p->total : 0,
		     el > 0 ? (double)p->done * (double)p->calls / el : 0, "calls", el);
}

static void progress_end(struct progress *p)
{
	if (p->on)
		cli_progress_clear();
}

/* ---- one allocator's entry ---- */

/* The sets of runs of one allocator: timed as recorded, then the three zeroing modes. */
enum { S_TIMED, S_ZERO, S_N = S_ZERO + ARR_ZERO_MODES };

static void put_time(struct arr_doc *e, const struct arr_replay_result *r, unsigned n)
{
	struct arr_doc *t = arr_doc_set_obj(e, "time");
	arr_replay_put_spread(t, "wall_ns", ARR_REPLAY_SPREAD(r, n, wall_ns), n);
	arr_replay_put_spread(t, "cpu_ns", ARR_REPLAY_SPREAD(r, n, cpu_ns), n);
	arr_replay_put_spread(t, "minor_faults", ARR_REPLAY_SPREAD(r, n, minor_faults), n);
	arr_replay_put_spread(t, "major_faults", ARR_REPLAY_SPREAD(r, n, major_faults), n);
	arr_replay_put_spread(t, "sync_wait_ns", ARR_REPLAY_SPREAD(r, n, sync_wait_ns), n);
	struct arr_spread w = ARR_REPLAY_SPREAD(r, n, wall_ns);
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

/* rss.timeline of the timed run m, with live bytes from the measure run f at the same call index
 * (both replay the same calls: live bytes at a call index do not depend on the run) */
static void put_rss(struct arr_doc *rs, const struct arr_replay_result *m, const struct arr_replay_result *f,
		    unsigned points)
{
	/*
	 * The timed run reads RSS every N calls; a block allocated and freed
	 * between two readings (glibc's mmap'd 4 MiB) is in its peak_rss (VmHWM)
	 * and on no sample, so its curve missed the peak. The measure run's
	 * samples know the peak of their interval (`peak`, replayer/run.c): where
	 * its highest is, the timed run's own peak is drawn, at that call index.
	 */
	struct arr_replay_result with_peak;
	struct arr_rss_sample *ptl = NULL;
	uint64_t top = 0, page = 4096;
	for (uint32_t i = 0; i < m->nsamples; i++)
		if (m->timeline[i].rss > top)
			top = m->timeline[i].rss;
	if (f && f->nsamples && m->nsamples && m->peak_rss >= top + 16 * page &&
	    (ptl = malloc(((size_t)m->nsamples + 1) * sizeof *ptl))) {
		uint32_t k = 0;
		for (uint32_t i = 1; i < f->nsamples; i++)
			if (f->timeline[i].peak > f->timeline[k].peak)
				k = i;
		uint64_t op = f->timeline[k].op_index;
		uint32_t at = 0;
		while (at < m->nsamples && m->timeline[at].op_index <= op)
			at++;
		memcpy(ptl, m->timeline, at * sizeof *ptl);
		ptl[at] = m->timeline[at ? at - 1 : 0]; /* its time: the sample before it */
		ptl[at].op_index = op;
		ptl[at].rss = m->peak_rss;
		memcpy(ptl + at + 1, m->timeline + at, (m->nsamples - at) * sizeof *ptl);
		with_peak = *m;
		with_peak.timeline = ptl;
		with_peak.nsamples = m->nsamples + 1;
		m = &with_peak;
		arr_doc_set_int(rs, "peak_between_samples", (int64_t)op);
	}
	arr_replay_put_timeline(rs, m, points, 0);
	free(ptl);
	if (!f || !f->nsamples)
		return;
	struct arr_doc *tl = arr_doc_get(rs, "timeline"), *ix = arr_doc_get(tl, "op_index");
	struct arr_doc *live = arr_doc_set_arr(tl, "live");
	uint32_t k = 0;
	for (size_t i = 0; ix && i < ix->len; i++) {
		uint64_t op = (uint64_t)ix->items[i]->v.i;
		while (k + 1 < f->nsamples && f->timeline[k + 1].op_index <= op)
			k++;
		arr_doc_push_int(live, (int64_t)f->timeline[k].live);
	}
}

static void put_entry(struct arr_doc *e, const struct arr_allocator *a, const struct arr_workload_info *info,
		      struct arr_replay_result *const z[S_N], const int have[S_N], unsigned runs,
		      const struct arr_replay_result *f, const struct cli_replay_plan *plan,
		      enum arr_replay_touch touch)
{
	const struct arr_replay_result *rec = z[S_TIMED];
	const struct arr_replay_result *m = &rec[arr_replay_median_run(rec, runs)];
	arr_doc_set_str(e, "allocator", a->name);
	arr_doc_set_str(e, "library", a->lib[0] ? a->lib : "libc.so.6");
	arr_doc_set_int(e, "runs", runs);
	arr_doc_set_int(e, "threads", m->threads_used);
	arr_doc_set_int(e, "calls", (int64_t)m->ops);
	put_time(e, rec, runs);

	struct arr_spread peak = ARR_REPLAY_SPREAD(rec, runs, peak_rss), fin = ARR_REPLAY_SPREAD(rec, runs, final_rss);
	struct arr_doc *fr = arr_doc_set_obj(e, "fragmentation");
	arr_replay_put_spread(fr, "peak_rss", peak, runs);
	arr_doc_set_int(fr, "peak_live", (int64_t)info->ideal_rss);
	arr_replay_put_spread(fr, "final_rss", fin, runs);
	arr_doc_set_int(fr, "ideal_rss", (int64_t)info->ideal_rss);
	/* peak / ideal weighs resident pages against live bytes: it says nothing when the replay wrote no
	 * block (touch none: RSS is the allocator's own pages), nor when the trace is too small for RSS,
	 * counted in whole pages above the engine's baseline, to weigh it (under 16 pages live at the
	 * peak: glibc serves such a trace from pages already resident, a 0 B peak, or one page, 2.5x):
	 * null, and the renderers say why */
	arr_doc_set_str(fr, "touch", arr_replay_touch_name(touch));
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
	int weighable = info->ideal_rss >= 16 * page && touch != ARR_TOUCH_NONE && peak.med >= page;
	if (weighable)
		arr_doc_set_num(fr, "peak_over_ideal", (double)peak.med / (double)info->ideal_rss);
	else
		arr_doc_set(fr, "peak_over_ideal", arr_doc_null());
	if (f) {
		arr_replay_put_fragmentation(fr, f, peak.med, info->ideal_rss);
		/* Johnstone & Wilson's ratios over RSS weigh the same pages against the same live bytes
		 * (jw_mapped, over the allocator's own mapped bytes, needs no touching nor pages) */
		static const char *const jwk[] = {"avg_over_time", "at_peak_live", "at_peak_rss", "peak_vs_peak"};
		struct arr_doc *jw = weighable ? NULL : arr_doc_get(fr, "jw");
		for (size_t k = 0; jw && k < 4; k++)
			arr_doc_set(jw, jwk[k], arr_doc_null());
		struct arr_doc *ft = arr_doc_set_obj(fr, "measured");
		arr_doc_set_int(ft, "wall_ns", (int64_t)f->wall_ns);
		arr_doc_set_int(ft, "peak_rss", (int64_t)f->peak_rss);
		arr_replay_put_timeline(ft, f, plan->points, 1);
	}

	if (have[S_ZERO]) {
		struct arr_doc *zo = arr_doc_set_obj(e, "zeroing");
		arr_doc_set_str(zo, "touch", "none");
		for (int k = 0; k < ARR_ZERO_MODES; k++) {
			const struct arr_replay_result *zr = z[S_ZERO + k];
			const char *name = arr_replay_zeroing_name((enum arr_replay_zeroing)k);
			char key[96];
			snprintf(key, sizeof key, "%s_ns", name);
			arr_replay_put_spread(zo, key, ARR_REPLAY_SPREAD(zr, runs, wall_ns), runs);
			snprintf(key, sizeof key, "%s_cpu_ns", name);
			arr_replay_put_spread(zo, key, ARR_REPLAY_SPREAD(zr, runs, cpu_ns), runs);
			snprintf(key, sizeof key, "%s_minor_faults", name);
			arr_replay_put_spread(zo, key, ARR_REPLAY_SPREAD(zr, runs, minor_faults), runs);
			snprintf(key, sizeof key, "%s_peak_rss", name);
			arr_replay_put_spread(zo, key, ARR_REPLAY_SPREAD(zr, runs, peak_rss), runs);
		}
		/* what zeroing costs (calloc against malloc) and what calloc saves (against malloc + memset) */
		int64_t rec_ns = (int64_t)ARR_REPLAY_SPREAD(z[S_ZERO], runs, wall_ns).med;
		arr_doc_set_int(zo, "zeroing_cost_ns",
				rec_ns - (int64_t)ARR_REPLAY_SPREAD(z[S_ZERO + 1], runs, wall_ns).med);
		arr_doc_set_int(zo, "calloc_saves_ns",
				(int64_t)ARR_REPLAY_SPREAD(z[S_ZERO + 2], runs, wall_ns).med - rec_ns);
		arr_doc_set_int(zo, "calloc_calls", (int64_t)info->ops[ARR_OP_CALLOC]);
	}

	arr_replay_put_latency(arr_doc_set_obj(e, "latency"), m);

	struct arr_doc *rs = arr_doc_set_obj(e, "rss");
	arr_replay_put_spread(rs, "peak", peak, runs);
	arr_replay_put_spread(rs, "final", fin, runs);
	arr_doc_set_int(rs, "baseline", (int64_t)m->baseline_rss);
	arr_doc_set_num(rs, "growth_bytes_per_s", arr_replay_growth(m, 0, UINT64_MAX));
	put_rss(rs, m, f, plan->points);
	if (plan->nphases)
		arr_replay_put_phases(arr_doc_set_arr(rs, "phases"), f ? f : m, plan->phases, plan->nphases);

	arr_doc_set_int(e, "anomalies", (int64_t)m->anomalies);
	struct arr_doc *d = arr_doc_set_obj(e, "divergence");
	arr_doc_set_int(d, "failed_now", (int64_t)m->div.failed_now);
	arr_doc_set_int(d, "succeeded_now", (int64_t)m->div.succeeded_now);
	arr_doc_set_int(d, "sync_mismatch", (int64_t)m->div.sync_mismatch);
	arr_doc_set_int(d, "substituted_functions", (int64_t)m->div.substituted);
	put_stats(e, m);
}

/* What every allocator's replays share. */
struct replays {
	const char *cmd;
	struct cli_replay_env env;
	struct arr_allocator *al;
	size_t n;
	unsigned runs, nsets;
	char wl_path[PATH_MAX];
	struct arr_workload_info info;
	struct arr_replay_options base; /* the plan's, with the touch mode chosen */
	struct progress pg;
	struct arr_replay_result *res; /* S_N * runs results, reused by each allocator */
};

/* The engine, the allocators, the workload and the touch mode. Returns 0 or the exit code. */
static int load(struct replays *x, const char *trace, const char *const *specs, size_t n,
		const struct cli_replay_plan *plan)
{
	int rc = cli_replay_env_find(&x->env);
	if (rc)
		return rc;
	const char *defaults[2];
	if (!n) {
		n = cli_replay_default_specs(&x->env, defaults);
		specs = defaults;
	}
	x->runs = plan->runs ? plan->runs : 1;
	if (x->runs > MAX_RUNS)
		return cli_usage_error(x->cmd, "at most %d runs", MAX_RUNS);
	x->al = calloc(n, sizeof *x->al);
	x->res = calloc((size_t)S_N * x->runs, sizeof *x->res);
	if (!x->al || !x->res) {
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	x->n = n;
	for (size_t i = 0; i < n; i++)
		if ((rc = cli_replay_resolve(x->cmd, &x->env, specs[i], &x->al[i])))
			return rc;
	if ((rc = cli_replay_workload(trace, plan, x->wl_path, sizeof x->wl_path, &x->info)))
		return rc;
	x->base = plan->opt;
	char note[512];
	if (arr_replay_choose_touch(&x->info, plan->touch_set, &x->base.touch, note, sizeof note)) {
		cli_error("'%s': %s", trace, note);
		return EXIT_BAD_INPUT;
	}
	if (*note && !plan->quiet)
		fprintf(stderr, "allocrr: %s\n", note);
	x->nsets = plan->zeroing ? S_N : 1;
	x->pg = (struct progress){plan->progress && isatty(2), 0,
				  (unsigned)(n * (x->nsets * x->runs + !!plan->fragmentation)), now_s(), x->info.calls};
	return 0;
}

/* Allocator i's runs of set k into z[k] (S_TIMED as recorded, else a zeroing
 * mode). Returns 0, or -1 when a replay failed (its error printed). */
static int run_set(struct replays *x, size_t i, unsigned k, struct arr_replay_result **z, int *have)
{
	struct arr_replay_options o = x->base;
	o.measure_usable = 0;
	if (k >= S_ZERO) {
		/* Untouched blocks: the differences are then what zeroing touches. */
		o.zeroing = (enum arr_replay_zeroing)(k - S_ZERO);
		o.touch = ARR_TOUCH_NONE;
		o.latency_every = 0;
	}
	unsigned r;
	for (r = 0; r < x->runs; r++) {
		progress_step(&x->pg, x->al[i].name, k == S_TIMED ? "timed" : arr_replay_zeroing_name(o.zeroing));
		if (cli_replay_once(&x->env, &x->al[i], x->wl_path, &o, &z[k][r]))
			break;
		x->pg.done++;
	}
	have[k] = r == x->runs;
	if (!have[k])
		for (unsigned q = 0; q < r; q++)
			arr_replay_result_release(&z[k][q]);
	return have[k] ? 0 : -1;
}

/* Every replay of allocator i, and its entry appended to allocators. Returns 0 or EXIT_BAD_INPUT. */
static int replay_allocator(struct replays *x, size_t i, const struct cli_replay_plan *plan, struct arr_doc *allocators)
{
	struct arr_replay_result *z[S_N];
	int have[S_N] = {0}, failed = 0;
	for (unsigned k = 0; k < S_N; k++)
		z[k] = x->res + (size_t)k * x->runs;
	for (unsigned k = 0; k < x->nsets && !failed; k++) {
		if (k > S_ZERO && !x->info.ops[ARR_OP_CALLOC]) {
			/* no calloc: the three ways are the same replay, measured once */
			z[k] = z[S_ZERO];
			have[k] = have[S_ZERO];
			x->pg.done += x->runs;
			continue;
		}
		failed = run_set(x, i, k, z, have) < 0;
	}
	struct arr_replay_result fres, *f = NULL;
	if (!failed && plan->fragmentation) {
		struct arr_replay_options o = x->base;
		o.measure_usable = 1;
		o.latency_every = 0;
		progress_step(&x->pg, x->al[i].name, "fragmentation");
		if (cli_replay_once(&x->env, &x->al[i], x->wl_path, &o, &fres))
			failed = 1;
		else
			f = &fres;
		x->pg.done++;
	}
	if (!failed) {
		struct arr_doc *e = arr_doc_push_obj(allocators);
		put_entry(e, &x->al[i], &x->info, z, have, x->runs, f, plan, x->base.touch);
		if (plan->timed) { /* hand the median run over, timeline included */
			struct arr_replay_result *m = &z[S_TIMED][arr_replay_median_run(z[S_TIMED], x->runs)];
			plan->timed[i] = *m;
			plan->timed_ok[i] = 1;
			m->timeline = NULL;
		}
	}
	for (unsigned k = 0; k < S_N; k++)
		if (have[k] && (k <= S_ZERO || z[k] != z[S_ZERO]))
			for (unsigned r = 0; r < x->runs; r++)
				arr_replay_result_release(&z[k][r]);
	if (f)
		arr_replay_result_release(f);
	return failed ? EXIT_BAD_INPUT : 0;
}

int cli_replays_analyze(const char *trace, const char *const *specs, size_t n, const struct cli_replay_plan *plan,
			struct arr_doc *allocators)
{
	struct replays x = {.cmd = plan->cmd ? plan->cmd : "replay"};
	int status = load(&x, trace, specs, n, plan), loaded = !status;
	for (size_t i = 0; loaded && i < x.n; i++) /* one failing: the others still run */
		if (replay_allocator(&x, i, plan, allocators))
			status = EXIT_BAD_INPUT;
	progress_end(&x.pg);
	free(x.res);
	free(x.al);
	if (!status && arr_doc_status(allocators)) {
		cli_error("out of memory");
		status = EXIT_BAD_INPUT;
	}
	return status;
}

/*
 * replay_metrics.c - figures from replay results into the analysis document
 * (see allocrr/replay_analysis.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/replay_analysis.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct arr_spread arr_replay_spread(const struct arr_replay_result *runs, unsigned n, size_t field)
{
	struct arr_spread s = {0, 0, 0};
	if (!n)
		return s;
	uint64_t small[64], *v = n <= 64 ? small : malloc(n * sizeof *v);
	if (!v) { /* no memory for the median: the first run's value */
		memcpy(&s.med, (const char *)runs + field, sizeof s.med);
		s.min = s.max = s.med;
		return s;
	}
	for (unsigned i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&runs[i] + field, sizeof v[i]);
	qsort(v, n, sizeof *v, cmp_u64);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
	if (v != small)
		free(v);
	return s;
}

void arr_replay_put_spread(struct arr_doc *obj, const char *key, struct arr_spread s, unsigned n)
{
	arr_doc_set_int(obj, key, (int64_t)s.med);
	if (n > 1) {
		char k[128];
		snprintf(k, sizeof k, "%s_min", key);
		arr_doc_set_int(obj, k, (int64_t)s.min);
		snprintf(k, sizeof k, "%s_max", key);
		arr_doc_set_int(obj, k, (int64_t)s.max);
	}
}

unsigned arr_replay_median_run(const struct arr_replay_result *runs, unsigned n)
{
	struct arr_spread s = ARR_REPLAY_SPREAD(runs, n, wall_ns);
	unsigned best = 0;
	uint64_t bd = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		uint64_t d = runs[i].wall_ns > s.med ? runs[i].wall_ns - s.med : s.med - runs[i].wall_ns;
		if (d < bd)
			bd = d, best = i;
	}
	return best;
}

uint64_t arr_replay_resolution_ns(const struct arr_replay_result *r)
{
	uint64_t ns = (r->timer_overhead_ns_x100 + 99) / 100;
	return ns ? ns : 1;
}

void arr_replay_put_latency(struct arr_doc *lat, const struct arr_replay_result *r)
{
	uint64_t res_ns = arr_replay_resolution_ns(r);
	for (unsigned op = 1; op < ARR_OP_MAX_; op++) {
		const struct arr_latency *l = &r->latency[op];
		const char *name = arr_op_name(op);
		if (!l->count || !name)
			continue;
		struct arr_doc *o = arr_doc_set_obj(lat, name);
		arr_doc_set_int(o, "count", (int64_t)l->count);
		arr_doc_set_int(o, "p50", (int64_t)l->p50);
		arr_doc_set_int(o, "p90", (int64_t)l->p90);
		arr_doc_set_int(o, "p99", (int64_t)l->p99);
		arr_doc_set_int(o, "p999", (int64_t)l->p999);
		arr_doc_set_int(o, "max", (int64_t)l->max);
		arr_doc_set_int(o, "resolution_ns", (int64_t)res_ns);
	}
}

void arr_replay_put_timeline(struct arr_doc *obj, const struct arr_replay_result *r, unsigned points, int with_live)
{
	struct arr_doc *tl = arr_doc_set_obj(obj, "timeline");
	struct arr_doc *t = arr_doc_set_arr(tl, "t"), *ix = arr_doc_set_arr(tl, "op_index"),
		       *rss = arr_doc_set_arr(tl, "rss"), *live = NULL, *usable = NULL, *mapped = NULL;
	if (with_live) {
		live = arr_doc_set_arr(tl, "live");
		usable = arr_doc_set_arr(tl, "usable");
		mapped = arr_doc_set_arr(tl, "mapped");
	}
	uint64_t n = r->nsamples;
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
		arr_doc_push_int(ix, (int64_t)s->op_index);
		arr_doc_push_int(rss, (int64_t)s->rss);
		if (with_live) {
			arr_doc_push_int(live, (int64_t)s->live);
			arr_doc_push_int(usable, (int64_t)s->usable);
			arr_doc_push_int(mapped, (int64_t)s->mapped);
		}
		from = to;
	}
}

double arr_replay_growth(const struct arr_replay_result *r, uint64_t from_op, uint64_t to_op)
{
	double st = 0, sr = 0, stt = 0, str = 0, n = 0;
	for (uint32_t i = 0; i < r->nsamples; i++) {
		const struct arr_rss_sample *s = &r->timeline[i];
		if (s->op_index < from_op || s->op_index >= to_op)
			continue;
		double t = (double)s->t_ns / 1e9, v = (double)s->rss;
		st += t, sr += v, stt += t * t, str += t * v, n++;
	}
	double den = n * stt - st * st;
	return n >= 2 && den > 0 ? (n * str - st * sr) / den : 0;
}

void arr_replay_put_phases(struct arr_doc *arr, const struct arr_replay_result *r, const struct arr_replay_phase *ph,
			   size_t n)
{
	for (size_t p = 0; p < n; p++) {
		const struct arr_rss_sample *first = NULL, *last = NULL;
		uint64_t peak = 0, peak_live = 0;
		for (uint32_t i = 0; i < r->nsamples; i++) {
			const struct arr_rss_sample *s = &r->timeline[i];
			if (s->op_index < ph[p].from_op || s->op_index >= ph[p].to_op)
				continue;
			if (!first)
				first = s;
			last = s;
			if (s->rss > peak)
				peak = s->rss;
			if (s->live > peak_live)
				peak_live = s->live;
		}
		struct arr_doc *o = arr_doc_push_obj(arr);
		arr_doc_set_str(o, "name", ph[p].name);
		arr_doc_set_int(o, "from_op", (int64_t)ph[p].from_op);
		arr_doc_set_int(o, "to_op", ph[p].to_op == UINT64_MAX ? -1 : (int64_t)ph[p].to_op);
		arr_doc_set_int(o, "samples", first ? (int64_t)(last - first + 1) : 0);
		arr_doc_set_int(o, "rss_start", first ? (int64_t)first->rss : 0);
		arr_doc_set_int(o, "rss_end", last ? (int64_t)last->rss : 0);
		arr_doc_set_int(o, "peak_rss", (int64_t)peak);
		arr_doc_set_num(o, "growth_bytes_per_s", arr_replay_growth(r, ph[p].from_op, ph[p].to_op));
		if (r->has_live)
			arr_doc_set_int(o, "peak_live", (int64_t)peak_live);
	}
}

static double jw(uint64_t mem, uint64_t live) { return live ? ((double)mem - (double)live) / (double)live : 0.0; }

static void put_moment(struct arr_doc *o, const struct arr_replay_moment *m, int has_mapped)
{
	arr_doc_set_int(o, "op_index", (int64_t)m->op_index);
	arr_doc_set_int(o, "t_ns", (int64_t)m->t_ns);
	arr_doc_set_int(o, "rss", (int64_t)m->rss);
	arr_doc_set_int(o, "live", (int64_t)m->live);
	arr_doc_set_int(o, "usable", (int64_t)m->usable);
	arr_doc_set_int(o, "internal", (int64_t)m->usable - (int64_t)m->live);
	arr_doc_set_int(o, "external", (int64_t)m->rss - (int64_t)m->usable);
	if (has_mapped && m->mapped)
		arr_doc_set_int(o, "mapped", (int64_t)m->mapped);
}

static struct arr_replay_moment moment_of(const struct arr_rss_sample *s)
{
	struct arr_replay_moment m = {s->op_index, s->t_ns, s->rss, s->live, s->usable, s->mapped};
	return m;
}

int arr_replay_put_fragmentation(struct arr_doc *frag, const struct arr_replay_result *m, uint64_t peak_rss,
				 uint64_t peak_live)
{
	if (!m->has_live)
		return ARR_EINVAL;
	/* the moments: peak live as the engine took it (or, if the replay never
	 * reached the recorded peak, the sample of most live bytes), peak RSS as
	 * the sample of most RSS, the end as measured after the last call */
	struct arr_replay_moment at_live = m->at_peak_live, at_rss = {0};
	const struct arr_rss_sample *top_rss = NULL, *top_live = NULL;
	double sum_rss = 0, sum_live = 0, sum_mapped = 0;
	uint64_t peak_mapped = 0;
	for (uint32_t i = 0; i < m->nsamples; i++) {
		const struct arr_rss_sample *s = &m->timeline[i];
		if (!top_rss || s->rss > top_rss->rss)
			top_rss = s;
		if (!top_live || s->live > top_live->live)
			top_live = s;
		sum_rss += (double)s->rss;
		sum_live += (double)s->live;
		sum_mapped += (double)s->mapped;
		if (s->mapped > peak_mapped)
			peak_mapped = s->mapped;
	}
	/* the peak RSS moment: the first sample within 1% of the highest (not more: a floor of
	 * 64 KiB took a 64 KiB untouched replay's moment to its first sample, at 0 B live), so an
	 * allocator that keeps its pages (RSS flat from the live peak on) is weighed at its live
	 * peak, not at the end, when one page more came with the live bytes gone (mimalloc on a
	 * python3 run: external 38.8 MiB and 9,924 % "at peak RSS", by 4 KiB) */
	if (top_rss) {
		uint64_t tol = top_rss->rss / 100;
		for (uint32_t i = 0; i < m->nsamples; i++)
			if (m->timeline[i].rss + tol >= top_rss->rss) {
				top_rss = &m->timeline[i];
				break;
			}
		at_rss = moment_of(top_rss);
	}
	if (!at_live.op_index && top_live)
		at_live = moment_of(top_live);
	int has_mapped = at_rss.mapped || m->at_end.mapped;

	arr_doc_set_int(frag, "replay_peak_live", (int64_t)m->max_live);
	arr_doc_set_int(frag, "final_live", (int64_t)m->at_end.live);
	arr_doc_set_int(frag, "final_usable", (int64_t)m->at_end.usable);
	arr_doc_set_int(frag, "internal_bytes", (int64_t)at_rss.usable - (int64_t)at_rss.live);
	arr_doc_set_int(frag, "external_bytes", (int64_t)at_rss.rss - (int64_t)at_rss.usable);
	arr_doc_set_bool(frag, "usable_known", m->has_usable);
	struct arr_doc *j = arr_doc_set_obj(frag, "jw");
	/* averages of memory and of live bytes over the samples, then the ratio:
	 * the mean of per-sample ratios would be ruled by moments of few live bytes */
	arr_doc_set_num(j, "avg_over_time", sum_live > 0 ? (sum_rss - sum_live) / sum_live : 0.0);
	arr_doc_set_num(j, "at_peak_live", jw(at_live.rss, at_live.live));
	arr_doc_set_num(j, "at_peak_rss", jw(at_rss.rss, at_rss.live));
	arr_doc_set_num(j, "peak_vs_peak", jw(peak_rss, peak_live));
	if (has_mapped) { /* the same with the allocator's own figure for its memory */
		if (m->at_end.mapped > peak_mapped)
			peak_mapped = m->at_end.mapped;
		arr_doc_set_int(frag, "peak_mapped", (int64_t)peak_mapped);
		j = arr_doc_set_obj(frag, "jw_mapped");
		arr_doc_set_num(j, "avg_over_time", sum_live > 0 ? (sum_mapped - sum_live) / sum_live : 0.0);
		arr_doc_set_num(j, "at_peak_live", jw(at_live.mapped, at_live.live));
		arr_doc_set_num(j, "at_peak_rss", jw(at_rss.mapped, at_rss.live));
		arr_doc_set_num(j, "peak_vs_peak", jw(peak_mapped, peak_live));
	}
	struct arr_doc *at = arr_doc_set_obj(frag, "at");
	put_moment(arr_doc_set_obj(at, "peak_live"), &at_live, has_mapped);
	put_moment(arr_doc_set_obj(at, "peak_rss"), &at_rss, has_mapped);
	put_moment(arr_doc_set_obj(at, "end"), &m->at_end, has_mapped);
	return 0;
}

/*
 * rss.c - the "rss" section, from the RSS samples the recorder took (op
 * rss, tid 0): peak and when, growth per second (least-squares slope over
 * all samples, so one late sample does not swing it), and RSS beside live
 * requested bytes at each sample: the RSS the heap does not explain
 * (rss - live; allocator overhead, fragmentation, and non-heap memory such
 * as code, stacks and mmaps the program makes itself). And the true peak
 * (op rss_peak, the kernel's high-water mark at exit and exec), which a
 * spike between two samples reaches and the samples do not.
 * Per-phase growth is in the "phases" section.
 */
#include "analysis_internal.h"

struct rss {
	struct an_timeline tl;
	struct an_slope slope;
	uint64_t samples, peak, peak_t, first, first_t, final, final_t, live_at_peak;
	int64_t unexplained_peak, baseline; /* baseline: RSS - live at the first sample */
	uint64_t unexplained_t, unexplained_sum;
	uint64_t true_peak; /* largest rss_peak event, 0 = none */
	int have;
};

static int rss_begin(struct an_core *c, void *st)
{
	struct rss *s = st;
	return arr__timeline_init(&s->tl, c->points, c->end_t);
}

static void rss_other(struct an_core *c, void *st, const struct arr_event *ev)
{
	struct rss *s = st;
	if (ev->op == ARR_OP_RSS_PEAK) {
		if (ev->size > s->true_peak)
			s->true_peak = ev->size;
		return;
	}
	if (ev->op != ARR_OP_RSS)
		return;
	uint64_t r = ev->size;
	if (!s->have) {
		s->first = r;
		s->first_t = ev->t;
		s->have = 1;
		s->unexplained_peak = INT64_MIN;
		s->baseline = (int64_t)r - (int64_t)c->live_bytes;
	}
	s->samples++;
	if (r > s->peak) {
		s->peak = r;
		s->peak_t = ev->t;
		s->live_at_peak = c->live_bytes;
	}
	s->final = r;
	s->final_t = ev->t;
	int64_t un = (int64_t)r - (int64_t)c->live_bytes;
	if (un > s->unexplained_peak) {
		s->unexplained_peak = un;
		s->unexplained_t = ev->t;
	}
	arr__slope_add(&s->slope, ev->t, (double)r);
	arr__timeline_add(&s->tl, ev->t, r, c->live_bytes);
}

static int rss_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct rss *s = st;
	(void)c;
	struct arr_doc *r = arr_doc_set_obj(sec, "recorded");
	arr_doc_set_int(r, "samples", (int64_t)s->samples);
	arr_doc_set_int(r, "peak", (int64_t)s->peak);
	arr_doc_set_int(r, "peak_t", (int64_t)s->peak_t);
	/* null for a trace without one (format 1.2 and before, --rss-interval 0).
	 * Never below the sampled peak: the kernel folds its per-CPU page counts
	 * lazily, so its mark can be a few pages under a sample (python3: 80 KiB). */
	if (s->true_peak)
		arr_doc_set_int(r, "true_peak", (int64_t)(s->true_peak > s->peak ? s->true_peak : s->peak));
	else
		arr_doc_set(r, "true_peak", arr_doc_null());
	arr_doc_set_int(r, "live_at_peak", (int64_t)s->live_at_peak);
	arr_doc_set_int(r, "first", (int64_t)s->first);
	arr_doc_set_int(r, "final", (int64_t)s->final);
	/* one sample (or none) has no growth: null, not a rate of 0 */
	double span = (double)(s->final_t - s->first_t) / 1e9;
	if (s->samples > 1 && span > 0) {
		arr_doc_set_num(r, "growth_bytes_per_s", arr__slope_per_s(&s->slope));
		arr_doc_set_num(r, "net_growth_bytes_per_s", ((double)s->final - (double)s->first) / span);
	} else {
		arr_doc_set(r, "growth_bytes_per_s", arr_doc_null());
		arr_doc_set(r, "net_growth_bytes_per_s", arr_doc_null());
	}
	arr_doc_set_int(r, "span_ns", (int64_t)(s->final_t - s->first_t));
	arr_doc_set_int(r, "interval_ns", s->samples > 1 ? (int64_t)((s->final_t - s->first_t) / (s->samples - 1)) : 0);
	if (s->have) {
		arr_doc_set_int(r, "unexplained_peak", s->unexplained_peak);
		arr_doc_set_int(r, "unexplained_peak_t", (int64_t)s->unexplained_t);
		/* what the process held before its heap counted (code, libraries,
		 * stacks): a tiny program's whole "unexplained" RSS is this */
		arr_doc_set_int(r, "baseline", s->baseline);
		/* from a baseline of at least 0: below 0, live bytes were not all
		 * resident at the first sample (a buffer allocated, not yet
		 * written), and counted from there the growth exceeded the
		 * unexplained RSS itself by the untouched bytes */
		arr_doc_set_int(r, "unexplained_growth_peak",
				s->unexplained_peak - (s->baseline > 0 ? s->baseline : 0));
	} else {
		arr_doc_set(r, "unexplained_peak", arr_doc_null());
		arr_doc_set(r, "baseline", arr_doc_null());
		arr_doc_set(r, "unexplained_growth_peak", arr_doc_null());
	}
	struct arr_doc *tl = arr_doc_set_obj(r, "timeline");
	arr_doc_set_int(tl, "bucket_ns", (int64_t)s->tl.width);
	arr__timeline_doc(&s->tl, tl, NULL, "rss", "live");
	return 0;
}

static void rss_fini(void *st)
{
	struct rss *s = st;
	arr__timeline_release(&s->tl);
}

const struct an_ops arr__an_rss = {
	.id = ARR_AN_RSS,
	.state_size = sizeof(struct rss),
	.begin = rss_begin,
	.other = rss_other,
	.end = rss_end,
	.fini = rss_fini,
};

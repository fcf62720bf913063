/*
 * live.c - the "live" section: live requested bytes and blocks over time
 * (a bounded timeline with min/max per bucket, so spikes survive), the
 * peak and when it happened, what is live at the end.
 */
#include "hot.h"

/* per-event work: arr__live_on_release / arr__live_on_alloc in hot.h */

static int live_begin(struct an_core *c, void *st)
{
	struct an_live_state *s = st;
	return arr__timeline_init(&s->tl, c->points, c->end_t);
}

static int live_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct an_live_state *s = st;
	arr_doc_set_int(sec, "peak_bytes", (int64_t)c->peak_bytes);
	arr_doc_set_int(sec, "peak_t", (int64_t)c->peak_t);
	arr_doc_set_int(sec, "peak_event", (int64_t)c->peak_evno);
	arr_doc_set_int(sec, "peak_blocks", (int64_t)c->peak_blocks);
	arr_doc_set_int(sec, "final_bytes", (int64_t)c->live_bytes);
	arr_doc_set_int(sec, "final_blocks", (int64_t)c->live_blocks);
	struct arr_doc *tl = arr_doc_set_obj(sec, "timeline");
	arr_doc_set_int(tl, "bucket_ns", (int64_t)s->tl.width);
	arr__timeline_doc(&s->tl, tl, "bytes_min", "bytes_max", "blocks_max");
	return 0;
}

static void live_fini(void *st)
{
	struct an_live_state *s = st;
	arr__timeline_release(&s->tl);
}

const struct an_ops arr__an_live = {
	.id = ARR_AN_LIVE,
	.state_size = sizeof(struct an_live_state),
	.begin = live_begin,
	.end = live_end,
	.fini = live_fini,
};

/*
 * live.c - the "live" section: live requested bytes and blocks over time
 * (a bounded timeline with min/max per bucket, so spikes survive), the
 * peak and when it happened, what is live at the end.
 */
#include "analysis_internal.h"

struct live {
	struct an_timeline tl;
};

static int live_begin(struct an_core *c, void *st)
{
	struct live *s = st;
	return arr__timeline_init(&s->tl, c->points, c->end_t);
}

static void live_point(struct an_core *c, void *st)
{
	struct live *s = st;
	arr__timeline_add(&s->tl, c->t, c->live_bytes, c->live_blocks);
}

/* called before the block leaves: record the value after it left */
static void live_release(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev,
			 int temporary)
{
	struct live *s = st;
	(void)addr, (void)temporary;
	if (ev->op == ARR_OP_FREE || !arr_event_allocates(ev))
		arr__timeline_add(&s->tl, c->t, c->live_bytes - b->size, c->live_blocks - 1);
}

static void live_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	(void)addr, (void)b, (void)ev;
	live_point(c, st);
}

static int live_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct live *s = st;
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
	struct live *s = st;
	arr__timeline_release(&s->tl);
}

const struct an_ops arr__an_live = {
	.id = ARR_AN_LIVE,
	.state_size = sizeof(struct live),
	.begin = live_begin,
	.release = live_release,
	.alloc = live_alloc,
	.end = live_end,
	.fini = live_fini,
};

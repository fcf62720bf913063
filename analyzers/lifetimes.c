/*
 * lifetimes.c - the "lifetimes" section: how long blocks live, in ns and in
 * events; temporary allocations (heaptrack's definition: freed before the
 * allocating thread's next allocation); short-lived churn by size class.
 *
 * A realloc ends its old block's lifetime (the data moves on in the new
 * one), but a resized block is never counted as temporary. Blocks still
 * live at the end have no lifetime; they are in "leaks".
 */
#include "analysis_internal.h"

#define SHORT_NS 1000000 /* short-lived: freed less than 1 ms after it was made */

struct lifetimes {
	uint64_t t_count[65], t_bytes[65], e_count[65], e_bytes[65];
	uint64_t freed, temp_count, temp_bytes, allocs;
	uint64_t c_allocs[65], c_freed[65], c_short[65], c_short_bytes[65], c_temp[65];
};

static void lt_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	struct lifetimes *s = st;
	(void)c, (void)addr, (void)ev;
	s->allocs++;
	s->c_allocs[arr__log2_bucket(b->size)]++;
}

static void lt_release(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev,
		       int temporary)
{
	struct lifetimes *s = st;
	(void)addr;
	uint64_t ns = ev->t - b->t, events = c->evno - b->evno;
	unsigned k = arr__log2_bucket(ns), e = arr__log2_bucket(events), sc = arr__log2_bucket(b->size);
	s->freed++;
	s->t_count[k]++;
	s->t_bytes[k] += b->size;
	s->e_count[e]++;
	s->e_bytes[e] += b->size;
	s->c_freed[sc]++;
	if (ns < SHORT_NS) {
		s->c_short[sc]++;
		s->c_short_bytes[sc] += b->size;
	}
	if (temporary) {
		s->temp_count++;
		s->temp_bytes += b->size;
		s->c_temp[sc]++;
	}
}

static int lt_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct lifetimes *s = st;
	(void)c;
	arr_doc_set_int(sec, "freed", (int64_t)s->freed);
	arr__doc_log2(arr_doc_set_arr(sec, "time_log2"), s->t_count, s->t_bytes, 65);
	arr__doc_log2(arr_doc_set_arr(sec, "events_log2"), s->e_count, s->e_bytes, 65);
	struct arr_doc *t = arr_doc_set_obj(sec, "temporary");
	arr_doc_set_int(t, "count", (int64_t)s->temp_count);
	arr_doc_set_int(t, "bytes", (int64_t)s->temp_bytes);
	arr_doc_set_num(t, "fraction", s->allocs ? (double)s->temp_count / (double)s->allocs : 0.0);
	arr_doc_set_int(sec, "short_lived_ns", SHORT_NS);
	struct arr_doc *ch = arr_doc_set_arr(sec, "churn_by_size");
	for (unsigned k = 0; k < 65; k++) {
		if (!s->c_allocs[k] && !s->c_freed[k])
			continue;
		struct arr_doc *o = arr_doc_push_obj(ch);
		arr_doc_set_int(o, "lo", k ? (int64_t)(1ull << (k - 1)) : 0);
		arr_doc_set_int(o, "hi", k == 0 ? 1 : k >= 63 ? INT64_MAX : (int64_t)(1ull << k));
		arr_doc_set_int(o, "allocs", (int64_t)s->c_allocs[k]);
		arr_doc_set_int(o, "freed", (int64_t)s->c_freed[k]);
		arr_doc_set_int(o, "short_lived", (int64_t)s->c_short[k]);
		arr_doc_set_int(o, "short_lived_bytes", (int64_t)s->c_short_bytes[k]);
		arr_doc_set_int(o, "temporary", (int64_t)s->c_temp[k]);
		arr_doc_set_num(o, "short_fraction", s->c_allocs[k] ? (double)s->c_short[k] / (double)s->c_allocs[k] : 0.0);
	}
	return 0;
}

const struct an_ops arr__an_lifetimes = {
	.id = ARR_AN_LIFETIMES,
	.state_size = sizeof(struct lifetimes),
	.alloc = lt_alloc,
	.release = lt_release,
	.end = lt_end,
};

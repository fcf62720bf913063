/*
 * lifetimes.c - the "lifetimes" section: how long blocks live, in ns and in
 * events; temporary allocations (heaptrack's definition: freed before the
 * allocating thread's next allocation); short-lived churn by size class.
 *
 * A realloc ends its old block's lifetime (the data moves on in the new
 * one), but a resized block is never counted as temporary. Blocks still
 * live at the end have no lifetime; they are in "leaks".
 */
#include "hot.h"

/* per-event work: arr__lifetimes_on_alloc / _on_release in hot.h */

static int lt_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct an_lifetimes *s = st;
	(void)c;
	arr_doc_set_int(sec, "freed", (int64_t)s->freed);
	arr__doc_log2(arr_doc_set_arr(sec, "time_log2"), s->t_count, s->t_bytes, 65);
	arr__doc_log2(arr_doc_set_arr(sec, "events_log2"), s->e_count, s->e_bytes, 65);
	struct arr_doc *t = arr_doc_set_obj(sec, "temporary");
	arr_doc_set_int(t, "count", (int64_t)s->temp_count);
	arr_doc_set_int(t, "bytes", (int64_t)s->temp_bytes);
	arr_doc_set_num(t, "fraction", s->allocs ? (double)s->temp_count / (double)s->allocs : 0.0);
	arr_doc_set_int(sec, "short_lived_ns", ARR__SHORT_NS);
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
		arr_doc_set_num(o, "short_fraction",
				s->c_allocs[k] ? (double)s->c_short[k] / (double)s->c_allocs[k] : 0.0);
	}
	return 0;
}

const struct an_ops arr__an_lifetimes = {
	.id = ARR_AN_LIFETIMES,
	.state_size = sizeof(struct an_lifetimes),
	.end = lt_end,
};

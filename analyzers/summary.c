/*
 * summary.c - see allocrr/summary.h.
 */
#include "allocrr/summary.h"

static void release_block(struct arr_summary *s, uint64_t ptr)
{
	uint64_t size;
	if (arr_ptrmap_del(&s->live, ptr, &size)) {
		s->live_bytes -= size;
		s->live_blocks--;
	} else {
		s->unknown_frees++;
	}
}

int arr_summary_add(struct arr_summary *s, const struct arr_event *ev)
{
	if (s->first_t == 0 && s->last_t == 0)
		s->first_t = ev->t;
	if (ev->t > s->last_t)
		s->last_t = ev->t;
	s->ops[ev->op < ARR_OP_MAX_ ? ev->op : 0]++;
	if (ev->op == ARR_OP_RSS) {
		if (ev->size > s->peak_rss)
			s->peak_rss = ev->size;
		return 0;
	}
	if (ev->op == ARR_OP_RSS_PEAK) {
		if (ev->size > s->true_peak_rss)
			s->true_peak_rss = ev->size;
		return 0;
	}
	if (ev->tid && !arr_ptrmap_get(&s->tids, ev->tid, 0)) {
		if (arr_ptrmap_put(&s->tids, ev->tid, 1))
			return ARR_ENOMEM;
		s->threads++;
	}
	if (!arr_op_is_call(ev->op))
		return 0;
	s->calls++;
	if (ev->failed)
		s->failed++;
	if (arr_event_releases(ev))
		release_block(s, ev->ptr);
	if (arr_event_allocates(ev)) {
		uint64_t req = arr_event_bytes(ev, s->page_size);
		s->bytes_requested += req;
		uint64_t old;
		if (arr_ptrmap_get(&s->live, ev->ret, &old)) { /* its free was lost */
			s->live_bytes -= old;
			s->live_blocks--;
		}
		if (arr_ptrmap_put(&s->live, ev->ret, req))
			return ARR_ENOMEM;
		s->live_bytes += req;
		s->live_blocks++;
		if (s->live_bytes > s->peak_live_bytes) {
			s->peak_live_bytes = s->live_bytes;
			s->peak_live_t = ev->t;
		}
		if (s->live_blocks > s->peak_live_blocks)
			s->peak_live_blocks = s->live_blocks;
	}
	return 0;
}

void arr_summary_release(struct arr_summary *s)
{
	arr_ptrmap_release(&s->live);
	arr_ptrmap_release(&s->tids);
}

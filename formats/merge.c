/*
 * merge.c - time-ordered iteration across a trace's threads.
 *
 * First pass: an index of every events chunk (offset, first and last time),
 * no events kept. Second pass: chunks are opened in order of their first
 * timestamp, only once the merge has reached that time, and their events
 * are merged through a small binary heap. Memory holds the index plus the
 * chunks whose time ranges overlap the current time, not the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"

struct idx {
	uint64_t offset, first_t;
	uint32_t order; /* file order, the tie-breaker */
};

struct cursor {
	struct arr_event *ev;
	char *strs;
	uint32_t n, pos, order;
};

struct arr_merge {
	struct arr_trace *tr;
	struct idx *idx;
	size_t nidx, next;
	int index_rc; /* error that cut the index pass short, delivered at the end */
	struct cursor **heap;
	size_t nheap, heapcap;
	struct cursor *last; /* popped cursor whose event the caller holds */
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;
	if (x->first_t != y->first_t)
		return x->first_t < y->first_t ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cur_less(const struct cursor *a, const struct cursor *b)
{
	const struct arr_event *x = &a->ev[a->pos], *y = &b->ev[b->pos];
	if (x->t != y->t)
		return x->t < y->t;
	return a->order < b->order;
}

static void heap_up(struct arr_merge *m, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		if (!cur_less(m->heap[i], m->heap[p]))
			break;
		struct cursor *t = m->heap[i];
		m->heap[i] = m->heap[p];
		m->heap[p] = t;
		i = p;
	}
}

static void heap_down(struct arr_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		if (l < m->nheap && cur_less(m->heap[l], m->heap[s]))
			s = l;
		if (r < m->nheap && cur_less(m->heap[r], m->heap[s]))
			s = r;
		if (s == i)
			break;
		struct cursor *t = m->heap[i];
		m->heap[i] = m->heap[s];
		m->heap[s] = t;
		i = s;
	}
}

static void cursor_free(struct cursor *c)
{
	if (c) {
		free(c->ev);
		free(c->strs);
		free(c);
	}
}

int arr_merge_open(struct arr_merge **out, struct arr_trace *tr)
{
	*out = NULL;
	struct arr_merge *m = calloc(1, sizeof *m);
	if (!m)
		return ARR_ENOMEM;
	m->tr = tr;
	int rc = arr_trace_rewind(tr);
	if (rc) {
		free(m);
		return rc;
	}
	size_t cap = 0;
	struct arr_chunk_info ci;
	while ((rc = arr_trace_next_chunk(tr, &ci)) == 1) {
		if (m->nidx == cap) {
			cap = cap ? cap * 2 : 256;
			struct idx *n = realloc(m->idx, cap * sizeof *n);
			if (!n) {
				arr_merge_close(m);
				return ARR_ENOMEM;
			}
			m->idx = n;
		}
		m->idx[m->nidx] = (struct idx){ci.offset, ci.first_t, (uint32_t)m->nidx};
		m->nidx++;
	}
	m->index_rc = rc; /* 0 at a clean EOF */
	if (m->nidx)
		qsort(m->idx, m->nidx, sizeof *m->idx, idx_cmp);
	*out = m;
	return 0;
}

static int open_next(struct arr_merge *m)
{
	struct idx *x = &m->idx[m->next++];
	struct arr_chunk_info ci;
	int rc = arr_trace_seek_chunk(m->tr, x->offset, &ci);
	if (rc)
		return rc;
	const struct arr_event *ev;
	int n = arr_trace_read_chunk(m->tr, &ev);
	if (n < 0)
		return n;
	struct cursor *c = calloc(1, sizeof *c);
	if (!c)
		return ARR_ENOMEM;
	c->ev = malloc((size_t)n * sizeof *c->ev);
	if (!c->ev) {
		cursor_free(c);
		return ARR_ENOMEM;
	}
	memcpy(c->ev, ev, (size_t)n * sizeof *ev);
	/* exec paths point into the reader's buffer: give them their own copy */
	size_t slen = 0;
	for (int i = 0; i < n; i++)
		if (ev[i].str)
			slen += strlen(ev[i].str) + 1;
	if (slen) {
		char *s = c->strs = malloc(slen);
		if (!s) {
			cursor_free(c);
			return ARR_ENOMEM;
		}
		for (int i = 0; i < n; i++)
			if (ev[i].str) {
				size_t l = strlen(ev[i].str) + 1;
				memcpy(s, ev[i].str, l);
				c->ev[i].str = s;
				s += l;
			}
	}
	c->n = (uint32_t)n;
	c->order = x->order;
	if (m->nheap == m->heapcap) {
		size_t nc = m->heapcap ? m->heapcap * 2 : 16;
		struct cursor **h = realloc(m->heap, nc * sizeof *h);
		if (!h) {
			cursor_free(c);
			return ARR_ENOMEM;
		}
		m->heap = h;
		m->heapcap = nc;
	}
	m->heap[m->nheap++] = c;
	heap_up(m, m->nheap - 1);
	return 0;
}

int arr_merge_next(struct arr_merge *m, const struct arr_event **evp)
{
	if (m->last) { /* advance the cursor whose event was handed out */
		struct cursor *c = m->last;
		m->last = NULL;
		if (++c->pos < c->n) {
			m->heap[m->nheap++] = c;
			heap_up(m, m->nheap - 1);
		} else {
			cursor_free(c);
		}
	}
	/* Open every chunk that starts no later than the earliest pending event. */
	while (m->next < m->nidx &&
	       (m->nheap == 0 || m->idx[m->next].first_t <= m->heap[0]->ev[m->heap[0]->pos].t)) {
		int rc = open_next(m);
		if (rc)
			return rc;
	}
	if (m->nheap == 0)
		return m->index_rc;
	struct cursor *c = m->heap[0];
	m->heap[0] = m->heap[--m->nheap];
	heap_down(m, 0);
	m->last = c;
	*evp = &c->ev[c->pos];
	return 1;
}

void arr_merge_close(struct arr_merge *m)
{
	if (!m)
		return;
	cursor_free(m->last);
	for (size_t i = 0; i < m->nheap; i++)
		cursor_free(m->heap[i]);
	free(m->heap);
	free(m->idx);
	free(m);
}

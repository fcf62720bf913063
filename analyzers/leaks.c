/*
 * leaks.c - the "leaks" section: blocks still live when the trace ends, by
 * exact size and by thread, the largest first; blocks lost by
 * `p = realloc(p, n)` when that realloc failed (the old block stayed live
 * and was never freed afterwards); failed calls by cause.
 *
 * Causes: "overflow" - calloc/reallocarray whose nmemb * size overflows
 * (the library refuses before asking for memory); "out_of_memory" - ENOMEM
 * otherwise; "invalid" - EINVAL (a bad alignment); "other" - anything else.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis_internal.h"

struct leaks {
	uint64_t overflow, oom, invalid, other;
	uint64_t by_op[ARR_OP_MAX_];
	uint64_t failed_realloc, failed_realloc_bytes; /* failed resizes of live blocks */
};

static void leaks_failed(struct an_core *c, void *st, const struct arr_event *ev, struct an_block *old)
{
	struct leaks *s = st;
	if (arr_event_bytes(ev, c->page_size) == UINT64_MAX && (arr_op_facts(ev->op) & ARR_OPF_NMEMB))
		s->overflow++;
	else if (ev->err == ENOMEM)
		s->oom++;
	else if (ev->err == EINVAL)
		s->invalid++;
	else
		s->other++;
	s->by_op[ev->op]++;
	if (old) {
		s->failed_realloc++;
		s->failed_realloc_bytes += old->size;
	}
}

struct acc {
	const struct an_core *c;
	struct arr_ptrmap sizes; /* size + 1 -> blocks */
	uint64_t *th_blocks, *th_bytes;
	struct big {
		uint64_t addr;
		const struct an_block *b;
	} * largest;
	size_t nlargest, cap;
	uint64_t lost, lost_bytes;
	int oom;
};

/* min-heap of the largest blocks seen so far, by size */
static int big_less(const struct big *x, const struct big *y)
{
	return x->b->size != y->b->size ? x->b->size < y->b->size : x->addr > y->addr;
}

static void big_down(struct big *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && big_less(&h[l], &h[m]))
			m = l;
		if (r < n && big_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct big t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void each(void *ctx, uint64_t addr, const struct an_block *b)
{
	struct acc *a = ctx;
	uint64_t n = 0;
	arr_ptrmap_get(&a->sizes, b->size + 1, &n);
	if (arr_ptrmap_put(&a->sizes, b->size + 1, n + 1))
		a->oom = 1;
	a->th_blocks[b->thread]++;
	a->th_bytes[b->thread] += b->size;
	if (b->flags & ARR__BLK_FAILED_REALLOC) {
		a->lost++;
		a->lost_bytes += b->size;
	}
	struct big e = {addr, b};
	if (a->nlargest < a->cap) {
		size_t i = a->nlargest++;
		a->largest[i] = e;
		while (i && big_less(&a->largest[i], &a->largest[(i - 1) / 2])) {
			struct big t = a->largest[i];
			a->largest[i] = a->largest[(i - 1) / 2];
			a->largest[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (a->cap && big_less(&a->largest[0], &e)) {
		a->largest[0] = e;
		big_down(a->largest, a->nlargest, 0);
	}
}

struct row {
	uint64_t key, blocks, bytes;
};

static int row_cmp(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return a->key < b->key ? -1 : a->key > b->key;
}

static int big_cmp(const void *x, const void *y)
{
	const struct big *a = x, *b = y;
	return big_less(a, b) ? 1 : big_less(b, a) ? -1 : 0;
}

static void rows_doc(struct arr_doc *arr, struct row *r, size_t n, unsigned top, const char *key)
{
	qsort(r, n, sizeof *r, row_cmp);
	uint64_t ob = 0, obytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (i >= top) {
			ob += r[i].blocks;
			obytes += r[i].bytes;
			continue;
		}
		struct arr_doc *o = arr_doc_push_obj(arr);
		arr_doc_set_int(o, key, (int64_t)r[i].key);
		arr_doc_set_int(o, "blocks", (int64_t)r[i].blocks);
		arr_doc_set_int(o, "bytes", (int64_t)r[i].bytes);
	}
	if (ob) {
		struct arr_doc *o = arr_doc_push_obj(arr);
		arr_doc_set_str(o, key, "other");
		arr_doc_set_int(o, "blocks", (int64_t)ob);
		arr_doc_set_int(o, "bytes", (int64_t)obytes);
	}
}

static int leaks_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct leaks *s = st;
	struct acc a = {.c = c, .sizes = ARR_PTRMAP_INIT, .cap = c->top};
	size_t nt = c->nthreads ? c->nthreads : 1;
	a.th_blocks = calloc(nt, sizeof *a.th_blocks);
	a.th_bytes = calloc(nt, sizeof *a.th_bytes);
	a.largest = malloc((a.cap ? a.cap : 1) * sizeof *a.largest);
	int rc = 0;
	if (!a.th_blocks || !a.th_bytes || !a.largest) {
		rc = ARR_ENOMEM;
		goto out;
	}
	arr__live_each(c, each, &a);
	if (a.oom) {
		rc = ARR_ENOMEM;
		goto out;
	}
	arr_doc_set_int(sec, "bytes", (int64_t)c->live_bytes);
	arr_doc_set_int(sec, "blocks", (int64_t)c->live_blocks);

	size_t nr = a.sizes.count > nt ? a.sizes.count : nt;
	struct row *r = malloc((nr ? nr : 1) * sizeof *r);
	if (!r) {
		rc = ARR_ENOMEM;
		goto out;
	}
	size_t n = 0;
	if (a.sizes.mask)
		for (size_t i = 0; i <= a.sizes.mask; i++)
			if (a.sizes.keys[i]) {
				uint64_t size = a.sizes.keys[i] - 1, blocks = a.sizes.vals[i];
				r[n++] = (struct row){size, blocks, size * blocks};
			}
	rows_doc(arr_doc_set_arr(sec, "by_size"), r, n, c->top, "size");
	n = 0;
	for (size_t i = 0; i < c->nthreads; i++)
		if (a.th_blocks[i])
			r[n++] = (struct row){c->threads[i].tid, a.th_blocks[i], a.th_bytes[i]};
	rows_doc(arr_doc_set_arr(sec, "by_thread"), r, n, c->top, "tid");
	free(r);

	qsort(a.largest, a.nlargest, sizeof *a.largest, big_cmp);
	struct arr_doc *lg = arr_doc_set_arr(sec, "largest");
	for (size_t i = 0; i < a.nlargest; i++) {
		const struct an_block *b = a.largest[i].b;
		struct arr_doc *o = arr_doc_push_obj(lg);
		arr_doc_set_int(o, "size", (int64_t)b->size);
		arr_doc_set_int(o, "t", (int64_t)b->t);
		arr_doc_set_int(o, "event", (int64_t)b->evno);
		arr_doc_set_int(o, "tid", c->threads[b->thread].tid);
		arr_doc_set_str(o, "op", arr_op_name(b->op));
	}

	struct arr_doc *l = arr_doc_set_obj(sec, "lost_by_failed_realloc");
	arr_doc_set_int(l, "count", (int64_t)a.lost);
	arr_doc_set_int(l, "bytes", (int64_t)a.lost_bytes);
	arr_doc_set_int(l, "failed_resizes", (int64_t)s->failed_realloc);
	arr_doc_set_int(l, "failed_resize_bytes", (int64_t)s->failed_realloc_bytes);

	struct arr_doc *f = arr_doc_set_obj(sec, "failed_calls");
	arr_doc_set_int(f, "total", (int64_t)c->failed);
	arr_doc_set_int(f, "overflow", (int64_t)s->overflow);
	arr_doc_set_int(f, "out_of_memory", (int64_t)s->oom);
	arr_doc_set_int(f, "invalid", (int64_t)s->invalid);
	arr_doc_set_int(f, "other", (int64_t)s->other);
	struct arr_doc *bo = arr_doc_set_obj(f, "by_op");
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		if (s->by_op[op])
			arr_doc_set_int(bo, arr_op_name(op), (int64_t)s->by_op[op]);
out:
	arr_ptrmap_release(&a.sizes);
	free(a.th_blocks);
	free(a.th_bytes);
	free(a.largest);
	return rc;
}

const struct an_ops arr__an_leaks = {
	.id = ARR_AN_LEAKS,
	.state_size = sizeof(struct leaks),
	.failed = leaks_failed,
	.end = leaks_end,
};

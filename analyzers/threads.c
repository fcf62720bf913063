/*
 * threads.c - the "threads" section: per thread calls and bytes, and who
 * frees what another thread allocated (a matrix of counts and bytes, the
 * top pairs by count plus one "other" row). A realloc by another thread
 * counts as a cross-thread free of the old block.
 */
#include <stdlib.h>

#include "analysis_internal.h"

struct pair {
	uint32_t from, to; /* thread indexes */
	uint64_t count, bytes;
};

struct threads {
	struct arr_ptrmap index; /* (from << 32 | to) + 1 -> pair index */
	struct pair *pairs;
	size_t npairs, cap;
	uint64_t count, bytes;
};

static void th_cross(struct an_core *c, void *st, struct an_block *b, uint32_t to)
{
	struct threads *s = st;
	s->count++;
	s->bytes += b->size;
	uint64_t key = ((uint64_t)b->thread << 32 | to) + 1, i;
	if (!arr_ptrmap_get(&s->index, key, &i)) {
		if (s->npairs == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			struct pair *n = realloc(s->pairs, cap * sizeof *n);
			if (!n) {
				c->oom = ARR_ENOMEM;
				return;
			}
			s->pairs = n;
			s->cap = cap;
		}
		i = s->npairs;
		if (arr_ptrmap_put(&s->index, key, i)) {
			c->oom = ARR_ENOMEM;
			return;
		}
		s->pairs[s->npairs++] = (struct pair){b->thread, to, 0, 0};
	}
	s->pairs[i].count++;
	s->pairs[i].bytes += b->size;
}

static int pair_cmp(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->to < b->to ? -1 : a->to > b->to;
}

struct row {
	uint64_t calls;
	size_t i;
};

static int row_cmp(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->calls != b->calls)
		return a->calls < b->calls ? 1 : -1;
	return a->i < b->i ? -1 : a->i > b->i;
}

static int th_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct threads *s = st;
	arr_doc_set_int(sec, "count", (int64_t)c->nthreads);
	struct arr_doc *cf = arr_doc_set_obj(sec, "cross_frees");
	arr_doc_set_int(cf, "count", (int64_t)s->count);
	arr_doc_set_int(cf, "bytes", (int64_t)s->bytes);
	arr_doc_set_int(cf, "pairs", (int64_t)s->npairs);
	if (s->npairs)
		qsort(s->pairs, s->npairs, sizeof *s->pairs, pair_cmp);
	struct arr_doc *m = arr_doc_set_arr(sec, "matrix");
	uint64_t oc = 0, ob = 0;
	for (size_t i = 0; i < s->npairs; i++) {
		if (i >= c->top) {
			oc += s->pairs[i].count;
			ob += s->pairs[i].bytes;
			continue;
		}
		struct arr_doc *o = arr_doc_push_obj(m);
		arr_doc_set_int(o, "alloc_tid", c->threads[s->pairs[i].from].tid);
		arr_doc_set_int(o, "free_tid", c->threads[s->pairs[i].to].tid);
		arr_doc_set_int(o, "count", (int64_t)s->pairs[i].count);
		arr_doc_set_int(o, "bytes", (int64_t)s->pairs[i].bytes);
	}
	if (oc) {
		struct arr_doc *o = arr_doc_push_obj(m);
		arr_doc_set_str(o, "alloc_tid", "other");
		arr_doc_set_str(o, "free_tid", "other");
		arr_doc_set_int(o, "count", (int64_t)oc);
		arr_doc_set_int(o, "bytes", (int64_t)ob);
	}
	/* the busiest threads */
	size_t n = c->nthreads;
	struct row *r = malloc((n ? n : 1) * sizeof *r);
	if (!r)
		return ARR_ENOMEM;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct row){c->threads[i].calls, i};
	qsort(r, n, sizeof *r, row_cmp);
	struct arr_doc *list = arr_doc_set_arr(sec, "list");
	for (size_t i = 0; i < n && i < c->top; i++) {
		const struct an_thread *t = &c->threads[r[i].i];
		struct arr_doc *o = arr_doc_push_obj(list);
		arr_doc_set_int(o, "tid", t->tid);
		arr_doc_set_int(o, "calls", (int64_t)t->calls);
		arr_doc_set_int(o, "allocs", (int64_t)t->allocs);
		arr_doc_set_int(o, "alloc_bytes", (int64_t)t->alloc_bytes);
		arr_doc_set_int(o, "frees", (int64_t)t->frees);
	}
	free(r);
	return 0;
}

static void th_fini(void *st)
{
	struct threads *s = st;
	arr_ptrmap_release(&s->index);
	free(s->pairs);
}

const struct an_ops arr__an_threads = {
	.id = ARR_AN_THREADS,
	.state_size = sizeof(struct threads),
	.cross_free = th_cross,
	.end = th_end,
	.fini = th_fini,
};

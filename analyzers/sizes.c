/*
 * sizes.c - the "sizes" section: what sizes the program asks for (log2
 * histogram, the most frequent exact sizes) and how its reallocs grow.
 *
 * Exact sizes below MID are counted in two arrays (below SMALL inline,
 * hot.h); larger ones in a map. Sizes from SMALL up are capped at MAX_SIZES
 * distinct ones, in the array and the map together (later new sizes are
 * counted as "other_sizes"), so memory stays fixed whatever the trace.
 */
#include <stdlib.h>

#include "hot.h"

#define SMALL ARR__SIZES_SMALL
#define MID ARR__SIZES_MID
#define MAX_SIZES 65536

/* realloc growth factor new/old, bucketed (upper bounds inclusive from "1-1.25" on) */
static const char *const factor_name[] = {"<0.5", "0.5-1", "1", "1-1.25", "1.25-1.5", "1.5-2", "2-4", ">4"};
#define NFACTOR (sizeof factor_name / sizeof *factor_name)
_Static_assert(NFACTOR == ARR__SIZES_NFACTOR, "one name per growth factor bucket");

/* per-event work: arr__sizes_on_alloc in hot.h, and these two */

void arr__sizes_count_big(struct an_core *c, struct an_sizes *s, uint64_t size)
{
	if (size < MID) {
		uint64_t *n = &s->mid[size - SMALL];
		if (*n || s->nbig < MAX_SIZES) {
			s->nbig += !*n;
			++*n;
		} else {
			s->other_sizes++;
		}
		return;
	}
	uint64_t n = 0;
	if (arr_ptrmap_get(&s->big, size, &n) || s->nbig < MAX_SIZES) {
		if (arr_ptrmap_put(&s->big, size, n + 1))
			c->oom = ARR_ENOMEM;
		else
			s->nbig += !n;
	} else {
		s->other_sizes++;
	}
}

void arr__sizes_on_resize(struct an_core *c, struct an_sizes *s, uint64_t addr, const struct an_block *b,
			  const struct arr_event *ev)
{
	if (ev->failed) /* realloc(p, 0): a free */
		return;
	uint64_t old = b->size, nw = arr_event_bytes(ev, c->page_size);
	s->r_count++;
	if (nw > old) {
		s->r_grow++;
		unsigned k = arr__log2_bucket(nw - old);
		s->r_delta_count[k]++;
		s->r_delta_bytes[k] += nw - old;
	} else if (nw < old) {
		s->r_shrink++;
	} else {
		s->r_same++;
	}
	if (ev->ret == addr) {
		s->r_in_place++;
	} else {
		s->r_moved++;
		s->r_moved_bytes += old < nw ? old : nw;
	}
	double f = old ? (double)nw / (double)old : 1e300;
	unsigned i = nw == old   ? 2
		     : f < 0.5   ? 0
		     : f < 1     ? 1
		     : f <= 1.25 ? 3
		     : f <= 1.5  ? 4
		     : f <= 2    ? 5
		     : f <= 4    ? 6
				 : 7;
	s->r_factor[i]++;
}

struct size_count {
	uint64_t size, count;
};

static int by_count(const void *a, const void *b)
{
	const struct size_count *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->size < y->size ? -1 : x->size > y->size;
}

static int sizes_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct an_sizes *s = st;
	arr__doc_log2(arr_doc_set_arr(sec, "log2"), s->count, s->bytes, 65);
	size_t n = 0;
	for (size_t i = 0; i < SMALL; i++)
		n += s->small[i] != 0;
	n += s->nbig;
	struct size_count *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return ARR_ENOMEM;
	n = 0;
	for (size_t i = 0; i < SMALL; i++)
		if (s->small[i])
			v[n++] = (struct size_count){i, s->small[i]};
	if (s->nbig)
		for (size_t i = 0; i < MID - SMALL; i++)
			if (s->mid[i])
				v[n++] = (struct size_count){SMALL + i, s->mid[i]};
	if (s->big.mask)
		for (size_t i = 0; i <= s->big.mask; i++)
			if (s->big.keys[i])
				v[n++] = (struct size_count){s->big.keys[i], s->big.vals[i]};
	qsort(v, n, sizeof *v, by_count);
	struct arr_doc *top = arr_doc_set_arr(sec, "top");
	for (size_t i = 0; i < n && i < c->top; i++) {
		struct arr_doc *o = arr_doc_push_obj(top);
		arr_doc_set_int(o, "size", (int64_t)v[i].size);
		arr_doc_set_int(o, "count", (int64_t)v[i].count);
	}
	arr_doc_set_int(sec, "distinct_sizes", (int64_t)n);
	arr_doc_set_int(sec, "other_sizes", (int64_t)s->other_sizes);
	free(v);

	struct arr_doc *r = arr_doc_set_obj(sec, "realloc_growth");
	arr_doc_set_int(r, "count", (int64_t)s->r_count);
	arr_doc_set_int(r, "from_null", (int64_t)s->r_from_null);
	arr_doc_set_int(r, "grow", (int64_t)s->r_grow);
	arr_doc_set_int(r, "shrink", (int64_t)s->r_shrink);
	arr_doc_set_int(r, "same", (int64_t)s->r_same);
	arr_doc_set_int(r, "in_place", (int64_t)s->r_in_place);
	arr_doc_set_int(r, "moved", (int64_t)s->r_moved);
	arr_doc_set_int(r, "moved_bytes", (int64_t)s->r_moved_bytes);
	struct arr_doc *f = arr_doc_set_arr(r, "factor");
	for (unsigned i = 0; i < NFACTOR; i++) {
		if (!s->r_factor[i])
			continue;
		struct arr_doc *o = arr_doc_push_obj(f);
		arr_doc_set_str(o, "factor", factor_name[i]);
		arr_doc_set_int(o, "count", (int64_t)s->r_factor[i]);
	}
	arr__doc_log2(arr_doc_set_arr(r, "growth_log2"), s->r_delta_count, s->r_delta_bytes, 65);
	return 0;
}

static void sizes_fini(void *st)
{
	struct an_sizes *s = st;
	arr_ptrmap_release(&s->big);
}

const struct an_ops arr__an_sizes = {
	.id = ARR_AN_SIZES,
	.state_size = sizeof(struct an_sizes),
	.end = sizes_end,
	.fini = sizes_fini,
};

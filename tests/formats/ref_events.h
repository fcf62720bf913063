/*
 * ref_events.h - the reference side of the formats tests that compare a
 * merge's batches or blocks with arr_merge_next() one event at a time
 * (batch.c, blocks.c): every event with its string copied (the merge may
 * reuse its memory), the end code, offset and text. Needs check.h's CHECK.
 */
#ifndef ARR_TESTS_REF_EVENTS_H
#define ARR_TESTS_REF_EVENTS_H

#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"

/* The reference: every event (strings copied), the end code and where. */
struct ref {
	struct arr_event *ev;
	char **str;
	size_t n, cap, strs;
	int rc;
	uint64_t off;
	char detail[160];
};

static void ref_push(struct ref *r, const struct arr_event *ev)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4096;
		r->ev = realloc(r->ev, r->cap * sizeof *r->ev);
		r->str = realloc(r->str, r->cap * sizeof *r->str);
		CHECK(r->ev && r->str, "out of memory");
	}
	r->ev[r->n] = *ev;
	r->str[r->n] = ev->str ? strdup(ev->str) : NULL;
	r->strs += ev->str != NULL;
	r->n++;
}

static void ref_release(struct ref *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->str[i]);
	free(r->ev);
	free(r->str);
}

static int same_event(const struct arr_event *a, const char *astr, const struct arr_event *b)
{
	if (a->t != b->t || a->size != b->size || a->nmemb != b->nmemb || a->align != b->align || a->ptr != b->ptr ||
	    a->ret != b->ret || a->tid != b->tid || a->op != b->op || a->failed != b->failed || a->err != b->err ||
	    a->stack != b->stack)
		return 0;
	if (!astr || !b->str)
		return !astr && !b->str;
	return !strcmp(astr, b->str);
}

#endif

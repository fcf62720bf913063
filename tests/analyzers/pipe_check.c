/*
 * pipe_check TRACE [STOP...] - the analysis's pipe (arr__merge_pipe_*,
 * formats/merge.c: the merge on a thread of its own, short runs copied,
 * finished chunks held) against the merge taken one event at a time
 * (arr_merge_next). Every event's fields and string must be the same, in
 * the same order, and so must the ending (0, or the same error at the same
 * offset with the same detail). Each segment is checked again after a pause
 * in which the pipe's thread runs ahead, recycling whatever it may: a
 * buffer reused too early shows as a changed event. Each STOP: the pipe
 * closed after that many segments (the analysis stopping early: no hang).
 * Prints "events E segments S chunks C short_runs R long_runs L ending X":
 * R and L count the runs of one thread's events under and from 64 events.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"

struct ref {
	struct arr_event ev;
	char *str;
};

static int same(const struct arr_event *a, const struct ref *r)
{
	const struct arr_event *b = &r->ev;
	if (a->t != b->t || a->size != b->size || a->nmemb != b->nmemb || a->align != b->align || a->ptr != b->ptr ||
	    a->ret != b->ret || a->tid != b->tid || a->op != b->op || a->failed != b->failed || a->err != b->err ||
	    a->stack != b->stack)
		return 0;
	if (!a->str || !r->str)
		return !a->str && !r->str;
	return !strcmp(a->str, r->str);
}

static void pause_a_little(void)
{
	for (int i = 0; i < 3; i++)
		sched_yield();
	for (volatile int i = 0; i < 2000; i++)
		;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return fprintf(stderr, "usage: pipe_check TRACE [STOP...]\n"), 2;
	struct arr_trace *tr;
	if (arr_trace_open(&tr, argv[1]))
		return fprintf(stderr, "pipe_check: cannot open '%s'\n", argv[1]), 2;
	struct arr_merge *m;
	if (arr_merge_open(&m, tr))
		return fprintf(stderr, "pipe_check: merge_open failed\n"), 2;
	size_t n = 0, cap = 1024, run = 0, short_runs = 0, long_runs = 0;
	struct ref *ref = malloc(cap * sizeof *ref);
	const struct arr_event *ev;
	int rc;
	while (ref && (rc = arr_merge_next(m, &ev)) == 1) {
		if (n == cap && !(ref = realloc(ref, (cap *= 2) * sizeof *ref)))
			break;
		if (n && ev->tid != ref[n - 1].ev.tid) {
			*(run < 64 ? &short_runs : &long_runs) += 1;
			run = 0;
		}
		run++;
		ref[n].ev = *ev;
		ref[n].str = ev->str ? strdup(ev->str) : NULL;
		n++;
	}
	if (!ref)
		return fprintf(stderr, "pipe_check: out of memory\n"), 2;
	if (run)
		*(run < 64 ? &short_runs : &long_runs) += 1;
	uint64_t ref_off = rc < 0 ? arr_trace_error_offset(tr) : 0;
	char ref_detail[256] = "";
	if (rc < 0)
		snprintf(ref_detail, sizeof ref_detail, "%s", arr_trace_error_detail(tr));
	arr_merge_close(m);

	int bad = 0;
	for (int pass = 1; pass <= argc - 1 && !bad; pass++) {
		long stop = pass < argc - 1 ? atol(argv[pass + 1]) : -1; /* the last pass reads it all */
		struct arr__merge_pipe *p;
		if (arr_merge_open(&m, tr) || arr__merge_pipe_open(&p, m, NULL, NULL))
			return fprintf(stderr, "pipe_check: open failed\n"), 2;
		size_t k = 0, segs = 0;
		const struct arr_event *evs;
		size_t len;
		int prc;
		while ((prc = arr__merge_pipe_next(p, &evs, &len)) == 1) {
			if (k + len > n) {
				fprintf(stderr, "pipe_check: more events than the merge's %zu\n", n);
				bad = 1;
				break;
			}
			for (size_t i = 0; i < len && !bad; i++)
				if (!same(&evs[i], &ref[k + i]))
					bad = fprintf(stderr, "pipe_check: event %zu differs\n", k + i) > 0;
			pause_a_little();
			for (size_t i = 0; i < len && !bad; i++)
				if (!same(&evs[i], &ref[k + i]))
					bad = fprintf(stderr, "pipe_check: event %zu changed while held\n", k + i) > 0;
			if (bad)
				break;
			k += len;
			segs++;
			if ((long)segs == stop)
				break;
		}
		arr__merge_pipe_close(p);
		if (!bad && stop < 0) {
			if (k != n)
				bad = fprintf(stderr, "pipe_check: %zu events, the merge %zu\n", k, n) > 0;
			else if (prc != rc)
				bad = fprintf(stderr, "pipe_check: ended with %d, the merge with %d\n", prc, rc) > 0;
			else if (rc < 0 && (arr_trace_error_offset(tr) != ref_off ||
					    strcmp(arr_trace_error_detail(tr), ref_detail)))
				bad = fprintf(stderr, "pipe_check: error at %llu (%s), the merge's at %llu (%s)\n",
					      (unsigned long long)arr_trace_error_offset(tr),
					      arr_trace_error_detail(tr), (unsigned long long)ref_off, ref_detail) > 0;
			if (!bad) {
				size_t chunks = 0;
				struct arr_chunk_info ci;
				arr_trace_rewind(tr);
				while (arr_trace_next_chunk(tr, &ci) == 1)
					chunks++;
				printf("events %zu segments %zu chunks %zu short_runs %zu long_runs %zu ending %d\n", n,
				       segs, chunks, short_runs, long_runs, rc);
			}
		}
		arr_merge_close(m);
	}
	for (size_t i = 0; i < n; i++)
		free(ref[i].str);
	free(ref);
	arr_trace_close(tr);
	return bad;
}

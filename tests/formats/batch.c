/*
 * batch.c TRACE WORKDIR - the merge's batches (arr__merge_next_batch) hand
 * out the same events, in the same order, as arr_merge_next() one at a
 * time: every field and string of every event, with buffers of 1 to 1024
 * events and long runs from 2 events to never, with the three calls mixed,
 * and on copies of TRACE cut at 3/5 of its length and with 64 bytes
 * spoiled in the middle: the same events before the error, then the same
 * code, offset and text. TRACE should be a recording of threads that take
 * turns (runs of a few events), the case the batches gather; the run
 * statistics are printed and, unless --any-runs is given, must show short
 * runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"

#include "check.h"
#include "ref_events.h"

static int open_merge(const char *path, struct arr_trace **tr, struct arr_merge **m)
{
	int rc = arr_trace_open(tr, path);
	*m = NULL;
	if (rc == 0)
		rc = arr_merge_open(m, *tr);
	return rc;
}

static void reference(const char *path, struct ref *r)
{
	struct arr_trace *tr;
	struct arr_merge *m;
	memset(r, 0, sizeof *r);
	int rc = open_merge(path, &tr, &m);
	CHECK(rc == 0, "%s: cannot open: %s", path, arr_strerror(rc));
	const struct arr_event *ev;
	while ((rc = arr_merge_next(m, &ev)) == 1)
		ref_push(r, ev);
	r->rc = rc;
	r->off = arr_trace_error_offset(tr);
	snprintf(r->detail, sizeof r->detail, "%s", arr_trace_error_detail(tr));
	arr_merge_close(m);
	arr_trace_close(tr);
}

/* Read path in batches of cap with long runs from long_run up; mix: every
 * third call is arr__merge_next_run, every seventh arr_merge_next. Counts
 * the batches that gathered (*gathered) and the events in them. */
static void check_batches(const char *path, const struct ref *r, size_t cap, size_t long_run, int mix, size_t *gathered,
			  size_t *gathered_events)
{
	struct arr_trace *tr;
	struct arr_merge *m;
	int rc = open_merge(path, &tr, &m);
	CHECK(rc == 0, "%s: cannot open: %s", path, arr_strerror(rc));
	struct arr_event *buf = malloc(cap * sizeof *buf);
	CHECK(buf, "out of memory");
	size_t i = 0, calls = 0;
	*gathered = *gathered_events = 0;
	for (;;) {
		const struct arr_event *ev;
		size_t n = 1;
		calls++;
		if (mix && calls % 7 == 0)
			rc = arr_merge_next(m, &ev);
		else if (mix && calls % 3 == 0)
			rc = arr__merge_next_run(m, &ev, &n);
		else
			rc = arr__merge_next_batch(m, buf, cap, long_run, &ev, &n);
		if (rc != 1)
			break;
		CHECK(n >= 1, "%s: an empty batch at event %zu", path, i);
		if (ev == buf) {
			CHECK(n <= cap, "%s: a batch of %zu events in a buffer of %zu", path, n, cap);
			(*gathered)++;
			*gathered_events += n;
		}
		/* all of the batch checked after it was made: what it hands out stays valid until the next call */
		for (size_t k = 0; k < n; k++, i++) {
			CHECK(i < r->n, "%s: more events than one at a time (%zu) (cap %zu, long %zu, mix %d)", path,
			      r->n, cap, long_run, mix);
			CHECK(same_event(&r->ev[i], r->str[i], &ev[k]),
			      "%s: event %zu differs (cap %zu, long %zu, mix %d): t %llu tid %u op %u, want t %llu tid %u "
			      "op %u",
			      path, i, cap, long_run, mix, (unsigned long long)ev[k].t, ev[k].tid, ev[k].op,
			      (unsigned long long)r->ev[i].t, r->ev[i].tid, r->ev[i].op);
		}
	}
	CHECK(i == r->n, "%s: %zu events, one at a time %zu (cap %zu, long %zu, mix %d)", path, i, r->n, cap, long_run,
	      mix);
	CHECK(rc == r->rc, "%s: ended with %d (%s), one at a time %d (cap %zu, long %zu, mix %d)", path, rc,
	      arr_strerror(rc), r->rc, cap, long_run, mix);
	CHECK(arr_trace_error_offset(tr) == r->off && !strcmp(arr_trace_error_detail(tr), r->detail),
	      "%s: error at %llu '%s', one at a time at %llu '%s'", path,
	      (unsigned long long)arr_trace_error_offset(tr), arr_trace_error_detail(tr), (unsigned long long)r->off,
	      r->detail);
	free(buf);
	arr_merge_close(m);
	arr_trace_close(tr);
}

static void check_all(const char *path, int want_short)
{
	struct ref r;
	reference(path, &r);
	/* runs in the reference: a run is a stretch of one chunk's events; the tid tells chunks apart here */
	size_t runs = 0, short_runs = 0, len = 0;
	for (size_t i = 0; i < r.n; i++) {
		len++;
		if (i + 1 == r.n || r.ev[i + 1].tid != r.ev[i].tid) {
			runs++;
			short_runs += len < 64;
			len = 0;
		}
	}
	printf("%s: %zu events, %zu runs (%zu shorter than 64), ends with %d (%s) at %llu\n", path, r.n, runs,
	       short_runs, r.rc, r.rc ? arr_strerror(r.rc) : "end", (unsigned long long)r.off);
	CHECK(r.n > 0 || !want_short, "%s: no events", path);
	if (want_short)
		CHECK(short_runs * 4 > runs && short_runs > 200,
		      "%s: %zu short runs of %zu: the threads did not take turns, nothing to gather", path, short_runs,
		      runs);
	static const struct {
		size_t cap, long_run;
		int mix;
	} modes[] = {{1024, 64, 0},         {1024, 64, 1}, {7, 64, 0}, {1, 2, 0},
		     {1024, (size_t)-1, 0}, {64, 2, 1},    {333, 5, 0}};
	for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
		size_t g, ge;
		check_batches(path, &r, modes[k].cap, modes[k].long_run, modes[k].mix, &g, &ge);
		if (k == 0) {
			printf("  batches of 1024, long runs from 64: %zu gathered, %zu events in them\n", g, ge);
			if (want_short)
				CHECK(ge * 4 > r.n, "%s: only %zu of %zu events gathered", path, ge, r.n);
		}
	}
	ref_release(&r);
}

/* A copy of src: the first keep bytes, with 64 bytes at spoil spoiled (spoil 0: none). */
static void copy_trace(const char *src, const char *dst, long keep, long spoil)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	CHECK(in && out, "cannot copy '%s' to '%s'", src, dst);
	for (long i = 0; i < keep; i++) {
		int ch = getc(in);
		CHECK(ch != EOF, "'%s' is shorter than %ld bytes", src, keep);
		if (spoil && i >= spoil && i < spoil + 64)
			ch = 0xa5 ^ (int)(i & 0xff);
		putc(ch, out);
	}
	fclose(in);
	CHECK(fclose(out) == 0, "cannot write '%s'", dst);
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--any-runs"))) {
		fprintf(stderr, "usage: batch TRACE WORKDIR [--any-runs]\n");
		return 2;
	}
	const char *path = argv[1];
	FILE *f = fopen(path, "rb");
	CHECK(f, "cannot open '%s'", path);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	char cut[4096], spoiled[4096];
	snprintf(cut, sizeof cut, "%s/batch-cut.atr", argv[2]);
	snprintf(spoiled, sizeof spoiled, "%s/batch-spoiled.atr", argv[2]);
	copy_trace(path, cut, size / 5 * 3, 0);
	copy_trace(path, spoiled, size, size / 2);

	check_all(path, argc == 3);
	check_all(cut, 0);
	check_all(spoiled, 0);
	printf("batch: ok\n");
	return 0;
}

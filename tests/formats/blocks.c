/*
 * blocks.c TRACE WORKDIR [--inline] - the merge on its own thread
 * (arr__merge_open_blocks / arr__merge_next_block, formats/format.h) hands
 * out the same events, in the same order, as arr_merge_next() one at a time
 * inline: every field and string of every event (exec paths, mark names:
 * checked after the block came, so the block owns them), then the same end
 * code, error offset and text; also on copies of TRACE cut at 3/5 of its
 * length and with 64 bytes spoiled in the middle (a corrupt chunk
 * mid-trace). The thread is started at the start and mid-stream (after
 * inline batches, as the analysis does); it must start on a trace of 4
 * chunks or more, and not on one of fewer (--inline: TRACE has fewer).
 * Closing the merge with its
 * thread still running (after one block) must stop it cleanly (the
 * sanitizer build looks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"
#include "format.h"

#include "check.h"
#include "ref_events.h"

static void open_merge(const char *path, struct arr_trace **tr, struct arr_merge **m)
{
	int rc = arr_trace_open(tr, path);
	*m = NULL;
	if (rc == 0)
		rc = arr_merge_open(m, *tr);
	CHECK(rc == 0, "%s: cannot open: %s", path, arr_strerror(rc));
}

/* The events chunks the index pass finds (up to an error). */
static size_t count_chunks(const char *path)
{
	struct arr_trace *tr;
	CHECK(arr_trace_open(&tr, path) == 0, "%s: cannot open", path);
	size_t n = 0;
	while (arr_trace_next_chunk(tr, NULL) == 1)
		n++;
	arr_trace_close(tr);
	return n;
}

static void reference(const char *path, struct ref *r)
{
	struct arr_trace *tr;
	struct arr_merge *m;
	memset(r, 0, sizeof *r);
	open_merge(path, &tr, &m);
	const struct arr_event *ev;
	int rc;
	while ((rc = arr_merge_next(m, &ev)) == 1)
		ref_push(r, ev);
	r->rc = rc;
	r->off = arr_trace_error_offset(tr);
	snprintf(r->detail, sizeof r->detail, "%s", arr_trace_error_detail(tr));
	arr_merge_close(m);
	arr_trace_close(tr);
}

/* Events ev[0..n) are r's from *i on. */
static void check_events(const struct ref *r, const char *path, size_t *i, const struct arr_event *ev, size_t n,
			 size_t block)
{
	CHECK(n >= 1, "%s: an empty block at event %zu", path, *i);
	for (size_t k = 0; k < n; k++, (*i)++) {
		size_t j = *i;
		CHECK(j < r->n, "%s: more events than one at a time (%zu)", path, r->n);
		CHECK(same_event(&r->ev[j], r->str[j], &ev[k]),
		      "%s: event %zu (block %zu, %zu in it) differs: t %llu tid %u op %u str '%s', want t %llu tid %u "
		      "op %u str '%s'",
		      path, j, block, k, (unsigned long long)ev[k].t, ev[k].tid, ev[k].op, ev[k].str ? ev[k].str : "",
		      (unsigned long long)r->ev[j].t, r->ev[j].tid, r->ev[j].op, r->str[j] ? r->str[j] : "");
	}
}

/* The thread started after lead calls of arr__merge_next_batch (7 events each at most, none in place): mid-stream. */
static void check_blocks(const struct ref *r, const char *path, int want_thread, size_t lead)
{
	struct arr_trace *tr;
	struct arr_merge *m;
	open_merge(path, &tr, &m);
	struct arr_event buf[7];
	const struct arr_event *ev;
	size_t i = 0, n, nblocks = 0;
	int rc = 1;
	for (size_t k = 0; k < lead && rc == 1; k++)
		if ((rc = arr__merge_next_batch(m, buf, 7, (size_t)-1, &ev, &n)) == 1)
			check_events(r, path, &i, ev, n, 0);
	int on = arr__merge_open_blocks(m);
	CHECK(on == want_thread, "%s: the merge's thread %s (after %zu calls)", path, on ? "started" : "did not start",
	      lead);
	while (rc == 1) {
		rc = on ? arr__merge_next_block(m, &ev, &n) : arr__merge_next_run(m, &ev, &n);
		if (rc == 1)
			check_events(r, path, &i, ev, n, ++nblocks);
	}
	/* the end stays the end */
	if (on && lead == 0)
		CHECK(arr__merge_next_block(m, &ev, &n) == rc, "%s: a second call after the end differs", path);
	arr__merge_close_blocks(m);
	printf("%s: %zu events (%zu with a string), %zu inline first, then %zu %s, ends with %d (%s) at %llu '%s'\n",
	       path, r->n, r->strs, lead, nblocks, on ? "blocks" : "runs (inline)", r->rc,
	       r->rc ? arr_strerror(r->rc) : "end", (unsigned long long)r->off, r->detail);
	CHECK(i == r->n, "%s: %zu events, one at a time %zu", path, i, r->n);
	CHECK(rc == r->rc, "%s: ended with %d (%s), one at a time %d", path, rc, arr_strerror(rc), r->rc);
	CHECK(arr_trace_error_offset(tr) == r->off && !strcmp(arr_trace_error_detail(tr), r->detail),
	      "%s: error at %llu '%s', one at a time at %llu '%s'", path,
	      (unsigned long long)arr_trace_error_offset(tr), arr_trace_error_detail(tr), (unsigned long long)r->off,
	      r->detail);
	arr_merge_close(m);
	arr_trace_close(tr);
}

static void check_all(const char *path, int want_thread)
{
	struct ref r;
	reference(path, &r);
	check_blocks(&r, path, want_thread, 0);
	check_blocks(&r, path, want_thread, 1);
	check_blocks(&r, path, want_thread, 777);
	/* closed while its thread runs: one block taken, the rest left */
	if (want_thread) {
		struct arr_trace *tr;
		struct arr_merge *m;
		open_merge(path, &tr, &m);
		CHECK(arr__merge_open_blocks(m) == 1, "%s: the merge's thread did not start again", path);
		const struct arr_event *ev;
		size_t n;
		CHECK(arr__merge_next_block(m, &ev, &n) == (r.n ? 1 : r.rc), "%s: no first block", path);
		arr_merge_close(m);
		arr_trace_close(tr);
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
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--inline"))) {
		fprintf(stderr, "usage: blocks TRACE WORKDIR [--inline]\n");
		return 2;
	}
	const char *path = argv[1];
	size_t chunks = count_chunks(path);
	CHECK((chunks >= 4) == (argc == 3), "%s: %zu chunks%s", path, chunks,
	      argc == 3 ? ": too few for the merge's thread" : ", --inline wants fewer than 4");
	check_all(path, chunks >= 4);
	if (argc == 4)
		return 0;
	FILE *f = fopen(path, "rb");
	CHECK(f, "cannot open '%s'", path);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	char cut[4096], spoiled[4096];
	snprintf(cut, sizeof cut, "%s/blocks-cut.atr", argv[2]);
	snprintf(spoiled, sizeof spoiled, "%s/blocks-spoiled.atr", argv[2]);
	copy_trace(path, cut, size / 5 * 3, 0);
	copy_trace(path, spoiled, size, size / 2);
	check_all(cut, count_chunks(cut) >= 4);
	check_all(spoiled, count_chunks(spoiled) >= 4);
	printf("blocks: ok\n");
	return 0;
}

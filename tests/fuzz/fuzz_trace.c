/*
 * fuzz_trace.c - fuzz target for the trace reader: header, chunk framing,
 * column decoding and the time-ordered merge, on arbitrary bytes; the
 * merge's batches and its blocks (on the merge's own thread) must hand out
 * what one event at a time does.
 * Built for libFuzzer with -DALLOCRR_FUZZ=ON (clang), and always as a
 * standalone driver (driver.c) that ctest runs over the seed corpus plus
 * mutations, so every CI run exercises it under ASan.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "allocrr/trace.h"
#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fold of every field and string of an event, to compare two passes. */
static uint64_t fold(uint64_t h, const struct arr_event *ev)
{
	const uint64_t v[] = {ev->t,    ev->size, ev->nmemb, ev->align,  ev->ptr,
			      ev->ret,  ev->tid,  ev->op,    ev->failed, (uint64_t)(uint32_t)ev->err,
			      ev->stack};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		h = (h ^ v[i]) * 0x100000001b3ull;
	for (const char *c = ev->str; c && *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	return h;
}

/* The time-ordered merge one event at a time: events, their fold, the end code. */
struct pass {
	uint64_t n, h;
	int rc;
	uint64_t off; /* the reader's error offset at the end */
};

static struct pass merge_one(const char *path)
{
	struct pass p = {0, 0, 1, 0};
	struct arr_trace *tr;
	struct arr_merge *m;
	if (arr_trace_open(&tr, path) == 0 && arr_merge_open(&m, tr) == 0) {
		const struct arr_event *ev;
		FILE *null = fopen("/dev/null", "w");
		while ((p.rc = arr_merge_next(m, &ev)) == 1) {
			p.n++;
			p.h = fold(p.h, ev);
			if (null)
				arr_event_fprint_json(null, ev);
		}
		if (null)
			fclose(null);
		p.off = arr_trace_error_offset(tr);
		arr_merge_close(m);
	}
	arr_trace_close(tr);
	return p;
}

/* The same through the batches the analysis reads (arr__merge_next_batch),
 * with a buffer and a long-run bound taken from the input: it must hand out
 * the same events and end the same way. */
static struct pass merge_batches(const char *path, size_t cap, size_t long_run)
{
	struct pass p = {0, 0, 1, 0};
	struct arr_trace *tr;
	struct arr_merge *m;
	struct arr_event *buf = malloc(cap * sizeof *buf);
	if (buf && arr_trace_open(&tr, path) == 0 && arr_merge_open(&m, tr) == 0) {
		const struct arr_event *ev;
		size_t n;
		while ((p.rc = arr__merge_next_batch(m, buf, cap, long_run, &ev, &n)) == 1) {
			if (n == 0)
				abort(); /* a batch holds at least one event */
			for (size_t i = 0; i < n; i++) {
				p.n++;
				p.h = fold(p.h, &ev[i]);
			}
		}
		arr_merge_close(m);
	}
	if (buf)
		arr_trace_close(tr);
	free(buf);
	return p;
}

/* The same through the blocks of the merge's thread (inline below 4 chunks),
 * started after lead events (taken from the input): the same events, end
 * code and error offset. */
static struct pass merge_blocks(const char *path, size_t lead)
{
	struct pass p = {0, 0, 1, 0};
	struct arr_trace *tr;
	struct arr_merge *m;
	if (arr_trace_open(&tr, path) == 0 && arr_merge_open(&m, tr) == 0) {
		const struct arr_event *ev;
		size_t n = 1;
		/* lead events one at a time first: the thread starts mid-stream, as the analysis's does */
		for (size_t k = 0; k < lead && (p.rc = arr_merge_next(m, &ev)) == 1; k++) {
			p.n++;
			p.h = fold(p.h, ev);
		}
		int on = arr__merge_open_blocks(m);
		while ((lead == 0 || p.rc == 1) &&
		       (p.rc = on ? arr__merge_next_block(m, &ev, &n) : arr_merge_next(m, &ev)) == 1) {
			if (n == 0)
				abort(); /* a block holds at least one event */
			for (size_t i = 0; i < n; i++) {
				p.n++;
				p.h = fold(p.h, &ev[i]);
			}
		}
		arr__merge_close_blocks(m);
		p.off = arr_trace_error_offset(tr);
		arr_merge_close(m);
	}
	arr_trace_close(tr);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The reader works on files: give it one in memory. */
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct arr_trace *tr;
	if (arr_trace_open(&tr, path) == 0) {
		struct arr_chunk_info ci;
		const struct arr_event *ev;
		while (arr_trace_next_chunk(tr, &ci) == 1)
			if (arr_trace_read_chunk(tr, &ev) < 0)
				break;
	}
	arr_trace_close(tr);
	struct pass one = merge_one(path);
	size_t cap = size ? (size_t)data[size - 1] % 64 + 1 : 1;
	size_t long_run = size > 1 ? (size_t)data[size - 2] % 80 + 1 : 64;
	struct pass batches = merge_batches(path, cap, long_run);
	if (one.n != batches.n || one.h != batches.h || one.rc != batches.rc) {
		fprintf(stderr,
			"fuzz_trace: the batches differ from one event at a time: %llu/%llu events, "
			"end %d/%d (buffer %zu, long run %zu)\n",
			(unsigned long long)one.n, (unsigned long long)batches.n, one.rc, batches.rc, cap, long_run);
		abort();
	}
	struct pass blocks = merge_blocks(path, size > 2 ? (size_t)data[size - 3] % 4 * 100 : 0);
	if (one.n != blocks.n || one.h != blocks.h || one.rc != blocks.rc || one.off != blocks.off) {
		fprintf(stderr,
			"fuzz_trace: the blocks differ from one event at a time: %llu/%llu events, "
			"end %d/%d at %llu/%llu\n",
			(unsigned long long)one.n, (unsigned long long)blocks.n, one.rc, blocks.rc,
			(unsigned long long)one.off, (unsigned long long)blocks.off);
		abort();
	}
	close(fd);
	return 0;
}

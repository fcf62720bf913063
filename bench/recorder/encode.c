/*
 * encode.c - the recorder's background cost per event: encoding raw
 * records into chunks at each zstd level, on the events of a real trace.
 *   bench-encode TRACE [MAX_EVENTS]
 * Prints ns/event and bytes/event per level, and the reader's decode rate.
 * Environment: LEVEL=N (one level only), CHECK=1 (print a hash of the
 * output of each level: equal hashes, equal chunks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocrr/trace.h"
#include "writer.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Raw words of one event, as the recorder lays them out. */
static unsigned to_raw(const struct arr_event *e, uint64_t *w)
{
	unsigned n = 1;
	switch (e->op) {
	case ARR_OP_MALLOC:
	case ARR_OP_VALLOC:
	case ARR_OP_PVALLOC:
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_CALLOC:
		w[n++] = e->nmemb;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_POSIX_MEMALIGN:
	case ARR_OP_ALIGNED_ALLOC:
	case ARR_OP_MEMALIGN:
		w[n++] = e->align;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_REALLOC:
		w[n++] = e->ptr;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_REALLOCARRAY:
		w[n++] = e->ptr;
		w[n++] = e->nmemb;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_FREE:
	case ARR_OP_FORK:
		w[n++] = e->ptr;
		break;
	case ARR_OP_RSS:
		w[n++] = e->size;
		break;
	case ARR_OP_EXEC:
		w[n++] = 0;
		break;
	}
	if (e->failed)
		w[n++] = (uint64_t)(uint32_t)e->err;
	w[0] = ARR_RAW_W0(e->op, e->failed, e->t);
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-encode TRACE [MAX_EVENTS]\n");
		return 2;
	}
	size_t max = argc > 2 ? strtoull(argv[2], 0, 10) : 5000000;
	struct arr_trace *tr;
	if (arr_trace_open(&tr, argv[1])) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		return 1;
	}
	size_t cap = max * 6 + 16, nw = 0, nev = 0;
	uint64_t *raw = malloc(cap * 8);
	struct arr_chunk_info ci;
	/* decode alone: the reader's rate, best of 3 passes */
	double decode = 1e30;
	for (int pass = 0; pass < 3; pass++) {
		arr_trace_rewind(tr);
		size_t n = 0;
		double t0 = now();
		while (n < max && arr_trace_next_chunk(tr, &ci) == 1) {
			const struct arr_event *ev;
			int k = arr_trace_read_chunk(tr, &ev);
			if (k < 0)
				break;
			n += (size_t)k;
		}
		double dt = (now() - t0) / (double)n;
		if (dt < decode)
			decode = dt;
	}
	arr_trace_rewind(tr);
	while (nev < max && arr_trace_next_chunk(tr, &ci) == 1) {
		const struct arr_event *ev;
		int n = arr_trace_read_chunk(tr, &ev);
		for (int i = 0; i < n && nev < max; i++, nev++)
			nw += to_raw(&ev[i], raw + nw);
	}
	arr_trace_close(tr);
	printf("| events | %zu |\n| read + decode | %.1f M events/s |\n", nev, 1e-6 / decode);
	const size_t chunk_words = 256 * 1024 / 8;
	/* CHECK=1: also print a hash of the encoded bytes (not timed fairly),
	 * to show that a change to the encoder keeps its output identical. */
	const int check = getenv("CHECK") != NULL;
	int lo = -1, hi = 3;
	if (getenv("LEVEL"))
		lo = hi = atoi(getenv("LEVEL"));
	for (int level = lo; level <= hi; level++) {
		if (level == 0 && lo != hi)
			continue;
		struct arr_mem mem = ARR_MEM_HEAP;
		struct arr_encoder enc;
		arr__encoder_init(&enc, &mem, chunk_words, level, 16);
		size_t ocap = arr__encoder_bound(&enc);
		uint8_t *out = malloc(ocap);
		size_t bytes = 0;
		uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a of every chunk */
		double t1 = now();
		for (size_t i = 0; i < nw;) {
			/* cut on record boundaries, as a full buffer would be */
			size_t j = i, end = i + chunk_words < nw ? i + chunk_words : nw;
			while (j < end && j + arr__raw_words(raw + j) <= end)
				j += arr__raw_words(raw + j);
			long len = arr__encode_events(&enc, 1, raw + i, j - i, out, ocap);
			if (len < 0) {
				fprintf(stderr, "encode failed: %ld\n", len);
				return 1;
			}
			bytes += (size_t)len;
			if (check)
				for (long k = 0; k < len; k++)
					hash = (hash ^ out[k]) * 0x100000001b3ull;
			i = j;
		}
		double dt = now() - t1;
		printf("| zstd level %d | %.1f ns/event, %.3f bytes/event |\n", level, dt / nev * 1e9,
		       (double)bytes / nev);
		if (check)
			printf("| output hash, level %d | %016llx |\n", level, (unsigned long long)hash);
		free(out);
		arr__encoder_release(&enc);
	}
	free(raw);
	return 0;
}

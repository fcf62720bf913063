/*
 * overlap_trace.c OUT N - write a small hostile trace: N events chunks of
 * 2^20 mallocs each (a few hundred bytes apiece, compressed), all over the
 * same time range, so a time-ordered merge must hold every one of them
 * decoded at once (N x 2^20 events). Readers must refuse it past their
 * documented memory limit instead of growing without bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: overlap_trace OUT N\n"), 2;
	int nchunks = atoi(argv[2]);
	size_t nev = ARR_CHUNK_EVENTS_MAX, words = nev * 3;
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	if (arr__encoder_init(&enc, &mem, words, 3, 16))
		return fprintf(stderr, "overlap_trace: encoder\n"), 1;
	size_t cap = arr__encoder_bound(&enc);
	uint8_t *out = malloc(cap);
	uint64_t *raw = malloc(words * 8);
	FILE *f = fopen(argv[1], "wb");
	if (!out || !raw || !f)
		return fprintf(stderr, "overlap_trace: cannot write '%s'\n", argv[1]), 1;
	struct arr_header_info hi = {.pid = 1, .page_size = 4096, .time_unit_ns = 16, .exe = "/overlap"};
	long n = arr__encode_header(&hi, out, cap);
	fwrite(out, 1, (size_t)n, f);
	for (size_t i = 0; i < nev; i++) { /* malloc(16) at t = i * 16 ns, all returning one address */
		raw[3 * i] = ARR_RAW_W0(ARR_OP_MALLOC, 0, i * 16);
		raw[3 * i + 1] = 16;
		raw[3 * i + 2] = 0x10000;
	}
	long len = arr__encode_events(&enc, 1, raw, words, out, cap);
	if (len <= 0)
		return fprintf(stderr, "overlap_trace: encode %ld\n", len), 1;
	for (int c = 0; c < nchunks; c++) {
		uint32_t tid = 100 + (uint32_t)c; /* the chunk's tid, first field of its header */
		memcpy(out + ARR_CHUNK_PREFIX, &tid, 4);
		fwrite(out, 1, (size_t)len, f);
	}
	size_t en = arr__encode_end(out, ARR_END_EXIT, 0, nev * 16, nev * (uint64_t)nchunks);
	fwrite(out, 1, en, f);
	return fclose(f) ? 1 : 0;
}

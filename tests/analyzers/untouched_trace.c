/*
 * untouched_trace.c OUT - write a trace whose first RSS sample comes after
 * a large block is allocated and before it is written, as `sort` does with
 * its 8 MiB buffer: live bytes above RSS at the first sample, so RSS - live
 * there (the baseline the unexplained growth counts from) is negative.
 * (times in ns)
 *   t = 100:   malloc(64 MiB)      (thread 1)
 *   t = 200:   RSS 3 MiB           (the first sample: 61 MiB below live)
 *   t = 300+:  1000 x malloc(1000)
 *   t = 5000:  RSS 70 MiB          (the buffer written, 5.05 MiB unexplained)
 *   t = 6000:  RSS 71 MiB          (6.05 MiB unexplained: the largest)
 *   t = 7000:  free of the 64 MiB block, RSS 7 MiB at 8000
 * Exact answers: unexplained_peak = 71 MiB - 64 MiB - 1000 x 1000 B, at
 * t = 6000 ns; baseline = 3 MiB - 64 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

#define MiB (1ull << 20)

static int put_chunk(FILE *f, struct arr_encoder *enc, unsigned tid, const uint64_t *w, size_t n, uint8_t *buf,
		     size_t cap)
{
	long len = arr__encode_events(enc, tid, w, n, buf, cap);
	return len <= 0 || fwrite(buf, 1, (size_t)len, f) != (size_t)len ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return fprintf(stderr, "usage: untouched_trace OUT\n"), 2;
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	FILE *f = fopen(argv[1], "wb");
	if (!f || arr__encoder_init(&enc, &mem, 4096, 3, 16))
		return fprintf(stderr, "untouched_trace: cannot write '%s'\n", argv[1]), 1;
	size_t cap = arr__encoder_bound(&enc);
	uint8_t *buf = malloc(cap);
	uint64_t *w = malloc(4096 * 3 * 8);
	if (!buf || !w)
		return fprintf(stderr, "untouched_trace: out of memory\n"), 1;
	struct arr_header_info hi = {.pid = 1, .page_size = 4096, .time_unit_ns = 16, .exe = "/untouched"};
	long hl = arr__encode_header(&hi, buf, cap);
	if (hl <= 0 || fwrite(buf, 1, (size_t)hl, f) != (size_t)hl)
		return fprintf(stderr, "untouched_trace: header\n"), 1;
	size_t n = 0;
	const uint64_t big = 0x7f0000000000ull;
	w[n++] = ARR_RAW_W0(ARR_OP_MALLOC, 0, 100);
	w[n++] = 64 * MiB;
	w[n++] = big;
	for (uint64_t i = 0; i < 1000; i++) {
		w[n++] = ARR_RAW_W0(ARR_OP_MALLOC, 0, 300 + i);
		w[n++] = 1000;
		w[n++] = 0x10000000ull + i * 1024;
	}
	w[n++] = ARR_RAW_W0(ARR_OP_FREE, 0, 7000);
	w[n++] = big;
	if (put_chunk(f, &enc, 1, w, n, buf, cap))
		return fprintf(stderr, "untouched_trace: encode\n"), 1;
	static const uint64_t rss[][2] = {{200, 3 * MiB}, {5000, 70 * MiB}, {6000, 71 * MiB}, {8000, 7 * MiB}};
	n = 0;
	for (size_t i = 0; i < sizeof rss / sizeof rss[0]; i++) {
		w[n++] = ARR_RAW_W0(ARR_OP_RSS, 0, rss[i][0]);
		w[n++] = rss[i][1];
	}
	if (put_chunk(f, &enc, 0, w, n, buf, cap))
		return fprintf(stderr, "untouched_trace: encode\n"), 1;
	size_t en = arr__encode_end(buf, ARR_END_EXIT, 0, 9000, 1002);
	int bad = fwrite(buf, 1, en, f) != en;
	arr__encoder_release(&enc);
	free(buf);
	free(w);
	return fclose(f) || bad ? 1 : 0;
}

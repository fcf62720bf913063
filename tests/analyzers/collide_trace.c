/*
 * collide_trace.c OUT N - write a trace whose addresses crowd the end of
 * the analysis's live set: N mallocs, one in COLLIDE of them at an address
 * whose hash (analyzers/core.c, live_slot) falls in the last 300 slots of
 * every table size up to 2^24 slots, the rest spread; then every block
 * freed in a scrambled order except each 1000th. Each doubling of the
 * table then has a probe run that wraps from its end to slot 0, the case
 * the in-place rehash sets aside (and, past LIVE_DEFER such entries, the
 * case where it falls back to a copy). The addresses are not a real
 * program's: the point is the hash, which a real heap cannot be steered to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

#define G 0x9E3779B97F4A7C15ull /* live_slot's multiplier */
#define COLLIDE 160
#define CHUNK 65536 /* events a chunk */

static uint64_t inverse(uint64_t a) /* of an odd number, mod 2^64 (Newton) */
{
	uint64_t x = a;
	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

struct out {
	FILE *f;
	struct arr_encoder enc;
	uint8_t *buf;
	size_t cap;
	uint64_t *raw;
	size_t nw, nev;
};

static int flush(struct out *o)
{
	if (!o->nw)
		return 0;
	long len = arr__encode_events(&o->enc, 1, o->raw, o->nw, o->buf, o->cap);
	if (len <= 0 || fwrite(o->buf, 1, (size_t)len, o->f) != (size_t)len)
		return -1;
	o->nw = o->nev = 0;
	return 0;
}

static int put(struct out *o, const uint64_t *w, size_t n)
{
	memcpy(o->raw + o->nw, w, n * 8);
	o->nw += n;
	return ++o->nev == CHUNK ? flush(o) : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: collide_trace OUT N\n"), 2;
	size_t n = (size_t)atol(argv[2]);
	struct arr_mem mem = ARR_MEM_HEAP;
	struct out o = {.f = fopen(argv[1], "wb")};
	if (!o.f || arr__encoder_init(&o.enc, &mem, CHUNK * 3, 3, 16))
		return fprintf(stderr, "collide_trace: cannot write '%s'\n", argv[1]), 1;
	o.cap = arr__encoder_bound(&o.enc);
	o.buf = malloc(o.cap);
	o.raw = malloc(CHUNK * 3 * 8);
	uint64_t *key = malloc(n * sizeof *key);
	if (!o.buf || !o.raw || !key)
		return fprintf(stderr, "collide_trace: out of memory\n"), 1;
	struct arr_header_info hi = {.pid = 1, .page_size = 4096, .time_unit_ns = 16, .exe = "/collide"};
	long hl = arr__encode_header(&hi, o.buf, o.cap);
	if (hl <= 0 || fwrite(o.buf, 1, (size_t)hl, o.f) != (size_t)hl)
		return fprintf(stderr, "collide_trace: header\n"), 1;
	uint64_t ginv = inverse(G), t = 0, seed = 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t x;
		if (i % COLLIDE == 0) {
			/* x * G >> 20 must end in 24 one-bits less r: pick x from the
			 * product. Every other one has bit L clear: at the doubling from
			 * 2^L slots it stays in the old half, in the run that wraps to
			 * slot 0, while the others go to the new half's end. */
			uint64_t r = i / COLLIDE % 300, c = i / COLLIDE;
			uint64_t low = ((1u << 24) - 1 - r) & (c & 1 ? ~(1ull << (16 + c / 2 % 4)) : ~0ull);
			do {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				uint64_t h = (seed >> 24 << 24) | low; /* 44 bits of hash */
				x = ginv * (h << 20 | (seed & 0xfffff));
			} while (x >> 60 || !x);
		} else {
			x = (i + 1) * 0x5851F42D4C957F2Dull & ((1ull << 60) - 1); /* distinct for distinct i */
		}
		key[i] = x << 4;
		uint64_t w[3] = {ARR_RAW_W0(ARR_OP_MALLOC, 0, t), 16, key[i]};
		t += 16;
		if (put(&o, w, 3))
			return fprintf(stderr, "collide_trace: encode\n"), 1;
	}
	size_t k = 7919; /* frees in the order i * k mod n, k coprime to n */
	for (;; k += 2) {
		size_t a = n, b = k;
		while (b) {
			size_t r = a % b;
			a = b;
			b = r;
		}
		if (a == 1)
			break;
	}
	size_t freed = 0;
	for (size_t j = 0; j < n; j++) {
		size_t i = (size_t)((unsigned __int128)j * k % n);
		if (i % 1000 == 0)
			continue;
		uint64_t w[2] = {ARR_RAW_W0(ARR_OP_FREE, 0, t), key[i]};
		t += 16;
		freed++;
		if (put(&o, w, 2))
			return fprintf(stderr, "collide_trace: encode\n"), 1;
	}
	if (flush(&o))
		return fprintf(stderr, "collide_trace: encode\n"), 1;
	size_t en = arr__encode_end(o.buf, ARR_END_EXIT, 0, t, n + freed);
	int bad = fwrite(o.buf, 1, en, o.f) != en;
	arr__encoder_release(&o.enc);
	free(o.buf);
	free(o.raw);
	free(key);
	return fclose(o.f) || bad ? 1 : 0;
}

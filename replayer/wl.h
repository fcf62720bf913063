/*
 * wl.h - the workload file's layout, shared by the writer (prepare.c) and
 * the reader (run.c). Normative description in docs/replay.md.
 *
 * File:  header (struct wl_header, fixed size) | blocks | footer.
 * checksum = XXH3-64 of the header with checksum = 0, seeded with the XXH3-64
 * of everything after the header: any changed byte makes the cache stale.
 * trace_hash is the XXH3-64 of the whole trace, so a trace changed anywhere
 * (even with its size and mtime kept) is prepared again.
 * Footer (at header.footer_offset): nthreads u64 recorded tids, then
 * nblocks struct wl_block. A block holds whole entries of one stream;
 * stream i < nthreads is thread i's op stream, stream nthreads the schedule
 * (varint pairs: thread, entries to run), used by serial replay only.
 *
 * An entry: one op byte, then varints (prefix varints, below).
 *   op byte low 4 bits: a call (ARR_OP_MALLOC..ARR_OP_REALLOCARRAY) or
 *   WL_SYNC; flags WL_F_FAILED (recorded failure: no new object), WL_F_KILL
 *   (realloc that freed: glibc's realloc(p, 0)), WL_F_SRC (free/realloc of a
 *   live object: its id follows; without it the pointer is NULL).
 *   malloc, valloc, pvalloc      [id] size
 *   calloc                       [id] nmemb size
 *   posix_memalign, aligned_alloc, memalign   [id] align size
 *   free                         [id if SRC]
 *   realloc                      [src if SRC] [dst if !SRC && !FAILED] size
 *   reallocarray                 same, nmemb before size
 *   sync                         id version
 * [id] is present unless FAILED. Every entry naming a slot adds one to the
 * slot's version; a sync waits until the slot's version equals its value.
 *
 * Varints (version 3) are prefix varints: the first byte's trailing zero
 * count says how many bytes follow, so the engine decodes one with a load,
 * a count and two shifts, without a branch on the length (LEB128 costs a
 * mispredicted branch whenever values straddle 128):
 *   n = 1..8 bytes: the little-endian n-byte word is (v << n) | 1 << (n - 1),
 *                   v < 2^(7n);
 *   9 bytes:        0x00, then v as a little-endian u64.
 * Readers load 8 bytes at a time: buffers carry WL_ENTRY_MAX bytes of slack
 * after a block, and an entry is checked against the block's end once
 * decoded (an entry is at most 1 + 4 * 9 bytes).
 */
#ifndef ARR_REPLAYER_WL_H
#define ARR_REPLAYER_WL_H

#include <stdint.h>
#include <string.h>

#include "allocrr/compiler.h"
#include "allocrr/replay.h"

#define WL_MAGIC 0x0a314c5752524c41ull /* "ALRRWL1\n" */
#define WL_SYNC 11
#define WL_OPMASK 0x0f
#define WL_F_FAILED 0x10
#define WL_F_KILL 0x20
#define WL_F_SRC 0x40
#define WL_BLOCK 65536  /* a block's payload never exceeds this */
#define WL_ENTRY_MAX 64 /* bytes of the largest entry, plus a load's overrun */

struct wl_header {
	uint64_t magic;
	uint64_t version;
	uint64_t header_size;
	uint64_t nthreads;
	uint64_t nblocks;
	uint64_t footer_offset;
	uint64_t trace_size, trace_mtime_ns, trace_hash;
	uint64_t calls, syncs, events, nslots, ideal_rss, peak_live_blocks;
	uint64_t ops[ARR_OP_MAX_];
	uint64_t repairs[ARR_REPAIR_COUNT_];
	uint64_t entries[1]; /* total entries; per stream in the blocks */
	uint64_t checksum;
	uint64_t truncated_at;           /* where the trace was cut (built with --partial), 0 = whole */
	uint64_t recorded_peak_rss;      /* largest RSS sample of the trace, 0 = none */
	uint64_t recorded_true_peak_rss; /* largest rss_peak event, 0 = none (and in older workloads) */
	uint64_t reserved[12];
};

struct wl_block {
	uint64_t offset;
	uint32_t stream;
	uint32_t len;
	uint32_t entries;
	uint32_t reserved;
};

static inline uint64_t wl_load64(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline void wl_store64(uint8_t *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	memcpy(p, &w, 8);
}

/* Write v at p (which has 9 bytes of room; 8 are always stored). */
static inline uint8_t *wl_put(uint8_t *p, uint64_t v)
{
	/* bytes for a value of 64 - i significant bits */
	static const uint8_t len[64] = {10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
					6,  6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 3,
					3,  3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};
	unsigned n = len[__builtin_clzll(v | 1)];
	if (n > 8) {
		*p = 0;
		wl_store64(p + 1, v);
		return p + 9;
	}
	wl_store64(p, (v << n) | 1ull << (n - 1));
	return p + n;
}

/* Read a varint at p (8 readable bytes at p, 9 after a zero byte). */
static inline const uint8_t *wl_get(const uint8_t *p, uint64_t *v)
{
	uint64_t w = wl_load64(p);
	if (ARR_UNLIKELY(!(w & 0xff))) {
		*v = wl_load64(p + 1);
		return p + 9;
	}
	static const uint64_t mask[9] = {0,
					 (1ull << 7) - 1,
					 (1ull << 14) - 1,
					 (1ull << 21) - 1,
					 (1ull << 28) - 1,
					 (1ull << 35) - 1,
					 (1ull << 42) - 1,
					 (1ull << 49) - 1,
					 (1ull << 56) - 1};
	unsigned n = (unsigned)__builtin_ctzll(w) + 1;
	*v = (w >> n) & mask[n];
	return p + n;
}

/* The trace's size, mtime and XXH3-64 of all its bytes: the cache key. */
int arr__wl_trace_identity(const char *trace_path, uint64_t *size, uint64_t *mtime_ns, uint64_t *hash);

#endif

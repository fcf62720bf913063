/*
 * wl.h - the workload file's layout, shared by the writer (prepare.c) and
 * the reader (run.c). Normative description in docs/replay.md.
 *
 * File:  header (struct wl_header, fixed size) | blocks | footer.
 * Footer (at header.footer_offset): nthreads u64 recorded tids, then
 * nblocks struct wl_block. A block holds whole entries of one stream;
 * stream i < nthreads is thread i's op stream, stream nthreads the schedule
 * (varint pairs: thread, entries to run), used by serial replay only.
 *
 * An entry: one op byte, then varints.
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
 */
#ifndef ARR_REPLAYER_WL_H
#define ARR_REPLAYER_WL_H

#include <stdint.h>

#include "allocrr/replay.h"

#define WL_MAGIC 0x0a314c5752524c41ull /* "ALRRWL1\n" */
#define WL_SYNC 11
#define WL_OPMASK 0x0f
#define WL_F_FAILED 0x10
#define WL_F_KILL 0x20
#define WL_F_SRC 0x40
#define WL_BLOCK 65536      /* a block's payload never exceeds this */
#define WL_ENTRY_MAX 64     /* bytes of the largest entry */

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
	uint64_t reserved[16];
};

struct wl_block {
	uint64_t offset;
	uint32_t stream;
	uint32_t len;
	uint32_t entries;
	uint32_t reserved;
};

/* FNV-1a of the trace's first 4 KiB, its size and mtime: the cache key. */
int arr__wl_trace_identity(const char *trace_path, uint64_t *size, uint64_t *mtime_ns, uint64_t *hash);

#endif

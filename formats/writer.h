/*
 * writer.h - the writer side of trace format v1, for the recorder.
 *
 * The recorder appends raw records (a few 64-bit words each, see ARR_RAW_*)
 * to per-thread buffers on the program's hot path; this module turns a run of
 * one thread's raw records into one complete events chunk (columns, varints,
 * zstd frame with checksum) away from the hot path, and writes the file
 * header and the END chunk.
 *
 * Contract: nothing here calls malloc. All memory comes from the arr_mem
 * callbacks given to arr__encoder_init() (the recorder passes mmap-backed
 * ones so the traced program's heap is never touched). Functions return a
 * byte count or a negative ARR_E* code.
 */
#ifndef ARR_WRITER_H
#define ARR_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "allocrr/trace.h"
#include "format.h"

/*
 * Raw record: w0 = t | op << 56 | failed << 61, where t is a 56-bit
 * timestamp (ticks since the recording started, mapped to ns by the
 * encoder's clock map, or ns when there is none), then the op's argument
 * words, then - only when the call failed - one word holding errno (for
 * posix_memalign: its result). Arguments, in order:
 *   malloc, valloc, pvalloc      size, ret
 *   calloc                       nmemb, size, ret
 *   realloc                      ptr, size, ret
 *   reallocarray                 ptr, nmemb, size, ret
 *   free                         ptr
 *   posix_memalign, aligned_alloc, memalign   align, size, ret
 *   thread_start, thread_exit    -
 *   fork                         child pid (as int64)
 *   rss                          bytes
 *   exec, mark                   length, then the bytes padded to words
 * A malloc is three words, a free two: the hot path stores little.
 */
#define ARR_RAW_TMASK ((1ull << 56) - 1)
#define ARR_RAW_W0(op, failed, t) (((uint64_t)(t)&ARR_RAW_TMASK) | (uint64_t)(op) << 56 | (uint64_t)(failed) << 61)
#define ARR_RAW_OP(w0) ((unsigned)((w0) >> 56) & 0x1f)
#define ARR_RAW_FAILED(w0) ((unsigned)((w0) >> 61) & 1)
#define ARR_RAW_T(w0) ((w0)&ARR_RAW_TMASK)
#define ARR_RAW_MAX_WORDS 256
/*
 * Stacks (format 1.2). A record whose w0 has ARR_RAW_HAS_STACK carries one
 * more word at its very end: the stack id of the call (0: none). Two record
 * kinds are not events and go to chunks of their own:
 *   ARR_RAW_STACKS   t field = n; then n pairs (id | parent << 32, address):
 *                    new stack nodes, written before the first use of each
 *   ARR_RAW_MODULE   t field = time; base, size, lengths (build id | path
 *                    << 8 | kind << 24), then build id and path bytes
 *                    padded to words
 */
#define ARR_RAW_HAS_STACK (1ull << 62)
#define ARR_RAW_STACKS 30
#define ARR_RAW_MODULE 29
#define ARR_RAW_MAX_NODES ((ARR_RAW_MAX_WORDS - 1) / 2)

/* Words of the record at w, or 0 if w[0] is no record. */
static inline size_t arr__raw_words(const uint64_t *w)
{
	unsigned op = ARR_RAW_OP(w[0]);
	if (op == ARR_RAW_STACKS)
		return 1 + 2 * (size_t)(ARR_RAW_T(w[0]) & 0xff);
	if (op == ARR_RAW_MODULE)
		return 4 + ((w[3] & 0xff) + ((w[3] >> 8) & 0xffff) + 7) / 8;
	int args = arr_op_raw_args(op);
	if (args < 0)
		return 0;
	size_t n = 1 + (size_t)args + ARR_RAW_FAILED(w[0]) + ((w[0] & ARR_RAW_HAS_STACK) != 0);
	if (arr_op_facts(op) & ARR_OPF_STR)
		n += (w[1] + 7) / 8;
	return n;
}

struct arr_mem {
	void *(*alloc)(size_t size, void *ctx); /* zeroed memory or NULL */
	void (*free)(void *p, size_t size, void *ctx);
	void *ctx;
};

/* Memory from the C heap, for the tools, tests and benchmarks that write
 * traces themselves (never in the recorder, which must not call malloc). */
static inline void *arr__heap_alloc(size_t size, void *ctx)
{
	(void)ctx;
	return calloc(1, size);
}
static inline void arr__heap_free(void *p, size_t size, void *ctx)
{
	(void)ctx;
	(void)size;
	free(p);
}
#define ARR_MEM_HEAP ((struct arr_mem){arr__heap_alloc, arr__heap_free, NULL})

/* The chunk-local cache from address to allocation (or free) number:
 * direct-mapped, ARR_ENC_MAP_SLOTS slots (encode.c), each the address's low
 * 48 bits over a 16-bit number, so it stays in L1. */
struct arr_encoder {
	void *cctx; /* ZSTD_CCtx */
	struct arr_mem mem;
	unsigned time_shift; /* stored time unit = 1 << time_shift ns */
	/* Optional clock map applied to raw timestamps while encoding:
	 * ns = ((t - t_base) * t_mult) >> 32; t_mult == 0 means t is in ns. */
	uint64_t t_base, t_mult;
	size_t max_words;
	size_t col_cap;
	uint8_t *col[ARR_NCOLS_MAX];
	uint8_t *payload;
	size_t payload_cap;
	uint64_t *map;
	uint32_t hmask;
	int stacks;            /* write the stack column (a trace recorded with stacks) */
	uint32_t last_nevents; /* events in the chunk arr__encode_events wrote last */
	uint8_t *aux[2];       /* stack nodes, module entries of the run being encoded */
};

/* Prepare an encoder for runs of at most max_words raw words; time_unit
 * (ns) must be a power of two. */
int arr__encoder_init(struct arr_encoder *enc, const struct arr_mem *mem, size_t max_words, int level,
		      uint32_t time_unit);
void arr__encoder_release(struct arr_encoder *enc);
/* Room needed in `out` for a chunk made from max_words raw words. */
size_t arr__encoder_bound(const struct arr_encoder *enc);
/*
 * Encode nwords raw words of thread tid into one events chunk at out, preceded
 * by a stacks chunk and a modules chunk when the run holds such records
 * (then the run may hold no event, and only those are written).
 * Timestamps (after the clock map) are ns since start; a timestamp below
 * its predecessor is raised to it. Returns the chunk's size in bytes, or a
 * negative code.
 */
long arr__encode_events(struct arr_encoder *enc, uint32_t tid, const uint64_t *words, size_t nwords, uint8_t *out,
			size_t out_cap);

/* Metadata to put in the file header. */
struct arr_header_info {
	int64_t pid, ppid;
	uint64_t realtime_ns, monotonic_ns, page_size;
	uint32_t time_unit_ns;
	uint64_t features;
	const char *exe, *libc, *recorder, *parent_trace;
	const char *argv; /* NUL-separated, argv_len bytes */
	size_t argv_len;
	uint64_t stack_sample_bytes; /* --stack-sample: written when not 0 */
};
/* Write the file header into out. Returns its size or ARR_ERANGE. */
long arr__encode_header(const struct arr_header_info *info, uint8_t *out, size_t cap);
/* Write an END chunk (ARR_CHUNK_PREFIX + ARR_END_BODY bytes). */
size_t arr__encode_end(uint8_t *out, unsigned reason, int status, uint64_t t, uint64_t events);

#endif

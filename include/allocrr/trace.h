/*
 * allocrr/trace.h - the trace format's public API: operations, events, the
 * streaming reader and the time-ordered merge.
 *
 * Glossary
 *   trace   one file written by one process image (docs/trace-format.md).
 *   chunk   a size-prefixed record of the file; an events chunk holds the
 *           events of one thread, compressed as one zstd frame.
 *   event   one recorded call (malloc, free, ...) or process happening
 *           (thread start, fork, RSS sample, ...), as struct arr_event.
 *   tid     kernel thread id; tid 0 is the process itself (RSS samples).
 *
 * Contract
 *   - Every function returns 0 (or a count) on success, a negative ARR_E*
 *     code or negated errno on failure (see allocrr/error.h).
 *   - The reader streams: memory is bounded by one chunk (a few MiB) per
 *     open reader, whatever the trace size.
 *   - On failure the reader records where: arr_trace_error_offset() gives
 *     the byte offset of the offending chunk, so callers can say
 *     "file 'x': trace is corrupted at offset 1234".
 *   - A truncated trace yields every complete chunk, then ARR_ETRUNCATED.
 */
#ifndef ALLOCRR_TRACE_H
#define ALLOCRR_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocrr/error.h"

#define ARR_TRACE_MAJOR 1
#define ARR_TRACE_MINOR 3 /* 1.1: mark events; 1.2: call stacks; 1.3: rss_peak events */

/*
 * Operations: the one table of what each recorded operation is. Values are
 * part of the on-disk format: never renumber. Columns:
 *   X(NAME, value, "name", raw argument words, facts)
 * raw argument words: what the recorder stores after the record's first
 * word (formats/writer.h; exec adds its string), facts: ARR_OPF_* below.
 * The argument words come in the order ptr, nmemb or align (or pid), size
 * (or amount), ret, each present when its fact is: the encoder and the
 * reader take their columns from the facts alone.
 * Everything else about an operation (does it allocate, free, how many
 * bytes does it ask for) is derived from this table: add an operation here
 * and in its hook, nowhere else.
 */
#define ARR_OPF_CALL 0x001    /* one of the ten allocation functions */
#define ARR_OPF_SIZE 0x002    /* takes a size */
#define ARR_OPF_NMEMB 0x004   /* takes nmemb: bytes = nmemb * size, overflow checked */
#define ARR_OPF_ALIGN 0x008   /* takes an alignment */
#define ARR_OPF_PTR 0x010     /* takes a block to release or resize */
#define ARR_OPF_RET 0x020     /* returns a new block */
#define ARR_OPF_ZERO 0x040    /* the new block reads as zeros (calloc) */
#define ARR_OPF_PAGE 0x080    /* rounds its size up to a page (pvalloc) */
#define ARR_OPF_STR 0x100     /* carries a string (exec path) */
#define ARR_OPF_PID 0x200     /* carries a process id (fork's child) */
#define ARR_OPF_AMOUNT 0x400  /* carries a byte count that is no request (rss) */
#define ARR_OPF_RC 0x800      /* err is the call's result, set even on success (posix_memalign) */
#define ARR_OPF_THREAD 0x1000 /* a thread's start or end: what replays make their threads from */
#define ARR_OPF_A_ (ARR_OPF_CALL | ARR_OPF_SIZE | ARR_OPF_RET)

#define ARR_OP_MAP(X)                                                                      \
	X(MALLOC, 1, "malloc", 2, ARR_OPF_A_)                                              \
	X(CALLOC, 2, "calloc", 3, ARR_OPF_A_ | ARR_OPF_NMEMB | ARR_OPF_ZERO)               \
	X(REALLOC, 3, "realloc", 3, ARR_OPF_A_ | ARR_OPF_PTR)                              \
	X(FREE, 4, "free", 1, ARR_OPF_CALL | ARR_OPF_PTR)                                  \
	X(POSIX_MEMALIGN, 5, "posix_memalign", 3, ARR_OPF_A_ | ARR_OPF_ALIGN | ARR_OPF_RC) \
	X(ALIGNED_ALLOC, 6, "aligned_alloc", 3, ARR_OPF_A_ | ARR_OPF_ALIGN)                \
	X(MEMALIGN, 7, "memalign", 3, ARR_OPF_A_ | ARR_OPF_ALIGN)                          \
	X(VALLOC, 8, "valloc", 2, ARR_OPF_A_)                                              \
	X(PVALLOC, 9, "pvalloc", 2, ARR_OPF_A_ | ARR_OPF_PAGE)                             \
	X(REALLOCARRAY, 10, "reallocarray", 4, ARR_OPF_A_ | ARR_OPF_PTR | ARR_OPF_NMEMB)   \
	X(THREAD_START, 16, "thread_start", 0, ARR_OPF_THREAD)                             \
	X(THREAD_EXIT, 17, "thread_exit", 0, ARR_OPF_THREAD)                               \
	X(FORK, 18, "fork", 1, ARR_OPF_PID)                                                \
	X(EXEC, 19, "exec", 1, ARR_OPF_STR)                                                \
	X(RSS, 20, "rss", 1, ARR_OPF_AMOUNT)                                               \
	X(MARK, 21, "mark", 1, ARR_OPF_STR)                                                \
	X(RSS_PEAK, 22, "rss_peak", 1, ARR_OPF_AMOUNT)

enum arr_op {
#define ARR_OP_ENUM(name, val, str, args, facts) ARR_OP_##name = val,
	ARR_OP_MAP(ARR_OP_ENUM)
#undef ARR_OP_ENUM
		ARR_OP_MAX_ = 32
};

/* Facts (ARR_OPF_*) of an operation; 0 for values that are not ops. */
static inline unsigned arr_op_facts(unsigned op)
{
	switch (op) {
#define ARR_OP_FACTS(name, val, str, args, facts) \
	case val:                                 \
		return (facts) | 0x8000u;
		ARR_OP_MAP(ARR_OP_FACTS)
#undef ARR_OP_FACTS
	}
	return 0;
}
/* True for values that are operations of this format version. */
static inline int arr_op_known(unsigned op) { return arr_op_facts(op) != 0; }
/* Raw argument words of an operation (formats/writer.h), -1 if unknown. */
static inline int arr_op_raw_args(unsigned op)
{
	switch (op) {
#define ARR_OP_ARGS(name, val, str, args, facts) \
	case val:                                \
		return args;
		ARR_OP_MAP(ARR_OP_ARGS)
#undef ARR_OP_ARGS
	}
	return -1;
}

/* Name of an operation ("malloc"), or NULL for an unknown value. */
const char *arr_op_name(unsigned op);
/* Operation for a name, or 0. */
unsigned arr_op_from_name(const char *name);
/* True for the ten allocation calls. */
static inline int arr_op_is_call(unsigned op) { return (arr_op_facts(op) & ARR_OPF_CALL) != 0; }
/* True for calls that return a new block (all calls except free). */
static inline int arr_op_allocates(unsigned op) { return (arr_op_facts(op) & ARR_OPF_RET) != 0; }
/* True for calls that take a block to release or resize. */
static inline int arr_op_takes_ptr(unsigned op) { return (arr_op_facts(op) & ARR_OPF_PTR) != 0; }

/*
 * One event. Which fields are meaningful depends on op:
 *   malloc/valloc/pvalloc     size -> ret
 *   calloc                    nmemb, size -> ret
 *   realloc                   ptr, size -> ret
 *   reallocarray              ptr, nmemb, size -> ret
 *   free                      ptr
 *   posix_memalign            align, size -> ret (the block), err = its result
 *   aligned_alloc, memalign   align, size -> ret
 *   thread_start/thread_exit  (tid only)
 *   fork                      ptr = child pid (or -1 and err when it failed)
 *   exec                      str = path; err != 0 when exec failed
 *   rss                       size = resident bytes (tid 0)
 *   rss_peak                  size = the process image's peak resident bytes so far (tid 0)
 * err is errno after a call that returned NULL (0 if errno was 0).
 */
struct arr_event {
	uint64_t t; /* ns since the trace's start */
	uint64_t size;
	uint64_t nmemb;  /* nmemb for calloc/reallocarray */
	uint64_t align;  /* alignment for the aligned family */
	uint64_t ptr;    /* pointer argument */
	uint64_t ret;    /* returned pointer, 0 for NULL */
	const char *str; /* exec path; valid until the next chunk is decoded */
	uint32_t tid;
	uint8_t op;
	uint8_t failed; /* the call returned NULL (or non-zero for posix_memalign) */
	int32_t err;
	uint32_t stack; /* the allocating call's stack id (allocrr/stacks.h), 0 = none */
};

/*
 * What an event does to the heap, derived from the operation table.
 *
 * arr_event_bytes: bytes a call asks for: size; nmemb * size for calloc and
 * reallocarray (UINT64_MAX when it overflows); for pvalloc size rounded up
 * to page_size (one page for 0; no rounding when page_size is 0, e.g. an
 * unknown page size). 0 for free and for events that are not calls.
 */
static inline uint64_t arr_event_bytes(const struct arr_event *ev, uint64_t page_size)
{
	unsigned f = arr_op_facts(ev->op);
	if (!(f & ARR_OPF_SIZE))
		return 0;
	uint64_t n = ev->size;
	if ((f & ARR_OPF_NMEMB) && __builtin_mul_overflow(ev->nmemb, ev->size, &n))
		return UINT64_MAX;
	if ((f & ARR_OPF_PAGE) && page_size) {
		if (n == 0)
			return page_size;
		n = n > UINT64_MAX - (page_size - 1) ? UINT64_MAX : (n + page_size - 1) / page_size * page_size;
	}
	return n;
}
/* Does the event release the block ev->ptr? free(p) does (p != 0); realloc
 * and reallocarray do when they succeed, or when asked for 0 bytes (glibc
 * frees the block and returns NULL). */
static inline int arr_event_releases(const struct arr_event *ev)
{
	if (!arr_op_takes_ptr(ev->op) || !ev->ptr)
		return 0;
	return ev->op == ARR_OP_FREE || !ev->failed || arr_event_bytes(ev, 0) == 0;
}
/* Does the event return a new block at ev->ret? */
static inline int arr_event_allocates(const struct arr_event *ev)
{
	return arr_op_allocates(ev->op) && !ev->failed && ev->ret;
}

/* How a trace ended (the END chunk's reason). */
#define ARR_END_MAP(X)                 \
	X(NONE, 0, "truncated")        \
	X(EXIT, 1, "exit")             \
	X(UNDERSCORE_EXIT, 2, "_exit") \
	X(SIGNAL, 3, "signal")         \
	X(EXEC, 4, "exec")             \
	X(DISABLED, 5, "disabled")

enum arr_end_reason {
#define ARR_END_ENUM(name, val, str) ARR_END_##name = val,
	ARR_END_MAP(ARR_END_ENUM)
#undef ARR_END_ENUM
};
const char *arr_end_name(unsigned reason);

/* Metadata from the file header. Strings are owned by the reader. */
struct arr_trace_meta {
	unsigned major, minor;
	uint64_t features;
	int64_t pid, ppid;
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at start */
	uint64_t start_monotonic_ns;
	uint64_t page_size;
	uint32_t time_unit_ns; /* resolution of stored timestamps */
	const char *exe;
	const char *argv; /* arguments joined by single spaces */
	size_t argc;
	const char *libc;         /* "glibc 2.36" */
	const char *recorder;     /* "allocrr 0.1.0" */
	const char *parent_trace; /* for forked children: the parent's trace */
};

/* The END chunk, when the trace has one. */
struct arr_trace_end {
	int present;
	unsigned reason; /* enum arr_end_reason */
	int status;      /* exit status or signal number */
	uint64_t t;      /* ns since start */
	uint64_t events; /* events the recorder wrote */
};

/* A chunk as seen by the reader, before decoding. */
struct arr_chunk_info {
	uint64_t offset; /* file offset of the chunk's first byte */
	uint32_t type;
	uint32_t tid;
	uint32_t nevents;
	uint64_t first_t, last_t;
	uint64_t body_size;
};

struct arr_trace; /* opaque streaming reader */

/* Whether the first len bytes of a file start like an allocrr trace (its
 * magic): what `record` may replace. Reads nothing else. */
int arr_trace_has_magic(const void *head, size_t len);

/*
 * Open a trace: reads and validates the header. When the file cannot be
 * opened (or memory runs out) *out is NULL. When its header is bad, *out is
 * the reader all the same, so the caller can ask where
 * (arr_trace_error_offset/_detail), and must close it. So: on error, close
 * *out if it is not NULL.
 */
int arr_trace_open(struct arr_trace **out, const char *path);
void arr_trace_close(struct arr_trace *tr);
const struct arr_trace_meta *arr_trace_meta(const struct arr_trace *tr);
const char *arr_trace_path(const struct arr_trace *tr);
/* File offset where the last error was found (or where reading stopped). */
uint64_t arr_trace_error_offset(const struct arr_trace *tr);
/* What exactly was wrong at that offset ("bad chunk sync word"), or "". */
const char *arr_trace_error_detail(const struct arr_trace *tr);
/* The END record, valid once arr_trace_next_chunk() has returned 0 (EOF). */
const struct arr_trace_end *arr_trace_end(const struct arr_trace *tr);
/* Chunks of unknown type skipped so far. */
uint64_t arr_trace_skipped_chunks(const struct arr_trace *tr);
/* Total file size in bytes. */
uint64_t arr_trace_file_size(const struct arr_trace *tr);

/*
 * Advance to the next events chunk. Returns 1 and fills *info, 0 at a clean
 * end of file (after an END record), or a negative code (ARR_ETRUNCATED, also
 * for a file that ends on a chunk boundary without its END record: the
 * program was killed; ARR_ECORRUPT, ...).
 * END chunks and unknown chunks are consumed silently.
 */
int arr_trace_next_chunk(struct arr_trace *tr, struct arr_chunk_info *info);
/*
 * Decode the chunk last returned by arr_trace_next_chunk(). *events points
 * into reader-owned memory valid until the next call. Returns the number of
 * events or a negative code.
 */
int arr_trace_read_chunk(struct arr_trace *tr, const struct arr_event **events);
/*
 * Internal (for arr_merge and other readers in this project): decode the
 * current chunk straight into events, which has room for info.nevents.
 * Exec paths go to a buffer allocated here and handed to the caller in
 * *strs (NULL when the chunk has none; the caller frees it). Same result
 * and errors as arr_trace_read_chunk(), without the copy.
 */
int arr__trace_read_chunk_into(struct arr_trace *tr, struct arr_event *events, char **strs);
/* Internal: record an error (offset, printf-style detail) on tr and return code. */
int arr__trace_fail(struct arr_trace *tr, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Seek to a chunk previously seen (by offset) and make it current. */
int arr_trace_seek_chunk(struct arr_trace *tr, uint64_t offset, struct arr_chunk_info *info);
/* Rewind to the first chunk. */
int arr_trace_rewind(struct arr_trace *tr);

/*
 * Time-ordered iteration across threads. Builds a chunk index (one entry per
 * chunk, no events) with a first pass, then merges the per-thread streams,
 * holding at most one decoded chunk per thread whose chunks overlap in time.
 * Ties are broken by file order, so the order is deterministic.
 */
struct arr_merge;
/* The merge holds every chunk that overlaps the current time decoded: at
 * most this many bytes of events (about 15M), else ARR_ECORRUPT at the
 * offset of the chunk that would pass it. A recorded trace needs threads x
 * chunk size (about 1 MiB per thread with the recorder's default buffers). */
#define ARR_MERGE_MAX_BYTES (1ull << 30)
int arr_merge_open(struct arr_merge **out, struct arr_trace *tr);
/* 1 and *ev filled, 0 at the end, negative on error (prefix already delivered). */
int arr_merge_next(struct arr_merge *m, const struct arr_event **ev);
void arr_merge_close(struct arr_merge *m);
/*
 * Internal: the next events in time order as a run of n >= 1 consecutive
 * events, valid until the next call: the same events, in the same order,
 * as n calls of arr_merge_next(), without a call per event. Returns as
 * arr_merge_next(). The two may be mixed.
 */
int arr__merge_next_run(struct arr_merge *m, const struct arr_event **ev, size_t *n);
/*
 * Internal: the next events in time order, many runs at once. A run of at
 * least long_run events is handed out in place, as arr__merge_next_run()
 * does; shorter runs (threads that take turns every few events) are copied
 * into buf, in merge order, until it holds cap events or a long run comes
 * next. *ev is then buf. Either way the same events, in the same order, as
 * calls of arr_merge_next(), valid until the next call (exec paths too:
 * a copied event with a string ends its batch). An error met after some
 * events were gathered is returned by the next call, so the events before
 * it are delivered first, as one at a time. May be mixed with the others.
 */
int arr__merge_next_batch(struct arr_merge *m, struct arr_event *buf, size_t cap, size_t long_run,
			  const struct arr_event **ev, size_t *n);

/* Format an event as one JSON object (no newline). Returns bytes written. */
int arr_event_fprint_json(FILE *f, const struct arr_event *ev);
/* Write s as a JSON string literal, quotes and escapes included (NULL: ""). */
void arr_json_fputs(FILE *f, const char *s);
/* Format an event as one human-readable line (no newline). */
int arr_event_fprint_text(FILE *f, const struct arr_event *ev);

#endif

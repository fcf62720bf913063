/*
 * recorder.h - internals of liballocrr-record.so.
 *
 * Glossary
 *   tbuf     a buffer of raw records (formats/writer.h) owned by one thread
 *            while it fills; then queued, encoded by the flusher thread and
 *            recycled. Lives in its own mmap, never in the program's heap.
 *   tstate   per-thread state in initial-exec TLS: the current tbuf and a
 *            mode byte that the hot path tests once.
 *   flusher  the recorder's one thread: encodes and writes queued buffers,
 *            samples RSS every --rss-interval ms.
 *   final flush  at exit, _exit, exec or a fatal signal: every committed
 *            record of every thread is written, then an END chunk.
 *
 * Contract: nothing here calls the program's malloc or prints except one
 * line on stderr when recording fails; errno is preserved across hooks.
 * The hot path takes no lock and touches no shared cache line: one TLS
 * load, a bounds check, a few stores and a release store of `used`.
 */
#ifndef ARR_RECORDER_H
#define ARR_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h>

#include "writer.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARR_HIDDEN __attribute__((visibility("hidden")))

struct tbuf {
	uint64_t *w;
	size_t cap;     /* words */
	size_t used;    /* committed words; the owner stores it with release */
	size_t flushed; /* words already written; the flusher's */
	size_t map_size;
	uint32_t tid;
	uint8_t dangling; /* belongs to a thread past its exit hook */
	uint8_t registered;
	struct tbuf *next;               /* queue or free list */
	struct tbuf *reg_next, *reg_prev; /* buffers still being filled */
};

enum tmode {
	MODE_NEW = 0, /* first call of this thread: register it */
	MODE_ACTIVE,  /* recording */
	MODE_BUSY,    /* inside the recorder: pass through unrecorded */
	MODE_OFF,     /* recording disabled: pass through */
	MODE_EXITED,  /* after the thread's exit hook */
};

/* The hot path reads only w, used and cap, which mirror buf while the mode
 * is MODE_ACTIVE; in any other mode cap is 0, so every call takes the slow
 * path. Change mode only through ts_set(), which keeps the mirror true. */
struct tstate {
	uint64_t *w;
	size_t used;
	size_t cap;
	struct tbuf *buf;
	uint64_t last_t; /* the last TSC reading of this thread (rec_stamp) */
	uint32_t tid;
	uint8_t mode;
	uint8_t exit_rounds;
	uint8_t skip; /* calls left that reuse last_t */
	uint8_t flusher; /* this is the flusher: its fds are in a table of its own */
	uint8_t in_slow; /* inside arr__rec_slow(): a hook entered now is a signal handler's */
};

extern __thread struct tstate arr__ts __attribute__((tls_model("initial-exec")));

/* TSC at the start of this trace: records hold ticks since then. */
extern uint64_t arr__start_tsc ARR_HIDDEN;

ARR_HIDDEN uint64_t *arr__rec_slow(unsigned words);

static inline void ts_set(uint8_t mode)
{
	struct tbuf *b = arr__ts.buf;
	arr__ts.mode = mode;
	if (mode == MODE_ACTIVE && b) {
		arr__ts.w = b->w;
		arr__ts.used = b->used;
		arr__ts.cap = b->cap;
	} else {
		arr__ts.used = arr__ts.cap = 0;
	}
}

/*
 * Signal handlers. A hook can be entered from a signal handler while the
 * same thread is inside a hook; the handler's hook runs to completion
 * before the interrupted one goes on (the nesting is a stack). So:
 *  - words are reserved with one instruction (a non-locked xadd on the TLS
 *    length): the handler's record lands before or after ours, never on it.
 *    The bound is checked before (a hook that would not fit goes to the slow
 *    path without reserving) and after (a handler may have appended between
 *    the check and the xadd): a reservation past the bound is given back at
 *    once, and no handler can reserve behind it, since its own check fails,
 *    so giving back is always last in, first out;
 *  - a record is published (tbuf.used, which the flusher reads) only by the
 *    outermost hook, once every word below the length is written: a hook
 *    whose start is not the published length is inside another and leaves
 *    it to that one; the outer one re-reads the length after publishing, in
 *    case a handler appended while it did;
 *  - a handler that finds the buffer full while the interrupted hook holds
 *    a reservation, or that interrupts the slow path, drops its record and
 *    counts it (arr__rec_slow), rather than swap buffers under it.
 * The compiler must not move memory accesses across these steps: signal
 * fences, which cost no instruction.
 */
/* Reserve n words, or return SIZE_MAX (nothing reserved) if they do not fit. */
static inline size_t rec_reserve(size_t n)
{
	if (unlikely(arr__ts.used + n > arr__ts.cap))
		return SIZE_MAX;
	size_t start = n;
	__asm__ volatile("xaddq %0, %1" : "+r"(start), "+m"(arr__ts.used));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(start + n > arr__ts.cap)) {
		__asm__ volatile("subq %1, %0" : "+m"(arr__ts.used) : "r"(n));
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return SIZE_MAX;
	}
	return start;
}

/* Publish the record that starts at `start`: other threads may read the
 * buffer up to the thread's length. */
static inline void rec_commit(size_t start)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	struct tbuf *b = arr__ts.buf;
	if (unlikely(__atomic_load_n(&b->used, __ATOMIC_RELAXED) != start))
		return; /* inside another hook of this thread: it publishes */
	size_t used = __atomic_load_n(&arr__ts.used, __ATOMIC_RELAXED);
	for (;;) {
		__atomic_store_n(&b->used, used, __ATOMIC_RELEASE);
		/* From here a handler may find the buffer full and swap it (it
		 * could not while the length was ahead of what was published):
		 * then what it left is in its new buffer, published by itself. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		size_t again = __atomic_load_n(&arr__ts.used, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (likely(again == used) || arr__ts.buf != b)
			return;
		used = again;
	}
}

/* Room for one record of `words` words, reserved (its start in *start),
 * or NULL when not recording. */
static inline uint64_t *rec_begin(unsigned words, size_t *start)
{
	size_t s = rec_reserve(words);
	if (unlikely(s == SIZE_MAX)) {
		if (!arr__rec_slow(words) || (s = rec_reserve(words)) == SIZE_MAX)
			return NULL;
	}
	*start = s;
	return arr__ts.w + s;
}

static inline uint64_t rec_now(void) { return __rdtsc() - arr__start_tsc; }

/* Every call reads the TSC once a second thread records (see rec_stamp). */
extern int arr__exact_time ARR_HIDDEN;
#define REC_STAMP_EVERY 16

/*
 * RSS samples the hooks take when the flusher is late: the tick (rec_now())
 * from which a hook that reads the TSC takes the sample itself. UINT64_MAX
 * while sampling is off or not yet calibrated. Alone on its cache line: it is
 * written once a sample, read by every stamp.
 */
struct arr_rss_due {
	uint64_t tick;
} __attribute__((aligned(64)));
extern struct arr_rss_due arr__rss_due ARR_HIDDEN;
ARR_HIDDEN void arr__rss_from_hook(uint64_t now);

/*
 * The timestamp of a call. Reading the TSC is most of a hook's cost (~20 ns
 * in a real program on this kind of VM). While one thread records, calls are
 * totally ordered by their place in its buffer, so the TSC is read every
 * REC_STAMP_EVERY calls and the calls between carry the last reading: still
 * monotonic, never later than the truth, at most a few calls early. Once a
 * second thread records, cross-thread order rests on the stamps and every
 * call reads the TSC. ALLOCRR_EXACT_TIME=1 asks for that from the start.
 */
static inline uint64_t rec_stamp(void)
{
	if (likely(!arr__exact_time) && arr__ts.skip) {
		arr__ts.skip--;
		return arr__ts.last_t;
	}
	arr__ts.skip = REC_STAMP_EVERY - 1;
	uint64_t t = rec_now();
	if (unlikely(t >= __atomic_load_n(&arr__rss_due.tick, __ATOMIC_RELAXED)))
		arr__rss_from_hook(t);
	return arr__ts.last_t = t;
}

/* Append one record of any kind (failed calls, process events): out of
 * line, so the hooks' fast paths stay small. */
ARR_HIDDEN void arr__rec_event(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs,
			       uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);

/*
 * Append the record of a call that succeeded: with a constant nargs this
 * inlines to a bounds check and nargs + 1 stores; anything unusual (buffer
 * full, not recording) goes to arr__rec_event().
 */
static inline void rec_ok(unsigned op, uint64_t t, unsigned nargs, uint64_t a0, uint64_t a1,
			  uint64_t a2, uint64_t a3)
{
	size_t n = 1 + nargs, used = rec_reserve(n);
	if (unlikely(used == SIZE_MAX)) {
		arr__rec_event(op, t, 0, 0, nargs, a0, a1, a2, a3);
		return;
	}
	uint64_t *w = arr__ts.w + used;
	w[0] = ARR_RAW_W0(op, 0, t);
	if (nargs > 0)
		w[1] = a0;
	if (nargs > 1)
		w[2] = a1;
	if (nargs > 2)
		w[3] = a2;
	if (nargs > 3)
		w[4] = a3;
	rec_commit(used);
}

/* Lifecycle (record.c). */
ARR_HIDDEN void arr__rec_clock_start(void);
ARR_HIDDEN void arr__rec_init(void);
ARR_HIDDEN void arr__final_flush(unsigned reason, int status);
ARR_HIDDEN void arr__rec_thread_exit(void);
ARR_HIDDEN void arr__rec_fork_prepare(void);
ARR_HIDDEN void arr__rec_fork_parent(void);
ARR_HIDDEN void arr__rec_fork_child(void);
ARR_HIDDEN int arr__rec_owns_process(void); /* false in a vfork child */
ARR_HIDDEN void arr__rec_event_now(unsigned op, int failed, int err, uint64_t arg);
ARR_HIDDEN void arr__rec_exec(const char *path);
ARR_HIDDEN void arr__rec_mark(const char *name);
ARR_HIDDEN void arr__rec_exec_failed(const char *path, int err);

#endif

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

#include "allocrr/compiler.h"
#include "writer.h"

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
	struct tbuf *next;                /* queue or free list */
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
	uint8_t skip;     /* calls left that reuse last_t */
	uint8_t flusher;  /* this is the flusher: its fds are in a table of its own */
	uint8_t busy;     /* recording: a hook entered now records nothing (see rec_enter) */
	uint8_t internal; /* the recorder's own calls into libc, which may allocate */
	int64_t smp_left; /* --stack-sample: bytes to the next stacked call (stacks.c); 0 with every call stacked */
} __attribute__((aligned(64))); /* one cache line, whatever the TLS layout */

extern __thread struct tstate arr__ts __attribute__((tls_model("initial-exec")));

/*
 * What every stamp reads, on one cache line of its own: the TSC at the start
 * of the trace (records hold ticks since then), whether every call reads the
 * TSC (see rec_stamp), and the tick from which a hook that reads the TSC
 * takes a late RSS sample itself (UINT64_MAX while sampling is off or not
 * calibrated; written once a sample). One line, so that a memory-bound
 * program does not pay a second cache miss per stamp for the RSS check.
 */
struct arr_hot {
	uint64_t start_tsc;
	uint64_t rss_due;
	int exact_time;
	int stacks; /* depth of the stacks recorded with each allocating call; 0: none */
} __attribute__((aligned(64)));
extern struct arr_hot arr__hot ARR_HIDDEN;

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
 * same thread is between reading and publishing its buffer's length; the
 * handler's hook would then write the same words. So a thread's recording
 * is bracketed by arr__ts.busy: a hook that finds it set (a handler's, or a
 * call the recorder itself makes from its slow path) records nothing, and
 * counts the call as dropped unless it is the recorder's own (a libc call
 * of thread registration, arr__ts.internal). A handler that runs before the flag is set records
 * normally: the interrupted hook reads the buffer's state only after setting
 * it. Signal fences keep the compiler from moving accesses across the flag;
 * they cost no instruction.
 */
ARR_HIDDEN void arr__rec_dropped(void);

static inline int rec_enter(void)
{
	if (ARR_UNLIKELY(arr__ts.busy)) {
		if (!arr__ts.internal)
			arr__rec_dropped();
		return 0;
	}
	arr__ts.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

static inline void rec_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	arr__ts.busy = 0;
}

/* Room for one record of `words` words, or NULL when not recording.
 * Between rec_enter() and rec_leave(). */
static inline uint64_t *rec_begin(unsigned words)
{
	if (ARR_LIKELY(arr__ts.used + words <= arr__ts.cap))
		return arr__ts.w + arr__ts.used;
	return arr__rec_slow(words);
}

/* Publish the record: other threads may read the buffer up to `used`. */
static inline void rec_commit(unsigned words)
{
	size_t used = arr__ts.used + words;
	arr__ts.used = used;
	__atomic_store_n(&arr__ts.buf->used, used, __ATOMIC_RELEASE);
}

static inline uint64_t rec_now(void) { return __rdtsc() - arr__hot.start_tsc; }

/* Every call reads the TSC once a second thread records (see rec_stamp). */
#define REC_STAMP_EVERY 16

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
	if (ARR_LIKELY(!arr__hot.exact_time) && arr__ts.skip) {
		arr__ts.skip--;
		return arr__ts.last_t;
	}
	arr__ts.skip = REC_STAMP_EVERY - 1;
	uint64_t t = rec_now();
	if (ARR_UNLIKELY(t >= __atomic_load_n(&arr__hot.rss_due, __ATOMIC_RELAXED)))
		arr__rss_from_hook(t);
	return arr__ts.last_t = t;
}

/* Append one record of any kind (failed calls, process events): out of
 * line, so the hooks' fast paths stay small. */
ARR_HIDDEN void arr__rec_event(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs, uint64_t a0,
			       uint64_t a1, uint64_t a2, uint64_t a3);

/* The same with the call's stack (stacks.c), for a call whose countdown
 * (rec_ok) reached zero: it is stacked, unless it is a thread's first. */
ARR_HIDDEN void arr__rec_stacked(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs, uint64_t a0,
				 uint64_t a1, uint64_t a2, uint64_t a3);
/* The same for a failed call: counts it down first. */
ARR_HIDDEN void arr__rec_stacked_failed(unsigned op, uint64_t t, int err, unsigned nargs, uint64_t a0, uint64_t a1,
					uint64_t a2, uint64_t a3);
ARR_HIDDEN void arr__stacks_init(void);
ARR_HIDDEN uint64_t arr__stacks_sample_bytes(void); /* ALLOCRR_STACK_SAMPLE; 0: every call */
ARR_HIDDEN void arr__stacks_fork_child(void);
ARR_HIDDEN void arr__stacks_thread_exit(void);
ARR_HIDDEN void arr__stacks_dlclosed(void); /* after a dlclose: modules, rules and nodes anew */
/* Whole stacks by cached CFA rules (unwind.c): from the frame returning to ip
 * with rsp = sp and rbp = bp, inside the thread's stack [lo, hi). Returns
 * the depth; *kept outermost frames are the thread's previous walk's, the
 * same and in the same places, and out holds only the others, innermost
 * first; arr__unwind_frames() gives all of them. */
ARR_HIDDEN int arr__unwind_cfi(uintptr_t ip, uintptr_t sp, uintptr_t bp, uintptr_t lo, uintptr_t hi, uint64_t *out,
			       int max, int *trunc, int *kept);
ARR_HIDDEN void arr__unwind_frames(uint64_t *out); /* every frame of the last walk, innermost first */
/* A remembered whole walk from the same state, its stack words unchanged:
 * 1 and its stack id, which the caller gave arr__unwind_remember() in the
 * same epoch (the caller's: its ids change meaning when it starts again). */
ARR_HIDDEN int arr__unwind_hit(uintptr_t ip, uintptr_t sp, uintptr_t bp, uint32_t epoch, uint32_t *sid);
ARR_HIDDEN void arr__unwind_remember(uint32_t sid, uint32_t epoch); /* the last walk gave stack sid */
ARR_HIDDEN void arr__unwind_reset(void);                            /* a module went away: forget every rule */
ARR_HIDDEN void arr__unwind_thread_exit(void);
ARR_HIDDEN void arr__unwind_fork_child(void);

/* The bytes an allocating call asks for, from its raw argument words (size
 * last before the result, nmemb before it): constant-folded per hook. */
static inline uint64_t rec_call_bytes(unsigned op, unsigned nargs, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	uint64_t a[4] = {a0, a1, a2, a3};
	struct arr_event ev = {.op = op};
	if (nargs < 2)
		return 0;
	ev.size = a[nargs - 2];
	if ((arr_op_facts(op) & ARR_OPF_NMEMB) && nargs >= 3)
		ev.nmemb = a[nargs - 3];
	uint64_t n = arr_event_bytes(&ev, 4096);
	return n > (uint64_t)INT64_MAX / 2 ? (uint64_t)INT64_MAX / 2 : n;
}

/*
 * Append the record of a call that succeeded: with a constant nargs this
 * inlines to a bounds check and nargs + 1 stores; anything unusual (buffer
 * full, not recording) goes to arr__rec_event(). With stacks, an allocating
 * call first counts its bytes down (stacks.c, sampling): only the call that
 * reaches zero goes to arr__rec_stacked(); the others -- nearly all of them
 * with --stack-sample -- are recorded here as without stacks (stack id 0),
 * for one subtract and a branch on the thread's own cache line. With every
 * call stacked the countdown stays at 0, so each call reaches it.
 */
static inline void rec_ok(unsigned op, uint64_t t, unsigned nargs, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	if ((arr_op_facts(op) & ARR_OPF_RET) && ARR_UNLIKELY(arr__hot.stacks) &&
	    (arr__ts.smp_left -= (int64_t)rec_call_bytes(op, nargs, a0, a1, a2, a3)) <= 0) {
		arr__rec_stacked(op, t, 0, 0, nargs, a0, a1, a2, a3);
		return;
	}
	if (ARR_UNLIKELY(!rec_enter()))
		return;
	size_t used = arr__ts.used, n = 1 + nargs;
	if (ARR_UNLIKELY(used + n > arr__ts.cap)) {
		rec_leave();
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
	used += n;
	arr__ts.used = used;
	__atomic_store_n(&arr__ts.buf->used, used, __ATOMIC_RELEASE);
	rec_leave();
}

/* Lifecycle (record.c). */
ARR_HIDDEN void arr__rec_clock_start(void);
ARR_HIDDEN void arr__rec_early(void);
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

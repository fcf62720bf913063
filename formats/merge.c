/*
 * merge.c - time-ordered iteration across a trace's threads.
 *
 * First pass: an index of every events chunk (offset, first and last time),
 * no events kept. Second pass: chunks are opened in order of their first
 * timestamp, only once the merge has reached that time, decoded straight
 * into their cursor's buffer (cursors and buffers are reused), and their
 * events are merged through an array of the open cursors kept in order of
 * their head event's key (time, then the chunk's file order, the
 * tie-breaker), the earliest first. The earliest cursor, the root, is the
 * one being handed out, and the bound its events must stay under to come
 * next (the second cursor's key, the next chunk to open) is kept: while
 * the root's events stay below it (one thread, or long runs of one
 * thread) an event costs one compare, and a thread switch moves one entry.
 * Memory holds the index plus the chunks whose time ranges overlap the
 * current time, not the trace; at most ARR_MERGE_MAX_BYTES of their events
 * (a trace that needs more is refused as corrupted, at the chunk's offset).
 *
 * Read-ahead: a second thread with its own reader decodes the chunks that
 * will be opened next (decompression and column decoding are about half of
 * a consumer's time), in index order, up to AHEAD_DEPTH chunks (and
 * AHEAD_MAX_EVENTS events) ahead, into cursors of its own: a queue, so a
 * consumer that opens several chunks at once (threads that overlap in
 * time) or a worker that was briefly descheduled does not stall the other.
 * If it fails on a chunk, that chunk is decoded again by the caller's
 * reader, so errors, their offsets and what was delivered before them are
 * exactly as without it.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"
#include "format.h"

struct idx {
	uint64_t offset, first_t;
	uint32_t order; /* file order, the tie-breaker */
	uint32_t nevents;
};

struct cursor {
	struct arr_event *ev;
	char *strs; /* exec paths of this chunk, or NULL */
	uint32_t n, pos, order, cap;
	int sorted; /* times never decrease: a run's end is found by bisection */
	struct cursor *next_spare;
};

#define AHEAD_DEPTH 4
#define AHEAD_MAX_EVENTS (1u << 18) /* decoded ahead at most (past the first chunk): ~18 MiB */

/* The read-ahead worker and its queue of decoded chunks. */
struct ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* signalled on every change of the fields below */
	struct arr_trace *tr; /* the worker's own reader */
	size_t next;          /* the index entry the worker decodes next */
	int stop;
	struct {
		size_t job; /* index entry */
		int rc;
		struct cursor *c; /* rc == 0: the decoded chunk */
	} q[AHEAD_DEPTH];
	size_t head, count; /* the queue: q[head], ... in index order */
	uint64_t queued_events;
	struct cursor *spare; /* buffers for the worker */
};

/* An open cursor and the key of its head event, c->ev[c->pos] (its time,
 * then the chunk's file order: the tie-breaker), so that a comparison
 * reads the ordered array alone. */
struct oent {
	uint64_t t;
	uint32_t order;
	struct cursor *c;
};

struct arr_merge {
	struct arr_trace *tr;
	struct ahead *ahead;   /* NULL: no read-ahead (small trace, or it failed) */
	struct blocks *blocks; /* not NULL: the merge runs on its own thread (arr__merge_open_blocks) */
	struct idx *idx;
	size_t nidx, next;
	int index_rc;     /* error that cut the index pass short, delivered at the end */
	struct oent *ord; /* the open cursors, earliest key first (sorted_*) */
	size_t nord, ordcap;
	/* ord[0].c's event at pos was handed out: the next call steps past it
	 * first (so what was handed out stays valid until then) */
	int held;
	/* ord[0]'s events come before every other cursor's head and before
	 * the next chunk to open while their time is below this (a
	 * conservative bound: an event at or past it takes the full step) */
	uint64_t limit;
	int failed;  /* the first error a step met: every later step returns it (no chunk after it is read) */
	int pending; /* an error met while gathering, returned by the next call */
	int pending_rc;
	struct cursor *spare; /* finished cursors, buffers kept for reuse */
	uint64_t open_events; /* in ord: what the memory limit counts */
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;
	if (x->first_t != y->first_t)
		return x->first_t < y->first_t ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static inline int key_less(const struct oent *a, const struct oent *b)
{
	return a->t < b->t || (a->t == b->t && a->order < b->order);
}

/* The cursors in order of their keys, the earliest first: a sorted array,
 * not a binary heap. Threads that take turns every few events move the
 * root at every switch, and with the few cursors a trace has open (one a
 * thread, plus the RSS samples) moving one entry a few places costs less
 * than a heap's sift (two compares a level) and the bound is ord[1], no
 * third compare. Many open cursors (hundreds of threads at once) take a
 * bisection and one memmove. */
#define SORTED_SCAN 16 /* up to this many entries, the place is found one by one */

/* First position in [lo, n) whose entry comes after x (n if none). */
static inline size_t sorted_find(const struct arr_merge *m, size_t lo, const struct oent *x)
{
	size_t hi = m->nord;
	if (hi - lo <= SORTED_SCAN) {
		while (lo < hi && key_less(&m->ord[lo], x))
			lo++;
		return lo;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key_less(&m->ord[mid], x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Insert x (room for it is there). */
static void sorted_insert(struct arr_merge *m, struct oent x)
{
	size_t p = sorted_find(m, 0, &x);
	memmove(&m->ord[p + 1], &m->ord[p], (m->nord - p) * sizeof *m->ord);
	m->ord[p] = x;
	m->nord++;
}

/* The root's key changed to x's: put it back in its place. */
static inline void sorted_reroot(struct arr_merge *m, struct oent x)
{
	size_t n = m->nord;
	if (n < 2 || key_less(&x, &m->ord[1])) { /* still the earliest: the usual case within a run */
		m->ord[0] = x;
		return;
	}
	size_t p = sorted_find(m, 2, &x); /* x goes just before ord[p] */
	if (p - 1 <= SORTED_SCAN)
		for (size_t i = 1; i < p; i++)
			m->ord[i - 1] = m->ord[i];
	else
		memmove(&m->ord[0], &m->ord[1], (p - 1) * sizeof *m->ord);
	m->ord[p - 1] = x;
}

#ifdef __SANITIZE_ADDRESS__
/* The sanitizer build checks the order after every change of the root. */
static void sorted_check(const struct arr_merge *m)
{
	for (size_t i = 1; i < m->nord; i++)
		if (!key_less(&m->ord[i - 1], &m->ord[i]) || m->ord[i].t != m->ord[i].c->ev[m->ord[i].c->pos].t)
			abort();
}
#else
static inline void sorted_check(const struct arr_merge *m) { (void)m; }
#endif

/* The bound of ord[0]'s run (see struct arr_merge): an event of the root
 * comes next while its time is below the second entry's key (one more when
 * the root wins the tie on file order) and below the next chunk's first
 * time (a chunk opens when the earliest pending event is at or past it). */
static inline void set_limit(struct arr_merge *m)
{
	uint64_t limit = UINT64_MAX;
	if (m->nord > 1) {
		const struct oent *h = &m->ord[1];
		limit = m->ord[0].order < h->order && h->t < UINT64_MAX ? h->t + 1 : h->t;
	}
	if (m->next < m->nidx && m->idx[m->next].first_t < limit)
		limit = m->idx[m->next].first_t;
	m->limit = limit;
	sorted_check(m);
}

static void cursor_free(struct cursor *c)
{
	if (c) {
		free(c->ev);
		free(c->strs);
		free(c);
	}
}

/* A finished cursor keeps its event buffer for the next chunk. */
static void cursor_retire(struct arr_merge *m, struct cursor *c)
{
	m->open_events -= c->n;
	free(c->strs);
	c->strs = NULL;
	c->next_spare = m->spare;
	m->spare = c;
}

/* Decode the chunk at offset into a cursor taken from *spare (or new). */
static int decode_into(struct arr_trace *tr, uint64_t offset, struct cursor **spare, struct cursor **out)
{
	struct arr_chunk_info ci;
	int rc = arr_trace_seek_chunk(tr, offset, &ci);
	if (rc)
		return rc;
	struct cursor *c = *spare;
	if (c)
		*spare = c->next_spare;
	else if (!(c = calloc(1, sizeof *c)))
		return ARR_ENOMEM;
	if (c->cap < ci.nevents) {
		free(c->ev);
		c->cap = 0;
		if (!(c->ev = malloc((size_t)ci.nevents * sizeof *c->ev)))
			rc = ARR_ENOMEM;
		else
			c->cap = ci.nevents;
	}
	int n = rc ? rc : arr__trace_read_chunk_into(tr, c->ev, &c->strs);
	if (n < 0) {
		c->next_spare = *spare;
		*spare = c;
		return n;
	}
	c->n = (uint32_t)n;
	c->pos = 0;
	/* checked here, on the read-ahead thread when there is one, while the
	 * events are still in this core's cache */
	c->sorted = 1;
	for (uint32_t i = 1; i < c->n; i++)
		if (c->ev[i].t < c->ev[i - 1].t) {
			c->sorted = 0;
			break;
		}
	*out = c;
	return 0;
}

static void *ahead_main(void *arg)
{
	struct arr_merge *m = arg;
	struct ahead *a = m->ahead;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->stop && a->next < m->nidx &&
		       (a->count == AHEAD_DEPTH ||
			(a->count && a->queued_events + m->idx[a->next].nevents > AHEAD_MAX_EVENTS)))
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->stop || a->next >= m->nidx)
			break;
		size_t job = a->next++;
		struct cursor *mine = a->spare, *c = NULL;
		a->spare = NULL;
		pthread_mutex_unlock(&a->lock);
		int rc = decode_into(a->tr, m->idx[job].offset, &mine, &c);
		pthread_mutex_lock(&a->lock);
		while (mine) { /* the buffers it did not use go back */
			struct cursor *n = mine->next_spare;
			mine->next_spare = a->spare;
			a->spare = mine;
			mine = n;
		}
		size_t slot = (a->head + a->count) % AHEAD_DEPTH;
		a->q[slot].job = job;
		a->q[slot].rc = rc;
		a->q[slot].c = rc ? NULL : c;
		a->count++;
		a->queued_events += rc ? 0 : c->n;
		pthread_cond_broadcast(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Start the read-ahead worker; on any failure, go on without it. */
static void ahead_start(struct arr_merge *m)
{
	struct ahead *a = calloc(1, sizeof *a);
	if (!a)
		return;
	if (arr_trace_open(&a->tr, arr_trace_path(m->tr)) != 0) {
		arr_trace_close(a->tr);
		free(a);
		return;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	m->ahead = a;
	if (pthread_create(&a->thread, NULL, ahead_main, m) != 0) {
		m->ahead = NULL;
		pthread_mutex_destroy(&a->lock);
		pthread_cond_destroy(&a->cond);
		arr_trace_close(a->tr);
		free(a);
	}
}

static void ahead_stop(struct arr_merge *m)
{
	struct ahead *a = m->ahead;
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	for (size_t k = 0; k < a->count; k++)
		cursor_free(a->q[(a->head + k) % AHEAD_DEPTH].c);
	while (a->spare) {
		struct cursor *c = a->spare;
		a->spare = c->next_spare;
		cursor_free(c);
	}
	arr_trace_close(a->tr);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	free(a);
	m->ahead = NULL;
}

/* The worker's result for entry i: 1 and *out, or 0 when it has none (it
 * failed there: the caller decodes it itself). Entries are opened in index
 * order, the order the worker decodes them in. One of the caller's spare
 * buffers goes to the worker in exchange. */
static int ahead_take(struct arr_merge *m, size_t i, struct cursor **out)
{
	struct ahead *a = m->ahead;
	if (!a)
		return 0;
	int ok = 0;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		/* an empty queue: the worker is decoding i (it decodes every entry, in order) */
		while (!a->count && !a->stop)
			pthread_cond_wait(&a->cond, &a->lock);
		if (!a->count)
			break;
		size_t h = a->head;
		size_t job = a->q[h].job;
		struct cursor *c = a->q[h].c;
		a->head = (h + 1) % AHEAD_DEPTH;
		a->count--;
		a->queued_events -= c ? c->n : 0;
		if (job == i) {
			ok = a->q[h].rc == 0;
			*out = c;
			break;
		}
		if (c) { /* an entry the caller skipped (cannot happen): its buffer is a spare */
			c->next_spare = a->spare;
			a->spare = c;
		}
		if (job > i)
			break;
	}
	if (m->spare) {
		struct cursor *c = m->spare;
		m->spare = c->next_spare;
		c->next_spare = a->spare;
		a->spare = c;
	}
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return ok;
}

int arr_merge_open(struct arr_merge **out, struct arr_trace *tr)
{
	*out = NULL;
	struct arr_merge *m = calloc(1, sizeof *m);
	if (!m)
		return ARR_ENOMEM;
	m->tr = tr;
	int rc = arr_trace_rewind(tr);
	if (rc) {
		free(m);
		return rc;
	}
	size_t cap = 0;
	struct arr_chunk_info ci;
	while ((rc = arr_trace_next_chunk(tr, &ci)) == 1) {
		if (m->nidx == cap) {
			cap = cap ? cap * 2 : 256;
			struct idx *n = realloc(m->idx, cap * sizeof *n);
			if (!n) {
				arr_merge_close(m);
				return ARR_ENOMEM;
			}
			m->idx = n;
		}
		m->idx[m->nidx] = (struct idx){ci.offset, ci.first_t, (uint32_t)m->nidx, ci.nevents};
		m->nidx++;
	}
	m->index_rc = rc; /* 0 at a clean EOF */
	if (m->nidx)
		qsort(m->idx, m->nidx, sizeof *m->idx, idx_cmp);
	if (m->nidx >= 4)
		ahead_start(m);
	*out = m;
	return 0;
}

static int open_next(struct arr_merge *m)
{
	size_t i = m->next++;
	struct idx *x = &m->idx[i];
	if (m->nord == m->ordcap) {
		size_t nc = m->ordcap ? m->ordcap * 2 : 16;
		struct oent *h = realloc(m->ord, nc * sizeof *h);
		if (!h)
			return ARR_ENOMEM;
		m->ord = h;
		m->ordcap = nc;
	}
	/* Chunks that overlap in time are all held decoded: a few KB of
	 * hostile trace could ask for gigabytes. */
	if ((m->open_events + x->nevents) * sizeof(struct arr_event) > ARR_MERGE_MAX_BYTES) {
		ahead_stop(m);
		return arr__trace_fail(m->tr, ARR_ECORRUPT, x->offset,
				       "more than %llu MiB of events in chunks that overlap in time (the merge's "
				       "memory limit)",
				       (unsigned long long)(ARR_MERGE_MAX_BYTES >> 20));
	}
	struct cursor *c;
	if (!ahead_take(m, i, &c)) {
		int rc = decode_into(m->tr, x->offset, &m->spare, &c);
		if (rc)
			return rc;
	}
	c->order = x->order;
	m->open_events += c->n;
	sorted_insert(m, (struct oent){c->ev[0].t, c->order, c});
	return 0;
}

/* Open every chunk that starts no later than the earliest pending event. */
static __attribute__((noinline)) int open_due(struct arr_merge *m)
{
	while (m->next < m->nidx && (m->nord == 0 || m->idx[m->next].first_t <= m->ord[0].t)) {
		int rc = open_next(m);
		if (rc)
			return rc;
	}
	return 0;
}

/* One step of the merge: the held event is stepped past (its cursor sifted
 * down with its new key, or retired), due chunks are opened, and the root,
 * the cursor whose head comes next, gets its bound. 1, 0 at the end, or a
 * negative code. */
static inline int merge_step(struct arr_merge *m)
{
	/* After an error the merge stops: a later call (the analysis's thread
	 * started behind a caller that met it, a consumer that asks again) would
	 * open the chunks after the bad one, and the reader's error offset would
	 * be theirs, whichever thread got there first. */
	if (__builtin_expect(m->failed != 0, 0))
		return m->failed;
	if (m->held) {
		struct cursor *c = m->ord[0].c;
		m->held = 0;
		if (++c->pos < c->n) {
			struct oent x = m->ord[0];
			x.t = c->ev[c->pos].t;
			sorted_reroot(m, x);
		} else {
			cursor_retire(m, c);
			memmove(&m->ord[0], &m->ord[1], --m->nord * sizeof *m->ord);
		}
	}
	if (m->next < m->nidx && (m->nord == 0 || m->idx[m->next].first_t <= m->ord[0].t)) {
		int rc = open_due(m);
		if (rc)
			return m->failed = rc;
	}
	if (m->nord == 0)
		return m->index_rc;
	set_limit(m);
	return 1;
}

/* merge_step behind an error kept for the next call */
static __attribute__((noinline)) int merge_step_slow(struct arr_merge *m)
{
	if (m->pending) {
		m->pending = 0;
		return m->pending_rc;
	}
	return merge_step(m);
}

int arr_merge_next(struct arr_merge *m, const struct arr_event **evp)
{
	/* Fast path: the root's next event is still below its bound, so the
	 * order would hand the same cursor back. */
	if (m->held) {
		struct cursor *c = m->ord[0].c;
		if (c->pos + 1 < c->n && c->ev[c->pos + 1].t < m->limit) {
			*evp = &c->ev[++c->pos];
			return 1;
		}
	}
	int rc = merge_step_slow(m);
	if (rc != 1)
		return rc;
	struct cursor *c = m->ord[0].c;
	m->held = 1;
	*evp = &c->ev[c->pos];
	return 1;
}

#define RUN_SCAN 32 /* events a run's end is looked for one by one, before galloping */

/* The end of the root's run from its head: the first event at or past the
 * bound, or end (at most the chunk's end), whichever comes first. */
static uint32_t run_end(const struct cursor *c, uint64_t limit, uint32_t end)
{
	uint32_t k = c->pos + 1;
	if (c->sorted) {
		/* the first event at or after limit: a short scan, then galloping
		 * (steps 1, 2, 4...), then bisection inside the last step. A
		 * bisection over the whole chunk touched ~16 far-apart events per
		 * run, cache misses all (the read-ahead thread decoded them on the
		 * other core): threads that interleave make runs of ~12 events,
		 * and the merge was 17% of the time. The scan reads in order what
		 * the run's consumer reads next anyway; galloping bounds long runs
		 * to O(log run) probes. */
		uint32_t scan_end = end - k > RUN_SCAN ? k + RUN_SCAN : end;
		while (k < scan_end && c->ev[k].t < limit)
			k++;
		if (k == scan_end && k < end) { /* still below limit: gallop */
			uint32_t lo = k, hi = end;
			for (uint64_t step = 1; lo < hi; step *= 2) { /* the answer is in [lo, hi] */
				uint32_t probe = lo + step - 1 < hi ? (uint32_t)(lo + step - 1) : hi - 1;
				if (c->ev[probe].t >= limit) {
					hi = probe;
					break;
				}
				lo = probe + 1;
			}
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (c->ev[mid].t < limit)
					lo = mid + 1;
				else
					hi = mid;
			}
			k = lo;
		}
	} else {
		while (k < end && c->ev[k].t < limit)
			k++;
	}
	return k;
}

int arr__merge_next_run(struct arr_merge *m, const struct arr_event **evp, size_t *n)
{
	int rc = merge_step_slow(m);
	if (rc != 1)
		return rc;
	/* Extend the run while the root's events stay strictly before every
	 * other cursor's head and before the next chunk to open: exactly what
	 * arr_merge_next() would hand out one at a time. */
	struct cursor *c = m->ord[0].c;
	uint32_t k = run_end(c, m->limit, c->n);
	*evp = &c->ev[c->pos];
	*n = k - c->pos;
	c->pos = k - 1; /* the run's last event is the one handed out */
	m->held = 1;
	return 1;
}

int arr__merge_next_batch(struct arr_merge *m, struct arr_event *buf, size_t cap, size_t long_run,
			  const struct arr_event **evp, size_t *n)
{
	if (m->pending) {
		m->pending = 0;
		return m->pending_rc;
	}
	if (long_run < 2)
		long_run = 2;
	size_t got = 0;
	while (got < cap) {
		int rc = merge_step(m);
		if (rc != 1) {
			if (!got)
				return rc;
			/* what was gathered comes first; the end or the error next time */
			m->pending = 1;
			m->pending_rc = rc;
			break;
		}
		struct cursor *c = m->ord[0].c;
		const struct arr_event *ev = c->ev;
		const uint64_t limit = m->limit;
		uint32_t pos = c->pos, end = c->n;
		/* Is the run long? Its events looked at in order, as the consumer
		 * will (they were decoded on the other core: a probe far ahead
		 * would wait for its line while the stream is being fetched) */
		uint32_t k = pos + 1, scan_end = end - pos > long_run ? pos + (uint32_t)long_run : end;
		while (k < scan_end && ev[k].t < limit)
			k++;
		if (k - pos >= long_run) {
			if (got) /* the run stays at the root, unheld: the next call starts with it */
				break;
			k = run_end(c, limit, end);
			*evp = &ev[pos];
			*n = k - pos;
			c->pos = k - 1;
			m->held = 1;
			return 1;
		}
		/* a short run, [pos, k): copied (the root's head is the earliest
		 * event, so it is always taken) */
		if (k - pos > cap - got)
			k = pos + (uint32_t)(cap - got);
		memcpy(buf + got, &ev[pos], (k - pos) * sizeof *buf);
		got += k - pos;
		c->pos = k - 1;
		m->held = 1;
		/* an exec path lives in the chunk's strings, freed when its cursor
		 * is retired, which the next step may do: hand the copies out first */
		if (c->strs)
			break;
	}
	*evp = buf;
	*n = got;
	return 1;
}

/*
 * The merge on a thread of its own (arr__merge_open_blocks): the merge
 * thread copies the merged events, BLOCK_EVENTS at a time, into a ring of
 * BLOCK_RING blocks, and the consumer takes them in order. A block owns what
 * its events point to (exec paths, mark names are copied into its strs), so
 * the merge may retire the chunks they came from while the block waits. The
 * merge thread is the only one to touch the merge and its reader from
 * arr__merge_open_blocks() on (errors, their offsets and details included);
 * the consumer reads them only after the block that carries the error was
 * handed over (under the lock), or after arr__merge_close_blocks().
 */
#define BLOCK_EVENTS 4096
#define BLOCK_RING 4

struct block {
	struct arr_event ev[BLOCK_EVENTS];
	size_t n;
	int rc; /* after these events: 1 more to come, else the merge's end (0) or error */
	char *strs;
	size_t strs_len, strs_cap;
};

struct blocks {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* signalled on every change of the fields below */
	size_t head, count;  /* the filled blocks: b[head], ... in merge order */
	int held;            /* b[head] is the consumer's until its next call */
	int stop;
	int end_rc; /* the consumer has seen the last block: what every further call returns */
	int ended;
	struct block b[BLOCK_RING];
};

/* Copy ev->str, the strings of events [from, n) of b, into b->strs; the
 * events keep the offset + 1 until block_fix_strs(). 0 or ARR_ENOMEM with
 * b->n the first event not copied. */
static int block_copy_strs(struct block *b, size_t from)
{
	for (size_t i = from; i < b->n; i++) {
		const char *s = b->ev[i].str;
		if (!s)
			continue;
		size_t len = strlen(s) + 1;
		if (b->strs_cap - b->strs_len < len) {
			size_t cap = b->strs_cap ? b->strs_cap : 4096;
			while (cap - b->strs_len < len)
				cap *= 2;
			char *n = realloc(b->strs, cap);
			if (!n) {
				b->n = i;
				return ARR_ENOMEM;
			}
			b->strs = n;
			b->strs_cap = cap;
		}
		memcpy(b->strs + b->strs_len, s, len);
		b->ev[i].str = (const char *)(uintptr_t)(b->strs_len + 1);
		b->strs_len += len;
	}
	return 0;
}

/* The block's events point into its strs, now that it is no longer growing. */
static void block_fix_strs(struct block *b)
{
	if (!b->strs_len)
		return;
	for (size_t i = 0; i < b->n; i++)
		if (b->ev[i].str)
			b->ev[i].str = b->strs + ((uintptr_t)b->ev[i].str - 1);
}

/* Fill b with the next events of the merge, as arr_merge_next() would hand
 * them out one at a time, runs copied whole (up to the block's end). */
static void block_fill(struct arr_merge *m, struct block *b)
{
	size_t got = 0;
	b->strs_len = 0;
	b->rc = 1;
	if (m->pending) { /* met by the caller's last batch before the thread started */
		m->pending = 0;
		b->rc = m->pending_rc;
		b->n = 0;
		return;
	}
	while (got < BLOCK_EVENTS) {
		int rc = merge_step(m);
		if (rc != 1) {
			b->rc = rc;
			break;
		}
		struct cursor *c = m->ord[0].c;
		uint32_t pos = c->pos;
		uint32_t end = c->n - pos > BLOCK_EVENTS - got ? pos + (uint32_t)(BLOCK_EVENTS - got) : c->n;
		uint32_t k = run_end(c, m->limit, end);
		memcpy(b->ev + got, c->ev + pos, (k - pos) * sizeof *b->ev);
		b->n = got + (k - pos);
		if (c->strs && (rc = block_copy_strs(b, got)) != 0) {
			/* events before the one whose string could not be kept are delivered */
			k = pos + (uint32_t)(b->n - got);
			got = b->n;
			if (k > pos) {
				c->pos = k - 1;
				m->held = 1;
			}
			b->rc = rc;
			break;
		}
		got = b->n;
		c->pos = k - 1;
		m->held = 1;
	}
	b->n = got;
	block_fix_strs(b);
}

static void *blocks_main(void *arg)
{
	struct arr_merge *m = arg;
	struct blocks *q = m->blocks;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->stop && q->count == BLOCK_RING)
			pthread_cond_wait(&q->cond, &q->lock);
		if (q->stop)
			break;
		struct block *b = &q->b[(q->head + q->count) % BLOCK_RING];
		pthread_mutex_unlock(&q->lock);
		block_fill(m, b);
		pthread_mutex_lock(&q->lock);
		q->count++;
		pthread_cond_broadcast(&q->cond);
		if (b->rc != 1)
			break;
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int arr__merge_open_blocks(struct arr_merge *m)
{
	assert(!m->blocks);
	if (m->nidx < 4)
		return 0;
	struct blocks *q = calloc(1, sizeof *q);
	if (!q)
		return 0;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	m->blocks = q;
	if (pthread_create(&q->thread, NULL, blocks_main, m) != 0) {
		m->blocks = NULL;
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->cond);
		free(q);
		return 0;
	}
	return 1;
}

int arr__merge_next_block(struct arr_merge *m, const struct arr_event **evp, size_t *n)
{
	struct blocks *q = m->blocks;
	assert(q);
	if (q->ended)
		return q->end_rc;
	pthread_mutex_lock(&q->lock);
	if (q->held) { /* the block handed out last time goes back to the merge thread */
		struct block *b = &q->b[q->head];
		q->held = 0;
		q->head = (q->head + 1) % BLOCK_RING;
		q->count--;
		pthread_cond_broadcast(&q->cond);
		if (b->rc != 1) {
			q->ended = 1;
			q->end_rc = b->rc;
			pthread_mutex_unlock(&q->lock);
			return b->rc;
		}
	}
	while (!q->count)
		pthread_cond_wait(&q->cond, &q->lock);
	struct block *b = &q->b[q->head];
	pthread_mutex_unlock(&q->lock);
	if (!b->n) { /* the end or an error, nothing before it */
		q->ended = 1;
		q->end_rc = b->rc;
		return b->rc;
	}
	q->held = 1;
	*evp = b->ev;
	*n = b->n;
	return 1;
}

void arr__merge_close_blocks(struct arr_merge *m)
{
	struct blocks *q = m ? m->blocks : NULL;
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	for (size_t i = 0; i < BLOCK_RING; i++)
		free(q->b[i].strs);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
	m->blocks = NULL;
}

void arr_merge_close(struct arr_merge *m)
{
	if (!m)
		return;
	arr__merge_close_blocks(m);
	ahead_stop(m);
	for (size_t i = 0; i < m->nord; i++)
		cursor_free(m->ord[i].c);
	while (m->spare) {
		struct cursor *c = m->spare;
		m->spare = c->next_spare;
		cursor_free(c);
	}
	free(m->ord);
	free(m->idx);
	free(m);
}

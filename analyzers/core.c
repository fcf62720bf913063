/*
 * core.c - the one pass behind every trace analysis (analysis_internal.h):
 * merged events in, the live-block model and threads kept once, semantic
 * callbacks out to the selected analyzers; arr_analyze_trace().
 */
#define _GNU_SOURCE /* mremap */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "allocrr/stacks.h"
#include "format.h"
#include "hot.h"

static const char *const an_names[] = {
#define AN_NAME(name, str) str,
	ARR_ANALYSIS_MAP(AN_NAME)
#undef AN_NAME
};

const char *arr_analysis_name(unsigned an) { return an < ARR_AN_COUNT_ ? an_names[an] : NULL; }

int arr_analysis_from_name(const char *name)
{
	for (unsigned i = 0; i < ARR_AN_COUNT_; i++)
		if (!strcmp(name, an_names[i]))
			return (int)i;
	return -1;
}

/* ---- the live set ---- */

static inline size_t live_slot(const struct an_live *m, uint64_t key)
{
	return (size_t)((key >> 4) * 0x9E3779B97F4A7C15ull >> 20) & m->mask;
}

/*
 * The table's memory. From 2 MiB up it is mapped 2 MiB-aligned and marked
 * MADV_HUGEPAGE (transparent huge pages are often in "madvise" mode): the
 * lookups are random over 16-128 MiB, so with 4 KiB pages nearly every one
 * misses the TLB as well as the caches, and the page walk misses too. With
 * 2 MiB pages the whole table is a few dozen TLB entries. Fresh anonymous
 * memory is zero, as calloc's would be.
 */
#define LIVE_HUGE ((size_t)2 << 20)

static __attribute__((noinline)) struct an_slot *slots_alloc(size_t cap)
{
	size_t len = cap * sizeof(struct an_slot);
	if (len < LIVE_HUGE)
		return calloc(cap, sizeof(struct an_slot));
	char *p = mmap(NULL, len + LIVE_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + LIVE_HUGE - 1) & ~(uintptr_t)(LIVE_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + LIVE_HUGE - a));
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE); /* advice: without THP the table works as before */
#endif
	return (struct an_slot *)a;
}

static __attribute__((noinline)) void slots_free(struct an_slot *s, size_t cap)
{
	if (!s)
		return;
	size_t len = cap * sizeof(struct an_slot);
	if (len < LIVE_HUGE)
		free(s);
	else
		munmap(s, len);
}

/* Every entry of src into the empty table dst (out of place). */
static void live_copy(struct an_live *dst, const struct an_slot *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (src[i].key) {
			size_t s = live_slot(dst, src[i].key);
			while (dst->slots[s].key)
				s = (s + 1) & dst->mask;
			dst->slots[s] = src[i];
		}
}

/*
 * A mapped table to twice its length, its pages moved, not copied: mremap
 * to a 2 MiB-aligned address (both ends aligned, so the kernel moves the
 * huge pages whole); only the new half is fresh memory. The kernel zeroing
 * fresh huge pages was most of python3's growth cost (a 64 MiB table had
 * cost 126 MiB of fresh memory). NULL, the old table untouched, on failure.
 */
static struct an_slot *slots_double(struct an_slot *old, size_t oldlen)
{
	size_t len = 2 * oldlen;
	char *p = mmap(NULL, len + LIVE_HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + LIVE_HUGE - 1) & ~(uintptr_t)(LIVE_HUGE - 1));
	if (mremap(old, oldlen, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) == MAP_FAILED) {
		munmap(p, len + LIVE_HUGE);
		return NULL;
	}
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + LIVE_HUGE - a));
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE);
#endif
	return (struct an_slot *)a;
}

/*
 * Fault in fresh table memory on both cores. Most of a growth's time is
 * the kernel zeroing the new half's huge pages at their first touch (in
 * this VM a fresh huge page costs far more than 512 small ones: the host
 * backs it anew), and while the table grows the read-ahead thread soon
 * waits for the analysis: the second core is free. A helper thread
 * populates the upper half of [p, p + len) while the caller populates the
 * lower. Advice only: where MADV_POPULATE_WRITE is refused (kernels before
 * 5.14), the rehash faults the pages in as before.
 */
#define LIVE_POPULATE_SPLIT ((size_t)16 << 20) /* below: one thread */

struct populate {
	char *p;
	size_t len;
};

static void *populate_run(void *arg)
{
	struct populate *w = arg;
#ifdef MADV_POPULATE_WRITE
	madvise(w->p, w->len, MADV_POPULATE_WRITE);
#endif
	return NULL;
}

static void slots_populate(char *p, size_t len)
{
	struct populate lo = {p, len}, hi;
	pthread_t th;
	int two = 0;
	if (len >= LIVE_POPULATE_SPLIT) {
		size_t half = len / 2 & ~(LIVE_HUGE - 1);
		lo.len = half;
		hi = (struct populate){p + half, len - half};
		two = !pthread_create(&th, NULL, populate_run, &hi);
		if (!two)
			lo.len = len;
	}
	populate_run(&lo);
	if (two)
		pthread_join(th, NULL);
}

#define LIVE_DEFER 256

/*
 * Rehash after doubling in place: the entries are in [0, oldcap), the new
 * half is empty, m->mask is the new one. Each entry's new home is its old
 * home h or h + oldcap. The old table is walked cluster by cluster from
 * just after an empty slot; each entry is taken out and inserted again.
 * Why that is safe: an entry at old position j with old home h lands at
 * the first free slot from its new home; from h up to j every position was
 * walked already (no empty slot lies between h and j, the walk started at
 * one), so it lands at or before j, or in the new half, where nothing is
 * ever taken out. Its probe path therefore never crosses a slot that is
 * emptied later. The exception is a probe that wraps from the table's end
 * to slot 0, whose slots may not be walked yet: those entries are set
 * aside (few: the end of the new half) and inserted once the walk is done.
 * 0, or 1 if more than LIVE_DEFER were set aside (*defer then holds
 * LIVE_DEFER of them, the table the rest: the caller copies both out).
 */
static int live_rehash_in_place(struct an_live *m, size_t oldcap, struct an_slot *defer, size_t *ndefer)
{
	size_t e = 0;
	while (m->slots[e].key) /* the table is at most 3/4 full: there is one */
		e++;
	*ndefer = 0;
	for (size_t k = 1; k <= oldcap; k++) {
		size_t i = (e + k) & (oldcap - 1);
		if (!m->slots[i].key)
			continue;
		struct an_slot x = m->slots[i];
		m->slots[i].key = 0;
		size_t s = live_slot(m, x.key);
		while (m->slots[s].key && s != m->mask)
			s++;
		if (m->slots[s].key) { /* would wrap to slot 0 */
			if (*ndefer == LIVE_DEFER) {
				m->slots[i] = x; /* back where it was: it is still in the table */
				return 1;
			}
			defer[(*ndefer)++] = x;
			continue;
		}
		m->slots[s] = x;
	}
	for (size_t d = 0; d < *ndefer; d++) {
		size_t s = live_slot(m, defer[d].key);
		while (m->slots[s].key)
			s = (s + 1) & m->mask;
		m->slots[s] = defer[d];
	}
	*ndefer = 0;
	return 0;
}

#ifdef __SANITIZE_ADDRESS__
/* The sanitizer build checks the table after every growth: each entry is
 * found from its home without crossing an empty slot, and count is right. */
static void live_check(const struct an_live *m)
{
	size_t n = 0;
	for (size_t i = 0; i <= m->mask; i++) {
		if (!m->slots[i].key)
			continue;
		n++;
		for (size_t s = live_slot(m, m->slots[i].key); s != i; s = (s + 1) & m->mask)
			if (!m->slots[s].key)
				abort();
	}
	if (n != m->count)
		abort();
}
#else
static inline void live_check(const struct an_live *m) { (void)m; }
#endif

static size_t live_limit(size_t cap);

static __attribute__((noinline)) int live_grow(struct an_live *m)
{
	size_t oldcap = m->mask ? m->mask + 1 : 0, cap = oldcap ? oldcap * 2 : 4096;
	size_t oldlen = oldcap * sizeof(struct an_slot);
	if (oldlen >= LIVE_HUGE) {
		struct an_slot *d = slots_double(m->slots, oldlen);
		if (d) {
			slots_populate((char *)d + oldlen, oldlen);
			struct an_slot *df = malloc(LIVE_DEFER * sizeof *df);
			size_t nd = 0;
			m->slots = d;
			m->mask = cap - 1;
			if (!df || live_rehash_in_place(m, oldcap, df, &nd)) {
				/* rare: copy everything out of place (the table and what was set aside) */
				struct an_live n = {slots_alloc(cap), cap - 1, m->count, 0};
				if (!n.slots) {
					free(df);
					return ARR_ENOMEM;
				}
				live_copy(&n, m->slots, cap);
				if (df)
					live_copy(&n, df, nd);
				slots_free(m->slots, cap);
				*m = n;
			}
			free(df);
			m->limit = live_limit(cap);
			live_check(m);
			return 0;
		}
		/* no room to move it: try a fresh table */
	}
	struct an_live n = {slots_alloc(cap), cap - 1, m->count, 0};
	if (!n.slots)
		return ARR_ENOMEM;
	if (oldcap)
		live_copy(&n, m->slots, oldcap);
	slots_free(m->slots, oldcap);
	*m = n;
	m->limit = live_limit(cap);
	live_check(m);
	return 0;
}

static inline struct an_block *live_find(const struct an_live *m, uint64_t key, size_t *slot)
{
	if (!m->mask)
		return NULL;
	for (size_t s = live_slot(m, key); m->slots[s].key; s = (s + 1) & m->mask)
		if (m->slots[s].key == key) {
			*slot = s;
			return &m->slots[s].b;
		}
	return NULL;
}

/*
 * The slot and the five after it (three or four lines). An insertion probes
 * from the home slot to the first empty one, and a removal's backward shift
 * reads on to the end of the cluster: with linear probing at load a that is
 * (1 + 1/(1-a)^2)/2 slots on average, 2.5 at 1/2, 5 at 2/3 (python3's 1.39M
 * live blocks), 8.5 at 3/4; the home slot and the next alone left the rest
 * of the walk to demand misses (python3: -20% CPU time with six slots;
 * notes/2026-12-02-analyzer-speed-11.md). Addresses, not pointers, past the
 * table's end: a prefetch never faults; they wrap to slot 0 in one lookup
 * in 2^12 or more.
 */
#define LIVE_PREFETCH_SLOTS 6

static inline void live_prefetch(const struct an_live *m, uint64_t key)
{
	if (m->mask) {
		uintptr_t a = (uintptr_t)&m->slots[live_slot(m, key)];
		/* slots 0, 1, 3, 5: every line of slots 0-5, whichever half of a line slot 0 is in */
		__builtin_prefetch((const void *)a);
		for (unsigned k = 1; k < LIVE_PREFETCH_SLOTS; k += 2)
			__builtin_prefetch((const void *)(a + k * sizeof(struct an_slot)));
	}
}

static void live_remove_slot(struct an_live *m, size_t s)
{
	/* backward shift: later entries of the probe run move up into the hole */
	size_t hole = s;
	for (size_t i = (s + 1) & m->mask; m->slots[i].key; i = (i + 1) & m->mask) {
		size_t home = live_slot(m, m->slots[i].key);
		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].key = 0;
	m->count--;
}

/*
 * When the table grows: at half full, except past LIVE_DENSE_SLOTS, where
 * it grows at three quarters. Linear probing at 3/4 costs longer runs (the
 * stress workload, 98,000 live blocks churning in a 128k-slot table: +38%
 * instructions), but a table that large misses the caches on every lookup
 * anyway, and it is half the memory (python3's 1.39M live blocks: 64 MiB
 * instead of 128; 111 MB max RSS instead of 209; +2% instructions).
 */
#define LIVE_DENSE_SLOTS (1u << 20) /* 32 MiB of slots */

/* an insertion grows the table from this count up: computed once per growth,
 * not on every allocation (0 in an empty table: the first insertion makes it) */
static size_t live_limit(size_t cap) { return cap <= LIVE_DENSE_SLOTS ? cap / 2 : cap / 4 * 3; }

static inline int live_full(const struct an_live *m) { return m->count >= m->limit; }

/* A slot for key (new or existing: *fresh says which), or NULL when out of memory. */
static inline struct an_block *live_insert(struct an_live *m, uint64_t key, int *fresh)
{
	if (live_full(m) && live_grow(m))
		return NULL;
	size_t s = live_slot(m, key);
	while (m->slots[s].key && m->slots[s].key != key)
		s = (s + 1) & m->mask;
	*fresh = !m->slots[s].key;
	if (*fresh) {
		m->slots[s].key = key;
		m->count++;
	}
	return &m->slots[s].b;
}

void arr__live_each(const struct an_core *c, void (*fn)(void *ctx, uint64_t addr, const struct an_block *b), void *ctx)
{
	if (c->live.mask)
		for (size_t i = 0; i <= c->live.mask; i++)
			if (c->live.slots[i].key)
				fn(ctx, c->live.slots[i].key, &c->live.slots[i].b);
}

uint64_t arr__duration(const struct an_core *c) { return c->end_t > c->last_t ? c->end_t : c->last_t; }

/* ---- threads ---- */

static __attribute__((noinline)) uint32_t thread_of(struct an_core *c, uint32_t tid)
{
	if (tid == c->last_tid)
		return c->last_thread;
	uint64_t v;
	uint32_t idx;
	struct an_tid_cache *tc = &c->tid_cache[tid % ARR__TID_CACHE];
	if (tc->idx1 && tc->tid == tid) {
		idx = tc->idx1 - 1;
	} else if (arr_ptrmap_get(&c->tid_index, (uint64_t)tid + 1, &v)) {
		idx = (uint32_t)(v - 1);
	} else if (c->nthreads == ARR__MAX_THREADS) {
		idx = ARR__MAX_THREADS - 1;
	} else {
		if (c->nthreads == c->threads_cap) {
			size_t cap = c->threads_cap ? c->threads_cap * 2 : 16;
			struct an_thread *n = realloc(c->threads, cap * sizeof *n);
			if (!n) {
				c->oom = ARR_ENOMEM;
				return 0;
			}
			c->threads = n;
			c->threads_cap = cap;
		}
		idx = (uint32_t)c->nthreads;
		if (arr_ptrmap_put(&c->tid_index, (uint64_t)tid + 1, (uint64_t)idx + 1)) {
			c->oom = ARR_ENOMEM;
			return 0;
		}
		c->threads[idx] = (struct an_thread){.tid = tid};
		c->nthreads++;
	}
	*tc = (struct an_tid_cache){tid, idx + 1};
	c->last_tid = tid;
	c->last_thread = idx;
	c->cur_thread = &c->threads[idx];
	return idx;
}

/* A thread switch: the thread the cache names, in a leaf function (no
 * registers to save; threads that take turns switch every few events:
 * stress made 470k calls in 2M events), else thread_of. Out of line, so
 * the loop of one-thread traces is compiled as without it. */
static __attribute__((noinline)) uint32_t thread_switch(struct an_core *c, uint32_t tid)
{
	const struct an_tid_cache *tc = &c->tid_cache[tid % ARR__TID_CACHE];
	if (tc->idx1 && tc->tid == tid) {
		uint32_t idx = tc->idx1 - 1;
		c->last_tid = tid;
		c->last_thread = idx;
		c->cur_thread = &c->threads[idx];
		return idx;
	}
	return thread_of(c, tid);
}

/* ---- shared helpers ---- */

void arr__doc_log2(struct arr_doc *arr, const uint64_t *count, const uint64_t *bytes, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (!count[k])
			continue;
		struct arr_doc *o = arr_doc_push_obj(arr);
		uint64_t lo = k ? 1ull << (k - 1) : 0, hi = k == 0 ? 1 : k >= 64 ? UINT64_MAX : 1ull << k;
		arr_doc_set_int(o, "lo", (int64_t)lo);
		arr_doc_set_int(o, "hi", hi > INT64_MAX ? INT64_MAX : (int64_t)hi);
		arr_doc_set_int(o, "count", (int64_t)count[k]);
		if (bytes)
			arr_doc_set_int(o, "bytes", (int64_t)bytes[k]);
	}
}

int arr__timeline_init(struct an_timeline *tl, unsigned cap, uint64_t expected_span)
{
	tl->cap = cap < 2 ? 2 : cap;
	tl->b = calloc(tl->cap, sizeof *tl->b);
	tl->width = expected_span ? expected_span / tl->cap + 1 : 1000;
	return tl->b ? 0 : ARR_ENOMEM;
}

void arr__timeline_release(struct an_timeline *tl)
{
	free(tl->b);
	tl->b = NULL;
}

static void bucket_merge(struct an_bucket *d, const struct an_bucket *a, const struct an_bucket *b)
{
	if (!a->used) {
		*d = *b;
		return;
	}
	*d = *a;
	if (b->used) {
		if (b->min0 < d->min0)
			d->min0 = b->min0;
		if (b->max0 > d->max0)
			d->max0 = b->max0;
		if (b->max1 > d->max1)
			d->max1 = b->max1;
	}
}

void arr__timeline_add_slow(struct an_timeline *tl, uint64_t t, uint64_t v0, uint64_t v1)
{
	uint64_t i = t / tl->width;
	while (i >= tl->cap) {
		for (unsigned j = 0; j < tl->cap / 2; j++) {
			struct an_bucket a = tl->b[2 * j], b = tl->b[2 * j + 1];
			bucket_merge(&tl->b[j], &a, &b);
		}
		if (tl->cap & 1) {
			tl->b[tl->cap / 2] = tl->b[tl->cap - 1];
			memset(&tl->b[tl->cap / 2 + 1], 0, (tl->cap - tl->cap / 2 - 1) * sizeof *tl->b);
		} else {
			memset(&tl->b[tl->cap / 2], 0, (tl->cap - tl->cap / 2) * sizeof *tl->b);
		}
		tl->width *= 2;
		i = t / tl->width;
	}
	tl->cur = (unsigned)i;
	tl->cur_lo = i * tl->width;
	tl->cur_hi = tl->cur_lo + tl->width;
	arr__bucket_put(&tl->b[i], v0, v1);
}

void arr__timeline_doc(const struct an_timeline *tl, struct arr_doc *obj, const char *name0_min, const char *name0_max,
		       const char *name1)
{
	struct arr_doc *t = arr_doc_set_arr(obj, "t");
	struct arr_doc *mn = name0_min ? arr_doc_set_arr(obj, name0_min) : NULL;
	struct arr_doc *mx = arr_doc_set_arr(obj, name0_max);
	struct arr_doc *v1 = name1 ? arr_doc_set_arr(obj, name1) : NULL;
	for (unsigned i = 0; i < tl->cap; i++) {
		const struct an_bucket *b = &tl->b[i];
		if (!b->used)
			continue;
		arr_doc_push_int(t, (int64_t)(i * tl->width));
		if (mn)
			arr_doc_push_int(mn, (int64_t)b->min0);
		arr_doc_push_int(mx, (int64_t)b->max0);
		if (v1)
			arr_doc_push_int(v1, (int64_t)b->max1);
	}
}

void arr__slope_add(struct an_slope *s, uint64_t t, double y)
{
	if (!s->started) {
		s->t0 = t;
		s->started = 1;
	}
	double x = (double)(t - s->t0) / 1e9;
	s->n += 1;
	s->st += x;
	s->sy += y;
	s->stt += x * x;
	s->sty += x * y;
}

double arr__slope_per_s(const struct an_slope *s)
{
	double d = s->n * s->stt - s->st * s->st;
	if (s->n < 2 || d <= 0)
		return 0;
	return (s->n * s->sty - s->st * s->sy) / d;
}

/* ---- the pass ---- */

struct slot {
	const struct an_ops *ops;
	void *st;
	int hidden; /* kept for another analyzer (phases), writes no section */
};

struct pass {
	struct an_core c;
	struct slot an[ARR_AN_COUNT_];
	unsigned nan;
	/* per callback, only the analyzers that use it; the function and its
	 * state side by side, one load less per call */
	struct {
		void (*fn)(struct an_core *, void *, const struct arr_event *);
		void *st;
	} call[ARR_AN_COUNT_], other[ARR_AN_COUNT_];
	struct {
		void (*fn)(struct an_core *, void *, const struct arr_event *, struct an_block *);
		void *st;
	} failed[ARR_AN_COUNT_];
	struct {
		void (*fn)(struct an_core *, void *, uint64_t, struct an_block *, const struct arr_event *, int);
		void *st;
	} release[ARR_AN_COUNT_];
	struct {
		void (*fn)(struct an_core *, void *, uint64_t, struct an_block *, const struct arr_event *);
		void *st;
	} resize[ARR_AN_COUNT_], alloc[ARR_AN_COUNT_];
	struct {
		void (*fn)(struct an_core *, void *, struct an_block *, uint32_t);
		void *st;
	} cross[ARR_AN_COUNT_];
	unsigned ncall, nfailed, nrelease, nresize, ncross, nalloc, nother;
	/* the analyzers inlined into the loop (hot.h): HOT_* bits, and their state */
	unsigned hot;
	struct an_sizes *sz;
	struct an_lifetimes *lt;
	struct an_live_state *lv;
	struct an_zeroing *zr;
};

#define HOT_SIZES 0x1
#define HOT_LIFETIMES 0x2
#define HOT_LIVE 0x4
#define HOT_ZEROING 0x8
#define HOT_ALL 0xf
/* some analyzer has a call, resize, release or alloc callback: without one
 * (the default analysis) the loop is compiled without their loops, whose
 * counts it would otherwise load on every event */
#define HOT_CB 0x10
#define ALWAYS_INLINE inline __attribute__((always_inline))

/*
 * The event's fields the loop uses, read once: the stores to the core's
 * counters could alias *ev as far as the compiler knows, so every use of
 * ev->x after one would load it again, and the operation's facts would be
 * looked up again. Where the loop is specialised on the operation (run()),
 * op is a constant and the facts fold away.
 */
struct ev_view {
	uint64_t t, ptr, ret, req;
	unsigned op;
	int releases, allocates;
};

/* hot: the HOT_* bits of p->hot, a constant where the loop is specialised */
static ALWAYS_INLINE void do_release(struct pass *p, const struct arr_event *ev, const struct ev_view *v, uint32_t th,
				     struct an_thread *t, unsigned hot)
{
	struct an_core *c = &p->c;
	size_t slot;
	struct an_block *b = live_find(&c->live, v->ptr, &slot);
	if (!b) {
		c->unknown_frees++;
		return;
	}
	/* temporary: nothing allocated by its thread since (the thread's latest
	 * allocation is this very block; live addresses are unique) */
	int temporary = v->op == ARR_OP_FREE && c->threads[b->thread].last_alloc == v->ptr;
	c->temporaries += temporary;
	c->frees++;
	if (v->op != ARR_OP_FREE) {
		if (hot & HOT_SIZES)
			arr__sizes_on_resize(c, p->sz, v->ptr, b, ev);
		if (hot & HOT_CB)
			for (unsigned i = 0; i < p->nresize; i++)
				p->resize[i].fn(c, p->resize[i].st, v->ptr, b, ev);
	}
	if (b->thread != th)
		for (unsigned i = 0; i < p->ncross; i++)
			p->cross[i].fn(c, p->cross[i].st, b, th);
	if (hot & HOT_LIFETIMES)
		arr__lifetimes_on_release(c, p->lt, b, v->t, temporary);
	if (hot & HOT_LIVE)
		arr__live_on_release(c, p->lv, b, v->op, v->allocates);
	if (hot & HOT_ZEROING)
		arr__zeroing_on_release(c, p->zr, b, v->op);
	if (hot & HOT_CB)
		for (unsigned i = 0; i < p->nrelease; i++)
			p->release[i].fn(c, p->release[i].st, v->ptr, b, ev, temporary);
	c->live_bytes -= b->size;
	c->live_blocks--;
	t->frees++;
	live_remove_slot(&c->live, slot);
}

static ALWAYS_INLINE void do_alloc(struct pass *p, const struct arr_event *ev, const struct ev_view *v, uint32_t th,
				   struct an_thread *t, unsigned hot)
{
	struct an_core *c = &p->c;
	int fresh;
	struct an_block *b = live_insert(&c->live, v->ret, &fresh);
	if (!b) {
		c->oom = ARR_ENOMEM;
		return;
	}
	if (!fresh) { /* its free was not recorded: forget the old block */
		c->live_bytes -= b->size;
		c->live_blocks--;
	}
	uint64_t req = v->req;
	t->allocs++;
	t->alloc_bytes += req;
	t->last_alloc = v->ret;
	c->allocs++;
	*b = (struct an_block){
		.size = req, .t = v->t < ARR__MAX_T ? v->t : ARR__MAX_T, .evno = c->evno, .op = v->op, .thread = th};
	c->bytes_requested += req;
	c->live_bytes += req;
	c->live_blocks++;
	if (c->live_bytes > c->peak_bytes) {
		c->peak_bytes = c->live_bytes;
		c->peak_t = v->t;
		c->peak_evno = c->evno;
	}
	if (c->live_blocks > c->peak_blocks)
		c->peak_blocks = c->live_blocks;
	if (c->live_bytes > c->win_peak) {
		c->win_peak = c->live_bytes;
		c->win_peak_t = v->t;
	}
	const unsigned sc = arr__log2_bucket(req); /* once for both */
	if (hot & HOT_SIZES)
		arr__sizes_on_alloc(c, p->sz, req, sc, v->op, v->ptr);
	if (hot & HOT_LIFETIMES)
		arr__lifetimes_on_alloc(p->lt, sc);
	if (hot & HOT_LIVE)
		arr__live_on_alloc(c, p->lv);
	if (hot & HOT_ZEROING)
		arr__zeroing_on_alloc(c, p->zr, v->ret, b, v->op);
	if (hot & HOT_CB)
		for (unsigned i = 0; i < p->nalloc; i++)
			p->alloc[i].fn(c, p->alloc[i].st, v->ret, b, ev);
}

static ALWAYS_INLINE void handle(struct pass *p, const struct arr_event *ev, unsigned hot)
{
	struct an_core *c = &p->c;
	const struct ev_view v = {.t = ev->t,
				  .ptr = ev->ptr,
				  .ret = ev->ret,
				  .op = ev->op,
				  .req = arr_event_bytes(ev, c->page_size),
				  .releases = arr_event_releases(ev),
				  .allocates = arr_event_allocates(ev)};
	const uint32_t tid = ev->tid;
	const int failed = ev->failed;
	c->t = v.t;
	if (v.t > c->last_t)
		c->last_t = v.t;
	c->ops[v.op < ARR_OP_MAX_ ? v.op : 0]++;
	if (!arr_op_is_call(v.op)) {
		if (tid)
			thread_of(c, tid);
		for (unsigned i = 0; i < p->nother; i++)
			p->other[i].fn(c, p->other[i].st, ev);
		c->evno++;
		return;
	}
	uint32_t th = tid == c->last_tid ? c->last_thread : thread_switch(c, tid);
	if (c->oom)
		return;
	struct an_thread *t = c->cur_thread;
	c->calls++;
	t->calls++;
	if (hot & HOT_CB)
		for (unsigned i = 0; i < p->ncall; i++)
			p->call[i].fn(c, p->call[i].st, ev);
	if (failed) {
		c->failed++;
		struct an_block *old = NULL;
		size_t slot;
		if (arr_op_takes_ptr(v.op) && v.ptr && !v.releases && (old = live_find(&c->live, v.ptr, &slot)))
			old->flags |= ARR__BLK_FAILED_REALLOC;
		for (unsigned i = 0; i < p->nfailed; i++)
			p->failed[i].fn(c, p->failed[i].st, ev, old);
	}
	if (v.releases)
		do_release(p, ev, &v, th, t, hot);
	else if (v.op == ARR_OP_FREE)
		c->null_frees++; /* a free releases unless its pointer is NULL */
	if (v.allocates)
		do_alloc(p, ev, &v, th, t, hot);
	c->evno++;
}

/* The two calls most events are, with their facts known at compile time. */
static ALWAYS_INLINE void handle_any(struct pass *p, const struct arr_event *ev, unsigned hot)
{
	if (ev->op == ARR_OP_FREE)
		handle(p, ev, hot);
	else if (ev->op == ARR_OP_MALLOC)
		handle(p, ev, hot);
	else
		handle(p, ev, hot);
}

#define PREFETCH_AHEAD 16

/* One run of merged events. hot is a constant in the copies below, so the
 * compiler drops the tests of the analyzers left out. */
static ALWAYS_INLINE void run(struct pass *p, const struct arr_event *evs, size_t n, unsigned hot)
{
	struct an_core *c = &p->c;
	size_t i = 0;
	/* the live-set slot of an event a few ahead: its miss overlaps this work */
	for (; i + PREFETCH_AHEAD < n && !c->oom; i++) {
		/* the events themselves come from the read-ahead thread's core:
		 * fetch them further ahead still, so reading a->op below does not wait */
		if (i + 3 * PREFETCH_AHEAD < n)
			__builtin_prefetch(&evs[i + 3 * PREFETCH_AHEAD].op);
		const struct arr_event *a = &evs[i + PREFETCH_AHEAD];
		live_prefetch(&c->live, a->op == ARR_OP_FREE ? a->ptr : a->ret);
		handle_any(p, &evs[i], hot);
	}
	for (; i < n && !c->oom; i++)
		handle_any(p, &evs[i], hot);
}

static void run_all(struct pass *p, const struct arr_event *evs, size_t n) { run(p, evs, n, HOT_ALL); }
static void run_none(struct pass *p, const struct arr_event *evs, size_t n) { run(p, evs, n, 0); }
static void run_some(struct pass *p, const struct arr_event *evs, size_t n) { run(p, evs, n, p->hot); }

static void dispatch(struct pass *p, const struct arr_event *evs, size_t n)
{
	if (p->hot == HOT_ALL)
		run_all(p, evs, n);
	else if (!p->hot)
		run_none(p, evs, n);
	else
		run_some(p, evs, n);
}

/*
 * Short runs, gathered. Threads that allocate at the same time make the
 * merge alternate every few events (stress: 4 threads on 2 cores, runs of
 * ~4 events), and run() prefetches the live-set slots PREFETCH_AHEAD events
 * ahead within a run only: in runs that short nothing was prefetched. The
 * merge copies runs shorter than GATHER_SHORT, in merge order, into one
 * array of up to GATHER_EVENTS that run() sees as one run
 * (arr__merge_next_batch); longer runs are handled in place. Events are
 * handled in the same order as ever, so a trace error or an out-of-memory
 * stop leaves the same state.
 */
#define GATHER_SHORT 64
#define GATHER_EVENTS 1024

/*
 * The merge on a thread of its own (arr__merge_open_blocks) takes its
 * work off the analysing thread, and costs a copy of every event on the
 * other: a gain where the merge is work, threads that take turns (stress:
 * 4.2 events a run, the merge and the gathering 44 instructions an event
 * of the analysing thread's 260), a loss where runs are long (python3,
 * sqlite3: the merge is ~0 on the analysing thread, the copies are +30% of
 * the process's instructions). So the merge starts inline, and its thread
 * starts at the end of the first window of BLOCKS_PROBE events of which at
 * least a quarter came in gathered batches (runs shorter than
 * GATHER_SHORT): windows, not the trace's start alone, which is often
 * threads starting one by one. Either way the same events in the same
 * order (docs/notes/2026-12-02-analyzer-speed-10.md).
 */
#define BLOCKS_PROBE (1u << 16)

static const struct an_ops *const all_ops[ARR_AN_COUNT_] = {
	[ARR_AN_SUMMARY] = &arr__an_summary,
	[ARR_AN_SIZES] = &arr__an_sizes,
	[ARR_AN_LIFETIMES] = &arr__an_lifetimes,
	[ARR_AN_LIVE] = &arr__an_live,
	[ARR_AN_LEAKS] = &arr__an_leaks,
	[ARR_AN_THREADS] = &arr__an_threads,
	[ARR_AN_RSS] = &arr__an_rss,
	[ARR_AN_ZEROING] = &arr__an_zeroing,
	[ARR_AN_PHASES] = &arr__an_phases,
	[ARR_AN_SITES] = &arr__an_sites,
};

static void trace_section(struct an_core *c, struct arr_trace *tr, struct arr_doc *out, int rc)
{
	const struct arr_trace_meta *meta = c->meta;
	const struct arr_trace_end *end = arr_trace_end(tr);
	int clean = rc == 0 && end->present;
	struct arr_doc *t = arr_doc_set_obj(out, "trace");
	arr_doc_set_str(t, "path", arr_trace_path(tr));
	arr_doc_set_int(t, "pid", meta->pid);
	arr_doc_set_int(t, "ppid", meta->ppid);
	arr_doc_set_str(t, "exe", meta->exe);
	arr_doc_set_str(t, "argv", meta->argv);
	arr_doc_set_str(t, "libc", meta->libc);
	if (meta->parent_trace)
		arr_doc_set_str(t, "parent_trace", meta->parent_trace);
	arr_doc_set_int(t, "duration_ns", (int64_t)arr__duration(c));
	arr_doc_set_str(t, "ending", clean ? arr_end_name(end->reason) : "truncated");
	if (clean)
		arr_doc_set_int(t, "status", end->status);
	arr_doc_set_int(t, "events", (int64_t)c->evno);
	arr_doc_set_bool(t, "truncated", !clean);
	arr_doc_set_int(t, "page_size", (int64_t)c->page_size);
}

/* The schema's rss.phases: the RSS columns of each phase, beside the rest of the RSS figures. */
static void rss_phases(struct arr_doc *out)
{
	static const char *const keys[] = {
		"name", "by", "from_ns", "to_ns", "rss_samples", "rss_peak", "rss_growth_bytes_per_s"};
	struct arr_doc *rss = arr_doc_get(out, "rss"), *phases = arr_doc_get(out, "phases");
	if (!rss || !phases || phases->type != ARR_DOC_ARRAY)
		return;
	struct arr_doc *arr = arr_doc_set_arr(rss, "phases");
	for (size_t i = 0; i < phases->len; i++) {
		struct arr_doc *o = arr_doc_push_obj(arr);
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
			struct arr_doc *v = arr_doc_get(phases->items[i], keys[k]);
			if (v)
				arr_doc_set(o, keys[k], arr_doc_clone(v));
		}
	}
}

int arr_analyze_trace(struct arr_trace *tr, const struct arr_analysis_options *opt, struct arr_doc *out)
{
	static const struct arr_analysis_options defaults = ARR_ANALYSIS_OPTIONS_INIT;
	if (!opt)
		opt = &defaults;
	struct pass *p = calloc(1, sizeof *p);
	if (!p)
		return ARR_ENOMEM;
	struct an_core *c = &p->c;
	c->opt = opt;
	c->last_tid = UINT64_MAX; /* no thread yet: matches no tid */
	c->meta = arr_trace_meta(tr);
	c->tr = tr;
	c->page_size = c->meta->page_size;
	c->points = opt->timeline_points ? opt->timeline_points : 2000;
	c->top = opt->top ? opt->top : 20;
	c->tid_index = (struct arr_ptrmap)ARR_PTRMAP_INIT;

	struct arr_merge *m = NULL;
	int rc = arr_merge_open(&m, tr);
	const struct arr_trace_end *end = arr_trace_end(tr);
	if (end->present)
		c->end_t = end->t;
	uint32_t what = opt->what ? opt->what : (1u << ARR_AN_COUNT_) - 1;
	for (unsigned i = 0; i < ARR_AN_COUNT_ && rc == 0; i++) {
		/* phases cut the size and lifetime histograms: they run, unseen, without their sections */
		int hidden = !(what & (1u << i)) && (what & (1u << ARR_AN_PHASES)) &&
			     (i == ARR_AN_SIZES || i == ARR_AN_LIFETIMES);
		if (!(what & (1u << i)) && !hidden)
			continue;
		/* call sites: only for traces recorded with stacks */
		if (i == ARR_AN_SITES && !(c->meta->features & ARR_TRACE_FEAT_STACKS))
			continue;
		const struct an_ops *o = all_ops[i];
		void *st = calloc(1, o->state_size ? o->state_size : 1);
		if (!st) {
			rc = ARR_ENOMEM;
			break;
		}
		p->an[p->nan++] = (struct slot){o, st, hidden};
		if (o->begin && (rc = o->begin(c, st)) != 0)
			break;
		/* inlined into the loop (hot.h) */
		if (o->id == ARR_AN_SIZES) {
			p->sz = st;
			if (what & (1u << ARR_AN_PHASES))
				c->sizes = st;
			p->hot |= HOT_SIZES;
		} else if (o->id == ARR_AN_LIFETIMES) {
			p->lt = st;
			if (what & (1u << ARR_AN_PHASES))
				c->lifetimes = st;
			p->hot |= HOT_LIFETIMES;
		} else if (o->id == ARR_AN_LIVE) {
			p->lv = st;
			p->hot |= HOT_LIVE;
		} else if (o->id == ARR_AN_ZEROING) {
			p->zr = st;
			p->hot |= HOT_ZEROING;
		}
		unsigned w = o->wants ? o->wants(c, st) : ~0u;
#define ADD_CB(list, field, bit)                           \
	do {                                               \
		if (o->field && (w & (bit))) {             \
			p->list[p->n##list].fn = o->field; \
			p->list[p->n##list++].st = st;     \
		}                                          \
	} while (0)
		ADD_CB(call, call, ARR__CB_CALL);
		ADD_CB(failed, failed, ARR__CB_FAILED);
		ADD_CB(release, release, ARR__CB_RELEASE);
		ADD_CB(resize, resize, ARR__CB_RESIZE);
		ADD_CB(cross, cross_free, ARR__CB_CROSS);
		ADD_CB(alloc, alloc, ARR__CB_ALLOC);
		ADD_CB(other, other, ARR__CB_OTHER);
#undef ADD_CB
	}
	if (p->ncall || p->nresize || p->nrelease || p->nalloc)
		p->hot |= HOT_CB;

	uint64_t total_events = end->present ? end->events : 0, file_size = arr_trace_file_size(tr);
	uint64_t next_progress = 1u << 20;
	struct arr_event *gather = rc ? NULL : malloc(GATHER_EVENTS * sizeof *gather);
	if (!rc && !gather)
		rc = ARR_ENOMEM;
	/* inline batches first; threads that take turns (short runs) then move the merge to its own thread */
	int blocks = 0, tried = 0;
	uint64_t probed = 0, probed_gathered = 0;
	while (rc == 0) {
		const struct arr_event *evs;
		size_t n;
		rc = blocks ? arr__merge_next_block(m, &evs, &n)
			    : arr__merge_next_batch(m, gather, GATHER_EVENTS, GATHER_SHORT, &evs, &n);
		if (rc != 1)
			break;
		rc = 0;
		dispatch(p, evs, n);
		if (c->oom)
			rc = c->oom;
		if (!tried) {
			probed += n;
			probed_gathered += evs == gather ? n : 0;
			if (probed >= BLOCKS_PROBE) {
				if (probed_gathered * 4 >= probed) {
					tried = 1;
					blocks = arr__merge_open_blocks(m);
				}
				probed = probed_gathered = 0;
			}
		}
		if (opt->progress && c->evno >= next_progress) {
			next_progress = c->evno + (1u << 20);
			uint64_t done = total_events
						? (uint64_t)((double)c->evno / (double)total_events * (double)file_size)
						: 0;
			opt->progress(opt->progress_ctx, c->evno, done > file_size ? file_size : done, file_size);
		}
	}
	if (rc == 0 && opt->progress)
		opt->progress(opt->progress_ctx, c->evno, file_size, file_size);
	/* the sections below read the reader (stacks, modules): the merge's thread is done with it */
	arr__merge_close_blocks(m);

	/* sections are written even after a trace error: they describe the prefix read */
	int trc = rc;
	if (rc != ARR_ENOMEM) {
		trace_section(c, tr, out, rc);
		for (unsigned i = 0; i < p->nan; i++) {
			if (p->an[i].hidden)
				continue;
			struct arr_doc *sec = p->an[i].ops->id == ARR_AN_PHASES
						      ? arr_doc_set_arr(out, "phases")
						      : arr_doc_set_obj(out, arr_analysis_name(p->an[i].ops->id));
			int erc = p->an[i].ops->end(c, p->an[i].st, sec);
			if (erc && !trc)
				trc = erc;
		}
		rss_phases(out);
		if (!trc)
			trc = arr_doc_status(out);
	}
	for (unsigned i = 0; i < p->nan; i++) {
		if (p->an[i].ops->fini)
			p->an[i].ops->fini(p->an[i].st);
		free(p->an[i].st);
	}
	free(gather);
	arr_merge_close(m);
	slots_free(c->live.slots, c->live.mask ? c->live.mask + 1 : 0);
	free(c->threads);
	arr_ptrmap_release(&c->tid_index);
	free(p);
	return trc;
}

/* ---- summary: the core's own counters ---- */

static int summary_end(struct an_core *c, void *st, struct arr_doc *s)
{
	(void)st;
	uint64_t dur = arr__duration(c);
	arr_doc_set_int(s, "calls", (int64_t)c->calls);
	arr_doc_set_int(s, "failed", (int64_t)c->failed);
	struct arr_doc *ops = arr_doc_set_obj(s, "ops");
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		if (arr_op_name(op) && (arr_op_is_call(op) || c->ops[op]))
			arr_doc_set_int(ops, arr_op_name(op), (int64_t)c->ops[op]);
	arr_doc_set_int(s, "bytes_requested", (int64_t)c->bytes_requested);
	arr_doc_set_num(s, "calls_per_s", dur ? (double)c->calls / ((double)dur / 1e9) : 0.0);
	arr_doc_set_int(s, "threads", (int64_t)c->nthreads);
	arr_doc_set_int(s, "duration_ns", (int64_t)dur);
	arr_doc_set_int(s, "unknown_frees", (int64_t)c->unknown_frees);
	arr_doc_set_int(s, "null_frees", (int64_t)c->null_frees);
	arr_doc_set_int(s, "peak_live_bytes", (int64_t)c->peak_bytes);
	arr_doc_set_int(s, "final_live_bytes", (int64_t)c->live_bytes);
	return 0;
}

const struct an_ops arr__an_summary = {.id = ARR_AN_SUMMARY, .end = summary_end};

int arr_analysis_parse_what(const char *list, uint32_t *mask, const char **bad, size_t *bad_len)
{
	uint32_t m = 0;
	const char *p = list;
	for (;;) {
		size_t n = strcspn(p, ",");
		char name[32];
		if (n == 0 || n >= sizeof name) {
			*bad = p;
			*bad_len = n;
			return ARR_EINVAL;
		}
		memcpy(name, p, n);
		name[n] = 0;
		int an = !strcmp(name, "all") ? -2 : arr_analysis_from_name(name);
		if (an == -1) {
			*bad = p;
			*bad_len = n;
			return ARR_EINVAL;
		}
		m |= an == -2 ? (1u << ARR_AN_COUNT_) - 1 : 1u << an;
		if (!p[n])
			break;
		p += n + 1;
	}
	*mask = m;
	return 0;
}

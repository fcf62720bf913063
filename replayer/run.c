/*
 * run.c - execute a workload in this process and measure it (see
 * allocrr/replay.h). This is the engine's hot path: no malloc of its own
 * (every buffer is mmap'd and pre-touched before the baseline RSS is taken),
 * no locks, one indirect call per replayed call; the common entries are
 * decoded with the stream position and counters in registers and no
 * branch on a varint's length (see run_block()).
 *
 * Serial replay follows the schedule stream (the recorded interleaving);
 * parallel replay runs one thread per recorded thread, and a sync entry
 * spins (then yields) until the slot's version reaches the recorded one.
 * Waiting cannot deadlock: a sync only ever waits for an entry that came
 * earlier in the merged time order, which every thread's stream respects.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/alloc.h"
#include "allocrr/replay.h"
#include "wl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t tsc(void)
{
	__asm__ __volatile__("" ::: "memory");
	uint64_t t = __rdtsc();
	__asm__ __volatile__("" ::: "memory");
	return t;
}
#else
static inline uint64_t tsc(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

#define NBUCKETS 512
#define NOPS 11 /* calls 1..10, index 0 unused */
#define SYNC_TIMEOUT_NS 30000000000ull
#define PACE_SPINS (64 + 16) /* a pace wait's pauses and yields before it sleeps */

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- memory: mmap only ---- */

static void *map_kept(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, bytes); /* touched now, so it is in the baseline RSS */
	return p;
}

/* The mappings of one run, all released when it ends, whichever way: the
 * engine runs once, but the fuzz target runs thousands in one process. A
 * 64-byte header keeps the caller's memory cache-line aligned. Mappings are
 * made by the main thread only, before the replay threads start. */
struct mapping {
	struct mapping *next;
	size_t bytes;
};
#define MAP_HDR 64
static struct mapping *run_maps;
static int run_fds[4] = {-1, -1, -1, -1}; /* the workload, /proc/self/statm, status, clear_refs */

static void *map(size_t bytes)
{
	struct mapping *m = map_kept(bytes + MAP_HDR);
	if (!m)
		return NULL;
	m->bytes = bytes + MAP_HDR;
	m->next = run_maps;
	run_maps = m;
	return (char *)m + MAP_HDR;
}

static void run_release(void)
{
	while (run_maps) {
		struct mapping *m = run_maps;
		run_maps = m->next;
		munmap(m, m->bytes);
	}
	for (int i = 0; i < 4; i++)
		if (run_fds[i] >= 0) {
			close(run_fds[i]);
			run_fds[i] = -1;
		}
}

/* ---- the allocator's functions, and stand-ins for missing ones ---- */

struct fns {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*reallocarray)(void *, size_t, size_t);
};
static struct fns F;
static size_t page_size;

static void *sub_valloc(size_t n) { return F.memalign(page_size, n); }
static void *sub_pvalloc(size_t n)
{
	return F.memalign(page_size, n ? (n + page_size - 1) & ~(page_size - 1) : page_size);
}
static void *sub_aligned_alloc(size_t a, size_t n) { return F.memalign(a, n); }
static int sub_posix_memalign(void **out, size_t a, size_t n)
{
	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	void *p = F.memalign(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
static void *sub_reallocarray(void *p, size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return F.realloc(p, b);
}
static void *sub_memalign(size_t a, size_t n)
{
	void *p = NULL;
	return F.posix_memalign(&p, a, n) ? NULL : p;
}

/* calloc replaced, to measure what its zeroing costs and saves (zeroing modes) */
static void *calloc_as_malloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return F.malloc(b);
}
static void *calloc_as_malloc_memset(size_t k, size_t n)
{
	void *p = calloc_as_malloc(k, n);
	if (p)
		memset(p, 0, k * n);
	return p;
}

/*
 * Resolve each call as the program would (RTLD_DEFAULT), and replace those
 * that a preloaded library does not define (they would fall through to
 * glibc's, whose blocks the library cannot free: Debian's jemalloc has no
 * pvalloc) by equivalents built on the library's own functions.
 */
static int resolve_fns(uint64_t *substituted)
{
	static const char *names[] = {"malloc",        "calloc",   "realloc", "free",    "posix_memalign",
				      "aligned_alloc", "memalign", "valloc",  "pvalloc", "reallocarray"};
	void **slots = (void **)&F;
	Dl_info base, di;
	*substituted = 0;
	/* The dynamic linker skips a library it cannot preload (a dependency
	 * missing, a file being relinked) with a warning and goes on: the replay
	 * would measure glibc under the allocator's name. */
	const char *pre = getenv("LD_PRELOAD");
	if (pre && *pre && !strpbrk(pre, ": ")) {
		void *h = dlopen(pre, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			return ARR_ENOTLOADED;
		dlclose(h);
	}
	for (int i = 0; i < 10; i++)
		if (!(slots[i] = dlsym(RTLD_DEFAULT, names[i])))
			return ARR_ENOTFOUND;
	if (!dladdr((void *)F.malloc, &base))
		return 0;
	void *subs[] = {0,
			0,
			0,
			0,
			(void *)sub_posix_memalign,
			(void *)sub_aligned_alloc,
			(void *)sub_memalign,
			(void *)sub_valloc,
			(void *)sub_pvalloc,
			(void *)sub_reallocarray};
	int missing[10] = {0};
	for (int i = 4; i < 10; i++)
		if (dladdr(slots[i], &di) && di.dli_fbase != base.dli_fbase)
			missing[i] = 1;
	if (missing[6] && missing[4])
		return ARR_EUNSUPPORTED; /* no aligned allocation at all */
	for (int i = 4; i < 10; i++)
		if (missing[i]) {
			slots[i] = subs[i];
			(*substituted) |= 1u << i;
		}
	return 0;
}

/* ---- streams ---- */

struct rstream {
	int fd;
	const struct wl_block *blk; /* this stream's blocks, in order */
	uint32_t nblk, next;
	uint8_t *buf;
	const uint8_t *p, *end;
};

static int rs_load(struct rstream *s)
{
	if (s->next >= s->nblk)
		return 0;
	const struct wl_block *b = &s->blk[s->next++];
	size_t got = 0;
	while (got < b->len) {
		ssize_t n = pread(s->fd, s->buf + got, b->len - got, (off_t)(b->offset + got));
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return ARR_ECORRUPT;
		}
		got += (size_t)n;
	}
	s->p = s->buf;
	s->end = s->buf + b->len;
	return 1;
}

/* ---- replay threads ---- */

struct slot {
	void *p;
	_Atomic uint32_t ver;
	uint32_t pad;
};

struct rthr {
	struct rstream s;
	struct slot *slots;
	uint64_t nslots;
	int touch, serial, error, measure;
	uint32_t lat_every, lat_left;
	uint64_t rng; /* lat_next()'s state: fixed seed, so runs time the same calls */
	uint64_t ops, entries;
	_Atomic uint64_t ops_seen; /* ops, published at each block's end for the sampler */
	uint64_t wait_cycles;
	/* The pace (parallel replay): entries done, published at each run's end
	 * and before any wait (pending: those of the current run not yet in
	 * entries), and this thread's place in the checkpoint table. */
	_Atomic uint64_t done_pub;
	/* A thread waiting for this one to pass wake_at entries sleeps on
	 * wake_seq (a futex), which publish() bumps when done_pub reaches it:
	 * a wait of a whole run (a main thread that only starts and joins the
	 * others) keeps no CPU busy. */
	_Atomic uint64_t wake_at;
	_Atomic uint32_t wake_seq;
	uint64_t pending;
	uint32_t tid;
	uint64_t ck;
	double ghz;
	struct arr_replay_divergence div;
	uint64_t maxc[NOPS];
	uint64_t hist[NOPS][NBUCKETS];
	pthread_t th;
};

static inline unsigned bucket(uint64_t v)
{
	if (v < 16)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return 16 + (e - 4) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

static uint64_t bucket_mid(unsigned b)
{
	if (b < 16)
		return b;
	unsigned e = (b - 16) / 8 + 4, sub = (b - 16) % 8;
	uint64_t lo = (8ull + sub) << (e - 3);
	return lo + ((1ull << (e - 3)) >> 1);
}

static inline void touch_block(int mode, void *p, uint64_t n)
{
	if (!p || !n || mode == ARR_TOUCH_NONE)
		return;
	volatile unsigned char *c = p;
	if (mode == ARR_TOUCH_ALL) {
		memset(p, 1, n);
		return;
	}
	c[0] = 1;
	uintptr_t a = ((uintptr_t)p + page_size) & ~(uintptr_t)(page_size - 1);
	for (uintptr_t e = (uintptr_t)p + n; a < e; a += page_size)
		*(volatile unsigned char *)a = 1;
}

/* ---- live and usable bytes (measure_usable runs only) ---- */

/*
 * Kept out of struct slot so the timed runs' slot table stays 16 bytes an
 * entry: a measure run routes every entry through exec_entry(), which calls
 * note() wherever a slot gets or loses a block.
 */
static struct {
	uint64_t *req, *use;            /* per slot: requested and usable bytes of its block */
	size_t (*usable)(void *);       /* the allocator's malloc_usable_size, or NULL */
	_Atomic int64_t live, live_use; /* sums over live blocks */
	int64_t ideal;                  /* peak live requested bytes, from the workload */
	_Atomic int peak_taken;
	_Atomic int64_t max_live;                 /* most live bytes at once in this run */
	void (*take)(struct arr_replay_moment *); /* fills rss and mapped */
	struct arr_replay_moment at_peak;
	struct rthr *const *thr;
	uint32_t nthr;
} M;

static uint64_t ops_so_far(void)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < M.nthr; i++)
		n += atomic_load_explicit(&M.thr[i]->ops_seen, memory_order_relaxed);
	return n;
}

/* Slot id now holds p (NULL: nothing) of req requested bytes. */
static void note(uint64_t id, void *p, uint64_t req)
{
	uint64_t use = p ? (M.usable ? M.usable(p) : req) : 0;
	if (!p)
		req = 0;
	int64_t d = (int64_t)(req - M.req[id]), du = (int64_t)(use - M.use[id]);
	M.req[id] = req;
	M.use[id] = use;
	int64_t live = atomic_fetch_add_explicit(&M.live, d, memory_order_relaxed) + d;
	int64_t live_use = atomic_fetch_add_explicit(&M.live_use, du, memory_order_relaxed) + du;
	int64_t top = atomic_load_explicit(&M.max_live, memory_order_relaxed);
	while (live > top && !atomic_compare_exchange_weak_explicit(&M.max_live, &top, live, memory_order_relaxed,
								    memory_order_relaxed)) {
	}
	/* The workload knows the peak in advance: take the moment when it is reached. */
	if (d > 0 && live >= M.ideal && !atomic_exchange_explicit(&M.peak_taken, 1, memory_order_relaxed)) {
		M.at_peak.live = (uint64_t)live;
		M.at_peak.usable = (uint64_t)live_use;
		M.at_peak.op_index = ops_so_far() + 1;
		M.take(&M.at_peak);
	}
}

/* done_pub = v, waking the threads that wait for v or less */
static void publish(struct rthr *c, uint64_t v)
{
	atomic_store_explicit(&c->done_pub, v, memory_order_seq_cst);
	uint64_t w = atomic_load_explicit(&c->wake_at, memory_order_seq_cst);
	if (ARR_LIKELY(w > v))
		return;
	atomic_compare_exchange_strong_explicit(&c->wake_at, &w, UINT64_MAX, memory_order_relaxed,
						memory_order_relaxed);
	atomic_fetch_add_explicit(&c->wake_seq, 1, memory_order_release);
	syscall(SYS_futex, &c->wake_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Sleep until u's done_pub may have reached need (or 1 ms passed: a wake
 * lost to a race costs at most that). */
static void sleep_for(struct rthr *u, uint64_t need)
{
	uint32_t seq = atomic_load_explicit(&u->wake_seq, memory_order_acquire);
	uint64_t w = atomic_load_explicit(&u->wake_at, memory_order_relaxed);
	while (w > need && !atomic_compare_exchange_weak_explicit(&u->wake_at, &w, need, memory_order_seq_cst,
								  memory_order_relaxed)) {
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&u->done_pub, memory_order_seq_cst) >= need)
		return;
	struct timespec ts = {0, 1000000};
	syscall(SYS_futex, &u->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
}

/* One step of a wait for another replay thread: spin with pause, then
 * yield, then (a pace wait: u, the thread waited for, and need, its count)
 * sleep until u gets there; a wait past SYNC_TIMEOUT_NS (t0, limit in
 * cycles) means a damaged workload, not a slow thread, and fails instead
 * of hanging. */
static int wait_step(unsigned *spins, uint64_t t0, uint64_t limit, struct rthr *u, uint64_t need)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		_mm_pause();
#endif
		return 0;
	}
	if (u && *spins > PACE_SPINS)
		sleep_for(u, need);
	else
		sched_yield();
	return tsc() - t0 > limit ? ARR_ECORRUPT : 0;
}

static int wait_version(struct rthr *c, struct slot *s, uint32_t v)
{
	if (atomic_load_explicit(&s->ver, memory_order_acquire) == v)
		return 0;
	if (c->serial) {
		c->div.sync_mismatch++;
		return 0;
	}
	publish(c, c->entries + c->pending);
	uint64_t t0 = tsc(), limit = (uint64_t)(SYNC_TIMEOUT_NS * c->ghz);
	unsigned spins = 0;
	int rc;
	while (atomic_load_explicit(&s->ver, memory_order_acquire) != v)
		if ((rc = wait_step(&spins, t0, limit, NULL, 0)))
			return rc;
	c->wait_cycles += tsc() - t0;
	return 0;
}

/*
 * Calls to the next timed one: 1, or for one in N a number drawn from 1 to
 * 2N - 1 (mean N). A fixed stride would alias with a periodic program (one
 * in 10 of an alternating calloc/free loop would time only the frees).
 */
static inline uint32_t lat_next(struct rthr *c)
{
	if (c->lat_every <= 1)
		return 1;
	uint64_t x = c->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return 1 + (uint32_t)(x % (2ull * c->lat_every - 1));
}

/* Run expr, timing about one call in c->lat_every when `on`; `left` counts
 * down to the next timed call. */
#define TIMED_CALL(opcode, on, left, expr)             \
	do {                                           \
		if ((on) && --(left) == 0) {           \
			(left) = lat_next(c);          \
			uint64_t t0_ = tsc();          \
			expr;                          \
			uint64_t d_ = tsc() - t0_;     \
			c->hist[opcode][bucket(d_)]++; \
			if (d_ > c->maxc[opcode])      \
				c->maxc[opcode] = d_;  \
		} else {                               \
			expr;                          \
		}                                      \
	} while (0)
#define CALL(opcode, expr) TIMED_CALL(opcode, c->lat_every, c->lat_left, expr)

/* Reads may run past end into the buffer's slack (WL_ENTRY_MAX): harmless,
 * and caught here before the value is used. Returns from the caller. */
#define GET_OR_RETURN(v)                     \
	do {                                 \
		p = wl_get(p, &(v));         \
		if (p > end)                 \
			return ARR_ECORRUPT; \
	} while (0)

static inline void bump(struct slot *s)
{
	atomic_store_explicit(&s->ver, atomic_load_explicit(&s->ver, memory_order_relaxed) + 1, memory_order_release);
}

/* Slot id now holds r (NULL: nothing) of `bytes` bytes: touch it, note it
 * when measuring, and let the threads waiting on the slot go. */
static inline void slot_set(struct rthr *c, uint64_t id, void *r, uint64_t bytes)
{
	c->slots[id].p = r;
	if (r)
		touch_block(c->touch, r, bytes);
	if (c->measure)
		note(id, r, bytes);
}

/* Bytes a replayed call asks for: the operation table's count, page size
 * the replaying machine's (that is what pvalloc rounds to here). */
static inline uint64_t call_bytes(unsigned op, uint64_t nmemb, uint64_t size)
{
	struct arr_event ev = {.op = (uint8_t)op, .nmemb = nmemb, .size = size};
	return arr_event_bytes(&ev, page_size);
}

/* A sync point: wait until the slot's version is the recorded one. */
static int exec_sync(struct rthr *c, const uint8_t *p, const uint8_t *end)
{
	uint64_t id, v;
	GET_OR_RETURN(id);
	GET_OR_RETURN(v);
	c->s.p = p;
	if (id >= c->nslots)
		return ARR_ECORRUPT;
	return wait_version(c, &c->slots[id], (uint32_t)v);
}

static int exec_free(struct rthr *c, uint8_t b, const uint8_t *p, const uint8_t *end)
{
	uint64_t id;
	if (b & WL_F_SRC) {
		GET_OR_RETURN(id);
		if (id >= c->nslots)
			return ARR_ECORRUPT;
		CALL(ARR_OP_FREE, F.free(c->slots[id].p));
		slot_set(c, id, NULL, 0);
		bump(&c->slots[id]);
	} else {
		CALL(ARR_OP_FREE, F.free(NULL));
	}
	c->s.p = p;
	c->ops++;
	return 0;
}

/* realloc and reallocarray: decode, call, then settle the slot by what the
 * recorded call did (WL_F_KILL: freed the block; WL_F_FAILED: failed). */
static int exec_resize(struct rthr *c, uint8_t b, unsigned op, const uint8_t *p, const uint8_t *end)
{
	uint64_t id = 0, nmemb = 0, size;
	if ((b & WL_F_SRC) || !(b & WL_F_FAILED))
		GET_OR_RETURN(id);
	if (arr_op_facts(op) & ARR_OPF_NMEMB)
		GET_OR_RETURN(nmemb);
	GET_OR_RETURN(size);
	/* a failed call without a source names no slot */
	if ((b & (WL_F_SRC | WL_F_FAILED)) != WL_F_FAILED && id >= c->nslots)
		return ARR_ECORRUPT;
	c->s.p = p;
	struct slot *s = &c->slots[id];
	void *old = (b & WL_F_SRC) ? s->p : NULL, *r;
	uint64_t bytes = call_bytes(op, nmemb, size);
	if (op == ARR_OP_REALLOC)
		CALL(ARR_OP_REALLOC, r = F.realloc(old, size));
	else
		CALL(ARR_OP_REALLOCARRAY, r = F.reallocarray(old, nmemb, size));
	c->ops++;
	if (b & (WL_F_KILL | WL_F_FAILED)) {
		if (r)
			c->div.succeeded_now++;
		if (b & WL_F_KILL) { /* the recorded realloc freed the block */
			if (r)
				F.free(r);
			slot_set(c, id, NULL, 0);
		} else if (r && (b & WL_F_SRC)) {
			slot_set(c, id, r, bytes);
		} else if (r) {
			F.free(r);
		}
		if (b & (WL_F_KILL | WL_F_SRC))
			bump(s);
		return 0;
	}
	if (r) {
		slot_set(c, id, r, bytes);
	} else {
		c->div.failed_now++;
		if (!bytes) /* realloc(p, 0) freed it here but not when recorded */
			slot_set(c, id, NULL, 0);
	}
	bump(s);
	return 0;
}

/* The allocating calls but realloc: decode, call, settle. */
static int exec_alloc(struct rthr *c, uint8_t b, unsigned op, const uint8_t *p, const uint8_t *end)
{
	const unsigned f = arr_op_facts(op);
	uint64_t id = 0, arg = 0, size;
	if (!(f & ARR_OPF_RET) || (f & ARR_OPF_PTR))
		return ARR_ECORRUPT;
	if (!(b & WL_F_FAILED))
		GET_OR_RETURN(id);
	if (f & (ARR_OPF_NMEMB | ARR_OPF_ALIGN))
		GET_OR_RETURN(arg);
	GET_OR_RETURN(size);
	if (!(b & WL_F_FAILED) && id >= c->nslots) /* a failed call names no slot */
		return ARR_ECORRUPT;
	c->s.p = p;
	void *r = NULL;
	switch (op) { /* the one place each function is called by name */
	case ARR_OP_MALLOC:
		CALL(ARR_OP_MALLOC, r = F.malloc(size));
		break;
	case ARR_OP_CALLOC:
		CALL(ARR_OP_CALLOC, r = F.calloc(arg, size));
		break;
	case ARR_OP_POSIX_MEMALIGN: {
		int e;
		CALL(ARR_OP_POSIX_MEMALIGN, e = F.posix_memalign(&r, arg, size));
		if (e)
			r = NULL;
		break;
	}
	case ARR_OP_ALIGNED_ALLOC:
		CALL(ARR_OP_ALIGNED_ALLOC, r = F.aligned_alloc(arg, size));
		break;
	case ARR_OP_MEMALIGN:
		CALL(ARR_OP_MEMALIGN, r = F.memalign(arg, size));
		break;
	case ARR_OP_VALLOC:
		CALL(ARR_OP_VALLOC, r = F.valloc(size));
		break;
	case ARR_OP_PVALLOC:
		CALL(ARR_OP_PVALLOC, r = F.pvalloc(size));
		break;
	}
	c->ops++;
	if (b & WL_F_FAILED) {
		if (r) {
			c->div.succeeded_now++;
			F.free(r);
		}
		return 0;
	}
	if (!r)
		c->div.failed_now++;
	slot_set(c, id, r, call_bytes(op, f & ARR_OPF_NMEMB ? arg : 0, size));
	bump(&c->slots[id]);
	return 0;
}

/* Execute one entry of c's stream: every kind of entry, flags included.
 * The hot loop below takes the common ones itself and leaves the rest here. */
static __attribute__((noinline)) int exec_entry(struct rthr *c)
{
	const uint8_t *p = c->s.p, *end = c->s.end;
	uint8_t b = *p++;
	unsigned op = b & WL_OPMASK;
	if (op == WL_SYNC)
		return exec_sync(c, p, end);
	if (op == ARR_OP_FREE)
		return exec_free(c, b, p, end);
	if (arr_op_takes_ptr(op))
		return exec_resize(c, b, op, p, end);
	return exec_alloc(c, b, op, p, end);
}

/*
 * The hot loop: run up to n entries of c's current block (fewer at its
 * end). Returns the number run, or a negative code. The common entries
 * (malloc, calloc, free, realloc of a live object, sync) are decoded here
 * with the stream position, the slot table and the counters in registers;
 * the rest go through exec_entry(). Without latency sampling
 * (--latency-every 0) the timing costs one predicted branch per call.
 * (Prefetching the next entry's slot was measured: no gain on the
 * benchmark's live set, which stays in L2, so there is none.)
 */
#define FAST_CALL(opcode, expr) TIMED_CALL(opcode, timed, lat_left, expr)

/* clang-format off: the labels of the computed gotos keep their block's indentation */
static int64_t run_block(struct rthr *c, uint64_t n)
{
	/* one indexed jump per entry, not a tree of compares */
	_Static_assert(ARR_OP_MALLOC == 1 && ARR_OP_CALLOC == 2 && WL_SYNC == 11 && (ARR_OP_REALLOC | WL_F_SRC) == 67 &&
			       (ARR_OP_FREE | WL_F_SRC) == 68,
		       "dispatch table layout");
	static const void *const dispatch[256] = {
		[0] = &&other,         [1] = &&op_malloc,   [2] = &&op_calloc, [3 ... 10] = &&other,   [11] = &&op_sync,
		[12 ... 66] = &&other, [67] = &&op_realloc, [68] = &&op_free,  [69 ... 255] = &&other,
	};
	const uint8_t *p = c->s.p, *q, *const end = c->s.end;
	struct slot *const slots = c->slots;
	const uint64_t nslots = c->nslots;
	const int touch = c->touch, timed = c->lat_every != 0;
	uint32_t lat_left = c->lat_left;
	uint64_t done = 0, ops = 0, failed = 0, id, size, nmemb, v, bytes;
	void *r;
	int rc = 0;

	/* Each handler ends with its own dispatch (threaded code), so the
	 * indirect jump of each is predicted from what follows that op. */
#define NEXT                               \
	do {                               \
		p = q;                     \
		if (done >= n || p >= end) \
			goto out;          \
		q = p + 1;                 \
		done++;                    \
		goto *dispatch[*p];        \
	} while (0)
	q = p;
	NEXT;
op_malloc:
	q = wl_get(q, &id);
	q = wl_get(q, &size);
	if (q > end || id >= nslots)
		goto corrupt;
	FAST_CALL(ARR_OP_MALLOC, r = F.malloc(size));
	bytes = size;
	goto allocated;
op_calloc:
	q = wl_get(q, &id);
	q = wl_get(q, &nmemb);
	q = wl_get(q, &size);
	if (q > end || id >= nslots)
		goto corrupt;
	FAST_CALL(ARR_OP_CALLOC, r = F.calloc(nmemb, size));
	if (__builtin_mul_overflow(nmemb, size, &bytes))
		bytes = 0;
allocated:
	ops++;
	slots[id].p = r;
	if (r)
		touch_block(touch, r, bytes);
	else
		failed++;
	bump(&slots[id]);
	NEXT;
op_free:
	q = wl_get(q, &id);
	if (q > end || id >= nslots)
		goto corrupt;
	FAST_CALL(ARR_OP_FREE, F.free(slots[id].p));
	ops++;
	slots[id].p = NULL;
	bump(&slots[id]);
	NEXT;
op_realloc:
	q = wl_get(q, &id);
	q = wl_get(q, &size);
	if (q > end || id >= nslots)
		goto corrupt;
	FAST_CALL(ARR_OP_REALLOC, r = F.realloc(slots[id].p, size));
	ops++;
	if (r) {
		slots[id].p = r;
		touch_block(touch, r, size);
	} else {
		failed++;
		if (!size) /* realloc(p, 0) freed it here but not when recorded */
			slots[id].p = NULL;
	}
	bump(&slots[id]);
	NEXT;
op_sync:
	q = wl_get(q, &id);
	q = wl_get(q, &v);
	if (q > end || id >= nslots)
		goto corrupt;
	if (atomic_load_explicit(&slots[id].ver, memory_order_acquire) != (uint32_t)v &&
	    (c->pending = done - 1, rc = wait_version(c, &slots[id], (uint32_t)v)))
		goto out;
	NEXT;
other:
	c->s.p = p;
	c->lat_left = lat_left;
	c->pending = done - 1;
	if ((rc = exec_entry(c)))
		goto out;
	q = c->s.p;
	lat_left = c->lat_left;
	NEXT;
#undef NEXT
out:
	c->s.p = p;
	c->lat_left = lat_left;
	c->ops += ops;
	atomic_store_explicit(&c->ops_seen, c->ops, memory_order_relaxed);
	c->entries += done;
	c->div.failed_now += failed;
	return rc ? rc : (int64_t)done;
corrupt:
	rc = ARR_ECORRUPT;
	goto out;
}
/* clang-format on */

/* Run up to n entries of c's stream, loading its next block when needed.
 * Returns the number run (0: the stream has ended), or a negative code. */
static int64_t run_entries(struct rthr *c, uint64_t n)
{
	if (c->s.p >= c->s.end) {
		int rc = rs_load(&c->s);
		if (rc <= 0)
			return rc;
	}
	if (ARR_UNLIKELY(c->measure)) { /* every entry on the slow path, which notes sizes */
		uint64_t done = 0;
		for (; done < n && c->s.p < c->s.end; done++) {
			c->pending = done;
			int rc = exec_entry(c);
			if (rc)
				return rc;
			atomic_store_explicit(&c->ops_seen, c->ops, memory_order_relaxed);
		}
		c->entries += done;
		return (int64_t)done;
	}
	return run_block(c, n);
}

static _Atomic int go;

/*
 * The pace of a parallel replay. Sync points keep only the order of calls on
 * one object, so a thread that never waits for a free can run ahead of the
 * others: the replay's live set then exceeds the recorded one (a thread
 * rising into its next phase while the blocks it handed over are not freed
 * yet), and peak RSS measures how far the threads drifted, not the
 * allocator. Checkpoints every `w` entries of the recorded interleaving
 * bound the drift: before running entries recorded at or after checkpoint k,
 * a thread waits until every other thread has run all its entries recorded
 * before checkpoint k - 1 (at[k][t]: thread t's entries before checkpoint k).
 * No deadlock: the thread furthest behind in recorded order never waits for
 * the pace, and its syncs wait only for entries recorded before its own,
 * which the others have run or will run without waiting for it.
 */
static struct {
	uint64_t w, ncp; /* entries between checkpoints; checkpoints */
	uint32_t nthr;
	const uint64_t *at; /* ncp x nthr */
	struct rthr *const *thr;
} pace;

/* Wait for the others before c's next checkpoint; returns how many entries
 * c may run before it must come back, or a negative code. */
static int64_t pace_wait(struct rthr *c)
{
	const uint32_t n = pace.nthr;
	while (c->ck + 1 < pace.ncp && pace.at[(c->ck + 1) * n + c->tid] <= c->entries)
		c->ck++;
	uint64_t limit = c->ck + 1 < pace.ncp ? pace.at[(c->ck + 1) * n + c->tid] - c->entries : UINT64_MAX;
	if (c->ck < 2)
		return (int64_t)(limit > INT64_MAX ? INT64_MAX : limit);
	const uint64_t *need = &pace.at[(c->ck - 1) * n];
	uint64_t t0 = 0, tmax = 0;
	for (uint32_t u = 0; u < n; u++) {
		if (u == c->tid || atomic_load_explicit(&pace.thr[u]->done_pub, memory_order_acquire) >= need[u])
			continue;
		if (!t0) {
			t0 = tsc();
			tmax = (uint64_t)(SYNC_TIMEOUT_NS * c->ghz);
		}
		unsigned spins = 0;
		int rc;
		while (atomic_load_explicit(&pace.thr[u]->done_pub, memory_order_acquire) < need[u])
			if ((rc = wait_step(&spins, t0, tmax, pace.thr[u], need[u])))
				return rc;
	}
	if (t0)
		c->wait_cycles += tsc() - t0;
	return (int64_t)(limit > INT64_MAX ? INT64_MAX : limit);
}

static void *thread_main(void *arg)
{
	struct rthr *c = arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		sched_yield();
	for (;;) {
		int64_t n = pace.w ? pace_wait(c) : INT64_MAX;
		if (n > 0) {
			c->pending = 0;
			n = run_entries(c, (uint64_t)n);
			publish(c, c->entries);
		}
		if (n < 0)
			c->error = (int)n;
		if (n <= 0)
			break;
	}
	/* ended or failed: nobody waits for this thread any more */
	publish(c, UINT64_MAX);
	return NULL;
}

/* ---- RSS ---- */

static uint64_t allocator_mapped(void);

struct rss {
	int statm;
	int status, clear; /* /proc/self/status and clear_refs: the peak between samples (-1: none) */
	uint64_t carry;    /* the peak of a sample dropped when the timeline was halved */
	uint32_t n, cap;
	struct arr_rss_sample *tl;
	struct rthr *const *thr; /* for the calls done so far */
	uint32_t nthr;
	uint64_t t0;
	uint64_t interval_ns;
	_Atomic int done;
};

static uint64_t read_rss(int fd)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *s = buf;
	while (*s && *s != ' ')
		s++;
	return strtoull(s, NULL, 10) * page_size;
}

static uint64_t read_hwm(void)
{
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *s = strstr(buf, "VmHWM:");
	return s ? strtoull(s + 6, NULL, 10) * 1024 : 0;
}

static void reset_hwm(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "5", 1) < 0) {
			/* old kernel: VmHWM then includes setup, samples still count */
		}
		close(fd);
	}
}

/*
 * The peak RSS since the last call (VmHWM, then reset to the current RSS),
 * so a sample knows the highest RSS of the interval it closes (its
 * `peak`): a 4 MiB block allocated and freed between two samples is seen,
 * not only in peak_rss. 0 when the kernel offers no reset, and in timed
 * runs (no fds).
 */
static uint64_t interval_peak(struct rss *r)
{
	if (r->status < 0 || r->clear < 0)
		return 0;
	char buf[2048];
	ssize_t n = pread(r->status, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *s = strstr(buf, "VmHWM:");
	uint64_t hwm = s ? strtoull(s + 6, NULL, 10) * 1024 : 0;
	if (write(r->clear, "5", 1) != 1)
		return 0;
	return hwm;
}

static void rss_sample(struct rss *r)
{
	if (r->n == r->cap) { /* keep every other sample, sample half as often */
		/* each kept sample keeps the peak of the one dropped before it (the intervals merge) */
		for (uint32_t i = 0; i < r->n / 2; i++) {
			uint64_t prev = i ? r->tl[2 * i - 1].peak : 0;
			r->tl[i] = r->tl[2 * i];
			if (prev > r->tl[i].peak)
				r->tl[i].peak = prev;
		}
		if (r->n % 2 == 0 && r->n) /* the last one dropped: its peak goes to the next sample */
			r->carry = r->tl[r->n - 1].peak;
		r->n /= 2;
		r->interval_ns *= 2;
	}
	struct arr_rss_sample *s = &r->tl[r->n];
	s->t_ns = now_ns(CLOCK_MONOTONIC) - r->t0;
	s->op_index = 0;
	for (uint32_t i = 0; i < r->nthr; i++)
		s->op_index += atomic_load_explicit(&r->thr[i]->ops_seen, memory_order_relaxed);
	s->rss = read_rss(r->statm);
	/* the point value stays in rss (the moments weigh it against the live bytes of this very
	 * moment); the interval's highest goes beside it */
	s->peak = interval_peak(r);
	if (s->peak && s->peak < s->rss)
		s->peak = s->rss;
	if (r->carry > s->peak)
		s->peak = r->carry;
	r->carry = 0;
	int64_t live = atomic_load_explicit(&M.live, memory_order_relaxed),
		use = atomic_load_explicit(&M.live_use, memory_order_relaxed);
	s->live = live > 0 ? (uint64_t)live : 0;
	s->usable = use > 0 ? (uint64_t)use : 0;
	s->mapped = M.take ? allocator_mapped() : 0;
	r->n++;
}

static void *sampler_main(void *arg)
{
	struct rss *r = arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		sched_yield();
	while (!atomic_load_explicit(&r->done, memory_order_acquire)) {
		rss_sample(r);
		struct timespec ts = {0, (long)r->interval_ns};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* ---- moments of a measure run ---- */

static struct rss *moment_rss;
static uint64_t moment_baseline;
static int moment_glibc;
static struct arr_alloc_stats moment_stats; /* static: no malloc of ours */

/* Each allocator's own statistics entry point, looked up once (NULL: absent). */
static struct {
	int looked;
	int (*builtin)(struct arr_alloc_stats *);
	int (*mallctl)(const char *, void *, size_t *, void *, size_t);                                  /* jemalloc */
	void (*mi_info)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *); /* mimalloc */
	int (*tc_prop)(const char *, size_t *); /* gperftools tcmalloc */
} S;

/* A symbol of the library that serves malloc, or NULL. */
static void *own_symbol(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	Dl_info a, b;
	if (!p || !dladdr((void *)F.malloc, &a) || !dladdr(p, &b) || a.dli_fbase != b.dli_fbase)
		return NULL;
	return p;
}

/*
 * The allocator's own count of the memory it holds from the system, where it
 * offers one: glibc arena + mmapped (mallinfo2), builtin mapped, jemalloc
 * stats.mapped, mimalloc committed, tcmalloc heap size minus unmapped bytes.
 * 0 when unknown.
 */
static uint64_t allocator_mapped(void)
{
	if (moment_glibc) {
		struct mallinfo2 mi = mallinfo2();
		return mi.arena + mi.hblkhd;
	}
	if (!S.looked) {
		S.looked = 1;
		S.builtin = (int (*)(struct arr_alloc_stats *))own_symbol("arr_alloc_stats_get");
		S.mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))own_symbol("mallctl");
		S.mi_info = (void (*)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
				      size_t *))own_symbol("mi_process_info");
		S.tc_prop = (int (*)(const char *, size_t *))own_symbol("MallocExtension_GetNumericProperty");
	}
	if (S.builtin && S.builtin(&moment_stats) == 0)
		return moment_stats.mapped;
	if (S.mallctl) {
		uint64_t epoch = 1;
		size_t v = 0, len = sizeof epoch;
		S.mallctl("epoch", &epoch, &len, &epoch, sizeof epoch); /* refresh the statistics */
		len = sizeof v;
		return S.mallctl("stats.mapped", &v, &len, NULL, 0) == 0 ? v : 0;
	}
	if (S.mi_info) {
		size_t el, user, sys, rss, peak, commit = 0, peak_commit, faults;
		S.mi_info(&el, &user, &sys, &rss, &peak, &commit, &peak_commit, &faults);
		return commit;
	}
	if (S.tc_prop) {
		size_t heap = 0, unmapped = 0;
		if (!S.tc_prop("generic.heap_size", &heap))
			return 0;
		S.tc_prop("tcmalloc.pageheap_unmapped_bytes", &unmapped);
		return heap > unmapped ? heap - unmapped : 0;
	}
	return 0;
}

static void take_moment(struct arr_replay_moment *m)
{
	struct rss *r = moment_rss;
	uint64_t rss = read_rss(r->statm);
	m->t_ns = now_ns(CLOCK_MONOTONIC) - r->t0;
	m->rss = rss > moment_baseline ? rss - moment_baseline : 0;
	m->mapped = allocator_mapped();
}

/*
 * malloc_usable_size of the allocator that serves malloc, or NULL: a library
 * without one would leave glibc's, which must not see the library's blocks.
 */
static size_t (*resolve_usable(void))(void *) { return (size_t(*)(void *))own_symbol("malloc_usable_size"); }

/* ---- timer calibration ---- */

static double calibrate_ghz(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static double ghz; /* once per process: 20 ms */
	if (ghz > 0)
		return ghz;
	uint64_t n0 = now_ns(CLOCK_MONOTONIC), c0 = tsc(), n1;
	do
		n1 = now_ns(CLOCK_MONOTONIC);
	while (n1 - n0 < 20000000);
	uint64_t c1 = tsc();
	return ghz = (double)(c1 - c0) / (double)(n1 - n0);
#else
	return 1.0;
#endif
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The timer's own cost in cycles: the median of empty timed sections. */
static uint64_t timer_overhead(void)
{
	static uint64_t v[4001];
	for (int i = 0; i < 4001; i++) {
		uint64_t t0 = tsc();
		__asm__ __volatile__("" ::: "memory");
		v[i] = tsc() - t0;
	}
	qsort(v, 4001, sizeof *v, cmp_u64);
	return v[2000];
}

/* ---- the run ---- */

struct wl {
	int fd;
	struct wl_header h;
	struct wl_block *blocks;
	size_t blocks_bytes;
};

static int wl_open(struct wl *w, const char *path)
{
	w->fd = run_fds[0] = open(path, O_RDONLY | O_CLOEXEC);
	if (w->fd < 0)
		return -errno;
	struct stat st;
	if (pread(w->fd, &w->h, sizeof w->h, 0) != sizeof w->h || w->h.magic != WL_MAGIC)
		return ARR_EBADMAGIC;
	if (w->h.version != ARR_WL_VERSION || w->h.header_size != sizeof w->h)
		return ARR_EVERSION;
	/* Sizes from the header are checked against the file before anything is
	 * sized by them: every slot has an entry, every entry a byte. */
	if (fstat(w->fd, &st) || w->h.nthreads > 1u << 20 || w->h.nblocks > (1ull << 40) ||
	    w->h.footer_offset > (uint64_t)st.st_size ||
	    w->h.footer_offset + w->h.nthreads * 8 + w->h.nblocks * sizeof(struct wl_block) != (uint64_t)st.st_size ||
	    w->h.entries[0] > (uint64_t)st.st_size || w->h.nslots > w->h.entries[0])
		return ARR_ECORRUPT;
	w->blocks_bytes = w->h.nblocks * sizeof(struct wl_block) + 1;
	if (!(w->blocks = map(w->blocks_bytes)))
		return ARR_ENOMEM;
	size_t want = w->h.nblocks * sizeof(struct wl_block);
	if (want && pread(w->fd, w->blocks, want, (off_t)(w->h.footer_offset + w->h.nthreads * 8)) != (ssize_t)want)
		return ARR_ECORRUPT;
	for (uint64_t i = 0; i < w->h.nblocks; i++)
		if (w->blocks[i].stream > w->h.nthreads || w->blocks[i].len > WL_BLOCK ||
		    w->blocks[i].offset + w->blocks[i].len > w->h.footer_offset)
			return ARR_ECORRUPT;
	return 0;
}

/* Blocks of stream i are contiguous once sorted by stream (stable: file order). */
static int stream_init(struct rstream *s, struct wl *w, const struct wl_block *sorted, const uint64_t *first,
		       uint32_t i)
{
	s->fd = w->fd;
	s->blk = sorted + first[i];
	s->nblk = (uint32_t)(first[i + 1] - first[i]);
	if (!(s->buf = map(WL_BLOCK + WL_ENTRY_MAX)))
		return ARR_ENOMEM;
	s->p = s->end = s->buf;
	s->next = 0;
	return 0;
}

static void summarise(struct arr_replay_result *res, struct rthr *const *thr, size_t n, uint64_t overhead)
{
	for (unsigned op = 1; op < NOPS; op++) {
		uint64_t total = 0, maxc = 0;
		for (size_t t = 0; t < n; t++) {
			for (unsigned b = 0; b < NBUCKETS; b++)
				total += thr[t]->hist[op][b];
			if (thr[t]->maxc[op] > maxc)
				maxc = thr[t]->maxc[op];
		}
		struct arr_latency *l = &res->latency[op];
		l->count = total;
		if (!total)
			continue;
		const double q[4] = {0.50, 0.90, 0.99, 0.999};
		uint64_t *out[4] = {&l->p50, &l->p90, &l->p99, &l->p999};
		uint64_t cum = 0;
		int k = 0;
		for (unsigned b = 0; b < NBUCKETS && k < 4; b++) {
			for (size_t t = 0; t < n; t++)
				cum += thr[t]->hist[op][b];
			while (k < 4 && (double)cum >= q[k] * (double)total) {
				uint64_t v = bucket_mid(b);
				if (v > maxc)
					v = maxc;
				*out[k++] = v > overhead ? (uint64_t)((double)(v - overhead) / res->tsc_ghz) : 0;
			}
		}
		l->max = maxc > overhead ? (uint64_t)((double)(maxc - overhead) / res->tsc_ghz) : 0;
	}
}

/* One run: what its phases hand each other. Every mapping comes from map()
 * and every descriptor is in run_fds, so arr_replay_run() releases them all
 * once, whichever phase failed; the timeline r.tl alone outlives the run
 * (it becomes the result's) and is unmapped here only on failure. */
struct run {
	struct wl w;
	uint32_t nthr;
	int serial;
	uint64_t *first; /* stream i's blocks are sorted[first[i] .. first[i + 1]) */
	struct wl_block *sorted;
	struct slot *slots;
	struct rthr **thr;
	struct rstream sched; /* serial: the recorded interleaving */
	struct rss r;
	double ghz;
	uint64_t overhead;
	pthread_t sampler;
	int have_sampler;
};

/* The allocator's functions, with the stand-ins the options ask for. */
static int setup_fns(const struct arr_replay_options *opt, struct arr_replay_result *res)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	int rc = resolve_fns(&res->div.substituted);
	if (rc)
		return rc;
	res->div.substituted = (uint64_t)__builtin_popcountll(res->div.substituted);
	if (opt->zeroing == ARR_ZERO_CALLOC_AS_MALLOC)
		F.calloc = calloc_as_malloc;
	else if (opt->zeroing == ARR_ZERO_CALLOC_AS_MALLOC_MEMSET)
		F.calloc = calloc_as_malloc_memset;
	return 0;
}

/* The blocks grouped by stream, in file order within each. */
static int index_blocks(struct run *run)
{
	const struct wl *w = &run->w;
	uint32_t nthr = run->nthr;
	uint64_t *first = run->first = map((nthr + 2) * sizeof *first);
	struct wl_block *sorted = run->sorted = map(w->blocks_bytes);
	uint64_t *fill = map((nthr + 1) * sizeof *fill);
	if (!first || !sorted || !fill)
		return ARR_ENOMEM;
	for (uint64_t i = 0; i < w->h.nblocks; i++)
		first[w->blocks[i].stream + 1]++;
	for (uint32_t i = 1; i <= nthr + 1; i++)
		first[i] += first[i - 1];
	memcpy(fill, first, (nthr + 1) * sizeof *fill);
	for (uint64_t i = 0; i < w->h.nblocks; i++)
		sorted[fill[w->blocks[i].stream]++] = w->blocks[i];
	return 0;
}

/* The slot table and one replay thread's state per stream. */
static int make_threads(struct run *run, const struct arr_replay_options *opt)
{
	struct wl *w = &run->w;
	run->slots = map((w->h.nslots + 1) * sizeof *run->slots);
	run->thr = map((run->nthr + 1) * sizeof *run->thr);
	if (!run->slots || !run->thr)
		return ARR_ENOMEM;
	int rc;
	for (uint32_t i = 0; i < run->nthr; i++) {
		struct rthr *c = run->thr[i] = map(sizeof *c);
		if (!c)
			return ARR_ENOMEM;
		if ((rc = stream_init(&c->s, w, run->sorted, run->first, i)))
			return rc;
		c->slots = run->slots;
		c->nslots = w->h.nslots;
		c->touch = opt->touch;
		c->serial = run->serial;
		c->lat_every = opt->latency_every;
		c->rng = 0x9e3779b97f4a7c15ull + i;
		c->lat_left = opt->latency_every ? lat_next(c) : 0;
		c->ghz = run->ghz;
		c->measure = opt->measure_usable;
		atomic_init(&c->wake_at, UINT64_MAX); /* nobody waits */
	}
	if (run->serial && (rc = stream_init(&run->sched, w, run->sorted, run->first, run->nthr)))
		return rc;
	return 0;
}

/*
 * The pace's checkpoint table, from the schedule stream (the recorded
 * interleaving): at[k][t] = thread t's entries recorded before entry k * w.
 * Off for serial replays, one thread, opt->pace 0, or more than
 * ARR_REPLAY_PACE_MAX_THREADS threads (each checkpoint looks at every
 * thread); w grows so that the table stays under 64 MiB.
 */
#define PACE_TABLE_MAX (64ull << 20)

#ifdef __SANITIZE_ADDRESS__
/* The sanitizer build checks the table once built: row 0 is empty, every
 * thread's count only grows, and checkpoint k has exactly k * w entries
 * before it. */
static void pace_check(const uint64_t *at, uint64_t ncp, uint32_t n, uint64_t w)
{
	for (uint64_t k = 0; k < ncp; k++) {
		uint64_t sum = 0;
		for (uint32_t t = 0; t < n; t++) {
			sum += at[k * n + t];
			if (k && at[k * n + t] < at[(k - 1) * n + t])
				abort();
		}
		if (sum != k * w)
			abort();
	}
}
#else
static inline void pace_check(const uint64_t *at, uint64_t ncp, uint32_t n, uint64_t w)
{
	(void)at, (void)ncp, (void)n, (void)w;
}
#endif
static int setup_pace(struct run *run, const struct arr_replay_options *opt)
{
	memset(&pace, 0, sizeof pace);
	uint32_t n = run->nthr;
	if (run->serial || n < 2 || !opt->pace || n > ARR_REPLAY_PACE_MAX_THREADS)
		return 0;
	uint64_t total = run->w.h.entries[0], w = opt->pace;
	if (total / w * n * 8 > PACE_TABLE_MAX)
		w = total * n * 8 / PACE_TABLE_MAX + 1;
	uint64_t ncp = total / w + 2;
	uint64_t *at = map(ncp * n * sizeof *at), *cnt = map(n * sizeof *cnt);
	struct rstream sched;
	int rc;
	if (!at || !cnt)
		return ARR_ENOMEM;
	if ((rc = stream_init(&sched, &run->w, run->sorted, run->first, n)))
		return rc;
	uint64_t g = 0, next = w, k = 1;
	for (;;) {
		if (sched.p >= sched.end) {
			if ((rc = rs_load(&sched)) < 0)
				return rc;
			if (!rc)
				break;
		}
		uint64_t t, len;
		const uint8_t *p = wl_get(sched.p, &t);
		p = wl_get(p, &len);
		if (p > sched.end || t >= n)
			return ARR_ECORRUPT;
		sched.p = p;
		while (g + len >= next) {
			uint64_t d = next - g;
			cnt[t] += d;
			g += d;
			len -= d;
			if (k >= ncp)
				return ARR_ECORRUPT; /* more entries than the header says */
			memcpy(&at[k++ * n], cnt, n * sizeof *cnt);
			next += w;
		}
		cnt[t] += len;
		g += len;
	}
	if (g != total)
		return ARR_ECORRUPT; /* the schedule must hold every entry */
	pace_check(at, k, n, w);
	pace.w = w;
	pace.ncp = k;
	pace.nthr = n;
	pace.at = at;
	pace.thr = run->thr;
	for (uint32_t i = 0; i < n; i++)
		run->thr[i]->tid = i;
	return 0;
}

/* Live and usable bytes at the moments the options ask for. */
static int setup_measure(struct run *run, const struct arr_replay_options *opt, struct arr_replay_result *res)
{
	memset(&M, 0, sizeof M);
	if (!opt->measure_usable)
		return 0;
	uint64_t n = run->w.h.nslots + 1;
	if (!(M.req = map(n * sizeof *M.req)) || !(M.use = map(n * sizeof *M.use)))
		return ARR_ENOMEM;
	M.usable = resolve_usable();
	M.ideal = (int64_t)run->w.h.ideal_rss;
	M.thr = run->thr;
	M.nthr = run->nthr;
	M.take = take_moment;
	res->has_live = 1;
	res->has_usable = M.usable != NULL;
	moment_glibc = opt->glibc_stats;
	return 0;
}

/* The RSS timeline: samples * 2 entries, the result's. */
static int setup_rss(struct run *run, const struct arr_replay_options *opt)
{
	struct rss *r = &run->r;
	unsigned samples = opt->samples ? opt->samples : 1;
	r->cap = samples * 2;
	r->statm = run_fds[1] = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	/* the peak between samples costs a read of /proc/self/status (11 us where statm takes 1):
	 * the measure run's, untimed, alone */
	r->status = r->clear = -1;
	if (opt->measure_usable) {
		r->status = run_fds[2] = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		r->clear = run_fds[3] = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	}
	if (!(r->tl = map_kept(r->cap * sizeof *r->tl + 1)))
		return ARR_ENOMEM;
	r->interval_ns = 100000;
	r->thr = run->thr;
	r->nthr = run->nthr;
	moment_rss = r;
	return 0;
}

/* Threaded: one thread per stream, waiting for `go`, and the sampler. When
 * a thread cannot be made, those made are released and joined, and the
 * error is returned: a replay runs as asked or not at all. */
static int start_threads(struct run *run)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (uint32_t i = 0; i < run->nthr; i++) {
		int rc = pthread_create(&run->thr[i]->th, &attr, thread_main, run->thr[i]);
		if (rc) {
			pthread_attr_destroy(&attr);
			atomic_store(&go, 1);
			for (uint32_t j = 0; j < i; j++)
				pthread_join(run->thr[j]->th, NULL);
			return -rc;
		}
	}
	run->have_sampler = pthread_create(&run->sampler, &attr, sampler_main, &run->r) == 0;
	pthread_attr_destroy(&attr);
	return 0;
}

/* Serial: the recorded interleaving, in runs that end at a sample or at a
 * run of the schedule's end. */
static int run_serial(struct run *run, uint64_t sample_every)
{
	struct rstream *sched = &run->sched;
	uint64_t left = sample_every;
	rss_sample(&run->r);
	for (;;) {
		if (sched->p >= sched->end) {
			int rc = rs_load(sched);
			if (rc <= 0)
				return rc;
		}
		uint64_t t, k;
		const uint8_t *p = wl_get(sched->p, &t);
		p = wl_get(p, &k);
		if (p > sched->end || t >= run->nthr)
			return ARR_ECORRUPT;
		sched->p = p;
		struct rthr *c = run->thr[t];
		while (k) {
			int64_t got = run_entries(c, k < left ? k : left);
			if (got <= 0)
				return got ? (int)got : ARR_ECORRUPT;
			k -= (uint64_t)got;
			if (!(left -= (uint64_t)got)) {
				left = sample_every;
				rss_sample(&run->r);
			}
		}
	}
}

static int join_threads(struct run *run)
{
	int rc = 0;
	for (uint32_t i = 0; i < run->nthr; i++) {
		pthread_join(run->thr[i]->th, NULL);
		if (run->thr[i]->error && !rc)
			rc = run->thr[i]->error;
	}
	return rc;
}

/* What the run measured, into *res. */
static void collect(struct run *run, const struct arr_replay_options *opt, struct arr_replay_result *res)
{
	struct rss *r = &run->r;
	rss_sample(r);
	uint64_t final = read_rss(r->statm), peak = read_hwm();
	res->threads_used = run->serial ? 1 : run->nthr;
	for (uint32_t i = 0; i < run->nthr; i++) {
		struct rthr *c = run->thr[i];
		res->ops += c->ops;
		res->sync_wait_ns += (uint64_t)((double)c->wait_cycles / run->ghz);
		res->div.failed_now += c->div.failed_now;
		res->div.succeeded_now += c->div.succeeded_now;
		res->div.sync_mismatch += c->div.sync_mismatch;
	}
	summarise(res, run->thr, run->nthr, run->overhead);
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->tl[i].rss > peak)
			peak = r->tl[i].rss;
		if (r->tl[i].peak > peak)
			peak = r->tl[i].peak;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		r->tl[i].rss = r->tl[i].rss > res->baseline_rss ? r->tl[i].rss - res->baseline_rss : 0;
		r->tl[i].peak = r->tl[i].peak > res->baseline_rss ? r->tl[i].peak - res->baseline_rss : 0;
	}
	res->peak_rss = peak > res->baseline_rss ? peak - res->baseline_rss : 0;
	res->final_rss = final > res->baseline_rss ? final - res->baseline_rss : 0;
	res->ideal_rss = run->w.h.ideal_rss;
	memcpy(res->repairs, run->w.h.repairs, sizeof res->repairs);
	res->anomalies = res->div.failed_now + res->div.succeeded_now + res->div.sync_mismatch;
	for (unsigned i = 0; i < ARR_REPAIR_COUNT_; i++)
		if (i != ARR_REPAIR_ignored_event)
			res->anomalies += res->repairs[i];
	res->nsamples = r->n;
	res->timeline = r->tl;
	if (opt->measure_usable) {
		res->at_peak_live = M.at_peak;
		res->max_live = (uint64_t)atomic_load(&M.max_live);
		struct arr_replay_moment *e = &res->at_end;
		e->live = (uint64_t)atomic_load(&M.live);
		e->usable = (uint64_t)atomic_load(&M.live_use);
		take_moment(e);
		e->op_index = res->ops;
		e->t_ns = res->wall_ns;
		e->rss = res->final_rss;
	}
	if (opt->glibc_stats) {
		struct mallinfo2 mi = mallinfo2();
		res->has_mallinfo = 1;
		res->mi_arena = mi.arena;
		res->mi_hblkhd = mi.hblkhd;
		res->mi_uordblks = mi.uordblks;
		res->mi_fordblks = mi.fordblks;
		res->mi_keepcost = mi.keepcost;
	}
	int (*stats_get)(struct arr_alloc_stats *) =
		(int (*)(struct arr_alloc_stats *))dlsym(RTLD_DEFAULT, "arr_alloc_stats_get");
	if (stats_get) {
		struct arr_alloc_stats *st = map(sizeof *st);
		if (st && stats_get(st) == 0) {
			res->has_builtin = 1;
			res->bi_mapped = st->mapped;
			res->bi_resident = st->resident;
			res->bi_live_usable = st->live_usable;
			res->bi_live_blocks = st->live_blocks;
			res->bi_pages_purged = st->pages_purged;
		}
	}
}

/*
 * The serving allocator's code resident before the baseline is read: the
 * kernel maps a library's text 16 pages at a time around each first call
 * into it (fault-around), so which of its pages a run maps, before the
 * baseline or during the replay, would move with the library's layout and
 * not with its heap (up to 40 KB of the built-in library's, on a small
 * trace: docs/replay.md). One byte of each page
 * of the executable mappings of the file that holds its malloc is read (no
 * allocation); returns their bytes.
 */
static uint64_t prefault_allocator_code(void)
{
	static char maps[1 << 16];
	uint64_t bytes = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t k;
	while (n < sizeof maps - 1 && (k = read(fd, maps + n, sizeof maps - 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	maps[n] = 0;
	uintptr_t at = (uintptr_t)F.malloc;
	const char *file = NULL;
	size_t flen = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (char *l = maps; *l;) {
			char *e = strchr(l, '\n');
			if (!e)
				break;
			char *end;
			uintptr_t lo = (uintptr_t)strtoull(l, &end, 16), hi = (uintptr_t)strtoull(end + 1, &end, 16);
			const char *path = strchr(l, '/');
			if (path && path > e)
				path = NULL;
			if (pass == 0 && at >= lo && at < hi && path) {
				file = path;
				flen = (size_t)(e - path);
				break;
			}
			if (pass == 1 && path && (size_t)(e - path) == flen && memcmp(path, file, flen) == 0 &&
			    end[3] == 'x') {
				for (uintptr_t a = lo; a < hi; a += page_size)
					(void)*(volatile const char *)a;
				bytes += hi - lo;
			}
			l = e + 1;
		}
		if (!file)
			return 0;
	}
	return bytes;
}

/* Set up, run, measure: the phases above, in order. */
static int run_workload(struct run *run, const char *wl_path, const struct arr_replay_options *opt,
			struct arr_replay_result *res)
{
	int rc;
	if ((rc = setup_fns(opt, res)) || (rc = wl_open(&run->w, wl_path)))
		return rc;
	run->nthr = (uint32_t)run->w.h.nthreads;
	run->serial = opt->threads == ARR_THREADS_SERIAL || (opt->threads == ARR_THREADS_AUTO && run->nthr <= 1);
	if ((rc = index_blocks(run)))
		return rc;
	run->ghz = calibrate_ghz();
	run->overhead = timer_overhead();
	res->tsc_ghz = run->ghz;
	res->timer_overhead_ns_x100 = (uint64_t)((double)run->overhead * 100.0 / run->ghz);
	if ((rc = make_threads(run, opt)) || (rc = setup_pace(run, opt)) || (rc = setup_measure(run, opt, res)) ||
	    (rc = setup_rss(run, opt)))
		return rc;
	uint64_t sample_every = run->w.h.entries[0] / (opt->samples ? opt->samples : 1) + 1;
	atomic_store(&go, 0);
	if (!run->serial && (rc = start_threads(run)))
		return rc;

	/* baseline, then go */
	res->code_rss = prefault_allocator_code();
	reset_hwm();
	res->baseline_rss = read_rss(run->r.statm);
	moment_baseline = res->baseline_rss;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	uint64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	run->r.t0 = now_ns(CLOCK_MONOTONIC);
	atomic_store_explicit(&go, 1, memory_order_release);
	rc = run->serial ? run_serial(run, sample_every) : join_threads(run);
	uint64_t t1 = now_ns(CLOCK_MONOTONIC);
	uint64_t cpu1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	getrusage(RUSAGE_SELF, &ru1);
	if (run->have_sampler) {
		atomic_store_explicit(&run->r.done, 1, memory_order_release);
		pthread_join(run->sampler, NULL);
		run->have_sampler = 0;
	}
	if (rc < 0)
		return rc;
	res->wall_ns = t1 - run->r.t0;
	res->cpu_ns = cpu1 - cpu0;
	res->minor_faults = (uint64_t)(ru1.ru_minflt - ru0.ru_minflt);
	res->major_faults = (uint64_t)(ru1.ru_majflt - ru0.ru_majflt);
	collect(run, opt, res);
	return 0;
}

int arr_replay_run(const char *wl_path, const struct arr_replay_options *opt, struct arr_replay_result *res)
{
	memset(res, 0, sizeof *res);
	res->version = ARR_WL_VERSION;
	struct run run = {.w = {.fd = -1}, .r = {.statm = -1, .status = -1, .clear = -1}};
	int rc = run_workload(&run, wl_path, opt, res);
	if (rc < 0 && run.r.tl) /* the result's when the run succeeded */
		munmap(run.r.tl, run.r.cap * sizeof *run.r.tl + 1);
	run_release();
	return rc;
}

void arr_replay_result_release(struct arr_replay_result *res)
{
	if (res->timeline)
		munmap(res->timeline, (size_t)res->nsamples * sizeof *res->timeline + 1);
	res->timeline = NULL;
	res->nsamples = 0;
}

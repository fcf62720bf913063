/*
 * stacks.c - call stacks for `allocrr record --stacks` (ALLOCRR_STACKS=DEPTH).
 *
 * Each allocating call walks its stack: through the recorder's own frames
 * by frame pointers, then from the hook's caller by cached CFA rules
 * (unwind.c; ALLOCRR_UNWIND=fp keeps to frame pointers, =libunwind asks
 * libunwind), then turns the return addresses into a node of the thread's trie of stacks
 * ((parent, address) -> id, ids unique in the process), so a trace stores
 * each distinct stack once: new nodes go into the thread's buffer as one
 * ARR_RAW_STACKS record just before the event that first uses them, and
 * the event carries the id (formats/writer.h). Consecutive calls mostly
 * share their outer frames, so only the frames below the last common one
 * are looked up, four at a time where that path was seen before (struct
 * stk_run: one cache line for four nodes).
 *
 * Safety: the walks only read words between the current frame and the top
 * of the thread's stack, aligned, each frame above the one before; anything
 * else ends them, and the stack is marked truncated (its outermost node is
 * ARR_STACK_TRUNCATED). With ALLOCRR_UNWIND=fp, code built without frame
 * pointers (Debian's sqlite3, most of libc) ends the walk early that way; it
 * never faults.
 *
 * dlclose (hooked in preload.c) bumps the generation: every thread's trie
 * starts again, so an address reused by another library is another node,
 * and the next look at the modules writes unloaded entries naming the
 * first id of the new nodes (docs/trace-format.md, module epochs).
 *
 * Sampling (ALLOCRR_STACK_SAMPLE=BYTES, `record --stack-sample`): as
 * tcmalloc and jemalloc sample, each thread counts down the bytes it
 * allocates from a draw of an exponential distribution of mean BYTES, and
 * only the call that reaches zero walks its stack (then a new draw). That
 * makes the sampled bytes a Poisson process: a call of n bytes is sampled
 * with probability 1 - exp(-n / BYTES), whatever came before, which is
 * what the analysis divides by. The others carry stack id 0. The draws
 * come from a per-thread xorshift generator, not rand (locks) nor libm.
 *
 * Loaded modules (dl_iterate_phdr: path, build id, bias, size) are written
 * as ARR_RAW_MODULE records when stacks start and again whenever the loader's
 * add/remove counters moved, checked every STK_MOD_CHECK stacked calls.
 * Nothing here calls malloc: tables are mmapped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "allocrr/stacks.h"
#include "recorder.h"

#define STK_MAX_DEPTH 120  /* + the marker: one ARR_RAW_STACKS record */
#define STK_MOD_CHECK 4096 /* stacked calls between looks at the loader */
#define STK_TAB_INIT (1u << 14)

struct stk_ent {
	uint64_t addr;
	uint32_t parent, id; /* id 0: empty */
};

#define STK_FRONT 4096 /* the front cache of recently used nodes: 64 KiB */

/*
 * A path of up to STK_RUN nodes below a parent, on one cache line: the
 * stack's frames are taken in runs at fixed depths (0-3, 4-7, ...), and a
 * run seen before gives its nodes with one probe and one line instead of a
 * probe of the front cache per frame. Exact: the run's addresses are
 * compared, not a hash of them.
 */
#define STK_RUN 4
#define STK_RUNS 1024 /* 64 KiB */
struct stk_run {
	uint64_t addr[STK_RUN];
	uint32_t id[STK_RUN];
	uint32_t parent, n; /* n 0: empty */
} __attribute__((aligned(64)));

struct stk_tab {
	struct stk_run runs[STK_RUNS];
	struct stk_ent front[STK_FRONT]; /* direct-mapped, before the table: hot stacks stay in cache */
	struct stk_ent *e;
	size_t mask, count;
	unsigned gen;
	uint32_t epoch;   /* this trie's, unique in the process: what remembered walks' ids belong to */
	uintptr_t lo, hi; /* the thread's stack */
	unsigned since_mod;
	int last_n;
	uint64_t last[STK_MAX_DEPTH + 1]; /* the previous stack, outermost first */
	uint32_t last_id[STK_MAX_DEPTH + 1];
};

static __thread struct stk_tab *stk_tls __attribute__((tls_model("initial-exec")));
static uint32_t next_id = 1;
static unsigned gen = 1;
static uint32_t next_epoch = 1;
static uintptr_t self_lo, self_hi; /* liballocrr-record.so's text: frames to skip */
static unsigned long long mod_adds = ~0ull, mod_subs = ~0ull;
static char exe_path[ARR_MODULE_PATH_MAX];
/* The address ranges of the last snapshot: a new stack node outside them
 * means a library was loaded since (dlopen), so the modules are looked at
 * again before the node is written. Races only cost an extra look. */
#define STK_MAX_RANGES 512
struct stk_range {
	uintptr_t lo, hi;
	uint64_t ident; /* a hash of the path and build id: another object at the same place differs */
};
static struct stk_range ranges[STK_MAX_RANGES];
static unsigned nranges;
extern void *__libc_stack_end;
/* ALLOCRR_UNWIND: cfi (the default: the cached CFA rules of unwind.c),
 * fp (frame pointers only), libunwind (libunwind's unw_backtrace, loaded
 * on first use; for comparison). */
enum { UNWIND_CFI, UNWIND_FP, UNWIND_LIBUNWIND };
static int unwind_mode;
static int (*unw_bt)(void **, int);
static uint64_t sample_mean; /* ALLOCRR_STACK_SAMPLE; 0: every call */
static __thread uint64_t smp_rng __attribute__((tls_model("initial-exec")));

static void *stk_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	uintptr_t me = (uintptr_t)&find_self;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz) {
			self_lo = lo;
			self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void arr__stacks_init(void)
{
	dl_iterate_phdr(find_self, NULL);
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
	exe_path[n > 0 ? n : 0] = 0;
	const char *u = getenv("ALLOCRR_UNWIND");
	unwind_mode = !u || !*u || !strcmp(u, "cfi") ? UNWIND_CFI
		      : !strcmp(u, "libunwind")      ? UNWIND_LIBUNWIND
						     : UNWIND_FP;
	const char *sm = getenv("ALLOCRR_STACK_SAMPLE");
	char *end;
	unsigned long long v = sm && *sm ? strtoull(sm, &end, 10) : 0;
	sample_mean = sm && *sm && !*end && v < (1ull << 40) ? v : 0;
}

uint64_t arr__stacks_sample_bytes(void) { return sample_mean; }

/* -ln(u) for u in (0, 1]: u = m * 2^e with m in [1, 2), ln m by the atanh
 * series (z < 1/3: seven terms are good to 1e-8). */
static double neg_ln(double u)
{
	union {
		double d;
		uint64_t b;
	} x = {u};
	int e = (int)((x.b >> 52) & 0x7ff) - 1023;
	x.b = (x.b & ((1ull << 52) - 1)) | (1023ull << 52);
	double z = (x.d - 1) / (x.d + 1), z2 = z * z;
	double s = z * (1 + z2 * (1. / 3 + z2 * (1. / 5 + z2 * (1. / 7 + z2 * (1. / 9 + z2 * (1. / 11 + z2 / 13))))));
	return -(e * 0.69314718055994531 + 2 * s);
}

/* The next countdown: an exponential draw of mean sample_mean, at least 1. */
static int64_t sample_draw(void)
{
	uint64_t r = smp_rng;
	if (!r) /* first draw of the thread: seed from the clock and the thread */
		r = (rec_now() ^ (uint64_t)syscall(SYS_gettid) * 0x9E3779B97F4A7C15ull) | 1;
	r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
	smp_rng = r;
	double u = ((r * 0x2545F4914F6CDD1Dull >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
	double d = neg_ln(u) * (double)sample_mean;
	return d < 1 ? 1 : d > 4e18 ? (int64_t)4e18 : (int64_t)d;
}

/* Return addresses by libunwind, the recorder's frames skipped. */
static int walk_libunwind(uint64_t *out, int max, int *trunc)
{
	if (!unw_bt) {
		arr__ts.internal = 1; /* dlopen allocates: the recorder's own calls */
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		unw_bt = h ? (int (*)(void **, int))dlsym(h, "unw_backtrace") : NULL;
		arr__ts.internal = 0;
		if (!unw_bt) {
			unwind_mode = UNWIND_FP;
			*trunc = 1;
			return 0;
		}
	}
	void *fr[STK_MAX_DEPTH + 16];
	arr__ts.internal = 1; /* its first unwinds allocate caches */
	int got = unw_bt(fr, max + 16), n = 0, i = 0;
	arr__ts.internal = 0;
	while (i < got && (uintptr_t)fr[i] >= self_lo && (uintptr_t)fr[i] < self_hi)
		i++;
	for (; i < got && n < max; i++)
		out[n++] = (uint64_t)(uintptr_t)fr[i];
	*trunc = i < got || got == max + 16;
	return n;
}

void arr__stacks_fork_child(void)
{
	__atomic_store_n(&next_id, 1, __ATOMIC_RELAXED);
	gen++;
	mod_adds = mod_subs = ~0ull; /* the child's trace needs its own modules */
	arr__unwind_fork_child();
}

void arr__stacks_thread_exit(void)
{
	struct stk_tab *tb = stk_tls;
	if (!tb)
		return;
	stk_tls = NULL;
	if (tb->e)
		munmap(tb->e, (tb->mask + 1) * sizeof *tb->e);
	munmap(tb, sizeof *tb);
	arr__unwind_thread_exit();
}

/* --- modules ----------------------------------------------------------- */

static int count_mods(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1; /* the counters are the same in every entry */
}

static size_t build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (end - p >= (ptrdiff_t)sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t nsz = (nh->n_namesz + 3) & ~3u, dsz = (nh->n_descsz + 3) & ~3u;
			const uint8_t *name = p + sizeof *nh, *desc = name + nsz;
			if ((size_t)(end - name) < nsz + dsz)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= 64) {
				memcpy(out, desc, nh->n_descsz);
				return nh->n_descsz;
			}
			p = desc + dsz;
		}
	}
	return 0;
}

static uint64_t mod_ident(const char *path, size_t pl, const uint8_t *bid, size_t bl)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < pl; i++)
		h = (h ^ (uint8_t)path[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < bl; i++)
		h = (h ^ bid[i]) * 0x100000001b3ull;
	return h;
}

struct mod_walk {
	uint64_t t;
	int collect; /* only gather the ranges (into found) */
	struct stk_range *found;
	unsigned nfound;
};

static int emit_mod(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct mod_walk *mw = arg;
	uint64_t t = mw->t;
	uint64_t hi = 0;
	int loads = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			loads++;
			if (ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		}
	}
	if (!loads)
		return 0;
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe_path;
	size_t pl = strnlen(path, ARR_MODULE_PATH_MAX);
	uint8_t bid[64];
	size_t bl = build_id(info, bid);
	struct stk_range rg = {info->dlpi_addr, info->dlpi_addr + hi, mod_ident(path, pl, bid, bl)};
	if (mw->collect) {
		if (mw->nfound < STK_MAX_RANGES)
			mw->found[mw->nfound++] = rg;
		return 0;
	}
	unsigned words = 4 + (unsigned)((bl + pl + 7) / 8);
	uint64_t *w = rec_begin(words);
	if (!w)
		return 1;
	unsigned r = __atomic_load_n(&nranges, __ATOMIC_RELAXED);
	if (r < STK_MAX_RANGES) {
		ranges[r] = rg;
		__atomic_store_n(&nranges, r + 1, __ATOMIC_RELEASE);
	}
	w[0] = ARR_RAW_W0(ARR_RAW_MODULE, 0, t);
	w[1] = info->dlpi_addr;
	w[2] = hi;
	w[3] = bl | pl << 8 | (uint64_t)ARR_MODULE_LOADED << 24;
	w[words - 1] = 0; /* padding */
	memcpy(w + 4, bid, bl);
	memcpy((uint8_t *)(w + 4) + bl, path, pl);
	rec_commit(words);
	return 0;
}

/* A snapshot of the modules when the loader's counters moved. Inside rec_enter. */
static void check_modules(void)
{
	unsigned long long c[2] = {0, 0};
	dl_iterate_phdr(count_mods, c);
	if (c[0] == __atomic_load_n(&mod_adds, __ATOMIC_RELAXED) &&
	    c[1] == __atomic_load_n(&mod_subs, __ATOMIC_RELAXED))
		return;
	int unloaded = c[1] != __atomic_load_n(&mod_subs, __ATOMIC_RELAXED) &&
		       __atomic_load_n(&mod_subs, __ATOMIC_RELAXED) != ~0ull;
	__atomic_store_n(&mod_adds, c[0], __ATOMIC_RELAXED);
	__atomic_store_n(&mod_subs, c[1], __ATOMIC_RELAXED);
	struct mod_walk mw = {.t = rec_now()};
	if (unloaded) { /* the objects of the last snapshot that are gone: kind 2 entries first */
		struct stk_range now[STK_MAX_RANGES];
		mw.collect = 1, mw.found = now;
		dl_iterate_phdr(emit_mod, &mw);
		mw.collect = 0;
		unsigned n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
		uint32_t first = __atomic_load_n(&next_id, __ATOMIC_RELAXED);
		for (unsigned i = 0; i < n; i++) {
			unsigned j = 0;
			while (j < mw.nfound && (now[j].lo != ranges[i].lo || now[j].ident != ranges[i].ident))
				j++;
			if (j < mw.nfound)
				continue;
			uint64_t *w = rec_begin(5);
			if (!w)
				break;
			/* no path; the build id field holds the first stack id defined after the unload */
			w[0] = ARR_RAW_W0(ARR_RAW_MODULE, 0, mw.t);
			w[1] = ranges[i].lo;
			w[2] = ranges[i].hi - ranges[i].lo;
			w[3] = 4 | (uint64_t)ARR_MODULE_UNLOADED << 24;
			w[4] = first;
			rec_commit(5);
		}
	}
	__atomic_store_n(&nranges, 0, __ATOMIC_RELAXED);
	dl_iterate_phdr(emit_mod, &mw);
}

/* After a dlclose: new modules snapshot (with what went away) at the next
 * stacked call, new stack nodes (their addresses may mean another object
 * now), new unwind rules. */
void arr__stacks_dlclosed(void)
{
	__atomic_add_fetch(&gen, 1, __ATOMIC_RELAXED);
	arr__unwind_reset();
}

static int in_known_module(uintptr_t addr)
{
	unsigned n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (addr - 1 >= ranges[i].lo && addr - 1 < ranges[i].hi)
			return 1;
	return 0;
}

/* --- the walk and the trie --------------------------------------------- */

/* The mapping holding address a, from /proc/self/maps read with raw system
 * calls (no allocation, no lock, no cancellation point): a thread's stack,
 * its TLS and descriptor above it. [0, 0) if not found. */
static void mapping_of(uintptr_t a, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	uintptr_t v[2] = {0, 0};
	int field = 0; /* 0: the start, 1: the end, 2: the rest of the line */
	for (long n; (n = syscall(SYS_read, fd, buf, sizeof buf)) > 0;) {
		for (long i = 0; i < n; i++) {
			char c = buf[i];
			if (c == '\n') {
				if (field >= 1 && a >= v[0] && a < v[1]) {
					*lo = v[0], *hi = v[1];
					syscall(SYS_close, fd);
					return;
				}
				field = 0, v[0] = v[1] = 0;
			} else if (field < 2) {
				int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
				if (d >= 0)
					v[field] = v[field] << 4 | (uintptr_t)d;
				else
					field++;
			}
		}
	}
	syscall(SYS_close, fd);
}

static struct stk_tab *tab_get(void)
{
	struct stk_tab *tb = stk_tls;
	if (ARR_LIKELY(tb && tb->gen == gen))
		return tb;
	if (!tb && !(tb = stk_map(sizeof *tb)))
		return NULL;
	if (tb->e)
		munmap(tb->e, (tb->mask + 1) * sizeof *tb->e);
	uintptr_t lo = tb->lo, hi = tb->hi; /* a thread's stack stays where it is */
	memset(tb, 0, sizeof *tb);
	tb->gen = gen;
	tb->epoch = __atomic_fetch_add(&next_epoch, 1, __ATOMIC_RELAXED);
	tb->since_mod = 1;
	if (!(tb->e = stk_map(STK_TAB_INIT * sizeof *tb->e))) {
		stk_tls = NULL;
		munmap(tb, sizeof *tb);
		return NULL;
	}
	tb->mask = STK_TAB_INIT - 1;
	/* The thread's stack: the walk reads nothing outside it. */
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (syscall(SYS_gettid) == getpid()) { /* the main thread: its stack grows down from there */
		struct rlimit rl;
		uint64_t lim =
			getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : (1ull << 30);
		tb->hi = (uintptr_t)__libc_stack_end;
		tb->lo = tb->hi - lim;
	} else if (lo || hi) {
		tb->lo = lo, tb->hi = hi; /* found before this generation */
	} else {
		/* Not pthread_getattr_np(): it holds the thread's lock while it
		 * reallocs its cpuset, and a thread whose first allocation is that
		 * realloc (every JVM thread) would wait for itself here. */
		mapping_of(here, &tb->lo, &tb->hi);
	}
	if (here < tb->lo || here >= tb->hi)
		tb->lo = tb->hi = 0; /* not where we think: no walks */
	stk_tls = tb;
	return tb;
}

static int tab_grow(struct stk_tab *tb)
{
	size_t cap = (tb->mask + 1) * 2;
	struct stk_ent *e = stk_map(cap * sizeof *e);
	if (!e)
		return -1;
	for (size_t i = 0; i <= tb->mask; i++) {
		struct stk_ent *o = &tb->e[i];
		if (!o->id)
			continue;
		size_t h = (o->addr * 0x9E3779B97F4A7C15ull ^ o->parent * 0xC2B2AE3D27D4EB4Full) >> 20;
		while (e[h & (cap - 1)].id)
			h++;
		e[h & (cap - 1)] = *o;
	}
	munmap(tb->e, (tb->mask + 1) * sizeof *tb->e);
	tb->e = e;
	tb->mask = cap - 1;
	return 0;
}

/* The node (parent, addr), added (and listed in nodes) if new; 0 if full. */
static uint32_t tab_node(struct stk_tab *tb, uint32_t parent, uint64_t addr, uint64_t *nodes, unsigned *nn)
{
	size_t h = (addr * 0x9E3779B97F4A7C15ull ^ parent * 0xC2B2AE3D27D4EB4Full) >> 20;
	struct stk_ent *f = &tb->front[h & (STK_FRONT - 1)];
	if (f->id && f->addr == addr && f->parent == parent)
		return f->id;
	for (;; h++) {
		struct stk_ent *e = &tb->e[h & tb->mask];
		if (!e->id)
			break;
		if (e->addr == addr && e->parent == parent)
			return (*f = *e).id;
	}
	if ((tb->count + 1) * 2 > tb->mask + 1) {
		if (tab_grow(tb) < 0)
			return 0;
		return tab_node(tb, parent, addr, nodes, nn);
	}
	if (addr != ARR_STACK_TRUNCATED && !in_known_module(addr))
		check_modules(); /* a library loaded since the last snapshot */
	uint32_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	if (!id)
		return 0;
	tb->e[h & tb->mask] = *f = (struct stk_ent){addr, parent, id};
	tb->count++;
	nodes[2 * *nn] = id | (uint64_t)parent << 32;
	nodes[2 * *nn + 1] = addr;
	(*nn)++;
	return id;
}

/* Return addresses of the program's frames, innermost first. With the CFI
 * walk, *how says 1 (walked: the unwinder may remember it) or 2 (the
 * unwinder remembered this stack: *sid is its id, nothing in out). */
static __attribute__((noinline)) int walk(const struct stk_tab *tb, uint64_t *out, int max, int *trunc, int *kept,
					  int *how, uint32_t *sid)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0), lo = fp, hi = tb->hi;
	int n = 0, skipping = 1;
	*trunc = 1;
	if (fp < tb->lo || fp >= hi)
		return 0;
	for (;;) {
		if (fp < lo || fp > hi - 16 || (fp & 7))
			return n;
		uintptr_t next = ((const uintptr_t *)fp)[0], ret = ((const uintptr_t *)fp)[1];
		if (ret < 4096) /* no code there: the end, or garbage */
			break;
		if (skipping && ret >= self_lo && ret < self_hi) {
			/* the recorder's own frames */
		} else if (skipping && unwind_mode == UNWIND_CFI) {
			/* fp is the hook's frame: its caller returns to ret with rsp just above it
			 * and the rbp the hook saved; from there on by the CFI (unwind.c) */
			if (arr__unwind_hit(ret, fp + 16, next, tb->epoch, sid)) {
				*how = 2;
				return 0;
			}
			*how = 1;
			return arr__unwind_cfi(ret, fp + 16, next, tb->lo, hi, out, max, trunc, kept);
		} else {
			skipping = 0;
			if (n == max)
				return n;
			out[n++] = ret;
		}
		if (!next)
			break;
		if (next <= fp)
			return n;
		lo = fp + 16;
		fp = next;
	}
	*trunc = 0;
	return n;
}

/* The stack id of the calling hook's caller; new nodes are recorded first. */
static uint32_t capture(void)
{
	struct stk_tab *tb = tab_get();
	if (!tb)
		return 0;
	if (ARR_UNLIKELY(--tb->since_mod == 0)) {
		tb->since_mod = STK_MOD_CHECK;
		check_modules();
	}
	uint64_t fr[STK_MAX_DEPTH];
	uint32_t sid = 0;
	int trunc, kept = 0, how = 0,
		   n = unwind_mode == UNWIND_LIBUNWIND ? walk_libunwind(fr, arr__hot.stacks, &trunc)
						       : walk(tb, fr, arr__hot.stacks, &trunc, &kept, &how, &sid);
	if (how == 2)
		return sid;
	/* Outermost first, the truncation marker before all: seq[mk + j] is frame
	 * n - 1 - j. The unwinder's kept outer frames are the previous walk's,
	 * which the previous call put in tb->last at the same places -- unless
	 * that call stored less (a full table, a reset): then all frames again. */
	int mk = trunc != 0, m = mk + n, k = 0;
	if (kept && (tb->last_n < mk + kept || (tb->last[0] == ARR_STACK_TRUNCATED) != mk)) {
		arr__unwind_frames(fr);
		kept = 0;
	}
	uint64_t seq[STK_MAX_DEPTH + 1];
	if (kept) {
		k = mk + kept;
	} else if (mk) {
		seq[0] = ARR_STACK_TRUNCATED;
	}
	for (int i = mk + kept; i < m; i++)
		seq[i] = fr[n - 1 - (i - mk)];
	while (k < m && k < tb->last_n && seq[k] == tb->last[k])
		k++;
	for (int j = k & ~(STK_RUN - 1); j < k && j < mk + kept; j++)
		seq[j] = tb->last[j]; /* the start of the run holding frame k, for the runs below */
	uint64_t nodes[2 * (STK_MAX_DEPTH + 1)];
	unsigned nn = 0;
	for (int i = k; i < m;) {
		/* the run holding frame i: its parent is this stack's node before it */
		int rs = i & ~(STK_RUN - 1), re = rs + STK_RUN < m ? rs + STK_RUN : m;
		uint32_t parent = rs ? tb->last_id[rs - 1] : 0;
		uint64_t h = parent * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)(re - rs);
		for (int j = rs; j < re; j++)
			h = (h ^ seq[j]) * 0x9E3779B97F4A7C15ull;
		struct stk_run *r = &tb->runs[(h >> 40) & (STK_RUNS - 1)];
		int hit = r->n == (uint32_t)(re - rs) && r->parent == parent;
		for (int j = rs; j < re && hit; j++)
			hit = r->addr[j - rs] == seq[j];
		if (hit) {
			for (; i < re; i++) {
				tb->last[i] = seq[i];
				tb->last_id[i] = r->id[i - rs];
			}
			continue;
		}
		parent = i ? tb->last_id[i - 1] : 0;
		for (; i < re; i++) {
			uint32_t id = tab_node(tb, parent, seq[i], nodes, &nn);
			if (!id)
				break;
			tb->last[i] = seq[i];
			tb->last_id[i] = parent = id;
		}
		if (i < re) { /* the table is full */
			m = i;
			break;
		}
		r->n = (uint32_t)(re - rs);
		r->parent = rs ? tb->last_id[rs - 1] : 0;
		for (int j = rs; j < re; j++) {
			r->addr[j - rs] = seq[j];
			r->id[j - rs] = tb->last_id[j];
		}
	}
	int whole = m == mk + n; /* not cut short by a full table */
	tb->last_n = m;
	if (nn) {
		uint64_t *w = rec_begin(1 + 2 * nn);
		if (!w) { /* not recording: forget the nodes, they were never written */
			tb->gen = 0;
			return 0;
		}
		w[0] = ARR_RAW_W0(ARR_RAW_STACKS, 0, nn);
		memcpy(w + 1, nodes, nn * 2 * sizeof *nodes);
		rec_commit(1 + 2 * nn);
	}
	sid = m ? tb->last_id[m - 1] : 0;
	if (how == 1 && whole && sid)
		arr__unwind_remember(sid, tb->epoch);
	return sid;
}

/* Record the call, with stack id sid (with no stack word at all when not stacked). */
static void rec_call(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs, const uint64_t *a, int stacked)
{
	if (ARR_UNLIKELY(arr__ts.mode == MODE_NEW)) /* register (and start the recorder) before the walk */
		(void)arr__rec_slow(0);
	uint32_t sid = stacked ? capture() : 0;
	unsigned n = 1 + nargs + failed + (stacked != 0);
	uint64_t *w = rec_begin(n);
	if (!w)
		return;
	w[0] = ARR_RAW_W0(op, failed, t) | (stacked ? ARR_RAW_HAS_STACK : 0);
	for (unsigned i = 0; i < nargs; i++)
		w[1 + i] = a[i];
	if (stacked)
		w[1 + nargs] = sid;
	if (failed)
		w[n - 1] = (uint64_t)(uint32_t)err;
	rec_commit(n);
}

/*
 * The countdown of this thread reached zero (rec_ok). The next one is a new
 * draw; a thread's first call finds no draw yet (the countdown started at
 * 0): it draws, and counts this call down from there.
 */
static int sample_next(uint64_t n)
{
	if (!sample_mean)
		return 1; /* every call: the countdown stays at 0 */
	if (ARR_UNLIKELY(!smp_rng)) {
		arr__ts.smp_left = sample_draw() - (int64_t)n;
		if (arr__ts.smp_left > 0)
			return 0;
	}
	arr__ts.smp_left = sample_draw();
	return 1;
}

void arr__rec_stacked(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs, uint64_t a0, uint64_t a1,
		      uint64_t a2, uint64_t a3)
{
	if (!rec_enter())
		return;
	uint64_t a[4] = {a0, a1, a2, a3};
	rec_call(op, t, failed, err, nargs, a, sample_next(rec_call_bytes(op, nargs, a0, a1, a2, a3)));
	rec_leave();
}

void arr__rec_stacked_failed(unsigned op, uint64_t t, int err, unsigned nargs, uint64_t a0, uint64_t a1, uint64_t a2,
			     uint64_t a3)
{
	if (!rec_enter())
		return;
	uint64_t a[4] = {a0, a1, a2, a3};
	uint64_t bytes = rec_call_bytes(op, nargs, a0, a1, a2, a3);
	int stacked = (arr__ts.smp_left -= (int64_t)bytes) <= 0 && sample_next(bytes);
	rec_call(op, t, 1, err, nargs, a, stacked);
	rec_leave();
}

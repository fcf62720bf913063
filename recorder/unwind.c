/*
 * unwind.c - whole call stacks through code without frame pointers, for
 * `allocrr record --stacks` (the default unwinder; ALLOCRR_UNWIND=fp and
 * =libunwind choose the others).
 *
 * Nearly every frame of x86-64 code compiled by GCC or Clang has a CFA
 * rule of the simplest kind: CFA = rsp + k (or rbp + k where the function
 * keeps a frame pointer), the return address at CFA - 8, the caller's rbp
 * either untouched or saved at CFA - j. So an unwind step is two or three
 * loads once that rule is known, and the rule depends only on the return
 * address. Each thread keeps a cache return address -> rule; a miss asks
 * libdw (loaded with dlopen on first use, its allocations the recorder's
 * own) for the CFI row at that address in the module's .eh_frame, read
 * from the module's file once. A hot stack is then walked with a hash
 * probe and a few loads per frame, as heaptrack's and bytehound's caches
 * do. Rules of any other kind (DWARF expressions, registers other than
 * rsp/rbp, signal frames) end the walk: the stack is stored truncated.
 *
 * Safety: every load is 8-byte aligned and inside the thread's stack
 * [lo, hi), and each frame's CFA is above the one before, so a wrong rule
 * or a corrupt stack ends the walk instead of faulting or looping.
 *
 * Threads: the caches are per thread (no locks on a hit); libdw is not
 * thread-safe, so misses take one mutex. arr__unwind_reset() (a module was
 * unloaded) invalidates every cache and every opened module.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder.h"

/* A rule, packed in 64 bits; 0 is "not cached". */
#define UW_OK 1u   /* a step by the fields below */
#define UW_END 2u  /* the outermost frame: its return address is undefined */
#define UW_STOP 3u /* no usable rule: the walk ends, truncated */

struct uw_rule {
	uint8_t kind;
	uint8_t cfa_bp;   /* CFA from rbp (1) or rsp (0) */
	uint8_t bp_saved; /* the caller's rbp is at CFA + bp_off; else unchanged */
	int8_t pad;
	int16_t bp_off;
	int16_t ra_off; /* return address at CFA + ra_off */
	int32_t cfa_off;
};

#define UW_CACHE (1u << 12) /* entries per thread: 64 KiB, so that a hot stack's rules stay in cache */

struct uw_ent {
	uint64_t key; /* return address; 0: empty */
	struct uw_rule r;
};

#define UW_PREV 128 /* frames of the previous walk kept */

/* A frame of a walk: the state (ip, sp, bp) in which ip was the return
 * address, where its step read the caller's return address and rbp (0: not
 * read), and whether the outer frames depend on the rbp it started with. */
struct uw_frame {
	uintptr_t ip, sp, bp, ra_at, bp_at;
	uint8_t need_bp;
};

/* The previous walk, outermost frame first: a new walk that meets one of
 * its frames in the same state keeps the frames from there out in place and
 * writes only its own inner frames. */
struct uw_walk {
	int n, end; /* frames; how the walk ended: 1 complete, 0 cut, -1 the depth limit */
	struct uw_frame f[UW_PREV];
};

/*
 * Whole walks, remembered with the stack id they gave: a call whose
 * innermost frame is in the state (return address, stack pointer, and rbp
 * where the walk used it) of a remembered walk, and finds every stack word
 * that walk read still holding what it read, has the same stack, so it
 * takes the id without a rule probe, a frame copy or a trie lookup. The
 * previous walk (struct uw_walk) only gives back the outer frames of the
 * one call before; a program's loop allocates from a few dozen stacks in
 * turn, and these are the hot ones. Direct-mapped by (ip, sp); a walk that
 * read more words than UW_HIT_WORDS is not remembered.
 */
#define UW_HIT_SET_BITS 8
#define UW_WAYS 4
#define UW_HITS ((1u << UW_HIT_SET_BITS) * UW_WAYS)
#define UW_HIT_WORDS 30
/* The keys of a set's ways on one cache line: a probe reads one line, then
 * only the matching walk. */
struct uw_hkey {
	uintptr_t ip[UW_WAYS], sp[UW_WAYS]; /* ip 0: empty */
} __attribute__((aligned(64)));
struct uw_hit {
	uintptr_t bp;        /* only compared when need_bp */
	uint32_t sid, epoch; /* the stack's id, valid while the caller's epoch is the same */
	uint8_t need_bp, n;  /* n: words to compare */
	struct {
		uintptr_t at, val;
	} w[UW_HIT_WORDS];
};

struct uw_cache {
	unsigned gen;
	unsigned count;
	unsigned turn; /* the way of a full set that a new whole walk takes */
	struct uw_walk walk;
	struct uw_hkey hkey[UW_HITS / UW_WAYS];
	struct uw_hit hit[UW_HITS];
	struct uw_frame t[UW_PREV]; /* this walk's own frames, innermost first */
	struct uw_ent e[UW_CACHE];
};

static __thread struct uw_cache *uw_tls __attribute__((tls_model("initial-exec")));
static unsigned uw_gen = 1;
static int uw_state; /* 0: not tried, 1: libdw loaded, -1: not available */

/* libdw and libelf, by dlsym. */
static unsigned (*p_elf_version)(unsigned);
static Elf *(*p_elf_begin)(int, Elf_Cmd, Elf *);
static int (*p_elf_end)(Elf *);
static int (*p_elf_cntl)(Elf *, Elf_Cmd);
static Dwarf_CFI *(*p_getcfi_elf)(Elf *);
static int (*p_cfi_end)(Dwarf_CFI *);
static int (*p_addrframe)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
static int (*p_frame_cfa)(Dwarf_Frame *, Dwarf_Op **, size_t *);
static int (*p_frame_register)(Dwarf_Frame *, int, Dwarf_Op *, Dwarf_Op **, size_t *);
static int (*p_frame_info)(Dwarf_Frame *, Dwarf_Addr *, Dwarf_Addr *, bool *);

/* The modules opened so far (under uw_lock). */
#define UW_MAX_MODS 256
static struct uw_mod {
	uintptr_t bias, lo, hi;
	unsigned gen;
	Elf *elf;
	Dwarf_CFI *cfi; /* NULL: no CFI (the walk stops in it) */
} mods[UW_MAX_MODS];
static unsigned nmods;
static pthread_mutex_t uw_lock = PTHREAD_MUTEX_INITIALIZER;

static int uw_load(void)
{
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
#define SYM(p, name) (*(void **)&p = dlsym(h, name))
	if (!SYM(p_elf_version, "elf_version") || !SYM(p_elf_begin, "elf_begin") || !SYM(p_elf_end, "elf_end") ||
	    !SYM(p_elf_cntl, "elf_cntl") || !SYM(p_getcfi_elf, "dwarf_getcfi_elf") ||
	    !SYM(p_cfi_end, "dwarf_cfi_end") || !SYM(p_addrframe, "dwarf_cfi_addrframe") ||
	    !SYM(p_frame_cfa, "dwarf_frame_cfa") || !SYM(p_frame_register, "dwarf_frame_register") ||
	    !SYM(p_frame_info, "dwarf_frame_info"))
		return -1;
#undef SYM
	p_elf_version(EV_CURRENT);
	return 0;
}

struct uw_find {
	uintptr_t pc, bias, lo, hi;
	const char *path;
	int found;
};

static int find_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct uw_find *f = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int hit = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
		hit |= f->pc >= a && f->pc < b;
	}
	if (!hit)
		return 0;
	f->bias = info->dlpi_addr;
	f->lo = lo;
	f->hi = hi;
	f->path = info->dlpi_name;
	f->found = 1;
	return 1;
}

static void mod_close(struct uw_mod *m)
{
	if (m->cfi)
		p_cfi_end(m->cfi);
	if (m->elf)
		p_elf_end(m->elf);
	memset(m, 0, sizeof *m);
}

/* The module holding pc, opened if new. uw_lock held. */
static struct uw_mod *mod_of(uintptr_t pc, unsigned gen)
{
	for (unsigned i = 0; i < nmods; i++)
		if (mods[i].gen == gen && pc >= mods[i].lo && pc < mods[i].hi)
			return &mods[i];
	struct uw_find f = {.pc = pc};
	dl_iterate_phdr(find_obj, &f);
	if (!f.found)
		return NULL;
	struct uw_mod *m = NULL;
	for (unsigned i = 0; i < nmods && !m; i++)
		if (mods[i].gen != gen) /* a module of before the last unload: reuse its slot */
			mod_close(m = &mods[i]);
	if (!m) {
		if (nmods == UW_MAX_MODS)
			return NULL;
		m = &mods[nmods++];
	}
	const char *path = f.path && *f.path ? f.path : "/proc/self/exe";
	m->bias = f.bias, m->lo = f.lo, m->hi = f.hi, m->gen = gen;
	/* The file is mapped, not read through the descriptor, which is closed at
	 * once: the program's own descriptors stay as they were (and a program
	 * that closes every descriptor cannot pull the file from under libelf). */
	int fd = *path == '/' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	m->elf = fd >= 0 ? p_elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (m->elf)
		p_elf_cntl(m->elf, ELF_C_FDDONE);
	if (fd >= 0)
		close(fd);
	m->cfi = m->elf ? p_getcfi_elf(m->elf) : NULL;
	return m;
}

/* A register's rule: 0 same value, 1 saved at CFA + *off, -1 anything else. */
static int reg_rule(Dwarf_Frame *fr, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	if (p_frame_register(fr, regno, mem, &ops, &n) != 0)
		return -1;
	if (n == 0)
		return ops == NULL ? 0 : -1; /* same value, or undefined */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (n == 1) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	if (n == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return -1;
}

/* The rule at return address ra, from the CFI. uw_lock held. */
static struct uw_rule rule_of(uintptr_t ra, unsigned gen)
{
	struct uw_rule r = {.kind = UW_STOP};
	struct uw_mod *m = mod_of(ra - 1, gen);
	Dwarf_Frame *fr = NULL;
	/* ra - 1: inside the call, whose row also holds after it returns */
	if (!m || !m->cfi || p_addrframe(m->cfi, ra - 1 - m->bias, &fr) != 0)
		return r;
	Dwarf_Op *ops;
	size_t n;
	bool sig = false;
	int64_t ra_off = 0, bp_off = 0;
	Dwarf_Addr s, e;
	int rra = p_frame_info(fr, &s, &e, &sig);
	if (rra != 16 || sig || p_frame_cfa(fr, &ops, &n) != 0)
		goto out;
	if (n == 0) { /* the CFA cannot be told: the outermost frame (_start) */
		r.kind = UW_END;
		goto out;
	}
	unsigned reg;
	int64_t off;
	if (n != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx) {
		reg = (unsigned)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if ((reg != 6 && reg != 7) || off < INT32_MIN || off > INT32_MAX)
		goto out;
	{
		Dwarf_Op mem[3], *rops = NULL;
		size_t rn = 0;
		if (p_frame_register(fr, 16, mem, &rops, &rn) == 0 && rn == 0 && rops == mem) {
			r.kind = UW_END; /* the return address is undefined: the outermost frame */
			goto out;
		}
	}
	if (reg_rule(fr, 16, &ra_off) != 1 || ra_off < INT16_MIN || ra_off > INT16_MAX)
		goto out;
	int br = reg_rule(fr, 6, &bp_off);
	if (br < 0 || bp_off < INT16_MIN || bp_off > INT16_MAX)
		goto out;
	r = (struct uw_rule){.kind = UW_OK,
			     .cfa_bp = reg == 6,
			     .bp_saved = br == 1,
			     .bp_off = (int16_t)bp_off,
			     .ra_off = (int16_t)ra_off,
			     .cfa_off = (int32_t)off};
out:
	free(fr); /* malloc'd by libdw: the recorder's own call (internal) */
	return r;
}

static struct uw_cache *cache_get(unsigned gen)
{
	struct uw_cache *c = uw_tls;
	if (ARR_LIKELY(c && c->gen == gen))
		return c;
	if (c) {
		/* hand the pages back, keep the mapping */
		madvise(c, sizeof *c, MADV_DONTNEED);
	} else {
		void *p = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		uw_tls = c = p;
	}
	c->gen = gen;
	c->count = 0;
	return c;
}

static struct uw_rule lookup(struct uw_cache *c, uintptr_t ra, unsigned gen)
{
	size_t h = (ra * 0x9E3779B97F4A7C15ull) >> 52; /* 12 bits */
	for (unsigned probe = 0;; probe++, h = (h + 1) & (UW_CACHE - 1)) {
		struct uw_ent *e = &c->e[h];
		if (e->key == ra)
			return e->r;
		if (!e->key)
			break;
	}
	struct uw_rule r = {.kind = UW_STOP};
	int saved_errno = errno; /* the program's: libdw and open/close may set it */
	if (uw_state == 0) {
		pthread_mutex_lock(&uw_lock);
		if (uw_state == 0)
			uw_state = uw_load() == 0 ? 1 : -1;
		pthread_mutex_unlock(&uw_lock);
	}
	if (uw_state > 0) {
		pthread_mutex_lock(&uw_lock);
		r = rule_of(ra, gen);
		pthread_mutex_unlock(&uw_lock);
	}
	errno = saved_errno;
	if (c->count * 4 >= UW_CACHE * 3) { /* full: start again (rare: that many call sites) */
		memset(c->e, 0, sizeof c->e);
		c->count = 0;
		h = (ra * 0x9E3779B97F4A7C15ull) >> 52;
	}
	c->e[h] = (struct uw_ent){ra, r};
	c->count++;
	return r;
}

/*
 * Does the previous walk's frame i (outermost first) give the same outer
 * frames as state (ip, bp) now, at the same sp? It does if its state was the
 * same (rbp only where an outer step uses it) and every stack word its outer
 * steps read still holds what they read then: the steps are then the same
 * computation. One load per outer frame instead of a cache probe.
 */
static int same_outer(const struct uw_walk *w, int i, uintptr_t ip, uintptr_t bp)
{
	const struct uw_frame *p = &w->f[i];
	if (p->ip != ip || (p->need_bp && p->bp != bp))
		return 0;
	for (int k = i; k > 0; k--) {
		const struct uw_frame *q = &w->f[k], *o = q - 1;
		if (*(const uintptr_t *)q->ra_at != o->ip)
			return 0;
		if (q->bp_at && o->need_bp && *(const uintptr_t *)q->bp_at != o->bp)
			return 0;
	}
	return 1;
}

int arr__unwind_cfi(uintptr_t ip, uintptr_t sp, uintptr_t bp, uintptr_t lo, uintptr_t hi, uint64_t *out, int max,
		    int *trunc, int *kept)
{
	unsigned gen = __atomic_load_n(&uw_gen, __ATOMIC_RELAXED);
	struct uw_cache *c = cache_get(gen);
	*trunc = 1;
	*kept = 0;
	if (!c || uw_state < 0)
		return 0;
	struct uw_walk *w = &c->walk;
	struct uw_frame *t = c->t;
	int n = 0, i = w->end >= 0 ? w->n - 1 : -1, end = 0, keep = 0; /* keep: the previous walk's frames kept */
	uint8_t internal = arr__ts.internal;
	arr__ts.internal = 1; /* libdw's allocations on a miss are the recorder's */
	if (max > UW_PREV)
		max = UW_PREV;
	for (;;) {
		/* the previous walk's frames below this sp are gone; one at this sp may be the same */
		while (i >= 0 && w->f[i].sp < sp)
			i--;
		if (i >= 0 && w->f[i].sp == sp && same_outer(w, i, ip, bp) && n + i + 1 <= max) {
			keep = i + 1;
			end = w->end;
			break;
		}
		if (n == max) {
			end = -1;
			break;
		}
		struct uw_frame *p = &t[n++];
		*p = (struct uw_frame){.ip = ip, .sp = sp, .bp = bp};
		struct uw_rule r = lookup(c, ip, gen);
		if (r.kind == UW_END) {
			end = 1;
			break;
		}
		if (r.kind != UW_OK)
			break;
		p->need_bp = r.cfa_bp; /* this step uses rbp; the pass below adds the outer steps' needs */
		uintptr_t cfa = (r.cfa_bp ? bp : sp) + (intptr_t)r.cfa_off, ra_at = cfa + (intptr_t)r.ra_off;
		if (cfa <= sp || cfa > hi || ra_at < sp || ra_at > hi - 8 || (ra_at & 7))
			break;
		uintptr_t nip = *(const uintptr_t *)ra_at;
		p->ra_at = ra_at;
		if (r.bp_saved) {
			uintptr_t bp_at = cfa + (intptr_t)r.bp_off;
			if (bp_at < sp || bp_at > hi - 8 || (bp_at & 7)) {
				p->ra_at = 0; /* not a step: nothing to check again */
				break;
			}
			bp = *(const uintptr_t *)bp_at;
			p->bp_at = bp_at;
		}
		sp = cfa;
		if (nip < 4096) { /* the end of the chain (a zeroed return address) */
			end = 1;
			break;
		}
		ip = nip;
	}
	/* This walk's own frames go inside the kept ones, outermost first;
	 * each depends on its rbp if its step uses it or passes it on
	 * unchanged to an outer frame that does. */
	uint8_t need = keep ? w->f[keep - 1].need_bp : 0;
	for (int k = n - 1, at = keep; k >= 0; k--, at++) {
		struct uw_frame *p = &w->f[at];
		*p = t[k];
		need = (uint8_t)(p->need_bp || (!p->bp_at && need));
		p->need_bp = need;
	}
	w->n = keep + n;
	w->end = end;
	for (int k = 0; k < n; k++) /* the kept frames' addresses the caller has from last time */
		out[k] = t[k].ip;
	*kept = keep;
	*trunc = end != 1;
	(void)lo;
	arr__ts.internal = internal;
	return w->n;
}

static inline unsigned hit_set(uintptr_t ip, uintptr_t sp)
{
	return (unsigned)(((ip ^ sp * 0x9E3779B97F4A7C15ull) * 0xC2B2AE3D27D4EB4Full) >> (64 - UW_HIT_SET_BITS));
}

int arr__unwind_hit(uintptr_t ip, uintptr_t sp, uintptr_t bp, uint32_t epoch, uint32_t *sid)
{
	struct uw_cache *c = uw_tls;
	if (!c || c->gen != __atomic_load_n(&uw_gen, __ATOMIC_RELAXED))
		return 0;
	unsigned set = hit_set(ip, sp);
	const struct uw_hkey *key = &c->hkey[set];
	for (unsigned way = 0; way < UW_WAYS; way++) {
		if (key->ip[way] != ip || key->sp[way] != sp)
			continue;
		const struct uw_hit *h = &c->hit[set * UW_WAYS + way];
		if (h->epoch != epoch || (h->need_bp && h->bp != bp))
			continue;
		unsigned k = 0;
		while (k < h->n && *(const uintptr_t *)h->w[k].at == h->w[k].val)
			k++;
		if (k == h->n) {
			*sid = h->sid;
			return 1;
		}
	}
	return 0;
}

void arr__unwind_remember(uint32_t sid, uint32_t epoch)
{
	struct uw_cache *c = uw_tls;
	if (!c || c->gen != __atomic_load_n(&uw_gen, __ATOMIC_RELAXED) || !c->walk.n)
		return;
	const struct uw_walk *w = &c->walk;
	const struct uw_frame *in = &w->f[w->n - 1];
	unsigned words = 0;
	for (int k = w->n - 1; k > 0; k--)
		words += 1 + (w->f[k].bp_at && w->f[k - 1].need_bp);
	if (words > UW_HIT_WORDS) /* not worth the room (deep recursions) */
		return;
	unsigned set = hit_set(in->ip, in->sp), way = 0;
	struct uw_hkey *key = &c->hkey[set];
	while (way < UW_WAYS && key->ip[way])
		way++;
	if (way == UW_WAYS) /* all taken: another in turn */
		way = c->turn++ & (UW_WAYS - 1);
	struct uw_hit *h = &c->hit[set * UW_WAYS + way];
	unsigned n = 0;
	/* what same_outer() compares from the innermost frame out */
	for (int k = w->n - 1; k > 0; k--) {
		const struct uw_frame *q = &w->f[k], *o = q - 1;
		h->w[n].at = q->ra_at, h->w[n++].val = o->ip;
		if (q->bp_at && o->need_bp)
			h->w[n].at = q->bp_at, h->w[n++].val = o->bp;
	}
	h->bp = in->bp, h->need_bp = in->need_bp;
	h->sid = sid, h->epoch = epoch;
	h->n = (uint8_t)n;
	key->sp[way] = in->sp;
	key->ip[way] = in->ip;
}

void arr__unwind_frames(uint64_t *out)
{
	const struct uw_walk *w = &uw_tls->walk;
	for (int k = 0; k < w->n; k++)
		out[k] = w->f[w->n - 1 - k].ip;
}

void arr__unwind_reset(void) { __atomic_add_fetch(&uw_gen, 1, __ATOMIC_RELAXED); }

/* In a forked child: another thread may have held the lock, in the middle
 * of libdw. Forget the modules (their memory is left alone) and start again. */
void arr__unwind_fork_child(void)
{
	pthread_mutex_init(&uw_lock, NULL);
	nmods = 0;
	__atomic_add_fetch(&uw_gen, 1, __ATOMIC_RELAXED);
}

void arr__unwind_thread_exit(void)
{
	struct uw_cache *c = uw_tls;
	uw_tls = NULL;
	if (c)
		munmap(c, sizeof *c);
}

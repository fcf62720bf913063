/*
 * sites.c - the "sites" section: who allocated the memory, for traces
 * recorded with stacks (allocrr/stacks.h); symbolized with
 * allocrr/symbolize.h when the pass ends.
 *
 * A site is a call instruction: the first frame of a stack outside the
 * allocator's own modules (libc, libstdc++, ld.so, the recorder), so
 * `malloc` called from `strdup` is charged to strdup's caller (a stack with
 * no other frame, as a walk cut short in libc gives, to its innermost). Every
 * figure is exact per site and per stack: allocated bytes and calls, live
 * bytes and their own peak, bytes still live at the end (leaked),
 * temporary allocations (freed before their thread's next allocation),
 * calloc bytes (fresh or reused, as the zeroing analyzer classifies them:
 * it marks the block), and, at the trace's peak of live bytes, the bytes
 * each site had live and the fragmentation charged to it.
 * Sites are known from the stack id when it is first seen, so the pass
 * keeps one counter set per site and per stack id, plus address -> stack id
 * for the live blocks. A trace without stacks has no sites section (the
 * core does not run this analyzer for it).
 *
 * The live set at the peak, in the same pass: the blocks live at the end
 * that were allocated by the peak's event, plus those freed since the peak
 * that were allocated by it (kept in a list the next new peak empties).
 * Memory: at most the live set at the peak, 24 bytes a block.
 *
 * Fragmentation charged to a site, from the recorded addresses (the
 * recorded allocator's layout): each 4 KiB page holding part of a block
 * live at the peak has its bytes not covered by live blocks shared among
 * those blocks in proportion to their bytes on the page (tcmalloc's
 * fragmentation profile shares a span's free space the same way).
 *
 * Weights: every figure goes through site_weight(), the multiplier of an
 * allocation's bytes and count (1 for a full recording; sampled stacks
 * scale their allocations up), so the accumulators are doubles. With
 * sampled stacks the pages at the peak are still filled by every live
 * block (the core's live set, and the blocks freed since the peak, sampled
 * or not), and only the sampled ones take a weighted share of the spare
 * bytes: an unsampled neighbour is no hole.
 */
#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"
#include "analysis_internal.h"

#define SITE_MAX_FRAMES 128
#define FRAG_PAGE 4096u
#define FLAME_NODES 400 /* nodes kept per flame graph; the rest fold into "(other)" */
#define FLAME_MAX_DEPTH 256

struct site_acc {
	double allocs, bytes, live, peak, temps, temp_bytes;
	double live_blocks;   /* blocks live now (at the end: leaked) */
	double at_peak, frag; /* at the trace's peak of live bytes */
	double at_peak_blocks;
	double calloc_bytes, calloc_fresh, calloc_reused;
};

struct site {
	uint64_t addr;  /* return address of the site frame; 0: unknown */
	unsigned epoch; /* its module epoch: after a dlclose the same address is another site */
	struct site_acc a;
	uint32_t top_stack; /* the stack id with the most bytes */
	uint32_t via;       /* index + 1 of the allocation wrapper's site its stacks came through; 0: none */
};

struct stk {
	struct site_acc a;
	uint32_t site; /* index + 1 in sites; 0: not seen yet */
};

#define NO_SID UINT32_MAX /* a block without a stack (not in the sample) */

/* a block live at the peak */
struct pblock {
	uint64_t addr, size;
	uint32_t sid;
};

struct sites {
	int on, oom;
	struct arr_ptrmap blocks;  /* live block -> stack id */
	struct arr_ptrmap by_addr; /* site address -> index + 1 */
	struct stk *stk;
	size_t nstk;
	struct site *site;
	size_t nsite, sitecap;
	const struct arr_module *mods;
	size_t nmods;
	int *mod_alloc; /* per module: 1 = the allocator's own (skipped), -1 unknown */
	size_t mod_cap;
	int zeroing;          /* the zeroing analyzer runs: blocks carry ARR__BLK_REUSED */
	struct pblock *freed; /* live at the current peak, freed since */
	size_t nfreed, freed_cap;
	double sample; /* arr_trace_stack_sample_bytes(); 0: every allocation has its stack */
};

/*
 * What one recorded allocation of size bytes stands for: 1 for a full
 * recording. With a sample of mean T (Poisson by bytes), it was recorded
 * with probability p = 1 - exp(-size / T), so it counts 1 / p allocations
 * and size / p bytes (tcmalloc's unbiasing): the sums are unbiased
 * estimates. Depends on the block's size alone, so a release undoes
 * exactly what its allocation added.
 */
static double site_weight(const struct sites *s, uint64_t size)
{
	if (!s->sample)
		return 1.0;
	double p = -expm1(-(double)(size ? size : 1) / s->sample);
	return p > 0 ? 1 / p : 1.0;
}

static int allocator_module(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "libstdc++", 9) || !strncmp(b, "liballocrr", 10);
}

/* Is addr in one of the allocator's own modules? */
static int skip_frame(struct sites *s, const struct an_core *c, uint64_t addr)
{
	(void)c;
	for (size_t i = s->nmods; i-- > 0;) {
		const struct arr_module *m = &s->mods[i];
		if (addr - 1 >= m->base && addr - 1 - m->base < m->size) {
			if (s->mod_alloc[i] < 0)
				s->mod_alloc[i] = allocator_module(m->path);
			return s->mod_alloc[i];
		}
	}
	return 0;
}

static uint32_t site_at(struct sites *s, uint64_t addr, unsigned epoch, uint32_t sid);

static uint32_t site_of(struct sites *s, const struct an_core *c, uint32_t sid)
{
	size_t n = arr_trace_modules(c->tr, &s->mods);
	if (n != s->nmods) { /* a new snapshot: classify its modules lazily */
		if (n > s->mod_cap) {
			int *m = realloc(s->mod_alloc, n * sizeof *m);
			if (!m)
				return 0;
			s->mod_alloc = m;
			s->mod_cap = n;
		}
		for (size_t i = s->nmods; i < n; i++)
			s->mod_alloc[i] = -1;
		s->nmods = n;
	}
	uint64_t fr[SITE_MAX_FRAMES], addr = 0;
	int nf = arr_trace_stack(c->tr, sid, fr, SITE_MAX_FRAMES, NULL);
	for (int i = 0; i < nf && i < SITE_MAX_FRAMES; i++)
		if (!skip_frame(s, c, fr[i])) {
			addr = fr[i];
			break;
		}
	if (!addr && nf > 0) /* only the allocator's frames (a truncated walk): the innermost */
		addr = fr[0];
	return site_at(s, addr, arr_trace_stack_epoch(c->tr, sid), sid);
}

/* The site of return address addr in module epoch epoch, made (its example stack sid) if new; 0: no memory. */
static uint32_t site_at(struct sites *s, uint64_t addr, unsigned epoch, uint32_t sid)
{
	uint64_t idx;
	uint64_t key = addr + 1 + ((uint64_t)epoch << 48); /* user addresses are below 2^47 */
	if (arr_ptrmap_get(&s->by_addr, key, &idx))
		return (uint32_t)idx;
	if (s->nsite == s->sitecap) {
		size_t cap = s->sitecap ? s->sitecap * 2 : 256;
		struct site *ns = realloc(s->site, cap * sizeof *ns);
		if (!ns)
			return 0;
		s->site = ns;
		s->sitecap = cap;
	}
	s->site[s->nsite] = (struct site){.addr = addr, .epoch = epoch, .top_stack = sid};
	idx = ++s->nsite;
	if (arr_ptrmap_put(&s->by_addr, key, idx))
		return 0;
	return (uint32_t)idx;
}

static struct stk *stk_get(struct sites *s, struct an_core *c, uint32_t sid)
{
	if (sid >= s->nstk) {
		size_t n = s->nstk ? s->nstk : 1024;
		while (n <= sid)
			n *= 2;
		struct stk *ns = realloc(s->stk, n * sizeof *ns);
		if (!ns) {
			c->oom = ARR_ENOMEM;
			return NULL;
		}
		memset(ns + s->nstk, 0, (n - s->nstk) * sizeof *ns);
		s->stk = ns;
		s->nstk = n;
	}
	struct stk *k = &s->stk[sid];
	if (!k->site && !(k->site = site_of(s, c, sid))) {
		c->oom = ARR_ENOMEM;
		return NULL;
	}
	return k;
}

static int sites_begin(struct an_core *c, void *st)
{
	struct sites *s = st;
	s->on = (c->meta->features & ARR_TRACE_FEAT_STACKS) != 0;
	s->zeroing = !c->opt->what || (c->opt->what & (1u << ARR_AN_ZEROING));
	s->sample = (double)arr_trace_stack_sample_bytes(c->tr);
	return 0;
}

static unsigned sites_wants(struct an_core *c, void *st)
{
	(void)c;
	return ((struct sites *)st)->on ? ARR__CB_ALLOC | ARR__CB_RELEASE : 0;
}

static void acc_alloc(struct site_acc *a, double w, const struct an_block *b, int zeroing)
{
	double bytes = w * (double)b->size;
	a->allocs += w;
	a->bytes += bytes;
	a->live += bytes;
	a->live_blocks += w;
	if (a->live > a->peak)
		a->peak = a->live;
	if (b->op == ARR_OP_CALLOC) {
		a->calloc_bytes += bytes;
		if (zeroing)
			*(b->flags & ARR__BLK_REUSED ? &a->calloc_reused : &a->calloc_fresh) += bytes;
	}
}

static void sites_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	struct sites *s = st;
	/* a new peak: the blocks freed since the last one were not live at it */
	if (c->peak_evno == c->evno && c->peak_bytes == c->live_bytes)
		s->nfreed = 0;
	if (s->sample && !ev->stack) /* not in the sample */
		return;
	struct stk *k = stk_get(s, c, ev->stack);
	if (!k)
		return;
	double w = site_weight(s, b->size);
	acc_alloc(&k->a, w, b, s->zeroing);
	acc_alloc(&s->site[k->site - 1].a, w, b, s->zeroing);
	if (arr_ptrmap_put(&s->blocks, addr, ev->stack))
		c->oom = ARR_ENOMEM;
}

/* Remember a block live at the peak (so far) that is freed now. */
static void peak_freed(struct sites *s, struct an_core *c, uint64_t addr, const struct an_block *b, uint32_t sid)
{
	if (b->evno > c->peak_evno)
		return;
	if (s->nfreed == s->freed_cap) {
		size_t cap = s->freed_cap ? s->freed_cap * 2 : 1024;
		struct pblock *n = realloc(s->freed, cap * sizeof *n);
		if (!n) {
			c->oom = ARR_ENOMEM;
			return;
		}
		s->freed = n;
		s->freed_cap = cap;
	}
	s->freed[s->nfreed++] = (struct pblock){addr, b->size, sid};
}

static void sites_release(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev,
			  int temporary)
{
	(void)ev;
	struct sites *s = st;
	uint64_t sid;
	if (!arr_ptrmap_del(&s->blocks, addr, &sid) || sid >= s->nstk || !s->stk[sid].site) {
		/* not in the sample: no site's, but it takes room on its pages at the peak */
		if (s->sample)
			peak_freed(s, c, addr, b, NO_SID);
		return;
	}
	struct stk *k = &s->stk[sid];
	struct site_acc *as[2] = {&k->a, &s->site[k->site - 1].a};
	double w = site_weight(s, b->size), bytes = w * (double)b->size;
	for (int i = 0; i < 2; i++) {
		as[i]->live -= bytes < as[i]->live ? bytes : as[i]->live;
		as[i]->live_blocks -= w < as[i]->live_blocks ? w : as[i]->live_blocks;
		if (temporary) {
			as[i]->temps += w;
			as[i]->temp_bytes += bytes;
		}
	}
	peak_freed(s, c, addr, b, (uint32_t)sid);
}

/* A frame as "func file:line" (or "func" / "module+0xoff"). */
static void frame_name(const struct arr_frame_info *fi, char *buf, size_t cap)
{
	if (fi->file)
		snprintf(buf, cap, "%s %s:%d", fi->func, fi->file, fi->line);
	else
		snprintf(buf, cap, "%s", fi->func);
}

/* The source frames of a stack, innermost first, inlined frames expanded:
 * at most max; returns the count, *trunc set as arr_trace_stack says. */
static int source_frames(const struct an_core *c, struct arr_symbolizer *sy, uint32_t sid,
			 const struct arr_frame_info **out, int max, int *trunc)
{
	uint64_t fr[SITE_MAX_FRAMES];
	int n = arr_trace_stack(c->tr, sid, fr, SITE_MAX_FRAMES, trunc), k = 0;
	if (n < 0) {
		*trunc = 0;
		return 0;
	}
	for (int i = 0; i < n && i < SITE_MAX_FRAMES; i++)
		for (const struct arr_frame_info *fi = arr_symbolize_at(sy, fr[i], arr_trace_stack_epoch(c->tr, sid));
		     fi && k < max; fi = fi->caller)
			out[k++] = fi;
	return k;
}

/*
 * Is a frame in the program's own sources? Not without a file, nor in a
 * system header or library source (under /usr/, or relative as Debian's
 * libc debug info names its ../sysdeps): std::vector's allocate,
 * inlined into the program, is a site of the program's binary but
 * not code its authors wrote.
 */
static int own_source(const struct arr_frame_info *fi)
{
	return fi->file && strncmp(fi->file, "/usr/", 5) && strncmp(fi->file, "../", 3) && fi->file[0] != '<';
}

/* "caller": the innermost frame of the site's stack in the program's own
 * sources, when the site's frame is not (C++ containers: the site is the
 * library's allocate, this the function that grew the container). */
static void put_caller(struct arr_doc *o, const struct an_core *c, struct arr_symbolizer *sy, uint32_t sid)
{
	const struct arr_frame_info *fr[FLAME_MAX_DEPTH];
	int trunc, n = source_frames(c, sy, sid, fr, FLAME_MAX_DEPTH, &trunc);
	if (n < 2 || own_source(fr[0]))
		return;
	for (int i = 1; i < n; i++)
		if (own_source(fr[i])) {
			struct arr_doc *k = arr_doc_set_obj(o, "caller");
			arr_doc_set_str(k, "function", fr[i]->func);
			arr_doc_set_str(k, "file", fr[i]->file);
			arr_doc_set_int(k, "line", fr[i]->line);
			return;
		}
}

static void put_stack(struct arr_doc *arr, const struct an_core *c, struct arr_symbolizer *sy, uint32_t sid)
{
	const struct arr_frame_info *fr[FLAME_MAX_DEPTH];
	int trunc, n = source_frames(c, sy, sid, fr, FLAME_MAX_DEPTH, &trunc);
	char buf[1024];
	for (int i = 0; i < n; i++) {
		frame_name(fr[i], buf, sizeof buf);
		arr_doc_push_str(arr, buf);
	}
	if (trunc)
		arr_doc_push_str(arr, "[truncated]");
}

enum { K_BYTES, K_ALLOCS, K_PEAK, K_LEAKED, K_TEMPS, K_AT_PEAK, K_FRAG, K_CALLOC, K_COUNT };
static const char *const table_names[K_COUNT] = {"by_bytes",       "by_allocs",       "by_peak",          "by_leaked",
						 "by_temporaries", "by_live_at_peak", "by_fragmentation", "by_calloc"};

static const struct sites *sort_ctx;
static int sort_key;
static double key_of(const struct site_acc *a, int key)
{
	switch (key) {
	case K_BYTES:
		return a->bytes;
	case K_ALLOCS:
		return a->allocs;
	case K_PEAK:
		return a->peak;
	case K_LEAKED:
		return a->live;
	case K_TEMPS:
		return a->temps;
	case K_AT_PEAK:
		return a->at_peak;
	case K_FRAG:
		return a->frag;
	default:
		return a->calloc_bytes;
	}
}
static int by_key(const void *x, const void *y)
{
	const struct site *a = &sort_ctx->site[*(const uint32_t *)x], *b = &sort_ctx->site[*(const uint32_t *)y];
	double ka = key_of(&a->a, sort_key), kb = key_of(&b->a, sort_key);
	if (ka != kb)
		return ka < kb ? 1 : -1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int64_t whole(double v) { return (int64_t)(v + 0.5); }

static void put_acc(struct arr_doc *o, const struct site_acc *a, int zeroing)
{
	arr_doc_set_int(o, "bytes", whole(a->bytes));
	arr_doc_set_int(o, "allocs", whole(a->allocs));
	arr_doc_set_int(o, "peak_bytes", whole(a->peak));
	arr_doc_set_int(o, "leaked_bytes", whole(a->live));
	arr_doc_set_int(o, "temporaries", whole(a->temps));
	arr_doc_set_int(o, "temporary_bytes", whole(a->temp_bytes));
	arr_doc_set_int(o, "live_at_peak_bytes", whole(a->at_peak));
	arr_doc_set_int(o, "fragmentation_bytes", whole(a->frag));
	arr_doc_set_int(o, "calloc_bytes", whole(a->calloc_bytes));
	if (zeroing) {
		arr_doc_set_int(o, "calloc_fresh_bytes", whole(a->calloc_fresh));
		arr_doc_set_int(o, "calloc_reused_bytes", whole(a->calloc_reused));
	}
}

/* ---- the live set at the peak: live bytes and fragmentation per stack ---- */

struct peak_set {
	const struct sites *s;
	uint64_t peak_evno;
	struct pblock *b;
	size_t n, cap;
	int oom;
};

static void add_live(void *ctx, uint64_t addr, const struct an_block *b)
{
	struct peak_set *ps = ctx;
	uint64_t sid;
	if (ps->oom || b->evno > ps->peak_evno)
		return;
	if (!arr_ptrmap_get(&ps->s->blocks, addr, &sid)) {
		if (!ps->s->sample) /* a full recording: every block has its stack */
			return;
		sid = NO_SID; /* not in the sample: it still fills its pages */
	}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 1024;
		struct pblock *n = realloc(ps->b, cap * sizeof *n);
		if (!n) {
			ps->oom = 1;
			return;
		}
		ps->b = n;
		ps->cap = cap;
	}
	ps->b[ps->n++] = (struct pblock){addr, b->size, (uint32_t)sid};
}

static int by_addr(const void *x, const void *y)
{
	const struct pblock *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* the blocks sharing the page being walked, with their bytes on it */
struct on_page {
	uint32_t sid;
	uint64_t bytes;
	double w; /* the block's weight */
};

static void page_flush(struct sites *s, struct on_page *on, size_t n)
{
	uint64_t used = 0;
	for (size_t i = 0; i < n; i++)
		used += on[i].bytes;
	if (!used || used >= FRAG_PAGE)
		return;
	double spare = (double)(FRAG_PAGE - used);
	for (size_t i = 0; i < n; i++) {
		if (on[i].sid == NO_SID)
			continue;
		struct stk *k = &s->stk[on[i].sid];
		double share = spare * (double)on[i].bytes / (double)used * on[i].w;
		k->a.frag += share;
		s->site[k->site - 1].a.frag += share;
	}
}

static int peak_figures(struct sites *s, const struct an_core *c)
{
	struct peak_set ps = {.s = s, .peak_evno = c->peak_evno};
	if (!c->peak_bytes)
		return 0;
	arr__live_each(c, add_live, &ps);
	for (size_t i = 0; i < s->nfreed && !ps.oom; i++) {
		if (ps.n == ps.cap) {
			size_t cap = ps.cap ? ps.cap * 2 : 1024;
			struct pblock *n = realloc(ps.b, cap * sizeof *n);
			if (!n)
				break;
			ps.b = n;
			ps.cap = cap;
		}
		ps.b[ps.n++] = s->freed[i];
	}
	if (ps.oom || ps.n < s->nfreed) {
		free(ps.b);
		return ARR_ENOMEM;
	}
	qsort(ps.b, ps.n, sizeof *ps.b, by_addr);
	/* a page holds at most FRAG_PAGE blocks of a byte or more */
	struct on_page *on = malloc(FRAG_PAGE * sizeof *on);
	if (!on) {
		free(ps.b);
		return ARR_ENOMEM;
	}
	size_t non = 0;
	uint64_t cur = UINT64_MAX;
	for (size_t i = 0; i < ps.n; i++) {
		struct pblock *p = &ps.b[i];
		if (p->sid != NO_SID && (p->sid >= s->nstk || !s->stk[p->sid].site))
			continue;
		double w = 0;
		if (p->sid != NO_SID) {
			struct stk *k = &s->stk[p->sid];
			w = site_weight(s, p->size);
			k->a.at_peak += w * (double)p->size;
			s->site[k->site - 1].a.at_peak += w * (double)p->size;
			k->a.at_peak_blocks += w;
			s->site[k->site - 1].a.at_peak_blocks += w;
		}
		if (!p->size)
			continue;
		uint64_t last = p->addr + p->size - 1 < p->addr ? UINT64_MAX : p->addr + p->size - 1;
		uint64_t p0 = p->addr / FRAG_PAGE, p1 = last / FRAG_PAGE;
		if (p0 != cur || non == FRAG_PAGE) {
			page_flush(s, on, non);
			non = 0;
			cur = p0;
		}
		uint64_t end0 = p0 == p1 ? last + 1 : (p0 + 1) * FRAG_PAGE;
		on[non++] = (struct on_page){p->sid, end0 - p->addr, w};
		if (p1 != p0) { /* the pages between are full; the last one is shared with what follows */
			page_flush(s, on, non);
			cur = p1;
			on[0] = (struct on_page){p->sid, last + 1 - p1 * FRAG_PAGE, w};
			non = 1;
		}
	}
	page_flush(s, on, non);
	free(on);
	free(ps.b);
	return 0;
}

/* ---- flame graphs: the stacks as a tree, outermost frame at the root ---- */

enum { G_ALLOC, G_PEAK, G_LEAKS, G_COUNT };
static const char *const graph_names[G_COUNT] = {"allocations", "live_at_peak", "leaks"};

/*
 * A node is one function under one path of callers, as FlameGraph and
 * speedscope merge frames: every return address, line and inlined copy of
 * the function there is one node. It keeps a file and line only while all
 * its frames agree on them (a function's several call lines: the file
 * alone), and is "inlined" only when every frame of it was.
 */
struct fnode {
	const struct arr_frame_info *fi; /* the first frame; NULL: the root or "[truncated]" */
	const char *name;
	uint32_t parent, child, next, depth;
	uint32_t recursion; /* most rounds in a row on one stack of the cycle it starts, folded into it */
	uint32_t cycle_end; /* that cycle's last node, below it (itself: a function calling itself;
			     * else the cycle is a -> b (-> c -> d) -> a, of 2 to FLAME_MAX_CYCLE nodes down to it) */
	uint8_t lines_differ, files_differ, not_inlined;
	double v[G_COUNT];
	double n[G_COUNT]; /* allocations (G_ALLOC), blocks (G_PEAK, G_LEAKS) */
};

struct ftree {
	struct fnode *n;
	size_t len, cap;
	uint32_t *hash; /* node index + 1, by (parent, name) */
	size_t hmask;
};

static uint64_t fkey(uint32_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

static int ftree_grow(struct ftree *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct fnode *n = realloc(t->n, cap * sizeof *n);
	uint32_t *h = calloc(cap * 2, sizeof *h);
	if (!n || !h) {
		free(h);
		if (n)
			t->n = n;
		return ARR_ENOMEM;
	}
	t->n = n;
	t->cap = cap;
	free(t->hash);
	t->hash = h;
	t->hmask = cap * 2 - 1;
	for (size_t i = 1; i < t->len; i++) {
		size_t j = fkey(t->n[i].parent, t->n[i].name) & t->hmask;
		while (t->hash[j])
			j = (j + 1) & t->hmask;
		t->hash[j] = (uint32_t)i + 1;
	}
	return 0;
}

/* the child of parent named name, made if new; 0 when out of memory */
static uint32_t ftree_child(struct ftree *t, uint32_t parent, const char *name, const struct arr_frame_info *fi)
{
	if (t->len * 2 >= t->cap && ftree_grow(t))
		return 0;
	size_t j = fkey(parent, name) & t->hmask;
	for (; t->hash[j]; j = (j + 1) & t->hmask) {
		struct fnode *x = &t->n[t->hash[j] - 1];
		if (x->parent == parent && !strcmp(x->name, name)) {
			if (x->fi && fi) {
				int same_file = (!x->fi->file && !fi->file) ||
						(x->fi->file && fi->file && !strcmp(x->fi->file, fi->file));
				x->files_differ |= !same_file;
				x->lines_differ |= !same_file || x->fi->line != fi->line;
				x->not_inlined |= !fi->inlined;
			}
			return t->hash[j] - 1;
		}
	}
	uint32_t i = (uint32_t)t->len++;
	t->hash[j] = i + 1;
	struct fnode *p = &t->n[parent];
	t->n[i] = (struct fnode){.fi = fi,
				 .name = name,
				 .parent = parent,
				 .next = p->child,
				 .depth = p->depth + 1,
				 .not_inlined = fi && !fi->inlined};
	p->child = i;
	return i;
}

/*
 * Do the frames from fr[i] inward repeat the path's last len nodes (len 1 to
 * FLAME_MAX_CYCLE), so that they are one more round of a recursion? The
 * shortest such len, or 0. Only named frames count (not the root, nor
 * "[truncated]").
 */
#define FLAME_MAX_CYCLE 12
static int cycle_at(const struct ftree *t, const uint32_t *path, int np, const struct arr_frame_info *const *fr, int i)
{
	for (int len = 1; len <= FLAME_MAX_CYCLE && len <= np && len <= i + 1; len++) {
		int k = 0;
		for (; k < len; k++) {
			const struct fnode *x = &t->n[path[np - len + k]];
			if (!x->fi || strcmp(x->name, fr[i - k]->func))
				break;
		}
		if (k == len)
			return len;
	}
	return 0;
}

static int build_tree(struct ftree *t, const struct sites *s, const struct an_core *c, struct arr_symbolizer *sy)
{
	if (ftree_grow(t))
		return ARR_ENOMEM;
	t->n[0] = (struct fnode){.name = "all"};
	t->len = 1;
	const struct arr_frame_info *fr[FLAME_MAX_DEPTH];
	for (size_t sid = 0; sid < s->nstk; sid++) {
		const struct stk *k = &s->stk[sid];
		double v[G_COUNT] = {k->a.bytes, k->a.at_peak, k->a.live};
		double cn[G_COUNT] = {k->a.allocs, k->a.at_peak_blocks, k->a.live_blocks};
		if (!k->site || (!v[0] && !v[1] && !v[2]))
			continue;
		int trunc, n = source_frames(c, sy, (uint32_t)sid, fr, FLAME_MAX_DEPTH, &trunc);
		uint32_t at = 0;
		for (int g = 0; g < G_COUNT; g++) {
			t->n[0].v[g] += v[g];
			t->n[0].n[g] += cn[g];
		}
		/* a stack the recorder walked no frame of (a call before its unwinder was ready: the
		 * first malloc of a C++ program, libstdc++'s emergency pool) still has its bytes under a
		 * frame, so the graphs and the collapsed lines sum to the sites' figures */
		if ((trunc || !n) && !(at = ftree_child(t, 0, trunc ? "[truncated]" : "[no stack]", NULL)))
			return ARR_ENOMEM;
		for (int g = 0; g < G_COUNT && at; g++) {
			t->n[at].v[g] += v[g];
			t->n[at].n[g] += cn[g];
		}
		/* recursion folds: a function called by itself, or a cycle of 2-12 functions calling
		 * each other (a -> b -> a -> b), is drawn once, its rounds in `recursion` on the cycle's
		 * first node, so a recursive descent 200 calls deep is one row, not 200 (the graph and
		 * the collapsed lines merge the path's frames by function anyway). Folded frames add
		 * nothing: each node of the path counts the stack once, so the sums stay exact. */
		uint32_t path[FLAME_MAX_DEPTH + 1], rstart = 0, rounds = 0;
		int np = 0, rlen = 0;
		path[np++] = at;
		for (int i = n - 1; i >= 0; i--) {
			int len = cycle_at(t, path, np, fr, i);
			if (len) {
				uint32_t start = path[np - len];
				if (start == rstart && len == rlen)
					rounds++;
				else
					rstart = start, rlen = len, rounds = 2;
				if (rounds > t->n[start].recursion) {
					t->n[start].recursion = rounds;
					t->n[start].cycle_end = path[np - 1];
				}
				i -= len - 1;
				continue;
			}
			rlen = 0;
			uint32_t nx = ftree_child(t, at, fr[i]->func, fr[i]);
			if (!nx)
				return ARR_ENOMEM;
			at = nx;
			assert(np < FLAME_MAX_DEPTH + 1);
			path[np++] = at;
			for (int g = 0; g < G_COUNT; g++) {
				t->n[at].v[g] += v[g];
				t->n[at].n[g] += cn[g];
			}
		}
	}
	return 0;
}

static const struct ftree *fsort_tree;
static int fsort_g;
static int by_value(const void *x, const void *y)
{
	const struct fnode *a = &fsort_tree->n[*(const uint32_t *)x], *b = &fsort_tree->n[*(const uint32_t *)y];
	double va = a->v[fsort_g], vb = b->v[fsort_g];
	if (va != vb)
		return va < vb ? 1 : -1;
	if (a->depth != b->depth) /* a parent before its child of the same value */
		return a->depth < b->depth ? -1 : 1;
	return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static void put_node(struct arr_doc *o, const struct ftree *t, const uint8_t *keep, uint32_t i, int g, uint32_t *kids)
{
	const struct fnode *x = &t->n[i];
	arr_doc_set_str(o, "name", x->name);
	if (x->fi && x->fi->file && !x->files_differ) {
		arr_doc_set_str(o, "file", x->fi->file);
		if (!x->lines_differ)
			arr_doc_set_int(o, "line", x->fi->line);
	}
	if (x->fi && !x->not_inlined)
		arr_doc_set_bool(o, "inlined", 1);
	if (x->recursion > 1) {
		arr_doc_set_int(o, "recursion", x->recursion);
		uint32_t end = x->cycle_end;
		if (end && end != i) { /* a cycle of several functions: their names, this one first */
			const char *names[FLAME_MAX_CYCLE];
			int k = 0;
			for (; end && end != i && k < FLAME_MAX_CYCLE - 1; end = t->n[end].parent)
				names[k++] = t->n[end].name;
			struct arr_doc *cy = arr_doc_set_arr(o, "cycle");
			arr_doc_push_str(cy, x->name);
			while (k-- > 0)
				arr_doc_push_str(cy, names[k]);
		}
	}
	arr_doc_set_int(o, "value", whole(x->v[g]));
	arr_doc_set_int(o, "count", whole(x->n[g]));
	/* kept children, heaviest first; the others as one "(other)" */
	size_t n = 0;
	double rest = 0, rest_n = 0;
	for (uint32_t ch = x->child; ch; ch = t->n[ch].next)
		if (keep[ch])
			kids[n++] = ch;
		else {
			rest += t->n[ch].v[g];
			rest_n += t->n[ch].n[g];
		}
	if (!n && rest < 0.5)
		return;
	fsort_tree = t, fsort_g = g;
	qsort(kids, n, sizeof *kids, by_value);
	struct arr_doc *arr = arr_doc_set_arr(o, "children");
	uint32_t *mine = kids + n; /* recursion uses the room after this node's list */
	for (size_t k = 0; k < n; k++)
		put_node(arr_doc_push_obj(arr), t, keep, kids[k], g, mine);
	if (rest >= 0.5) {
		struct arr_doc *oth = arr_doc_push_obj(arr);
		arr_doc_set_str(oth, "name", "(other)");
		arr_doc_set_int(oth, "value", whole(rest));
		arr_doc_set_int(oth, "count", whole(rest_n));
	}
}

static int put_flames(struct arr_doc *sec, const struct ftree *t, unsigned max_nodes)
{
	uint32_t *ord = malloc(t->len * sizeof *ord);
	uint32_t *kids = malloc((t->len + 1) * sizeof *kids);
	uint8_t *keep = malloc(t->len);
	if (!ord || !kids || !keep) {
		free(ord), free(kids), free(keep);
		return ARR_ENOMEM;
	}
	struct arr_doc *fl = arr_doc_set_obj(sec, "flame");
	arr_doc_set_int(fl, "max_nodes", max_nodes);
	for (int g = 0; g < G_COUNT; g++) {
		for (uint32_t i = 0; i < t->len; i++)
			ord[i] = i;
		fsort_tree = t, fsort_g = g;
		qsort(ord, t->len, sizeof *ord, by_value);
		memset(keep, 0, t->len);
		for (uint32_t i = 0; i < t->len && i < max_nodes; i++)
			if (t->n[ord[i]].v[g] >= 0.5 || !ord[i])
				keep[ord[i]] = 1;
		put_node(arr_doc_set_obj(fl, graph_names[g]), t, keep, 0, g, kids);
	}
	free(ord), free(kids), free(keep);
	return 0;
}

/*
 * Collapsed stacks, outermost first, from the tree, so frames are merged by
 * function as in the flame graphs: one line per path of functions with its
 * own value (the node's less its children's), "allocations;main;f 1234",
 * then "leaks;...", "live_at_peak;..."; a sampled trace's roots end in
 * "_estimated". Only ';' and line breaks in a name become '_' (the value
 * follows the last space).
 */
static int write_collapsed(const struct sites *s, const struct ftree *t, FILE *f)
{
	static const int order[G_COUNT] = {G_ALLOC, G_LEAKS, G_PEAK};
	uint32_t path[FLAME_MAX_DEPTH + 2];
	char buf[1024];
	for (int gi = 0; gi < G_COUNT; gi++) {
		int g = order[gi];
		for (uint32_t i = 1; i < t->len; i++) {
			double v = t->n[i].v[g];
			for (uint32_t ch = t->n[i].child; ch; ch = t->n[ch].next)
				v -= t->n[ch].v[g];
			if (whole(v) <= 0)
				continue;
			int n = 0;
			for (uint32_t at = i; at && n < FLAME_MAX_DEPTH + 2; at = t->n[at].parent)
				path[n++] = at;
			fputs(graph_names[g], f);
			if (s->sample) /* a sampled trace's figures are estimates: its roots say so */
				fputs("_estimated", f);
			while (n-- > 0) {
				snprintf(buf, sizeof buf, "%s", t->n[path[n]].name);
				for (char *p = buf; *p; p++)
					if (*p == ';' || *p == '\n' || *p == '\r')
						*p = '_';
				fprintf(f, ";%s", buf);
			}
			fprintf(f, " %lld\n", (long long)whole(v));
		}
	}
	return ferror(f) ? ARR_EIO : 0;
}

/* ---- allocation wrappers: xmalloc() and its kind pass their callers through ---- */

/* the real function at a return address: the outermost of its inlined chain */
static const struct arr_frame_info *real_frame(struct arr_symbolizer *sy, uint64_t addr, unsigned epoch)
{
	const struct arr_frame_info *fi = addr ? arr_symbolize_at(sy, addr, epoch) : NULL;
	while (fi && fi->caller)
		fi = fi->caller;
	return fi;
}

/*
 * Is a function an allocation wrapper? 2: one of the well-known wrappers of
 * libraries and programs (libiberty's and git's xmalloc family, GLib's
 * g_malloc family, PHP's emalloc, CPython's PyMem_*, SQLite's, OpenSSL's);
 * 1: named like one (its name, C++ scope and parameters aside, ends in
 * malloc, calloc, realloc, zalloc, alloc, strdup, strndup or memdup, case
 * aside), which makes it a wrapper only when more than one caller calls it;
 * 0: neither.
 */
static int wrapper_kind(const struct arr_frame_info *fi)
{
	static const char *const known[] = {
		"xmalloc",          "xcalloc",          "xrealloc",          "xzalloc",         "xmallocz",
		"xmallocz_gently",  "xstrdup",          "xstrndup",          "xmemdup",         "xmemdupz",
		"do_xmalloc",       "xmalloc_gently",   "g_malloc",          "g_malloc0",       "g_realloc",
		"g_try_malloc",     "g_try_malloc0",    "g_try_realloc",     "g_malloc_n",      "g_malloc0_n",
		"g_realloc_n",      "g_strdup",         "g_strndup",         "g_memdup",        "g_memdup2",
		"g_slice_alloc",    "g_slice_alloc0",   "emalloc",           "ecalloc",         "erealloc",
		"estrdup",          "safe_malloc",      "safe_calloc",       "safe_realloc",    "PyMem_Malloc",
		"PyMem_Calloc",     "PyMem_Realloc",    "PyMem_RawMalloc",   "PyMem_RawCalloc", "PyMem_RawRealloc",
		"_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc", "PyObject_Malloc", "PyObject_Calloc",
		"PyObject_Realloc", "sqlite3Malloc",    "sqlite3MemMalloc",  "sqlite3_malloc",  "sqlite3_malloc64",
		"sqlite3Realloc",   "sqlite3_realloc",  "sqlite3_realloc64", "CRYPTO_malloc",   "CRYPTO_zalloc",
		"CRYPTO_realloc",   "CRYPTO_strdup",    "av_malloc",         "av_mallocz",      "av_realloc"};
	static const char *const tails[] = {"malloc", "calloc", "realloc", "zalloc",
					    "alloc",  "strdup", "strndup", "memdup"};
	if (!fi || !fi->known || !fi->func)
		return 0;
	char name[256];
	const char *f = fi->func, *paren = strchr(f, '(');
	size_t n = paren ? (size_t)(paren - f) : strlen(f);
	for (size_t i = n; i-- > 0;) /* after the last "::" */
		if (f[i] == ':') {
			f += i + 1, n -= i + 1;
			break;
		}
	if (!n || n >= sizeof name)
		return 0;
	memcpy(name, f, n);
	name[n] = 0;
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (!strcmp(name, known[i]))
			return 2;
	for (size_t i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)name[i]);
	for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
		size_t t = strlen(tails[i]);
		if (n >= t && !strcmp(name + n - t, tails[i]))
			return 1;
	}
	return 0;
}

/* the position of a stack's site frame among its return addresses fr[0..nf), or -1 */
static int site_pos(const uint64_t *fr, int nf, uint64_t addr)
{
	for (int i = 0; i < nf && i < SITE_MAX_FRAMES; i++)
		if (fr[i] == addr)
			return i;
	return -1;
}

/*
 * A wrapper calls malloc for every one of its callers, so its call of
 * malloc is one site gathering them all (git's xmalloc: most of git's
 * memory). A site whose real function is a wrapper (wrapper_kind 2, or 1
 * with stacks from more than one caller) passes its stacks on to the first
 * frame outward that is no wrapper; the site made there says `via` which
 * wrapper. Figures are the sums of their stacks' (exact, each stack's
 * counters are), except a site's own peak whenever it came (kept per site
 * during the pass, before names are known): for a site made here, the
 * largest of its stacks' peaks (exact when one stack reaches it).
 */
static int unwrap_sites(struct sites *s, const struct an_core *c, struct arr_symbolizer *sy)
{
	size_t n0 = s->nsite;
	if (!n0)
		return 0;
	uint8_t *kind = calloc(n0, 1);
	uint64_t *caller = calloc(n0, sizeof *caller);
	if (!kind || !caller) {
		free(kind), free(caller);
		return ARR_ENOMEM;
	}
	int any = 0;
	for (size_t i = 0; i < n0; i++)
		any |= (kind[i] = (uint8_t)wrapper_kind(real_frame(sy, s->site[i].addr, s->site[i].epoch))) != 0;
	uint64_t fr[SITE_MAX_FRAMES];
	/* kind 1 with one caller is a function of the program that happens to allocate (its only caller
	 * would be its site anyway): kept; 3 marks a second caller seen */
	for (size_t sid = 0; any && sid < s->nstk; sid++) {
		const struct stk *k = &s->stk[sid];
		if (!k->site || kind[k->site - 1] != 1)
			continue;
		int nf = arr_trace_stack(c->tr, (uint32_t)sid, fr, SITE_MAX_FRAMES, NULL);
		int p = site_pos(fr, nf, s->site[k->site - 1].addr);
		uint64_t up = p >= 0 && p + 1 < nf ? fr[p + 1] : 0;
		if (!caller[k->site - 1])
			caller[k->site - 1] = up + 1;
		else if (caller[k->site - 1] != up + 1)
			kind[k->site - 1] = 3;
	}
	int rc = 0;
	uint8_t *moved = calloc(n0, 1);
	if (!moved)
		rc = ARR_ENOMEM;
	for (size_t sid = 0; any && !rc && sid < s->nstk; sid++) {
		struct stk *k = &s->stk[sid];
		if (!k->site || k->site > n0 || (kind[k->site - 1] != 2 && kind[k->site - 1] != 3))
			continue;
		unsigned epoch = arr_trace_stack_epoch(c->tr, (uint32_t)sid);
		int nf = arr_trace_stack(c->tr, (uint32_t)sid, fr, SITE_MAX_FRAMES, NULL);
		int q = site_pos(fr, nf, s->site[k->site - 1].addr);
		if (q < 0)
			continue;
		while (++q < nf && q < SITE_MAX_FRAMES && wrapper_kind(real_frame(sy, fr[q], epoch)))
			;
		if (q >= nf || q >= SITE_MAX_FRAMES) /* nothing but wrappers: it stays the wrapper's */
			continue;
		uint32_t from = k->site, to = site_at(s, fr[q], epoch, (uint32_t)sid);
		if (!to) {
			rc = ARR_ENOMEM;
			break;
		}
		k->site = to;
		moved[from - 1] = 1;
		if (!s->site[to - 1].via)
			s->site[to - 1].via = from;
	}
	/* the sites that lost stacks or gained them: their figures again, from their stacks */
	for (size_t i = 0; !rc && i < s->nsite; i++)
		if ((i < n0 && moved[i]) || i >= n0)
			s->site[i].a = (struct site_acc){0};
	for (size_t sid = 0; !rc && sid < s->nstk; sid++) {
		const struct stk *k = &s->stk[sid];
		if (!k->site || !((k->site - 1 < n0 && moved[k->site - 1]) || k->site - 1 >= n0))
			continue;
		struct site_acc *a = &s->site[k->site - 1].a;
		const struct site_acc *b = &k->a;
		double peak = a->peak > b->peak ? a->peak : b->peak;
		a->allocs += b->allocs, a->bytes += b->bytes, a->live += b->live, a->temps += b->temps;
		a->temp_bytes += b->temp_bytes, a->live_blocks += b->live_blocks, a->at_peak += b->at_peak;
		a->frag += b->frag, a->at_peak_blocks += b->at_peak_blocks, a->calloc_bytes += b->calloc_bytes;
		a->calloc_fresh += b->calloc_fresh, a->calloc_reused += b->calloc_reused;
		a->peak = peak;
		s->site[k->site - 1].top_stack = (uint32_t)sid;
	}
	free(kind), free(caller), free(moved);
	return rc;
}

static int sites_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct sites *s = st;
	arr_doc_set_bool(sec, "recorded", s->on);
	if (!s->on)
		return 0;
	int rc = peak_figures(s, c);
	if (rc)
		return rc;
	struct arr_symbolizer *sy;
	if ((rc = arr_symbolizer_open(&sy, c->tr)))
		return rc;
	if ((rc = unwrap_sites(s, c, sy))) {
		arr_symbolizer_close(sy);
		return rc;
	}
	arr_doc_set_int(sec, "stack_nodes", (int64_t)arr_trace_stack_nodes(c->tr));
	if (s->sample) /* the figures are estimates from a sample */
		arr_doc_set_int(arr_doc_set_obj(sec, "sampled"), "mean_bytes", (int64_t)s->sample);
	size_t nsites = 0; /* a wrapper whose callers took all its stacks is no site any more */
	for (size_t i = 0; i < s->nsite; i++)
		nsites += s->site[i].a.allocs > 0;
	arr_doc_set_int(sec, "sites", (int64_t)nsites);
	arr_doc_set_int(sec, "peak_event", (int64_t)c->peak_evno);
	arr_doc_set_int(sec, "page_size", FRAG_PAGE);
	/* each site's heaviest stack, as its example */
	double frag = 0;
	for (size_t sid = 0; sid < s->nstk; sid++) {
		const struct stk *k = &s->stk[sid];
		frag += k->a.frag;
		if (k->site && k->a.bytes > s->stk[s->site[k->site - 1].top_stack].a.bytes)
			s->site[k->site - 1].top_stack = (uint32_t)sid;
	}
	arr_doc_set_int(sec, "fragmentation_bytes", whole(frag));
	uint32_t *ord = malloc((s->nsite + 1) * sizeof *ord);
	if (!ord) {
		arr_symbolizer_close(sy);
		return ARR_ENOMEM;
	}
	char buf[1024];
	for (int key = 0; key < K_COUNT; key++) {
		for (uint32_t i = 0; i < s->nsite; i++)
			ord[i] = i;
		sort_ctx = s, sort_key = key;
		qsort(ord, s->nsite, sizeof *ord, by_key);
		struct arr_doc *arr = arr_doc_set_arr(sec, table_names[key]);
		for (uint32_t i = 0; i < s->nsite && i < c->top; i++) {
			const struct site *x = &s->site[ord[i]];
			if (whole(key_of(&x->a, key)) <= 0)
				break;
			struct arr_doc *o = arr_doc_push_obj(arr);
			const struct arr_frame_info *fi = x->addr ? arr_symbolize_at(sy, x->addr, x->epoch) : NULL;
			arr_doc_set_str(o, "function", fi ? fi->func : "[no stack]");
			if (fi && fi->file) {
				arr_doc_set_str(o, "file", fi->file);
				arr_doc_set_int(o, "line", fi->line);
			}
			if (fi && fi->caller) /* inlined: the function the call sits in */
				arr_doc_set_str(o, "inlined_into", fi->caller->func);
			const struct site *w = x->via ? &s->site[x->via - 1] : NULL;
			const struct arr_frame_info *wf = w ? real_frame(sy, w->addr, w->epoch) : NULL;
			if (wf) /* called through an allocation wrapper: which */
				arr_doc_set_str(o, "via", wf->func);
			if (fi && fi->module) {
				arr_doc_set_str(o, "module", fi->module);
				snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)fi->module_offset);
				arr_doc_set_str(o, "module_offset", buf);
			}
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)x->addr);
			arr_doc_set_str(o, "address", buf);
			put_acc(o, &x->a, s->zeroing);
			put_caller(o, c, sy, x->top_stack);
			put_stack(arr_doc_set_arr(o, "stack"), c, sy, x->top_stack);
		}
	}
	free(ord);
	struct ftree t = {0};
	rc = build_tree(&t, s, c, sy);
	if (!rc)
		rc = put_flames(sec, &t, FLAME_NODES);
	if (!rc && c->opt->collapsed)
		rc = write_collapsed(s, &t, c->opt->collapsed);
	free(t.n);
	free(t.hash);
	arr_symbolizer_close(sy);
	return rc;
}

static void sites_fini(void *st)
{
	struct sites *s = st;
	arr_ptrmap_release(&s->blocks);
	arr_ptrmap_release(&s->by_addr);
	free(s->stk);
	free(s->site);
	free(s->mod_alloc);
	free(s->freed);
}

const struct an_ops arr__an_sites = {
	.id = ARR_AN_SITES,
	.state_size = sizeof(struct sites),
	.begin = sites_begin,
	.wants = sites_wants,
	.alloc = sites_alloc,
	.release = sites_release,
	.end = sites_end,
	.fini = sites_fini,
};

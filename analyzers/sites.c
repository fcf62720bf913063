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
 * temporary allocations (freed before their thread's next allocation).
 * Sites are known from the stack id when it is first seen, so the pass
 * keeps one counter set per site and per stack id, plus address -> stack id
 * for the live blocks. A trace without stacks has no sites section (the
 * core does not run this analyzer for it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"
#include "analysis_internal.h"

#define SITE_MAX_FRAMES 128

struct site_acc {
	uint64_t allocs, bytes, live, peak, temps, temp_bytes;
	double fallocs, ftemps; /* the counts before rounding, when they are estimates */
};

struct site {
	uint64_t addr; /* return address of the site frame; 0: unknown */
	unsigned epoch; /* its module epoch: after a dlclose the same address is another site */
	struct site_acc a;
	uint32_t top_stack; /* the stack id with the most bytes */
};

struct stk {
	struct site_acc a;
	uint32_t site; /* index + 1 in sites; 0: not seen yet */
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
	double sample; /* arr_trace_stack_sample_bytes(); 0: every allocation has its stack */
};

/*
 * What one recorded allocation of size bytes stands for. With a sample of
 * mean T (Poisson by bytes), it was recorded with probability
 * p = 1 - exp(-size / T), so it counts 1 / p allocations and size / p bytes
 * (tcmalloc's unbiasing): the sums are unbiased estimates.
 */
static double sample_weight(const struct sites *s, uint64_t size)
{
	if (!s->sample)
		return 1;
	double p = -expm1(-(double)(size ? size : 1) / s->sample);
	return p > 0 ? 1 / p : 1;
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
	uint64_t idx;
	unsigned epoch = arr_trace_stack_epoch(c->tr, sid);
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
	s->sample = (double)arr_trace_stack_sample_bytes(c->tr);
	return 0;
}

static unsigned sites_wants(struct an_core *c, void *st)
{
	(void)c;
	return ((struct sites *)st)->on ? ARR__CB_ALLOC | ARR__CB_RELEASE : 0;
}

static void acc_alloc(struct site_acc *a, uint64_t size, double w)
{
	a->fallocs += w;
	a->allocs = (uint64_t)(a->fallocs + 0.5);
	size = (uint64_t)((double)size * w + 0.5);
	a->bytes += size;
	a->live += size;
	if (a->live > a->peak)
		a->peak = a->live;
}

static void sites_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	struct sites *s = st;
	if (s->sample && !ev->stack) /* not in the sample */
		return;
	struct stk *k = stk_get(s, c, ev->stack);
	if (!k)
		return;
	double w = sample_weight(s, b->size);
	acc_alloc(&k->a, b->size, w);
	acc_alloc(&s->site[k->site - 1].a, b->size, w);
	if (arr_ptrmap_put(&s->blocks, addr, ev->stack))
		c->oom = ARR_ENOMEM;
}

static void sites_release(struct an_core *c, void *st, uint64_t addr, struct an_block *b,
			  const struct arr_event *ev, int temporary)
{
	(void)ev;
	struct sites *s = st;
	uint64_t sid;
	if (!arr_ptrmap_del(&s->blocks, addr, &sid) || sid >= s->nstk || !s->stk[sid].site)
		return;
	struct stk *k = &s->stk[sid];
	struct site_acc *as[2] = {&k->a, &s->site[k->site - 1].a};
	double w = sample_weight(s, b->size);
	uint64_t size = (uint64_t)((double)b->size * w + 0.5);
	for (int i = 0; i < 2; i++) {
		as[i]->live -= size < as[i]->live ? size : as[i]->live;
		if (temporary) {
			as[i]->ftemps += w;
			as[i]->temps = (uint64_t)(as[i]->ftemps + 0.5);
			as[i]->temp_bytes += size;
		}
	}
	(void)c;
}

/* A frame as "func file:line" (or "func" / "module+0xoff"). */
static void frame_name(struct arr_symbolizer *sy, uint64_t addr, unsigned epoch, char *buf, size_t cap)
{
	const struct arr_frame_info *fi = arr_symbolize_at(sy, addr, epoch);
	if (fi->file)
		snprintf(buf, cap, "%s %s:%d", fi->func, fi->file, fi->line);
	else
		snprintf(buf, cap, "%s", fi->func);
}

static void put_stack(struct arr_doc *arr, const struct an_core *c, struct arr_symbolizer *sy, uint32_t sid)
{
	uint64_t fr[SITE_MAX_FRAMES];
	int trunc, n = arr_trace_stack(c->tr, sid, fr, SITE_MAX_FRAMES, &trunc);
	char buf[1024];
	for (int i = 0; i < n && i < SITE_MAX_FRAMES; i++) {
		frame_name(sy, fr[i], arr_trace_stack_epoch(c->tr, sid), buf, sizeof buf);
		arr_doc_push_str(arr, buf);
	}
	if (trunc)
		arr_doc_push_str(arr, "[truncated]");
}

static const struct sites *sort_ctx;
static int sort_key;
static uint64_t key_of(const struct site_acc *a, int key)
{
	switch (key) {
	case 0: return a->bytes;
	case 1: return a->allocs;
	case 2: return a->peak;
	case 3: return a->live;
	default: return a->temps;
	}
}
static int by_key(const void *x, const void *y)
{
	const struct site *a = &sort_ctx->site[*(const uint32_t *)x], *b = &sort_ctx->site[*(const uint32_t *)y];
	uint64_t ka = key_of(&a->a, sort_key), kb = key_of(&b->a, sort_key);
	if (ka != kb)
		return ka < kb ? 1 : -1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static void put_acc(struct arr_doc *o, const struct site_acc *a)
{
	arr_doc_set_int(o, "bytes", (int64_t)a->bytes);
	arr_doc_set_int(o, "allocs", (int64_t)a->allocs);
	arr_doc_set_int(o, "peak_bytes", (int64_t)a->peak);
	arr_doc_set_int(o, "leaked_bytes", (int64_t)a->live);
	arr_doc_set_int(o, "temporaries", (int64_t)a->temps);
}

/* Collapsed stacks, outermost first: "allocations;main;f 1234", "leaks;...". */
static int write_collapsed(const struct sites *s, const struct an_core *c, struct arr_symbolizer *sy, FILE *f)
{
	uint64_t fr[SITE_MAX_FRAMES];
	char buf[1024];
	for (int leaks = 0; leaks < 2; leaks++)
		for (size_t sid = 0; sid < s->nstk; sid++) {
			const struct stk *k = &s->stk[sid];
			uint64_t v = leaks ? k->a.live : k->a.bytes;
			if (!k->site || !v)
				continue;
			int trunc, n = arr_trace_stack(c->tr, (uint32_t)sid, fr, SITE_MAX_FRAMES, &trunc);
			/* a sampled trace's figures are estimates: its roots say so */
			fputs(leaks ? (s->sample ? "leaks_estimated" : "leaks")
				    : (s->sample ? "allocations_estimated" : "allocations"), f);
			if (trunc)
				fputs(";[truncated]", f);
			for (int i = (n < SITE_MAX_FRAMES ? n : SITE_MAX_FRAMES) - 1; i >= 0; i--) {
				const struct arr_frame_info *fi =
					arr_symbolize_at(sy, fr[i], arr_trace_stack_epoch(c->tr, (uint32_t)sid));
				snprintf(buf, sizeof buf, "%s", fi->func);
				for (char *p = buf; *p; p++)
					if (*p == ';' || *p == ' ' || *p == '\n')
						*p = '_';
				fprintf(f, ";%s", buf);
			}
			fprintf(f, " %llu\n", (unsigned long long)v);
		}
	return ferror(f) ? ARR_EIO : 0;
}

static int sites_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct sites *s = st;
	arr_doc_set_bool(sec, "recorded", s->on);
	if (!s->on)
		return 0;
	struct arr_symbolizer *sy;
	int rc = arr_symbolizer_open(&sy, c->tr);
	if (rc)
		return rc;
	arr_doc_set_int(sec, "stack_nodes", (int64_t)arr_trace_stack_nodes(c->tr));
	if (s->sample) /* the figures are estimates from a sample */
		arr_doc_set_int(arr_doc_set_obj(sec, "sampled"), "mean_bytes", (int64_t)s->sample);
	arr_doc_set_int(sec, "sites", (int64_t)s->nsite);
	/* each site's heaviest stack, as its example */
	for (size_t sid = 0; sid < s->nstk; sid++) {
		const struct stk *k = &s->stk[sid];
		if (k->site && k->a.bytes > s->stk[s->site[k->site - 1].top_stack].a.bytes)
			s->site[k->site - 1].top_stack = (uint32_t)sid;
	}
	uint32_t *ord = malloc((s->nsite + 1) * sizeof *ord);
	if (!ord) {
		arr_symbolizer_close(sy);
		return ARR_ENOMEM;
	}
	static const char *const names[] = {"by_bytes", "by_allocs", "by_peak", "by_leaked", "by_temporaries"};
	char buf[1024];
	for (int key = 0; key < 5; key++) {
		for (uint32_t i = 0; i < s->nsite; i++)
			ord[i] = i;
		sort_ctx = s, sort_key = key;
		qsort(ord, s->nsite, sizeof *ord, by_key);
		struct arr_doc *arr = arr_doc_set_arr(sec, names[key]);
		for (uint32_t i = 0; i < s->nsite && i < c->top; i++) {
			const struct site *x = &s->site[ord[i]];
			if (!key_of(&x->a, key))
				break;
			struct arr_doc *o = arr_doc_push_obj(arr);
			const struct arr_frame_info *fi = x->addr ? arr_symbolize_at(sy, x->addr, x->epoch) : NULL;
			arr_doc_set_str(o, "function", fi ? fi->func : "[no frame outside the allocator]");
			if (fi && fi->file) {
				arr_doc_set_str(o, "file", fi->file);
				arr_doc_set_int(o, "line", fi->line);
			}
			if (fi && fi->module)
				arr_doc_set_str(o, "module", fi->module);
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)x->addr);
			arr_doc_set_str(o, "address", buf);
			put_acc(o, &x->a);
			put_stack(arr_doc_set_arr(o, "stack"), c, sy, x->top_stack);
		}
	}
	free(ord);
	if (c->opt->collapsed)
		rc = write_collapsed(s, c, sy, c->opt->collapsed);
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

/*
 * cmd_diff.c - `allocrr diff A B`: two traces (analysed on the fly) or two
 * report.json / `analyze --json` documents side by side: calls, sizes,
 * peak live, leaks, and per allocator peak RSS and time, with the relative
 * change of each (coloured on a terminal).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "cli.h"
#include "options.h"
#include "report.h"

#define MAX_ALLOCATORS 16

static const struct cli_usage usage = {
	"diff",
	"usage: allocrr diff [--all] [--json] [-a ALLOCATOR]... A B\n",
	"Compare two traces, or two reports (report.json or 'allocrr analyze\n"
	"--json' output): calls, sizes, peak live bytes, leaks and, per allocator,\n"
	"peak RSS and replay time, with the change from A to B. Traces are\n"
	"analysed on the fly; with -a they are also replayed into ALLOCATOR.\n"
	"Traces recorded with --stacks (or their reports) also show the call sites\n"
	"that changed most (at most 10; matched by function and file:line):\n"
	"leaked bytes, live bytes at the peak, bytes allocated and calls.\n",
	"A figure one side has and the other could not measure (null there: peak /\n"
	"ideal of a trace too small to weigh) reads 'not measurable in A'; one\n"
	"only a side has (an allocator it alone replayed) 'only in B'.\n"
	"Colours (on a terminal only; NO_COLOR turns them off): red where B uses\n"
	"more than A, green where it uses less.\n"
	"Exit status: 0, 1 for an input that cannot be read, 2 for bad usage.\n",
	NULL,
	0,
};

/* The main rows: label, path in a trace (or an allocator entry), unit. */
struct row_def {
	const char *label, *path, *unit;
};
static const struct row_def trace_rows[] = {
	{"calls", "summary.calls", "count"},
	{"failed calls", "summary.failed", "count"},
	{"bytes requested", "summary.bytes_requested", "bytes"},
	{"mean request", NULL, "bytes"}, /* bytes_requested / requests (not calls: frees are calls) */
	{"most frequent size", "sizes.top.0.size", "size"}, /* exact: 4,104 B is no 4.0 KiB */
	{"temporary allocations", "lifetimes.temporary.count", "count"},
	{"peak live bytes", "live.peak_bytes", "bytes"},
	{"peak live blocks", "live.peak_blocks", "count"},
	{"leaked bytes", "leaks.bytes", "bytes"},
	{"leaked blocks", "leaks.blocks", "count"},
	{"cross-thread frees", "threads.cross_frees.count", "count"},
	{"recorded peak RSS", "rss.recorded.peak", "bytes"},
	{"true peak RSS", "rss.recorded.true_peak", "bytes"},
	{"duration", "summary.duration_ns", "ns"},
};
static const struct row_def alloc_rows[] = {
	{"peak RSS", "fragmentation.peak_rss", "bytes"},
	{"final RSS", "fragmentation.final_rss", "bytes"},
	{"peak / ideal", "fragmentation.peak_over_ideal", "ratio"},
	{"external fragmentation", "fragmentation.external_bytes", "bytes"},
	{"wall time", "time.wall_ns", "ns"},
	{"minor faults", "time.minor_faults", "count"},
};

struct out {
	int json, color;
	struct arr_doc *rows; /* json */
	int changed;
};

static void fmt(char *buf, size_t cap, double v, const char *unit)
{
	if (!isfinite(v)) {
		snprintf(buf, cap, "-");
	} else if (!strcmp(unit, "size")) {
		char c[40];
		cli_count(c, sizeof c, fabs(v));
		snprintf(buf, cap, "%s%s B", v < 0 ? "-" : "", c);
	} else if (!strcmp(unit, "bytes") && fabs(v) >= 1024) {
		char h[32];
		cli_human_bytes(h, sizeof h, (uint64_t)fabs(v));
		snprintf(buf, cap, "%s%s", v < 0 ? "-" : "", h);
	} else if (!strcmp(unit, "bytes")) {
		snprintf(buf, cap, v == floor(v) ? "%.0f B" : "%.1f B", v);
	} else if (!strcmp(unit, "ns")) {
		double a = fabs(v);
		if (a >= 1e9)
			snprintf(buf, cap, "%.3f s", v / 1e9);
		else if (a >= 1e6)
			snprintf(buf, cap, "%.3f ms", v / 1e6);
		else if (a >= 1e3)
			snprintf(buf, cap, "%.2f us", v / 1e3);
		else
			snprintf(buf, cap, "%.0f ns", v);
	} else if (v == floor(v) && fabs(v) < 1e15) {
		cli_count(buf, cap, v); /* as analyze prints them: 1,201,506 */
	} else {
		snprintf(buf, cap, "%.4g", v);
	}
}

/*
 * A side's value of a metric: a number, a null (the metric is in the
 * document but could not be measured there: peak / ideal of a tiny trace,
 * say), or missing (no such allocator or section on that side). A null is
 * not "only in B": the metric exists on both sides and one could not weigh it.
 */
struct val {
	double v; /* NAN unless a number */
	int null; /* present as null */
};
#define VAL_MISSING ((struct val){NAN, 0})

static void emit(struct out *o, const char *scope, const char *label, struct val va, struct val vb, const char *unit)
{
	double a = va.v, b = vb.v;
	int has_a = isfinite(a), has_b = isfinite(b);
	if (!has_a && !has_b)
		return;
	double d = b - a, rel = has_a && has_b && a != 0 ? d / fabs(a) : NAN;
	int changed = has_a != has_b || (has_a && d != 0);
	/* a number against a null: the side that could not measure it */
	const char *unmeasured = !has_a && va.null ? "a" : !has_b && vb.null ? "b" : NULL;
	o->changed += changed;
	if (o->json) {
		struct arr_doc *r = arr_doc_push_obj(o->rows);
		arr_doc_set_str(r, "scope", scope);
		arr_doc_set_str(r, "metric", label);
		arr_doc_set_num(r, "a", has_a ? a : NAN);
		arr_doc_set_num(r, "b", has_b ? b : NAN);
		arr_doc_set_num(r, "delta", has_a && has_b ? d : NAN);
		arr_doc_set_num(r, "relative", rel);
		arr_doc_set_str(r, "unit", strcmp(unit, "size") ? unit : "bytes");
		if (unmeasured)
			arr_doc_set_str(r, "not_measurable", unmeasured);
		return;
	}
	char sa[48], sb[48], sd[48], change[96];
	fmt(sa, sizeof sa, a, unit);
	fmt(sb, sizeof sb, b, unit);
	if (!changed) {
		snprintf(change, sizeof change, "=");
	} else if (has_a && has_b) {
		fmt(sd, sizeof sd, fabs(d), unit);
		if (isfinite(rel))
			snprintf(change, sizeof change, "%c%s (%+.1f%%)", d < 0 ? '-' : '+', sd, 100 * rel);
		else
			snprintf(change, sizeof change, "%c%s", d < 0 ? '-' : '+', sd);
	} else if (unmeasured) {
		snprintf(change, sizeof change, "not measurable in %s", has_a ? "B" : "A");
	} else {
		snprintf(change, sizeof change, has_a ? "only in A" : "only in B");
	}
	const char *on = "", *off = "";
	if (o->color && changed && has_a && has_b) {
		on = d > 0 ? "\033[31m" : "\033[32m";
		off = "\033[0m";
	} else if (o->color && changed) {
		on = "\033[33m";
		off = "\033[0m";
	}
	printf("  %-26s %16s %16s   %s%s%s\n", label, sa, sb, on, change, off);
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "";
}

static double num_at(const struct arr_doc *d, const char *path)
{
	double v;
	if (!d || arr_doc_as_num(arr_doc_path(d, path), &v))
		return NAN;
	return v;
}

static struct val val_at(const struct arr_doc *d, const char *path)
{
	const struct arr_doc *x = d ? arr_doc_path(d, path) : NULL;
	struct val r = {num_at(d, path), x && x->type == ARR_DOC_NULL};
	return r;
}

static struct val val_num(double v) { return (struct val){v, 0}; }

static const struct arr_doc *alloc_named(const struct arr_doc *trace, const char *name)
{
	return arr_doc_find(arr_doc_get(trace, "allocators"), "allocator", name);
}

/* --all: every numeric row of either side that differs. */
struct flat {
	char **keys;
	double *vals;
	const char **units;
	size_t n, cap;
};

static int flat_row(void *ctx, const char *trace, const char *allocator, const char *section, const char *metric,
		    const struct arr_doc *value, const char *unit)
{
	(void)trace;
	struct flat *f = ctx;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		char **k = realloc(f->keys, cap * sizeof *k);
		if (k)
			f->keys = k;
		double *v = realloc(f->vals, cap * sizeof *v);
		if (v)
			f->vals = v;
		const char **u = realloc(f->units, cap * sizeof *u);
		if (u)
			f->units = u;
		if (!k || !v || !u)
			return -1;
		f->cap = cap;
	}
	char key[1200];
	snprintf(key, sizeof key, "%s%s%s.%s", allocator, *allocator ? ": " : "", section, metric);
	double x = value->type == ARR_DOC_BOOL ? value->v.b : NAN;
	arr_doc_as_num(value, &x);
	if (!(f->keys[f->n] = strdup(key)))
		return -1;
	f->vals[f->n] = x;
	f->units[f->n] = unit; /* static strings */
	f->n++;
	return 0;
}

static void flat_free(struct flat *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->keys[i]);
	free(f->keys);
	free(f->vals);
	free(f->units);
}

/* A one-trace report around trace t, for arr_report_rows. */
static int flatten(const struct arr_doc *t, struct flat *f)
{
	struct arr_doc wrap = {.type = ARR_DOC_OBJECT};
	struct arr_doc arr = {.type = ARR_DOC_ARRAY};
	struct arr_doc *item = (struct arr_doc *)t;
	char *key = "traces";
	struct arr_doc *ap = &arr;
	arr.items = &item;
	arr.len = arr.cap = 1;
	wrap.items = &ap;
	wrap.keys = &key;
	wrap.len = wrap.cap = 1;
	return arr_report_rows(&wrap, flat_row, f);
}

/* Whether flat key KEY ("ALLOCATOR: section.metric" or "section.metric") is a null in trace t. */
static int null_in(const struct arr_doc *t, const char *key)
{
	const char *sep = strstr(key, ": ");
	if (sep) {
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(sep - key), key);
		t = alloc_named(t, name);
		key = sep + 2;
	}
	const struct arr_doc *x = t ? arr_doc_path(t, key) : NULL;
	return x && x->type == ARR_DOC_NULL;
}

/* A flat row's unit: a request size (sizes.top.N.size) prints exact, as the main rows' */
static const char *flat_unit(const char *key, const char *unit)
{
	size_t n = strlen(key);
	return !strcmp(unit, "bytes") && n > 5 && !strcmp(key + n - 5, ".size") ? "size" : unit;
}

static int diff_all(struct out *o, const struct arr_doc *ta, const struct arr_doc *tb)
{
	struct flat fa = {0}, fb = {0};
	if (flatten(ta, &fa) || flatten(tb, &fb)) {
		flat_free(&fa);
		flat_free(&fb);
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	char *used = calloc(fb.n + 1, 1);
	for (size_t i = 0; i < fa.n && used; i++) {
		struct val b = VAL_MISSING;
		for (size_t j = 0; j < fb.n; j++)
			if (!used[j] && !strcmp(fa.keys[i], fb.keys[j])) {
				b.v = fb.vals[j];
				used[j] = 1;
				break;
			}
		if (!isfinite(b.v))
			b.null = null_in(tb, fa.keys[i]);
		/* a null in A is "not measurable in A", not "only in B" */
		struct val a = {fa.vals[i], !isfinite(fa.vals[i]) && null_in(ta, fa.keys[i])};
		if (fa.vals[i] != b.v)
			emit(o, "", fa.keys[i], a, b, flat_unit(fa.keys[i], fa.units[i]));
	}
	for (size_t j = 0; j < fb.n && used; j++)
		if (!used[j]) {
			struct val a = {NAN, null_in(ta, fb.keys[j])};
			emit(o, "", fb.keys[j], a, val_num(fb.vals[j]), flat_unit(fb.keys[j], fb.units[j]));
		}
	free(used);
	flat_free(&fa);
	flat_free(&fb);
	return 0;
}

static void diff_sites(struct out *o, const struct arr_doc *ta, const struct arr_doc *tb);

/*
 * Bytes requested over the calls that requested them: the size histogram
 * counts exactly the requests whose bytes summary.bytes_requested sums
 * (malloc, calloc, realloc, the aligned ones), where summary.calls also
 * counts the frees and would halve the mean of a program that frees all.
 */
static double mean_request(const struct arr_doc *t)
{
	const struct arr_doc *h = arr_doc_path(t, "sizes.log2");
	double n = 0;
	for (size_t i = 0; h && h->type == ARR_DOC_ARRAY && i < h->len; i++)
		n += num_at(h->items[i], "count");
	return n > 0 ? num_at(t, "summary.bytes_requested") / n : NAN;
}

static void diff_trace(struct out *o, const struct arr_doc *ta, const struct arr_doc *tb, int all)
{
	if (!o->json)
		printf("%-28s %16s %16s   %s\n", "", "A", "B", "change");
	if (all) {
		diff_all(o, ta, tb);
		return;
	}
	for (size_t i = 0; i < sizeof trace_rows / sizeof *trace_rows; i++) {
		const struct row_def *r = &trace_rows[i];
		struct val a, b;
		if (r->path) {
			a = val_at(ta, r->path);
			b = val_at(tb, r->path);
		} else {
			a = val_num(mean_request(ta));
			b = val_num(mean_request(tb));
		}
		emit(o, "trace", r->label, a, b, r->unit);
	}
	/* allocators of A in order, then those only in B */
	const struct arr_doc *als[2] = {arr_doc_get(ta, "allocators"), arr_doc_get(tb, "allocators")};
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; als[side] && i < als[side]->len; i++) {
			const char *name = arr_doc_as_str(arr_doc_get(als[side]->items[i], "allocator"));
			if (!name || (side == 1 && alloc_named(ta, name)))
				continue;
			const struct arr_doc *aa = alloc_named(ta, name), *ab = alloc_named(tb, name);
			if (!o->json)
				printf("allocator %s\n", name);
			for (size_t k = 0; k < sizeof alloc_rows / sizeof *alloc_rows; k++)
				emit(o, name, alloc_rows[k].label, val_at(aa, alloc_rows[k].path),
				     val_at(ab, alloc_rows[k].path), alloc_rows[k].unit);
		}
	diff_sites(o, ta, tb);
}

/*
 * Call sites, when both traces were recorded with stacks: sites are matched
 * by function and file:line (module+offset without lines), as addresses
 * move from run to run; a site of several return addresses (a function's
 * line called twice on one line) is their sum. Each side knows the sites
 * of its top tables (analyze --top), so a site in none of them is "only in"
 * the other; those that changed most (leaked, then live at the peak and
 * allocated bytes) come first.
 */
#define DIFF_SITES 10
enum { SF_LEAKED, SF_AT_PEAK, SF_BYTES, SF_CALLS, SF_COUNT };
static const struct row_def site_rows[SF_COUNT] = {
	{"leaked bytes", "leaked_bytes", "bytes"},
	{"live at the peak", "live_at_peak_bytes", "bytes"},
	{"bytes allocated", "bytes", "bytes"},
	{"calls", "allocs", "count"},
};
struct dsite {
	char key[512];
	double v[2][SF_COUNT]; /* per side; NAN: not in that side's tables */
};
struct dsites {
	struct dsite *s;
	size_t n, cap;
	const char **seen; /* addresses taken from this side */
	size_t nseen, seen_cap;
};

static void site_key(const struct arr_doc *r, char *buf, size_t cap)
{
	const char *fn = arr_doc_as_str(arr_doc_get(r, "function")), *file = arr_doc_as_str(arr_doc_get(r, "file"));
	const char *mod = arr_doc_as_str(arr_doc_get(r, "module"));
	const char *off = arr_doc_as_str(arr_doc_get(r, "module_offset"));
	if (file)
		snprintf(buf, cap, "%s %s:%.0f", fn ? fn : "?", base_name(file), num_at(r, "line"));
	else if (mod && off)
		snprintf(buf, cap, "%s %s+%s", fn ? fn : "?", base_name(mod), off);
	else
		snprintf(buf, cap, "%s", fn ? fn : "?");
}

static int sites_side(struct dsites *d, const struct arr_doc *sites, int side)
{
	d->nseen = 0;
	for (size_t t = 0; sites && sites->type == ARR_DOC_OBJECT && t < sites->len; t++) {
		const struct arr_doc *tab = sites->items[t];
		if (strncmp(sites->keys[t], "by_", 3) || tab->type != ARR_DOC_ARRAY)
			continue;
		for (size_t i = 0; i < tab->len; i++) {
			const struct arr_doc *r = tab->items[i];
			const char *addr = arr_doc_as_str(arr_doc_get(r, "address"));
			int dup = 0;
			for (size_t k = 0; addr && k < d->nseen && !dup; k++)
				dup = !strcmp(d->seen[k], addr);
			if (dup)
				continue;
			if (addr) {
				if (d->nseen == d->seen_cap) {
					size_t cap = d->seen_cap ? d->seen_cap * 2 : 64;
					const char **ns = realloc(d->seen, cap * sizeof *ns);
					if (!ns)
						return -1;
					d->seen = ns;
					d->seen_cap = cap;
				}
				d->seen[d->nseen++] = addr;
			}
			char key[512];
			site_key(r, key, sizeof key);
			size_t j = 0;
			while (j < d->n && strcmp(d->s[j].key, key))
				j++;
			if (j == d->n) {
				if (d->n == d->cap) {
					size_t cap = d->cap ? d->cap * 2 : 64;
					struct dsite *ns = realloc(d->s, cap * sizeof *ns);
					if (!ns)
						return -1;
					d->s = ns;
					d->cap = cap;
				}
				struct dsite *x = &d->s[d->n++];
				snprintf(x->key, sizeof x->key, "%s", key);
				for (int k = 0; k < 2 * SF_COUNT; k++)
					x->v[k / SF_COUNT][k % SF_COUNT] = NAN;
			}
			struct dsite *x = &d->s[j];
			for (int k = 0; k < SF_COUNT; k++) {
				double v = num_at(r, site_rows[k].path);
				if (isfinite(v))
					x->v[side][k] = (isfinite(x->v[side][k]) ? x->v[side][k] : 0) + v;
			}
		}
	}
	return 0;
}

static double site_change(const struct dsite *x, int k)
{
	double a = x->v[0][k], b = x->v[1][k];
	return fabs((isfinite(b) ? b : 0) - (isfinite(a) ? a : 0));
}

static int by_change(const void *p, const void *q)
{
	const struct dsite *x = p, *y = q;
	for (int k = 0; k < SF_CALLS; k++) {
		double dx = site_change(x, k), dy = site_change(y, k);
		if (dx != dy)
			return dx < dy ? 1 : -1;
	}
	return strcmp(x->key, y->key);
}

static void diff_sites(struct out *o, const struct arr_doc *ta, const struct arr_doc *tb)
{
	const struct arr_doc *sa = arr_doc_get(ta, "sites"), *sb = arr_doc_get(tb, "sites");
	const struct arr_doc *ra = arr_doc_get(sa, "recorded"), *rb = arr_doc_get(sb, "recorded");
	if (!ra || !rb || ra->type != ARR_DOC_BOOL || rb->type != ARR_DOC_BOOL || !ra->v.b || !rb->v.b)
		return;
	struct dsites d = {0};
	if (sites_side(&d, sa, 0) || sites_side(&d, sb, 1)) {
		free(d.s);
		free(d.seen);
		cli_error("out of memory");
		return;
	}
	qsort(d.s, d.n, sizeof *d.s, by_change);
	int est = arr_doc_get(sa, "sampled") || arr_doc_get(sb, "sampled"), shown = 0;
	for (size_t i = 0; i < d.n && shown < DIFF_SITES; i++) {
		const struct dsite *x = &d.s[i];
		int changed = 0;
		for (int k = 0; k < SF_COUNT; k++)
			changed |= !(x->v[0][k] == x->v[1][k]);
		if (!changed)
			continue;
		if (!o->json) {
			if (!shown)
				printf("call sites that changed most%s\n", est ? " (estimates: sampled stacks)" : "");
			printf(" %s\n", x->key);
		}
		char scope[600];
		snprintf(scope, sizeof scope, "site %s", x->key);
		for (int k = 0; k < SF_COUNT; k++)
			if (!(x->v[0][k] == x->v[1][k]))
				emit(o, scope, site_rows[k].label, val_num(x->v[0][k]), val_num(x->v[1][k]),
				     site_rows[k].unit);
		shown++;
	}
	free(d.s);
	free(d.seen);
}

/* Read A or B: a JSON document (a report, or analyze --json), else a trace. */
static int load(const char *path, const char *const *specs, size_t nspecs, int quiet, struct arr_doc **out)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		cli_error("cannot open '%s': %s", path, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	int first = fgetc(f);
	while (first == ' ' || first == '\n' || first == '\t' || first == '\r')
		first = fgetc(f);
	if (first == '{') {
		rewind(f);
		char *buf = NULL;
		size_t len = 0, cap = 0;
		for (;;) {
			if (len == cap) {
				cap = cap ? cap * 2 : 1 << 16;
				char *nb = realloc(buf, cap);
				if (!nb) {
					free(buf);
					fclose(f);
					cli_error("'%s': out of memory", path);
					return EXIT_BAD_INPUT;
				}
				buf = nb;
			}
			size_t got = fread(buf + len, 1, cap - len, f);
			len += got;
			if (!got)
				break;
		}
		fclose(f);
		size_t off = 0;
		int rc = arr_doc_parse_json(buf, len, out, &off);
		free(buf);
		if (rc) {
			cli_error("'%s': %s at offset %zu", path, arr_strerror(rc), off);
			return EXIT_BAD_INPUT;
		}
		if (!arr_doc_get(*out, "traces") || arr_doc_get(*out, "traces")->type != ARR_DOC_ARRAY) {
			cli_error("'%s': not an allocrr report (no \"traces\" list)", path);
			arr_doc_free(*out);
			*out = NULL;
			return EXIT_BAD_INPUT;
		}
		return 0;
	}
	fclose(f);
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	struct arr_doc *doc = arr_doc_object(), *td = arr_doc_push_obj(arr_doc_set_arr(doc, "traces"));
	struct arr_analysis_options ao = ARR_ANALYSIS_OPTIONS_INIT;
	if (!rc)
		rc = arr_analyze_trace(tr, &ao, td);
	if (rc) {
		rc = cli_trace_error(path, tr, rc);
		arr_trace_close(tr);
		arr_doc_free(doc);
		return rc;
	}
	arr_trace_close(tr);
	if (nspecs) {
		struct cli_replay_plan plan = CLI_REPLAY_PLAN_INIT;
		plan.cmd = "diff";
		plan.quiet = quiet;
		plan.zeroing = 0;
		rc = cli_replays_analyze(path, specs, nspecs, &plan, arr_doc_set_arr(td, "allocators"));
		if (rc) {
			arr_doc_free(doc);
			return rc;
		}
	}
	*out = doc;
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	const char *specs[MAX_ALLOCATORS];
	size_t nspecs = 0;
	int all = 0, json = 0, quiet = 0, first;
	const struct cli_option opts[] = {
		CLI_LIST('a', "allocator", "A", specs, &nspecs, MAX_ALLOCATORS,
			 "replay traces into A (repeatable; as in 'replay')"),
		CLI_FLAG(0, "all", &all, "every metric that differs, not only the main ones"),
		CLI_FLAG('j', "json", &json, "one JSON document of the rows"),
		CLI_FLAG('q', "quiet", &quiet, "no notes on stderr"),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 2)
		return cli_usage_error("diff", "diff wants two inputs, A and B (traces or report.json files)");
	struct arr_doc *da, *db;
	rc = load(argv[first], specs, nspecs, quiet, &da);
	if (rc)
		return rc;
	if ((rc = load(argv[first + 1], specs, nspecs, quiet, &db))) {
		arr_doc_free(da);
		return rc;
	}
	const char *nc = getenv("NO_COLOR");
	struct out o = {json, !json && isatty(1) && !(nc && *nc), NULL, 0};
	struct arr_doc *jdoc = NULL;
	if (json) {
		jdoc = arr_doc_object();
		arr_doc_set_str(jdoc, "a", argv[first]);
		arr_doc_set_str(jdoc, "b", argv[first + 1]);
		o.rows = arr_doc_set_arr(jdoc, "rows");
	}
	const struct arr_doc *ta = arr_doc_get(da, "traces"), *tb = arr_doc_get(db, "traces");
	/* Pair the traces: by file name when both sides name them alike, else in order. */
	size_t pairs = ta->len < tb->len ? ta->len : tb->len;
	for (size_t i = 0; i < ta->len; i++) {
		const struct arr_doc *a = ta->items[i], *b = NULL;
		const char *na = base_name(arr_doc_as_str(arr_doc_path(a, "trace.path")));
		for (size_t j = 0; j < tb->len && ta->len > 1; j++)
			if (!strcmp(na, base_name(arr_doc_as_str(arr_doc_path(tb->items[j], "trace.path")))))
				b = tb->items[j];
		if (!b && i < pairs)
			b = tb->items[i];
		if (!b)
			continue;
		if (!json)
			printf("%sA: %s\nB: %s\n", i ? "\n" : "", arr_doc_as_str(arr_doc_path(a, "trace.path")),
			       arr_doc_as_str(arr_doc_path(b, "trace.path")));
		diff_trace(&o, a, b, all);
	}
	if (!pairs)
		cli_error("nothing to compare: A has %zu traces, B %zu", ta->len, tb->len);
	if (json) {
		arr_doc_set_int(jdoc, "changed", o.changed);
		arr_doc_write_json(stdout, jdoc, 2);
		putchar('\n');
		arr_doc_free(jdoc);
	} else if (!o.changed) {
		printf("no differences\n");
	}
	arr_doc_free(da);
	arr_doc_free(db);
	return pairs ? 0 : EXIT_BAD_INPUT;
}

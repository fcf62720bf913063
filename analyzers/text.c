/*
 * text.c - the terminal form of an analysis document (allocrr/analysis.h,
 * arr_doc_render_text): a heading per section, aligned key/value lines,
 * arrays of flat objects as aligned tables, timelines as a one-line note.
 *
 * It is generic: it knows the schema's naming rules, not its sections, so
 * sections added later (the replay side's "allocators", a report's
 * "checks") render without changes here. Units come from key names:
 * "*bytes*", sizes, RSS and live figures are bytes; "*_ns", "t", "*_t" and
 * members of time histograms are nanoseconds; "*_per_s" are rates.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "allocrr/analysis.h"

#define MAX_COLS 16
#define MAX_ROWS 40

enum unit { U_PLAIN, U_BYTES, U_NS, U_RATE_BYTES };

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

static int has_any(const char *key, const char *const *words)
{
	for (; *words; words++)
		if (strstr(key, *words))
			return 1;
	return 0;
}

/* Integers only: doubles are ratios or rates (the schema's rule). */
static enum unit unit_of(const char *parent, const char *key, int is_double)
{
	static const char *const plain[] = {"count", "calls", "blocks", "samples", "raises", "intervals", "allocs",
					    "freed", "frees", "temporary", "event", "tid", "pid", "status",
					    "fraction", "distinct", "_sizes", "grow", "shrink", "same", "in_place",
					    "moved", "from_null", "pairs", "runs", "faults", "over", "ratio", "short_lived",
					    "resizes", NULL};
	static const char *const bytes[] = {"rss", "live", "peak", "size", "final", "first", "threshold",
					    "ideal", "internal", "external", "usable", NULL};
	if (!key)
		return U_PLAIN;
	if (ends_with(key, "bytes_per_s"))
		return U_RATE_BYTES;
	if (is_double || (parent && (!strcmp(parent, "ops") || !strcmp(parent, "by_op"))))
		return U_PLAIN;
	if (strstr(key, "bytes"))
		return U_BYTES;
	int time_ctx = parent && strstr(parent, "time") != NULL;
	int event_ctx = parent && strstr(parent, "events") != NULL;
	/* latency per operation: {"malloc": {"p50", ..., "max"}} */
	int op_ctx = parent && arr_op_from_name(parent) != 0;
	if (ends_with(key, "_ns") || strstr(key, "_ns_") || !strcmp(key, "t") || ends_with(key, "_t") || (op_ctx && !strcmp(key, "max")) ||
	    (key[0] == 'p' && key[1] >= '0' && key[1] <= '9') ||
	    (time_ctx && (!strcmp(key, "lo") || !strcmp(key, "hi"))))
		return U_NS;
	if (event_ctx || has_any(key, plain))
		return U_PLAIN;
	if (has_any(key, bytes) || !strcmp(key, "lo") || !strcmp(key, "hi"))
		return U_BYTES;
	return U_PLAIN;
}

static void human_bytes(char *buf, size_t cap, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int neg = b < 0, u = 0;
	double v = neg ? -b : b;
	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	snprintf(buf, cap, u ? "%s%.1f %s" : "%s%.0f %s", neg ? "-" : "", v, units[u]);
}

static void human_ns(char *buf, size_t cap, double ns)
{
	if (ns < 1e3)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, cap, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.2f s", ns / 1e9);
}

static void scalar(char *buf, size_t cap, const struct arr_doc *d, enum unit u)
{
	double v;
	switch (d->type) {
	case ARR_DOC_NULL:
		snprintf(buf, cap, "-");
		return;
	case ARR_DOC_BOOL:
		snprintf(buf, cap, "%s", d->v.b ? "yes" : "no");
		return;
	case ARR_DOC_STR:
		snprintf(buf, cap, "%s", d->v.s);
		return;
	case ARR_DOC_INT:
	case ARR_DOC_NUM:
		arr_doc_as_num(d, &v);
		if (u == U_BYTES || u == U_RATE_BYTES) {
			human_bytes(buf, cap, v);
			if (u == U_RATE_BYTES)
				strncat(buf, "/s", cap - strlen(buf) - 1);
		} else if (u == U_NS) {
			human_ns(buf, cap, v);
		} else if (d->type == ARR_DOC_INT) {
			snprintf(buf, cap, "%" PRId64, d->v.i);
		} else if (v != 0 && (v < 0.01 && v > -0.01)) {
			snprintf(buf, cap, "%.3g", v);
		} else if (v >= 1000 || v <= -1000) {
			snprintf(buf, cap, "%.0f", v);
		} else {
			snprintf(buf, cap, "%.3f", v);
		}
		return;
	default:
		snprintf(buf, cap, "...");
	}
}

static int is_scalar(const struct arr_doc *d) { return d && d->type != ARR_DOC_ARRAY && d->type != ARR_DOC_OBJECT; }

static int flat_object(const struct arr_doc *d)
{
	if (!d || d->type != ARR_DOC_OBJECT)
		return 0;
	for (size_t i = 0; i < d->len; i++)
		if (!is_scalar(d->items[i]))
			return 0;
	return 1;
}

static void indent(FILE *f, int level)
{
	for (int i = 0; i < level; i++)
		fputs("  ", f);
}

/* An array of flat objects as a table: columns from the first row's keys. */
static void table(FILE *f, const struct arr_doc *arr, const char *parent, int level)
{
	const struct arr_doc *first = arr->items[0];
	size_t ncol = first->len < MAX_COLS ? first->len : MAX_COLS;
	size_t nrow = arr->len < MAX_ROWS ? arr->len : MAX_ROWS;
	size_t w[MAX_COLS];
	char buf[64];
	for (size_t c = 0; c < ncol; c++) {
		w[c] = strlen(first->keys[c]);
		for (size_t r = 0; r < nrow; r++) {
			const struct arr_doc *v = arr_doc_get(arr->items[r], first->keys[c]);
			if (!v)
				continue;
			scalar(buf, sizeof buf, v, unit_of(parent, first->keys[c], v->type == ARR_DOC_NUM));
			if (strlen(buf) > w[c])
				w[c] = strlen(buf);
		}
	}
	indent(f, level);
	for (size_t c = 0; c < ncol; c++)
		fprintf(f, "%s%*s", c ? "  " : "", (int)w[c], first->keys[c]);
	fputc('\n', f);
	for (size_t r = 0; r < nrow; r++) {
		indent(f, level);
		for (size_t c = 0; c < ncol; c++) {
			const struct arr_doc *v = arr_doc_get(arr->items[r], first->keys[c]);
			if (v)
				scalar(buf, sizeof buf, v, unit_of(parent, first->keys[c], v->type == ARR_DOC_NUM));
			else
				strcpy(buf, "-");
			fprintf(f, "%s%*s", c ? "  " : "", (int)w[c], buf);
		}
		fputc('\n', f);
	}
	if (arr->len > nrow) {
		indent(f, level);
		fprintf(f, "... %zu more rows (--json has them all)\n", arr->len - nrow);
	}
}

static void render(FILE *f, const struct arr_doc *d, const char *name, int level);

static void render_object(FILE *f, const struct arr_doc *d, const char *name, int level, const char *skip)
{
	size_t kw = 0;
	for (size_t i = 0; i < d->len; i++)
		if (is_scalar(d->items[i]) && strlen(d->keys[i]) > kw)
			kw = strlen(d->keys[i]);
	char buf[256];
	/* counts by operation: the ones that happened */
	int skip_zero = name && (!strcmp(name, "ops") || !strcmp(name, "by_op"));
	for (size_t i = 0; i < d->len; i++) {
		const struct arr_doc *v = d->items[i];
		const char *k = d->keys[i];
		if ((skip_zero && v->type == ARR_DOC_INT && v->v.i == 0) || (skip && !strcmp(k, skip)))
			continue;
		if (is_scalar(v)) {
			scalar(buf, sizeof buf, v, unit_of(name, k, v->type == ARR_DOC_NUM));
			indent(f, level);
			fprintf(f, "%-*s  %s\n", (int)kw, k, buf);
		} else {
			render(f, v, k, level);
		}
	}
}

static void render(FILE *f, const struct arr_doc *d, const char *name, int level)
{
	if (d->type == ARR_DOC_OBJECT) {
		/* a timeline: column arrays of numbers */
		const struct arr_doc *t = arr_doc_get(d, "t");
		if (t && t->type == ARR_DOC_ARRAY) {
			indent(f, level);
			fprintf(f, "%s: %zu points (see --json)\n", name, t->len);
			return;
		}
		if (!d->len)
			return;
		indent(f, level);
		fprintf(f, "%s\n", name);
		render_object(f, d, name, level + 1, NULL);
		return;
	}
	if (d->type != ARR_DOC_ARRAY) {
		char buf[256];
		scalar(buf, sizeof buf, d, unit_of(NULL, name, d->type == ARR_DOC_NUM));
		indent(f, level);
		fprintf(f, "%s  %s\n", name, buf);
		return;
	}
	if (!d->len)
		return;
	if (flat_object(d->items[0]) && d->items[0]->len) {
		indent(f, level);
		fprintf(f, "%s\n", name);
		table(f, d, name, level + 1);
		return;
	}
	if (is_scalar(d->items[0])) {
		indent(f, level);
		fprintf(f, "%s: %zu values\n", name, d->len);
		return;
	}
	/* objects with nested parts (allocators, phases with details): one block each */
	for (size_t i = 0; i < d->len; i++) {
		const struct arr_doc *e = d->items[i];
		const char *lkey = "allocator", *label = arr_doc_as_str(arr_doc_get(e, lkey));
		if (!label)
			label = arr_doc_as_str(arr_doc_get(e, lkey = "name"));
		char head[160];
		if (label)
			snprintf(head, sizeof head, "%s: %s", name, label);
		else
			snprintf(head, sizeof head, "%s[%zu]", name, i);
		if (e->type == ARR_DOC_OBJECT) {
			if (i && level == 0)
				fputc('\n', f);
			indent(f, level);
			fprintf(f, "%s\n", head);
			render_object(f, e, name, level + 1, label ? lkey : NULL);
		} else {
			render(f, e, head, level);
		}
	}
}

static void render_trace(FILE *f, const struct arr_doc *tr)
{
	const struct arr_doc *info = arr_doc_get(tr, "trace");
	const char *path = info ? arr_doc_as_str(arr_doc_get(info, "path")) : NULL;
	fprintf(f, "== %s ==\n", path ? path : "trace");
	for (size_t i = 0; i < tr->len; i++) {
		const struct arr_doc *sec = tr->items[i];
		const char *k = tr->keys[i];
		if ((sec->type == ARR_DOC_OBJECT || sec->type == ARR_DOC_ARRAY) && !sec->len)
			continue;
		fputc('\n', f);
		if (sec->type == ARR_DOC_OBJECT) {
			fprintf(f, "%s\n", k);
			render_object(f, sec, k, 1, NULL);
		} else {
			render(f, sec, k, 0);
		}
	}
}

int arr_doc_render_text(FILE *f, const struct arr_doc *doc)
{
	const struct arr_doc *traces = arr_doc_get(doc, "traces");
	if (traces && traces->type == ARR_DOC_ARRAY) {
		for (size_t i = 0; i < traces->len; i++) {
			if (i)
				fputc('\n', f);
			render_trace(f, traces->items[i]);
		}
		for (size_t i = 0; i < doc->len; i++)
			if (strcmp(doc->keys[i], "traces") && strcmp(doc->keys[i], "allocrr")) {
				fputc('\n', f);
				render(f, doc->items[i], doc->keys[i], 0);
			}
	} else if (doc->type == ARR_DOC_OBJECT) {
		render_trace(f, doc);
	} else {
		render(f, doc, "value", 0);
	}
	fflush(f);
	return ferror(f) ? ARR_EIO : 0;
}

/*
 * csv.c - a report as tidy rows (one per trace x allocator x metric), and
 * the CSV file made of them. Columns: trace,allocator,section,metric,value,unit
 * (docs/report.md, "CSV"). Rows follow the document's order, so two
 * reports of the same config line up.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* Words in a key that say its unit, checked in order: the first rule that
 * matches wins. "section.path" keys (e.g. "latency.malloc.p99"). */
static int has(const char *s, const char *w) { return strstr(s, w) != NULL; }
static int leaf_is(const char *leaf, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (!strcmp(leaf, words[i]))
			return 1;
	return 0;
}

const char *arr_report_unit(const char *metric)
{
	const char *leaf = strrchr(metric, '.');
	leaf = leaf ? leaf + 1 : metric;
	size_t n = strlen(leaf);
	static const char *const ids[] = {"tid",      "pid",        "ppid",   "event",     "op_index", "alloc_tid",
					  "free_tid", "peak_event", "status", "page_size", NULL};
	static const char *const bound[] = {"lo", "hi", NULL};
	static const char *const byte_leaves[] = {"peak",   "final",    "first",    "baseline", "arena",
						  "hblkhd", "uordblks", "fordblks", "keepcost", "unexplained_peak",
						  NULL};
	/* histogram bounds take the unit of their histogram */
	if (leaf_is(leaf, bound)) {
		if (has(metric, "time_log2."))
			return "ns";
		if (has(metric, "events_log2."))
			return "count";
		return "bytes";
	}
	if (leaf_is(leaf, ids))
		return "";
	/* calls by function, failures by cause, divergences: counts whatever the name */
	if (!strncmp(metric, "summary.ops.", 12) || has(metric, "failed_calls.") || !strncmp(metric, "divergence.", 11))
		return "count";
	if (has(leaf, "per_s") || (n > 5 && !strcmp(leaf + n - 5, "_rate")))
		return "per_s";
	if ((n > 3 && !strcmp(leaf + n - 3, "_ns")) || !strcmp(leaf, "ns") || (n > 2 && !strcmp(leaf + n - 2, "_t")) ||
	    !strcmp(leaf, "t") || has(leaf, "ns_per") ||
	    (!strncmp(metric, "latency.", 8) &&
	     ((leaf[0] == 'p' && leaf[1] >= '0' && leaf[1] <= '9') || !strcmp(leaf, "max"))))
		return "ns";
	if (!strcmp(leaf, "count") || !strcmp(leaf, "calls") || !strcmp(leaf, "short_lived") || has(leaf, "blocks") ||
	    has(leaf, "faults"))
		return "count";
	if (has(metric, "jw") || has(leaf, "_over_") || has(leaf, "fraction") || has(leaf, "ratio") ||
	    has(metric, "factor."))
		return "ratio";
	if (has(leaf, "bytes") || has(leaf, "rss") || (has(leaf, "size") && !has(leaf, "sizes")) || has(leaf, "live") ||
	    has(leaf, "usable") || has(leaf, "mapped") || has(leaf, "resident") || has(leaf, "ideal") ||
	    has(leaf, "internal") || has(leaf, "external") || has(leaf, "threshold") || leaf_is(leaf, byte_leaves) ||
	    !strncmp(metric, "mallinfo2.", 10))
		return "bytes";
	static const char *const counts[] = {
		"calls",     "events",      "samples",       "threads",     "runs",   "failed",    "allocs",
		"frees",     "freed",       "intervals",     "raises",      "pairs",  "purged",    "sizes",
		"temporary", "short_lived", "moved",         "grow",        "shrink", "same",      "in_place",
		"from_null", "unknown",     "mismatch",      "substituted", "_now",   "anomalies", "truncated",
		"total",     "overflow",    "out_of_memory", "invalid",     "other",  NULL};
	for (size_t i = 0; counts[i]; i++)
		if (has(leaf, counts[i]))
			return "count";
	return "";
}

struct walk {
	arr_report_row_fn fn;
	void *ctx;
	const char *trace, *allocator, *section;
	char path[1024];
};

static int walk(struct walk *w, const struct arr_doc *d, size_t plen)
{
	switch (d->type) {
	case ARR_DOC_INT:
	case ARR_DOC_NUM:
	case ARR_DOC_BOOL:
		if (!plen)
			return 0;
		char full[1200];
		snprintf(full, sizeof full, "%s.%s", w->section, w->path);
		return w->fn(w->ctx, w->trace, w->allocator, w->section, w->path, d,
			     d->type == ARR_DOC_BOOL ? "" : arr_report_unit(full));
	case ARR_DOC_OBJECT:
	case ARR_DOC_ARRAY:
		for (size_t i = 0; i < d->len; i++) {
			char part[128];
			if (d->type == ARR_DOC_OBJECT) {
				/* column arrays of thousands of points: JSON and the page only */
				if (!strcmp(d->keys[i], "timeline") || !strcmp(d->keys[i], "allocators"))
					continue;
				snprintf(part, sizeof part, "%s", d->keys[i]);
			} else {
				/* an array of plain numbers is a column too */
				if (d->items[i]->type != ARR_DOC_OBJECT)
					break;
				snprintf(part, sizeof part, "%zu", i);
			}
			int n = snprintf(w->path + plen, sizeof w->path - plen, "%s%s", plen ? "." : "", part);
			if (n < 0 || (size_t)n >= sizeof w->path - plen)
				continue;
			int rc = walk(w, d->items[i], plen + (size_t)n);
			w->path[plen] = 0;
			if (rc)
				return rc;
		}
		return 0;
	default:
		return 0;
	}
}

/* Each top-level member of obj (but skip) as a section. */
static int sections(struct walk *w, const struct arr_doc *obj, const char *skip1, const char *skip2)
{
	for (size_t i = 0; obj && i < obj->len; i++) {
		const char *k = obj->keys[i];
		if ((skip1 && !strcmp(k, skip1)) || (skip2 && !strcmp(k, skip2)))
			continue;
		w->section = k;
		w->path[0] = 0;
		int rc = walk(w, obj->items[i], 0);
		if (rc)
			return rc;
	}
	return 0;
}

int arr_report_rows(const struct arr_doc *report, arr_report_row_fn fn, void *ctx)
{
	const struct arr_doc *traces = arr_doc_get(report, "traces");
	struct walk w = {.fn = fn, .ctx = ctx};
	for (size_t t = 0; traces && t < traces->len; t++) {
		const struct arr_doc *tr = traces->items[t];
		const char *path = arr_doc_as_str(arr_doc_path(tr, "trace.path"));
		w.trace = path ? path : "";
		w.allocator = "";
		int rc = sections(&w, tr, "trace", "allocators");
		if (rc)
			return rc;
		const struct arr_doc *als = arr_doc_get(tr, "allocators");
		for (size_t a = 0; als && a < als->len; a++) {
			const char *name = arr_doc_as_str(arr_doc_get(als->items[a], "allocator"));
			w.allocator = name ? name : "";
			if ((rc = sections(&w, als->items[a], "allocator", "library")))
				return rc;
		}
	}
	return 0;
}

/* RFC 4180: quote when the field holds a comma, quote or line break. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int csv_row(void *ctx, const char *trace, const char *allocator, const char *section, const char *metric,
		   const struct arr_doc *v, const char *unit)
{
	FILE *f = ctx;
	csv_field(f, trace);
	fputc(',', f);
	csv_field(f, allocator);
	fputc(',', f);
	csv_field(f, section);
	fputc(',', f);
	csv_field(f, metric);
	fputc(',', f);
	if (v->type == ARR_DOC_INT)
		fprintf(f, "%lld", (long long)v->v.i);
	else if (v->type == ARR_DOC_BOOL)
		fputs(v->v.b ? "1" : "0", f);
	else if (isfinite(v->v.n))
		fprintf(f, "%.17g", v->v.n);
	/* non-finite: an empty field, which DuckDB and pandas read as null */
	fputc(',', f);
	csv_field(f, unit);
	fputs("\r\n", f);
	return ferror(f) ? -1 : 0;
}

int arr_report_write_csv(FILE *f, const struct arr_doc *report)
{
	fputs("trace,allocator,section,metric,value,unit\r\n", f);
	int rc = arr_report_rows(report, csv_row, f);
	if (rc || ferror(f))
		return ARR_EIO;
	return 0;
}

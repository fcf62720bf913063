/*
 * text.c - the terminal form of an analysis document (allocrr/analysis.h,
 * arr_doc_render_text): a summary a performance engineer reads in one
 * screen, not a dump of every key. Per trace: headline lines (calls, peak
 * live, leaks, temporaries, calloc, cross-thread frees, RSS), the size and
 * lifetime histograms side by side (a line per log2 bucket, with a bar),
 * the top sizes and leaks tables, the call sites (traces with stacks), then
 * the allocators as columns, the best value of each row marked; after the
 * traces, the checks. Everything else
 * (timelines, churn, the thread matrix, the remaining keys) is in --json and
 * report.html; the last line says so.
 *
 * It reads the schema's stable keys (docs/report.md) and leaves out a line
 * whose keys are missing, so partial documents (--what, trace-only) render.
 * Output depends only on the document: tests compare it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "allocrr/analysis.h"

#define LABEL_W 13   /* headline labels */
#define BAR_W 20     /* histogram bars */
#define MAX_LINES 72 /* lines of one side-by-side block */
#define LINE_CAP 160
#define TOP_ROWS 8    /* rows of the top sizes and leaks tables */
#define MAX_ALLOCS 12 /* allocator columns (more: the first ones, and a note) */
#define MAX_CHECKS 20 /* broken checks listed one by one */
#define MAX_PHASES 10

/* ---- values ---- */

static int get_num(const struct arr_doc *d, const char *path, double *out)
{
	return d && arr_doc_as_num(arr_doc_path(d, path), out) == 0;
}

/* the value at path, or dflt */
static double num_or(const struct arr_doc *d, const char *path, double dflt)
{
	double v;
	return get_num(d, path, &v) ? v : dflt;
}

static const char *str_at(const struct arr_doc *d, const char *path)
{
	return d ? arr_doc_as_str(arr_doc_path(d, path)) : NULL;
}

static size_t arr_len(const struct arr_doc *d, const char *path)
{
	const struct arr_doc *a = d ? arr_doc_path(d, path) : NULL;
	return a && a->type == ARR_DOC_ARRAY ? a->len : 0;
}

/* ---- units ---- */

static const char *fmt_bytes(char *buf, size_t cap, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int neg = b < 0, u = 0;
	double v = neg ? -b : b;
	while (v >= 1024 && u < 5)
		v /= 1024, u++;
	if (u && u < 5 && v >= 1023.95) /* 1,048,572 B: "1.0 MiB", not "1024.0 KiB" (a column too wide) */
		v /= 1024, u++;
	/* whole numbers (4 KiB, the log2 buckets) without a decimal */
	snprintf(buf, cap, u && v != floor(v) ? "%s%.1f %s" : "%s%.0f %s", neg ? "-" : "", v, units[u]);
	return buf;
}

static const char *fmt_ns(char *buf, size_t cap, double ns)
{
	if (ns < 1e3)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, cap, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	return buf;
}

/* an integer with thousands separators: 1,702,276 */
static const char *fmt_count(char *buf, size_t cap, double v)
{
	char raw[32];
	snprintf(raw, sizeof raw, "%.0f", v < 0 ? -v : v);
	size_t n = strlen(raw), o = 0;
	if (v < 0 && o + 1 < cap)
		buf[o++] = '-';
	for (size_t i = 0; i < n && o + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}

/* a rate: 2.2 M/s */
/* "block" or "blocks" after a count */
static const char *pl(double n, const char *word)
{
	static char buf[4][32];
	static int k;
	char *b = buf[k++ & 3];
	snprintf(b, sizeof buf[0], "%s%s", word, n == 1 ? "" : "s");
	return b;
}

static const char *fmt_rate(char *buf, size_t cap, double v)
{
	if (v >= 1e9)
		snprintf(buf, cap, "%.1f G/s", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, cap, "%.1f M/s", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, cap, "%.1f k/s", v / 1e3);
	else
		snprintf(buf, cap, "%.0f /s", v);
	return buf;
}

/* ---- blocks: lines of text set side by side ---- */

struct block {
	char line[MAX_LINES][LINE_CAP];
	int n, width;
};

static void __attribute__((format(printf, 2, 3))) block_add(struct block *b, const char *fmt, ...)
{
	if (b->n >= MAX_LINES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->line[b->n], LINE_CAP, fmt, ap);
	va_end(ap);
	int w = (int)strlen(b->line[b->n]);
	if (w > b->width)
		b->width = w;
	b->n++;
}

/* blocks side by side, gap spaces apart */
static void blocks_print(FILE *f, struct block *const *bs, int nb, int gap)
{
	int rows = 0;
	for (int i = 0; i < nb; i++)
		if (bs[i]->n > rows)
			rows = bs[i]->n;
	for (int r = 0; r < rows; r++) {
		char out[LINE_CAP * 4];
		int o = 0;
		for (int i = 0; i < nb && o < (int)sizeof out; i++) {
			const char *s = r < bs[i]->n ? bs[i]->line[r] : "";
			int w = i == nb - 1 ? 0 : bs[i]->width + gap;
			o += snprintf(out + o, sizeof out - (size_t)o, "%-*s", w, s);
		}
		if (o > (int)sizeof out - 1)
			o = (int)sizeof out - 1;
		while (o && out[o - 1] == ' ')
			out[--o] = 0;
		fprintf(f, "%s\n", out);
	}
}

/* ---- headline ---- */

static void headline(FILE *f, const char *label, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void headline(FILE *f, const char *label, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(f, "%-*s", LABEL_W, label);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	va_end(ap);
}

static void trace_headlines(FILE *f, const struct arr_doc *tr)
{
	char a[48], b[48], c[48], d[48], e[48];
	double v, w;
	const struct arr_doc *tinfo = arr_doc_get(tr, "trace");
	const char *path = str_at(tinfo, "path"), *argv = str_at(tinfo, "argv"), *ending = str_at(tinfo, "ending");
	fprintf(f, "== %s", path ? path : "trace");
	if (argv && *argv) /* long command lines cut: the JSON has them whole */
		fprintf(f, strlen(argv) > 72 ? ": %.69s..." : ": %s", argv);
	if (get_num(tinfo, "pid", &v))
		fprintf(f, " (pid %.0f)", v);
	fputs(" ==\n", f);
	const struct arr_doc *part = arr_doc_get(tinfo, "partial");
	if (part && part->type == ARR_DOC_BOOL && part->v.b)
		headline(f, "partial", "the trace is cut at offset %.0f: what follows is the run up to there",
			 num_or(tinfo, "cut_at", 0));

	double dur = num_or(tinfo, "duration_ns", num_or(tr, "summary.duration_ns", -1));
	if (dur >= 0 || ending) {
		char status[32] = "";
		if (ending && !strcmp(ending, "exit") && get_num(tinfo, "status", &v))
			snprintf(status, sizeof status, " %.0f", v);
		fprintf(f, "%-*s%s", LABEL_W, "duration", dur >= 0 ? fmt_ns(a, sizeof a, dur) : "-");
		if (ending)
			fprintf(f, ", %s%s", ending, status);
		if (get_num(tinfo, "events", &v))
			fprintf(f, ", %s events", fmt_count(b, sizeof b, v));
		fputc('\n', f);
	}

	const struct arr_doc *sum = arr_doc_get(tr, "summary");
	if (get_num(sum, "calls", &v)) {
		fprintf(f, "%-*s%s", LABEL_W, "calls", fmt_count(a, sizeof a, v));
		if (get_num(sum, "calls_per_s", &w) && w > 0)
			fprintf(f, " (%s)", fmt_rate(b, sizeof b, w));
		if (get_num(sum, "failed", &w))
			fprintf(f, ", %s failed", fmt_count(b, sizeof b, w));
		fputc('\n', f);
		/* the functions called, wrapped */
		const struct arr_doc *ops = arr_doc_get(sum, "ops");
		int col = 0;
		for (size_t i = 0; ops && i < ops->len; i++) {
			if (ops->items[i]->type != ARR_DOC_INT || !ops->items[i]->v.i ||
			    !arr_op_is_call(arr_op_from_name(ops->keys[i])))
				continue;
			char item[96];
			int n = snprintf(item, sizeof item, "%s %s", ops->keys[i],
					 fmt_count(b, sizeof b, (double)ops->items[i]->v.i));
			/* free(NULL) is a call that releases nothing: say how many, so a
			 * count of frees far above the allocations reads right */
			if (!strcmp(ops->keys[i], "free") && get_num(sum, "null_frees", &w) && w > 0)
				n += snprintf(item + n, sizeof item - (size_t)n, " (%s of NULL)",
					      fmt_count(b, sizeof b, w));
			if (col && col + n + 2 > 100) {
				fputc('\n', f);
				col = 0;
			}
			col += col ? fprintf(f, ", %s", item) : fprintf(f, "%-*s%s", LABEL_W, "", item);
		}
		if (col)
			fputc('\n', f);
	}
	if (get_num(sum, "bytes_requested", &v)) {
		fprintf(f, "%-*s%s", LABEL_W, "requested", fmt_bytes(a, sizeof a, v));
		if (get_num(sum, "threads", &w))
			fprintf(f, " by %.0f thread%s", w, w == 1 ? "" : "s");
		fputc('\n', f);
	}

	const struct arr_doc *live = arr_doc_get(tr, "live");
	if (get_num(live, "peak_bytes", &v)) {
		fprintf(f, "%-*s%s at %s (most blocks at once: %s)", LABEL_W, "peak live", fmt_bytes(a, sizeof a, v),
			fmt_ns(c, sizeof c, num_or(live, "peak_t", 0)),
			fmt_count(b, sizeof b, num_or(live, "peak_blocks", 0)));
		if (get_num(live, "final_bytes", &w))
			fprintf(f, "; at the end %s in %s %s", fmt_bytes(d, sizeof d, w),
				fmt_count(e, sizeof e, num_or(live, "final_blocks", 0)),
				pl(num_or(live, "final_blocks", 0), "block"));
		fputc('\n', f);
	}

	const struct arr_doc *lk = arr_doc_get(tr, "leaks");
	if (get_num(lk, "bytes", &v)) {
		fprintf(f, "%-*s%s in %s %s", LABEL_W, "leaks", fmt_bytes(a, sizeof a, v),
			fmt_count(b, sizeof b, num_or(lk, "blocks", 0)), pl(num_or(lk, "blocks", 0), "block"));
		if (num_or(lk, "lost_by_failed_realloc.count", 0) > 0)
			fprintf(f, "; %s lost by %.0f failed realloc",
				fmt_bytes(c, sizeof c, num_or(lk, "lost_by_failed_realloc.bytes", 0)),
				num_or(lk, "lost_by_failed_realloc.count", 0));
		double fc = num_or(lk, "failed_calls.total", 0);
		if (fc > 0)
			fprintf(f, "; failed calls %.0f (overflow %.0f, out of memory %.0f, other %.0f)", fc,
				num_or(lk, "failed_calls.overflow", 0), num_or(lk, "failed_calls.out_of_memory", 0),
				fc - num_or(lk, "failed_calls.overflow", 0) -
					num_or(lk, "failed_calls.out_of_memory", 0));
		fputc('\n', f);
	}

	const struct arr_doc *lt = arr_doc_get(tr, "lifetimes");
	if (get_num(lt, "temporary.count", &v))
		headline(f, "temporary", "%s %s (%.1f%%), %s: freed before their thread's next allocation",
			 fmt_count(a, sizeof a, v), pl(v, "allocation"), 100 * num_or(lt, "temporary.fraction", 0),
			 fmt_bytes(b, sizeof b, num_or(lt, "temporary.bytes", 0)));

	const struct arr_doc *z = arr_doc_get(tr, "zeroing");
	if (get_num(z, "calloc_calls", &v) && v == 0) {
		headline(f, "calloc", "none called");
	} else if (get_num(z, "calloc_calls", &v)) {
		fprintf(f, "%-*s%s %s, %s: fresh %s, reused %s", LABEL_W, "calloc", fmt_count(a, sizeof a, v),
			pl(v, "call"), fmt_bytes(b, sizeof b, num_or(z, "calloc_bytes", 0)),
			fmt_bytes(c, sizeof c, num_or(z, "fresh_bytes", 0)),
			fmt_bytes(d, sizeof d, num_or(z, "reused_bytes", 0)));
		if (num_or(z, "mmap_calls", 0) > 0)
			fprintf(f, ", mmapped %s", fmt_bytes(e, sizeof e, num_or(z, "mmap_bytes", 0)));
		fputc('\n', f);
		/* under 1% of the bytes, zeroing's three replays differ by their noise alone */
		double req = num_or(tr, "summary.bytes_requested", 0), zb = num_or(z, "calloc_bytes", 0);
		if (req > 0 && zb < req / 100)
			headline(f, "", "calloc is %.2g%% of the bytes requested: the zeroing replays differ by noise",
				 100 * zb / req);
		if (num_or(z, "large_malloc.calls", 0) > 0)
			headline(f, "large malloc", "%s %s >= %s, %s: fresh %s, reused %s",
				 fmt_count(a, sizeof a, num_or(z, "large_malloc.calls", 0)),
				 pl(num_or(z, "large_malloc.calls", 0), "call"),
				 fmt_bytes(b, sizeof b, num_or(z, "large_malloc.min_size", 0)),
				 fmt_bytes(c, sizeof c, num_or(z, "large_malloc.bytes", 0)),
				 fmt_bytes(d, sizeof d, num_or(z, "large_malloc.fresh_bytes", 0)),
				 fmt_bytes(e, sizeof e, num_or(z, "large_malloc.reused_bytes", 0)));
	}

	const struct arr_doc *th = arr_doc_get(tr, "threads");
	if (get_num(th, "cross_frees.count", &v))
		headline(f, "cross-thread", "%s %s of another thread's blocks, %s (%.0f thread %s)",
			 fmt_count(a, sizeof a, v), pl(v, "free"),
			 fmt_bytes(b, sizeof b, num_or(th, "cross_frees.bytes", 0)), num_or(th, "cross_frees.pairs", 0),
			 pl(num_or(th, "cross_frees.pairs", 0), "pair"));

	const struct arr_doc *rss = arr_doc_path(tr, "rss.recorded");
	if (get_num(rss, "samples", &v)) {
		if (v == 0) {
			headline(f, "RSS", "not sampled (record with --rss-interval)");
		} else {
			fprintf(f, "%-*speak %s at %s", LABEL_W, "RSS", fmt_bytes(a, sizeof a, num_or(rss, "peak", 0)),
				fmt_ns(b, sizeof b, num_or(rss, "peak_t", 0)));
			if (get_num(rss, "live_at_peak", &w))
				fprintf(f, " (live %s)", fmt_bytes(c, sizeof c, w));
			fprintf(f, ", final %s", fmt_bytes(d, sizeof d, num_or(rss, "final", 0)));
			/* a rate over a run of less than a second is an extrapolation (873 MiB/s from
			 * two samples 76 us apart): say the change and the time instead */
			double span = num_or(rss, "span_ns", 0), g;
			if (v < 2 || !get_num(rss, "growth_bytes_per_s", &g))
				fprintf(f, ", one sample\n");
			else if (span < 1e9)
				fprintf(f, ", %s%s in %s, %.0f samples\n",
					num_or(rss, "final", 0) < num_or(rss, "first", 0) ? "-" : "+",
					fmt_bytes(e, sizeof e, fabs(num_or(rss, "final", 0) - num_or(rss, "first", 0))),
					fmt_ns(b, sizeof b, span), v);
			else
				fprintf(f, ", growth %s/s, %.0f samples\n", fmt_bytes(e, sizeof e, g), v);
			/* the samples miss a spike between two of them; the high-water mark does not */
			if (get_num(rss, "true_peak", &w)) {
				double over = w - num_or(rss, "peak", 0);
				if (over > 0)
					headline(
						f, "",
						"true peak %s (the kernel's high-water mark), %s above the sampled peak",
						fmt_bytes(a, sizeof a, w), fmt_bytes(b, sizeof b, over));
				else
					headline(
						f, "",
						"true peak %s: the sampled peak (the kernel's high-water mark is no higher)",
						fmt_bytes(a, sizeof a, w));
			}
			if (get_num(rss, "unexplained_peak", &w) && w > 0) {
				char gb[48];
				double base = num_or(rss, "baseline", 0),
				       grown = num_or(rss, "unexplained_growth_peak", 0);
				headline(
					f, "",
					"RSS the live heap does not explain: up to %s at %s (%s above the first sample's %s: code, libraries, stacks)",
					fmt_bytes(a, sizeof a, w),
					fmt_ns(b, sizeof b, num_or(rss, "unexplained_peak_t", 0)),
					grown > 0 ? fmt_bytes(gb, sizeof gb, grown) : "none",
					fmt_bytes(e, sizeof e, base > 0 ? base : 0));
			}
		}
	}
}

/* ---- histograms ---- */

/* A log2 histogram's counts as bars; lo labels in bytes or ns. */
static void histogram(struct block *b, const char *title, const struct arr_doc *arr, int ns)
{
	block_add(b, "%s", title);
	if (!arr || arr->type != ARR_DOC_ARRAY || !arr->len) {
		block_add(b, "  (none)");
		return;
	}
	double max = 0;
	for (size_t i = 0; i < arr->len; i++)
		max = fmax(max, num_or(arr->items[i], "count", 0));
	for (size_t i = 0; i < arr->len && b->n < MAX_LINES; i++) {
		char lo[32], cnt[32], bar[BAR_W + 1];
		double c = num_or(arr->items[i], "count", 0), l = num_or(arr->items[i], "lo", 0);
		/* the empty buckets between two others, so a gap shows as one
		 * (the document lists the non-empty ones; not below the first
		 * non-zero bucket: the clock's resolution leaves those empty) */
		double plo = i ? num_or(arr->items[i - 1], "lo", 0) : 0,
		       phi = i ? num_or(arr->items[i - 1], "hi", 0) : 0;
		for (double g = phi; i && plo > 0 && g > 0 && g < l && b->n < MAX_LINES; g *= 2) {
			if (ns)
				fmt_ns(lo, sizeof lo, g);
			else
				fmt_bytes(lo, sizeof lo, g);
			block_add(b, "  >= %9s %-*s %s", lo, BAR_W, "", "0");
		}
		if (ns)
			fmt_ns(lo, sizeof lo, l);
		else
			fmt_bytes(lo, sizeof lo, l);
		int w = max > 0 ? (int)lround(c / max * BAR_W) : 0;
		if (w == 0 && c > 0)
			w = 1;
		memset(bar, '#', (size_t)w);
		bar[w] = 0;
		block_add(b, "  >= %9s %-*s %s", lo, BAR_W, bar, fmt_count(cnt, sizeof cnt, c));
	}
}

/* ---- the top tables ---- */

/* A requested size, exact under 1 MiB ("4,104 B", "131,064 B"): rounded, sizes a few bytes apart
 * read alike ("4.0 KiB" beside "4 KiB", "128.0 KiB" beside "128 KiB") and the table no longer
 * says which size it is. */
static const char *fmt_size(char *buf, size_t cap, double b)
{
	if (b >= 1024 * 1024 || b < 1024)
		return fmt_bytes(buf, cap, b);
	char n[32];
	snprintf(buf, cap, "%s B", fmt_count(n, sizeof n, b));
	return buf;
}

static void top_sizes(struct block *b, const struct arr_doc *tr)
{
	const struct arr_doc *top = arr_doc_path(tr, "sizes.top");
	block_add(b, "top sizes");
	block_add(b, "  %9s %9s", "size", "count");
	for (size_t i = 0; top && top->type == ARR_DOC_ARRAY && i < top->len && i < TOP_ROWS; i++) {
		char s[32], c[32];
		block_add(b, "  %9s %9s", fmt_size(s, sizeof s, num_or(top->items[i], "size", 0)),
			  fmt_count(c, sizeof c, num_or(top->items[i], "count", 0)));
	}
}

static void leak_tables(struct block *by_size, struct block *largest, const struct arr_doc *lk)
{
	const struct arr_doc *bs = arr_doc_get(lk, "by_size"), *lg = arr_doc_get(lk, "largest");
	block_add(by_size, "leaks by size");
	block_add(by_size, "  %9s %7s %9s", "size", "blocks", "bytes");
	for (size_t i = 0; bs && bs->type == ARR_DOC_ARRAY && i < bs->len && i < TOP_ROWS; i++) {
		char s[32], n[32], y[32];
		block_add(by_size, "  %9s %7s %9s", fmt_size(s, sizeof s, num_or(bs->items[i], "size", 0)),
			  fmt_count(n, sizeof n, num_or(bs->items[i], "blocks", 0)),
			  fmt_bytes(y, sizeof y, num_or(bs->items[i], "bytes", 0)));
	}
	block_add(largest, "largest leaks");
	block_add(largest, "  %9s %-7s %7s %9s", "size", "by", "tid", "at");
	for (size_t i = 0; lg && lg->type == ARR_DOC_ARRAY && i < lg->len && i < TOP_ROWS; i++) {
		char s[32], t[32];
		const char *op = str_at(lg->items[i], "op");
		block_add(largest, "  %9s %-7s %7.0f %9s", fmt_size(s, sizeof s, num_or(lg->items[i], "size", 0)),
			  op ? op : "-", num_or(lg->items[i], "tid", 0),
			  fmt_ns(t, sizeof t, num_or(lg->items[i], "t", 0)));
	}
}

/*
 * A C++ name as heaptrack shows it, template arguments folded to "<>"
 * ("std::vector<int, std::allocator<int> >::push_back(int const&)" ->
 * "std::vector<>::push_back(int const&)"); "operator<", "operator<<" and
 * "operator->" are no templates. Still wider than room: the parameters
 * folded too ("std::vector<>::push_back()"). The JSON keeps the full name.
 */
static void short_name(const char *in, char *out, size_t cap, int room)
{
	size_t k = 0;
	int depth = 0;
	for (const char *p = in; *p && k + 1 < cap; p++) {
		if (*p == '<' || *p == '>') {
			const char *q = p;
			while (q > in && (q[-1] == '<' || q[-1] == '>' || q[-1] == '-'))
				q--;
			if (q - in >= 8 && !strncmp(q - 8, "operator", 8)) {
				if (!depth)
					out[k++] = *p;
				continue;
			}
		}
		if (*p == '<') {
			if (!depth++)
				out[k++] = '<';
		} else if (*p == '>' && depth) {
			if (!--depth)
				out[k++] = '>';
		} else if (!depth) {
			out[k++] = *p;
		}
	}
	out[k] = 0;
	if ((int)k <= room)
		return;
	char *o = out; /* fold "(...)" at depth 0 to "()", keep what follows (" const", clones) */
	depth = 0;
	for (const char *p = out; *p; p++) {
		if (*p == '(' && !depth++)
			*o++ = '(';
		else if (*p == ')' && depth && !--depth)
			*o++ = ')';
		else if (!depth)
			*o++ = *p;
	}
	*o = 0;
}

/* One table of call sites (sites.<key>), when the trace was recorded with stacks;
 * a site outside the program's own sources (a C++ container's allocate) is
 * followed by the line "from" its caller there; a site reached through an
 * allocation wrapper says "via" it. */
static void sites_table(FILE *f, const struct arr_doc *tr, const char *key, const char *title, int temps)
{
	const struct arr_doc *t = arr_doc_path(tr, "sites");
	const struct arr_doc *rows = t ? arr_doc_get(t, key) : NULL;
	if (!rows || rows->type != ARR_DOC_ARRAY || !rows->len)
		return;
	int est = arr_doc_get(t, "sampled") != NULL;
	fprintf(f, "\ncall sites by %s%s\n  %-40s %-24s %9s %9s %9s %9s %9s\n", title,
		est ? " (estimates: sampled stacks)" : "", "function", "where", "at peak", "leaked", "allocated",
		"calls", temps ? "temporary" : "frag.");
	for (size_t i = 0; i < rows->len && i < TOP_ROWS; i++) {
		const struct arr_doc *r = rows->items[i];
		const char *fn = str_at(r, "function"), *file = str_at(r, "file"), *into = str_at(r, "inlined_into");
		char name[600], where[256], a[32], b[32], c[32], d[32], e[32], sfn[256], sinto[256];
		short_name(fn ? fn : "?", sfn, sizeof sfn, 40);
		short_name(into ? into : "", sinto, sizeof sinto, 40 - 3 - (int)strlen(sfn));
		snprintf(name, sizeof name, "%s%s%s", sfn, into ? " < " : "", sinto);
		const char *via = str_at(r, "via"); /* called through an allocation wrapper: which, when it fits */
		if (via && strlen(name) + 5 + strlen(via) <= 40)
			snprintf(name + strlen(name), sizeof name - strlen(name), " via %s", via);
		const char *base = file ? strrchr(file, '/') : NULL, *mod = str_at(r, "module");
		const char *off = str_at(r, "module_offset"), *mbase = mod ? strrchr(mod, '/') : NULL;
		if (file) /* no lines: the return address in its module, for addr2line or objdump */
			snprintf(where, sizeof where, "%s:%.0f", base ? base + 1 : file, num_or(r, "line", 0));
		else if (mod && off)
			snprintf(where, sizeof where, "%s+%s", mbase ? mbase + 1 : mod, off);
		else
			snprintf(where, sizeof where, "%s", "-");
		fprintf(f, "  %-40.40s %-24.24s %9s %9s %9s %9s %9s\n", name, where,
			fmt_bytes(a, sizeof a, num_or(r, "live_at_peak_bytes", 0)),
			fmt_bytes(b, sizeof b, num_or(r, "leaked_bytes", 0)),
			fmt_bytes(c, sizeof c, num_or(r, "bytes", 0)), fmt_count(d, sizeof d, num_or(r, "allocs", 0)),
			temps ? fmt_count(e, sizeof e, num_or(r, "temporaries", 0))
			      : fmt_bytes(e, sizeof e, num_or(r, "fragmentation_bytes", 0)));
		const struct arr_doc *cl = arr_doc_get(r, "caller");
		const char *cfn = cl ? str_at(cl, "function") : NULL, *cfile = cl ? str_at(cl, "file") : NULL;
		if (cfn && cfile) {
			const char *cb = strrchr(cfile, '/');
			short_name(cfn, sfn, sizeof sfn, 60);
			fprintf(f, "    from %s %s:%.0f\n", sfn, cb ? cb + 1 : cfile, num_or(cl, "line", 0));
		}
	}
}

static void phases_table(FILE *f, const struct arr_doc *ph)
{
	if (!ph || ph->type != ARR_DOC_ARRAY || !ph->len)
		return;
	fprintf(f, "\nphases\n  %-20s %10s %10s %12s %10s %12s\n", "name", "from", "to", "calls", "peak live",
		"RSS growth");
	for (size_t i = 0; i < ph->len && i < MAX_PHASES; i++) {
		const struct arr_doc *p = ph->items[i];
		const char *name = str_at(p, "name");
		char a[32], b[32], c[32], d[32], e[32];
		fmt_bytes(e, sizeof e, num_or(p, "rss_growth_bytes_per_s", 0));
		strncat(e, "/s", sizeof e - strlen(e) - 1);
		fprintf(f, "  %-20.20s %10s %10s %12s %10s %12s\n", name ? name : "-",
			fmt_ns(a, sizeof a, num_or(p, "from_ns", 0)), fmt_ns(b, sizeof b, num_or(p, "to_ns", 0)),
			fmt_count(c, sizeof c, num_or(p, "calls", 0)),
			fmt_bytes(d, sizeof d, num_or(p, "peak_live", 0)), num_or(p, "rss_samples", 0) > 1 ? e : "-");
	}
	if (ph->len > MAX_PHASES)
		fprintf(f, "  ... %zu more\n", ph->len - MAX_PHASES);
}

/* ---- allocators side by side ---- */

/* K_FRAG: bytes that fall below 0 when live bytes are not resident (touch none,
 * pages resident before the baseline): "-", no figure, since a negative waste
 * reads as a gain */
enum kind { K_BYTES, K_FRAG, K_NS, K_RATIO, K_FAULTS };

struct cell {
	char s[48];
	double key; /* what "best" compares: lower is better; NAN: no value */
};

static void cell_value(struct cell *c, enum kind k, double v)
{
	c->key = v;
	switch (k) {
	case K_FRAG:
		if (v < 0) {
			c->key = NAN;
			strcpy(c->s, "-");
			break;
		}
		/* fall through */
	case K_BYTES:
		fmt_bytes(c->s, sizeof c->s, v);
		break;
	case K_NS:
		fmt_ns(c->s, sizeof c->s, v);
		break;
	case K_RATIO:
		snprintf(c->s, sizeof c->s, "%.3f", v);
		break;
	case K_FAULTS:
		fmt_count(c->s, sizeof c->s, v);
		break;
	}
}

/* a latency figure; below the timer's resolution it says "<N" */
static void lat(char *buf, size_t cap, double v, double res)
{
	if (res > 0 && v < res)
		snprintf(buf, cap, "<%.0f", res);
	else if (v >= 1e6)
		snprintf(buf, cap, "%.1fm", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, cap, "%.1fu", v / 1e3);
	else
		snprintf(buf, cap, "%.0f", v);
}

struct row {
	char label[40];
	struct cell c[MAX_ALLOCS];
	int mark; /* mark the lowest */
};

/* A column's heading: the allocator's name on one line, or, when it is wider
 * than the column's figures, broken after its ':' and ','s into lines no
 * wider than the widest of figures and pieces (a variant matrix names
 * columns "glibc:mmap_threshold=65536,trim_threshold=131072"). */
#define HEAD_LINES 8
struct heading {
	char line[HEAD_LINES][48];
	int n, width;
};

static void heading(struct heading *h, const char *name, int width)
{
	h->n = 0;
	h->width = width;
	size_t len = strlen(name);
	if ((int)len <= width || len >= sizeof h->line[0] * HEAD_LINES / 2) {
		snprintf(h->line[0], sizeof h->line[0], "%s", name);
		h->n = 1;
		if ((int)len > h->width)
			h->width = (int)len;
		return;
	}
	const char *pieces[64];
	size_t plen[64];
	int np = 0;
	for (const char *p = name; *p && np < 64;) {
		size_t n = strcspn(p, ":,");
		n += p[n] != 0; /* the separator stays on its piece's line */
		pieces[np] = p;
		plen[np++] = n;
		if ((int)n > h->width)
			h->width = (int)n;
		p += n;
	}
	for (int i = 0; i < np;) { /* greedy: as many pieces a line as fit */
		size_t used = 0;
		char *l = h->line[h->n < HEAD_LINES ? h->n : HEAD_LINES - 1];
		l[0] = 0;
		while (i < np && (used == 0 || used + plen[i] <= (size_t)h->width) &&
		       used + plen[i] < sizeof h->line[0]) {
			memcpy(l + used, pieces[i], plen[i]);
			used += plen[i++];
			l[used] = 0;
		}
		if (!used) { /* a piece longer than a line: cut it */
			memcpy(l, pieces[i], sizeof h->line[0] - 1);
			l[sizeof h->line[0] - 1] = 0;
			i++;
		}
		if (h->n < HEAD_LINES)
			h->n++;
	}
}

/* The table in blocks of columns no wider than TABLE_WIDTH together (the
 * label column repeated), each column headed by its allocator's name. */
#define TABLE_WIDTH 120
static void print_rows(FILE *f, const struct row *rows, int nrows, const char *const *names, int na)
{
	static struct heading hd[MAX_ALLOCS];
	int lw = 0;
	for (int r = 0; r < nrows; r++)
		if ((int)strlen(rows[r].label) > lw)
			lw = (int)strlen(rows[r].label);
	for (int a = 0; a < na; a++) {
		int w = 0;
		for (int r = 0; r < nrows; r++)
			if ((int)strlen(rows[r].c[a].s) + 1 > w)
				w = (int)strlen(rows[r].c[a].s) + 1;
		heading(&hd[a], names[a], w);
	}
	for (int first = 0, last; first < na; first = last) {
		int used = 2 + lw;
		for (last = first; last < na && (last == first || used + 2 + hd[last].width <= TABLE_WIDTH); last++)
			used += 2 + hd[last].width;
		if (first)
			fputc('\n', f);
		int nl = 1;
		for (int a = first; a < last; a++)
			if (hd[a].n > nl)
				nl = hd[a].n;
		for (int l = 0; l < nl; l++) { /* headings end on the same line */
			fprintf(f, "  %-*s", lw, "");
			for (int a = first; a < last; a++) {
				int k = l - (nl - hd[a].n);
				fprintf(f, "  %*s", hd[a].width, k >= 0 ? hd[a].line[k] : "");
			}
			fputc('\n', f);
		}
		for (int r = 0; r < nrows; r++) {
			int best = -1, distinct = 0;
			if (rows[r].mark)
				for (int a = 0; a < na; a++) {
					if (isnan(rows[r].c[a].key))
						continue;
					if (best >= 0 && rows[r].c[a].key != rows[r].c[best].key)
						distinct = 1;
					if (best < 0 || rows[r].c[a].key < rows[r].c[best].key)
						best = a;
				}
			fprintf(f, "  %-*s", lw, rows[r].label);
			for (int a = first; a < last; a++) {
				char s[56];
				snprintf(s, sizeof s, "%s%s", rows[r].c[a].s, a == best && distinct ? "*" : " ");
				fprintf(f, "  %*s", hd[a].width, s);
			}
			fputc('\n', f);
		}
	}
}

/* text as lines of at most 100 columns, broken at spaces, the first after "  ", the others indented */
static void wrapped(FILE *f, const char *text, int indent)
{
	int col = 2, first = 1;
	fputs("  ", f);
	for (const char *p = text; *p;) {
		while (*p == ' ')
			p++;
		size_t w = strcspn(p, " ");
		if (!w)
			break;
		if (!first && col + 1 + (int)w > 100) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, w, f);
		col += (int)w;
		p += w;
		first = 0;
	}
	fputc('\n', f);
}

/* Why an allocator's peak / ideal is "-": the replay left its blocks unwritten, or the trace is too
 * small (under 16 pages live) for RSS, counted in pages above the engine's own, to weigh it.
 * One note per reason, naming the allocators ("every allocator" when it is all of them). */
static void ideal_notes(FILE *f, const struct arr_doc *al, int na)
{
	char who[2][512] = {"", ""};
	int count[2] = {0, 0};
	for (int a = 0; a < na; a++) {
		const struct arr_doc *e = al->items[a];
		const struct arr_doc *poi = arr_doc_path(e, "fragmentation.peak_over_ideal");
		double ideal, peak;
		if (!poi || poi->type != ARR_DOC_NULL || !get_num(e, "fragmentation.ideal_rss", &ideal) || ideal <= 0)
			continue;
		const char *touch = str_at(e, "fragmentation.touch"), *name = str_at(e, "allocator");
		int tiny = ideal < 16 * 4096 || (get_num(e, "fragmentation.peak_rss", &peak) && peak < 4096);
		int k = touch && !strcmp(touch, "none") ? 0 : tiny ? 1 : -1;
		if (k < 0)
			continue;
		count[k]++;
		if (strlen(who[k]) + strlen(name ? name : "?") + 3 < sizeof who[k])
			strcat(strcat(who[k], *who[k] ? ", " : ""), name ? name : "?");
	}
	char id[32], line[1024];
	fmt_bytes(id, sizeof id, num_or(arr_doc_at(al, 0), "fragmentation.ideal_rss", 0));
	if (count[0] || count[1]) /* apart from the table's last block of columns */
		fputc('\n', f);
	for (int k = 0; k < 2; k++) {
		if (!count[k])
			continue;
		const char *names = count[k] == na && na > 1 ? "every allocator" : who[k];
		if (k == 0)
			snprintf(line, sizeof line,
				 "no peak / ideal: %s replayed with touch none (blocks left unwritten, "
				 "as the program left most of its %s peak live): RSS is the allocator's own pages",
				 names, id);
		else
			snprintf(line, sizeof line,
				 "no peak / ideal: %s: too small a trace (%s live at its peak) for RSS, "
				 "counted in pages above the replay engine's own, to weigh it (it may fit in pages "
				 "already resident)",
				 names, id);
		wrapped(f, line, 21);
	}
}

static void allocators_table(FILE *f, const struct arr_doc *al)
{
	if (!al || al->type != ARR_DOC_ARRAY || !al->len)
		return;
	int na = al->len < MAX_ALLOCS ? (int)al->len : MAX_ALLOCS;
	const char *names[MAX_ALLOCS];
	double runs = 0;
	for (int a = 0; a < na; a++) {
		names[a] = str_at(al->items[a], "allocator");
		if (!names[a])
			names[a] = "?";
		runs = fmax(runs, num_or(al->items[a], "runs", 0));
	}
	static struct row rows[64];
	int nr = 0;
	/* one row from a numeric key of every allocator */
#define ROW(lbl, path, kind, mk)                                  \
	do {                                                      \
		struct row *r_ = &rows[nr];                       \
		int any_ = 0;                                     \
		snprintf(r_->label, sizeof r_->label, "%s", lbl); \
		r_->mark = mk;                                    \
		for (int a = 0; a < na; a++) {                    \
			double v_;                                \
			if (get_num(al->items[a], path, &v_)) {   \
				cell_value(&r_->c[a], kind, v_);  \
				any_ = 1;                         \
			} else {                                  \
				strcpy(r_->c[a].s, "-");          \
				r_->c[a].key = NAN;               \
			}                                         \
		}                                                 \
		if (any_ && nr < 63)                              \
			nr++;                                     \
	} while (0)
	ROW("wall time", "time.wall_ns", K_NS, 1);
	{ /* min-max over the runs */
		struct row *r = &rows[nr];
		int any = 0;
		snprintf(r->label, sizeof r->label, "  min-max");
		r->mark = 0;
		for (int a = 0; a < na; a++) {
			double lo, hi;
			r->c[a].key = NAN;
			if (get_num(al->items[a], "time.wall_ns_min", &lo) &&
			    get_num(al->items[a], "time.wall_ns_max", &hi)) {
				char x[24], y[24];
				fmt_ns(x, sizeof x, lo);
				fmt_ns(y, sizeof y, hi);
				/* one unit for both: 7.8-19.7 ms */
				const char *ux = strchr(x, ' '), *uy = strchr(y, ' ');
				if (ux && uy && !strcmp(ux, uy))
					x[ux - x] = 0;
				snprintf(r->c[a].s, sizeof r->c[a].s, "%s-%s", x, y);
				any = 1;
			} else {
				strcpy(r->c[a].s, "-");
			}
		}
		if (any)
			nr++;
	}
	ROW("cpu time", "time.cpu_ns", K_NS, 1);
	ROW("minor faults", "time.minor_faults", K_FAULTS, 1);
	ROW("peak RSS", "fragmentation.peak_rss", K_BYTES, 1);
	ROW("final RSS", "fragmentation.final_rss", K_BYTES, 1);
	ROW("peak / ideal", "fragmentation.peak_over_ideal", K_RATIO, 1);
	ROW("internal frag. @peak RSS", "fragmentation.internal_bytes", K_FRAG, 1);
	ROW("external frag. @peak RSS", "fragmentation.external_bytes", K_FRAG, 1);
#undef ROW
	/* zeroing: the three replays, time and minor faults in one cell */
	static const char *const zmode[][2] = {{"zeroing: as recorded", "as_recorded"},
					       {"  calloc->malloc", "calloc_as_malloc"},
					       {"  calloc->malloc+memset", "calloc_as_malloc_memset"}};
	for (size_t m = 0; m < 3 && nr < 63; m++) {
		struct row *r = &rows[nr];
		int any = 0;
		snprintf(r->label, sizeof r->label, "%s", zmode[m][0]);
		r->mark = 1;
		for (int a = 0; a < na; a++) {
			char key[64], t[24], pf[24];
			double ns, flt;
			r->c[a].key = NAN;
			strcpy(r->c[a].s, "-");
			snprintf(key, sizeof key, "zeroing.%s_ns", zmode[m][1]);
			if (!get_num(al->items[a], key, &ns))
				continue;
			snprintf(key, sizeof key, "zeroing.%s_minor_faults", zmode[m][1]);
			if (get_num(al->items[a], key, &flt))
				snprintf(r->c[a].s, sizeof r->c[a].s, "%s, %s pf", fmt_ns(t, sizeof t, ns),
					 fmt_count(pf, sizeof pf, flt));
			else
				fmt_ns(r->c[a].s, sizeof r->c[a].s, ns);
			r->c[a].key = ns;
			any = 1;
		}
		if (any)
			nr++;
	}
	/* latency: one row per operation any allocator measured, ns */
	if (nr < 63) {
		struct row *r = &rows[nr++];
		snprintf(r->label, sizeof r->label, "latency p50/p99/p99.9");
		r->mark = 0;
		for (int a = 0; a < na; a++) {
			r->c[a].s[0] = 0;
			r->c[a].key = NAN;
		}
	}
	int lat_rows = 0;
	for (unsigned op = 1; op < ARR_OP_MAX_ && nr < 63; op++) {
		const char *name = arr_op_name(op);
		if (!name || !arr_op_is_call(op))
			continue;
		struct row *r = &rows[nr];
		int any = 0;
		snprintf(r->label, sizeof r->label, "  %s", name);
		r->mark = 1;
		for (int a = 0; a < na; a++) {
			const struct arr_doc *l = arr_doc_path(al->items[a], "latency");
			l = l ? arr_doc_get(l, name) : NULL;
			double p50, p99, p999, res = num_or(l, "resolution_ns", 0);
			r->c[a].key = NAN;
			strcpy(r->c[a].s, "-");
			if (!l || num_or(l, "count", 0) <= 0 || !get_num(l, "p50", &p50) || !get_num(l, "p99", &p99) ||
			    !get_num(l, "p999", &p999))
				continue;
			char x[16], y[16], z[16];
			lat(x, sizeof x, p50, res);
			lat(y, sizeof y, p99, res);
			lat(z, sizeof z, p999, res);
			snprintf(r->c[a].s, sizeof r->c[a].s, "%s/%s/%s", x, y, z);
			r->c[a].key = p99; /* the best: the lowest p99 */
			any = 1;
		}
		if (any) {
			nr++;
			lat_rows++;
		}
	}
	if (!lat_rows) /* no latency measured: no heading */
		nr--;
	fprintf(f, "\nallocators (%s; * lowest; pf: minor page faults; latency in ns, u = us, m = ms, best by p99)\n",
		runs > 1 ? "medians over the runs" : "one run each");
	print_rows(f, rows, nr, names, na);
	if ((int)al->len > na)
		fprintf(f, "  ... %zu more allocators in --json\n", al->len - (size_t)na);
	ideal_notes(f, al, na);
}

/* ---- checks ---- */

void arr_check_value_text(char *buf, size_t cap, const char *check, double v)
{
	char a[32], b[32];
	const char *c = check ? check : "";
	/* a limit such as 1.1 * glibc is no whole number of bytes: the same units
	 * as the value, its bytes whole (as the HTML page shows them) */
	if ((strstr(c, "rss") || strstr(c, "bytes") || strstr(c, "live") || strstr(c, "ideal") || strstr(c, "size")) &&
	    fabs(v) >= 1024 && fabs(v) < 1e18)
		snprintf(buf, cap, "%s (%s)", fmt_bytes(a, sizeof a, v), fmt_count(b, sizeof b, trunc(v)));
	else if (strstr(c, "_ns") || strstr(c, "latency") || strstr(c, "wall") || strstr(c, "cpu"))
		snprintf(buf, cap, "%s", fmt_ns(a, sizeof a, v));
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, cap, "%s", fmt_count(a, sizeof a, v));
	else
		snprintf(buf, cap, "%.4g", v);
}

static void checks(FILE *f, const struct arr_doc *ck)
{
	if (!ck || ck->type != ARR_DOC_ARRAY || !ck->len)
		return;
	size_t broken = 0;
	for (size_t i = 0; i < ck->len; i++) {
		const struct arr_doc *ok = arr_doc_get(ck->items[i], "ok");
		broken += !(ok && ok->type == ARR_DOC_BOOL && ok->v.b);
	}
	fprintf(f, "\nchecks: %zu of %zu broken\n", broken, ck->len);
	size_t shown = 0;
	for (size_t i = 0; i < ck->len; i++) { /* every broken one, with its figures */
		const struct arr_doc *c = ck->items[i], *ok = arr_doc_get(c, "ok");
		if (ok && ok->type == ARR_DOC_BOOL && ok->v.b)
			continue;
		if (shown++ == MAX_CHECKS) {
			fprintf(f, "  ... %zu more broken (report.json lists them)\n", broken - MAX_CHECKS);
			break;
		}
		const char *name = str_at(c, "check"), *trace = str_at(c, "trace"), *alloc = str_at(c, "allocator");
		char v[64] = "-", l[64] = "-";
		double x;
		if (get_num(c, "value", &x))
			arr_check_value_text(v, sizeof v, name, x);
		if (get_num(c, "limit", &x))
			arr_check_value_text(l, sizeof l, name, x);
		const char *err = str_at(c, "error"); /* not evaluated: why, instead of "value -, limit -" */
		if (err)
			fprintf(f, "  FAIL  %s  [%s%s%s]  %s\n", name ? name : "?", trace ? trace : "-",
				alloc ? ", " : "", alloc ? alloc : "", err);
		else
			fprintf(f, "  FAIL  %s  [%s%s%s]  value %s, limit %s\n", name ? name : "?", trace ? trace : "-",
				alloc ? ", " : "", alloc ? alloc : "", v, l);
	}
	/* the passed ones: a line per check, with how many traces and allocators it held for */
	for (size_t i = 0; i < ck->len; i++) {
		const char *name = str_at(ck->items[i], "check");
		if (!name)
			continue;
		size_t held = 0, all = 0, seen = 0;
		for (size_t j = 0; j < ck->len; j++) {
			const char *o = str_at(ck->items[j], "check");
			if (!o || strcmp(o, name))
				continue;
			if (j < i) {
				seen = 1;
				break;
			}
			const struct arr_doc *ok = arr_doc_get(ck->items[j], "ok");
			all++;
			held += ok && ok->type == ARR_DOC_BOOL && ok->v.b;
		}
		if (!seen && held)
			fprintf(f, "  ok    %s  (%zu of %zu)\n", name, held, all);
	}
}

/* ---- a trace ---- */

static void render_trace(FILE *f, const struct arr_doc *tr)
{
	trace_headlines(f, tr);

	static struct block h1, h2;
	h1.n = h1.width = h2.n = h2.width = 0;
	const struct arr_doc *sz = arr_doc_path(tr, "sizes.log2"), *lt = arr_doc_path(tr, "lifetimes.time_log2");
	if (sz || lt) {
		struct block *bs[2];
		int nb = 0;
		if (sz) {
			histogram(&h1, "sizes requested (log2 buckets, count)", sz, 0);
			bs[nb++] = &h1;
		}
		if (lt) {
			histogram(&h2, "lifetimes (log2 buckets, count)", lt, 1);
			bs[nb++] = &h2;
		}
		fputc('\n', f);
		blocks_print(f, bs, nb, 4);
	}

	static struct block t1, t2, t3;
	t1.n = t1.width = t2.n = t2.width = t3.n = t3.width = 0;
	struct block *bs[3];
	int nb = 0;
	if (arr_len(tr, "sizes.top")) {
		top_sizes(&t1, tr);
		bs[nb++] = &t1;
	}
	const struct arr_doc *lk = arr_doc_get(tr, "leaks");
	if (arr_len(lk, "by_size")) {
		leak_tables(&t2, &t3, lk);
		bs[nb++] = &t2;
		bs[nb++] = &t3;
	}
	if (nb) {
		fputc('\n', f);
		blocks_print(f, bs, nb, 4);
	}

	/* heaptrack_print's four lists: peak consumers, leaks, most calls, most temporary allocations */
	sites_table(f, tr, "by_live_at_peak", "live bytes at the peak", 0);
	sites_table(f, tr, "by_leaked", "leaked bytes", 0);
	sites_table(f, tr, "by_allocs", "calls", 0);
	sites_table(f, tr, "by_temporaries", "temporary allocations (freed before their thread's next allocation)", 1);
	phases_table(f, arr_doc_get(tr, "phases"));
	allocators_table(f, arr_doc_get(tr, "allocators"));
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
	} else if (doc && doc->type == ARR_DOC_OBJECT) {
		render_trace(f, doc);
	}
	checks(f, doc ? arr_doc_get(doc, "checks") : NULL);
	fputs("\n(timelines, phases' details, churn by size, the thread matrix and every other figure: --json, or "
	      "report.html)\n",
	      f);
	fflush(f);
	return ferror(f) ? ARR_EIO : 0;
}

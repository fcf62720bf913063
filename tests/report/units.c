/*
 * units.c - the report library on its own: config errors name line and
 * column (with a suggestion), the allocator matrix expands, checks parse,
 * evaluate and fail where they should, and the CSV of a hand-built report
 * holds the rows it must. End-to-end tests (real traces) are the scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/replay.h"
#include "allocrr/replay_analysis.h"
#include "report.h"

static int failures;

#define EXPECT(cond, ...)                                               \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                   \
			fputc('\n', stderr);                            \
			failures++;                                     \
		}                                                       \
	} while (0)

static int parse(const char *text, struct arr_report_config *cfg, struct arr_report_error *err)
{
	return arr_report_config_parse(cfg, "r.yaml", text, strlen(text), err);
}

/* A config that must fail at line:column with a message containing want. */
static void bad(const char *text, unsigned line, unsigned col, const char *want)
{
	struct arr_report_config cfg;
	struct arr_report_error err;
	int rc = parse(text, &cfg, &err);
	EXPECT(rc == ARR_ESYNTAX, "config should fail: %s", text);
	EXPECT(err.line == line && err.column == col, "'%s': error at %u:%u, want %u:%u (%s)", want, err.line,
	       err.column, line, col, err.msg);
	EXPECT(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
	arr_report_config_release(&cfg);
}

static void test_config(void)
{
	struct arr_report_config cfg;
	struct arr_report_error err;
	const char *good = "traces:\n"
			   "  - a.atr\n"
			   "  - {path: 'b/*.atr', children: yes}\n"
			   "allocators:\n"
			   "  - builtin\n"
			   "  - name: glibc\n"
			   "    tunables: {mmap_threshold: [65536, 1048576], trim_threshold: 131072}\n"
			   "  - {name: jemalloc, optional: true}\n"
			   "replay: {threads: serial, touch: all, samples: 500, runs: 3, zeroing: false}\n"
			   "analyses: {what: [sizes, leaks], top: 5, points: 100}\n"
			   "phases:\n"
			   "  - {name: warmup, from: 0, to: 1.5ms}\n"
			   "  - {name: tail, from_event: 100, to_event: end}\n"
			   "checks:\n"
			   "  - leaks.bytes == 0\n"
			   "  - check: peak_rss <= 1.1 * glibc\n"
			   "output: {dir: out, html: false, csv: t.csv}\n";
	int rc = parse(good, &cfg, &err);
	EXPECT(rc == 0, "good config: %s at %u:%u", err.msg, err.line, err.column);
	if (!rc) {
		EXPECT(cfg.ntraces == 2 && cfg.traces[1].children && !cfg.traces[0].children, "traces");
		EXPECT(cfg.nallocators == 4, "matrix: %zu allocators", cfg.nallocators);
		if (cfg.nallocators == 4) {
			EXPECT(!strcmp(cfg.allocators[1].spec, "glibc:mmap_threshold=65536,trim_threshold=131072"),
			       "%s", cfg.allocators[1].spec);
			EXPECT(!strcmp(cfg.allocators[2].spec, "glibc:mmap_threshold=1048576,trim_threshold=131072"),
			       "%s", cfg.allocators[2].spec);
			EXPECT(cfg.allocators[3].optional && !cfg.allocators[0].optional, "optional");
		}
		EXPECT(cfg.threads == ARR_THREADS_SERIAL && cfg.touch == ARR_TOUCH_ALL, "replay enums");
		EXPECT(cfg.samples == 500 && cfg.runs == 3 && !cfg.zeroing, "replay numbers");
		EXPECT(cfg.what == ((1u << ARR_AN_SIZES) | (1u << ARR_AN_LEAKS)), "what %x", cfg.what);
		EXPECT(cfg.top == 5 && cfg.points == 100, "top/points");
		EXPECT(cfg.nphases == 2, "phases");
		if (cfg.nphases == 2) {
			EXPECT(cfg.phases[0].to == 1500000 && !cfg.phases[0].by_events, "phase 0 to %llu",
			       (unsigned long long)cfg.phases[0].to);
			EXPECT(cfg.phases[1].by_events && cfg.phases[1].from == 100 && cfg.phases[1].to == UINT64_MAX,
			       "phase 1");
		}
		EXPECT(cfg.nchecks == 2, "checks");
		EXPECT(!strcmp(cfg.dir, "out") && !cfg.html && !strcmp(cfg.csv, "t.csv") && cfg.json, "output");
	}
	arr_report_config_release(&cfg);

	bad("traces: [a.atr]\nalocators: [glibc]\n", 2, 1, "unknown key 'alocators'; did you mean 'allocators'?");
	bad("traces: [a.atr]\nreplay:\n  samples: many\n", 3, 12, "'samples' wants a whole number");
	bad("traces: [a.atr]\nreplay: {thread: serial}\n", 2, 10,
	    "unknown key 'thread' in 'replay'; did you mean 'threads'?");
	bad("traces: [a.atr]\nreplay: {threads: paralel}\n", 2, 19, "did you mean 'parallel'?");
	bad("traces: [a.atr]\nanalyses: {what: [sizes, leeks]}\n", 2, 26,
	    "unknown analysis 'leeks'; did you mean 'leaks'?");
	bad("traces: a.atr\nchecks:\n  - leaks.bytes = 0\n", 3, 17, "use '=='");
	bad("traces: a.atr\nchecks:\n  - \"leaks.bytes <\"\n", 3, 19, "expected a number or a metric");
	bad("traces: a.atr\nchecks:\n  - leaks.bytes\n", 3, 5, "a check must compare");
	bad("traces: a.atr\nallocators: glibc\n", 2, 13, "'allocators' wants a list");
	bad("traces: a.atr\nphases:\n  - {name: x, from: 2s, to: 1s}\n", 3, 5, "ends before it starts");
	bad("traces: a.atr\nphases:\n  - {name: x, from: soon}\n", 3, 21, "wants a time");
	bad("traces: [a.atr]\ntraces: [b.atr]\n", 2, 1, "given twice");
	bad("traces: [a.atr\n", 2, 1, "did not find expected");
	bad("allocators: [glibc]\n", 1, 1, "no 'traces'");
	bad("", 1, 1, "empty config");
	bad("traces: [a]\n---\ntraces: [b]\n", 3, 1, "second YAML document");
	bad("traces: [a]\noutput: {html: }\n", 2, 16, "'html' wants a file name");
}

/* A report with one trace and two allocators, built by hand. */
static struct arr_doc *sample_report(void)
{
	struct arr_doc *r = arr_doc_object();
	arr_doc_set_str(r, "allocrr", "0.1.0");
	struct arr_doc *t = arr_doc_push_obj(arr_doc_set_arr(r, "traces"));
	arr_doc_set_str(arr_doc_set_obj(t, "trace"), "path", "x,y.atr");
	struct arr_doc *s = arr_doc_set_obj(t, "summary");
	arr_doc_set_int(s, "calls", 1000);
	arr_doc_set_int(s, "bytes_requested", 65536);
	struct arr_doc *ops = arr_doc_set_obj(s, "ops");
	arr_doc_set_int(ops, "malloc", 600);
	struct arr_doc *l = arr_doc_set_obj(t, "leaks");
	arr_doc_set_int(l, "bytes", 4096);
	arr_doc_set_int(l, "blocks", 2);
	struct arr_doc *live = arr_doc_set_obj(t, "live");
	arr_doc_set_int(live, "peak_bytes", 10000);
	struct arr_doc *tl = arr_doc_set_obj(live, "timeline");
	arr_doc_push_int(arr_doc_set_arr(tl, "t"), 5);
	struct arr_doc *als = arr_doc_set_arr(t, "allocators");
	const int64_t peak[2] = {100000, 105000};
	for (int i = 0; i < 2; i++) {
		struct arr_doc *a = arr_doc_push_obj(als);
		arr_doc_set_str(a, "allocator", i ? "builtin" : "glibc");
		struct arr_doc *f = arr_doc_set_obj(a, "fragmentation");
		arr_doc_set_int(f, "peak_rss", peak[i]);
		arr_doc_set_num(f, "peak_over_ideal", i ? 1.2 : 1.6);
		struct arr_doc *lat = arr_doc_set_obj(arr_doc_set_obj(a, "latency"), "malloc");
		arr_doc_set_int(lat, "p50", 20);
	}
	return r;
}

/* Run one check over the sample; returns how many evaluations broke. */
static int run_check(struct arr_doc *rep, const char *text, size_t want_entries, struct arr_doc **out)
{
	struct arr_report_config cfg = {0};
	struct arr_report_check ck = {0};
	size_t off;
	char msg[128];
	int rc = arr_check_parse(text, &ck.expr, &off, msg, sizeof msg);
	EXPECT(rc == 0, "check '%s' does not parse: %s at %zu", text, msg, off);
	if (rc)
		return -1;
	ck.text = (char *)text;
	cfg.checks = &ck;
	cfg.nchecks = 1;
	struct arr_doc *res = arr_doc_array();
	int broken = arr_report_run_checks(&cfg, rep, res);
	EXPECT(res->len == want_entries, "'%s': %zu evaluations, want %zu", text, res->len, want_entries);
	arr_check_free(ck.expr);
	if (out)
		*out = res;
	else
		arr_doc_free(res);
	return broken;
}

static void test_checks(void)
{
	struct arr_doc *rep = sample_report(), *res;
	EXPECT(run_check(rep, "leaks.bytes == 0", 1, &res) == 1, "leaks.bytes == 0 must break");
	double v = -1, lim = -1;
	arr_doc_as_num(arr_doc_path(res, "0.value"), &v);
	arr_doc_as_num(arr_doc_path(res, "0.limit"), &lim);
	EXPECT(v == 4096 && lim == 0, "value %g limit %g", v, lim);
	EXPECT(arr_doc_path(res, "0.allocator")->type == ARR_DOC_NULL, "trace check has no allocator");
	arr_doc_free(res);
	EXPECT(run_check(rep, "leaks.bytes <= 4KiB and leaks.blocks < 3", 1, NULL) == 0, "units and 'and'");
	EXPECT(run_check(rep, "summary.ops.malloc / summary.calls > 0.5", 1, NULL) == 0, "arithmetic");
	EXPECT(run_check(rep, "calls == 1000", 1, NULL) == 0, "a bare name finds summary.calls");
	/* per allocator, a bare allocator name is that allocator's value; the
	 * allocator named is not compared with itself: builtin's row alone */
	EXPECT(run_check(rep, "peak_rss <= 1.1 * glibc", 1, &res) == 0, "105000 <= 110000");
	lim = 0;
	arr_doc_as_num(arr_doc_path(res, "0.limit"), &lim);
	EXPECT(lim > 109999 && lim < 110001, "limit %g", lim);
	EXPECT(!strcmp(arr_doc_as_str(arr_doc_path(res, "0.allocator")), "builtin"), "allocator named");
	arr_doc_free(res);
	EXPECT(run_check(rep, "peak_rss <= 1.01 * glibc", 1, NULL) == 1, "builtin breaks 1.01x");
	EXPECT(run_check(rep, "fragmentation.peak_over_ideal < 1.5", 2, &res) == 1, "glibc breaks 1.5");
	EXPECT(arr_doc_path(res, "0.ok")->v.b == 0 && arr_doc_path(res, "1.ok")->v.b == 1, "which broke");
	arr_doc_free(res);
	EXPECT(run_check(rep, "latency.malloc.p50 < 50 or leaks.bytes == 0", 2, NULL) == 0, "or");
	EXPECT(run_check(rep, "not (peak_rss > 2 * \"glibc\")", 1, NULL) == 0, "not, quoted allocator");
	EXPECT(run_check(rep, "no_such.metric < 1", 2, &res) == 2, "a missing metric breaks");
	EXPECT(arr_doc_as_str(arr_doc_path(res, "0.error")) &&
		       strstr(arr_doc_as_str(arr_doc_path(res, "0.error")), "no_such.metric"),
	       "error names the metric");
	arr_doc_free(res);
	EXPECT(run_check(rep, "peak_rss < jemalloc", 2, NULL) == 2, "an absent allocator breaks");

	static const char *const syntax[] = {"a <",     "(a < 1", "a < 1 < 2", "1 < 2 and", "a < 1 )",
					     "a < 5XB", "< 1",    "a.b. < 1",  "a < 'x"};
	for (size_t i = 0; i < sizeof syntax / sizeof *syntax; i++) {
		struct arr_check *c;
		size_t off;
		char msg[128];
		EXPECT(arr_check_parse(syntax[i], &c, &off, msg, sizeof msg) == ARR_ESYNTAX, "'%s' must not parse",
		       syntax[i]);
	}
	arr_doc_free(rep);
}

static int count_row(void *ctx, const char *trace, const char *allocator, const char *section, const char *metric,
		     const struct arr_doc *value, const char *unit)
{
	(void)trace;
	(void)value;
	int *n = ctx;
	n[0]++;
	if (!strcmp(section, "timeline") || strstr(metric, "timeline"))
		n[1]++;
	if (!strcmp(allocator, "builtin") && !strcmp(metric, "peak_rss") && !strcmp(unit, "bytes"))
		n[2]++;
	if (!strcmp(metric, "ops.malloc") && !strcmp(unit, "count"))
		n[3]++;
	return 0;
}

static void test_csv(void)
{
	struct arr_doc *rep = sample_report();
	int n[4] = {0};
	EXPECT(arr_report_rows(rep, count_row, n) == 0, "rows");
	/* calls, bytes_requested, ops.malloc, leaks x2, peak_bytes, 2 x (peak_rss, peak_over_ideal, p50) */
	EXPECT(n[0] == 12, "%d rows, want 12", n[0]);
	EXPECT(n[1] == 0, "timelines left out");
	EXPECT(n[2] == 1, "builtin peak_rss in bytes");
	EXPECT(n[3] == 1, "ops.malloc is a count");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	EXPECT(arr_report_write_csv(m, rep) == 0, "csv");
	fclose(m);
	EXPECT(!strncmp(buf, "trace,allocator,section,metric,value,unit\r\n", 43), "header");
	EXPECT(strstr(buf, "\"x,y.atr\",,leaks,bytes,4096,bytes\r\n"), "a quoted trace row:\n%s", buf);
	EXPECT(strstr(buf, "\"x,y.atr\",glibc,latency,malloc.p50,20,ns\r\n"), "latency in ns:\n%s", buf);
	free(buf);
	EXPECT(arr_report_edit_distance("alocators", "allocators") == 1, "distance");
	EXPECT(!strcmp(arr_report_unit("time.wall_ns"), "ns"), "ns unit");
	EXPECT(!strcmp(arr_report_unit("peak_over_ideal"), "ratio"), "ratio unit");
	EXPECT(!strcmp(arr_report_unit("calls_per_s"), "per_s"), "rate unit");
	static const char *const units[][2] = {
		{"leaks.failed_calls.overflow", "count"},
		{"sizes.distinct_sizes", "count"},
		{"lifetimes.time_log2.3.lo", "ns"},
		{"lifetimes.events_log2.3.hi", "count"},
		{"sizes.log2.3.lo", "bytes"},
		{"fragmentation.jw_mapped.at_peak_live", "ratio"},
		{"fragmentation.at.end.external", "bytes"},
		{"leaks.largest.0.tid", ""},
		{"latency.malloc.p999", "ns"},
		{"summary.ops.rss", "count"},
		{"lifetimes.churn_by_size.2.short_lived", "count"},
		{"rss.recorded.peak", "bytes"},
	};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		EXPECT(!strcmp(arr_report_unit(units[i][0]), units[i][1]), "unit of %s: '%s', want '%s'", units[i][0],
		       arr_report_unit(units[i][0]), units[i][1]);
	arr_doc_free(rep);
}

/*
 * The peak RSS moment of a replay whose RSS stays flat from the live peak to
 * the end, where one page more comes with the live bytes gone (mimalloc keeps
 * its pages): the fragmentation is weighed at the live peak, not at the end.
 */
static void test_peak_rss_moment(void)
{
	struct arr_rss_sample tl[12];
	memset(tl, 0, sizeof tl);
	for (int i = 0; i < 12; i++) {
		tl[i].op_index = (uint64_t)i * 1000;
		tl[i].t_ns = (uint64_t)i * 1000000;
		tl[i].rss = i <= 5 ? (uint64_t)i * (8u << 20) / 5 : 8u << 20; /* up to 8 MiB at 5, then flat */
		tl[i].live = i <= 5 ? (uint64_t)i * (7u << 20) / 5 : (uint64_t)(11 - i) * (1u << 20);
		tl[i].usable = tl[i].live;
	}
	tl[11].rss += 4096; /* the end: one page more, 0 B live */
	struct arr_replay_result r;
	memset(&r, 0, sizeof r);
	r.has_live = 1;
	r.timeline = tl;
	r.nsamples = 12;
	r.at_end = (struct arr_replay_moment){11000, 11000000, tl[11].rss, 0, 0, 0};
	struct arr_doc *frag = arr_doc_object();
	EXPECT(arr_replay_put_fragmentation(frag, &r, tl[11].rss, 7u << 20) == 0, "put_fragmentation");
	double op = -1, ext = -1;
	arr_doc_as_num(arr_doc_path(frag, "at.peak_rss.op_index"), &op);
	arr_doc_as_num(arr_doc_path(frag, "external_bytes"), &ext);
	EXPECT(op == 5000, "peak RSS moment at the live peak (call 5000), not the end: %.0f", op);
	EXPECT(ext == (1u << 20), "external at that moment: 1 MiB, got %.0f", ext);
	arr_doc_free(frag);
}

int main(void)
{
	test_peak_rss_moment();
	test_config();
	test_checks();
	test_csv();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}

/*
 * report.h - the report component: a YAML configuration (what to analyse,
 * into which allocators, what to check, where to write), the checks that
 * gate CI on a report, and the renderers of a report document (CSV, HTML,
 * text). Used by `allocrr report` and `allocrr diff`.
 *
 * Glossary
 *   config    a parsed report.yaml (struct arr_report_config), every value
 *             remembering where it was written (file:line:column).
 *   check     an expression over metric paths, e.g. `peak_rss <= 1.1 * glibc`,
 *             evaluated per trace, and per allocator when it names an
 *             allocator metric (docs/report-config.md, "Checks").
 *   report    the arr_doc of docs/report.md: {"allocrr", "traces": [...],
 *             "checks": [...]}; every renderer reads only that.
 *
 * Contract
 *   - Functions return 0 or a negative ARR_E* code. Parse errors fill a
 *     struct arr_report_error with the file, line and column (1-based) and
 *     a one-line message; nothing here prints or exits.
 *   - A config owns every string it holds; arr_report_config_release()
 *     frees them all.
 *   - Renderers write only to the stream given; they never change the doc.
 */
#ifndef ARR_REPORT_H
#define ARR_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "allocrr/error.h"
#include "allocrr/replay.h"

/* Where a config value was written, and what was wrong with it. */
struct arr_report_error {
	char file[512];
	unsigned line, column; /* 1-based; 0 when unknown */
	char msg[512];
};

struct arr_report_where {
	unsigned line, column;
};

struct arr_report_trace {
	char *pattern; /* path or glob, as written */
	int children;  /* also TRACE.PID children */
	char *select;  /* else of its family: the largest trace of this program or pid (NULL: the largest) */
	struct arr_report_where at;
};

struct arr_report_allocator {
	char *spec;   /* "glibc", "glibc:mmap_threshold=65536", a path... */
	int optional; /* skip (with a note) when its library is missing */
	struct arr_report_where at;
};

struct arr_check; /* a parsed check expression (checks.c) */

struct arr_report_check {
	char *text; /* as written */
	struct arr_check *expr;
	struct arr_report_where at;
	int inline_text; /* text's offsets are columns after at (a one-line scalar; at is past a quote) */
};

struct arr_report_config {
	char *path; /* the config file */
	struct arr_report_trace *traces;
	size_t ntraces;
	struct arr_report_allocator *allocators; /* the variant matrix, expanded */
	size_t nallocators;
	/* replay */
	enum arr_replay_threads threads; /* names from replay.h's tables */
	enum arr_replay_touch touch;
	unsigned samples, latency_every, runs, pace;
	int zeroing;     /* replay three ways for the zeroing cost */
	char *cache_dir; /* NULL: beside the traces */
	/* analyses */
	uint32_t what;        /* 0 = all */
	unsigned top, points; /* 0 = defaults */
	struct arr_phase_spec *phases;
	size_t nphases;
	struct arr_report_check *checks;
	size_t nchecks;
	/* outputs: file names inside dir; NULL = not written */
	char *dir;
	int text;
	char *json, *csv, *html;
};

/* Read and validate a config file. On error: ARR_ESYNTAX (or ARR_ENOMEM,
 * -errno for an unreadable file) and *err says where and what. */
int arr_report_config_load(struct arr_report_config *cfg, const char *path, struct arr_report_error *err);
/* The same from text in memory (path is only used in messages). */
int arr_report_config_parse(struct arr_report_config *cfg, const char *path, const char *text, size_t len,
			    struct arr_report_error *err);
void arr_report_config_release(struct arr_report_config *cfg);

/*
 * Checks. arr_check_parse() parses one expression; on ARR_ESYNTAX *offset
 * is the byte of text where it went wrong and msg says what.
 */
int arr_check_parse(const char *text, struct arr_check **out, size_t *offset, char *msg, size_t cap);
void arr_check_free(struct arr_check *c);
/*
 * Evaluate every check of cfg over report (its "traces"), appending one
 * entry per evaluation to checks (an array): {"check", "trace",
 * "allocator", "value", "limit", "ok"} plus "error" when a metric is
 * missing (which counts as broken). Returns the number broken (>= 0) or
 * ARR_ENOMEM.
 */
int arr_report_run_checks(const struct arr_report_config *cfg, const struct arr_doc *report, struct arr_doc *checks);
/* Evaluate one parsed check for one trace (and allocator entry, may be
 * NULL); see arr_report_run_checks for the entry written. 1 ok, 0 broken. */
int arr_check_eval(const struct arr_check *c, const char *text, const struct arr_doc *trace,
		   const struct arr_doc *allocator, struct arr_doc *entry);

/*
 * Flatten a report into tidy rows: fn is called once per numeric metric,
 * with the trace path, allocator name ("" for trace-side metrics), section,
 * metric path inside the section (dots, array indexes), value and unit.
 * Timelines are left out (they are columns of thousands of points, kept in
 * report.json and the page).
 */
typedef int (*arr_report_row_fn)(void *ctx, const char *trace, const char *allocator, const char *section,
				 const char *metric, const struct arr_doc *value, const char *unit);
int arr_report_rows(const struct arr_doc *report, arr_report_row_fn fn, void *ctx);
/* The unit of a metric from its key: "bytes", "ns", "count", "ratio", "per_s" or "". */
const char *arr_report_unit(const char *metric);

/* CSV: header `trace,allocator,section,metric,value,unit`, RFC 4180 quoting. */
int arr_report_write_csv(FILE *f, const struct arr_doc *report);
/* The self-contained HTML page. ARR_EUNSUPPORTED when built without the
 * charting libraries. */
int arr_report_write_html(FILE *f, const struct arr_doc *report, const char *title);
/* Whether this build can write HTML. */
int arr_report_html_available(void);

/* Levenshtein distance (for "did you mean"). */
unsigned arr_report_edit_distance(const char *a, const char *b);

#endif

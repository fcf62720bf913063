/*
 * allocrr/analysis.h - the analyses of a trace: one time-ordered streaming
 * pass (arr_merge) feeding every selected analyzer, each writing its
 * results into a section of an arr_doc (allocrr/doc.h).
 *
 * Contract
 *   - Memory is bounded by the live set (one entry per live block) and the
 *     analyzers' fixed-size tables, never by the trace's length.
 *   - Functions return 0 or a negative ARR_E* code; on a trace error the
 *     reader keeps the offset (arr_trace_error_offset) and the sections
 *     computed from the events delivered so far are still written.
 *   - The keys each section writes are documented in docs/report.md and
 *     are stable: tests check them and scripts rely on them.
 */
#ifndef ALLOCRR_ANALYSIS_H
#define ALLOCRR_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocrr/doc.h"
#include "allocrr/trace.h"

/* The trace-side analyses: X(NAME, "section") */
#define ARR_ANALYSIS_MAP(X)       \
	X(SUMMARY, "summary")     \
	X(SIZES, "sizes")         \
	X(LIFETIMES, "lifetimes") \
	X(LIVE, "live")           \
	X(LEAKS, "leaks")         \
	X(THREADS, "threads")     \
	X(RSS, "rss")             \
	X(ZEROING, "zeroing")     \
	X(PHASES, "phases")       \
	X(SITES, "sites")

enum arr_analysis {
#define ARR_ANALYSIS_ENUM(name, str) ARR_AN_##name,
	ARR_ANALYSIS_MAP(ARR_ANALYSIS_ENUM)
#undef ARR_ANALYSIS_ENUM
		ARR_AN_COUNT_
};
/* Section name of an analysis, or NULL. */
const char *arr_analysis_name(unsigned an);
/* Analysis for a section name, or -1. */
int arr_analysis_from_name(const char *name);

/* A phase given by the user (markers recorded by allocrr_mark() make
 * phases of their own). Bounds are inclusive-exclusive. */
struct arr_phase_spec {
	char name[64];
	int by_events;     /* 0: from/to are ns since the trace's start; 1: event numbers */
	uint64_t from, to; /* to == UINT64_MAX: until the end */
};

struct arr_analysis_options {
	uint32_t what;            /* bit (1u << ARR_AN_x) per analysis; 0 = all */
	unsigned timeline_points; /* bounded timelines; 0 = default (2000) */
	unsigned top;             /* rows in "most frequent"/"largest" tables; 0 = default (20) */
	const struct arr_phase_spec *phases;
	size_t nphases;
	/* progress, called every few million events and once at the end (may
	 * be NULL); bytes_done estimates the file read from the fraction of
	 * the recorded events delivered (0 when the trace has no END record) */
	void (*progress)(void *ctx, uint64_t events_done, uint64_t bytes_done, uint64_t bytes_total);
	void *progress_ctx;
	/* sites: also write collapsed stacks (allocated and leaked bytes, for
	 * flame graphs) to this stream (NULL: none) */
	FILE *collapsed;
};
#define ARR_ANALYSIS_OPTIONS_INIT                  \
	{                                          \
		0, 0, 0, NULL, 0, NULL, NULL, NULL \
	}

/*
 * Run the selected analyses over an open trace, writing each into out (an
 * object) under its section name. out also gets "trace" (path, pid, exe,
 * argv, duration, how it ended).
 */
int arr_analyze_trace(struct arr_trace *tr, const struct arr_analysis_options *opt, struct arr_doc *out);

/*
 * Parse a comma-separated list of section names ("sizes,leaks") into an
 * arr_analysis_options.what mask. 0 and *mask, or ARR_EINVAL with *bad
 * pointing at the unknown name (its length in *bad_len).
 */
int arr_analysis_parse_what(const char *list, uint32_t *mask, const char **bad, size_t *bad_len);

/*
 * The terminal form of an analysis document: {"allocrr", "traces": [...]}
 * as `allocrr analyze --json` prints it (or one trace object). A heading
 * per section, aligned tables, human units chosen from the schema's key
 * names, so sections added later (the replay side's "allocators") render
 * too. Returns 0 or ARR_EIO when the stream failed.
 */
int arr_doc_render_text(FILE *f, const struct arr_doc *doc);

/*
 * A check's value or limit in the units the text report, the page and
 * `allocrr report`'s stderr all use: bytes in units and exact ("8.0 KiB
 * (8,192)") when the check names a byte metric, times in units, counts
 * grouped in thousands. `check` is the check's text (may be NULL).
 */
void arr_check_value_text(char *buf, size_t cap, const char *check, double v);

#endif

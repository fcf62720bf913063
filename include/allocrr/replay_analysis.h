/*
 * allocrr/replay_analysis.h - figures computed from replay results
 * (allocrr/replay.h) into the analysis document (allocrr/doc.h): latency
 * percentiles, RSS timelines and growth, fragmentation at the moments that
 * matter, and statistics over repeated runs. Keys: docs/report.md,
 * "Replay analyses"; how each is measured: docs/replay.md.
 *
 * Contract
 *   - Pure functions of their inputs: no I/O, no printing; results go into
 *     the object given (arr_doc builders, so an allocation failure marks the
 *     tree and arr_doc_status() tells).
 *   - Results are not modified and stay owned by the caller.
 */
#ifndef ALLOCRR_REPLAY_ANALYSIS_H
#define ALLOCRR_REPLAY_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "allocrr/doc.h"
#include "allocrr/replay.h"

/* A median and the range of one figure over runs. */
struct arr_spread {
	uint64_t med, min, max;
};
/* The figure at byte offset `field` of struct arr_replay_result (a uint64_t) over n runs. */
struct arr_spread arr_replay_spread(const struct arr_replay_result *runs, unsigned n, size_t field);
#define ARR_REPLAY_SPREAD(runs, n, member) arr_replay_spread(runs, n, offsetof(struct arr_replay_result, member))
/* obj.key = median, and key_min / key_max when n > 1. */
void arr_replay_put_spread(struct arr_doc *obj, const char *key, struct arr_spread s, unsigned n);
/* The run whose wall time is nearest the median: it stands for the others. */
unsigned arr_replay_median_run(const struct arr_replay_result *runs, unsigned n);

/*
 * The timer's resolution in ns: what one timed section costs (the timer is
 * read twice). Percentiles below it say only "less than this".
 */
uint64_t arr_replay_resolution_ns(const struct arr_replay_result *r);
/* lat.OP = {count, p50, p90, p99, p999, max, resolution_ns} for each timed op. */
void arr_replay_put_latency(struct arr_doc *lat, const struct arr_replay_result *r);

/*
 * obj.timeline = {t, op_index, rss[, live, usable, mapped]} column arrays of
 * at most `points` points (each bucket kept by its sample of highest RSS, so
 * spikes survive). with_live: the sample columns of a measure_usable run.
 */
void arr_replay_put_timeline(struct arr_doc *obj, const struct arr_replay_result *r, unsigned points, int with_live);
/* Least-squares slope of RSS over time, bytes per second, for samples with
 * from_op <= op_index < to_op (UINT64_MAX: to the end). 0 with < 2 samples. */
double arr_replay_growth(const struct arr_replay_result *r, uint64_t from_op, uint64_t to_op);

/* A phase of the replay, as a range of calls [from_op, to_op). */
struct arr_replay_phase {
	const char *name;
	uint64_t from_op, to_op;
};
/* arr = [{name, from_op, to_op, rss_start, rss_end, peak_rss, growth_bytes_per_s[, peak_live]}...] */
void arr_replay_put_phases(struct arr_doc *arr, const struct arr_replay_result *r, const struct arr_replay_phase *ph,
			   size_t n);

/*
 * Fragmentation of a measure_usable run m into frag: final_live,
 * internal_bytes and external_bytes (at peak RSS), the moments
 * at.{peak_live, peak_rss, end} = {op_index, t_ns, rss, live, usable,
 * internal, external[, mapped]}, and Johnstone & Wilson's four ratios of
 * (memory - live) / live in jw.{avg_over_time, at_peak_live, at_peak_rss,
 * peak_vs_peak} with memory = RSS. peak_rss and peak_live are the timed
 * runs' (the caller's): they are what the figures are measured against.
 * ARR_EINVAL when m did not track live bytes.
 */
int arr_replay_put_fragmentation(struct arr_doc *frag, const struct arr_replay_result *m, uint64_t peak_rss,
				 uint64_t peak_live);

#endif

/*
 * allocrr/summary.h - the one-pass summary of a trace behind `allocrr info`:
 * counts by operation, threads, bytes requested, live and peak live bytes.
 *
 * Contract: feed events in time order (arr_merge) with arr_summary_add();
 * memory grows with the live set (one map entry per live block), never with
 * the trace's length. Functions return 0 or ARR_ENOMEM.
 */
#ifndef ALLOCRR_SUMMARY_H
#define ALLOCRR_SUMMARY_H

#include <stdint.h>

#include "allocrr/ptrmap.h"
#include "allocrr/trace.h"

struct arr_summary {
	uint64_t ops[ARR_OP_MAX_];
	uint64_t calls;   /* allocation calls, all ten functions */
	uint64_t failed;  /* calls that returned NULL / an error */
	uint64_t threads; /* distinct threads that made calls or started */
	uint64_t bytes_requested;
	uint64_t live_bytes, peak_live_bytes, peak_live_t;
	uint64_t live_blocks, peak_live_blocks;
	uint64_t unknown_frees; /* frees of addresses not live in the trace */
	uint64_t first_t, last_t;
	uint64_t peak_rss;      /* highest RSS sample */
	uint64_t true_peak_rss; /* highest rss_peak event (the kernel's high-water mark), 0 = none */
	uint64_t page_size;     /* from the trace header, for pvalloc (0: not rounded) */
	struct arr_ptrmap live; /* address -> requested size */
	struct arr_ptrmap tids;
};
#define ARR_SUMMARY_INIT                                         \
	{                                                        \
		.live = ARR_PTRMAP_INIT, .tids = ARR_PTRMAP_INIT \
	}

int arr_summary_add(struct arr_summary *s, const struct arr_event *ev);
void arr_summary_release(struct arr_summary *s);

#endif

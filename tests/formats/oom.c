/*
 * oom.c TRACE - make the Nth allocation fail, for N = 1, 2, ... until a
 * whole read of TRACE (open, every chunk, the time-ordered merge, summary
 * of every event) needs no more: each run must end in success or
 * ARR_ENOMEM, never crash, and must have freed everything it took
 * (counted here). SQLite's malloc tests are the model.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/summary.h"
#include "allocrr/trace.h"

#include "failmalloc.h"

/* One full read; returns 0 or a negative code. */
static int read_all(const char *path, unsigned long long *events)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	*events = 0;
	if (rc == 0) {
		struct arr_merge *m;
		rc = arr_merge_open(&m, tr);
		if (rc == 0) {
			struct arr_summary s = ARR_SUMMARY_INIT;
			const struct arr_event *ev;
			while ((rc = arr_merge_next(m, &ev)) == 1) {
				(*events)++;
				if ((rc = arr_summary_add(&s, ev)) != 0)
					break;
			}
			arr_summary_release(&s);
			arr_merge_close(m);
		}
	}
	arr_trace_close(tr);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: oom TRACE\n");
		return 2;
	}
	unsigned long long full;
	/* A first read unarmed: glibc keeps the read-ahead thread's stack and
	 * TLS for the next thread, allocations that are not ours to free. */
	read_all(argv[1], &full);
	armed = 1;
	if (read_all(argv[1], &full) != 0 || live != 0) {
		fprintf(stderr, "oom: the read without failures failed or leaked %ld blocks\n", live);
		return 1;
	}
	long n;
	for (n = 0;; n++) {
		unsigned long long got;
		live = 0;
		countdown = n;
		int rc = read_all(argv[1], &got);
		long left = countdown;
		countdown = -1;
		if (rc != 0 && rc != ARR_ENOMEM) {
			fprintf(stderr, "oom: failing allocation %ld: rc %d (%s), want ENOMEM\n", n, rc,
				arr_strerror(rc));
			return 1;
		}
		if (live != 0) {
			fprintf(stderr, "oom: failing allocation %ld: %ld blocks not freed\n", n, live);
			return 1;
		}
		if (left >= 0) { /* no allocation failed: the read needs no more */
			if (rc != 0 || got != full) {
				fprintf(stderr, "oom: clean run %ld read %llu of %llu events\n", n, got, full);
				return 1;
			}
			break;
		}
	}
	printf("ok: %ld allocations failed in turn, %llu events\n", n, full);
	return 0;
}

/*
 * maps.c - the two address maps side by side on a real trace's live set:
 * allocrr/ptrmap.h (out of line, keys and values in two arrays, load <= 1/2)
 * and replayer/addrmap.h (inline, key and value side by side, load <= 1/4,
 * probe once and use the entry). Each replays the trace's calls as the
 * preparation does: an allocation inserts its address, a free removes it,
 * a realloc removes the old and inserts the new.
 *   bench-maps TRACE [ROUNDS]
 * Prints, per map, the median ns per call over ROUNDS (default 5) runs,
 * alternating, and the bytes of its table at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "allocrr/ptrmap.h"
#include "allocrr/trace.h"
#include "addrmap.h"

struct call {
	uint64_t ptr, ret; /* ptr: released block (0: none); ret: new block (0: none) */
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t sink;

static double run_ptrmap(const struct call *c, size_t n, size_t *bytes)
{
	struct arr_ptrmap m = ARR_PTRMAP_INIT;
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		if (c[i].ptr && arr_ptrmap_del(&m, c[i].ptr, &v))
			sink += v;
		if (c[i].ret) {
			if (arr_ptrmap_get(&m, c[i].ret, &v)) /* prepare's displaced check */
				sink += v;
			if (arr_ptrmap_put(&m, c[i].ret, i))
				exit(1);
		}
	}
	double t = now() - t0;
	*bytes = (m.mask + 1) * 16;
	arr_ptrmap_release(&m);
	return t;
}

static double run_addrmap(const struct call *c, size_t n, size_t *bytes)
{
	struct addrmap m = ADDRMAP_INIT;
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		if (c[i].ptr) {
			struct am_entry *e = am_find(&m, c[i].ptr);
			if (e) {
				sink += e->val;
				am_del_at(&m, e);
			}
		}
		if (c[i].ret) {
			if (am_reserve(&m))
				exit(1);
			struct am_entry *e = am_probe(&m, c[i].ret);
			if (e->key)
				sink += e->val, e->val = i;
			else
				am_fill(&m, e, c[i].ret, i);
		}
	}
	double t = now() - t0;
	*bytes = (m.mask + 1) * sizeof *m.e;
	am_release(&m);
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench-maps TRACE [ROUNDS]\n");
		return 2;
	}
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (rounds < 1 || rounds > 99) {
		fprintf(stderr, "bench-maps: ROUNDS must be 1 to 99\n");
		return 2;
	}
	struct arr_trace *tr;
	struct arr_merge *mg = NULL;
	int rc = arr_trace_open(&tr, argv[1]);
	if (rc || (rc = arr_merge_open(&mg, tr))) {
		fprintf(stderr, "bench-maps: cannot read '%s': %s\n", argv[1], arr_strerror(rc));
		return 1;
	}
	size_t n = 0, cap = 1 << 20;
	struct call *c = malloc(cap * sizeof *c);
	const struct arr_event *ev;
	while (c && (rc = arr_merge_next(mg, &ev)) > 0) {
		if (!arr_op_is_call(ev->op))
			continue;
		if (n == cap && !(c = realloc(c, (cap *= 2) * sizeof *c)))
			break;
		c[n++] = (struct call){arr_event_releases(ev) ? ev->ptr : 0, arr_event_allocates(ev) ? ev->ret : 0};
	}
	arr_merge_close(mg);
	arr_trace_close(tr);
	if (!c || rc < 0) {
		fprintf(stderr, "bench-maps: cannot read '%s': %s\n", argv[1], c ? arr_strerror(rc) : "out of memory");
		return 1;
	}
	double tp[99], ta[99];
	size_t bp = 0, ba = 0;
	for (int r = 0; r < rounds; r++) {
		tp[r] = run_ptrmap(c, n, &bp);
		ta[r] = run_addrmap(c, n, &ba);
	}
	qsort(tp, (size_t)rounds, sizeof *tp, cmp_d);
	qsort(ta, (size_t)rounds, sizeof *ta, cmp_d);
	printf("| map | ns per call | table bytes at end |\n|---|---|---|\n");
	printf("| ptrmap (allocrr/ptrmap.h) | %.2f | %zu |\n", tp[rounds / 2] * 1e9 / (double)n, bp);
	printf("| addrmap (replayer/addrmap.h) | %.2f | %zu |\n", ta[rounds / 2] * 1e9 / (double)n, ba);
	printf("%zu calls; addrmap / ptrmap time: %.2f\n", n, ta[rounds / 2] / tp[rounds / 2]);
	free(c);
	return sink == 42; /* keep the work */
}

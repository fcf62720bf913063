/*
 * bench/allocator/micro.c - allocator microbenchmarks against plain malloc,
 * so the same binary measures glibc (no preload) and any preloaded allocator.
 *
 *   micro pair [iters] [cpu]     ns per malloc(64)+free pair
 *   micro calloc SIZE [iters]    ns per calloc(SIZE) vs malloc+memset, "calloc_ns memset_ns"
 *   micro calloc-fresh           calloc(256 MiB): "ms rss_kb_after"
 *   micro checker|contiguous     heap growth (RSS KB) of the seeds' experiment
 *   micro churn [rounds] [cpu]   ns per free+malloc of a random one of 64 Ki live
 *                                blocks of 16..527 bytes (frees of cold blocks);
 *                                with "cpu", process CPU time (for loaded machines)
 *   micro regrow [chains]        ns per realloc of buffers grown 262 bytes at a
 *                                time from 1100 bytes to 7 KiB (a list node's
 *                                listpack in redis, a string buffer), every
 *                                other one kept: "ns_per_realloc in_place_percent"
 *
 * Each run prints one line of numbers; bench-alloc.sh runs it alternately
 * under each allocator and takes medians.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Through a volatile pointer: the compiler may not fold malloc+memset into calloc. */
static void *(*volatile zero_fill)(void *, int, size_t) = memset;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long rss_kb(void)
{
	long total = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &total, &res) != 2)
		res = -1;
	fclose(f);
	return res * 4;
}

static double clock_ns(clockid_t id);

static int pair(long iters, clockid_t clk)
{
	for (long i = 0; i < 100000; i++) { /* warm up */
		char *p = malloc(64);
		((volatile char *)p)[0] = 1;
		free(p);
	}
	double t0 = clock_ns(clk);
	for (long i = 0; i < iters; i++) {
		char *p = malloc(64);
		if (p == NULL)
			return 1;
		((volatile char *)p)[0] = 1;
		free(p);
	}
	printf("%.2f\n", (clock_ns(clk) - t0) / (double)iters);
	return 0;
}

/* calloc vs malloc+memset of the same size, with a few blocks live so that
 * reused (dirty) memory is part of the picture, as in real programs. */
static int calloc_vs_memset(size_t size, long iters)
{
	double best[2] = {1e300, 1e300};
	for (int round = 0; round < 6; round++) { /* alternate; keep each mode's best */
		int mode = round & 1;
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			char *p = mode == 0 ? calloc(1, size) : malloc(size);
			if (p == NULL)
				return 1;
			if (mode == 1)
				zero_fill(p, 0, size);
			((volatile char *)p)[size - 1] = 1;
			free(p);
		}
		double t = (now_ns() - t0) / (double)iters;
		if (t < best[mode])
			best[mode] = t;
	}
	printf("%.2f %.2f\n", best[0], best[1]);
	return 0;
}

static int calloc_fresh(void)
{
	size_t big = (size_t)256 << 20;
	long r0 = rss_kb();
	double t0 = now_ns();
	char *p = calloc(1, big);
	double t1 = now_ns();
	if (p == NULL)
		return 1;
	long r1 = rss_kb();
	printf("%.3f %ld\n", (t1 - t0) / 1e6, r1 - r0);
	free(p);
	return 0;
}

/* 100,000 x 200 B, a guard, free every other one (or all), then 50,000 x 400 B;
 * one byte written per page as the seeds' experiment did. Prints growth in KB. */
static int checker(int contiguous)
{
	enum { N = 100000 };
	static char *v[N], *w[N / 2];
	for (int i = 0; i < N; i++) {
		v[i] = malloc(200);
		v[i][0] = 1;
	}
	char *guard = malloc(200);
	guard[0] = 1;
	for (int i = 0; i < N; i += contiguous ? 1 : 2)
		free(v[i]);
	long r0 = rss_kb();
	for (int i = 0; i < N / 2; i++) {
		w[i] = malloc(400);
		w[i][0] = 1;
		w[i][399] = 1;
	}
	long r1 = rss_kb();
	printf("%ld\n", r1 - r0);
	return 0;
}

/* A buffer of `size` allocated, written (a byte an OS page) and freed again,
 * `iters` times: what a program that takes a big scratch buffer per task pays. */
static int huge_loop(size_t size, long iters)
{
	unsigned sum = 0;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		unsigned char *p = malloc(size);
		if (p == NULL)
			return 1;
		for (size_t k = 0; k < size; k += 4096)
			p[k] = (unsigned char)i;
		sum += ((volatile unsigned char *)p)[size / 2];
		free(p);
	}
	printf("%.2f %u\n", (now_ns() - t0) / (double)iters / 1000.0, sum & 1);
	return 0;
}

static double clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int churn(long rounds, clockid_t clk)
{
	enum { N = 1 << 16 };
	static void *v[N];
	unsigned x = 2463534242u;
	for (long i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		v[i] = malloc(16 + x % 512);
	}
	double t0 = clock_ns(clk);
	for (long r = 0; r < rounds; r++)
		for (long k = 0; k < N; k++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			unsigned j = x % N;
			free(v[j]);
			v[j] = malloc(16 + (x >> 20) % 512);
			if (v[j] == NULL)
				return 1;
			*(volatile char *)v[j] = 1;
		}
	printf("%.2f\n", (clock_ns(clk) - t0) / ((double)rounds * N));
	for (long i = 0; i < N; i++)
		free(v[i]);
	return 0;
}

static int regrow(long chains)
{
	enum { START = 1100, STEP = 262, END = 7000 };
	void **keep = calloc((size_t)chains, sizeof *keep);
	long steps = 0, same = 0;
	if (keep == NULL)
		return 1;
	double t0 = now_ns();
	for (long c = 0; c < chains; c++) {
		size_t n = START;
		char *p = malloc(n);
		if (p == NULL)
			return 1;
		memset(p, 1, n);
		while (n + STEP <= END) {
			char *q = realloc(p, n + STEP);
			if (q == NULL)
				return 1;
			memset(q + n, 2, STEP);
			same += q == p;
			steps++;
			p = q;
			n += STEP;
		}
		free(malloc(32)); /* other calls between */
		if (c % 2)
			keep[c] = p;
		else
			free(p);
	}
	double t1 = now_ns();
	printf("%.1f %.0f\n", (t1 - t0) / (double)steps, 100.0 * (double)same / (double)steps);
	for (long c = 0; c < chains; c++)
		free(keep[c]);
	free(keep);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pair";
	if (strcmp(mode, "pair") == 0)
		return pair(argc > 2 ? atol(argv[2]) : 20000000,
			    argc > 3 && strcmp(argv[3], "cpu") == 0 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC);
	if (strcmp(mode, "calloc") == 0 && argc > 2) {
		size_t size = strtoull(argv[2], NULL, 0);
		long iters = argc > 3 ? atol(argv[3]) : (long)(60000000 / (size + 64)) + 3;
		return calloc_vs_memset(size, iters);
	}
	if (strcmp(mode, "huge") == 0 && argc > 2)
		return huge_loop(strtoull(argv[2], NULL, 0), argc > 3 ? atol(argv[3]) : 500);
	if (strcmp(mode, "calloc-fresh") == 0)
		return calloc_fresh();
	if (strcmp(mode, "checker") == 0)
		return checker(0);
	if (strcmp(mode, "contiguous") == 0)
		return checker(1);
	if (strcmp(mode, "regrow") == 0)
		return regrow(argc > 2 ? atol(argv[2]) : 16000);
	if (strcmp(mode, "churn") == 0)
		return churn(argc > 2 ? atol(argv[2]) : 100,
			     argc > 3 && strcmp(argv[3], "cpu") == 0 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC);
	fprintf(stderr,
		"usage: micro pair|calloc SIZE|huge SIZE [ITERS]|calloc-fresh|checker|contiguous|churn [ROUNDS] [cpu]|regrow "
		"[CHAINS]\n");
	return 2;
}

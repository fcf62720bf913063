/*
 * clock.c - what one timestamp costs beside memory-bound work.
 *   bench-clock [N]
 *
 * A recorder hook reads the clock between the program's own memory
 * accesses. In a tight loop RDTSC costs a few ns; what matters is whether
 * it lets the CPU keep several cache misses in flight. This measures a loop
 * of independent random loads from a 64 MiB table (many misses overlap) and
 * a loop of dependent ones (one at a time), each without and with one RDTSC
 * (and one vDSO clock_gettime) per load, and prints ns per iteration.
 * On the VMs this project is measured on, RDTSC serialises the independent
 * loads: the clock costs as much as a cache miss, not as an instruction.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { TABLE = 1 << 24 }; /* 16M uint32: 64 MiB, far beyond the caches */

static volatile uint64_t sink;

/* kind: 0 nothing, 1 rdtsc, 2 clock_gettime(CLOCK_MONOTONIC) */
static double run(const uint32_t *a, size_t n, int dependent, int kind)
{
	uint64_t s = 0;
	uint32_t x = 0;
	struct timespec ts;
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		size_t at = dependent ? (x + i * 7919) & (TABLE - 1) : (i * 7919) & (TABLE - 1);
		x = a[at];
		s += x;
		if (kind == 1)
			s += __rdtsc();
		else if (kind == 2) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			s += (uint64_t)ts.tv_nsec;
		}
	}
	double dt = now() - t0;
	sink = s;
	return dt / (double)n * 1e9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
	if (n == 0) {
		fprintf(stderr, "usage: bench-clock [ITERATIONS]\n");
		return 2;
	}
	uint32_t *a = malloc((size_t)TABLE * sizeof *a);
	if (!a) {
		perror("bench-clock");
		return 1;
	}
	for (size_t i = 0; i < TABLE; i++)
		a[i] = (uint32_t)((i * 2654435761u) & (TABLE - 1));
	uint64_t s = 0;
	double t0 = now();
	for (size_t i = 0; i < n; i++)
		s += __rdtsc();
	double alone = (now() - t0) / (double)n * 1e9;
	sink = s;
	printf("| loop | ns/iteration |\n|---|---|\n");
	printf("| rdtsc alone | %.1f |\n", alone);
	static const char *what[] = {"", " + rdtsc", " + clock_gettime"};
	for (int dep = 0; dep < 2; dep++)
		for (int kind = 0; kind < 3; kind++)
			printf("| %s loads%s | %.1f |\n", dep ? "dependent" : "independent", what[kind],
			       run(a, n, dep, kind));
	free(a);
	return 0;
}

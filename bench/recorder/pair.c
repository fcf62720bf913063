/*
 * pair.c [N] - the recorder's cost per call, isolated: N malloc+free pairs
 * (16-79 bytes, 8 blocks in rotation) on one thread; prints the thread's
 * CPU time per pair, so the flusher thread's work on the other core is not
 * counted. Run natively and under `allocrr record` (bench/bench-hook.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	void *p[8] = {0};
	double a = thread_cpu();
	for (long i = 0; i < n; i++) {
		int k = (int)(i & 7);
		free(p[k]);
		p[k] = malloc(16 + (size_t)(i & 63));
	}
	double b = thread_cpu();
	for (int k = 0; k < 8; k++)
		free(p[k]);
	printf("%.2f\n", (b - a) / (double)n * 1e9);
	return 0;
}

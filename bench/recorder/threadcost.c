/*
 * threadcost.c - what glibc charges a program once it has a second thread.
 *   bench-threadcost [N]
 *
 * Times N mutex lock+unlock pairs and N malloc+free pairs (64 at a time,
 * 48 bytes) while the process is single-threaded, then again after
 * pthread_create() of an idle thread, and prints ns per pair and glibc's
 * __libc_single_threaded for each phase. Run it under the recorder
 * (ALLOCRR_OUTPUT=t.atr LD_PRELOAD=.../liballocrr-record.so) to see that the
 * recorder's own thread does not count (docs/recorder.md).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *idle(void *arg)
{
	pause();
	return arg;
}

static void phase(const char *what, long n)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double t0 = now();
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	double t1 = now();
	void *v[64];
	for (long i = 0; i < n / 64; i++) {
		for (int k = 0; k < 64; k++)
			v[k] = malloc(48);
		for (int k = 0; k < 64; k++)
			free(v[k]);
	}
	double t2 = now();
	printf("| %s | %d | %.1f | %.1f |\n", what, (int)__libc_single_threaded, (t1 - t0) / (double)n * 1e9,
	       (t2 - t1) / (double)(n / 64 * 64) * 1e9);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	if (n < 64) {
		fprintf(stderr, "usage: bench-threadcost [N >= 64]\n");
		return 2;
	}
	printf("| phase | __libc_single_threaded | mutex lock+unlock ns | malloc+free ns |\n|---|---|---|---|\n");
	phase("one thread", n);
	pthread_t t;
	if (pthread_create(&t, NULL, idle, NULL) != 0) {
		fprintf(stderr, "bench-threadcost: pthread_create failed\n");
		return 1;
	}
	phase("after pthread_create", n);
	return 0;
}

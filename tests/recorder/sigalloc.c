/*
 * sigalloc.c - allocation inside signal handlers during heavy allocation:
 * a SIGALRM every 50 us (setitimer) whose handler calls free(NULL) twice
 * (free(NULL) is async-signal-safe in glibc, malloc is not), while the main thread allocates and frees as fast as it
 * can for MS milliseconds (argv[1], default 300). The handler's calls land
 * in the middle of the recorder's hooks. Prints the handler's runs and the
 * rounds of 1000 allocations made; the main thread never frees NULL.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t runs;

static void on_alarm(int sig)
{
	(void)sig;
	free(NULL);
	free(NULL);
	runs++;
}

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int ms = argc > 1 ? atoi(argv[1]) : 300;
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	void *keep[512];
	for (int k = 0; k < 512; k++) /* from here on only the handler frees NULL */
		keep[k] = malloc(8);
	unsigned x = 1;
	long end = now_ns() + ms * 1000000L, rounds = 0;
	for (; now_ns() < end; rounds++) {
		for (int i = 0; i < 1000; i++) {
			x = x * 1103515245u + 12345u;
			unsigned k = (x >> 8) & 511;
			free(keep[k]);
			keep[k] = (x & 1) ? malloc(16 + (x >> 20) % 300) : calloc(1, 24 + (x >> 22) % 100);
		}
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	for (int k = 0; k < 512; k++)
		free(keep[k]);
	printf("%d %ld\n", (int)runs, rounds);
	return 0;
}

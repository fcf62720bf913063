/*
 * busy.c - T threads (argv[1], default 4) keep every core busy for MS
 * milliseconds (argv[2], default 1000): a tight loop of small mallocs and
 * frees with a little work between, never sleeping. Under the recorder the
 * flusher thread must compete with them for CPU.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static int ms;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *worker(void *arg)
{
	unsigned x = (unsigned)(long)arg * 2654435761u + 1;
	long end = now_ns() + (long)ms * 1000000L;
	void *keep[256] = {0};
	while (now_ns() < end) {
		for (int i = 0; i < 1000; i++) {
			x = x * 1103515245u + 12345u;
			unsigned k = (x >> 8) & 255;
			free(keep[k]);
			keep[k] = malloc(16 + (x >> 20) % 512);
			for (volatile int spin = 0; spin < 50; spin++)
				;
		}
	}
	for (int k = 0; k < 256; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	ms = argc > 2 ? atoi(argv[2]) : 1000;
	if (n < 1 || n > 64)
		return 2;
	pthread_t th[64];
	for (int i = 1; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	worker(0);
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/*
 * single.c - a single-threaded program that allocates enough to fill
 * several recorder buffers (so the recorder's own thread is running), then
 * prints what glibc believes: __libc_single_threaded. Under the recorder it
 * must print the same as without it (1): the recorder's thread is not a
 * glibc thread (recorder/rawthread.c), so the program's malloc and mutexes
 * keep their single-threaded speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <time.h>

int main(void)
{
	for (int i = 0; i < 200000; i++)
		free(malloc(16 + (size_t)(i % 200)));
	/* let the flusher wake and write what is queued */
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL);
	for (int i = 0; i < 1000; i++)
		free(malloc(32));
	printf("single_threaded=%d\n", (int)__libc_single_threaded);
	return 0;
}

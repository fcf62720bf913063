/*
 * marks.c - three phases set with allocrr_mark(): "load" (100 mallocs of
 * 111 bytes), "work" (50 of 222), "done" (frees everything). With an
 * argument, every mark is also made from a second thread ("t-" names).
 */
#include <pthread.h>
#include <stdlib.h>

#include "allocrr/mark.h"

static void *second(void *arg)
{
	(void)arg;
	allocrr_mark("t-load");
	free(malloc(333));
	allocrr_mark("t-done");
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argv;
	void *p[150];
	allocrr_mark("load");
	for (int i = 0; i < 100; i++)
		p[i] = malloc(111);
	allocrr_mark("work");
	for (int i = 100; i < 150; i++)
		p[i] = malloc(222);
	allocrr_mark("done");
	for (int i = 0; i < 150; i++)
		free(p[i]);
	if (argc > 1) {
		pthread_t t;
		pthread_create(&t, NULL, second, NULL);
		pthread_join(t, NULL);
	}
	return 0;
}

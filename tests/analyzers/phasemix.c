/*
 * phasemix.c - phases marked with allocrr_mark() whose size and lifetime
 * mixes differ, known exactly: "small" keeps 200 mallocs of 24 bytes and
 * 100 of 48; "large" makes 10 mallocs of 100,000 bytes, each freed at once
 * (a lifetime of one event); "hold" frees the small blocks after sleeping
 * 30 ms (every lifetime >= 30 ms) and allocates nothing.
 */
#include <stdlib.h>
#include <time.h>

#include "allocrr/mark.h"

int main(void)
{
	static void *p[300];
	allocrr_mark("small");
	for (int i = 0; i < 300; i++)
		p[i] = malloc(i < 200 ? 24 : 48);
	allocrr_mark("large");
	for (int i = 0; i < 10; i++)
		free(malloc(100000));
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL);
	allocrr_mark("hold");
	for (int i = 0; i < 300; i++)
		free(p[i]);
	allocrr_mark("end");
	return 0;
}

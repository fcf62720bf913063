/*
 * leaker.c - leaks a known amount at a known rate: every 10 ms, a 64 KiB
 * block written end to end (so it is resident) and never freed, beside a
 * short-lived 100-byte block. argv[1]: blocks to leak (default 100).
 * No stdio: the program's only allocations are its own.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEAK_SIZE 65536

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < n; i++) {
		char *leak = malloc(LEAK_SIZE);
		if (!leak)
			return 1;
		memset(leak, i, LEAK_SIZE);
		char *tmp = malloc(100);
		if (!tmp)
			return 1;
		memset(tmp, 0, 100);
		free(tmp);
		nanosleep(&ts, NULL);
	}
	return 0;
}

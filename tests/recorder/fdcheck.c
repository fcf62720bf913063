/*
 * fdcheck.c FILE - what a program sees of its fds under the recorder: it
 * closes every fd above 2 (close_range, as daemons and shells do), then
 * opens /dev/null five times with allocations and pauses between (the
 * recorder samples RSS and writes its trace meanwhile), prints the numbers
 * it got, then for 200 ms opens and closes /dev/null again and again,
 * counting the opens that did not get fd 8 (the lowest free), then puts FILE on fds 1000 and 1001 with dup2 (where the
 * recorder keeps its own), allocates more and writes one line to fd 1000.
 * Natively and recorded, the numbers and FILE's bytes must be the same.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void churn(int n)
{
	void *p[64] = {0};
	for (int i = 0; i < n; i++) {
		free(p[i & 63]);
		p[i & 63] = malloc((size_t)(i % 200) + 1);
	}
	for (int i = 0; i < 64; i++)
		free(p[i]);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (syscall(SYS_close_range, 3u, ~0u, 0) < 0)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	int fds[5];
	for (int i = 0; i < 5; i++) {
		churn(40000);
		struct timespec ts = {0, 15000000};
		nanosleep(&ts, NULL);
		fds[i] = open("/dev/null", O_RDONLY);
	}
	int moved = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = open("/dev/null", O_RDONLY);
		moved += fd != 8;
		close(fd);
		churn(50);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 200000000L);
	int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0 || dup2(f, 1000) != 1000 || dup2(f, 1001) != 1001)
		return 3;
	churn(300000);
	if (write(1000, "mine\n", 5) != 5)
		return 4;
	printf("%d %d %d %d %d %d, %d opens elsewhere\n", fds[0], fds[1], fds[2], fds[3], fds[4], f, moved);
	return 0;
}

/*
 * calls.c - every recorded function, called a known number of times, with
 * failures. Logs what each call got (via write(2), no stdio, so the log
 * itself allocates nothing) for the test to compare with the trace.
 * Exits non-zero if a call's errno was disturbed.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int logfd = 1;
static int bad;

static void logline(const char *op, unsigned long long a, unsigned long long b, unsigned long long c, const void *ptr,
		    const void *ret, int err)
{
	char line[256];
	int n = snprintf(line, sizeof line, "%s %llu %llu %llu %p %p %d\n", op, a, b, c, ptr, ret, err);
	if (write(logfd, line, (size_t)n) != n)
		bad = 1;
}

/* errno must be what the call left, not what the recorder did. */
#define KEEP_ERRNO(call, expect_err)                                                               \
	do {                                                                                       \
		errno = 777;                                                                       \
		call;                                                                              \
		if (errno != (expect_err)) {                                                       \
			dprintf(2, "errno after %s is %d, want %d\n", #call, errno, (expect_err)); \
			bad = 1;                                                                   \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc > 1 && (logfd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		return 2;
	void *start = malloc(1234567);
	free(start);
	uintptr_t sp1, sp4;
	void *p1, *p2, *p3, *p4, *r, *p5, *p6, *p7, *p8 = 0, *p9 = 0, *p10, *p11, *p12, *p13, *p14, *p15;
	int rc;
	KEEP_ERRNO(p1 = malloc(100), 777);
	logline("malloc", 100, 0, 0, 0, p1, 0);
	KEEP_ERRNO(p2 = calloc(10, 20), 777);
	logline("calloc", 10, 20, 0, 0, p2, 0);
	sp1 = (uintptr_t)p1; /* the log prints the old address, never uses it */
	KEEP_ERRNO(p3 = realloc(p1, 300), 777);
	logline("realloc", 300, 0, 0, (void *)sp1, p3, 0);
	KEEP_ERRNO(p4 = realloc(NULL, 50), 777);
	logline("realloc", 50, 0, 0, 0, p4, 0);
	sp4 = (uintptr_t)p4;
	r = realloc(p4, 0);
	logline("realloc", 0, 0, 0, (void *)sp4, r, errno);
	KEEP_ERRNO(p5 = reallocarray(NULL, 4, 25), 777);
	logline("reallocarray", 4, 25, 0, 0, p5, 0);
	KEEP_ERRNO(p6 = reallocarray(p5, 8, 25), 777);
	logline("reallocarray", 8, 25, 0, p5, p6, 0);
	/* impossible sizes, read through a volatile so that the compiler does
	 * not warn about calls that are meant to fail */
	static volatile size_t size_max = SIZE_MAX;
	KEEP_ERRNO(p7 = reallocarray(p6, size_max / 2, 4), ENOMEM);
	logline("reallocarray", SIZE_MAX / 2, 4, 0, p6, p7, ENOMEM);
	KEEP_ERRNO(rc = posix_memalign(&p8, 64, 1000), 777);
	logline("posix_memalign", 64, 1000, 0, 0, p8, rc);
	KEEP_ERRNO(rc = posix_memalign(&p9, 3, 10), 777);
	logline("posix_memalign", 3, 10, 0, 0, rc ? NULL : p9, rc);
	KEEP_ERRNO(p10 = aligned_alloc(256, 512), 777);
	logline("aligned_alloc", 256, 512, 0, 0, p10, 0);
	KEEP_ERRNO(p11 = memalign(4096, 100), 777);
	logline("memalign", 4096, 100, 0, 0, p11, 0);
	KEEP_ERRNO(p12 = valloc(5000), 777);
	logline("valloc", 5000, 0, 0, 0, p12, 0);
	KEEP_ERRNO(p13 = pvalloc(5000), 777);
	logline("pvalloc", 5000, 0, 0, 0, p13, 0);
	KEEP_ERRNO(p14 = malloc(size_max), ENOMEM);
	logline("malloc", SIZE_MAX, 0, 0, 0, p14, ENOMEM);
	KEEP_ERRNO(p15 = calloc(size_max, 2), ENOMEM);
	logline("calloc", SIZE_MAX, 2, 0, 0, p15, ENOMEM);
	KEEP_ERRNO(free(NULL), 777);
	logline("free", 0, 0, 0, 0, 0, 0);
	void *frees[] = {p2, p3, p6, p8, p10, p11, p12, p13};
	for (size_t i = 0; i < sizeof frees / sizeof *frees; i++) {
		KEEP_ERRNO(free(frees[i]), 777);
		logline("free", 0, 0, 0, frees[i], 0, 0);
	}
	void *end = malloc(7654321);
	free(end);
	return bad;
}

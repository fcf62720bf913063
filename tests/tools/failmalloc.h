/*
 * failmalloc.h - the malloc family replaced for a whole test process
 * (zstd's allocations included), counting the blocks handed out and failing
 * the Nth call on request: SQLite's malloc tests are the model. Include it
 * in exactly one file of a test executable (not a sanitizer build: it
 * replaces malloc).
 *
 *   armed = 1;          count (and fail) from now on
 *   countdown = n;      the (n+1)th armed allocation fails; -1: none
 *   live                blocks handed out while armed and not freed
 */
#ifndef ARR_TEST_FAILMALLOC_H
#define ARR_TEST_FAILMALLOC_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

long countdown = -1; /* fail when it reaches 0; -1: never */
long live;           /* blocks handed out and not freed */
static void *(*real_malloc)(size_t), *(*real_calloc)(size_t, size_t), *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
int armed;

/* Our own malloc family for the whole process (zstd's included), counting
 * and failing on request. Only calls made while `armed` count. */
static int fail_now(void)
{
	/* The merge's read-ahead thread allocates too: atomics keep the count
	 * exact, though which thread meets the failure may vary. */
	if (!armed || __atomic_load_n(&countdown, __ATOMIC_RELAXED) < 0)
		return 0;
	return __atomic_fetch_sub(&countdown, 1, __ATOMIC_RELAXED) == 0;
}

static void resolve(void)
{
	if (!real_malloc) {
		real_malloc = dlsym(RTLD_NEXT, "malloc");
		real_calloc = dlsym(RTLD_NEXT, "calloc");
		real_realloc = dlsym(RTLD_NEXT, "realloc");
		real_free = dlsym(RTLD_NEXT, "free");
	}
}

void *malloc(size_t n)
{
	resolve();
	if (fail_now())
		return NULL;
	void *p = real_malloc(n);
	if (p && armed)
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return p;
}

static char boot[4096]; /* dlsym's own calloc, before we know the real one */

void *calloc(size_t a, size_t b)
{
	if (!real_calloc) {
		memset(boot, 0, sizeof boot);
		return a * b <= sizeof boot ? boot : NULL;
	}
	if (fail_now())
		return NULL;
	void *p = real_calloc(a, b);
	if (p && armed)
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return p;
}

void *realloc(void *q, size_t n)
{
	resolve();
	if (fail_now())
		return NULL;
	void *p = real_realloc(q, n);
	if (p && !q && armed)
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return p;
}

void free(void *p)
{
	resolve();
	if (!p || p == (void *)boot)
		return;
	if (armed)
		__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	real_free(p);
}

#endif

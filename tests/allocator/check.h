/*
 * tests/allocator/check.h - the allocator tests' CHECK(): a failed
 * condition is printed with its file and line and counted in `failures`
 * (the test exits non-zero if any failed); the test goes on, so one run
 * shows every broken check. And resident_pages(), by mincore().
 */
#ifndef ALLOCRR_TESTS_ALLOCATOR_CHECK_H
#define ALLOCRR_TESTS_ALLOCATOR_CHECK_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "allocrr/alloc.h"

static int failures;
#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                              \
		}                                                                                \
	} while (0)

/* Resident OS pages wholly inside [p, p + size), by mincore(); `unmapped`
 * when part of the range is not mapped (0 to count it as not resident, or
 * a value no check expects). */
static inline unsigned resident_pages_or(const void *p, size_t size, unsigned unmapped)
{
	unsigned char vec[256];
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)p + size) & ~(uintptr_t)4095;
	unsigned n = 0;
	while (a < e) {
		size_t np = (e - a) / 4096 < sizeof vec ? (e - a) / 4096 : sizeof vec;
		if (mincore((void *)a, np * 4096, vec) != 0)
			return unmapped;
		for (size_t i = 0; i < np; i++)
			n += vec[i] & 1;
		a += np * 4096;
	}
	return n;
}

/* Resident OS pages of [p, p + size); an unmapped range counts as none. */
static inline unsigned resident_pages(const void *p, size_t size) { return resident_pages_or(p, size, 0); }

/* fn run in a thread of its own and joined, with sparse classes for any
 * number of busy threads meanwhile (main counts as busy too). */
static inline void run_thread_sparse(void *(*fn)(void *))
{
	long long thr;
	CHECK(arr_alloc_get_option("sparse_threads", &thr) == 0);
	CHECK(arr_alloc_set_option("sparse_threads", 0) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
	pthread_join(t, NULL);
	CHECK(arr_alloc_set_option("sparse_threads", thr) == 0);
}

/* A block of `size` from arr_malloc, every byte written (resident). */
static inline unsigned char *written(size_t size)
{
	unsigned char *p = arr_malloc(size);
	CHECK(p != NULL);
	if (p)
		memset(p, 0x5a, size);
	return p;
}

/* n malloc/free pairs of one small block: the op clock advances by 2n (the
 * purge delays count it), no span and no page is freed or taken. */
static inline void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = arr_malloc(64);
		CHECK(p != NULL);
		arr_free(p);
	}
}

/* Resident OS pages of the odd blocks of v[0..n), `size` bytes each: the
 * holes left by freeing every other block. */
static inline unsigned odd_resident(unsigned char *const *v, int n, size_t size)
{
	unsigned r = 0;
	for (int i = 1; i < n; i += 2)
		r += resident_pages(v[i], size);
	return r;
}
#endif

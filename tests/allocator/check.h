/*
 * tests/allocator/check.h - the allocator tests' CHECK(): a failed
 * condition is printed with its file and line and counted in `failures`
 * (the test exits non-zero if any failed); the test goes on, so one run
 * shows every broken check.
 */
#ifndef ALLOCRR_TESTS_ALLOCATOR_CHECK_H
#define ALLOCRR_TESTS_ALLOCATOR_CHECK_H
#include <stdio.h>

static int failures;
#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                              \
		}                                                                                \
	} while (0)
#endif

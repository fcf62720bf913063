/*
 * tests/formats/check.h - the format tests' CHECK(cond, fmt, ...): a failed
 * condition is printed with its file, line and a message, and the test
 * exits 1 at once (what follows would read a broken trace).
 */
#ifndef ALLOCRR_TESTS_FORMATS_CHECK_H
#define ALLOCRR_TESTS_FORMATS_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
			exit(1);                                                                 \
		}                                                                                \
	} while (0)
#endif

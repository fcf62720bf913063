/* stacks_lib.c - a library that stacks.c loads with dlopen: its frames
 * must be named although it was not mapped when recording started. */
#include <stdlib.h>

__attribute__((noinline)) void *lib_alloc(size_t n)
{
	void *p = malloc(n); /* LIB */
	__asm__ volatile("" ::: "memory");
	return p;
}

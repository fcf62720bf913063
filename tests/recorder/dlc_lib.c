/* dlc_lib.c - built twice (DLC_NAME = dlc_alloc_a, dlc_alloc_b) as two
 * libraries of the same size for the dlclose test: the second is loaded
 * where the first was. */
#include <stdlib.h>

__attribute__((noinline)) void *DLC_NAME(size_t n)
{
	void *p = malloc(n); /* DLC_CALL */
	if (p)
		*(volatile char *)p = 1;
	return p;
}

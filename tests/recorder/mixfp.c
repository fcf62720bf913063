/*
 * mixfp.c - one stack through code with and without frame pointers: main
 * and mix_leaf are built with them, mix_middle (mixfp_lib.c, a shared
 * library) without. mix_leaf allocates 5555 bytes and leaks them.
 */
#include <stdio.h>
#include <stdlib.h>

size_t mix_middle(void *(*cb)(size_t), size_t n, volatile size_t *sink);

__attribute__((noinline)) void *mix_leaf(size_t n)
{
	void *p = malloc(n); /* LEAF */
	if (p)
		*(volatile char *)p = 1;
	return p;
}

int main(void)
{
	volatile size_t sink;
	mix_middle(mix_leaf, 5555, &sink); /* MAIN */
	printf("%zu\n", (size_t)sink != 0);
	return 0;
}

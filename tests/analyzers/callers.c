/*
 * callers.c - who is charged for memory that goes through a wrapper or a
 * recursion (built -O1 -g, frame pointers, no inlining of the functions
 * below):
 *  - xmalloc(), the libiberty/git kind of wrapper, called by three loaders:
 *    load_a makes 100 blocks of 1000 bytes, load_b 200, load_c 300 (all
 *    leaked); each loader is its own site, called "via" xmalloc;
 *  - my_alloc(), a program's own wrapper named like one, called by two
 *    functions (50 and 70 blocks of 500 bytes, leaked): two sites too;
 *  - grow_buffer_alloc(), named like a wrapper but with one caller: it stays
 *    the site (40 blocks of 300 bytes);
 *  - descend(), recursing 150 calls deep and allocating 4096 bytes at the
 *    bottom, 10 times (freed): one node "descend" in the flame graph, its
 *    recursion depth 150, not 150 nested nodes;
 *  - ping() and pong() calling each other 12 rounds deep, and tri_a() ->
 *    tri_b() -> tri_c() -> tri_a() 8 rounds deep, each allocating 2048 bytes
 *    at the bottom 5 times (freed): each cycle drawn once, its rounds in
 *    `recursion` and its length in `cycle` (under the walk's 64 frames, so
 *    the stacks are whole).
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *keep[1000];
static int nkeep;

NOINLINE void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fputs("out of memory\n", stderr);
		exit(1);
	}
	__asm__ volatile("" ::: "memory"); /* no tail call: xmalloc stays on the stack */
	return p;
}

NOINLINE void load_a(void)
{
	for (int i = 0; i < 100; i++)
		keep[nkeep++] = xmalloc(1000); /* LOAD_A */
}
NOINLINE void load_b(void)
{
	for (int i = 0; i < 200; i++)
		keep[nkeep++] = xmalloc(1000); /* LOAD_B */
}
NOINLINE void load_c(void)
{
	for (int i = 0; i < 300; i++)
		keep[nkeep++] = xmalloc(1000); /* LOAD_C */
}

NOINLINE void *my_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

NOINLINE void parse_x(void)
{
	for (int i = 0; i < 50; i++)
		keep[nkeep++] = my_alloc(500); /* PARSE_X */
}
NOINLINE void parse_y(void)
{
	for (int i = 0; i < 70; i++)
		keep[nkeep++] = my_alloc(500); /* PARSE_Y */
}

NOINLINE void *grow_buffer_alloc(size_t n)
{
	void *p = malloc(n); /* GROW */
	__asm__ volatile("" ::: "memory");
	return p;
}

NOINLINE void grow(void)
{
	for (int i = 0; i < 40; i++)
		keep[nkeep++] = grow_buffer_alloc(300);
}

NOINLINE int descend(int depth)
{
	if (!depth) {
		char *p = malloc(4096); /* DESCEND */
		if (!p)
			return 1;
		p[0] = 1;
		int r = p[0];
		free(p);
		return r;
	}
	int r = descend(depth - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: every level stays on the stack */
	return r + 1;
}

NOINLINE int pong(int depth);
NOINLINE int ping(int depth)
{
	if (!depth) {
		char *p = malloc(2048); /* PING */
		if (!p)
			return 1;
		p[0] = 1;
		int r = p[0];
		free(p);
		return r;
	}
	int r = pong(depth);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}
NOINLINE int pong(int depth)
{
	int r = ping(depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

NOINLINE int tri_b(int depth);
NOINLINE int tri_c(int depth);
NOINLINE int tri_a(int depth)
{
	if (!depth) {
		char *p = malloc(2048); /* TRI */
		if (!p)
			return 1;
		p[0] = 1;
		int r = p[0];
		free(p);
		return r;
	}
	int r = tri_b(depth);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}
NOINLINE int tri_b(int depth)
{
	int r = tri_c(depth);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}
NOINLINE int tri_c(int depth)
{
	int r = tri_a(depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(void)
{
	load_a();
	load_b();
	load_c();
	parse_x();
	parse_y();
	grow();
	int sum = 0;
	for (int i = 0; i < 10; i++)
		sum += descend(149);
	for (int i = 0; i < 5; i++)
		sum += ping(12) + tri_a(8);
	printf("blocks=%d sum=%d\n", nkeep, sum);
	return 0;
}

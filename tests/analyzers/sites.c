/*
 * sites.c - call sites with known figures, for test_sites.py: built -O2 -g
 * with frame pointers. The markers in comments name the lines the report
 * must point at.
 *   - make_name() calls grow(), inlined into it: the site is grow's malloc,
 *     inlined into make_name at the CALLER line; the block leaks.
 *   - zeroed(): N callocs from fresh memory, freed, then N more into the
 *     same blocks (reused).
 *   - checker(): 2N small blocks, every other one freed, the rest kept: a
 *     checkerboard of holes in the recorded heap.
 *   - contiguous(): N larger blocks, all kept, back to back; allocated last,
 *     so the trace's peak of live bytes comes after the checkerboard's holes.
 *   - two_lines(): one function allocating on two lines (two return
 *     addresses): two sites in the tables, one frame in the flame graphs.
 * Then everything but the inlined leak is freed.
 */
#include <stdio.h>
#include <stdlib.h>

#define N 2000

static void *volatile sink;
static void *zero_blocks[16], *checker_blocks[2 * N], *contiguous_blocks[N];

static inline __attribute__((always_inline)) char *grow(size_t n)
{
	char *p = malloc(n); /* INLINE */
	if (p)
		p[0] = 0;
	return p;
}

__attribute__((noinline)) char *make_name(size_t n)
{
	char *p = grow(n); /* CALLER */
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void zeroed(void)
{
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 16; i++)
			zero_blocks[i] = calloc(1, 1000); /* CALLOC */
		for (int i = 0; i < 16; i++)
			free(zero_blocks[i]);
	}
}

__attribute__((noinline)) void checker(void)
{
	for (int i = 0; i < 2 * N; i++)
		checker_blocks[i] = malloc(64); /* CHECKER */
	for (int i = 0; i < 2 * N; i += 2) {
		free(checker_blocks[i]);
		checker_blocks[i] = NULL;
	}
}

__attribute__((noinline)) void contiguous(void)
{
	for (int i = 0; i < N; i++)
		contiguous_blocks[i] = malloc(256); /* CONTIGUOUS */
}

__attribute__((noinline)) void two_lines(void)
{
	for (int i = 0; i < 10; i++) {
		sink = malloc(100); /* TWO_A */
		free(sink);
		sink = malloc(200); /* TWO_B */
		free(sink);
	}
}

int main(void)
{
	sink = make_name(333);
	zeroed();
	checker();
	contiguous();
	two_lines();
	for (int i = 0; i < 2 * N; i++)
		free(checker_blocks[i]);
	for (int i = 0; i < N; i++)
		free(contiguous_blocks[i]);
	printf("name at %p\n", sink);
	return 0;
}

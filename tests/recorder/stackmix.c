/*
 * stackmix.c - one allocating leaf reached on 32 paths whose frames are
 * all the same size (main -> m<j> -> c<k> -> leaf), in a pseudo-random
 * order, for test_stackmix.py. Every path puts leaf's frame at the same
 * stack pointer with the same return address into leaf, so the recorder's
 * remembered walks (keyed by that innermost state, unwind.c) see 32
 * stacks for one key and must tell them apart by the stack words alone.
 * The size says the path: 1000 + 8 * j + k. Built with and without frame
 * pointers.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) void *leaf(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

typedef void *(*fn)(size_t);

/* clang-format would join the expansions into one line */
/* clang-format off */

#define C(k)                                                                                                       \
	__attribute__((noinline)) void *c##k(size_t n)                                                             \
	{                                                                                                          \
		void *p = leaf(n);                                                                                 \
		__asm__ volatile("" ::: "memory");                                                                 \
		return p;                                                                                          \
	}
C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7)
static fn const cs[8] = {c0, c1, c2, c3, c4, c5, c6, c7};

#define M(j)                                                                                                       \
	__attribute__((noinline)) void *m##j(unsigned k, size_t n)                                                 \
	{                                                                                                          \
		void *p = cs[k](n);                                                                                \
		__asm__ volatile("" ::: "memory");                                                                 \
		return p;                                                                                          \
	}
M(0) M(1) M(2) M(3)
typedef void *(*mfn)(unsigned, size_t);
static mfn const ms[4] = {m0, m1, m2, m3};
/* clang-format on */

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	unsigned long s = 12345, sum = 0;
	for (long i = 0; i < calls; i++) {
		s = s * 6364136223846793005ul + 1442695040888963407ul;
		unsigned j = (unsigned)(s >> 60) & 3, k = (unsigned)(s >> 56) & 7;
		sink = ms[j](k, 1000 + 8 * j + k);
		sum += j * 8 + k;
		free(sink);
	}
	printf("%lu\n", sum);
	return 0;
}

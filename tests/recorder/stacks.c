/*
 * stacks.c - allocations on known call paths, for the stack tests
 * (test_stacks.py): built with frame pointers, -g -O1. Every block is freed
 * except the one leaky() makes. The markers in comments name the lines the
 * report must point at.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) void *leaky(size_t n)
{
	void *p = malloc(n); /* LEAK */
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *path_b(size_t n)
{
	void *p = leaky(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *path_a(size_t n)
{
	void *p = path_b(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void temp_site(void)
{
	sink = malloc(100); /* TEMP */
	free(sink);
}

__attribute__((noinline)) int recurse(int depth)
{
	if (depth == 0) {
		sink = malloc(777); /* DEEP */
		free(sink);
		return 0;
	}
	int r = recurse(depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) void thread_leaf(void)
{
	sink = calloc(1, 555); /* THREAD */
	free(sink);
}

__attribute__((noinline)) static void *thread_fn(void *arg)
{
	thread_leaf();
	__asm__ volatile("" ::: "memory");
	return arg;
}

int main(int argc, char **argv)
{
	void *leak = path_a(4321);
	for (int i = 0; i < 1000; i++)
		temp_site();
	recurse(200);
	pthread_t th;
	if (pthread_create(&th, NULL, thread_fn, NULL) || pthread_join(th, NULL))
		return 1;
	if (argc > 1) { /* a library loaded now, after the first stacks */
		void *h = dlopen(argv[1], RTLD_NOW);
		void *(*lib_alloc)(size_t) = h ? (void *(*)(size_t))dlsym(h, "lib_alloc") : NULL;
		if (!lib_alloc)
			return 1;
		free(lib_alloc(999));
	}
	printf("leak at %p\n", leak);
	return 0;
}

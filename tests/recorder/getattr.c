/* Threads whose first allocation is made by glibc inside pthread_getattr_np()
 * on themselves, with the thread's own lock held (the cpuset's realloc): the
 * JVM does this at the start of every thread. A recorder that asks
 * pthread_getattr_np() for the thread's stack from inside that realloc waits
 * for the lock its own thread holds, forever. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *body(void *arg)
{
	pthread_attr_t at;
	if (pthread_getattr_np(pthread_self(), &at) != 0)
		return NULL;
	size_t sz = 0;
	void *addr;
	pthread_attr_getstack(&at, &addr, &sz);
	pthread_attr_destroy(&at);
	void *p = malloc(333); /* one allocation with a known size after it */
	free(p);
	*(size_t *)arg = sz;
	return arg;
}

int main(void)
{
	enum { N = 4 };
	pthread_t th[N];
	size_t sz[N] = {0};
	for (int i = 0; i < N; i++)
		if (pthread_create(&th[i], NULL, body, &sz[i]) != 0)
			return 1;
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++)
		if (!sz[i])
			return 1;
	printf("ok %d threads\n", N);
	return 0;
}

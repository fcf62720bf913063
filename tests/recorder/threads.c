/*
 * threads.c - 4 threads; thread i allocates N blocks of 1000+i bytes and
 * hands each to thread (i+1)%4, which frees it. Every free is done by a
 * thread other than the allocating one.
 */
#include <pthread.h>
#include <stdlib.h>

#define T 4
#define N 20000

struct ring {
	pthread_mutex_t m;
	pthread_cond_t c;
	void *slot[N];
	int head, tail;
};
static struct ring rings[T];

static void *worker(void *arg)
{
	int i = (int)(long)arg, from = (i + T - 1) % T, got = 0, made = 0;
	while (made < N || got < N) {
		if (made < N) {
			void *p = malloc(1000 + (size_t)i);
			*(volatile char *)p = 1;
			struct ring *r = &rings[i];
			pthread_mutex_lock(&r->m);
			r->slot[r->tail++] = p;
			pthread_cond_signal(&r->c);
			pthread_mutex_unlock(&r->m);
			made++;
		}
		struct ring *r = &rings[from];
		pthread_mutex_lock(&r->m);
		while (made == N && r->head == r->tail)
			pthread_cond_wait(&r->c, &r->m);
		void *q = r->head < r->tail ? r->slot[r->head++] : NULL;
		pthread_mutex_unlock(&r->m);
		if (q) {
			free(q);
			got++;
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t th[T];
	for (int i = 0; i < T; i++) {
		pthread_mutex_init(&rings[i].m, NULL);
		pthread_cond_init(&rings[i].c, NULL);
	}
	for (int i = 0; i < T; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	return 0;
}

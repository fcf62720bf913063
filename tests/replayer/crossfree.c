/*
 * crossfree.c - every block is freed (or resized, then freed) by another
 * thread than the one that allocated it. Producers allocate a batch and hand
 * it to their consumer; the consumer frees half, reallocates the other half
 * and hands those back for the producer to free. Exercises sync points.
 *
 * Hand-offs pause 50 us: the recorder's per-thread clocks may disagree by a
 * few microseconds, and this test is about replay, not clock repair.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAIRS 2
#define BATCHES 100
#define BATCH 100

struct pair {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void *items[BATCH];
	int state; /* 0: producer's turn, 1: consumer's, 2: back to producer */
};

static struct pair pairs[PAIRS];

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void wait_state(struct pair *p, int s)
{
	pthread_mutex_lock(&p->mu);
	while (p->state != s)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pause_us(50);
}

static void set_state(struct pair *p, int s)
{
	pause_us(50);
	pthread_mutex_lock(&p->mu);
	p->state = s;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void *producer(void *arg)
{
	struct pair *p = arg;
	for (int b = 0; b < BATCHES; b++) {
		wait_state(p, 0);
		for (int i = 0; i < BATCH; i++) {
			p->items[i] = malloc(16 + (size_t)((b + i) % 64) * 8);
			memset(p->items[i], 1, 16);
		}
		set_state(p, 1);
		wait_state(p, 2);
		for (int i = 1; i < BATCH; i += 2)
			free(p->items[i]); /* reallocated by the consumer */
		set_state(p, 0);
	}
	set_state(p, 3);
	return NULL;
}

static void *consumer(void *arg)
{
	struct pair *p = arg;
	for (int b = 0; b < BATCHES; b++) {
		wait_state(p, 1);
		for (int i = 0; i < BATCH; i++) {
			if (i % 2 == 0)
				free(p->items[i]); /* allocated by the producer */
			else
				p->items[i] = realloc(p->items[i], 1000);
		}
		set_state(p, 2);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[2 * PAIRS];
	for (int k = 0; k < PAIRS; k++) {
		pthread_mutex_init(&pairs[k].mu, NULL);
		pthread_cond_init(&pairs[k].cv, NULL);
		pthread_create(&th[2 * k], NULL, producer, &pairs[k]);
		pthread_create(&th[2 * k + 1], NULL, consumer, &pairs[k]);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(th[i], NULL);
	return 0;
}

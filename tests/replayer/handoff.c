/*
 * handoff.c - waves handed from one thread to another: the producer
 * allocates a wave of blocks, hands them over, and waits until the consumer
 * has freed every one before it allocates the next. Recorded, the live set
 * never exceeds one wave; a parallel replay whose producer need not wait for
 * the consumer's frees (only a free waits for its malloc) can hold many
 * waves at once unless the replay keeps its threads near the recorded order
 * (the consumer makes 17 calls a block, the producer one: unpaced, the
 * producer is through its waves long before the consumer).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAVES 24
#define BLOCKS 4000
#define SIZE 4096

static void *wave[BLOCKS];
static int full; /* 1: a wave is handed over, 0: freed */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *consumer(void *arg)
{
	(void)arg;
	for (int w = 0; w < WAVES; w++) {
		pthread_mutex_lock(&mu);
		while (!full)
			pthread_cond_wait(&cv, &mu);
		for (int i = 0; i < BLOCKS; i++) {
			free(wave[i]);
			for (int j = 0; j < 8; j++) /* more calls a block here than in the producer */
				free(malloc(32));
		}
		full = 0;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, consumer, NULL))
		return 1;
	for (int w = 0; w < WAVES; w++) {
		pthread_mutex_lock(&mu);
		while (full)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		for (int i = 0; i < BLOCKS; i++) {
			if (!(wave[i] = malloc(SIZE)))
				return 1;
			memset(wave[i], w, SIZE);
		}
		pthread_mutex_lock(&mu);
		full = 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	pthread_join(th, NULL);
	printf("%d waves of %d blocks\n", WAVES, BLOCKS);
	return 0;
}

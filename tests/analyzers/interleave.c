/*
 * interleave.c - threads that allocate in lock step: 4 threads meet at a
 * barrier every round, so the merged trace switches thread every few
 * events (runs far shorter than the analysis gathers, see core.c). Each
 * round a thread makes 3 blocks (sizes by thread and round), frees the 3 it
 * made two rounds before, and frees one block its neighbour made the round
 * before (cross-thread frees); thread 0 marks a phase every 25 rounds.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/mark.h"

#define NT 4
#define ROUNDS 200
#define PER 3

static pthread_barrier_t bar;
static void *blk[NT][ROUNDS][PER];
static void *gift[NT][ROUNDS]; /* made by thread i in round r, freed by thread i+1 in round r+1 */

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&bar);
		if (me == 0 && r % 25 == 0) {
			char name[16] = "round-";
			name[6] = (char)('a' + r / 25);
			name[7] = 0;
			allocrr_mark(name);
		}
		for (int k = 0; k < PER; k++)
			blk[me][r][k] = malloc(16 + 8 * (size_t)(me + k) + (size_t)(r % 7) * 40);
		gift[me][r] = malloc(100 + (size_t)me);
		if (r >= 2)
			for (int k = 0; k < PER; k++)
				free(blk[me][r - 2][k]);
		if (r >= 1)
			free(gift[(me + NT - 1) % NT][r - 1]);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[NT];
	pthread_barrier_init(&bar, NULL, NT);
	for (int i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
			return 1;
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	return 0;
}

/*
 * manythreads.c [ROUNDS] - ROUNDS x 50 short-lived threads (default 40:
 * 2000), 50 at a time, each doing one malloc(77) and its free.
 */
#include <pthread.h>
#include <stdlib.h>

static void *one(void *arg)
{
	free(malloc(77));
	return arg;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	for (int round = 0; round < rounds; round++) {
		pthread_t th[50];
		for (int i = 0; i < 50; i++)
			if (pthread_create(&th[i], NULL, one, NULL))
				return 1;
		for (int i = 0; i < 50; i++)
			pthread_join(th[i], NULL);
	}
	return 0;
}

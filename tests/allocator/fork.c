/*
 * tests/allocator/fork.c - fork while other threads allocate and free.
 * The child must be able to allocate, free (including blocks owned by
 * threads that no longer exist in it) and exit without deadlocking on a lock
 * another thread held at fork time. A child that hangs is killed by alarm().
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"

static _Atomic int stop;
static void *_Atomic shared[64];

static void *churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;
	while (!stop) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (size_t)(s >> 40) % 70000 + 1;
		void *p = arr_malloc(n);
		memset(p, 0xab, n < 256 ? n : 256);
		/* swap with a shared slot: blocks cross threads and get freed remotely */
		void *old = atomic_exchange(&shared[(s >> 20) % 64], p);
		arr_free(old);
	}
	return NULL;
}

int main(void)
{
	enum { THREADS = 3, FORKS = 40 };
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, churn, (void *)(intptr_t)(i + 1));
	int failures = 0;
	for (int f = 0; f < FORKS; f++) {
		usleep(2000);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			alarm(10);
			void *v[2000];
			for (int r = 0; r < 5; r++) {
				for (int i = 0; i < 2000; i++) {
					v[i] = arr_malloc((size_t)(i * 97 % 9000) + 1);
					if (v[i] == NULL)
						_exit(3);
					memset(v[i], i, (size_t)(i * 97 % 9000) + 1);
				}
				for (int i = 0; i < 2000; i++)
					arr_free(v[i]);
			}
			for (int i = 0; i < 64; i++) /* blocks of the vanished threads */
				arr_free(atomic_exchange(&shared[i], NULL));
			void *big = arr_calloc(1, (size_t)4 << 20);
			if (big == NULL || ((char *)big)[12345] != 0)
				_exit(4);
			arr_free(big);
			_exit(0);
		}
		int status = 0;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork %d: child failed (status 0x%x)\n", f, status);
			failures++;
		}
	}
	stop = 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 64; i++)
		arr_free(atomic_exchange(&shared[i], NULL));
	if (failures)
		return 1;
	printf("fork: %d forks under 3 allocating threads ok\n", FORKS);
	return 0;
}

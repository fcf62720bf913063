/*
 * forkthreads.c - fork 20 times while 3 other threads allocate without
 * pause; each child makes 100 x malloc(4242) and exits. Every child must
 * leave a whole trace and the parent must not hang or lose its own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void *churn(void *arg)
{
	void *keep[64] = {0};
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		free(keep[i & 63]);
		keep[i & 63] = malloc(16 + (i % 500));
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return arg;
}

int main(void)
{
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, churn, NULL);
	for (int f = 0; f < 20; f++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 100; i++)
				free(malloc(4242));
			exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		usleep(2000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	return 0;
}

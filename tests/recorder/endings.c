/*
 * endings.c MODE - 5 x malloc(555) and a thread that allocates, then end
 * the process one way: return, exit, _exit, abort, segv, term, kill, exec,
 * pthread_exit (main ends as a thread; glibc exits when the last one does).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *side(void *arg)
{
	free(malloc(556));
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "return";
	void *keep[5];
	for (int i = 0; i < 5; i++)
		keep[i] = malloc(555);
	pthread_t th;
	pthread_create(&th, NULL, side, NULL);
	pthread_join(th, NULL);
	if (!strcmp(mode, "exit"))
		exit(3);
	if (!strcmp(mode, "_exit"))
		_exit(4);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "segv"))
		*(volatile int *)(long)argc = 0;
	if (!strcmp(mode, "term"))
		raise(SIGTERM);
	if (!strcmp(mode, "kill"))
		raise(SIGKILL);
	if (!strcmp(mode, "exec"))
		execl("/bin/true", "true", (char *)0);
	if (!strcmp(mode, "pthread_exit"))
		pthread_exit(NULL);
	for (int i = 0; i < 5; i++)
		free(keep[i]);
	return 0;
}

/*
 * vforker.c - vfork then execve of itself ("child") with an environment of
 * only "A=1" (no LD_PRELOAD), from a thread that allocates before and after;
 * the child makes ten malloc(909). The parent makes ten malloc(808) after the
 * child is gone, and a SIGKILLed grandchild (fork, allocate, wait for the
 * recorder to write its full buffers, kill itself) leaves a cut trace behind.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		for (int i = 0; i < 10; i++)
			free(malloc(909));
		return 0;
	}
	free(malloc(707));
	pid_t pid = vfork();
	if (pid == 0) {
		char *av[] = {argv[0], "child", NULL}, *ev[] = {"A=1", NULL};
		execve("/proc/self/exe", av, ev);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 3;
	for (int i = 0; i < 10; i++)
		free(malloc(808));
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 100000; i++)
			free(malloc(606));
		struct timespec ts = {0, 300000000}; /* the flusher writes what is queued */
		nanosleep(&ts, NULL);
		kill(getpid(), SIGKILL);
	}
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 4;
}

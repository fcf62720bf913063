/*
 * forker.c - parent: 11 x malloc(111), fork; child: 22 x malloc(222) and
 * exit; parent waits, then 33 x malloc(333).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void allocs(int n, size_t size)
{
	for (int i = 0; i < n; i++)
		free(malloc(size));
}

int main(void)
{
	allocs(11, 111);
	pid_t pid = fork();
	if (pid == 0) {
		allocs(22, 222);
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	allocs(33, 333);
	printf("%d\n", (int)pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

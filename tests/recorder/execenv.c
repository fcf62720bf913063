/*
 * execenv.c - a program that takes the recorder out of its children's
 * environment. `execenv` posix_spawns `execenv spawned` with an environment
 * of only "LD_PRELOAD=" and waits for it, then unsets LD_PRELOAD and every
 * ALLOCRR_* variable and execv's `execenv exec1`, which execve's `execenv
 * exec2` with an empty environment. Each of the three children makes ten
 * malloc(700 + k) calls (k = 1 spawned, 2 exec1, 3 exec2) before going on.
 */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void mark_calls(size_t size)
{
	for (int i = 0; i < 10; i++)
		free(malloc(size));
}

int main(int argc, char **argv)
{
	const char *self = "/proc/self/exe";
	if (argc > 1 && !strcmp(argv[1], "spawned")) {
		mark_calls(701);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "exec1")) {
		mark_calls(702);
		char *av[] = {argv[0], "exec2", NULL}, *ev[] = {NULL};
		execve(self, av, ev);
		return 5;
	}
	if (argc > 1 && !strcmp(argv[1], "exec2")) {
		mark_calls(703);
		return 0;
	}
	char *sav[] = {argv[0], "spawned", NULL}, *sev[] = {"LD_PRELOAD=", NULL};
	pid_t pid;
	if (posix_spawn(&pid, self, NULL, NULL, sav, sev) != 0)
		return 3;
	int st;
	waitpid(pid, &st, 0);
	unsetenv("LD_PRELOAD");
	for (int again = 1; again;) { /* unsetenv moves entries: rescan */
		again = 0;
		for (char **e = environ; *e; e++)
			if (!strncmp(*e, "ALLOCRR_", 8)) {
				char name[256];
				size_t n = strcspn(*e, "=");
				memcpy(name, *e, n < 255 ? n : 255);
				name[n < 255 ? n : 255] = 0;
				unsetenv(name);
				again = 1;
				break;
			}
	}
	char *av[] = {argv[0], "exec1", NULL};
	execv(self, av);
	return 4;
}

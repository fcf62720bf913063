/*
 * runstat: run a command, then report its wall time, peak RSS and page faults.
 *
 * Usage: runstat STATFILE CMD [ARG...]
 *
 * Writes one line "SECONDS MAXRSS_KIB STATUS MINFLT" to STATFILE and exits with the
 * command's status (128+N if killed by signal N). Stdin, stdout and stderr
 * are the command's own. MAXRSS is ru_maxrss from wait4: the largest RSS of
 * the command or of any descendant it waited for (e.g. cc1 under gcc, the
 * program under `allocrr record`), like `/usr/bin/time -f %M`, without
 * needing that package. MINFLT is ru_minflt, the minor page faults of the same
 * processes: the pages a program (and its allocator) touched, which max RSS
 * rounds away on small programs. It comes last so that readers of the first
 * three fields keep working.
 *
 * RUNSTAT_PRELOAD=LIB in the environment: the command runs with
 * LD_PRELOAD=LIB, set in the child just before the exec, so runstat itself
 * and the child's copy of it before the exec run without it. ru_maxrss keeps
 * the child's largest RSS before the exec too (the kernel carries the old
 * image's high-water mark over): under `env LD_PRELOAD=LIB runstat ...`,
 * runstat's own malloc calls put the preloaded allocator's pages in that copy,
 * ~1.1 MB, about what `true` holds, which then measured runstat, not `true`.
 *
 * Build: cc -O2 runstat.c -o runstat
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	FILE *out;
	pid_t pid;
	int status, code;
	double secs;

	if (argc < 3 || strcmp(argv[1], "--help") == 0) {
		fprintf(argc < 3 ? stderr : stdout, "usage: runstat STATFILE CMD [ARG...]\n");
		return argc < 3 ? 2 : 0;
	}
	out = fopen(argv[1], "w");
	if (out == NULL) {
		fprintf(stderr, "runstat: cannot open '%s': %s\n", argv[1], strerror(errno));
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "runstat: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		const char *pre = getenv("RUNSTAT_PRELOAD");
		fclose(out);
		if (pre != NULL) {
			if (*pre != 0)
				setenv("LD_PRELOAD", pre, 1);
			unsetenv("RUNSTAT_PRELOAD");
		}
		execvp(argv[2], argv + 2);
		fprintf(stderr, "runstat: cannot run '%s': %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "runstat: wait4: %s\n", strerror(errno));
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	fprintf(out, "%.4f %ld %d %ld\n", secs, ru.ru_maxrss, code, ru.ru_minflt);
	if (fclose(out) != 0) {
		fprintf(stderr, "runstat: cannot write '%s'\n", argv[1]);
		return 2;
	}
	return code;
}

/*
 * harden_oom.c TRACE - make the Nth allocation fail, for N = 1, 2, ... until
 * a run needs no more, in each of: `allocrr info`, `allocrr info --json`,
 * `allocrr dump`, `allocrr dump --json` (the commands themselves, compiled
 * in) and the replayer's preparation (arr_workload_build). Each run must
 * fail cleanly (exit 1 / ARR_ENOMEM) or succeed with exactly the output of a
 * run without failures; never crash; free everything it took; and leave no
 * temporary or partial workload behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocrr/replay.h"
#include "cli.h"
#include "failmalloc.h"

static char dir[64] = "/tmp/harden-oom.XXXXXX", out[128], wl[128];

/* Files in dir other than the command output. */
static int stray_files(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "out"))
			n++;
	if (d)
		closedir(d);
	return n;
}

static int run(int kind, const char *trace)
{
	if (kind == 4) { /* preparation */
		unlink(wl);
		struct arr_trace *tr;
		int rc = arr_trace_open(&tr, trace);
		if (rc == 0) {
			struct arr_workload_info info;
			rc = arr_workload_build(tr, wl, 0, &info);
		}
		arr_trace_close(tr);
		return rc;
	}
	char *argv[4] = {kind < 2 ? "info" : "dump", (char *)trace, NULL, NULL};
	int argc = 2;
	if (kind & 1) {
		argv[1] = "--json";
		argv[2] = (char *)trace;
		argc = 3;
	}
	/* the command prints to stdout: into a file, compared below */
	fflush(stdout);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int saved = dup(1);
	dup2(fd, 1);
	close(fd);
	int status = kind < 2 ? cmd_info(argc, argv) : cmd_dump(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return status;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	char *b = malloc(*len + 1);
	if (b && fread(b, 1, *len, f) != *len)
		*len = 0;
	fclose(f);
	return b;
}

static const char *const names[] = {"info", "info --json", "dump", "dump --json", "prepare"};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: harden_oom TRACE\n");
		return 2;
	}
	if (!mkdtemp(dir))
		return 2;
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(wl, sizeof wl, "%s/t.wl", dir);
	/* failed runs report "out of memory" on stderr: keep it quiet */
	int err = dup(2), null = open("/dev/null", O_WRONLY);
	int failed = 0;
	for (int kind = 0; kind < 5 && !failed; kind++) {
		const char *result = kind == 4 ? wl : out;
		run(kind, argv[1]); /* unarmed: stdio buffers, glibc's thread caches */
		armed = 1;
		live = 0;
		int rc = run(kind, argv[1]);
		armed = 0;
		size_t want_len = 0;
		char *want = slurp(result, &want_len);
		if (rc != 0 || live != 0 || !want) {
			fprintf(stderr, "harden_oom: %s without failures: status %d, %ld blocks not freed\n",
				names[kind], rc, live);
			return 1;
		}
		long n;
		dup2(null, 2);
		for (n = 0;; n++) {
			live = 0;
			countdown = n;
			armed = 1;
			rc = run(kind, argv[1]);
			armed = 0;
			long left = countdown;
			countdown = -1;
			const char *why = NULL;
			if (kind == 4 ? rc != 0 && rc != ARR_ENOMEM : rc != 0 && rc != EXIT_BAD_INPUT)
				why = "neither success nor a clean failure";
			else if (live != 0)
				why = "blocks not freed";
			else if (stray_files() != (kind == 4 && rc == 0))
				why = "a temporary or partial workload left behind";
			else if (rc == 0) {
				size_t len = 0;
				char *got = slurp(result, &len);
				if (!got || len != want_len || memcmp(got, want, len))
					why = "succeeded with another output";
				free(got);
			}
			if (why) {
				dup2(err, 2);
				fprintf(stderr,
					"harden_oom: %s, allocation %ld failing: %s (status %d, %ld blocks live)\n",
					names[kind], n, why, rc, live);
				failed = 1;
				break;
			}
			if (left >= 0) /* no allocation failed: the run needs no more */
				break;
		}
		dup2(err, 2);
		free(want);
		if (!failed)
			printf("%s: %ld allocations failed in turn\n", names[kind], n);
	}
	unlink(out);
	unlink(wl);
	rmdir(dir);
	return failed;
}

/*
 * engine.c - allocrr-replay-engine: replay one workload into whatever malloc
 * this process has (LD_PRELOAD), write the result to a file descriptor.
 * Exec'd fresh per allocator by `allocrr replay`; usable by hand, e.g. under
 * `allocrr record` to check a replay's fidelity:
 *
 *   allocrr-replay-engine [--threads serial|parallel|auto] [--touch none|page|all]
 *                         [--samples N] [--latency-every N] [--pace N] [--glibc-stats]
 *                         [--zeroing as_recorded|calloc_as_malloc|calloc_as_malloc_memset]
 *                         [--measure-usable] [--result-fd FD] WORKLOAD
 *
 * Without --result-fd it prints a one-line summary. Exit 0, 1 on a replay
 * error, 2 on bad usage. It never prints once the replay has started.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/replay.h"

static int usage(void)
{
	fputs("usage: allocrr-replay-engine [--threads serial|parallel|auto] [--touch none|page|all]\n"
	      "       [--samples N] [--latency-every N] [--pace N] [--glibc-stats] [--measure-usable]\n"
	      "       [--zeroing as_recorded|calloc_as_malloc|calloc_as_malloc_memset] [--result-fd FD] WORKLOAD\n",
	      stderr);
	return 2;
}

/* "--opt=value" or "--opt value" */
static const char *value_of(const char *name, int argc, char **argv, int *i)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == 0 && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct arr_replay_options opt = ARR_REPLAY_OPTIONS_INIT;
	int fd = -1, i;
	const char *v;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if ((v = value_of("--threads", argc, argv, &i))) {
			if (arr_replay_threads_parse(v, &opt.threads))
				return usage();
		} else if ((v = value_of("--touch", argc, argv, &i))) {
			if (arr_replay_touch_parse(v, &opt.touch))
				return usage();
		} else if ((v = value_of("--samples", argc, argv, &i))) {
			opt.samples = (unsigned)strtoul(v, NULL, 10);
		} else if ((v = value_of("--latency-every", argc, argv, &i))) {
			opt.latency_every = (unsigned)strtoul(v, NULL, 10);
		} else if ((v = value_of("--pace", argc, argv, &i))) {
			opt.pace = (unsigned)strtoul(v, NULL, 10);
		} else if ((v = value_of("--result-fd", argc, argv, &i))) {
			fd = atoi(v);
		} else if (!strcmp(argv[i], "--glibc-stats")) {
			opt.glibc_stats = 1;
		} else if (!strcmp(argv[i], "--measure-usable")) {
			opt.measure_usable = 1;
		} else if ((v = value_of("--zeroing", argc, argv, &i))) {
			if (arr_replay_zeroing_parse(v, &opt.zeroing))
				return usage();
		} else {
			return usage();
		}
	}
	if (i != argc - 1)
		return usage();
	struct arr_replay_result res;
	int rc = arr_replay_run(argv[i], &opt, &res);
	if (rc) {
		fprintf(stderr, "allocrr-replay-engine: '%s': %s\n", argv[i], arr_strerror(rc));
		return 1;
	}
	if (fd >= 0) {
		rc = arr_replay_result_write(fd, &res);
		if (rc) {
			fprintf(stderr, "allocrr-replay-engine: cannot write the result: %s\n", arr_strerror(rc));
			return 1;
		}
	} else {
		printf("ops %llu wall_ns %llu cpu_ns %llu peak_rss %llu final_rss %llu anomalies %llu\n",
		       (unsigned long long)res.ops, (unsigned long long)res.wall_ns, (unsigned long long)res.cpu_ns,
		       (unsigned long long)res.peak_rss, (unsigned long long)res.final_rss,
		       (unsigned long long)res.anomalies);
	}
	return 0;
}

/*
 * spawn.c - allocators by name, and running the engine for one of them in a
 * fresh process (see allocrr/replay.h). Each replay gets its own process so
 * that no allocator sees another's heap, and LD_PRELOAD takes effect from
 * the first call.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocrr/replay.h"

struct known {
	const char *name, *file, *package, *env_style;
};

/* env_style: how tunables are passed. */
static const struct known known[] = {
	{"jemalloc", "libjemalloc.so.2", "libjemalloc2", "jemalloc"},
	{"mimalloc", "libmimalloc.so.2", "libmimalloc2.0", "upper:MIMALLOC_"},
	{"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", "upper:TCMALLOC_"},
};

static const char *const libdirs[] = {
#ifdef ARR_MULTIARCH
	"/usr/lib/" ARR_MULTIARCH,
	"/lib/" ARR_MULTIARCH,
#endif
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
	"/usr/local/lib",
};

static int add_env(struct arr_allocator *a, const char *name, const char *value)
{
	for (unsigned i = 0; i < a->nenv; i++)
		if (!strcmp(a->env[i][0], name)) { /* append to a list variable */
			size_t l = strlen(a->env[i][1]);
			const char *sep = !strcmp(name, "GLIBC_TUNABLES") ? ":" : ",";
			if (snprintf(a->env[i][1] + l, sizeof a->env[i][1] - l, "%s%s", sep, value) >=
			    (int)(sizeof a->env[i][1] - l))
				return ARR_ESYNTAX;
			return 0;
		}
	if (a->nenv == 4 || strlen(name) >= sizeof a->env[0][0] || strlen(value) >= sizeof a->env[0][1])
		return ARR_ESYNTAX;
	strcpy(a->env[a->nenv][0], name);
	strcpy(a->env[a->nenv][1], value);
	a->nenv++;
	return 0;
}

/* One "key=value" tunable for allocator style. */
static int add_tunable(struct arr_allocator *a, const char *style, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || !eq[1])
		return ARR_ESYNTAX;
	for (const char *p = kv; p < eq; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return ARR_ESYNTAX;
	char buf[256];
	int klen = (int)(eq - kv);
	if (!strcmp(style, "glibc")) {
		snprintf(buf, sizeof buf, "glibc.malloc.%.*s=%s", klen, kv, eq + 1);
		return add_env(a, "GLIBC_TUNABLES", buf);
	}
	if (!strcmp(style, "builtin"))
		return add_env(a, "ALLOCRR_MALLOC_OPTIONS", kv);
	if (!strcmp(style, "jemalloc")) {
		snprintf(buf, sizeof buf, "%.*s:%s", klen, kv, eq + 1);
		return add_env(a, "MALLOC_CONF", buf);
	}
	if (!strncmp(style, "upper:", 6)) {
		char name[128];
		int n = snprintf(name, sizeof name, "%s", style + 6);
		for (int i = 0; i < klen && n < (int)sizeof name - 1; i++)
			name[n++] = (char)toupper((unsigned char)kv[i]);
		name[n] = 0;
		return add_env(a, name, eq + 1);
	}
	return ARR_ESYNTAX; /* a path: we do not know its tunables */
}

int arr_allocator_resolve(const char *spec, const char *builtin_lib, struct arr_allocator *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", spec);
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	char name[4096];
	if (!nlen || nlen >= sizeof name)
		return ARR_EINVAL;
	memcpy(name, spec, nlen);
	name[nlen] = 0;
	const char *style = NULL;

	if (!strcmp(name, "glibc") || !strcmp(name, "libc")) {
		out->is_glibc = 1;
		style = "glibc";
	} else if (!strcmp(name, "builtin")) {
		out->is_builtin = 1;
		style = "builtin";
		snprintf(out->lib, sizeof out->lib, "%s", builtin_lib ? builtin_lib : "liballocrr-malloc.so");
		if (!builtin_lib || access(out->lib, R_OK))
			return ARR_ENOTFOUND;
	} else if (strchr(name, '/') || strstr(name, ".so")) {
		style = "path";
		snprintf(out->lib, sizeof out->lib, "%s", name);
		if (access(out->lib, R_OK))
			return ARR_ENOTFOUND;
	} else {
		for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
			if (strcmp(name, known[i].name))
				continue;
			style = known[i].env_style;
			out->package = known[i].package;
			for (size_t d = 0; d < sizeof libdirs / sizeof *libdirs; d++) {
				snprintf(out->lib, sizeof out->lib, "%s/%s", libdirs[d], known[i].file);
				if (!access(out->lib, R_OK))
					break;
				if (d + 1 == sizeof libdirs / sizeof *libdirs) {
					snprintf(out->lib, sizeof out->lib, "%s", known[i].file);
					return ARR_ENOTFOUND;
				}
			}
			break;
		}
		if (!style)
			return ARR_EINVAL;
	}
	/* tunables: name:k=v,k=v */
	if (colon && colon[1]) {
		char kvs[1024];
		snprintf(kvs, sizeof kvs, "%s", colon + 1);
		char *save = NULL;
		for (char *kv = strtok_r(kvs, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
			int rc = add_tunable(out, style, kv);
			if (rc)
				return rc;
		}
	} else if (colon) {
		return ARR_ESYNTAX;
	}
	return 0;
}

static const char *threads_name(enum arr_replay_threads t)
{
	return t == ARR_THREADS_SERIAL ? "serial" : t == ARR_THREADS_PARALLEL ? "parallel" : "auto";
}

static const char *touch_name(enum arr_replay_touch t)
{
	return t == ARR_TOUCH_NONE ? "none" : t == ARR_TOUCH_ALL ? "all" : "page";
}

int arr_replay_spawn(const char *engine, const struct arr_allocator *a, const char *wl_path,
		     const struct arr_replay_options *opt, struct arr_replay_result *res, int *status)
{
	int pfd[2];
	*status = 0;
	memset(res, 0, sizeof *res);
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	char samples[32], every[32];
	snprintf(samples, sizeof samples, "%u", opt->samples);
	snprintf(every, sizeof every, "%u", opt->latency_every);
	const char *argv[24];
	int n = 0;
	argv[n++] = engine;
	argv[n++] = "--result-fd=3";
	argv[n++] = "--threads";
	argv[n++] = threads_name(opt->threads);
	argv[n++] = "--touch";
	argv[n++] = touch_name(opt->touch);
	argv[n++] = "--samples";
	argv[n++] = samples;
	argv[n++] = "--latency-every";
	argv[n++] = every;
	if (a->is_glibc)
		argv[n++] = "--glibc-stats";
	if (opt->zeroing != ARR_ZERO_AS_RECORDED) {
		argv[n++] = "--zeroing";
		argv[n++] = arr_replay_zeroing_name(opt->zeroing);
	}
	if (opt->measure_usable)
		argv[n++] = "--measure-usable";
	argv[n++] = "--";
	argv[n++] = wl_path;
	argv[n] = NULL;

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		if (pfd[1] == 3)
			fcntl(3, F_SETFD, 0);
		else if (dup2(pfd[1], 3) < 0)
			_exit(127);
		if (a->lib[0])
			setenv("LD_PRELOAD", a->lib, 1);
		else
			unsetenv("LD_PRELOAD");
		for (unsigned i = 0; i < a->nenv; i++)
			setenv(a->env[i][0], a->env[i][1], 1);
		execv(engine, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	int rc = arr_replay_result_read(pfd[0], res);
	close(pfd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (!rc && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0))
		rc = ARR_EIO;
	if (rc)
		arr_replay_result_release(res);
	return rc;
}

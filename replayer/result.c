/*
 * result.c - a replay result through a pipe: the fixed struct, then the
 * timeline. Both ends are the same build (the CLI and its engine), and a
 * version word guards against a stale engine binary.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "allocrr/replay.h"

#define RESULT_MAGIC 0x3154534552525241ull /* "ARRREST1" */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n, len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return ARR_ETRUNCATED;
		p += n, len -= (size_t)n;
	}
	return 0;
}

int arr_replay_result_write(int fd, const struct arr_replay_result *res)
{
	uint64_t head[2] = {RESULT_MAGIC, sizeof *res};
	int rc = write_all(fd, head, sizeof head);
	if (!rc)
		rc = write_all(fd, res, sizeof *res);
	if (!rc && res->nsamples)
		rc = write_all(fd, res->timeline, (size_t)res->nsamples * sizeof *res->timeline);
	return rc;
}

int arr_replay_result_read(int fd, struct arr_replay_result *res)
{
	uint64_t head[2];
	memset(res, 0, sizeof *res);
	int rc = read_all(fd, head, sizeof head);
	if (rc)
		return rc;
	if (head[0] != RESULT_MAGIC || head[1] != sizeof *res)
		return ARR_EVERSION;
	if ((rc = read_all(fd, res, sizeof *res)))
		return rc;
	res->timeline = NULL;
	if (res->nsamples > (1u << 24)) {
		res->nsamples = 0;
		return ARR_ECORRUPT;
	}
	size_t bytes = (size_t)res->nsamples * sizeof *res->timeline + 1;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		res->nsamples = 0;
		return ARR_ENOMEM;
	}
	res->timeline = p;
	if ((rc = read_all(fd, res->timeline, bytes - 1)))
		arr_replay_result_release(res);
	return rc;
}

/* The name tables of replay.h's enums: VALUE_name(v) and VALUE_parse(s, &v). */
static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

#define ARR__ENUM_FUNCS(type, map)                                                                       \
	static const char *const type##_names[] = {map(ARR__ENUM_NAME)};                                 \
	const char *arr_replay_##type##_name(enum arr_replay_##type v)                                   \
	{                                                                                                \
		return (unsigned)v < sizeof type##_names / sizeof *type##_names ? type##_names[v] : "?"; \
	}                                                                                                \
	int arr_replay_##type##_parse(const char *s, enum arr_replay_##type *v)                          \
	{                                                                                                \
		int i = name_index(type##_names, sizeof type##_names / sizeof *type##_names, s);         \
		if (i < 0)                                                                               \
			return ARR_EINVAL;                                                               \
		*v = (enum arr_replay_##type)i;                                                          \
		return 0;                                                                                \
	}
ARR__ENUM_FUNCS(threads, ARR_REPLAY_THREADS_MAP)
ARR__ENUM_FUNCS(touch, ARR_REPLAY_TOUCH_MAP)
ARR__ENUM_FUNCS(zeroing, ARR_REPLAY_ZEROING_MAP)

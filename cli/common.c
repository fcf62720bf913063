/*
 * common.c - error reporting and helpers shared by the commands.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef ALLOCRR_VERSION
#define ALLOCRR_VERSION "0.0.0"
#endif

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("allocrr: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("allocrr: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'allocrr %s%s--help'\n", cmd ? cmd : "", cmd && *cmd ? " " : "");
	return EXIT_USAGE;
}

int cli_trace_error(const char *path, const struct arr_trace *tr, int rc)
{
	if (!tr) {
		cli_error("cannot open '%s': %s", path, arr_strerror(rc));
		return EXIT_BAD_INPUT;
	}
	const char *detail = arr_trace_error_detail(tr);
	if (rc == ARR_EBADMAGIC || rc == ARR_EVERSION || rc == ARR_ETRUNCATED || rc == ARR_ECORRUPT ||
	    rc == ARR_EDECOMPRESS)
		cli_error("'%s': %s at offset %llu%s%s", path, arr_strerror(rc),
			  (unsigned long long)arr_trace_error_offset(tr), *detail ? ": " : "", detail);
	else
		cli_error("'%s': %s", path, arr_strerror(rc));
	return EXIT_BAD_INPUT;
}

void cli_human_bytes(char *buf, size_t cap, uint64_t b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

int cli_version(void)
{
	printf("allocrr %s\n", ALLOCRR_VERSION);
	return 0;
}

const char *cli_exe_dir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
		dir[n > 0 ? n : 0] = 0;
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
	}
	return dir;
}

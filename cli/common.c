/*
 * common.c - error reporting and helpers shared by the commands.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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

void cli_progress(const char *what, double frac, double rate, const char *unit, double elapsed)
{
	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	char bar[21], r[24], eta[48] = "";
	int fill = (int)(frac * 20);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : ' ';
	bar[20] = 0;
	if (rate >= 1e6)
		snprintf(r, sizeof r, "%.1fM", rate / 1e6);
	else if (rate >= 1e3)
		snprintf(r, sizeof r, "%.1fk", rate / 1e3);
	else
		snprintf(r, sizeof r, "%.1f", rate);
	if (frac > 0 && frac < 1) {
		double left = elapsed * (1 - frac) / frac;
		if (left >= 3600)
			snprintf(eta, sizeof eta, "  ETA %.0fh%02.0fm", left / 3600, (double)((long)left % 3600 / 60));
		else if (left >= 60)
			snprintf(eta, sizeof eta, "  ETA %ldm%02lds", (long)left / 60, (long)left % 60);
		else
			snprintf(eta, sizeof eta, "  ETA %.0f s", left < 1 ? 1 : left);
	}
	char rs[64] = "";
	if (rate > 0)
		snprintf(rs, sizeof rs, "  %s %s/s", r, unit);
	/* one terminal line, so that \r rewrites it: a long label loses its head */
	struct winsize ws;
	int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 80;
	char tail[256];
	int room = cols - 1 - (int)strlen(bar) - 3 - 5 - (int)strlen(rs) - (int)strlen(eta);
	if (room < 12)
		room = 12;
	size_t wl = strlen(what);
	if ((int)wl > room && room < (int)sizeof tail)
		snprintf(tail, sizeof tail, "...%s", what + wl - (size_t)(room - 3));
	else
		snprintf(tail, sizeof tail, "%.*s", (int)sizeof tail - 1, what);
	fprintf(stderr, "\r\033[K%s [%s] %3.0f%%%s%s", tail, bar, frac * 100, rs, eta);
	fflush(stderr);
}

void cli_progress_clear(void)
{
	fputs("\r\033[K", stderr);
	fflush(stderr);
}

void cli_count(char *buf, size_t cap, double v)
{
	char d[32];
	int n = snprintf(d, sizeof d, "%.0f", fabs(v));
	if (n <= 0 || cap < (size_t)n + (size_t)n / 3 + 2 || !isfinite(v)) {
		snprintf(buf, cap, "%.0f", v);
		return;
	}
	char *w = buf;
	if (v < 0 && d[0] != '0')
		*w++ = '-';
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			*w++ = ',';
		*w++ = d[i];
	}
	*w = 0;
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

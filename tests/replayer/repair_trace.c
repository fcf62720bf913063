/*
 * repair_trace.c OUT.atr < EVENTS - write a trace with the encoder (as the
 * recorder would), from one event per line:
 *
 *   TID T_NS OP [size=N] [nmemb=N] [align=N] [ptr=A] [ret=A] [err=E]
 *
 * OP is an operation name (malloc, free, realloc, ...); err=E marks the call
 * failed with errno E (its ret is then 0). Lines starting with '#' are
 * skipped. Each thread's events go to chunks of their own, in file order;
 * the END record closes the file unless ALLOCRR_TEST_NO_END is set. The
 * replayer's tests use it to build traces that a real program would rarely
 * produce on demand: every repair, calls that all failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/trace.h"
#include "writer.h"

#define MAXTHR 16
#define MAXW 4096

static void die(const char *what, int line)
{
	fprintf(stderr, "repair_trace: line %d: %s\n", line, what);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: repair_trace OUT.atr < EVENTS\n");
		return 2;
	}
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	if (arr__encoder_init(&enc, &mem, MAXW, 3, 16))
		die("encoder init", 0);
	size_t cap = arr__encoder_bound(&enc);
	uint8_t *out = malloc(cap);
	FILE *f = fopen(argv[1], "wb");
	if (!f || !out)
		die("cannot open the output", 0);
	const char av[] = "repair_trace\0";
	struct arr_header_info hi = {.pid = 4242,
				     .ppid = 1,
				     .page_size = 4096,
				     .time_unit_ns = 16,
				     .exe = "/test/repair_trace",
				     .libc = "glibc 2.36",
				     .recorder = "test",
				     .argv = av,
				     .argv_len = sizeof av - 1};
	long hn = arr__encode_header(&hi, out, cap);
	if (hn <= 0)
		die("header", 0);
	fwrite(out, 1, (size_t)hn, f);

	static uint64_t raw[MAXTHR][MAXW];
	static uint32_t tids[MAXTHR];
	size_t used[MAXTHR] = {0}, nthr = 0;
	uint64_t nev = 0, last_t = 0;
	char line[512];
	int lineno = 0;
	while (fgets(line, sizeof line, stdin)) {
		lineno++;
		char *tok = strtok(line, " \t\n");
		if (!tok || *tok == '#')
			continue;
		uint32_t tid = (uint32_t)strtoul(tok, NULL, 0);
		char *ts = strtok(NULL, " \t\n"), *opname = strtok(NULL, " \t\n");
		if (!ts || !opname)
			die("want TID T_NS OP", lineno);
		uint64_t t = strtoull(ts, NULL, 0);
		unsigned op = arr_op_from_name(opname);
		if (!op || arr_op_raw_args(op) < 0)
			die("unknown op", lineno);
		struct arr_event e = {.op = (uint8_t)op, .tid = tid, .t = t};
		while ((tok = strtok(NULL, " \t\n"))) {
			char *eq = strchr(tok, '=');
			if (!eq)
				die("want key=value", lineno);
			*eq = 0;
			uint64_t v = strtoull(eq + 1, NULL, 0);
			if (!strcmp(tok, "size"))
				e.size = v;
			else if (!strcmp(tok, "nmemb"))
				e.nmemb = v;
			else if (!strcmp(tok, "align"))
				e.align = v;
			else if (!strcmp(tok, "ptr"))
				e.ptr = v;
			else if (!strcmp(tok, "ret"))
				e.ret = v;
			else if (!strcmp(tok, "err"))
				e.failed = 1, e.err = (int)v;
			else
				die("unknown key", lineno);
		}
		/* raw words in the writer.h layout */
		uint64_t w[8];
		unsigned n = 1;
		switch (op) {
		case ARR_OP_MALLOC:
		case ARR_OP_VALLOC:
		case ARR_OP_PVALLOC:
			w[n++] = e.size;
			w[n++] = e.ret;
			break;
		case ARR_OP_CALLOC:
			w[n++] = e.nmemb;
			w[n++] = e.size;
			w[n++] = e.ret;
			break;
		case ARR_OP_POSIX_MEMALIGN:
		case ARR_OP_ALIGNED_ALLOC:
		case ARR_OP_MEMALIGN:
			w[n++] = e.align;
			w[n++] = e.size;
			w[n++] = e.ret;
			break;
		case ARR_OP_REALLOC:
			w[n++] = e.ptr;
			w[n++] = e.size;
			w[n++] = e.ret;
			break;
		case ARR_OP_REALLOCARRAY:
			w[n++] = e.ptr;
			w[n++] = e.nmemb;
			w[n++] = e.size;
			w[n++] = e.ret;
			break;
		case ARR_OP_FREE:
		case ARR_OP_FORK:
			w[n++] = e.ptr;
			break;
		case ARR_OP_RSS:
			w[n++] = e.size;
			break;
		default:
			if (arr_op_raw_args(op) != 0)
				die("op not supported here", lineno);
		}
		if ((unsigned)arr_op_raw_args(op) != n - 1)
			die("argument count", lineno);
		if (e.failed)
			w[n++] = (uint64_t)(uint32_t)e.err;
		w[0] = ARR_RAW_W0(op, e.failed, t);
		size_t k = 0;
		while (k < nthr && tids[k] != tid)
			k++;
		if (k == nthr) {
			if (nthr == MAXTHR)
				die("too many threads", lineno);
			tids[nthr++] = tid;
		}
		if (used[k] + n > MAXW)
			die("too many events for one chunk", lineno);
		memcpy(raw[k] + used[k], w, n * 8);
		used[k] += n;
		nev++;
		if (t > last_t)
			last_t = t;
	}
	for (size_t k = 0; k < nthr; k++) {
		long len = arr__encode_events(&enc, tids[k], raw[k], used[k], out, cap);
		if (len <= 0)
			die("encode", 0);
		fwrite(out, 1, (size_t)len, f);
	}
	if (!getenv("ALLOCRR_TEST_NO_END")) {
		size_t en = arr__encode_end(out, ARR_END_EXIT, 0, last_t + 1000, nev);
		fwrite(out, 1, en, f);
	}
	if (fclose(f))
		die("cannot write the output", 0);
	free(out);
	arr__encoder_release(&enc);
	return 0;
}

/*
 * cmd_dump.c - `allocrr dump`: every event, in time order across threads.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"
#include "cli.h"
#include "options.h"

static const struct cli_usage usage = {
	"dump",
	"usage: allocrr dump [--json] [FILTER...] FILE\n",
	"Print one event a line, in time order across threads.\n"
	"With --json, one object per line: t (ns since start), tid, op, and where the\n"
	"call has them size, nmemb, align, ptr, ret (hex strings, \"0x0\" for NULL), err.\n",
	NULL, NULL, 0,
};

struct filter {
	uint32_t tids[64];
	unsigned ntids;
	uint64_t ops;     /* bit per op; 0 = every op */
	uint64_t from, to; /* ns; to == UINT64_MAX: no end */
	uint64_t limit;    /* 0 = no limit */
};

static int parse_tids(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct filter *f = target;
	(void)cmd, (void)opt;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", arg);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(tok, &end, 10);
		if (errno || *end || end == tok || v > UINT32_MAX)
			return cli_usage_error("dump", "bad thread id '%s'", tok);
		if (f->ntids == sizeof f->tids / sizeof f->tids[0])
			return cli_usage_error("dump", "at most %zu thread ids", sizeof f->tids / sizeof f->tids[0]);
		f->tids[f->ntids++] = (uint32_t)v;
	}
	return f->ntids ? 0 : cli_usage_error("dump", "--tid needs a thread id");
}

static int parse_ops(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct filter *f = target;
	(void)cmd, (void)opt;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", arg);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "calls")) {
			for (unsigned op = 0; op < 64; op++)
				if (arr_op_is_call(op))
					f->ops |= 1ull << op;
			continue;
		}
		unsigned op = arr_op_from_name(tok);
		if (!op || op >= 64)
			return cli_usage_error("dump", "unknown operation '%s'", tok);
		f->ops |= 1ull << op;
	}
	return f->ops ? 0 : cli_usage_error("dump", "--op needs an operation");
}

static int parse_seconds(const char *cmd, const char *opt, const char *arg, void *target)
{
	uint64_t *ns = target;
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || *end || end == arg || !isfinite(v) || v < 0 || v > 1e9)
		return cli_usage_error(cmd, "%s needs seconds (e.g. 1.5), not '%s'", opt, arg);
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

static int wanted(const struct filter *f, const struct arr_event *ev)
{
	if (ev->t < f->from) /* --to ends the loop in cmd_dump */
		return 0;
	if (f->ops && (ev->op >= 64 || !(f->ops >> ev->op & 1)))
		return 0;
	if (f->ntids) {
		for (unsigned i = 0; i < f->ntids; i++)
			if (f->tids[i] == ev->tid)
				return 1;
		return 0;
	}
	return 1;
}

/* The frames of ev's stack: indented lines, or (JSON) a "stack" member
 * spliced into the object just printed. */
static void print_stack(const struct arr_trace *tr, struct arr_symbolizer *sy, const struct arr_event *ev, int json)
{
	uint64_t fr[128];
	int trunc, n = arr_trace_stack(tr, ev->stack, fr, 128, &trunc);
	if (n < 0)
		return;
	if (n > 128)
		n = 128;
	for (int i = 0; i < n; i++) {
		const struct arr_frame_info *fi = arr_symbolize(sy, fr[i]);
		if (json) {
			printf("%s{\"addr\":\"0x%llx\",\"func\":", i ? "," : "", (unsigned long long)fr[i]);
			arr_json_fputs(stdout, fi->func);
			if (fi->file) {
				fputs(",\"file\":", stdout);
				arr_json_fputs(stdout, fi->file);
				printf(",\"line\":%d", fi->line);
			}
			putchar('}');
		} else if (fi->file) {
			printf("\n    #%-2d 0x%llx %s %s:%d", i, (unsigned long long)fr[i], fi->func, fi->file, fi->line);
		} else {
			printf("\n    #%-2d 0x%llx %s", i, (unsigned long long)fr[i], fi->func);
		}
	}
	if (json)
		printf("],\"stack_truncated\":%s}", trunc ? "true" : "false");
	else if (trunc)
		printf("\n    ... (truncated)");
}

int cmd_dump(int argc, char **argv)
{
	int json = 0, stacks = 0, first;
	struct filter f = {.to = UINT64_MAX};
	const struct cli_option opts[] = {
		CLI_FLAG('j', "json", &json, "JSON lines"),
		CLI_CALLBACK('t', "tid", CLI_ARG_REQUIRED, "TID,...", &f, parse_tids, "only these threads"),
		CLI_CALLBACK('e', "op", CLI_ARG_REQUIRED, "OP,...", &f, parse_ops,
			     "only these operations (malloc, free, ..., rss, fork,\n"
			     "exec, thread_start, thread_exit; 'calls' for the ten)"),
		CLI_CALLBACK(0, "from", CLI_ARG_REQUIRED, "SEC", &f.from, parse_seconds,
			     "only events at or after SEC seconds since the start"),
		CLI_CALLBACK(0, "to", CLI_ARG_REQUIRED, "SEC", &f.to, parse_seconds,
			     "only events before SEC seconds since the start"),
		CLI_U64('n', "limit", "N", &f.limit, 1, INT64_MAX, "stop after N events printed"),
		CLI_FLAG('s', "stacks", &stacks, "print each allocation's call stack (a trace recorded\n"
						 "with `allocrr record --stacks`), innermost frame first,\n"
						 "symbolized from the recorded modules; with --json: \"stack\""),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first != argc - 1)
		return cli_usage_error("dump", first >= argc ? "no trace given" : "one trace at a time");
	const char *path = argv[first];
	struct arr_trace *tr;
	rc = arr_trace_open(&tr, path);
	if (rc) {
		rc = cli_trace_error(path, tr, rc);
		arr_trace_close(tr);
		return rc;
	}
	struct arr_merge *m;
	rc = arr_merge_open(&m, tr);
	if (rc) {
		rc = cli_trace_error(path, tr, rc);
		arr_trace_close(tr);
		return rc;
	}
	/* Dumps run to gigabytes: big writes, not one per 4 KiB. */
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	struct arr_symbolizer *sy = NULL;
	if (stacks && (rc = arr_symbolizer_open(&sy, tr)) < 0) {
		cli_error("cannot set up symbolization: %s", arr_strerror(rc));
		arr_merge_close(m);
		arr_trace_close(tr);
		return EXIT_BAD_INPUT;
	}
	const struct arr_event *ev;
	uint64_t printed = 0;
	while ((rc = arr_merge_next(m, &ev)) == 1) {
		if (ev->t >= f.to) /* time order: nothing later can match */
			break;
		if (!wanted(&f, ev))
			continue;
		int has_stack = sy && ev->stack && arr_trace_stack(tr, ev->stack, NULL, 0, NULL) >= 0;
		if (json && has_stack) { /* the object, reopened for its stack */
			char obj[1024];
			FILE *mf = fmemopen(obj, sizeof obj, "w");
			int len = mf ? arr_event_fprint_json(mf, ev) : 0;
			if (mf)
				fclose(mf);
			printf("%.*s,\"stack\":[", len > 0 ? len - 1 : 0, obj);
			print_stack(tr, sy, ev, json);
		} else if (json) {
			arr_event_fprint_json(stdout, ev);
		} else {
			arr_event_fprint_text(stdout, ev);
			if (has_stack)
				print_stack(tr, sy, ev, json);
		}
		putchar('\n');
		if (f.limit && ++printed == f.limit)
			break;
	}
	if (rc > 0)
		rc = 0; /* stopped early by --to or --limit */
	int status = 0;
	if (rc < 0)
		status = cli_trace_error(path, tr, rc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the dump: output error");
		status = EXIT_BAD_INPUT;
	}
	arr_symbolizer_close(sy);
	arr_merge_close(m);
	arr_trace_close(tr);
	return status;
}

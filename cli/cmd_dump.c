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
	NULL,
	NULL,
	0,
};

struct filter {
	uint32_t tids[64];
	unsigned ntids;
	uint64_t ops;      /* bit per op; 0 = every op */
	uint64_t from, to; /* ns; to == UINT64_MAX: no end */
	uint64_t limit;    /* 0 = no limit */
};

static int parse_tids(const char *cmd, const char *opt, const char *arg, void *target)
{
	struct filter *f = target;
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
	int k = 0; /* source frames: an address stands for several when calls were inlined */
	for (int i = 0; i < n; i++) {
		for (const struct arr_frame_info *fi =
			     arr_symbolize_at(sy, fr[i], arr_trace_stack_epoch(tr, ev->stack));
		     fi; fi = fi->caller, k++) {
			if (json) {
				printf("%s{\"addr\":\"0x%llx\",\"func\":", k ? "," : "", (unsigned long long)fr[i]);
				arr_json_fputs(stdout, fi->func);
				if (fi->file) {
					fputs(",\"file\":", stdout);
					arr_json_fputs(stdout, fi->file);
					printf(",\"line\":%d", fi->line);
				}
				if (fi->inlined)
					fputs(",\"inlined\":true", stdout);
				putchar('}');
			} else if (fi->file) {
				printf("\n    #%-2d 0x%llx %s %s:%d%s", k, (unsigned long long)fr[i], fi->func,
				       fi->file, fi->line, fi->inlined ? " (inlined)" : "");
			} else {
				printf("\n    #%-2d 0x%llx %s", k, (unsigned long long)fr[i], fi->func);
			}
		}
	}
	if (json)
		printf("],\"stack_truncated\":%s}", trunc ? "true" : "false");
	else if (trunc)
		printf("\n    ... (truncated)");
}

/* The command line of one `allocrr dump`. */
struct dump_args {
	int json, stacks;
	struct filter f;
	const char *path;
};

/* Returns -1 to go on, or the exit code. */
static int parse_args(struct dump_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->f.to = UINT64_MAX;
	int first;
	const struct cli_option opts[] = {
		CLI_FLAG('j', "json", &a->json, "JSON lines"),
		CLI_CALLBACK('t', "tid", CLI_ARG_REQUIRED, "TID,...", &a->f, parse_tids, "only these threads"),
		CLI_CALLBACK('e', "op", CLI_ARG_REQUIRED, "OP,...", &a->f, parse_ops,
			     "only these operations (malloc, free, ..., rss, fork,\n"
			     "exec, thread_start, thread_exit; 'calls' for the ten)"),
		CLI_CALLBACK(0, "from", CLI_ARG_REQUIRED, "SEC", &a->f.from, parse_seconds,
			     "only events at or after SEC seconds since the start"),
		CLI_CALLBACK(0, "to", CLI_ARG_REQUIRED, "SEC", &a->f.to, parse_seconds,
			     "only events before SEC seconds since the start"),
		CLI_U64('n', "limit", "N", &a->f.limit, 1, INT64_MAX, "stop after N events printed"),
		CLI_FLAG('s', "stacks", &a->stacks,
			 "print each allocation's call stack (a trace recorded\n"
			 "with `allocrr record --stacks`), innermost frame first,\n"
			 "symbolized from the recorded modules; with --json: \"stack\""),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first != argc - 1)
		return cli_usage_error("dump", first >= argc ? "no trace given" : "one trace at a time");
	a->path = argv[first];
	return -1;
}

/* One event, and its stack when it has one and sy is set. */
static void print_event(const struct arr_trace *tr, struct arr_symbolizer *sy, const struct arr_event *ev, int json)
{
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
}

/* The events a wants, in time order. Returns 0 or a trace error code. */
static int dump_events(const struct dump_args *a, const struct arr_trace *tr, struct arr_merge *m,
		       struct arr_symbolizer *sy)
{
	const struct arr_event *ev;
	uint64_t printed = 0;
	int rc;
	while ((rc = arr_merge_next(m, &ev)) == 1) {
		if (ev->t >= a->f.to) /* time order: nothing later can match */
			break;
		if (!wanted(&a->f, ev))
			continue;
		print_event(tr, sy, ev, a->json);
		if (a->f.limit && ++printed == a->f.limit)
			break;
	}
	return rc > 0 ? 0 : rc; /* stopped early by --to or --limit */
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args a;
	int status = parse_args(&a, argc, argv);
	if (status >= 0)
		return status;
	struct arr_trace *tr;
	struct arr_merge *m = NULL;
	struct arr_symbolizer *sy = NULL;
	int rc = arr_trace_open(&tr, a.path);
	if (!rc)
		rc = arr_merge_open(&m, tr);
	if (rc) {
		status = cli_trace_error(a.path, tr, rc);
		goto out;
	}
	if (a.stacks && (rc = arr_symbolizer_open(&sy, tr)) < 0) {
		cli_error("cannot set up symbolization: %s", arr_strerror(rc));
		status = EXIT_BAD_INPUT;
		goto out;
	}
	/* Dumps run to gigabytes: big writes, not one per 4 KiB. */
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	status = 0;
	if ((rc = dump_events(&a, tr, m, sy)) < 0)
		status = cli_trace_error(a.path, tr, rc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the dump: output error");
		status = EXIT_BAD_INPUT;
	}
out:
	arr_symbolizer_close(sy);
	arr_merge_close(m);
	arr_trace_close(tr);
	return status;
}

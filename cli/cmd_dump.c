/*
 * cmd_dump.c - `allocrr dump`: every event, in time order across threads.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"
#include "cli.h"

static const char usage[] =
	"usage: allocrr dump [--json] [FILTER...] FILE\n"
	"\n"
	"Print one event a line, in time order across threads.\n"
	"With --json, one object per line: t (ns since start), tid, op, and where the\n"
	"call has them size, nmemb, align, ptr, ret (hex strings, \"0x0\" for NULL), err.\n"
	"\n"
	"  -j, --json          JSON lines\n"
	"  -t, --tid TID,...   only these threads\n"
	"  -e, --op OP,...     only these operations (malloc, free, ..., rss, fork,\n"
	"                      exec, thread_start, thread_exit; 'calls' for the ten)\n"
	"      --from SEC      only events at or after SEC seconds since the start\n"
	"      --to SEC        only events before SEC seconds since the start\n"
	"  -n, --limit N       stop after N events printed\n"
	"  -s, --stacks        print each allocation's call stack (a trace recorded\n"
	"                      with `allocrr record --stacks`), innermost frame first,\n"
	"                      symbolized from the recorded modules; with --json: \"stack\"\n"
	"  -h, --help          show this help\n"
	"  -V, --version       show the version\n";

struct filter {
	uint32_t tids[64];
	unsigned ntids;
	uint64_t ops;     /* bit per op; 0 = every op */
	uint64_t from, to; /* ns; to == UINT64_MAX: no end */
	uint64_t limit;    /* 0 = no limit */
};

static int parse_tids(struct filter *f, const char *arg)
{
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
	return f->ntids ? -1 : cli_usage_error("dump", "--tid needs a thread id");
}

static int parse_ops(struct filter *f, const char *arg)
{
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
	return f->ops ? -1 : cli_usage_error("dump", "--op needs an operation");
}

static int parse_seconds(const char *opt, const char *arg, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || *end || end == arg || !isfinite(v) || v < 0 || v > 1e9)
		return cli_usage_error("dump", "%s needs seconds (e.g. 1.5), not '%s'", opt, arg);
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return -1;
}

static int parse_limit(const char *arg, uint64_t *n)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || *end || end == arg || arg[0] == '-' || v == 0)
		return cli_usage_error("dump", "--limit needs a positive count, not '%s'", arg);
	*n = v;
	return -1;
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
		const struct arr_frame_info *fi = arr_symbolize_at(sy, fr[i], arr_trace_stack_epoch(tr, ev->stack));
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
	enum { OPT_FROM = 256, OPT_TO };
	static const struct option opts[] = {
		{"json", no_argument, 0, 'j'},
		{"tid", required_argument, 0, 't'},
		{"op", required_argument, 0, 'e'},
		{"from", required_argument, 0, OPT_FROM},
		{"to", required_argument, 0, OPT_TO},
		{"limit", required_argument, 0, 'n'},
		{"stacks", no_argument, 0, 's'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	int json = 0, stacks = 0, opt;
	struct filter f = {.to = UINT64_MAX};
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jt:e:n:shV", opts, NULL)) != -1) {
		int rc = cli_common_option(opt, usage);
		if (rc >= 0)
			return rc;
		switch (opt) {
		case 'j': json = 1; break;
		case 's': stacks = 1; break;
		case 't': rc = parse_tids(&f, optarg); break;
		case 'e': rc = parse_ops(&f, optarg); break;
		case OPT_FROM: rc = parse_seconds("--from", optarg, &f.from); break;
		case OPT_TO: rc = parse_seconds("--to", optarg, &f.to); break;
		case 'n': rc = parse_limit(optarg, &f.limit); break;
		case ':': return cli_usage_error("dump", "option '%s' needs a value", argv[optind - 1]);
		default: return cli_usage_error("dump", "unknown option '%s'", argv[optind - 1]);
		}
		if (rc >= 0)
			return rc;
	}
	if (optind != argc - 1)
		return cli_usage_error("dump", optind >= argc ? "no trace given" : "one trace at a time");
	const char *path = argv[optind];
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
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

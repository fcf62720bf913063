/*
 * cmd_dump.c - `allocrr dump`: every event, in time order across threads.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

static const char usage[] =
	"usage: allocrr dump [--json] FILE\n"
	"\n"
	"Print one event a line, in time order across threads.\n"
	"With --json, one object per line: t (ns since start), tid, op, and where the\n"
	"call has them size, nmemb, align, ptr, ret (hex strings, \"0x0\" for NULL), err.\n"
	"\n"
	"  -j, --json      JSON lines\n"
	"  -h, --help      show this help\n"
	"  -V, --version   show the version\n";

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, 0, 'j'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	int json = 0, opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "jhV", opts, NULL)) != -1) {
		int rc = cli_common_option(opt, usage);
		if (rc >= 0)
			return rc;
		if (opt == 'j')
			json = 1;
		else
			return cli_usage_error("dump", "unknown option '%s'", argv[optind - 1]);
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
	const struct arr_event *ev;
	while ((rc = arr_merge_next(m, &ev)) == 1) {
		if (json)
			arr_event_fprint_json(stdout, ev);
		else
			arr_event_fprint_text(stdout, ev);
		putchar('\n');
	}
	int status = 0;
	if (rc < 0)
		status = cli_trace_error(path, tr, rc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the dump: output error");
		status = EXIT_BAD_INPUT;
	}
	arr_merge_close(m);
	arr_trace_close(tr);
	return status;
}

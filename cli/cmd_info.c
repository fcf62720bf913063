/*
 * cmd_info.c - `allocrr info`: what a trace holds and how it ended.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "allocrr/doc.h"
#include "allocrr/summary.h"
#include "cli.h"
#include "options.h"

static const struct cli_usage usage = {
	"info",
	"usage: allocrr info [--json] [--tree] FILE...\n",
	"For each trace: the recorded process, duration, events by operation,\n"
	"threads, bytes requested, peak live bytes, trace bytes per event, and\n"
	"whether the trace ended cleanly or was truncated.\n",
	NULL,
	NULL,
	0,
};

/* What info says of one trace: its summary, and how it ended. */
struct info {
	const char *path;
	const struct arr_trace_meta *meta;
	const struct arr_trace_end *end;
	struct arr_summary s;
	int clean;
	uint64_t duration, size;
	uint64_t events; /* every event: calls, thread events, RSS samples, marks */
	double bpe;
	const char *ending;
};

static void info_json(const struct info *in, struct arr_trace *tr)
{
	const struct arr_trace_meta *meta = in->meta;
	const struct arr_summary *s = &in->s;
	printf("{\"file\":");
	arr_json_fputs(stdout, in->path);
	printf(",\"format\":\"%u.%u\",\"pid\":%" PRId64 ",\"ppid\":%" PRId64 ",\"exe\":", meta->major, meta->minor,
	       meta->pid, meta->ppid);
	arr_json_fputs(stdout, meta->exe);
	printf(",\"argv\":");
	arr_json_fputs(stdout, meta->argv);
	printf(",\"libc\":");
	arr_json_fputs(stdout, meta->libc);
	printf(",\"recorder\":");
	arr_json_fputs(stdout, meta->recorder);
	if (meta->parent_trace) {
		printf(",\"parent_trace\":");
		arr_json_fputs(stdout, meta->parent_trace);
	}
	printf(",\"start_realtime_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"time_unit_ns\":%u,\"events\":%" PRIu64
	       ",\"calls\":%" PRIu64 ",\"ops\":{",
	       meta->start_realtime_ns, in->duration, meta->time_unit_ns, in->events, s->calls);
	int first = 1;
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		if (arr_op_name(op) && (arr_op_is_call(op) || s->ops[op])) {
			printf("%s\"%s\":%" PRIu64, first ? "" : ",", arr_op_name(op), s->ops[op]);
			first = 0;
		}
	printf("},\"failed\":%" PRIu64 ",\"threads\":%" PRIu64 ",\"bytes_requested\":%" PRIu64
	       ",\"peak_live_bytes\":%" PRIu64 ",\"peak_live_blocks\":%" PRIu64 ",\"live_bytes_at_end\":%" PRIu64
	       ",\"live_blocks_at_end\":%" PRIu64 ",\"unknown_frees\":%" PRIu64 ",\"peak_rss\":%" PRIu64
	       ",\"file_size\":%" PRIu64 ",\"bytes_per_event\":%.3f,\"clean\":%s,\"ending\":\"%s\"",
	       s->failed, s->threads, s->bytes_requested, s->peak_live_bytes, s->peak_live_blocks, s->live_bytes,
	       s->live_blocks, s->unknown_frees, s->peak_rss, in->size, in->bpe, in->clean ? "true" : "false",
	       in->ending);
	if (s->true_peak_rss)
		printf(",\"true_peak_rss\":%" PRIu64, s->true_peak_rss > s->peak_rss ? s->true_peak_rss : s->peak_rss);
	else
		printf(",\"true_peak_rss\":null");
	if (in->clean)
		printf(",\"status\":%d", in->end->status);
	printf(",\"skipped_chunks\":%" PRIu64 "}\n", arr_trace_skipped_chunks(tr));
}

/* "3 blocks", "1 block": a count in thousands and its noun */
static const char *counted(char *buf, size_t cap, uint64_t n, const char *noun)
{
	char c[32];
	cli_count(c, sizeof c, (double)n);
	snprintf(buf, cap, "%s %s%s", c, noun, n == 1 ? "" : "s");
	return buf;
}

static void info_text(const struct info *in, struct arr_trace *tr)
{
	const struct arr_trace_meta *meta = in->meta;
	const struct arr_summary *s = &in->s;
	char b1[32], b2[32], b3[32], b4[32], b5[32], n1[48], n2[48], n3[48];
	cli_human_bytes(b1, sizeof b1, s->bytes_requested);
	cli_human_bytes(b2, sizeof b2, s->peak_live_bytes);
	cli_human_bytes(b3, sizeof b3, in->size);
	cli_human_bytes(b4, sizeof b4, s->peak_rss);
	cli_human_bytes(b5, sizeof b5, s->live_bytes);
	printf("%s\n", in->path);
	printf("  process      %" PRId64 " (parent %" PRId64 "): %s\n", meta->pid, meta->ppid, meta->exe);
	printf("  command      %s\n", meta->argv);
	if (meta->parent_trace)
		printf("  forked from  %s\n", meta->parent_trace);
	printf("  recorded by  %s, %s, format %u.%u\n", meta->recorder, meta->libc, meta->major, meta->minor);
	printf("  duration     %.3f s\n", (double)in->duration / 1e9);
	cli_count(n1, sizeof n1, (double)in->events);
	printf("  events       %s\n", n1);
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		if (arr_op_name(op) && s->ops[op]) {
			cli_count(n1, sizeof n1, (double)s->ops[op]);
			printf("    %-16s %12s\n", arr_op_name(op), n1);
		}
	cli_count(n2, sizeof n2, (double)s->failed);
	cli_count(n1, sizeof n1, (double)s->calls);
	printf("  calls        %s (%s failed), %s\n", n1, n2, counted(n3, sizeof n3, s->threads, "thread"));
	printf("  requested    %s\n", b1);
	printf("  peak live    %s in %s\n", b2, counted(n1, sizeof n1, s->peak_live_blocks, "block"));
	printf("  live at end  %s in %s\n", b5, counted(n1, sizeof n1, s->live_blocks, "block"));
	if (s->true_peak_rss > s->peak_rss) {
		char b6[32];
		cli_human_bytes(b6, sizeof b6, s->true_peak_rss);
		if (s->peak_rss)
			printf("  peak RSS     %s (the kernel's high-water mark; highest sample %s)\n", b6, b4);
		else
			printf("  peak RSS     %s (the kernel's high-water mark)\n", b6);
	} else if (s->peak_rss) {
		printf("  peak RSS     %s\n", b4);
	}
	printf("  trace size   %s, %.2f bytes per event\n", b3, in->bpe);
	if (in->clean)
		printf("  ended        %s (status %d)\n", in->ending, in->end->status);
	else
		printf("  ended        truncated at offset %" PRIu64 "\n", arr_trace_error_offset(tr));
}

static int info_one(const char *path, int json)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	if (rc) {
		rc = cli_trace_error(path, tr, rc);
		arr_trace_close(tr);
		return rc;
	}
	struct info in = {.path = path, .s = ARR_SUMMARY_INIT};
	in.s.page_size = arr_trace_meta(tr)->page_size;
	struct arr_merge *m;
	rc = arr_merge_open(&m, tr);
	const struct arr_event *ev;
	while (rc == 0 && (rc = arr_merge_next(m, &ev)) == 1)
		rc = arr_summary_add(&in.s, ev);
	if (rc == 0 || rc == 1)
		rc = 0;
	in.meta = arr_trace_meta(tr);
	in.end = arr_trace_end(tr);
	in.clean = rc == 0 && in.end->present;
	in.duration = in.end->present && in.end->t > in.s.last_t ? in.end->t : in.s.last_t;
	in.size = arr_trace_file_size(tr);
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		in.events += in.s.ops[op];
	in.bpe = in.events ? (double)in.size / (double)in.events : 0;
	in.ending = in.clean ? arr_end_name(in.end->reason) : "truncated";
	if (json)
		info_json(&in, tr);
	else
		info_text(&in, tr);
	int status = 0;
	if (rc < 0 && rc != ARR_ETRUNCATED)
		status = cli_trace_error(path, tr, rc);
	arr_merge_close(m);
	arr_summary_release(&in.s);
	arr_trace_close(tr);
	return status;
}

/* The family as one JSON document: members by start time, each with the
 * index of its parent. */
static void tree_json(const struct cli_family *f)
{
	struct arr_doc *d = arr_doc_object(), *ms;
	arr_doc_set_str(d, "family", f->base);
	arr_doc_set_int(d, "events", (int64_t)f->events);
	arr_doc_set_int(d, "largest", cli_family_select(f, NULL));
	ms = arr_doc_set_arr(d, "traces");
	for (size_t i = 0; i < f->n; i++) {
		const struct cli_family_member *m = &f->m[i];
		struct arr_doc *o = arr_doc_push_obj(ms);
		arr_doc_set_str(o, "file", m->path);
		arr_doc_set_int(o, "pid", m->pid);
		arr_doc_set_int(o, "ppid", m->ppid);
		arr_doc_set_str(o, "program", m->program);
		arr_doc_set_str(o, "exe", m->exe);
		arr_doc_set_str(o, "argv", m->argv);
		arr_doc_set_int(o, "events", (int64_t)m->events);
		arr_doc_set_int(o, "duration_ns", (int64_t)m->duration_ns);
		arr_doc_set_int(o, "file_size", (int64_t)m->file_size);
		arr_doc_set_str(o, "ending", m->clean ? arr_end_name(m->end_reason) : "truncated");
		arr_doc_set_int(o, "parent", m->parent);
		arr_doc_set_bool(o, "exec", m->by_exec);
		arr_doc_set_bool(o, "marked", m->marked);
	}
	arr_doc_write_json(stdout, d, 0);
	putchar('\n');
	arr_doc_free(d);
}

static int tree_one(const char *path, int json)
{
	struct cli_family f;
	int rc = cli_family_open(&f, path);
	if (rc) {
		cli_trace_error(f.bad_path ? f.bad_path : path, NULL, rc);
		cli_family_release(&f);
		return EXIT_BAD_INPUT;
	}
	if (json)
		tree_json(&f);
	else
		cli_family_print_tree(stdout, &f, 1);
	cli_family_release(&f);
	return 0;
}

int cmd_info(int argc, char **argv)
{
	int json = 0, tree = 0, first;
	const struct cli_option opts[] = {
		CLI_FLAG('j', "json", &json, "one JSON document per trace, one per line"),
		CLI_FLAG('t', "tree", &tree,
			 "the family of FILE instead: every trace its recording\n"
			 "wrote (FILE, FILE.PID...) as a process tree with pid,\n"
			 "program, events and duration, the largest marked"),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error("info", "no trace given");
	int status = 0;
	for (int i = first; i < argc; i++) {
		rc = tree ? tree_one(argv[i], json) : info_one(argv[i], json);
		if (rc)
			status = rc;
	}
	return status;
}

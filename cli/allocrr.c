/*
 * allocrr.c - the command table and dispatch (git/perf style).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "report.h" /* arr_report_edit_distance */

static const struct cli_command commands[] = {
	{"record", cmd_record, "run a command and record its allocation calls"},
	{"info", cmd_info, "summarise traces: metadata, counts, bytes, how they ended"},
	{"dump", cmd_dump, "print a trace's events in time order (text or JSON lines)"},
	{"replay", cmd_replay, "replay a trace into allocators and compare time and memory"},
	{"analyze", cmd_analyze, "where the memory goes: sizes, lifetimes, live, leaks, RSS, zeroing"},
	{"report", cmd_report, "a YAML-configured report: traces x allocators, checks, JSON, CSV, HTML"},
	{"diff", cmd_diff, "compare two traces or two reports, changes highlighted"},
};

static void list_commands(FILE *f)
{
	fputs("\ncommands:\n", f);
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'allocrr COMMAND --help' tells more about a command.\n", f);
}

static const struct cli_usage usage = {
	"",
	"usage: allocrr [--help] [--version] COMMAND [ARGS]\n",
	"Record every heap allocation of a program, replay it into allocators,\n"
	"and analyse it.\n",
	NULL,
	list_commands,
	1, /* what follows COMMAND is the command's */
};

int main(int argc, char **argv)
{
	static const struct cli_option opts[] = {CLI_END};
	int first;
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc) {
		cli_options_help(stderr, &usage, opts);
		return EXIT_USAGE;
	}
	const char *name = argv[first];
	if (!strcmp(name, "help")) {
		cli_options_help(stdout, &usage, opts);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(name, commands[i].name))
			return commands[i].run(argc - first, argv + first);
	/* a misspelt command ("analyse", "reprot"): the nearest, as options suggest */
	const char *best = NULL;
	unsigned bd = ~0u, limit = strlen(name) < 4 ? 1 : 2;
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		unsigned d = arr_report_edit_distance(name, commands[i].name);
		if (d < bd)
			bd = d, best = commands[i].name;
	}
	if (bd <= limit) {
		cli_error("'%s' is not a command; did you mean 'allocrr %s'?", name, best);
		return EXIT_USAGE;
	}
	cli_error("'%s' is not a command; see 'allocrr --help'", name);
	return EXIT_USAGE;
}

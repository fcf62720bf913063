/*
 * cli.h - shared pieces of the allocrr command line: the command table's
 * entry points, exit codes and the one place that formats errors.
 *
 * Every command: `--help` prints usage to stdout and exits 0; `--version`
 * prints the version; bad usage exits 2 with a one-line message and a hint;
 * bad input exits 1 with `allocrr: 'FILE': what at offset N`.
 */
#ifndef ARR_CLI_H
#define ARR_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "allocrr/trace.h"

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_analyze(int argc, char **argv);

/* "allocrr: " + message, to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Bad usage: message, then "try 'allocrr CMD --help'". Returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report a trace error with file, offset and detail. Returns EXIT_BAD_INPUT. */
int cli_trace_error(const char *path, const struct arr_trace *tr, int rc);
/* Print "allocrr CMD VERSION". Returns 0. */
int cli_version(void);
/* "1.5 MiB": b in the largest binary unit that keeps it >= 1. */
void cli_human_bytes(char *buf, size_t cap, uint64_t b);
/* Directory holding the running allocrr executable. */
const char *cli_exe_dir(void);
/* Handle --help/--version style options shared by every command: returns
 * -1 to continue, else the exit code. */
int cli_common_option(int opt, const char *usage);

#endif

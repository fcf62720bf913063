/*
 * options.h - one option table per command, from which both the parsing
 * and the --help text come (git's parse-options idea), so an option is
 * written once: its long name, short letter, argument, placeholder, help
 * line and where its value goes.
 *
 * A command declares its table as an automatic array (the targets are its
 * locals) ended by CLI_END, and calls cli_options_parse(). The parser
 * handles what every command shares, in one place:
 *   -h/--help      prints the help (synopsis, about, the table, more) to stdout, exit 0;
 *   -V/--version   prints the version, exit 0;
 *   bad usage      one line on stderr and the hint "try 'allocrr CMD --help'", exit 2:
 *                  "unknown option '--fooo'; did you mean '--foo'?",
 *                  "option '--runs' needs a value", "--runs: 'x' is not a number",
 *                  "--runs wants a number from 1 to 1000, not '0'".
 * Long options take "--name VALUE" or "--name=VALUE" (an optional value only
 * the second way) and may be shortened to any unique prefix; short ones
 * "-o VALUE" or "-oVALUE" and group ("-jq"). "--" ends the options.
 * Positional arguments may come between options (they are moved after
 * them) unless the command parses in order (record: the rest is CMD's).
 */
#ifndef ARR_CLI_OPTIONS_H
#define ARR_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Whether an option takes a value. */
enum cli_arg { CLI_ARG_NONE, CLI_ARG_REQUIRED, CLI_ARG_OPTIONAL };

/* Where the value goes: the type of cli_option.target. */
enum cli_type {
	CLI_T_FLAG,     /* int *: set to 1 */
	CLI_T_UINT,     /* unsigned *: a decimal number in [min, max] */
	CLI_T_LONG,     /* long *: a decimal number in [min, max] */
	CLI_T_U64,      /* uint64_t *: a decimal number in [min, max] */
	CLI_T_SIZE,     /* uint64_t *: bytes, with an optional K, M or G (KiB...) suffix, in [min, max] */
	CLI_T_STRING,   /* const char **: the value (the last one given wins) */
	CLI_T_LIST,     /* const char **: appended at target[*count], at most max of them */
	CLI_T_CALLBACK, /* fn(cmd, "--name", value or NULL, target) */
};

/*
 * A callback's contract: 0 when the value was taken, else the exit code
 * after printing the error (cli_usage_error()). value is NULL for an
 * optional value that was not given.
 */
typedef int (*cli_option_fn)(const char *cmd, const char *opt, const char *value, void *target);

struct cli_option {
	const char *name; /* long name without "--"; NULL ends the table */
	int short_name;   /* a letter, or 0 */
	enum cli_arg arg;
	const char *placeholder; /* "N", "FILE" (NULL: CLI_ARG_NONE) */
	const char *help;        /* the description; '\n' starts another line of it */
	enum cli_type type;
	void *target;
	long long min, max; /* numbers' range; CLI_T_LIST: max is the capacity */
	size_t *count;      /* CLI_T_LIST */
	cli_option_fn fn;   /* CLI_T_CALLBACK */
};

/* The targets' types are checked: a wrong pointer is a compiler warning.
 * (clang-format would spread each braced initializer over four lines.) */
/* clang-format off */
#define CLI__PTR(type, p) ((void *)(1 ? (p) : (type *)0))
#define CLI_FLAG(s, l, p, h) {l, s, CLI_ARG_NONE, NULL, h, CLI_T_FLAG, CLI__PTR(int, p), 0, 1, NULL, NULL}
#define CLI_UINT(s, l, ph, p, lo, hi, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_UINT, CLI__PTR(unsigned, p), lo, hi, NULL, NULL}
#define CLI_LONG(s, l, ph, p, lo, hi, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_LONG, CLI__PTR(long, p), lo, hi, NULL, NULL}
#define CLI_U64(s, l, ph, p, lo, hi, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_U64, CLI__PTR(uint64_t, p), lo, hi, NULL, NULL}
#define CLI_SIZE(s, l, ph, p, lo, hi, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_SIZE, CLI__PTR(uint64_t, p), lo, hi, NULL, NULL}
#define CLI_STRING(s, l, ph, p, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_STRING, CLI__PTR(const char *, p), 0, 0, NULL, NULL}
#define CLI_LIST(s, l, ph, arr, n, cap, h) \
	{l, s, CLI_ARG_REQUIRED, ph, h, CLI_T_LIST, CLI__PTR(const char *, arr), 0, cap, n, NULL}
#define CLI_CALLBACK(s, l, arg, ph, p, f, h) {l, s, arg, ph, h, CLI_T_CALLBACK, p, 0, 0, NULL, f}
#define CLI_END {NULL, 0, CLI_ARG_NONE, NULL, NULL, CLI_T_FLAG, NULL, 0, 0, NULL, NULL}
/* clang-format on */

/* A command's help around its table. */
struct cli_usage {
	const char *cmd;            /* "replay"; "" for allocrr itself */
	const char *synopsis;       /* "usage: allocrr replay [...]\n" and its continuation lines */
	const char *about;          /* the paragraphs before the options (or NULL) */
	const char *more;           /* the paragraphs after them: environment, exit status (or NULL) */
	void (*more_fn)(FILE *out); /* or printed by this, after more */
	int in_order;               /* options end at the first positional argument */
};

/*
 * Parse argv[1..argc-1] by opts. Returns -1 when the command goes on, its
 * positional arguments now at argv[*first..argc-1]; otherwise the exit code
 * (0 after --help or --version, EXIT_USAGE after bad usage, its one line
 * printed, or a callback's code).
 */
int cli_options_parse(const struct cli_usage *u, const struct cli_option *opts, int argc, char **argv, int *first);

/* The help, as --help prints it. */
void cli_options_help(FILE *out, const struct cli_usage *u, const struct cli_option *opts);

#endif

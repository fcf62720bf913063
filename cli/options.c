/*
 * options.c - parsing and help text from a command's option table
 * (options.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "report.h"

/* Every command's own last two entries. */
static const struct cli_option common_opts[] = {
	{"help", 'h', CLI_ARG_NONE, NULL, "show this help", CLI_T_FLAG, NULL, 0, 0, NULL, NULL},
	{"version", 'V', CLI_ARG_NONE, NULL, "show the version", CLI_T_FLAG, NULL, 0, 0, NULL, NULL},
};
#define NCOMMON (sizeof common_opts / sizeof *common_opts)

static int is_common(const struct cli_option *o) { return o >= common_opts && o < common_opts + NCOMMON; }

/* The entries of opts, then the common ones: for (o = next_opt(opts, NULL); o; o = next_opt(opts, o)). */
static const struct cli_option *next_opt(const struct cli_option *opts, const struct cli_option *o)
{
	if (!o)
		return opts->name ? opts : common_opts;
	if (is_common(o))
		return o + 1 < common_opts + NCOMMON ? o + 1 : NULL;
	return o[1].name ? o + 1 : common_opts;
}

/* Descriptions start here at most; a longer option has its text on the next line. */
#define HELP_COLUMN_MAX 26

static size_t left_width(const struct cli_option *o)
{
	size_t w = 8 + strlen(o->name); /* "  -x, --" */
	if (o->arg == CLI_ARG_REQUIRED)
		w += 1 + strlen(o->placeholder);
	else if (o->arg == CLI_ARG_OPTIONAL)
		w += 3 + strlen(o->placeholder); /* "[=" "]" */
	return w + 2;
}

static void help_entry(FILE *out, const struct cli_option *o, size_t col)
{
	char left[128];
	int n;
	if (o->short_name)
		n = snprintf(left, sizeof left, "  -%c, --%s", o->short_name, o->name);
	else
		n = snprintf(left, sizeof left, "      --%s", o->name);
	if (o->arg == CLI_ARG_REQUIRED)
		snprintf(left + n, sizeof left - (size_t)n, " %s", o->placeholder);
	else if (o->arg == CLI_ARG_OPTIONAL)
		snprintf(left + n, sizeof left - (size_t)n, "[=%s]", o->placeholder);
	size_t len = strlen(left);
	fputs(left, out);
	if (len + 2 > col) {
		fputc('\n', out);
		len = 0;
	}
	/* each line of the description at the column */
	for (const char *h = o->help; *h;) {
		size_t line = strcspn(h, "\n");
		fprintf(out, "%*s%.*s\n", (int)(col - len), "", (int)line, h);
		len = 0;
		h += line + (h[line] == '\n');
	}
}

void cli_options_help(FILE *out, const struct cli_usage *u, const struct cli_option *opts)
{
	size_t col = 0;
	for (const struct cli_option *o = next_opt(opts, NULL); o; o = next_opt(opts, o))
		if (left_width(o) > col && left_width(o) <= HELP_COLUMN_MAX)
			col = left_width(o);
	fputs(u->synopsis, out);
	if (u->about)
		fprintf(out, "\n%s", u->about);
	fputc('\n', out);
	for (const struct cli_option *o = next_opt(opts, NULL); o; o = next_opt(opts, o))
		help_entry(out, o, col);
	if (u->more)
		fprintf(out, "\n%s", u->more);
	if (u->more_fn)
		u->more_fn(out);
}

/* The long option nearest name (for "did you mean"), as config.c suggests keys. */
static const char *suggest(const struct cli_option *opts, const char *name, size_t len)
{
	char buf[64];
	if (len >= sizeof buf)
		return NULL;
	memcpy(buf, name, len);
	buf[len] = 0;
	const char *best = NULL;
	unsigned bd = ~0u;
	for (const struct cli_option *o = next_opt(opts, NULL); o; o = next_opt(opts, o)) {
		unsigned d = arr_report_edit_distance(buf, o->name);
		if (d < bd)
			bd = d, best = o->name;
	}
	unsigned limit = len < 4 ? 1 : len < 9 ? 2 : 3;
	return bd <= limit ? best : NULL;
}

static int range_error(const char *cmd, const char *label, const struct cli_option *o, const char *s)
{
	if (o->max >= INT64_MAX / 2)
		return cli_usage_error(cmd, "%s wants a number of at least %lld, not '%s'", label, o->min, s);
	return cli_usage_error(cmd, "%s wants a number from %lld to %lld, not '%s'", label, o->min, o->max, s);
}

static int parse_number(const char *cmd, const char *label, const struct cli_option *o, const char *s)
{
	int is_signed = o->type == CLI_T_LONG;
	if (!(*s >= '0' && *s <= '9') && !(*s == '-' && s[1] >= '0' && s[1] <= '9'))
		return cli_usage_error(cmd, "%s: '%s' is not a number", label, s);
	if (*s == '-' && !is_signed)
		return range_error(cmd, label, o, s);
	char *end;
	errno = 0;
	long long v = 0;
	unsigned long long u = 0;
	if (is_signed)
		v = strtoll(s, &end, 10);
	else
		u = strtoull(s, &end, 10);
	if (o->type == CLI_T_SIZE && *end) {
		static const char units[] = "KMG";
		const char *p = *end ? strchr(units, *end >= 'a' ? *end - 32 : *end) : NULL;
		if (!p || (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))
			return cli_usage_error(cmd, "%s: '%s' is not a size (a number, with K, M or G)", label, s);
		int shift = 10 * (int)(p - units + 1);
		if (u > (~0ull >> shift))
			errno = ERANGE;
		u <<= shift;
		end += strlen(end);
	}
	if (*end)
		return cli_usage_error(cmd, "%s: '%s' is not a number", label, s);
	if (errno == ERANGE ||
	    (is_signed ? v < o->min || v > o->max : u < (unsigned long long)o->min || u > (unsigned long long)o->max))
		return range_error(cmd, label, o, s);
	switch (o->type) {
	case CLI_T_UINT:
		*(unsigned *)o->target = (unsigned)u;
		break;
	case CLI_T_LONG:
		*(long *)o->target = (long)v;
		break;
	default:
		*(uint64_t *)o->target = (uint64_t)u;
		break;
	}
	return 0;
}

/* Give option o its value (NULL: none given). Returns 0 or an exit code. */
static int take(const struct cli_usage *u, const struct cli_option *opts, const struct cli_option *o, const char *value)
{
	char label[80]; /* "--name" even for "-n": the message says which option */
	snprintf(label, sizeof label, "--%s", o->name);
	if (o == &common_opts[0]) {
		cli_options_help(stdout, u, opts);
		return 0;
	}
	if (o == &common_opts[1])
		return cli_version();
	switch (o->type) {
	case CLI_T_FLAG:
		*(int *)o->target = 1;
		return 0;
	case CLI_T_UINT:
	case CLI_T_LONG:
	case CLI_T_U64:
	case CLI_T_SIZE:
		return parse_number(u->cmd, label, o, value);
	case CLI_T_STRING:
		*(const char **)o->target = value;
		return 0;
	case CLI_T_LIST:
		if (*o->count >= (size_t)o->max)
			return cli_usage_error(u->cmd, "%s given more than %lld times", label, o->max);
		((const char **)o->target)[(*o->count)++] = value;
		return 0;
	case CLI_T_CALLBACK:
		return o->fn(u->cmd, label, value, o->target);
	}
	return 0;
}

/* The entry of a long option: exact, else the one it is a unique prefix of. */
static const struct cli_option *find_long(const struct cli_option *opts, const char *name, size_t len, int *ambiguous)
{
	const struct cli_option *found = NULL;
	int n = 0;
	*ambiguous = 0;
	for (const struct cli_option *o = next_opt(opts, NULL); o; o = next_opt(opts, o)) {
		if (strncmp(o->name, name, len))
			continue;
		if (!o->name[len])
			return o;
		found = o, n++;
	}
	*ambiguous = n > 1;
	return n == 1 ? found : NULL;
}

static const struct cli_option *find_short(const struct cli_option *opts, int c)
{
	for (const struct cli_option *o = next_opt(opts, NULL); o; o = next_opt(opts, o))
		if (o->short_name == c)
			return o;
	return NULL;
}

/* One "--name[=value]" at argv[*i]. Returns -1 to go on, or an exit code. */
static int parse_long(const struct cli_usage *u, const struct cli_option *opts, int argc, char **argv, int *i)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int ambiguous = 0;
	const struct cli_option *o = len ? find_long(opts, name, len, &ambiguous) : NULL;
	if (!o) {
		const char *sug = ambiguous ? NULL : suggest(opts, name, len);
		if (ambiguous)
			return cli_usage_error(u->cmd, "option '--%.*s' is ambiguous", (int)len, name);
		if (sug)
			return cli_usage_error(u->cmd, "unknown option '--%.*s'; did you mean '--%s'?", (int)len, name,
					       sug);
		return cli_usage_error(u->cmd, "unknown option '--%.*s'", (int)len, name);
	}
	const char *value = eq ? eq + 1 : NULL;
	if (o->arg == CLI_ARG_NONE && value)
		return cli_usage_error(u->cmd, "option '--%s' takes no value", o->name);
	if (o->arg == CLI_ARG_REQUIRED && !value) {
		if (*i + 1 >= argc)
			return cli_usage_error(u->cmd, "option '--%s' needs a value", o->name);
		value = argv[++*i];
	}
	int rc = take(u, opts, o, value);
	return is_common(o) || rc ? rc : -1;
}

/* One "-abc" or "-oVALUE" group at argv[*i]. */
static int parse_short(const struct cli_usage *u, const struct cli_option *opts, int argc, char **argv, int *i)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		const struct cli_option *o = find_short(opts, *p);
		if (!o)
			return cli_usage_error(u->cmd, "unknown option '-%c'", *p);
		const char *value = NULL;
		if (o->arg != CLI_ARG_NONE && p[1]) {
			value = p + 1;
		} else if (o->arg == CLI_ARG_REQUIRED) {
			if (*i + 1 >= argc)
				return cli_usage_error(u->cmd, "option '-%c' needs a value", *p);
			value = argv[++*i];
		}
		int rc = take(u, opts, o, value);
		if (is_common(o) || rc)
			return rc; /* after --help, --version or an error */
		if (value)
			break;
	}
	return -1;
}

/* Move argv[from] to argv[to] (to <= from), the entries between one place up. */
static void move_down(char **argv, int from, int to)
{
	char *a = argv[from];
	memmove(argv + to + 1, argv + to, (size_t)(from - to) * sizeof *argv);
	argv[to] = a;
}

int cli_options_parse(const struct cli_usage *u, const struct cli_option *opts, int argc, char **argv, int *first)
{
	/* argv[1..nopt-1] are the options seen, argv[nopt..i-1] the positionals
	 * between them (in place: no allocation, so nothing to fail). */
	int nopt = 1, i, rc = -1;
	for (i = 1; i < argc && rc < 0; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			move_down(argv, i, nopt++); /* kept: the arguments still end at argc */
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) { /* "-" is a file: stdin */
			if (u->in_order)
				break;
			continue;
		}
		int start = i;
		rc = a[1] == '-' ? parse_long(u, opts, argc, argv, &i) : parse_short(u, opts, argc, argv, &i);
		for (int k = start; k <= i && k < argc; k++)
			move_down(argv, k, nopt++);
	}
	*first = nopt;
	return rc;
}

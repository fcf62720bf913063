/*
 * family.c - the traces of one recorded process tree, and the choice of
 * one of them.
 *
 * `allocrr record -o FILE` writes FILE for the top process and FILE.PID
 * (FILE.PID.N when taken) for every process it forks or image it execs.
 * Real commands are often wrappers (a shell, a pyenv shim, a compiler
 * driver), so the trace that matters is rarely FILE itself: the family is
 * read from chunk headers and file headers only (no events decoded), shown
 * as a tree, and a command that takes one trace picks the largest unless
 * told otherwise.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Shown in full up to this many traces; beyond, only the marked ones and
 * their ancestors, the rest summed. */
#define FAMILY_SHOW_ALL 12
/* The marked traces: the fewest, largest first, that hold this share of
 * the events, but no more than FAMILY_MARK_MAX. */
#define FAMILY_MARK_PERCENT 80
#define FAMILY_MARK_MAX 5

int cli_family_is_member_name(const char *name, const char *base)
{
	size_t bl = strlen(base);
	if (strncmp(name, base, bl) || name[bl] != '.')
		return 0;
	const char *p = name + bl + 1;
	int dots = 0;
	if (!*p)
		return 0;
	for (; *p; p++) {
		if (*p == '.') {
			if (++dots > 1 || p[1] == 0 || p[-1] == '.')
				return 0;
		} else if (*p < '0' || *p > '9') {
			return 0;
		}
	}
	return 1;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* path without its last component if that is ".DIGITS": 1 and *num, else 0 */
static int strip_number(char *path, long long *num)
{
	char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash) || !dot[1] || dot == path || dot[-1] == '/')
		return 0;
	for (const char *p = dot + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	*num = strtoll(dot + 1, NULL, 10);
	*dot = 0;
	return 1;
}

/*
 * The family's base name FILE, from FILE, FILE.PID or FILE.PID.N. The pid
 * the trace recorded tells a member's name from a FILE that merely ends in
 * digits ("run.1" and its "run.1.PID"); without it, an existing FILE does.
 */
static void family_base(const char *path, char *base, size_t cap)
{
	char b1[PATH_MAX], b2[PATH_MAX];
	long long n1 = -1, n2 = -1, pid = -1;
	snprintf(base, cap, "%s", path);
	snprintf(b1, sizeof b1, "%s", path);
	if (!strip_number(b1, &n1))
		return;
	snprintf(b2, sizeof b2, "%s", b1);
	int two = strip_number(b2, &n2);
	struct arr_trace *tr;
	if (arr_trace_open(&tr, path) == 0)
		pid = arr_trace_meta(tr)->pid;
	arr_trace_close(tr);
	if (two && n2 == pid)
		snprintf(base, cap, "%s", b2); /* FILE.PID.N */
	else if (n1 == pid)
		snprintf(base, cap, "%s", b1); /* FILE.PID */
	else if (pid < 0 && two && exists(b2))
		snprintf(base, cap, "%s", b2);
	else if (pid < 0 && exists(b1))
		snprintf(base, cap, "%s", b1);
}

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

/* Header and chunk headers of one trace. */
static int read_member(struct cli_family_member *m)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, m->path);
	if (rc) {
		arr_trace_close(tr);
		return rc;
	}
	const struct arr_trace_meta *meta = arr_trace_meta(tr);
	m->pid = meta->pid;
	m->ppid = meta->ppid;
	m->start_ns = meta->start_realtime_ns;
	m->exe = xstrdup(meta->exe);
	m->argv = xstrdup(meta->argv);
	const char *slash = strrchr(m->exe, '/');
	m->program = slash ? slash + 1 : m->exe;
	struct arr_chunk_info ci;
	uint64_t last = 0;
	while ((rc = arr_trace_next_chunk(tr, &ci)) == 1) {
		m->events += ci.nevents; /* tid 0's chunks: the RSS samples, events as analyze counts them */
		if (ci.last_t > last)
			last = ci.last_t;
	}
	const struct arr_trace_end *end = arr_trace_end(tr);
	m->clean = rc == 0 && end->present;
	m->end_reason = m->clean ? end->reason : ARR_END_NONE;
	m->duration_ns = m->clean && end->t > last ? end->t : last;
	m->file_size = arr_trace_file_size(tr);
	arr_trace_close(tr);
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct cli_family_member *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * The parent of each member: the image its process ran before an exec (the
 * latest earlier trace of the same pid that ended in exec), else the image
 * of its parent process running when it started, else none.
 */
static void link_parents(struct cli_family *f)
{
	for (size_t i = 0; i < f->n; i++)
		f->m[i].next = -1;
	for (size_t i = 0; i < f->n; i++) {
		struct cli_family_member *m = &f->m[i];
		m->parent = -1;
		m->by_exec = 0;
		m->head = (int)i;
		for (size_t j = i; j-- > 0;)
			if (f->m[j].pid == m->pid && f->m[j].end_reason == ARR_END_EXEC && f->m[j].next < 0) {
				m->parent = (int)j;
				m->by_exec = 1;
				m->head = f->m[j].head;
				f->m[j].next = (int)i;
				break;
			}
		if (m->parent >= 0)
			continue;
		for (size_t j = i; j-- > 0;)
			if (f->m[j].pid == m->ppid) {
				m->parent = (int)j;
				break;
			}
	}
}

static void mark(struct cli_family *f)
{
	uint64_t total = 0;
	for (size_t i = 0; i < f->n; i++)
		total += f->m[i].events;
	f->events = total;
	uint64_t held = 0;
	for (int k = 0; k < FAMILY_MARK_MAX && (held == 0 || held * 100 < total * FAMILY_MARK_PERCENT); k++) {
		int best = -1;
		for (size_t i = 0; i < f->n; i++)
			if (!f->m[i].marked && (best < 0 || f->m[i].events > f->m[best].events))
				best = (int)i;
		if (best < 0)
			break;
		f->m[best].marked = 1;
		held += f->m[best].events;
	}
}

int cli_family_open(struct cli_family *f, const char *path)
{
	memset(f, 0, sizeof *f);
	char base[PATH_MAX], dir[PATH_MAX];
	family_base(path, base, sizeof base);
	const char *slash = strrchr(base, '/'), *name = slash ? slash + 1 : base;
	if (slash)
		snprintf(dir, sizeof dir, "%.*s", slash == base ? 1 : (int)(slash - base), base);
	else
		snprintf(dir, sizeof dir, ".");
	f->base = strdup(base);
	if (!f->base)
		return -ENOMEM;

	size_t cap = 8;
	f->m = calloc(cap, sizeof *f->m);
	if (!f->m)
		return -ENOMEM;
	struct dirent **names = NULL;
	int nn = scandir(dir, &names, NULL, versionsort);
	int rc = 0;
	/* the top trace first, then FILE.PID... in version order */
	for (int i = -1; i < nn && rc == 0; i++) {
		char p[PATH_MAX * 2];
		if (i < 0) {
			if (!exists(base))
				continue;
			snprintf(p, sizeof p, "%s", base);
		} else if (cli_family_is_member_name(names[i]->d_name, name)) {
			snprintf(p, sizeof p, "%s%s%s", slash ? dir : "", slash ? (strcmp(dir, "/") ? "/" : "") : "",
				 names[i]->d_name);
		} else {
			continue;
		}
		if (f->n == cap) {
			struct cli_family_member *nm = realloc(f->m, 2 * cap * sizeof *nm);
			if (!nm) {
				rc = -ENOMEM;
				break;
			}
			memset(nm + cap, 0, cap * sizeof *nm);
			f->m = nm;
			cap *= 2;
		}
		struct cli_family_member *m = &f->m[f->n];
		if (!(m->path = strdup(p))) {
			rc = -ENOMEM;
			break;
		}
		int r = read_member(m);
		if (r == 0) {
			f->n++;
		} else {
			/* a member that is not a trace (an empty file left by a killed
			 * process): not part of the family, unless it is the one asked
			 * for (then its error is the answer) */
			if (!strcmp(p, path)) {
				f->bad_path = m->path;
				rc = r;
			} else {
				free(m->path);
			}
			m->path = NULL;
		}
	}
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	if (rc)
		return rc;
	if (f->n == 0) {
		/* nothing matched: open the path itself for its own error */
		struct cli_family_member *m = &f->m[0];
		if (!(m->path = strdup(path)))
			return -ENOMEM;
		if ((rc = read_member(m))) {
			f->bad_path = m->path;
			m->path = NULL;
			return rc;
		}
		f->n = 1;
	}
	qsort(f->m, f->n, sizeof *f->m, by_start);
	link_parents(f);
	mark(f);
	return 0;
}

void cli_family_release(struct cli_family *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->m[i].path);
		free(f->m[i].exe);
		free(f->m[i].argv);
	}
	free(f->bad_path);
	free(f->m);
	free(f->base);
	memset(f, 0, sizeof *f);
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* argv[0]'s last component */
static int argv0_is(const char *argv, const char *name)
{
	size_t len = strcspn(argv, " ");
	const char *a = argv;
	for (const char *p = argv; p < argv + len; p++)
		if (*p == '/')
			a = p + 1;
	return (size_t)(argv + len - a) == strlen(name) && !strncmp(a, name, strlen(name));
}

int cli_family_select(const struct cli_family *f, const char *select)
{
	int best = -1;
	for (size_t i = 0; i < f->n; i++) {
		const struct cli_family_member *m = &f->m[i];
		int match = !select || !*select || !strcmp(m->program, select) || argv0_is(m->argv, select) ||
			    (all_digits(select) && m->pid == strtoll(select, NULL, 10));
		if (match && (best < 0 || m->events > f->m[best].events))
			best = (int)i;
	}
	return best;
}

int cli_family_resolve(const char *arg, const char *select, int quiet, char *out, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", arg);
	/* FILE@NAME, unless a file of that very name exists */
	char *at = strrchr(path, '@');
	if (at && !exists(path) && !strchr(at, '/')) {
		*at = 0;
		if (select && *select)
			return cli_usage_error(NULL, "'%s' and --select '%s': choose one way", arg, select);
		select = at + 1;
		if (!*select)
			return cli_usage_error(NULL, "'%s': no program name after '@'", arg);
	}
	struct cli_family f;
	int rc = cli_family_open(&f, path);
	if (rc) {
		/* the family keeps only the code: open the bad trace again for
		 * its offset and detail, so every command words it as info does */
		const char *bad = f.bad_path ? f.bad_path : path;
		struct arr_trace *tr = NULL;
		int orc = rc == -ENOMEM ? rc : arr_trace_open(&tr, bad);
		cli_trace_error(bad, tr, orc ? orc : rc);
		arr_trace_close(tr);
		cli_family_release(&f);
		return EXIT_BAD_INPUT;
	}
	/* a member named by its own file (FILE.PID) is the choice: the largest
	 * is only the default for the family's top trace */
	int i = -1;
	if ((!select || !*select) && strcmp(path, f.base)) {
		for (size_t j = 0; j < f.n; j++)
			if (!strcmp(f.m[j].path, path))
				i = (int)j;
		if (i >= 0) {
			snprintf(out, cap, "%s", path);
			cli_family_release(&f);
			return 0;
		}
		/* a mistyped FILE.PID is an error: the family's largest in its place
		 * would be analysed under a name the user never gave */
		if (!exists(path)) {
			cli_error("no such trace '%s'; the family of '%s' has:", path, f.base);
			for (size_t j = 0; j < f.n; j++)
				fprintf(stderr, "  %-20s pid %" PRId64 ", %" PRIu64 " events, %s\n", f.m[j].program,
					f.m[j].pid, f.m[j].events, f.m[j].path);
			cli_family_release(&f);
			return EXIT_BAD_INPUT;
		}
	}
	i = cli_family_select(&f, select);
	if (i < 0) {
		cli_error("no trace of '%s' in the family of '%s'; its programs:", select, path);
		for (size_t j = 0; j < f.n; j++)
			fprintf(stderr, "  %-20s pid %" PRId64 ", %" PRIu64 " events, %s\n", f.m[j].program, f.m[j].pid,
				f.m[j].events, f.m[j].path);
		cli_family_release(&f);
		return EXIT_USAGE;
	}
	const struct cli_family_member *m = &f.m[i];
	snprintf(out, cap, "%s", (select && *select) || f.n > 1 ? m->path : path);
	char mine[32], all[32];
	cli_count(mine, sizeof mine, (double)m->events);
	cli_count(all, sizeof all, (double)f.events);
	if (!quiet && f.n > 1)
		fprintf(stderr,
			"allocrr: using %s (%s, pid %" PRId64 ", %s of the family's %s events in %zu traces%s)\n",
			m->path, m->program, m->pid, mine, all, f.n,
			select && *select ? "" : "; the largest: choose with --select NAME or FILE@NAME");
	cli_family_release(&f);
	return 0;
}

/* ---- the tree ---- */

static void commas(char *buf, size_t cap, uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v), o = 0;
	for (int i = 0; i < n && o + 2 < (int)cap; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
}

/* Tree drawing: a process is a line for its first image, its later images
 * (exec) at the same indent under it, then its children nested. */
#define TREE_PREFIX_MAX 64
#define TREE_LABEL_MAX 56

struct tree_ctx {
	FILE *out; /* NULL: only measure the widest label */
	const struct cli_family *f;
	const char *shown; /* per member */
	int width;         /* of the program column */
	int dir_len;       /* chars of the family's directory to drop from paths */
};

static void tree_line(struct tree_ctx *c, int i, const char *prefix, const char *conn)
{
	const struct cli_family_member *m = &c->f->m[i];
	char label[TREE_PREFIX_MAX + 160], ev[32];
	snprintf(label, sizeof label, "%s%s%s%s", prefix, conn, m->by_exec ? "exec " : "", m->program);
	int len = (int)strlen(label);
	if (!c->out) {
		if (len > c->width)
			c->width = len < TREE_LABEL_MAX ? len : TREE_LABEL_MAX;
		return;
	}
	commas(ev, sizeof ev, m->events);
	fprintf(c->out, "  %7" PRId64 "  %-*.*s %c %11s  %8.3f s  %s%s\n", m->pid, c->width, c->width, label,
		m->marked ? '*' : ' ', ev, (double)m->duration_ns / 1e9, m->path + c->dir_len,
		m->clean ? "" : "  (truncated)");
}

/* The shown process whose image forked i's process (-1: none shown). */
static int parent_head(const struct tree_ctx *c, int i)
{
	int p = c->f->m[i].parent;
	while (p >= 0 && !c->shown[p])
		p = c->f->m[p].parent;
	return p < 0 ? -1 : c->f->m[p].head;
}

static int is_kid(const struct tree_ctx *c, int j, int head)
{
	const struct cli_family_member *m = &c->f->m[j];
	return c->shown[j] && !m->by_exec && m->head == j && parent_head(c, j) == head;
}

static void tree_process(struct tree_ctx *c, int h, char *prefix, size_t plen, int last, int depth)
{
	tree_line(c, h, prefix, depth ? (last ? "`- " : "|- ") : "");
	size_t nl = plen;
	if (depth && plen + 4 < TREE_PREFIX_MAX) { /* deeper than that: drawn flat */
		snprintf(prefix + plen, TREE_PREFIX_MAX - plen, "%s", last ? "   " : "|  ");
		nl = plen + 3;
	}
	for (int s = c->f->m[h].next; s >= 0; s = c->f->m[s].next)
		tree_line(c, s, prefix, "");
	size_t nk = 0, k = 0;
	for (size_t j = 0; j < c->f->n; j++)
		nk += is_kid(c, (int)j, h);
	for (size_t j = 0; j < c->f->n; j++)
		if (is_kid(c, (int)j, h))
			tree_process(c, (int)j, prefix, nl, ++k == nk, depth + 1);
	prefix[plen] = 0;
}

static void tree_all(struct tree_ctx *c)
{
	char prefix[TREE_PREFIX_MAX] = "";
	for (size_t i = 0; i < c->f->n; i++)
		if (c->shown[i] && c->f->m[i].head == (int)i && parent_head(c, (int)i) < 0)
			tree_process(c, (int)i, prefix, 0, 1, 0);
}

/* "bash 24, readlink 5": the most frequent programs among the hidden. */
static void hidden_names(const struct cli_family *f, const char *shown, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	char *done = calloc(f->n, 1);
	for (int k = 0; k < 4 && done; k++) {
		int best = -1, best_n = 0;
		for (size_t i = 0; i < f->n; i++) {
			if (shown[i] || done[i])
				continue;
			int n = 0;
			for (size_t j = i; j < f->n; j++)
				n += !shown[j] && !strcmp(f->m[j].program, f->m[i].program);
			if (n > best_n)
				best = (int)i, best_n = n;
		}
		if (best < 0)
			break;
		for (size_t j = 0; j < f->n; j++)
			if (!strcmp(f->m[j].program, f->m[best].program))
				done[j] = 1;
		int w = snprintf(buf + len, cap - len, "%s%s %d", k ? ", " : "", f->m[best].program, best_n);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
	free(done);
}

void cli_family_print_tree(FILE *out, const struct cli_family *f, int all)
{
	if (f->n == 1 && !all) { /* a tree of one: one line */
		const struct cli_family_member *m = &f->m[0];
		char ev[32];
		commas(ev, sizeof ev, m->events);
		fprintf(out, "%s: 1 trace, %s events (%s, pid %" PRId64 ", %.3f s%s)\n", m->path, ev, m->program,
			m->pid, (double)m->duration_ns / 1e9, m->clean ? "" : ", truncated");
		return;
	}
	char *shown = calloc(f->n ? f->n : 1, 1);
	if (!shown)
		return;
	int full = all || f->n <= FAMILY_SHOW_ALL;
	/* shown: every trace, or the marked ones, the top process and their
	 * ancestors; a shown process shows all its images */
	for (size_t i = 0; i < f->n; i++)
		if (full || f->m[i].marked || f->m[i].parent < 0)
			for (int p = (int)i; p >= 0 && !shown[p]; p = f->m[p].parent)
				shown[p] = 1;
	for (size_t i = 0; i < f->n; i++)
		if (shown[i])
			for (int s = f->m[f->m[i].head].next; s >= 0; s = f->m[s].next)
				shown[s] = 1;
	const char *slash = strrchr(f->base, '/');
	struct tree_ctx c = {NULL, f, shown, 7, slash ? (int)(slash - f->base) + 1 : 0};
	tree_all(&c); /* measure */
	c.out = out;

	char ev[32];
	uint64_t held = 0, rest_ev = 0, rest_ns = 0;
	size_t nmarked = 0, rest = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->m[i].marked)
			held += f->m[i].events, nmarked++;
		if (!shown[i])
			rest++, rest_ev += f->m[i].events, rest_ns += f->m[i].duration_ns;
	}
	commas(ev, sizeof ev, f->events);
	fprintf(out, "%s: %zu trace%s, %s events; * marks the %s%zu holding %.1f%%\n", f->base, f->n,
		f->n == 1 ? "" : "s", ev, nmarked > 1 ? "largest " : "", nmarked,
		f->events ? 100.0 * (double)held / (double)f->events : 100.0);
	fprintf(out, "  %7s  %-*s   %11s  %10s  %s\n", "pid", c.width, "program", "events", "duration", "trace");
	tree_all(&c);
	if (rest) {
		char names[160], label[48];
		hidden_names(f, shown, names, sizeof names);
		commas(ev, sizeof ev, rest_ev);
		snprintf(label, sizeof label, "+ %zu more trace%s", rest, rest == 1 ? "" : "s");
		fprintf(out, "  %7s  %-*s   %11s  %8.3f s  %s (all: allocrr info --tree)\n", "", c.width, label, ev,
			(double)rest_ns / 1e9, names);
	}
	free(shown);
}

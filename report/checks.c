/*
 * checks.c - the expressions a report is gated on: a recursive-descent
 * parser into a small tree, and its evaluation over a trace's section of
 * the report (and one of its allocator entries).
 *
 * Grammar (lowest precedence first):
 *   expr    := and ('or' and)*
 *   and     := not ('and' not)*
 *   not     := 'not' not | cmp
 *   cmp     := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/') unary)*
 *   unary   := '-' unary | primary
 *   primary := NUMBER [unit] | PATH | "STRING" | '(' expr ')'
 * A PATH is a metric (arr_doc_path syntax) or the name of an allocator of
 * the trace, which stands for that allocator's value of the metric on the
 * other side of the comparison. Resolution is documented in
 * docs/report-config.md ("Checks").
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

enum node_kind {
	N_NUM,
	N_PATH,
	N_STR,
	N_NEG,
	N_NOT,
	N_ADD,
	N_SUB,
	N_MUL,
	N_DIV,
	N_LT,
	N_LE,
	N_GT,
	N_GE,
	N_EQ,
	N_NE,
	N_AND,
	N_OR,
};

static const char *const cmp_ops[] = {
	[N_LT] = "<", [N_LE] = "<=", [N_GT] = ">", [N_GE] = ">=", [N_EQ] = "==", [N_NE] = "!="};

struct arr_check {
	enum node_kind kind;
	double num;
	char *name; /* N_PATH, N_STR */
	size_t at;  /* N_PATH, N_STR: offset of the name in the check's text */
	struct arr_check *a, *b;
};

void arr_check_free(struct arr_check *c)
{
	if (!c)
		return;
	arr_check_free(c->a);
	arr_check_free(c->b);
	free(c->name);
	free(c);
}

/* ---- parser ---- */

struct parser {
	const char *s;
	size_t pos, err_pos;
	char *msg;
	size_t cap;
	int failed, oom;
};

static void perr(struct parser *p, size_t at, const char *fmt, const char *arg)
{
	if (p->failed)
		return;
	p->failed = 1;
	p->err_pos = at;
	snprintf(p->msg, p->cap, fmt, arg);
}

static void skip_ws(struct parser *p)
{
	while (isspace((unsigned char)p->s[p->pos]))
		p->pos++;
}

static int is_ident_start(char ch) { return isalpha((unsigned char)ch) || ch == '_'; }

/* Identifier characters; '=' only inside ("name=glibc"), never as "==". */
static size_t ident_len(const char *s)
{
	size_t n = 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.' ||
	       (s[n] == '=' && s[n + 1] != '=' && n && s[n - 1] != '=' && s[n + 1] &&
		!isspace((unsigned char)s[n + 1])))
		n++;
	return n;
}

/* Is the next token the keyword kw (or one of its symbols)? Consumes it. */
static int accept_word(struct parser *p, const char *kw, const char *sym)
{
	skip_ws(p);
	size_t n = strlen(kw);
	if (!strncmp(p->s + p->pos, kw, n) && !isalnum((unsigned char)p->s[p->pos + n]) && p->s[p->pos + n] != '_' &&
	    p->s[p->pos + n] != '.') {
		p->pos += n;
		return 1;
	}
	if (sym && !strncmp(p->s + p->pos, sym, strlen(sym))) {
		p->pos += strlen(sym);
		return 1;
	}
	return 0;
}

static struct arr_check *mk(struct parser *p, enum node_kind k, struct arr_check *a, struct arr_check *b)
{
	if (p->failed) {
		arr_check_free(a);
		arr_check_free(b);
		return NULL;
	}
	struct arr_check *c = calloc(1, sizeof *c);
	if (!c) {
		p->oom = p->failed = 1;
		arr_check_free(a);
		arr_check_free(b);
		return NULL;
	}
	c->kind = k;
	c->a = a;
	c->b = b;
	return c;
}

static struct arr_check *parse_or(struct parser *p);

/* Byte and count suffixes: 64KiB, 1.5MB, 2G. */
static double unit_factor(const char *s, size_t *len)
{
	static const struct {
		const char *u;
		double f;
	} units[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
		     {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
		     {"TB", 1e12},    {"%", 0.01}};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		size_t n = strlen(units[i].u);
		if (!strncmp(s, units[i].u, n) && !isalnum((unsigned char)s[n]) && s[n] != '_') {
			*len = n;
			return units[i].f;
		}
	}
	*len = 0;
	return 1;
}

static struct arr_check *parse_primary(struct parser *p)
{
	skip_ws(p);
	const char *s = p->s + p->pos;
	size_t at = p->pos;
	if (p->failed)
		return NULL;
	if (*s == '(') {
		p->pos++;
		struct arr_check *e = parse_or(p);
		skip_ws(p);
		if (p->s[p->pos] != ')') {
			perr(p, p->pos, "expected ')'%s", "");
			arr_check_free(e);
			return NULL;
		}
		p->pos++;
		return e;
	}
	if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
		char *end;
		errno = 0;
		double v = strtod(s, &end);
		if (errno || !isfinite(v)) {
			perr(p, at, "bad number%s", "");
			return NULL;
		}
		size_t ul;
		v *= unit_factor(end, &ul);
		end += ul;
		if (isalnum((unsigned char)*end) || *end == '_') {
			perr(p, (size_t)(end - p->s), "unknown unit or stray characters after a number%s", "");
			return NULL;
		}
		p->pos = (size_t)(end - p->s);
		struct arr_check *c = mk(p, N_NUM, NULL, NULL);
		if (c)
			c->num = v;
		return c;
	}
	if (*s == '"' || *s == '\'') {
		const char *close = strchr(s + 1, *s);
		if (!close) {
			perr(p, at, "unterminated string%s", "");
			return NULL;
		}
		struct arr_check *c = mk(p, N_STR, NULL, NULL);
		if (c)
			c->at = at;
		if (c && !(c->name = strndup(s + 1, (size_t)(close - s - 1)))) {
			p->oom = p->failed = 1;
			arr_check_free(c);
			return NULL;
		}
		p->pos = (size_t)(close - p->s) + 1;
		return c;
	}
	if (is_ident_start(*s)) {
		size_t n = ident_len(s);
		if (s[n - 1] == '.') {
			perr(p, at + n - 1, "a metric path cannot end with '.'%s", "");
			return NULL;
		}
		static const char *const words[] = {"and", "or", "not"};
		for (size_t i = 0; i < 3; i++)
			if (n == strlen(words[i]) && !strncmp(s, words[i], n)) {
				perr(p, at, "expected a number or a metric before '%s'", words[i]);
				return NULL;
			}
		struct arr_check *c = mk(p, N_PATH, NULL, NULL);
		if (c)
			c->at = at;
		if (c && !(c->name = strndup(s, n))) {
			p->oom = p->failed = 1;
			arr_check_free(c);
			return NULL;
		}
		p->pos += n;
		return c;
	}
	if (!*s)
		perr(p, at, "expected a number or a metric at the end%s", "");
	else
		perr(p, at, "expected a number or a metric, not '%.1s'", s);
	return NULL;
}

static struct arr_check *parse_unary(struct parser *p)
{
	skip_ws(p);
	if (p->s[p->pos] == '-') {
		p->pos++;
		return mk(p, N_NEG, parse_unary(p), NULL);
	}
	return parse_primary(p);
}

static struct arr_check *parse_product(struct parser *p)
{
	struct arr_check *e = parse_unary(p);
	for (;;) {
		skip_ws(p);
		char ch = p->s[p->pos];
		if (p->failed || (ch != '*' && ch != '/'))
			return e;
		p->pos++;
		e = mk(p, ch == '*' ? N_MUL : N_DIV, e, parse_unary(p));
	}
}

static struct arr_check *parse_sum(struct parser *p)
{
	struct arr_check *e = parse_product(p);
	for (;;) {
		skip_ws(p);
		char ch = p->s[p->pos];
		if (p->failed || (ch != '+' && ch != '-'))
			return e;
		p->pos++;
		e = mk(p, ch == '+' ? N_ADD : N_SUB, e, parse_product(p));
	}
}

static struct arr_check *parse_cmp(struct parser *p)
{
	struct arr_check *e = parse_sum(p);
	skip_ws(p);
	const char *s = p->s + p->pos;
	enum node_kind k;
	size_t n = 2;
	if (!strncmp(s, "<=", 2))
		k = N_LE;
	else if (!strncmp(s, ">=", 2))
		k = N_GE;
	else if (!strncmp(s, "==", 2))
		k = N_EQ;
	else if (!strncmp(s, "!=", 2))
		k = N_NE;
	else if (*s == '<')
		k = N_LT, n = 1;
	else if (*s == '>')
		k = N_GT, n = 1;
	else if (*s == '=') {
		perr(p, p->pos, "'=' is not a comparison; use '=='%s", "");
		return mk(p, N_NUM, e, NULL);
	} else
		return e;
	p->pos += n;
	e = mk(p, k, e, parse_sum(p));
	skip_ws(p);
	s = p->s + p->pos;
	if (!p->failed && (*s == '<' || *s == '>' || (*s == '=' && s[1] == '=') || (*s == '!' && s[1] == '=')))
		perr(p, p->pos, "comparisons do not chain; join them with 'and'%s", "");
	return e;
}

static struct arr_check *parse_not(struct parser *p)
{
	skip_ws(p);
	if (p->s[p->pos] == '!' && p->s[p->pos + 1] != '=') {
		p->pos++;
		return mk(p, N_NOT, parse_not(p), NULL);
	}
	if (accept_word(p, "not", NULL))
		return mk(p, N_NOT, parse_not(p), NULL);
	return parse_cmp(p);
}

static struct arr_check *parse_and(struct parser *p)
{
	struct arr_check *e = parse_not(p);
	while (!p->failed && accept_word(p, "and", "&&"))
		e = mk(p, N_AND, e, parse_not(p));
	return e;
}

static struct arr_check *parse_or(struct parser *p)
{
	struct arr_check *e = parse_and(p);
	while (!p->failed && accept_word(p, "or", "||"))
		e = mk(p, N_OR, e, parse_and(p));
	return e;
}

static int is_cmp(enum node_kind k) { return k >= N_LT && k <= N_NE; }
static int is_bool(const struct arr_check *c)
{
	return is_cmp(c->kind) || c->kind == N_AND || c->kind == N_OR || c->kind == N_NOT;
}

/* A check must decide: its top is a comparison, or and/or/not of them. */
static int well_formed(const struct arr_check *c)
{
	if (c->kind == N_AND || c->kind == N_OR)
		return well_formed(c->a) && well_formed(c->b);
	if (c->kind == N_NOT)
		return well_formed(c->a);
	if (!is_cmp(c->kind))
		return 0;
	return !is_bool(c->a) && !is_bool(c->b);
}

int arr_check_parse(const char *text, struct arr_check **out, size_t *offset, char *msg, size_t cap)
{
	char dummy[8];
	struct parser p = {text, 0, 0, msg ? msg : dummy, msg ? cap : sizeof dummy, 0, 0};
	*out = NULL;
	struct arr_check *e = parse_or(&p);
	skip_ws(&p);
	if (!p.failed && p.s[p.pos])
		perr(&p, p.pos, "unexpected '%.1s'", p.s + p.pos);
	if (!p.failed && !well_formed(e))
		perr(&p, 0, "a check must compare (<, <=, >, >=, ==, !=), e.g. 'leaks.bytes == 0'%s", "");
	if (p.failed) {
		arr_check_free(e);
		*offset = p.err_pos;
		return p.oom ? ARR_ENOMEM : ARR_ESYNTAX;
	}
	*out = e;
	return 0;
}

/* ---- evaluation ---- */

struct eval {
	const struct arr_doc *trace, *alloc;
	const char *subject; /* the metric a bare allocator name stands for */
	int used_alloc;      /* a value came from an allocator entry */
	int have_cmp;        /* lhs/rhs hold the deciding comparison */
	double lhs, rhs;
	const char *unknown; /* the name that is neither a metric nor an allocator */
	size_t unknown_at;   /* its offset in the check's text */
	char err[256];
};

/* path in obj, or in any object member of obj (a section): "peak_rss" finds
 * "fragmentation.peak_rss". */
static const struct arr_doc *lookup(const struct arr_doc *obj, const char *path)
{
	if (!obj)
		return NULL;
	const struct arr_doc *d = arr_doc_path(obj, path);
	double v;
	if (d && !arr_doc_as_num(d, &v))
		return d;
	if (d && d->type == ARR_DOC_BOOL)
		return d;
	for (size_t i = 0; i < obj->len; i++) {
		if (!strcmp(obj->keys[i], "allocators") || obj->items[i]->type != ARR_DOC_OBJECT)
			continue;
		d = arr_doc_path(obj->items[i], path);
		if (d && (!arr_doc_as_num(d, &v) || d->type == ARR_DOC_BOOL))
			return d;
	}
	return NULL;
}

/* Is path in obj (or in a section of it, as lookup() finds it) a null: a
 * figure the report has but could not measure here (docs/report.md says
 * when, e.g. peak_over_ideal of a replay that wrote no block)? */
static int null_at(const struct arr_doc *obj, const char *path)
{
	if (!obj)
		return 0;
	const struct arr_doc *d = arr_doc_path(obj, path);
	if (d)
		return d->type == ARR_DOC_NULL;
	for (size_t i = 0; i < obj->len; i++)
		if (strcmp(obj->keys[i], "allocators") && obj->items[i]->type == ARR_DOC_OBJECT &&
		    (d = arr_doc_path(obj->items[i], path)))
			return d->type == ARR_DOC_NULL;
	return 0;
}

static const struct arr_doc *allocator_named(const struct arr_doc *trace, const char *name)
{
	return arr_doc_find(arr_doc_get(trace, "allocators"), "allocator", name);
}

static int num_of(const struct arr_doc *d, double *v)
{
	if (d->type == ARR_DOC_BOOL)
		return *v = d->v.b, 0;
	return arr_doc_as_num(d, v);
}

/* The first metric (not an allocator name) in a subtree. */
static const char *first_metric(const struct arr_check *c, const struct arr_doc *trace)
{
	if (!c)
		return NULL;
	if (c->kind == N_PATH && !allocator_named(trace, c->name))
		return c->name;
	const char *m = first_metric(c->a, trace);
	return m ? m : first_metric(c->b, trace);
}

static int eval(struct eval *e, const struct arr_check *c, double *out);

static int eval_name(struct eval *e, const struct arr_check *c, double *out)
{
	const struct arr_doc *d;
	if (c->kind == N_PATH) {
		if (e->alloc && (d = lookup(e->alloc, c->name))) {
			e->used_alloc = 1;
			return num_of(d, out);
		}
		if ((d = lookup(e->trace, c->name)))
			return num_of(d, out);
		if ((e->alloc && null_at(e->alloc, c->name)) || null_at(e->trace, c->name)) {
			/* known but not measurable here: the check cannot hold, and says why (not a typo) */
			snprintf(e->err, sizeof e->err,
				 "'%s' has no value here (null: not measurable on this %s, "
				 "see docs/report.md)",
				 c->name, e->alloc ? "replay" : "trace");
			return -1;
		}
	}
	const struct arr_doc *al = allocator_named(e->trace, c->name);
	if (al) {
		if (!e->subject) {
			snprintf(e->err, sizeof e->err, "'%s' is an allocator; compare a metric against it", c->name);
			return -1;
		}
		e->used_alloc = 1;
		if ((d = lookup(al, e->subject)))
			return num_of(d, out);
		snprintf(e->err, sizeof e->err, "allocator '%s' has no metric '%s'", c->name, e->subject);
		return -1;
	}
	if (c->kind != N_STR) {
		e->unknown = c->name;
		e->unknown_at = c->at;
	}
	if (c->kind == N_STR)
		snprintf(e->err, sizeof e->err, "no allocator '%s' in this trace", c->name);
	else if (e->alloc)
		snprintf(e->err, sizeof e->err, "no metric or allocator '%s'", c->name);
	else
		snprintf(e->err, sizeof e->err, "no metric '%s'", c->name);
	return -1;
}

static int eval(struct eval *e, const struct arr_check *c, double *out)
{
	double a, b;
	switch (c->kind) {
	case N_NUM:
		return *out = c->num, 0;
	case N_PATH:
	case N_STR:
		return eval_name(e, c, out);
	case N_NEG:
		if (eval(e, c->a, &a))
			return -1;
		return *out = -a, 0;
	case N_NOT:
		if (eval(e, c->a, &a))
			return -1;
		return *out = !a, 0;
	case N_AND:
	case N_OR:
		if (eval(e, c->a, &a))
			return -1;
		if ((c->kind == N_AND && !a) || (c->kind == N_OR && a))
			return *out = a, 0;
		if (eval(e, c->b, &b))
			return -1;
		return *out = b != 0, 0;
	default:
		break;
	}
	const char *saved = e->subject;
	if (is_cmp(c->kind))
		e->subject = first_metric(c, e->trace);
	int rc = eval(e, c->a, &a) || eval(e, c->b, &b);
	e->subject = saved;
	if (rc)
		return -1;
	switch (c->kind) {
	case N_ADD:
		return *out = a + b, 0;
	case N_SUB:
		return *out = a - b, 0;
	case N_MUL:
		return *out = a * b, 0;
	case N_DIV:
		if (b == 0) {
			snprintf(e->err, sizeof e->err, "division by zero");
			return -1;
		}
		return *out = a / b, 0;
	default:
		break;
	}
	int ok;
	switch (c->kind) {
	case N_LT:
		ok = a < b;
		break;
	case N_LE:
		ok = a <= b;
		break;
	case N_GT:
		ok = a > b;
		break;
	case N_GE:
		ok = a >= b;
		break;
	case N_EQ:
		ok = a == b;
		break;
	default:
		ok = a != b;
		break;
	}
	/* The figures shown: the first comparison that fails, else the first. */
	if (!e->have_cmp || (!ok && e->have_cmp == 1)) {
		e->lhs = a;
		e->rhs = b;
		e->have_cmp = ok ? 1 : 2;
	}
	return *out = ok, 0;
}

static struct arr_doc *set_number(struct arr_doc *obj, const char *key, double v)
{
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return arr_doc_set_int(obj, key, (int64_t)v);
	return arr_doc_set_num(obj, key, v);
}

/* The numeric leaf path under obj nearest name (prefix + keys joined by
 * '.'), into best (cap bytes, as prefix) and bestd: what a misspelt metric
 * most likely meant. */
static void nearest_in(const struct arr_doc *obj, const char *name, char *prefix, size_t plen, size_t cap, char *best,
		       unsigned *bestd, int depth)
{
	if (!obj || obj->type != ARR_DOC_OBJECT || depth > 4)
		return;
	for (size_t i = 0; i < obj->len; i++) {
		int n = snprintf(prefix + plen, cap - plen, "%s%s", plen ? "." : "", obj->keys[i]);
		if (n < 0 || (size_t)n >= cap - plen)
			continue;
		const struct arr_doc *d = obj->items[i];
		double v;
		if (d->type == ARR_DOC_OBJECT) {
			nearest_in(d, name, prefix, plen + (size_t)n, cap, best, bestd, depth + 1);
		} else if (d->type == ARR_DOC_BOOL || !arr_doc_as_num(d, &v)) {
			unsigned dist = arr_report_edit_distance(name, prefix);
			if (dist < *bestd) {
				*bestd = dist;
				snprintf(best, cap, "%s", prefix);
			}
		}
	}
	prefix[plen] = 0;
}

/* A suggestion for a name no metric has: a path as lookup() takes it — from
 * the trace, from one of its sections, or from the allocator entry. Returns
 * its edit distance (UINT_MAX-ish when none is near enough). */
static unsigned suggest_metric(const struct arr_doc *trace, const struct arr_doc *alloc, const char *name, char *best,
			       size_t cap)
{
	char prefix[256], found[256] = "";
	unsigned bestd = (unsigned)strlen(name) / 3 + 1;
	prefix[0] = 0;
	const struct arr_doc *roots[2] = {trace, alloc};
	for (int r = 0; r < 2; r++) {
		const struct arr_doc *o = roots[r];
		if (!o)
			continue;
		nearest_in(o, name, prefix, 0, sizeof prefix, found, &bestd, 0);
		for (size_t i = 0; i < o->len; i++) /* relative to a section, as lookup() allows */
			if (strcmp(o->keys[i], "allocators"))
				nearest_in(o->items[i], name, prefix, 0, sizeof prefix, found, &bestd, 1);
	}
	snprintf(best, cap, "%s", found);
	return found[0] ? bestd : (unsigned)-1;
}

/* The allocator of the trace whose name is nearest name (as near as a key
 * typo's suggestion must be), when nearer than the metric suggested at
 * distance metric_d: "glibcc" in "peak_rss <= 1.1 * glibcc" meant glibc. */
static const char *suggest_allocator(const struct arr_doc *trace, const char *name, unsigned metric_d)
{
	const struct arr_doc *als = arr_doc_get(trace, "allocators");
	const char *best = NULL;
	unsigned bestd = (unsigned)strlen(name) / 3 + 1;
	for (size_t i = 0; als && als->type == ARR_DOC_ARRAY && i < als->len; i++) {
		const char *an = arr_doc_as_str(arr_doc_get(als->items[i], "allocator"));
		unsigned d = an ? arr_report_edit_distance(name, an) : (unsigned)-1;
		if (d < bestd) {
			bestd = d;
			best = an;
		}
	}
	return best && bestd <= metric_d ? best : NULL;
}

static const char *trace_path(const struct arr_doc *trace)
{
	const char *p = arr_doc_as_str(arr_doc_path(trace, "trace.path"));
	return p ? p : "";
}

int arr_check_eval(const struct arr_check *c, const char *text, const struct arr_doc *trace,
		   const struct arr_doc *allocator, struct arr_doc *entry)
{
	struct eval e = {.trace = trace, .alloc = allocator};
	double v;
	int rc = eval(&e, c, &v);
	arr_doc_set_str(entry, "check", text);
	arr_doc_set_str(entry, "trace", trace_path(trace));
	const char *an = allocator ? arr_doc_as_str(arr_doc_get(allocator, "allocator")) : NULL;
	if (an)
		arr_doc_set_str(entry, "allocator", an);
	else
		arr_doc_set(entry, "allocator", arr_doc_null());
	if (rc) {
		arr_doc_set(entry, "value", arr_doc_null());
		arr_doc_set(entry, "limit", arr_doc_null());
		arr_doc_set_bool(entry, "ok", 0);
		arr_doc_set_str(entry, "error", e.err);
		if (e.unknown) { /* a misspelt name is the config's error, not a regression */
			char sug[256];
			arr_doc_set_str(entry, "unknown_metric", e.unknown);
			arr_doc_set_int(entry, "unknown_offset", (int64_t)e.unknown_at);
			unsigned md = suggest_metric(trace, allocator, e.unknown, sug, sizeof sug);
			const char *al = suggest_allocator(trace, e.unknown, md);
			if (al)
				arr_doc_set_str(entry, "did_you_mean_allocator", al);
			else if (sug[0])
				arr_doc_set_str(entry, "did_you_mean", sug);
		}
		return 0;
	}
	set_number(entry, "value", e.lhs);
	set_number(entry, "limit", e.rhs);
	const struct arr_check *top = c;
	while (top->kind == N_NOT)
		top = top->a;
	if (is_cmp(top->kind))
		arr_doc_set_str(entry, "op", cmp_ops[top->kind]);
	arr_doc_set_bool(entry, "ok", v != 0);
	return v != 0;
}

/* Does the check read anything of an allocator entry? Evaluated without one
 * first: if every name resolves in the trace, it is a per-trace check. */
static int needs_allocator(const struct arr_check *c, const struct arr_doc *trace)
{
	struct eval e = {.trace = trace};
	double v;
	if (eval(&e, c, &v) == 0)
		return e.used_alloc;
	const struct arr_doc *als = arr_doc_get(trace, "allocators");
	return als && als->len;
}

/* Does the check name allocator `name` (peak_rss <= 1.1 * glibc)? Then
 * that allocator's own row would compare it with itself: it is skipped. */
static int names_allocator(const struct arr_check *c, const char *name)
{
	if (!c || !name)
		return 0;
	if ((c->kind == N_PATH || c->kind == N_STR) && !strcmp(c->name, name))
		return 1;
	return names_allocator(c->a, name) || names_allocator(c->b, name);
}

int arr_report_run_checks(const struct arr_report_config *cfg, const struct arr_doc *report, struct arr_doc *checks)
{
	const struct arr_doc *traces = arr_doc_get(report, "traces");
	int broken = 0;
	for (size_t k = 0; k < cfg->nchecks; k++) {
		const struct arr_report_check *ck = &cfg->checks[k];
		for (size_t t = 0; traces && t < traces->len; t++) {
			const struct arr_doc *tr = traces->items[t];
			if (!needs_allocator(ck->expr, tr)) {
				struct arr_doc *entry = arr_doc_push_obj(checks);
				broken += !arr_check_eval(ck->expr, ck->text, tr, NULL, entry);
				continue;
			}
			const struct arr_doc *als = arr_doc_get(tr, "allocators");
			const char *skipped = NULL;
			size_t evaluated = 0;
			for (size_t a = 0; als && a < als->len; a++) {
				const char *an = arr_doc_as_str(arr_doc_get(als->items[a], "allocator"));
				if (names_allocator(ck->expr, an)) {
					skipped = an;
					continue;
				}
				struct arr_doc *entry = arr_doc_push_obj(checks);
				broken += !arr_check_eval(ck->expr, ck->text, tr, als->items[a], entry);
				evaluated++;
			}
			if (skipped && !evaluated) { /* a gate that checked nothing fails closed */
				struct arr_doc *entry = arr_doc_push_obj(checks);
				char why[512];
				snprintf(why, sizeof why,
					 "it compares each allocator with '%s', the only one replayed for this trace: "
					 "nothing was checked (replay another allocator)",
					 skipped);
				arr_doc_set_str(entry, "check", ck->text);
				arr_doc_set_str(entry, "trace", trace_path(tr));
				arr_doc_set(entry, "allocator", arr_doc_null());
				arr_doc_set(entry, "value", arr_doc_null());
				arr_doc_set(entry, "limit", arr_doc_null());
				arr_doc_set_bool(entry, "ok", 0);
				arr_doc_set_str(entry, "error", why);
				broken++;
			}
		}
	}
	return arr_doc_status(checks) ? ARR_ENOMEM : broken;
}

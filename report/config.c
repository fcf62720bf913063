/*
 * config.c - report.yaml: read with libyaml's document API, validated key by
 * key so that every mistake is reported where it was written
 * (file:line:column, with a "did you mean" for misspelt keys).
 *
 * The schema is docs/report-config.md; keep the two in step.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "report.h"

#define MAX_VARIANTS 256 /* allocator specs after expanding the matrix */

struct ctx {
	struct arr_report_config *cfg;
	yaml_document_t *doc;
	struct arr_report_error *err;
};

static int fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;
	c->err->line = (unsigned)m.line + 1;
	c->err->column = (unsigned)m.column + 1;
	va_start(ap, fmt);
	vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
	va_end(ap);
	return ARR_ESYNTAX;
}
#define FAIL(c, node, ...) fail_at((c), (node)->start_mark, __VA_ARGS__)

static yaml_node_t *node_at(struct ctx *c, int id) { return yaml_document_get_node(c->doc, id); }

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind(yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a value";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

unsigned arr_report_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return UINT_MAX;
	unsigned row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The closest of names to s, if close enough to be a likely typo. */
static const char *suggest(const char *s, const char *const *names)
{
	const char *best = NULL;
	unsigned bd = UINT_MAX;
	for (size_t i = 0; names[i]; i++) {
		unsigned d = arr_report_edit_distance(s, names[i]);
		if (d < bd)
			bd = d, best = names[i];
	}
	size_t len = strlen(s);
	unsigned limit = len < 4 ? 1 : len < 9 ? 2 : 3;
	return bd <= limit ? best : NULL;
}

/* "unknown key 'htm' in 'output'; did you mean 'html'?" (where may be ""). */
static int fail_unknown_in(struct ctx *c, yaml_node_t *n, const char *what, const char *s, const char *where,
			   const char *const *names)
{
	const char *sug = suggest(s, names);
	const char *in = *where ? " in " : "";
	if (sug)
		return FAIL(c, n, "unknown %s '%s'%s%s; did you mean '%s'?", what, s, in, where, sug);
	char known[256] = "";
	size_t off = 0;
	for (size_t i = 0; names[i] && off < sizeof known; i++)
		off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "", names[i]);
	return FAIL(c, n, "unknown %s '%s'%s%s (known: %s)", what, s, in, where, known);
}

static int fail_unknown(struct ctx *c, yaml_node_t *n, const char *what, const char *s, const char *const *names)
{
	return fail_unknown_in(c, n, what, s, "", names);
}

/*
 * Walk a mapping: every key must be one of names, at most once. For each
 * pair, fn(c, index of the key in names, key node, value node).
 */
typedef int (*pair_fn)(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v);

static int walk_map(struct ctx *c, yaml_node_t *map, const char *what, const char *const *names, pair_fn fn, void *arg)
{
	if (map->type != YAML_MAPPING_NODE)
		return FAIL(c, map, "%s must be a mapping (key: value), not %s", what, kind(map));
	unsigned seen = 0;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
		const char *ks = scalar(k);
		if (!ks)
			return FAIL(c, k, "a key in %s must be a plain name", what);
		int idx = -1;
		for (int i = 0; names[i]; i++)
			if (!strcmp(ks, names[i]))
				idx = i;
		if (idx < 0)
			return fail_unknown_in(c, k, "key", ks, what, names);
		if (seen & (1u << idx))
			return FAIL(c, k, "'%s' given twice", ks);
		seen |= 1u << idx;
		int rc = fn(c, arg, idx, k, v);
		if (rc)
			return rc;
	}
	return 0;
}

static int want_scalar(struct ctx *c, yaml_node_t *k, yaml_node_t *v, const char **out)
{
	if (!(*out = scalar(v)))
		return FAIL(c, v, "'%s' wants a value, not %s", scalar(k), kind(v));
	return 0;
}

static int get_bool(struct ctx *c, yaml_node_t *k, yaml_node_t *v, int *out)
{
	const char *s;
	int rc = want_scalar(c, k, v, &s);
	if (rc)
		return rc;
	static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(s, no[i]))
			return *out = 0, 0;
	}
	return FAIL(c, v, "'%s' wants true or false, not '%s'", scalar(k), s);
}

static int get_uint(struct ctx *c, yaml_node_t *k, yaml_node_t *v, unsigned lo, unsigned hi, unsigned *out)
{
	const char *s;
	int rc = want_scalar(c, k, v, &s);
	if (rc)
		return rc;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *s == '+' || x < lo || x > hi)
		return FAIL(c, v, "'%s' wants a whole number from %u to %u, not '%s'", scalar(k), lo, hi, s);
	*out = (unsigned)x;
	return 0;
}

static int get_enum(struct ctx *c, yaml_node_t *k, yaml_node_t *v, const char *const *names, int *out)
{
	const char *s;
	int rc = want_scalar(c, k, v, &s);
	if (rc)
		return rc;
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return *out = i, 0;
	char what[96];
	snprintf(what, sizeof what, "value for '%s'", scalar(k));
	return fail_unknown(c, v, what, s, names);
}

static int dup_str(struct ctx *c, yaml_node_t *n, const char *s, char **out)
{
	free(*out);
	if (!(*out = strdup(s)))
		return FAIL(c, n, "out of memory");
	return 0;
}

/* "1.5s", "200ms", "10us", "300ns", "2min" or a plain number of ns. */
static int parse_duration(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0 || *s == '-')
		return -1;
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9}};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (!strcmp(end, units[i].unit)) {
			double ns = v * units[i].ns;
			if (ns >= 1.8e19)
				return -1;
			*out = (uint64_t)(ns + 0.5);
			return 0;
		}
	return -1;
}

/* ---- traces ---- */

static const char *const trace_keys[] = {"path", "children", "select", NULL};

static int push_trace(struct ctx *c, yaml_node_t *n, const char *pattern, int children, const char *select)
{
	struct arr_report_config *cfg = c->cfg;
	struct arr_report_trace *t = realloc(cfg->traces, (cfg->ntraces + 1) * sizeof *t);
	if (!t)
		return FAIL(c, n, "out of memory");
	cfg->traces = t;
	t += cfg->ntraces;
	memset(t, 0, sizeof *t);
	t->children = children;
	t->at.line = (unsigned)n->start_mark.line + 1;
	t->at.column = (unsigned)n->start_mark.column + 1;
	if (!*pattern)
		return FAIL(c, n, "an empty trace path");
	if (dup_str(c, n, pattern, &t->pattern) || (select && dup_str(c, n, select, &t->select)))
		return ARR_ENOMEM;
	cfg->ntraces++;
	return 0;
}

struct trace_item {
	const char *path;
	yaml_node_t *path_node;
	int children;
	const char *select;
};

static int trace_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct trace_item *it = arg;
	if (key == 0) {
		it->path_node = v;
		return want_scalar(c, k, v, &it->path);
	}
	if (key == 2)
		return want_scalar(c, k, v, &it->select);
	return get_bool(c, k, v, &it->children);
}

static int parse_trace_item(struct ctx *c, yaml_node_t *n)
{
	if (n->type == YAML_SCALAR_NODE)
		return push_trace(c, n, scalar(n), 0, NULL);
	struct trace_item it = {0};
	int rc = walk_map(c, n, "a trace", trace_keys, trace_pair, &it);
	if (rc)
		return rc;
	if (!it.path)
		return FAIL(c, n, "a trace needs a 'path'");
	if (it.children && it.select)
		return FAIL(c, n, "a trace takes 'children' or 'select', not both");
	return push_trace(c, it.path_node, it.path, it.children, it.select);
}

static int parse_traces(struct ctx *c, yaml_node_t *n)
{
	if (n->type == YAML_SCALAR_NODE)
		return parse_trace_item(c, n);
	if (n->type != YAML_SEQUENCE_NODE)
		return FAIL(c, n, "'traces' wants a list of paths or globs, not %s", kind(n));
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		int rc = parse_trace_item(c, node_at(c, *i));
		if (rc)
			return rc;
	}
	if (!c->cfg->ntraces)
		return FAIL(c, n, "'traces' is empty");
	return 0;
}

/* ---- allocators: names, paths, tunables; lists of values make a matrix ---- */

static const char *const alloc_keys[] = {"name", "tunables", "optional", NULL};

struct alloc_item {
	const char *name;
	yaml_node_t *name_node, *tunables;
	int optional;
};

static int alloc_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct alloc_item *it = arg;
	switch (key) {
	case 0:
		it->name_node = v;
		return want_scalar(c, k, v, &it->name);
	case 1:
		if (v->type != YAML_MAPPING_NODE)
			return FAIL(c, v, "'tunables' wants a mapping (name: value or name: [values]), not %s",
				    kind(v));
		it->tunables = v;
		return 0;
	default:
		return get_bool(c, k, v, &it->optional);
	}
}

static int push_alloc(struct ctx *c, yaml_node_t *n, const char *spec, int optional)
{
	struct arr_report_config *cfg = c->cfg;
	if (cfg->nallocators >= MAX_VARIANTS)
		return FAIL(c, n, "more than %d allocator variants", MAX_VARIANTS);
	for (size_t i = 0; i < cfg->nallocators; i++)
		if (!strcmp(cfg->allocators[i].spec, spec))
			return FAIL(c, n, "allocator '%s' listed twice", spec);
	struct arr_report_allocator *a = realloc(cfg->allocators, (cfg->nallocators + 1) * sizeof *a);
	if (!a)
		return FAIL(c, n, "out of memory");
	cfg->allocators = a;
	a += cfg->nallocators;
	memset(a, 0, sizeof *a);
	a->optional = optional;
	a->at.line = (unsigned)n->start_mark.line + 1;
	a->at.column = (unsigned)n->start_mark.column + 1;
	if (dup_str(c, n, spec, &a->spec))
		return ARR_ENOMEM;
	cfg->nallocators++;
	return 0;
}

/* A tunable's value or list of values. */
static int tunable_values(struct ctx *c, yaml_node_t *k, yaml_node_t *v, size_t *n)
{
	if (v->type == YAML_SCALAR_NODE) {
		*n = 1;
	} else if (v->type == YAML_SEQUENCE_NODE) {
		*n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
		if (!*n)
			return FAIL(c, v, "tunable '%s' has an empty list", scalar(k));
		for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
			if (!scalar(node_at(c, *i)))
				return FAIL(c, node_at(c, *i), "tunable '%s' wants values, not %s", scalar(k),
					    kind(node_at(c, *i)));
	} else {
		return FAIL(c, v, "tunable '%s' wants a value or a list of values, not %s", scalar(k), kind(v));
	}
	return 0;
}

static const char *tunable_value(struct ctx *c, yaml_node_t *v, size_t i)
{
	if (v->type == YAML_SCALAR_NODE)
		return scalar(v);
	return scalar(node_at(c, v->data.sequence.items.start[i]));
}

static int parse_alloc_item(struct ctx *c, yaml_node_t *n)
{
	if (n->type == YAML_SCALAR_NODE) {
		if (!*scalar(n))
			return FAIL(c, n, "an empty allocator name");
		return push_alloc(c, n, scalar(n), 0);
	}
	struct alloc_item it = {0};
	int rc = walk_map(c, n, "an allocator", alloc_keys, alloc_pair, &it);
	if (rc)
		return rc;
	if (!it.name || !*it.name)
		return FAIL(c, n,
			    "an allocator needs a 'name' (builtin, glibc, jemalloc, mimalloc, tcmalloc or a path)");
	if (strchr(it.name, ':') && it.tunables)
		return FAIL(c, it.name_node, "give tunables either after the name or under 'tunables', not both");
	if (!it.tunables)
		return push_alloc(c, it.name_node, it.name, it.optional);

	/* The cross product of every tunable's values, first key slowest. */
	yaml_node_pair_t *p0 = it.tunables->data.mapping.pairs.start, *pe = it.tunables->data.mapping.pairs.top;
	size_t nt = (size_t)(pe - p0), counts[32], idx[32] = {0}, total = 1;
	if (nt == 0)
		return push_alloc(c, it.name_node, it.name, it.optional);
	if (nt > 32)
		return FAIL(c, it.tunables, "more than 32 tunables");
	for (size_t t = 0; t < nt; t++) {
		yaml_node_t *k = node_at(c, p0[t].key);
		if (!scalar(k) || !*scalar(k) || strpbrk(scalar(k), ",=:"))
			return FAIL(c, k, "a tunable's name must be a plain word");
		if ((rc = tunable_values(c, k, node_at(c, p0[t].value), &counts[t])))
			return rc;
		total *= counts[t];
		if (total > MAX_VARIANTS)
			return FAIL(c, it.tunables, "the tunables make more than %d variants", MAX_VARIANTS);
	}
	for (size_t v = 0; v < total; v++) {
		char spec[1024];
		size_t off = (size_t)snprintf(spec, sizeof spec, "%s:", it.name);
		for (size_t t = 0; t < nt && off < sizeof spec; t++) {
			const char *val = tunable_value(c, node_at(c, p0[t].value), idx[t]);
			if (!*val || strpbrk(val, ",=:"))
				return FAIL(c, node_at(c, p0[t].value), "tunable '%s': bad value '%s'",
					    scalar(node_at(c, p0[t].key)), val);
			off += (size_t)snprintf(spec + off, sizeof spec - off, "%s%s=%s", t ? "," : "",
						scalar(node_at(c, p0[t].key)), val);
		}
		if (off >= sizeof spec)
			return FAIL(c, it.tunables, "allocator spec too long");
		if ((rc = push_alloc(c, it.name_node, spec, it.optional)))
			return rc;
		for (size_t t = nt; t-- > 0;) {
			if (++idx[t] < counts[t])
				break;
			idx[t] = 0;
		}
	}
	return 0;
}

static int parse_allocators(struct ctx *c, yaml_node_t *n)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return FAIL(c, n, "'allocators' wants a list, not %s", kind(n));
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		int rc = parse_alloc_item(c, node_at(c, *i));
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- replay ---- */

static const char *const replay_keys[] = {"threads",   "touch", "samples", "latency_every", "runs", "zeroing",
					  "cache_dir", "pace",  NULL};
static const char *const threads_names[] = {ARR_REPLAY_THREADS_MAP(ARR__ENUM_NAME) NULL};
static const char *const touch_names[] = {ARR_REPLAY_TOUCH_MAP(ARR__ENUM_NAME) NULL};

static int replay_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct arr_report_config *cfg = c->cfg;
	int e, rc;
	const char *s;
	switch (key) {
	case 0:
		rc = get_enum(c, k, v, threads_names, &e);
		cfg->threads = (enum arr_replay_threads)e;
		return rc;
	case 1:
		rc = get_enum(c, k, v, touch_names, &e);
		cfg->touch = (enum arr_replay_touch)e;
		return rc;
	case 2:
		return get_uint(c, k, v, 1, 1000000, &cfg->samples);
	case 3:
		return get_uint(c, k, v, 0, 100000000, &cfg->latency_every);
	case 4:
		return get_uint(c, k, v, 1, 1000, &cfg->runs);
	case 5:
		return get_bool(c, k, v, &cfg->zeroing);
	case 6:
		if ((rc = want_scalar(c, k, v, &s)))
			return rc;
		return dup_str(c, v, s, &cfg->cache_dir);
	default:
		return get_uint(c, k, v, 0, 100000000, &cfg->pace);
	}
}

/* ---- analyses ---- */

static const char *const analyses_keys[] = {"what", "top", "points", NULL};
static const char *const analysis_names[] = {
#define ARR_ANALYSIS_STR(name, str) str,
	ARR_ANALYSIS_MAP(ARR_ANALYSIS_STR)
#undef ARR_ANALYSIS_STR
		NULL};

static int add_what(struct ctx *c, yaml_node_t *n, const char *name)
{
	for (int i = 0; analysis_names[i]; i++)
		if (!strcmp(name, analysis_names[i])) {
			c->cfg->what |= 1u << i;
			return 0;
		}
	return fail_unknown(c, n, "analysis", name, analysis_names);
}

static int analyses_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct arr_report_config *cfg = c->cfg;
	if (key == 1)
		return get_uint(c, k, v, 1, 100000, &cfg->top);
	if (key == 2)
		return get_uint(c, k, v, 10, 1000000, &cfg->points);
	if (v->type == YAML_SCALAR_NODE) {
		/* "all" or "sizes,leaks" */
		char buf[512];
		snprintf(buf, sizeof buf, "%s", scalar(v));
		if (!strcmp(buf, "all"))
			return 0;
		for (char *save, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
			int rc = add_what(c, v, tok);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (v->type != YAML_SEQUENCE_NODE)
		return FAIL(c, v, "'what' wants a list of analyses, not %s", kind(v));
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
		yaml_node_t *e = node_at(c, *i);
		if (!scalar(e))
			return FAIL(c, e, "'what' wants analysis names, not %s", kind(e));
		int rc = add_what(c, e, scalar(e));
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- phases ---- */

static const char *const phase_keys[] = {"name", "from", "to", "from_event", "to_event", NULL};

struct phase_item {
	struct arr_phase_spec *p;
	int by_time, by_events;
};

static int phase_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct phase_item *it = arg;
	const char *s;
	int rc = want_scalar(c, k, v, &s);
	if (rc)
		return rc;
	if (key == 0) {
		if (!*s || strlen(s) >= sizeof it->p->name)
			return FAIL(c, v, "a phase name must be 1 to %zu characters", sizeof it->p->name - 1);
		snprintf(it->p->name, sizeof it->p->name, "%s", s);
		return 0;
	}
	uint64_t x;
	if (key <= 2) {
		it->by_time = 1;
		if (!strcmp(s, "end") && key == 2)
			return it->p->to = UINT64_MAX, 0;
		if (parse_duration(s, &x))
			return FAIL(c, v, "'%s' wants a time such as 250ms, 1.5s or 2000000 (ns), not '%s'", scalar(k),
				    s);
	} else {
		it->by_events = 1;
		if (!strcmp(s, "end") && key == 4)
			return it->p->to = UINT64_MAX, 0;
		char *end;
		errno = 0;
		x = strtoull(s, &end, 10);
		if (errno || end == s || *end || *s == '-')
			return FAIL(c, v, "'%s' wants an event number, not '%s'", scalar(k), s);
	}
	if (key == 1 || key == 3)
		it->p->from = x;
	else
		it->p->to = x;
	return 0;
}

static int parse_phases(struct ctx *c, yaml_node_t *n)
{
	struct arr_report_config *cfg = c->cfg;
	if (n->type != YAML_SEQUENCE_NODE)
		return FAIL(c, n, "'phases' wants a list, not %s", kind(n));
	size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt > 64)
		return FAIL(c, n, "more than 64 phases");
	if (!cnt)
		return 0;
	if (!(cfg->phases = calloc(cnt, sizeof *cfg->phases)))
		return FAIL(c, n, "out of memory");
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		yaml_node_t *e = node_at(c, *i);
		struct arr_phase_spec *p = &cfg->phases[cfg->nphases];
		p->to = UINT64_MAX;
		struct phase_item it = {p, 0, 0};
		int rc = walk_map(c, e, "a phase", phase_keys, phase_pair, &it);
		if (rc)
			return rc;
		if (!p->name[0])
			return FAIL(c, e, "a phase needs a 'name'");
		if (it.by_time && it.by_events)
			return FAIL(c, e, "phase '%s': give from/to (times) or from_event/to_event, not both", p->name);
		if (p->to <= p->from)
			return FAIL(c, e, "phase '%s' ends before it starts", p->name);
		for (size_t j = 0; j < cfg->nphases; j++)
			if (!strcmp(cfg->phases[j].name, p->name))
				return FAIL(c, e, "phase '%s' given twice", p->name);
		p->by_events = it.by_events;
		cfg->nphases++;
	}
	return 0;
}

/* ---- checks ---- */

static const char *const check_keys[] = {"check", NULL};

struct check_item {
	yaml_node_t *expr;
};

static int check_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	const char *s;
	((struct check_item *)arg)->expr = v;
	return want_scalar(c, k, v, &s);
}

static int parse_check(struct ctx *c, yaml_node_t *n)
{
	struct arr_report_config *cfg = c->cfg;
	if (n->type != YAML_SCALAR_NODE) {
		struct check_item it = {NULL};
		int rc = walk_map(c, n, "a check", check_keys, check_pair, &it);
		if (rc)
			return rc;
		if (!it.expr)
			return FAIL(c, n, "a check needs 'check: EXPRESSION'");
		n = it.expr;
	}
	const char *text = scalar(n);
	struct arr_report_check *ck = &cfg->checks[cfg->nchecks];
	memset(ck, 0, sizeof *ck);
	ck->at.line = (unsigned)n->start_mark.line + 1;
	ck->at.column = (unsigned)n->start_mark.column + 1;
	if (n->start_mark.line == n->end_mark.line) {
		/* a name's offset in the text is then a column from here: past the quote, if any */
		ck->inline_text = 1;
		ck->at.column += n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
				 n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	}
	size_t off = 0;
	char msg[256];
	int rc = arr_check_parse(text, &ck->expr, &off, msg, sizeof msg);
	if (rc == ARR_ENOMEM)
		return FAIL(c, n, "out of memory");
	if (rc) {
		/* Point at the character, when the scalar is on one line. */
		yaml_mark_t m = n->start_mark;
		int quoted = n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
			     n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		if (n->start_mark.line == n->end_mark.line)
			m.column += off + (size_t)quoted;
		return fail_at(c, m, "check '%s': %s", text, msg);
	}
	if (dup_str(c, n, text, &ck->text)) {
		arr_check_free(ck->expr);
		return ARR_ENOMEM;
	}
	cfg->nchecks++;
	return 0;
}

static int parse_checks(struct ctx *c, yaml_node_t *n)
{
	if (n->type == YAML_SCALAR_NODE) {
		if (!(c->cfg->checks = calloc(1, sizeof *c->cfg->checks)))
			return FAIL(c, n, "out of memory");
		return parse_check(c, n);
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return FAIL(c, n, "'checks' wants a list of expressions, not %s", kind(n));
	size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt > 1024)
		return FAIL(c, n, "more than 1024 checks");
	if (cnt && !(c->cfg->checks = calloc(cnt, sizeof *c->cfg->checks)))
		return FAIL(c, n, "out of memory");
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		int rc = parse_check(c, node_at(c, *i));
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- output ---- */

static const char *const output_keys[] = {"dir", "text", "json", "csv", "html", NULL};

/* A file name, or true (the default name) / false (not written). */
static int get_output(struct ctx *c, yaml_node_t *k, yaml_node_t *v, const char *def, char **out)
{
	const char *s;
	int rc = want_scalar(c, k, v, &s);
	if (rc)
		return rc;
	if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off")) {
		free(*out);
		*out = NULL;
		return 0;
	}
	if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
		s = def;
	if (!*s)
		return FAIL(c, v, "'%s' wants a file name, true or false", scalar(k));
	return dup_str(c, v, s, out);
}

static int output_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	struct arr_report_config *cfg = c->cfg;
	const char *s;
	int rc;
	switch (key) {
	case 0:
		if ((rc = want_scalar(c, k, v, &s)))
			return rc;
		if (!*s)
			return FAIL(c, v, "'dir' wants a directory");
		return dup_str(c, v, s, &cfg->dir);
	case 1:
		return get_bool(c, k, v, &cfg->text);
	case 2:
		return get_output(c, k, v, "report.json", &cfg->json);
	case 3:
		return get_output(c, k, v, "report.csv", &cfg->csv);
	default:
		return get_output(c, k, v, "report.html", &cfg->html);
	}
}

/* ---- the document ---- */

static const char *const top_keys[] = {"traces", "allocators", "replay", "analyses",
				       "phases", "checks",     "output", NULL};

static int top_pair(struct ctx *c, void *arg, int key, yaml_node_t *k, yaml_node_t *v)
{
	switch (key) {
	case 0:
		return parse_traces(c, v);
	case 1:
		return parse_allocators(c, v);
	case 2:
		return walk_map(c, v, "'replay'", replay_keys, replay_pair, NULL);
	case 3:
		return walk_map(c, v, "'analyses'", analyses_keys, analyses_pair, NULL);
	case 4:
		return parse_phases(c, v);
	case 5:
		return parse_checks(c, v);
	default:
		return walk_map(c, v, "'output'", output_keys, output_pair, NULL);
	}
}

static int set_defaults(struct arr_report_config *cfg)
{
	cfg->threads = ARR_THREADS_AUTO;
	cfg->touch = ARR_TOUCH_PAGE;
	cfg->samples = 1000;
	cfg->latency_every = 1;
	cfg->pace = ARR_REPLAY_PACE_DEFAULT;
	cfg->runs = 1;
	cfg->zeroing = 1;
	cfg->text = 1;
	if (!(cfg->dir = strdup("allocrr-report")) || !(cfg->json = strdup("report.json")) ||
	    !(cfg->csv = strdup("report.csv")) || !(cfg->html = strdup("report.html")))
		return ARR_ENOMEM;
	return 0;
}

int arr_report_config_parse(struct arr_report_config *cfg, const char *path, const char *text, size_t len,
			    struct arr_report_error *err)
{
	memset(cfg, 0, sizeof *cfg);
	memset(err, 0, sizeof *err);
	snprintf(err->file, sizeof err->file, "%s", path);
	if (!(cfg->path = strdup(path)) || set_defaults(cfg)) {
		snprintf(err->msg, sizeof err->msg, "out of memory");
		return ARR_ENOMEM;
	}
	yaml_parser_t parser;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err->msg, sizeof err->msg, "out of memory");
		return ARR_ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		err->line = (unsigned)parser.problem_mark.line + 1;
		err->column = (unsigned)parser.problem_mark.column + 1;
		snprintf(err->msg, sizeof err->msg, "%s%s%s", parser.problem ? parser.problem : "bad YAML",
			 parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return parser.error == YAML_MEMORY_ERROR ? ARR_ENOMEM : ARR_ESYNTAX;
	}
	struct ctx c = {cfg, &doc, err};
	int rc = 0;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		err->line = 1;
		err->column = 1;
		snprintf(err->msg, sizeof err->msg, "empty config; it needs at least 'traces'");
		rc = ARR_ESYNTAX;
	} else if (!(rc = walk_map(&c, root, "", top_keys, top_pair, NULL)) && !cfg->ntraces) {
		rc = FAIL(&c, root, "no 'traces' given");
	}
	/* A second document would be silently ignored: refuse it. */
	if (!rc) {
		yaml_document_t more;
		if (yaml_parser_load(&parser, &more)) {
			if (yaml_document_get_root_node(&more))
				rc = fail_at(&c, yaml_document_get_root_node(&more)->start_mark,
					     "a second YAML document; a config is one document");
			yaml_document_delete(&more);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int arr_report_config_load(struct arr_report_config *cfg, const char *path, struct arr_report_error *err)
{
	memset(cfg, 0, sizeof *cfg);
	memset(err, 0, sizeof *err);
	snprintf(err->file, sizeof err->file, "%s", path);
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		snprintf(err->msg, sizeof err->msg, "cannot open: %s", strerror(e));
		return -e;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (len < cap)
			break;
		if (cap >= (64u << 20)) {
			free(buf);
			fclose(f);
			snprintf(err->msg, sizeof err->msg, "larger than 64 MiB; not a config");
			return ARR_ERANGE;
		}
		char *nb = realloc(buf, cap *= 2);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int ioerr = ferror(f);
	fclose(f);
	if (!buf) {
		snprintf(err->msg, sizeof err->msg, "out of memory");
		return ARR_ENOMEM;
	}
	if (ioerr) {
		free(buf);
		snprintf(err->msg, sizeof err->msg, "read error");
		return ARR_EIO;
	}
	int rc = arr_report_config_parse(cfg, path, buf, len, err);
	free(buf);
	return rc;
}

void arr_report_config_release(struct arr_report_config *cfg)
{
	for (size_t i = 0; i < cfg->ntraces; i++) {
		free(cfg->traces[i].pattern);
		free(cfg->traces[i].select);
	}
	free(cfg->traces);
	for (size_t i = 0; i < cfg->nallocators; i++)
		free(cfg->allocators[i].spec);
	free(cfg->allocators);
	for (size_t i = 0; i < cfg->nchecks; i++) {
		free(cfg->checks[i].text);
		arr_check_free(cfg->checks[i].expr);
	}
	free(cfg->checks);
	free(cfg->phases);
	free(cfg->path);
	free(cfg->cache_dir);
	free(cfg->dir);
	free(cfg->json);
	free(cfg->csv);
	free(cfg->html);
	memset(cfg, 0, sizeof *cfg);
}

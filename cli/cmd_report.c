/*
 * cmd_report.c - `allocrr report CONFIG.yaml`: the traces a config names,
 * analysed and replayed into its allocator variants, its checks evaluated,
 * and the report written as text, report.json, CSV and one HTML page.
 * A broken check exits 3, so CI can gate on allocation regressions.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "cli.h"
#include "options.h"
#include "report.h"

#define EXIT_CHECKS 3
#define MAX_TRACES 4096

static const struct cli_usage usage = {
	"report",
	"usage: allocrr report [-o DIR] [--json] [-q] [--jobs N] CONFIG.yaml\n"
	"       allocrr report --plan --results DIR CONFIG.yaml\n"
	"       allocrr report --results DIR [-o DIR] CONFIG.yaml\n",
	"Analyse the traces CONFIG.yaml names, replay them into its allocators\n"
	"(a variant matrix of tunables is one list), evaluate its checks, and write\n"
	"the report: a summary on the terminal, report.json (the schema of\n"
	"'allocrr analyze --json', plus checks), a tidy CSV and one self-contained\n"
	"HTML page. The config's schema: docs/report-config.md.\n",
	"Exit status: 0 all checks pass; 1 bad input (a trace, a replay, a missing\n"
	"result); 2 bad usage or config (file:line:column named); 3 a check is broken.\n",
	NULL,
	0,
};

struct paths {
	char **v;
	size_t n;
};

static int paths_add(struct paths *p, const char *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], s))
			return 0;
	if (p->n >= MAX_TRACES)
		return -1;
	char **nv = realloc(p->v, (p->n + 1) * sizeof *nv);
	if (!nv || !(nv[p->n] = strdup(s)))
		return -1;
	p->v = nv;
	p->n++;
	return 0;
}

static void paths_free(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

/* TRACE.PID and TRACE.PID.N: the children a recording wrote beside it. */
static int add_children(struct paths *p, const char *trace)
{
	char pat[PATH_MAX + 4];
	glob_t g;
	snprintf(pat, sizeof pat, "%s.*", trace);
	if (glob(pat, 0, NULL, &g))
		return 0;
	int rc = 0;
	for (size_t i = 0; i < g.gl_pathc && !rc; i++)
		if (cli_family_is_member_name(g.gl_pathv[i], trace))
			rc = paths_add(p, g.gl_pathv[i]);
	globfree(&g);
	return rc;
}

/* Every trace of the config, in the order written; EXIT_USAGE when a path
 * matches nothing (the error names the config line). */
static int expand_traces(const struct arr_report_config *cfg, struct paths *out)
{
	for (size_t i = 0; i < cfg->ntraces; i++) {
		const struct arr_report_trace *t = &cfg->traces[i];
		glob_t g;
		int rc = glob(t->pattern, GLOB_NOCHECK, NULL, &g);
		if (rc) {
			cli_error("%s:%u:%u: cannot expand '%s'", cfg->path, t->at.line, t->at.column, t->pattern);
			return EXIT_USAGE;
		}
		int nomatch = g.gl_pathc == 1 && !strcmp(g.gl_pathv[0], t->pattern) && access(t->pattern, F_OK);
		/* FILE@NAME, as the commands take it: one of FILE's family (cli_family_resolve splits it) */
		const char *at = strrchr(t->pattern, '@');
		if (nomatch && at && !strchr(at, '/') && !t->children && !t->select) {
			char file[PATH_MAX];
			snprintf(file, sizeof file, "%.*s", (int)(at - t->pattern), t->pattern);
			nomatch = access(file, F_OK) != 0;
		}
		if (nomatch) {
			int glob_chars = strpbrk(t->pattern, "*?[") != NULL;
			cli_error("%s:%u:%u: %s '%s'%s", cfg->path, t->at.line, t->at.column,
				  glob_chars ? "no trace matches" : "no such trace", t->pattern,
				  t->pattern[0] != '/' ? " (paths are relative to the current directory)" : "");
			globfree(&g);
			return EXIT_USAGE;
		}
		for (size_t k = 0; k < g.gl_pathc; k++) {
			const char *path = g.gl_pathv[k];
			size_t len = strlen(path);
			/* a glob catches the workload caches beside the traces */
			if (len > 3 && !strcmp(path + len - 3, ".wl") && strpbrk(t->pattern, "*?["))
				continue;
			/* of a family, one trace: the largest, or the largest of t->select */
			char chosen[PATH_MAX];
			if (!t->children) {
				rc = cli_family_resolve(path, t->select, 0, chosen, sizeof chosen);
				if (rc) {
					globfree(&g);
					return rc;
				}
				path = chosen;
			}
			if (paths_add(out, path) || (t->children && add_children(out, path))) {
				globfree(&g);
				cli_error("too many traces (at most %d)", MAX_TRACES);
				return EXIT_USAGE;
			}
		}
		globfree(&g);
	}
	return 0;
}

static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return -1;
	struct stat st; /* EEXIST: a file of that name is no directory */
	if (stat(buf, &st))
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

typedef int (*write_fn)(FILE *f, const struct arr_doc *doc, const char *title);

static int w_json(FILE *f, const struct arr_doc *doc, const char *title)
{
	(void)title;
	int rc = arr_doc_write_json(f, doc, 2);
	fputc('\n', f);
	return rc;
}
static int w_csv(FILE *f, const struct arr_doc *doc, const char *title)
{
	(void)title;
	return arr_report_write_csv(f, doc);
}

/* Written beside, then renamed: a reader never sees half a report. */
static int write_file(const char *dir, const char *name, write_fn fn, const struct arr_doc *doc, const char *title,
		      int quiet)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	if (name[0] == '/')
		snprintf(path, sizeof path, "%s", name);
	else
		snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		cli_error("cannot write '%s': %s", path, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	int rc = fn(f, doc, title);
	if (fclose(f) || rc) {
		cli_error("cannot write '%s': %s", path, rc ? arr_strerror(rc) : strerror(errno));
		unlink(tmp);
		return EXIT_BAD_INPUT;
	}
	if (rename(tmp, path)) {
		cli_error("cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
		return EXIT_BAD_INPUT;
	}
	if (!quiet)
		fprintf(stderr, "allocrr: wrote %s\n", path);
	return 0;
}

static void print_broken(const struct arr_doc *checks)
{
	for (size_t i = 0; checks && i < checks->len; i++) {
		const struct arr_doc *c = checks->items[i];
		const struct arr_doc *ok = arr_doc_get(c, "ok");
		if (ok && ok->type == ARR_DOC_BOOL && ok->v.b)
			continue;
		const char *check = arr_doc_as_str(arr_doc_get(c, "check"));
		const char *trace = arr_doc_as_str(arr_doc_get(c, "trace"));
		const char *alloc = arr_doc_as_str(arr_doc_get(c, "allocator"));
		const char *err = arr_doc_as_str(arr_doc_get(c, "error"));
		if (arr_doc_get(c, "unknown_metric"))
			continue; /* said by config_mistakes() */
		char where[1024];
		snprintf(where, sizeof where, "'%s'%s%s%s", trace ? trace : "", alloc ? " into '" : "",
			 alloc ? alloc : "", alloc ? "'" : "");
		if (err) {
			cli_error("check '%s' broken for %s: %s", check, where, err);
			continue;
		}
		double v = 0, lim = 0;
		arr_doc_as_num(arr_doc_get(c, "value"), &v);
		arr_doc_as_num(arr_doc_get(c, "limit"), &lim);
		const char *op = arr_doc_as_str(arr_doc_get(c, "op"));
		char want[32] = "";
		if (op)
			snprintf(want, sizeof want, " (wanted value %s limit)", op);
		char vs[96], ls[96];
		arr_check_value_text(vs, sizeof vs, check, v);
		arr_check_value_text(ls, sizeof ls, check, lim);
		cli_error("check '%s' broken for %s: value %s, limit %s%s", check, where, vs, ls, want);
	}
}

/* Checks that name no metric of the report (a misspelt name, or an analysis
 * the config does not run) are the config's mistake, not a regression: each
 * said once at its line:column. Returns EXIT_USAGE if there was one. */
static int config_mistakes(const struct arr_report_config *cfg, const struct arr_doc *checks)
{
	int status = 0;
	for (size_t k = 0; k < cfg->nchecks; k++) {
		const struct arr_report_check *ck = &cfg->checks[k];
		for (size_t i = 0; checks && i < checks->len; i++) {
			const struct arr_doc *c = checks->items[i];
			const char *name = arr_doc_as_str(arr_doc_get(c, "unknown_metric"));
			const char *text = arr_doc_as_str(arr_doc_get(c, "check"));
			if (!name || !text || strcmp(text, ck->text))
				continue;
			const char *sug = arr_doc_as_str(arr_doc_get(c, "did_you_mean"));
			const char *al = arr_doc_as_str(arr_doc_get(c, "did_you_mean_allocator"));
			double off = 0;
			if (ck->inline_text)
				arr_doc_as_num(arr_doc_get(c, "unknown_offset"), &off);
			char hint[320];
			if (al)
				snprintf(hint, sizeof hint, "; did you mean the allocator '%s'?", al);
			else if (sug)
				snprintf(hint, sizeof hint, "; did you mean '%s'?", sug);
			else
				snprintf(hint, sizeof hint,
					 " (see docs/report.md for the metrics, or run the analysis it needs)");
			cli_error("%s:%u:%u: check '%s': no metric %s'%s' in the report%s", cfg->path, ck->at.line,
				  ck->at.column + (unsigned)off, ck->text, al ? "or allocator " : "", name, hint);
			status = EXIT_USAGE;
			break;
		}
	}
	return status;
}

/* The terminal summary: the traces and the checks, without the report's
 * bookkeeping (config, generated), through the analyses' text renderer. */
static void print_text(const struct arr_doc *doc)
{
	struct arr_doc view = {.type = ARR_DOC_OBJECT};
	struct arr_doc *items[2];
	char *keys[2];
	static const char *const show[] = {"traces", "checks"};
	for (size_t i = 0; i < 2; i++) {
		struct arr_doc *d = arr_doc_get(doc, show[i]);
		if (d && d->len) {
			items[view.len] = d;
			keys[view.len++] = (char *)show[i];
		}
	}
	view.items = items;
	view.keys = keys;
	view.cap = view.len;
	arr_doc_render_text(stdout, &view);
}

static void fill_plan(const struct arr_report_config *cfg, struct cli_replay_plan *plan, int quiet)
{
	plan->cmd = "report";
	plan->runs = cfg->runs;
	plan->zeroing = cfg->zeroing;
	plan->opt.threads = cfg->threads;
	plan->opt.touch = cfg->touch;
	plan->opt.samples = cfg->samples;
	plan->opt.latency_every = cfg->latency_every;
	plan->opt.pace = cfg->pace;
	plan->cache_dir = cfg->cache_dir;
	plan->quiet = quiet;
	plan->progress = !quiet && isatty(2);
	if (cfg->points)
		plan->points = cfg->points;
}

/* A unit of work: trace i's analyses (alloc == -1), or its replay into
 * allocator variant alloc. Units are numbered trace-major, every variant of
 * the config counted (optional ones too), so a plan made on one machine
 * assembles on another. */
struct job {
	struct arr_report_config cfg;
	struct paths traces;
	struct cli_replay_env env;
	struct cli_replay_plan plan;
	struct arr_analysis_options ao;
	int quiet;
};

struct unit_result {
	struct arr_doc *doc; /* the analysis (an object), or one allocators entry; NULL if none */
	int status;          /* the unit's exit code */
	int skipped;         /* an optional allocator not installed */
};

static size_t units_per_trace(const struct job *j) { return 1 + j->cfg.nallocators; }
static size_t unit_trace(const struct job *j, size_t k) { return k / units_per_trace(j); }
static long unit_alloc(const struct job *j, size_t k) { return (long)(k % units_per_trace(j)) - 1; }

/* The report from every unit's result: the same document whichever way
 * the units ran. Returns the exit status. */
static int assemble(struct job *j, struct unit_result *res, size_t nunits, const char *dir, int json)
{
	int status = 0, quiet = j->quiet;
	for (size_t k = 0; k < nunits; k++)
		if (res[k].status && !status)
			status = res[k].status;
	if (status == EXIT_USAGE)
		return status;
	struct arr_doc *doc = arr_doc_object();
	arr_doc_set_str(doc, "allocrr", ALLOCRR_VERSION);
	arr_doc_set_str(doc, "config", j->cfg.path);
	char stamp[64];
	time_t now = time(NULL);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	arr_doc_set_str(doc, "generated", stamp);
	struct arr_doc *tdocs = arr_doc_set_arr(doc, "traces");
	size_t per = units_per_trace(j);
	for (size_t t = 0; t < j->traces.n; t++) {
		struct unit_result *an = &res[t * per];
		if (!an->doc)
			continue;
		struct arr_doc *td = an->doc;
		an->doc = NULL;
		if (j->cfg.nallocators) {
			struct arr_doc *als = arr_doc_set_arr(td, "allocators");
			for (size_t a = 0; a < j->cfg.nallocators; a++) {
				struct unit_result *u = &res[t * per + 1 + a];
				if (u->doc) {
					arr_doc_push(als, u->doc);
					u->doc = NULL;
				}
			}
		}
		arr_doc_push(tdocs, td);
	}
	int broken = 0;
	struct arr_doc *checks = arr_doc_set_arr(doc, "checks");
	if (j->cfg.nchecks) {
		broken = arr_report_run_checks(&j->cfg, doc, checks);
		if (broken < 0) {
			cli_error("checks: %s", arr_strerror(broken));
			status = EXIT_BAD_INPUT;
			broken = 0;
		}
	}
	if (arr_doc_status(doc)) {
		cli_error("out of memory building the report");
		status = EXIT_BAD_INPUT;
	}
	if (tdocs && tdocs->len) {
		struct arr_report_config *cfg = &j->cfg;
		int rc;
		if ((cfg->json || cfg->csv || cfg->html) && mkdir_p(dir)) {
			cli_error("cannot create '%s': %s", dir, strerror(errno));
			status = EXIT_BAD_INPUT;
		} else {
			char title[512];
			const char *base = strrchr(cfg->path, '/');
			snprintf(title, sizeof title, "allocrr report: %s", base ? base + 1 : cfg->path);
			if (cfg->json && (rc = write_file(dir, cfg->json, w_json, doc, title, quiet)))
				status = rc;
			if (cfg->csv && (rc = write_file(dir, cfg->csv, w_csv, doc, title, quiet)))
				status = rc;
			if (cfg->html) {
				if (!arr_report_html_available()) {
					if (!quiet)
						fprintf(stderr, "allocrr: no HTML: this allocrr was built without "
								"libjs-dygraphs and libjs-chart.js\n");
				} else if ((rc = write_file(dir, cfg->html, arr_report_write_html, doc, title,
							    quiet))) {
					status = rc;
				}
			}
		}
		if (json) {
			arr_doc_write_json(stdout, doc, 2);
			putchar('\n');
		} else if (cfg->text && !quiet) {
			print_text(doc);
		}
	}
	fflush(stdout);
	if (broken)
		print_broken(checks);
	int mistakes = config_mistakes(&j->cfg, checks);
	if (mistakes && !status)
		status = mistakes;
	arr_doc_free(doc);
	if (status)
		return status;
	return broken ? EXIT_CHECKS : 0;
}

/* A progress line for long analyses, when stderr is a terminal. */
struct progress {
	const char *path;
	struct timespec start;
	int shown;
};

static void show_progress(void *ctx, uint64_t events, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double s = (double)(t.tv_sec - p->start.tv_sec) + (double)(t.tv_nsec - p->start.tv_nsec) / 1e9;
	cli_progress(p->path, total ? (double)done / (double)total : 0, s > 0 ? (double)events / s : 0, "events", s);
	p->shown = 1;
}

static int run_unit(struct job *j, size_t k, struct unit_result *r)
{
	const char *path = j->traces.v[unit_trace(j, k)];
	long a = unit_alloc(j, k);
	memset(r, 0, sizeof *r);
	if (a < 0) {
		struct arr_trace *tr;
		int rc = arr_trace_open(&tr, path);
		struct arr_doc *td = arr_doc_object();
		struct arr_analysis_options ao = j->ao;
		struct progress pr = {.path = path};
		if (!j->quiet && isatty(STDERR_FILENO)) {
			clock_gettime(CLOCK_MONOTONIC, &pr.start);
			ao.progress = show_progress;
			ao.progress_ctx = &pr;
		}
		if (!rc)
			rc = arr_analyze_trace(tr, &ao, td);
		if (pr.shown)
			fputs("\r\033[K", stderr);
		if (rc) {
			r->status = cli_trace_error(path, tr, rc);
			arr_trace_close(tr);
			arr_doc_free(td);
			return r->status;
		}
		arr_trace_close(tr);
		r->doc = td;
		return 0;
	}
	const struct arr_report_allocator *al = &j->cfg.allocators[a];
	if (al->optional) {
		struct arr_allocator res;
		if (arr_allocator_resolve(al->spec, j->env.builtin_lib, &res) == ARR_ENOTFOUND) {
			if (!j->quiet)
				fprintf(stderr, "allocrr: skipping optional allocator '%s': %s not found%s%s\n",
					al->spec, res.lib, res.package ? "; install " : "",
					res.package ? res.package : "");
			r->skipped = 1;
			return 0;
		}
	}
	struct arr_doc *arr = arr_doc_array();
	const char *spec = al->spec;
	r->status = cli_replays_analyze(path, &spec, 1, &j->plan, arr);
	if (arr && arr->len) {
		r->doc = arr->items[0];
		arr->len = 0; /* moved out */
	}
	arr_doc_free(arr);
	return r->status;
}

static void unit_path(char *buf, size_t cap, const char *dir, size_t k)
{
	snprintf(buf, cap, "%s/unit-%zu.json", dir, k);
}

/* A unit's result as a file: {"unit", "trace", "allocator", "status", "skipped", "result"}. */
static int write_unit(const struct job *j, const char *dir, size_t k, const struct unit_result *r)
{
	struct arr_doc *d = arr_doc_object();
	long a = unit_alloc(j, k);
	arr_doc_set_int(d, "unit", (int64_t)k);
	arr_doc_set_str(d, "trace", j->traces.v[unit_trace(j, k)]);
	if (a >= 0)
		arr_doc_set_str(d, "allocator", j->cfg.allocators[a].spec);
	else
		arr_doc_set(d, "allocator", arr_doc_null());
	arr_doc_set_int(d, "status", r->status);
	arr_doc_set_bool(d, "skipped", r->skipped);
	arr_doc_set(d, "result", r->doc ? arr_doc_clone(r->doc) : arr_doc_null());
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	unit_path(path, sizeof path, dir, k);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	int rc = !f || arr_doc_status(d) || arr_doc_write_json(f, d, 0);
	if (f && fclose(f))
		rc = 1;
	arr_doc_free(d);
	if (rc || rename(tmp, path)) {
		cli_error("cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
		return EXIT_BAD_INPUT;
	}
	return 0;
}

static int read_unit(const struct job *j, const char *dir, size_t k, struct unit_result *r)
{
	char path[PATH_MAX];
	unit_path(path, sizeof path, dir, k);
	memset(r, 0, sizeof *r);
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			break;
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		char *nb = realloc(buf, cap *= 2);
		if (!nb)
			free(buf);
		buf = nb;
	}
	fclose(f);
	struct arr_doc *d = NULL;
	size_t off = 0;
	int rc = buf ? arr_doc_parse_json(buf, len, &d, &off) : ARR_ENOMEM;
	free(buf);
	if (rc) {
		cli_error("'%s': %s at offset %zu", path, arr_strerror(rc), off);
		return EXIT_BAD_INPUT;
	}
	/* A result of another plan (the config changed) must not be mixed in. */
	long a = unit_alloc(j, k);
	const char *tr = arr_doc_as_str(arr_doc_get(d, "trace"));
	const char *al = arr_doc_as_str(arr_doc_get(d, "allocator"));
	double st = 0;
	if (!tr || strcmp(tr, j->traces.v[unit_trace(j, k)]) || (a >= 0) != (al != NULL) ||
	    (al && strcmp(al, j->cfg.allocators[a].spec)) || arr_doc_as_num(arr_doc_get(d, "status"), &st)) {
		cli_error("'%s' is not unit %zu of this plan (trace '%s', allocator '%s'); make the plan again", path,
			  k, j->traces.v[unit_trace(j, k)], a >= 0 ? j->cfg.allocators[a].spec : "-");
		arr_doc_free(d);
		return EXIT_BAD_INPUT;
	}
	r->status = (int)st;
	const struct arr_doc *sk = arr_doc_get(d, "skipped");
	r->skipped = sk && sk->type == ARR_DOC_BOOL && sk->v.b;
	struct arr_doc *res = arr_doc_get(d, "result");
	if (res && res->type == ARR_DOC_OBJECT)
		r->doc = arr_doc_clone(res);
	arr_doc_free(d);
	return 0;
}

static void shell_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static int print_plan(const struct job *j, const char *config, const char *results)
{
	char cwd[PATH_MAX], cfg[PATH_MAX], exe[PATH_MAX + 16];
	if (!getcwd(cwd, sizeof cwd) || !realpath(config, cfg)) {
		cli_error("cannot resolve '%s': %s", config, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	if (mkdir_p(results)) {
		cli_error("cannot create '%s': %s", results, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	char res[PATH_MAX];
	if (!realpath(results, res))
		snprintf(res, sizeof res, "%s", results);
	snprintf(exe, sizeof exe, "%s/allocrr", cli_exe_dir());
	size_t n = j->traces.n * units_per_trace(j);
	for (size_t k = 0; k < n; k++) {
		fputs("cd ", stdout);
		shell_quote(stdout, cwd);
		fputs(" && ", stdout);
		shell_quote(stdout, exe);
		fputs(" report -q --results ", stdout);
		shell_quote(stdout, res);
		printf(" --unit %zu ", k);
		shell_quote(stdout, cfg);
		putchar('\n');
	}
	if (!j->quiet)
		fprintf(stderr,
			"allocrr: %zu units (%zu traces x (analyses + %zu allocator variants)); when they are done: "
			"allocrr report --results %s %s\n",
			n, j->traces.n, j->cfg.nallocators, res, config);
	return 0;
}

/* Run units [0, n) with at most jobs at a time in child processes, each
 * writing its result into dir. */
static int run_parallel(struct job *j, size_t n, unsigned jobs, const char *dir)
{
	/* Prepare every workload first: units of one trace would otherwise all
	 * prepare it at once. */
	if (j->cfg.nallocators)
		for (size_t t = 0; t < j->traces.n; t++) {
			char wl[PATH_MAX];
			struct arr_workload_info info;
			if (cli_replay_workload(j->traces.v[t], &j->plan, wl, sizeof wl, &info))
				break; /* its units report the error */
		}
	fflush(NULL);
	size_t next = 0, running = 0;
	int status = 0;
	while (next < n || running) {
		while (running < jobs && next < n) {
			pid_t pid = fork();
			if (pid < 0) {
				cli_error("cannot fork: %s", strerror(errno));
				status = EXIT_BAD_INPUT;
				next = n;
				break;
			}
			if (pid == 0) {
				struct unit_result r;
				run_unit(j, next, &r);
				int rc = write_unit(j, dir, next, &r);
				fflush(NULL);
				_exit(rc ? rc : 0);
			}
			next++;
			running++;
		}
		int st;
		if (running && wait(&st) > 0) {
			running--;
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				status = EXIT_BAD_INPUT;
		} else if (running) {
			break;
		}
	}
	return status;
}

/* The command line of one `allocrr report`. */
struct report_args {
	const char *outdir, *results, *config;
	int json, quiet, plan_only;
	unsigned jobs;
	long unit; /* -1: every unit */
};

/* Returns -1 to go on, or the exit code. */
static int parse_args(struct report_args *a, int argc, char **argv)
{
	*a = (struct report_args){.jobs = 1, .unit = -1};
	int first;
	const struct cli_option opts[] = {
		CLI_STRING('o', "output", "DIR", &a->outdir,
			   "write the files into DIR (default: the config's\n"
			   "output.dir, else ./allocrr-report)"),
		CLI_FLAG('j', "json", &a->json, "print report.json on stdout instead of the summary"),
		CLI_FLAG('q', "quiet", &a->quiet, "no summary, no notes; errors and broken checks only"),
		CLI_UINT(0, "jobs", "N", &a->jobs, 1, 1024,
			 "run N units of work at a time on this machine (default 1:\n"
			 "replays that share cores measure each other)"),
		CLI_FLAG(0, "plan", &a->plan_only,
			 "print one self-contained shell command per unit of work\n"
			 "(a trace's analyses, or a trace x allocator variant),\n"
			 "each writing its result into --results DIR; run them\n"
			 "anywhere (xargs -P, GNU parallel, a Slurm array, a\n"
			 "Kubernetes indexed Job), then assemble:"),
		CLI_STRING(0, "results", "DIR", &a->results,
			   "assemble the report from the units' results in DIR,\n"
			   "exactly as a direct run would"),
		CLI_LONG(0, "unit", "K", &a->unit, 0, LONG_MAX, "run unit K of the plan only, into --results DIR"),
		CLI_END,
	};
	int rc = cli_options_parse(&usage, opts, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error("report", "no config given");
	if (first + 1 < argc)
		return cli_usage_error("report", "one config at a time ('%s' is extra)", argv[first + 1]);
	a->config = argv[first];
	if ((a->plan_only || a->unit >= 0) && !a->results)
		return cli_usage_error("report", "%s needs --results DIR (where the units write)",
				       a->plan_only ? "--plan" : "--unit");
	if (a->plan_only && a->unit >= 0)
		return cli_usage_error("report", "--plan and --unit do not go together");
	if (a->results && a->jobs > 1)
		return cli_usage_error("report", "--jobs runs units here; with --results they ran elsewhere");
	return -1;
}

/* The config, its traces, and what to run; then (when this process runs
 * replays) the engine and the workload cache. Returns 0 or the exit code. */
static int load(struct job *j, const struct report_args *a)
{
	j->quiet = a->quiet;
	struct arr_report_error err;
	if (arr_report_config_load(&j->cfg, a->config, &err)) {
		if (err.line)
			cli_error("%s:%u:%u: %s", err.file, err.line, err.column, err.msg);
		else
			cli_error("'%s': %s", err.file, err.msg);
		return EXIT_USAGE;
	}
	int rc = expand_traces(&j->cfg, &j->traces);
	if (rc)
		return rc;
	j->plan = (struct cli_replay_plan)CLI_REPLAY_PLAN_INIT;
	fill_plan(&j->cfg, &j->plan, a->quiet);
	j->ao = (struct arr_analysis_options)ARR_ANALYSIS_OPTIONS_INIT;
	j->ao.what = j->cfg.what;
	j->ao.top = j->cfg.top;
	j->ao.timeline_points = j->cfg.points;
	j->ao.phases = j->cfg.phases;
	j->ao.nphases = j->cfg.nphases;
	if (a->plan_only || !j->cfg.nallocators || (a->results && a->unit < 0))
		return 0;
	if ((rc = cli_replay_env_find(&j->env)))
		return rc;
	/* an allocator the config misspells is the config's error, named where
	 * it was written, before any work (a missing library is not: optional) */
	for (size_t i = 0; i < j->cfg.nallocators; i++) {
		const struct arr_report_allocator *al = &j->cfg.allocators[i];
		struct arr_allocator res;
		int arc = arr_allocator_resolve(al->spec, j->env.builtin_lib, &res);
		if (arc != ARR_EINVAL && arc != ARR_ESYNTAX && arc != ARR_ERANGE)
			continue;
		char why[600];
		if (arc == ARR_EINVAL)
			snprintf(
				why, sizeof why,
				"unknown allocator '%s' (known: builtin, glibc, jemalloc, mimalloc, tcmalloc, or a path "
				"to a .so)",
				al->spec);
		else
			snprintf(why, sizeof why, "allocator '%s': %s", al->spec, res.why);
		if (al->at.line)
			cli_error("%s:%u:%u: %s", a->config, al->at.line, al->at.column, why);
		else
			cli_error("'%s': %s", a->config, why);
		return EXIT_USAGE;
	}
	if (j->cfg.cache_dir && mkdir_p(j->cfg.cache_dir)) {
		cli_error("cannot create the workload cache '%s': %s", j->cfg.cache_dir, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	return 0;
}

/* --unit K: one unit's result into --results DIR. */
static int run_one_unit(struct job *j, const struct report_args *a, size_t nunits)
{
	if ((size_t)a->unit >= nunits) {
		cli_error("the plan of '%s' has %zu units (0 to %zu), not %ld", a->config, nunits, nunits - 1, a->unit);
		return EXIT_USAGE;
	}
	if (mkdir_p(a->results)) {
		cli_error("cannot create '%s': %s", a->results, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	struct unit_result r;
	run_unit(j, (size_t)a->unit, &r);
	int status = write_unit(j, a->results, (size_t)a->unit, &r);
	arr_doc_free(r.doc);
	return status ? status : r.status;
}

/* Run the units in --jobs children, their results into a new directory
 * under dir (tmpdir). Returns 0 or the exit code. */
static int run_in_children(struct job *j, const struct report_args *a, size_t nunits, const char *dir, char *tmpdir,
			   size_t cap)
{
	if (mkdir_p(dir)) {
		cli_error("cannot create '%s': %s", dir, strerror(errno));
		return EXIT_BAD_INPUT;
	}
	snprintf(tmpdir, cap, "%s/.units.XXXXXX", dir);
	if (!mkdtemp(tmpdir)) {
		cli_error("cannot create a directory in '%s': %s", dir, strerror(errno));
		tmpdir[0] = 0;
		return EXIT_BAD_INPUT;
	}
	return run_parallel(j, nunits, a->jobs, tmpdir);
}

/* Every unit's result into res: read from the directory from (--results, or
 * the children's), or run here one after another. */
static void gather(struct job *j, const struct report_args *a, const char *from, struct unit_result *res, size_t nunits)
{
	for (size_t k = 0; k < nunits; k++) {
		if (from) {
			int rc = read_unit(j, from, k, &res[k]);
			if (rc < 0) {
				cli_error(
					"unit %zu (trace '%s', %s%s) has no result in '%s'; run: allocrr report --results %s "
					"--unit %zu %s",
					k, j->traces.v[unit_trace(j, k)],
					unit_alloc(j, k) >= 0 ? "allocator " : "analyses",
					unit_alloc(j, k) >= 0 ? j->cfg.allocators[unit_alloc(j, k)].spec : "", from,
					from, k, a->config);
				res[k].status = EXIT_BAD_INPUT;
			} else if (rc) {
				res[k].status = rc;
			}
			continue;
		}
		/* a trace that cannot be read is not replayed either */
		long al = unit_alloc(j, k);
		if (al >= 0 && !res[k - (size_t)al - 1].doc)
			continue;
		if (!a->quiet && al < 0 && j->traces.n > 1)
			fprintf(stderr, "allocrr: [%zu/%zu] %s\n", unit_trace(j, k) + 1, j->traces.n,
				j->traces.v[unit_trace(j, k)]);
		run_unit(j, k, &res[k]);
		if (res[k].status == EXIT_USAGE)
			break; /* a bad spec: the same for every trace */
	}
}

/* The whole report: every unit's result, then the files. */
static int run_all(struct job *j, const struct report_args *a, size_t nunits)
{
	const char *dir = a->outdir ? a->outdir : j->cfg.dir;
	struct unit_result *res = calloc(nunits ? nunits : 1, sizeof *res);
	if (!res) {
		cli_error("out of memory");
		return EXIT_BAD_INPUT;
	}
	char tmpdir[PATH_MAX] = "";
	const char *from = a->results;
	int status = 0;
	/* the output directory before the work, not after it */
	if ((j->cfg.json || j->cfg.csv || j->cfg.html) && (mkdir_p(dir) || access(dir, W_OK | X_OK))) {
		cli_error("cannot write into '%s': %s", dir, strerror(errno));
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (!a->results && a->jobs > 1) {
		status = run_in_children(j, a, nunits, dir, tmpdir, sizeof tmpdir);
		from = tmpdir;
	}
	if (!tmpdir[0] && from == tmpdir) /* the directory could not be made */
		goto out;
	gather(j, a, from, res, nunits);
	if (tmpdir[0]) {
		for (size_t k = 0; k < nunits; k++) {
			char p[PATH_MAX];
			unit_path(p, sizeof p, tmpdir, k);
			unlink(p);
		}
		rmdir(tmpdir);
	}
	status = status ? status : assemble(j, res, nunits, dir, a->json);
out:
	for (size_t k = 0; k < nunits; k++)
		arr_doc_free(res[k].doc);
	free(res);
	return status;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	int status = parse_args(&a, argc, argv);
	if (status >= 0)
		return status;
	static struct job j;
	memset(&j, 0, sizeof j);
	if ((status = load(&j, &a)))
		goto out;
	size_t nunits = j.traces.n * units_per_trace(&j);
	if (a.plan_only)
		status = print_plan(&j, a.config, a.results);
	else if (a.unit >= 0)
		status = run_one_unit(&j, &a, nunits);
	else
		status = run_all(&j, &a, nunits);
out:
	paths_free(&j.traces);
	arr_report_config_release(&j.cfg);
	return status;
}

/*
 * cmd_report.c - `allocrr report CONFIG.yaml`: the traces a config names,
 * analysed and replayed into its allocator variants, its checks evaluated,
 * and the report written as text, report.json, CSV and one HTML page.
 * A broken check exits 3, so CI can gate on allocation regressions.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "cli.h"
#include "report.h"

#define EXIT_CHECKS 3
#define MAX_TRACES 4096

static const char usage[] =
	"usage: allocrr report [-o DIR] [--json] [-q] CONFIG.yaml\n"
	"\n"
	"Analyse the traces CONFIG.yaml names, replay them into its allocators\n"
	"(a variant matrix of tunables is one list), evaluate its checks, and write\n"
	"the report: a summary on the terminal, report.json (the schema of\n"
	"'allocrr analyze --json', plus checks), a tidy CSV and one self-contained\n"
	"HTML page. The config's schema: docs/report-config.md.\n"
	"\n"
	"  -o, --output DIR   write the files into DIR (default: the config's\n"
	"                     output.dir, else ./allocrr-report)\n"
	"  -j, --json         print report.json on stdout instead of the summary\n"
	"  -q, --quiet        no summary, no notes; errors and broken checks only\n"
	"  -h, --help         show this help\n"
	"  -V, --version      show the version\n"
	"\n"
	"Exit status: 0 all checks pass; 1 bad input (a trace, a replay); 2 bad\n"
	"usage or config (file:line:column named); 3 a check is broken.\n";

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
static int is_child_suffix(const char *s)
{
	if (*s != '.')
		return 0;
	while (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return !*s;
}

static int add_children(struct paths *p, const char *trace)
{
	char pat[PATH_MAX + 4];
	glob_t g;
	snprintf(pat, sizeof pat, "%s.*", trace);
	if (glob(pat, 0, NULL, &g))
		return 0;
	int rc = 0;
	for (size_t i = 0; i < g.gl_pathc && !rc; i++)
		if (is_child_suffix(g.gl_pathv[i] + strlen(trace)))
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

/* Allocator specs to replay: optional ones whose library is missing are
 * skipped with a note; the rest go to cli_replays_analyze, which reports
 * its own errors. */
static size_t replay_specs(const struct arr_report_config *cfg, const struct cli_replay_env *env, const char **specs,
			   int quiet)
{
	size_t n = 0;
	for (size_t i = 0; i < cfg->nallocators; i++) {
		const struct arr_report_allocator *a = &cfg->allocators[i];
		if (a->optional) {
			struct arr_allocator al;
			int rc = arr_allocator_resolve(a->spec, env->builtin_lib, &al);
			if (rc == ARR_ENOTFOUND) {
				if (!quiet)
					fprintf(stderr, "allocrr: skipping optional allocator '%s': %s not found%s%s\n",
						a->spec, al.lib, al.package ? "; install " : "",
						al.package ? al.package : "");
				continue;
			}
		}
		specs[n++] = a->spec;
	}
	return n;
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
		char where[1024];
		snprintf(where, sizeof where, "'%s'%s%s%s", trace ? trace : "", alloc ? " into '" : "", alloc ? alloc : "",
			 alloc ? "'" : "");
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
		cli_error("check '%s' broken for %s: value %.6g, limit %.6g%s", check, where, v, lim, want);
	}
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
	plan->opt.threads = cfg->threads == ARR_REPORT_THREADS_SERIAL     ? ARR_THREADS_SERIAL
			    : cfg->threads == ARR_REPORT_THREADS_PARALLEL ? ARR_THREADS_PARALLEL
									  : ARR_THREADS_AUTO;
	plan->opt.touch = cfg->touch == ARR_REPORT_TOUCH_NONE  ? ARR_TOUCH_NONE
			  : cfg->touch == ARR_REPORT_TOUCH_ALL ? ARR_TOUCH_ALL
							       : ARR_TOUCH_PAGE;
	plan->opt.samples = cfg->samples;
	plan->opt.latency_every = cfg->latency_every;
	plan->cache_dir = cfg->cache_dir;
	plan->quiet = quiet;
	plan->progress = !quiet && isatty(2);
	if (cfg->points)
		plan->points = cfg->points;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"json", no_argument, 0, 'j'},
		{"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},      {0, 0, 0, 0},
	};
	const char *outdir = NULL;
	int json = 0, quiet = 0, opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:jqhV", opts, NULL)) != -1) {
		int rc = cli_common_option(opt, usage);
		if (rc >= 0)
			return rc;
		switch (opt) {
		case 'o':
			outdir = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case ':':
			return cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("report", "no config given");
	if (optind + 1 < argc)
		return cli_usage_error("report", "one config at a time ('%s' is extra)", argv[optind + 1]);

	struct arr_report_config cfg;
	struct arr_report_error err;
	int rc = arr_report_config_load(&cfg, argv[optind], &err);
	if (rc) {
		if (err.line)
			cli_error("%s:%u:%u: %s", err.file, err.line, err.column, err.msg);
		else
			cli_error("'%s': %s", err.file, err.msg);
		arr_report_config_release(&cfg);
		return EXIT_USAGE;
	}
	struct paths traces = {0};
	if ((rc = expand_traces(&cfg, &traces))) {
		paths_free(&traces);
		arr_report_config_release(&cfg);
		return rc;
	}
	const char *dir = outdir ? outdir : cfg.dir;

	struct cli_replay_env env;
	const char **specs = NULL;
	size_t nspecs = 0;
	if (cfg.nallocators) {
		if ((rc = cli_replay_env_find(&env))) {
			paths_free(&traces);
			arr_report_config_release(&cfg);
			return rc;
		}
		specs = calloc(cfg.nallocators, sizeof *specs);
		if (!specs) {
			cli_error("out of memory");
			paths_free(&traces);
			arr_report_config_release(&cfg);
			return EXIT_BAD_INPUT;
		}
		nspecs = replay_specs(&cfg, &env, specs, quiet);
		if (cfg.cache_dir && mkdir_p(cfg.cache_dir)) {
			cli_error("cannot create the workload cache '%s': %s", cfg.cache_dir, strerror(errno));
			free(specs);
			paths_free(&traces);
			arr_report_config_release(&cfg);
			return EXIT_BAD_INPUT;
		}
	}
	struct cli_replay_plan plan = CLI_REPLAY_PLAN_INIT;
	fill_plan(&cfg, &plan, quiet);

	struct arr_analysis_options ao = ARR_ANALYSIS_OPTIONS_INIT;
	ao.what = cfg.what;
	ao.top = cfg.top;
	ao.timeline_points = cfg.points;
	ao.phases = cfg.phases;
	ao.nphases = cfg.nphases;

	struct arr_doc *doc = arr_doc_object();
	arr_doc_set_str(doc, "allocrr", ALLOCRR_VERSION);
	arr_doc_set_str(doc, "config", cfg.path);
	char stamp[64];
	time_t now = time(NULL);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	arr_doc_set_str(doc, "generated", stamp);
	struct arr_doc *tdocs = arr_doc_set_arr(doc, "traces");
	int status = 0;
	for (size_t i = 0; i < traces.n; i++) {
		const char *path = traces.v[i];
		if (!quiet && traces.n > 1)
			fprintf(stderr, "allocrr: [%zu/%zu] %s\n", i + 1, traces.n, path);
		struct arr_trace *tr;
		rc = arr_trace_open(&tr, path);
		struct arr_doc *td = arr_doc_object();
		if (!rc)
			rc = arr_analyze_trace(tr, &ao, td);
		if (rc) {
			status = cli_trace_error(path, tr, rc);
			arr_trace_close(tr);
			arr_doc_free(td);
			continue;
		}
		arr_trace_close(tr);
		if (nspecs) {
			int r2 = cli_replays_analyze(path, specs, nspecs, &plan, arr_doc_set_arr(td, "allocators"));
			if (r2 == EXIT_USAGE) {
				arr_doc_free(td);
				status = EXIT_USAGE;
				break;
			}
			if (r2)
				status = r2;
		}
		arr_doc_push(tdocs, td);
	}
	free(specs);

	int broken = 0;
	if (status != EXIT_USAGE && cfg.nchecks) {
		struct arr_doc *checks = arr_doc_set_arr(doc, "checks");
		broken = arr_report_run_checks(&cfg, doc, checks);
		if (broken < 0) {
			cli_error("checks: %s", arr_strerror(broken));
			status = EXIT_BAD_INPUT;
			broken = 0;
		}
	} else {
		arr_doc_set_arr(doc, "checks");
	}
	if (arr_doc_status(doc)) {
		cli_error("out of memory building the report");
		status = EXIT_BAD_INPUT;
	}

	if (status != EXIT_USAGE && tdocs && tdocs->len) {
		int wrote = 0;
		if ((cfg.json || cfg.csv || cfg.html) && mkdir_p(dir)) {
			cli_error("cannot create '%s': %s", dir, strerror(errno));
			status = EXIT_BAD_INPUT;
		} else {
			char title[512];
			const char *base = strrchr(cfg.path, '/');
			snprintf(title, sizeof title, "allocrr report: %s", base ? base + 1 : cfg.path);
			if (cfg.json && (rc = write_file(dir, cfg.json, w_json, doc, title, quiet)))
				status = rc;
			if (cfg.csv && (rc = write_file(dir, cfg.csv, w_csv, doc, title, quiet)))
				status = rc;
			if (cfg.html) {
				if (!arr_report_html_available()) {
					if (!quiet)
						fprintf(stderr, "allocrr: no HTML: this allocrr was built without "
								"libjs-dygraphs and libjs-chart.js\n");
				} else if ((rc = write_file(dir, cfg.html, arr_report_write_html, doc, title, quiet))) {
					status = rc;
				}
			}
			wrote = 1;
		}
		(void)wrote;
		if (json) {
			arr_doc_write_json(stdout, doc, 2);
			putchar('\n');
		} else if (cfg.text && !quiet) {
			print_text(doc);
		}
	}
	fflush(stdout);
	if (broken)
		print_broken(arr_doc_get(doc, "checks"));
	arr_doc_free(doc);
	paths_free(&traces);
	arr_report_config_release(&cfg);
	if (status)
		return status;
	return broken ? EXIT_CHECKS : 0;
}

/*
 * oom_sites.c TRACE - the call-site analysis (with zeroing, whose marks it
 * reads) of a trace recorded with stacks, with the Nth allocation failing,
 * for N = 0, 1, 2, ... until one run needs no failure: every run returns 0
 * or ARR_ENOMEM, never crashes, and frees what it took - the symbolizer's
 * cache, the live set at the peak, the flame trees (SQLite's malloc tests
 * are the model). libdw's own allocations are neither counted nor failed:
 * the test wraps the libdw calls symbolize.c makes (this executable's
 * definitions win over the shared library's) and disarms the counter
 * inside them, since libdw itself leaks on some failures (dwarf_getaranges'
 * tsearch). Every STRIDE-th N is tried (argument 2, default 1), to keep it
 * short.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "allocrr/error.h"
#include "allocrr/trace.h"
#include "failmalloc.h"

/* A libdw call made with the counter disarmed (when it was armed). */
#define REAL(ret, name, params, args)                              \
	ret name params                                            \
	{                                                          \
		static ret(*real) params;                          \
		if (!real)                                         \
			*(void **)&real = dlsym(RTLD_NEXT, #name); \
		int was = armed;                                   \
		armed = 0;                                         \
		ret r = real args;                                 \
		armed = was;                                       \
		return r;                                          \
	}
REAL(Dwfl *, dwfl_begin, (const Dwfl_Callbacks *cb), (cb))
REAL(Dwfl_Module *, dwfl_report_elf, (Dwfl * d, const char *n, const char *f, int fd, GElf_Addr b, bool p),
     (d, n, f, fd, b, p))
REAL(int, dwfl_report_end, (Dwfl * d, int (*rm)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *), void *a),
     (d, rm, a))
REAL(Dwfl_Module *, dwfl_addrmodule, (Dwfl * d, Dwarf_Addr a), (d, a))
REAL(const char *, dwfl_module_addrname, (Dwfl_Module * m, GElf_Addr a), (m, a))
REAL(Dwfl_Line *, dwfl_module_getsrc, (Dwfl_Module * m, Dwarf_Addr a), (m, a))
REAL(const char *, dwfl_lineinfo, (Dwfl_Line * l, Dwarf_Addr *a, int *n, int *c, Dwarf_Word *t, Dwarf_Word *s),
     (l, a, n, c, t, s))
REAL(Dwarf_Die *, dwfl_module_addrdie, (Dwfl_Module * m, Dwarf_Addr a, Dwarf_Addr *b), (m, a, b))
REAL(int, dwarf_getsrcfiles, (Dwarf_Die * c, Dwarf_Files **f, size_t *n), (c, f, n))
REAL(Dwarf_Attribute *, dwarf_attr_integrate, (Dwarf_Die * d, unsigned int n, Dwarf_Attribute *a), (d, n, a))

void dwfl_report_begin(Dwfl *d)
{
	static void (*real)(Dwfl *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dwfl_report_begin");
	int was = armed;
	armed = 0;
	real(d);
	armed = was;
}

void dwfl_end(Dwfl *d)
{
	static void (*real)(Dwfl *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dwfl_end");
	int was = armed;
	armed = 0;
	real(d);
	armed = was;
}

/* Its array is the caller's to free: handed over as a block of ours, so
 * the counts stay balanced (and that copy may fail, as libdw's would). */
int dwarf_getscopes(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	static int (*real)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dwarf_getscopes");
	int was = armed;
	armed = 0;
	Dwarf_Die *theirs = NULL;
	int n = real(cu, pc, &theirs);
	armed = was;
	*scopes = NULL;
	if (n > 0) {
		*scopes = malloc((size_t)n * sizeof **scopes);
		if (*scopes)
			memcpy(*scopes, theirs, (size_t)n * sizeof **scopes);
		else
			n = -1;
	}
	real_free(theirs);
	return n;
}

static int analyze(const char *path, int64_t *sites)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	*sites = -1;
	if (rc)
		return rc;
	struct arr_analysis_options opt = ARR_ANALYSIS_OPTIONS_INIT;
	opt.what = 1u << ARR_AN_SITES | 1u << ARR_AN_ZEROING;
	struct arr_doc *doc = arr_doc_object();
	if (!doc) {
		arr_trace_close(tr);
		return ARR_ENOMEM;
	}
	rc = arr_analyze_trace(tr, &opt, doc);
	double n;
	if (!rc && arr_doc_as_num(arr_doc_path(doc, "sites.sites"), &n) == 0)
		*sites = (int64_t)n;
	arr_doc_free(doc);
	arr_trace_close(tr);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: oom_sites TRACE [STRIDE]\n");
		return 2;
	}
	long stride = argc > 2 ? atol(argv[2]) : 1;
	int64_t full;
	analyze(argv[1], &full); /* unarmed first: one-time allocations (libdw's, the read-ahead thread's) */
	armed = 1;
	if (analyze(argv[1], &full) != 0 || full <= 0 || live != 0) {
		fprintf(stderr, "oom_sites: the run without failures failed, found %lld sites or leaked %ld blocks\n",
			(long long)full, live);
		return 1;
	}
	long n, tried = 0;
	for (n = 0;; n += stride, tried++) {
		int64_t got;
		live = 0;
		countdown = n;
		int rc = analyze(argv[1], &got);
		long left = countdown;
		countdown = -1;
		if (rc != 0 && rc != ARR_ENOMEM) {
			fprintf(stderr, "oom_sites: failing allocation %ld: rc %d (%s), want ENOMEM\n", n, rc,
				arr_strerror(rc));
			return 1;
		}
		if (live != 0) {
			fprintf(stderr, "oom_sites: failing allocation %ld: %ld blocks not freed\n", n, live);
			return 1;
		}
		if (left >= 0) { /* no allocation failed: the run needs no more */
			if (rc != 0 || got != full) {
				fprintf(stderr, "oom_sites: clean run %ld: rc %d, %lld sites of %lld\n", n, rc,
					(long long)got, (long long)full);
				return 1;
			}
			break;
		}
	}
	printf("ok: %ld runs, allocations failed up to %ld, %lld sites\n", tried, n, (long long)full);
	return 0;
}

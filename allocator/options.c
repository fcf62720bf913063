/*
 * allocator/options.c - tunables: arr_alloc_set_option() and the
 * ALLOCRR_MALLOC_OPTIONS environment variable ("name=value,name=value").
 *
 * Runs before the allocator is usable, so it parses by hand and never
 * allocates. Unknown names and bad values in the environment are ignored,
 * each said in one line on stderr.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "allocrr/alloc.h"
#include "allocrr/error.h"
#include "internal.h"

struct arr__options arr__opt = {
	.purge_delay = 100000,
	.young = ARR__YOUNG_DIV,
	.aged = ARR__AGED_DIV,
	.mmap_threshold = ARR__MAX_SMALL,
	.idle_ratio = 0, /* off: see pool.c idle_budget */
	.span_min = (size_t)8 << 10,
	/* pages' worth of a class's live blocks under which the span heap serves
	 * it: dense earlier, random replacement of 1-3 KB blocks holds each
	 * class's own high-water mark (docs/allocator.md, "Sparse classes") */
	.sparse = 64,
	/* sparse classes while one thread is busy (heap.c's census): with threads working at
	 * once every sparse malloc and free takes the span heap's one lock (docs/allocator.md,
	 * "Sparse classes"; t2 private mixed steady at 2: CPU 19.9 -> 39.9 ms) */
	.sparse_thr = 1,
	.sparse_min = 1024,
	.sparse_cache = 1,
	/* a thread's first slow-path mallocs from the shared heap (heap.c
	 * "Light threads"): java -version's 16 threads of 7-51 calls hold no
	 * heap of their own */
	.light = 64,
	.span_cache = 0, /* off: measured no faster, and more resident (spanheap.c) */
	.span_arenas = 1,
	.span_split = 32,
	.span_lo = (size_t)8 << 10,
	.span_hi = ARR__MAX_SMALL,
	.fast_max = (size_t)8 << 10,
	.refill_max = (size_t)8 << 10,
};

void arr__options_derive(void)
{
	struct arr__options *o = &arr__opt;
	/* not below the sparse classes' top: their span blocks are counted
	 * per class (arr__malloc_slow's sparse_live, lowered by their free) */
	o->span_lo = o->span_min == 0                     ? SIZE_MAX
		     : o->span_min > ARR__SPAN_SPARSE_MAX ? o->span_min
							  : ARR__SPAN_SPARSE_MAX;
	o->span_hi = o->mmap_threshold < ARR__MAX_SMALL ? o->mmap_threshold : ARR__MAX_SMALL;
	o->fast_max = o->span_lo < o->mmap_threshold ? o->span_lo : o->mmap_threshold;
	/* above span_min a request is the span heap's (arr__malloc_slow), above
	 * mmap_threshold a huge block */
	o->refill_max = o->mmap_threshold;
	if (o->span_min != 0 && o->span_min < o->refill_max)
		o->refill_max = o->span_min;
}

int arr_alloc_set_option(const char *name, long long value)
{
	if (name == NULL)
		return ARR_EINVAL;
	if (strcmp(name, "purge_delay") == 0) {
		arr__opt.purge_delay = value < 0 ? -1 : value;
		return 0;
	}
	if (strcmp(name, "young") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.young = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "aged") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.aged = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "mmap_threshold") == 0) {
		if (value < 0)
			return ARR_ERANGE;
		arr__opt.mmap_threshold = (unsigned long long)value > ARR__MAX_SMALL ? ARR__MAX_SMALL : (size_t)value;
		arr__options_derive();
		return 0;
	}
	if (strcmp(name, "idle_ratio") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.idle_ratio = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "span_min") == 0) {
		if (value < 0)
			return ARR_ERANGE;
		arr__opt.span_min = (size_t)value;
		arr__options_derive();
		return 0;
	}
	if (strcmp(name, "sparse") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.sparse = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "sparse_min") == 0) {
		if (value < 1024 || value > (long long)ARR__SPAN_SPARSE_MAX)
			return ARR_ERANGE;
		arr__opt.sparse_min = (size_t)value;
		return 0;
	}
	if (strcmp(name, "sparse_cache") == 0) {
		if (value < 0 || value > 1)
			return ARR_ERANGE;
		arr__opt.sparse_cache = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "sparse_threads") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.sparse_thr = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "light") == 0) {
		if (value < 0 || value > 1000000)
			return ARR_ERANGE;
		arr__opt.light = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "span_arenas") == 0) {
		if (value < 1 || value > ARR__SPAN_ARENAS)
			return ARR_ERANGE;
		arr__opt.span_arenas = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "span_split") == 0) {
		if (value < 0 || value > 1000000000)
			return ARR_ERANGE;
		arr__opt.span_split = (unsigned)value;
		return 0;
	}
	if (strcmp(name, "span_cache") == 0) {
		if (value < 0)
			return ARR_ERANGE;
		arr__opt.span_cache = (size_t)value;
		return 0;
	}
	return ARR_ENOTFOUND;
}

int arr_alloc_get_option(const char *name, long long *value)
{
	if (name == NULL || value == NULL)
		return ARR_EINVAL;
	if (strcmp(name, "purge_delay") == 0)
		*value = arr__opt.purge_delay;
	else if (strcmp(name, "young") == 0)
		*value = arr__opt.young;
	else if (strcmp(name, "aged") == 0)
		*value = arr__opt.aged;
	else if (strcmp(name, "mmap_threshold") == 0)
		*value = (long long)arr__opt.mmap_threshold;
	else if (strcmp(name, "idle_ratio") == 0)
		*value = arr__opt.idle_ratio;
	else if (strcmp(name, "span_min") == 0)
		*value = (long long)arr__opt.span_min;
	else if (strcmp(name, "sparse") == 0)
		*value = arr__opt.sparse;
	else if (strcmp(name, "sparse_min") == 0)
		*value = (long long)arr__opt.sparse_min;
	else if (strcmp(name, "sparse_cache") == 0)
		*value = arr__opt.sparse_cache;
	else if (strcmp(name, "sparse_threads") == 0)
		*value = arr__opt.sparse_thr;
	else if (strcmp(name, "span_cache") == 0)
		*value = (long long)arr__opt.span_cache;
	else if (strcmp(name, "light") == 0)
		*value = arr__opt.light;
	else if (strcmp(name, "span_arenas") == 0)
		*value = arr__opt.span_arenas;
	else if (strcmp(name, "span_split") == 0)
		*value = arr__opt.span_split;

	else
		return ARR_ENOTFOUND;
	return 0;
}

/* One bad item of ALLOCRR_MALLOC_OPTIONS, on stderr in one line (a program
 * run with a typo in it would otherwise not know its setting did nothing):
 * write(2) of a stack buffer, no malloc. Cold: out of the hot text. */
static ARR_COLD void report_bad(const char *spec, const char *item, int rc)
{
	size_t len = strcspn(item, ",");
	const char *why = rc == ARR_ENOTFOUND ? "unknown option"
			  : rc == ARR_ERANGE  ? "value out of range"
					      : "not name=number (k, m, g suffixes allowed)";
	char buf[256];
	int n = snprintf(buf, sizeof buf, "allocrr-malloc: ALLOCRR_MALLOC_OPTIONS at offset %zu: '%.*s': %s; ignored\n",
			 (size_t)(item - spec), (int)(len < 64 ? len : 64), item, why);
	if (n > 0)
		(void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Parse "name=value[,name=value...]" in place without allocating
 * (arr_alloc_parse_options); with report, each bad item on stderr. */
static int parse_options(const char *spec, bool report)
{
	int bad = 0;
	const char *s = spec;
	while (s && *s) {
		const char *item = s;
		int rc = 0;
		char name[32];
		size_t n = 0;
		while (*s && *s != '=' && *s != ',' && n + 1 < sizeof name)
			name[n++] = *s++;
		name[n] = '\0';
		if (*s != '=') {
			rc = ARR_ESYNTAX;
			while (*s && *s != ',')
				s++;
		} else {
			s++;
			char *end;
			long long v = strtoll(s, &end, 0);
			if (end == s) {
				rc = ARR_ESYNTAX;
			} else {
				/* optional k/m/g suffix for byte sizes */
				if (*end == 'k' || *end == 'K')
					v <<= 10, end++;
				else if (*end == 'm' || *end == 'M')
					v <<= 20, end++;
				else if (*end == 'g' || *end == 'G')
					v <<= 30, end++;
				if (*end == '\0' || *end == ',') {
					int r = arr_alloc_set_option(name, v);
					if (r < 0)
						rc = r;
				} else {
					rc = ARR_ESYNTAX;
				}
			}
			s = end;
			while (*s && *s != ',')
				s++;
		}
		if (rc < 0) {
			bad = rc;
			if (report)
				report_bad(spec, item, rc);
		}
		if (*s == ',')
			s++;
	}
	return bad;
}

int arr_alloc_parse_options(const char *spec) { return parse_options(spec, false); }

ARR_HOT void arr__options_from_env(void)
{
	/* (glibc's getenv answers NULL while there is no environment) */
	static ARR_HOT_DATA char name[] = "ALLOCRR_MALLOC_OPTIONS";
	const char *spec = getenv(name);
	if (spec)
		(void)parse_options(spec, true);
}

/*
 * allocator/preload.c - the rest of glibc's malloc API for the drop-in
 * library: tuning and introspection calls, answered from our own state so
 * that no call falls through to glibc's heap.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "allocrr/alloc.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef ARR_ALLOC_NOSTARTFILES
/* Linked without the start files (allocator/CMakeLists.txt: no code runs at
 * load or exit, so a program that never allocates maps none of our text),
 * which define this handle of the shared object; pthread_atfork
 * (libc_nonshared's, heap.c) registers its handlers under it. The ABI's name. */
__attribute__((visibility("hidden"))) void *__dso_handle = &__dso_handle;
#endif

EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	return arr_alloc_purge() > 0;
}

/* Accepted and ignored, except the mmap threshold, which we honour. */
EXPORT int mallopt(int param, int value)
{
	if (param == M_MMAP_THRESHOLD && value >= 0)
		arr_alloc_set_option("mmap_threshold", value);
	return 1;
}

EXPORT struct mallinfo2 mallinfo2(void)
{
	static struct arr_alloc_stats st; /* large; serialised enough for a debugging call */
	struct mallinfo2 mi;
	memset(&mi, 0, sizeof mi);
	arr_alloc_stats_get(&st);
	mi.arena = st.mapped;
	mi.uordblks = st.live_usable;
	mi.fordblks = st.mapped > st.live_usable ? st.mapped - st.live_usable : 0;
	mi.hblks = st.huge_blocks;
	mi.keepcost = 0;
	return mi;
}

EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo mi;
	memset(&mi, 0, sizeof mi);
	mi.arena = (int)m2.arena;
	mi.uordblks = (int)m2.uordblks;
	mi.fordblks = (int)m2.fordblks;
	mi.hblks = (int)m2.hblks;
	return mi;
}

EXPORT void malloc_stats(void)
{
	static struct arr_alloc_stats st;
	char buf[512];
	arr_alloc_stats_get(&st);
	int n = snprintf(buf, sizeof buf,
			 "allocrr malloc:\nsystem bytes     = %10llu\nin use bytes     = %10llu\n"
			 "resident (est.)  = %10llu\nhuge blocks      = %10llu\n",
			 (unsigned long long)st.mapped, (unsigned long long)st.live_usable,
			 (unsigned long long)st.resident, (unsigned long long)st.huge_blocks);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

EXPORT int malloc_info(int options, FILE *fp)
{
	if (options != 0 || fp == NULL)
		return -1;
	static struct arr_alloc_stats st;
	arr_alloc_stats_get(&st);
	fprintf(fp,
		"<malloc version=\"allocrr-1\">\n<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n"
		"<system type=\"current\" size=\"%llu\"/>\n</malloc>\n",
		(unsigned long long)st.huge_blocks, (unsigned long long)st.mapped, (unsigned long long)st.mapped);
	return 0;
}

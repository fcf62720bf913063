/*
 * tests/allocator/fixedcost.c - the built-in allocator's fixed resident cost
 * in a drop-in run (issue 13): a small program, run with liballocrr-malloc.so
 * preloaded, reads its own /proc/self/pagemap and counts
 *   - the library's own writable pages resident (.data and .bss: the
 *     allocator's static tables and globals), and
 *   - the header pages resident of every segment its blocks live in (the
 *     descriptors of a small segment, the tags and nodes of a span segment),
 * after it has used a spread of size classes and the span heap, as a small
 * program does. It fails if either count passes its bound (argv; see
 * tests/allocator/CMakeLists.txt for why those figures), so that a big static
 * table someone touches, or a header touched all over, shows.
 *
 * Usage: LD_PRELOAD=liballocrr-malloc.so test-alloc-fixedcost LIBPAGES SEGPAGES [-v]
 *        LD_PRELOAD=liballocrr-malloc.so test-alloc-fixedcost span SEGPAGES [-v]
 *        LD_PRELOAD=liballocrr-malloc.so test-alloc-fixedcost text TEXTPAGES
 *        LD_PRELOAD=liballocrr-malloc.so test-alloc-fixedcost bins LIBPAGES [-v]
 *        LD_PRELOAD=liballocrr-malloc.so test-alloc-fixedcost spanfill SEGPAGES [-v]
 * The second form makes only a few blocks of 1-8 KiB (a sparse class's, from
 * the span heap: what sed and awk make) and bounds the header pages of their
 * span segment alone (4: the descriptors' two pages, the first of which holds
 * the segment's fields, the second the index of the tag chunks; the first
 * page of tag chunks; the first nodes; internal.h, struct arr__spanseg).
 * The sixth, spanfill, fills a span segment with blocks of 40 000 bytes and
 * frees every other one, and bounds its header pages the same way: the tags
 * of 135 spans in chunks, not in a page of tags for each 256 KiB.
 * The fourth, hottext, makes a small program's calls (small, sparse-class,
 * span and huge blocks, calloc, realloc, free, 1-8 KiB blocks churned as
 * perl reads lines; then pages emptied and given
 * back, heap ticks that trim and purge, a huge block kept, reused and grown
 * in place) and bounds the library's text
 * pages resident then: 16, one fault-around window (the kernel maps 16 pages
 * from the first fault's 64 KiB-aligned window, clipped at the mapping's
 * start), since those calls run only the functions marked ARR_HOT, which the
 * linker lays out first; all 24 before. Both text modes also fail if any
 * page of the read-only segment after the text (.rodata and .eh_frame, 5
 * pages the kernel maps together at the first read of a constant there) is
 * resident: the hot functions' constants live in .data (ARR_HOT_DATA); and
 * if the ELF headers and dynamic tables (the first, read-only segment, which
 * ld.so reads whole in every program) take more than 2 pages.
 * The third, before anything allocates (no stdio, raw system calls only),
 * bounds the library's text pages resident in a program that has not called
 * malloc: 0, since the library runs no code at load (linked without the
 * start files, allocator/CMakeLists.txt); with _init and _fini the kernel's
 * fault-around mapped 17 of its pages.
 * The fifth, bins, frees spans of 64 lengths from 10 KiB to 1 MiB, each
 * kept apart from the next by a block in use (cc1 frees spans of most
 * lengths), and bounds the library's writable pages alone: the span arena's
 * bins of every length written (one list head per length up to 1 MiB was
 * 32 KiB, 8 pages; spanheap.c bin_of).
 * -v prints every resident page (library offset or segment offset), for the
 * measurement (docs/notes/2026-12-02-dropin.md). Exits 77 when the preload is
 * not in effect.
 *
 * A page counts when it is present and either file-backed or mapped by this
 * process alone: a read of untouched .bss or header memory maps the kernel's
 * shared zero page, present in pagemap but not resident memory (smaps' Rss
 * leaves it out too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define PM_PRESENT (1ull << 63)
#define PM_FILE (1ull << 61)
#define PM_EXCLUSIVE (1ull << 56)

static int pagemap_fd = -1;
static int verbose;

static int page_resident(uintptr_t addr)
{
	uint64_t e;
	if (pread(pagemap_fd, &e, sizeof e, (off_t)(addr / ARR__OS_PAGE * sizeof e)) != (ssize_t)sizeof e)
		return 0;
	return (e & PM_PRESENT) && (e & (PM_FILE | PM_EXCLUSIVE));
}

/* resident pages in [lo, hi); with -v, each as WHAT+offset from base */
static unsigned count_range(uintptr_t lo, uintptr_t hi, uintptr_t base, const char *what)
{
	unsigned n = 0;
	for (uintptr_t a = lo; a < hi; a += ARR__OS_PAGE)
		if (page_resident(a)) {
			n++;
			if (verbose)
				printf("  %s+0x%lx\n", what, (unsigned long)(a - base));
		}
	return n;
}

/* Where the library's image ends, from its program headers (mapped with
 * its first page at base): the anonymous mapping after its .data is its
 * .bss only up to there, since the kernel merges an anonymous mapping placed
 * right after it into the same line of /proc/self/maps. */
static const ElfW(Phdr) * phdrs(uintptr_t base, unsigned *n)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	*n = eh->e_phnum;
	return (const ElfW(Phdr) *)(base + eh->e_phoff);
}

static uintptr_t image_end(uintptr_t base)
{
	unsigned nph;
	const ElfW(Phdr) *ph = phdrs(base, &nph);
	uintptr_t end = 0;
	for (unsigned i = 0; i < nph; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > end)
			end = ph[i].p_vaddr + ph[i].p_memsz;
	return base + ((end + ARR__OS_PAGE - 1) & ~(uintptr_t)(ARR__OS_PAGE - 1));
}

/* The library's mappings in /proc/self/maps: text and read-only data
 * (file pages), and the writable ones: its .data (file-backed, private) and
 * the anonymous mapping right after it, its .bss, up to the image's end. */
static void count_library(const char *lib, unsigned *ro, unsigned *rw)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uintptr_t base = 0, prev_end = 0;
	int prev_lib_rw = 0;
	*ro = *rw = 0;
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char perms[8], path[4096] = "";
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &lo, &hi, perms, &off, path) < 4)
			continue;
		char *p = path;
		while (*p == ' ')
			p++;
		int is_lib = strcmp(p, lib) == 0;
		if (is_lib && base == 0)
			base = lo;
		if (is_lib && perms[1] == 'w') {
			*rw += count_range(lo, hi, base, "lib");
		} else if (is_lib) {
			*ro += count_range(lo, hi, base, "lib(ro)");
		} else if (prev_lib_rw && *p == 0 && lo == prev_end && perms[1] == 'w') {
			uintptr_t end = image_end(base);
			if (lo < end)
				*rw += count_range(lo, hi < end ? hi : end, base, "lib");
		}
		prev_lib_rw = is_lib && perms[1] == 'w';
		prev_end = hi;
	}
	fclose(f);
}

#define MAXSEG 64
static uintptr_t segs[MAXSEG];
static unsigned nsegs;

static void note_segment(const void *p)
{
	uintptr_t s = (uintptr_t)p & ~(uintptr_t)(ARR__SEG_SIZE - 1);
	for (unsigned i = 0; i < nsegs; i++)
		if (segs[i] == s)
			return;
	if (nsegs < MAXSEG)
		segs[nsegs++] = s;
}

/* A small program's spread of requests: a few blocks of many classes (the
 * small ones, the 1-16 KiB ones, some span-heap sizes), strings, a growing
 * buffer, a calloc'ed table, then half of it freed. */
#define NBLK 600
static void *blk[NBLK];

static void workload(void)
{
	unsigned n = 0;
	for (size_t size = 8; size <= 64 << 10 && n < NBLK; size += size / 4 + 8)
		for (int k = 0; k < 4 && n < NBLK; k++) {
			blk[n] = malloc(size);
			memset(blk[n], 0x5a, size < 64 ? size : 64);
			n++;
		}
	char *buf = NULL;
	for (size_t len = 16; len <= 100000; len *= 2) {
		buf = realloc(buf, len);
		memset(buf, 'x', len);
	}
	if (n < NBLK)
		blk[n++] = buf;
	if (n < NBLK)
		blk[n++] = calloc(1000, 24);
	for (unsigned i = 0; i < n; i += 2) {
		free(blk[i]);
		blk[i] = NULL;
	}
	for (unsigned i = 0; i < n; i++)
		if (blk[i])
			note_segment(blk[i]);
}

/* Resident pages of the preloaded library's executable mapping, read with
 * raw system calls into static buffers: nothing here may call malloc. -1 if
 * the library is not mapped. */
static char maps_buf[1 << 16];

static int rodata_pages = -1, header_pages = -1; /* text_pages_resident()'s other counts */

/* Resident pages of the library's read-only segments, from its program
 * headers (base: its first page): the one after its text (.rodata,
 * .eh_frame: one mapping the kernel's fault-around maps whole at the first
 * read of any of it) and the first (the ELF headers and the dynamic tables
 * ld.so reads). */
static void count_readonly(uintptr_t base)
{
	unsigned nph;
	const ElfW(Phdr) *ph = phdrs(base, &nph);
	rodata_pages = 0;
	for (unsigned i = 0; i < nph; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_flags != PF_R)
			continue;
		uintptr_t lo = base + (ph[i].p_vaddr & ~(uintptr_t)(ARR__OS_PAGE - 1)),
			  hi = base + ph[i].p_vaddr + ph[i].p_memsz;
		if (ph[i].p_offset == 0)
			header_pages = (int)count_range(lo, hi, base, "headers");
		else
			rodata_pages += (int)count_range(lo, hi, base, "rodata");
	}
}

static int text_pages_resident(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t k;
	while (n < sizeof maps_buf - 1 && (k = read(fd, maps_buf + n, sizeof maps_buf - 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	maps_buf[n] = 0;
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap_fd < 0)
		return -1;
	int pages = -1;
	uintptr_t base = 0;
	for (char *l = maps_buf; *l;) {
		char *e = strchr(l, '\n');
		if (e == NULL)
			break;
		*e = 0;
		if (strstr(l, "liballocrr") && base == 0)
			base = (uintptr_t)strtoul(l, NULL, 16);
		if (strstr(l, "liballocrr") && strstr(l, " r-xp ")) {
			uintptr_t lo = (uintptr_t)strtoul(l, NULL, 16),
				  hi = (uintptr_t)strtoul(strchr(l, '-') + 1, NULL, 16);
			pages = (int)count_range(lo, hi, lo, "text");
		}
		l = e + 1;
	}
	if (base != 0)
		count_readonly(base);
	return pages;
}

/* A few blocks of sparse classes, as sed makes: the span heap's top units. */
static void *few[4];

static void workload_span(void)
{
	static const size_t sizes[4] = {4096, 4096, 2048, 8192};
	for (int i = 0; i < 4; i++) {
		few[i] = malloc(sizes[i]);
		memset(few[i], 0x5a, sizes[i]);
		note_segment(few[i]);
	}
}

/* A span segment filled with 90 blocks of 40 000 bytes, every other one
 * freed: 135 spans whose ends lie in every 256 KiB of the segment. Their
 * tags take a chunk of 64 bytes per OS page where one ends, not a page per
 * 256 KiB (internal.h struct arr__spanseg). Each block's first byte
 * written only. */
#define NFILL 90
static void *fill[NFILL];

static void workload_spanfill(void)
{
	for (int i = 0; i < NFILL; i++) {
		fill[i] = malloc(40000);
		*(volatile char *)fill[i] = 1;
	}
	for (int i = 0; i < NFILL; i += 2)
		free(fill[i]);
	for (int i = 1; i < NFILL; i += 2)
		note_segment(fill[i]);
}

/* Free spans of 64 lengths from 40 units (10 KiB) to 1 MiB, kept apart by
 * blocks in use: the span arena's bins of all of them written (a program
 * such as cc1 frees spans of most lengths). The blocks are never written:
 * their data stays absent. */
#define NBINLEN 64
static void *binhole[NBINLEN], *binguard[NBINLEN];

static void workload_bins(void)
{
	for (int i = 0; i < NBINLEN; i++) {
		binhole[i] = malloc((size_t)(40 + 64 * i) << ARR__SP_UNIT_SHIFT);
		binguard[i] = malloc(9000);
	}
	for (int i = 0; i < NBINLEN; i++)
		free(binhole[i]);
}

/* The text/hottext modes' verdict on `pages` text pages (-1: not preloaded)
 * against the bound `bound`, and on rodata_pages (none): the exit status. */
static int text_verdict(int pages, const char *bound, const char *when, const char *fail)
{
	if (pages < 0) {
		printf("skip: liballocrr is not preloaded\n");
		return 77;
	}
	printf("library text: %d pages resident %s (bound %s); read-only data after it: %d; headers: %d\n", pages, when,
	       bound, rodata_pages, header_pages);
	if (pages > atoi(bound)) {
		printf("FAIL: %s\n", fail);
		return 1;
	}
	if (header_pages > 2) {
		printf("FAIL: the library's ELF headers and dynamic tables (symbols, relocations) take %d pages, "
		       "all read by ld.so in every program: an import or export more than 2 pages hold\n",
		       header_pages);
		return 1;
	}
	if (rodata_pages != 0) {
		printf("FAIL: the library's .rodata segment is mapped %s: a hot function reads a constant there "
		       "(ARR_HOT_DATA, allocator/internal.h)\n",
		       when);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
			"usage: test-alloc-fixedcost LIBPAGES SEGPAGES [-v] | span SEGPAGES | bins LIBPAGES | text N | hottext N\n");
		return 2;
	}
	if (strcmp(argv[1], "text") == 0) /* first: before stdio allocates */
		return text_verdict(text_pages_resident(), argv[2], "before any malloc",
				    "the library's text is mapped in a program that has not allocated");
	if (strcmp(argv[1], "hottext") == 0) {
		/* a small program's calls: small and sparse-class blocks, span
		 * blocks, a huge one, calloc, realloc growing, frees (no stdio
		 * before the count: it would allocate through other paths) */
		static void *v[64];
		for (int i = 0; i < 64; i++)
			v[i] = malloc(i % 4 == 0 ? 24 : i % 4 == 1 ? 3000 : i % 4 == 2 ? 20000 : 100);
		void *c = calloc(10, 100), *h = malloc(3u << 20), *r = malloc(100);
		for (size_t n = 200; n < 200000; n *= 2)
			r = realloc(r, n);
		for (int i = 0; i < 64; i += 2)
			free(v[i]);
		free(c);
		free(h);
		free(r);
		/* and what a longer run does (sqlite3.atr, cc1, python3: each of
		 * these ran one function outside the window, and the kernel mapped
		 * the other 8 text pages, +32 KB of peak): a class's second page
		 * emptied while another is current (arr__page_emptied, the page
		 * back to the pool), heap ticks that trim an idle current page
		 * (arr__pool_purge_range) and purge what has expired, a huge block
		 * freed and kept, then reused and grown in place (mremap) */
		static void *w[2048];
		for (int i = 0; i < 2048; i++)
			w[i] = malloc(64);
		for (int i = 0; i < 2048; i++)
			free(w[i]);
		void *big = malloc(5u << 20);
		free(big);
		big = malloc(5u << 20);
		big = realloc(big, 7u << 20);
		free(big);
		/* 1-8 KiB blocks churned two at a time, each a little shorter,
		 * as perl reads lines (the sparse block cache: a block kept,
		 * taken back, given back by another length and by a realloc in
		 * place; the ticks below give back the last) */
		void *a = malloc(6000);
		for (size_t i = 0; i < 3000; i++) {
			void *b = malloc(6000 - i);
			free(a);
			a = b;
		}
		void *g = malloc(2000);
		free(a);
		free(realloc(g, 2600));
		free(malloc(5000));
		for (int i = 0; i < 300000; i++)
			free(malloc(40));
		return text_verdict(text_pages_resident(), argv[2], "after a small program's calls",
				    "a small program's calls ran code outside the text's first fault-around window");
	}
	bool spanfill = strcmp(argv[1], "spanfill") == 0;
	bool span_only = spanfill || strcmp(argv[1], "span") == 0, bins = strcmp(argv[1], "bins") == 0;
	unsigned max_lib = span_only ? ~0u : bins ? (unsigned)atoi(argv[2]) : (unsigned)atoi(argv[1]);
	unsigned max_seg = bins ? ~0u : (unsigned)atoi(argv[2]);
	verbose = argc > 3 && strcmp(argv[3], "-v") == 0;

	Dl_info di;
	if (!dladdr((void *)malloc, &di) || di.dli_fname == NULL || strstr(di.dli_fname, "liballocrr") == NULL) {
		printf("skip: malloc is not liballocrr's (%s): run with LD_PRELOAD\n",
		       di.dli_fname ? di.dli_fname : "?");
		return 77;
	}
	char lib[4096];
	if (realpath(di.dli_fname, lib) == NULL)
		snprintf(lib, sizeof lib, "%s", di.dli_fname);

	if (spanfill)
		workload_spanfill();
	else if (span_only)
		workload_span();
	else if (bins)
		workload_bins();
	else
		workload();

	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap_fd < 0) {
		perror("fixedcost: cannot open '/proc/self/pagemap'");
		return 1;
	}
	unsigned ro, rw;
	count_library(lib, &ro, &rw);

	unsigned seg_hdr = 0, seg_data = 0, kinds[3] = {0, 0, 0};
	for (unsigned i = 0; i < nsegs; i++) {
		uintptr_t s = segs[i];
		uint32_t kind = ((const struct arr__segment *)s)->kind;
		size_t hdr;
		const char *what;
		if (kind == 0) {
			hdr = ARR__SLICE_SIZE; /* the header slice */
			what = "small";
		} else if (kind == 2) {
			hdr = ARR__SP_FIRST_UNIT * ARR__SP_UNIT;
			what = "span";
		} else {
			continue; /* a huge block's one-page header: its own mapping */
		}
		if (span_only && kind != 2)
			continue;
		kinds[kind]++;
		if (verbose)
			printf("segment %u (%s) at %#lx:\n", i, what, (unsigned long)s);
		seg_hdr += count_range(s, s + hdr, s, "hdr");
		if (verbose) {
			unsigned d = 0;
			int saved = verbose;
			verbose = 0;
			d = count_range(s + hdr, s + ARR__SEG_SIZE, s, "data");
			verbose = saved;
			printf("  data pages resident: %u\n", d);
			seg_data += d;
		}
	}
	printf("library %s: %u writable pages resident (.data/.bss, bound %u), %u text/ro pages\n", lib, rw, max_lib,
	       ro);
	printf("segments: %u small, %u span: %u header pages resident (bound %u)", kinds[0], kinds[2], seg_hdr,
	       max_seg);
	if (verbose)
		printf(", %u data pages", seg_data);
	printf("\n");
	int fail = 0;
	if (rw > max_lib) {
		printf("FAIL: the library's static data holds %u resident pages, more than %u\n", rw, max_lib);
		fail = 1;
	}
	if (seg_hdr > max_seg) {
		printf("FAIL: segment headers hold %u resident pages, more than %u\n", seg_hdr, max_seg);
		fail = 1;
	}
	return fail;
}

/*
 * tests/allocator/hardening.c - misuse the allocator is built to refuse:
 * double frees, a word written into a freed block (safe-linking), and frees
 * of pointers that are not blocks of ours (stack, another allocator's,
 * interior, huge interior, a segment's start). Each case runs in a child
 * that must die of SIGABRT with the allocator's message on stderr; the same
 * case with the misuse left out must exit cleanly.
 *
 * usage: test-alloc-hardening default|full. "default" runs the cases the
 * default hardening (ARR_ALLOC_HARDEN 3) refuses; "full" (linked with
 * arr_alloc_hardfull, ARR_ALLOC_HARDEN 15) also those that need the fast
 * path's block-grid and double-free tests: an interior or uncarved pointer,
 * a double free of a block no longer at the head of its free list.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"

/* Exit codes of a child that was not stopped. */
#define RETURNED_ARBITRARY 3
#define SAME_TWICE 4

static void *must(void *p)
{
	if (p == NULL)
		_exit(2);
	return p;
}

static void double_free(bool misuse)
{
	void *p = must(arr_malloc(64));
	arr_free(p);
	if (misuse)
		arr_free(p);
	/* unchecked, the next two mallocs would return p twice */
	void *a = must(arr_malloc(64)), *b = must(arr_malloc(64));
	if (a == b)
		_exit(SAME_TWICE);
}

static void double_free_deep(bool misuse)
{
	/* p not at the head of the free list any more when freed again, and
	 * the page not empty (s lives) */
	void *p = must(arr_malloc(72)), *q = must(arr_malloc(72)), *r = must(arr_malloc(72));
	must(arr_malloc(72));
	arr_free(p);
	arr_free(q);
	arr_free(r);
	if (misuse)
		arr_free(p);
}

static void double_free_huge(bool misuse)
{
	void *p = must(arr_malloc(3 << 20)); /* kept in the huge cache when freed */
	arr_free(p);
	if (misuse)
		arr_free(p);
}

static void double_free_sized(bool misuse)
{
	void *p = must(arr_malloc(200));
	arr_free_sized(p, 200);
	if (misuse)
		arr_free_sized(p, 200);
}

static uintptr_t target[64];

static void write_after_free(bool misuse)
{
	void *p = must(arr_malloc(48));
	must(arr_malloc(48));
	arr_free(p);
	if (misuse) /* a use after free stores an address into the freed block */
		*(uintptr_t *)p = (uintptr_t)&target[8];
	void *a = must(arr_malloc(48));
	void *b = must(arr_malloc(48));
	if ((uintptr_t)a - (uintptr_t)target < sizeof target || (uintptr_t)b - (uintptr_t)target < sizeof target)
		_exit(RETURNED_ARBITRARY);
}

static void write_zero_after_free(bool misuse)
{
	void *p = must(arr_malloc(256));
	must(arr_malloc(256));
	arr_free(p);
	if (misuse)
		memset(p, 0, 16); /* the link word cleared */
	for (int i = 0; i < 4; i++)
		must(arr_malloc(256));
}

static void stack_free(bool misuse)
{
	char buf[64];
	void *p = must(arr_malloc(64));
	arr_free(misuse ? (void *)buf : p);
}

static void foreign_free(bool misuse)
{
	void *g = malloc(100); /* libc's: not ours */
	void *p = must(arr_malloc(100));
	arr_free(misuse ? g : p);
	free(g);
}

static void mmap_free(bool misuse)
{
	void *m = mmap(NULL, 1 << 22, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *p = must(arr_malloc(100));
	arr_free(misuse ? (char *)m + 64 : p);
}

static void interior_free(bool misuse)
{
	char *p = must(arr_malloc(100));
	arr_free(misuse ? p + 16 : p);
}

static void uncarved_free(bool misuse)
{
	/* block-aligned, in our page, but never handed out */
	char *p = must(arr_malloc(20000));
	arr_free(misuse ? p + 2 * 20480 : p);
}

static void huge_interior_free(bool misuse)
{
	char *p = must(arr_malloc(6 << 20));
	arr_free(misuse ? p + 8192 : p);
}

/* Blocks of the span heap (above span_min, 16 KiB and up here) */
static void double_free_span(bool misuse)
{
	void *p = must(arr_malloc(40000)), *q = must(arr_malloc(40000));
	arr_free(p);
	if (misuse)
		arr_free(p);
	arr_free(q);
}

/* the second free finds p inside the free span it merged into */
static void double_free_span_merged(bool misuse)
{
	void *a = must(arr_malloc(40000)), *p = must(arr_malloc(40000)), *q = must(arr_malloc(40000));
	arr_free(a);
	arr_free(p);
	if (misuse)
		arr_free(p);
	arr_free(q);
}

static void span_interior_free(bool misuse)
{
	char *p = must(arr_malloc(40000));
	arr_free(misuse ? p + 1024 : p);
}

/* The start of one of our segments (a small one, a span-heap one, a huge
 * block's) is no block: free's segment-map test lets it through to the
 * descriptor, which refuses it (only blocks aligned to a segment or more,
 * mapped apart, start on a segment boundary; one is freed too). */
static void segment_start_free(bool misuse)
{
	char *p = must(arr_malloc(100)), *s = must(arr_malloc(40000)), *h = must(arr_malloc(6 << 20));
	char *big = must(arr_memalign((size_t)8 << 20, 100));
	uintptr_t m = ~(uintptr_t)((4u << 20) - 1);
	arr_free(big);
	if (misuse) {
		arr_free((void *)((uintptr_t)p & m));
		arr_free((void *)((uintptr_t)s & m));
		arr_free((void *)((uintptr_t)h & m));
	}
	arr_free(p);
	arr_free(s);
	arr_free(h);
}

static void span_segment_start_free(bool misuse)
{
	char *s = must(arr_malloc(40000));
	if (misuse)
		arr_free((void *)((uintptr_t)s & ~(uintptr_t)((4u << 20) - 1)));
	arr_free(s);
}

static void huge_segment_start_free(bool misuse)
{
	char *h = must(arr_malloc(6 << 20));
	if (misuse)
		arr_free((void *)((uintptr_t)h & ~(uintptr_t)((4u << 20) - 1)));
	arr_free(h);
}

/* realloc of a huge block's inside, and of its segment's start (where its
 * header is): refused, not resized as if it were the block */
static void realloc_huge_interior(bool misuse)
{
	char *h = must(arr_malloc(6 << 20));
	h = must(arr_realloc(misuse ? h + 8192 : h, 7 << 20));
	arr_free(h);
}

static void realloc_huge_segment_start(bool misuse)
{
	char *h = must(arr_malloc(6 << 20));
	if (misuse)
		h = (char *)((uintptr_t)h & ~(uintptr_t)((4u << 20) - 1));
	h = must(arr_realloc(h, 7 << 20));
	arr_free(h);
}

static void realloc_stack(bool misuse)
{
	char buf[32];
	void *p = must(arr_malloc(32));
	p = arr_realloc(misuse ? (void *)buf : p, 64);
	arr_free(p);
}

/* realloc of a span block freed (its tags free), of one's inside, and of a
 * block freed into the thread's sparse cache (its tags still in use, its
 * last marked cached), each to a size realloc's one look at the tags
 * serves (arr__span_realloc_look: within the block's last units, or
 * above it): refused, not resized */
static void realloc_span_freed(bool misuse)
{
	char *p = must(arr_malloc(20000)), *guard = must(arr_malloc(20000));
	if (misuse)
		arr_free(p);
	p = must(arr_realloc(p, 20001));
	arr_free(p);
	arr_free(guard);
}

static void realloc_span_interior(bool misuse)
{
	char *p = must(arr_malloc(20000));
	p = must(arr_realloc(misuse ? p + 256 : p, 20001));
	arr_free(p);
}

static void realloc_span_cached(bool misuse)
{
	char *p = must(arr_malloc(5000)), *guard = must(arr_malloc(5000));
	if (misuse)
		arr_free(p);
	p = must(arr_realloc(p, 9000));
	arr_free(p);
	arr_free(guard);
}

struct tcase {
	const char *name;
	void (*run)(bool misuse);
	const char *expect;
	bool full_only;
};

static const struct tcase cases[] = {
	{"double free", double_free, "free(): double free", false},
	{"double free, not head", double_free_deep, "free(): double free", true},
	{"double free, huge", double_free_huge, "free(): invalid pointer", false},
	{"double free_sized", double_free_sized, "free(): double free", false},
	{"write after free", write_after_free, "corrupted free list", false},
	{"zero after free", write_zero_after_free, "corrupted free list", false},
	{"stack free", stack_free, "free(): invalid pointer", false},
	{"libc block free", foreign_free, "free(): invalid pointer", false},
	{"mmap free", mmap_free, "free(): invalid pointer", false},
	{"interior free", interior_free, "not the start of a block", true},
	{"uncarved free", uncarved_free, "free(): invalid pointer", true},
	{"huge interior free", huge_interior_free, "inside a huge block", false},
	{"realloc of stack", realloc_stack, "realloc(): invalid pointer", false},
	{"realloc huge interior", realloc_huge_interior, "realloc(): invalid pointer (inside a huge", false},
	{"realloc huge seg start", realloc_huge_segment_start, "realloc(): invalid pointer (inside a huge", false},
	{"realloc freed span block", realloc_span_freed, "realloc(): invalid pointer", false},
	{"realloc span interior", realloc_span_interior, "realloc(): invalid pointer", false},
	{"realloc cached span block", realloc_span_cached, "realloc(): invalid pointer", false},
	{"segment start free", segment_start_free, "no block in use there", false},
	{"span segment start", span_segment_start_free, "no span block in use there", false},
	{"huge segment start", huge_segment_start_free, "inside a huge block", false},
	{"double free, span", double_free_span, "no span block in use there", false},
	{"double free, span merged", double_free_span_merged, "no span block in use there", false},
	{"span interior free", span_interior_free, "no span block in use there", false},
};

static int run_child(const struct tcase *c, bool misuse, char *err, size_t errsz)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		c->run(misuse);
		_exit(0);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < errsz && (r = read(fd[0], err + n, errsz - 1 - n)) > 0)
		n += (size_t)r;
	err[n] = '\0';
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

int main(int argc, char **argv)
{
	static char err[4096];
	int failures = 0;
	if (argc != 2 || (strcmp(argv[1], "default") != 0 && strcmp(argv[1], "full") != 0)) {
		fprintf(stderr, "usage: test-alloc-hardening default|full\n");
		return 2;
	}
	bool full = strcmp(argv[1], "full") == 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct tcase *c = &cases[i];
		if (c->full_only && !full) {
			printf("skip %-22s (needs ARR_ALLOC_HARDEN 15)\n", c->name);
			continue;
		}
		int st = run_child(c, false, err, sizeof err);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "FAIL %s: the correct use fails (status %#x): %s\n", c->name, st, err);
			failures++;
			continue;
		}
		st = run_child(c, true, err, sizeof err);
		if (WIFEXITED(st) && WEXITSTATUS(st) == RETURNED_ARBITRARY)
			fprintf(stderr, "FAIL %s: malloc returned the address written into a freed block\n", c->name);
		else if (WIFEXITED(st) && WEXITSTATUS(st) == SAME_TWICE)
			fprintf(stderr, "FAIL %s: two mallocs returned the same block\n", c->name);
		else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
			fprintf(stderr, "FAIL %s: not refused (status %#x): %s\n", c->name, st, err);
		else if (strncmp(err, "allocrr malloc: ", 16) != 0 || strstr(err, c->expect) == NULL)
			fprintf(stderr, "FAIL %s: aborted, but stderr lacks \"%s\": %s\n", c->name, c->expect, err);
		else {
			printf("ok   %-22s %s", c->name, err);
			continue;
		}
		failures++;
	}
	if (failures)
		fprintf(stderr, "%d of %zu cases failed\n", failures, sizeof cases / sizeof cases[0]);
	return failures != 0;
}

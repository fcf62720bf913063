/*
 * allocator/check.c - failure reports and the page invariants.
 *
 * arr__assert_fail and arr__fatal are what a failed invariant or a detected
 * misuse ends in: a message on fd 2 written with write(2), then abort().
 * Nothing here may allocate (we are malloc), so messages are put together in
 * a buffer on the stack by hand.
 *
 * arr__page_is_valid checks the formulas written beside struct arr__page in
 * internal.h. It walks the page's lists, so it is O(capacity): ARR_DEBUG 2
 * calls it where the page-finding heuristics change a page's state (heap.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

struct msg {
	char buf[512];
	size_t n;
};

static void put(struct msg *m, const char *s)
{
	for (; *s && m->n < sizeof m->buf - 1; s++)
		m->buf[m->n++] = *s;
}

static ARR_COLD void put_uint(struct msg *m, unsigned long long v, unsigned base)
{
	char tmp[24];
	int k = 0;
	do {
		tmp[k++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && k < (int)sizeof tmp);
	if (base == 16)
		put(m, "0x");
	while (k > 0 && m->n < sizeof m->buf - 1)
		m->buf[m->n++] = tmp[--k];
}

static ARR_COLD __attribute__((noreturn)) void emit_and_abort(struct msg *m)
{
	put(m, "\n");
	for (size_t off = 0; off < m->n;) {
		ssize_t w = write(STDERR_FILENO, m->buf + off, m->n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	abort();
}

ARR_COLD void arr__assert_fail(const char *file, int line, const char *cond)
{
	struct msg m = {.n = 0};
	put(&m, "allocrr malloc: ");
	put(&m, file);
	put(&m, ":");
	put_uint(&m, (unsigned long long)line, 10);
	put(&m, ": assertion failed: ");
	put(&m, cond);
	emit_and_abort(&m);
}

ARR_COLD void arr__fatal(const char *what, const void *p)
{
	struct msg m = {.n = 0};
	put(&m, "allocrr malloc: ");
	put(&m, what);
	put(&m, ": ");
	put_uint(&m, (unsigned long long)(uintptr_t)p, 16);
	emit_and_abort(&m);
}

/* Largest capacity of a span (8192 blocks of 8 bytes in 64 KiB). */
#define MAX_BLOCKS (ARR__SLICE_SIZE / 8)

/* Mark the blocks of one list in `seen`; returns the count. Every block must
 * be a carved block of the page, not on another list, not in a hole. */
static uint32_t list_mark(const struct arr__page *page, const struct arr__block *b, uint64_t *seen)
{
	uint32_t n = 0;
	size_t carved = (size_t)page->capacity * page->block_size;
	for (; b; b = arr__block_next(b)) {
		size_t off = (size_t)((const uint8_t *)b - page->start);
		ARR__CHECK((const uint8_t *)b >= page->start && off < carved);
		ARR__CHECK(off % page->block_size == 0);
		size_t i = off / page->block_size;
		ARR__CHECK(!(seen[i / 64] >> (i % 64) & 1)); /* on one list, once */
		ARR__CHECK(off / ARR__OS_PAGE >= 16 || !(page->holes >> (off / ARR__OS_PAGE) & 1));
		seen[i / 64] |= (uint64_t)1 << (i % 64);
		ARR__CHECK(++n <= page->capacity);
	}
	return n;
}

static void huge_is_valid(const struct arr__page *page)
{
	struct arr__segment *seg = arr__segment_of(page->start);
	size_t off = (size_t)(page->start - (uint8_t *)seg);
	ARR__CHECK(page == &seg->pages[0]);
	ARR__CHECK(seg->kind == 1);
	ARR__CHECK(page->heap == NULL && page->cls == ARR__NCLASSES && page->flags == ARR__PF_HUGE);
	ARR__CHECK(off >= sizeof(struct arr__page) && off < page->huge_map);
	ARR__CHECK(page->huge_req <= page->huge_map - off);
	ARR__CHECK(page->huge_map % ARR__OS_PAGE == 0);
}

bool arr__page_is_valid(const struct arr__page *page)
{
	if (page->flags & ARR__PF_HUGE) {
		huge_is_valid(page);
		return true;
	}
	struct arr__segment *seg = arr__segment_of(page);
	size_t idx = (size_t)(page - seg->pages);
	/* span bookkeeping */
	ARR__CHECK(seg->kind == 0);
	ARR__CHECK(idx >= 1 && idx < ARR__SLICES);
	ARR__CHECK(page->slices >= 1 && idx + page->slices <= ARR__SLICES);
	ARR__CHECK(page->trimmed <= 2); /* 0, trimmed as it emptied, barred from that */
	ARR__CHECK(page->start == (uint8_t *)seg + idx * ARR__SLICE_SIZE);
	for (unsigned k = 0; k < page->slices; k++)
		ARR__CHECK(seg->pages[idx + k].head_off == ARR__HEAD_OFF(k));
	uint64_t span = (((uint64_t)1 << page->slices) - 1) << idx;
	ARR__CHECK((__atomic_load_n(&seg->free_mask, __ATOMIC_RELAXED) & span) == 0);
	/* class */
	ARR__CHECK(page->cls >= 1 && page->cls < ARR__NCLASSES);
	ARR__CHECK(page->block_size == arr__class_size[page->cls]);
	ARR__CHECK(page->reserved == (size_t)page->slices * ARR__SLICE_SIZE / page->block_size);
	ARR__CHECK(page->capacity <= page->reserved);
	ARR__CHECK((size_t)page->zero_from * ARR__OS_PAGE <= (size_t)page->slices * ARR__SLICE_SIZE);
	ARR__CHECK(page->holes == 0 || page->slices == 1);
	ARR__CHECK(page->heap != NULL);
	/* block counts: used + |free| + |local_free| + holed == capacity */
	uint64_t seen[MAX_BLOCKS / 64];
	memset(seen, 0, ((page->capacity + 63u) / 64u) * sizeof seen[0]);
	uint32_t nfree = list_mark(page, page->free, seen);
	uint32_t nlocal = list_mark(page, page->local_free, seen);
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_acquire);
	uint32_t nthread = list_mark(page, (const struct arr__block *)(tf & ~ARR__TF_MASK), seen);
	uint32_t holed = arr__page_holed(page);
	ARR__CHECK(nthread <= page->used);
	ARR__CHECK(page->used + nfree + nlocal + holed == page->capacity);
	/* thread_free state */
	uintptr_t state = tf & ARR__TF_MASK;
	if (page->heap->state == ARR__HEAP_ABANDONED)
		ARR__CHECK(state == ARR__TF_NEVER);
	else if (page->flags & ARR__PF_FULL)
		ARR__CHECK(state != ARR__TF_NEVER);
	else
		ARR__CHECK(state == ARR__TF_NORMAL);
	/* known zero: the first few blocks, within the OS page the carve wrote
	 * their link into (reading further would fault pages in) */
	if (page->free_is_zero) {
		unsigned k = 0;
		for (const struct arr__block *b = page->free; b && k < 4; b = arr__block_next(b), k++) {
			const uint8_t *q = (const uint8_t *)b;
			size_t lim = ARR__OS_PAGE - ((uintptr_t)q & (ARR__OS_PAGE - 1));
			if (lim > page->block_size)
				lim = page->block_size;
			if (lim > 64)
				lim = 64;
			for (size_t j = sizeof(struct arr__block); j < lim; j++)
				ARR__CHECK(q[j] == 0);
		}
	}
	return true;
}

bool arr__heap_direct_is_valid(const struct arr__heap *h)
{
	for (unsigned i = 0; i < ARR__HEAP_DIRECT_N; i++)
		ARR__CHECK(h->direct[i] == h->pages[arr__class_tab[i]]);
	return true;
}

/*
 * lifo.c - libarr-lifo.so, the floor of a replay's time: the least work a
 * thread-safe malloc can do. Each thread keeps a LIFO free list per size
 * class (16-byte steps up to 1 KiB, then 8 classes per doubling) and carves
 * new blocks from 1 MiB chunks of its own; a free pushes the block on the
 * freeing thread's list of its class, with no lock and no atomic (the
 * replay orders a cross-thread free after its malloc, and a list is only
 * ever touched by its thread). Nothing goes back to the OS, nothing
 * coalesces, blocks keep a 16-byte header with their class: what is left of
 * a replay's time into this is the engine's and the page faults' of the
 * working set, so an allocator's time over this floor is its own work.
 * Not a general allocator: memory freed by one thread is reused by that
 * thread only.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define NCLS 160 /* 64 up to 1 KiB, 8 per doubling to 4 MiB; larger ones are mapped */
#define CHUNK ((size_t)1 << 20)
#define HDR 16

struct node {
	struct node *next;
};

/* initial-exec: a preloaded library's TLS without a __tls_get_addr call */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS struct node *lists[NCLS];
static TLS uint8_t *cur, *lim;
static TLS int fresh; /* the last malloc carved new memory (zero: calloc need not clear it) */

/* the class of n and its block size (header excluded) */
static unsigned cls_of(size_t n, size_t *bs)
{
	if (n <= 1024) {
		unsigned c = (unsigned)((n + 15) / 16);
		*bs = (size_t)(c ? c : 1) * 16;
		return c ? c - 1 : 0; /* 0..63 */
	}
	unsigned lg = 63u - (unsigned)__builtin_clzll(n - 1); /* 2^lg < n <= 2^(lg+1) */
	size_t step = ((size_t)1 << lg) / 8;
	size_t k = (n - ((size_t)1 << lg) + step - 1) / step; /* 1..8 */
	*bs = ((size_t)1 << lg) + k * step;
	return 64 + (lg - 10) * 8 + (unsigned)(k - 1);
}

static void *big(size_t n)
{
	fresh = 1;
	size_t len = (n + HDR + 4095) & ~(size_t)4095;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	((size_t *)p)[0] = NCLS;
	((size_t *)p)[1] = len - HDR;
	return p + HDR;
}

void *malloc(size_t n)
{
	size_t bs;
	if (n > ((size_t)1 << 22))
		return big(n);
	unsigned c = cls_of(n, &bs);
	struct node *b = lists[c];
	if (b) {
		lists[c] = b->next;
		fresh = 0;
		return b;
	}
	fresh = 1;
	if (cur == NULL || (size_t)(lim - cur) < bs + HDR) {
		/* a chunk of at least the block (blocks of up to 4 MiB) */
		size_t len = bs + HDR > CHUNK ? (bs + HDR + 4095) & ~(size_t)4095 : CHUNK;
		uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			errno = ENOMEM;
			return NULL;
		}
		cur = p;
		lim = p + len;
	}
	uint8_t *p = cur;
	cur += bs + HDR;
	((size_t *)p)[0] = c;
	((size_t *)p)[1] = bs;
	return p + HDR;
}

void free(void *p)
{
	if (p == NULL)
		return;
	size_t *h = (size_t *)((uint8_t *)p - HDR);
	if (h[0] >= NCLS) {
		if (h[0] == NCLS)
			munmap(h, h[1] + HDR);
		return;
	}
	struct node *b = p;
	b->next = lists[h[0]];
	lists[h[0]] = b;
}

size_t malloc_usable_size(void *p) { return p ? ((size_t *)((uint8_t *)p - HDR))[1] : 0; }

void *calloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = malloc(b);
	if (p && !fresh)
		memset(p, 0, b);
	return p;
}

void *realloc(void *p, size_t n)
{
	if (p == NULL)
		return malloc(n);
	size_t have = malloc_usable_size(p);
	if (n <= have)
		return p;
	void *q = malloc(n);
	if (q) {
		memcpy(q, p, have);
		free(p);
	}
	return q;
}

void *reallocarray(void *p, size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, b);
}

/* aligned requests: over-allocate and keep the class header before the
 * aligned address, so free() finds it (the block before it is lost: a floor,
 * not a general allocator) */
static void *aligned(size_t a, size_t n)
{
	if (a <= 16)
		return malloc(n);
	if (a & (a - 1)) {
		errno = EINVAL;
		return NULL;
	}
	uint8_t *p = malloc(n + a + HDR);
	if (p == NULL)
		return NULL;
	uint8_t *q = (uint8_t *)(((uintptr_t)p + HDR + a - 1) & ~(uintptr_t)(a - 1));
	if (q != p) {
		/* the header of the aligned block: a big block of no class
		 * cannot be faked, so such a block is never freed (NCLS+1) */
		((size_t *)(q - HDR))[0] = NCLS + 1;
		((size_t *)(q - HDR))[1] = n;
	}
	return q;
}

int posix_memalign(void **out, size_t a, size_t n)
{
	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	void *p = aligned(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void *aligned_alloc(size_t a, size_t n) { return aligned(a, n); }
void *memalign(size_t a, size_t n) { return aligned(a, n); }
void *valloc(size_t n) { return aligned(4096, n); }
void *pvalloc(size_t n) { return aligned(4096, (n + 4095) & ~(size_t)4095); }

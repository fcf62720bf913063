/*
 * bump.c - libarr-bump.so, a trivial malloc for measuring the replay
 * engine's own cost: allocation bumps a pointer through a reserved region,
 * free does nothing. Not thread-safe beyond an atomic add; never reuses.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define REGION (64ull << 30) /* address space only: MAP_NORESERVE */

static _Atomic uintptr_t next, end;

static void *bump(size_t align, size_t n)
{
	if (!atomic_load_explicit(&end, memory_order_relaxed)) {
		void *p =
			mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		uintptr_t zero = 0;
		if (atomic_compare_exchange_strong(&next, &zero, (uintptr_t)p))
			atomic_store(&end, (uintptr_t)p + REGION);
		else
			munmap(p, REGION);
		while (!atomic_load(&end))
			;
	}
	if (n > REGION || align > 4096) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = (n + 15 + align - 1) & ~(size_t)15;
	/* a plain add: serial replays only (an atomic add costs more than the
	 * engine does per call on a VM) */
	uintptr_t p = atomic_load_explicit(&next, memory_order_relaxed);
	atomic_store_explicit(&next, p + need, memory_order_relaxed);
	p = (p + align - 1) & ~(uintptr_t)(align - 1);
	if (p + n > atomic_load_explicit(&end, memory_order_relaxed)) {
		errno = ENOMEM;
		return NULL;
	}
	return (void *)p;
}

void *malloc(size_t n) { return bump(16, n); }
void free(void *p) { (void)p; }
void *calloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return bump(16, b); /* fresh mmap memory is zero */
}
void *realloc(void *p, size_t n)
{
	(void)p; /* no copy: see above */
	return bump(16, n);
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
int posix_memalign(void **out, size_t a, size_t n)
{
	void *p = bump(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void *aligned_alloc(size_t a, size_t n) { return bump(a, n); }
void *memalign(size_t a, size_t n) { return bump(a, n); }
void *valloc(size_t n) { return bump(4096, n); }
void *pvalloc(size_t n) { return bump(4096, (n + 4095) & ~(size_t)4095); }
size_t malloc_usable_size(void *p)
{
	(void)p;
	return 0;
}

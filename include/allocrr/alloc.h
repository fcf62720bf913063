/*
 * allocrr/alloc.h - the built-in allocator, with a prefixed API.
 *
 * The replayer links this directly (library arr_alloc); the same code, built
 * as build/lib/liballocrr-malloc.so, is a drop-in LD_PRELOAD malloc that
 * exports glibc's names. See docs/allocator.md for the design.
 *
 * Contract: each function behaves like the glibc 2.36 function of the same
 * name without the prefix, including errno: ENOMEM on every failure to
 * allocate (overflow and impossible sizes included), EINVAL from the aligned
 * family on bad alignments (returned, not set, by arr_posix_memalign). The
 * allocator never calls libc's malloc; all its memory, metadata included,
 * comes from mmap. It is thread-safe and fork-safe, and usable before main,
 * from TLS destructors and after a thread's heap has been released.
 *
 * Blocks must be released by arr_free/arr_realloc of this allocator, never by
 * libc's free (unless the preload library is what libc's free resolves to).
 *
 * Other functions return 0 or a negative ARR_E* code (allocrr/error.h).
 */
#ifndef ALLOCRR_ALLOC_H
#define ALLOCRR_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *arr_malloc(size_t size);
void *arr_calloc(size_t count, size_t size);
void *arr_realloc(void *p, size_t size);
void arr_free(void *p);
/* C23 free_sized: like arr_free, and keeps live_requested exact (see below). */
void arr_free_sized(void *p, size_t size);
int arr_posix_memalign(void **out, size_t align, size_t size);
void *arr_aligned_alloc(size_t align, size_t size);
void *arr_memalign(size_t align, size_t size);
void *arr_valloc(size_t size);
void *arr_pvalloc(size_t size);
void *arr_reallocarray(void *p, size_t count, size_t size);
size_t arr_malloc_usable_size(const void *p);

/* Largest class a size-class table can hold; nclasses is at most this. */
#define ARR_ALLOC_MAX_CLASSES 128

struct arr_alloc_class_stats {
	size_t block_size; /* usable bytes per block */
	uint64_t live;     /* blocks allocated and not freed */
	uint64_t capacity; /* blocks that fit in the pages held by this class */
	uint64_t pages;    /* pages (spans) held by this class */
};

/*
 * A snapshot summed over every thread; cheap for the allocating threads (each
 * keeps its own counters), costs a walk of the heaps and segments to take.
 * Figures are exact when no other thread is allocating during the call.
 */
struct arr_alloc_stats {
	uint64_t mapped;      /* address space mapped from the OS */
	uint64_t resident;    /* estimate: touched pages of used spans + dirty free slices + huge */
	uint64_t live_usable; /* usable bytes of live blocks */
	/*
	 * Requested bytes of live blocks. Blocks carry no header, so arr_free()
	 * subtracts the usable size: the figure is a lower bound, exact when every
	 * block is released by arr_free_sized() (or is still live).
	 */
	uint64_t live_requested;
	uint64_t live_blocks;
	uint64_t huge_blocks;    /* live blocks mapped on their own */
	uint64_t calloc_zeroed;  /* bytes calloc had to memset */
	uint64_t calloc_skipped; /* bytes calloc knew were zero already */
	uint64_t pages_purged;   /* OS pages given back with MADV_DONTNEED */
	uint64_t mallocs, frees; /* calls served by size classes */
	unsigned nclasses;
	struct arr_alloc_class_stats classes[ARR_ALLOC_MAX_CLASSES];
};

int arr_alloc_stats_get(struct arr_alloc_stats *out);

/*
 * Tunables, process-wide, effective for later operations:
 *   purge_delay     free memory is returned to the OS after this many
 *                   malloc+free operations (default 100000; 0 = at once,
 *                   negative = never). Counted in operations, not time, so a
 *                   replay purges at the same point every run.
 *   young           while the footprint grows, memory freed a thread's
 *                   operations / young before is returned too (default 4,
 *                   0 = off; at least 1000 operations, at most purge_delay).
 *   aged            the delay grows with the program: at least a thread's
 *                   operations / aged so far (default 2: memory freed at
 *                   operation s waits until ~2s), at most 64 x purge_delay;
 *                   0 = purge_delay alone.
 *   mmap_threshold  requests above this many bytes get their own mapping
 *                   (default and maximum 1 MiB, the largest size class).
 *   idle_ratio      free resident memory beyond 1/idle_ratio of the memory
 *                   in use (and beyond 256 KiB per thread) is returned at
 *                   once, whatever purge_delay says (default 0 = no bound).
 *   span_min        blocks above this many bytes (to 1 MiB) come from the
 *                   span heap, carved at 256-byte granularity and coalesced,
 *                   instead of a size class (default 8192; 0 = none).
 *   sparse          a class of 1-8 KiB blocks of which a thread holds fewer
 *                   than this many pages' worth is served by the span heap
 *                   (default 64; 0 = never).
 *   sparse_threads  ... while at most this many threads are busy allocating
 *                   (default 1: one at a time only, since with threads
 *                   every sparse malloc takes the span heap's lock; 0 = any).
 *   sparse_cache    1 (default): a thread keeps the span-heap block of up to
 *                   8 KiB it freed last for its next malloc of that length,
 *                   once its mallocs keep asking for the length just freed;
 *                   0 = off.
 *   span_cache      bytes of freed span-heap blocks each thread keeps for its
 *                   own next mallocs, without the span heap's lock (default
 *                   0 = none).
 *   span_arenas     span heaps of their own (lock, free spans, decay): every
 *                   thread starts in the first, one that finds its lock taken
 *                   span_split times moves to one of the others (dealt
 *                   round-robin); a free goes to its block's arena (default
 *                   1 = one shared by all, the lowest peak RSS; maximum 8).
 *   span_split      see span_arenas (default 32; 0 = every thread its own
 *                   arena from its first span-heap malloc).
 *   light           a thread's first this many slow-path mallocs come from
 *                   one heap shared by such threads, under a lock, while
 *                   another thread holds a heap of its own; then it takes its
 *                   own (default 64; 0 = every thread its own heap at once).
 * Returns 0, ARR_ENOTFOUND for an unknown name, ARR_ERANGE for a bad value.
 * The preload library reads ALLOCRR_MALLOC_OPTIONS="purge_delay=1000,..."
 * (byte values accept k/m/g suffixes) at its first malloc, and says each item
 * it ignores in one line on stderr.
 */
int arr_alloc_set_option(const char *name, long long value);
int arr_alloc_get_option(const char *name, long long *value);
/* Parse "name=value,..."; applies what it can, returns the last error or 0
 * (ARR_ESYNTAX for an item that is not name=number); says nothing. */
int arr_alloc_parse_options(const char *spec);

/* Return every free dirty page to the OS now; returns bytes released. */
size_t arr_alloc_purge(void);

#ifdef __cplusplus
}
#endif

#endif

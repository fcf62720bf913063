/*
 * allocrr/compiler.h - the project's one set of branch and inlining hints.
 *
 * Header-only, no dependency (the allocator, which depends on libc alone,
 * may include it). ARR_LIKELY/ARR_UNLIKELY tell the compiler which way a
 * test usually goes, so the common path falls through; ARR_ALWAYS_INLINE is
 * for the small helpers of hot loops (the trace decoder's per-column
 * helpers), whose state must stay in the caller's registers.
 */
#ifndef ALLOCRR_COMPILER_H
#define ALLOCRR_COMPILER_H

#define ARR_LIKELY(x) __builtin_expect(!!(x), 1)
#define ARR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ARR_ALWAYS_INLINE inline __attribute__((always_inline))

#endif

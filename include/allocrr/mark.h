/*
 * allocrr/mark.h - phase markers a program sets for `allocrr record`.
 *
 *     #include <allocrr/mark.h>
 *     allocrr_mark("load");    ... allocrr_mark("serve");
 *
 * Under the recorder each call records a `mark` event carrying the name,
 * in the calling thread's order with its allocations; analyses can cut a
 * trace into phases at them. Without the recorder a call costs a load and a
 * branch: the first call looks for the recorder (dlsym of
 * allocrr_mark_impl, which liballocrr-record.so exports) and caches the
 * answer. No link dependency (glibc 2.34+ has dlsym in libc; older ones
 * need -ldl), one header, C and C++.
 *
 * Contract: name is a NUL-terminated string, read during the call only;
 * the first 2,024 bytes of it are recorded. Safe from any thread, not from a
 * signal handler (the first call may run dlsym). Recording off
 * (ALLOCRR_DISABLE, an unwritable trace): the call does nothing.
 */
#ifndef ALLOCRR_MARK_H
#define ALLOCRR_MARK_H

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*allocrr_mark_fn)(const char *name);

/* The recorder's entry point, or NULL; looked up once per translation unit. */
static inline allocrr_mark_fn allocrr__mark_fn(void)
{
	/* 0: not looked up yet; 1: no recorder; else the function. */
	static uintptr_t cached;
	uintptr_t f = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (__builtin_expect(f == 0, 0)) {
		void *p = dlsym((void *)0 /* RTLD_DEFAULT */, "allocrr_mark_impl");
		f = p ? (uintptr_t)p : 1;
		__atomic_store_n(&cached, f, __ATOMIC_RELAXED);
	}
	return f == 1 ? (allocrr_mark_fn)0 : (allocrr_mark_fn)f;
}

static inline void allocrr_mark(const char *name)
{
	allocrr_mark_fn f = allocrr__mark_fn();
	if (f)
		f(name);
}

#ifdef __cplusplus
}
#endif

#endif

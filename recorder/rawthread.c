/*
 * rawthread.c - the flusher as a thread glibc does not know about.
 *
 * A pthread_create() turns a single-threaded program into a multi-threaded
 * one for glibc, for good: from then on its malloc takes the arena lock on
 * every call and its mutexes use locked instructions. Measured here: a
 * malloc+free pair 9 -> 21 ns, a mutex lock+unlock 2.7 -> 13.9 ns; sqlite3,
 * which takes a mutex around every allocation, spent ~9% of its recorded run
 * on that alone. The recorder must not change what the program does, and
 * that includes how fast its libc runs, so the flusher is started with
 * clone() directly: glibc keeps believing what was true before.
 *
 * Such a thread has no glibc thread descriptor, so it gets a copy of the
 * creating thread's static TLS and TCB header (thread pointer and stack
 * guard pointing at the copy): errno, the locale pointer that snprintf and
 * strtoull read, and the recorder's own TLS all resolve to memory of its own.
 * What it may do is limited accordingly (see record.c, flusher_main): no
 * malloc (glibc would take no lock, believing itself alone), no glibc
 * locks shared with the program, no thread-aware glibc calls; all signals
 * blocked. It has a file table of its own (no CLONE_FILES), a copy of its
 * creator's at the start: what the program does to its fds cannot close
 * the recorder's, and what the recorder opens never takes a number the
 * program would have got. The thread closes the copies it does not need
 * (record.c), so that a pipe the program closes still reaches EOF.
 * The program may still create threads of its own: glibc then
 * becomes multi-threaded as usual and nothing here changes.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "rawthread.h"

struct tls_span {
	uintptr_t tp, lo;
};

/* Static TLS blocks lie just below the thread pointer (x86-64, TLS variant
 * II); blocks of dlopen'ed modules live elsewhere and are left out. */
static int tls_block(struct dl_phdr_info *info, size_t size, void *data)
{
	struct tls_span *s = data;
	uintptr_t a = (uintptr_t)info->dlpi_tls_data;
	(void)size;
	if (a && a < s->tp && s->tp - a < ((uintptr_t)64 << 20) && a < s->lo)
		s->lo = a;
	return 0;
}

/* tcbhead_t's fixed fields: self pointer, dtv, self, flags, sysinfo,
 * stack guard (%fs:0x28) and pointer guard (%fs:0x30), which compilers and
 * glibc read at fixed offsets. The rest of the descriptor stays zero. */
#define TCB_COPY 0x80
#define TCB_AREA (16 * 1024)
#define PAGE 4096u

int arr__raw_thread_start(struct arr_raw_thread *t, int (*fn)(void *), void *arg, size_t stack_size)
{
	uintptr_t tp;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	struct tls_span s = {tp, tp};
	dl_iterate_phdr(tls_block, &s);
	size_t tls = tp - s.lo;
	size_t below = ((tls + PAGE - 1) & ~(size_t)(PAGE - 1)) + PAGE;
	stack_size = (stack_size + PAGE - 1) & ~(size_t)(PAGE - 1);
	size_t size = PAGE + stack_size + below + TCB_AREA;
	uint8_t *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (base == MAP_FAILED)
		return -1;
	mprotect(base, PAGE, PROT_NONE); /* stack guard */
	uint8_t *stack_top = base + PAGE + stack_size;
	uint8_t *tcb = stack_top + below; /* page aligned, as every TLS alignment needs */
	memcpy(tcb - tls, (const void *)s.lo, tls);
	memcpy(tcb, (const void *)tp, TCB_COPY);
	((void **)tcb)[0] = tcb; /* %fs:0, the thread pointer */
	((void **)tcb)[2] = tcb; /* %fs:0x10, the descriptor */

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits this mask */
	int tid =
		clone(fn, stack_top, CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS,
		      arg, NULL, tcb, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (tid < 0) {
		munmap(base, size);
		return -1;
	}
	t->base = base;
	t->size = size;
	t->tid = tid;
	return 0;
}

void arr__raw_thread_forget(struct arr_raw_thread *t)
{
	if (t->base)
		munmap(t->base, t->size);
	t->base = NULL;
	t->size = 0;
	t->tid = 0;
}

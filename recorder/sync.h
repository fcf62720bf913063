/*
 * sync.h - the lock and condition the program's threads share with the
 * flusher, on raw futexes.
 *
 * Why not pthread_mutex: the flusher is not a glibc thread (see
 * rawthread.c), so glibc still believes a single-threaded program is
 * single-threaded, and in that state its mutexes (like its malloc) skip
 * their atomic instructions. A lock shared with the flusher must therefore
 * be atomic whatever glibc believes. These are: always-locked instructions
 * and futex system calls made directly, which also leave errno alone (the
 * hooks must not change it).
 */
#ifndef ARR_SYNC_H
#define ARR_SYNC_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

static inline long arr__futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts, uint32_t val3)
{
	register long r10 __asm__("r10") = (long)ts;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = (long)val3;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_futex), "D"(uaddr), "S"((long)op), "d"((long)val), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* 0 free, 1 held, 2 held and somebody may sleep on it (Drepper's mutex). */
struct xlock {
	uint32_t v;
};

static inline int xtrylock(struct xlock *l)
{
	uint32_t c = 0;
	return __atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ? 0 : -1;
}

static inline void xlock(struct xlock *l)
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		arr__futex(&l->v, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
		c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	}
}

static inline void xunlock(struct xlock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		arr__futex(&l->v, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

/* A condition used under one xlock; waiters counted so that a signal with
 * nobody waiting costs no system call. */
struct xcond {
	uint32_t seq;
	uint32_t waiters; /* under the lock */
};

/* Wait, with l held, until signalled or CLOCK_MONOTONIC reaches
 * deadline_ns (spurious wakeups possible: callers re-check). */
static inline void xcond_wait_until(struct xcond *c, struct xlock *l, uint64_t deadline_ns)
{
	uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
	struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
	c->waiters++;
	xunlock(l);
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline */
	arr__futex(&c->seq, FUTEX_WAIT_BITSET_PRIVATE, seq, &ts, FUTEX_BITSET_MATCH_ANY);
	xlock(l);
	c->waiters--;
}

/* Wake one waiter; l held. */
static inline void xcond_signal(struct xcond *c)
{
	if (c->waiters) {
		__atomic_fetch_add(&c->seq, 1, __ATOMIC_RELEASE);
		arr__futex(&c->seq, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
	}
}

#endif

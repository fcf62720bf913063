/*
 * rawthread.h - a thread started with clone(), unknown to glibc (see
 * rawthread.c for why and for what such a thread may not do).
 */
#ifndef ARR_RAWTHREAD_H
#define ARR_RAWTHREAD_H

#include <stddef.h>

struct arr_raw_thread {
	void *base; /* its stack, TLS copy and TCB, one mapping */
	size_t size;
	int tid;
};

/* Start fn(arg) on a new thread with all signals blocked; 0 or -1. The
 * thread ends when fn returns (or with the process). */
__attribute__((visibility("hidden"))) int arr__raw_thread_start(struct arr_raw_thread *t, int (*fn)(void *), void *arg,
								size_t stack_size);
/* In a fork child, where the thread does not exist: release its memory. */
__attribute__((visibility("hidden"))) void arr__raw_thread_forget(struct arr_raw_thread *t);

#endif

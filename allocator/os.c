/*
 * allocator/os.c - the allocator's contract with the kernel: map, unmap, purge
 * and remap anonymous memory. Every function here returns NULL/false on
 * failure and leaves errno as the kernel set it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "internal.h"

ARR_HOT void *arr__os_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

ARR_HOT void arr__os_unmap(void *p, size_t size)
{
	if (p != NULL && size != 0)
		munmap(p, size);
}

/* raw is size + align bytes: unmap what lies outside the aligned size. */
static void *trim_to_align(uint8_t *raw, size_t size, size_t align)
{
	uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = base - (uintptr_t)raw;
	size_t tail = align - head;
	if (head)
		munmap(raw, head);
	if (tail)
		munmap((uint8_t *)base + size, tail);
	return (void *)base;
}

/* Over-map by `align` and trim both ends: at most three syscalls, no retry loop. */
ARR_HOT void *arr__os_map_aligned(size_t size, size_t align)
{
	if (size > SIZE_MAX - align)
		return NULL;
	uint8_t *raw = arr__os_map(size + align);
	return raw ? trim_to_align(raw, size, align) : NULL;
}

ARR_HOT void arr__os_purge(void *p, size_t size) { madvise(p, size, MADV_DONTNEED); }

/*
 * Several ranges at once: process_madvise() on the calling process (Linux
 * 6.13+ takes MADV_DONTNEED there; PIDFD_SELF needs 6.14) flushes the TLB
 * once for the whole vector (6.16+), where a madvise() per range sends a
 * TLB-shootdown IPI to every CPU running the process each time. Refused
 * once (older kernel), it is not tried again. Never under a seccomp filter:
 * one that kills on system calls it does not list (systemd's
 * SystemCallFilter= does by default) would kill the program for an
 * allocator's optimisation.
 */
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#define ARR__PIDFD_SELF_THREAD (-10000)
static _Atomic int vector_purge_ok = 1; /* 0: the kernel refused it */

/* The start of a /proc file into buf (size bytes), NUL-terminated; false
 * if it cannot be read. open, read and close: no other system call. */
ARR_HOT static bool proc_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

/* 1 unless /proc/self/status says a seccomp filter is on (or cannot be read). */
ARR_HOT static int no_seccomp(void)
{
	static ARR_HOT_DATA char path[] = "/proc/self/status", key[] = "\nSeccomp:";
	char buf[2048]; /* Seccomp: is ~1.3 KB in; not found, not used */
	if (!proc_read(path, buf, sizeof buf))
		return 0;
	/* by hand, not strstr: an import less keeps the library's dynamic
	 * tables in the two pages ld.so reads (allocator.fixedcost_text) */
	const char *p = buf;
	while (*p && memcmp(p, key, sizeof key - 1) != 0)
		p++;
	if (*p == 0)
		return 0;
	p += sizeof key - 1;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p == '0';
}

/* The process's resident size, OS pages (/proc/self/statm's second
 * field), or -1. */
ARR_HOT long arr__os_rss_pages(void)
{
	static ARR_HOT_DATA char path[] = "/proc/self/statm";
	char buf[128];
	if (!proc_read(path, buf, sizeof buf))
		return -1;
	const char *p = buf;
	while (*p >= '0' && *p <= '9')
		p++;
	long r = -1;
	if (*p == ' ' && p[1] >= '0' && p[1] <= '9')
		for (r = 0, p++; *p >= '0' && *p <= '9'; p++)
			r = r * 10 + (*p - '0');
	return r;
}

ARR_HOT void arr__os_purge_many(const struct iovec *iov, unsigned n)
{
	/* a filter can be installed at any time: looked up again for each
	 * batch (~10 µs; batches are rare: 37 in the 4-thread stress replay) */
	if (n > 1 && atomic_load_explicit(&vector_purge_ok, memory_order_relaxed) && no_seccomp()) {
		size_t total = 0;
		for (unsigned i = 0; i < n; i++)
			total += iov[i].iov_len;
		long r = syscall(SYS_process_madvise, ARR__PIDFD_SELF_THREAD, iov, (size_t)n, MADV_DONTNEED, 0u);
		if (r == (long)total)
			return;
		if (r < 0)
			atomic_store_explicit(&vector_purge_ok, 0, memory_order_relaxed);
		/* refused or partly done: range by range (purging twice is harmless) */
	}
	for (unsigned i = 0; i < n; i++)
		madvise(iov[i].iov_base, iov[i].iov_len, MADV_DONTNEED);
}

ARR_HOT bool arr__os_resize_in_place(void *p, size_t old_size, size_t new_size)
{
	if (new_size <= old_size) {
		if (new_size < old_size)
			munmap((uint8_t *)p + new_size, old_size - new_size);
		return true;
	}
	return mremap(p, old_size, new_size, 0) != MAP_FAILED;
}

/* Reserve an aligned range, then let mremap move the pages there: no copy. */
void *arr__os_remap_aligned(void *p, size_t old_size, size_t new_size, size_t align)
{
	if (new_size > SIZE_MAX - align)
		return NULL;
	uint8_t *raw = mmap(NULL, new_size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	void *base = trim_to_align(raw, new_size, align);
	void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, base);
	if (q == MAP_FAILED) {
		munmap(base, new_size);
		return NULL;
	}
	return q;
}

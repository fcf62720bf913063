/*
 * tests/allocator/fork.c - fork while other threads allocate and free.
 * The child must be able to allocate, free (including blocks owned by
 * threads that no longer exist in it) and exit without deadlocking on a lock
 * another thread held at fork time. A child that hangs is killed by alarm().
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"

static _Atomic int stop;
static void *_Atomic shared[64];

static void *churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;
	while (!stop) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (size_t)(s >> 40) % 70000 + 1;
		void *p = arr_malloc(n);
		memset(p, 0xab, n < 256 ? n : 256);
		/* swap with a shared slot: blocks cross threads and get freed remotely */
		void *old = atomic_exchange(&shared[(s >> 20) % 64], p);
		arr_free(old);
	}
	return NULL;
}

/*
 * Reclaim: a thread holds pages with many free blocks (it freed every other
 * one) and is parked when the process forks. In the child that thread does
 * not exist; its heap must be abandoned so that the child's allocations fill
 * those holes instead of mapping new memory.
 */
enum { HOLDER_BLOCKS = 65536, HOLDER_SIZE = 256 };
static void *held[HOLDER_BLOCKS];
static pthread_mutex_t park = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int holder_ready;

static void *holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < HOLDER_BLOCKS; i++)
		memset(held[i] = arr_malloc(HOLDER_SIZE), 1, HOLDER_SIZE);
	for (int i = 0; i < HOLDER_BLOCKS; i += 2)
		arr_free(held[i]);
	holder_ready = 1;
	pthread_mutex_lock(&park);
	pthread_mutex_unlock(&park);
	for (int i = 1; i < HOLDER_BLOCKS; i += 2)
		arr_free(held[i]);
	return NULL;
}

static int test_child_reclaims(void)
{
	static struct arr_alloc_stats st;
	pthread_t t;
	pthread_mutex_lock(&park);
	pthread_create(&t, NULL, holder, NULL);
	while (!holder_ready)
		usleep(1000);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(10);
		arr_alloc_stats_get(&st);
		uint64_t before = st.mapped;
		/* as many bytes as the holder left free: 8 MiB */
		for (int i = 0; i < HOLDER_BLOCKS / 2; i++)
			memset(arr_malloc(HOLDER_SIZE), 2, HOLDER_SIZE);
		arr_alloc_stats_get(&st);
		uint64_t grown = st.mapped - before;
		if (grown > ((uint64_t)4 << 20)) {
			fprintf(stderr, "fork child mapped %llu KB more instead of reusing the holder's free blocks\n",
				(unsigned long long)(grown >> 10));
			_exit(5);
		}
		_exit(0);
	}
	pthread_mutex_unlock(&park);
	pthread_join(t, NULL);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "reclaim: child failed (status 0x%x)\n", status);
		return 1;
	}
	return 0;
}

/*
 * Hang: a full page is marked DELAYED; the first remote free into it sets
 * FREEING, pushes the block on the owner's delayed list, then clears the
 * state. A thread caught between the two by fork() does not exist in the
 * child, so the state would stay FREEING and the child's own free into that
 * page (page_unfull) would wait for it forever. Pages of two 28000-byte
 * blocks (class 28672, one 64 KiB slice) make every remote free take that
 * path: the main thread keeps one block of each page and hands the other to
 * a freeing thread, then forks while that thread is busy; the child frees
 * the blocks it kept. A hang is killed by alarm() and fails the test.
 */
enum { PAIR_SIZE = 28000, PAIRS = 1024, RING = 4096, HANG_FORKS = 200 };
static void *_Atomic ring[RING];
static _Atomic unsigned ring_head, ring_tail; /* producer: main; consumer: freer */
static _Atomic int freer_stop;

static void *freer(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned t = atomic_load_explicit(&ring_tail, memory_order_relaxed);
		if (t == atomic_load_explicit(&ring_head, memory_order_acquire)) {
			if (atomic_load(&freer_stop))
				return NULL;
			continue;
		}
		arr_free(atomic_load_explicit(&ring[t % RING], memory_order_relaxed));
		atomic_store_explicit(&ring_tail, t + 1, memory_order_release);
	}
}

static int test_no_hang_on_freeing(void)
{
	static void *kept[PAIRS];
	pthread_t t;
	/* pages of a class (28000 bytes would come from the span heap, which
	 * has no full pages) */
	long long span_min = 0;
	arr_alloc_get_option("span_min", &span_min);
	arr_alloc_set_option("span_min", 0);
	pthread_create(&t, NULL, freer, NULL);
	int failures = 0;
	for (int f = 0; f < HANG_FORKS && !failures; f++) {
		while (atomic_load(&ring_head) - atomic_load(&ring_tail) > RING - PAIRS)
			sched_yield();
		unsigned h = atomic_load_explicit(&ring_head, memory_order_relaxed);
		for (int i = 0; i < PAIRS; i++) {
			kept[i] = arr_malloc(PAIR_SIZE);
			void *other = arr_malloc(PAIR_SIZE);
			if (kept[i] == NULL || other == NULL)
				return 1;
			atomic_store_explicit(&ring[h++ % RING], other, memory_order_relaxed);
		}
		/* all at once, and fork once the freer is well into the batch */
		atomic_store_explicit(&ring_head, h, memory_order_release);
		while (h - atomic_load(&ring_tail) > PAIRS - PAIRS / 8)
			;
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			alarm(5);
			for (int i = 0; i < PAIRS; i++)
				arr_free(kept[i]);
			for (int i = 0; i < 4 * PAIRS; i++) /* drains the delayed list */
				arr_free(arr_malloc(PAIR_SIZE));
			_exit(0);
		}
		for (int i = 0; i < PAIRS; i++)
			arr_free(kept[i]);
		int status = 0;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "freeing fork %d: child failed (status 0x%x%s)\n", f, status,
				WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ", hung" : "");
			failures++;
		}
	}
	atomic_store(&freer_stop, 1);
	pthread_join(t, NULL);
	arr_alloc_set_option("span_min", span_min);
	if (failures)
		return 1;
	printf("fork: %d forks during remote frees into full pages ok\n", HANG_FORKS);
	return 0;
}

/*
 * A torn page (pool.c arr__pool_fork_repair): fork copies memory page by
 * page while the other threads run, so the child may see a vanished
 * thread's page descriptor from before it handed a block out and the block
 * as the program wrote it after. Made here without the race: a thread frees
 * every other one of its 256 blocks of 48 bytes, then the block on top of
 * its page's free list is written over (as a block handed out and filled
 * would read in the child), and the thread waits while main forks. The
 * child allocates 300 such blocks, from the vanished thread's page too:
 * without the repair the first pop past that block aborts ("corrupted free
 * list").
 */
enum { TORN_BLOCKS = 256, TORN_SIZE = 48 };
static void *torn[TORN_BLOCKS];
static pthread_mutex_t torn_park = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int torn_ready;
static uintptr_t torn_link;

static void *torn_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < TORN_BLOCKS; i++)
		memset(torn[i] = arr_malloc(TORN_SIZE), 1, TORN_SIZE);
	for (int i = 0; i < TORN_BLOCKS; i += 2)
		arr_free(torn[i]);
	/* the last block freed heads the page's free list (its link is put
	 * back after the fork: the parent goes on with the page) */
	memcpy(&torn_link, torn[TORN_BLOCKS - 2], sizeof torn_link);
	memset(torn[TORN_BLOCKS - 2], 0x41, sizeof torn_link);
	torn_ready = 1;
	pthread_mutex_lock(&torn_park);
	pthread_mutex_unlock(&torn_park);
	return NULL;
}

static int test_torn_page(void)
{
	pthread_t t;
	pthread_mutex_lock(&torn_park);
	pthread_create(&t, NULL, torn_holder, NULL);
	while (!torn_ready)
		usleep(1000);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(10);
		for (int i = 0; i < 300; i++) {
			void *p = arr_malloc(TORN_SIZE);
			if (p == NULL)
				_exit(3);
			memset(p, 2, TORN_SIZE);
		}
		_exit(0);
	}
	int status = 0;
	bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	memcpy(torn[TORN_BLOCKS - 2], &torn_link, sizeof torn_link);
	pthread_mutex_unlock(&torn_park);
	pthread_join(t, NULL);
	if (!ok) {
		fprintf(stderr, "torn page: child failed (status 0x%x)\n", status);
		return 1;
	}
	for (int i = 1; i < TORN_BLOCKS; i += 2)
		arr_free(torn[i]);
	printf("fork: a vanished thread's torn page repaired in the child\n");
	return 0;
}

int main(void)
{
	if (test_torn_page())
		return 1;
	if (test_child_reclaims())
		return 1;
	if (test_no_hang_on_freeing())
		return 1;

	enum { THREADS = 3, FORKS = 40 };
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, churn, (void *)(intptr_t)(i + 1));
	int failures = 0;
	for (int f = 0; f < FORKS; f++) {
		usleep(2000);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			alarm(10);
			void *v[2000];
			for (int r = 0; r < 5; r++) {
				for (int i = 0; i < 2000; i++) {
					v[i] = arr_malloc((size_t)(i * 97 % 9000) + 1);
					if (v[i] == NULL)
						_exit(3);
					memset(v[i], i, (size_t)(i * 97 % 9000) + 1);
				}
				for (int i = 0; i < 2000; i++)
					arr_free(v[i]);
			}
			for (int i = 0; i < 64; i++) /* blocks of the vanished threads */
				arr_free(atomic_exchange(&shared[i], NULL));
			void *big = arr_calloc(1, (size_t)4 << 20);
			if (big == NULL || ((char *)big)[12345] != 0)
				_exit(4);
			arr_free(big);
			_exit(0);
		}
		int status = 0;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork %d: child failed (status 0x%x)\n", f, status);
			failures++;
		}
	}
	stop = 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 64; i++)
		arr_free(atomic_exchange(&shared[i], NULL));
	if (failures)
		return 1;
	printf("fork: %d forks under 3 allocating threads ok\n", FORKS);
	return 0;
}

/*
 * bench/workloads/patterns.c - allocation patterns no part of the allocator
 * was tuned on, one per mode, for the drop-in bench (bench/bench-dropin.sh;
 * docs/notes/2026-12-07-huge-churn.md measured them first).
 *
 * Usage: patterns MODE [SCALE]   (SCALE: a divisor of the iteration counts,
 * 1 by default; bench/smoke.sh passes a large one)
 *
 *   hugecalloc  calloc 1-16 MB blocks of random sizes, write a quarter of
 *               their pages, free them (huge blocks churned)
 *   hugebuf     four live buffers of 1-8 MB, one replaced every 200 small
 *               mallocs and frees of 16-2 015 bytes
 *   rounds      one thread mallocs 1 000 blocks of 16-515 bytes and frees
 *               them all, over and over
 *   threads     64 threads at a time that each malloc 1 000 blocks of
 *               16-515 bytes, free them and exit
 *   pairs       the same two threads at a time, 600 threads in all (a
 *               worker started per task: what each exited one leaves)
 *   replace     4 096 live blocks of 1 000-3 000 bytes, a random one
 *               replaced 3 M times
 *   aligned     the same with 8-3 007 bytes from posix_memalign, aligned to
 *               32 or 64
 *   builders    20 000 strings built by realloc, 1-100 bytes a call, to
 *               4-100 KB each
 *   batches     n blocks of 16, 32 or 64 bytes (n 25, 100, 400, 1 600)
 *               made, written and freed, the first half oldest first and
 *               the rest newest first, over and over (2 000 000 blocks each)
 *   handoff     two chains of threads, each with 5 000 slots of 8-1 000
 *               bytes: a thread replaces random slots 100 000 times, then
 *               starts the next thread of its chain and exits with its
 *               blocks live; 40 threads a chain (a server whose workers
 *               hand their state on)
 *   refill      two threads that each malloc 200 blocks of 8-64 KB, write
 *               them and free them all, 100 times, a new thread each time
 *               (a working set built and dropped in rounds, as
 *               mimalloc-bench's mstress does)
 *
 * Prints a checksum of what it read back (the same under every allocator).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
static uint64_t sum;
static long scale = 1;

static void hugecalloc(void)
{
	for (long i = 0; i < 400 / scale; i++) {
		size_t s = ((size_t)1 << 20) + rnd() % ((size_t)15 << 20);
		unsigned char *p = calloc(1, s);
		if (p == NULL)
			abort();
		for (size_t k = 0; k < s / 4; k += 4096)
			p[k] = 1;
		sum += p[s - 1] + p[s / 8];
		free(p);
	}
}

static void hugebuf(void)
{
	enum { N = 20000 };
	static unsigned char *small[N];
	unsigned char *big[4] = {0};
	for (long i = 0; i < 4000 / scale; i++) {
		int k = (int)(rnd() % 4);
		free(big[k]);
		size_t bs = ((size_t)1 << 20) + rnd() % ((size_t)7 << 20);
		big[k] = malloc(bs);
		if (big[k] == NULL)
			abort();
		memset(big[k], (int)(i & 0xff), bs / 8);
		sum += big[k][bs / 16];
		for (int j = 0; j < 200; j++) {
			int x = (int)(rnd() % N);
			free(small[x]);
			small[x] = malloc(16 + rnd() % 2000);
			if (small[x] == NULL)
				abort();
			small[x][0] = 1;
		}
	}
	for (int k = 0; k < 4; k++)
		free(big[k]);
	for (int i = 0; i < N; i++) {
		sum += small[i] ? small[i][0] : 0;
		free(small[i]);
	}
}

static void batch(uint64_t *seed, uint64_t *out)
{
	unsigned char *v[1000];
	for (int i = 0; i < 1000; i++) {
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		v[i] = malloc(16 + *seed % 500);
		if (v[i] == NULL)
			abort();
		v[i][0] = (unsigned char)i;
	}
	for (int i = 0; i < 1000; i++) {
		*out += v[i][0];
		free(v[i]);
	}
}

static void rounds(void)
{
	uint64_t seed = 7;
	for (long r = 0; r < 2560 / scale; r++)
		batch(&seed, &sum);
}

static void *thread_batch(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 2654435761u + 1, out = 0;
	batch(&seed, &out);
	return (void *)(uintptr_t)out;
}

static void threads(void)
{
	for (long r = 0; r < 40 / scale + 1; r++) {
		pthread_t t[64];
		for (int i = 0; i < 64; i++)
			if (pthread_create(&t[i], NULL, thread_batch, (void *)(uintptr_t)(i + 1)) != 0)
				abort();
		for (int i = 0; i < 64; i++) {
			void *out;
			pthread_join(t[i], &out);
			sum += (uintptr_t)out;
		}
	}
}

static void pairs(void)
{
	for (long r = 0; r < 300 / scale + 1; r++) {
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, thread_batch, (void *)(uintptr_t)(r * 2 + i + 1)) != 0)
				abort();
		for (int i = 0; i < 2; i++) {
			void *out;
			pthread_join(t[i], &out);
			sum += (uintptr_t)out;
		}
	}
}

static void replace(int aligned)
{
	enum { N = 4096 };
	static unsigned char *b[N];
	for (long i = 0; i < 3000000 / scale; i++) {
		int k = (int)(rnd() % N);
		free(b[k]);
		size_t s;
		if (aligned) {
			s = 8 + rnd() % 3000;
			size_t al = rnd() % 2 ? 32 : 64;
			if (posix_memalign((void **)&b[k], al, s) != 0)
				abort();
		} else {
			s = 1000 + rnd() % 2001;
			b[k] = malloc(s);
			if (b[k] == NULL)
				abort();
		}
		memset(b[k], (int)(k & 0xff), s < 64 ? s : 64);
	}
	for (int i = 0; i < N; i++) {
		sum += b[i] ? b[i][0] : 0;
		free(b[i]);
	}
}

static void builders(void)
{
	for (long b = 0; b < 20000 / scale; b++) {
		size_t n = 0, lim = 4096 + rnd() % 96000;
		unsigned char *p = NULL;
		while (n < lim) {
			size_t k = 1 + rnd() % 100;
			unsigned char *q = realloc(p, n + k);
			if (q == NULL)
				abort();
			p = q;
			memset(p + n, (int)(k & 0xff), k);
			n += k;
		}
		sum += p[n / 2];
		free(p);
	}
}

static void batches(void)
{
	static unsigned char *v[1600];
	static const int counts[] = {25, 100, 400, 1600};
	for (size_t size = 16; size <= 64; size *= 2)
		for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++) {
			int n = counts[c];
			for (long r = 0; r < 2000000 / n / scale + 1; r++) {
				for (int i = 0; i < n; i++) {
					v[i] = malloc(size);
					if (v[i] == NULL)
						abort();
					memset(v[i], i & 0xff, size);
				}
				sum += v[n - 1][0];
				for (int i = 0; i < n / 2; i++)
					free(v[i]);
				for (int i = n - 1; i >= n / 2; i--)
					free(v[i]);
			}
		}
}

enum { HANDOFF_SLOTS = 5000, HANDOFF_CHAINS = 2 };
struct chain {
	unsigned char *slot[HANDOFF_SLOTS];
	uint64_t rs;
	long left; /* threads still to run */
	uint64_t sum;
};
static struct chain chains[HANDOFF_CHAINS];

static void *handoff_thread(void *arg)
{
	struct chain *ch = arg;
	for (long i = 0; i < 100000 / scale; i++) {
		ch->rs ^= ch->rs << 13;
		ch->rs ^= ch->rs >> 7;
		ch->rs ^= ch->rs << 17;
		unsigned k = (unsigned)(ch->rs % HANDOFF_SLOTS);
		size_t s = 8 + (ch->rs >> 32) % 993;
		free(ch->slot[k]);
		ch->slot[k] = malloc(s);
		if (ch->slot[k] == NULL)
			abort();
		ch->slot[k][0] = (unsigned char)s;
		ch->slot[k][s - 1] = (unsigned char)k;
		ch->sum += ch->slot[k][0];
	}
	/* the next thread of the chain takes the slots over; this one exits */
	if (--ch->left > 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, handoff_thread, ch) != 0 || pthread_detach(t) != 0)
			abort();
	} else {
		__atomic_store_n(&ch->left, -1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void handoff(void)
{
	for (int c = 0; c < HANDOFF_CHAINS; c++) {
		chains[c].rs = 0x9e3779b97f4a7c15ull * (uint64_t)(c + 1);
		chains[c].left = 40;
		pthread_t t;
		if (pthread_create(&t, NULL, handoff_thread, &chains[c]) != 0 || pthread_detach(t) != 0)
			abort();
	}
	for (int c = 0; c < HANDOFF_CHAINS; c++) {
		while (__atomic_load_n(&chains[c].left, __ATOMIC_ACQUIRE) != -1)
			usleep(1000);
		sum += chains[c].sum;
		for (int i = 0; i < HANDOFF_SLOTS; i++)
			free(chains[c].slot[i]);
	}
}

static void *refill_thread(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, out = 0;
	unsigned char *v[200];
	for (int i = 0; i < 200; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t s = 8192 + x % (56u << 10);
		v[i] = malloc(s);
		if (v[i] == NULL)
			abort();
		memset(v[i], i, s);
	}
	for (int i = 0; i < 200; i++) {
		out += v[i][i];
		free(v[i]);
	}
	return (void *)(uintptr_t)out;
}

static void refill(void)
{
	for (long r = 0; r < 100 / scale + 1; r++) {
		pthread_t t;
		void *out;
		if (pthread_create(&t, NULL, refill_thread, (void *)(uintptr_t)(2 * r + 1)) != 0)
			abort();
		sum += (uint64_t)(uintptr_t)refill_thread((void *)(uintptr_t)(2 * r + 2));
		if (pthread_join(t, &out) != 0)
			abort();
		sum += (uint64_t)(uintptr_t)out;
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (argc > 2)
		scale = atol(argv[2]) > 0 ? atol(argv[2]) : 1;
	if (strcmp(m, "hugecalloc") == 0)
		hugecalloc();
	else if (strcmp(m, "hugebuf") == 0)
		hugebuf();
	else if (strcmp(m, "rounds") == 0)
		rounds();
	else if (strcmp(m, "threads") == 0)
		threads();
	else if (strcmp(m, "pairs") == 0)
		pairs();
	else if (strcmp(m, "replace") == 0)
		replace(0);
	else if (strcmp(m, "aligned") == 0)
		replace(1);
	else if (strcmp(m, "builders") == 0)
		builders();
	else if (strcmp(m, "batches") == 0)
		batches();
	else if (strcmp(m, "handoff") == 0)
		handoff();
	else if (strcmp(m, "refill") == 0)
		refill();
	else {
		fprintf(stderr,
			"usage: patterns "
			"hugecalloc|hugebuf|rounds|threads|pairs|replace|aligned|builders|batches|handoff|refill [SCALE]\n");
		return 2;
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}

/*
 * stress: a multi-threaded malloc/free workload for the recorder benchmark.
 *
 * Usage: stress [N [T]]   (default N = 10000000 allocations, T = 4 threads)
 *
 * T threads share N allocations between them. Each thread keeps a working
 * set of live blocks and replaces a randomly chosen one on every step: free
 * the old block, malloc a new one. So the program makes ~N mallocs and ~N
 * frees. Sizes are mostly small (8..256 bytes), some medium (up to 4 KiB) and
 * a few larger (up to 64 KiB); every new block is filled. Every thread has
 * its own fixed seed, so the calls each thread makes and the printed checksum
 * are the same on every run; the checksum never depends on addresses.
 *
 * Build: cc -O2 -pthread stress.c -o stress
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Live blocks per thread. With 4 threads this keeps ~100 MB live and makes
 * the native run take ~0.8 s on the reference machine (see NOTES, Peers). */
enum { WORKING_SET = 24576 };

struct worker {
	pthread_t thread;
	unsigned index;
	uint64_t steps;
	uint64_t sum;
	int failed;
};

/* xorshift64*: small, fast, and deterministic across libcs. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ULL;
}

static size_t pick_size(uint64_t r)
{
	unsigned class = (unsigned)(r % 100);

	r >>= 8;
	if (class < 85)
		return 8 + (size_t)(r % 249); /* small */
	if (class < 99)
		return 257 + (size_t)(r % 3840); /* medium */
	return 4097 + (size_t)(r % 61440);       /* large */
}

/* Each block is filled when allocated, as programs do, and its two ends are
 * read back when it is freed; the checksum sums them. */
static uint64_t release(unsigned char *p, size_t size)
{
	uint64_t v;

	if (p == NULL)
		return 0;
	v = (uint64_t)p[0] + ((uint64_t)p[size - 1] << 8) + size;
	free(p);
	return v;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	unsigned char *blocks[WORKING_SET] = {0};
	size_t sizes[WORKING_SET] = {0};
	uint64_t state = 0x9E3779B97F4A7C15ULL * (w->index + 1);
	uint64_t i;
	size_t slot;

	for (i = 0; i < w->steps; i++) {
		uint64_t r = next_random(&state);
		size_t size = pick_size(r >> 16);
		unsigned char *p;

		slot = (size_t)(r % WORKING_SET);
		w->sum += release(blocks[slot], sizes[slot]);
		p = malloc(size);
		if (p == NULL) {
			w->failed = 1;
			blocks[slot] = NULL;
			continue;
		}
		memset(p, (int)(i & 0xff), size);
		p[size - 1] = (unsigned char)(size & 0xff);
		blocks[slot] = p;
		sizes[slot] = size;
	}
	for (slot = 0; slot < WORKING_SET; slot++)
		w->sum += release(blocks[slot], sizes[slot]);
	return NULL;
}

static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: stress [N [T]]\n"
		   "  N  total malloc calls, each paired with a free (default 10000000)\n"
		   "  T  threads sharing them (default 4, at most 1024)\n");
}

int main(int argc, char **argv)
{
	uint64_t total = 10000000, nthreads = 4, sum = 0, i;
	struct worker *workers;
	int failed = 0;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc > 3 || (argc > 1 && parse_count(argv[1], UINT64_MAX / 2, &total) != 0) ||
	    (argc > 2 && parse_count(argv[2], 1024, &nthreads) != 0)) {
		usage(stderr);
		return 2;
	}

	workers = calloc(nthreads, sizeof *workers);
	if (workers == NULL) {
		fprintf(stderr, "stress: out of memory\n");
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		workers[i].index = (unsigned)i;
		workers[i].steps = total / nthreads + (i < total % nthreads);
		if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]) != 0) {
			fprintf(stderr, "stress: cannot create thread %" PRIu64 "\n", i);
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		sum = sum * 31 + workers[i].sum;
		failed |= workers[i].failed;
	}
	free(workers);
	if (failed) {
		fprintf(stderr, "stress: malloc failed\n");
		return 1;
	}
	printf("allocations=%" PRIu64 " threads=%" PRIu64 " checksum=%016" PRIx64 "\n", total, nthreads, sum);
	return 0;
}

/*
 * roundtrip.c - the writer and the reader agree on every field of every op,
 * across chunks and threads; the merge is in time order; a trace cut at any
 * byte yields a prefix of whole chunks; flipped bits never crash the reader.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocrr/trace.h"
#include "writer.h"

#include "check.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define NEV 60000
#define NTHREADS 3
#define UNIT 16

static struct arr_event want[NEV];
static char paths[NEV][40];

/* Raw words for one event (writer.h layout). Returns the word count. */
static unsigned to_raw(const struct arr_event *e, uint64_t *w)
{
	unsigned n = 1;
	switch (e->op) {
	case ARR_OP_MALLOC:
	case ARR_OP_VALLOC:
	case ARR_OP_PVALLOC:
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_CALLOC:
		w[n++] = e->nmemb;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_POSIX_MEMALIGN:
	case ARR_OP_ALIGNED_ALLOC:
	case ARR_OP_MEMALIGN:
		w[n++] = e->align;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_REALLOC:
		w[n++] = e->ptr;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_REALLOCARRAY:
		w[n++] = e->ptr;
		w[n++] = e->nmemb;
		w[n++] = e->size;
		w[n++] = e->ret;
		break;
	case ARR_OP_FREE:
	case ARR_OP_FORK:
		w[n++] = e->ptr;
		break;
	case ARR_OP_RSS:
		w[n++] = e->size;
		break;
	case ARR_OP_EXEC: {
		size_t len = strlen(e->str);
		w[n++] = len;
		memset(w + n, 0, (len + 7) / 8 * 8);
		memcpy(w + n, e->str, len);
		n += (unsigned)((len + 7) / 8);
		break;
	}
	}
	if (e->failed)
		w[n++] = (uint64_t)(uint32_t)e->err;
	w[0] = ARR_RAW_W0(e->op, e->failed, e->t);
	return n;
}

static void make_events(void)
{
	static const unsigned ops[] = {
		ARR_OP_MALLOC,        ARR_OP_CALLOC,      ARR_OP_REALLOC, ARR_OP_FREE,    ARR_OP_POSIX_MEMALIGN,
		ARR_OP_ALIGNED_ALLOC, ARR_OP_MEMALIGN,    ARR_OP_VALLOC,  ARR_OP_PVALLOC, ARR_OP_REALLOCARRAY,
		ARR_OP_THREAD_START,  ARR_OP_THREAD_EXIT, ARR_OP_FORK,    ARR_OP_EXEC,    ARR_OP_RSS};
	uint64_t t[NTHREADS] = {0};
	uint64_t recent[64] = {0};
	for (int i = 0; i < NEV; i++) {
		struct arr_event *e = &want[i];
		int th = (int)(rnd() % NTHREADS);
		e->tid = th == 0 ? 0 : 1000 + (uint32_t)th; /* thread 0 plays the RSS sampler */
		t[th] += (rnd() % 4 == 0) ? rnd() % 100000 : rnd() % 200;
		e->t = t[th] / UNIT * UNIT;
		e->op = (uint8_t)(e->tid == 0 ? ARR_OP_RSS : ops[rnd() % (sizeof ops / sizeof *ops - 1)]);
		uint64_t big = rnd() % 8 == 0 ? rnd() : rnd() % 5000;
		if (e->op == ARR_OP_RSS)
			e->size = rnd() >> 20;
		if (arr_op_allocates(e->op)) {
			e->size = big;
			if (e->op == ARR_OP_CALLOC || e->op == ARR_OP_REALLOCARRAY)
				e->nmemb = rnd() % 3 == 0 ? rnd() : rnd() % 100;
			if (e->op == ARR_OP_POSIX_MEMALIGN || e->op == ARR_OP_ALIGNED_ALLOC || e->op == ARR_OP_MEMALIGN)
				e->align = 1ull << (rnd() % 21);
			e->failed = rnd() % 10 == 0;
			e->err = e->failed ? (int32_t)(rnd() % 40) - 5 : 0;
			e->ret = e->failed ? 0 : (rnd() % 2 ? recent[rnd() % 64] : (rnd() & 0x7ffffffffff0ull));
			if (!e->failed && !e->ret)
				e->ret = 0x1000;
			recent[rnd() % 64] = e->ret;
		}
		if (arr_op_takes_ptr(e->op))
			e->ptr = rnd() % 5 == 0 ? 0 : rnd() % 2 ? recent[rnd() % 64] : rnd();
		if (e->op == ARR_OP_FORK) {
			e->ptr = (uint64_t)(int64_t)(rnd() % 2 ? (int64_t)(rnd() % 100000) : -1);
			e->failed = (int64_t)e->ptr < 0;
			e->err = e->failed ? 11 : 0;
		}
		if (e->op == ARR_OP_EXEC) {
			snprintf(paths[i], sizeof paths[i], "/usr/bin/prog-%d \"q\"", i);
			e->str = paths[i];
			e->failed = rnd() % 2;
			e->err = e->failed ? 2 : 0;
		}
	}
}

static void same_event(const struct arr_event *g, const struct arr_event *w, int i)
{
	CHECK(g->op == w->op && g->t == w->t && g->tid == w->tid && g->size == w->size && g->nmemb == w->nmemb &&
		      g->align == w->align && g->ptr == w->ptr && g->ret == w->ret && g->failed == w->failed &&
		      g->err == w->err,
	      "event %d: got op %u t %llu tid %u size %llu ptr %llx ret %llx err %d, want op %u t %llu tid %u size %llu ptr %llx ret %llx err %d",
	      i, g->op, (unsigned long long)g->t, g->tid, (unsigned long long)g->size, (unsigned long long)g->ptr,
	      (unsigned long long)g->ret, g->err, w->op, (unsigned long long)w->t, w->tid, (unsigned long long)w->size,
	      (unsigned long long)w->ptr, (unsigned long long)w->ret, w->err);
	CHECK(!w->str || (g->str && !strcmp(g->str, w->str)), "event %d: exec path", i);
}

/* Write the trace: header, then per thread chunks of up to 4000 raw words
 * interleaved across threads as a recorder would, then END. */
static size_t write_trace(const char *path)
{
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	CHECK(arr__encoder_init(&enc, &mem, 4000, 3, UNIT) == 0, "encoder init");
	size_t cap = arr__encoder_bound(&enc);
	uint8_t *out = malloc(cap);
	FILE *f = fopen(path, "wb");
	CHECK(f && out, "open %s", path);
	const char argv[] = "prog\0-x\0";
	struct arr_header_info hi = {.pid = 42,
				     .ppid = 1,
				     .page_size = 4096,
				     .time_unit_ns = UNIT,
				     .exe = "/bin/prog",
				     .libc = "glibc 2.36",
				     .recorder = "test",
				     .argv = argv,
				     .argv_len = sizeof argv - 1};
	long hn = arr__encode_header(&hi, out, cap);
	CHECK(hn > 0, "header");
	fwrite(out, 1, (size_t)hn, f);
	static uint64_t raw[NTHREADS][4000 + 300];
	size_t used[NTHREADS] = {0};
	size_t nchunks = 0;
	for (int i = 0; i <= NEV; i++) {
		int th = i < NEV ? (want[i].tid ? (int)want[i].tid - 1000 : 0) : -1;
		for (int k = 0; k < NTHREADS; k++) {
			uint64_t w[300];
			unsigned n = i < NEV && k == th ? to_raw(&want[i], w) : 0;
			if (used[k] && (i == NEV || (k == th && used[k] + n > 4000))) {
				long len =
					arr__encode_events(&enc, k ? 1000 + (uint32_t)k : 0, raw[k], used[k], out, cap);
				CHECK(len > 0, "encode: %ld", len);
				fwrite(out, 1, (size_t)len, f);
				used[k] = 0;
				nchunks++;
			}
			if (n) {
				memcpy(raw[k] + used[k], w, n * 8);
				used[k] += n;
			}
		}
	}
	/* an unknown chunk type must be skipped and counted */
	uint8_t unk[12 + 5] = {0x43, 0x48, 0x4e, 0x4b, 99, 0, 0, 0, 5, 0, 0, 0, 1, 2, 3, 4, 5};
	fwrite(unk, 1, sizeof unk, f);
	size_t en = arr__encode_end(out, ARR_END_EXIT, 7, 123456, NEV);
	fwrite(out, 1, en, f);
	fclose(f);
	free(out);
	arr__encoder_release(&enc);
	return nchunks;
}

static int cmp_t(const void *a, const void *b)
{
	const struct arr_event *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static long read_all(const char *path, int *rc_out, int merged)
{
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	long n = 0;
	if (rc == 0 && merged) {
		struct arr_merge *m;
		rc = arr_merge_open(&m, tr);
		const struct arr_event *ev;
		uint64_t last = 0;
		while (rc == 0 && (rc = arr_merge_next(m, &ev)) == 1) {
			CHECK(ev->t >= last, "merge out of order");
			last = ev->t;
			n++;
			rc = 0;
		}
		arr_merge_close(m);
	} else if (rc == 0) {
		struct arr_chunk_info ci;
		while ((rc = arr_trace_next_chunk(tr, &ci)) == 1) {
			const struct arr_event *ev;
			int k = arr_trace_read_chunk(tr, &ev);
			if (k < 0) {
				rc = k;
				break;
			}
			n += k;
		}
	}
	if (rc < 0)
		CHECK(arr_trace_error_offset(tr) <= arr_trace_file_size(tr), "error offset past the end");
	arr_trace_close(tr);
	*rc_out = rc;
	return n;
}

/* One chunk with more than 2^15 allocations and frees: numbers past the
 * encoder's map range must still round-trip (they are coded as misses). */
static void big_chunk(void)
{
	enum { N = 40000 };
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	size_t words = 3 * N + 2 * N + 3 * N;
	CHECK(arr__encoder_init(&enc, &mem, words, 1, UNIT) == 0, "big encoder");
	uint64_t *raw = calloc(words, 8), addr[N];
	size_t nw = 0;
	for (int i = 0; i < N; i++) { /* N mallocs, then N frees in a shuffled order */
		addr[i] = 0x7f0000000000ull + (uint64_t)i * 48;
		raw[nw++] = ARR_RAW_W0(ARR_OP_MALLOC, 0, (uint64_t)i * UNIT);
		raw[nw++] = 40;
		raw[nw++] = addr[i];
	}
	for (int i = N - 1; i > 0; i--) {
		int j = (int)(rnd() % (uint64_t)(i + 1));
		uint64_t t = addr[i];
		addr[i] = addr[j], addr[j] = t;
	}
	for (int i = 0; i < N; i++) {
		raw[nw++] = ARR_RAW_W0(ARR_OP_FREE, 0, (uint64_t)(N + i) * UNIT);
		raw[nw++] = addr[i];
	}
	for (int i = 0; i < N; i++) { /* and N mallocs that reuse freed blocks */
		raw[nw++] = ARR_RAW_W0(ARR_OP_MALLOC, 0, (uint64_t)(2 * N + i) * UNIT);
		raw[nw++] = 40;
		raw[nw++] = addr[(i * 7919) % N];
	}
	size_t cap = arr__encoder_bound(&enc);
	uint8_t *out = malloc(cap), hdr[4096];
	long len = arr__encode_events(&enc, 7, raw, nw, out, cap);
	CHECK(len > 0, "big encode: %ld", len);
	char path[] = "/tmp/allocrr-big-XXXXXX";
	int fd = mkstemp(path);
	struct arr_header_info hi = {.pid = 1, .time_unit_ns = UNIT};
	long hn = arr__encode_header(&hi, hdr, sizeof hdr);
	CHECK(fd >= 0 && hn > 0 && write(fd, hdr, (size_t)hn) == hn && write(fd, out, (size_t)len) == len, "big write");
	close(fd);
	struct arr_trace *tr;
	struct arr_chunk_info ci;
	const struct arr_event *ev;
	CHECK(arr_trace_open(&tr, path) == 0 && arr_trace_next_chunk(tr, &ci) == 1, "big open");
	CHECK(arr_trace_read_chunk(tr, &ev) == 3 * N, "big decode: %s", arr_trace_error_detail(tr));
	size_t k = 0;
	for (int i = 0; i < 3 * N; i++) {
		uint64_t w0 = raw[k];
		unsigned op = ARR_RAW_OP(w0);
		CHECK(ev[i].op == op, "big: op of event %d", i);
		if (op == ARR_OP_MALLOC)
			CHECK(ev[i].size == raw[k + 1] && ev[i].ret == raw[k + 2], "big: malloc %d", i);
		else
			CHECK(ev[i].ptr == raw[k + 1], "big: free %d: %llx vs %llx", i, (unsigned long long)ev[i].ptr,
			      (unsigned long long)raw[k + 1]);
		k += arr__raw_words(raw + k);
	}
	arr_trace_close(tr);
	unlink(path);
	free(out);
	free(raw);
	arr__encoder_release(&enc);
}

int main(void)
{
	big_chunk();
	char path[] = "/tmp/allocrr-roundtrip-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	make_events();
	size_t nchunks = write_trace(path);
	CHECK(nchunks > 10, "only %zu chunks", nchunks);

	/* 1. per-chunk decode: each thread's events in order */
	struct arr_trace *tr;
	CHECK(arr_trace_open(&tr, path) == 0, "open");
	const struct arr_trace_meta *m = arr_trace_meta(tr);
	CHECK(m->pid == 42 && m->ppid == 1 && !strcmp(m->exe, "/bin/prog") && !strcmp(m->argv, "prog -x") &&
		      m->argc == 2 && m->time_unit_ns == UNIT,
	      "metadata: pid %lld exe %s argv '%s' argc %zu", (long long)m->pid, m->exe, m->argv, m->argc);
	int next[NTHREADS] = {0};
	struct arr_chunk_info ci;
	int rc;
	long total = 0;
	while ((rc = arr_trace_next_chunk(tr, &ci)) == 1) {
		const struct arr_event *ev;
		int n = arr_trace_read_chunk(tr, &ev);
		CHECK(n == (int)ci.nevents, "chunk decode: %d (%s)", n, arr_trace_error_detail(tr));
		int th = ci.tid ? (int)ci.tid - 1000 : 0;
		for (int k = 0; k < n; k++) {
			while (want[next[th]].tid != ci.tid)
				next[th]++;
			same_event(&ev[k], &want[next[th]], next[th]);
			next[th]++;
		}
		total += n;
	}
	CHECK(rc == 0 && total == NEV, "read %ld of %d events, rc %d", total, NEV, rc);
	const struct arr_trace_end *end = arr_trace_end(tr);
	CHECK(end->present && end->reason == ARR_END_EXIT && end->status == 7 && end->events == NEV, "end record");
	CHECK(arr_trace_skipped_chunks(tr) == 1, "unknown chunk not skipped");

	/* 2. merge: time order, all events, ties in file order */
	static struct arr_event sorted[NEV];
	memcpy(sorted, want, sizeof want);
	qsort(sorted, NEV, sizeof *sorted, cmp_t);
	struct arr_merge *mg;
	CHECK(arr_merge_open(&mg, tr) == 0, "merge open");
	const struct arr_event *ev;
	long i = 0;
	while ((rc = arr_merge_next(mg, &ev)) == 1) {
		CHECK(i < NEV && ev->t == sorted[i].t, "merged event %ld at t %llu, want %llu", i,
		      (unsigned long long)ev->t, (unsigned long long)sorted[i].t);
		i++;
	}
	CHECK(rc == 0 && i == NEV, "merge delivered %ld, rc %d", i, rc);
	arr_merge_close(mg);
	arr_trace_close(tr);

	/* 3. cuts: every cut yields no more than a longer cut, and never crashes */
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	uint8_t *data = malloc((size_t)size);
	CHECK(fread(data, 1, (size_t)size, f) == (size_t)size, "read back");
	fclose(f);
	char cut[] = "/tmp/allocrr-cut-XXXXXX";
	fd = mkstemp(cut);
	CHECK(fd >= 0, "mkstemp");
	long prev = 0;
	for (long c = 0; c <= size; c += 1 + c / 40) {
		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, data, (size_t)c, 0) == c, "write cut");
		int r;
		long n = read_all(cut, &r, c % 2);
		CHECK(n >= prev || c % 2 != (c - 1 - (c - 1) / 40) % 2, "cut %ld: %ld events after %ld", c, n, prev);
		CHECK(c == size ? r == 0 : (r == 0 || r == ARR_ETRUNCATED || r == ARR_EBADMAGIC),
		      "cut at %ld: rc %d (%s)", c, r, arr_strerror(r));
		prev = n;
	}
	/* 4. bit flips: an error or a valid read, never a crash (ASan watches) */
	for (int k = 0; k < 400; k++) {
		uint8_t *b = malloc((size_t)size);
		memcpy(b, data, (size_t)size);
		for (int j = 0; j < 1 + k % 4; j++)
			b[rnd() % (uint64_t)size] ^= (uint8_t)(1u << (rnd() % 8));
		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, b, (size_t)size, 0) == size, "write flip");
		int r;
		read_all(cut, &r, k % 2);
		free(b);
	}
	close(fd);
	unlink(cut);
	unlink(path);
	free(data);
	puts("ok");
	return 0;
}

/*
 * layout.c - the fixed fields are where docs/trace-format.md puts them, in
 * little-endian order, on any host: the writer's bytes are compared with
 * offsets and byte values written out here from the document (not taken
 * from format.h), and the reader is handed a trace built byte by byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "allocrr/trace.h"
#include "writer.h"

#include "check.h"

/* The value of n little-endian bytes at p, spelled out. */
static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_helpers(void)
{
	const uint8_t b[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
	CHECK(arr_le16_read(b) == 0x0201, "%#x", arr_le16_read(b));
	CHECK(arr_le32_read(b + 1) == 0x05040302, "%#x", arr_le32_read(b + 1)); /* unaligned */
	CHECK(arr_le64_read(b) == 0x0807060504030201ull, "%#llx", (unsigned long long)arr_le64_read(b));
	uint8_t w[9] = {0};
	arr_le64_write(w + 1, 0x1122334455667788ull);
	CHECK(w[1] == 0x88 && w[8] == 0x11, "%02x %02x", w[1], w[8]);
	arr_le32_write(w, 0xa1b2c3d4u);
	CHECK(w[0] == 0xd4 && w[3] == 0xa1, "%02x %02x", w[0], w[3]);
	arr_le16_write(w, 0xbeef);
	CHECK(w[0] == 0xef && w[1] == 0xbe, "%02x %02x", w[0], w[1]);
}

static void check_writer(void)
{
	/* header: magic[8] major:u16 minor:u16 hdr_size:u32 features:u64 tlv* */
	uint8_t h[512];
	struct arr_header_info hi = {.pid = 0x123456,
				     .ppid = 1,
				     .page_size = 4096,
				     .time_unit_ns = 16,
				     .features = 0x8 /* stacks: format 1.2 */,
				     .exe = "/bin/x"};
	long n = arr__encode_header(&hi, h, sizeof h);
	CHECK(n > 24, "%ld", n);
	CHECK(!memcmp(h,
		      "\x89"
		      "ATRACE\n",
		      8),
	      "magic");
	CHECK(le(h + 8, 2) == 1 && le(h + 10, 2) == 2, "version %llu.%llu", (unsigned long long)le(h + 8, 2),
	      (unsigned long long)le(h + 10, 2));
	CHECK(le(h + 12, 4) == (uint64_t)n, "hdr_size %llu, wrote %ld", (unsigned long long)le(h + 12, 4), n);
	CHECK(le(h + 16, 8) == 0x8, "features");
	/* the first TLV: key 1 (pid), len 8, i64 */
	CHECK(le(h + 24, 2) == 1 && le(h + 26, 4) == 8 && le(h + 30, 8) == 0x123456, "pid TLV");

	/* end chunk: sync:u32 type:u16 flags:u16 body_size:u32, reason:u32 status:i32 t:u64 events:u64 */
	uint8_t e[64];
	size_t m = arr__encode_end(e, 3, -9, 0x0102030405ull, 77);
	CHECK(m == 36, "%zu", m);
	CHECK(!memcmp(e, "CHNK", 4) && le(e, 4) == 0x4B4E4843, "sync");
	CHECK(le(e + 4, 2) == 2 && le(e + 6, 2) == 0 && le(e + 8, 4) == 24, "end prefix");
	CHECK(le(e + 12, 4) == 3 && (int32_t)le(e + 16, 4) == -9, "reason, status");
	CHECK(le(e + 20, 8) == 0x0102030405ull && le(e + 28, 8) == 77, "t, events");

	/* events chunk: tid:u32 nevents:u32 first_t:u64 last_t:u64 raw_size:u32 reserved:u32 frame */
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	CHECK(arr__encoder_init(&enc, &mem, 64, 1, 16) == 0, "encoder");
	uint64_t w[] = {ARR_RAW_W0(ARR_OP_MALLOC, 0, 1600), 24, 0x7f0000001000ull, ARR_RAW_W0(ARR_OP_FREE, 0, 3200),
			0x7f0000001000ull};
	uint8_t *out = malloc(arr__encoder_bound(&enc));
	long c = arr__encode_events(&enc, 4242, w, sizeof w / sizeof *w, out, arr__encoder_bound(&enc));
	CHECK(c > 44, "%ld", c);
	CHECK(le(out, 4) == 0x4B4E4843 && le(out + 4, 2) == 1 && le(out + 6, 2) == 0, "events prefix");
	CHECK(le(out + 8, 4) == (uint64_t)c - 12, "body_size %llu of %ld", (unsigned long long)le(out + 8, 4), c);
	CHECK(le(out + 12, 4) == 4242 && le(out + 16, 4) == 2, "tid, nevents");
	CHECK(le(out + 20, 8) == 1600 && le(out + 28, 8) == 3200, "first_t %llu, last_t %llu",
	      (unsigned long long)le(out + 20, 8), (unsigned long long)le(out + 28, 8));
	CHECK(le(out + 36, 4) > 8 && le(out + 40, 4) == 0, "raw_size, reserved");
	CHECK(le(out + 44, 4) == 0xFD2FB528u, "a zstd frame follows the 32-byte header");
	free(out);
	arr__encoder_release(&enc);
}

/* A trace spelled byte by byte: header with a page-size TLV, then an END. */
static void check_reader(const char *dir)
{
	static const uint8_t t[] = {
		0x89, 'A',  'T',  'R',  'A', 'C', 'E', '\n',                    /* magic */
		1,    0,    1,    0,                                            /* 1.1 */
		38,   0,    0,    0,                                            /* hdr_size: 24 + 14 */
		0x04, 0,    0,    0,    0,   0,   0,   0,                       /* features: marks */
		5,    0,    8,    0,    0,   0,   0,   0x40, 0,  0, 0, 0, 0, 0, /* page_size = 16384 */
		'C',  'H',  'N',  'K',  2,   0,   0,   0,    24, 0, 0, 0,       /* END chunk */
		1,    0,    0,    0,    7,   0,   0,   0,                       /* exit, status 7 */
		0x00, 0xe1, 0xf5, 0x05, 0,   0,   0,   0,                       /* t = 100,000,000 */
		0x39, 0x30, 0,    0,    0,   0,   0,   0,                       /* events = 12345 */
	};
	char path[4096];
	snprintf(path, sizeof path, "%s/layout-%d.atr", dir, (int)getpid());
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(t, 1, sizeof t, f) == sizeof t && fclose(f) == 0, "cannot write %s", path);
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	CHECK(rc == 0, "open: %s at %llu", arr_strerror(rc), tr ? (unsigned long long)arr_trace_error_offset(tr) : 0);
	const struct arr_trace_meta *m = arr_trace_meta(tr);
	CHECK(m->major == 1 && m->minor == 1 && m->features == 4 && m->page_size == 16384, "meta %u.%u %llu %llu",
	      m->major, m->minor, (unsigned long long)m->features, (unsigned long long)m->page_size);
	struct arr_chunk_info ci;
	CHECK((rc = arr_trace_next_chunk(tr, &ci)) == 0, "next: %d", rc);
	const struct arr_trace_end *end = arr_trace_end(tr);
	CHECK(end->present && end->reason == 1 && end->status == 7 && end->t == 100000000 && end->events == 12345,
	      "end %u %d %llu %llu", end->reason, end->status, (unsigned long long)end->t,
	      (unsigned long long)end->events);
	arr_trace_close(tr);
	unlink(path);
}

/*
 * Format 1.3: a header with bit 4 (rss_peak) says 1.3, an rss_peak event
 * (op 22, size) reads back; an operation this reader does not know fails
 * as corrupt in a trace of its own minor, and as a newer format
 * (ARR_EVERSION, the versions named) in a trace of a later minor. The
 * unknown operation is made by rewriting the op byte of an encoded chunk.
 */
static int read_one(const char *path, uint8_t *buf, size_t n, struct arr_event *ev, char *why, size_t cap)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(buf, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
	struct arr_trace *tr;
	int rc = arr_trace_open(&tr, path);
	CHECK(rc == 0, "open: %s", arr_strerror(rc));
	struct arr_chunk_info ci;
	const struct arr_event *evs;
	if ((rc = arr_trace_next_chunk(tr, &ci)) == 1 && (rc = arr_trace_read_chunk(tr, &evs)) == 1)
		*ev = evs[0];
	snprintf(why, cap, "%s", arr_trace_error_detail(tr));
	arr_trace_close(tr);
	unlink(path);
	return rc;
}

static void check_rss_peak(const char *dir)
{
	struct arr_mem mem = ARR_MEM_HEAP;
	struct arr_encoder enc;
	CHECK(arr__encoder_init(&enc, &mem, 64, 1, 16) == 0, "encoder");
	size_t cap = 4096 + arr__encoder_bound(&enc);
	uint8_t *buf = malloc(cap);
	CHECK(buf, "malloc");
	struct arr_header_info hi = {.page_size = 4096, .time_unit_ns = 16, .features = 0x10, .exe = "/bin/x"};
	long h = arr__encode_header(&hi, buf, 4096);
	CHECK(h > 24 && le(buf + 8, 2) == 1 && le(buf + 10, 2) == 3, "rss_peak header: version %llu.%llu",
	      (unsigned long long)le(buf + 8, 2), (unsigned long long)le(buf + 10, 2));
	uint64_t w[] = {ARR_RAW_W0(ARR_OP_RSS_PEAK, 0, 1600), 6u << 20};
	long c = arr__encode_events(&enc, 0, w, 2, buf + h, cap - (size_t)h);
	arr__encoder_release(&enc);
	CHECK(c > 44, "%ld", c);
	char path[4096], why[256];
	snprintf(path, sizeof path, "%s/layout13-%d.atr", dir, (int)getpid());
	struct arr_event ev = {0};
	int rc = read_one(path, buf, (size_t)(h + c), &ev, why, sizeof why);
	CHECK(rc == 1 && ev.op == ARR_OP_RSS_PEAK && ev.size == 6u << 20 && ev.tid == 0 && ev.t == 1600,
	      "rss_peak read back: %d (%s) op %u size %llu", rc, why, ev.op, (unsigned long long)ev.size);
	CHECK(!strcmp(arr_op_name(ARR_OP_RSS_PEAK), "rss_peak"), "name");

	/* the payload: 8 column lengths (one byte each here), then the op column */
	uint8_t raw[256], *z = buf + h + 44;
	size_t zsize = (size_t)c - 44;
	size_t rn = ZSTD_decompress(raw, sizeof raw, z, zsize);
	CHECK(!ZSTD_isError(rn) && raw[0] == 1 && raw[8] == ARR_OP_RSS_PEAK, "payload %zu: op %u", rn, raw[8]);
	raw[8] = 23; /* an operation of a later minor */
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	uint8_t nz[512];
	size_t nzs = ZSTD_compress2(cc, nz, sizeof nz, raw, rn);
	ZSTD_freeCCtx(cc);
	CHECK(!ZSTD_isError(nzs), "recompress");
	memcpy(z, nz, nzs);
	arr_le32_write(buf + h + 8, (uint32_t)(32 + nzs)); /* body_size */
	size_t total = (size_t)h + 44 + nzs;
	rc = read_one(path, buf, total, &ev, why, sizeof why);
	CHECK(rc == ARR_ECORRUPT && !strcmp(why, "bad event data: unknown operation"), "op 23 in 1.3: %s (%s)",
	      arr_strerror(rc), why);
	arr_le16_write(buf + 10, 4);
	rc = read_one(path, buf, total, &ev, why, sizeof why);
	CHECK(rc == ARR_EVERSION && strstr(why, "format 1.4 is newer than this reader's 1.3"), "op 23 in 1.4: %s (%s)",
	      arr_strerror(rc), why);
	free(buf);
}

int main(int argc, char **argv)
{
	check_helpers();
	check_writer();
	check_reader(argc > 1 ? argv[1] : ".");
	check_rss_peak(argc > 1 ? argv[1] : ".");
	printf("layout: ok\n");
	return 0;
}

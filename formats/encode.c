/*
 * encode.c - raw recorder records to trace chunks (see writer.h).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <string.h>

#include "allocrr/compiler.h"
#include "varint.h"

#ifndef ARR_ENC_MAP_SLOTS
#define ARR_ENC_MAP_SLOTS 4096 /* a power of two */
#endif
#include "writer.h"

static void *zalloc(void *opaque, size_t size)
{
	struct arr_mem *mem = opaque;
	/* Keep the size in front so zfree can hand it back. */
	uint8_t *p = mem->alloc(size + 16, mem->ctx);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof size);
	return p + 16;
}

static void zfree(void *opaque, void *addr)
{
	struct arr_mem *mem = opaque;
	if (!addr)
		return;
	uint8_t *p = (uint8_t *)addr - 16;
	size_t size;
	memcpy(&size, p, sizeof size);
	mem->free(p, size + 16, mem->ctx);
}

int arr__encoder_init(struct arr_encoder *enc, const struct arr_mem *mem, size_t max_words, int level,
		      uint32_t time_unit)
{
	memset(enc, 0, sizeof *enc);
	enc->mem = *mem;
	enc->max_words = max_words;
	if (!time_unit || (time_unit & (time_unit - 1)))
		return ARR_EINVAL;
	enc->time_shift = (unsigned)__builtin_ctz(time_unit);
	/* An event has >= 1 word and adds <= 9 bytes to a column (a time delta
	 * has 56 bits); the blob column holds at most the raw bytes themselves. */
	enc->col_cap = max_words * 10 + 64;
	for (int i = 0; i < ARR_NCOLS_MAX; i++) {
		enc->col[i] = mem->alloc(enc->col_cap, mem->ctx);
		if (!enc->col[i])
			goto nomem;
	}
	for (int i = 0; i < 2; i++)
		if (!(enc->aux[i] = mem->alloc(enc->col_cap, mem->ctx)))
			goto nomem;
	enc->payload_cap = enc->col_cap * ARR_NCOLS_MAX + ARR_NCOLS_MAX * ARR_VARINT_MAX;
	enc->payload = mem->alloc(enc->payload_cap, mem->ctx);
	/* The map is a direct-mapped cache of recent addresses: small enough to
	 * stay in cache beside the program's own data (the flusher shares the
	 * machine with it), and always right: every update of an address goes
	 * to its one slot, so a hit is the latest; a miss only costs bytes. */
	uint32_t slots = ARR_ENC_MAP_SLOTS;
	enc->hmask = slots - 1;
	enc->map = mem->alloc(slots * sizeof *enc->map, mem->ctx);
	if (!enc->payload || !enc->map)
		goto nomem;
	ZSTD_customMem cm = {zalloc, zfree, &enc->mem};
	ZSTD_CCtx *cctx = ZSTD_createCCtx_advanced(cm);
	if (!cctx)
		goto nomem;
	enc->cctx = cctx;
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	return 0;
nomem:
	arr__encoder_release(enc);
	return ARR_ENOMEM;
}

void arr__encoder_release(struct arr_encoder *enc)
{
	struct arr_mem *mem = &enc->mem;
	if (enc->cctx)
		ZSTD_freeCCtx(enc->cctx);
	for (int i = 0; i < ARR_NCOLS_MAX; i++)
		if (enc->col[i])
			mem->free(enc->col[i], enc->col_cap, mem->ctx);
	for (int i = 0; i < 2; i++)
		if (enc->aux[i])
			mem->free(enc->aux[i], enc->col_cap, mem->ctx);
	if (enc->payload)
		mem->free(enc->payload, enc->payload_cap, mem->ctx);
	if (enc->map)
		mem->free(enc->map, ((size_t)enc->hmask + 1) * sizeof *enc->map, mem->ctx);
	memset(enc, 0, sizeof *enc);
}

size_t arr__encoder_bound(const struct arr_encoder *enc)
{
	/* Stack and module chunks: at most 10 bytes per raw word (a module
	 * entry: 35 bytes for 4 words, then its bytes). */
	return 3 * ARR_CHUNK_PREFIX + ARR_EVENTS_HDR + ZSTD_compressBound(enc->payload_cap) + ARR_STACKS_HDR +
	       ARR_MODULES_HDR + enc->col_cap;
}

static inline uint32_t hash_ptr(uint64_t p) { return (uint32_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 32); }

/* Map values: an allocation number, or a free number with MAP_FREED; a
 * slot packs one under the address's low 48 bits. A hit only needs to name
 * some event of this chunk with that address (any allocation that returned
 * p decodes to p, any free of p too), so numbers of 2^15 and more, and
 * addresses with high bits set, are simply not remembered: they miss. An
 * empty slot is 0, which no entry is (NULL is never stored). */
#define MAP_FREED 0x8000u
#define MAP_KEY(p) ((p) << 16)

/* Remember that allocation number n (or free number n, with freed =
 * MAP_FREED) concerned p. */
static inline void map_put(uint64_t *map, uint32_t hmask, uint64_t p, uint32_t n, uint32_t freed)
{
	if ((p >> 48) || n >= MAP_FREED)
		return;
	map[hash_ptr(p) & hmask] = MAP_KEY(p) | freed | n;
}

static inline int map_get(const uint64_t *map, uint32_t hmask, uint64_t p, uint32_t *idx)
{
	uint64_t s = map[hash_ptr(p) & hmask];
	if ((s & ~0xffffull) != MAP_KEY(p) || (p >> 48) || !p)
		return 0;
	*idx = (uint32_t)(s & 0xffff);
	return 1;
}

/*
 * Encoding one run of raw records, in the mirror image of trace_read.c: one
 * helper per column family (encode_ptr / decode_ptr, ...), each writing
 * exactly what its decode_* twin reads.
 */
#define HOT static ARR_ALWAYS_INLINE

struct run {
	/* copies of the encoder's settings: the loop's byte stores could alias
	 * *enc, not a local copy, so these stay in registers */
	uint64_t *map;
	uint32_t hmask;
	unsigned shift;
	uint64_t t_base, t_mult;
	int stacks;
	uint8_t *c[ARR_NCOLS_MAX]; /* each column's end */
	uint8_t *sn, *mo;          /* ends of the stack nodes and module entries */
	uint32_t nnodes, nmods;
	uint64_t prev_addr; /* the previous stack node's address */
	uint64_t prev_sid;  /* the previous stack id */
	uint64_t first_t, last_t, prev_q;
	uint64_t prev_ret;  /* the previous returned pointer */
	uint64_t prev_miss; /* the previous pointer argument coded as a delta */
	uint32_t nallocs, nfrees, nevents;
};

#define PUT(r, col, v) ((r)->c[col] = arr__put_uvarint((r)->c[col], (v)))

/* A raw timestamp in ns since the start, through the clock map. */
HOT uint64_t map_time(const struct run *r, uint64_t t)
{
	if (r->t_mult)
		t = t > r->t_base ? (uint64_t)(((unsigned __int128)(t - r->t_base) * r->t_mult) >> 32) : 0;
	return t;
}

/* n new stack nodes: pairs of (id | parent << 32, address). */
HOT void encode_stack_nodes(struct run *r, const uint64_t *a, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t id = a[2 * k] & 0xffffffffu, parent = a[2 * k] >> 32, addr = a[2 * k + 1];
		r->sn = arr__put_uvarint(r->sn, id);
		r->sn = arr__put_uvarint(r->sn, parent);
		r->sn = arr__put_uvarint(r->sn, arr__zigzag((int64_t)(addr - r->prev_addr)));
		r->prev_addr = addr;
	}
	r->nnodes += (uint32_t)n;
}

/* One module entry from base, size, lengths, then build id and path. */
HOT void encode_module(struct run *r, uint64_t w0, const uint64_t *a)
{
	uint8_t *mo = r->mo;
	size_t bl = a[2] & 0xff, pl = (a[2] >> 8) & 0xffff;
	mo[ARR_ME_KIND] = (uint8_t)(a[2] >> 24);
	arr_le64_write(mo + ARR_ME_T, map_time(r, ARR_RAW_T(w0)));
	arr_le64_write(mo + ARR_ME_BASE, a[0]);
	arr_le64_write(mo + ARR_ME_SIZE, a[1]);
	mo[ARR_ME_BUILD_ID_LEN] = (uint8_t)bl;
	memcpy(mo + ARR_ME_FIXED, a + 3, bl);
	mo += ARR_ME_FIXED + bl;
	arr_le16_write(mo, (uint16_t)pl);
	memcpy(mo + ARR_ME_PATH_LEN, (const uint8_t *)(a + 3) + bl, pl);
	r->mo = mo + ARR_ME_PATH_LEN + pl;
	r->nmods++;
}

HOT void encode_time(struct run *r, uint64_t w0)
{
	const unsigned shift = r->shift;
	uint64_t t = map_time(r, ARR_RAW_T(w0));
	if (r->nevents == 0) {
		r->prev_q = t >> shift;
		r->first_t = r->prev_q << shift;
	}
	if (t < r->last_t)
		t = r->last_t; /* never let time run backwards within a thread */
	r->last_t = t;
	uint64_t q = t >> shift;
	PUT(r, ARR_COL_TIME, q - r->prev_q);
	r->prev_q = q;
}

HOT void encode_stack(struct run *r, uint64_t sid)
{
	PUT(r, ARR_COL_STACK, arr__zigzag((int64_t)(sid - r->prev_sid)));
	r->prev_sid = sid;
}

/*
 * The argument words' shape of each operation, made from its facts in
 * ARR_OP_MAP (words in the order ptr, nmemb or align or pid, size or
 * amount, ret, string): one load and one indexed jump per event, where
 * testing each fact costs a branch apiece.
 */
enum { S_NONE, S_SIZE_RET, S_AUX_SIZE_RET, S_PTR_SIZE_RET, S_PTR_AUX_SIZE_RET, S_PTR, S_PID, S_AMOUNT, S_STR };
#define AUX_F (ARR_OPF_NMEMB | ARR_OPF_ALIGN)
#define SHAPE(f)                                                                  \
	((f)&ARR_OPF_STR      ? S_STR                                             \
	 : (f)&ARR_OPF_PID    ? S_PID                                             \
	 : (f)&ARR_OPF_AMOUNT ? S_AMOUNT                                          \
	 : !((f)&ARR_OPF_RET) ? ((f)&ARR_OPF_PTR ? S_PTR : S_NONE)                \
	 : (f)&ARR_OPF_PTR    ? ((f)&AUX_F ? S_PTR_AUX_SIZE_RET : S_PTR_SIZE_RET) \
			      : ((f)&AUX_F ? S_AUX_SIZE_RET : S_SIZE_RET))
static const uint8_t op_shape[ARR_OP_MAX_] = {
#define OP_SHAPE(name, val, str, args, facts) [val] = SHAPE(facts),
	ARR_OP_MAP(OP_SHAPE)
#undef OP_SHAPE
};
/* The shapes assume what every allocating call has: a size. */
#define OP_SHAPE_OK(name, val, str, args, facts) \
	_Static_assert(!((facts)&ARR_OPF_RET) || ((facts)&ARR_OPF_SIZE), #name " returns a block of no size");
ARR_OP_MAP(OP_SHAPE_OK)
#undef OP_SHAPE_OK

/* The argument words to the aux, size and blob columns; the pointers are
 * left in *ptr and *ret, and which of the two the call has is returned. */
enum { HAS_PTR = 1, HAS_RET = 2 };
HOT unsigned encode_args(struct run *r, unsigned op, const uint64_t *a, uint64_t *ptr, uint64_t *ret)
{
	switch (op_shape[op]) {
	case S_SIZE_RET:
		PUT(r, ARR_COL_SIZE, a[0]);
		*ret = a[1];
		return HAS_RET;
	case S_AUX_SIZE_RET:
		PUT(r, ARR_COL_AUX, a[0]);
		PUT(r, ARR_COL_SIZE, a[1]);
		*ret = a[2];
		return HAS_RET;
	case S_PTR_SIZE_RET:
		*ptr = a[0];
		PUT(r, ARR_COL_SIZE, a[1]);
		*ret = a[2];
		return HAS_PTR | HAS_RET;
	case S_PTR_AUX_SIZE_RET:
		*ptr = a[0];
		PUT(r, ARR_COL_AUX, a[1]);
		PUT(r, ARR_COL_SIZE, a[2]);
		*ret = a[3];
		return HAS_PTR | HAS_RET;
	case S_PTR:
		*ptr = a[0];
		return HAS_PTR;
	case S_PID:
		PUT(r, ARR_COL_AUX, arr__zigzag((int64_t)a[0]));
		break;
	case S_AMOUNT:
		PUT(r, ARR_COL_SIZE, a[0]);
		break;
	case S_STR: {
		uint64_t len = a[0];
		PUT(r, ARR_COL_BLOB, len);
		memcpy(r->c[ARR_COL_BLOB], a + 1, len);
		r->c[ARR_COL_BLOB] += len;
		break;
	}
	default: /* thread start and exit carry no arguments */
		break;
	}
	return 0;
}

/* The pointer argument: NULL, the age of an allocation, or a delta. */
HOT void encode_ptr(struct run *r, uint64_t ptr)
{
	uint32_t idx;
	uint64_t v;
	if (ptr == 0) {
		v = 0;
	} else if (map_get(r->map, r->hmask, ptr, &idx) && !(idx & MAP_FREED)) {
		v = ((uint64_t)(r->nallocs - idx) << 1) | 1;
	} else {
		uint64_t zz = arr__zigzag((int64_t)(ptr - r->prev_miss));
		r->prev_miss = ptr;
		if (zz < (1ull << 62)) {
			v = 4 + (zz << 1);
		} else { /* escape: the delta follows whole */
			PUT(r, ARR_COL_PTR, 2);
			v = zz;
		}
	}
	PUT(r, ARR_COL_PTR, v);
	if (ptr) /* remember it as freed: allocators hand such blocks out next */
		map_put(r->map, r->hmask, ptr, r->nfrees++, MAP_FREED);
}

/* The returned pointer: the age of a free, or a delta. */
HOT void encode_ret(struct run *r, uint64_t ret)
{
	uint32_t idx;
	uint64_t v;
	if (map_get(r->map, r->hmask, ret, &idx) && (idx & MAP_FREED)) {
		v = ((uint64_t)(r->nfrees - (idx & ~MAP_FREED)) << 1) | 1;
	} else {
		uint64_t zz = arr__zigzag((int64_t)(ret - r->prev_ret));
		if (zz < (1ull << 62)) {
			v = 2 + (zz << 1);
		} else { /* escape: the delta follows whole */
			PUT(r, ARR_COL_RET, 0);
			v = zz;
		}
	}
	PUT(r, ARR_COL_RET, v);
	r->prev_ret = ret;
	map_put(r->map, r->hmask, ret, r->nallocs++, 0);
}

/* One event record of `words` words at w. */
HOT void encode_event(struct run *r, const uint64_t *w, size_t words)
{
	uint64_t w0 = w[0];
	unsigned op = ARR_RAW_OP(w0), failed = ARR_RAW_FAILED(w0);
	const uint64_t *a = w + 1;
	encode_time(r, w0);
	*r->c[ARR_COL_OP]++ = (uint8_t)(op | (failed ? ARR_OPF_FAILED : 0));
	if (failed)
		PUT(r, ARR_COL_ERR, arr__zigzag((int32_t)w[words - 1]));
	uint64_t ptr = 0, ret = 0;
	unsigned has = encode_args(r, op, a, &ptr, &ret);
	if (r->stacks && (has & HAS_RET))
		encode_stack(r, (w0 & ARR_RAW_HAS_STACK) ? a[arr_op_raw_args(op)] : 0);
	if (has & HAS_PTR) /* the argument before the result: realloc(p) frees p first */
		encode_ptr(r, ptr);
	if ((has & HAS_RET) && !failed)
		encode_ret(r, ret);
	r->nevents++;
}

/* The run's new stack nodes and modules, each as a chunk, at out: a reader
 * meets a node before its use. Returns the bytes written. */
static size_t write_stack_chunks(const struct arr_encoder *enc, const struct run *r, uint32_t tid, uint8_t *out)
{
	uint8_t *start = out;
	if (r->nnodes) {
		size_t len = (size_t)(r->sn - enc->aux[0]);
		arr__chunk_prefix_write(out, ARR_CHUNK_STACKS, 0, (uint32_t)(ARR_STACKS_HDR + len));
		arr_le32_write(out + ARR_CHUNK_PREFIX + ARR_SH_TID, tid);
		arr_le32_write(out + ARR_CHUNK_PREFIX + ARR_SH_COUNT, r->nnodes);
		memcpy(out + ARR_CHUNK_PREFIX + ARR_STACKS_HDR, enc->aux[0], len);
		out += ARR_CHUNK_PREFIX + ARR_STACKS_HDR + len;
	}
	if (r->nmods) {
		size_t len = (size_t)(r->mo - enc->aux[1]);
		arr__chunk_prefix_write(out, ARR_CHUNK_MODULES, 0, (uint32_t)(ARR_MODULES_HDR + len));
		arr_le32_write(out + ARR_CHUNK_PREFIX + ARR_MH_COUNT, r->nmods);
		arr_le32_write(out + ARR_CHUNK_PREFIX + ARR_MH_RESERVED, 0);
		memcpy(out + ARR_CHUNK_PREFIX + ARR_MODULES_HDR, enc->aux[1], len);
		out += ARR_CHUNK_PREFIX + ARR_MODULES_HDR + len;
	}
	return (size_t)(out - start);
}

/* The events chunk: column lengths, then the columns, compressed. Returns
 * its size or a negative code. */
static long write_events_chunk(struct arr_encoder *enc, const struct run *r, uint32_t tid, uint8_t *out, size_t out_cap)
{
	const int ncols = enc->stacks ? ARR_NCOLS_MAX : ARR_NCOLS;
	uint8_t *p = enc->payload;
	for (int k = 0; k < ncols; k++)
		p = arr__put_uvarint(p, (uint64_t)(r->c[k] - enc->col[k]));
	for (int k = 0; k < ncols; k++) {
		size_t len = (size_t)(r->c[k] - enc->col[k]);
		memcpy(p, enc->col[k], len);
		p += len;
	}
	size_t raw = (size_t)(p - enc->payload);

	uint8_t *body = out + ARR_CHUNK_PREFIX;
	size_t z = ZSTD_compress2(enc->cctx, body + ARR_EVENTS_HDR, out_cap - ARR_CHUNK_PREFIX - ARR_EVENTS_HDR,
				  enc->payload, raw);
	if (ZSTD_isError(z))
		return ARR_ECOMPRESS;
	size_t body_size = ARR_EVENTS_HDR + z;
	arr__chunk_prefix_write(out, ARR_CHUNK_EVENTS, enc->stacks ? ARR_EVF_STACKS : 0, (uint32_t)body_size);
	struct arr__events_hdr eh = {.tid = tid,
				     .nevents = r->nevents,
				     .first_t = r->first_t,
				     .last_t = r->last_t >> enc->time_shift << enc->time_shift,
				     .raw_size = (uint32_t)raw};
	arr__events_hdr_write(body, &eh);
	return (long)(ARR_CHUNK_PREFIX + body_size);
}

/* The records of one run into the columns and aux buffers of *out. The
 * loop works on a copy whose address never leaves the always-inline helpers,
 * so the compiler keeps it in registers. Returns 0 or ARR_EINVAL. */
static int encode_records(struct run *out, const uint64_t *w, size_t nwords)
{
	struct run r = *out;
	int rc = 0;
	for (size_t i = 0; i < nwords;) {
		unsigned op = ARR_RAW_OP(w[i]);
		if ((arr_op_facts(op) & ARR_OPF_STR) && (i + 1 >= nwords || w[i + 1] > (uint64_t)(nwords - i) * 8)) {
			rc = ARR_EINVAL;
			break;
		}
		size_t words = arr__raw_words(w + i);
		if (!words || i + words > nwords) {
			rc = ARR_EINVAL;
			break;
		}
		if (op == ARR_RAW_STACKS)
			encode_stack_nodes(&r, w + i + 1, (words - 1) / 2);
		else if (op == ARR_RAW_MODULE)
			encode_module(&r, w[i], w + i + 1);
		else
			encode_event(&r, w + i, words);
		i += words;
	}
	*out = r;
	return rc;
}

long arr__encode_events(struct arr_encoder *enc, uint32_t tid, const uint64_t *w, size_t nwords, uint8_t *out,
			size_t out_cap)
{
	if (nwords > enc->max_words)
		return ARR_ERANGE;
	if (out_cap < arr__encoder_bound(enc))
		return ARR_ERANGE;
	memset(enc->map, 0, ((size_t)enc->hmask + 1) * sizeof *enc->map);
	struct run r = {.map = enc->map,
			.hmask = enc->hmask,
			.shift = enc->time_shift,
			.t_base = enc->t_base,
			.t_mult = enc->t_mult,
			.stacks = enc->stacks,
			.sn = enc->aux[0],
			.mo = enc->aux[1]};
	for (int k = 0; k < ARR_NCOLS_MAX; k++)
		r.c[k] = enc->col[k];
	int rc = encode_records(&r, w, nwords);
	if (rc)
		return rc;

	size_t pre = write_stack_chunks(enc, &r, tid, out);
	enc->last_nevents = r.nevents;
	if (!r.nevents)
		return (long)pre;
	long n = write_events_chunk(enc, &r, tid, out + pre, out_cap - pre);
	return n < 0 ? n : (long)pre + n;
}

static uint8_t *put_tlv(uint8_t *p, uint8_t *end, uint16_t key, const void *val, size_t len)
{
	if (!p || (size_t)(end - p) < ARR_TLV_HDR + len)
		return NULL;
	arr_le16_write(p + ARR_TLV_KEY, key);
	arr_le32_write(p + ARR_TLV_LEN, (uint32_t)len);
	if (len)
		memcpy(p + ARR_TLV_HDR, val, len);
	return p + ARR_TLV_HDR + len;
}

static uint8_t *put_tlv_str(uint8_t *p, uint8_t *end, uint16_t key, const char *s)
{
	return s ? put_tlv(p, end, key, s, strlen(s)) : p;
}

static uint8_t *put_tlv_u64(uint8_t *p, uint8_t *end, uint16_t key, uint64_t v)
{
	uint8_t b[8];
	arr_le64_write(b, v);
	return put_tlv(p, end, key, b, 8);
}

long arr__encode_header(const struct arr_header_info *info, uint8_t *out, size_t cap)
{
	if (cap < ARR_FILE_HDR_FIXED)
		return ARR_ERANGE;
	uint8_t *end = out + cap;
	uint8_t *p = out + ARR_FILE_HDR_FIXED;
	p = put_tlv_u64(p, end, ARR_META_PID, (uint64_t)info->pid);
	p = put_tlv_u64(p, end, ARR_META_PPID, (uint64_t)info->ppid);
	p = put_tlv_u64(p, end, ARR_META_REALTIME_NS, info->realtime_ns);
	p = put_tlv_u64(p, end, ARR_META_MONOTONIC_NS, info->monotonic_ns);
	p = put_tlv_u64(p, end, ARR_META_PAGE_SIZE, info->page_size);
	p = put_tlv_u64(p, end, ARR_META_TIME_UNIT_NS, info->time_unit_ns);
	p = put_tlv_str(p, end, ARR_META_EXE, info->exe);
	if (info->argv)
		p = put_tlv(p, end, ARR_META_ARGV, info->argv, info->argv_len);
	p = put_tlv_str(p, end, ARR_META_LIBC, info->libc);
	p = put_tlv_str(p, end, ARR_META_RECORDER, info->recorder);
	p = put_tlv_str(p, end, ARR_META_PARENT_TRACE, info->parent_trace);
	if (info->stack_sample_bytes)
		p = put_tlv_u64(p, end, ARR_META_STACK_SAMPLE, info->stack_sample_bytes);
	if (!p)
		return ARR_ERANGE;
	struct arr__file_hdr h = {.major = ARR_TRACE_MAJOR,
				  .minor = ARR_TRACE_MINOR_WRITTEN(info->features),
				  .hdr_size = (uint32_t)(p - out),
				  .features = info->features};
	arr__file_hdr_write(out, &h);
	return p - out;
}

size_t arr__encode_end(uint8_t *out, unsigned reason, int status, uint64_t t, uint64_t events)
{
	arr__chunk_prefix_write(out, ARR_CHUNK_END, 0, ARR_END_BODY);
	struct arr__end_body e = {.reason = reason, .status = status, .t = t, .events = events};
	arr__end_body_write(out + ARR_CHUNK_PREFIX, &e);
	return ARR_CHUNK_PREFIX + ARR_END_BODY;
}

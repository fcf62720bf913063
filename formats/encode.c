/*
 * encode.c - raw recorder records to trace chunks (see writer.h).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <string.h>

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

int arr__encoder_init(struct arr_encoder *enc, const struct arr_mem *mem, size_t max_words,
		      int level, uint32_t time_unit)
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

static inline uint32_t hash_ptr(uint64_t p)
{
	return (uint32_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 32);
}

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
static inline void map_put(struct arr_encoder *enc, uint64_t p, uint32_t n, uint32_t freed)
{
	if ((p >> 48) || n >= MAP_FREED)
		return;
	enc->map[hash_ptr(p) & enc->hmask] = MAP_KEY(p) | freed | n;
}

static inline int map_get(const struct arr_encoder *enc, uint64_t p, uint32_t *idx)
{
	uint64_t s = enc->map[hash_ptr(p) & enc->hmask];
	if ((s & ~0xffffull) != MAP_KEY(p) || (p >> 48) || !p)
		return 0;
	*idx = (uint32_t)(s & 0xffff);
	return 1;
}

long arr__encode_events(struct arr_encoder *enc, uint32_t tid, const uint64_t *w, size_t nwords,
			uint8_t *out, size_t out_cap)
{
	if (nwords > enc->max_words)
		return ARR_ERANGE;
	if (out_cap < arr__encoder_bound(enc))
		return ARR_ERANGE;
	memset(enc->map, 0, ((size_t)enc->hmask + 1) * sizeof *enc->map);
	uint8_t *c[ARR_NCOLS_MAX];
	for (int i = 0; i < ARR_NCOLS_MAX; i++)
		c[i] = enc->col[i];
	uint8_t *sn = enc->aux[0], *mo = enc->aux[1];
	uint32_t nnodes = 0, nmods = 0;
	uint64_t prev_addr = 0, prev_sid = 0;
	const int stacks = enc->stacks;

	const unsigned shift = enc->time_shift;
	const uint64_t base = enc->t_base, mult = enc->t_mult;
	uint64_t first_t = 0, last_t = 0, prev_q = 0;
	uint64_t prev_ret = 0, prev_miss = 0;
	uint32_t nallocs = 0, nfrees = 0, nevents = 0;
	size_t i = 0;
	while (i < nwords) {
		uint64_t w0 = w[i];
		unsigned op = ARR_RAW_OP(w0);
		if ((arr_op_facts(op) & ARR_OPF_STR) && (i + 1 >= nwords || w[i + 1] > (uint64_t)(nwords - i) * 8))
			return ARR_EINVAL;
		size_t words = arr__raw_words(w + i);
		if (!words || i + words > nwords)
			return ARR_EINVAL;
		const uint64_t *a = w + i + 1;
		if (op == ARR_RAW_STACKS) {
			size_t n = (words - 1) / 2;
			for (size_t k = 0; k < n; k++) {
				uint64_t id = a[2 * k] & 0xffffffffu, parent = a[2 * k] >> 32, addr = a[2 * k + 1];
				sn = arr__put_uvarint(sn, id);
				sn = arr__put_uvarint(sn, parent);
				sn = arr__put_uvarint(sn, arr__zigzag((int64_t)(addr - prev_addr)));
				prev_addr = addr;
			}
			nnodes += (uint32_t)n;
			i += words;
			continue;
		}
		if (op == ARR_RAW_MODULE) {
			uint64_t t = ARR_RAW_T(w0);
			if (mult)
				t = t > base ? (uint64_t)(((unsigned __int128)(t - base) * mult) >> 32) : 0;
			size_t bl = a[2] & 0xff, pl = (a[2] >> 8) & 0xffff;
			*mo++ = (uint8_t)(a[2] >> 24);
			arr__put_u64(mo, t);
			mo += 8;
			arr__put_u64(mo, a[0]);
			arr__put_u64(mo + 8, a[1]);
			mo[16] = (uint8_t)bl;
			memcpy(mo + 17, a + 3, bl);
			mo += 17 + bl;
			arr__put_u16(mo, (uint16_t)pl);
			memcpy(mo + 2, (const uint8_t *)(a + 3) + bl, pl);
			mo += 2 + pl;
			nmods++;
			i += words;
			continue;
		}
		uint64_t t = ARR_RAW_T(w0);
		if (mult)
			t = t > base ? (uint64_t)(((unsigned __int128)(t - base) * mult) >> 32) : 0;
		if (nevents == 0) {
			prev_q = t >> shift;
			first_t = prev_q << shift;
		}
		if (t < last_t)
			t = last_t; /* never let time run backwards within a thread */
		last_t = t;
		uint64_t q = t >> shift;
		c[ARR_COL_TIME] = arr__put_uvarint(c[ARR_COL_TIME], q - prev_q);
		prev_q = q;

		unsigned failed = ARR_RAW_FAILED(w0);
		*c[ARR_COL_OP]++ = (uint8_t)(op | (failed ? ARR_OPF_FAILED : 0));
		if (failed)
			c[ARR_COL_ERR] = arr__put_uvarint(c[ARR_COL_ERR], arr__zigzag((int32_t)w[i + words - 1]));

		if (stacks && (arr_op_facts(op) & ARR_OPF_RET)) {
			uint64_t sid = (w0 & ARR_RAW_HAS_STACK) ? a[arr_op_raw_args(op)] : 0;
			c[ARR_COL_STACK] = arr__put_uvarint(c[ARR_COL_STACK], arr__zigzag((int64_t)(sid - prev_sid)));
			prev_sid = sid;
		}

		uint64_t ptr_arg = 0, ret = 0;
		int has_ptr = 0, has_ret = 0;
		switch (op) {
		case ARR_OP_MALLOC:
		case ARR_OP_VALLOC:
		case ARR_OP_PVALLOC:
			c[ARR_COL_SIZE] = arr__put_uvarint(c[ARR_COL_SIZE], a[0]);
			ret = a[1], has_ret = 1;
			break;
		case ARR_OP_CALLOC:
		case ARR_OP_POSIX_MEMALIGN:
		case ARR_OP_ALIGNED_ALLOC:
		case ARR_OP_MEMALIGN:
			c[ARR_COL_AUX] = arr__put_uvarint(c[ARR_COL_AUX], a[0]);
			c[ARR_COL_SIZE] = arr__put_uvarint(c[ARR_COL_SIZE], a[1]);
			ret = a[2], has_ret = 1;
			break;
		case ARR_OP_REALLOC:
			ptr_arg = a[0], has_ptr = 1;
			c[ARR_COL_SIZE] = arr__put_uvarint(c[ARR_COL_SIZE], a[1]);
			ret = a[2], has_ret = 1;
			break;
		case ARR_OP_REALLOCARRAY:
			ptr_arg = a[0], has_ptr = 1;
			c[ARR_COL_AUX] = arr__put_uvarint(c[ARR_COL_AUX], a[1]);
			c[ARR_COL_SIZE] = arr__put_uvarint(c[ARR_COL_SIZE], a[2]);
			ret = a[3], has_ret = 1;
			break;
		case ARR_OP_FREE:
			ptr_arg = a[0], has_ptr = 1;
			break;
		case ARR_OP_FORK:
			c[ARR_COL_AUX] = arr__put_uvarint(c[ARR_COL_AUX], arr__zigzag((int64_t)a[0]));
			break;
		case ARR_OP_RSS:
			c[ARR_COL_SIZE] = arr__put_uvarint(c[ARR_COL_SIZE], a[0]);
			break;
		case ARR_OP_EXEC:
		case ARR_OP_MARK: {
			uint64_t len = a[0];
			c[ARR_COL_BLOB] = arr__put_uvarint(c[ARR_COL_BLOB], len);
			memcpy(c[ARR_COL_BLOB], a + 1, len);
			c[ARR_COL_BLOB] += len;
			break;
		}
		default: /* thread start/exit carry no arguments */
			break;
		}

		/* The argument pointer before the result: realloc(p) frees p first. */
		if (has_ptr) {
			uint32_t idx;
			uint64_t v;
			if (ptr_arg == 0)
				v = 0;
			else if (map_get(enc, ptr_arg, &idx) && !(idx & MAP_FREED))
				v = ((uint64_t)(nallocs - idx) << 1) | 1;
			else {
				uint64_t zz = arr__zigzag((int64_t)(ptr_arg - prev_miss));
				prev_miss = ptr_arg;
				if (zz < (1ull << 62)) {
					v = 4 + (zz << 1);
				} else { /* escape: the delta follows whole */
					c[ARR_COL_PTR] = arr__put_uvarint(c[ARR_COL_PTR], 2);
					v = zz;
				}
			}
			c[ARR_COL_PTR] = arr__put_uvarint(c[ARR_COL_PTR], v);
			if (ptr_arg) /* remember it as freed: allocators hand such blocks out next */
				map_put(enc, ptr_arg, nfrees++, MAP_FREED);
		}
		if (has_ret && !failed) {
			uint32_t idx;
			uint64_t v;
			if (map_get(enc, ret, &idx) && (idx & MAP_FREED)) {
				v = ((uint64_t)(nfrees - (idx & ~MAP_FREED)) << 1) | 1;
			} else {
				uint64_t zz = arr__zigzag((int64_t)(ret - prev_ret));
				if (zz < (1ull << 62)) {
					v = 2 + (zz << 1);
				} else { /* escape: the delta follows whole */
					c[ARR_COL_RET] = arr__put_uvarint(c[ARR_COL_RET], 0);
					v = zz;
				}
			}
			c[ARR_COL_RET] = arr__put_uvarint(c[ARR_COL_RET], v);
			prev_ret = ret;
			map_put(enc, ret, nallocs++, 0);
		}
		nevents++;
		i += words;
	}

	/* New stack nodes and modules first: a reader meets a node before its use. */
	uint8_t *start = out;
	if (nnodes) {
		size_t len = (size_t)(sn - enc->aux[0]);
		arr__put_u32(out, ARR_CHUNK_SYNC);
		arr__put_u16(out + 4, ARR_CHUNK_STACKS);
		arr__put_u16(out + 6, 0);
		arr__put_u32(out + 8, (uint32_t)(ARR_STACKS_HDR + len));
		arr__put_u32(out + ARR_CHUNK_PREFIX, tid);
		arr__put_u32(out + ARR_CHUNK_PREFIX + 4, nnodes);
		memcpy(out + ARR_CHUNK_PREFIX + ARR_STACKS_HDR, enc->aux[0], len);
		out += ARR_CHUNK_PREFIX + ARR_STACKS_HDR + len;
	}
	if (nmods) {
		size_t len = (size_t)(mo - enc->aux[1]);
		arr__put_u32(out, ARR_CHUNK_SYNC);
		arr__put_u16(out + 4, ARR_CHUNK_MODULES);
		arr__put_u16(out + 6, 0);
		arr__put_u32(out + 8, (uint32_t)(ARR_MODULES_HDR + len));
		arr__put_u32(out + ARR_CHUNK_PREFIX, nmods);
		arr__put_u32(out + ARR_CHUNK_PREFIX + 4, 0);
		memcpy(out + ARR_CHUNK_PREFIX + ARR_MODULES_HDR, enc->aux[1], len);
		out += ARR_CHUNK_PREFIX + ARR_MODULES_HDR + len;
	}
	out_cap -= (size_t)(out - start);
	enc->last_nevents = nevents;
	if (!nevents)
		return (long)(out - start);

	/* Payload: column lengths, then the columns. */
	const int ncols = stacks ? ARR_NCOLS_MAX : ARR_NCOLS;
	uint8_t *p = enc->payload;
	for (int k = 0; k < ncols; k++)
		p = arr__put_uvarint(p, (uint64_t)(c[k] - enc->col[k]));
	for (int k = 0; k < ncols; k++) {
		size_t len = (size_t)(c[k] - enc->col[k]);
		memcpy(p, enc->col[k], len);
		p += len;
	}
	size_t raw = (size_t)(p - enc->payload);

	uint8_t *body = out + ARR_CHUNK_PREFIX;
	size_t z = ZSTD_compress2(enc->cctx, body + ARR_EVENTS_HDR,
				  out_cap - ARR_CHUNK_PREFIX - ARR_EVENTS_HDR, enc->payload, raw);
	if (ZSTD_isError(z))
		return ARR_ECOMPRESS;
	size_t body_size = ARR_EVENTS_HDR + z;
	arr__put_u32(out, ARR_CHUNK_SYNC);
	arr__put_u16(out + 4, ARR_CHUNK_EVENTS);
	arr__put_u16(out + 6, stacks ? ARR_EVF_STACKS : 0);
	arr__put_u32(out + 8, (uint32_t)body_size);
	arr__put_u32(body, tid);
	arr__put_u32(body + 4, nevents);
	arr__put_u64(body + 8, first_t);
	arr__put_u64(body + 16, last_t >> shift << shift);
	arr__put_u32(body + 24, (uint32_t)raw);
	arr__put_u32(body + 28, 0);
	return (long)(out - start) + (long)(ARR_CHUNK_PREFIX + body_size);
}

static uint8_t *put_tlv(uint8_t *p, uint8_t *end, uint16_t key, const void *val, size_t len)
{
	if (!p || (size_t)(end - p) < 6 + len)
		return NULL;
	arr__put_u16(p, key);
	arr__put_u32(p + 2, (uint32_t)len);
	if (len)
		memcpy(p + 6, val, len);
	return p + 6 + len;
}

static uint8_t *put_tlv_str(uint8_t *p, uint8_t *end, uint16_t key, const char *s)
{
	return s ? put_tlv(p, end, key, s, strlen(s)) : p;
}

static uint8_t *put_tlv_u64(uint8_t *p, uint8_t *end, uint16_t key, uint64_t v)
{
	uint8_t b[8];
	arr__put_u64(b, v);
	return put_tlv(p, end, key, b, 8);
}

long arr__encode_header(const struct arr_header_info *info, uint8_t *out, size_t cap)
{
	if (cap < ARR_FILE_HDR_FIXED)
		return ARR_ERANGE;
	uint8_t *end = out + cap;
	memcpy(out, ARR_MAGIC, ARR_MAGIC_LEN);
	arr__put_u16(out + 8, ARR_TRACE_MAJOR);
	arr__put_u16(out + 10, ARR_TRACE_MINOR_WRITTEN(info->features));
	arr__put_u64(out + 16, info->features);
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
	arr__put_u32(out + 12, (uint32_t)(p - out));
	return p - out;
}

size_t arr__encode_end(uint8_t *out, unsigned reason, int status, uint64_t t, uint64_t events)
{
	arr__put_u32(out, ARR_CHUNK_SYNC);
	arr__put_u16(out + 4, ARR_CHUNK_END);
	arr__put_u16(out + 6, 0);
	arr__put_u32(out + 8, ARR_END_BODY);
	uint8_t *b = out + ARR_CHUNK_PREFIX;
	arr__put_u32(b, reason);
	arr__put_u32(b + 4, (uint32_t)status);
	arr__put_u64(b + 8, t);
	arr__put_u64(b + 16, events);
	return ARR_CHUNK_PREFIX + ARR_END_BODY;
}

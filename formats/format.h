/*
 * format.h - on-disk constants of trace format v1, shared by the writer
 * (formats/encode.c, used by the recorder) and the reader; at the end, the
 * merge's internal block API (the analysis's merge thread).
 *
 * The normative description is docs/trace-format.md; keep the two in step.
 * All multi-byte fixed fields are little-endian.
 */
#ifndef ARR_FORMAT_H
#define ARR_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Little-endian fixed fields. memcpy keeps the access legal at any
 * alignment, and the swap happens only on a big-endian host, so on x86-64
 * each read or write is one mov (checked: gcc -O2, `objdump -d`).
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ARR__LE16(v) __builtin_bswap16(v)
#define ARR__LE32(v) __builtin_bswap32(v)
#define ARR__LE64(v) __builtin_bswap64(v)
#else
#define ARR__LE16(v) (v)
#define ARR__LE32(v) (v)
#define ARR__LE64(v) (v)
#endif
static inline uint16_t arr_le16_read(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return ARR__LE16(v);
}
static inline uint32_t arr_le32_read(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return ARR__LE32(v);
}
static inline uint64_t arr_le64_read(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return ARR__LE64(v);
}
static inline void arr_le16_write(void *p, uint16_t v)
{
	v = ARR__LE16(v);
	memcpy(p, &v, sizeof v);
}
static inline void arr_le32_write(void *p, uint32_t v)
{
	v = ARR__LE32(v);
	memcpy(p, &v, sizeof v);
}
static inline void arr_le64_write(void *p, uint64_t v)
{
	v = ARR__LE64(v);
	memcpy(p, &v, sizeof v);
}

/*
 * File header: magic, the fixed fields below, then metadata TLVs up to
 * hdr_size. Offsets are from the start of the file.
 */
#define ARR_MAGIC \
	"\x89"    \
	"ATRACE\n" /* 8 bytes: high bit, name, newline */
#define ARR_MAGIC_LEN 8
enum {
	ARR_FH_MAJOR = 8,     /* u16 */
	ARR_FH_MINOR = 10,    /* u16 */
	ARR_FH_SIZE = 12,     /* u32 hdr_size: the fixed part and the TLVs */
	ARR_FH_FEATURES = 16, /* u64 ARR_FEAT_* */
	ARR_FILE_HDR_FIXED = 24
};
#define ARR_HDR_MAX (1u << 20)

struct arr__file_hdr {
	uint16_t major, minor;
	uint32_t hdr_size;
	uint64_t features;
};
/* Magic and fixed fields; the TLVs are the caller's. */
static inline void arr__file_hdr_write(uint8_t *p, const struct arr__file_hdr *h)
{
	memcpy(p, ARR_MAGIC, ARR_MAGIC_LEN);
	arr_le16_write(p + ARR_FH_MAJOR, h->major);
	arr_le16_write(p + ARR_FH_MINOR, h->minor);
	arr_le32_write(p + ARR_FH_SIZE, h->hdr_size);
	arr_le64_write(p + ARR_FH_FEATURES, h->features);
}
/* Fixed fields of ARR_FILE_HDR_FIXED bytes at p; the magic is not checked. */
static inline void arr__file_hdr_read(const uint8_t *p, struct arr__file_hdr *h)
{
	h->major = arr_le16_read(p + ARR_FH_MAJOR);
	h->minor = arr_le16_read(p + ARR_FH_MINOR);
	h->hdr_size = arr_le32_read(p + ARR_FH_SIZE);
	h->features = arr_le64_read(p + ARR_FH_FEATURES);
}

/* Feature bits (informational in v1.0; readers ignore unknown ones). */
#define ARR_FEAT_TSC_CLOCK (1u << 0) /* timestamps came from the TSC */
#define ARR_FEAT_CHILDREN (1u << 1)  /* children were recorded too */
#define ARR_FEAT_MARKS (1u << 2)     /* mark events (op 21) may appear: format 1.1 */
#define ARR_FEAT_STACKS (1u << 3)    /* call stacks were recorded: format 1.2 */
#define ARR_FEAT_RSS_PEAK (1u << 4)  /* rss_peak events (op 22) may appear: format 1.3 */

/* The minor version this writer puts in headers: the lowest that reads the
 * trace. 1.1 added mark events, 1.2 stacks (stack and module chunks, the
 * stack column), 1.3 rss_peak events. A trace without stacks or rss_peak is
 * a 1.1 trace, byte for byte what a 1.1 writer made. */
#define ARR_TRACE_MINOR_WRITTEN(features) ((features)&ARR_FEAT_RSS_PEAK ? 3 : (features)&ARR_FEAT_STACKS ? 2 : 1)

/* Metadata TLV: u16 key, u32 len, len bytes. Unknown keys are skipped. */
enum { ARR_TLV_KEY = 0, ARR_TLV_LEN = 2, ARR_TLV_HDR = 6 };
enum arr_meta_key {
	ARR_META_PID = 1,           /* i64 */
	ARR_META_PPID = 2,          /* i64 */
	ARR_META_REALTIME_NS = 3,   /* u64 */
	ARR_META_MONOTONIC_NS = 4,  /* u64 */
	ARR_META_PAGE_SIZE = 5,     /* u64 */
	ARR_META_TIME_UNIT_NS = 6,  /* u64 */
	ARR_META_EXE = 7,           /* string */
	ARR_META_ARGV = 8,          /* NUL-separated strings */
	ARR_META_LIBC = 9,          /* string */
	ARR_META_RECORDER = 10,     /* string */
	ARR_META_PARENT_TRACE = 11, /* string */
	ARR_META_STACK_SAMPLE = 12, /* u64: mean bytes between stacked allocations (1.2, sampled) */
};

/* Chunk prefix: u32 sync, u16 type, u16 flags, u32 body_size, then the body. */
#define ARR_CHUNK_SYNC 0x4b4e4843u /* "CHNK" */
enum { ARR_CP_SYNC = 0, ARR_CP_TYPE = 4, ARR_CP_FLAGS = 6, ARR_CP_BODY_SIZE = 8, ARR_CHUNK_PREFIX = 12 };
#define ARR_CHUNK_BODY_MAX (64u << 20)

struct arr__chunk_prefix {
	uint32_t sync;
	uint16_t type, flags;
	uint32_t body_size;
};
static inline void arr__chunk_prefix_write(uint8_t *p, uint16_t type, uint16_t flags, uint32_t body_size)
{
	arr_le32_write(p + ARR_CP_SYNC, ARR_CHUNK_SYNC);
	arr_le16_write(p + ARR_CP_TYPE, type);
	arr_le16_write(p + ARR_CP_FLAGS, flags);
	arr_le32_write(p + ARR_CP_BODY_SIZE, body_size);
}
static inline void arr__chunk_prefix_read(const uint8_t *p, struct arr__chunk_prefix *c)
{
	c->sync = arr_le32_read(p + ARR_CP_SYNC);
	c->type = arr_le16_read(p + ARR_CP_TYPE);
	c->flags = arr_le16_read(p + ARR_CP_FLAGS);
	c->body_size = arr_le32_read(p + ARR_CP_BODY_SIZE);
}

enum arr_chunk_type {
	ARR_CHUNK_EVENTS = 1,  /* events of one thread, zstd-compressed columns */
	ARR_CHUNK_END = 2,     /* clean end of the trace */
	ARR_CHUNK_STACKS = 3,  /* new call-stack nodes (1.2) */
	ARR_CHUNK_MODULES = 4, /* loaded modules (1.2) */
};
/* Events chunk flags: the payload has a ninth column, stack ids (1.2). */
#define ARR_EVF_STACKS 0x1

/* Stacks body: u32 tid, u32 count, then count nodes of uvarint id, uvarint
 * parent, uvarint zigzag(address - previous address in the chunk). */
enum { ARR_SH_TID = 0, ARR_SH_COUNT = 4, ARR_STACKS_HDR = 8 };

/* Modules body: u32 count, u32 reserved, then count entries of u8 kind,
 * u64 t, u64 base, u64 size, u8 build-id length, build id, u16 path length,
 * path. Entry offsets are from the entry's start. */
enum { ARR_MH_COUNT = 0, ARR_MH_RESERVED = 4, ARR_MODULES_HDR = 8 };
enum {
	ARR_ME_KIND = 0,          /* u8 */
	ARR_ME_T = 1,             /* u64 */
	ARR_ME_BASE = 9,          /* u64 */
	ARR_ME_SIZE = 17,         /* u64 */
	ARR_ME_BUILD_ID_LEN = 25, /* u8, then the build id */
	ARR_ME_FIXED = 26,        /* then u16 path length and the path */
	ARR_ME_PATH_LEN = 2
};
#define ARR_MODULE_BUILD_ID_MAX 64
#define ARR_MODULE_PATH_MAX 1024

/* Events body: u32 tid, u32 nevents, u64 first_t, u64 last_t, u32 raw_size,
 * u32 reserved, then one zstd frame (with checksum) of raw_size bytes. */
enum {
	ARR_EH_TID = 0,
	ARR_EH_NEVENTS = 4,
	ARR_EH_FIRST_T = 8,
	ARR_EH_LAST_T = 16,
	ARR_EH_RAW_SIZE = 24,
	ARR_EH_RESERVED = 28,
	ARR_EVENTS_HDR = 32
};
#define ARR_CHUNK_EVENTS_MAX (1u << 20)
#define ARR_CHUNK_RAW_MAX (32u << 20)

struct arr__events_hdr {
	uint32_t tid, nevents;
	uint64_t first_t, last_t;
	uint32_t raw_size;
};
static inline void arr__events_hdr_write(uint8_t *p, const struct arr__events_hdr *h)
{
	arr_le32_write(p + ARR_EH_TID, h->tid);
	arr_le32_write(p + ARR_EH_NEVENTS, h->nevents);
	arr_le64_write(p + ARR_EH_FIRST_T, h->first_t);
	arr_le64_write(p + ARR_EH_LAST_T, h->last_t);
	arr_le32_write(p + ARR_EH_RAW_SIZE, h->raw_size);
	arr_le32_write(p + ARR_EH_RESERVED, 0);
}
static inline void arr__events_hdr_read(const uint8_t *p, struct arr__events_hdr *h)
{
	h->tid = arr_le32_read(p + ARR_EH_TID);
	h->nevents = arr_le32_read(p + ARR_EH_NEVENTS);
	h->first_t = arr_le64_read(p + ARR_EH_FIRST_T);
	h->last_t = arr_le64_read(p + ARR_EH_LAST_T);
	h->raw_size = arr_le32_read(p + ARR_EH_RAW_SIZE);
}

/* End body: u32 reason, i32 status, u64 t, u64 events. */
enum { ARR_ED_REASON = 0, ARR_ED_STATUS = 4, ARR_ED_T = 8, ARR_ED_EVENTS = 16, ARR_END_BODY = 24 };

struct arr__end_body {
	uint32_t reason;
	int32_t status;
	uint64_t t, events;
};
static inline void arr__end_body_write(uint8_t *p, const struct arr__end_body *e)
{
	arr_le32_write(p + ARR_ED_REASON, e->reason);
	arr_le32_write(p + ARR_ED_STATUS, (uint32_t)e->status);
	arr_le64_write(p + ARR_ED_T, e->t);
	arr_le64_write(p + ARR_ED_EVENTS, e->events);
}
static inline void arr__end_body_read(const uint8_t *p, struct arr__end_body *e)
{
	e->reason = arr_le32_read(p + ARR_ED_REASON);
	e->status = (int32_t)arr_le32_read(p + ARR_ED_STATUS);
	e->t = arr_le64_read(p + ARR_ED_T);
	e->events = arr_le64_read(p + ARR_ED_EVENTS);
}

/* Columns of a decompressed events payload, in this order. The payload
 * starts with one uvarint length per column. */
enum arr_col {
	ARR_COL_OP,   /* 1 byte: op | ARR_OPF_FAILED */
	ARR_COL_TIME, /* uvarint delta of t / time_unit */
	ARR_COL_SIZE, /* uvarint size (or rss bytes) */
	ARR_COL_AUX,  /* uvarint nmemb or align; zigzag pid for fork */
	ARR_COL_RET,  /* zigzag delta of returned pointer vs previous */
	ARR_COL_PTR,  /* pointer argument, see ARR_PTR_* */
	ARR_COL_ERR,  /* zigzag errno / result code of failed calls */
	ARR_COL_BLOB, /* uvarint length + bytes (exec path) */
	ARR_NCOLS,
	ARR_COL_STACK = ARR_NCOLS, /* with ARR_EVF_STACKS: zigzag delta of stack ids */
	ARR_NCOLS_MAX
};
#define ARR_OPF_FAILED 0x80
#define ARR_OPF_MASK 0x1f

/* PTR column values: 0 = NULL; odd = (age << 1) | 1 where age counts
 * allocations in this chunk back to the one that returned the pointer
 * (1 = the latest); even >= 4 = 4 + (zz << 1) where zz = zigzag(ptr -
 * previous such ptr) < 2^62; 2 = escape, followed by zz as its own uvarint. */

/*
 * Internal API of the merge (formats/merge.c) for readers in this project.
 *
 * arr__merge_open_blocks: run the merge m on a thread of its own from where
 * it is (just opened, or between any two of the calls of trace.h), which
 * hands the merged events over in blocks of a few thousand, merged ahead of
 * the caller; what the last call handed out is no longer valid. 1 when it
 * started; 0 when
 * it did not (a trace of fewer than 4 chunks, where a thread costs more
 * than it saves, or no memory or thread for it): the caller then reads m
 * as before.
 * arr__merge_next_block: the next block, *n >= 1 events in the order
 * arr_merge_next() hands them out, exec paths and mark names included,
 * valid until the next call. Returns 1, 0 at the end, or the negative code
 * the merge met, after every event before it (the reader's error offset and
 * detail are then set, as one at a time). Only this call reads m until
 * arr__merge_close_blocks().
 * arr__merge_close_blocks: stop and join the merge's thread (a no-op when
 * none runs); after it the reader may be used again. arr_merge_close()
 * does it too.
 */
struct arr_merge;
struct arr_event;
int arr__merge_open_blocks(struct arr_merge *m);
int arr__merge_next_block(struct arr_merge *m, const struct arr_event **ev, size_t *n);
void arr__merge_close_blocks(struct arr_merge *m);

#endif

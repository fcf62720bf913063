/*
 * format.h - on-disk constants of trace format v1, shared by the writer
 * (formats/encode.c, used by the recorder) and the reader.
 *
 * The normative description is docs/trace-format.md; keep the two in step.
 * All multi-byte fixed fields are little-endian.
 */
#ifndef ARR_FORMAT_H
#define ARR_FORMAT_H

#include <stdint.h>
#include <string.h>

/* File header: magic, then fixed fields, then metadata TLVs up to hdr_size. */
#define ARR_MAGIC "\x89" "ATRACE\n" /* 8 bytes: high bit, name, newline */
#define ARR_MAGIC_LEN 8
#define ARR_FILE_HDR_FIXED 24 /* magic 8, major 2, minor 2, hdr_size 4, features 8 */
#define ARR_HDR_MAX (1u << 20)

/* Feature bits (informational in v1.0; readers ignore unknown ones). */
#define ARR_FEAT_TSC_CLOCK (1u << 0) /* timestamps came from the TSC */
#define ARR_FEAT_CHILDREN (1u << 1)  /* children were recorded too */
#define ARR_FEAT_MARKS (1u << 2)     /* mark events (op 21) may appear: format 1.1 */
#define ARR_FEAT_STACKS (1u << 3)    /* call stacks were recorded: format 1.2 */

/* The minor version this writer puts in headers: 1.1 added mark events,
 * 1.2 stacks (stack and module chunks, the stack column). A trace without
 * stacks is a 1.1 trace, byte for byte what a 1.1 writer made. */
#define ARR_TRACE_MINOR_WRITTEN(features) ((features) & ARR_FEAT_STACKS ? ARR_TRACE_MINOR : 1)

/* Metadata keys: TLV = u16 key, u32 len, bytes. Unknown keys are skipped. */
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

/* Chunk prefix: u32 sync, u16 type, u16 flags, u32 body_size. */
#define ARR_CHUNK_SYNC 0x4b4e4843u /* "CHNK" */
#define ARR_CHUNK_PREFIX 12
#define ARR_CHUNK_BODY_MAX (64u << 20)

enum arr_chunk_type {
	ARR_CHUNK_EVENTS = 1, /* events of one thread, zstd-compressed columns */
	ARR_CHUNK_END = 2,    /* clean end of the trace */
	ARR_CHUNK_STACKS = 3, /* new call-stack nodes (1.2) */
	ARR_CHUNK_MODULES = 4, /* loaded modules (1.2) */
};
/* Events chunk flags: the payload has a ninth column, stack ids (1.2). */
#define ARR_EVF_STACKS 0x1
/* Stacks body: u32 tid, u32 count, then count nodes of uvarint id, uvarint
 * parent, uvarint zigzag(address - previous address in the chunk). */
#define ARR_STACKS_HDR 8
/* Modules body: u32 count, u32 reserved, then count entries of u8 kind,
 * u64 t, u64 base, u64 size, u8 build-id length, build id, u16 path length,
 * path. */
#define ARR_MODULES_HDR 8
#define ARR_MODULE_PATH_MAX 1024

/* Events body: u32 tid, u32 nevents, u64 first_t, u64 last_t, u32 raw_size,
 * u32 reserved, then one zstd frame (with checksum) of raw_size bytes. */
#define ARR_EVENTS_HDR 32
#define ARR_CHUNK_EVENTS_MAX (1u << 20)
#define ARR_CHUNK_RAW_MAX (32u << 20)

/* End body: u32 reason, i32 status, u64 t, u64 events. */
#define ARR_END_BODY 24

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

static inline void arr__put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void arr__put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void arr__put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t arr__get_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t arr__get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t arr__get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#endif

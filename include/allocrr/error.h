/*
 * allocrr/error.h - error codes shared by every allocrr library.
 *
 * Contract: library functions return 0 (or a non-negative count) on success
 * and a negative ARR_E* code on failure. Libraries never print and never exit;
 * arr_strerror() turns a code into a lowercase message for the CLI to show.
 * One X-macro generates both the enum and the string table so they can never
 * drift apart.
 */
#ifndef ALLOCRR_ERROR_H
#define ALLOCRR_ERROR_H

#define ARR_ERRNO_MAP(X)                                \
	X(IO, "input/output error")                     \
	X(NOMEM, "out of memory")                       \
	X(TRUNCATED, "trace is truncated")              \
	X(CORRUPT, "trace is corrupted")                \
	X(BADMAGIC, "not an allocrr trace (bad magic)") \
	X(VERSION, "unsupported trace format version")  \
	X(DECOMPRESS, "decompression failed")           \
	X(COMPRESS, "compression failed")               \
	X(INVAL, "invalid argument")                    \
	X(NOTFOUND, "not found")                        \
	X(RANGE, "value out of range")                  \
	X(SYNTAX, "syntax error")                       \
	X(STALE, "cache is stale")                      \
	X(UNSUPPORTED, "operation not supported")       \
	X(NOTLOADED, "the allocator library could not be loaded (LD_PRELOAD ignored it)")

enum arr_errno {
	ARR_OK = 0,
#define ARR_ERRNO_ENUM(name, msg) ARR_E##name,
	ARR_EFIRST_ = -1000,
	ARR_ERRNO_MAP(ARR_ERRNO_ENUM)
#undef ARR_ERRNO_ENUM
		ARR_ELAST_
};

/* Message for an ARR_E* code, or strerror(-code) for a negated errno value. */
const char *arr_strerror(int code);

#endif

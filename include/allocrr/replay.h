/*
 * allocrr/replay.h - deterministic replay of a trace into an allocator:
 * preparing a workload from a trace, running it, and what a run measures.
 *
 * Glossary
 *   workload   a trace turned into something a replay can execute without a
 *              hash lookup: one op stream per recorded thread, objects named
 *              by dense ids (slots) instead of addresses, a schedule (the
 *              recorded interleaving, for serial replay) and sync points.
 *              Binary, varint-encoded; format in docs/replay.md.
 *   slot       a dense object id. Ids are recycled: an id freed by thread T
 *              goes back to T's pool, so the slot table is about the size of
 *              the peak live set, not of the trace.
 *   sync point where an object crosses threads (allocated or last resized
 *              in one thread, freed or resized in another), the later thread
 *              waits until the slot's version (ops done on it) reaches the
 *              value it had in the recording.
 *   repair     what preparation fixes when the recorded clock or the program
 *              is inconsistent (an address allocated again before its free
 *              was logged, frees of addresses never allocated, double frees);
 *              always counted, never fatal.
 *   engine     the program allocrr-replay-engine, exec'd fresh per allocator
 *              with LD_PRELOAD set; it calls arr_replay_run() and writes the
 *              result to a file descriptor. It never calls malloc itself
 *              outside the replayed calls once the replay has started.
 *
 * Contract
 *   - Functions return 0 or a negative ARR_E* code (or negated errno).
 *   - Preparation is one streaming pass over arr_merge: memory is the live
 *     set, the slot table and one output buffer per thread.
 *   - arr_replay_run() uses no malloc of its own (mmap only); results it
 *     returns point into memory released by arr_replay_result_release().
 */
#ifndef ALLOCRR_REPLAY_H
#define ALLOCRR_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "allocrr/error.h"
#include "allocrr/trace.h"

#define ARR_WL_VERSION 4 /* bump when the format or the preparation changes */

/* Repairs and anomalies found while preparing. */
#define ARR_REPAIR_MAP(X)                                                                 \
	X(alloc_before_free, "address returned again before its free was logged")         \
	X(unknown_free, "free of an address the trace never allocated")                   \
	X(double_free, "free of an address already freed")                                \
	X(unknown_realloc, "realloc of an unknown address, replayed as realloc(NULL, n)") \
	X(lost_object, "object displaced twice before its free; left live")               \
	X(ignored_event, "fork/exec/rss events, not replayed")

enum arr_repair {
#define ARR_REPAIR_ENUM(name, desc) ARR_REPAIR_##name,
	ARR_REPAIR_MAP(ARR_REPAIR_ENUM)
#undef ARR_REPAIR_ENUM
		ARR_REPAIR_COUNT_
};
const char *arr_repair_name(unsigned r);
const char *arr_repair_desc(unsigned r);

/* What a workload holds (its header). */
struct arr_workload_info {
	uint32_t version;
	uint32_t nthreads;                               /* recorded threads that made calls */
	uint64_t trace_size, trace_mtime_ns, trace_hash; /* the trace it came from */
	uint64_t calls;                                  /* allocation calls to replay */
	uint64_t syncs;                                  /* sync points */
	uint64_t events;                                 /* trace events read */
	uint64_t nslots;                                 /* slot table size (max dense id + 1) */
	uint64_t ideal_rss;                              /* peak of live requested bytes */
	uint64_t peak_live_blocks;
	uint64_t ops[ARR_OP_MAX_]; /* calls by op */
	uint64_t repairs[ARR_REPAIR_COUNT_];
	uint64_t file_size;
	uint64_t truncated_at;           /* built from a truncated trace: where it was cut; 0 = whole */
	uint64_t recorded_peak_rss;      /* largest RSS sample in the trace, 0 = none */
	uint64_t recorded_true_peak_rss; /* the trace's rss_peak (the kernel's high-water mark), 0 = none */
};

/*
 * Build a workload from an open trace into out_path (written to a temporary
 * file beside it, then renamed); -EEXIST, and nothing written, when
 * out_path is something other than a workload (a user's file, a directory,
 * a FIFO, a symlink): only a workload is replaced. On a trace error the reader keeps the
 * offset (arr_trace_error_offset). allow_truncated: a trace without its END
 * (ARR_ETRUNCATED) still gives the workload of its complete chunks.
 */
int arr_workload_build(struct arr_trace *tr, const char *out_path, int allow_truncated, struct arr_workload_info *info);
/* Read a workload's header. ARR_EBADMAGIC / ARR_EVERSION / ARR_ECORRUPT. */
int arr_workload_read_info(const char *wl_path, struct arr_workload_info *info);
/*
 * Is wl_path a current workload of trace_path? 0 (and *info) when it is,
 * ARR_ESTALE when it exists but the trace changed (size, mtime, hash of all
 * its bytes), the workload does not match its checksum (every byte is read)
 * or the format version differs, -ENOENT when absent, -EEXIST when
 * something other than a workload is there (never replaced).
 */
int arr_workload_check(const char *wl_path, const char *trace_path, struct arr_workload_info *info);
/* Where the cache of trace_path lives: TRACE.wl, or in cache_dir (if not
 * NULL) a name derived from the trace's absolute path. */
int arr_workload_cache_path(char *buf, size_t cap, const char *trace_path, const char *cache_dir);

/*
 * How to replay. Each enum is one table, X(VALUE, "name"), in value order:
 * the CLI, the engine's arguments and the report config all take their
 * names from it, with arr_replay_X_name(v) and arr_replay_X_parse(s, &v)
 * (0, or ARR_EINVAL for a name not in the table; *v unchanged then).
 */
#define ARR_REPLAY_THREADS_MAP(X) \
	X(ARR_THREADS_AUTO, "auto") X(ARR_THREADS_SERIAL, "serial") X(ARR_THREADS_PARALLEL, "parallel")
#define ARR_REPLAY_TOUCH_MAP(X) X(ARR_TOUCH_NONE, "none") X(ARR_TOUCH_PAGE, "page") X(ARR_TOUCH_ALL, "all")
#define ARR_REPLAY_ZEROING_MAP(X)              \
	X(ARR_ZERO_AS_RECORDED, "as_recorded") \
	X(ARR_ZERO_CALLOC_AS_MALLOC, "calloc_as_malloc") X(ARR_ZERO_CALLOC_AS_MALLOC_MEMSET, "calloc_as_malloc_memset")
#define ARR__ENUM_VALUE(v, name) v,
#define ARR__ENUM_NAME(v, name) name,

enum arr_replay_threads { ARR_REPLAY_THREADS_MAP(ARR__ENUM_VALUE) };
enum arr_replay_touch { ARR_REPLAY_TOUCH_MAP(ARR__ENUM_VALUE) };
const char *arr_replay_threads_name(enum arr_replay_threads t);
int arr_replay_threads_parse(const char *s, enum arr_replay_threads *t);
const char *arr_replay_touch_name(enum arr_replay_touch t);
int arr_replay_touch_parse(const char *s, enum arr_replay_touch *t);

/*
 * What a replayed calloc does: as recorded, or made a malloc (what calloc's
 * zeroing costs), or a malloc then a memset of the block (what calloc saves
 * over the code a program would write without it).
 */
enum arr_replay_zeroing { ARR_REPLAY_ZEROING_MAP(ARR__ENUM_VALUE) };
#define ARR_ZERO_MODES 3
const char *arr_replay_zeroing_name(enum arr_replay_zeroing z);
int arr_replay_zeroing_parse(const char *s, enum arr_replay_zeroing *z);

struct arr_replay_options {
	enum arr_replay_threads threads;
	enum arr_replay_touch touch;
	unsigned samples;       /* RSS timeline samples (about) */
	unsigned latency_every; /* time one call in N (1 = all, 0 = none) */
	int glibc_stats;        /* call mallinfo2 at the end */
	enum arr_replay_zeroing zeroing;
	/* Track live requested and usable bytes (malloc_usable_size, where the
	 * allocator has it) per call, and sample them with RSS: a run for the
	 * fragmentation figures, whose times are not the allocator's alone. */
	int measure_usable;
	/* Parallel replay: entries of the recorded interleaving between the
	 * pace's checkpoints; a thread runs at most about 2 x pace entries ahead
	 * of the recorded order (0 = no pace: only sync points order threads). */
	unsigned pace;
};
#define ARR_REPLAY_PACE_DEFAULT 256
#define ARR_REPLAY_PACE_MAX_THREADS 64
#define ARR_REPLAY_OPTIONS_INIT                                                                                \
	{                                                                                                      \
		ARR_THREADS_AUTO, ARR_TOUCH_PAGE, 1000, 1, 0, ARR_ZERO_AS_RECORDED, 0, ARR_REPLAY_PACE_DEFAULT \
	}

struct arr_latency {
	uint64_t count;                    /* timed calls */
	uint64_t p50, p90, p99, p999, max; /* ns, timer cost removed */
};

/* One point of a replay's timeline. live/usable: only with measure_usable. */
struct arr_rss_sample {
	uint64_t t_ns;     /* since the replay started */
	uint64_t op_index; /* calls executed so far (all threads) */
	uint64_t rss;      /* resident bytes minus the engine's baseline */
	uint64_t live;     /* live requested bytes */
	uint64_t usable;   /* live usable bytes (requested when the allocator cannot say) */
	uint64_t mapped;   /* the allocator's own figure, as in struct arr_replay_moment */
	uint64_t peak;     /* measure_usable runs: the highest RSS since the sample before (VmHWM),
			    * baseline subtracted, >= rss; 0 in timed runs */
};

/* Memory at one moment of a measure_usable run. */
struct arr_replay_moment {
	uint64_t op_index, t_ns;
	uint64_t rss, live, usable;
	uint64_t mapped; /* the allocator's own figure (glibc arena + mmapped, builtin mapped); 0 = unknown */
};

/* Divergences: the replayed allocator did not do what the recorded did. */
struct arr_replay_divergence {
	uint64_t failed_now;    /* recorded success, replay returned NULL */
	uint64_t succeeded_now; /* recorded failure, replay succeeded (block freed) */
	uint64_t sync_mismatch; /* serial: a sync point found the wrong version */
	uint64_t substituted;   /* calls the preloaded library lacks, emulated */
};

struct arr_replay_result {
	uint32_t version;
	uint32_t threads_used; /* replay threads */
	uint64_t wall_ns, cpu_ns, sync_wait_ns;
	uint64_t ops;                 /* calls executed */
	uint64_t baseline_rss;        /* engine's RSS before the first call */
	uint64_t code_rss;            /* of it, the allocator's code made resident (not counted in peaks) */
	uint64_t peak_rss, final_rss; /* minus baseline */
	uint64_t ideal_rss;
	uint64_t minor_faults, major_faults;
	uint64_t anomalies; /* repairs + divergences */
	uint64_t timer_overhead_ns_x100;
	double tsc_ghz;
	struct arr_latency latency[ARR_OP_MAX_]; /* by op; count 0 = none */
	struct arr_replay_divergence div;
	uint64_t repairs[ARR_REPAIR_COUNT_];
	/* allocator statistics, when it offers some */
	int has_mallinfo; /* glibc mallinfo2 */
	uint64_t mi_arena, mi_hblkhd, mi_uordblks, mi_fordblks, mi_keepcost;
	int has_builtin; /* arr_alloc_stats_get */
	uint64_t bi_mapped, bi_resident, bi_live_usable, bi_live_blocks, bi_pages_purged;
	/* measure_usable runs */
	int has_live;   /* live bytes were tracked */
	int has_usable; /* and the allocator has malloc_usable_size */
	struct arr_replay_moment at_peak_live, at_end;
	uint64_t max_live; /* most live requested bytes at once in this replay (the recorded peak is ideal_rss) */
	uint32_t nsamples;
	struct arr_rss_sample *timeline;
};

/*
 * Replay wl_path in this process into whatever malloc this process uses.
 * Memory for *res (its timeline) is mmap'd; release with
 * arr_replay_result_release(). ARR_ECORRUPT for a damaged workload. Every
 * mapping and descriptor of the run is released before it returns, however
 * it ends (the timeline too, on error), so runs may follow one another in
 * one process (the fuzz target does). One run at a time: the allocator's
 * function table and the measuring state are process globals, which the
 * replay threads read without indirection. When a replay thread cannot be
 * created, the error is returned (no fallback to serial).
 */
int arr_replay_run(const char *wl_path, const struct arr_replay_options *opt, struct arr_replay_result *res);
void arr_replay_result_release(struct arr_replay_result *res);
/* Send a result down a pipe and read it back (in the same build). */
int arr_replay_result_write(int fd, const struct arr_replay_result *res);
int arr_replay_result_read(int fd, struct arr_replay_result *res);

/*
 * Allocators by name: "glibc", "builtin", "jemalloc", "mimalloc",
 * "tcmalloc", or a path to a .so; ":k=v,..." tunables after the name.
 */
struct arr_allocator {
	char name[160];      /* as shown in results: the spec */
	char lib[4096];      /* library to preload, "" for glibc */
	const char *package; /* Debian package that provides lib, or NULL */
	int is_glibc, is_builtin;
	unsigned nenv;       /* environment the engine runs with */
	char env[4][2][256]; /* name, value */
	char why[256];       /* what was wrong, when resolving failed */
};
/*
 * Resolve a spec. builtin_lib is where the built-in allocator would be.
 * ARR_ENOTFOUND: the library does not exist (out->lib and out->package say
 * which); ARR_EINVAL: unknown name; ARR_ESYNTAX: bad tunable (unknown name,
 * or none known for a path); ARR_ERANGE: a glibc or builtin tunable's value
 * is not an integer in its documented range; ARR_EUNSUPPORTED: a library
 * given by path is not a malloc (arr_allocator_check_lib). out->why says
 * what was wrong, in a phrase for "allocator 'SPEC': WHY".
 */
int arr_allocator_resolve(const char *spec, const char *builtin_lib, struct arr_allocator *out);
/*
 * Is path a malloc library the loader can preload: an ELF shared object for
 * this machine whose dynamic symbols define malloc and free? Reads the file,
 * runs nothing. 0, or ARR_EUNSUPPORTED / a negated errno with the reason in
 * reason ("it exports no malloc").
 */
int arr_allocator_check_lib(const char *path, char *reason, size_t cap);

/*
 * The touch mode to replay with, checked against this machine. Touching
 * (page or all) makes the replay resident in about the workload's peak live
 * memory (ideal_rss). explicit: the user chose *touch; it is refused
 * (ARR_ENOMEM, reason in note) when that cannot fit in MemAvailable.
 * Otherwise *touch (the default, page) becomes none when it cannot fit, or
 * when the recorded peak RSS is under half the peak live memory (the
 * program touched little of what it allocated), with the reason in note.
 * Returns 0 (note "" when nothing changed) or ARR_ENOMEM.
 */
int arr_replay_choose_touch(const struct arr_workload_info *info, int explicit, enum arr_replay_touch *touch,
			    char *note, size_t cap);

/*
 * Run the engine for one allocator in a fresh process and collect its
 * result. *status is the engine's wait status (for "killed by signal");
 * a failed engine gives ARR_ETRUNCATED (no result) and its status.
 */
int arr_replay_spawn(const char *engine, const struct arr_allocator *a, const char *wl_path,
		     const struct arr_replay_options *opt, struct arr_replay_result *res, int *status);

#endif

/*
 * record.c - buffers, the flusher thread, the output file and the endings
 * of a recording (see recorder.h for the vocabulary).
 *
 * Locks: g.wlock (encoder and file) is always taken before g.lock (queue,
 * free list, registry); g.rsslock (who samples RSS), when held, between the
 * two. The hot path takes neither: a thread takes g.lock
 * once per full buffer, to queue it and take another. Both are sync.h's
 * futex locks, not pthread mutexes: the flusher is a thread glibc does not
 * know about (rawthread.c).
 */
#define _GNU_SOURCE /* strerrordesc_np */
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "rawthread.h"
#include "recorder.h"
#include "sync.h"

#define ARR_HIGH_FD 1000 /* where the recorder's fds move, away from the program's */

#ifndef ALLOCRR_VERSION
#define ALLOCRR_VERSION "0.0.0"
#endif

__thread struct tstate arr__ts __attribute__((tls_model("initial-exec")));
struct arr_hot arr__hot = {.rss_due = UINT64_MAX};

static struct {
	int diag_stale_time, diag_no_encode; /* stay 0 without ALLOCRR_DIAG_KNOBS */
	int initialized;
	int enabled;
	int finished; /* an END has been written; later buffers are dropped */
	struct xlock lock, wlock;
	struct xcond cond;
	struct tbuf *qhead, *qtail, *free_list, *reg;
	size_t qlen; /* buffers queued: a backlog means the flusher lacks CPU */
	int polling; /* the flusher waits FLUSH_POLL_NS at most: no need to wake it */
	size_t nbufs, maxbufs, buf_words;
	size_t nthreads; /* threads holding a buffer: each may have two more */
	pthread_key_t key;

	/* output */
	char output[PATH_MAX];
	char path[PATH_MAX + 32];
	char parent_trace[PATH_MAX + 32];
	int root, is_fork_child, no_children;
	int created; /* the trace file exists (open_output() succeeded) */
	/* The trace, /proc/self/statm and /proc/self/status, in the program's
	 * file table [0] and in the flusher's [1] (see my_fds()); -1 where not open. */
	int tfd[2], sfd[2], hfd[2];
	dev_t fd_dev; /* what tfd must still be, see guard_fd() */
	ino_t fd_ino;
	dev_t statm_dev, status_dev;
	ino_t statm_ino, status_ino;
	int failed;
	pid_t pid;
	int zlevel, cur_level;
	int flusher_nice; /* ALLOCRR_FLUSHER_NICE: how much nicer the flusher is than the program */
	uint32_t time_unit;
	struct arr_encoder enc;
	int enc_ready;
	uint8_t *out;
	size_t out_cap;
	uint64_t events_written;
	uint64_t dropped; /* calls of signal handlers not recorded, see rec_enter() */
	int exit_hooked;

	/* time: ns = (tsc - arr__hot.start_tsc) * ns_per_tick */
	uint64_t cal_tsc, cal_mono; /* calibration base */
	uint64_t start_mono, start_real;
	double ns_per_tick; /* 0 until calibrated */

	/* flusher */
	int flusher_running;
	struct arr_raw_thread flusher;
	uint64_t rss_interval_ns;
	struct tbuf *rssbuf;
	struct xlock rsslock; /* who samples: the flusher or one hook */
	uint64_t rss_last;    /* tick of the last sample */
	uint64_t rss_ticks;   /* the interval in ticks, once calibrated */
	long page_size;
} g = {
	.tfd = {-1, -1},
	.sfd = {-1, -1},
	.hfd = {-1, -1},
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *map(size_t size, void *ctx)
{
	(void)ctx;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t size, void *ctx)
{
	(void)ctx;
	munmap(p, size);
}

static void say(const char *a, const char *b, const char *c)
{
	/* One line, straight to fd 2: stdio would share the program's buffer. */
	char line[PATH_MAX + 256];
	snprintf(line, sizeof line, "allocrr: %s%s%s\n", a, b ? b : "", c ? c : "");
	ssize_t n = write(2, line, strlen(line));
	(void)n;
}

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	return (*end || v < lo || v > hi) ? def : (int)v;
}

/* --- buffers ------------------------------------------------------------ */

static struct tbuf *buf_new(size_t words)
{
	size_t size = (sizeof(struct tbuf) + 63) / 64 * 64 + words * 8;
	struct tbuf *b = map(size, NULL);
	if (!b)
		return NULL;
	b->w = (uint64_t *)((char *)b + (sizeof(struct tbuf) + 63) / 64 * 64);
	b->cap = words;
	b->map_size = size;
	return b;
}

/* A fresh full-size buffer, or NULL when the budget is spent. g.lock held. */
static struct tbuf *buf_get_locked(void)
{
	struct tbuf *b = g.free_list;
	if (b) {
		g.free_list = b->next;
	} else if (g.nbufs < g.maxbufs + 2 * g.nthreads) {
		b = buf_new(g.buf_words);
		if (b)
			g.nbufs++;
	}
	if (b) {
		b->used = b->flushed = 0;
		b->next = NULL;
		b->dangling = 0;
	}
	return b;
}

static void buf_put_locked(struct tbuf *b)
{
	if (b->cap != g.buf_words) { /* a small dangling buffer */
		munmap(b, b->map_size);
		return;
	}
	b->next = g.free_list;
	g.free_list = b;
}

static void reg_add_locked(struct tbuf *b)
{
	b->reg_prev = NULL;
	b->reg_next = g.reg;
	if (g.reg)
		g.reg->reg_prev = b;
	g.reg = b;
	b->registered = 1;
}

static void reg_del_locked(struct tbuf *b)
{
	if (!b->registered)
		return;
	if (b->reg_prev)
		b->reg_prev->reg_next = b->reg_next;
	else
		g.reg = b->reg_next;
	if (b->reg_next)
		b->reg_next->reg_prev = b->reg_prev;
	b->registered = 0;
}

static void queue_push_locked(struct tbuf *b)
{
	b->next = NULL;
	g.qlen++;
	if (g.qtail)
		g.qtail->next = b;
	else
		g.qhead = b;
	g.qtail = b;
}

static struct tbuf *queue_take_all_locked(void)
{
	struct tbuf *q = g.qhead;
	g.qhead = g.qtail = NULL;
	g.qlen = 0;
	return q;
}

/* --- time ---------------------------------------------------------------- */

/* Read the TSC and CLOCK_MONOTONIC as one pair: the TSC at the midpoint of
 * the narrowest of a few tries. */
static void clock_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = __rdtsc(), m = mono_ns(), b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = m;
		}
	}
}

/*
 * One linear map from ticks to ns for the whole trace, fixed at the first
 * encode: chunks of different threads must agree on it, or a free could
 * land after the malloc that reused its block. A span of >= 2 ms keeps the
 * rate within ~1e-5 of the truth.
 */
static void calibrate(void)
{
	if (g.ns_per_tick > 0)
		return;
	uint64_t t = 0, m = 0;
	while (clock_pair(&t, &m), m - g.cal_mono < 2000000)
		;
	g.ns_per_tick = t > g.cal_tsc ? (double)(m - g.cal_mono) / (double)(t - g.cal_tsc) : 1.0;
}

/* ns since the start for ticks since the start (rec_now()). */
static uint64_t tsc_to_ns(uint64_t ticks) { return (uint64_t)((double)ticks * g.ns_per_tick); }

/* --- output -------------------------------------------------------------- */

/*
 * The recorder's fds. The flusher has a file table of its own (rawthread.c):
 * the program cannot close its fds, and its opens take no number from the
 * program. The program's threads write too (a full queue, the final flush),
 * and sample RSS when the flusher is late, with fds in the program's table:
 * those live at ARR_HIGH_FD or above, out of the way of the lowest-free-fd
 * rule, and are checked (fstat) before each use, since programs close fds
 * they did not open (daemons, shells, close_range()) and reuse the numbers.
 */
static int table(void) { return arr__ts.flusher; }

/* fd moved to ARR_HIGH_FD or above (where RLIMIT_NOFILE allows it). */
static int move_high(int fd)
{
	if (fd < 0 || fd >= ARR_HIGH_FD)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, ARR_HIGH_FD);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* Make sure this table's trace fd is still our file, reopening it by name
 * if it is not (the old number belongs to the program now: leave it). */
static int guard_fd(void)
{
	struct stat st;
	int *fd = &g.tfd[table()];
	if (*fd >= 0 && fstat(*fd, &st) == 0 && st.st_dev == g.fd_dev && st.st_ino == g.fd_ino)
		return 0;
	int nfd = open(g.path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (nfd < 0)
		return -errno;
	if (fstat(nfd, &st) < 0 || st.st_dev != g.fd_dev || st.st_ino != g.fd_ino) {
		close(nfd);
		return -ESTALE;
	}
	*fd = move_high(nfd);
	return 0;
}

static int write_all(const uint8_t *p, size_t n)
{
	int rc = guard_fd();
	if (rc)
		return rc;
	while (n) {
		ssize_t w = write(g.tfd[table()], p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w, n -= (size_t)w;
	}
	return 0;
}

static void recording_failed(const char *what, int err)
{
	if (!g.failed) {
		char msg[PATH_MAX + 64];
		snprintf(msg, sizeof msg, "%s '%s': ", what, g.path[0] ? g.path : g.output);
		const char *why = strerrordesc_np(err);
		say(msg, why ? why : "unknown error", "; the program continues unrecorded");
	}
	g.failed = 1;
	g.enabled = 0;
	__atomic_store_n(&arr__hot.rss_due, UINT64_MAX, __ATOMIC_RELAXED);
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t r;
	while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
		n += (size_t)r;
	close(fd);
	return n;
}

static int open_output(void)
{
	/* O_APPEND: the flusher and the program's threads write through
	 * different descriptions (their own file tables, and reopened fds), each
	 * under g.wlock; appending keeps them from writing at stale offsets. */
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_EXCL | O_APPEND;
	int fd = -1;
	if (g.root) {
		snprintf(g.path, sizeof g.path, "%s", g.output);
		/* Without the CLI (no ALLOCRR_ROOT_PID) the top process overwrites. */
		fd = open(g.path, getenv("ALLOCRR_ROOT_PID") ? flags : (flags & ~O_EXCL) | O_TRUNC, 0644);
	}
	for (int n = 1; fd < 0 && n < 1000; n++) {
		if (g.root && errno != EEXIST)
			break;
		if (n == 1)
			snprintf(g.path, sizeof g.path, "%s.%d", g.output, (int)g.pid);
		else
			snprintf(g.path, sizeof g.path, "%s.%d.%d", g.output, (int)g.pid, n);
		fd = open(g.path, flags, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		recording_failed("cannot create trace", errno);
		return -1;
	}
	fd = move_high(fd);
	struct stat st;
	if (fstat(fd, &st) == 0) {
		g.fd_dev = st.st_dev;
		g.fd_ino = st.st_ino;
	}
	g.tfd[table()] = fd;
	g.created = 1;
	/* Metadata: cmdline and exe from /proc, read without the program's heap. */
	size_t cap = 64 * 1024;
	char *argv = map(cap, NULL), exe[PATH_MAX] = "";
	size_t argv_len = argv ? read_file("/proc/self/cmdline", argv, cap) : 0;
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	char recorder[64];
	snprintf(recorder, sizeof recorder, "allocrr %s", ALLOCRR_VERSION);
	char libc[64];
	snprintf(libc, sizeof libc, "glibc %s", gnu_get_libc_version());
	struct arr_header_info info = {
		.pid = g.pid,
		.ppid = getppid(),
		.realtime_ns = g.start_real,
		.monotonic_ns = g.start_mono,
		.page_size = (uint64_t)g.page_size,
		.time_unit_ns = g.time_unit,
		.features = ARR_FEAT_TSC_CLOCK | ARR_FEAT_MARKS | (g.no_children ? 0 : ARR_FEAT_CHILDREN) |
			    (arr__hot.stacks ? ARR_FEAT_STACKS : 0) | (g.rss_interval_ns ? ARR_FEAT_RSS_PEAK : 0),
		.exe = exe,
		.libc = libc,
		.recorder = recorder,
		.parent_trace = g.is_fork_child && g.parent_trace[0] ? g.parent_trace : NULL,
		.argv = argv,
		.argv_len = argv_len,
		.stack_sample_bytes = arr__hot.stacks ? arr__stacks_sample_bytes() : 0,
	};
	long n = arr__encode_header(&info, g.out, g.out_cap);
	if (argv)
		munmap(argv, cap);
	int rc = n < 0 ? EOVERFLOW : -write_all(g.out, (size_t)n);
	if (rc) {
		recording_failed("cannot write trace", rc);
		return -1;
	}
	return 0;
}

/* Make sure the encoder and the file exist. g.wlock held. */
static int output_ready(void)
{
	if (!g.enabled)
		return -1;
	if (!g.enc_ready) {
		struct arr_mem mem = {map, unmap, NULL};
		if (arr__encoder_init(&g.enc, &mem, g.buf_words, g.zlevel, g.time_unit) < 0) {
			recording_failed("cannot set up the encoder for", ENOMEM);
			return -1;
		}
		g.enc.stacks = arr__hot.stacks != 0;
		g.out_cap = arr__encoder_bound(&g.enc);
		g.out = map(g.out_cap, NULL);
		if (!g.out) {
			recording_failed("cannot set up the encoder for", ENOMEM);
			return -1;
		}
		g.enc_ready = 1;
		g.cur_level = g.zlevel;
	}
	if (!g.created && open_output() < 0)
		return -1;
	return 0;
}

/* Encode and write the committed, unwritten part of b. g.wlock held. */
static void write_buffer(struct tbuf *b)
{
	size_t used = __atomic_load_n(&b->used, __ATOMIC_ACQUIRE);
	if (used <= b->flushed || g.finished || output_ready() < 0)
		return;
	calibrate();
	g.enc.t_base = 0; /* records hold ticks since the start: the encoder maps them to ns */
	g.enc.t_mult = (uint64_t)(g.ns_per_tick * 4294967296.0);
	uint64_t *w = b->w + b->flushed;
	size_t n = used - b->flushed;
#ifdef ALLOCRR_DIAG_KNOBS
	if (g.diag_no_encode) { /* measure the rest: drop the records */
		b->flushed = used;
		return;
	}
#endif
	long len = arr__encode_events(&g.enc, b->tid, w, n, g.out, g.out_cap);
	if (len < 0) {
		recording_failed("cannot encode events for", EINVAL);
		return;
	}
	int rc = write_all(g.out, (size_t)len);
	if (rc) {
		recording_failed("cannot write trace", -rc);
		return;
	}
	g.events_written += g.enc.last_nevents;
	b->flushed = used;
}

#define ARR_FAST_LEVEL (-3)

/* Compression level for the next chunks. g.wlock held. */
static void set_level(int level)
{
	if (g.enc_ready && level != g.cur_level) {
		ZSTD_CCtx_setParameter(g.enc.cctx, ZSTD_c_compressionLevel, level);
		g.cur_level = level;
	}
}

/* Write every queued buffer, oldest first, and recycle it. */
static void drain_queue(void)
{
	for (;;) {
		xlock(&g.wlock);
		xlock(&g.lock);
		struct tbuf *b = g.qhead;
		size_t backlog = g.qlen;
		if (b) {
			g.qhead = b->next;
			g.qlen--;
			if (!g.qhead)
				g.qtail = NULL;
		}
		xunlock(&g.lock);
		if (!b) {
			xunlock(&g.wlock);
			return;
		}
		/* Falling behind (the program keeps every core busy): trade some
		 * size for a faster zstd level until the backlog is gone. */
		set_level(backlog > 3 ? ARR_FAST_LEVEL : g.zlevel);
		write_buffer(b);
		xunlock(&g.wlock);
		xlock(&g.lock);
		buf_put_locked(b);
		xunlock(&g.lock);
	}
}

/* --- the flusher thread -------------------------------------------------- */

/*
 * RSS samples. The flusher takes one every --rss-interval; when it is late
 * (the program keeps every core busy and the flusher gets no CPU), the
 * program's own threads take it: a hook that reads the TSC anyway compares
 * the reading with arr__hot.rss_due (the last sample plus 1.25 intervals) and
 * the first to get g.rsslock samples. So the interval stays within 1.25x of
 * the setting whoever is starved. g.rsslock decides who writes g.rssbuf.
 */

/* This table's fd (fds[table()]) of the /proc file `path`, or -1; dev and
 * ino say which file it must be. Only the flusher, whose table is its own,
 * opens it afresh; a program thread uses the one opened when recording
 * started (start_flusher), while it is still ours. */
static int proc_fd(const char *path, int *fds, dev_t *dev, ino_t *ino)
{
	struct stat st;
	int *fd = &fds[table()];
	if (*fd >= 0 && fstat(*fd, &st) == 0 && st.st_dev == *dev && st.st_ino == *ino)
		return *fd;
	if (!table() && *fd >= 0)
		return *fd = -1; /* closed by the program: no open from a hook */
	int nfd = move_high(open(path, O_RDONLY | O_CLOEXEC));
	if (nfd < 0 || fstat(nfd, &st) < 0) {
		if (nfd >= 0)
			close(nfd);
		return -1;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
	return *fd = nfd;
}

static int statm_fd(void) { return proc_fd("/proc/self/statm", g.sfd, &g.statm_dev, &g.statm_ino); }
static int status_fd(void) { return proc_fd("/proc/self/status", g.hfd, &g.status_dev, &g.status_ino); }

/* Resident bytes, or 0: the second field of statm, parsed by hand (a hook
 * may run in a signal handler). */
static uint64_t read_rss(void)
{
	int fd = statm_fd();
	char buf[128];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = buf;
	while (*p && *p != ' ')
		p++;
	uint64_t pages = 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return pages * (uint64_t)g.page_size;
}

/*
 * The process image's peak resident bytes (VmHWM of /proc/self/status), or
 * 0. Not getrusage's ru_maxrss: exec carries that over from the image
 * before (the shell or allocrr that started the program), where VmHWM
 * belongs to this image's memory alone. A forked child's starts at what it
 * shares with its parent when it forks. Parsed by hand, as read_rss().
 */
static uint64_t read_hwm(void)
{
	int fd = status_fd();
	char buf[2048]; /* VmHWM is in the first 1 KiB unless Groups is long; a fatal signal's handler may run on a small stack */
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (const char *p = buf; *p; p++) {
		if ((p == buf || p[-1] == '\n') && memcmp(p, "VmHWM:", 6) == 0) {
			uint64_t kb = 0;
			for (p += 6; *p == ' ' || *p == '\t'; p++)
				;
			for (; *p >= '0' && *p <= '9'; p++)
				kb = kb * 10 + (uint64_t)(*p - '0');
			return kb * 1024;
		}
	}
	return 0;
}

/* How a writer of g.rssbuf gets g.lock to swap a full buffer: a hook only
 * tries it (it may be in a signal handler that interrupted its holder); the
 * final flush holds it already. */
enum { RSS_LOCK, RSS_TRY, RSS_HELD };

/* Append a process event (rss, rss_peak) of `value` stamped `now` to
 * g.rssbuf; g.rsslock held. */
static void rss_put(unsigned op, uint64_t now, uint64_t value, int how)
{
	struct tbuf *b = g.rssbuf;
	if (b && b->used + 2 > b->cap) {
		if (how == RSS_TRY ? xtrylock(&g.lock) : how == RSS_LOCK ? (xlock(&g.lock), 0) : 0) {
			b = NULL;
		} else {
			struct tbuf *nb = buf_get_locked();
			if (nb) {
				nb->tid = 0;
				reg_del_locked(b);
				reg_add_locked(nb);
				queue_push_locked(b);
				g.rssbuf = nb;
			}
			b = nb;
			if (how != RSS_HELD)
				xunlock(&g.lock);
		}
	}
	if (b) {
		uint64_t *w = b->w + b->used;
		w[0] = ARR_RAW_W0(op, 0, now);
		w[1] = value;
		__atomic_store_n(&b->used, b->used + 2, __ATOMIC_RELEASE);
	}
}

/* Take a sample stamped `now` (ticks); g.rsslock held; how: RSS_*. */
static void sample_rss(uint64_t now, int how)
{
	uint64_t rss = read_rss();
	if (rss)
		rss_put(ARR_OP_RSS, now, rss, how);
	/* Even a failed read moves the deadline: hooks must not retry each call. */
	__atomic_store_n(&g.rss_last, now, __ATOMIC_RELAXED);
	if (g.rss_ticks && g.enabled)
		__atomic_store_n(&arr__hot.rss_due, now + g.rss_ticks + g.rss_ticks / 4, __ATOMIC_RELAXED);
}

void arr__rss_from_hook(uint64_t now)
{
	int saved = errno;
	if (xtrylock(&g.rsslock) == 0) {
		if (now >= __atomic_load_n(&arr__hot.rss_due, __ATOMIC_RELAXED) && g.enabled)
			sample_rss(now, RSS_TRY);
		xunlock(&g.rsslock);
	}
	errno = saved;
}

/* Dangling buffers of threads that are gone: write and recycle them. */
static void reap_dangling(void)
{
	xlock(&g.lock);
	for (struct tbuf *b = g.reg, *next; b; b = next) {
		next = b->reg_next;
		if (b->dangling && syscall(SYS_tgkill, g.pid, b->tid, 0) < 0 && errno == ESRCH) {
			reg_del_locked(b);
			queue_push_locked(b);
		}
	}
	xunlock(&g.lock);
}

/* While buffers keep coming, the flusher polls the queue this often, and a
 * thread that queues a buffer wakes it only when FLUSH_WAKE_BACKLOG buffers
 * wait: a wakeup is a futex call and an IPI on the program's time (python3's
 * main thread: 2.4% of its CPU). Once a poll finds nothing, it sleeps until the
 * next RSS sample and the next buffer wakes it. */
#define FLUSH_POLL_NS 2000000u
#define FLUSH_WAKE_BACKLOG 4

/*
 * The flusher runs on a raw thread (rawthread.c): signals blocked from its
 * first instruction, its TLS a copy of its creator's. What it calls must
 * not malloc, must not take a glibc lock the program may hold, and must not
 * rely on a glibc thread descriptor: it uses sync.h's locks, system calls,
 * snprintf/strtoull (locale from the TLS copy), strerrordesc_np (no
 * translation, no allocation), zstd with the recorder's mmap allocator.
 */
/* The flusher's copy of the program's file table: keep the trace's fd,
 * close the rest (a pipe the program closes must reach EOF) but stderr when
 * it is a terminal or a file, where the recorder's one line may go. */
static void close_span(unsigned lo, unsigned hi)
{
	if (lo > hi || syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	struct rlimit rl;
	unsigned max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (unsigned)rl.rlim_cur : 65536;
	for (unsigned i = lo; i <= hi && i < max; i++)
		close((int)i);
}

static void flusher_own_fds(void)
{
	struct stat st;
	int err = fstat(2, &st) == 0 && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) ? 2 : -1;
	int keep[2] = {err, g.tfd[0]};
	if (keep[1] >= 0 && keep[1] < keep[0]) {
		keep[1] = keep[0];
		keep[0] = g.tfd[0];
	}
	unsigned lo = 0;
	for (int i = 0; i < 2; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			close_span(lo, (unsigned)keep[i] - 1);
		lo = (unsigned)keep[i] + 1;
	}
	close_span(lo, ~0u);
	g.tfd[1] = g.tfd[0];
}

/*
 * ALLOCRR_FLUSHER_NICE=N: the flusher runs N nice levels below the program
 * (19 at most; its own thread only: on Linux a nice value is per thread).
 * On an idle core that changes nothing. Where the program competes for the
 * cores with one other job, the encoding should yield to the program
 * instead of taking a nice-0 share of its time; under a heavy load it
 * gives up the flusher's own share, and once the budget is spent the
 * program's thread writes the queue itself (handoff). Off by default: on
 * the shared machine neither effect could be measured (notes,
 * 2026-12-01-stacks-4). Nothing is lost either way.
 */
static void flusher_nice(void)
{
	if (!g.flusher_nice)
		return;
	errno = 0;
	int now = getpriority(PRIO_PROCESS, 0); /* this thread's */
	if (now == -1 && errno)
		return;
	int want = now + g.flusher_nice > 19 ? 19 : now + g.flusher_nice;
	if (want > now)
		setpriority(PRIO_PROCESS, 0, want);
}

static int flusher_main(void *arg)
{
	(void)arg;
	arr__ts.buf = NULL; /* the copy of the creator's state is not ours */
	arr__ts.flusher = 1;
	ts_set(MODE_BUSY);
	flusher_own_fds();
	flusher_nice();
	if (g.rss_interval_ns) {
		/* the first sample at once, before the calibration's 2 ms of the
		 * clock: short programs get their RSS at the start too */
		xlock(&g.rsslock);
		sample_rss(rec_now(), RSS_LOCK);
		xunlock(&g.rsslock);
		xlock(&g.wlock);
		calibrate();
		xunlock(&g.wlock);
		g.rss_ticks = (uint64_t)((double)g.rss_interval_ns / g.ns_per_tick);
		if (g.enabled) /* sample_rss set no deadline without rss_ticks */
			__atomic_store_n(&arr__hot.rss_due,
					 __atomic_load_n(&g.rss_last, __ATOMIC_RELAXED) + g.rss_ticks + g.rss_ticks / 4,
					 __ATOMIC_RELAXED);
	}
	uint64_t next_reap = mono_ns() + 10000000u;
	xlock(&g.lock);
	int active = 0; /* the last wakeup found buffers queued */
	for (;;) {      /* until the process ends */
		if (!g.qhead) {
			uint64_t now = mono_ns(), wake = now + 100000000u;
			if (g.rss_interval_ns) {
				uint64_t t = rec_now(),
					 due = __atomic_load_n(&g.rss_last, __ATOMIC_RELAXED) + g.rss_ticks;
				wake = now + (due > t ? (uint64_t)((double)(due - t) * g.ns_per_tick) : 0);
			}
			if (active && now + FLUSH_POLL_NS < wake)
				wake = now + FLUSH_POLL_NS;
			g.polling = active;
			xcond_wait_until(&g.cond, &g.lock, wake);
			g.polling = 0;
		}
		active = g.qhead != NULL;
		xunlock(&g.lock);
		if (g.rss_interval_ns) {
			/* A hook may have sampled a moment ago: not again so soon. */
			uint64_t t = rec_now();
			if (t - __atomic_load_n(&g.rss_last, __ATOMIC_RELAXED) >= g.rss_ticks - g.rss_ticks / 8) {
				xlock(&g.rsslock);
				t = rec_now();
				if (t - g.rss_last >= g.rss_ticks - g.rss_ticks / 8)
					sample_rss(t, RSS_LOCK);
				xunlock(&g.rsslock);
			}
		}
		uint64_t now = mono_ns();
		if (now >= next_reap) {
			reap_dangling();
			next_reap = now + 10000000u;
		}
		drain_queue();
		xlock(&g.lock);
	}
	__builtin_unreachable(); /* the process's end ends this thread */
}

static void start_flusher(void)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	if (g.flusher_running || !g.enabled)
		return;
	pthread_mutex_lock(&once);
	if (g.flusher_running) {
		pthread_mutex_unlock(&once);
		return;
	}
	if (g.rss_interval_ns) {
		xlock(&g.lock);
		if (!g.rssbuf && (g.rssbuf = buf_get_locked())) {
			g.rssbuf->tid = 0;
			reg_add_locked(g.rssbuf);
		}
		xunlock(&g.lock);
		if (!g.rssbuf)
			g.rss_interval_ns = 0;
	}
	int saved = errno;
	if (g.rss_interval_ns) {
		statm_fd(); /* the program's threads' fds, for the samples they take */
		status_fd();
	}
	if (arr__raw_thread_start(&g.flusher, flusher_main, NULL, 512 * 1024) == 0)
		g.flusher_running = 1;
	errno = saved;
	pthread_mutex_unlock(&once);
}

/* --- threads ------------------------------------------------------------- */

static void key_destructor(void *arg)
{
	(void)arg;
	/* Later destructors of other keys may still allocate: come back for
	 * the last round before recording this thread's end. */
	if (arr__ts.exit_rounds + 1 < PTHREAD_DESTRUCTOR_ITERATIONS) {
		arr__ts.exit_rounds++;
		uint8_t mode = arr__ts.mode;
		ts_set(MODE_BUSY);
		pthread_setspecific(g.key, &arr__ts);
		ts_set(mode);
		return;
	}
	arr__rec_thread_exit();
	if (arr__hot.stacks) /* the thread's stack table; a later call makes a new one */
		arr__stacks_thread_exit();
}

void arr__rec_thread_exit(void)
{
	if (arr__ts.mode != MODE_ACTIVE)
		return;
	arr__rec_event(ARR_OP_THREAD_EXIT, rec_now(), 0, 0, 0, 0, 0, 0, 0);
	if (arr__ts.mode != MODE_ACTIVE)
		return;
	ts_set(MODE_BUSY);
	struct tbuf *b = arr__ts.buf;
	xlock(&g.lock);
	g.nthreads--;
	reg_del_locked(b);
	queue_push_locked(b);
	xcond_signal(&g.cond);
	xunlock(&g.lock);
	if (!g.flusher_running)
		drain_queue();
	arr__ts.buf = NULL;
	ts_set(MODE_EXITED);
}

static uint32_t gettid_raw(void) { return (uint32_t)syscall(SYS_gettid); }

/* First call of a thread: give it a buffer and record its start. */
static void thread_register_calls(void);

/* The libc calls of registration (atexit, pthread_atfork, TSD) allocate:
 * the recorder's own calls, not the program's. */
static void thread_register(void)
{
	arr__ts.internal = 1;
	thread_register_calls();
	arr__ts.internal = 0;
}

static void thread_register_calls(void)
{
	arr__rec_init();
	if (!g.enabled) {
		ts_set(MODE_OFF);
		return;
	}
	ts_set(MODE_BUSY);
	arr__ts.tid = gettid_raw();
	xlock(&g.lock);
	if (++g.nthreads > 1 && !g.diag_stale_time) /* before this thread's first event: see rec_stamp() */
		__atomic_store_n(&arr__hot.exact_time, 1, __ATOMIC_RELEASE);
	struct tbuf *b = buf_get_locked();
	if (!b && (b = buf_new(g.buf_words))) /* over budget beats losing events */
		g.nbufs++;
	if (b) {
		b->tid = arr__ts.tid;
		reg_add_locked(b);
	} else {
		g.nthreads--;
	}
	xunlock(&g.lock);
	if (!b) { /* no memory at all: this thread goes unrecorded */
		ts_set(MODE_OFF);
		return;
	}
	arr__ts.buf = b;
	pthread_setspecific(g.key, &arr__ts);
	start_flusher();
	b->w[0] = ARR_RAW_W0(ARR_OP_THREAD_START, 0, rec_now());
	__atomic_store_n(&b->used, 1, __ATOMIC_RELEASE);
	ts_set(MODE_ACTIVE);
}

/* The current buffer is full: queue it and take another. */
static void handoff(void)
{
	struct tbuf *old = arr__ts.buf;
	ts_set(MODE_BUSY);
	if (!g.enabled) {
		ts_set(MODE_OFF);
		return;
	}
	xlock(&g.lock);
	struct tbuf *nb = buf_get_locked();
	if (nb) {
		nb->tid = old->tid;
		nb->dangling = old->dangling;
		reg_del_locked(old);
		reg_add_locked(nb);
		queue_push_locked(old);
		/* see FLUSH_POLL_NS */
		if (g.qlen >= FLUSH_WAKE_BACKLOG || !g.polling)
			xcond_signal(&g.cond);
	}
	xunlock(&g.lock);
	if (!nb) {
		/* Out of buffers: the flusher is behind. Write the queue and this
		 * buffer here, in order, and reuse this buffer. */
		xlock(&g.wlock);
		xlock(&g.lock);
		struct tbuf *q = queue_take_all_locked();
		xunlock(&g.lock);
		for (struct tbuf *b = q; b; b = b->next)
			write_buffer(b);
		write_buffer(old);
		old->used = old->flushed = 0;
		xunlock(&g.wlock);
		xlock(&g.lock);
		while (q) {
			struct tbuf *next = q->next;
			buf_put_locked(q);
			q = next;
		}
		xunlock(&g.lock);
		nb = old;
	} else if (!g.flusher_running) {
		drain_queue();
	}
	arr__ts.buf = nb;
	ts_set(g.enabled ? MODE_ACTIVE : MODE_OFF);
}

/* After the thread's exit hook: record into a small dangling buffer. */
static void dangling_start(void)
{
	ts_set(MODE_BUSY);
	struct tbuf *b = g.enabled ? buf_new(512) : NULL;
	if (!b) {
		ts_set(MODE_OFF);
		return;
	}
	b->tid = arr__ts.tid;
	b->dangling = 1;
	xlock(&g.lock);
	reg_add_locked(b);
	xunlock(&g.lock);
	arr__ts.buf = b;
	ts_set(MODE_ACTIVE);
}

void arr__rec_dropped(void) { __atomic_fetch_add(&g.dropped, 1, __ATOMIC_RELAXED); }

uint64_t *arr__rec_slow(unsigned words)
{
	int saved = errno;
	switch (arr__ts.mode) {
	case MODE_NEW:
		thread_register();
		break;
	case MODE_ACTIVE:
		handoff();
		break;
	case MODE_EXITED:
		dangling_start();
		break;
	default:
		break;
	}
	errno = saved;
	struct tbuf *b = arr__ts.buf;
	if (arr__ts.mode != MODE_ACTIVE || b->used + words > b->cap)
		return NULL;
	return b->w + b->used;
}

/* --- lifecycle ----------------------------------------------------------- */

/* Is `path` a trace written by this process or one of its ancestors? */
static int written_by_ancestor(const char *path)
{
	uint8_t h[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, h, sizeof h);
	close(fd);
	if (n < ARR_FILE_HDR_FIXED + ARR_TLV_HDR + 8 || memcmp(h, ARR_MAGIC, ARR_MAGIC_LEN) ||
	    arr_le16_read(h + ARR_FILE_HDR_FIXED + ARR_TLV_KEY) != ARR_META_PID)
		return 0;
	pid_t owner = (pid_t)arr_le64_read(h + ARR_FILE_HDR_FIXED + ARR_TLV_HDR);
	for (pid_t p = getpid(), depth = 0; p > 1 && depth < 64; depth++) {
		if (p == owner)
			return 1;
		char sp[64], st[512];
		snprintf(sp, sizeof sp, "/proc/%d/stat", (int)p);
		size_t len = read_file(sp, st, sizeof st - 1);
		st[len] = 0;
		char *rp = strrchr(st, ')');
		if (!rp || sscanf(rp + 2, "%*c %d", &p) != 1)
			return 0;
	}
	return 0;
}

/* Registered from the first call, which comes before the program's entry
 * point: exit handlers run last-registered first, so this one runs after
 * every ELF destructor (_dl_fini) and sees their calls too. */
static void on_exit_flush(int status, void *arg)
{
	(void)arg;
	arr__final_flush(ARR_END_EXIT, status);
}

static void fatal_signal(int sig)
{
	int saved = errno;
	arr__final_flush(ARR_END_SIGNAL, sig);
	errno = saved;
	/* SA_RESETHAND restored the default action: deliver it. */
	raise(sig);
}

static void install_signal_handlers(void)
{
	static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGILL,  SIGTRAP, SIGABRT, SIGBUS,  SIGFPE, SIGUSR1,
				   SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = fatal_signal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/*
 * The trace's time origin. Hooks stamp a call before they record it, so the
 * origin must exist before the first stamp of the process: the first hook
 * call sets it (preload.c's resolve()), which may come long before
 * arr__rec_init() -- another preloaded or linked allocator (jemalloc) calls
 * malloc from its constructor, before ours. A stamp taken against origin 0
 * would be the raw TSC (the machine's uptime) and, the encoder keeping a
 * thread's time monotonic, every later call of that thread would carry it.
 */
void arr__rec_clock_start(void)
{
	if (arr__hot.start_tsc)
		return;
	clock_pair(&g.cal_tsc, &g.cal_mono);
	g.start_mono = g.cal_mono;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	g.start_real = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	__atomic_store_n(&arr__hot.start_tsc, g.cal_tsc, __ATOMIC_RELEASE);
}

/*
 * The first hook call of the process (preload.c's resolve()), which may come
 * before arr__rec_init(): the time origin, and whether calls are stacked. A
 * C++ program's first malloc (libstdc++'s exception pool, allocated from its
 * constructor, before ours) must already take the stacked path; that path
 * initializes the recorder before it records, so the call gets its stack.
 */
void arr__rec_early(void)
{
	arr__rec_clock_start();
	arr__hot.stacks = env_int("ALLOCRR_STACKS", 0, 0, 120);
}

void arr__rec_init(void)
{
	if (g.initialized)
		return;
	uint8_t mode = arr__ts.mode;
	ts_set(MODE_BUSY);
	g.initialized = 1;
	g.pid = getpid();
	g.page_size = sysconf(_SC_PAGESIZE);
	const char *out = getenv("ALLOCRR_OUTPUT");
	snprintf(g.output, sizeof g.output, "%s", out && *out ? out : "allocrr.atr");
	g.no_children = env_int("ALLOCRR_NO_CHILDREN", 0, 0, 1);
	g.rss_interval_ns = (uint64_t)env_int("ALLOCRR_RSS_INTERVAL_MS", 10, 0, 3600000) * 1000000u;
	/* A power of two, so the encoder shifts instead of dividing. */
	g.time_unit = 1u << env_int("ALLOCRR_TIME_SHIFT", 4, 0, 20);
	g.zlevel = env_int("ALLOCRR_ZSTD_LEVEL", 1, -5, 19);
	g.flusher_nice = env_int("ALLOCRR_FLUSHER_NICE", 0, 0, 19);
	g.buf_words = (size_t)env_int("ALLOCRR_BUFFER_KB", 256, 16, 65536) * 1024 / 8;
	g.maxbufs = 32;
	arr__hot.exact_time = env_int("ALLOCRR_EXACT_TIME", 0, 0, 1);
	/* ALLOCRR_STACKS=DEPTH (1..120; "" or 0: no stacks) */
	arr__hot.stacks = env_int("ALLOCRR_STACKS", 0, 0, 120);
	if (arr__hot.stacks)
		arr__stacks_init();
#ifdef ALLOCRR_DIAG_KNOBS
	g.diag_stale_time = env_int("ALLOCRR_DIAG_STALE_TIME", 0, 0, 1);
	g.diag_no_encode = env_int("ALLOCRR_DIAG_NO_ENCODE", 0, 0, 1);
#endif
	const char *root = getenv("ALLOCRR_ROOT_PID");
	g.root = root ? atoi(root) == g.pid : !written_by_ancestor(g.output);
	g.enabled = !(g.no_children && !g.root) && !getenv("ALLOCRR_DISABLE");
	arr__rec_clock_start();
	if (g.enabled) {
		pthread_key_create(&g.key, key_destructor);
		pthread_atfork(arr__rec_fork_prepare, arr__rec_fork_parent, arr__rec_fork_child);
		g.exit_hooked = on_exit(on_exit_flush, NULL) == 0;
		install_signal_handlers();
		/* The top process creates its file now, so an unwritable output
		 * is reported before the program runs and no thread is started. */
		xlock(&g.wlock);
		output_ready();
		xunlock(&g.wlock);
	}
	ts_set(mode);
}

int arr__rec_owns_process(void)
{
	/* A vfork child shares our memory but has its own pid. */
	return g.initialized && syscall(SYS_getpid) == g.pid;
}

/* Lock with a deadline: a signal handler must not wait forever for a lock
 * the interrupted code may hold. */
static int lock_for_flush(struct xlock *m, int patient)
{
	if (patient) {
		xlock(m);
		return 0;
	}
	for (int i = 0; i < 200; i++) {
		if (xtrylock(m) == 0)
			return 0;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

/* Are there allocation calls not yet written? (A forked child that only
 * execs leaves no trace behind.) */
static int pending_calls(void)
{
	for (struct tbuf *b = g.reg; b; b = b->reg_next)
		for (size_t i = b->flushed, n; i < b->used && (n = arr__raw_words(b->w + i)); i += n)
			if (arr_op_is_call(ARR_RAW_OP(b->w[i])))
				return 1;
	for (struct tbuf *b = g.qhead; b; b = b->next)
		for (size_t i = b->flushed, n; i < b->used && (n = arr__raw_words(b->w + i)); i += n)
			if (arr_op_is_call(ARR_RAW_OP(b->w[i])))
				return 1;
	return 0;
}

void arr__final_flush(unsigned reason, int status)
{
	if (!g.initialized || !g.enabled || !arr__rec_owns_process())
		return;
	uint8_t mode = arr__ts.mode;
	ts_set(MODE_BUSY);
	int patient = reason != ARR_END_SIGNAL;
	if (lock_for_flush(&g.wlock, patient) < 0)
		goto out;
	/* No RSS sample after the END's time (the order of locks: wlock,
	 * rsslock, lock). A sampler stuck in an interrupted hook is not waited for. */
	int rss_locked = lock_for_flush(&g.rsslock, 0) == 0;
	if (lock_for_flush(&g.lock, patient) < 0) {
		if (rss_locked)
			xunlock(&g.rsslock);
		xunlock(&g.wlock);
		goto out;
	}
	uint64_t end_t = rec_now(); /* when the process ended, not when its writing did */
	if (g.finished || (!g.created && g.is_fork_child && !pending_calls()))
		goto unlock;
	/* One last sample, at the END's time: a program whose RSS peaks at its
	 * end (nothing freed) has its peak in the trace whatever the interval.
	 * And the true peak (an exec ends this image too): a spike between two
	 * samples is on neither, and a program shorter than the interval has
	 * only the first and the last. */
	if (rss_locked && g.rss_interval_ns) {
		sample_rss(end_t, RSS_HELD); /* g.lock is ours: a full buffer is swapped, not the sample lost */
		uint64_t hwm = read_hwm();
		if (hwm)
			rss_put(ARR_OP_RSS_PEAK, end_t, hwm, RSS_HELD);
	}
	struct tbuf *q = queue_take_all_locked();
	for (struct tbuf *b = q; b; b = b->next)
		write_buffer(b);
	while (q) {
		struct tbuf *next = q->next;
		buf_put_locked(q);
		q = next;
	}
	for (struct tbuf *b = g.reg; b; b = b->reg_next)
		write_buffer(b);
	if (output_ready() == 0) {
		calibrate();
		uint8_t end[ARR_CHUNK_PREFIX + ARR_END_BODY];
		size_t n = arr__encode_end(end, reason, status, tsc_to_ns(end_t), g.events_written);
		int rc = write_all(end, n);
		if (rc)
			recording_failed("cannot write trace", -rc);
		g.finished = 1;
		uint64_t dropped = __atomic_load_n(&g.dropped, __ATOMIC_RELAXED);
		if (dropped) {
			char msg[64];
			snprintf(msg, sizeof msg, "%llu", (unsigned long long)dropped);
			say(msg,
			    " calls made in signal handlers while the recorder was busy in the same "
			    "thread were not recorded in ",
			    g.path);
		}
	}
unlock:
	xunlock(&g.lock);
	if (rss_locked)
		xunlock(&g.rsslock);
	xunlock(&g.wlock);
out:
	ts_set(mode);
}

void arr__rec_event(unsigned op, uint64_t t, unsigned failed, int err, unsigned nargs, uint64_t a0, uint64_t a1,
		    uint64_t a2, uint64_t a3)
{
	if ((arr_op_facts(op) & ARR_OPF_RET) && arr__hot.stacks && failed) {
		/* a call that succeeded comes here only when rec_ok() counted it down
		 * and found no sample: it is recorded without a stack */
		arr__rec_stacked_failed(op, t, err, nargs, a0, a1, a2, a3);
		return;
	}
	unsigned n = 1 + nargs + failed;
	if (!rec_enter())
		return;
	uint64_t *w = rec_begin(n);
	if (!w) {
		rec_leave();
		return;
	}
	uint64_t a[4] = {a0, a1, a2, a3};
	w[0] = ARR_RAW_W0(op, failed, t);
	for (unsigned i = 0; i < nargs; i++)
		w[1 + i] = a[i];
	if (failed)
		w[1 + nargs] = (uint64_t)(uint32_t)err;
	rec_commit(n);
	rec_leave();
}

/* Record an event with one argument (fork, exec failure) right now. */
void arr__rec_event_now(unsigned op, int failed, int err, uint64_t arg)
{
	arr__rec_event(op, rec_now(), (unsigned)failed, err, 1, arg, 0, 0, 0);
}

/* An event carrying a string (exec path, mark name), cut to what one raw
 * record holds. */
static void rec_str_event(unsigned op, const char *path, int failed, int err)
{
	size_t len = path ? strnlen(path, (ARR_RAW_MAX_WORDS - 3) * 8) : 0;
	unsigned words = 2 + (unsigned)((len + 7) / 8) + (failed != 0);
	if (!rec_enter())
		return;
	uint64_t *w = rec_begin(words);
	if (!w) {
		rec_leave();
		return;
	}
	w[0] = ARR_RAW_W0(op, failed != 0, rec_now());
	w[1] = len;
	w[1 + (len + 7) / 8] = 0; /* pad the last word of the path */
	memcpy(w + 2, path, len);
	if (failed)
		w[words - 1] = (uint64_t)(uint32_t)err;
	rec_commit(words);
	rec_leave();
}

void arr__rec_exec(const char *path)
{
	if (!arr__rec_owns_process())
		return;
	rec_str_event(ARR_OP_EXEC, path, 0, 0);
	arr__final_flush(ARR_END_EXEC, 0);
}

void arr__rec_mark(const char *name)
{
	if (arr__ts.mode == MODE_ACTIVE || arr__ts.mode == MODE_NEW || arr__ts.mode == MODE_EXITED)
		rec_str_event(ARR_OP_MARK, name, 0, 0);
}

void arr__rec_exec_failed(const char *path, int err)
{
	if (!arr__rec_owns_process())
		return;
	xlock(&g.wlock);
	g.finished = 0; /* we are still here: the trace goes on */
	xunlock(&g.wlock);
	rec_str_event(ARR_OP_EXEC, path, 1, err);
}

void arr__rec_fork_prepare(void)
{
	uint8_t mode = arr__ts.mode;
	ts_set(MODE_BUSY);
	xlock(&g.wlock);
	xlock(&g.lock);
	ts_set(mode);
}

void arr__rec_fork_parent(void)
{
	xunlock(&g.lock);
	xunlock(&g.wlock);
}

void arr__rec_fork_child(void)
{
	/* Only this thread goes on: the locks are free, and the flusher is
	 * gone (its memory too, once released). */
	g.lock = (struct xlock){0};
	g.wlock = (struct xlock){0};
	g.cond = (struct xcond){0};
	arr__raw_thread_forget(&g.flusher);
	if (arr__hot.stacks) /* the child's trace defines its own stack nodes */
		arr__stacks_fork_child();
	/* Everything buffered belongs to the parent's trace: recycle it. */
	struct tbuf *q = queue_take_all_locked();
	while (q) {
		struct tbuf *next = q->next;
		buf_put_locked(q);
		q = next;
	}
	while (g.reg) {
		struct tbuf *b = g.reg;
		reg_del_locked(b);
		buf_put_locked(b);
	}
	g.rssbuf = NULL;
	g.nthreads = 0;
	arr__hot.exact_time = env_int("ALLOCRR_EXACT_TIME", 0, 0, 1);
	arr__ts.skip = 0;
	g.flusher_running = 0;
	g.polling = 0; /* no flusher yet: the first full buffer must wake it */
	/* The flusher's file table went with it; this is the program's. */
	for (int i = 0; i < 2; i++) {
		if (i == 0 && g.tfd[0] >= 0)
			close(g.tfd[0]);
		if (i == 0 && g.sfd[0] >= 0)
			close(g.sfd[0]); /* the parent's statm: ours is opened anew */
		if (i == 0 && g.hfd[0] >= 0)
			close(g.hfd[0]); /* and its status */
		g.tfd[i] = g.sfd[i] = g.hfd[i] = -1;
	}
	g.created = 0;
	__atomic_store_n(&arr__hot.rss_due, UINT64_MAX, __ATOMIC_RELAXED);
	g.rsslock = (struct xlock){0};
	g.rss_last = 0;
	snprintf(g.parent_trace, sizeof g.parent_trace, "%s", g.path);
	g.path[0] = 0;
	g.pid = getpid();
	g.root = 0;
	g.is_fork_child = 1;
	g.finished = 0;
	g.events_written = 0;
	arr__hot.start_tsc = __rdtsc();
	g.start_mono = mono_ns();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	g.start_real = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	if (g.no_children)
		g.enabled = 0;
	arr__ts.buf = NULL;
	arr__ts.exit_rounds = 0;
	arr__ts.busy = 0; /* fork() from a handler that interrupted a hook */
	/* The forking thread re-registers (new tid, new buffer) on its next
	 * call; fork() itself is still inside the recorder. */
	ts_set(g.enabled ? MODE_NEW : MODE_OFF);
}

__attribute__((destructor)) static void rec_fini(void)
{
	if (!g.exit_hooked) /* no exit handler: this is the last chance */
		arr__final_flush(ARR_END_EXIT, 0);
}

/*
 * prepare.c - turn a trace into a workload (see allocrr/replay.h, wl.h):
 * one streaming pass over the time-ordered merge.
 *
 * The live set maps addresses to dense ids. Ids are recycled through a pool
 * per freeing thread: the next object that thread allocates takes the id,
 * and since the same thread freed it, no other thread can still be using the
 * slot, so recycling never needs a sync. A slot's version counts entries
 * naming it; when an op on an object comes from another thread than the
 * object's last op, a sync entry makes the replay wait for that version.
 *
 * Repairs (counted, never fatal):
 *   - an address returned while still live: its free was logged late by
 *     another thread. The old object moves to a "displaced" map; the next
 *     free of that address releases the displaced (older) object first.
 *   - free of an address not live: dropped (double_free when the address is
 *     in a small cache of recently freed addresses, unknown_free otherwise).
 *   - realloc of an address not live: replayed as realloc(NULL, n).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "addrmap.h"
#include "allocrr/replay.h"
#include "wl.h"

#define RECENT_BITS 16

struct pslot {
	uint32_t ver;
	uint32_t thread;
	uint64_t size; /* requested bytes, for ideal RSS */
};

struct pstream {
	uint8_t *buf;
	size_t len;
	uint32_t entries; /* in buf */
};

enum { WAIT_NONE, WAIT_ALLOC, WAIT_FREE };
/* How long a thread may wait for the call that explains its own. */
#define WAIT_NS 1000000ull
#define WAIT_EVENTS 65536

struct pthr {
	uint32_t tid;
	/* calls held back until another thread's call makes them fit */
	struct arr_event *q;
	size_t qhead, qlen, capq;
	int blocked, wait_kind;
	uint64_t wait_addr, blocked_t;
	uint32_t *pool;
	size_t npool, cappool;
	struct pstream s;
};

struct prep {
	int fd;
	uint64_t page_size; /* the trace's, for pvalloc's rounding */
	uint64_t off;       /* file offset of the next block */
	struct addrmap live, displaced;
	struct addrmap tids; /* tid + 1 -> thread index */
	struct pslot *slots;
	size_t nslots, capslots;
	struct pthr *thr;
	size_t nthr, capthr;
	struct pstream sched;
	uint32_t run_thread;
	uint64_t run_len;
	struct wl_block *blocks;
	size_t nblocks, capblocks;
	uint64_t live_bytes, live_blocks;
	uint64_t *recent;
	uint32_t last_tid, last_ti; /* last_ti + 1, 0 = none */
	uint32_t nblocked;
	int err;           /* sticky error of a helper that cannot return one */
	XXH3_state_t *sum; /* of everything after the header, written in order */
	struct wl_header h;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return ARR_ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n, len -= (size_t)n, off += (uint64_t)n;
	}
	return 0;
}

/* Append to the file after the header (in order, so the checksum streams). */
static int emit(struct prep *pp, const void *buf, size_t len)
{
	int rc = write_all(pp->fd, buf, len, pp->off);
	if (rc)
		return rc;
	XXH3_64bits_update(pp->sum, buf, len);
	pp->off += len;
	return 0;
}

static int flush_stream(struct prep *pp, struct pstream *s, uint32_t stream)
{
	if (!s->len)
		return 0;
	int rc = grow((void **)&pp->blocks, &pp->capblocks, pp->nblocks + 1, sizeof *pp->blocks);
	if (rc)
		return rc;
	pp->blocks[pp->nblocks] = (struct wl_block){pp->off, stream, (uint32_t)s->len, s->entries, 0};
	rc = emit(pp, s->buf, s->len);
	if (rc)
		return rc;
	pp->nblocks++;
	s->len = 0;
	s->entries = 0;
	return 0;
}

static int stream_room(struct prep *pp, struct pstream *s, uint32_t stream)
{
	if (!s->buf && !(s->buf = malloc(WL_BLOCK)))
		return ARR_ENOMEM;
	if (s->len + WL_ENTRY_MAX > WL_BLOCK)
		return flush_stream(pp, s, stream);
	return 0;
}

/* Close the current schedule run. */
static int sched_flush_run(struct prep *pp)
{
	if (!pp->run_len)
		return 0;
	int rc = stream_room(pp, &pp->sched, UINT32_MAX);
	if (rc)
		return rc;
	uint8_t *p = pp->sched.buf + pp->sched.len;
	p = wl_put(p, pp->run_thread);
	p = wl_put(p, pp->run_len);
	pp->sched.len = (size_t)(p - pp->sched.buf);
	pp->sched.entries++;
	pp->run_len = 0;
	return 0;
}

/* The schedule stream is numbered nthreads, known only at the end: its
 * blocks are marked UINT32_MAX and renumbered then. */
static int sched_add(struct prep *pp, uint32_t t)
{
	if (pp->run_len && pp->run_thread != t) {
		int rc = sched_flush_run(pp);
		if (rc)
			return rc;
	}
	pp->run_thread = t;
	pp->run_len++;
	return 0;
}

static int thread_of(struct prep *pp, uint32_t tid, uint32_t *out)
{
	const struct am_entry *e = am_find(&pp->tids, (uint64_t)tid + 1);
	if (e) {
		*out = (uint32_t)e->val;
		return 0;
	}
	int rc = grow((void **)&pp->thr, &pp->capthr, pp->nthr + 1, sizeof *pp->thr);
	if (rc)
		return rc;
	memset(&pp->thr[pp->nthr], 0, sizeof *pp->thr);
	pp->thr[pp->nthr].tid = tid;
	*out = (uint32_t)pp->nthr;
	rc = am_put(&pp->tids, (uint64_t)tid + 1, pp->nthr);
	pp->nthr++;
	return rc;
}

static inline int new_id(struct prep *pp, struct pthr *t, uint32_t ti, uint64_t size, uint64_t *id)
{
	if (t->npool) {
		*id = t->pool[--t->npool];
	} else {
		int rc = grow((void **)&pp->slots, &pp->capslots, pp->nslots + 1, sizeof *pp->slots);
		if (rc)
			return rc;
		pp->slots[pp->nslots] = (struct pslot){0, ti, 0};
		*id = pp->nslots++;
	}
	pp->slots[*id].thread = ti;
	pp->slots[*id].size = size;
	pp->live_bytes += size;
	pp->live_blocks++;
	if (pp->live_bytes > pp->h.ideal_rss)
		pp->h.ideal_rss = pp->live_bytes;
	if (pp->live_blocks > pp->h.peak_live_blocks)
		pp->h.peak_live_blocks = pp->live_blocks;
	return 0;
}

static inline int release_id(struct prep *pp, struct pthr *t, uint64_t id)
{
	pp->live_bytes -= pp->slots[id].size;
	pp->live_blocks--;
	int rc = grow((void **)&t->pool, &t->cappool, t->npool + 1, sizeof *t->pool);
	if (rc)
		return rc;
	t->pool[t->npool++] = (uint32_t)id;
	return 0;
}

/* Record that address a now names id; displace a live object there. e is
 * am_probe(&pp->live, a) on a reserved map, or NULL to probe here. */
static inline int bind_at(struct prep *pp, struct am_entry *e, uint64_t a, uint64_t id)
{
	if (!a)
		return 0;
	if (!e) {
		int rc = am_reserve(&pp->live);
		if (rc)
			return rc;
		e = am_probe(&pp->live, a);
	}
	if (e->key) {
		pp->h.repairs[ARR_REPAIR_alloc_before_free]++;
		if (am_find(&pp->displaced, a))
			pp->h.repairs[ARR_REPAIR_lost_object]++;
		int rc = am_put(&pp->displaced, a, e->val);
		if (rc)
			return rc;
		e->val = id;
		return 0;
	}
	am_fill(&pp->live, e, a, id);
	return 0;
}

/* Find and unbind the object at address a: the displaced one first. */
static inline int unbind(struct prep *pp, uint64_t a, uint64_t *id)
{
	if (pp->displaced.count && am_del(&pp->displaced, a, id))
		return 1;
	return am_del(&pp->live, a, id);
}

static inline uint8_t *put_sync(struct prep *pp, struct pthr *t, uint32_t ti, uint64_t id, uint8_t *p)
{
	if (pp->slots[id].thread == ti)
		return p;
	*p++ = WL_SYNC;
	p = wl_put(p, id);
	p = wl_put(p, pp->slots[id].ver);
	t->s.entries++;
	pp->h.syncs++;
	int rc = sched_add(pp, ti);
	if (rc)
		pp->err = rc;
	return p;
}

static inline int is_live(const struct prep *pp, uint64_t a)
{
	return am_find(&pp->live, a) || (pp->displaced.count && am_find(&pp->displaced, a));
}

#define BLOCKED 1
#define DROPPED 2 /* a repair: the call is not replayed */

static inline int block_on(struct pthr *t, int kind, uint64_t addr)
{
	t->wait_kind = kind;
	t->wait_addr = addr;
	return BLOCKED;
}

/* What try_call does with each call, from the operation table: one load,
 * where arr_op_facts() would cost a bounds check and a load per test. */
enum { K_FREE = 1, K_RESIZE, K_ALLOC };
#define CALL_KIND(f) (!((f)&ARR_OPF_CALL) ? 0 : !((f)&ARR_OPF_RET) ? K_FREE : ((f)&ARR_OPF_PTR) ? K_RESIZE : K_ALLOC)
static const uint8_t call_kind[256] = {
#define CALL_KIND_ENTRY(name, val, str, args, facts) [val] = CALL_KIND(facts),
	ARR_OP_MAP(CALL_KIND_ENTRY)
#undef CALL_KIND_ENTRY
};

/*
 * Does the call fit the live set? 0, or BLOCKED with what it waits for.
 * *ep is the live entry of the freed address (free) or of the returned one
 * (the other allocating calls but the resizes), probed once here and used
 * when the call is applied: nothing changes the live map in between.
 */
static ARR_ALWAYS_INLINE int check_order(struct prep *pp, struct pthr *t, const struct arr_event *ev, unsigned kind,
					 int force, struct am_entry **ep)
{
	int takes = kind != K_ALLOC && ev->ptr, rc;
	*ep = NULL;
	if (kind == K_FREE) {
		if (ev->ptr && !pp->displaced.count) {
			*ep = am_find(&pp->live, ev->ptr);
			if (!*ep && !force)
				return block_on(t, WAIT_ALLOC, ev->ptr);
		} else if (!force && takes && !is_live(pp, ev->ptr)) {
			return block_on(t, WAIT_ALLOC, ev->ptr);
		}
	} else if (kind == K_ALLOC) {
		if (!ev->failed && ev->ret) {
			if ((rc = am_reserve(&pp->live)))
				return rc;
			struct am_entry *e = *ep = am_probe(&pp->live, ev->ret);
			if (!force && ev->ret != ev->ptr &&
			    (e->key || (pp->displaced.count && am_find(&pp->displaced, ev->ret))))
				return block_on(t, WAIT_FREE, ev->ret);
		}
	} else if (!force) {
		if (takes && !is_live(pp, ev->ptr))
			return block_on(t, WAIT_ALLOC, ev->ptr);
		if (!ev->failed && ev->ret && ev->ret != ev->ptr && is_live(pp, ev->ret))
			return block_on(t, WAIT_FREE, ev->ret);
	}
	return 0;
}

/* free: the object's id, or a repair when no live object is there. */
static ARR_ALWAYS_INLINE uint8_t *emit_free(struct prep *pp, struct pthr *t, uint32_t ti, const struct arr_event *ev,
					    struct am_entry *e, uint8_t *p, int *rcp)
{
	uint64_t id;
	if (!ev->ptr) {
		*p++ = ARR_OP_FREE;
		return p;
	}
	uint64_t *recent = &pp->recent[(ev->ptr * 0x9E3779B97F4A7C15ull) >> (64 - RECENT_BITS)];
	if (e) {
		id = e->val;
		am_del_at(&pp->live, e);
	} else if (!unbind(pp, ev->ptr, &id)) {
		pp->h.repairs[*recent == ev->ptr ? ARR_REPAIR_double_free : ARR_REPAIR_unknown_free]++;
		*rcp = DROPPED;
		return p;
	}
	*recent = ev->ptr;
	p = put_sync(pp, t, ti, id, p);
	*p++ = ARR_OP_FREE | WL_F_SRC;
	p = wl_put(p, id);
	pp->slots[id].ver++;
	*rcp = release_id(pp, t, id);
	return p;
}

/* realloc, reallocarray: of a live object (WL_F_SRC), or of none (a new one). */
static ARR_ALWAYS_INLINE uint8_t *emit_resize(struct prep *pp, struct pthr *t, uint32_t ti, const struct arr_event *ev,
					      uint8_t *p, int *rcp)
{
	unsigned op = ev->op;
	uint64_t id = 0, bytes = arr_event_bytes(ev, pp->page_size);
	int has_src = 0;
	if (ev->ptr) {
		struct am_entry *x = am_find(&pp->displaced, ev->ptr);
		if (!x)
			x = am_find(&pp->live, ev->ptr);
		if (x) {
			id = x->val;
			has_src = 1;
		} else {
			pp->h.repairs[ARR_REPAIR_unknown_realloc]++;
		}
	}
	if (has_src) {
		uint8_t flags = 0;
		if (ev->failed)
			flags = bytes == 0 ? WL_F_KILL : WL_F_FAILED;
		p = put_sync(pp, t, ti, id, p);
		*p++ = (uint8_t)(op | WL_F_SRC | flags);
		p = wl_put(p, id);
		pp->slots[id].ver++;
		pp->slots[id].thread = ti;
		if (flags & WL_F_KILL) {
			unbind(pp, ev->ptr, &id);
			if ((*rcp = release_id(pp, t, id)))
				return p;
		} else if (!ev->failed) {
			unbind(pp, ev->ptr, &id);
			pp->live_bytes += bytes - pp->slots[id].size;
			pp->slots[id].size = bytes;
			if (pp->live_bytes > pp->h.ideal_rss)
				pp->h.ideal_rss = pp->live_bytes;
			if ((*rcp = bind_at(pp, NULL, ev->ret, id)))
				return p;
		}
	} else {
		*p++ = (uint8_t)(op | (ev->failed ? WL_F_FAILED : 0));
		if (!ev->failed) {
			if ((*rcp = new_id(pp, t, ti, bytes, &id)))
				return p;
			p = wl_put(p, id);
			pp->slots[id].ver++;
			if ((*rcp = bind_at(pp, NULL, ev->ret, id)))
				return p;
		}
	}
	if (op == ARR_OP_REALLOCARRAY) /* its nmemb */
		p = wl_put(p, ev->nmemb);
	p = wl_put(p, ev->size);
	return p;
}

/* The other allocating calls: a new object, its arguments as the table says. */
static ARR_ALWAYS_INLINE uint8_t *emit_alloc(struct prep *pp, struct pthr *t, uint32_t ti, const struct arr_event *ev,
					     struct am_entry *e, uint8_t *p, int *rcp)
{
	unsigned f = arr_op_facts(ev->op);
	uint64_t id;
	*p++ = (uint8_t)(ev->op | (ev->failed ? WL_F_FAILED : 0));
	if (!ev->failed) {
		if ((*rcp = new_id(pp, t, ti, arr_event_bytes(ev, pp->page_size), &id)))
			return p;
		p = wl_put(p, id);
		pp->slots[id].ver++;
		if ((*rcp = bind_at(pp, e, ev->ret, id)))
			return p;
	}
	if (f & ARR_OPF_NMEMB)
		p = wl_put(p, ev->nmemb);
	else if (f & ARR_OPF_ALIGN)
		p = wl_put(p, ev->align);
	p = wl_put(p, ev->size);
	return p;
}

/*
 * Apply one call of thread ti: check it fits the live set, then write its
 * entry. Unless force, a call that does not fit the live set (free of an
 * address not live, an address returned while live) is left undone and
 * BLOCKED is returned, with what it waits for in *t.
 */
static ARR_ALWAYS_INLINE int try_call(struct prep *pp, uint32_t ti, const struct arr_event *ev, int force)
{
	struct pthr *t = &pp->thr[ti];
	unsigned op = ev->op, kind = call_kind[op];
	struct am_entry *e;
	int rc = check_order(pp, t, ev, kind, force, &e);
	if (rc || (rc = stream_room(pp, &t->s, ti)))
		return rc;
	uint8_t *p = t->s.buf + t->s.len;
	if (kind == K_FREE)
		p = emit_free(pp, t, ti, ev, e, p, &rc);
	else if (kind == K_RESIZE)
		p = emit_resize(pp, t, ti, ev, p, &rc);
	else
		p = emit_alloc(pp, t, ti, ev, e, p, &rc);
	if (rc)
		return rc == DROPPED ? 0 : rc;
	if (pp->err)
		return pp->err;
	t->s.len = (size_t)(p - t->s.buf);
	t->s.entries++;
	pp->h.ops[op]++; /* calls and entries are summed from these at the end */
	return sched_add(pp, ti);
}

static int queue_push(struct pthr *t, const struct arr_event *ev)
{
	if (t->qhead && t->qhead == t->qlen) /* drained: start over */
		t->qhead = t->qlen = 0;
	int rc = grow((void **)&t->q, &t->capq, t->qlen + 1, sizeof *t->q);
	if (rc)
		return rc;
	t->q[t->qlen] = *ev;
	t->q[t->qlen].str = NULL;
	t->qlen++;
	return 0;
}

/* Run thread ti's queued calls until one blocks or the queue is empty. */
static int drain(struct prep *pp, uint32_t ti, int force_first)
{
	struct pthr *t = &pp->thr[ti];
	while (t->qhead < t->qlen) {
		int rc = try_call(pp, ti, &t->q[t->qhead], force_first);
		force_first = 0;
		if (rc == BLOCKED) {
			if (t->wait_kind == WAIT_ALLOC || t->wait_kind == WAIT_FREE) {
				if (!t->blocked) {
					t->blocked = 1;
					pp->nblocked++;
				}
				t->blocked_t = t->q[t->qhead].t;
			}
			return 0;
		}
		if (rc)
			return rc;
		t = &pp->thr[ti];
		t->qhead++;
	}
	if (t->blocked) {
		t->blocked = 0;
		pp->nblocked--;
	}
	t->qhead = t->qlen = 0;
	return 0;
}

/* Wake blocked threads whose wait is over; force those waiting too long. */
static int resolve(struct prep *pp, uint64_t now, int at_end)
{
	int progress = 1;
	while (pp->nblocked && progress) {
		progress = 0;
		for (uint32_t i = 0; i < pp->nthr; i++) {
			struct pthr *t = &pp->thr[i];
			if (!t->blocked)
				continue;
			int live = is_live(pp, t->wait_addr);
			int ready = t->wait_kind == WAIT_ALLOC ? live : !live;
			int force = !ready && (pp->nthr == 1 || (now > t->blocked_t && now - t->blocked_t > WAIT_NS) ||
					       t->qlen - t->qhead > WAIT_EVENTS);
			if (!ready && !force)
				continue;
			int rc = drain(pp, i, force);
			if (rc)
				return rc;
			progress = 1;
		}
		if (!progress && at_end) { /* nothing can come: force the oldest */
			uint32_t oldest = UINT32_MAX;
			for (uint32_t i = 0; i < pp->nthr; i++)
				if (pp->thr[i].blocked &&
				    (oldest == UINT32_MAX || pp->thr[i].blocked_t < pp->thr[oldest].blocked_t))
					oldest = i;
			int rc = drain(pp, oldest, 1);
			if (rc)
				return rc;
			progress = 1;
		}
	}
	return 0;
}

static int add_event(struct prep *pp, const struct arr_event *ev)
{
	pp->h.events++;
	if (!arr_op_is_call(ev->op)) {
		if (ev->op == ARR_OP_RSS && ev->size > pp->h.recorded_peak_rss)
			pp->h.recorded_peak_rss = ev->size;
		if (ev->op == ARR_OP_RSS_PEAK && ev->size > pp->h.recorded_true_peak_rss)
			pp->h.recorded_true_peak_rss = ev->size;
		if (!(arr_op_facts(ev->op) & ARR_OPF_THREAD)) /* fork, exec, rss, mark: nothing to replay */
			pp->h.repairs[ARR_REPAIR_ignored_event]++;
		return 0;
	}
	uint32_t ti;
	int rc;
	if (pp->last_ti && ev->tid == pp->last_tid) {
		ti = pp->last_ti - 1;
	} else {
		if ((rc = thread_of(pp, ev->tid, &ti)))
			return rc;
		pp->last_tid = ev->tid;
		pp->last_ti = ti + 1;
	}
	struct pthr *t = &pp->thr[ti];
	if (t->qlen > t->qhead) {
		rc = queue_push(t, ev);
	} else {
		rc = try_call(pp, ti, ev, 0);
		if (rc == BLOCKED) {
			if ((rc = queue_push(t, ev)))
				return rc;
			t->blocked = 1;
			t->blocked_t = ev->t;
			pp->nblocked++;
		}
	}
	if (rc)
		return rc;
	return pp->nblocked ? resolve(pp, ev->t, 0) : 0;
}

uint64_t arr__fnv1a(const void *buf, size_t len, uint64_t h);
uint64_t arr__fnv1a(const void *buf, size_t len, uint64_t h)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* XXH3-64 of fd's bytes from off to the end; *len gets how many. Mapped
 * (7 ms for 16 MB from the page cache, against 13 ms through pread). */
static int hash_fd(int fd, uint64_t off, uint64_t seed, uint64_t *hash, uint64_t *len)
{
	struct stat st;
	if (fstat(fd, &st))
		return -errno;
	uint64_t size = (uint64_t)st.st_size;
	*len = size > off ? size - off : 0;
	if (!*len) {
		*hash = XXH3_64bits_withSeed(NULL, 0, seed);
		return 0;
	}
	void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (p != MAP_FAILED) {
		*hash = XXH3_64bits_withSeed((const char *)p + off, (size_t)*len, seed);
		munmap(p, (size_t)size);
		return 0;
	}
	enum { BUF = 1 << 20 }; /* not mappable: read it */
	XXH3_state_t *xs = XXH3_createState();
	unsigned char *buf = malloc(BUF);
	int rc = xs && buf ? 0 : ARR_ENOMEM;
	if (!rc)
		XXH3_64bits_reset_withSeed(xs, seed);
	uint64_t done = 0;
	while (!rc && done < *len) {
		ssize_t n = pread(fd, buf, BUF, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : ARR_EIO;
		else
			XXH3_64bits_update(xs, buf, (size_t)n), done += (uint64_t)n;
	}
	if (!rc)
		*hash = XXH3_64bits_digest(xs);
	free(buf);
	XXH3_freeState(xs);
	return rc;
}

int arr__wl_trace_identity(const char *trace_path, uint64_t *size, uint64_t *mtime_ns, uint64_t *hash)
{
	int fd = open(trace_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	uint64_t len;
	int rc = fstat(fd, &st) ? -errno : hash_fd(fd, 0, 0, hash, &len);
	close(fd);
	if (rc)
		return rc;
	*size = (uint64_t)st.st_size;
	*mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	return 0;
}

static void prep_release(struct prep *pp)
{
	am_release(&pp->live);
	am_release(&pp->displaced);
	am_release(&pp->tids);
	free(pp->slots);
	for (size_t i = 0; i < pp->nthr; i++) {
		free(pp->thr[i].pool);
		free(pp->thr[i].q);
		free(pp->thr[i].s.buf);
	}
	free(pp->thr);
	free(pp->sched.buf);
	free(pp->blocks);
	free(pp->recent);
	XXH3_freeState(pp->sum);
}

static int finish(struct prep *pp)
{
	int rc = sched_flush_run(pp);
	if (!rc)
		rc = flush_stream(pp, &pp->sched, UINT32_MAX);
	for (size_t i = 0; !rc && i < pp->nthr; i++)
		rc = flush_stream(pp, &pp->thr[i].s, (uint32_t)i);
	if (rc)
		return rc;
	for (size_t i = 0; i < pp->nblocks; i++)
		if (pp->blocks[i].stream == UINT32_MAX)
			pp->blocks[i].stream = (uint32_t)pp->nthr;
	uint64_t *tids = calloc(pp->nthr + 1, sizeof *tids);
	if (!tids)
		return ARR_ENOMEM;
	for (size_t i = 0; i < pp->nthr; i++)
		tids[i] = pp->thr[i].tid;
	pp->h.footer_offset = pp->off;
	rc = emit(pp, tids, pp->nthr * sizeof *tids);
	free(tids);
	if (rc)
		return rc;
	if ((rc = emit(pp, pp->blocks, pp->nblocks * sizeof *pp->blocks)))
		return rc;
	for (unsigned op = 0; op < ARR_OP_MAX_; op++)
		pp->h.calls += pp->h.ops[op];
	pp->h.entries[0] = pp->h.calls + pp->h.syncs;
	pp->h.magic = WL_MAGIC;
	pp->h.version = ARR_WL_VERSION;
	pp->h.header_size = sizeof pp->h;
	pp->h.nthreads = pp->nthr;
	pp->h.nblocks = pp->nblocks;
	pp->h.nslots = pp->nslots;
	pp->h.checksum = 0;
	pp->h.checksum = XXH3_64bits_withSeed(&pp->h, sizeof pp->h, XXH3_64bits_digest(pp->sum));
	return write_all(pp->fd, &pp->h, sizeof pp->h, 0);
}

static void info_from_header(const struct wl_header *h, struct arr_workload_info *info, uint64_t file_size)
{
	memset(info, 0, sizeof *info);
	info->version = (uint32_t)h->version;
	info->nthreads = (uint32_t)h->nthreads;
	info->trace_size = h->trace_size;
	info->trace_mtime_ns = h->trace_mtime_ns;
	info->trace_hash = h->trace_hash;
	info->calls = h->calls;
	info->syncs = h->syncs;
	info->events = h->events;
	info->nslots = h->nslots;
	info->ideal_rss = h->ideal_rss;
	info->peak_live_blocks = h->peak_live_blocks;
	memcpy(info->ops, h->ops, sizeof info->ops);
	memcpy(info->repairs, h->repairs, sizeof info->repairs);
	info->file_size = file_size;
	info->truncated_at = h->truncated_at;
	info->recorded_peak_rss = h->recorded_peak_rss;
	info->recorded_true_peak_rss = h->recorded_true_peak_rss;
}

/* May a workload be written at path? 0 when nothing is there, or an empty
 * regular file, or one that opens as a workload does (any version, damaged
 * or not: the cache is ours to rebuild); -EEXIST for anything else, which is
 * the user's (a file that happens to be named TRACE.wl, a directory, a FIFO,
 * a symlink) and is never replaced. */
static int wl_replaceable(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(st.st_mode))
		return -EEXIST;
	if (st.st_size == 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	uint64_t magic = 0;
	ssize_t n = pread(fd, &magic, sizeof magic, 0);
	close(fd);
	return n == (ssize_t)sizeof magic && magic == WL_MAGIC ? 0 : -EEXIST;
}

int arr_workload_build(struct arr_trace *tr, const char *out_path, int allow_truncated, struct arr_workload_info *info)
{
	int rc = wl_replaceable(out_path);
	if (rc)
		return rc;
	struct prep pp;
	memset(&pp, 0, sizeof pp);
	pp.live = (struct addrmap)ADDRMAP_INIT;
	pp.displaced = (struct addrmap)ADDRMAP_INIT;
	pp.tids = (struct addrmap)ADDRMAP_INIT;
	pp.page_size = arr_trace_meta(tr)->page_size;
	rc = arr__wl_trace_identity(arr_trace_path(tr), &pp.h.trace_size, &pp.h.trace_mtime_ns, &pp.h.trace_hash);
	if (rc)
		return rc;
	/* A fresh name beside the target, created O_EXCL|O_NOFOLLOW: a file or
	 * symlink planted there is never opened, let alone truncated. */
	char tmp[PATH_MAX];
	pp.fd = -1;
	for (int i = 0; pp.fd < 0 && i < 100; i++) {
		uint64_t r = XXH3_64bits_withSeed(&i, sizeof i, (uint64_t)getpid() << 32 ^ (uint64_t)now_ns());
		if (snprintf(tmp, sizeof tmp, "%s.tmp.%012llx", out_path, (unsigned long long)(r >> 16)) >=
		    (int)sizeof tmp)
			return -ENAMETOOLONG;
		pp.fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (pp.fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (pp.fd < 0)
		return -EEXIST;
	pp.off = sizeof pp.h;
	pp.recent = calloc((size_t)1 << RECENT_BITS, sizeof *pp.recent);
	pp.sum = XXH3_createState();
	struct arr_merge *m = NULL;
	if (!pp.recent || !pp.sum || XXH3_64bits_reset(pp.sum) != XXH_OK)
		rc = ARR_ENOMEM;
	else
		rc = arr_merge_open(&m, tr);
	const struct arr_event *ev;
	size_t n;
	while (rc == 0 && (rc = arr__merge_next_run(m, &ev, &n)) == 1) {
		rc = 0;
		/* (prefetching the live set's entry a few events ahead was
		 * measured: slower) */
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = add_event(&pp, &ev[i]);
	}
	if (rc == ARR_ETRUNCATED && allow_truncated) {
		pp.h.truncated_at = arr_trace_error_offset(tr) ? arr_trace_error_offset(tr) : 1;
		rc = 0;
	}
	if (rc == 0)
		rc = resolve(&pp, UINT64_MAX, 1);
	if (rc == 0)
		rc = finish(&pp);
	if (rc == 0 && rename(tmp, out_path) != 0)
		rc = -errno;
	arr_merge_close(m);
	if (rc == 0 && info)
		info_from_header(&pp.h, info, pp.off + pp.nblocks * sizeof *pp.blocks);
	close(pp.fd);
	if (rc)
		unlink(tmp);
	prep_release(&pp);
	return rc;
}

int arr_workload_read_info(const char *wl_path, struct arr_workload_info *info)
{
	int fd = open(wl_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO there: no wait */
	if (fd < 0)
		return -errno;
	struct wl_header h;
	struct stat st;
	ssize_t n = pread(fd, &h, sizeof h, 0);
	int rc = fstat(fd, &st) ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	if (n < 16 || h.magic != WL_MAGIC)
		return ARR_EBADMAGIC;
	if (h.version != ARR_WL_VERSION || h.header_size != sizeof h)
		return ARR_EVERSION;
	if (n != sizeof h || h.footer_offset > (uint64_t)st.st_size ||
	    h.footer_offset + h.nthreads * 8 + h.nblocks * sizeof(struct wl_block) != (uint64_t)st.st_size)
		return ARR_ECORRUPT;
	info_from_header(&h, info, (uint64_t)st.st_size);
	return 0;
}

/* Does every byte of the workload match its checksum? 0 or ARR_ESTALE. */
static int verify_checksum(const char *wl_path)
{
	int fd = open(wl_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct wl_header h;
	uint64_t body, len;
	int rc = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h ? hash_fd(fd, sizeof h, 0, &body, &len) : ARR_ESTALE;
	close(fd);
	if (rc)
		return rc == ARR_ENOMEM ? rc : ARR_ESTALE;
	uint64_t want = h.checksum;
	h.checksum = 0;
	return XXH3_64bits_withSeed(&h, sizeof h, body) == want ? 0 : ARR_ESTALE;
}

int arr_workload_check(const char *wl_path, const char *trace_path, struct arr_workload_info *info)
{
	uint64_t size, mtime, hash;
	int rc = arr__wl_trace_identity(trace_path, &size, &mtime, &hash);
	if (rc)
		return rc;
	if ((rc = wl_replaceable(wl_path)))
		return rc;
	rc = arr_workload_read_info(wl_path, info);
	if (rc == -ENOENT)
		return rc;
	if (rc)
		return ARR_ESTALE; /* damaged or another version: rebuild */
	if (info->trace_size != size || info->trace_mtime_ns != mtime || info->trace_hash != hash)
		return ARR_ESTALE;
	return verify_checksum(wl_path);
}

int arr_workload_cache_path(char *buf, size_t cap, const char *trace_path, const char *cache_dir)
{
	int n;
	if (!cache_dir || !*cache_dir) {
		n = snprintf(buf, cap, "%s.wl", trace_path);
	} else {
		char abs[PATH_MAX];
		if (!realpath(trace_path, abs))
			return -errno;
		const char *base = strrchr(abs, '/');
		base = base ? base + 1 : abs;
		uint64_t h = arr__fnv1a(abs, strlen(abs), 0xcbf29ce484222325ull);
		n = snprintf(buf, cap, "%s/%s.%016llx.wl", cache_dir, base, (unsigned long long)h);
	}
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static const char *const repair_names[] = {
#define ARR_REPAIR_NAME(name, desc) #name,
	ARR_REPAIR_MAP(ARR_REPAIR_NAME)
#undef ARR_REPAIR_NAME
};
static const char *const repair_descs[] = {
#define ARR_REPAIR_DESC(name, desc) desc,
	ARR_REPAIR_MAP(ARR_REPAIR_DESC)
#undef ARR_REPAIR_DESC
};

const char *arr_repair_name(unsigned r) { return r < ARR_REPAIR_COUNT_ ? repair_names[r] : NULL; }

const char *arr_repair_desc(unsigned r) { return r < ARR_REPAIR_COUNT_ ? repair_descs[r] : NULL; }

/*
 * trace_read.c - the streaming trace reader (see allocrr/trace.h).
 *
 * Memory is bounded by the largest chunk: one compressed body, its
 * decompressed columns and its decoded events. Every length read from the
 * file is checked against the format's limits and the bytes that remain
 * before it is used, so hostile input yields an error, never a crash.
 */
#include <zstd.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocrr/stacks.h"
#include "allocrr/trace.h"
#include "format.h"
#include "allocrr/compiler.h"
#include "varint.h"

struct arr_trace {
	int fd;
	char *path;
	uint64_t file_size;
	uint64_t pos; /* offset of the next chunk */
	uint64_t err_off;
	char err_detail[160];
	uint64_t skipped;
	struct arr_trace_meta meta;
	char *meta_strings[5];
	struct arr_trace_end end;

	struct arr_chunk_info cur;
	int have_cur;
	uint32_t cur_raw_size;

	ZSTD_DCtx *dctx;
	uint8_t *zbuf;
	size_t zcap;
	uint8_t *raw;
	size_t rawcap;
	struct arr_event *ev;
	size_t evcap;
	uint64_t *allocs, *frees;
	size_t alloccap, freecap;
	char *strs;
	size_t strcap;
	uint16_t cur_flags;

	/* Stack nodes by id (id 0 is the root) and modules: collected from
	 * their chunks as the reader passes them, kept until close. */
	struct arr__stack_node {
		uint64_t addr;
		uint32_t parent;
		uint32_t depth; /* 0: no such node */
	} * nodes;
	size_t nodecap;
	uint64_t nnodes;
	struct arr_module *mods;
	size_t nmods, modcap;
	uint64_t mods_next_off;
	uint64_t stack_sample; /* ARR_META_STACK_SAMPLE; 0: every allocation has its stack */
	uint32_t *epoch_first; /* per module epoch from 1: its first stack id (unloads, stacks.h) */
	unsigned nepochs, epochcap;
	uint32_t max_id;
};

static int fail(struct arr_trace *tr, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	tr->err_off = off;
	va_start(ap, fmt);
	vsnprintf(tr->err_detail, sizeof tr->err_detail, fmt, ap);
	va_end(ap);
	return code;
}

int arr__trace_fail(struct arr_trace *tr, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	tr->err_off = off;
	va_start(ap, fmt);
	vsnprintf(tr->err_detail, sizeof tr->err_detail, fmt, ap);
	va_end(ap);
	return code;
}

static int read_at(struct arr_trace *tr, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(tr->fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(tr, -errno, off, "read failed");
		}
		if (n == 0)
			return fail(tr, ARR_ETRUNCATED, off, "unexpected end of file");
		p += n, len -= (size_t)n, off += (uint64_t)n;
	}
	return 0;
}

/* Grow *buf to at least need bytes; contents are not kept. */
static int reserve(void **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	size_t n = *cap ? *cap : 4096;
	while (n < need)
		n *= 2;
	void *p = malloc(n);
	if (!p)
		return ARR_ENOMEM;
	free(*buf);
	*buf = p;
	*cap = n;
	return 0;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

int arr_trace_has_magic(const void *head, size_t len)
{
	return len >= ARR_MAGIC_LEN && !memcmp(head, ARR_MAGIC, ARR_MAGIC_LEN);
}

/* Say what the file starts with instead, printable bytes as themselves. */
static int bad_magic(struct arr_trace *tr, const uint8_t *p)
{
	char shown[ARR_MAGIC_LEN * 4 + 1], *o = shown;
	for (int i = 0; i < ARR_MAGIC_LEN; i++)
		o += p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' ? snprintf(o, 5, "%c", p[i])
								 : snprintf(o, 5, "\\x%02x", p[i]);
	return fail(tr, ARR_EBADMAGIC, 0, "it starts with \"%s\"", shown);
}

static int parse_header(struct arr_trace *tr)
{
	uint8_t fixed[ARR_FILE_HDR_FIXED];
	if (tr->file_size < ARR_MAGIC_LEN)
		return fail(tr, tr->file_size ? ARR_EBADMAGIC : ARR_ETRUNCATED, 0,
			    tr->file_size ? "file too short for a trace" : "empty file");
	if (tr->file_size < ARR_FILE_HDR_FIXED) {
		int rc = read_at(tr, fixed, ARR_MAGIC_LEN, 0);
		if (rc)
			return rc;
		if (memcmp(fixed, ARR_MAGIC, ARR_MAGIC_LEN))
			return bad_magic(tr, fixed);
		return fail(tr, ARR_ETRUNCATED, tr->file_size, "header cut short");
	}
	int rc = read_at(tr, fixed, sizeof fixed, 0);
	if (rc)
		return rc;
	if (memcmp(fixed, ARR_MAGIC, ARR_MAGIC_LEN))
		return bad_magic(tr, fixed);
	struct arr_trace_meta *m = &tr->meta;
	struct arr__file_hdr fh;
	arr__file_hdr_read(fixed, &fh);
	m->major = fh.major;
	m->minor = fh.minor;
	m->features = fh.features;
	uint32_t hdr_size = fh.hdr_size;
	if (m->major != ARR_TRACE_MAJOR)
		return fail(tr, ARR_EVERSION, ARR_FH_MAJOR, "format version %u.%u, this reader reads %u.x", m->major,
			    m->minor, ARR_TRACE_MAJOR);
	if (hdr_size < ARR_FILE_HDR_FIXED || hdr_size > ARR_HDR_MAX)
		return fail(tr, ARR_ECORRUPT, ARR_FH_SIZE, "bad header size %u", hdr_size);
	if (hdr_size > tr->file_size)
		return fail(tr, ARR_ETRUNCATED, tr->file_size, "header cut short");
	uint8_t *h = malloc(hdr_size);
	if (!h)
		return ARR_ENOMEM;
	rc = read_at(tr, h, hdr_size, 0);
	if (rc) {
		free(h);
		return rc;
	}
	m->time_unit_ns = 1;
	m->page_size = 4096;
	uint32_t off = ARR_FILE_HDR_FIXED;
	while (off < hdr_size) {
		if (hdr_size - off < ARR_TLV_HDR) {
			rc = fail(tr, ARR_ECORRUPT, off, "metadata entry cut short");
			break;
		}
		uint16_t key = arr_le16_read(h + off + ARR_TLV_KEY);
		uint32_t len = arr_le32_read(h + off + ARR_TLV_LEN);
		const uint8_t *v = h + off + ARR_TLV_HDR;
		if (len > hdr_size - off - ARR_TLV_HDR) {
			rc = fail(tr, ARR_ECORRUPT, off, "metadata entry %u overruns the header", key);
			break;
		}
		uint64_t u = len == 8 ? arr_le64_read(v) : 0;
		char **slot = NULL;
		switch (key) {
		case ARR_META_PID:
			m->pid = (int64_t)u;
			break;
		case ARR_META_PPID:
			m->ppid = (int64_t)u;
			break;
		case ARR_META_REALTIME_NS:
			m->start_realtime_ns = u;
			break;
		case ARR_META_MONOTONIC_NS:
			m->start_monotonic_ns = u;
			break;
		case ARR_META_PAGE_SIZE:
			m->page_size = u;
			break;
		case ARR_META_TIME_UNIT_NS:
			if (u == 0 || u > (1u << 20)) {
				rc = fail(tr, ARR_ECORRUPT, off, "bad time unit %llu", (unsigned long long)u);
				goto out;
			}
			m->time_unit_ns = (uint32_t)u;
			break;
		case ARR_META_EXE:
			slot = &tr->meta_strings[0];
			break;
		case ARR_META_ARGV:
			slot = &tr->meta_strings[1];
			break;
		case ARR_META_LIBC:
			slot = &tr->meta_strings[2];
			break;
		case ARR_META_RECORDER:
			slot = &tr->meta_strings[3];
			break;
		case ARR_META_PARENT_TRACE:
			slot = &tr->meta_strings[4];
			break;
		case ARR_META_STACK_SAMPLE:
			tr->stack_sample = u;
			break;
		default:
			break; /* unknown keys are for newer readers */
		}
		if (slot) {
			free(*slot);
			*slot = dup_bytes(v, len);
			if (!*slot) {
				rc = ARR_ENOMEM;
				goto out;
			}
			if (key == ARR_META_ARGV) { /* NUL-separated -> spaces */
				m->argc = 0;
				for (uint32_t i = 0; i < len; i++)
					if ((*slot)[i] == 0) {
						(*slot)[i] = ' ';
						m->argc++;
					}
				if (len && (*slot)[len - 1] == ' ')
					(*slot)[len - 1] = 0;
				else if (len)
					m->argc++;
			}
		}
		off += ARR_TLV_HDR + len;
	}
out:
	free(h);
	m->exe = tr->meta_strings[0] ? tr->meta_strings[0] : "";
	m->argv = tr->meta_strings[1] ? tr->meta_strings[1] : "";
	m->libc = tr->meta_strings[2] ? tr->meta_strings[2] : "";
	m->recorder = tr->meta_strings[3] ? tr->meta_strings[3] : "";
	m->parent_trace = tr->meta_strings[4];
	tr->pos = hdr_size;
	return rc;
}

int arr_trace_open(struct arr_trace **out, const char *path)
{
	*out = NULL;
	struct arr_trace *tr = calloc(1, sizeof *tr);
	if (!tr)
		return ARR_ENOMEM;
	tr->fd = -1;
	tr->path = strdup(path);
	if (!tr->path) {
		arr_trace_close(tr);
		return ARR_ENOMEM;
	}
	tr->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (tr->fd < 0) {
		int rc = -errno;
		arr_trace_close(tr);
		return rc;
	}
	struct stat st;
	int rc = 0;
	if (fstat(tr->fd, &st) < 0)
		rc = -errno; /* st is undefined: look at nothing in it */
	else if (!S_ISREG(st.st_mode))
		rc = S_ISDIR(st.st_mode) ? -EISDIR : ARR_EINVAL;
	if (rc) {
		arr_trace_close(tr);
		return rc;
	}
	tr->file_size = (uint64_t)st.st_size;
	tr->dctx = ZSTD_createDCtx();
	if (!tr->dctx) {
		arr_trace_close(tr);
		return ARR_ENOMEM;
	}
	rc = parse_header(tr);
	*out = tr; /* even on error, so the caller can ask where */
	return rc;
}

void arr_trace_close(struct arr_trace *tr)
{
	if (!tr)
		return;
	if (tr->fd >= 0)
		close(tr->fd);
	ZSTD_freeDCtx(tr->dctx);
	for (size_t i = 0; i < sizeof tr->meta_strings / sizeof *tr->meta_strings; i++)
		free(tr->meta_strings[i]);
	free(tr->path);
	free(tr->zbuf);
	free(tr->raw);
	free(tr->ev);
	free(tr->allocs);
	free(tr->frees);
	free(tr->strs);
	free(tr->nodes);
	for (size_t i = 0; i < tr->nmods; i++)
		free((char *)tr->mods[i].path);
	free(tr->mods);
	free(tr->epoch_first);
	free(tr);
}

int arr_trace_stack_node(const struct arr_trace *tr, uint32_t id, uint32_t *parent, uint64_t *addr)
{
	if (!id || id >= tr->nodecap || !tr->nodes[id].depth)
		return ARR_EINVAL;
	*parent = tr->nodes[id].parent;
	*addr = tr->nodes[id].addr;
	return 0;
}

int arr_trace_stack(const struct arr_trace *tr, uint32_t id, uint64_t *frames, size_t max, int *truncated)
{
	if (truncated)
		*truncated = 0;
	if (!id)
		return 0;
	if (id >= tr->nodecap || !tr->nodes[id].depth)
		return ARR_EINVAL;
	int n = 0;
	while (id) { /* parents are defined before children: depth bounds the walk */
		const struct arr__stack_node *nd = &tr->nodes[id];
		if (nd->parent == 0 && nd->addr == ARR_STACK_TRUNCATED) {
			if (truncated)
				*truncated = 1;
			break;
		}
		if ((size_t)n < max)
			frames[n] = nd->addr;
		n++;
		id = nd->parent;
	}
	return n;
}

uint64_t arr_trace_stack_nodes(const struct arr_trace *tr) { return tr->nnodes; }
uint64_t arr_trace_stack_sample_bytes(const struct arr_trace *tr) { return tr->stack_sample; }

size_t arr_trace_modules(const struct arr_trace *tr, const struct arr_module **mods)
{
	*mods = tr->mods;
	return tr->nmods;
}

const struct arr_trace_meta *arr_trace_meta(const struct arr_trace *tr) { return &tr->meta; }
const char *arr_trace_path(const struct arr_trace *tr) { return tr->path; }
uint64_t arr_trace_error_offset(const struct arr_trace *tr) { return tr->err_off; }
const char *arr_trace_error_detail(const struct arr_trace *tr) { return tr->err_detail; }
const struct arr_trace_end *arr_trace_end(const struct arr_trace *tr) { return &tr->end; }
uint64_t arr_trace_skipped_chunks(const struct arr_trace *tr) { return tr->skipped; }
uint64_t arr_trace_file_size(const struct arr_trace *tr) { return tr->file_size; }

static int grow_nodes(struct arr_trace *tr, uint64_t id)
{
	if (id < tr->nodecap)
		return 0;
	size_t cap = tr->nodecap ? tr->nodecap : 1024;
	while (cap <= id)
		cap *= 2;
	struct arr__stack_node *n = realloc(tr->nodes, cap * sizeof *n);
	if (!n)
		return ARR_ENOMEM;
	memset(n + tr->nodecap, 0, (cap - tr->nodecap) * sizeof *n);
	tr->nodes = n;
	tr->nodecap = cap;
	return 0;
}

/* A stacks or modules chunk: remembered, not delivered. A node must name a
 * parent defined before it (so every stack is finite); defining an id again
 * with the same content is allowed (a rewound reader passes it twice). */
/* The module epoch of entry m: an unloaded entry starts a new one at the
 * stack id it names (or after every id defined so far). */
static int module_epoch(struct arr_trace *tr, struct arr_module *m)
{
	if (m->kind == ARR_MODULE_UNLOADED) {
		uint32_t first = m->build_id_len == 4 ? arr_le32_read(m->build_id) : tr->max_id + 1;
		if (!tr->nepochs || tr->epoch_first[tr->nepochs - 1] != first) {
			if (tr->nepochs == tr->epochcap) {
				unsigned cap = tr->epochcap ? tr->epochcap * 2 : 4;
				uint32_t *e = realloc(tr->epoch_first, cap * sizeof *e);
				if (!e)
					return ARR_ENOMEM;
				tr->epoch_first = e, tr->epochcap = cap;
			}
			tr->epoch_first[tr->nepochs++] = first;
		}
	}
	m->epoch = tr->nepochs;
	return 0;
}

unsigned arr_trace_stack_epoch(const struct arr_trace *tr, uint32_t id)
{
	unsigned e = 0;
	while (e < tr->nepochs && tr->epoch_first[e] <= id)
		e++;
	return e;
}

static int parse_stack_chunk(struct arr_trace *tr, unsigned type, uint64_t off, uint32_t body)
{
	uint8_t *b = malloc(body ? body : 1);
	if (!b)
		return ARR_ENOMEM;
	int rc = read_at(tr, b, body, off + ARR_CHUNK_PREFIX);
	if (rc)
		goto out;
	const uint8_t *p = b, *end = b + body;
	if (type == ARR_CHUNK_STACKS) {
		rc = fail(tr, ARR_ECORRUPT, off, "bad stacks chunk");
		if (body < ARR_STACKS_HDR)
			goto out;
		uint32_t n = arr_le32_read(b + ARR_SH_COUNT);
		uint64_t addr = 0;
		p += ARR_STACKS_HDR;
		for (uint32_t k = 0; k < n; k++) {
			uint64_t id, parent, zz;
			if (!(p = arr__get_uvarint(p, end, &id)) || !(p = arr__get_uvarint(p, end, &parent)) ||
			    !(p = arr__get_uvarint(p, end, &zz)))
				goto out;
			addr += (uint64_t)arr__unzigzag(zz);
			if (id == 0 || id > UINT32_MAX || parent == id)
				goto out;
			if (grow_nodes(tr, id) < 0) {
				rc = ARR_ENOMEM;
				goto out;
			}
			uint32_t pd = parent ? (parent < tr->nodecap ? tr->nodes[parent].depth : 0) : 0;
			if (parent && !pd)
				goto out; /* parent not defined before */
			struct arr__stack_node *nd = &tr->nodes[id];
			if (nd->depth && (nd->addr != addr || nd->parent != parent))
				goto out;
			if (!nd->depth)
				tr->nnodes++;
			if (id > tr->max_id)
				tr->max_id = (uint32_t)id;
			*nd = (struct arr__stack_node){addr, (uint32_t)parent, pd + 1};
		}
		rc = p == end ? 2 : fail(tr, ARR_ECORRUPT, off, "bad stacks chunk");
	} else {
		rc = 2;
		if (off < tr->mods_next_off) /* seen before the reader was rewound */
			goto out;
		tr->mods_next_off = off + 1;
		rc = fail(tr, ARR_ECORRUPT, off, "bad modules chunk");
		if (body < ARR_MODULES_HDR)
			goto out;
		uint32_t n = arr_le32_read(b + ARR_MH_COUNT);
		p += ARR_MODULES_HDR;
		for (uint32_t k = 0; k < n; k++) {
			if (end - p < ARR_ME_FIXED ||
			    (size_t)(end - p) < (size_t)ARR_ME_FIXED + p[ARR_ME_BUILD_ID_LEN] + ARR_ME_PATH_LEN ||
			    p[ARR_ME_BUILD_ID_LEN] > ARR_MODULE_BUILD_ID_MAX)
				goto out;
			struct arr_module m = {.kind = p[ARR_ME_KIND],
					       .t = arr_le64_read(p + ARR_ME_T),
					       .base = arr_le64_read(p + ARR_ME_BASE),
					       .size = arr_le64_read(p + ARR_ME_SIZE),
					       .build_id_len = p[ARR_ME_BUILD_ID_LEN]};
			memcpy(m.build_id, p + ARR_ME_FIXED, m.build_id_len);
			p += ARR_ME_FIXED + m.build_id_len;
			size_t pl = arr_le16_read(p);
			if ((size_t)(end - p) < ARR_ME_PATH_LEN + pl)
				goto out;
			char *path = dup_bytes(p + ARR_ME_PATH_LEN, pl);
			p += ARR_ME_PATH_LEN + pl;
			if (path && tr->nmods == tr->modcap) {
				size_t cap = tr->modcap ? tr->modcap * 2 : 16;
				struct arr_module *nm = realloc(tr->mods, cap * sizeof *nm);
				if (nm)
					tr->mods = nm, tr->modcap = cap;
			}
			if (!path || tr->nmods == tr->modcap) {
				free(path);
				rc = ARR_ENOMEM;
				goto out;
			}
			m.path = path;
			if (module_epoch(tr, &m) < 0) {
				free(path);
				rc = ARR_ENOMEM;
				goto out;
			}
			tr->mods[tr->nmods++] = m;
		}
		rc = p == end ? 2 : fail(tr, ARR_ECORRUPT, off, "bad modules chunk");
	}
out:
	free(b);
	return rc;
}

/* Parse the chunk at tr->pos. Returns 1 for an events chunk (made current),
 * 2 for a chunk consumed here, 0 at EOF, or a negative code. */
static int parse_chunk(struct arr_trace *tr)
{
	uint64_t off = tr->pos;
	if (off == tr->file_size)
		return 0;
	if (tr->file_size - off < ARR_CHUNK_PREFIX)
		return fail(tr, ARR_ETRUNCATED, off, "chunk prefix cut short");
	uint8_t pre[ARR_CHUNK_PREFIX + ARR_EVENTS_HDR];
	int rc = read_at(tr, pre, ARR_CHUNK_PREFIX, off);
	if (rc)
		return rc;
	struct arr__chunk_prefix cp;
	arr__chunk_prefix_read(pre, &cp);
	if (cp.sync != ARR_CHUNK_SYNC)
		return fail(tr, ARR_ECORRUPT, off, "bad chunk sync word");
	uint16_t type = cp.type;
	uint32_t body = cp.body_size;
	if (body > ARR_CHUNK_BODY_MAX)
		return fail(tr, ARR_ECORRUPT, off, "chunk size %u over the limit", body);
	if (tr->file_size - off - ARR_CHUNK_PREFIX < body)
		return fail(tr, ARR_ETRUNCATED, off, "chunk cut short");
	tr->pos = off + ARR_CHUNK_PREFIX + body;
	switch (type) {
	case ARR_CHUNK_EVENTS: {
		if (body < ARR_EVENTS_HDR)
			return fail(tr, ARR_ECORRUPT, off, "events chunk too small");
		rc = read_at(tr, pre + ARR_CHUNK_PREFIX, ARR_EVENTS_HDR, off + ARR_CHUNK_PREFIX);
		if (rc)
			return rc;
		struct arr__events_hdr eh;
		arr__events_hdr_read(pre + ARR_CHUNK_PREFIX, &eh);
		struct arr_chunk_info *ci = &tr->cur;
		ci->offset = off;
		ci->type = type;
		ci->tid = eh.tid;
		ci->nevents = eh.nevents;
		ci->first_t = eh.first_t;
		ci->last_t = eh.last_t;
		ci->body_size = body;
		tr->cur_flags = cp.flags;
		tr->cur_raw_size = eh.raw_size;
		if (ci->nevents == 0 || ci->nevents > ARR_CHUNK_EVENTS_MAX || tr->cur_raw_size > ARR_CHUNK_RAW_MAX ||
		    ci->first_t > ci->last_t)
			return fail(tr, ARR_ECORRUPT, off, "bad events chunk header");
		tr->have_cur = 1;
		return 1;
	}
	case ARR_CHUNK_END: {
		if (body < ARR_END_BODY)
			return fail(tr, ARR_ECORRUPT, off, "end chunk too small");
		uint8_t b[ARR_END_BODY];
		rc = read_at(tr, b, ARR_END_BODY, off + ARR_CHUNK_PREFIX);
		if (rc)
			return rc;
		struct arr__end_body e;
		arr__end_body_read(b, &e);
		tr->end.present = 1;
		tr->end.reason = e.reason;
		tr->end.status = e.status;
		tr->end.t = e.t;
		tr->end.events = e.events;
		return 2;
	}
	case ARR_CHUNK_STACKS:
	case ARR_CHUNK_MODULES:
		return parse_stack_chunk(tr, type, off, body);
	default:
		tr->skipped++;
		return 2;
	}
}

int arr_trace_next_chunk(struct arr_trace *tr, struct arr_chunk_info *info)
{
	tr->have_cur = 0;
	for (;;) {
		int rc = parse_chunk(tr);
		if (rc == 2)
			continue;
		if (rc == 1) /* events after an END: that END was not the end */
			tr->end.present = 0;
		if (rc == 1 && info)
			*info = tr->cur;
		if (rc == 0 && !tr->end.present) /* killed, or still being written */
			return fail(tr, ARR_ETRUNCATED, tr->pos,
				    "no end record (the program was killed, "
				    "or is still running)");
		if (rc == 0)
			tr->err_off = tr->pos;
		return rc;
	}
}

int arr_trace_seek_chunk(struct arr_trace *tr, uint64_t offset, struct arr_chunk_info *info)
{
	tr->have_cur = 0;
	if (offset > tr->file_size)
		return fail(tr, ARR_EINVAL, offset, "seek past the end");
	tr->pos = offset;
	int rc = parse_chunk(tr);
	if (rc == 1) {
		if (info)
			*info = tr->cur;
		return 0;
	}
	return rc < 0 ? rc : fail(tr, ARR_EINVAL, offset, "no events chunk at this offset");
}

int arr_trace_rewind(struct arr_trace *tr)
{
	uint8_t fixed[ARR_FILE_HDR_FIXED];
	int rc = read_at(tr, fixed, sizeof fixed, 0);
	if (rc)
		return rc;
	tr->pos = arr_le32_read(fixed + ARR_FH_SIZE);
	tr->have_cur = 0;
	tr->skipped = 0;
	memset(&tr->end, 0, sizeof tr->end);
	return 0;
}

/* Which columns each operation reads, from its facts in ARR_OP_MAP; 0 marks
 * an unknown operation. The order of reads below matches the writer
 * (formats/encode.c). */
enum { C_OK = 1, C_SIZE = 2, C_NMEMB = 4, C_ALIGN = 8, C_PID = 16, C_PTR = 32, C_RET = 64, C_BLOB = 128 };
#define OP_COLS(f)                                                                                           \
	(C_OK | ((f) & (ARR_OPF_SIZE | ARR_OPF_AMOUNT) ? C_SIZE : 0) | ((f)&ARR_OPF_NMEMB ? C_NMEMB : 0) |   \
	 ((f)&ARR_OPF_ALIGN ? C_ALIGN : 0) | ((f)&ARR_OPF_PID ? C_PID : 0) | ((f)&ARR_OPF_PTR ? C_PTR : 0) | \
	 ((f)&ARR_OPF_RET ? C_RET : 0) | ((f)&ARR_OPF_STR ? C_BLOB : 0))
static const uint8_t op_cols[ARR_OP_MAX_] = {
#define OP_COLS_ENTRY(name, val, str, args, facts) [val] = OP_COLS(facts),
	ARR_OP_MAP(OP_COLS_ENTRY)
#undef OP_COLS_ENTRY
};

/*
 * Decoding one events chunk, in the mirror image of encode.c: one helper
 * per column family, each reading exactly what its encode_* twin wrote.
 * The helpers are always inlined into the loop of decode_events: it is the
 * analysis hot path, and the state below then lives in registers.
 */
#define HOT static ARR_ALWAYS_INLINE

struct dec {
	const uint8_t *cp[ARR_NCOLS_MAX], *ce[ARR_NCOLS_MAX]; /* each column's cursor and end */
	uint64_t *allocs, *frees;                             /* pointers returned and passed so far in the chunk */
	uint64_t nallocs, nfrees;
	uint64_t q;         /* time / unit of the previous event */
	uint64_t prev_ret;  /* the previous returned pointer */
	uint64_t prev_miss; /* the previous pointer argument coded as a delta */
	uint64_t sid;       /* the previous stack id */
	char *sp;           /* where the next string goes */
	const char *why;    /* what was wrong, when a helper returns -1 */
};

HOT int dec_bad(struct dec *d, const char *why)
{
	d->why = why;
	return -1;
}

/* arr__get_uvarint, with the end tested once when a whole varint's worth
 * of bytes is left: pointers and times are several bytes long, and the
 * per-byte test was a fifth of the loop over them */
HOT const uint8_t *dec_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	if (p < end && *p < 0x80) { /* the common one-byte case */
		*out = *p;
		return p + 1;
	}
	if (end - p < ARR_VARINT_MAX)
		return arr__get_uvarint(p, end, out);
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return p;
		}
	}
	return 0;
}

/* Read one uvarint of column col into out, or return -1 from the caller. */
#define GET_OR_RETURN(d, col, out)                                                     \
	do {                                                                           \
		if (!((d)->cp[col] = dec_uvarint((d)->cp[col], (d)->ce[col], &(out)))) \
			return dec_bad(d, "column cut short");                         \
	} while (0)

HOT int decode_time(struct dec *d, uint64_t *q)
{
	uint64_t dt;
	GET_OR_RETURN(d, ARR_COL_TIME, dt);
	*q = d->q += dt;
	return 0;
}

HOT int decode_err(struct dec *d, struct arr_event *ev)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_ERR, v);
	ev->err = (int32_t)arr__unzigzag(v);
	return 0;
}

HOT int decode_stack(struct dec *d, struct arr_event *ev)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_STACK, v);
	d->sid += (uint64_t)arr__unzigzag(v);
	if (d->sid > UINT32_MAX)
		return dec_bad(d, "stack id");
	ev->stack = (uint32_t)d->sid;
	return 0;
}

/* nmemb, alignment or a child's pid */
HOT int decode_aux(struct dec *d, struct arr_event *ev, unsigned f)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_AUX, v);
	if (f & C_NMEMB)
		ev->nmemb = v;
	else if (f & C_ALIGN)
		ev->align = v;
	else
		ev->ptr = (uint64_t)arr__unzigzag(v);
	return 0;
}

HOT int decode_size(struct dec *d, struct arr_event *ev)
{
	GET_OR_RETURN(d, ARR_COL_SIZE, ev->size);
	return 0;
}

HOT int decode_blob(struct dec *d, struct arr_event *ev)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_BLOB, v);
	if (v > (uint64_t)(d->ce[ARR_COL_BLOB] - d->cp[ARR_COL_BLOB]))
		return dec_bad(d, "string cut short");
	memcpy(d->sp, d->cp[ARR_COL_BLOB], v);
	d->cp[ARR_COL_BLOB] += v;
	ev->str = d->sp;
	d->sp += v;
	*d->sp++ = 0;
	return 0;
}

/* The pointer argument: NULL, the age of an allocation, or a delta. */
HOT int decode_ptr(struct dec *d, struct arr_event *ev)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_PTR, v);
	if (v == 0) {
		ev->ptr = 0;
	} else if (v & 1) {
		uint64_t age = v >> 1;
		if (age == 0 || age > d->nallocs)
			return dec_bad(d, "pointer age");
		ev->ptr = d->allocs[d->nallocs - age];
	} else {
		if (v == 2) /* escape: the delta follows whole */
			GET_OR_RETURN(d, ARR_COL_PTR, v);
		else
			v = (v - 4) >> 1;
		d->prev_miss += (uint64_t)arr__unzigzag(v);
		ev->ptr = d->prev_miss;
	}
	if (ev->ptr)
		d->frees[d->nfrees++] = ev->ptr;
	return 0;
}

/* The returned pointer: the age of a free, or a delta. */
HOT int decode_ret(struct dec *d, struct arr_event *ev)
{
	uint64_t v;
	GET_OR_RETURN(d, ARR_COL_RET, v);
	if (v & 1) { /* a block freed earlier in this chunk */
		uint64_t age = v >> 1;
		if (age == 0 || age > d->nfrees)
			return dec_bad(d, "free age");
		d->prev_ret = d->frees[d->nfrees - age];
	} else {
		if (v == 0) /* escape: the delta follows whole */
			GET_OR_RETURN(d, ARR_COL_RET, v);
		else
			v = (v - 2) >> 1;
		d->prev_ret += (uint64_t)arr__unzigzag(v);
	}
	ev->ret = d->prev_ret;
	d->allocs[d->nallocs++] = d->prev_ret;
	return 0;
}

/* Decode n events of thread tid into ev. Returns 0 or -1 with d->why. */
static int decode_events(struct dec *d, struct arr_event *ev, uint32_t n, uint32_t tid, uint64_t unit, int stacks)
{
	for (uint32_t i = 0; i < n; i++, ev++) {
		uint8_t opb = *d->cp[ARR_COL_OP]++;
		unsigned op = opb & ARR_OPF_MASK;
		unsigned f = op_cols[op];
		if ((opb & ~(ARR_OPF_MASK | ARR_OPF_FAILED)) || !f)
			return dec_bad(d, "unknown operation");
		uint64_t q;
		if (decode_time(d, &q))
			return -1;
		*ev = (struct arr_event){
			.t = q * unit, .tid = tid, .op = (uint8_t)op, .failed = (opb & ARR_OPF_FAILED) != 0};
		if ((ev->failed && decode_err(d, ev)) || (stacks && (f & C_RET) && decode_stack(d, ev)) ||
		    ((f & (C_NMEMB | C_ALIGN | C_PID)) && decode_aux(d, ev, f)) ||
		    ((f & C_SIZE) && decode_size(d, ev)) || ((f & C_BLOB) && decode_blob(d, ev)) ||
		    ((f & C_PTR) && decode_ptr(d, ev)) || ((f & C_RET) && !ev->failed && decode_ret(d, ev)))
			return -1;
	}
	return 0;
}

/* Read and decompress the current chunk's payload into tr->raw. */
static int read_payload(struct arr_trace *tr, size_t *got)
{
	const struct arr_chunk_info *ci = &tr->cur;
	size_t zsize = ci->body_size - ARR_EVENTS_HDR;
	int rc;
	if ((rc = reserve((void **)&tr->zbuf, &tr->zcap, zsize + 1)) ||
	    (rc = reserve((void **)&tr->raw, &tr->rawcap, tr->cur_raw_size + 1)) ||
	    (rc = reserve((void **)&tr->allocs, &tr->alloccap, ci->nevents * sizeof *tr->allocs)) ||
	    (rc = reserve((void **)&tr->frees, &tr->freecap, ci->nevents * sizeof *tr->frees)))
		return rc;
	rc = read_at(tr, tr->zbuf, zsize, ci->offset + ARR_CHUNK_PREFIX + ARR_EVENTS_HDR);
	if (rc)
		return rc;
	*got = ZSTD_decompressDCtx(tr->dctx, tr->raw, tr->cur_raw_size, tr->zbuf, zsize);
	if (ZSTD_isError(*got))
		return fail(tr, ARR_EDECOMPRESS, ci->offset, "%s", ZSTD_getErrorName(*got));
	if (*got != tr->cur_raw_size)
		return fail(tr, ARR_ECORRUPT, ci->offset, "payload size mismatch");
	return 0;
}

/* Find the columns in the payload: their lengths, then their bytes. */
static const char *split_columns(struct dec *d, const uint8_t *p, const uint8_t *end, int ncols)
{
	uint64_t lens[ARR_NCOLS_MAX], total = 0, got = (uint64_t)(end - p);
	for (int k = 0; k < ncols; k++) {
		if (!(p = arr__get_uvarint(p, end, &lens[k])) || lens[k] > got)
			return "column lengths";
		total += lens[k];
	}
	if (total != (uint64_t)(end - p))
		return "column lengths do not add up";
	for (int k = 0; k < ncols; k++) {
		d->cp[k] = p;
		d->ce[k] = p + lens[k];
		p += lens[k];
	}
	return NULL;
}

#define RETURN_CORRUPT(what)                                                         \
	do {                                                                         \
		rc = fail(tr, ARR_ECORRUPT, ci->offset, "bad event data: %s", what); \
		goto out;                                                            \
	} while (0)

/*
 * Decode the current chunk into ev (room for cur.nevents). Exec paths go to
 * the reader's string buffer, or, when own_strs is given, to a buffer
 * allocated here and handed over (NULL when the chunk has none, and on
 * error).
 */
static int decode_chunk(struct arr_trace *tr, struct arr_event *ev, char **own_strs)
{
	if (own_strs)
		*own_strs = NULL;
	if (!tr->have_cur)
		return fail(tr, ARR_EINVAL, tr->pos, "no current chunk");
	const struct arr_chunk_info *ci = &tr->cur;
	size_t got;
	int rc = read_payload(tr, &got);
	if (rc)
		return rc;

	struct dec d = {.allocs = tr->allocs, .frees = tr->frees, .q = ci->first_t / tr->meta.time_unit_ns};
	const int stacks = (tr->cur_flags & ARR_EVF_STACKS) != 0, ncols = stacks ? ARR_NCOLS_MAX : ARR_NCOLS;
	const char *why = split_columns(&d, tr->raw, tr->raw + got, ncols);
	if (why)
		RETURN_CORRUPT(why);
	if ((uint64_t)(d.ce[ARR_COL_OP] - d.cp[ARR_COL_OP]) != ci->nevents)
		RETURN_CORRUPT("event count");
	size_t blob = (size_t)(d.ce[ARR_COL_BLOB] - d.cp[ARR_COL_BLOB]);
	if (!own_strs) {
		if ((rc = reserve((void **)&tr->strs, &tr->strcap, blob + ci->nevents + 1)))
			goto out;
		d.sp = tr->strs;
	} else if (blob) {
		if (!(d.sp = *own_strs = malloc(blob + ci->nevents + 1))) {
			rc = ARR_ENOMEM;
			goto out;
		}
	} /* else no exec event: nothing is written through d.sp */

	if (decode_events(&d, ev, ci->nevents, ci->tid, tr->meta.time_unit_ns, stacks)) {
		/* a newer minor may add operations: say so, not merely "corrupt" */
		if (tr->meta.minor > ARR_TRACE_MINOR && strcmp(d.why, "unknown operation") == 0) {
			rc = fail(tr, ARR_EVERSION, ci->offset,
				  "bad event data: unknown operation (format %u.%u is newer than this reader's %u.%u)",
				  tr->meta.major, tr->meta.minor, ARR_TRACE_MAJOR, ARR_TRACE_MINOR);
			goto out;
		}
		RETURN_CORRUPT(d.why);
	}
	for (int k = 0; k < ncols; k++)
		if (d.cp[k] != d.ce[k])
			RETURN_CORRUPT("trailing column bytes");
	return (int)ci->nevents;
out:
	if (own_strs) {
		free(*own_strs);
		*own_strs = NULL;
	}
	return rc;
}

int arr_trace_read_chunk(struct arr_trace *tr, const struct arr_event **events)
{
	if (!tr->have_cur)
		return fail(tr, ARR_EINVAL, tr->pos, "no current chunk");
	int rc = reserve((void **)&tr->ev, &tr->evcap, tr->cur.nevents * sizeof *tr->ev);
	if (rc)
		return rc;
	rc = decode_chunk(tr, tr->ev, NULL);
	if (rc >= 0)
		*events = tr->ev;
	return rc;
}

int arr__trace_read_chunk_into(struct arr_trace *tr, struct arr_event *events, char **strs)
{
	return decode_chunk(tr, events, strs);
}

/*
 * phases.c - the "phases" section: the trace cut into phases, by the
 * marks the program recorded (op mark, allocrr_mark("name"): a phase runs
 * from its mark to the next one, or to the end; what came before the
 * first mark is the phase "start") and by the ranges the user gives
 * (arr_analysis_options.phases, ns or event numbers, which may overlap).
 *
 * Per phase: calls, failed calls, bytes requested, allocations and frees,
 * live bytes at its start and end, peak live bytes and when, temporary
 * allocations, RSS samples, RSS growth (least-squares slope) and the RSS
 * peak; the log2 histograms of requested sizes (the phase's allocations)
 * and of lifetimes in ns and in events (the blocks the phase freed), as in
 * the sizes and lifetimes sections.
 *
 * Counts and histograms are differences of the core's running counters
 * (and of the sizes and lifetimes analyzers' histograms, which the core
 * keeps whenever phases is selected) between a phase's ends; marked phases
 * take their peak from the core's window peak (reset at each mark), so
 * without user ranges this analyzer costs nothing per call. User ranges
 * may overlap, so they follow every call and allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "hot.h"

/* A phase's histograms: at its opening the running ones, once closed the
 * difference (what happened in the phase). ~3 KiB, allocated when it opens. */
struct ph_hist {
	uint64_t size_count[65], size_bytes[65];
	uint64_t time_count[65], time_bytes[65], ev_count[65], ev_bytes[65];
};

#define MAX_MARK_PHASES 4096 /* later marks extend the last phase */

struct phase {
	char name[64];
	int by_events, active, done, marked;
	uint64_t from, to;                       /* the spec (user phases) */
	uint64_t from_ns, to_ns, from_ev, to_ev; /* what was seen */
	struct snap {
		uint64_t calls, failed, bytes, allocs, frees, temporary;
	} at_open, n;
	uint64_t live_start, live_end, peak_live, peak_t;
	uint64_t rss_samples, rss_first, rss_last, rss_peak;
	struct an_slope rss;
	struct ph_hist *hist; /* NULL until opened */
};

struct phases {
	struct phase *p;
	size_t n, cap;
	size_t nuser;
	size_t cur_mark; /* index of the open mark phase, or SIZE_MAX */
	int marks_seen;
};

static struct phase *add(struct an_core *c, struct phases *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct phase *n = realloc(s->p, cap * sizeof *n);
		if (!n) {
			c->oom = ARR_ENOMEM;
			return NULL;
		}
		s->p = n;
		s->cap = cap;
	}
	struct phase *ph = &s->p[s->n++];
	memset(ph, 0, sizeof *ph);
	return ph;
}

/* The core's counters before the current event (in_call: it is a call the
 * core has counted already; its effects come after the callbacks). */
static struct snap snap(const struct an_core *c, const struct arr_event *ev, int in_call)
{
	return (struct snap){c->calls - (in_call ? 1 : 0),
			     c->failed - (in_call ? ev->failed : 0),
			     c->bytes_requested,
			     c->allocs,
			     c->frees,
			     c->temporaries};
}

/* the running histograms now (zero when the core keeps none) */
static void hist_now(const struct an_core *c, struct ph_hist *h)
{
	memset(h, 0, sizeof *h);
	if (c->sizes) {
		memcpy(h->size_count, c->sizes->count, sizeof h->size_count);
		memcpy(h->size_bytes, c->sizes->bytes, sizeof h->size_bytes);
	}
	if (c->lifetimes) {
		memcpy(h->time_count, c->lifetimes->t_count, sizeof h->time_count);
		memcpy(h->time_bytes, c->lifetimes->t_bytes, sizeof h->time_bytes);
		memcpy(h->ev_count, c->lifetimes->e_count, sizeof h->ev_count);
		memcpy(h->ev_bytes, c->lifetimes->e_bytes, sizeof h->ev_bytes);
	}
}

static void open_phase(struct an_core *c, struct phase *ph, struct snap now)
{
	if (!ph->hist && !(ph->hist = malloc(sizeof *ph->hist))) {
		c->oom = ARR_ENOMEM;
		return;
	}
	hist_now(c, ph->hist);
	ph->at_open = now;
	if (ph->marked) {
		c->win_peak = c->live_bytes;
		c->win_peak_t = c->t;
	}
	ph->active = 1;
	ph->from_ns = c->t;
	ph->from_ev = c->evno;
	ph->live_start = ph->peak_live = c->live_bytes;
	ph->peak_t = c->t;
}

static void close_phase(struct an_core *c, struct phase *ph, struct snap now)
{
	struct snap *o = &ph->at_open;
	ph->n = (struct snap){now.calls - o->calls,   now.failed - o->failed, now.bytes - o->bytes,
			      now.allocs - o->allocs, now.frees - o->frees,   now.temporary - o->temporary};
	if (ph->marked && c->win_peak > ph->peak_live) {
		ph->peak_live = c->win_peak;
		ph->peak_t = c->win_peak_t;
	}
	if (ph->hist) {
		struct ph_hist now_h;
		hist_now(c, &now_h);
		uint64_t *d = (uint64_t *)ph->hist;
		const uint64_t *n = (const uint64_t *)&now_h;
		for (size_t k = 0; k < sizeof now_h / sizeof *n; k++)
			d[k] = n[k] - d[k];
	}
	ph->active = 0;
	ph->done = 1;
	ph->to_ns = c->t;
	ph->to_ev = c->evno;
	ph->live_end = c->live_bytes;
}

static int ph_begin(struct an_core *c, void *st)
{
	struct phases *s = st;
	const struct arr_analysis_options *o = c->opt;
	for (size_t i = 0; i < o->nphases; i++) {
		struct phase *ph = add(c, s);
		if (!ph)
			return ARR_ENOMEM;
		memcpy(ph->name, o->phases[i].name, sizeof ph->name);
		ph->name[sizeof ph->name - 1] = 0;
		ph->by_events = o->phases[i].by_events;
		ph->from = o->phases[i].from;
		ph->to = o->phases[i].to;
	}
	s->nuser = s->n;
	/* the implicit "start" phase, kept only if the trace has marks */
	struct phase *st0 = add(c, s);
	if (!st0)
		return ARR_ENOMEM;
	strcpy(st0->name, "start");
	st0->marked = 1;
	open_phase(c, st0, (struct snap){0});
	s->cur_mark = s->n - 1;
	return 0;
}

/* open and close user phases at this event's position */
static void ph_step(struct an_core *c, struct phases *s, const struct arr_event *ev, int in_call)
{
	for (size_t i = 0; i < s->nuser; i++) {
		struct phase *ph = &s->p[i];
		if (ph->done)
			continue;
		uint64_t pos = ph->by_events ? c->evno : c->t;
		if (!ph->active && pos >= ph->from && pos < ph->to)
			open_phase(c, ph, snap(c, ev, in_call));
		else if (ph->active && pos >= ph->to)
			close_phase(c, ph, snap(c, ev, in_call));
	}
}

static unsigned ph_wants(struct an_core *c, void *st)
{
	struct phases *s = st;
	(void)c;
	return s->nuser ? ~0u : ARR__CB_OTHER;
}

/* user phases only (see ph_wants) */
static void ph_call(struct an_core *c, void *st, const struct arr_event *ev) { ph_step(c, st, ev, 1); }

static void ph_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	struct phases *s = st;
	(void)addr, (void)b, (void)ev;
	for (size_t i = 0; i < s->nuser; i++) {
		struct phase *ph = &s->p[i];
		if (ph->active && c->live_bytes > ph->peak_live) {
			ph->peak_live = c->live_bytes;
			ph->peak_t = c->t;
		}
	}
}

static void ph_other(struct an_core *c, void *st, const struct arr_event *ev)
{
	struct phases *s = st;
	ph_step(c, s, ev, 0);
	if (ev->op == ARR_OP_MARK) {
		if (s->n - s->nuser >= MAX_MARK_PHASES)
			return;
		if (s->cur_mark != SIZE_MAX)
			close_phase(c, &s->p[s->cur_mark], snap(c, ev, 0));
		struct phase *ph = add(c, s);
		if (!ph)
			return;
		const char *name = ev->str ? ev->str : "";
		size_t len = strlen(name);
		if (len >= sizeof ph->name)
			len = sizeof ph->name - 1;
		memcpy(ph->name, name, len);
		ph->marked = 1;
		open_phase(c, ph, snap(c, ev, 0));
		s->cur_mark = s->n - 1;
		s->marks_seen = 1;
		return;
	}
	if (ev->op != ARR_OP_RSS)
		return;
	for (struct phase *ph = s->p; ph < s->p + s->n; ph++) {
		if (!ph->active)
			continue;
		if (!ph->rss_samples)
			ph->rss_first = ev->size;
		ph->rss_samples++;
		ph->rss_last = ev->size;
		if (ev->size > ph->rss_peak)
			ph->rss_peak = ev->size;
		arr__slope_add(&ph->rss, ev->t, (double)ev->size);
	}
}

static int ph_end(struct an_core *c, void *st, struct arr_doc *arr)
{
	struct phases *s = st;
	c->t = arr__duration(c);
	for (size_t i = 0; i < s->n; i++) {
		struct phase *ph = &s->p[i];
		if (ph->marked && !s->marks_seen)
			continue;
		if (ph->active)
			close_phase(c, ph, snap(c, NULL, 0));
		if (ph->marked && i == s->nuser && !ph->n.calls && !ph->rss_samples)
			continue; /* nothing happened before the first mark */
		struct arr_doc *o = arr_doc_push_obj(arr);
		arr_doc_set_str(o, "name", ph->name);
		arr_doc_set_str(o, "by", ph->marked ? "mark" : ph->by_events ? "events" : "time");
		arr_doc_set_bool(o, "seen", ph->done);
		arr_doc_set_int(o, "from_ns", (int64_t)ph->from_ns);
		arr_doc_set_int(o, "to_ns", (int64_t)ph->to_ns);
		arr_doc_set_int(o, "from_event", (int64_t)ph->from_ev);
		arr_doc_set_int(o, "to_event", (int64_t)ph->to_ev);
		arr_doc_set_int(o, "calls", (int64_t)ph->n.calls);
		arr_doc_set_int(o, "failed", (int64_t)ph->n.failed);
		arr_doc_set_int(o, "allocs", (int64_t)ph->n.allocs);
		arr_doc_set_int(o, "frees", (int64_t)ph->n.frees);
		arr_doc_set_int(o, "bytes_requested", (int64_t)ph->n.bytes);
		arr_doc_set_int(o, "temporary", (int64_t)ph->n.temporary);
		arr_doc_set_int(o, "live_start", (int64_t)ph->live_start);
		arr_doc_set_int(o, "live_end", (int64_t)ph->live_end);
		arr_doc_set_int(o, "peak_live", (int64_t)ph->peak_live);
		arr_doc_set_int(o, "peak_live_t", (int64_t)ph->peak_t);
		arr_doc_set_int(o, "rss_samples", (int64_t)ph->rss_samples);
		arr_doc_set_int(o, "rss_peak", (int64_t)ph->rss_peak);
		arr_doc_set_num(o, "rss_growth_bytes_per_s", arr__slope_per_s(&ph->rss));
		/* a phase never reached has no histograms: empty ones */
		static const struct ph_hist none;
		const struct ph_hist *h = ph->done && ph->hist ? ph->hist : &none;
		arr__doc_log2(arr_doc_set_arr(arr_doc_set_obj(o, "sizes"), "log2"), h->size_count, h->size_bytes, 65);
		struct arr_doc *lt = arr_doc_set_obj(o, "lifetimes");
		arr__doc_log2(arr_doc_set_arr(lt, "time_log2"), h->time_count, h->time_bytes, 65);
		arr__doc_log2(arr_doc_set_arr(lt, "events_log2"), h->ev_count, h->ev_bytes, 65);
	}
	return 0;
}

static void ph_fini(void *st)
{
	struct phases *s = st;
	for (size_t i = 0; i < s->n; i++)
		free(s->p[i].hist);
	free(s->p);
}

const struct an_ops arr__an_phases = {
	.id = ARR_AN_PHASES,
	.state_size = sizeof(struct phases),
	.begin = ph_begin,
	.wants = ph_wants,
	.call = ph_call,
	.alloc = ph_alloc,
	.other = ph_other,
	.end = ph_end,
	.fini = ph_fini,
};

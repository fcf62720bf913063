/*
 * print.c - one event as a JSON object or a text line (allocrr dump).
 */
#include <inttypes.h>
#include <stdio.h>

#include "allocrr/trace.h"

/* Which argument fields an operation has. */
enum { F_SIZE = 1, F_NMEMB = 2, F_ALIGN = 4, F_PTR = 8, F_RET = 16, F_RC = 32 };

static unsigned fields(unsigned op)
{
	switch (op) {
	case ARR_OP_MALLOC:
	case ARR_OP_VALLOC:
	case ARR_OP_PVALLOC: return F_SIZE | F_RET;
	case ARR_OP_CALLOC: return F_NMEMB | F_SIZE | F_RET;
	case ARR_OP_REALLOC: return F_PTR | F_SIZE | F_RET;
	case ARR_OP_REALLOCARRAY: return F_PTR | F_NMEMB | F_SIZE | F_RET;
	case ARR_OP_FREE: return F_PTR;
	case ARR_OP_POSIX_MEMALIGN: return F_ALIGN | F_SIZE | F_RET | F_RC;
	case ARR_OP_ALIGNED_ALLOC:
	case ARR_OP_MEMALIGN: return F_ALIGN | F_SIZE | F_RET;
	default: return 0;
	}
}

void arr_json_fputs(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int arr_event_fprint_json(FILE *f, const struct arr_event *ev)
{
	const char *name = arr_op_name(ev->op);
	unsigned fl = fields(ev->op);
	int n = fprintf(f, "{\"t\":%" PRIu64 ",\"tid\":%" PRIu32 ",\"op\":\"%s\"", ev->t, ev->tid,
			name ? name : "?");
	if (fl & F_SIZE)
		fprintf(f, ",\"size\":%" PRIu64, ev->size);
	if (fl & F_NMEMB)
		fprintf(f, ",\"nmemb\":%" PRIu64, ev->nmemb);
	if (fl & F_ALIGN)
		fprintf(f, ",\"align\":%" PRIu64, ev->align);
	if (fl & F_PTR)
		fprintf(f, ",\"ptr\":\"0x%" PRIx64 "\"", ev->ptr);
	if (fl & F_RET)
		fprintf(f, ",\"ret\":\"0x%" PRIx64 "\"", ev->ret);
	if ((fl & F_RC) || (ev->failed && arr_op_is_call(ev->op)))
		fprintf(f, ",\"err\":%" PRId32, ev->err);
	switch (ev->op) {
	case ARR_OP_FORK:
		fprintf(f, ",\"pid\":%" PRId64, (int64_t)ev->ptr);
		if (ev->failed)
			fprintf(f, ",\"err\":%" PRId32, ev->err);
		break;
	case ARR_OP_EXEC:
		fputs(",\"path\":", f);
		arr_json_fputs(f, ev->str ? ev->str : "");
		if (ev->failed)
			fprintf(f, ",\"err\":%" PRId32, ev->err);
		break;
	case ARR_OP_RSS:
		fprintf(f, ",\"rss\":%" PRIu64, ev->size);
		break;
	}
	fputc('}', f);
	return n;
}

int arr_event_fprint_text(FILE *f, const struct arr_event *ev)
{
	const char *name = arr_op_name(ev->op);
	unsigned fl = fields(ev->op);
	int n = fprintf(f, "%12.6f %7" PRIu32 " %-14s", (double)ev->t / 1e9, ev->tid, name ? name : "?");
	switch (ev->op) {
	case ARR_OP_MALLOC:
	case ARR_OP_VALLOC:
	case ARR_OP_PVALLOC: fprintf(f, "(%" PRIu64 ")", ev->size); break;
	case ARR_OP_CALLOC: fprintf(f, "(%" PRIu64 ", %" PRIu64 ")", ev->nmemb, ev->size); break;
	case ARR_OP_REALLOC: fprintf(f, "(0x%" PRIx64 ", %" PRIu64 ")", ev->ptr, ev->size); break;
	case ARR_OP_REALLOCARRAY:
		fprintf(f, "(0x%" PRIx64 ", %" PRIu64 ", %" PRIu64 ")", ev->ptr, ev->nmemb, ev->size);
		break;
	case ARR_OP_FREE: fprintf(f, "(0x%" PRIx64 ")", ev->ptr); break;
	case ARR_OP_POSIX_MEMALIGN:
	case ARR_OP_ALIGNED_ALLOC:
	case ARR_OP_MEMALIGN: fprintf(f, "(%" PRIu64 ", %" PRIu64 ")", ev->align, ev->size); break;
	case ARR_OP_FORK: fprintf(f, "child %" PRId64, (int64_t)ev->ptr); break;
	case ARR_OP_EXEC: fprintf(f, "%s", ev->str ? ev->str : ""); break;
	case ARR_OP_RSS: fprintf(f, "%" PRIu64 " bytes", ev->size); break;
	}
	if (fl & F_RET)
		fprintf(f, " = 0x%" PRIx64, ev->ret);
	if ((fl & F_RC) || ev->failed)
		fprintf(f, " err %" PRId32, ev->err);
	return n;
}

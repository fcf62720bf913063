/*
 * print.c - one event as a JSON object or a text line (allocrr dump).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "allocrr/trace.h"

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs,
 * no surrogates, at most U+10FFFF), or 0. */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2 - (c < 0xc2);
	if (c >= 0xf5 || n < 2)
		return 0;
	unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void arr_json_fputs(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		unsigned char ch = *p;
		if (ch == '"' || ch == '\\') {
			fprintf(f, "\\%c", ch);
		} else if (ch < 0x20) {
			fprintf(f, "\\u%04x", ch);
		} else if (ch < 0x80) {
			fputc(ch, f);
		} else {
			/* paths and arguments are bytes: what is not UTF-8 becomes
			 * U+FFFD, so the document stays valid JSON */
			int n = utf8_len(p);
			if (n) {
				fwrite(p, 1, (size_t)n, f);
				p += n - 1;
			} else {
				fputs("\\ufffd", f);
			}
		}
	}
	fputc('"', f);
}

/*
 * Lines are built in a buffer with hand-written number formatting and
 * written with one fwrite: a 20M-event dump spent most of its time in
 * four or five fprintf calls per event. Exec paths, the one field of
 * unbounded length, go through stdio.
 */
#define LINE_MAX_BYTES 512

static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return put_u64(p, (uint64_t)0 - (uint64_t)v);
	}
	return put_u64(p, (uint64_t)v);
}

static char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;
	*p++ = '0';
	*p++ = 'x';
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* s (len bytes) padded to `width` characters, on the left (right-aligned,
 * printf's %*s) or, with `left`, on the right (%-*s). */
static char *put_padded(char *p, const char *s, size_t len, int width, int left)
{
	int pad = width > (int)len ? width - (int)len : 0;
	if (!left)
		for (; pad > 0; pad--)
			*p++ = ' ';
	for (size_t i = 0; i < len; i++)
		*p++ = s[i];
	if (left)
		for (; pad > 0; pad--)
			*p++ = ' ';
	return p;
}

int arr_event_fprint_json(FILE *f, const struct arr_event *ev)
{
	char buf[LINE_MAX_BYTES], *p = buf;
	const char *name = arr_op_name(ev->op);
	unsigned fl = arr_op_facts(ev->op);
	p = put_str(p, "{\"t\":");
	p = put_u64(p, ev->t);
	p = put_str(p, ",\"tid\":");
	p = put_u64(p, ev->tid);
	p = put_str(p, ",\"op\":\"");
	p = put_str(p, name ? name : "?");
	*p++ = '"';
	if (fl & ARR_OPF_SIZE)
		p = put_u64(put_str(p, ",\"size\":"), ev->size);
	if (fl & ARR_OPF_NMEMB)
		p = put_u64(put_str(p, ",\"nmemb\":"), ev->nmemb);
	if (fl & ARR_OPF_ALIGN)
		p = put_u64(put_str(p, ",\"align\":"), ev->align);
	if (fl & ARR_OPF_PTR) {
		p = put_hex(put_str(p, ",\"ptr\":\""), ev->ptr);
		*p++ = '"';
	}
	if (fl & ARR_OPF_RET) {
		p = put_hex(put_str(p, ",\"ret\":\""), ev->ret);
		*p++ = '"';
	}
	if ((fl & ARR_OPF_RC) || (ev->failed && arr_op_is_call(ev->op)))
		p = put_i64(put_str(p, ",\"err\":"), ev->err);
	switch (ev->op) {
	case ARR_OP_FORK:
		p = put_i64(put_str(p, ",\"pid\":"), (int64_t)ev->ptr);
		if (ev->failed)
			p = put_i64(put_str(p, ",\"err\":"), ev->err);
		break;
	case ARR_OP_MARK:
		p = put_str(p, ",\"name\":");
		fwrite(buf, 1, (size_t)(p - buf), f);
		arr_json_fputs(f, ev->str ? ev->str : "");
		p = buf;
		break;
	case ARR_OP_EXEC:
		p = put_str(p, ",\"path\":");
		fwrite(buf, 1, (size_t)(p - buf), f);
		arr_json_fputs(f, ev->str ? ev->str : "");
		p = buf;
		if (ev->failed)
			p = put_i64(put_str(p, ",\"err\":"), ev->err);
		break;
	case ARR_OP_RSS:
	case ARR_OP_RSS_PEAK:
		p = put_u64(put_str(p, ",\"rss\":"), ev->size);
		break;
	}
	*p++ = '}';
	fwrite(buf, 1, (size_t)(p - buf), f);
	return (int)(p - buf);
}

int arr_event_fprint_text(FILE *f, const struct arr_event *ev)
{
	char buf[LINE_MAX_BYTES], num[48], *p = buf, *q;
	const char *name = arr_op_name(ev->op);
	unsigned fl = arr_op_facts(ev->op);
	/* seconds with 6 decimals, rounded half up, right-aligned in 12 */
	uint64_t us = ev->t / 1000 + (ev->t % 1000 >= 500);
	q = put_u64(num, us / 1000000);
	*q++ = '.';
	uint64_t frac = us % 1000000;
	for (uint64_t d = 100000; d; d /= 10)
		*q++ = (char)('0' + frac / d % 10);
	p = put_padded(p, num, (size_t)(q - num), 12, 0);
	*p++ = ' ';
	q = put_u64(num, ev->tid);
	p = put_padded(p, num, (size_t)(q - num), 7, 0);
	*p++ = ' ';
	name = name ? name : "?";
	p = put_padded(p, name, strlen(name), 14, 1);
	if (fl & ARR_OPF_CALL) { /* the arguments in the call's order */
		const char *sep = "(";
		if (fl & ARR_OPF_PTR)
			p = put_hex(put_str(p, sep), ev->ptr), sep = ", ";
		if (fl & (ARR_OPF_NMEMB | ARR_OPF_ALIGN))
			p = put_u64(put_str(p, sep), fl & ARR_OPF_NMEMB ? ev->nmemb : ev->align), sep = ", ";
		if (fl & ARR_OPF_SIZE)
			p = put_u64(put_str(p, sep), ev->size);
		*p++ = ')';
	}
	switch (ev->op) { /* the events that are no calls */
	case ARR_OP_FORK:
		p = put_i64(put_str(p, "child "), (int64_t)ev->ptr);
		break;
	case ARR_OP_EXEC:
	case ARR_OP_MARK:
		fwrite(buf, 1, (size_t)(p - buf), f);
		fputs(ev->str ? ev->str : "", f);
		p = buf;
		break;
	case ARR_OP_RSS:
	case ARR_OP_RSS_PEAK:
		p = put_str(put_u64(p, ev->size), " bytes");
		break;
	}
	if (fl & ARR_OPF_RET)
		p = put_hex(put_str(p, " = "), ev->ret);
	if ((fl & ARR_OPF_RC) || ev->failed)
		p = put_i64(put_str(p, " err "), ev->err);
	fwrite(buf, 1, (size_t)(p - buf), f);
	return (int)(p - buf);
}

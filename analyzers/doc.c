/*
 * doc.c - see allocrr/doc.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/doc.h"

static struct arr_doc *node(enum arr_doc_type t)
{
	struct arr_doc *d = calloc(1, sizeof *d);
	if (d)
		d->type = t;
	return d;
}

struct arr_doc *arr_doc_object(void) { return node(ARR_DOC_OBJECT); }
struct arr_doc *arr_doc_array(void) { return node(ARR_DOC_ARRAY); }
struct arr_doc *arr_doc_null(void) { return node(ARR_DOC_NULL); }

struct arr_doc *arr_doc_int(int64_t v)
{
	struct arr_doc *d = node(ARR_DOC_INT);
	if (d)
		d->v.i = v;
	return d;
}

struct arr_doc *arr_doc_num(double v)
{
	struct arr_doc *d = node(ARR_DOC_NUM);
	if (d)
		d->v.n = v;
	return d;
}

struct arr_doc *arr_doc_bool(int v)
{
	struct arr_doc *d = node(ARR_DOC_BOOL);
	if (d)
		d->v.b = !!v;
	return d;
}

struct arr_doc *arr_doc_str(const char *s)
{
	if (!s)
		return node(ARR_DOC_NULL);
	struct arr_doc *d = node(ARR_DOC_STR);
	if (d && !(d->v.s = strdup(s))) {
		free(d);
		d = NULL;
	}
	return d;
}

void arr_doc_free(struct arr_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->len; i++) {
		arr_doc_free(d->items[i]);
		if (d->keys)
			free(d->keys[i]);
	}
	free(d->items);
	free(d->keys);
	if (d->type == ARR_DOC_STR)
		free(d->v.s);
	free(d);
}

static int grow(struct arr_doc *c)
{
	if (c->len < c->cap)
		return 0;
	size_t cap = c->cap ? c->cap * 2 : 4;
	struct arr_doc **items = realloc(c->items, cap * sizeof *items);
	if (!items)
		return -1;
	c->items = items;
	if (c->type == ARR_DOC_OBJECT) {
		char **keys = realloc(c->keys, cap * sizeof *keys);
		if (!keys)
			return -1;
		c->keys = keys;
	}
	c->cap = cap;
	return 0;
}

/* Take val into c (under key for objects); on failure free val, mark c. */
static struct arr_doc *adopt(struct arr_doc *c, const char *key, struct arr_doc *val)
{
	if (!c) {
		arr_doc_free(val);
		return NULL;
	}
	if (!val)
		goto fail;
	if (c->type == ARR_DOC_OBJECT) {
		if (!key)
			goto fail;
		for (size_t i = 0; i < c->len; i++)
			if (!strcmp(c->keys[i], key)) {
				arr_doc_free(c->items[i]);
				c->items[i] = val;
				return val;
			}
		char *k = strdup(key);
		if (!k || grow(c)) {
			free(k);
			goto fail;
		}
		c->keys[c->len] = k;
	} else if (c->type != ARR_DOC_ARRAY || grow(c)) {
		goto fail;
	}
	c->items[c->len++] = val;
	return val;
fail:
	arr_doc_free(val);
	c->oom = 1;
	return NULL;
}

struct arr_doc *arr_doc_set(struct arr_doc *obj, const char *key, struct arr_doc *val)
{
	if (obj && obj->type != ARR_DOC_OBJECT) {
		arr_doc_free(val);
		obj->oom = 1;
		return NULL;
	}
	return adopt(obj, key, val);
}

struct arr_doc *arr_doc_set_int(struct arr_doc *o, const char *k, int64_t v)
{
	return arr_doc_set(o, k, arr_doc_int(v));
}
struct arr_doc *arr_doc_set_num(struct arr_doc *o, const char *k, double v)
{
	return arr_doc_set(o, k, arr_doc_num(v));
}
struct arr_doc *arr_doc_set_str(struct arr_doc *o, const char *k, const char *s)
{
	return arr_doc_set(o, k, arr_doc_str(s));
}
struct arr_doc *arr_doc_set_bool(struct arr_doc *o, const char *k, int v) { return arr_doc_set(o, k, arr_doc_bool(v)); }
struct arr_doc *arr_doc_set_obj(struct arr_doc *o, const char *k) { return arr_doc_set(o, k, arr_doc_object()); }
struct arr_doc *arr_doc_set_arr(struct arr_doc *o, const char *k) { return arr_doc_set(o, k, arr_doc_array()); }

struct arr_doc *arr_doc_push(struct arr_doc *arr, struct arr_doc *val)
{
	if (arr && arr->type != ARR_DOC_ARRAY) {
		arr_doc_free(val);
		arr->oom = 1;
		return NULL;
	}
	return adopt(arr, NULL, val);
}

struct arr_doc *arr_doc_push_int(struct arr_doc *a, int64_t v) { return arr_doc_push(a, arr_doc_int(v)); }
struct arr_doc *arr_doc_push_num(struct arr_doc *a, double v) { return arr_doc_push(a, arr_doc_num(v)); }
struct arr_doc *arr_doc_push_str(struct arr_doc *a, const char *s) { return arr_doc_push(a, arr_doc_str(s)); }
struct arr_doc *arr_doc_push_obj(struct arr_doc *a) { return arr_doc_push(a, arr_doc_object()); }
struct arr_doc *arr_doc_push_arr(struct arr_doc *a) { return arr_doc_push(a, arr_doc_array()); }

int arr_doc_status(const struct arr_doc *d)
{
	if (!d || d->oom)
		return ARR_ENOMEM;
	for (size_t i = 0; i < d->len; i++)
		if (arr_doc_status(d->items[i]))
			return ARR_ENOMEM;
	return 0;
}

struct arr_doc *arr_doc_get(const struct arr_doc *obj, const char *key)
{
	if (!obj || obj->type != ARR_DOC_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->len; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

struct arr_doc *arr_doc_at(const struct arr_doc *arr, size_t i)
{
	if (!arr || arr->type != ARR_DOC_ARRAY || i >= arr->len)
		return NULL;
	return arr->items[i];
}

struct arr_doc *arr_doc_find(const struct arr_doc *arr, const char *key, const char *value)
{
	if (!arr || arr->type != ARR_DOC_ARRAY)
		return NULL;
	for (size_t i = 0; i < arr->len; i++) {
		const char *s = arr_doc_as_str(arr_doc_get(arr->items[i], key));
		if (s && !strcmp(s, value))
			return arr->items[i];
	}
	return NULL;
}

/* One path part [p, p + n) applied to d. */
static struct arr_doc *step(const struct arr_doc *d, const char *p, size_t n)
{
	char part[256];
	if (!d || n == 0 || n >= sizeof part)
		return NULL;
	memcpy(part, p, n);
	part[n] = 0;
	if (d->type == ARR_DOC_OBJECT)
		return arr_doc_get(d, part);
	if (d->type != ARR_DOC_ARRAY)
		return NULL;
	char *eq = strchr(part, '=');
	if (eq) {
		*eq = 0;
		return arr_doc_find(d, part, eq + 1);
	}
	if (strspn(part, "0123456789") != n)
		return NULL;
	return arr_doc_at(d, strtoull(part, NULL, 10));
}

struct arr_doc *arr_doc_path(const struct arr_doc *root, const char *path)
{
	const struct arr_doc *d = root;
	while (d && *path) {
		size_t n = strcspn(path, ".");
		d = step(d, path, n);
		path += n;
		if (*path == '.')
			path++;
	}
	return (struct arr_doc *)d;
}

int arr_doc_as_num(const struct arr_doc *d, double *out)
{
	if (d && d->type == ARR_DOC_INT)
		*out = (double)d->v.i;
	else if (d && d->type == ARR_DOC_NUM)
		*out = d->v.n;
	else
		return ARR_EINVAL;
	return 0;
}

const char *arr_doc_as_str(const struct arr_doc *d) { return d && d->type == ARR_DOC_STR ? d->v.s : NULL; }

struct arr_doc *arr_doc_clone(const struct arr_doc *d)
{
	if (!d)
		return NULL;
	struct arr_doc *c;
	switch (d->type) {
	case ARR_DOC_STR:
		return arr_doc_str(d->v.s);
	case ARR_DOC_ARRAY:
	case ARR_DOC_OBJECT:
		c = node(d->type);
		for (size_t i = 0; c && i < d->len; i++)
			adopt(c, d->keys ? d->keys[i] : NULL, arr_doc_clone(d->items[i]));
		if (c && arr_doc_status(c)) {
			arr_doc_free(c);
			c = NULL;
		}
		return c;
	default:
		c = node(d->type);
		if (c)
			c->v = d->v;
		return c;
	}
}

/* ---- JSON output ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) || (s[0] == 0xf0 && s[1] < 0x90) ||
	    (s[0] == 0xf4 && s[1] > 0x8f))
		return 0; /* overlong, surrogate, beyond U+10FFFF */
	return len;
}

static void write_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	fputc('"', f);
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		if (c >= 0x80) {
			size_t len = utf8_len(s + i, n - i);
			if (len)
				fwrite(s + i, 1, len, f), i += len;
			else
				fputs("\\ufffd", f), i++;
			continue;
		}
		i++;
		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc((int)c, f);
		}
	}
	fputc('"', f);
}

static void write_num(FILE *f, double v)
{
	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	char buf[40];
	/* the shortest of %.15g / %.17g that reads back as v */
	snprintf(buf, sizeof buf, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof buf, "%.17g", v);
	fputs(buf, f);
}

static void newline(FILE *f, int indent, int level)
{
	if (!indent)
		return;
	fputc('\n', f);
	for (int i = 0; i < indent * level; i++)
		fputc(' ', f);
}

static void write_json(FILE *f, const struct arr_doc *d, int indent, int level)
{
	switch (d->type) {
	case ARR_DOC_NULL:
		fputs("null", f);
		return;
	case ARR_DOC_BOOL:
		fputs(d->v.b ? "true" : "false", f);
		return;
	case ARR_DOC_INT:
		fprintf(f, "%lld", (long long)d->v.i);
		return;
	case ARR_DOC_NUM:
		write_num(f, d->v.n);
		return;
	case ARR_DOC_STR:
		write_str(f, d->v.s);
		return;
	case ARR_DOC_ARRAY:
	case ARR_DOC_OBJECT:
		break;
	}
	int obj = d->type == ARR_DOC_OBJECT;
	fputc(obj ? '{' : '[', f);
	/* arrays of scalars stay on one line: timelines, histograms */
	int flat = !obj;
	for (size_t i = 0; flat && i < d->len; i++)
		flat = d->items[i]->type < ARR_DOC_ARRAY;
	for (size_t i = 0; i < d->len; i++) {
		if (i)
			fputs(indent && flat ? ", " : ",", f);
		if (!flat)
			newline(f, indent, level + 1);
		if (obj) {
			write_str(f, d->keys[i]);
			fputs(indent ? ": " : ":", f);
		}
		write_json(f, d->items[i], indent, level + 1);
	}
	if (d->len && !flat)
		newline(f, indent, level);
	fputc(obj ? '}' : ']', f);
}

int arr_doc_write_json(FILE *f, const struct arr_doc *d, int indent)
{
	if (!d)
		fputs("null", f);
	else
		write_json(f, d, indent, 0);
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON input ---- */

struct parser {
	const char *s, *end, *p;
	int err;
	int depth;
};

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int lit(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return 0;
	ps->p += n;
	return 1;
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
	if (cp < 0x80) {
		out[(*o)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*o)++] = (char)(0xc0 | cp >> 6);
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*o)++] = (char)(0xe0 | cp >> 12);
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | cp >> 18);
		out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* A string at ps->p (on its opening quote): a new malloc'd copy, or NULL. */
static char *parse_str(struct parser *ps)
{
	const char *p = ++ps->p;
	/* decoded text is never longer than the escaped one */
	const char *q = p;
	while (q < ps->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	if (q >= ps->end) {
		ps->err = ARR_ESYNTAX;
		return NULL;
	}
	char *out = malloc((size_t)(q - p) + 1);
	if (!out) {
		ps->err = ARR_ENOMEM;
		return NULL;
	}
	size_t o = 0;
	while (p < q) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			out[o++] = (char)c;
			p++;
			continue;
		}
		ps->p = p;
		switch (p[1]) {
		case '"':
			out[o++] = '"';
			break;
		case '\\':
			out[o++] = '\\';
			break;
		case '/':
			out[o++] = '/';
			break;
		case 'b':
			out[o++] = '\b';
			break;
		case 'f':
			out[o++] = '\f';
			break;
		case 'n':
			out[o++] = '\n';
			break;
		case 'r':
			out[o++] = '\r';
			break;
		case 't':
			out[o++] = '\t';
			break;
		case 'u': {
			unsigned cp, lo;
			if (q - p < 6 || hex4(p + 2, &cp))
				goto bad;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && q - p >= 8 && p[2] == '\\' && p[3] == 'u' &&
			    !hex4(p + 4, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;
			}
			/* \uXXXX is 6 bytes and decodes to at most 3; a pair is 12 for 4 */
			put_utf8(out, &o, cp);
			break;
		}
		default:
			goto bad;
		}
		p += 2;
	}
	out[o] = 0;
	ps->p = q + 1;
	return out;
bad:
	ps->p = p;
	free(out);
	ps->err = ARR_ESYNTAX;
	return NULL;
}

static struct arr_doc *parse_value(struct parser *ps);

static struct arr_doc *parse_container(struct parser *ps, int obj)
{
	if (++ps->depth > 256) {
		ps->err = ARR_ERANGE;
		return NULL;
	}
	struct arr_doc *c = obj ? arr_doc_object() : arr_doc_array();
	if (!c) {
		ps->err = ARR_ENOMEM;
		return NULL;
	}
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
		ps->p++;
		ps->depth--;
		return c;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(ps);
		if (obj) {
			if (ps->p >= ps->end || *ps->p != '"' || !(key = parse_str(ps)))
				goto fail;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				goto fail;
			}
			ps->p++;
		}
		struct arr_doc *v = parse_value(ps);
		if (!v) {
			free(key);
			goto fail;
		}
		struct arr_doc *added = obj ? arr_doc_set(c, key, v) : arr_doc_push(c, v);
		free(key);
		if (!added) {
			ps->err = ARR_ENOMEM;
			goto fail;
		}
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
			ps->p++;
			ps->depth--;
			return c;
		}
		goto fail;
	}
fail:
	if (!ps->err)
		ps->err = ARR_ESYNTAX;
	arr_doc_free(c);
	return NULL;
}

static struct arr_doc *parse_number(struct parser *ps)
{
	const char *p = ps->p;
	char buf[64];
	size_t n = 0;
	int is_int = 1;
	while (p + n < ps->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", p[n])) {
		if (strchr(".eE", p[n]))
			is_int = 0;
		buf[n] = p[n];
		n++;
	}
	buf[n] = 0;
	char *end;
	errno = 0;
	struct arr_doc *d;
	if (is_int) {
		long long v = strtoll(buf, &end, 10);
		if (errno == ERANGE)
			is_int = 0;
		else
			d = (end == buf + n && n) ? arr_doc_int(v) : NULL;
	}
	if (!is_int) {
		double v = strtod(buf, &end);
		d = (end == buf + n && n) ? arr_doc_num(v) : NULL;
	}
	if (end != buf + n || !n) {
		ps->err = ARR_ESYNTAX;
		return NULL;
	}
	if (!d)
		ps->err = ARR_ENOMEM;
	ps->p += n;
	return d;
}

static struct arr_doc *parse_value(struct parser *ps)
{
	skip_ws(ps);
	if (ps->p >= ps->end) {
		ps->err = ARR_ESYNTAX;
		return NULL;
	}
	struct arr_doc *d = NULL;
	switch (*ps->p) {
	case '{':
		return parse_container(ps, 1);
	case '[':
		return parse_container(ps, 0);
	case '"': {
		char *s = parse_str(ps);
		if (!s)
			return NULL;
		d = node(ARR_DOC_STR);
		if (d)
			d->v.s = s;
		else
			free(s);
		break;
	}
	case 't':
		if (lit(ps, "true"))
			d = arr_doc_bool(1);
		else
			goto bad;
		break;
	case 'f':
		if (lit(ps, "false"))
			d = arr_doc_bool(0);
		else
			goto bad;
		break;
	case 'n':
		if (lit(ps, "null"))
			d = arr_doc_null();
		else
			goto bad;
		break;
	default:
		return parse_number(ps);
	}
	if (!d)
		ps->err = ARR_ENOMEM;
	return d;
bad:
	ps->err = ARR_ESYNTAX;
	return NULL;
}

int arr_doc_parse_json(const char *text, size_t len, struct arr_doc **out, size_t *err_offset)
{
	struct parser ps = {text, text + len, text, 0, 0};
	*out = NULL;
	struct arr_doc *d = parse_value(&ps);
	if (d) {
		skip_ws(&ps);
		if (ps.p != ps.end) {
			ps.err = ARR_ESYNTAX;
			arr_doc_free(d);
			d = NULL;
		}
	}
	if (!d) {
		if (err_offset)
			*err_offset = (size_t)(ps.p - text);
		return ps.err ? ps.err : ARR_ESYNTAX;
	}
	*out = d;
	return 0;
}

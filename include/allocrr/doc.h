/*
 * allocrr/doc.h - a small JSON-shaped document tree: what analyses produce,
 * and what reports, checks and renderers read.
 *
 * Every analysis writes its results into an arr_doc object (its section,
 * e.g. "sizes"); `allocrr analyze --json` prints the tree, the report's
 * checks look values up by path ("fragmentation.peak_rss"), the CSV and
 * HTML renderers walk it. One tree, so the JSON, the CSV, the text and the
 * page can never disagree.
 *
 * Contract
 *   - A node owns its children; arr_doc_free() frees a whole subtree.
 *   - Objects keep insertion order (stable output for golden tests);
 *     arr_doc_set() replaces the value of an existing key.
 *   - Builders never fail loudly: on allocation failure (or a NULL parent)
 *     they return NULL and mark the parent, so a whole section can be
 *     written without a check per field; arr_doc_status() says afterwards
 *     whether the tree is complete (0) or not (ARR_ENOMEM).
 *   - Integers are int64 (bytes, counts, ns); other numbers double.
 *     Non-finite doubles are written as null.
 */
#ifndef ALLOCRR_DOC_H
#define ALLOCRR_DOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocrr/error.h"

enum arr_doc_type {
	ARR_DOC_NULL,
	ARR_DOC_BOOL,
	ARR_DOC_INT,
	ARR_DOC_NUM,
	ARR_DOC_STR,
	ARR_DOC_ARRAY,
	ARR_DOC_OBJECT,
};

struct arr_doc {
	enum arr_doc_type type;
	int oom; /* a child could not be added (see arr_doc_status) */
	union {
		int b;
		int64_t i;
		double n;
		char *s;
	} v;
	/* arrays and objects */
	size_t len, cap;
	struct arr_doc **items;
	char **keys; /* objects only, parallel to items */
};

/* Constructors: a new node, or NULL when out of memory. */
struct arr_doc *arr_doc_object(void);
struct arr_doc *arr_doc_array(void);
struct arr_doc *arr_doc_int(int64_t v);
struct arr_doc *arr_doc_num(double v);
struct arr_doc *arr_doc_str(const char *s); /* copies s; NULL gives null */
struct arr_doc *arr_doc_bool(int v);
struct arr_doc *arr_doc_null(void);
void arr_doc_free(struct arr_doc *d);

/*
 * Object members. arr_doc_set takes ownership of val (freed on failure)
 * and returns it; the typed forms make the value. set_obj/set_arr return
 * the new (empty) child to fill.
 */
struct arr_doc *arr_doc_set(struct arr_doc *obj, const char *key, struct arr_doc *val);
struct arr_doc *arr_doc_set_int(struct arr_doc *obj, const char *key, int64_t v);
struct arr_doc *arr_doc_set_num(struct arr_doc *obj, const char *key, double v);
struct arr_doc *arr_doc_set_str(struct arr_doc *obj, const char *key, const char *s);
struct arr_doc *arr_doc_set_bool(struct arr_doc *obj, const char *key, int v);
struct arr_doc *arr_doc_set_obj(struct arr_doc *obj, const char *key);
struct arr_doc *arr_doc_set_arr(struct arr_doc *obj, const char *key);

/* Array elements: as the set forms, appended at the end. */
struct arr_doc *arr_doc_push(struct arr_doc *arr, struct arr_doc *val);
struct arr_doc *arr_doc_push_int(struct arr_doc *arr, int64_t v);
struct arr_doc *arr_doc_push_num(struct arr_doc *arr, double v);
struct arr_doc *arr_doc_push_str(struct arr_doc *arr, const char *s);
struct arr_doc *arr_doc_push_obj(struct arr_doc *arr);
struct arr_doc *arr_doc_push_arr(struct arr_doc *arr);

/* 0 when every builder call on the tree succeeded, else ARR_ENOMEM. */
int arr_doc_status(const struct arr_doc *d);

/* Lookup. NULL when absent or of another type. */
struct arr_doc *arr_doc_get(const struct arr_doc *obj, const char *key);
struct arr_doc *arr_doc_at(const struct arr_doc *arr, size_t i);
/*
 * A path of keys and indexes separated by dots: "allocators.0.latency",
 * "summary.calls". A part that is all digits indexes an array; in an array
 * of objects, "name=glibc" picks the first element whose "name" member
 * (a string) is "glibc". NULL when any part is missing.
 */
struct arr_doc *arr_doc_path(const struct arr_doc *root, const char *path);
/* In an array of objects, the first whose member key is the string value;
 * NULL when none is. (A path's "key=value" part, for values holding dots.) */
struct arr_doc *arr_doc_find(const struct arr_doc *arr, const char *key, const char *value);
/* A number (int or double) as double: 0 and *out set, or ARR_EINVAL. */
int arr_doc_as_num(const struct arr_doc *d, double *out);
/* A string's text, or NULL. */
const char *arr_doc_as_str(const struct arr_doc *d);

/* Deep copy, or NULL when out of memory. */
struct arr_doc *arr_doc_clone(const struct arr_doc *d);

/*
 * Write as JSON. indent 0: one line; otherwise pretty-printed with that
 * many spaces a level. Strings are escaped (invalid UTF-8 as \ufffd).
 * Returns 0 or -errno from the stream.
 */
int arr_doc_write_json(FILE *f, const struct arr_doc *d, int indent);
/*
 * Parse JSON text. 0 and *out, or ARR_ESYNTAX with *err_offset at the byte
 * where parsing stopped (ARR_ENOMEM when out of memory). Nesting is limited
 * to 256 levels (ARR_ERANGE past it).
 */
int arr_doc_parse_json(const char *text, size_t len, struct arr_doc **out, size_t *err_offset);

#endif

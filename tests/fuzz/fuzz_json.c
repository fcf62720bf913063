/*
 * fuzz_json.c - fuzz target for the JSON reader (arr_doc_parse_json), which
 * `allocrr diff` runs on report.json and `analyze --json` files a user hands
 * it. On arbitrary bytes: an error stops inside the input; a document that
 * parses writes back as JSON that parses again, and again to the same text. Same build
 * modes as fuzz_trace.c (standalone driver under ctest; libFuzzer with
 * ALLOCRR_FUZZ).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/doc.h"
#include "allocrr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *write_back(const struct arr_doc *d, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	if (arr_doc_write_json(f, d, 0)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arr_doc *d = NULL;
	size_t off = 0;
	int rc = arr_doc_parse_json((const char *)data, size, &d, &off);
	if (rc == ARR_ESYNTAX && off > size)
		abort(); /* the offset names a byte of the input */
	if (rc) {
		arr_doc_free(d);
		return 0;
	}
	/* what we write, we read; from the second writing on it stays the same
	 * (the first may spell a string differently: a byte that is not UTF-8
	 * written as \ufffd, which reads back as the character itself) */
	char *t[3] = {NULL, NULL, NULL};
	size_t n[3] = {0, 0, 0};
	t[0] = write_back(d, &n[0]);
	arr_doc_free(d);
	for (int i = 1; i < 3 && t[i - 1]; i++) {
		struct arr_doc *again = NULL;
		if (arr_doc_parse_json(t[i - 1], n[i - 1], &again, &off))
			abort();
		t[i] = write_back(again, &n[i]);
		arr_doc_free(again);
	}
	if (t[1] && t[2] && (n[1] != n[2] || memcmp(t[1], t[2], n[1])))
		abort();
	for (int i = 0; i < 3; i++)
		free(t[i]);
	return 0;
}

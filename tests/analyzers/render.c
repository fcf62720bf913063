/*
 * render.c - arr_doc_render_text() on a JSON document read from a file:
 * the text form of sections this tree does not compute (the replay side's
 * "allocators", a report's "checks"), rendered from the schema's key names.
 * Usage: render FILE.json (prints the text form; exit 1 if unreadable).
 */
#include <stdio.h>
#include <stdlib.h>

#include "allocrr/analysis.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	FILE *f = fopen(argv[1], "rb");
	if (!f)
		return 1;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	struct arr_doc *d;
	size_t off;
	if (arr_doc_parse_json(buf, n, &d, &off)) {
		fprintf(stderr, "render: %s: bad JSON at offset %zu\n", argv[1], off);
		return 1;
	}
	int rc = arr_doc_render_text(stdout, d);
	arr_doc_free(d);
	return rc ? 1 : 0;
}

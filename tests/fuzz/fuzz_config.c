/*
 * fuzz_config.c - fuzz target for `allocrr report`'s inputs: the YAML
 * config (libyaml plus our validation) and the check expression parser,
 * on arbitrary bytes. Every error must carry a position inside the input;
 * a config that parses must release cleanly. Same build modes as
 * fuzz_trace.c (standalone driver under ctest; libFuzzer with ALLOCRR_FUZZ).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arr_report_config cfg;
	struct arr_report_error err;
	int rc = arr_report_config_parse(&cfg, "fuzz.yaml", (const char *)data, size, &err);
	if (rc == ARR_ESYNTAX && (!err.msg[0] || err.line == 0))
		abort(); /* every syntax error says where and what */
	arr_report_config_release(&cfg);

	/* The same bytes as one check expression. */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct arr_check *c;
	size_t off = 0;
	char msg[256];
	rc = arr_check_parse(text, &c, &off, msg, sizeof msg);
	if (rc == ARR_ESYNTAX && off > strlen(text))
		abort(); /* the offset points inside the text */
	if (rc == 0) {
		struct arr_doc *t = arr_doc_object(), *e = arr_doc_object();
		arr_doc_set_int(arr_doc_set_obj(t, "leaks"), "bytes", 1);
		arr_check_eval(c, text, t, NULL, e);
		arr_doc_free(t);
		arr_doc_free(e);
		arr_check_free(c);
	}
	free(text);
	return 0;
}

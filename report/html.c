/*
 * html.c - the report as one self-contained page: dygraphs (time series)
 * and Chart.js (bars), both from Debian and embedded at build time
 * (embed.cmake), the page's own script (page.js, which also draws the call
 * sites' flame graphs on a canvas: Debian packages no flame-graph library)
 * and the report as one JSON blob. Nothing is fetched: it works offline
 * and from file://.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#ifdef ARR_HAVE_HTML
extern const unsigned char arr__js_dygraphs[], arr__css_dygraphs[], arr__js_chartjs[], arr__js_app[], arr__css_app[];
extern const size_t arr__js_dygraphs_len, arr__css_dygraphs_len, arr__js_chartjs_len, arr__js_app_len, arr__css_app_len;
#endif

int arr_report_html_available(void)
{
#ifdef ARR_HAVE_HTML
	return 1;
#else
	return 0;
#endif
}

static void html_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* The report inside <script type="application/json">: JSON with every '<'
 * written as \u003c, so no string in it can close the element. */
static int write_data(FILE *f, const struct arr_doc *report)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return ARR_ENOMEM;
	int rc = arr_doc_write_json(m, report, 0);
	if (fclose(m) || rc) {
		free(buf);
		return rc ? rc : ARR_ENOMEM;
	}
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(buf[i], f);
	}
	free(buf);
	return 0;
}

int arr_report_write_html(FILE *f, const struct arr_doc *report, const char *title)
{
#ifndef ARR_HAVE_HTML
	(void)f;
	(void)report;
	(void)title;
	return ARR_EUNSUPPORTED;
#else
	fputs("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      f);
	html_text(f, title && *title ? title : "allocrr report");
	fputs("</title>\n<style>\n", f);
	fwrite(arr__css_dygraphs, 1, arr__css_dygraphs_len, f);
	fputs("\n", f);
	fwrite(arr__css_app, 1, arr__css_app_len, f);
	fputs("\n</style>\n<script>\n", f);
	fwrite(arr__js_dygraphs, 1, arr__js_dygraphs_len, f);
	fputs("\n</script>\n<script>\n", f);
	fwrite(arr__js_chartjs, 1, arr__js_chartjs_len, f);
	fputs("\n</script>\n</head>\n<body>\n<header><h1>", f);
	html_text(f, title && *title ? title : "allocrr report");
	fputs("</h1><p id=\"subtitle\"></p></header>\n<nav id=\"toc\"></nav>\n<main id=\"app\">"
	      "<noscript>This report draws its charts with JavaScript.</noscript></main>\n"
	      "<script type=\"application/json\" id=\"allocrr-data\">",
	      f);
	int rc = write_data(f, report);
	if (rc)
		return rc;
	fputs("</script>\n<script>\n", f);
	fwrite(arr__js_app, 1, arr__js_app_len, f);
	fputs("\n</script>\n</body>\n</html>\n", f);
	return ferror(f) ? ARR_EIO : 0;
#endif
}

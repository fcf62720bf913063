/*
 * count.c - a program outside the tree that reads traces: built against an
 * installed allocrr with `pkg-config --cflags --libs allocrr`. Prints, for
 * each trace, its calls, its events and the bytes its calls requested.
 */
#include <inttypes.h>
#include <stdio.h>

#include <allocrr/error.h>
#include <allocrr/trace.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct arr_trace *tr;
		struct arr_merge *m = NULL;
		int rc = arr_trace_open(&tr, argv[i]);
		if (rc == 0)
			rc = arr_merge_open(&m, tr);
		const struct arr_event *ev;
		uint64_t events = 0, calls = 0, bytes = 0;
		while (rc == 0 && (rc = arr_merge_next(m, &ev)) == 1) {
			rc = 0;
			events++;
			if (arr_op_is_call(ev->op)) {
				calls++;
				bytes += arr_event_bytes(ev, arr_trace_meta(tr)->page_size);
			}
		}
		if (rc < 0) {
			fprintf(stderr, "count: '%s': %s\n", argv[i], arr_strerror(rc));
			return 1;
		}
		printf("%s calls=%" PRIu64 " events=%" PRIu64 " bytes=%" PRIu64 " exe=%s\n", argv[i], calls, events,
		       bytes, arr_trace_meta(tr)->exe);
		arr_merge_close(m);
		arr_trace_close(tr);
	}
	return 0;
}

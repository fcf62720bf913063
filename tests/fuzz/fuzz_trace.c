/*
 * fuzz_trace.c - fuzz target for the trace reader: header, chunk framing,
 * column decoding and the time-ordered merge, on arbitrary bytes.
 * Built for libFuzzer with -DALLOCRR_FUZZ=ON (clang), and always as a
 * standalone driver (driver.c) that ctest runs over the seed corpus plus
 * mutations, so every CI run exercises it under ASan.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "allocrr/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The reader works on files: give it one in memory. */
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct arr_trace *tr;
	if (arr_trace_open(&tr, path) == 0) {
		struct arr_chunk_info ci;
		const struct arr_event *ev;
		while (arr_trace_next_chunk(tr, &ci) == 1)
			if (arr_trace_read_chunk(tr, &ev) < 0)
				break;
		struct arr_merge *m;
		if (arr_merge_open(&m, tr) == 0) {
			FILE *null = fopen("/dev/null", "w");
			while (arr_merge_next(m, &ev) == 1)
				if (null)
					arr_event_fprint_json(null, ev);
			if (null)
				fclose(null);
			arr_merge_close(m);
		}
	}
	arr_trace_close(tr);
	close(fd);
	return 0;
}

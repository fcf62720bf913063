/*
 * fuzz_workload.c - fuzz target for the workload loader and the engine: a
 * workload file of arbitrary bytes is read (arr_workload_read_info) and
 * replayed serially (arr_replay_run) into this process's malloc. The
 * checksum the CLI verifies first is not checked here, so every byte
 * reaches the engine's own validation: it must refuse what it cannot run
 * (ARR_ECORRUPT...) without crashing, hanging or growing without bound.
 * Built for libFuzzer with -DALLOCRR_FUZZ=ON (clang), and always as a
 * standalone driver (driver.c) that ctest runs over the seed corpus
 * (tests/fuzz/workloads/) plus mutations.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "allocrr/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Replayed sizes are arbitrary: a request too big for the sanitizer's
 * allocator (over 256 MiB: libFuzzer stops at its malloc limit) must return
 * NULL, as malloc may, and not abort. The objects a
 * workload leaves live are the engine's by design (it measures final RSS,
 * then exits). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=256"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:run_entries\nleak:exec_entry\nleak:run_workload\nleak:replayer/run.c\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-workload", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct arr_workload_info info;
	if (arr_workload_read_info(path, &info) == 0) {
		struct arr_replay_options opt = ARR_REPLAY_OPTIONS_INIT;
		opt.threads = ARR_THREADS_SERIAL; /* parallel waits on syncs (30 s guard) */
		opt.touch = ARR_TOUCH_NONE;
		opt.samples = 4;
		opt.latency_every = 0;
		struct arr_replay_result res;
		if (arr_replay_run(path, &opt, &res) == 0)
			arr_replay_result_release(&res);
	}
	close(fd);
	return 0;
}

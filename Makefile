# Convenience entry points; the build itself is CMake.
#   make demo   install what is missing, build, record a bundled workload, show it
#   make test   build (release and ASan+UBSan) and run every test
#   make bench  every benchmark side by side, rewriting docs/BENCHMARKS.md's tables
#               (its tools too: heaptrack, redis; ALLOCRR_DEPS=bench scripts/deps.sh)
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
ALLOCRR     = $(BUILD)/bin/allocrr

.PHONY: all deps build build-asan demo test test-release test-asan bench bench-smoke fuzz fuzz-short clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DALLOCRR_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -LE no-sanitize

test: test-release test-asan fuzz-short

bench: build
	@ALLOCRR_DEPS=bench bash scripts/deps.sh || echo "make bench: the parts whose tools are missing are skipped"
	@bash bench/run-all.sh $(BUILD)

# every part of `make bench` with tiny inputs, one run each (seconds): the ctest entry bench.smoke
bench-smoke: build
	@bash bench/smoke.sh $(BUILD)

# libFuzzer on the trace reader and on the workload loader and engine (needs
# clang and libclang-rt-14-dev: ALLOCRR_DEPS=full scripts/deps.sh), each for
# FUZZ_TIME seconds:   make fuzz FUZZ_TIME=600
# `make test` runs each for a few seconds when clang's libFuzzer is there.
FUZZ_TIME ?= 120
fuzz: deps
	@sh tests/fuzz/run.sh $(FUZZ_TIME)

fuzz-short:
	@sh tests/fuzz/run.sh 5 --if-available

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz

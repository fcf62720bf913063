# Convenience entry points; the build itself is CMake.
#   make demo   install what is missing, build, record a bundled workload, show it
#   make test   build (release and ASan+UBSan) and run every test
#   make bench  run the benchmarks (results: docs/BENCHMARKS.md)
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
ALLOCRR     = $(BUILD)/bin/allocrr

.PHONY: all deps build build-asan demo test test-release test-asan bench fuzz clean

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

test: test-release test-asan

bench: build
	@bash bench/run-all.sh $(BUILD)

# libFuzzer on the trace reader (needs clang and libclang-rt-14-dev):
#   make fuzz FUZZ_TIME=600
FUZZ_TIME ?= 120
fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOCRR_FUZZ=ON >/dev/null
	cmake --build build-fuzz --target fuzz-trace -j$(JOBS)
	mkdir -p build-fuzz/corpus && cp traces/*.atr build-fuzz/corpus/
	build-fuzz/bin/fuzz-trace -max_total_time=$(FUZZ_TIME) -max_len=65536 build-fuzz/corpus

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz

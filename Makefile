# tdsl: `make demo` and `make test` do everything on a fresh Debian 12 machine.
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=

.PHONY: all deps build demo test test-fast test-asan bench fuzz clean

all: build

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@echo "== examples/storage_views.tdsl: every result is a view of x's storage =="
	$(BUILD)/tdslc run examples/storage_views.tdsl --fn views
	@echo
	@echo "== examples/attention.tdsl: the fusion plan (views cost nothing; each kernel lists its ops and lines) =="
	$(BUILD)/tdslc examples/attention.tdsl --emit=ir
	@echo
	@echo "== examples/attention.tdsl compiled in process with LLVM and run on seeded inputs (first rows) =="
	$(BUILD)/tdslc run examples/attention.tdsl | head -n 8

# The suite twice: the release build, then one built with address and undefined-behaviour sanitizers
# (TDSL_TEST_SUBSET=4: the longest scripts run every 4th of their programs there, see tests/run/oracle.py).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTDSLC_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		TDSL_TEST_SUBSET=4 \
		ctest --output-on-failure -j $(JOBS)

# Timings only, never asserted (not part of `make test`); writes bench/RESULTS.md.
# BENCH_FLAGS passes options to bench/run.py, e.g. BENCH_FLAGS="--reps-scale 0.3 --only matmul,mlp".
bench: build
	@scripts/deps.sh --bench
	/usr/bin/python3 bench/run.py --tdslc $(BUILD)/tdslc $(BENCH_FLAGS)

# A fuzzing campaign of about SECONDS: libFuzzer over the whole pipeline (clang, in
# build-fuzz), then the random-program generator checked against NumPy (tests/fuzz/fuzz.sh).
# `make test` runs the short fixed-seed smoke (ctest's fuzz.smoke) instead.
SECONDS ?= 60
fuzz: deps
	@scripts/deps.sh --fuzz
	tests/fuzz/fuzz.sh $(SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz

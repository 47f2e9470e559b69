# tdsl: `make demo` and `make test` do everything on a fresh Debian 12 machine.
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
MAKEFLAGS += --no-print-directory

.PHONY: all deps build build-asan demo test test-fast test-asan bench install fuzz clean update-goldens update-errors
SHELL := /bin/bash

all: build

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Quiet: only tdslc is built, with one line of progress (its log is printed only if the
# build fails), and each step shows the source it runs and what to look at in its output.
demo: deps
	@echo "configuring $(BUILD) (CMake)..."
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@echo "building $(BUILD)/tdslc: the compiler and LLVM's libraries it links (about a minute on 2 cores the"
	@echo "first time; the log is $(BUILD)/demo-build.log)"
	@set -o pipefail; cmake --build $(BUILD) --target tdslc -j $(JOBS) 2>&1 | tee $(BUILD)/demo-build.log \
		| awk 'match($$0, /^\[ *[0-9]+%\]/) { printf "\r  %s", substr($$0, RSTART, RLENGTH); fflush() } END { print "" }' \
		|| { cat $(BUILD)/demo-build.log; exit 1; }
	@echo
	@echo "== examples/storage_views.tdsl: eight views of one tensor =="
	@sed -n '/^const/,/^}/p' examples/storage_views.tdsl
	@echo
	@echo "Look at the line under each result: all eight share x's storage (storage input:x); only"
	@echo "the shape, strides and offset differ, as t.stride() and t.storage_offset() do in PyTorch."
	@echo "\$$ $(BUILD)/tdslc run examples/storage_views.tdsl --fn views"
	@$(BUILD)/tdslc run examples/storage_views.tdsl --fn views
	@echo
	@echo "== examples/attention.tdsl: multi-head attention =="
	@sed -n '/^const/,/^}/p' examples/attention.tdsl
	@echo
	@echo "Look at the kernel plan: q, k and v are views of the matmuls' results (storage kernel:k0 to"
	@echo "k2, no copy), and the division by sqrt(D) is computed inside the softmax kernel (k4)."
	@echo "\$$ $(BUILD)/tdslc examples/attention.tdsl --emit=ir"
	@$(BUILD)/tdslc examples/attention.tdsl --emit=ir
	@echo
	@echo "The same function compiled in process by LLVM and run on seeded inputs: the first rows of"
	@echo "the result (--json prints every number; --backend c builds the C with cc instead)."
	@echo "\$$ $(BUILD)/tdslc run examples/attention.tdsl | head -n 8"
	@$(BUILD)/tdslc run examples/attention.tdsl | head -n 8

# The suite twice (README.md, "Testing"): every test on the release build, then, on a build
# with the address and undefined-behaviour sanitizers, what can find a bug there: work done by
# tdslc and libtdslrt, on every 16th program of the long scripts (TDSL_TEST_SUBSET=16, see
# tests/run/oracle.py; tests/CMakeLists.txt says what that build leaves out). Each test prints
# a line as it ends (N/TOTAL); the slow ones start first (COST).
# While the release pass runs, the sanitizer build is configured and built beside it at the
# lowest priority (in its own session, stopped if make is; its log $(ASAN_BUILD)/make-test.log):
# it takes the CPU the tests leave, and the second pass's build step has little left to do
# (a build error shows there again).
test: build
	@echo "== make test, pass 1 of 2: $$(cd $(BUILD) && ctest -N | tail -1 | sed 's/Total Tests: //') tests on the release build ($(BUILD)), $(JOBS) at a time"
	@echo "   (meanwhile, at the lowest priority, the sanitizer build: log in $(ASAN_BUILD)/make-test.log)"
	@mkdir -p $(ASAN_BUILD); \
	setsid nice -n 19 $(MAKE) --no-print-directory build-asan >$(ASAN_BUILD)/make-test.log 2>&1 & asan=$$!; \
	trap 'kill -TERM -- -$$asan 2>/dev/null' INT TERM; \
	echo "cd $(BUILD) && ctest --output-on-failure -j $(JOBS)"; \
	(cd $(BUILD) && ctest --output-on-failure -j $(JOBS)); rc=$$?; \
	wait $$asan; exit $$rc
	@$(MAKE) --no-print-directory test-asan PASS="pass 2 of 2: "

# The release build's tests without the eight labelled slow (about 17 s of CPU or more each;
# the rest is 53% of the pass's CPU, spread over 158 tests): a quick check while working;
# `make test` runs them all.
test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE slow

test-asan: deps
	@echo "== make test, $(PASS)configuring and building the sanitizer build ($(ASAN_BUILD): Debug,"
	@echo "   -fsanitize=address,undefined): tdslc, libtdslrt and the tests"
	@$(MAKE) --no-print-directory build-asan
	@echo "== make test, $(PASS)$$(cd $(ASAN_BUILD) && ctest -N | tail -1 | sed 's/Total Tests: //') tests on the sanitizer build, $(JOBS) at a time"
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		TDSL_TEST_SUBSET=16 \
		ctest --output-on-failure -j $(JOBS)

# The sanitizer build alone (test-asan's first step).
build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTDSLC_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Rewrite the expected texts from what the built tdslc prints now, showing each change as a
# diff to read before committing it (tests never rewrite their own expectations).
update-goldens: build
	/usr/bin/python3 tests/tools/check_golden.py --update $(BUILD)/tdslc tests/golden/*.golden

update-errors: build
	/usr/bin/python3 tests/tools/check_errors.py --update $(BUILD)/tdslc tests/errors/*.tdsl

# Timings only, never asserted (not part of `make test`); writes bench/RESULTS.md.
# BENCH_FLAGS passes options to bench/run.py, e.g. BENCH_FLAGS="--reps-scale 0.3 --only matmul,mlp".
bench: build
	@scripts/deps.sh --bench
	/usr/bin/python3 bench/run.py --tdslc $(BUILD)/tdslc $(BENCH_FLAGS)

# tdslc, libtdslrt.{a,so}, tdsl.h, the man page, tdslrt.pc and the CMake package under PREFIX.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A fuzzing campaign of about SECONDS: libFuzzer over the whole pipeline (clang, in
# build-fuzz), then the random-program generator checked against NumPy (tests/fuzz/fuzz.sh).
# `make test` runs the short fixed-seed smoke (ctest's fuzz.smoke) instead.
SECONDS ?= 60
fuzz: deps
	@scripts/deps.sh --fuzz
	tests/fuzz/fuzz.sh $(SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz

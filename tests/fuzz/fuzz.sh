#!/bin/sh
# tests/fuzz/fuzz.sh SECONDS [STAGE]: `make fuzz SECONDS=N`, a fuzzing campaign of about
# SECONDS in two halves:
#   1. libFuzzer over the whole pipeline (tests/fuzz/fuzz_pipeline.c, built with clang in
#      build-fuzz with -fsanitize=fuzzer,address,undefined), with the language's
#      dictionary, the seed corpus (examples/, tests/golden/, tests/errors/,
#      tests/fuzz/regressions/, 64 programs of tests/run/randprog.py) and the corpus it
#      grows in build-fuzz/corpus; libFuzzer runs in fork mode, so a crash, timeout or
#      OOM is saved and the campaign goes on (a slow unit is one of over 60 s: the
#      instrumented target, sanitized, takes ten times tdslc's time, and nanogpt_block's
#      10 s on a busy machine is not a finding);
#   2. the grammar-aware generator of valid programs (tests/run/randprog.py) checked
#      against NumPy, on fresh seeds, through each CPU backend, until the time is up; a
#      mismatch is saved with its seed and the campaign goes on.
# Every finding lands in build-fuzz/findings/ (turn it into a regression in
# tests/fuzz/regressions/ or tests/run/); the script exits 1 when there is any.
# STAGE (optional): "libfuzzer" or "differential" runs that half alone for SECONDS.
# FUZZ_BUILD names the fuzz build's folder (build-fuzz), FUZZ_TDSLC a tdslc for the
# differential half to use as it is (else build/tdslc, built first).
set -eu
SECONDS_TOTAL=${1:-60}
STAGE=${2:-both}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
FINDINGS=$BUILD/findings
mkdir -p "$FINDINGS"
HALF=$SECONDS_TOTAL
[ "$STAGE" = both ] && HALF=$((SECONDS_TOTAL / 2))

if [ "$STAGE" != differential ]; then
  if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
      clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "fuzz: clang with libFuzzer is missing (scripts/deps.sh installs clang): libFuzzer half skipped"
  else
    CC=clang cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDSLC_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
    cmake --build "$BUILD" --target tdsl_fuzz -j "$(nproc)"
    mkdir -p "$BUILD/corpus"
    for f in "$ROOT"/examples/*.tdsl "$ROOT"/tests/golden/*.tdsl "$ROOT"/tests/errors/*.tdsl "$ROOT"/tests/fuzz/regressions/*.tdsl; do
      [ -f "$f" ] && cp "$f" "$BUILD/corpus/seed-$(basename "$f")"
    done
    # and 64 programs of the random generator, which writes the language as it is now
    # (helpers with scalar parameters and defaults, loops, index writes, lists and tuples)
    /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1] + "/tests/run"); from randprog import Program
[open(f"{sys.argv[2]}/seed-random-{s}.tdsl", "w").write(Program(s).build().src + "\n") for s in range(64)]' \
      "$ROOT" "$BUILD/corpus"
    ASAN_OPTIONS=detect_leaks=0 "$BUILD/tdsl_fuzz" "$BUILD/corpus" -dict="$ROOT/tests/fuzz/tdsl.dict" \
      -max_total_time="$HALF" -timeout=120 -report_slow_units=60 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
      -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix="$FINDINGS/" || true
  fi
fi

if [ "$STAGE" != libfuzzer ]; then
  TDSLC=${FUZZ_TDSLC:-}  # (a tdslc to test as it is, say a copy, while build/ changes)
  if [ -z "$TDSLC" ]; then
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$ROOT/build" --target tdslc -j "$(nproc)"
    TDSLC=$ROOT/build/tdslc
  fi
  end=$(($(date +%s) + HALF))
  seed=$(date +%s)
  programs=0
  while [ "$(date +%s)" -lt "$end" ]; do
    for b in c llvm; do
      echo "differential: seeds $seed.. on $b"
      if ! TDSL_BACKEND=$b TDSL_RANDOM_SEED=$seed TDSL_RANDOM_COUNT=50 \
          /usr/bin/python3 "$ROOT/tests/run/test_random.py" "$TDSLC" >"$FINDINGS/run.txt" 2>&1; then
        mv "$FINDINGS/run.txt" "$FINDINGS/differential-$b-seed-$seed.txt"
        grep -v '^ok ' "$FINDINGS/differential-$b-seed-$seed.txt" | head -20
      fi
      programs=$((programs + 50))
    done
    seed=$((seed + 50))
  done
  echo "differential: $programs program runs (each seed on c and llvm), $(ls "$FINDINGS" | grep -c '^differential-') failing batches"
fi
rm -f "$FINDINGS/run.txt"

if [ -n "$(ls -A "$FINDINGS")" ]; then
  echo "fuzz: findings in $FINDINGS:"
  ls "$FINDINGS"
  exit 1
fi
echo "fuzz: no findings"

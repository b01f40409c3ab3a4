#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: lit (dialect, passes, tools,
# frontend, codegen, end-to-end numerics against NumPy references) and the
# unit tests (runtime, kernels, tfc-run) through ctest, after the runtime's
# unit tests under AddressSanitizer + UndefinedBehaviorSanitizer and its parsers
# under libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/build.sh
build_dir=${TFC_BUILD_DIR:-build}
jobs=${TFC_JOBS:-$(nproc)}

echo "== runtime under ASan+UBSan =="
asan_dir=${build_dir}-asan
if [ ! -f "$asan_dir/build.ninja" ]; then
  cmake -S runtime -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTFC_SANITIZE=ON
fi
cmake --build "$asan_dir" -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan_dir" --output-on-failure

echo "== runtime parsers under libFuzzer (clang; ${TFC_FUZZ_SECONDS:-20} s per target) =="
# Every parser of untrusted input (safetensors, .npy, token files, tokenizer files, the
# artifact's tables) fuzzed for a bounded time from its committed corpus; each test prints
# its seed (replay with TFC_FUZZ_SEED). See docs/reliability.md.
fuzz_dir=${build_dir}-fuzz
if [ ! -f "$fuzz_dir/build.ninja" ]; then
  cmake -S runtime -B "$fuzz_dir" -G Ninja -DTFC_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_COMPILER=clang -DTFC_RUNTIME_TESTS=OFF -DTFC_RUNTIME_BUILD_TFC_RUN=OFF \
    -DTFC_FUZZ_SECONDS="${TFC_FUZZ_SECONDS:-20}"
fi
cmake --build "$fuzz_dir" -j "$jobs"
ctest --test-dir "$fuzz_dir" --output-on-failure -j "$jobs"

echo "== the whole suite =="
log="$build_dir/ctest.log"
set +e
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "== lit =="
grep -E "Total Discovered Tests|^  (Passed|Failed|Unsupported|Unresolved)" \
  "$build_dir/Testing/Temporary/LastTest.log" || true
echo "tfc: install + build + tests took $(( $(date +%s) - start )) s"
grep -E "tests passed|tests failed" "$log" | tail -n 1
exit "$rc"

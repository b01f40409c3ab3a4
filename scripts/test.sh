#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: lit (dialect, passes, tools,
# frontend) and the runtime's unit tests through ctest, then the runtime's unit
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/build.sh
build_dir=${TFC_BUILD_DIR:-build}

echo "== runtime under ASan+UBSan =="
asan_dir=${build_dir}-asan
if [ ! -f "$asan_dir/build.ninja" ]; then
  cmake -S runtime -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTFC_SANITIZE=ON
fi
cmake --build "$asan_dir" -j "${TFC_JOBS:-$(nproc)}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan_dir" --output-on-failure

echo "== the whole suite =="
ctest --test-dir "$build_dir" --output-on-failure -j 2
echo "tfc: install + build + tests took $(( $(date +%s) - start )) s"

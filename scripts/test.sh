#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: lit (dialect, passes, tools,
# frontend, codegen, end-to-end numerics against NumPy references) and the
# unit tests (runtime, kernels, tfc-run) through ctest, then the Python bindings' pytest
# tests (python/), after the runtime's
# unit tests under AddressSanitizer + UndefinedBehaviorSanitizer and its parsers
# under libFuzzer, and the CPU kernels' unit tests under ASan + UBSan. lit runs the MLIR
# mutation fuzzer (test/fuzz/mlir_mutate.py) over the release tools.
#   TFC_ASAN_COMPILER=1  also build the compiler tools with ASan and run 600 more mutants
#                      over them (an estimated 15 to 20 more minutes on 2 cores; CI does not: its run
#                      must end within 90 minutes; see docs/reliability.md)
#   TFC_FUZZ_MUTANTS   mutants for that ASan fuzz run (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Each stage opens with "== name ==" and closes with "tfc: name took N s (T s in all)":
# CI stops the run at 90 minutes, and these lines say where its time went.
stage_name="" stage_t0=$start
stage() {
  local now
  now=$(date +%s)
  if [ -n "$stage_name" ]; then
    echo "tfc: $stage_name took $((now - stage_t0)) s ($((now - start)) s in all)"
  fi
  stage_name=$1 stage_t0=$now
  if [ -n "$1" ]; then echo "== $1 =="; fi
}
stage "install and build"
bash scripts/build.sh
build_dir=${TFC_BUILD_DIR:-build}
jobs=${TFC_JOBS:-$(nproc)}

stage "runtime under ASan+UBSan"
asan_dir=${build_dir}-asan
if [ ! -f "$asan_dir/build.ninja" ]; then
  cmake -S runtime -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTFC_SANITIZE=ON
fi
cmake --build "$asan_dir" -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$asan_dir" --output-on-failure

stage "runtime parsers under libFuzzer (clang; ${TFC_FUZZ_SECONDS:-20} s per target)"
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

# The hand-written AVX2/AVX-512 kernels and their tests, alone (no LLVM), with
# the same sanitizers: every ISA the CPU has (test/Kernels counts the others).
stage "CPU kernels under ASan+UBSan"
kernels_asan_dir=${build_dir}-asan-kernels
if [ ! -f "$kernels_asan_dir/build.ninja" ]; then
  # -O1 and line tables only: ASan's usual level, for the library too (TFC_KERNELS_OPT_LEVEL).
  cmake -S codegen/cpu/kernels -B "$kernels_asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTFC_KERNELS_BENCH=OFF -DTFC_KERNELS_OPT_LEVEL=-O1 "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" \
    "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
fi
cmake --build "$kernels_asan_dir" -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$kernels_asan_dir" --output-on-failure

stage "the whole suite"
log="$build_dir/ctest.log"
set +e
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "== lit =="
grep -E "Total Discovered Tests|^  (Passed|Failed|Unsupported|Unresolved)" \
  "$build_dir/Testing/Temporary/LastTest.log" || true
grep -E "tests passed|tests failed" "$log" | tail -n 1

# The Python bindings (python/): built from the runtime's sources into the build folder
# (incremental, ccache), installed into $PYTHON (PEP 668 allowed: CI's Debian Python has no
# venv), then pytest against this build's tools.
stage "Python bindings (pip install ./python, pytest)"
py=${PYTHON:-python3}
case $build_dir in /*) py_build=$build_dir/python ;; *) py_build=$PWD/$build_dir/python ;; esac
set +e
PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore \
  CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
  "$py" -m pip install -q --no-build-isolation -C build-dir="$py_build" ./python &&
  TFC_BUILD_DIR=$build_dir "$py" -m pytest -q python/tests
py_rc=$?
set -e
if [ "$py_rc" != 0 ]; then
  echo "tfc: the Python bindings failed to build or their tests failed"
  rc=1
fi

# The compiler tools built with AddressSanitizer (only tfc, tfc-opt,
# tfc-trace; no runtime), then the MLIR mutation fuzzer over them: a memory
# error on bad input that happens not to crash a release build shows here.
# libLLVM/libMLIR are Debian's, not instrumented: ASan sees tfc's own code
# and every malloc/free (the fuzzer also runs under valgrind, see
# docs/reliability.md).
stage "compiler under ASan + MLIR mutation fuzzer"
if [ "${TFC_ASAN_COMPILER:-0}" != 1 ]; then
  echo "SKIPPED: the compiler's ASan build and its fuzz run (TFC_ASAN_COMPILER=1 runs them)"
else
  t0=$(date +%s)
  compiler_asan_dir=${build_dir}-asan-compiler
  if [ ! -f "$compiler_asan_dir/build.ninja" ]; then
    # -O1: ASan's usual level, and a faster build than the release -O3.
    cmake -S . -B "$compiler_asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTFC_BUILD_RUNTIME=OFF -DTFC_KERNELS_TESTS=OFF -DTFC_KERNELS_BENCH=OFF \
      "-DCMAKE_CXX_FLAGS=-fsanitize=address -fno-omit-frame-pointer" \
      "-DCMAKE_CXX_FLAGS_RELEASE=-O1" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address" \
      "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address"
  fi
  cmake --build "$compiler_asan_dir" -j "$jobs" --target tfc tfc-opt tfc-trace
  t1=$(date +%s)
  echo "tfc: compiler ASan build took $(( t1 - t0 )) s"
  set +e
  TFC_FUZZ_MUTANTS=${TFC_FUZZ_MUTANTS:-600} TFC_FUZZ_JOBS=$jobs \
    python3 test/fuzz/mlir_mutate.py --bin-dir "$compiler_asan_dir/bin" \
      --work-dir "$compiler_asan_dir/fuzz"
  fuzz_rc=$?
  set -e
  echo "tfc: ASan fuzz run took $(( $(date +%s) - t1 )) s" \
       "(failing mutants, if any: $compiler_asan_dir/fuzz/failures)"
  if [ "$fuzz_rc" != 0 ]; then
    echo "tfc: the MLIR mutation fuzzer failed on the ASan compiler"
    rc=1
  fi
fi
stage ""
# The last line is ctest's verdict on the whole suite (CI reads it).
grep -E "tests passed|tests failed" "$log" | tail -n 1 || true
exit "$rc"

#!/bin/sh
# Runs one libFuzzer target for a bounded time, as the fuzz-* ctest tests do:
#   run_fuzzer.sh FUZZER CORPUS_DIR WORK_DIR SECONDS [DICT]
# The committed corpus (CORPUS_DIR) is replayed first and never written: new inputs go to
# WORK_DIR/new, crashes to WORK_DIR/crash-*. The seed is TFC_FUZZ_SEED when set, else
# drawn; it is printed so that a failure can be replayed with the same inputs.
set -eu
fuzzer=$1 corpus=$2 work=$3 seconds=$4 dict=${5:-}
seed=${TFC_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
name=$(basename "$fuzzer")
rm -rf "$work"
mkdir -p "$work/new"
echo "$name: seed $seed, ${seconds}s, corpus $corpus (replay: TFC_FUZZ_SEED=$seed ctest -R $name)"
set -- -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/"
if [ -n "$dict" ]; then set -- "$@" -dict="$dict"; fi
rc=0
"$fuzzer" "$@" "$work/new" "$corpus" || rc=$?
if [ "$rc" -eq 0 ]; then exit 0; fi
echo "$name: FAILED with seed $seed (exit $rc). The input is in $work/:" >&2
ls "$work" >&2
echo "Reproduce: $fuzzer $work/<crash-file>; after the fix, add it to $corpus/." >&2
exit 1

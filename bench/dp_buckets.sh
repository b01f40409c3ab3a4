#!/usr/bin/env bash
# Data parallel with gradient buckets (issue 12): per train_step with --dp=2 under mpirun,
# each rank on one thread, the time in compute and in communication (exposed: the caller
# blocked in a collective or a bucket's wait; overlapped: the rest of the transport's time,
# hidden behind the backward), and the bytes each collective moves, for one blocking
# all-reduce per gradient (--dp-bucket-mb=-1, what --dp did before buckets), a bucket per
# gradient (0), 1 MB buckets, the default 25 MB, and 25 MB waited for at once
# (--dp-overlap=false). Models: a small gpt2 (4 layers, C=128, B=4 per rank, T=64) and
# gpt2-124m (B=1 per rank, T=64). Figures in docs/performance.md.
#   [REPEAT=10] [MODELS="small 124m"] bench/dp_buckets.sh [BIN_DIR (build/bin)] [WORK_DIR]
# Prints per model and variant, rank 0's and rank 1's: the median step (tfc-run profile), the
# time in the collective kernels (tfc.all_reduce, or the bucket waits: exposed) and in the
# bucket starts (copying the gradients into the bucket), and TFC_COMM_STATS's totals.
set -euo pipefail
bin=$(realpath "${1:-build/bin}")
work=${2:-$(mktemp -d -t tfc-dp-XXXXXX)}
repeat=${REPEAT:-10}
mkdir -p "$work" && cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TFC_COMM_STATS=1
for model in ${MODELS:-small 124m}; do
  if [ "$model" = small ]; then
    "$bin/tfc-trace" gpt2 --set n_layer=4 --set n_head=4 --set n_embd=128 --set batch=4 \
        --set seq=64 -o $model.mlir
    reps=$repeat
  else
    "$bin/tfc-trace" gpt2 --set preset=gpt2-124m --set batch=1 --set seq=64 -o $model.mlir
    reps=$(( repeat < 3 ? repeat : 3 ))
  fi
  for variant in "-1" "0" "1" "25" "25 nooverlap"; do
    set -- $variant
    mb=$1 && flags=(--dp-bucket-mb=$mb) && tag=$model-mb$mb
    [ $# -gt 1 ] && flags+=(--dp-overlap=false) && tag=$tag-nooverlap
    "$bin/tfc" $model.mlir --optimizer=adamw --dp=2 "${flags[@]}" -o $tag.so \
        --report=$tag.json
    link=$(python3 -c "import json; print(json.load(open('$tag.json'))['entries']['train_step']['link_bytes'])" 2>/dev/null || echo "?")
    mpirun --oversubscribe -np 2 --tag-output "$bin/tfc-run" $tag.so profile train_step \
        --repeat $reps --threads 1 > $tag.out 2>&1
    echo "== $model ${flags[*]}: train_step link_bytes $link (--report)"
    grep -E "call: median|(memory|compute|overhead) +all_reduce(_wait|_start)?$|comm stats" $tag.out | sed 's/^/  /'
  done
done

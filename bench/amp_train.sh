#!/usr/bin/env bash
# Mixed-precision training on the CPU (issue 10): the README quick-start GPT-2 (byte-level,
# 4 layers, n_embd 128, batch 8 x seq 64) trained --steps (300) steps in f32, bf16 and f16
# from the same init and data (GPL-3 text, bytes); prints per precision the final eval loss,
# the mean loss of the last 50 steps, its ratio to f32's, and the training speed.
# A fourth run, f32 with another sampler seed (--seed 2: other batches), shows how far two
# f32 runs land apart anyway. Figures in docs/performance.md. CI runs a smaller version
# (test/e2e/amp.test).
#   [LR=3e-3] bench/amp_train.sh [BIN_DIR (build/bin)] [STEPS (300)] [WORK_DIR (a temporary one)]
set -euo pipefail
bin=$(realpath "${1:-build/bin}")
steps=${2:-300}
work=${3:-$(mktemp -d -t tfc-amp-XXXXXX)}
mkdir -p "$work" && cd "$work"
"$bin/tfc-trace" gpt2 --set vocab_size=256 --set n_layer=4 --set n_head=4 --set n_embd=128 \
    --set n_ctx=256 --set batch=8 --set seq=64 -o gpt2.mlir
"$bin/tfc-run" tokenize --tokenizer bytes /usr/share/common-licenses/GPL-3 -o train.bin \
    --val-fraction 0.1 > /dev/null
lr=${LR:-3e-3}
rm -f times.txt
for p in f32 bf16 f16 f32-seed2; do
  precision=${p%-seed2}
  seed=1337 && [ "$p" = f32-seed2 ] && seed=2
  [ -f gpt2_$precision.so ] || "$bin/tfc" gpt2.mlir --optimizer=adamw --precision=$precision \
      -o gpt2_$precision.so
  start=$(date +%s.%N)
  "$bin/tfc-run" gpt2_$precision.so train --init-seed 0 --seed $seed --data train.bin \
      --eval-data val.bin --steps "$steps" --eval-every "$steps" --eval-batches 20 --lr "$lr" \
      --warmup 20 --schedule cosine --min-lr "$(python3 -c "print($lr / 10)")" --threads 2 \
      --log $p.csv --save $p.safetensors 2> $p.err > /dev/null
  end=$(date +%s.%N)
  echo "$p $start $end" >> times.txt
done
python3 - "$steps" <<'PY'
import sys
steps = int(sys.argv[1])
times = {l.split()[0]: float(l.split()[2]) - float(l.split()[1]) for l in open("times.txt")}
res = {}
for p in ("f32", "bf16", "f16", "f32-seed2"):
    rows = [l.split(",") for l in open(f"{p}.csv").read().splitlines()[1:]]
    losses = [float(r[1]) for r in rows]
    res[p] = (float(rows[-1][5]), sum(losses[-50:]) / 50)
    skipped = sum("f16 gradient overflow" in l for l in open(f"{p}.err"))
    print(f"{p:5s} eval {res[p][0]:.4f} ({res[p][0] / res['f32'][0] - 1:+.2%})  last-50 mean "
          f"{res[p][1]:.4f} ({res[p][1] / res['f32'][1] - 1:+.2%})  {steps} steps in "
          f"{times[p]:.1f} s = {steps * 512 / times[p]:.0f} tok/s "
          f"({times['f32'] / times[p]:.2f}x f32's speed)"
          + (f"; {skipped} steps skipped (f16 overflow)" if p == "f16" else ""))
PY

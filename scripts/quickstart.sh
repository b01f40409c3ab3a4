#!/usr/bin/env bash
# The main job, end to end on text, in about a minute after the build: trace a small
# byte-level GPT-2, compile it with an AdamW training step, turn a text file into tokens,
# train on it, and generate text from the trained weights with the same artifact.
#
# The text is the GNU GPL version 3, which every Debian system ships
# (/usr/share/common-licenses/GPL-3; this repository's README.md where it is missing), or
# the file given as the first argument. Byte-level: every byte is a token, so no tokenizer
# files are needed.
#   TFC_BUILD_DIR   build directory (default: build)
#   TFC_STEPS       training steps (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${TFC_QUICKSTART_NO_BUILD:-}" ] || bash scripts/build.sh >/dev/null
bin=${TFC_BUILD_DIR:-build}/bin
out=${TFC_BUILD_DIR:-build}/quickstart
text=${1:-/usr/share/common-licenses/GPL-3}
[ -f "$text" ] || text=README.md
mkdir -p "$out"
set -x
"$bin/tfc-trace" gpt2 --set vocab_size=256 --set n_layer=4 --set n_head=4 --set n_embd=128 \
  --set n_ctx=256 --set batch=8 --set seq=64 -o "$out/gpt2.mlir"
"$bin/tfc" "$out/gpt2.mlir" --optimizer=adamw -o "$out/gpt2.so"
"$bin/tfc-run" tokenize --tokenizer bytes "$text" -o "$out/train.bin" --val-fraction 0.1
"$bin/tfc-run" "$out/gpt2.so" train --init-seed 0 --data "$out/train.bin" \
  --eval-data "$out/val.bin" --steps "${TFC_STEPS:-600}" --lr 3e-3 --warmup 20 \
  --schedule cosine --min-lr 3e-4 --save "$out/ckpt.safetensors" --log "$out/train.csv" \
  --plot "$out/loss.png"
"$bin/tfc-run" "$out/gpt2.so" generate --weights "$out/ckpt.safetensors" --tokenizer bytes \
  --prompt "This License " --max-new-tokens 200 --temperature 0.8 --top-k 40 --seed 1

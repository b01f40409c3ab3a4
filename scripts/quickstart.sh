#!/usr/bin/env bash
# The main job on the embedded default model: install, build, then trace a
# small GPT-2 to MLIR, compile it to a shared object with tfc, draw fresh
# weights and generate tokens with the C++ runner (KV cache, top-k sampling
# with a fixed seed: the same tokens every run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
bin=${TFC_BUILD_DIR:-build}/bin
out=${TFC_BUILD_DIR:-build}/quickstart
mkdir -p "$out"
set -x
"$bin/tfc-trace" gpt2 -o "$out/gpt2.mlir"
"$bin/tfc" "$out/gpt2.mlir" -o "$out/gpt2.so" --summary
"$bin/tfc-run" "$out/gpt2.so" info
"$bin/tfc-run" "$out/gpt2.so" init --seed 42 -o "$out/gpt2.safetensors"
"$bin/tfc-run" "$out/gpt2.so" generate --weights "$out/gpt2.safetensors" \
  --prompt-tokens "1 2 3 4 5 6 7 8" --max-new-tokens 24 --temperature 0.9 --top-k 40 --seed 7

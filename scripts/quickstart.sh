#!/usr/bin/env bash
# The main job on the embedded default model: install, build, trace a small
# GPT-2 to MLIR, compile it with tfc and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
bin=${TFC_BUILD_DIR:-build}/bin
out=${TFC_BUILD_DIR:-build}/quickstart
mkdir -p "$out"
set -x
"$bin/tfc-trace" gpt2 -o "$out/gpt2.mlir"
"$bin/tfc" "$out/gpt2.mlir" -o "$out/gpt2.opt.mlir" --summary

#!/usr/bin/env bash
# Installs what tfc needs (idempotent), configures once and builds everything.
#   TFC_BUILD_DIR   build directory (default: build)
#   TFC_JOBS        parallel jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

build_dir=${TFC_BUILD_DIR:-build}
jobs=${TFC_JOBS:-$(nproc)}
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
echo "tfc: building in $build_dir with $jobs jobs"
cmake --build "$build_dir" -j "$jobs"

#!/usr/bin/env bash
# tfc's CUDA target on a real GPU, in one command there after one command here.
#
# Here, where tfc is built (LLVM/MLIR, NVRTC; no GPU needed):
#   scripts/gpu-check.sh prepare DIR [--cuda-arch sm_90]
# writes DIR (well under 60 MB): a self-contained tfc-run with the libraries it
# needs, the CPU and CUDA artifacts of gpt2, llama and encdec (small), gpt2-124m
# for CUDA (train_step at B=8 T=1024 with AdamW; generation), the checking
# scripts, and this script. Weights are not carried: `tfc-run init` draws them
# there.
#
# There, on the machine with the GPU (CUDA driver, Python with NumPy and
# PyTorch; no LLVM, no network):
#   DIR/gpu-check.sh run [--device N]
# 1. correctness: every model and entry on the GPU against the CPU artifact on
#    the same inputs (test/e2e/cuda/check_cuda_artifacts.py --run): forward,
#    loss, loss_grad within 1e-4, greedy and seeded generation token for token,
#    three AdamW steps within 1e-5, a bad token id refused (products on
#    cuBLASLt, the default where it loads); gpt2 and gpt2-bf16 again with the
#    products on tfc's own kernels (TFC_CUDA_PRODUCTS=kernels); then gpt2 and
#    gpt2-bf16 again under compute-sanitizer memcheck and racecheck;
# 2. speed: gpt2-124m train_step (B=8, T=1024) and batch-1 decode, next to
#    PyTorch eager and torch.compile on the same GPU in the same run (f32,
#    f32 with TF32 allowed, and PyTorch's bf16 autocast), and tfc's --cuda-tf32
#    and bf16 artifacts (TF32 train_step; mixed-precision train_step,
#    bf16-weight generation), and batch-1 bf16 decode of a LLaMA of
#    TinyLlama-1.1B's shape (weights drawn there), as one table with tokens/s,
#    MFU and the fraction of the HBM-bandwidth floor;
# 3. gpt2-124m's products (bf16, f32, f32 through TF32; on cuBLASLt and on tfc's kernels)
#    and causal attention forward + backward (bf16) alone, against torch.matmul and
#    F.scaled_dot_product_attention on the same shapes (bench/gpu_kernels.py: tfc-run
#    profile's kernel times, CUDA events);
# 4. where the time goes: `tfc-run profile` of train_step and decode (f32).
# On one H200 (2026-12-04) steps 1 and 2 took 321 s with TFC_TRAIN_REPEAT=3,
# torch.compile's two compiles included; tfc's kernels were then all one
# thread an item, and its f32 train_step took 76.7 s a call (so a warm-up and
# one call took 155 s of the 240 s limit). Products, attention (forward and
# backward), decode attention and the row kernels are tiled since, but not yet
# timed on a GPU: on a first run set TFC_TRAIN_REPEAT=1 and ask for 600 s.
# Put the table, with the date, in docs/performance.md.
#
# Not run here (this check has one GPU, and NCCL refuses two ranks of one
# communicator on one GPU): data-parallel training over NCCL on a machine with
# two GPUs, Open MPI and NCCL 2.10+ (libnccl.so.2 on the loader's path, or
# TFC_NCCL_LIBRARY=/path/libnccl.so.2), each rank on the GPU of its node-local
# rank; rank 0 prints "tfc: collectives on the GPUs over NCCL ...", and the
# weights should equal the CPU --dp=2 artifact's (check_data_parallel_cuda.py):
#   tfc-trace gpt2 --set batch=4 -o m.mlir
#   tfc m.mlir --optimizer=adamw --dp=2 --target=cuda -o m.so
#   TFC_COMM_DEVICE=nccl TFC_COMM_STATS=1 mpirun -np 2 -x TFC_COMM_DEVICE \
#     -x TFC_COMM_STATS tfc-run m.so train --data train.bin --init-seed 0 \
#     --steps 20 --save dp2.safetensors
#
# Environment: TFC_GPU_PEAK_TFLOPS (default 67, the H200's FP32 peak without
# tensor cores), TFC_GPU_BANDWIDTH_GBS (default 4800, its HBM3e), TFC_TRAIN_REPEAT
# (default 5).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}

[[ $# -ge 1 ]] || usage
command="$1"
shift

prepare() {
  local dir="" arch="sm_90"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --cuda-arch) arch="$2"; shift 2 ;;
      -h|--help) usage ;;
      *) [[ -z "$dir" ]] || usage; dir="$1"; shift ;;
    esac
  done
  [[ -n "$dir" ]] || usage
  local root bin
  root="$(cd "$(dirname "$0")/.." && pwd)"
  bin="${TFC_BUILD_DIR:-$root/build}/bin"
  for tool in tfc tfc-trace tfc-run; do
    [[ -x "$bin/$tool" ]] || { echo "gpu-check: $bin/$tool is missing (scripts/build.sh first)" >&2; exit 1; }
  done
  mkdir -p "$dir/bin" "$dir/lib" "$dir/scripts" "$dir/small" "$dir/gpt2-124m"
  cp "$bin/tfc-run" "$dir/bin/"
  # What tfc-run links beyond glibc and libstdc++, which the GPU machine may lack.
  for lib in $(ldd "$bin/tfc-run" | awk '/libpng|libz\.so/ {print $3}'); do
    cp -L "$lib" "$dir/lib/"
  done
  cp "$root/test/e2e/cuda/check_cuda_artifacts.py" "$root/test/e2e/harness.py" \
     "$root/bench/peer_torch.py" "$root/bench/f32_weights.py" "$root/bench/gpu_kernels.py" \
     "$dir/scripts/"
  cp "$0" "$dir/gpu-check.sh"
  # A portable host CPU: the artifacts' host code runs on the GPU machine's CPU.
  export TFC_OPTIONS="--cpu=x86-64-v3"
  echo "gpu-check: compiling the small models for the CPU and CUDA $arch"
  python3 "$dir/scripts/check_cuda_artifacts.py" --bin-dir "$bin" --build "$dir/small" \
    --cuda-arch "$arch" --seed 0 >/dev/null
  echo "gpu-check: compiling gpt2-124m for CUDA $arch (train_step at B=8 T=1024)"
  "$bin/tfc-trace" gpt2 --set preset=gpt2-124m --set batch=8 --set seq=1024 \
    -o "$dir/gpt2-124m/gpt2.mlir"
  "$bin/tfc" "$dir/gpt2-124m/gpt2.mlir" --optimizer=adamw --target=cuda \
    --cuda-arch="$arch" --cpu=x86-64-v3 -o "$dir/gpt2-124m/gpt2-cuda.so"
  echo "gpu-check: compiling gpt2-124m for CUDA $arch with --cuda-tf32 (train_step)"
  "$bin/tfc" "$dir/gpt2-124m/gpt2.mlir" --optimizer=adamw --cuda-tf32 --target=cuda \
    --cuda-arch="$arch" --cpu=x86-64-v3 -o "$dir/gpt2-124m/gpt2-cuda-tf32.so"
  echo "gpu-check: compiling gpt2-124m for CUDA $arch in bf16 (mixed-precision train_step; generation)"
  "$bin/tfc" "$dir/gpt2-124m/gpt2.mlir" --optimizer=adamw --precision=bf16 --target=cuda \
    --cuda-arch="$arch" --cpu=x86-64-v3 -o "$dir/gpt2-124m/gpt2-cuda-bf16-train.so"
  "$bin/tfc" "$dir/gpt2-124m/gpt2.mlir" --precision=bf16 --target=cuda \
    --cuda-arch="$arch" --cpu=x86-64-v3 -o "$dir/gpt2-124m/gpt2-cuda-bf16.so"
  echo "gpu-check: compiling a LLaMA of TinyLlama-1.1B's shape for CUDA $arch in bf16 (generation)"
  mkdir -p "$dir/tinyllama"
  "$bin/tfc-trace" llama --set n_layer=22 --set n_head=32 --set n_kv_head=4 --set dim=2048 \
    --set hidden_dim=5632 --set vocab_size=32000 --set n_ctx=2048 --set batch=1 --set seq=16 \
    -o "$dir/tinyllama/tl.mlir"
  "$bin/tfc" "$dir/tinyllama/tl.mlir" --precision=bf16 --target=cuda --cuda-arch="$arch" \
    --cpu=x86-64-v3 -o "$dir/tinyllama/tl-bf16.so"
  rm -f "$dir/tinyllama/tl.mlir"
  echo "gpu-check: compiling gpt2-124m's products and attention alone (next to PyTorch's)"
  python3 "$dir/scripts/gpu_kernels.py" prepare --bin-dir "$bin" --out "$dir/kernels" \
    --cuda-arch "$arch" >/dev/null
  rm -f "$dir"/small/*.mlir "$dir/gpt2-124m/gpt2.mlir"
  du -sh "$dir"
  echo "gpu-check: carry $dir to the GPU machine and run: $dir/gpu-check.sh run"
}

# Runs "$@" under a limit of $1 seconds and says how it ended when it did not end well:
# timeout(1) itself is silent both when the limit stops a command and when a signal kills it
# (a run on an H200 printed nothing at all for a train_step that ran past its limit).
limited() {
  local limit="$1" what="$2" rc=0
  shift 2
  timeout "$limit" "$@" || rc=$?
  if ((rc == 124)); then echo "gpu-check: $what: stopped, no result within $limit s" >&2
  elif ((rc > 128)); then echo "gpu-check: $what: killed by signal $((rc - 128))" >&2
  elif ((rc != 0)); then echo "gpu-check: $what: exit status $rc" >&2
  fi
  return $rc
}

run() {
  local device=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --device) device="$2"; shift 2 ;;
      -h|--help) usage ;;
      *) usage ;;
    esac
  done
  local dir
  dir="$(cd "$(dirname "$0")" && pwd)"
  [[ -x "$dir/bin/tfc-run" ]] || { echo "gpu-check: run the DIR/gpu-check.sh that 'prepare' wrote" >&2; exit 1; }
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Global: the EXIT trap reads it after run() returns.
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  date -u +"%Y-%m-%d %H:%M UTC"

  echo "== correctness: the GPU against the CPU artifacts"
  cp -r "$dir/small/." "$work/"
  local status=0
  # Which GPU, and what runs the products (cuBLASLt, or why tfc's kernels do).
  "$dir/bin/tfc-run" "$work/gpt2-cuda.so" profile forward --device "$device" --init-seed 1 \
    --repeat 1 2>&1 | grep -m1 '^device:' || true
  limited 300 "correctness" python3 "$dir/scripts/check_cuda_artifacts.py" --bin-dir "$dir/bin" --run "$work" \
    --device "$device" || status=1

  echo "== correctness: gpt2 and gpt2-bf16 with the products on tfc's kernels"
  limited 150 "correctness (tfc's product kernels)" \
    python3 "$dir/scripts/check_cuda_artifacts.py" --bin-dir "$dir/bin" --run "$work" \
    --device "$device" --models gpt2,gpt2-bf16 --products kernels || status=1

  # The small gpt2 in f32 and bf16 (tiled products, flash attention forward and backward)
  # again under compute-sanitizer: out-of-bounds and misaligned accesses, then shared-memory
  # races.
  if command -v compute-sanitizer >/dev/null; then
    local tool
    for tool in memcheck racecheck; do
      echo "== compute-sanitizer $tool: gpt2 and gpt2-bf16"
      limited 240 "compute-sanitizer $tool" python3 "$dir/scripts/check_cuda_artifacts.py" \
        --bin-dir "$dir/bin" --run "$work" --device "$device" --models gpt2,gpt2-bf16 \
        --sanitizer "$tool" || status=1
    done
  else
    echo "gpu-check: SKIPPED compute-sanitizer checks: compute-sanitizer is not on PATH"
  fi

  echo "== speed: gpt2-124m"
  local model="$dir/gpt2-124m/gpt2-cuda.so" tfcrun="$dir/bin/tfc-run"
  "$tfcrun" "$model" init --seed 1 -o "$work/w.safetensors" >/dev/null
  python3 - "$work" <<'EOF'
import sys, numpy as np
rng = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/tokens.npy", rng.integers(0, 50257, (8, 1024)).astype(np.int32))
np.save(f"{sys.argv[1]}/targets.npy", rng.integers(0, 50257, (8, 1024)).astype(np.int32))
EOF
  local repeat="${TFC_TRAIN_REPEAT:-5}"
  local prompt
  prompt="$(python3 -c 'import random; random.seed(0); print(" ".join(str(random.randrange(50257)) for _ in range(128)))')"
  # tfc's f32 artifact, its --cuda-tf32 one (train_step only: a decode step's products are
  # GEMVs either way), then its bf16 ones (mixed-precision train_step; bf16-weight generation).
  local tag train_so gen_so
  for tag in f32 tf32 bf16; do
    case $tag in
      f32) train_so="$model" gen_so="$model" ;;
      tf32) train_so="$dir/gpt2-124m/gpt2-cuda-tf32.so" gen_so="" ;;
      bf16) train_so="$dir/gpt2-124m/gpt2-cuda-bf16-train.so" gen_so="$dir/gpt2-124m/gpt2-cuda-bf16.so" ;;
    esac
    [[ -f "$train_so" ]] || continue
    echo "-- tfc $tag train_step"
    limited 240 "tfc $tag train_step" "$tfcrun" "$train_so" call train_step --device "$device" --weights "$work/w.safetensors" \
      --in tokens="$work/tokens.npy" --in targets="$work/targets.npy" --in lr=3e-4 \
      --in min_lr=3e-5 --in warmup=0 --in total_steps=1000 --in schedule=0 \
      --in weight_decay=0.1 --in grad_clip=1 --in beta1=0.9 --in beta2=0.95 --in eps=1e-8 \
      --out-dir "$work/out-$tag" --repeat "$repeat" 2>&1 | tee "$work/train-$tag.txt" || status=1
    [[ -n $gen_so ]] || continue
    echo "-- tfc $tag generate"
    # A bf16 generation artifact stores its weights in bf16: it draws its own.
    [[ $tag == f32 ]] || "$tfcrun" "$gen_so" init --seed 1 -o "$work/w-$tag.safetensors" >/dev/null
    local gen_weights="$work/w.safetensors"
    [[ $tag == f32 ]] || gen_weights="$work/w-$tag.safetensors"
    limited 120 "tfc $tag generate" "$tfcrun" "$gen_so" generate --device "$device" --weights "$gen_weights" \
      --prompt-tokens "$prompt" --max-new-tokens 64 2>&1 >/dev/null | tee "$work/generate-$tag.txt" \
      || status=1
  done
  # TinyLlama-1.1B's shape in bf16 (weights drawn here: 2.2 GB), batch-1 decode against the
  # HBM floor of reading its weights once a token.
  echo "-- tfc bf16 generate, TinyLlama-1.1B's shape"
  local tl="$dir/tinyllama/tl-bf16.so" tl_prompt
  tl_prompt="$(python3 -c 'import random; random.seed(0); print(" ".join(str(random.randrange(32000)) for _ in range(128)))')"
  if limited 120 "TinyLlama init" "$tfcrun" "$tl" init --seed 1 -o "$work/tl.safetensors" >/dev/null; then
    limited 120 "TinyLlama generate" "$tfcrun" "$tl" generate --device "$device" --weights "$work/tl.safetensors" \
      --prompt-tokens "$tl_prompt" --max-new-tokens 64 2>&1 >/dev/null | tee "$work/generate-tinyllama.txt" \
      || status=1
    rm -f "$work/tl.safetensors"
  else
    status=1
  fi
  for flags in "" "--tf32" "--compile" "--bf16" "--compile --bf16"; do
    # shellcheck disable=SC2086
    limited 100 "PyTorch train $flags" python3 "$dir/scripts/peer_torch.py" train --device cuda --weights "$work/w.safetensors" \
      --batch 8 --seq 1024 --repeat "$repeat" $flags | tee -a "$work/peers.jsonl" || true
  done
  limited 60 "PyTorch decode" python3 "$dir/scripts/peer_torch.py" decode --device cuda --weights "$work/w.safetensors" \
    --prompt 128 --new 64 | tee -a "$work/peers.jsonl" || true

  python3 - "$work" <<'EOF'
import json, os, re, sys
work = sys.argv[1]
peak = float(os.environ.get("TFC_GPU_PEAK_TFLOPS", "67")) * 1e12
bandwidth = float(os.environ.get("TFC_GPU_BANDWIDTH_GBS", "4800")) * 1e9
params = 124_439_808
tokens = 8 * 1024
flops_per_token = 6 * params + 6 * 12 * 1024 * 768  # weights, plus attention (nanoGPT)
floor_tok_s = bandwidth / (params * 4)               # batch-1 decode reads every f32 weight

def row(what, who, ms=None, tok_s=None, device_mb=None):
    memory = f"{device_mb:,.0f} MiB" if device_mb else ""
    if ms is not None:
        tok_s = tokens / (ms / 1e3)
        mfu = tok_s * flops_per_token / peak
        return f"| {what} | {who} | {ms:.1f} ms | {tok_s:,.0f} | {mfu:.1%} | | {memory} |"
    return f"| {what} | {who} | | {tok_s:,.1f} | | {tok_s / floor_tok_s:.1%} | |"

rows = ["| figure | who | time | tokens/s | MFU (FP32 peak) | of the HBM floor | device memory |",
        "|---|---|---|---|---|---|---|"]
for tag in ("f32", "tf32", "bf16"):
    try:
        text = open(f"{work}/train-{tag}.txt").read()
        m = re.search(r"median ([0-9.]+) ms", text)
        memory = re.search(r"device memory ([0-9.]+) MiB", text)
        if m:
            rows.append(row("train_step B=8 T=1024", f"tfc {tag}", ms=float(m.group(1)),
                            device_mb=float(memory.group(1)) if memory else None))
        if tag == "tf32":
            continue
        text = open(f"{work}/generate-{tag}.txt").read()
        m = re.search(r"decode\s+(\d+) calls\s+in\s+([0-9.]+) ms", text)
        if m:
            rows.append(row("decode, batch 1", f"tfc {tag}",
                            tok_s=int(m.group(1)) / (float(m.group(2)) / 1e3)))
    except OSError:
        pass
# TinyLlama-1.1B's shape: a decode step reads every bf16 weight but the embedding's rows.
tl_bytes = (1_100_048_384 - 32000 * 2048) * 2
try:
    m = re.search(r"decode\s+(\d+) calls\s+in\s+([0-9.]+) ms",
                  open(f"{work}/generate-tinyllama.txt").read())
    if m:
        tok_s = int(m.group(1)) / (float(m.group(2)) / 1e3)
        rows.append(f"| decode, batch 1, TinyLlama-1.1B shape | tfc bf16 | | {tok_s:,.1f} | | "
                    f"{tok_s / (bandwidth / tl_bytes):.1%} |")
except OSError:
    pass
for line in open(f"{work}/peers.jsonl"):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if "ms" in r:
        rows.append(row("train_step B=8 T=1024", r["peer"], ms=r["ms"],
                        device_mb=r.get("device_mb")))
    elif "decode_tok_s" in r:
        rows.append(row("decode, batch 1", r["peer"], tok_s=r["decode_tok_s"]))
print("\n".join(rows))
print(f"\nMFU: {flops_per_token / 1e9:.2f} GFLOP per token over {peak / 1e12:.0f} TFLOPS; "
      f"decode floor: {floor_tok_s:,.0f} tokens/s ({params * 4 / 1e6:.0f} MB of f32 weights at "
      f"{bandwidth / 1e9:.0f} GB/s; bf16 rows are measured against the same f32 floor).")
print("Device memory: tfc's allocations (tfc_context_device_bytes: parameters, state, arena, "
      "buffers, cuBLASLt's workspace) and torch.cuda.max_memory_allocated; neither counts the "
      "CUDA context.")
EOF
  echo "== products and attention alone, gpt2-124m's shapes, next to torch.matmul and SDPA"
  limited 240 "kernels" python3 "$dir/scripts/gpu_kernels.py" run --dir "$dir/kernels" \
    --tfc-run "$tfcrun" --device "$device" || status=1

  echo "== where the time goes: tfc-run profile (f32), the 20 slowest kernels"
  local peak_gflops=$(( ${TFC_GPU_PEAK_TFLOPS:-67} * 1000 )) bandwidth="${TFC_GPU_BANDWIDTH_GBS:-4800}"
  limited 120 "profile train_step" "$tfcrun" "$model" profile train_step --device "$device" --weights "$work/w.safetensors" \
    --in tokens="$work/tokens.npy" --in targets="$work/targets.npy" --repeat 2 --warmup 1 --top 20 \
    --peak-gflops "$peak_gflops" --bandwidth-gbs "$bandwidth" || status=1
  limited 60 "profile decode" "$tfcrun" "$model" profile decode --device "$device" --weights "$work/w.safetensors" \
    --repeat 20 --top 20 --peak-gflops "$peak_gflops" --bandwidth-gbs "$bandwidth" || status=1
  [[ $status -eq 0 ]] && echo "gpu-check: passed" || echo "gpu-check: FAILED (see above)"
  return $status
}

case "$command" in
  prepare) prepare "$@" ;;
  run) run "$@" ;;
  -h|--help|help) usage ;;
  *) usage ;;
esac

#!/usr/bin/env python3
"""The deterministic acceptance figures of the -O2 graph optimizations, from
`tfc --report` (compile only; nothing runs):

  gpt2-124m train_step B=4 T=64: bytes moved by non-matmul kernels at least 2x
      lower with every optimization on than with all off, and fewer kernels;
  gpt2-124m train_step B=8 T=1024: the planned arena within 1.10x of its lower
      bound with the optimizations off, on, and with a remat budget; with remat
      on, saved bytes below the no-remat figure; with the budget (half of it),
      at least 2x lower for at most 10% more FLOPs;
  attention at T=1024 (bench/graph_opts.py's module): the fused kernel moves
      exactly Q, K, V and O (O(T d)), the unfused sequence at least 10x more.

Prints each figure; the last line is `N passed, M failed`.

  check_graph_opts.py --bin-dir build/bin --work-dir DIR --src-dir SRC
"""
import argparse
import json
import os
import subprocess
import sys

TOOL_TIMEOUT_S = 900


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--src-dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    sys.path.insert(0, os.path.join(a.src_dir, "bench"))
    import graph_opts  # the attention module the benchmark times

    def tool(name):
        return os.path.join(os.path.abspath(a.bin_dir), name)

    def run(args):
        # A compile of gpt2-124m's train_step takes ~1 min; a hung tfc must
        # not stall CI.
        try:
            p = subprocess.run(args, cwd=a.work_dir, capture_output=True, text=True,
                               timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            sys.exit(f"error: timed out after {TOOL_TIMEOUT_S} s: {' '.join(args)}")
        if p.returncode != 0:
            sys.exit(f"error: {' '.join(args)} failed:\n{p.stderr[-3000:]}")

    def report(mlir, entry, flags, name):
        path = os.path.join(a.work_dir, name + ".json")
        run([tool("tfc"), mlir, "--compile-to=kernels", "--emit=mlir", "-o", "/dev/null",
             f"--report={path}"] + flags)
        with open(path) as f:
            return json.load(f)["entries"][entry]

    results = []

    def check(name, ok, detail):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)

    off = ["--no-fuse", "--no-remat", "--no-schedule"]
    for b, t in ((4, 64), (8, 1024)):
        run([tool("tfc-trace"), "gpt2", "--set", "preset=gpt2-124m", "--set", f"batch={b}",
             "--set", f"seq={t}", "-o", f"g{b}x{t}.mlir"])

    none = report("g4x64.mlir", "train_step", ["--optimizer=adamw"] + off, "small-off")
    on = report("g4x64.mlir", "train_step", ["--optimizer=adamw"], "small-on")
    ratio = none["bytes_moved_other"] / on["bytes_moved_other"]
    check("B=4 T=64 non-matmul bytes", ratio >= 2.0,
          f"{none['bytes_moved_other']} -> {on['bytes_moved_other']} ({ratio:.2f}x lower)")
    check("B=4 T=64 kernels", on["kernels"] < none["kernels"],
          f"{none['kernels']} -> {on['kernels']}")

    big = {}
    for name, flags in (("off", off), ("on", []), ("budget", None)):
        if flags is None:
            budget = big["on"]["remat"]["saved_bytes_before"] // 2
            flags = [f"--remat-budget={budget}"]
        big[name] = r = report("g8x1024.mlir", "train_step", ["--optimizer=adamw"] + flags,
                               "big-" + name)
        bound = r["arena_bytes"] / r["live_bound_bytes"]
        check(f"B=8 T=1024 arena vs lower bound ({name})", bound <= 1.10,
              f"{r['arena_bytes']} / {r['live_bound_bytes']} = {bound:.3f}")
    remat = big["on"]["remat"]
    check("B=8 T=1024 remat saves bytes", remat["saved_bytes"] < remat["saved_bytes_before"],
          f"{remat['saved_bytes_before']} -> {remat['saved_bytes']}")
    budget = big["budget"]["remat"]
    saved = budget["saved_bytes_before"] / budget["saved_bytes"]
    extra = big["budget"]["flops"] / big["off"]["flops"] - 1
    check("B=8 T=1024 remat with a budget of half", saved >= 2.0 and extra <= 0.10,
          f"saved {saved:.2f}x lower for {100 * extra:+.1f}% FLOPs "
          f"(budget {budget['memory_budget']})")

    bsz, h, t, d = 1, 12, 1024, 64
    with open(os.path.join(a.work_dir, "attn.mlir"), "w") as f:
        f.write(graph_opts.attention_module(bsz, h, t, d))
    fused = report("attn.mlir", "attn", [], "attn-on")
    unfused = report("attn.mlir", "attn", ["--no-fuse"], "attn-off")
    qkvo = 4 * bsz * h * t * d * 4
    check("attention T=1024 fused traffic is Q, K, V, O", fused["bytes_moved"] == qkvo,
          f"{fused['bytes_moved']} bytes (Q, K, V, O: {qkvo}), {fused['kernels']} kernel")
    check("attention T=1024 unfused traffic is O(T^2)", unfused["bytes_moved"] >= 10 * qkvo,
          f"{unfused['bytes_moved']} bytes, {unfused['kernels']} kernels")

    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

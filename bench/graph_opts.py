#!/usr/bin/env python3
"""What the -O2 graph optimizations (tfc-fuse, tfc-remat, tfc-schedule,
tfc-plan-memory) buy, measured on this machine in one run.

  attention  The unfused attention sequence at T=1024 (scores, scale, causal
             mask, softmax, values; B=1, H=12, D=64) compiled with --no-fuse
             (five kernels, the T x T scores in memory) and at -O2 (tfc-fuse
             makes it one FlashAttention kernel): bytes moved from --report,
             median call time.
  train      gpt2-124m train_step at B=4, T=64 with every optimization off
             (--no-fuse --no-remat --no-schedule) and on: kernels, bytes moved
             by non-matmul kernels, arena, median step time.
  memory     gpt2-124m train_step at B=8, T=1024 (compiled, not run): the
             planned arena against its lower bound, and what tfc-remat saves
             with no budget and with --remat-budget (deterministic figures
             from --report).

Each configuration runs in --runs processes, interleaved, each timing
--repeat calls after one warm-up call (`tfc-run call --repeat`); the table
shows medians. Prints Markdown for docs/performance.md.

  bench/graph_opts.py --bin-dir build/bin [--only attention|train|memory] [--runs 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def attention_module(b, h, t, d):
    """softmax(Q K^T / sqrt(d) + causal mask) V, op by op."""
    q = f"tensor<{b}x{h}x{t}x{d}xf32>"
    s = f"tensor<{b}x{h}x{t}x{t}xf32>"
    m = f"tensor<{t}x{t}xf32>"
    # A causal mask as a dense constant: 0 on and below the diagonal.
    rows = []
    for i in range(t):
        rows.append("[" + ", ".join("0.0" if j <= i else "0xFF800000" for j in range(t)) + "]")
    return "\n".join([
        f'func.func @attn(%q: {q} {{tfc.name = "q"}}, %k: {q} {{tfc.name = "k"}}, '
        f'%v: {q} {{tfc.name = "v"}}) -> ({q} {{tfc.name = "o"}}) {{',
        f"  %scale = tfc.constant dense<{1 / d ** 0.5}> : tensor<f32>",
        f"  %mask = tfc.constant dense<[{', '.join(rows)}]> : {m}",
        f"  %s = tfc.matmul %q, %k transpose_rhs : {q}, {q} -> {s}",
        f"  %t = tfc.mul %s, %scale : {s}, tensor<f32> -> {s}",
        f"  %u = tfc.add %t, %mask : {s}, {m} -> {s}",
        f"  %p = tfc.softmax %u dim = 3 : {s} -> {s}",
        f"  %o = tfc.matmul %p, %v : {s}, {q} -> {q}",
        f"  return %o : {q}",
        "}", ""])


def median_ms(stderr):
    return float(re.search(r"median ([\d.]+) ms", stderr).group(1))


def entry_report(path, entry):
    with open(path) as f:
        return json.load(f)["entries"][entry]


def bench_attention(a, work):
    b, h, t, d = 1, 12, 1024, 64
    with open(os.path.join(work, "attn.mlir"), "w") as f:
        f.write(attention_module(b, h, t, d))
    rng = np.random.default_rng(0)
    for n in "qkv":
        np.save(os.path.join(work, n + ".npy"), rng.standard_normal((b, h, t, d), dtype=np.float32))
    configs = {"unfused (--no-fuse)": ["--no-fuse"], "fused (-O2)": []}
    times = {c: [] for c in configs}
    reports = {}
    for name, flags in configs.items():
        so = f"attn{len(reports)}.so"
        run([a.tfc, "attn.mlir", "-o", so, f"--report={so}.json"] + flags, work)
        reports[name] = (so, entry_report(os.path.join(work, so + ".json"), "attn"))
    outs = {}
    for _ in range(a.runs):
        for name, (so, _) in reports.items():
            od = os.path.join(work, so + ".out")
            os.makedirs(od, exist_ok=True)
            p = run([a.tfc_run, so, "call", "attn", "--init-seed", "0", "--in", "q=q.npy",
                     "--in", "k=k.npy", "--in", "v=v.npy", "--out-dir", od,
                     "--threads", str(a.threads), "--repeat", str(a.repeat)], work)
            times[name].append(median_ms(p.stderr))
            outs[name] = np.load(os.path.join(od, "o.npy"))
    diff = float(np.max(np.abs(outs["fused (-O2)"] - outs["unfused (--no-fuse)"])))
    print(f"\n### Attention, B={b} H={h} T={t} D={d}, causal ({a.threads} threads)\n")
    print("| config | kernels | bytes moved (report) | arena | time (median) |")
    print("|---|---|---|---|---|")
    for name, (_, r) in reports.items():
        print(f"| {name} | {r['kernels']} | {r['bytes_moved'] / 1e6:.1f} MB | "
              f"{r['arena_bytes'] / 1e6:.1f} MB | {statistics.median(times[name]):.1f} ms |")
    u, f_ = (statistics.median(times[n]) for n in configs)
    print(f"\nfused vs unfused: {u / f_:.2f}x faster; outputs agree to {diff:.2e} (max abs)")


def bench_train(a, work):
    run([a.tfc_trace, "gpt2", "--set", "preset=gpt2-124m", "--set", "batch=4",
         "--set", "seq=64", "-o", "g.mlir"], work)
    configs = {"none (--no-fuse --no-remat --no-schedule)":
               ["--no-fuse", "--no-remat", "--no-schedule"], "all (-O2)": []}
    reports = {}
    for name, flags in configs.items():
        so = f"train{len(reports)}.so"
        run([a.tfc, "g.mlir", "--optimizer=adamw", "-o", so, f"--report={so}.json"] + flags, work)
        reports[name] = (so, entry_report(os.path.join(work, so + ".json"), "train_step"))
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 50257, (4, 64), dtype=np.int32)
    np.save(os.path.join(work, "tokens.npy"), tokens)
    np.save(os.path.join(work, "targets.npy"), np.roll(tokens, -1, axis=1))
    info = run([a.tfc_run, reports["all (-O2)"][0], "info"], work).stdout
    hyper = {"lr": 1e-4, "min_lr": 1e-5, "warmup": 0, "total_steps": 1000, "schedule": 0,
             "weight_decay": 0.1, "grad_clip": 1.0, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8}
    args = []
    for n, v in hyper.items():
        args += ["--in", f"{n}={v}"]
    inputs = [n for n in ("tokens", "targets") if n in info]
    for n in inputs:
        args += ["--in", f"{n}={n}.npy"]
    times = {c: [] for c in configs}
    for _ in range(a.runs):
        for name, (so, _) in reports.items():
            p = run([a.tfc_run, so, "call", "train_step", "--init-seed", "0", "--out-dir",
                     so + ".out", "--threads", str(a.threads), "--repeat", "3"] + args, work)
            times[name].append(median_ms(p.stderr))
    print(f"\n### gpt2-124m train_step, B=4 T=64, AdamW ({a.threads} threads)\n")
    print("| optimizations | kernels | bytes moved, non-matmul | bytes moved, matmul-like "
          "| FLOPs | arena | lower bound | step time (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (_, r) in reports.items():
        print(f"| {name} | {r['kernels']} | {r['bytes_moved_other'] / 1e9:.2f} GB | "
              f"{r['bytes_moved_matmul_like'] / 1e9:.2f} GB | {r['flops'] / 1e9:.1f} G | "
              f"{r['arena_bytes'] / 1e6:.0f} MB | {r['live_bound_bytes'] / 1e6:.0f} MB | "
              f"{statistics.median(times[name]):.0f} ms |")
    n, o = (reports[c][1] for c in configs)
    tn, to = (statistics.median(times[c]) for c in configs)
    print(f"\nnon-matmul bytes {n['bytes_moved_other'] / o['bytes_moved_other']:.2f}x lower, "
          f"kernels {n['kernels']} -> {o['kernels']}, step {tn / to:.2f}x faster")


def bench_memory(a, work):
    run([a.tfc_trace, "gpt2", "--set", "preset=gpt2-124m", "--set", "batch=8",
         "--set", "seq=1024", "-o", "g8k.mlir"], work)
    configs = {"none": ["--no-fuse", "--no-remat", "--no-schedule"],
               "-O2": [],
               f"-O2 --remat-budget={a.remat_budget}": [f"--remat-budget={a.remat_budget}"]}
    print("\n### gpt2-124m train_step, B=8 T=1024: memory plan and rematerialization\n")
    print("| optimizations | intermediates (sum) | lower bound | arena | arena / bound "
          "| saved for backward | recomputed | FLOPs |")
    print("|---|---|---|---|---|---|---|---|")
    base_flops = None
    for name, flags in configs.items():
        path = os.path.join(work, "mem.json")
        run([a.tfc, "g8k.mlir", "--optimizer=adamw", "--compile-to=kernels", "--emit=mlir",
             "-o", "/dev/null", f"--report={path}"] + flags, work)
        r = entry_report(path, "train_step")
        base_flops = base_flops or r["flops"]
        remat = r.get("remat")
        saved = (f"{remat['saved_bytes'] / 1e9:.2f} GB (of {remat['saved_bytes_before'] / 1e9:.2f})"
                 if remat else "all")
        recomputed = (f"{remat['recomputed_ops']} ops, {remat['recomputed_flops'] / 1e9:.1f} GFLOP"
                      if remat else "-")
        print(f"| {name} | {r['intermediate_bytes'] / 1e9:.2f} GB | "
              f"{r['live_bound_bytes'] / 1e9:.3f} GB | {r['arena_bytes'] / 1e9:.3f} GB | "
              f"{r['arena_bytes'] / r['live_bound_bytes']:.3f} | {saved} | {recomputed} | "
              f"{r['flops'] / 1e12:.3f} T (+{100 * (r['flops'] / base_flops - 1):.1f}%) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--only", choices=["attention", "train", "memory"])
    ap.add_argument("--remat-budget", default="3415492608",
                    help="the budget of the memory table's third row (bytes)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work-dir")
    a = ap.parse_args()
    for tool in ("tfc", "tfc_run", "tfc_trace"):
        setattr(a, tool, os.path.abspath(os.path.join(a.bin_dir, tool.replace("_", "-"))))
    work = a.work_dir or tempfile.mkdtemp(prefix="tfc-graph-opts-")
    os.makedirs(work, exist_ok=True)
    if a.only in (None, "attention"):
        bench_attention(a, work)
    if a.only in (None, "train"):
        bench_train(a, work)
    if a.only in (None, "memory"):
        bench_memory(a, work)


if __name__ == "__main__":
    main()

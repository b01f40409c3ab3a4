#!/usr/bin/env python3
"""tfc vs PyTorch eager (and, with --compile, torch.compile) on GPT-2 124M, on this machine,
in one run.

Measures, interleaving tfc and the peer (--runs processes each, medians):
  - compile time of gpt2-124m (tfc-trace + tfc, reported on its own);
  - forward at B=4, T=64 (median of --repeat calls per process, after warm-up);
  - prefill of a 128-token prompt and decode tokens/s at batch 1 after it (greedy), each
    process after one warm-up (tfc-run generate --warmup 1; the peers likewise);
  - with --train: train_step at B=4, T=64 (AdamW, clip 1.0) and each process's peak RSS;
  - with --long: train_step at B=1, T=1024 and peak RSS, tfc and PyTorch eager;
  - with --compile: forward and train_step of torch.compile (inductor) too, its compile
    excluded from the timings (each process warms up first);
  - with --jax PYTHON: JAX jit (XLA CPU; bench/peer_jax.py in that Python) for forward,
    prefill, decode and train_step, its compilation excluded; before timing, its forward
    logits are checked against tfc's on the same weights and tokens;
  - with --llamacpp PYTHON: llama.cpp (bench/peer_llamacpp.py in that Python, with
    llama-cpp-python built from source and gguf) for prefill and decode, on the same weights
    written to an F32 GGUF file; its logits are checked against tfc's first.
Each round also measures the machine (`tfc-run machine`: the f32 FMA peak and a STREAM
triad on the same threads); the floors in the table come from FLOPs and bytes over those
medians, not from nominal figures.
Prints a Markdown table with the ratios and the floors.

  bench/run_bench.py --bin-dir build/bin --python /opt/tfc-bench/bin/python [--train] [--compile] \
      [--jax /opt/tfc-bench/bin/python] [--llamacpp /opt/tfc-bench/bin/python]

The peer is bench/peer_torch.py (GPT-2 written in PyTorch, same weights). Set
the peer up as BENCHMARKING.md says: an optimized BLAS, OMP_WAIT_POLICY=PASSIVE.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = 124_439_808
N_LAYER, N_EMBD, N_CTX, VOCAB = 12, 768, 1024, 50257


def run(cmd, env=None, check=True):
    """Runs cmd; returns its CompletedProcess-like result (.stdout, .stderr, .returncode,
    .peak_rss_mb: this child's own peak, from wait4) and its wall time."""
    t = time.perf_counter()
    # Output to files, not pipes: the child is reaped by wait4 (for its own rusage) without
    # a reader that its writes could wait on.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        out.seek(0)
        err.seek(0)
        out, err = out.read(), err.read()
    dt = time.perf_counter() - t
    p = subprocess.CompletedProcess(cmd, child.returncode, out, err)
    p.peak_rss_mb = usage.ru_maxrss / 1024
    if check and p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--python", default=sys.executable, help="the peer's Python (with torch)")
    ap.add_argument("--work-dir", default="/tmp/tfc-bench")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--long", action="store_true",
                    help="also train_step at B=1 T=1024 (time and peak RSS, tfc and PyTorch)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile (inductor) as a second peer for forward and train_step")
    ap.add_argument("--jax", metavar="PYTHON",
                    help="a Python with jax: JAX jit as a peer (bench/peer_jax.py)")
    ap.add_argument("--llamacpp", metavar="PYTHON",
                    help="a Python with llama_cpp and gguf: llama.cpp as a peer "
                         "(bench/peer_llamacpp.py)")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    b = lambda tool: os.path.join(a.bin_dir, tool)
    w = lambda name: os.path.join(a.work_dir, name)
    peer_env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=str(a.threads))

    # Compile (timed on its own).
    compile_s = {}
    run([b("tfc-trace"), "gpt2", "--set", "preset=gpt2-124m", "--set", "batch=4",
         "--set", "seq=64", "-o", w("fwd.mlir")])
    _, compile_s["forward"] = run([b("tfc"), w("fwd.mlir"), "-o", w("fwd.so")])
    run([b("tfc-trace"), "gpt2", "--set", "preset=gpt2-124m", "--set", "batch=1",
         "--set", "prefill_len=128", "-o", w("gen.mlir")])
    _, compile_s["generate"] = run([b("tfc"), w("gen.mlir"), "-o", w("gen.so")])
    if a.train:
        _, compile_s["train"] = run([b("tfc"), w("fwd.mlir"), "--optimizer=adamw",
                                     "-o", w("train.so")])
    if a.long:
        run([b("tfc-trace"), "gpt2", "--set", "preset=gpt2-124m", "--set", "batch=1",
             "--set", "seq=1024", "-o", w("long.mlir")])
        run([b("tfc"), w("long.mlir"), "--optimizer=adamw", "-o", w("long.so")])
    run([b("tfc-run"), w("fwd.so"), "init", "--seed", "1", "-o", w("w.safetensors")])
    import numpy as np
    rng = np.random.default_rng(0)
    np.save(w("tokens.npy"), rng.integers(0, 50257, (4, 64), dtype=np.int32))
    np.save(w("targets.npy"), rng.integers(0, 50257, (4, 64), dtype=np.int32))
    np.save(w("long_tokens.npy"), rng.integers(0, 50257, (1, 1024), dtype=np.int32))
    np.save(w("long_targets.npy"), rng.integers(0, 50257, (1, 1024), dtype=np.int32))
    prompt = " ".join(str(t) for t in rng.integers(0, 50257, 128))

    res = {k: [] for k in ["peak_gflops", "triad_gbs", "tfc_fwd", "pt_fwd", "tfc_dec", "pt_dec", "tfc_pre", "pt_pre",
                           "tfc_train", "pt_train", "tfc_rss", "pt_rss", "tfc_long", "pt_long",
                           "tfc_long_rss", "pt_long_rss", "pc_fwd", "pc_train",
                           "jx_fwd", "jx_pre", "jx_dec", "jx_train", "jx_rss", "lc_pre",
                           "lc_dec"]}
    peer = lambda *args: [a.python, os.path.join(HERE, "peer_torch.py"), *args, "--weights",
                          w("w.safetensors"), "--threads", str(a.threads)]
    jax = lambda *args: [a.jax, os.path.join(HERE, "peer_jax.py"), *args, "--weights",
                         w("w.safetensors"), "--threads", str(a.threads)]
    llamacpp = lambda *args: [a.llamacpp, os.path.join(HERE, "peer_llamacpp.py"), *args,
                              "--threads", str(a.threads)]

    def check_logits(label, got_path, bound, rows=slice(None)):
        """The peer must compute the same model: its logits against tfc's forward."""
        want, got = tfc_logits[rows], np.load(got_path)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        print(f"{label} peer: logits within {err:.1e} of tfc's (max abs / max |logit|)",
              file=sys.stderr)
        if not err < bound:
            sys.exit(f"bench: the {label} peer's logits differ from tfc's by {err:.1e}")
    if a.jax or a.llamacpp:
        run([b("tfc-run"), w("fwd.so"), "call", "forward", "--weights", w("w.safetensors"),
             "--in", "tokens=" + w("tokens.npy"), "--out-dir", w("out")])
        tfc_logits = np.load(w("out/logits.npy"))
    if a.jax:
        run(jax("logits", "--tokens", w("tokens.npy"), "--out", w("jax_logits.npy")))
        check_logits("JAX", w("jax_logits.npy"), 1e-4)
    if a.llamacpp:
        run(llamacpp("gguf", "--weights", w("w.safetensors"), "--out", w("w.gguf")))
        run(llamacpp("logits", "--gguf", w("w.gguf"), "--tokens", w("tokens.npy"),
                     "--out", w("llamacpp_logits.npy")))
        # Row 0 of the batch; its KV cache is F16.
        check_logits("llama.cpp", w("llamacpp_logits.npy"), 1e-2, rows=0)
    for r in range(a.runs):
        p, _ = run([b("tfc-run"), "machine", "--threads", str(a.threads), "--json"])
        j = json.loads(p.stdout)
        res["peak_gflops"].append(j["peak_gflops"])
        res["triad_gbs"].append(j["triad_gbs"])
        p, _ = run([b("tfc-run"), w("fwd.so"), "call", "forward", "--weights", w("w.safetensors"),
                    "--in", "tokens=" + w("tokens.npy"), "--out-dir", w("out"),
                    "--threads", str(a.threads), "--repeat", str(a.repeat)])
        res["tfc_fwd"].append(float(re.search(r"median ([\d.]+) ms", p.stderr).group(1)))
        p, _ = run(peer("forward", "--repeat", str(a.repeat)), env=peer_env)
        res["pt_fwd"].append(json.loads(p.stdout)["ms"])
        if a.compile:
            p, _ = run(peer("forward", "--repeat", str(a.repeat), "--compile"), env=peer_env)
            res["pc_fwd"].append(json.loads(p.stdout)["ms"])
        p, _ = run([b("tfc-run"), w("gen.so"), "generate", "--weights", w("w.safetensors"),
                    "--prompt-tokens", prompt, "--max-new-tokens", "64",
                    "--threads", str(a.threads), "--warmup", "1"])
        res["tfc_pre"].append(float(re.search(r"prefill .*?([\d.]+) tokens/s", p.stderr).group(1)))
        res["tfc_dec"].append(float(re.search(r"decode .*?([\d.]+) tokens/s", p.stderr).group(1)))
        p, _ = run(peer("decode", "--prompt", "128", "--new", "64"), env=peer_env)
        j = json.loads(p.stdout)
        res["pt_pre"].append(j["prefill_tok_s"])
        res["pt_dec"].append(j["decode_tok_s"])
        if a.llamacpp:
            p, _ = run(llamacpp("decode", "--gguf", w("w.gguf"), "--prompt", "128",
                                "--new", "64"))
            j = json.loads(p.stdout)
            res["lc_pre"].append(j["prefill_tok_s"])
            res["lc_dec"].append(j["decode_tok_s"])
        if a.jax:
            p, _ = run(jax("forward", "--repeat", str(a.repeat)))
            res["jx_fwd"].append(json.loads(p.stdout)["ms"])
            p, _ = run(jax("decode", "--prompt", "128", "--new", "64"))
            j = json.loads(p.stdout)
            res["jx_pre"].append(j["prefill_tok_s"])
            res["jx_dec"].append(j["decode_tok_s"])
        hyper = ["lr=1e-4", "min_lr=0", "warmup=0", "total_steps=100", "schedule=0",
                 "weight_decay=0.1", "grad_clip=1.0", "beta1=0.9", "beta2=0.95", "eps=1e-8"]
        train_step = lambda so, tokens, targets, repeat: [
            b("tfc-run"), w(so), "call", "train_step", "--weights", w("w.safetensors"),
            "--in", "tokens=" + w(tokens), "--in", "targets=" + w(targets), "--out-dir",
            w("out"), "--threads", str(a.threads), "--repeat", str(repeat)] + [
            x for h in hyper for x in ("--in", h)]
        if a.train:
            p, _ = run(train_step("train.so", "tokens.npy", "targets.npy", 5))
            res["tfc_train"].append(float(re.search(r"median ([\d.]+) ms", p.stderr).group(1)))
            res["tfc_rss"].append(p.peak_rss_mb)
            p, _ = run(peer("train", "--repeat", "5"), env=peer_env)
            j = json.loads(p.stdout)
            res["pt_train"].append(j["ms"])
            res["pt_rss"].append(j["peak_rss_mb"])
            if a.compile:
                p, _ = run(peer("train", "--repeat", "5", "--compile"), env=peer_env)
                res["pc_train"].append(json.loads(p.stdout)["ms"])
            if a.jax:
                p, _ = run(jax("train", "--repeat", "5"))
                j = json.loads(p.stdout)
                res["jx_train"].append(j["ms"])
                res["jx_rss"].append(j["peak_rss_mb"])
        if a.long:
            p, _ = run(train_step("long.so", "long_tokens.npy", "long_targets.npy", 2))
            res["tfc_long"].append(float(re.search(r"median ([\d.]+) ms", p.stderr).group(1)))
            res["tfc_long_rss"].append(p.peak_rss_mb)
            p, _ = run(peer("train", "--repeat", "2", "--batch", "1", "--seq", "1024"),
                       env=peer_env)
            j = json.loads(p.stdout)
            res["pt_long"].append(j["ms"])
            res["pt_long_rss"].append(p.peak_rss_mb)
        print(f"run {r + 1}/{a.runs}: " + ", ".join(f"{k}={v[-1]:.2f}" for k, v in res.items() if v),
              file=sys.stderr)

    med = {k: statistics.median(v) for k, v in res.items() if v}
    peak, triad = med["peak_gflops"] * 1e9, med["triad_gbs"] * 1e9
    # Floors: the larger of FLOPs / peak and bytes / triad bandwidth.
    wpe = N_CTX * N_EMBD
    attn = lambda b, t, keys: 2 * 2 * N_LAYER * b * t * keys * N_EMBD  # QK^T and PV, unmasked
    fwd_flops = 2 * (PARAMS - wpe) * 4 * 64 + attn(4, 64, 64)
    fwd_floor_ms = max(fwd_flops / peak, PARAMS * 4 / triad) * 1e3
    # Prefill: the blocks' products for 128 tokens and the lm_head for the last one.
    blocks = PARAMS - wpe - VOCAB * N_EMBD
    pre_flops = 2 * blocks * 128 + 2 * VOCAB * N_EMBD + attn(1, 128, 128)
    pre_floor = 128 / max(pre_flops / peak, PARAMS * 4 / triad)
    # Decode: every weight once (wte as the lm_head; one row of wpe) and the KV cache at the
    # mean position of the 64 new tokens.
    dec_bytes = (PARAMS - wpe) * 4 + 2 * N_LAYER * (128 + 32) * N_EMBD * 4
    dec_floor = triad / dec_bytes
    # train_step: forward and backward (3x the forward's FLOPs); AdamW reads the parameter,
    # gradient and both moments and writes three of them (28 bytes a parameter).
    train_floor_ms = (3 * fwd_flops / peak + 28 * PARAMS / triad) * 1e3
    print(f"machine ({a.threads} threads, `tfc-run machine`, medians of the rounds): "
          f"{med['peak_gflops']:.1f} GFLOP/s f32 peak, {med['triad_gbs']:.1f} GB/s STREAM triad")
    print("| figure | tfc | PyTorch eager | tfc / PyTorch | floor | tfc vs floor |")
    print("|---|---|---|---|---|---|")
    # tfc's time as a fraction of the peer's (the targets are written so: <= 0.5x).
    compiled = lambda key, tfc_key: (
        f"| ... torch.compile | | {med[key]:.1f} ms | tfc takes "
        f"{med[tfc_key] / med[key]:.2f}x its time | | |" if key in med else None)
    print(f"| compile gpt2-124m (forward, loss, prefill, decode, sample) | "
          f"{compile_s['forward']:.1f} s | - | - | - | - |")
    print(f"| forward B=4 T=64 | {med['tfc_fwd']:.1f} ms | {med['pt_fwd']:.1f} ms | "
          f"{med['pt_fwd'] / med['tfc_fwd']:.2f}x speed | {fwd_floor_ms:.1f} ms | "
          f"{fwd_floor_ms / med['tfc_fwd']:.0%} |")
    if compiled("pc_fwd", "tfc_fwd"):
        print(compiled("pc_fwd", "tfc_fwd"))
    peerrow = lambda key, tfc_key, unit="ms", rate=False, name="JAX jit": (
        f"| ... {name} | | {med[key]:.1f} {unit} | " +
        (f"{med[tfc_key] / med[key]:.2f}x" if rate else
         f"tfc takes {med[tfc_key] / med[key]:.2f}x its time") + " | | |")
    if "jx_fwd" in med:
        print(peerrow("jx_fwd", "tfc_fwd"))
    print(f"| prefill 128 tokens, batch 1 | {med['tfc_pre']:.1f} tok/s | {med['pt_pre']:.1f} tok/s | "
          f"{med['tfc_pre'] / med['pt_pre']:.2f}x | {pre_floor:.0f} tok/s | "
          f"{med['tfc_pre'] / pre_floor:.0%} |")
    if "jx_pre" in med:
        print(peerrow("jx_pre", "tfc_pre", "tok/s", rate=True))
    if "lc_pre" in med:
        print(peerrow("lc_pre", "tfc_pre", "tok/s", rate=True, name="llama.cpp"))
    print(f"| decode batch 1 after 128 | {med['tfc_dec']:.1f} tok/s | {med['pt_dec']:.1f} tok/s | "
          f"{med['tfc_dec'] / med['pt_dec']:.2f}x | {dec_floor:.0f} tok/s | "
          f"{med['tfc_dec'] / dec_floor:.0%} |")
    if "jx_dec" in med:
        print(peerrow("jx_dec", "tfc_dec", "tok/s", rate=True))
    if "lc_dec" in med:
        print(peerrow("lc_dec", "tfc_dec", "tok/s", rate=True, name="llama.cpp"))
    if a.train:
        print(f"| train_step B=4 T=64 AdamW | {med['tfc_train']:.0f} ms | {med['pt_train']:.0f} ms | "
              f"{med['pt_train'] / med['tfc_train']:.2f}x speed | {train_floor_ms:.0f} ms | "
              f"{train_floor_ms / med['tfc_train']:.0%} |")
        if compiled("pc_train", "tfc_train"):
            print(compiled("pc_train", "tfc_train"))
        if "jx_train" in med:
            print(peerrow("jx_train", "tfc_train"))
            print(f"| ... JAX jit train_step peak RSS | | {med['jx_rss']:.0f} MB | | | |")
        print(f"| train_step peak RSS | {med['tfc_rss']:.0f} MB | {med['pt_rss']:.0f} MB | "
              f"{med['tfc_rss'] / med['pt_rss']:.2f}x | | |")
    if a.long:
        long_flops = 3 * (2 * (PARAMS - wpe) * 1024 + attn(1, 1024, 1024) / 2)  # causal half
        long_floor_ms = (long_flops / peak + 28 * PARAMS / triad) * 1e3
        print(f"| train_step B=1 T=1024 AdamW | {med['tfc_long']:.0f} ms | {med['pt_long']:.0f} ms | "
              f"tfc takes {med['tfc_long'] / med['pt_long']:.2f}x its time | "
              f"{long_floor_ms:.0f} ms | {long_floor_ms / med['tfc_long']:.0%} |")
        print(f"| ... peak RSS (process) | {med['tfc_long_rss']:.0f} MB | "
              f"{med['pt_long_rss']:.0f} MB | {med['tfc_long_rss'] / med['pt_long_rss']:.2f}x | "
              f"{16 * PARAMS / 2**20:.0f} MB (parameters, gradients, AdamW's moments) | |")
    print(f"\n(medians of {a.runs} processes each; {a.threads} threads; "
          f"compile times: " + ", ".join(f"{k} {v:.1f} s" for k, v in compile_s.items()) + ")")


if __name__ == "__main__":
    main()

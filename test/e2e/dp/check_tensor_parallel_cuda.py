#!/usr/bin/env python3
"""Tensor parallelism of a CUDA artifact (tfc --tp=2 --target=cuda) under mpirun.

On the emulated driver (test/cuda_emulator: the kernels' CUDA C++ compiled for the host), a
small GPT-2 compiled with --tp=2 for the CPU and for CUDA, and with --dp=2 --tp=2 for both:
  - TP=2, 10 SGD steps from --init-seed 0 with the collectives staged through the host
    (TFC_COMM_DEVICE=host) and over NCCL (TFC_COMM_DEVICE=nccl, the emulator's fake
    libnccl.so.2, which counts the collectives it ran) give the CPU TP=2 artifact's whole
    checkpoint and logged losses within 1e-5 (max |a - b| / max |b| per tensor);
  - TP=2 generate under mpirun gives the CPU TP=2 artifact's greedy tokens from the same
    random weights;
  - DP=2 x TP=2 (4 ranks, two process groups), staged through the host and over NCCL (one
    communicator per group on every rank, each bootstrapped over its group), equals the CPU
    DP=2 x TP=2 artifact.
Prints the numbers and one verdict line.
"""

import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_data_parallel import (RTOL, STEPS, check, failures,  # noqa: E402
                                 mpi_job, random_tokens, read_losses, read_safetensors, run)
from reference import write_safetensors  # noqa: E402  (check_data_parallel put it on the path)

GPT2 = ["n_layer=1", "n_head=4", "n_embd=32", "vocab_size=64", "n_ctx=16", "seq=8",
        "prefill_len=8"]


def main():
    args, mpirun, env, p = mpi_job(__doc__, [
        ("--emulate", dict(required=True, help="the emulated libcuda.so.1")),
        ("--fake-nccl", dict(required=True, help="the fake libnccl.so.2 of the emulator"))])
    tool = lambda name: os.path.join(args.bin_dir, name)
    env = dict(env, TFC_CUDA_DRIVER=os.path.abspath(args.emulate),
               TFC_CUBLASLT_LIBRARY=os.path.join(os.path.dirname(os.path.abspath(args.emulate)),
                                                 "cublaslt", "libcublasLt.so.13"))
    fake_nccl = os.path.abspath(args.fake_nccl)
    seed = random_tokens(p("train.bin"))

    # TP=2 at batch 2; DP=2 x TP=2 at batch 1 per replica (the same global batch).
    layouts = {"tp": (["--tp=2"], 2, 2), "2d": (["--dp=2", "--tp=2"], 1, 4)}
    for name, (flags, batch, _) in layouts.items():
        sets = sum((["--set", s] for s in GPT2 + [f"batch={batch}"]), [])
        run([tool("tfc-trace"), "gpt2", *sets, "-o", p(f"{name}.mlir")])
        run([tool("tfc"), p(f"{name}.mlir"), "--optimizer=sgd", *flags, "-o",
             p(f"{name}-cpu.so")])
        run([tool("tfc"), p(f"{name}.mlir"), "--optimizer=sgd", *flags, "--target=cuda",
             f"--dump-ir={p(name + '-dump')}", "-o", p(f"{name}-cuda.so")])
        run([sys.executable, os.path.join(HERE, "..", "..", "cuda_emulator",
                                          "build_host_kernels.py"),
             "--dump-dir", p(name + "-dump"), "--out", p(f"{name}-kernels.so")], timeout=900)

    def launch(name, target, args, extra_env=(), expect=0):
        world = layouts[name][2]
        result = run(mpirun + ["-np", str(world), tool("tfc-run"), p(f"{name}-{target}.so"),
                               *args],
                     env=dict(env, TFC_CUDA_EMULATOR_KERNELS=p(f"{name}-kernels.so"),
                              **dict(extra_env)),
                     timeout=900, expect=expect)
        return result

    def train(name, target, tag, extra_env=(), expect=0):
        return launch(name, target, [
            "train", "--data", p("train.bin"), "--init-seed", "0", "--seed", str(seed),
            "--steps", str(STEPS), "--lr", "0.3", "--momentum", "0.9",
            "--save", p(f"{tag}.safetensors"), "--log", p(f"{tag}.csv")], extra_env, expect)

    def compare(tag, reference, label):
        want, got = read_safetensors(p(f"{reference}.safetensors")), \
            read_safetensors(p(f"{tag}.safetensors"))
        worst, worst_name = 0.0, ""
        for name, b in want.items():
            if name not in got or got[name].shape != b.shape:
                worst, worst_name = float("inf"), name
                continue
            a, b = got[name].astype(np.float64).ravel(), b.astype(np.float64).ravel()
            rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
            if rel > worst:
                worst, worst_name = rel, name
        losses, ref = read_losses(p(f"{tag}.csv")), read_losses(p(f"{reference}.csv"))
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
        check(set(got) == set(want) and worst <= RTOL and len(losses) == STEPS and
              diff <= RTOL,
              f"{label} vs the CPU after {STEPS} SGD steps: the whole checkpoint, worst "
              f"max|a-b|/max|b| {worst:.2e} ({worst_name}), losses {diff:.2e} <= {RTOL:g}")

    host = dict(TFC_COMM_DEVICE="host")
    nccl = dict(TFC_COMM_DEVICE="nccl", TFC_NCCL_LIBRARY=fake_nccl)
    train("tp", "cpu", "tp-cpu")
    result = train("tp", "cuda", "tp-host", host)
    text = result.stdout + result.stderr
    check("collectives staged through the host over MPI (TFC_COMM_DEVICE=host)" in text,
          "CUDA TP=2, TFC_COMM_DEVICE=host: rank 0 says the collectives are staged")
    compare("tp-host", "tp-cpu", "CUDA TP=2 (host)")
    result = train("tp", "cuda", "tp-nccl", nccl)
    text = result.stdout + result.stderr
    counts = {int(r): int(n) for r, n in
              re.findall(r"fake-nccl: rank (\d) of 2: (\d+) collectives", text)}
    # Per step at least Megatron's 2 all-reduces forward and 2 backward (one layer).
    check("collectives on the GPUs over NCCL" in text and sorted(counts) == [0, 1] and
          min(counts.values()) >= 4 * STEPS,
          f"CUDA TP=2, TFC_COMM_DEVICE=nccl: both ranks ran the collectives through the fake "
          f"NCCL ({counts}, >= {4 * STEPS})")
    compare("tp-nccl", "tp-cpu", "CUDA TP=2 (NCCL)")

    # Greedy generation, each rank its heads and KV cache, from random weights far from the
    # initial ones (whose logits are near-uniform): a token a step that depends on them all.
    run([tool("tfc-run"), p("tp-cpu.so"), "init", "--seed", "1", "-o", p("init.safetensors")])
    rng = np.random.default_rng(seed)
    write_safetensors(p("gen.safetensors"),
                      {k: (v + rng.normal(0, 0.3, v.shape)).astype(np.float32)
                       for k, v in read_safetensors(p("init.safetensors")).items()})
    gen = ["generate", "--weights", p("gen.safetensors"), "--prompt-tokens", "5 9 2 7",
           "--max-new-tokens", "8"]
    want = launch("tp", "cpu", gen).stdout.strip().splitlines()
    got = launch("tp", "cuda", gen, host).stdout.strip().splitlines()
    check(len(want) == 1 and got == want,
          f"CUDA TP=2 generate: the CPU TP=2 artifact's greedy tokens ({got} vs {want})")

    train("2d", "cpu", "2d-cpu")
    result = train("2d", "cuda", "2d-host", host)
    compare("2d-host", "2d-cpu", "CUDA DP=2 x TP=2 (host)")
    result = train("2d", "cuda", "2d-nccl", nccl)
    text = result.stdout + result.stderr
    # One NCCL communicator per group on every rank: 4 ranks x ("dp", "tp"), each of 2.
    lines = re.findall(r"fake-nccl: rank (\d) of 2: (\d+) collectives", text)
    check("collectives on the GPUs over NCCL" in text and "groups dp and tp" in text and
          len(lines) == 8 and sorted(r for r, _ in lines) == ["0"] * 4 + ["1"] * 4 and
          min(int(n) for _, n in lines) >= STEPS,
          f"CUDA DP=2 x TP=2, TFC_COMM_DEVICE=nccl: every rank ran its collectives on its "
          f"\"dp\" and \"tp\" communicators, each bootstrapped from its group's rank 0 "
          f"({sorted(int(n) for _, n in lines)} collectives)")
    compare("2d-nccl", "2d-cpu", "CUDA DP=2 x TP=2 (NCCL)")

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": tensor-parallel training and generation of a CUDA artifact")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Data-parallel training of a CUDA artifact (tfc --dp=2 --target=cuda) under mpirun.

The collectives of a CUDA artifact are calls from its host code into the runtime's
communicator; the executor stages the GPU's buffers through the host (MPI here). On the
emulated driver (test/cuda_emulator: the kernels' CUDA C++ compiled for the host), the same
small GPT-2 as check_data_parallel.py, trained 10 SGD steps (momentum, fp32) by two ranks
from the same weights on the same data, plain (all-reduces) and with --zero=1
(reduce-scatters, the momentum sharded, all-gathers), must give the CPU --dp=2 artifact's
weights within 1e-5 (max |a - b| / max |b| per tensor) and its logged losses. An entry with a collective is
never captured as a CUDA graph (the host takes part in it): every step runs eagerly.
Prints the numbers and one verdict line.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_data_parallel import (GPT2, RTOL, STEPS, check, failures,  # noqa: E402
                                 mpi_job, random_tokens, read_losses, read_safetensors, run)


def main():
    args, mpirun, env, p = mpi_job(__doc__, [("--emulate", dict(
        required=True, help="the emulated libcuda.so.1"))])
    tool = lambda name: os.path.join(args.bin_dir, name)
    env = dict(env, TFC_CUDA_DRIVER=os.path.abspath(args.emulate))
    seed = random_tokens(p("train.bin"))

    sets = sum((["--set", s] for s in GPT2 + ["batch=2"]), [])
    run([tool("tfc-trace"), "gpt2", *sets, "-o", p("gpt2.mlir")])
    common = [p("gpt2.mlir"), "--optimizer=sgd", "--dp=2"]
    run([tool("tfc"), *common, "-o", p("cpu.so")])
    # Plain DP (all-reduces) and ZeRO-1 (reduce-scatters and all-gathers) on the GPU.
    kinds = {"cuda": [], "cuda-zero": ["--zero=1"]}
    for kind, flags in kinds.items():
        run([tool("tfc"), *common, *flags, "--target=cuda", f"--dump-ir={p(kind + '-dump')}",
             "-o", p(f"{kind}.so")])
        run([sys.executable, os.path.join(HERE, "..", "..", "cuda_emulator",
                                          "build_host_kernels.py"),
             "--dump-dir", p(kind + "-dump"), "--out", p(f"{kind}-kernels.so")], timeout=900)

    for kind in ("cpu", *kinds):
        run(mpirun + ["-np", "2", tool("tfc-run"), p(f"{kind}.so"),
             "train", "--data", p("train.bin"), "--init-seed", "0", "--seed", str(seed),
             "--steps", str(STEPS), "--lr", "0.3", "--momentum", "0.9",
             "--save", p(f"{kind}.safetensors"), "--log", p(f"{kind}.csv")],
            env=dict(env, TFC_CUDA_EMULATOR_KERNELS=p(f"{kind}-kernels.so")), timeout=900)

    want, ref = read_safetensors(p("cpu.safetensors")), read_losses(p("cpu.csv"))
    for kind in kinds:
        label = {"cuda": "CUDA DP=2", "cuda-zero": "CUDA ZeRO-1 DP=2"}[kind]
        got = read_safetensors(p(f"{kind}.safetensors"))
        check(set(got) == set(want), f"{label}: the checkpoint holds the CPU's tensors")
        worst, worst_name = 0.0, ""
        for name, b in want.items():
            a = got[name].astype(np.float64).ravel()
            b = b.astype(np.float64).ravel()
            rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
            if rel > worst:
                worst, worst_name = rel, name
        check(worst <= RTOL, f"{label} vs CPU DP=2 after {STEPS} SGD steps: worst "
              f"max|a-b|/max|b| {worst:.2e} ({worst_name}) <= {RTOL:g}")
        losses = read_losses(p(f"{kind}.csv"))
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
        check(len(losses) == STEPS and diff <= RTOL,
              f"{label}: the logged loss of every step equals the CPU's (max rel diff {diff:.2e})")

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": data-parallel training of a CUDA artifact")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Data-parallel training of a CUDA artifact (tfc --dp=2 --target=cuda) under mpirun.

The collectives of a CUDA artifact are calls from its host code into the runtime, which runs
them over NCCL on the GPU's buffers or stages the buffers through the host (MPI), as
TFC_COMM_DEVICE says. On the emulated driver (test/cuda_emulator: the kernels' CUDA C++
compiled for the host), the same small GPT-2 as check_data_parallel.py, trained 10 SGD steps
(momentum, fp32) by two ranks from the same weights on the same data, plain (all-reduces)
and with --zero=1 (reduce-scatters, the momentum sharded, all-gathers), must give the CPU
--dp=2 artifact's weights within 1e-5 (max |a - b| / max |b| per tensor) and its logged
losses, both ways:
  - staged through the host (TFC_COMM_DEVICE=host);
  - over NCCL (TFC_COMM_DEVICE=nccl) with the fake libnccl.so.2 of test/cuda_emulator, which
    runs NCCL's collectives over MPI, refuses ncclCommInitRank unless every rank passed rank
    0's unique id (the runtime's bootstrap over MPI), and counts the collectives it ran (the
    proof that the NCCL path, not the host one, ran them).
TFC_COMM_DEVICE=nccl without a loadable NCCL fails before any step, naming the library,
with a non-zero exit and no hang; TFC_COMM_DEVICE=auto then falls back on the host and says
so. An entry with a collective is never captured as a CUDA graph (the host takes part in
it): every step runs eagerly. Prints the numbers and one verdict line.
"""

import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_data_parallel import (GPT2, RTOL, STEPS, check, failures,  # noqa: E402
                                 mpi_job, random_tokens, read_losses, read_safetensors, run)


def main():
    args, mpirun, env, p = mpi_job(__doc__, [
        ("--emulate", dict(required=True, help="the emulated libcuda.so.1")),
        ("--fake-nccl", dict(required=True, help="the fake libnccl.so.2 of the emulator"))])
    tool = lambda name: os.path.join(args.bin_dir, name)
    env = dict(env, TFC_CUDA_DRIVER=os.path.abspath(args.emulate))
    fake_nccl = os.path.abspath(args.fake_nccl)
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

    def train(kind, tag, steps=STEPS, expect=0, extra_env=()):
        """Trains artifact `kind` under mpirun; its checkpoint and log are `tag`'s. Returns
        the run's stdout + stderr."""
        artifact = kind.replace("-nccl", "")
        result = run(mpirun + ["-np", "2", tool("tfc-run"), p(f"{artifact}.so"),
                     "train", "--data", p("train.bin"), "--init-seed", "0", "--seed", str(seed),
                     "--steps", str(steps), "--lr", "0.3", "--momentum", "0.9",
                     "--save", p(f"{tag}.safetensors"), "--log", p(f"{tag}.csv")],
                     env=dict(env, TFC_CUDA_EMULATOR_KERNELS=p(f"{artifact}-kernels.so"),
                              **dict(extra_env)),
                     timeout=900, expect=expect)
        return result.stdout + result.stderr

    host = dict(TFC_COMM_DEVICE="host")
    nccl = dict(TFC_COMM_DEVICE="nccl", TFC_NCCL_LIBRARY=fake_nccl, TFC_COMM_STATS="1")
    train("cpu", "cpu")
    runs = {}  # tag -> label
    for kind in kinds:
        zero = "ZeRO-1 " if kind == "cuda-zero" else ""
        text = train(kind, kind, extra_env=host)
        check("tfc: collectives staged through the host over MPI (TFC_COMM_DEVICE=host)" in text
              and "fake-nccl" not in text,
              f"CUDA {zero}DP=2, TFC_COMM_DEVICE=host: rank 0 says the collectives are staged "
              "through the host")
        runs[kind] = f"CUDA {zero}DP=2 (host)"
        text = train(kind, kind + "-nccl", extra_env=nccl)
        said = "tfc: collectives on the GPUs over NCCL 2.28.9 (" + fake_nccl in text
        counts = {int(r): int(n) for r, n in
                  re.findall(r"fake-nccl: rank (\d) of 2: (\d+) collectives", text)}
        stats = re.findall(r"tfc comm stats: rank \d of 2: (\d+) collectives over NCCL", text)
        # Per step at least the gradients' collective and the loss's; ZeRO-1 also gathers.
        least = STEPS * (3 if kind == "cuda-zero" else 2)
        check(said and sorted(counts) == [0, 1] and min(counts.values()) >= least and
              len(set(counts.values())) == 1 and
              sorted(stats) == sorted(str(n) for n in counts.values()),
              f"CUDA {zero}DP=2, TFC_COMM_DEVICE=nccl: rank 0 says NCCL runs the collectives, and "
              f"both ranks ran them through the fake NCCL after its check of the unique id "
              f"({counts}, >= {least}; the runtime counted {stats})")
        runs[kind + "-nccl"] = f"CUDA {zero}DP=2 (NCCL)"

    want, ref = read_safetensors(p("cpu.safetensors")), read_losses(p("cpu.csv"))
    for tag, label in runs.items():
        got = read_safetensors(p(f"{tag}.safetensors"))
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
        losses = read_losses(p(f"{tag}.csv"))
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
        check(len(losses) == STEPS and diff <= RTOL,
              f"{label}: the logged loss of every step equals the CPU's (max rel diff {diff:.2e})")

    # No NCCL where one is required: a clear error before any step, never a hang.
    missing = dict(TFC_NCCL_LIBRARY="/nonexistent/libnccl.so.2")
    text = train("cuda", "missing", steps=1, expect=None,
                 extra_env=dict(missing, TFC_COMM_DEVICE="nccl"))
    check("TFC_COMM_DEVICE=nccl, but NCCL cannot be used: TFC_NCCL_LIBRARY=/nonexistent/"
          "libnccl.so.2 not loadable" in text and "step 1/" not in text and
          not os.path.exists(p("missing.safetensors")),
          "TFC_COMM_DEVICE=nccl with TFC_NCCL_LIBRARY=/nonexistent: the error names the "
          "library, before any step")
    # The same under auto: staged through the host, and rank 0 says why.
    text = train("cuda", "fallback", steps=1, extra_env=dict(missing, TFC_COMM_DEVICE="auto"))
    check("tfc: collectives staged through the host over MPI (TFC_NCCL_LIBRARY=/nonexistent/"
          "libnccl.so.2 not loadable" in text and os.path.exists(p("fallback.safetensors")),
          "TFC_COMM_DEVICE=auto without NCCL: one step staged through the host, rank 0 says why")
    # An unknown transport is refused by name.
    text = train("cuda", "unknown", steps=1, expect=None,
                 extra_env=dict(TFC_COMM_DEVICE="gpu"))
    check("TFC_COMM_DEVICE='gpu' is not a transport" in text and
          not os.path.exists(p("unknown.safetensors")),
          "TFC_COMM_DEVICE=gpu: refused, naming the variable and the choices")

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": data-parallel training of a CUDA artifact")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

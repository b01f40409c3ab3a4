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
A pipeline-parallel CUDA artifact (--pp=2, 2 micro-batches; the stages' messages staged
through the host, with TFC_COMM_DEVICE=host and beside NCCL's collectives) gives the CPU
--pp=2 artifact's weights and losses within 1e-5.
TFC_COMM_DEVICE=nccl without a loadable NCCL fails before any step, naming the library,
with a non-zero exit and no hang; TFC_COMM_DEVICE=auto then falls back on the host and says
so. An NCCL collective that fails on one rank ends the job with an error naming it. An entry with a collective is never captured as a CUDA graph (the host takes part in
it): every step runs eagerly. Prints the numbers and one verdict line.
"""

import os
import re
import sys
import time

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
    # Pipeline parallel (--pp=2, 2 micro-batches of 2 rows): the activations and their
    # gradients staged through the host between the stages; the CPU --pp=2 artifact is the
    # reference.
    pipeline = [p("gpt2.mlir"), "--optimizer=sgd", "--pp=2", "--microbatches=2"]
    run([tool("tfc"), *pipeline, "-o", p("cpu-pp.so")])
    run([tool("tfc"), *pipeline, "--target=cuda", f"--dump-ir={p('cuda-pp-dump')}",
         "-o", p("cuda-pp.so")])
    run([sys.executable, os.path.join(HERE, "..", "..", "cuda_emulator", "build_host_kernels.py"),
         "--dump-dir", p("cuda-pp-dump"), "--out", p("cuda-pp-kernels.so")], timeout=900)

    def train(kind, tag, steps=STEPS, expect=0, extra_env=(), timeout=900):
        """Trains artifact `kind` under mpirun; its checkpoint and log are `tag`'s. Returns
        the run's stdout + stderr."""
        artifact = kind.replace("-nccl", "")
        result = run(mpirun + ["-np", "2", tool("tfc-run"), p(f"{artifact}.so"),
                     "train", "--data", p("train.bin"), "--init-seed", "0", "--seed", str(seed),
                     "--steps", str(steps), "--lr", "0.3", "--momentum", "0.9",
                     "--save", p(f"{tag}.safetensors"), "--log", p(f"{tag}.csv")],
                     env=dict(env, TFC_CUDA_EMULATOR_KERNELS=p(f"{artifact}-kernels.so"),
                              **dict(extra_env)),
                     timeout=timeout, expect=expect)
        train.returncode = result.returncode
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

    train("cpu-pp", "cpu-pp")
    text = train("cuda-pp", "cuda-pp", extra_env=host)
    check("pipeline parallel: 2 stages" in text,
          "CUDA --pp=2 (host): rank 0 names the stages")
    text = train("cuda-pp", "cuda-pp-nccl", extra_env=nccl)
    check("tfc: collectives on the GPUs over NCCL" in text,
          "CUDA --pp=2, TFC_COMM_DEVICE=nccl: the stages' messages staged through the host "
          "beside NCCL")

    want, ref = read_safetensors(p("cpu.safetensors")), read_losses(p("cpu.csv"))
    pipeline_runs = {"cuda-pp": "CUDA --pp=2 (host)", "cuda-pp-nccl": "CUDA --pp=2 (NCCL)"}
    for tag, label in {**runs, **pipeline_runs}.items():
        if tag in pipeline_runs:
            want, ref = read_safetensors(p("cpu-pp.safetensors")), read_losses(p("cpu-pp.csv"))
        got = read_safetensors(p(f"{tag}.safetensors"))
        check(set(got) == set(want), f"{label}: the checkpoint holds the CPU's tensors")
        worst, worst_name = 0.0, ""
        for name, b in want.items():
            a = got[name].astype(np.float64).ravel()
            b = b.astype(np.float64).ravel()
            rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
            if rel > worst:
                worst, worst_name = rel, name
        check(worst <= RTOL, f"{label} vs the CPU artifact after {STEPS} SGD steps: worst "
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
    # An NCCL older than 2.10 (no ncclAvg) is refused with both versions named.
    text = train("cuda", "old", steps=1, expect=None,
                 extra_env=dict(nccl, TFC_FAKE_NCCL_VERSION="20804"))
    check("NCCL 2.8.4 is older than 2.10.0, which tfc needs (ncclAvg)" in text and
          train.returncode != 0 and not os.path.exists(p("old.safetensors")),
          "TFC_COMM_DEVICE=nccl with NCCL 2.8.4: refused before any step, naming both versions")
    # The same under auto: staged through the host, and rank 0 says why.
    text = train("cuda", "fallback", steps=1, extra_env=dict(missing, TFC_COMM_DEVICE="auto"))
    check("tfc: collectives staged through the host over MPI (TFC_NCCL_LIBRARY=/nonexistent/"
          "libnccl.so.2 not loadable" in text and os.path.exists(p("fallback.safetensors")),
          "TFC_COMM_DEVICE=auto without NCCL: one step staged through the host, rank 0 says why")
    # A collective that fails on one rank (the fake NCCL's injected ncclRemoteError on rank
    # 1's 5th collective) while rank 0 waits in it: rank 1's error names the NCCL call, the
    # group and the ranks, its NCCL communicator is aborted, the entry's later collectives
    # fail too (none falls back on MPI, where it would meet another collective of rank 0),
    # and the job is aborted at rank 1's exit (MPI_Abort), so rank 0 does not hang (for the
    # 300 s of TFC_COMM_TIMEOUT_S, nor for ever in the fake's blocking MPI call).
    start = time.time()
    text = train("cuda", "nccl-fail", expect=None, timeout=240, extra_env=dict(
        nccl, TFC_FAKE_NCCL_FAIL_RANK="1", TFC_FAKE_NCCL_FAIL_AT="5"))
    seconds = time.time() - start
    check(re.search(r"nccl\w+ of group '[^']*' \(\d+ (elements|bytes)\), rank 1 of 2 on GPU 0: "
                    r"tfc CUDA emulator \(sm_90\): could not start: remote process exited",
                    text) is not None and
          "fake-nccl: rank 1 of 2: aborted after 4 collectives" in text and
          train.returncode != 0 and seconds < 120 and
          # Over MPI, rank 1 ran the setup's 3 (the ranks that load NCCL, the unique id, the
          # ranks whose ncclCommInitRank succeeded), none of step 1's collectives.
          "tfc comm stats: rank 1 of 2: 3 collectives (0 buckets)" in text and
          not os.path.exists(p("nccl-fail.safetensors")),
          f"an NCCL collective failing on rank 1: the error names it, the group and the ranks, "
          f"and the job ends (rc {train.returncode}) in {seconds:.1f} s instead of hanging")
    # A collective that never finishes on one rank (the fake NCCL's injected stall of rank
    # 1's 5th collective: its stream stays busy, NCCL says in progress), with a deadline of
    # 3 s: rank 1 polls until TFC_COMM_TIMEOUT_S, aborts its NCCL communicator and fails,
    # naming the collective and the deadline; the job ends instead of hanging (rank 0 waits
    # in the fake's blocking MPI call until mpirun stops it).
    start = time.time()
    text = train("cuda", "nccl-stall", expect=None, timeout=240, extra_env=dict(
        nccl, TFC_FAKE_NCCL_STALL_RANK="1", TFC_FAKE_NCCL_STALL_AT="5",
        TFC_COMM_TIMEOUT_S="3"))
    seconds = time.time() - start
    check(re.search(r"nccl\w+ of group '[^']*' \(\d+ (elements|bytes)\), rank 1 of 2 on GPU 0: "
                    r"tfc CUDA emulator \(sm_90\): did not complete within 3 s "
                    r"\(TFC_COMM_TIMEOUT_S\)", text) is not None and
          "fake-nccl: rank 1 of 2: aborted after 4 collectives" in text and
          train.returncode != 0 and 3 <= seconds < 120 and
          not os.path.exists(p("nccl-stall.safetensors")),
          f"an NCCL collective that never finishes on rank 1: it times out after "
          f"TFC_COMM_TIMEOUT_S=3, the error names it and the deadline, and the job ends "
          f"(rc {train.returncode}) in {seconds:.1f} s")
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

#!/usr/bin/env python3
"""Checks the host CUDA device model (test/cuda_emulator/host_shim.h) and the kernel
library's cooperative kernels (codegen/cuda/kernels) on fresh random inputs against NumPy,
and that the model reports each deliberately wrong kernel with its name:

    check_device_model.py --work DIR [--seed S] [--nvcc PATH|none]

kernels.cu is compiled as host C++ with harness.cpp and run one kernel at a time; then,
where nvcc is found (CUDA's, or --nvcc), the same file is compiled for sm_80, sm_90 and
sm_90a with ptxas's report, and any register spill or stack frame fails the check. Prints the seed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
INCLUDES = [os.path.join(ROOT, "test", "cuda_emulator"), HERE,
            os.path.join(ROOT, "codegen", "cuda", "kernels"),
            os.path.join(ROOT, "runtime", "include", "tfc")]
TIMEOUT = 300
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(harness, work, kernel, grid, block, shared, inputs, out_count, extra=()):
    files = []
    for i, x in enumerate(inputs):
        path = os.path.join(work, f"{kernel}.in{i}.bin")
        x.tofile(path)
        files.append(path)
    out = os.path.join(work, f"{kernel}.out.bin")
    if os.path.exists(out):
        os.remove(out)
    args = [harness, kernel, *map(str, grid), *map(str, block), str(shared), *files, out]
    args += [str(out_count)] if out_count is not None else []
    args += [str(e) for e in extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode == 3:
        return None, r.stdout.strip()
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return np.fromfile(out, np.float32), ""


def bf16_bits(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def faults(harness, work, rng):
    x = rng.standard_normal(1024).astype(np.float32)
    cases = [  # kernel, threads, what the report must say
        ("block_sum_bad_race", 256, r"kernel block_sum_bad_race: shared memory race on partial\["),
        ("shared_bad_bounds", 65, r"kernel shared_bad_bounds: shared memory out of bounds: "
                                  r"thread \(64,0,0\) wrote row\[64\], which has 64 elements"),
        ("shared_bad_uninitialized", 64, r"kernel shared_bad_uninitialized: read of uninitialized "
                                         r"shared memory: .* read row\[5\]"),
        ("barrier_bad_divergent", 64, r"kernel barrier_bad_divergent: thread \(16,0,0\) left the "
                                      r"kernel while 16 threads wait at __syncthreads\(\)"),
        ("collective_bad_divergent", 32, r"kernel collective_bad_divergent: lanes of one warp meet "
                                         r"different collectives"),
        ("warp_bad_race", 32, r"kernel warp_bad_race: shared memory race on cell\[0\]"),
    ]
    for kernel, threads, want in cases:
        got, message = run(harness, work, kernel, (1, 1, 1), (threads, 1, 1), 0, [x], threads)
        check(got is None and re.search(want, message) is not None,
              f"{kernel} is reported: {message or 'no fault'}")


def collectives(harness, work, rng):
    blocks = 3
    x = rng.standard_normal(64 * blocks).astype(np.float32)
    got, message = run(harness, work, "block_sum", (1, 1, 1), (256, 1, 1), 0,
                        [rng.standard_normal(256).astype(np.float32)], 1)
    check(got is not None, f"block_sum runs: {message}")
    xs = rng.standard_normal(256 * 4).astype(np.float32)
    got, message = run(harness, work, "block_sum", (4, 1, 1), (256, 1, 1), 0, [xs], 4)
    want = xs.reshape(4, 256).astype(np.float64).sum(1)
    bound = 256 * 2.0**-23 * np.abs(xs.reshape(4, 256)).sum(1)
    check(got is not None and np.all(np.abs(got - want) <= bound),
          f"block_sum over 4 blocks matches NumPy {message}")

    got, message = run(harness, work, "warp_sync", (1, 1, 1), (32, 1, 1), 0, [x], 1)
    check(got is not None and got[0] == x[0], f"warp_sync: __syncwarp orders lanes {message}")

    got, message = run(harness, work, "warp_collectives", (blocks, 1, 1), (8, 4, 2), 0, [x],
                       64 * blocks * 6)
    ok = got is not None
    if ok:
        got = got.reshape(blocks, 2, 32, 6)
        w = x.reshape(blocks, 2, 32).astype(np.float64)
        tol = 32 * 2.0**-23 * np.abs(w).sum(-1, keepdims=True) + 1e-30
        ok &= bool(np.all(np.abs(got[..., 0] - w.sum(-1, keepdims=True)) <= tol))
        ok &= bool(np.all(got[..., 1] == w.max(-1, keepdims=True)))
        ok &= bool(np.all(np.abs(got[..., 2] - w.sum(-1, keepdims=True)) <= tol))
        ok &= bool(np.all(np.abs(got[..., 3] - np.cumsum(w, -1)) <= tol))
        ok &= bool(np.all(got[..., 4] == (w > 0).sum(-1, keepdims=True)))
        want5 = (w > 2).any(-1, keepdims=True) * 2 + (w > -2).all(-1, keepdims=True)
        ok &= bool(np.all(got[..., 5] == want5))
    check(ok, f"warp_collectives over block (8,4,2): sums, max, shfl_down, shfl_up scan, "
              f"ballot, any/all {message}")

    n = 48
    got, message = run(harness, work, "dynamic_reverse", (4, 1, 1), (n, 1, 1), n * 4,
                       [x[:4 * n]], 4 * n)
    check(got is not None and np.array_equal(got, x[:4 * n].reshape(4, n)[:, ::-1].ravel()),
          f"dynamic_reverse: dynamic shared memory {message}")
    got, message = run(harness, work, "dynamic_reverse", (1, 1, 1), (n, 1, 1), n * 4 - 4,
                       [x[:n]], n)
    check(got is None and "out of bounds" in message and "dynamic shared memory" in message,
          f"dynamic_reverse with too little dynamic shared memory is reported: {message}")


def f16_bits(x):
    return np.asarray(x, np.float16).view(np.uint16)


def gemms(harness, work, rng):
    shapes = [(64, 64, 32, 1), (70, 45, 50, 1), (128, 96, 80, 2), (16, 200, 24, 1), (1, 8, 16, 1)]
    for kernel, ta, tb, bf16 in [("gemm_bf16_nn", 0, 0, 1), ("gemm_bf16_tn", 1, 0, 1),
                                 ("gemm_bf16_nt", 0, 1, 1), ("gemm_f16_nn", 0, 0, 0),
                                 ("gemm_f16_tt", 1, 1, 0)]:
        for m, n, k, batch in shapes:
            a = rng.standard_normal((batch, m, k)).astype(np.float32)
            b = rng.standard_normal((batch, k, n)).astype(np.float32)
            if bf16:
                abits, bbits = bf16_bits(a), bf16_bits(b)
                av, bv = bf16_value(abits), bf16_value(bbits)
            else:
                abits, bbits = f16_bits(a), f16_bits(b)
                av = abits.view(np.float16).astype(np.float64)
                bv = bbits.view(np.float16).astype(np.float64)
            stored_a = abits.transpose(0, 2, 1) if ta else abits
            stored_b = bbits.transpose(0, 2, 1) if tb else bbits
            grid = ((n + 63) // 64, (m + 63) // 64, batch)
            got, message = run(harness, work, kernel, grid, (128, 1, 1), 0,
                               [np.ascontiguousarray(stored_a), np.ascontiguousarray(stored_b)],
                               None, (m, n, k))
            ok = got is not None
            if ok:
                got = got.reshape(batch, m, n)
                want = av @ bv
                # f32 accumulation of k products, each exact: k roundings at most.
                bound = (k + 1) * 2.0**-24 * (np.abs(av) @ np.abs(bv)) + 1e-30
                excess = np.abs(got - want) - bound
                ok = bool(np.all(excess <= 0))
                if not ok:
                    idx = np.unravel_index(np.argmax(excess), excess.shape)
                    message = f"at {idx}: got {got[idx]} want {want[idx]}"
            check(ok, f"{kernel} {batch}x{m}x{n}x{k} vs NumPy {message}")


def ptxas(nvcc, work):
    src = os.path.join(HERE, "kernels.cu")
    for arch in ("sm_80", "sm_90", "sm_90a"):
        out = os.path.join(work, f"kernels.{arch}.cubin")
        cmd = [nvcc, "-std=c++17", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", out, src]
        cmd += [f"-I{d}" for d in INCLUDES[1:]]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            check(False, f"nvcc {arch}: {r.stderr.strip()[:3000]}")
            continue
        # A stack frame is a register array indexed at run time (a loop that was not
        # unrolled: TFC_UNROLL), as slow as a spill.
        spills = [line for line in r.stderr.splitlines()
                  if re.search(r"[1-9]\d* bytes (spill (stores|loads)|stack frame)", line)]
        check(not spills, f"ptxas {arch}: no spills, no stack frames {spills[:3]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--nvcc", default=None, help="nvcc to compile for the GPUs, or 'none'")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed} (replay with --seed {seed})")
    rng = np.random.default_rng(seed)
    os.makedirs(args.work, exist_ok=True)
    harness = os.path.join(args.work, "harness")
    cmd = [args.cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-Wall", "-Wextra", "-o", harness,
           os.path.join(HERE, "harness.cpp")] + [f"-I{d}" for d in INCLUDES]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        print(f"FAIL host build: {r.stderr[:4000]}")
        return 1
    faults(harness, args.work, rng)
    collectives(harness, args.work, rng)
    gemms(harness, args.work, rng)
    nvcc = args.nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if nvcc != "none" and os.path.isfile(nvcc):
        ptxas(nvcc, args.work)
    else:
        print("SKIPPED ptxas checks: no nvcc (pass --nvcc)")
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

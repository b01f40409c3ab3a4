#!/usr/bin/env python3
"""NumPy (OpenBLAS) sgemm on the shapes of tfc-kernels-bench, for the peer ratio.

Usage: OPENBLAS_NUM_THREADS=1 python3 bench_numpy.py [--min-time 0.3]
Prints the BLAS in use, then per shape: threads, median ms, GFLOP/s, best GFLOP/s, and
GFLOP/s from the median process CPU time divided by the threads (robust to a loaded
machine; spinning threads count as busy).
Run it interleaved with tfc-kernels-bench in the same session (see BENCHMARKING.md).
"""
import argparse
import os
import time

import numpy as np

SHAPES = [
    ("qkv    [256x768]@[768x2304]", 256, 2304, 768, False),
    ("attn_o [256x768]@[768x768]", 256, 768, 768, False),
    ("mlp_up [256x768]@[768x3072]", 256, 3072, 768, False),
    ("mlp_dn [256x3072]@[3072x768]", 256, 768, 3072, False),
    ("lm_head [256x768]@[768x50257]^T", 256, 50257, 768, True),
    ("pf qkv    [128x768]@[768x2304]", 128, 2304, 768, False),
    ("pf attn_o [128x768]@[768x768]", 128, 768, 768, False),
    ("pf mlp_up [128x768]@[768x3072]", 128, 3072, 768, False),
    ("pf mlp_dn [128x3072]@[3072x768]", 128, 768, 3072, False),
    ("ed [1024x32]@[32x32]", 1024, 32, 32, False),
    ("ed [1024x32]@[32x128]", 1024, 128, 32, False),
    ("ed [1024x128]@[128x32]", 1024, 32, 128, False),
    ("dec qkv [1x768]@[768x2304]", 1, 2304, 768, False),
    ("dec attn_o [1x768]@[768x768]", 1, 768, 768, False),
    ("dec mlp_up [1x768]@[768x3072]", 1, 3072, 768, False),
    ("dec mlp_dn [1x3072]@[3072x768]", 1, 768, 3072, False),
    ("dec lm_head [1x768]@[768x50257]^T", 1, 50257, 768, True),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "?")
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info = f'{blas.get("name")} {blas.get("version")}'
    except Exception:  # older NumPy: see numpy.show_config()
        info = "unknown (see numpy.show_config())"
    print(f"# numpy {np.__version__}, BLAS: {info}, OPENBLAS_NUM_THREADS={threads}")
    rng = np.random.default_rng(0)
    for name, m, n, k, tb in SHAPES:
        if args.filter and args.filter not in name:
            continue
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
        bt = b.T if tb else b
        out = np.empty((m, n), np.float32)
        np.matmul(a, bt, out=out)  # warm-up
        times, cpus = [], []
        total = 0.0
        while (total < args.min_time or len(times) < 5) and len(times) < 200:
            t0, c0 = time.perf_counter(), time.process_time()
            np.matmul(a, bt, out=out)
            dt = time.perf_counter() - t0
            cpus.append(time.process_time() - c0)
            times.append(dt)
            total += dt
        times.sort()
        cpus.sort()
        nthr = int(threads) if threads.isdigit() else 1
        med = times[len(times) // 2]
        flops = 2.0 * m * n * k
        print(f"{name:36s} {threads:>8s} {med * 1e3:10.3f} {flops / med * 1e-9:10.1f} "
              f"{flops / times[0] * 1e-9:10.1f} "
              f"{flops / (cpus[len(cpus) // 2] / nthr) * 1e-9:10.1f}", flush=True)


if __name__ == "__main__":
    main()

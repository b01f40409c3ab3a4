#!/usr/bin/env python3
"""tfc's CUDA products and attention next to PyTorch's on the same GPU, shape by shape.

Issue 30's kernel targets: products at >= 85% of torch.matmul's throughput, attention
forward + backward at >= 80% of F.scaled_dot_product_attention's, on gpt2-124m's training
shapes (B=8, T=1024). Each case is a tiny tfc module whose operands are parameters drawn by
`tfc-run --init-seed` (so that no input is copied per call) and whose entry returns one row
of the result (so that no large output is copied back); `tfc-run profile` times its kernels
between CUDA events, and the case's figure is the product's (or the two attention kernels')
time per call. PyTorch runs the same shapes and dtypes, timed with CUDA events, median of
the repeats.

Here, where tfc is built (no GPU needed):
    gpu_kernels.py prepare --bin-dir build/bin --out DIR [--cuda-arch sm_90] [--small]
There (scripts/gpu-check.sh runs it):
    gpu_kernels.py run --dir DIR --tfc-run BIN/tfc-run [--device N] [--repeat 20]
--small: shapes a few hundred times smaller, to try the whole path on the CUDA emulator
(TFC_CUDA_DRIVER, TFC_CUDA_EMULATOR_KERNELS) and PyTorch on the CPU (`run --torch-device cpu`).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

B, T, C, H, V = 8, 1024, 768, 12, 50257  # gpt2-124m, B=8 T=1024


def cases(small):
    """(name, kind, spec): kind "matmul" (m, k, n, dtype, transpose_rhs, flags) or
    "attention" (b, h, t, d, dtype)."""
    s = 16 if small else 1
    rows, c, v = B * T // s, C // s if small else C, V // 64 if small else V
    out = []
    for dtype, flags in (("bf16", []), ("f32", []), ("f32", ["--cuda-tf32"])):
        tag = dtype + (" tf32" if flags else "")
        out += [(f"qkv {tag}", "matmul", (rows, c, 3 * c, dtype, False, flags)),
                (f"attn proj {tag}", "matmul", (rows, c, c, dtype, False, flags)),
                (f"mlp up {tag}", "matmul", (rows, c, 4 * c, dtype, False, flags)),
                (f"mlp down {tag}", "matmul", (rows, 4 * c, c, dtype, False, flags))]
        if dtype == "bf16":
            out.append((f"lm_head {tag}", "matmul", (rows, c, v, dtype, True, flags)))
    t = T // 8 if small else T
    out.append(("attention fwd+bwd causal bf16", "attention", (B // 4 if small else B, H, t, 64,
                                                                "bf16")))
    return out


def matmul_module(m, k, n, dtype, transpose_rhs):
    b_shape = f"{n}x{k}" if transpose_rhs else f"{k}x{n}"
    t = "transpose_rhs " if transpose_rhs else ""
    return f"""module {{
  tfc.param @a : tensor<{m}x{k}x{dtype}> = "normal(0.0, 1.0)"
  tfc.param @b : tensor<{b_shape}x{dtype}> = "normal(0.0, 1.0)"
  func.func @f() -> (tensor<1x{n}x{dtype}> {{tfc.name = "row"}}) {{
    %a = tfc.load @a : tensor<{m}x{k}x{dtype}>
    %b = tfc.load @b : tensor<{b_shape}x{dtype}>
    %c = tfc.matmul %a, %b {t}: tensor<{m}x{k}x{dtype}>, tensor<{b_shape}x{dtype}> -> tensor<{m}x{n}x{dtype}>
    %r = tfc.slice %c start = [0, 0] limit = [1, {n}] stride = [1, 1] : tensor<{m}x{n}x{dtype}> -> tensor<1x{n}x{dtype}>
    return %r : tensor<1x{n}x{dtype}>
  }}
}}
"""


def attention_module(b, h, t, d, dtype):
    x = f"tensor<{b}x{h}x{t}x{d}x{dtype}>"
    row = f"tensor<1x1x1x{d}x{dtype}>"
    params = "\n".join(f'  tfc.param @{n} : {x} = "normal(0.0, 1.0)"' for n in "qkvg")
    cut = f"start = [0, 0, 0, 0] limit = [1, 1, 1, {d}] stride = [1, 1, 1, 1] : {x} -> {row}"
    return f"""module {{
{params}
  func.func @f() -> ({row} {{tfc.name = "o"}}, {row} {{tfc.name = "dq"}}, {row} {{tfc.name = "dk"}}, {row} {{tfc.name = "dv"}}) {{
    %q = tfc.load @q : {x}
    %k = tfc.load @k : {x}
    %v = tfc.load @v : {x}
    %g = tfc.load @g : {x}
    %o = tfc.attention %q, %k, %v causal : ({x}, {x}, {x}) -> {x}
    %d:3 = tfc.attention_grad %q, %k, %v, %o, %g causal : ({x}, {x}, {x}, {x}, {x}) -> ({x}, {x}, {x})
    %r0 = tfc.slice %o {cut}
    %r1 = tfc.slice %d#0 {cut}
    %r2 = tfc.slice %d#1 {cut}
    %r3 = tfc.slice %d#2 {cut}
    return %r0, %r1, %r2, %r3 : {row}, {row}, {row}, {row}
  }}
}}
"""


def flops(kind, spec):
    if kind == "matmul":
        m, k, n = spec[:3]
        return 2.0 * m * k * n
    b, h, t, d = spec[:4]
    # Causal: half the scores; forward 2 products, backward 5 (FlashAttention-2's count).
    return 0.5 * 7 * 2.0 * b * h * t * t * d


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")


def prepare(a):
    os.makedirs(a.out, exist_ok=True)
    tfc = os.path.join(a.bin_dir, "tfc")
    listed = []
    for name, kind, spec in cases(a.small):
        path = os.path.join(a.out, slug(name))
        text = matmul_module(*spec[:5]) if kind == "matmul" else attention_module(*spec)
        with open(path + ".mlir", "w") as f:
            f.write(text)
        flags = spec[5] if kind == "matmul" else []
        cmd = [tfc, path + ".mlir", "--target=cuda", f"--cuda-arch={a.cuda_arch}", *flags,
               "-o", path + ".so"] + ([f"--dump-ir={path}-dump"] if a.dump else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"gpu_kernels: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
        os.remove(path + ".mlir")
        listed.append({"name": name, "kind": kind, "spec": spec, "so": slug(name) + ".so"})
        print(f"gpu_kernels: {name}: {slug(name)}.so", flush=True)
    with open(os.path.join(a.out, "cases.json"), "w") as f:
        json.dump(listed, f, indent=1)


def tfc_ms(a, case, products=None):
    """Milliseconds a call of the case's product or attention kernels, from tfc-run
    profile's per-kernel rows (times per call); `products` sets TFC_CUDA_PRODUCTS
    ("kernels": tfc's own product kernels; None: cuBLASLt where it loads)."""
    so = os.path.join(a.dir, case["so"])
    # The peak and bandwidth only set the profile's floors, not the times read here.
    cmd = [a.tfc_run, so, "profile", "f", "--init-seed", "1", "--repeat", str(a.repeat),
           "--device", str(a.device), "--peak-gflops", str(a.peak_gflops),
           "--bandwidth-gbs", str(a.bandwidth_gbs)]
    env = dict(os.environ)
    if products:
        env["TFC_CUDA_PRODUCTS"] = products
    if "TFC_CUDA_DRIVER" in env:  # the emulator: each artifact's kernels built for the host
        env["TFC_CUDA_EMULATOR_KERNELS"] = so[:-3] + "-kernels.so"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()[-1000:]}")
    wanted = ("matmul",) if case["kind"] == "matmul" else ("attention", "attention_grad")
    total, seen = 0.0, []
    table = r.stdout.split("by kind of kernel:")[0]
    for line in table.splitlines():
        m = re.match(r"\s*([0-9.]+)\s+[0-9.]+\s+\d+\s+.*\s(k\d+_\w+): (\w+)\s*$", line)
        if m and m.group(3) in wanted:
            total += float(m.group(1))
            seen.append(m.group(3))
    if sorted(seen) != sorted(wanted):
        raise RuntimeError(f"no {wanted} kernels in the profile of {so}:\n{r.stdout[-2000:]}")
    return total


def torch_ms(a, case):
    import torch
    import torch.nn.functional as F
    dev = torch.device(a.torch_device)
    kind, spec = case["kind"], case["spec"]
    dtype = torch.bfloat16 if spec[4 if kind == "attention" else 3] == "bf16" else torch.float32
    if kind == "matmul":
        m, k, n, _, transpose_rhs, flags = spec
        torch.backends.cuda.matmul.allow_tf32 = "--cuda-tf32" in flags
        x = torch.randn(m, k, device=dev, dtype=dtype)
        w = torch.randn(n, k, device=dev, dtype=dtype) if transpose_rhs else torch.randn(
            k, n, device=dev, dtype=dtype)

        def step():
            return x @ (w.t() if transpose_rhs else w)
    else:
        b, h, t, d, _ = spec
        q, k, v = (torch.randn(b, h, t, d, device=dev, dtype=dtype, requires_grad=True)
                   for _ in range(3))
        g = torch.randn(b, h, t, d, device=dev, dtype=dtype)

        def step():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o.backward(g)
    for _ in range(3):
        step()
    times = []
    for _ in range(a.repeat):
        if dev.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            import time
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(a):
    listed = json.load(open(os.path.join(a.dir, "cases.json")))
    rows = ["| case | tfc ms | tfc TFLOP/s | tfc kernels ms | PyTorch ms | PyTorch TFLOP/s "
            "| tfc / PyTorch |", "|---|---|---|---|---|---|---|"]
    failed = False
    for case in listed:
        if a.only and a.only not in case["name"]:
            continue
        f = flops(case["kind"], case["spec"])
        try:
            mine = tfc_ms(a, case)
            # A product again on tfc's own kernels (what runs without cuBLASLt).
            own = tfc_ms(a, case, "kernels") if case["kind"] == "matmul" else None
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"gpu_kernels: {case['name']}: tfc: {e}", file=sys.stderr)
            mine, own, failed = None, None, True
        try:
            peer = torch_ms(a, case)
        except Exception as e:  # noqa: BLE001 (a peer's failure is reported, not fatal)
            print(f"gpu_kernels: {case['name']}: PyTorch: {e}", file=sys.stderr)
            peer = None
        cell = lambda ms: (f"{ms:.3f}", f"{f / ms / 1e9:.1f}") if ms else ("-", "-")  # noqa
        ratio = f"{peer / mine:.2f}x" if mine and peer else "-"
        rows.append(f"| {case['name']} | {' | '.join(cell(mine))} | "
                    f"{f'{own:.3f}' if own else '-'} | {' | '.join(cell(peer))} | {ratio} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))
    print("\ntfc: what a CUDA artifact runs by default (products on cuBLASLt where it loads); "
          "tfc kernels: the products on tfc's own kernels (TFC_CUDA_PRODUCTS=kernels).")
    print("tfc / PyTorch: PyTorch's time over tfc's (higher is better for tfc). Attention "
          "FLOPs: causal, forward 2 and backward 5 products of B*H*T*T*D/2 multiply-adds.")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--bin-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cuda-arch", default="sm_90")
    p.add_argument("--small", action="store_true")
    p.add_argument("--dump", action="store_true",
                   help="also --dump-ir each case (for the emulator's host kernels)")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--tfc-run", required=True)
    r.add_argument("--device", type=int, default=0)
    r.add_argument("--repeat", type=int, default=20)
    r.add_argument("--torch-device", default="cuda")
    r.add_argument("--only", help="only the cases whose name contains this")
    r.add_argument("--peak-gflops", type=float, default=989000,
                   help="for tfc-run profile's floors (default: H100/H200 dense bf16)")
    r.add_argument("--bandwidth-gbs", type=float, default=4800)
    a = ap.parse_args()
    if a.command == "prepare":
        prepare(a)
        return 0
    return run(a)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end check of the collectives as ops (tfc.all_to_all, tfc.all_gather,
tfc.reduce_scatter), forward and gradient, under mpirun, against NumPy.

One small module: rank r holds x_r [4, 3] (its own input), and the parameter w [4, 3], the
same on every rank; y_r = x_r * w, and each collective of y_r is weighted by c_r (another
input of the rank's own) and summed into the rank's loss L_r. `tfc --optimizer=sgd` compiles
`loss` and `loss_grad` (autodiff through the collectives' VJPs); every rank calls both with
fresh random inputs, and NumPy computes what they must give from all ranks' inputs:
  - all_to_all over N ranks: block s of rank r's result is block r of rank s's y
    (the leading dimension is N blocks); its gradient sends each cotangent block back;
  - all_gather: every rank's y concatenated in rank order; reduce_scatter (sum): block r
    of the sum of every rank's y.
The gradients are those of the sum of every rank's loss, with the all_gather term counted
once: its VJP follows Megatron's convention that a replicated result is one quantity whose
cotangent is the same on every rank (it takes the mean of the ranks' blocks), so its weights
g are the same on every rank; c and s differ per rank. The check is exact up to float
rounding: 1e-5 of the sum of the terms' magnitudes for the loss (their signs can cancel it
to near zero: a CI seed's loss of 0.0052 was off by 5e-5 of itself), 1e-5 relative for the
gradient. Prints the numbers and one verdict line.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_data_parallel import mpi_job  # noqa: E402
_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_E2E, "train"))
sys.path.insert(0, os.path.join(_E2E, "models"))
from check_train import run  # noqa: E402
from reference import write_safetensors  # noqa: E402

RTOL = 1e-5
failures = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def module(n):
    """The module for a group of n ranks (all_gather's result has n times the rows)."""
    return f"""
tfc.param @w : tensor<4x3xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4x3xf32> {{tfc.name = "x"}}, %c: tensor<4x3xf32> {{tfc.name = "c"}},
                %g: tensor<{4 * n}x3xf32> {{tfc.name = "g"}},
                %s: tensor<{4 // n}x3xf32> {{tfc.name = "s"}}) -> tensor<f32> {{
  %w = tfc.load @w : tensor<4x3xf32>
  %y = tfc.mul %x, %w : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %a = tfc.all_to_all %y {{group = "ep", size = {n} : i64}} : tensor<4x3xf32>
  %ac = tfc.mul %a, %c : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %la = tfc.reduce_sum %ac dims = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %b = tfc.all_gather %y {{group = "ep", size = {n} : i64}} : tensor<4x3xf32> -> tensor<{4 * n}x3xf32>
  %bg = tfc.mul %b, %g : tensor<{4 * n}x3xf32>, tensor<{4 * n}x3xf32> -> tensor<{4 * n}x3xf32>
  %lb = tfc.reduce_sum %bg dims = [0, 1] : tensor<{4 * n}x3xf32> -> tensor<f32>
  %r = tfc.reduce_scatter %y {{group = "ep", reduce = "sum", size = {n} : i64}} : tensor<4x3xf32> -> tensor<{4 // n}x3xf32>
  %rs = tfc.mul %r, %s : tensor<{4 // n}x3xf32>, tensor<{4 // n}x3xf32> -> tensor<{4 // n}x3xf32>
  %lr = tfc.reduce_sum %rs dims = [0, 1] : tensor<{4 // n}x3xf32> -> tensor<f32>
  %l1 = tfc.add %la, %lb : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = tfc.add %l1, %lr : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}}
"""


def reference(n, w, x, c, g, s):
    """Each rank's loss, the size of its terms (the sum of their magnitudes, against which
    float rounding is measured: the terms' signs can cancel the loss to near zero), and
    d(sum of the losses)/dw on each rank, in float64."""
    y = [x[r] * w for r in range(n)]
    blocks = lambda t: np.split(t, n, axis=0)
    a = [np.concatenate([blocks(y[s_])[r] for s_ in range(n)]) for r in range(n)]
    gathered = np.concatenate(y)
    total = sum(y)
    scattered = [blocks(total)[r] for r in range(n)]
    losses = [(a[r] * c[r]).sum() + (gathered * g[r]).sum() + (scattered[r] * s[r]).sum()
              for r in range(n)]
    magnitude = [blocks(sum(abs(t) for t in y))[r] for r in range(n)]
    scales = [abs(a[r] * c[r]).sum() + abs(gathered * g[r]).sum() +
              (magnitude[r] * abs(s[r])).sum() for r in range(n)]
    # dL/dy_r: y_r's block q became block r of a_q, weighted by c_q's block r; block r of
    # the gathered rows is y_r, weighted by g's block r (the same g on every rank, counted
    # once: all_gather's convention, above); y_r's block q is in block q of the sum, which
    # rank q weights by s_q.
    dy = [np.concatenate([blocks(c[q])[r] for q in range(n)]) +
          np.split(g[0], n, axis=0)[r] +
          np.concatenate([s[q] for q in range(n)]) for r in range(n)]
    dw = [dy[r] * x[r] for r in range(n)]
    return losses, scales, dw


def main():
    args, mpirun, env, p = mpi_job(__doc__, [("--emulate", dict(
        help="the emulated libcuda.so.1: check the CUDA target's artifact on it instead"))])
    tfc = os.path.join(args.bin_dir, "tfc")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    w = rng.normal(0, 1, (4, 3)).astype(np.float32)
    write_safetensors(p("w.safetensors"), {"w": w})
    for n in (2, 4):
        with open(p(f"c{n}.mlir"), "w") as f:
            f.write(module(n))
        compile_ = [tfc, p(f"c{n}.mlir"), "--optimizer=sgd", "-o", p(f"c{n}.so")]  # loss_grad
        if args.emulate:
            # The CUDA artifact's collectives are host calls on device buffers, which the
            # executor stages through the host; the emulator runs the other kernels.
            run(compile_ + ["--target=cuda", f"--dump-ir={p(f'dump{n}')}"])
            run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "..", "..", "cuda_emulator",
                                              "build_host_kernels.py"),
                 "--dump-dir", p(f"dump{n}"), "--out", p(f"kernels{n}.so")], timeout=900)
            env = dict(env, TFC_CUDA_DRIVER=os.path.abspath(args.emulate),
                       TFC_CUDA_EMULATOR_KERNELS=p(f"kernels{n}.so"))
        else:
            run(compile_)
        x = [rng.normal(0, 1, (4, 3)).astype(np.float32) for _ in range(n)]
        c = [rng.normal(0, 1, (4, 3)).astype(np.float32) for _ in range(n)]
        g = [rng.normal(0, 1, (4 * n, 3)).astype(np.float32)] * n  # replicated (see above)
        s = [rng.normal(0, 1, (4 // n, 3)).astype(np.float32) for _ in range(n)]
        for r in range(n):
            for name, v in (("x", x), ("c", c), ("g", g), ("s", s)):
                np.save(p(f"{name}{n}-{r}.npy"), v[r])
        ins = " ".join(f"--in {k}={p(k + str(n))}-$R.npy" for k in "xcgs")
        for entry in ("loss", "loss_grad"):
            rank_cmd = (f"R=$OMPI_COMM_WORLD_RANK; exec {tfc_run} {p(f'c{n}.so')} call {entry} "
                        f"--weights {p('w.safetensors')} {ins} --out-dir {p(f'{entry}{n}-')}$R")
            for r in range(n):
                os.makedirs(p(f"{entry}{n}-{r}"), exist_ok=True)
            run(mpirun + ["-np", str(n), "sh", "-c", rank_cmd], env=env)
        wide = lambda ts: [t.astype(np.float64) for t in ts]
        losses, scales, dw = reference(n, w.astype(np.float64), wide(x), wide(c), wide(g), wide(s))
        for r in range(n):
            out = {f[:-4]: np.load(os.path.join(p(f"loss{n}-{r}"), f))
                   for f in os.listdir(p(f"loss{n}-{r}"))}
            grads = {f[:-4]: np.load(os.path.join(p(f"loss_grad{n}-{r}"), f))
                     for f in os.listdir(p(f"loss_grad{n}-{r}"))}
            loss = float(next(iter(out.values())))
            err = abs(loss - losses[r]) / max(scales[r], 1e-30)
            check(err <= RTOL, f"N={n} rank {r}: loss {loss:.6f} vs NumPy {losses[r]:.6f} "
                  f"(diff {err:.1e} of the terms' magnitude {scales[r]:.2f})")
            got = grads.get("grad.w")
            if got is None:
                check(False, f"N={n} rank {r}: loss_grad wrote no grad.w (got {sorted(grads)})")
                continue
            err = np.abs(got - dw[r]).max() / np.abs(dw[r]).max()
            check(err <= RTOL, f"N={n} rank {r}: dL/dw within {err:.1e} of NumPy (max rel)")
    if failures:
        print(f"FAIL: {len(failures)} check(s) failed")
        sys.exit(1)
    print("PASS: all_to_all, all_gather and reduce_scatter, forward and gradient, "
          f"equal NumPy under mpirun -np 2 and 4 ({'CUDA, emulated' if args.emulate else 'CPU'})")


if __name__ == "__main__":
    main()

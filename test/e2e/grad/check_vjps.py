#!/usr/bin/env python3
"""Gradients of every differentiable tfc op against float64 NumPy references.

For each case a module is written whose float inputs are `tfc.param`s (loaded with
tfc.load), whose integer inputs (ids, targets, seeds, positions) are entry arguments,
and whose entry

    @loss = reduce_sum(op(params...) * R)

with R a fresh random tensor bound as a *frozen* parameter (so it gets no gradient).
The module is compiled with `tfc --optimizer=adamw` (tfc-autodiff + tfc-train-step) and
only `loss_grad` is called (`tfc-run call loss_grad --weights w.safetensors`); the
weights file is written with test/e2e/models/reference.py's safetensors writer.

Reference gradients (float64):
  * fourth-order central finite differences of the NumPy reference of the op
    (h = 1e-3: truncation ~h^4, so accurate to ~1e-10 relative) for every element,
    or for a random subset of 256 elements on the larger cases;
  * an analytic NumPy gradient where it is easy (elementwise, matmul, linear,
    norms, softmax, attention, rotary, embedding, cross_entropy, moe_ffn): it is itself
    checked against the finite differences (rel 1e-7) and then used as the reference
    for every element.
Non-smooth ops (relu, abs, leaky_relu, max, min) get inputs kept 0.1 away from their
kinks; the tie convention (max/min: ties go to lhs) and dropout (same seed -> same
mask, grad = mask * R / (1 - rate), the mask read from a second entry @fwd) are
checked analytically.

Pass: the loss within rel 1e-5 (of sum|op * R|) and, for every parameter,
max|tfc - ref| / max|ref| <= 1e-4 (f32 compute; default, a few cases say otherwise).
The ops that matter to training run again in bf16 ("[bf16]" cases: parameters cast
to bf16 after their load, the result cast back to f32), the backward then in bf16
too, with the bounds BF16_LOSS_RTOL and BF16_GRAD_RTOL below.
Fresh random inputs each run (seed printed; reproduce with --seed). Last line:
`N passed, M failed`; exit status non-zero on any failure.

  check_vjps.py --bin-dir build/bin [--work-dir DIR] [--seed S] [--only SUBSTR]
                [--every K --offset J] [-v]
"""
import argparse
import math
import os
import sys
import time

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import reference as ref  # noqa: E402  (safetensors writer)

sys.path.insert(0, os.path.join(HERE, ".."))
import harness  # noqa: E402


def write_weights(path, tensors):
    """reference.write_safetensors (0-d tensors keep shape [], as tfc-run wants for a
    tensor<f32> parameter)."""
    ref.write_safetensors(path, tensors)


TOOL_TIMEOUT_S = 300
GRAD_RTOL = 1e-4          # max|tfc - ref| / max|ref| per gradient tensor
FD_ZERO = 1e-9            # |FD| of a gradient that is zero analytically (rounding noise)
LOSS_RTOL = 1e-5          # |loss - ref| / sum|op * R|
SELF_RTOL = 1e-7          # analytic vs finite differences (both float64)
FD_H = 1e-3
FD_MAX = 256              # finite differences on at most this many elements per param
# bf16 cases: every op of the forward and backward rounds its result to bf16 (8
# significant bits, 2^-9 relative). The loss, one rounding per element of y,
# is within 2^-8 of sum|y * R|; a gradient passes through a few bf16 ops (the
# backward decomposed), some cancelling, so within 8 ulps (2^-7 * 4) of its scale.
BF16_LOSS_RTOL = 2.0 ** -8
BF16_GRAD_RTOL = 2.0 ** -5
# softmax's backward, y * (R - sum(y * R)), cancels in bf16: sum(y * R) is rounded to
# bf16 at the scale of its terms, and the result's max can be a tenth of theirs
# (seed 3 gave 2e-2 on a short row; seed 622780 gave 8.0e-2 on [4, 9], the error
# 0.011 against terms near 1): four times the bound. log_softmax's backward,
# g - softmax(x) * sum(g), cancels the same way, and so does every case whose gradient
# goes through one (--no-fuse, seed 180013: the chain ending in log_softmax, 8.4e-2 on
# the layer norm's gain). Attention's backward holds the same difference
# (dS = P * (dP - rowsum(P * dP))): its bf16 grad.q reached 0.58 of 2^-5 in 24 runs,
# the highest of all cases, so it takes this bound too.
BF16_SOFTMAX_GRAD_RTOL = 2.0 ** -3
BF16_CANCELLING = ("softmax", "attention")
# What the bf16 cases cover: the ops that matter to training.
BF16_OPS = ("gelu", "silu", "matmul", "linear", "layer_norm", "rms_norm", "softmax",
            "log_softmax", "attention", "rotary", "embedding", "cross_entropy", "chain")

MLIR = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
        np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


def ttype(shape, elt="f32"):
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims}x{elt}>" if shape else f"tensor<{elt}>"


def ty(a):
    return ttype(a.shape, MLIR[a.dtype])


# ---------------------------------------------------------------------------
# float64 references of the ops
# ---------------------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


GK, GA = math.sqrt(2 / math.pi), 0.044715


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(GK * (x + GA * x ** 3)))


def gelu_tanh_d(x):
    t = np.tanh(GK * (x + GA * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GK * (1 + 3 * GA * x * x)


def softmax(x, dim=-1):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x, dim=-1):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def layer_norm(x, w=None, b=None, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    return y + b if b is not None else y


def rms_norm(x, w=None, eps=1e-6):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y * w if w is not None else y


def attention_probs(q, k, causal, offset, scale):
    """(B,H,Tq,Tk) probabilities; GQA: query head h reads kv head h // (H/Hkv)."""
    h, hkv = q.shape[1], k.shape[1]
    kk = np.repeat(k, h // hkv, axis=1)
    tq, tk = q.shape[2], k.shape[2]
    s = scale * np.einsum("bhid,bhjd->bhij", q, kk)
    if causal:
        off = tk - tq if offset is None else offset
        hidden = np.arange(tk)[None, :] > (np.arange(tq)[:, None] + off)
        s = np.where(hidden, -np.inf, s)
    return softmax(s, -1)


def attention(q, k, v, causal=False, offset=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    p = attention_probs(q, k, causal, offset, scale)
    vv = np.repeat(v, q.shape[1] // v.shape[1], axis=1)
    return np.einsum("bhij,bhjd->bhid", p, vv)


def attention_grads(q, k, v, G, causal=False, offset=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    rep = q.shape[1] // k.shape[1]
    p = attention_probs(q, k, causal, offset, scale)
    kk, vv = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    dp = np.einsum("bhid,bhjd->bhij", G, vv)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * np.einsum("bhij,bhjd->bhid", ds, kk)
    dkk = scale * np.einsum("bhij,bhid->bhjd", ds, q)
    dvv = np.einsum("bhij,bhid->bhjd", p, G)
    fold = lambda a: a.reshape(a.shape[0], -1, rep, *a.shape[2:]).sum(2)
    return dq, fold(dkk), fold(dvv)


def rotary(x, offset, theta, sign=1.0, freq=None):
    d, t = x.shape[-1], x.shape[-2]
    half = d // 2
    pos = offset + np.arange(t, dtype=np.float64)
    if freq is None:
        freq = theta ** (-2.0 * np.arange(half) / d)
    ang = sign * pos[:, None] * freq[None, :]
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def cross_entropy(logits, t, ignore=-100):
    v = logits.shape[-1]
    lp = log_softmax(logits.reshape(-1, v))
    t = t.reshape(-1).astype(np.int64)
    keep = t != ignore
    if not keep.any():
        return np.asarray(0.0)
    return np.asarray(-lp[np.nonzero(keep)[0], t[keep]].mean())


def cross_entropy_grad(logits, t, ignore=-100):
    v = logits.shape[-1]
    flat = logits.reshape(-1, v)
    t = t.reshape(-1).astype(np.int64)
    keep = t != ignore
    g = softmax(flat)
    g[np.nonzero(keep)[0], t[keep]] -= 1
    g[~keep] = 0
    return (g / max(int(keep.sum()), 1)).reshape(logits.shape)


def unbroadcast(g, shape):
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=dims, keepdims=True) if dims else g


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

class Case:
    """params: {name: f32 array} (trainable); ints: {name: int array} (entry args);
    body: MLIR lines using %<param> / %<int> that define %y of shape `out`;
    fn(P, I) -> y (float64); grad(P, I, R) -> {name: dL/dparam} (optional analytic).
    fd: finite differences available (False: analytic only)."""

    def __init__(self, name, params, ints, body, out, fn, grad=None, fd=True, tol=GRAD_RTOL,
                 check=None, fwd=False, extra_params=None, bf16=False):
        self.name, self.params, self.ints, self.body = name, params, ints, body
        self.out, self.fn, self.grad, self.fd, self.tol = tuple(out), fn, grad, fd, tol
        # The op in bf16: each f32 parameter (bf16 values) is cast to bf16 after
        # its load and the op's result back to f32 for the loss, so that the
        # gradients reach the f32 parameters through the bf16 backward.
        self.bf16 = bf16
        self.loss_tol = BF16_LOSS_RTOL if bf16 else LOSS_RTOL
        self.check = check          # custom check(P, I, R, outputs) -> (ok, detail)
        self.fwd = fwd              # also emit @fwd returning %y
        self.extra_params = extra_params or {}  # trainable params the loss ignores

    def module(self):
        rt = ttype(self.out)
        lines = [f'tfc.param @{n} : {ty(a)} = "zeros"' for n, a in self.params.items()]
        lines += [f'tfc.param @{n} : {ty(a)} = "zeros"' for n, a in self.extra_params.items()]
        lines.append(f'tfc.param @rconst : {rt} = "zeros" frozen')
        args = ", ".join(f'%{n}: {ty(a)} {{tfc.name = "{n}"}}' for n, a in self.ints.items())
        loads = [f"  %{n} = tfc.load @{n} : {ty(a)}" for n, a in self.params.items()]
        body = ["  " + l for l in self.body]
        if self.bf16:
            loads = [f"  %{n}_f32 = tfc.load @{n} : {ty(a)}\n"
                     f"  %{n} = tfc.cast %{n}_f32 : {ty(a)} -> {ttype(a.shape, 'bf16')}"
                     for n, a in self.params.items()]
            if self.out:  # a 0-d result (a loss) is f32 already
                body[-1] = body[-1].replace("%y =", "%y_bf16 =", 1)
                body.append(f"  %y = tfc.cast %y_bf16 : {ttype(self.out, 'bf16')} -> {rt}")
        out = []
        if self.fwd:
            out.append(f'func.func @fwd({args}) -> ({rt} {{tfc.name = "y"}}) {{')
            out += loads + body + [f"  return %y : {rt}", "}"]
        out.append(f'func.func @loss({args}) -> (tensor<f32> {{tfc.name = "loss"}}) {{')
        out += loads + body
        out.append(f"  %rconst = tfc.load @rconst : {rt}")
        if self.out:
            dims = list(range(len(self.out)))
            out.append(f"  %yr = tfc.mul %y, %rconst : {rt}, {rt} -> {rt}")
            out.append(f"  %l = tfc.reduce_sum %yr dims = {dims} : {rt} -> tensor<f32>")
        else:
            out.append(f"  %l = tfc.mul %y, %rconst : {rt}, {rt} -> {rt}")
        out += ["  return %l : tensor<f32>", "}"]
        return "\n".join(lines + out) + "\n"


class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape, scale=1.0):
        a = self.rng.normal(0.0, scale, size=shape)
        a[np.abs(a) < 1e-2] = 0.5  # never (nearly) zero
        return a.astype(np.float32)

    def away(self, *shape, gap=0.1):
        """Normal values at least `gap` away from 0 (for kinks at 0)."""
        a = self.rng.normal(0.0, 1.0, size=shape)
        a = np.sign(a) * (np.abs(a) + gap)
        return a.astype(np.float32)

    def positive(self, *shape, lo=0.5, hi=2.0):
        return self.rng.uniform(lo, hi, size=shape).astype(np.float32)

    def ints(self, lo, hi, *shape, dtype=np.int32):
        return np.asarray(self.rng.integers(lo, hi, size=shape), dtype=dtype)


def build_cases(g):
    cases = []
    add = cases.append

    # --- unary elementwise: y = f(x); analytic f'(x) * R ---
    def unary(name, fn, d, x, extra="", op=None):
        op = op or name.split()[0]
        add(Case(name, {"x": x}, {}, [f"%y = tfc.{op} %x{extra} : {ty(x)}"], x.shape,
                 lambda P, I: fn(P["x"]), lambda P, I, R: {"x": d(P["x"]) * R}))
    unary("exp", np.exp, np.exp, g.normal(4, 7))
    unary("log", np.log, lambda x: 1 / x, g.positive(4, 7, lo=0.2, hi=5))
    unary("sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x), g.positive(3, 5, lo=0.2, hi=5))
    unary("rsqrt", lambda x: x ** -0.5, lambda x: -0.5 * x ** -1.5, g.positive(3, 5, lo=0.2, hi=5))
    unary("tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2, g.normal(2, 9))
    unary("sin", np.sin, np.cos, g.normal(2, 9, scale=3))
    unary("cos", np.cos, lambda x: -np.sin(x), g.normal(2, 9, scale=3))
    unary("sigmoid", sigmoid, lambda x: sigmoid(x) * (1 - sigmoid(x)), g.normal(11))
    unary("neg", np.negative, lambda x: -np.ones_like(x), g.normal(3, 3))
    unary("abs", np.abs, np.sign, g.away(3, 5))
    unary("relu", lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0, g.away(5, 5))
    unary("silu", lambda x: x * sigmoid(x),
          lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x))), g.normal(5, 5, scale=2))
    unary("gelu tanh", gelu_tanh, gelu_tanh_d, g.normal(5, 7, scale=2), " approximate = tanh")
    unary("leaky_relu alpha=0.1", lambda x: np.where(x > 0, x, 0.1 * x),
          lambda x: np.where(x > 0, 1.0, 0.1), g.away(4, 6), " alpha = 0.1")
    unary("leaky_relu alpha=0.3", lambda x: np.where(x > 0, x, 0.3 * x),
          lambda x: np.where(x > 0, 1.0, 0.3), g.away(3, 7), " alpha = 0.3", op="leaky_relu")

    # --- binary with broadcasting ---
    def binary(op, fn, dl, dr, a, b, label, tol=GRAD_RTOL, fd=True):
        out = np.broadcast_shapes(a.shape, b.shape)
        t = ttype(out)

        def grad(P, I, R):
            x, y = np.broadcast_arrays(P["a"], P["b"])
            return {"a": unbroadcast(dl(x, y) * R, P["a"].shape),
                    "b": unbroadcast(dr(x, y) * R, P["b"].shape)}
        add(Case(f"{op} {label}", {"a": a, "b": b}, {},
                 [f"%y = tfc.{op} %a, %b : {ty(a)}, {ty(b)} -> {t}"], out,
                 lambda P, I: fn(P["a"], P["b"]), grad, fd=fd, tol=tol))
    one = lambda x, y: np.ones_like(x)
    binary("add", np.add, one, one, g.normal(3, 1, 5), g.normal(4, 5), "[3,1,5]+[4,5]")
    binary("sub", np.subtract, one, lambda x, y: -np.ones_like(x), g.normal(2, 3, 4),
           g.normal(1, 4), "[2,3,4]-[1,4]")
    binary("mul", np.multiply, lambda x, y: y, lambda x, y: x, g.normal(3, 1, 5),
           g.normal(4, 5), "[3,1,5]*[4,5]")
    binary("mul", np.multiply, lambda x, y: y, lambda x, y: x, g.normal(2, 6),
           g.normal(), "[2,6]*scalar")
    binary("div", np.divide, lambda x, y: 1 / y, lambda x, y: -x / y ** 2, g.normal(7, 3),
           g.away(3, gap=0.5), "[7,3]/[3]")
    binary("div", np.divide, lambda x, y: 1 / y, lambda x, y: -x / y ** 2, g.normal(1),
           g.away(2, 5, gap=0.5), "[1]/[2,5]")
    binary("pow", np.power, lambda x, y: y * x ** (y - 1), lambda x, y: x ** y * np.log(x),
           g.positive(3, 7), g.normal(7), "[3,7]^[7]")
    # max/min: values on two interleaved grids, so |a - b| >= 0.3 (no ties, no kinks).
    a = (g.ints(-3, 3, 3, 1, 5) + 0.2 * g.rng.random((3, 1, 5))).astype(np.float32)
    b = (g.ints(-3, 3, 4, 5) + 0.5 + 0.2 * g.rng.random((4, 5))).astype(np.float32)
    gt = lambda x, y: (x >= y) * 1.0
    lt = lambda x, y: (x <= y) * 1.0
    binary("max", np.maximum, gt, lambda x, y: 1 - gt(x, y), a, b, "[3,1,5]x[4,5]")
    binary("min", np.minimum, lt, lambda x, y: 1 - lt(x, y), a, b, "[3,1,5]x[4,5]")
    # Ties: the whole gradient goes to lhs (documented in TfcVJPs.cpp). Analytic only.
    a = g.normal(3, 4)
    b = np.where(g.rng.random((3, 4)) < 0.5, a, g.normal(3, 4))
    binary("max", np.maximum, gt, lambda x, y: 1 - gt(x, y), a, b, "ties -> lhs", fd=False)
    binary("min", np.minimum, lt, lambda x, y: 1 - lt(x, y), a, b, "ties -> lhs", fd=False)

    # --- composites: a parameter used several times / loaded twice / unused ---
    x = g.normal(3, 5)
    add(Case("x*x + tanh(x) (uses summed)", {"x": x}, {},
             [f"%m = tfc.mul %x, %x : {ty(x)}, {ty(x)} -> {ty(x)}",
              f"%t = tfc.tanh %x : {ty(x)}",
              f"%y = tfc.add %m, %t : {ty(x)}, {ty(x)} -> {ty(x)}"], x.shape,
             lambda P, I: P["x"] ** 2 + np.tanh(P["x"]),
             lambda P, I, R: {"x": (2 * P["x"] + 1 - np.tanh(P["x"]) ** 2) * R}))
    x, w = g.normal(4, 3), g.normal(3)
    add(Case("param loaded twice + unused param (zero grad)", {"x": x, "w": w}, {},
             [f"%w2 = tfc.load @w : {ty(w)}",
              f"%a = tfc.mul %x, %w : {ty(x)}, {ty(w)} -> {ty(x)}",
              f"%y = tfc.mul %a, %w2 : {ty(x)}, {ty(w)} -> {ty(x)}"], x.shape,
             lambda P, I: P["x"] * P["w"] ** 2,
             lambda P, I, R: {"x": P["w"] ** 2 * R, "w": (2 * P["x"] * P["w"] * R).sum(0),
                              "unused": np.zeros((2, 2))},
             extra_params={"unused": g.normal(2, 2)}))

    # --- cast: f32 -> f16 -> f32 (the gradient is cast back the same way) ---
    x = g.normal(4, 5)
    add(Case("cast f32->f16->f32", {"x": x}, {},
             [f"%h = tfc.cast %x : {ty(x)} -> {ttype(x.shape, 'f16')}",
              f"%y = tfc.cast %h : {ttype(x.shape, 'f16')} -> {ty(x)}"], x.shape,
             lambda P, I: P["x"].astype(np.float16).astype(np.float64),
             lambda P, I, R: {"x": R.astype(np.float32).astype(np.float16).astype(np.float64)},
             fd=False, tol=1e-6))

    # --- dropout: same seed -> same mask; the mask is read from @fwd ---
    x = g.positive(30, 40)
    rate = 0.25

    def dropout_check(P, I, R, o):
        y = o["fwd"]["y"].astype(np.float64)
        kept = y != 0
        frac = kept.mean()
        scaled = np.allclose(y[kept], P["x"][kept] / (1 - rate), rtol=1e-6)
        want = kept * R / (1 - rate)
        gd = o["grad"]["grad.x"].astype(np.float64)
        rel = np.abs(gd - want).max() / np.abs(want).max()
        loss_rel = abs(float(o["grad"]["loss"]) - (y * R).sum()) / np.abs(y * R).sum()
        ok = scaled and abs(frac - (1 - rate)) < 0.05 and rel <= 1e-6 and loss_rel <= LOSS_RTOL
        return ok, (f"kept {frac:.3f}, kept scaled {scaled}; grad.x rel {rel:.2e} "
                    f"(mask of @fwd * R / (1-rate)); loss rel {loss_rel:.1e}")
    add(Case("dropout rate=0.25 (grad = mask * R / (1-rate))", {"x": x},
             {"seed": np.asarray(g.rng.integers(1, 1 << 40), dtype=np.int64)},
             [f"%y = tfc.dropout %x, %seed rate = {rate} : {ty(x)}, tensor<i64> -> {ty(x)}"],
             x.shape, None, check=dropout_check, fwd=True))

    # --- matmul: every transpose combination, batch broadcasting ---
    def mm_case(ashape, bshape, ta, tb, label):
        A, B = g.normal(*ashape), g.normal(*bshape)
        opA = lambda a: np.swapaxes(a, -1, -2) if ta else a
        opB = lambda b: np.swapaxes(b, -1, -2) if tb else b
        out = np.broadcast_shapes(opA(A).shape[:-2], opB(B).shape[:-2]) + \
            (opA(A).shape[-2], opB(B).shape[-1])
        attrs = (" transpose_lhs" if ta else "") + (" transpose_rhs" if tb else "")

        def grad(P, I, R):
            a, b = opA(P["A"]), opB(P["B"])
            da = R @ np.swapaxes(b, -1, -2)
            db = np.swapaxes(a, -1, -2) @ R
            da = np.swapaxes(da, -1, -2) if ta else da
            db = np.swapaxes(db, -1, -2) if tb else db
            return {"A": unbroadcast(da, P["A"].shape), "B": unbroadcast(db, P["B"].shape)}
        add(Case(f"matmul {label}", {"A": A, "B": B}, {},
                 [f"%y = tfc.matmul %A, %B{attrs} : {ty(A)}, {ty(B)} -> {ttype(out)}"], out,
                 lambda P, I: opA(P["A"]) @ opB(P["B"]), grad))
    mm_case((5, 4), (4, 3), False, False, "[5,4]x[4,3]")
    mm_case((4, 5), (4, 3), True, False, "transpose_lhs")
    mm_case((5, 4), (3, 4), False, True, "transpose_rhs")
    mm_case((4, 5), (3, 4), True, True, "transpose_lhs transpose_rhs")
    mm_case((2, 3, 4), (4, 5), False, False, "[2,3,4]x[4,5] (rhs broadcast)")
    mm_case((3, 4), (2, 4, 5), False, False, "[3,4]x[2,4,5] (lhs broadcast)")
    mm_case((2, 1, 3, 4), (3, 5, 4), False, True, "[2,1,3,4]x[3,5,4]^T (both broadcast)")
    mm_case((2, 1, 4, 3), (1, 3, 4, 5), True, False, "[2,1,4,3]^T x[1,3,4,5]")
    mm_case((2, 4, 3), (2, 5, 4), True, True, "batched both transposed")
    # A weight per head against [B, H, M, K]: the library reads the rhs with a period.
    mm_case((3, 2, 4, 3), (2, 3, 5), False, False, "[3,2,4,3]x[2,3,5] (rhs per head)")
    mm_case((3, 2, 4, 3), (2, 5, 3), False, True, "[3,2,4,3]x[2,5,3]^T (rhs per head)")

    # --- linear: [K,N] (Conv1D) and [N,K] (nn.Linear) layouts, with/without bias ---
    def lin_case(xs, k, n, tw, bias, label):
        x, w = g.normal(*xs, k), g.normal(*((n, k) if tw else (k, n)))
        params = {"x": x, "w": w}
        operands, types = "%x, %w", f"{ty(x)}, {ty(w)}"
        if bias:
            params["bias"] = g.normal(n)
            operands += " bias %bias"
            types += f", {ty(params['bias'])}"
        attrs = " transpose_weight" if tw else ""
        W = lambda P: P["w"].T if tw else P["w"]

        def fn(P, I):
            y = P["x"] @ W(P)
            return y + P["bias"] if bias else y

        def grad(P, I, R):
            dw = P["x"].reshape(-1, k).T @ R.reshape(-1, n)
            out = {"x": R @ W(P).T, "w": dw.T if tw else dw}
            if bias:
                out["bias"] = R.reshape(-1, n).sum(0)
            return out
        add(Case(f"linear {label}", params, {},
                 [f"%y = tfc.linear {operands}{attrs} : ({types}) -> {ttype(xs + (n,))}"],
                 xs + (n,), fn, grad))
    lin_case((2, 3), 8, 5, False, True, "[K,N] bias (rank-3 x)")
    lin_case((3,), 7, 6, True, False, "[N,K] transpose_weight")
    lin_case((2, 2, 3), 5, 4, True, True, "[N,K] transpose_weight bias (rank-4 x)")
    lin_case((4,), 6, 3, False, False, "[K,N] no bias")

    # --- normalization ---
    def ln_grad(x, w, R, eps, with_bias):
        mu = x.mean(-1, keepdims=True)
        xc = x - mu
        rstd = 1 / np.sqrt((xc ** 2).mean(-1, keepdims=True) + eps)
        xhat = xc * rstd
        gw = R * w if w is not None else R
        dx = rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
        lead = tuple(range(x.ndim - 1))
        return dx, (R * xhat).sum(lead), R.sum(lead) if with_bias else None

    x, w, b = g.normal(3, 5, 33, scale=3), g.normal(33), g.normal(33)
    add(Case("layer_norm weight bias", {"x": x, "w": w, "b": b}, {},
             [f"%y = tfc.layer_norm %x weight %w bias %b eps = 1.0e-5 : "
              f"({ty(x)}, {ty(w)}, {ty(b)}) -> {ty(x)}"], x.shape,
             lambda P, I: layer_norm(P["x"], P["w"], P["b"], 1e-5),
             lambda P, I, R: dict(zip(["x", "w", "b"], ln_grad(P["x"], P["w"], R, 1e-5, True)))))
    x = g.normal(4, 7) + 3.0
    add(Case("layer_norm plain (mean 3, eps 1e-2)", {"x": x}, {},
             [f"%y = tfc.layer_norm %x eps = 1.0e-2 : ({ty(x)}) -> {ty(x)}"], x.shape,
             lambda P, I: layer_norm(P["x"], eps=1e-2),
             lambda P, I, R: {"x": ln_grad(P["x"], None, R, 1e-2, False)[0]}))

    def rms_grad(x, w, R, eps):
        rstd = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
        xhat = x * rstd
        gw = R * w if w is not None else R
        dx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdims=True))
        return dx, (R * xhat).reshape(-1, x.shape[-1]).sum(0)
    x, w = g.normal(2, 3, 16), g.normal(16)
    add(Case("rms_norm weight", {"x": x, "w": w}, {},
             [f"%y = tfc.rms_norm %x weight %w eps = 1.0e-6 : ({ty(x)}, {ty(w)}) -> {ty(x)}"],
             x.shape, lambda P, I: rms_norm(P["x"], P["w"], 1e-6),
             lambda P, I, R: dict(zip(["x", "w"], rms_grad(P["x"], P["w"], R, 1e-6)))))
    x = g.normal(5, 3, scale=0.3)
    add(Case("rms_norm plain (eps 1e-2)", {"x": x}, {},
             [f"%y = tfc.rms_norm %x eps = 1.0e-2 : ({ty(x)}) -> {ty(x)}"], x.shape,
             lambda P, I: rms_norm(P["x"], eps=1e-2),
             lambda P, I, R: {"x": rms_grad(P["x"], None, R, 1e-2)[0]}))

    # --- softmax / log_softmax over several dims ---
    for dim, shape in [(-1, (4, 9)), (1, (2, 5, 3)), (0, (6, 2))]:
        x = g.normal(*shape, scale=2)
        add(Case(f"softmax dim={dim} {list(shape)}", {"x": x}, {},
                 [f"%y = tfc.softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"], shape,
                 lambda P, I, d=dim: softmax(P["x"], d),
                 lambda P, I, R, d=dim: {"x": softmax(P["x"], d) * (
                     R - (R * softmax(P["x"], d)).sum(d, keepdims=True))}))
    for dim, shape in [(-1, (3, 11)), (0, (5, 4))]:
        x = g.normal(*shape, scale=2)
        add(Case(f"log_softmax dim={dim} {list(shape)}", {"x": x}, {},
                 [f"%y = tfc.log_softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"], shape,
                 lambda P, I, d=dim: log_softmax(P["x"], d),
                 lambda P, I, R, d=dim: {"x": R - softmax(P["x"], d) * R.sum(d, keepdims=True)}))

    # --- attention: causal, GQA, offset, scale, cross (Tq != Tk), Dv != D ---
    def attn_case(label, qs, ks, vs, causal=False, pos=None, scale=None):
        q, k, v = g.normal(*qs), g.normal(*ks), g.normal(*vs)
        ints = {} if pos is None else {"pos": np.asarray(pos, dtype=np.int32)}
        attrs = (" offset %pos" if pos is not None else "") + (" causal" if causal else "") + \
            (f" scale = {scale}" if scale is not None else "")
        types = f"{ty(q)}, {ty(k)}, {ty(v)}" + (", tensor<i32>" if pos is not None else "")
        out = qs[:3] + (vs[3],)
        kw = dict(causal=causal, offset=pos, scale=scale)
        add(Case(f"attention {label}", {"q": q, "k": k, "v": v}, ints,
                 [f"%y = tfc.attention %q, %k, %v{attrs} : ({types}) -> {ttype(out)}"], out,
                 lambda P, I: attention(P["q"], P["k"], P["v"], **kw),
                 lambda P, I, R: dict(zip("qkv", attention_grads(P["q"], P["k"], P["v"], R, **kw)))))
    attn_case("causal [1,2,5,4]", (1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4), causal=True)
    attn_case("causal GQA H=4 Hkv=2, Dv=6", (2, 4, 3, 8), (2, 2, 3, 8), (2, 2, 3, 6), causal=True)
    attn_case("causal GQA H=6 Hkv=2, Tq=3 < Tk=5", (1, 6, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4),
              causal=True)
    attn_case("causal offset pos=1, Tq=3 Tk=6", (1, 2, 3, 4), (1, 2, 6, 4), (1, 2, 6, 4),
              causal=True, pos=1)
    attn_case("non-causal scale=0.3 cross Tq=4 Tk=7", (1, 2, 4, 4), (1, 1, 7, 4), (1, 1, 7, 5),
              scale=0.3)
    attn_case("causal larger [2,2,33,16] MQA", (2, 2, 33, 16), (2, 1, 33, 16), (2, 1, 33, 16),
              causal=True)
    # the library's blocked backward: several 32-key tiles, 4-row blocks and a partial one,
    # rows of whole 16-float vectors (D=64) and a ragged one (Dv=40)
    attn_case("causal GQA [1,4,70,64] Hkv=2, Dv=40", (1, 4, 70, 64), (1, 2, 70, 64),
              (1, 2, 70, 40), causal=True)

    # --- rotary: the VJP is the inverse rotation ---
    for label, shape, pos, theta in [("theta 1e4", (2, 2, 5, 8), None, 1e4),
                                     ("offset 3 theta 5e5", (1, 3, 4, 16), 3, 5e5),
                                     ("offset 1000", (1, 1, 3, 6), 1000, 1e4)]:
        x = g.normal(*shape)
        ints = {} if pos is None else {"pos": np.asarray(pos, dtype=np.int32)}
        attrs = " offset %pos" if pos is not None else ""
        types = ty(x) + (", tensor<i32>" if pos is not None else "")
        off = pos or 0
        add(Case(f"rotary {label}", {"x": x}, ints,
                 [f"%y = tfc.rotary %x{attrs} theta = {theta:.1e} : ({types}) -> {ty(x)}"],
                 shape, lambda P, I, o=off, t=theta: rotary(P["x"], o, t),
                 lambda P, I, R, o=off, t=theta: {"x": rotary(R, o, t, sign=-1.0)}))
    # Scaled frequencies (HF rope_scaling): a constant operand, not differentiated.
    x = g.normal(1, 2, 3, 8)
    freq = np.array([0.9, 0.3, 0.05, 0.007])
    dense = ", ".join(f"{f:.9e}" for f in np.float32(freq))
    add(Case("rotary offset 5 frequencies", {"x": x}, {"pos": np.asarray(5, dtype=np.int32)},
             [f"%f = tfc.constant dense<[{dense}]> : tensor<4xf32>",
              f"%y = tfc.rotary %x offset %pos frequencies %f theta = 1.0e4 : "
              f"({ty(x)}, tensor<i32>, tensor<4xf32>) -> {ty(x)}"],
             x.shape, lambda P, I, f=np.float32(freq): rotary(P["x"], 5, 1e4, freq=f.astype(np.float64)),
             lambda P, I, R, f=np.float32(freq): {"x": rotary(R, 5, 1e4, sign=-1.0, freq=f.astype(np.float64))}))

    # --- embedding: repeated ids accumulate ---
    def emb_grad(P, I, R):
        d = np.zeros_like(P["table"])
        np.add.at(d, I["ids"].reshape(-1), R.reshape(-1, P["table"].shape[1]))
        return {"table": d}
    table = g.normal(11, 6)
    ids = g.ints(0, 11, 3, 7)
    ids[0, :3] = 4
    ids[2, 5] = 4
    add(Case("embedding i32 (repeated ids)", {"table": table}, {"ids": ids},
             [f"%y = tfc.embedding %table, %ids : {ty(table)}, {ty(ids)} -> {ttype((3, 7, 6))}"],
             (3, 7, 6), lambda P, I: P["table"][I["ids"]], emb_grad))
    table = g.normal(5, 3)
    ids = np.asarray([[0, 0, 0, 2], [2, 0, 4, 0]], dtype=np.int64)
    add(Case("embedding i64 (id 0 x5, rows 1 and 3 unused)", {"table": table}, {"ids": ids},
             [f"%y = tfc.embedding %table, %ids : {ty(table)}, {ty(ids)} -> {ttype((2, 4, 3))}"],
             (2, 4, 3), lambda P, I: P["table"][I["ids"]], emb_grad))

    # --- moe_ffn: routing fixed (ids are integers); gradients of x, the
    # routing weights (only the chosen entries get any) and every expert
    # matrix, expert 3 chosen by no token (its gradients are zero: compared
    # absolutely) ---
    def moe_ffn_fn(P, I, names):
        y = np.zeros_like(P["x"])
        for n in range(y.shape[0]):
            for e in I["ids"][n]:
                w1, w3, w2 = (P[names[3 * e + j]] for j in range(3))
                h1, h3 = w1 @ P["x"][n], w3 @ P["x"][n]
                y[n] += P["w"][n, e] * (w2 @ (h1 * sigmoid(h1) * h3))
        return y
    N, D, F, E, K = 6, 4, 5, 4, 2
    ids = np.stack([g.rng.permutation(3)[:K] for _ in range(N)]).astype(np.int32)
    params = {"x": g.normal(N, D), "w": g.normal(N, E)}
    names = []
    for e in range(E):
        for name, shape in (("w1", (F, D)), ("w3", (F, D)), ("w2", (D, F))):
            names.append(f"{name}_{e}")
            params[names[-1]] = g.normal(*shape, scale=0.7)
    types = ", ".join(ty(a) for a in [params["x"], ids, params["w"]] +
                      [params[n] for n in names])
    def moe_ffn_grad(P, I, R, names):
        G = {n: np.zeros_like(a) for n, a in P.items()}
        for n in range(R.shape[0]):
            x = P["x"][n]
            for e in I["ids"][n]:
                w1, w3, w2 = (P[names[3 * e + j]] for j in range(3))
                h1, h3 = w1 @ x, w3 @ x
                s = sigmoid(h1)
                a = h1 * s * h3
                G["w"][n, e] += R[n] @ (w2 @ a)
                go = P["w"][n, e] * R[n]
                da = w2.T @ go
                dh3, dh1 = da * h1 * s, da * h3 * s * (1 + h1 * (1 - s))
                G[names[3 * e + 2]] += np.outer(go, a)
                G[names[3 * e]] += np.outer(dh1, x)
                G[names[3 * e + 1]] += np.outer(dh3, x)
                G["x"][n] += w1.T @ dh1 + w3.T @ dh3
        return G
    add(Case("moe_ffn 4 experts top-2 (expert 3 unused)", params, {"ids": ids},
             [f"%y = tfc.moe_ffn %x, %ids, %w experts " + ", ".join("%" + n for n in names) +
              f" : ({types}) -> {ty(params['x'])}"],
             (N, D), lambda P, I, names=names: moe_ffn_fn(P, I, names),
             lambda P, I, R, names=names: moe_ffn_grad(P, I, R, names)))

    # --- shape ops (linear: finite differences are exact up to rounding) ---
    x = g.normal(2, 3, 4)
    add(Case("reshape [2,3,4]->[4,6]", {"x": x}, {},
             [f"%e = tfc.exp %x : {ty(x)}",
              f"%y = tfc.reshape %e : {ty(x)} -> {ttype((4, 6))}"], (4, 6),
             lambda P, I: np.exp(P["x"]).reshape(4, 6),
             lambda P, I, R: {"x": np.exp(P["x"]) * R.reshape(2, 3, 4)}))
    x = g.normal(2, 3, 5)
    add(Case("transpose perm=[2,0,1]", {"x": x}, {},
             [f"%y = tfc.transpose %x perm = [2, 0, 1] : {ty(x)} -> {ttype((5, 2, 3))}"],
             (5, 2, 3), lambda P, I: P["x"].transpose(2, 0, 1),
             lambda P, I, R: {"x": R.transpose(1, 2, 0)}))
    x = g.normal(2, 3, 4, 5)
    add(Case("transpose perm=[0,2,1,3]", {"x": x}, {},
             [f"%y = tfc.transpose %x perm = [0, 2, 1, 3] : {ty(x)} -> {ttype((2, 4, 3, 5))}"],
             (2, 4, 3, 5), lambda P, I: P["x"].transpose(0, 2, 1, 3),
             lambda P, I, R: {"x": R.transpose(0, 2, 1, 3)}))
    a, b, c = g.normal(2, 1, 3), g.normal(2, 4, 3), g.normal(2, 2, 3)
    add(Case("concat dim=1 (3 inputs)", {"a": a, "b": b, "c": c}, {},
             [f"%y = tfc.concat %a, %b, %c dim = 1 : ({ty(a)}, {ty(b)}, {ty(c)}) -> "
              f"{ttype((2, 7, 3))}"], (2, 7, 3),
             lambda P, I: np.concatenate([P["a"], P["b"], P["c"]], 1),
             lambda P, I, R: {"a": R[:, :1], "b": R[:, 1:5], "c": R[:, 5:]}))
    a, b = g.normal(3, 2), g.normal(3, 5)
    add(Case("concat dim=-1 (same param twice)", {"a": a, "b": b}, {},
             [f"%y = tfc.concat %a, %b, %a dim = -1 : ({ty(a)}, {ty(b)}, {ty(a)}) -> "
              f"{ttype((3, 9))}"], (3, 9),
             lambda P, I: np.concatenate([P["a"], P["b"], P["a"]], -1),
             lambda P, I, R: {"a": R[:, :2] + R[:, 7:], "b": R[:, 2:7]}))
    x = g.normal(5, 9, 4)
    add(Case("slice [1:4, 2:9, 0:3]", {"x": x}, {},
             [f"%y = tfc.slice %x start = [1, 2, 0] limit = [4, 9, 3] stride = [1, 1, 1] : "
              f"{ty(x)} -> {ttype((3, 7, 3))}"], (3, 7, 3),
             lambda P, I: P["x"][1:4, 2:9, 0:3],
             lambda P, I, R: {"x": np.pad(R, [(1, 1), (2, 0), (0, 1)])}))
    x = g.normal(3, 1)
    add(Case("broadcast_to [3,1]->[2,3,4]", {"x": x}, {},
             [f"%y = tfc.broadcast_to %x : {ty(x)} -> {ttype((2, 3, 4))}"], (2, 3, 4),
             lambda P, I: np.broadcast_to(P["x"], (2, 3, 4)),
             lambda P, I, R: {"x": R.sum((0, 2))[:, None]}))
    x = g.normal(4)
    add(Case("broadcast_to [4]->[3,4]", {"x": x}, {},
             [f"%y = tfc.broadcast_to %x : {ty(x)} -> {ttype((3, 4))}"], (3, 4),
             lambda P, I: np.broadcast_to(P["x"], (3, 4)),
             lambda P, I, R: {"x": R.sum(0)}))

    # --- reductions ---
    x = g.normal(3, 4, 5)
    for op, fn in [("reduce_sum", np.sum), ("reduce_mean", np.mean)]:
        for dims, keep in [([1], False), ([0, 2], True), ([-1], True), ([0, 1, 2], False)]:
            axes = tuple(d % 3 for d in dims)
            out = fn(x.astype(np.float64), axis=axes, keepdims=keep).shape
            count = int(np.prod([x.shape[a] for a in axes]))
            kd = " keepdim" if keep else ""
            scale = 1.0 / count if op == "reduce_mean" else 1.0
            add(Case(f"{op} dims={dims}{kd}", {"x": x}, {},
                     [f"%y = tfc.{op} %x dims = {dims}{kd} : {ty(x)} -> {ttype(out)}"], out,
                     lambda P, I, fn=fn, axes=axes, keep=keep: fn(P["x"], axis=axes, keepdims=keep),
                     lambda P, I, R, axes=axes, keep=keep, s=scale: {"x": s * np.broadcast_to(
                         R if keep else np.expand_dims(R, axes), P["x"].shape)}))

    # --- cross_entropy: ignored targets; loss = CE * r (r a frozen 0-d param) ---
    for dt, shape, ignored in [(np.int32, (2, 5, 13), [(0, 1), (1, 4)]),
                               (np.int64, (7, 9), [(3,), (4,), (5,)])]:
        logits = g.normal(*shape, scale=2)
        t = g.ints(0, shape[-1], *shape[:-1], dtype=dt)
        for i in ignored:
            t[i] = -100
        add(Case(f"cross_entropy {MLIR[np.dtype(dt)]} {list(shape)} ({len(ignored)} ignored)",
                 {"logits": logits}, {"t": t},
                 [f"%y = tfc.cross_entropy %logits, %t ignore_index = -100 : {ty(logits)}, "
                  f"{ty(t)} -> tensor<f32>"], (),
                 lambda P, I: cross_entropy(P["logits"], I["t"]),
                 lambda P, I, R: {"logits": cross_entropy_grad(P["logits"], I["t"]) * R}))
    logits = g.normal(3, 6)
    t = np.asarray([2, 5, 2], dtype=np.int32)
    add(Case("cross_entropy ignore_index=2 (one counted)", {"logits": logits}, {"t": t},
             [f"%y = tfc.cross_entropy %logits, %t ignore_index = 2 : {ty(logits)}, "
              f"{ty(t)} -> tensor<f32>"], (),
             lambda P, I: cross_entropy(P["logits"], I["t"], 2),
             lambda P, I, R: {"logits": cross_entropy_grad(P["logits"], I["t"], 2) * R}))
    t = np.full((3,), 4, dtype=np.int32)
    add(Case("cross_entropy all ignored (zero grad)", {"logits": logits}, {"t": t},
             [f"%y = tfc.cross_entropy %logits, %t ignore_index = 4 : {ty(logits)}, "
              f"{ty(t)} -> tensor<f32>"], (),
             lambda P, I: cross_entropy(P["logits"], I["t"], 4),
             lambda P, I, R: {"logits": np.zeros((3, 6))}))

    # --- a small block through several VJPs at once (LN -> linear -> gelu -> softmax) ---
    x, w, bw, bb = g.normal(2, 3, 8), g.normal(8, 6, scale=0.5), g.normal(8), g.normal(8)
    add(Case("chain layer_norm -> linear -> gelu -> log_softmax", {"x": x, "w": w, "g": bw, "b": bb},
             {}, [f"%n = tfc.layer_norm %x weight %g bias %b eps = 1.0e-5 : "
                  f"({ty(x)}, {ty(bw)}, {ty(bb)}) -> {ty(x)}",
                  f"%h = tfc.linear %n, %w : ({ty(x)}, {ty(w)}) -> {ttype((2, 3, 6))}",
                  f"%a = tfc.gelu %h approximate = tanh : {ttype((2, 3, 6))}",
                  f"%y = tfc.log_softmax %a dim = -1 : {ttype((2, 3, 6))} -> {ttype((2, 3, 6))}"],
             (2, 3, 6),
             lambda P, I: log_softmax(gelu_tanh(layer_norm(P["x"], P["g"], P["b"]) @ P["w"]))))
    return cases + [bf16_variant(c) for c in cases if c.name.split()[0] in BF16_OPS and
                    "frequencies" not in c.name]


def bf16_round(a):
    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def bf16_variant(case):
    """`case` computed in bf16: its parameters rounded to bf16 (so that the
    casts in are exact), its f32 tensor types (not the 0-d loss) bf16."""
    import re
    body = [re.sub(r"(\dx)f32>", r"\g<1>bf16>", line) for line in case.body]
    return Case(case.name + " [bf16]", {n: bf16_round(a) for n, a in case.params.items()},
                case.ints, body, case.out, case.fn, case.grad, case.fd,
                BF16_SOFTMAX_GRAD_RTOL if any(w in case.name for w in BF16_CANCELLING)
                else BF16_GRAD_RTOL,
                bf16=True)


# ---------------------------------------------------------------------------
# Reference gradients
# ---------------------------------------------------------------------------

def fd_grad(case, P, I, R, name, idx):
    """Fourth-order central differences of L = sum(f * R) w.r.t. P[name] at flat idx."""
    base = P[name]
    out = np.zeros(len(idx))
    for n, i in enumerate(idx):
        vals = []
        for k in (2, 1, -1, -2):
            p = dict(P)
            a = base.copy()
            a.reshape(-1)[i] += k * FD_H
            p[name] = a
            vals.append(float((case.fn(p, I) * R).sum()))
        out[n] = (-vals[0] + 8 * vals[1] - 8 * vals[2] + vals[3]) / (12 * FD_H)
    return out


def reference_grads(case, P, I, R, rng):
    """-> ({name: grad}, self-check detail or None, ok)."""
    analytic = case.grad(P, I, R) if case.grad else None
    if not case.fd:
        return analytic, "analytic only", True
    grads, worst = {}, 0.0
    for name, a in P.items():
        n = a.size
        idx = np.arange(n) if (analytic is None or n <= FD_MAX) else \
            np.sort(rng.choice(n, FD_MAX, replace=False))
        if analytic is None and n > 4 * FD_MAX:
            raise RuntimeError(f"{name}: {n} elements and no analytic gradient")
        fd = fd_grad(case, P, I, R, name, idx)
        if analytic is None:
            grads[name] = fd.reshape(a.shape)
            continue
        an = np.asarray(analytic[name], dtype=np.float64).reshape(-1)[idx]
        scale = float(np.abs(np.asarray(analytic[name])).max())
        if scale == 0:  # an input the loss does not depend on: FD is rounding noise
            scale = FD_ZERO / SELF_RTOL
        worst = max(worst, float(np.abs(an - fd).max()) / scale)
    if analytic is None:
        return grads, "finite differences (all elements)", True
    return analytic, f"analytic (vs FD rel {worst:.1e})", worst <= SELF_RTOL


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def run_tool(args, cwd):
    p = harness.run_tool(args, cwd=cwd, timeout=TOOL_TIMEOUT_S, merge_stderr=True)
    return p.returncode, p.stdout


def call(tfc_run, d, entry, case, outdir):
    args = [tfc_run, "m.so", "call", entry, "--weights", "w.safetensors", "--out-dir", outdir]
    for n in case.ints:
        args += ["--in", f"{n}={n}.npy"]
    rc, out = run_tool(args, d)
    if rc != 0:
        raise RuntimeError(f"tfc-run call {entry} failed:\n{out}")
    res = {}
    for f in os.listdir(os.path.join(d, outdir)):
        res[f[:-4]] = np.load(os.path.join(d, outdir, f))
    return res


def run_case(case, tfc, tfc_run, work, rng, verbose):
    d = os.path.join(work, "".join(c if c.isalnum() else "_" for c in case.name)[:80])
    os.makedirs(d, exist_ok=True)
    R = rng.normal(0.0, 1.0, size=case.out).astype(np.float32)
    if not case.out:
        R = np.asarray(rng.uniform(0.5, 2.0) * rng.choice([-1, 1]), dtype=np.float32)
    if case.bf16:  # the cast's VJP rounds dL/dy = R to bf16: make that exact
        R = bf16_round(R)
    with open(os.path.join(d, "m.mlir"), "w") as f:
        f.write(case.module())
    rc, out = run_tool([tfc, "m.mlir", "--optimizer=adamw", "-o", "m.so"], d)
    if rc != 0:
        return False, "tfc --optimizer=adamw failed:\n" + "\n".join(out.splitlines()[:12])
    weights = dict(case.params)
    weights.update(case.extra_params)
    weights["rconst"] = R
    write_weights(os.path.join(d, "w.safetensors"), weights)
    for n, a in case.ints.items():
        np.save(os.path.join(d, n + ".npy"), a)
    o = {"grad": call(tfc_run, d, "loss_grad", case, "out")}
    if case.fwd:
        o["fwd"] = call(tfc_run, d, "fwd", case, "fwd")
    P = {n: a.astype(np.float64) for n, a in case.params.items()}
    R64 = R.astype(np.float64)
    if case.check:
        return case.check(P, case.ints, R64, o)

    details, ok = [], True
    y = case.fn(P, case.ints)
    want_loss = float((y * R64).sum())
    loss_rel = abs(float(o["grad"]["loss"]) - want_loss) / max(float(np.abs(y * R64).sum()), 1e-30)
    ok &= loss_rel <= case.loss_tol
    details.append(f"loss rel {loss_rel:.1e}")
    want, how, self_ok = reference_grads(case, P, case.ints, R64, rng)
    if not self_ok:
        ok = False
        details.append("REFERENCE SELF-CHECK FAILED")
    names = list(case.params) + list(case.extra_params)
    for n in names:
        got = o["grad"].get("grad." + n)
        if got is None:
            ok = False
            details.append(f"grad.{n} missing")
            continue
        w = np.asarray(want[n], dtype=np.float64)
        if got.shape != w.shape:
            ok = False
            details.append(f"grad.{n} shape {list(got.shape)} != {list(w.shape)}")
            continue
        diff = np.abs(got.astype(np.float64) - w)
        scale = float(np.abs(w).max())
        rel = float(diff.max()) / scale if scale > 0 else float(diff.max())
        good = rel <= case.tol
        ok &= good
        where = np.unravel_index(int(diff.argmax()), diff.shape) if diff.size else ()
        details.append(f"grad.{n} rel {rel:.1e}" + ("" if good else
                       f" (max|diff| {diff.max():.3g} at {list(map(int, where))}: "
                       f"got {got[where]:.6g} want {w[where]:.6g}; max|ref| {scale:.3g})"))
        if not good and verbose:
            details.append(f"\n    got  {got.ravel()[:8]}\n    want {w.ravel()[:8]}")
    return ok, "; ".join(details) + f" [{how}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="directory holding tfc and tfc-run")
    ap.add_argument("--work-dir", help="keep the modules, inputs and outputs here")
    ap.add_argument("--seed", type=int, help="the inputs' seed (default: from the clock)")
    harness.add_selection_args(ap)
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()

    tools = harness.find_tools(opts.bin_dir)
    if tools is None:
        return 1
    tfc, tfc_run = tools
    seed = opts.seed if opts.seed is not None else int(time.time() * 1000) % 1000000
    print(f"seed {seed} (reproduce with --seed {seed})")
    # The cases are built from the seed before any selection, and each case draws R and
    # its finite-difference elements from (seed, its index): a case's numbers do not
    # depend on which cases run, so --seed S --only NAME reproduces a failure.
    cases = harness.select_cases(ap, opts, build_cases(Gen(seed)))
    if not cases:
        return 1
    work = harness.scratch_dir(opts.work_dir, "tfc-vjps-")
    return harness.run_cases(
        cases, lambda case: run_case(case, tfc, tfc_run, work,
                                     np.random.default_rng([seed + 1, case.index]),
                                     opts.verbose),
        work, keep=bool(opts.work_dir))


if __name__ == "__main__":
    sys.exit(main())

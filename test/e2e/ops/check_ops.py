#!/usr/bin/env python3
"""End-to-end numerics of every tfc op on the CPU against float64 NumPy references.

For each case: a one-entry module (@f, inputs named with {tfc.name = ...}) is compiled
with `tfc -o op.so`, run with `tfc-run op.so call f --in NAME=FILE.npy ...`, and each
output is compared with a NumPy float64 reference computed from the same (fresh,
random, never all-zero) inputs:

  float outputs   |tfc - ref| <= atol + rtol * |ref| elementwise (f32: rtol 1e-5)
  int outputs     exact

Cases cover broadcasting, odd sizes, several dims/keepdim, f16/i32/i64 where the op
allows them, run-time positions (clamping, out-of-range errors reported by the
runtime), parameters (--weights) and state updated in place (--state-out). Each case
prints its max abs diff; the last line is `N passed, M failed`; the exit code is
non-zero on any failure. Reproduce with the printed --seed (or $TFC_TEST_SEED). A failing output prints its
first elements, got against want, and the worst element.

The optimization level and switches come from $TFC_OPTIONS (what tfc reads), e.g.
TFC_OPTIONS=-O1: -O0 and -O1 form no fused kernels (tfc-fuse runs at -O2 and above),
so the cases that expect some then expect none. --every K --offset J runs case i only
when i % K == J (lit runs each case at one of -O0, -O1, -O3 that way).

  check_ops.py --bin-dir build/bin [--work-dir DIR] [--seed S] [--only SUBSTR]
               [--every K --offset J] [-v]
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

TOOL_TIMEOUT_S = 300
SITE_STRIDE = 1 << 32  # DropoutSites (compiler/frontend/models/Common.cpp): seed + i * 2^32
F32 = dict(rtol=1e-5, atol=1e-6)
F16 = dict(rtol=2e-3, atol=2e-3)
BF16 = np.dtype(ml_dtypes.bfloat16)
HALF_TYPES = (BF16, np.dtype(np.float16))

MLIR_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16",
              np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
NP_TYPES = {v: k for k, v in MLIR_TYPES.items()}
ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i32": "I32", "i64": "I64"}


def ttype(shape, elt):
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims}x{elt}>" if shape else f"tensor<{elt}>"


def ty(a):
    return ttype(a.shape, MLIR_TYPES[a.dtype])


# ---------------------------------------------------------------------------
# Random inputs (never zeros)
# ---------------------------------------------------------------------------

class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape, dtype=np.float32, scale=1.0):
        a = self.rng.normal(0.0, scale, size=shape)
        a[np.abs(a) < 1e-3] = 0.5  # never exactly (or nearly) zero
        return a.astype(dtype)

    def positive(self, *shape, lo=0.5, hi=2.0, dtype=np.float32):
        return self.rng.uniform(lo, hi, size=shape).astype(dtype)

    def nonzero(self, *shape, dtype=np.float32):
        sign = np.where(self.rng.random(shape) < 0.5, -1.0, 1.0)
        return (sign * self.rng.uniform(0.5, 2.0, size=shape)).astype(dtype)

    def ints(self, lo, hi, *shape, dtype=np.int32):
        a = self.rng.integers(lo, hi, size=shape)
        return np.asarray(a, dtype=dtype)

    def scalar(self, v, dtype):
        return np.asarray(v, dtype=dtype)


# ---------------------------------------------------------------------------
# References (float64)
# ---------------------------------------------------------------------------

def is_float(dtype):
    return np.issubdtype(dtype, np.floating) or dtype == BF16


def f64(a):
    return a.astype(np.float64) if is_float(a.dtype) else a


_erf = np.vectorize(math.erf)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x, approx):
    if approx == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def layer_norm(x, w=None, b=None, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rms_norm(x, w=None, eps=1e-6):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y * w if w is not None else y


def attention(q, k, v, causal, offset=None, scale=None):
    b, h, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    g = h // hkv
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if offset is None:
        offset = tk - tq
    out = np.zeros((b, h, tq, v.shape[3]))
    for hh in range(h):
        kk, vv = k[:, hh // g], v[:, hh // g]
        s = scale * np.einsum("bid,bjd->bij", q[:, hh], kk)
        if causal:
            mask = np.arange(tk)[None, :] > (np.arange(tq)[:, None] + offset)
            s = np.where(mask[None], -np.inf, s)
        out[:, hh] = np.einsum("bij,bjd->bid", softmax(s, -1), vv)
    return out


def rotary(x, offset, theta, freq=None):
    d = x.shape[-1]
    half = d // 2
    t = x.shape[-2]
    pos = offset + np.arange(t, dtype=np.float64)
    if freq is None:
        freq = theta ** (-2.0 * np.arange(half) / d)
    ang = pos[:, None] * freq[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def cross_entropy(logits, targets, ignore=-100):
    v = logits.shape[-1]
    flat = logits.reshape(-1, v)
    t = targets.reshape(-1).astype(np.int64)
    total, count = 0.0, 0
    for r in range(flat.shape[0]):
        if t[r] == ignore:
            continue
        row = flat[r]
        m = row.max()
        total += m + math.log(np.exp(row - m).sum()) - row[t[r]]
        count += 1
    return np.asarray(total / count if count else 0.0)


def dropout_seed_for_step(seed, step):
    """tfc-run train's seed of a step (dropoutSeedForStep in
    tools/tfc-run/train_common.cpp): SplitMix64 of (seed, step)."""
    m = (1 << 64) - 1
    z = (seed * 0x9E3779B97F4A7C15 + step) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return (z ^ (z >> 31)) >> 1


def strided_slice(x, start, limit, stride):
    return x[tuple(slice(s, l, st) for s, l, st in zip(start, limit, stride))]


def trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


# ---------------------------------------------------------------------------
# safetensors (for --weights and --state-out)
# ---------------------------------------------------------------------------

def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        data = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": ST_DTYPES[MLIR_TYPES[a.dtype]], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    inv = {v: NP_TYPES[k] for k, v in ST_DTYPES.items()}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b],
                                  dtype=inv[info["dtype"]]).reshape(info["shape"])
    return out


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

class Case:
    """One module with entry @f.

    inputs: {name: array}; body: MLIR lines using %name and defining %<output>;
    outputs: {name: mlir element type}; ref: fn(inputs as float64) -> {name: array}.
    check: optional fn(inputs, outputs) -> (ok, detail) instead of ref.
    expect_error: a substring of tfc-run's stderr (the call must fail).
    fused: how many fused kernels (groups and attentions) tfc-fuse must form,
           read from --report.
    """

    def __init__(self, name, inputs, body, outputs, ref=None, tol=F32, check=None,
                 expect_error=None, params=None, states=None, state_ref=None,
                 out_shapes=None, fused=0):
        self.name, self.inputs, self.body, self.outputs = name, inputs, body, outputs
        self.ref, self.tol, self.check = ref, tol, check
        self.expect_error = expect_error
        self.params = params or {}
        self.states = states or {}  # name -> (array type, init string)
        self.state_ref = state_ref
        self.out_shapes = out_shapes or {}
        self.fused = fused  # fused kernels tfc-fuse must form (unless --no-fuse)

    # .npy has no bfloat16 (NumPy has none; tfc-run refuses it), so bf16 inputs
    # enter as parameters (--weights, a BF16 safetensors) and bf16 outputs
    # leave as states (--state-out): the same op, loaded and stored around it.
    def bf16_inputs(self):
        return {n: a for n, a in self.inputs.items() if a.dtype == BF16}

    def bf16_outputs(self):
        return [n for n, e in self.outputs.items() if e == "bf16"]

    def module(self, shapes):
        lines, loads, stores = [], [], []
        for name, a in {**self.params, **self.bf16_inputs()}.items():
            lines.append(f'tfc.param @{name} : {ty(a)} = "zeros"')
        for name, (t, init) in self.states.items():
            lines.append(f'tfc.state @{name} : {t} = "{init}"')
        for n, a in self.bf16_inputs().items():
            loads.append(f"%{n} = tfc.load @{n} : {ty(a)}")
        for n in self.bf16_outputs():
            t = ttype(shapes[n], "bf16")
            lines.append(f'tfc.state @out_{n} : {t} = "zeros"')
            stores.append(f"tfc.store %{n}, @out_{n} : {t}")
        ins = {n: a for n, a in self.inputs.items() if a.dtype != BF16}
        outs = {n: e for n, e in self.outputs.items() if e != "bf16"}
        args = ", ".join(f'%{n}: {ty(a)} {{tfc.name = "{n}"}}' for n, a in ins.items())
        res = [ttype(shapes[n], e) for n, e in outs.items()]
        res_decl = ", ".join(f'{t} {{tfc.name = "{n}"}}' for n, t in zip(outs, res))
        lines.append(f"func.func @f({args}) -> ({res_decl}) {{")
        lines += ["  " + l for l in loads + self.body + stores]
        if outs:
            lines.append("  return " + ", ".join("%" + n for n in outs) + " : " +
                         ", ".join(res))
        else:
            lines.append("  return")
        lines.append("}")
        return "\n".join(lines) + "\n"


def exp_f32(x):
    """exp in float32, as the kernels compute it: inf where it overflows."""
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(x, np.float32))


def unary_f(name, fn, x, tol=F32, extra=""):
    return Case(name, {"x": x}, [f"%y = tfc.{name.split(' ')[0]} %x{extra} : {ty(x)}"],
                {"y": MLIR_TYPES[x.dtype]}, lambda i: {"y": fn(i["x"])}, tol)


def binary(op, fn, a, b, tol=F32, label=""):
    out = np.broadcast_shapes(a.shape, b.shape)
    t = ttype(out, MLIR_TYPES[a.dtype])
    return Case(f"{op} {label}".strip(), {"a": a, "b": b},
                [f"%y = tfc.{op} %a, %b : {ty(a)}, {ty(b)} -> {t}"],
                {"y": MLIR_TYPES[a.dtype]}, lambda i: {"y": fn(i["a"], i["b"])}, tol)


def build_cases(g):
    cases = []
    add = cases.append

    # --- elementwise: broadcasting, odd sizes, every element type ---
    for op, fn in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("max", np.maximum), ("min", np.minimum)]:
        add(binary(op, fn, g.normal(3, 1, 5), g.normal(4, 5), label="f32 [3,1,5]x[4,5]"))
    add(binary("div", np.divide, g.normal(7, 3), g.nonzero(3), label="f32 [7,3]/[3]"))
    add(binary("div", np.divide, g.nonzero(1), g.nonzero(2, 5), label="f32 [1]/[2,5]"))
    add(binary("pow", np.power, g.positive(3, 7), g.normal(7), label="f32"))
    add(binary("add", np.add, g.normal(5, 3, dtype=np.float16), g.normal(3, dtype=np.float16),
               tol=F16, label="f16"))
    add(binary("add", np.add, g.ints(-50, 50, 4, 3), g.ints(-50, 50, 3), label="i32"))
    add(binary("mul", np.multiply, g.ints(-1000, 1000, 2, 3, dtype=np.int64),
               g.ints(-1000, 1000, 2, 1, dtype=np.int64), label="i64"))
    a = g.ints(-100, 100, 9)
    add(binary("div", trunc_div, a, g.ints(1, 9, 9) * np.where(g.rng.random(9) < .5, -1, 1)
               .astype(np.int32), label="i32 (truncating)"))
    add(binary("max", np.maximum, g.ints(-9, 9, 3, 4, dtype=np.int64),
               g.ints(-9, 9, 4, dtype=np.int64), label="i64"))
    add(binary("min", np.minimum, g.ints(-9, 9, 5), g.ints(-9, 9, 2, 5), label="i32"))

    add(unary_f("exp", np.exp, g.normal(4, 7)))
    add(unary_f("log", np.log, g.positive(4, 7, lo=0.1, hi=10)))
    add(unary_f("sqrt", np.sqrt, g.positive(3, 5, lo=0.1, hi=10)))
    add(unary_f("rsqrt", lambda x: 1 / np.sqrt(x), g.positive(3, 5, lo=0.1, hi=10)))
    add(unary_f("tanh", np.tanh, g.normal(2, 9)))
    add(unary_f("sin", np.sin, g.normal(2, 9, scale=3)))
    add(unary_f("cos", np.cos, g.normal(2, 9, scale=3)))
    add(unary_f("sigmoid", sigmoid, g.normal(11)))
    add(unary_f("neg", np.negative, g.normal(3, 3)))
    add(unary_f("neg i32", np.negative, g.ints(-99, 99, 6)))
    add(unary_f("abs", np.abs, g.normal(3, 3)))
    add(unary_f("abs i64", np.abs, g.ints(-99, 99, 6, dtype=np.int64)))
    add(unary_f("relu", lambda x: np.maximum(x, 0), g.normal(5, 5)))
    add(unary_f("silu", lambda x: x * sigmoid(x), g.normal(5, 5)))
    add(unary_f("gelu none", lambda x: gelu(x, "none"), g.normal(5, 5), extra=" approximate = none"))
    add(unary_f("gelu tanh", lambda x: gelu(x, "tanh"), g.normal(5, 5), extra=" approximate = tanh"))
    add(unary_f("exp f16", np.exp, g.normal(3, 5, dtype=np.float16), tol=F16))
    x = g.normal(4, 6)
    add(Case("leaky_relu", {"x": x}, [f"%y = tfc.leaky_relu %x alpha = 0.1 : {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": np.where(i["x"] > 0, i["x"], 0.1 * i["x"])}))


    # --- tanh and erf (gelu none) off the N(0,1) bulk: tails up to |x| = 20,
    # where polynomial approximations must saturate to exactly +-1 (erf) and
    # not overshoot, and the special values: +-inf, NaN ---
    tails = np.concatenate([np.linspace(-20, 20, 81), [-9.5, -7.9, -4.2, 3.3, 6.6, 8.8,
                                                       15.5, -1e-4, 1e-4, 0.0]])
    special = np.concatenate([tails, [np.inf, -np.inf, np.nan]]).astype(np.float32)
    add(unary_f("tanh tails, +-inf, NaN", np.tanh, special))
    # gelu(-inf) is -inf * 0 in the formula, undefined; +inf and NaN are not.
    no_minus_inf = np.concatenate([tails, [np.inf, np.nan]]).astype(np.float32)
    add(unary_f("gelu none (erf) tails, +inf, NaN", lambda x: gelu(x, "none"), no_minus_inf,
                extra=" approximate = none"))
    add(unary_f("gelu tanh tails, +inf, NaN", lambda x: gelu(x, "tanh"), no_minus_inf,
                extra=" approximate = tanh"))
    add(unary_f("sigmoid tails", sigmoid, tails.astype(np.float32)))
    # exp (a polynomial in the CPU's generated loops, within 3 ulp) over its
    # whole range, the overflow and underflow edges, and the special values;
    # below the smallest normal result (x < -87.34) the CPU flushes to 0,
    # within atol.
    exp_range = np.concatenate([np.linspace(-100, 100, 2001), g.normal(500) * 30,
                                [88.72, 88.73, -87.33, -87.34, -103.9, 1e-30, -0.0],
                                [np.inf, -np.inf, np.nan]]).astype(np.float32)
    add(unary_f("exp range, overflow, underflow, +-inf, NaN",
                exp_f32, exp_range, tol=dict(rtol=3.6e-7, atol=1e-37)))

    # --- fused kernels (tfc-fuse at -O2): several ops, one kernel ---
    a, b, s = g.normal(4, 1, 6), g.normal(6), g.normal()
    t4 = ttype((4, 1, 6), "f32")
    add(Case("fused pointwise: broadcast chain, two outputs", {"a": a, "b": b, "s": s}, [
        f"%t = tfc.add %a, %b : {ty(a)}, {ty(b)} -> {t4}",
        f"%u = tfc.gelu %t approximate = tanh : {t4}",
        f"%y = tfc.mul %u, %s : {t4}, {ty(s)} -> {t4}",
        f"%z = tfc.sub %t, %s : {t4}, {ty(s)} -> {t4}"],
        {"y": "f32", "z": "f32"},
        lambda i: {"y": gelu(i["a"] + i["b"], "tanh") * i["s"], "z": i["a"] + i["b"] - i["s"]},
        fused=1))
    p, gr, m, v = g.normal(5, 7), g.normal(5, 7), g.normal(5, 7), g.positive(5, 7)
    lr, b1, b2 = g.scalar(0.01, np.float32), g.scalar(0.9, np.float32), g.scalar(0.99, np.float32)
    t = ty(p)
    sc = ttype((), "f32")

    def adam_ref(i):
        m1 = i["b1"] * i["m"] + (1 - i["b1"]) * i["g"]
        v1 = i["b2"] * i["v"] + (1 - i["b2"]) * i["g"] * i["g"]
        return {"m1": m1, "v1": v1, "p1": i["p"] - i["lr"] * m1 / (np.sqrt(v1) + 1e-8)}
    add(Case("fused pointwise: AdamW-like update, three outputs",
             {"p": p, "g": gr, "m": m, "v": v, "lr": lr, "b1": b1, "b2": b2}, [
        f"%one = tfc.constant dense<1.0> : {sc}",
        f"%eps = tfc.constant dense<1.0e-8> : {sc}",
        f"%c1 = tfc.sub %one, %b1 : {sc}, {sc} -> {sc}",
        f"%c2 = tfc.sub %one, %b2 : {sc}, {sc} -> {sc}",
        f"%ma = tfc.mul %m, %b1 : {t}, {sc} -> {t}",
        f"%mb = tfc.mul %g, %c1 : {t}, {sc} -> {t}",
        f"%m1 = tfc.add %ma, %mb : {t}, {t} -> {t}",
        f"%gg = tfc.mul %g, %g : {t}, {t} -> {t}",
        f"%va = tfc.mul %v, %b2 : {t}, {sc} -> {t}",
        f"%vb = tfc.mul %gg, %c2 : {t}, {sc} -> {t}",
        f"%v1 = tfc.add %va, %vb : {t}, {t} -> {t}",
        f"%sq = tfc.sqrt %v1 : {t}",
        f"%den = tfc.add %sq, %eps : {t}, {sc} -> {t}",
        f"%r = tfc.div %m1, %den : {t}, {t} -> {t}",
        f"%st = tfc.mul %r, %lr : {t}, {sc} -> {t}",
        f"%p1 = tfc.sub %p, %st : {t}, {t} -> {t}"],
        {"m1": "f32", "v1": "f32", "p1": "f32"}, adam_ref, fused=1))
    x, w = g.normal(3, 5, 8), g.normal(8)
    add(Case("fused reduction: sum of squares over every dim", {"x": x}, [
        f"%q = tfc.mul %x, %x : {ty(x)}, {ty(x)} -> {ty(x)}",
        f"%y = tfc.reduce_sum %q dims = [0, 1, 2] : {ty(x)} -> {sc}"],
        {"y": "f32"}, lambda i: {"y": np.sum(i["x"] ** 2)}, fused=1))
    add(Case("fused reduction: mean over the last dim, keepdim, broadcast prologue",
             {"x": x, "w": w}, [
        f"%q = tfc.mul %x, %w : {ty(x)}, {ty(w)} -> {ty(x)}",
        f"%e = tfc.tanh %q : {ty(x)}",
        f"%y = tfc.reduce_mean %e dims = [2] keepdim : {ty(x)} -> {ttype((3, 5, 1), 'f32')}"],
        {"y": "f32"}, lambda i: {"y": np.mean(np.tanh(i["x"] * i["w"]), axis=2, keepdims=True)},
        fused=1))
    add(Case("fused reduction: max over the first dim of exp", {"x": x}, [
        f"%e = tfc.exp %x : {ty(x)}",
        f"%n = tfc.neg %e : {ty(x)}",
        f"%y = tfc.reduce_max %n dims = [0] : {ty(x)} -> {ttype((5, 8), 'f32')}"],
        {"y": "f32"}, lambda i: {"y": np.max(-np.exp(i["x"]), axis=0)}, fused=1))
    h, hb = g.normal(6, 5, dtype=np.float16), g.normal(5, dtype=np.float16)
    add(Case("fused pointwise f16: add, exp, mul", {"h": h, "hb": hb}, [
        f"%t = tfc.add %h, %hb : {ty(h)}, {ty(hb)} -> {ty(h)}",
        f"%e = tfc.exp %t : {ty(h)}",
        f"%y = tfc.mul %e, %t : {ty(h)}, {ty(h)} -> {ty(h)}"],
        {"y": "f16"}, lambda i: {"y": np.exp(i["h"] + i["hb"]) * (i["h"] + i["hb"])},
        # t's f16 rounding (relative 2^-11) reaches y = exp(t) t amplified by 1 + |t|
        # (|t| up to ~6 here): seed 41393 gave 2.5e-3 relative under F16's 2e-3.
        tol=dict(rtol=8e-3, atol=2e-3), fused=1))
    c = g.normal(4, 9)
    tc, th = ty(c), ttype((4, 9), "f16")
    add(Case("fused pointwise: cast to f16 and back rounds inside", {"c": c}, [
        f"%k = tfc.constant dense<3.0> : {sc}",
        f"%t = tfc.mul %c, %k : {tc}, {sc} -> {tc}",
        f"%h = tfc.cast %t : {tc} -> {th}",
        f"%f = tfc.cast %h : {th} -> {tc}",
        f"%y = tfc.sub %t, %f : {tc}, {tc} -> {tc}"],
        {"y": "f32"},
        # t is an f32 (3c rounded once), then rounded to f16: in float64 3c near an f16 tie
        # can round the other way (seed 75029: one element off by an f16 ulp, sign flipped).
        lambda i: {"y": (lambda t: t - t.astype(np.float16).astype(np.float32))(
            np.float32(3) * i["c"].astype(np.float32))},
        tol=dict(rtol=1e-3, atol=1e-6), fused=1))
    x, r, w, bb = g.normal(3, 5, 48), g.normal(3, 5, 48), g.normal(48), g.normal(48)
    tx = ty(x)
    add(Case("fused row: residual add, then layer_norm; the sum is a result too",
             {"x": x, "r": r, "w": w, "b": bb}, [
        f"%s = tfc.add %x, %r : {tx}, {tx} -> {tx}",
        f"%y = tfc.layer_norm %s weight %w bias %b eps = 1.0e-5 : ({tx}, {ty(w)}, {ty(bb)}) -> {tx}"],
        {"s": "f32", "y": "f32"},
        lambda i: {"s": i["x"] + i["r"],
                   "y": layer_norm(i["x"] + i["r"], i["w"], i["b"])}, fused=1))
    add(Case("fused row: rms_norm of a broadcast, scaled product",
             {"x": x, "w": w, "s": s}, [
        f"%m = tfc.mul %x, %w : {tx}, {ty(w)} -> {tx}",
        f"%t = tfc.mul %m, %s : {tx}, {sc} -> {tx}",
        f"%y = tfc.rms_norm %t weight %w eps = 1.0e-6 : ({tx}, {ty(w)}) -> {tx}"],
        {"y": "f32"}, lambda i: {"y": rms_norm(i["x"] * i["w"] * i["s"], i["w"])},
        fused=1))
    add(Case("fused row: softmax and log_softmax of a masked, scaled row",
             {"x": x, "r": r}, [
        f"%c = tfc.constant dense<0.7> : {sc}",
        f"%t = tfc.mul %x, %c : {tx}, {sc} -> {tx}",
        f"%u = tfc.sub %t, %r : {tx}, {tx} -> {tx}",
        f"%y = tfc.softmax %u dim = -1 : {tx} -> {tx}",
        f"%v = tfc.exp %r : {tx}",
        f"%z = tfc.log_softmax %v dim = 2 : {tx} -> {tx}"],
        {"y": "f32", "z": "f32"},
        lambda i: {"y": softmax(0.7 * i["x"] - i["r"], -1),
                   "z": log_softmax(np.exp(i["r"]), -1)}, fused=2))
    q, k, v = g.normal(2, 3, 5, 8), g.normal(2, 3, 7, 8), g.normal(2, 3, 7, 4)
    tq, tk = 5, 7
    rows = ["[" + ", ".join("0.0" if j <= i + tk - tq else "0xFF800000" for j in range(tk)) + "]"
            for i in range(tq)]
    ts, to = ttype((2, 3, tq, tk), "f32"), ttype((2, 3, tq, 4), "f32")
    add(Case("fused attention: scores, scale, causal mask, softmax, values", {"q": q, "k": k, "v": v}, [
        f"%scale = tfc.constant dense<0.3> : {sc}",
        f"%mask = tfc.constant dense<[{', '.join(rows)}]> : {ttype((tq, tk), 'f32')}",
        f"%s = tfc.matmul %q, %k transpose_rhs : {ty(q)}, {ty(k)} -> {ts}",
        f"%t = tfc.mul %s, %scale : {ts}, {sc} -> {ts}",
        f"%u = tfc.add %t, %mask : {ts}, {ttype((tq, tk), 'f32')} -> {ts}",
        f"%p = tfc.softmax %u dim = 3 : {ts} -> {ts}",
        f"%o = tfc.matmul %p, %v : {ts}, {ty(v)} -> {to}"],
        {"o": "f32"}, lambda i: {"o": attention(i["q"], i["k"], i["v"], True, scale=0.3)},
        fused=1))
    def linear_case(label, x, w, bias, act, residual, transpose=False,
                    tol=dict(rtol=1e-4, atol=1e-5)):
        n = w.shape[0] if transpose else w.shape[1]
        ty_y = ttype(x.shape[:-1] + (n,), "f32")
        inputs = {"x": x, "w": w}
        operands, types = "%x, %w", f"{ty(x)}, {ty(w)}"
        if bias is not None:
            inputs["bias"] = bias
            operands += " bias %bias"
            types += f", {ty(bias)}"
        body = [f"%l = tfc.linear {operands}{' transpose_weight' if transpose else ''} : "
                f"({types}) -> {ty_y}"]
        last = "%l"
        if act:
            body.append(f"%a = tfc.{act} {last}{' approximate = tanh' if act == 'gelu' else ''} : {ty_y}")
            last = "%a"
        if residual is not None:
            inputs["r"] = residual
            body.append(f"%y = tfc.add {last}, %r : {ty_y}, {ty_y} -> {ty_y}")
        else:
            body.append(f"%y = tfc.mul {last}, %one : {ty_y}, {sc} -> {ty_y}")
            body.insert(0, f"%one = tfc.constant dense<1.0> : {sc}")

        def ref(i):
            wm = i["w"].T if transpose else i["w"]
            y = i["x"] @ wm + (i["bias"] if bias is not None else 0)
            y = {"gelu": lambda t: gelu(t, "tanh"), "relu": lambda t: np.maximum(t, 0),
                 "silu": lambda t: t * sigmoid(t), None: lambda t: t}[act](y)
            return {"y": y + (i["r"] if residual is not None else 0)}
        # Without a residual, the trailing mul stays a kernel of its own.
        return Case(f"fused linear: {label}", inputs, body, {"y": "f32"}, ref,
                    tol=tol, fused=1)
    add(linear_case("bias, gelu, residual [2,9,48]x[48,40]", g.normal(2, 9, 48), g.normal(48, 40),
                    g.normal(40), "gelu", g.normal(2, 9, 40)))
    add(linear_case("residual only, one row (small-M path)", g.normal(1, 300), g.normal(300, 24),
                    None, None, g.normal(1, 24)))
    add(linear_case("transpose_weight, silu, residual", g.normal(17, 32), g.normal(20, 32),
                    g.normal(20), "silu", g.normal(17, 20), transpose=True))
    add(linear_case("bias, gelu, no residual", g.normal(64, 40), g.normal(40, 72), g.normal(72),
                    "gelu", None))
    # An f32 dot product of K = 1000 unit normals carries about
    # sqrt(K) * 2^-24 * sum|x_k w_k| ~ 5e-5 of rounding, whatever the order of
    # the sums; where relu(y) + r cancels to near 0, only an absolute bound of
    # that size holds (seed 73157 gave 1.7e-5).
    add(linear_case("relu, residual, 3 rows, long K", g.normal(3, 1000), g.normal(1000, 16),
                    g.normal(16), "relu", g.normal(3, 16), tol=dict(rtol=1e-4, atol=2e-4)))
    ia, ib = g.ints(-50, 50, 3, 4), g.ints(-50, 50, 4)
    ti = ty(ia)
    add(Case("fused pointwise i32: mul, add, abs", {"ia": ia, "ib": ib}, [
        f"%t = tfc.mul %ia, %ib : {ti}, {ty(ib)} -> {ti}",
        f"%u = tfc.add %t, %ia : {ti}, {ti} -> {ti}",
        f"%y = tfc.abs %u : {ti}"],
        {"y": "i32"}, lambda i: {"y": np.abs(i["ia"] * i["ib"] + i["ia"])}, fused=1))

    # --- cast ---
    def cast_case(x, to, fn, tol=F32):
        return Case(f"cast {MLIR_TYPES[x.dtype]}->{to}", {"x": x},
                    [f"%y = tfc.cast %x : {ty(x)} -> {ttype(x.shape, to)}"], {"y": to},
                    lambda i: {"y": fn(i["x"])}, tol)
    add(cast_case(g.normal(3, 4, scale=10), "i32", lambda x: np.trunc(x)))
    add(cast_case(g.ints(-1000, 1000, 7), "f32", lambda x: x.astype(np.float64)))
    add(cast_case(g.ints(-10**6, 10**6, 5, dtype=np.int64), "i32", lambda x: x))
    add(cast_case(g.normal(6), "f16", lambda x: x.astype(np.float16).astype(np.float64),
                  tol=dict(rtol=0, atol=0)))
    add(cast_case(g.normal(6, dtype=np.float16), "f32", lambda x: x))

    # --- matmul / linear (the kernel library) ---
    a, b = g.normal(2, 3, 4), g.normal(4, 5)
    add(Case("matmul [2,3,4]x[4,5]", {"a": a, "b": b},
             [f"%y = tfc.matmul %a, %b : {ty(a)}, {ty(b)} -> {ttype((2, 3, 5), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["a"] @ i["b"]}))
    a, b = g.normal(2, 1, 3, 4), g.normal(3, 5, 4)
    add(Case("matmul batch-broadcast transpose_rhs", {"a": a, "b": b},
             [f"%y = tfc.matmul %a, %b transpose_rhs : {ty(a)}, {ty(b)} -> "
              f"{ttype((2, 3, 3, 5), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["a"] @ np.swapaxes(i["b"], -1, -2)}))
    a, b = g.normal(4, 3), g.normal(4, 5)
    add(Case("matmul transpose_lhs", {"a": a, "b": b},
             [f"%y = tfc.matmul %a, %b transpose_lhs : {ty(a)}, {ty(b)} -> {ttype((3, 5), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["a"].T @ i["b"]}))
    x, w, bias = g.normal(2, 3, 8), g.normal(8, 5), g.normal(5)
    add(Case("linear bias", {"x": x, "w": w, "bias": bias},
             [f"%y = tfc.linear %x, %w bias %bias : ({ty(x)}, {ty(w)}, {ty(bias)}) -> "
              f"{ttype((2, 3, 5), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["x"] @ i["w"] + i["bias"]}))
    x, w = g.normal(3, 7), g.normal(6, 7)
    add(Case("linear transpose_weight", {"x": x, "w": w},
             [f"%y = tfc.linear %x, %w transpose_weight : ({ty(x)}, {ty(w)}) -> "
              f"{ttype((3, 6), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["x"] @ i["w"].T}))
    # The weight as a parameter bound by --weights.
    x, w = g.normal(3, 4), g.normal(4, 2)
    add(Case("linear (param from --weights)", {"x": x},
             [f"%w = tfc.load @w : {ty(w)}",
              f"%y = tfc.linear %x, %w : ({ty(x)}, {ty(w)}) -> {ttype((3, 2), 'f32')}"],
             {"y": "f32"}, lambda i, w=w: {"y": i["x"] @ w.astype(np.float64)}, params={"w": w}))

    # --- normalization / softmax ---
    x, w, b = g.normal(3, 5, 33, scale=3), g.normal(33), g.normal(33)
    add(Case("layer_norm weight bias", {"x": x, "w": w, "b": b},
             [f"%y = tfc.layer_norm %x weight %w bias %b eps = 1.0e-5 : "
              f"({ty(x)}, {ty(w)}, {ty(b)}) -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": layer_norm(i["x"], i["w"], i["b"], 1e-5)}))
    x = g.normal(4, 7) + 100  # a large mean: the two-pass variance stays accurate
    add(Case("layer_norm plain (mean 100)", {"x": x},
             [f"%y = tfc.layer_norm %x eps = 1.0e-5 : ({ty(x)}) -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": layer_norm(i["x"], eps=1e-5)},
             tol=dict(rtol=1e-4, atol=1e-4)))
    x, w = g.normal(2, 9, dtype=np.float16), g.normal(9, dtype=np.float16)
    add(Case("layer_norm f16", {"x": x, "w": w},
             [f"%y = tfc.layer_norm %x weight %w eps = 1.0e-5 : ({ty(x)}, {ty(w)}) -> {ty(x)}"],
             {"y": "f16"}, lambda i: {"y": layer_norm(i["x"], i["w"], eps=1e-5)},
             tol=dict(rtol=5e-3, atol=5e-3)))
    x, w = g.normal(2, 3, 16), g.normal(16)
    add(Case("rms_norm weight", {"x": x, "w": w},
             [f"%y = tfc.rms_norm %x weight %w eps = 1.0e-6 : ({ty(x)}, {ty(w)}) -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": rms_norm(i["x"], i["w"], 1e-6)}))
    x = g.normal(5, 3)
    add(Case("rms_norm plain", {"x": x},
             [f"%y = tfc.rms_norm %x eps = 1.0e-8 : ({ty(x)}) -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": rms_norm(i["x"], eps=1e-8)}))
    for dim, shape in [(1, (2, 3, 5)), (-1, (4, 33)), (0, (7, 2))]:
        x = g.normal(*shape, scale=4)
        add(Case(f"softmax dim={dim} {list(shape)}", {"x": x},
                 [f"%y = tfc.softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"],
                 {"y": "f32"}, lambda i, d=dim: {"y": softmax(i["x"], d)}))
    x = g.normal(3, 6, dtype=np.float16)
    add(Case("softmax f16", {"x": x}, [f"%y = tfc.softmax %x dim = -1 : {ty(x)} -> {ty(x)}"],
             {"y": "f16"}, lambda i: {"y": softmax(i["x"], -1)}, tol=F16))
    x = g.normal(3, 1000, scale=30)
    add(Case("softmax large logits", {"x": x},
             [f"%y = tfc.softmax %x dim = -1 : {ty(x)} -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": softmax(i["x"], -1)}))
    for dim, shape in [(0, (4, 3)), (-1, (2, 3, 17))]:
        x = g.normal(*shape, scale=4)
        add(Case(f"log_softmax dim={dim}", {"x": x},
                 [f"%y = tfc.log_softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"],
                 {"y": "f32"}, lambda i, d=dim: {"y": log_softmax(i["x"], d)}))

    # --- attention ---
    q, k, v = g.normal(1, 4, 3, 8), g.normal(1, 2, 5, 8), g.normal(1, 2, 5, 6)
    t_out = ttype((1, 4, 3, 6), "f32")
    add(Case("attention causal GQA", {"q": q, "k": k, "v": v},
             [f"%y = tfc.attention %q, %k, %v causal : ({ty(q)}, {ty(k)}, {ty(v)}) -> {t_out}"],
             {"y": "f32"}, lambda i: {"y": attention(i["q"], i["k"], i["v"], True)}))
    add(Case("attention non-causal scale", {"q": q, "k": k, "v": v},
             [f"%y = tfc.attention %q, %k, %v scale = 0.25 : ({ty(q)}, {ty(k)}, {ty(v)}) -> {t_out}"],
             {"y": "f32"}, lambda i: {"y": attention(i["q"], i["k"], i["v"], False, scale=0.25)}))
    pos = g.scalar(1, np.int32)
    add(Case("attention causal offset", {"q": q, "k": k, "v": v, "pos": pos},
             [f"%y = tfc.attention %q, %k, %v offset %pos causal : "
              f"({ty(q)}, {ty(k)}, {ty(v)}, tensor<i32>) -> {t_out}"],
             {"y": "f32"}, lambda i: {"y": attention(i["q"], i["k"], i["v"], True, offset=1)}))

    # --- rotary ---
    x = g.normal(2, 3, 5, 8)
    add(Case("rotary", {"x": x},
             [f"%y = tfc.rotary %x theta = 1.0e4 : ({ty(x)}) -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": rotary(i["x"], 0, 1e4)}))
    for p in [3, 3000]:
        x, pos = g.normal(1, 2, 4, 16), g.scalar(p, np.int32)
        add(Case(f"rotary offset {p}", {"x": x, "pos": pos},
                 [f"%y = tfc.rotary %x offset %pos theta = 5.0e5 : ({ty(x)}, tensor<i32>) -> {ty(x)}"],
                 {"y": "f32"}, lambda i, p=p: {"y": rotary(i["x"], p, 5e5)},
                 tol=dict(rtol=1e-5, atol=2e-6)))
    # Scaled frequencies (HF rope_scaling), given as a [D/2] constant.
    x, pos = g.normal(1, 2, 4, 8), g.scalar(7, np.int32)
    freq = np.abs(g.normal(4)).astype(np.float32) + np.float32(0.01)
    dense = ", ".join(f"{float(f):.9e}" for f in freq)
    add(Case("rotary offset frequencies", {"x": x, "pos": pos},
             [f"%f = tfc.constant dense<[{dense}]> : tensor<4xf32>",
              f"%y = tfc.rotary %x offset %pos frequencies %f theta = 1.0e4 : "
              f"({ty(x)}, tensor<i32>, tensor<4xf32>) -> {ty(x)}"],
             {"y": "f32"}, lambda i, f=freq: {"y": rotary(i["x"], 7, 1e4, f.astype(np.float64))},
             tol=dict(rtol=1e-5, atol=2e-6)))

    # --- embedding ---
    table = g.normal(11, 6)
    for dt in (np.int32, np.int64):
        ids = g.ints(0, 11, 2, 5, dtype=dt)
        add(Case(f"embedding {MLIR_TYPES[np.dtype(dt)]}", {"table": table, "ids": ids},
                 [f"%y = tfc.embedding %table, %ids : {ty(table)}, {ty(ids)} -> "
                  f"{ttype((2, 5, 6), 'f32')}"],
                 {"y": "f32"}, lambda i: {"y": i["table"][i["ids"]]}))
    # embedding_grad, f32: zeros, an entry argument (copied) or a value computed
    # in the entry (its buffer taken over: the copy skipped) as the start
    dy, ids = g.normal(3, 7, 6), g.ints(0, 11, 3, 7)
    w = g.normal(11, 6)

    def scattered(i):
        out = np.zeros((11, 6))
        np.add.at(out, i["ids"].reshape(-1), i["dy"].reshape(-1, 6))
        return out
    add(Case("embedding_grad", {"dy": dy, "ids": ids},
             [f"%y = tfc.embedding_grad %dy, %ids : ({ty(dy)}, {ty(ids)}) -> {ty(w)}"],
             {"y": "f32"}, lambda i: {"y": scattered(i)}))
    add(Case("embedding_grad into", {"dy": dy, "ids": ids, "w": w},
             [f"%y = tfc.embedding_grad %dy, %ids into %w : ({ty(dy)}, {ty(ids)}, {ty(w)}) -> "
              f"{ty(w)}"],
             {"y": "f32"}, lambda i: {"y": scattered(i) + i["w"]}))
    add(Case("embedding_grad into a temporary, in place", {"dy": dy, "ids": ids, "w": w},
             [f"%t = tfc.exp %w : {ty(w)}",
              f"%s = tfc.embedding_grad %dy, %ids into %t : ({ty(dy)}, {ty(ids)}, {ty(w)}) -> "
              f"{ty(w)}",
              f"%y = tfc.neg %s : {ty(w)}"],
             {"y": "f32"}, lambda i: {"y": -(scattered(i) + np.exp(i["w"]))}))
    ids = np.array([1, 11, 2], dtype=np.int32)
    add(Case("embedding id out of range -> error", {"table": table, "ids": ids},
             [f"%y = tfc.embedding %table, %ids : {ty(table)}, {ty(ids)} -> {ttype((3, 6), 'f32')}"],
             {"y": "f32"}, expect_error="out of range", out_shapes={"y": (3, 6)}))

    # --- shape ops ---
    x = g.normal(2, 3, 4)
    add(Case("reshape", {"x": x},
             [f"%y = tfc.reshape %x : {ty(x)} -> {ttype((4, 6), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["x"].reshape(4, 6)}))
    add(Case("reshape of an intermediate", {"x": x},
             [f"%e = tfc.exp %x : {ty(x)}",
              f"%r = tfc.reshape %e : {ty(x)} -> {ttype((6, 4), 'f32')}",
              f"%y = tfc.neg %r : {ttype((6, 4), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": -np.exp(i["x"]).reshape(6, 4)}))
    x = g.normal(2, 3, 5)
    add(Case("transpose [2,0,1]", {"x": x},
             [f"%y = tfc.transpose %x perm = [2, 0, 1] : {ty(x)} -> {ttype((5, 2, 3), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": i["x"].transpose(2, 0, 1)}))
    x = g.ints(-9, 9, 3, 2, dtype=np.int64)
    add(Case("transpose i64", {"x": x},
             [f"%y = tfc.transpose %x perm = [1, 0] : {ty(x)} -> {ttype((2, 3), 'i64')}"],
             {"y": "i64"}, lambda i: {"y": i["x"].T}))
    a, b, c = g.normal(2, 1, 3), g.normal(2, 4, 3), g.normal(2, 2, 3)
    add(Case("concat dim=1 (3 inputs)", {"a": a, "b": b, "c": c},
             [f"%y = tfc.concat %a, %b, %c dim = 1 : ({ty(a)}, {ty(b)}, {ty(c)}) -> "
              f"{ttype((2, 7, 3), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": np.concatenate([i["a"], i["b"], i["c"]], 1)}))
    a, b = g.ints(0, 9, 2, 3), g.ints(0, 9, 1, 3)
    add(Case("concat dim=-2 i32", {"a": a, "b": b},
             [f"%y = tfc.concat %a, %b dim = -2 : ({ty(a)}, {ty(b)}) -> {ttype((3, 3), 'i32')}"],
             {"y": "i32"}, lambda i: {"y": np.concatenate([i["a"], i["b"]], -2)}))
    x = g.normal(5, 9, 4)
    start, limit, stride = [1, 0, 1], [5, 9, 3], [2, 3, 1]
    out = strided_slice(x, start, limit, stride).shape
    add(Case("slice strided", {"x": x},
             [f"%y = tfc.slice %x start = {start} limit = {limit} stride = {stride} : "
              f"{ty(x)} -> {ttype(out, 'f32')}"],
             {"y": "f32"}, lambda i: {"y": strided_slice(i["x"], start, limit, stride)}))
    x = g.normal(2, 7, 3)
    for s, eff in [(2, 2), (6, 5), (-3, 0)]:
        add(Case(f"dynamic_slice start={s} (-> {eff})", {"x": x, "s": g.scalar(s, np.int32)},
                 [f"%y = tfc.dynamic_slice %x[%s] dim = 1 : ({ty(x)}, tensor<i32>) -> "
                  f"{ttype((2, 2, 3), 'f32')}"],
                 {"y": "f32"}, lambda i, e=eff: {"y": i["x"][:, e:e + 2]}))
    x = g.normal(3, 1)
    add(Case("broadcast_to", {"x": x},
             [f"%y = tfc.broadcast_to %x : {ty(x)} -> {ttype((2, 3, 4), 'f32')}"],
             {"y": "f32"}, lambda i: {"y": np.broadcast_to(i["x"], (2, 3, 4))}))
    for dim, elt in [(1, "i32"), (0, "f32"), (2, "i64")]:
        shape = (3, 4, 2)
        add(Case(f"iota dim={dim} {elt}", {},
                 [f"%y = tfc.iota dim = {dim} : {ttype(shape, elt)}"], {"y": elt},
                 lambda i, d=dim, shape=shape: {"y": np.broadcast_to(
                     np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(3)]),
                     shape).astype(np.float64)}))
    x = g.normal(2, 3)
    add(Case("constant", {"x": x},
             ["%c = tfc.constant dense<[[1.5, -2.0, 3.25]]> : tensor<1x3xf32>",
              f"%y = tfc.add %x, %c : {ty(x)}, tensor<1x3xf32> -> {ty(x)}"],
             {"y": "f32"}, lambda i: {"y": i["x"] + np.array([[1.5, -2.0, 3.25]])}))

    # --- reductions ---
    x = g.normal(3, 4, 5)
    for op, fn in [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max)]:
        for dims, keep in [([1], False), ([0, 2], True), ([-1], True), ([0, 1, 2], False)]:
            out = fn(x.astype(np.float64), axis=tuple(d % 3 for d in dims), keepdims=keep).shape
            kd = " keepdim" if keep else ""
            add(Case(f"{op} dims={dims}{kd}", {"x": x},
                     [f"%y = tfc.{op} %x dims = {dims}{kd} : {ty(x)} -> {ttype(out, 'f32')}"],
                     {"y": "f32"},
                     lambda i, fn=fn, dims=dims, keep=keep: {
                         "y": fn(i["x"], axis=tuple(d % 3 for d in dims), keepdims=keep)},
                     tol=dict(rtol=1e-5, atol=1e-5)))
    x = g.ints(-1000, 1000, 4, 6)
    add(Case("reduce_sum i32", {"x": x},
             [f"%y = tfc.reduce_sum %x dims = [0] : {ty(x)} -> {ttype((6,), 'i32')}"],
             {"y": "i32"}, lambda i: {"y": i["x"].sum(0)}))
    x = g.ints(-10**9, 10**9, 4, 6, dtype=np.int64)
    add(Case("reduce_max i64", {"x": x},
             [f"%y = tfc.reduce_max %x dims = [1] keepdim : {ty(x)} -> {ttype((4, 1), 'i64')}"],
             {"y": "i64"}, lambda i: {"y": i["x"].max(1, keepdims=True)}))
    x = g.normal(4, 16, dtype=np.float16)
    add(Case("reduce_sum f16", {"x": x},
             [f"%y = tfc.reduce_sum %x dims = [1] : {ty(x)} -> {ttype((4,), 'f16')}"],
             {"y": "f16"}, lambda i: {"y": i["x"].sum(1)}, tol=dict(rtol=2e-3, atol=1e-2)))
    x = g.normal(3, 7, 4)
    for dim in [-1, 1, 0]:
        out = np.argmax(x, axis=dim).shape
        add(Case(f"argmax dim={dim}", {"x": x},
                 [f"%y = tfc.argmax %x dim = {dim} : {ty(x)} -> {ttype(out, 'i32')}"],
                 {"y": "i32"}, lambda i, d=dim: {"y": np.argmax(i["x"], axis=d)}))
    x = g.ints(0, 3, 5, 8).astype(np.float32) + 1  # many ties: the first wins
    add(Case("argmax ties", {"x": x},
             [f"%y = tfc.argmax %x dim = -1 : {ty(x)} -> {ttype((5,), 'i32')}"],
             {"y": "i32"}, lambda i: {"y": np.argmax(i["x"], axis=-1)}))
    x = g.ints(-50, 50, 4, 6)
    add(Case("argmax i32", {"x": x},
             [f"%y = tfc.argmax %x dim = 0 : {ty(x)} -> {ttype((6,), 'i32')}"],
             {"y": "i32"}, lambda i: {"y": np.argmax(i["x"], axis=0)}))

    # --- cross_entropy ---
    logits = g.normal(2, 5, 13, scale=3)
    for dt in (np.int32, np.int64):
        t = g.ints(0, 13, 2, 5, dtype=dt)
        t[0, 1] = -100
        t[1, 4] = -100
        add(Case(f"cross_entropy {MLIR_TYPES[np.dtype(dt)]} (2 ignored)", {"l": logits, "t": t},
                 [f"%y = tfc.cross_entropy %l, %t ignore_index = -100 : {ty(logits)}, {ty(t)} "
                  f"-> tensor<f32>"],
                 {"y": "f32"}, lambda i: {"y": cross_entropy(i["l"], i["t"])}))
    t = np.full((2, 5), 7, dtype=np.int32)
    add(Case("cross_entropy all ignored -> 0", {"l": logits, "t": t},
             [f"%y = tfc.cross_entropy %l, %t ignore_index = 7 : {ty(logits)}, {ty(t)} -> tensor<f32>"],
             {"y": "f32"}, lambda i: {"y": np.asarray(0.0)}))
    t = g.ints(0, 13, 2, 5)
    t[1, 2] = 13
    add(Case("cross_entropy target out of range -> error", {"l": logits, "t": t},
             [f"%y = tfc.cross_entropy %l, %t ignore_index = -100 : {ty(logits)}, {ty(t)} -> tensor<f32>"],
             {"y": "f32"}, expect_error="out of range", out_shapes={"y": ()}))

    # --- kv_cache_update ---
    cache, upd = g.normal(1, 2, 8, 4), g.normal(1, 2, 3, 4)

    def kv_ref(c, u, p):
        out = c.copy()
        out[:, :, p:p + u.shape[2]] = u
        return out
    for p in [0, 5]:
        add(Case(f"kv_cache_update pos={p}", {"c": cache, "u": upd, "p": g.scalar(p, np.int32)},
                 [f"%y = tfc.kv_cache_update %c, %u, %p dim = 2 : "
                  f"({ty(cache)}, {ty(upd)}, tensor<i32>) -> {ty(cache)}"],
                 {"y": "f32"}, lambda i, p=p: {"y": kv_ref(i["c"], i["u"], p)}))
    add(Case("kv_cache_update pos=6 (past the end) -> error",
             {"c": cache, "u": upd, "p": g.scalar(6, np.int32)},
             [f"%y = tfc.kv_cache_update %c, %u, %p dim = 2 : "
              f"({ty(cache)}, {ty(upd)}, tensor<i32>) -> {ty(cache)}"],
             {"y": "f32"}, expect_error="out of range", out_shapes={"y": cache.shape}))
    # In place on a state: load -> update -> store, the cache not otherwise used.
    u1 = g.normal(1, 2, 1, 4)
    st = ttype((1, 2, 8, 4), "f32")
    add(Case("kv_cache_update in place on state", {"u": u1, "p": g.scalar(6, np.int32)},
             [f"%c = tfc.load @cache : {st}",
              f"%c2 = tfc.kv_cache_update %c, %u, %p dim = -2 : ({st}, {ty(u1)}, tensor<i32>) -> {st}",
              f"tfc.store %c2, @cache : {st}",
              f"%y = tfc.reduce_sum %u dims = [0, 1, 2, 3] : {ty(u1)} -> tensor<f32>"],
             {"y": "f32"}, lambda i: {"y": i["u"].sum()},
             states={"cache": (st, "ones")},
             state_ref=lambda i: {"cache": kv_ref(np.ones((1, 2, 8, 4)), i["u"], 6)}))

    # --- dropout and sample (properties, not bitwise references) ---
    x = g.positive(40, 50)

    def dropout_check(i, o, rate=0.25):
        y, xx = o["y"].astype(np.float64), i["x"]
        kept = y != 0
        scaled_ok = np.allclose(y[kept], xx[kept] / (1 - rate), rtol=1e-6)
        frac = kept.mean()
        ok = scaled_ok and abs(frac - (1 - rate)) < 0.05
        return ok, f"kept {frac:.3f} (want {1 - rate}), kept values scaled: {scaled_ok}"
    add(Case("dropout rate=0.25", {"x": x, "seed": g.scalar(1234, np.int64)},
             [f"%y = tfc.dropout %x, %seed rate = 0.25 : {ty(x)}, tensor<i64> -> {ty(x)}"],
             {"y": "f32"}, check=dropout_check))
    # Masks must differ between layers (the frontend gives site i the seed
    # seed + i * 2^32) and between training steps (tfc-run derives each step's
    # seed with dropout_seed_for_step): each pair of masks must agree on about
    # p^2 + (1-p)^2 of the elements, as independent draws do, not on all.
    run_seed = int(g.rng.integers(0, 2**31))
    xm = g.positive(64, 64)

    def masks_check(i, o, keep=0.75):
        masks = {n: o[n] != 0 for n in ("layer0", "layer1", "next_step")}
        lines, ok = [], True
        for n, m in masks.items():
            frac = m.mean()
            ok &= abs(frac - keep) < 0.04
            lines.append(f"{n} keeps {frac:.3f}")
        want = keep ** 2 + (1 - keep) ** 2
        for a, b in [("layer0", "layer1"), ("layer0", "next_step"), ("layer1", "next_step")]:
            agree = (masks[a] == masks[b]).mean()
            ok &= abs(agree - want) < 0.04
            lines.append(f"{a}/{b} agree on {agree:.3f} (independent: {want:.3f})")
        return ok, f"run seed {run_seed}: " + ", ".join(lines)
    sx = ty(xm)
    add(Case("dropout masks differ between layers and steps",
             {"x": xm, "s": g.scalar(dropout_seed_for_step(run_seed, 1), np.int64),
              "t": g.scalar(dropout_seed_for_step(run_seed, 2), np.int64)},
             [f"%k = tfc.constant dense<{SITE_STRIDE}> : tensor<i64>",
              "%s1 = tfc.add %s, %k : tensor<i64>, tensor<i64> -> tensor<i64>",
              f"%layer0 = tfc.dropout %x, %s rate = 0.25 : {sx}, tensor<i64> -> {sx}",
              f"%layer1 = tfc.dropout %x, %s1 rate = 0.25 : {sx}, tensor<i64> -> {sx}",
              f"%next_step = tfc.dropout %x, %t rate = 0.25 : {sx}, tensor<i64> -> {sx}"],
             {"layer0": "f32", "layer1": "f32", "next_step": "f32"}, check=masks_check))
    logits = g.normal(3, 17, scale=3)
    add(Case("sample temperature 0 (greedy)",
             {"l": logits, "t": g.scalar(0.0, np.float32), "k": g.scalar(0, np.int32),
              "p": g.scalar(1.0, np.float32), "seed": g.scalar(7, np.int64)},
             [f"%y = tfc.sample %l, %t, %k, %p, %seed : ({ty(logits)}, tensor<f32>, tensor<i32>, "
              f"tensor<f32>, tensor<i64>) -> {ttype((3,), 'i32')}"],
             {"y": "i32"}, lambda i: {"y": np.argmax(i["l"], -1)}))
    add_moe_cases(g, add)
    build_half_cases(g, add)
    return cases


def moe_route_ref(logits, k):
    """HF's MixtralTopKRouter: softmax in f32, the k largest probabilities,
    the lower index first among equal ones (a stable sort)."""
    x = logits.astype(np.float32)
    p = np.exp(x - x.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return np.argsort(-p, axis=-1, kind="stable")[:, :k].astype(np.int32)


def moe_ffn_ref(x, ids, w, experts):
    """y[n] = sum_j w[n, e] * w2_e (silu(w1_e x[n]) * w3_e x[n]), e = ids[n, j]."""
    y = np.zeros_like(x)
    for n in range(x.shape[0]):
        for e in ids[n]:
            w1, w3, w2 = experts[3 * e: 3 * e + 3]
            h1, h3 = w1 @ x[n], w3 @ x[n]
            y[n] += w[n, e] * (w2 @ (h1 * sigmoid(h1) * h3))
    return y


def add_moe_cases(g, add):
    # Routing: random logits, rows of equal logits (ties: lower index first)
    # and rows whose two best are equal.
    logits = g.normal(21, 6, scale=2)
    logits[3] = 0.75
    logits[7, 4] = logits[7, 1] = logits[7].max() + 1
    for k in (1, 2, 6):
        add(Case(f"moe_route top_k={k}", {"l": logits},
                 [f"%y = tfc.moe_route %l top_k = {k} : {ty(logits)} -> {ttype((21, k), 'i32')}"],
                 {"y": "i32"}, lambda i, k=k: {"y": moe_route_ref(i["l"], k)}))

    # Experts: N = 9 tokens, D = 8, F = 5, E = 4, k = 2; expert 3 gets no token
    # (and is skipped), the others several, in an order that is not sorted.
    N, D, F, E, K = 9, 8, 5, 4, 2
    x = g.normal(N, D)
    ids = np.stack([g.rng.permutation(3)[:K] for _ in range(N)]).astype(np.int32)
    w = g.normal(N, E)
    experts, names = [], []
    for e in range(E):
        for name, shape in (("w1", (F, D)), ("w3", (F, D)), ("w2", (D, F))):
            experts.append(g.normal(*shape, scale=0.5))
            names.append(f"{name}_{e}")
    inputs = {"x": x, "ids": ids, "w": w, **dict(zip(names, experts))}
    types = ", ".join(ty(a) for a in inputs.values())
    body = [f"%y = tfc.moe_ffn %x, %ids, %w experts " + ", ".join("%" + n for n in names) +
            f" : ({types}) -> {ty(x)}"]
    add(Case("moe_ffn 4 experts top-2, one expert unused", inputs, body, {"y": "f32"},
             lambda i: {"y": moe_ffn_ref(i["x"], i["ids"], i["w"],
                                         [i[n] for n in names])}))
    bad = dict(inputs, ids=np.where(np.arange(N * K).reshape(N, K) == 5, 4, ids).astype(np.int32))
    add(Case("moe_ffn expert id out of range -> error", bad, body, {"y": "f32"},
             expect_error="expert id 4 of token 2 is out of range [0, 4)",
             out_shapes={"y": (N, D)}))


# ---------------------------------------------------------------------------
# 16-bit floats: every op in bf16 and f16
# ---------------------------------------------------------------------------

# The spacing of the format's numbers in [1, 2): 2^-7 for bf16 (8 significant
# bits), 2^-10 for f16 (11).
HALF_EPS = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}


def half_tol(elt, ulps=1.0):
    """Accumulating in f32 and rounding once, a 16-bit result is within half
    an ulp of the float64 result on the same (16-bit) inputs, give or take
    f32's own rounding (2^-24, far below). `ulps` ulps of the value, plus
    as many of the output's scale (max |want|) for results that cancel to
    near zero; a 16-bit accumulator would be off by sqrt(K) ulps or more."""
    eps = HALF_EPS[elt]
    return dict(rtol=ulps * eps, atol=0.0, atol_scale=ulps * eps)


def build_half_cases(g, add):
    for dt in HALF_TYPES:
        e = MLIR_TYPES[dt]
        tol = half_tol(e)
        H = f"{e}"

        def normal(*shape, scale=1.0):
            return g.normal(*shape, scale=scale).astype(dt)

        # --- elementwise ---
        for op, fn in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                       ("max", np.maximum), ("min", np.minimum)]:
            add(binary(op, fn, normal(3, 1, 5), normal(4, 5), tol=tol, label=f"{H} [3,1,5]x[4,5]"))
        add(binary("div", np.divide, normal(7, 3), g.nonzero(3).astype(dt), tol=tol, label=H))
        add(binary("pow", np.power, g.positive(3, 7).astype(dt), normal(7), tol=tol, label=H))
        for name, fn, x in [
                ("exp", np.exp, normal(4, 7)),
                ("log", np.log, g.positive(4, 7, lo=0.1, hi=10).astype(dt)),
                ("sqrt", np.sqrt, g.positive(3, 5, lo=0.1, hi=10).astype(dt)),
                ("rsqrt", lambda x: 1 / np.sqrt(x), g.positive(3, 5, lo=0.1, hi=10).astype(dt)),
                ("tanh", np.tanh, normal(2, 9)), ("sin", np.sin, normal(2, 9, scale=3)),
                ("cos", np.cos, normal(2, 9, scale=3)), ("sigmoid", sigmoid, normal(11)),
                ("neg", np.negative, normal(3, 3)), ("abs", np.abs, normal(3, 3)),
                ("relu", lambda x: np.maximum(x, 0), normal(5, 5)),
                ("silu", lambda x: x * sigmoid(x), normal(5, 5))]:
            add(unary_f(f"{name} {H}", fn, x, tol=tol))
        add(unary_f(f"gelu none {H}", lambda x: gelu(x, "none"), normal(5, 5), tol=tol,
                    extra=" approximate = none"))
        add(unary_f(f"gelu tanh {H}", lambda x: gelu(x, "tanh"), normal(5, 5), tol=tol,
                    extra=" approximate = tanh"))
        x = normal(4, 6)
        add(Case(f"leaky_relu {H}", {"x": x}, [f"%y = tfc.leaky_relu %x alpha = 0.1 : {ty(x)}"],
                 {"y": e}, lambda i: {"y": np.where(i["x"] > 0, i["x"], 0.1 * i["x"])}, tol))

        # --- casts: to and from f32, the other 16-bit type and i32 ---
        def cast_case(x, to, fn, tol=dict(rtol=0, atol=0)):
            return Case(f"cast {MLIR_TYPES[x.dtype]}->{to}", {"x": x},
                        [f"%y = tfc.cast %x : {ty(x)} -> {ttype(x.shape, to)}"], {"y": to},
                        lambda i: {"y": fn(i["x"])}, tol)
        other = HALF_TYPES[1] if dt == BF16 else HALF_TYPES[0]
        # round-to-nearest-even, exactly as NumPy (ml_dtypes) rounds
        add(cast_case(g.normal(7, 5), e,
                      lambda x, dt=dt: x.astype(np.float32).astype(dt).astype(np.float64)))
        add(cast_case(normal(6), "f32", lambda x: x))
        add(cast_case(normal(6), MLIR_TYPES[other],
                      lambda x, o=other: x.astype(np.float32).astype(o).astype(np.float64)))
        add(cast_case(normal(3, 4, scale=10), "i32", np.trunc))
        add(cast_case(g.ints(-200, 200, 7), e,
                      lambda x, dt=dt: x.astype(np.float32).astype(dt).astype(np.float64)))

        # --- matmul / linear: f32 accumulation over K up to 300 ---
        a, b = normal(2, 3, 64), normal(64, 5)
        add(Case(f"matmul {H} [2,3,64]x[64,5]", {"a": a, "b": b},
                 [f"%y = tfc.matmul %a, %b : {ty(a)}, {ty(b)} -> {ttype((2, 3, 5), e)}"],
                 {"y": e}, lambda i: {"y": i["a"] @ i["b"]}, tol))
        a, b = normal(2, 1, 3, 40), normal(3, 5, 40)
        add(Case(f"matmul {H} batch-broadcast transpose_rhs", {"a": a, "b": b},
                 [f"%y = tfc.matmul %a, %b transpose_rhs : {ty(a)}, {ty(b)} -> "
                  f"{ttype((2, 3, 3, 5), e)}"],
                 {"y": e}, lambda i: {"y": i["a"] @ np.swapaxes(i["b"], -1, -2)}, tol))
        a, b = normal(33, 3), normal(33, 5)
        add(Case(f"matmul {H} transpose_lhs", {"a": a, "b": b},
                 [f"%y = tfc.matmul %a, %b transpose_lhs : {ty(a)}, {ty(b)} -> {ttype((3, 5), e)}"],
                 {"y": e}, lambda i: {"y": i["a"].T @ i["b"]}, tol))
        x, w, bias = normal(2, 9, 300), normal(300, 40), normal(40)
        add(Case(f"linear {H} bias, long K", {"x": x, "w": w, "bias": bias},
                 [f"%y = tfc.linear %x, %w bias %bias : ({ty(x)}, {ty(w)}, {ty(bias)}) -> "
                  f"{ttype((2, 9, 40), e)}"],
                 {"y": e}, lambda i: {"y": i["x"] @ i["w"] + i["bias"]}, tol))
        x, w = normal(17, 32), normal(20, 32)
        add(Case(f"linear {H} transpose_weight", {"x": x, "w": w},
                 [f"%y = tfc.linear %x, %w transpose_weight : ({ty(x)}, {ty(w)}) -> "
                  f"{ttype((17, 20), e)}"],
                 {"y": e}, lambda i: {"y": i["x"] @ i["w"].T}, tol))
        x, w, bias, r = normal(2, 9, 48), normal(48, 40), normal(40), normal(2, 9, 40)
        ty_y = ttype((2, 9, 40), e)
        add(Case(f"fused linear {H}: bias, gelu, residual", {"x": x, "w": w, "bias": bias, "r": r},
                 [f"%l = tfc.linear %x, %w bias %bias : ({ty(x)}, {ty(w)}, {ty(bias)}) -> {ty_y}",
                  f"%a = tfc.gelu %l approximate = tanh : {ty_y}",
                  f"%y = tfc.add %a, %r : {ty_y}, {ty_y} -> {ty_y}"],
                 {"y": e},
                 # unfused, the linear and the gelu each round to 16 bits
                 lambda i: {"y": gelu(i["x"] @ i["w"] + i["bias"], "tanh") + i["r"]},
                 half_tol(e, 4), fused=1))

        # --- normalization / softmax ---
        x, w, b = normal(3, 5, 33, scale=3), normal(33), normal(33)
        add(Case(f"layer_norm {H} weight bias", {"x": x, "w": w, "b": b},
                 [f"%y = tfc.layer_norm %x weight %w bias %b eps = 1.0e-5 : "
                  f"({ty(x)}, {ty(w)}, {ty(b)}) -> {ty(x)}"],
                 {"y": e}, lambda i: {"y": layer_norm(i["x"], i["w"], i["b"], 1e-5)}, tol))
        x, w = normal(2, 3, 200), normal(200)
        add(Case(f"rms_norm {H} weight", {"x": x, "w": w},
                 [f"%y = tfc.rms_norm %x weight %w eps = 1.0e-6 : ({ty(x)}, {ty(w)}) -> {ty(x)}"],
                 {"y": e}, lambda i: {"y": rms_norm(i["x"], i["w"], 1e-6)}, tol))
        x = normal(5, 3)
        add(Case(f"rms_norm {H} plain", {"x": x},
                 [f"%y = tfc.rms_norm %x eps = 1.0e-8 : ({ty(x)}) -> {ty(x)}"],
                 {"y": e}, lambda i: {"y": rms_norm(i["x"], eps=1e-8)}, tol))
        for dim, shape in [(1, (2, 3, 5)), (-1, (4, 300))]:
            x = normal(*shape, scale=4)
            add(Case(f"softmax {H} dim={dim} {list(shape)}", {"x": x},
                     [f"%y = tfc.softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"],
                     {"y": e}, lambda i, d=dim: {"y": softmax(i["x"], d)}, tol))
            add(Case(f"log_softmax {H} dim={dim}", {"x": x},
                     [f"%y = tfc.log_softmax %x dim = {dim} : {ty(x)} -> {ty(x)}"],
                     {"y": e}, lambda i, d=dim: {"y": log_softmax(i["x"], d)}, tol))

        # --- attention ---
        q, k, v = normal(1, 4, 3, 32), normal(1, 2, 37, 32), normal(1, 2, 37, 6)
        t_out = ttype((1, 4, 3, 6), e)
        add(Case(f"attention {H} causal GQA", {"q": q, "k": k, "v": v},
                 [f"%y = tfc.attention %q, %k, %v causal : ({ty(q)}, {ty(k)}, {ty(v)}) -> {t_out}"],
                 {"y": e}, lambda i: {"y": attention(i["q"], i["k"], i["v"], True)}, tol))
        add(Case(f"attention {H} causal offset scale",
                 {"q": q, "k": k, "v": v, "pos": g.scalar(20, np.int32)},
                 [f"%y = tfc.attention %q, %k, %v offset %pos causal scale = 0.25 : "
                  f"({ty(q)}, {ty(k)}, {ty(v)}, tensor<i32>) -> {t_out}"],
                 {"y": e}, lambda i: {"y": attention(i["q"], i["k"], i["v"], True, offset=20,
                                                     scale=0.25)},
                 tol))
        q, k, v, do = normal(1, 2, 5, 8), normal(1, 1, 5, 8), normal(1, 1, 5, 8), normal(1, 2, 5, 8)
        o = attention(f64(q), f64(k), f64(v), True).astype(dt)

        def attention_grad_ref(i):
            # float64 backward of softmax(scale q k^T + mask) v, the heads of a
            # group summed into their key head
            b_, h, tq, d = i["q"].shape
            scale = 1 / math.sqrt(d)
            dq, dk, dv = np.zeros(i["q"].shape), np.zeros(i["k"].shape), np.zeros(i["v"].shape)
            g_ = h // i["k"].shape[1]
            for hh in range(h):
                kk, vv = i["k"][:, hh // g_], i["v"][:, hh // g_]
                s = scale * np.einsum("bid,bjd->bij", i["q"][:, hh], kk)
                mask = np.arange(tq)[None, :] > np.arange(tq)[:, None]
                p = softmax(np.where(mask[None], -np.inf, s), -1)
                dout = i["do"][:, hh]
                dv[:, hh // g_] += np.einsum("bij,bid->bjd", p, dout)
                dp = np.einsum("bid,bjd->bij", dout, vv)
                # the kernel's D = rowsum(dO * O) uses the given O
                dd = (dout * i["o"][:, hh]).sum(-1, keepdims=True)
                ds = p * (dp - dd) * scale
                dq[:, hh] = np.einsum("bij,bjd->bid", ds, kk)
                dk[:, hh // g_] += np.einsum("bij,bid->bjd", ds, i["q"][:, hh])
            return {"dq": dq, "dk": dk, "dv": dv}
        add(Case(f"attention_grad {H} causal GQA", {"q": q, "k": k, "v": v, "o": o, "do": do},
                 [f"%dq, %dk, %dv = tfc.attention_grad %q, %k, %v, %o, %do causal : "
                  f"({ty(q)}, {ty(k)}, {ty(v)}, {ty(o)}, {ty(do)}) -> "
                  f"({ty(q)}, {ty(k)}, {ty(v)})"],
                 {"dq": e, "dk": e, "dv": e}, attention_grad_ref, half_tol(e, 2)))

        # --- rotary, embedding, kv cache ---
        for p in [0, 300]:
            x, pos = normal(1, 2, 4, 16), g.scalar(p, np.int32)
            add(Case(f"rotary {H} offset {p}", {"x": x, "pos": pos},
                     [f"%y = tfc.rotary %x offset %pos theta = 1.0e4 : ({ty(x)}, tensor<i32>) -> {ty(x)}"],
                     {"y": e}, lambda i, p=p: {"y": rotary(i["x"], p, 1e4)}, tol))
        # f32 frequencies (scaled rotary) with a 16-bit x: the angles in f32
        x, pos = normal(1, 2, 4, 8), g.scalar(7, np.int32)
        freq = np.abs(g.normal(4)).astype(np.float32) + np.float32(0.01)
        dense = ", ".join(f"{float(f):.9e}" for f in freq)
        add(Case(f"rotary {H} offset frequencies (f32)", {"x": x, "pos": pos},
                 [f"%f = tfc.constant dense<[{dense}]> : tensor<4xf32>",
                  f"%y = tfc.rotary %x offset %pos frequencies %f theta = 1.0e4 : "
                  f"({ty(x)}, tensor<i32>, tensor<4xf32>) -> {ty(x)}"],
                 {"y": e}, lambda i, f=freq: {"y": rotary(i["x"], 7, 1e4, f.astype(np.float64))},
                 tol))
        table, ids = normal(11, 6), g.ints(0, 11, 2, 5)
        add(Case(f"embedding {H}", {"table": table, "ids": ids},
                 [f"%y = tfc.embedding %table, %ids : {ty(table)}, {ty(ids)} -> "
                  f"{ttype((2, 5, 6), e)}"],
                 {"y": e}, lambda i: {"y": i["table"][i["ids"]]}, dict(rtol=0, atol=0)))
        # 200 positions onto 4 rows: summed in 16 bits, 50 roundings a row
        dy, ids = normal(4, 50, 6), g.ints(0, 4, 4, 50)

        def embedding_grad_ref(i):
            out = np.zeros((4, 6))
            np.add.at(out, i["ids"].reshape(-1), i["dy"].reshape(-1, 6))
            return {"y": out}
        add(Case(f"embedding_grad {H}", {"dy": dy, "ids": ids},
                 [f"%y = tfc.embedding_grad %dy, %ids : ({ty(dy)}, {ty(ids)}) -> {ttype((4, 6), e)}"],
                 {"y": e}, embedding_grad_ref, tol))
        # into an existing gradient: an entry argument (copied), and a value
        # computed in the entry, whose buffer the result takes over (in place)
        w0 = normal(4, 6)
        add(Case(f"embedding_grad into {H}", {"dy": dy, "ids": ids, "w": w0},
                 [f"%y = tfc.embedding_grad %dy, %ids into %w : ({ty(dy)}, {ty(ids)}, "
                  f"{ty(w0)}) -> {ty(w0)}"],
                 {"y": e}, lambda i: {"y": embedding_grad_ref(i)["y"] + i["w"]}, tol))
        add(Case(f"embedding_grad into a temporary {H}", {"dy": dy, "ids": ids, "w": w0},
                 [f"%t = tfc.mul %w, %w : {ty(w0)}, {ty(w0)} -> {ty(w0)}",
                  f"%y = tfc.embedding_grad %dy, %ids into %t : ({ty(dy)}, {ty(ids)}, "
                  f"{ty(w0)}) -> {ty(w0)}"],
                 {"y": e}, lambda i: {"y": embedding_grad_ref(i)["y"] + i["w"] * i["w"]}, tol))
        cache, upd = normal(1, 2, 8, 4), normal(1, 2, 3, 4)

        def kv_ref(c, u, p):
            out = c.copy()
            out[:, :, p:p + u.shape[2]] = u
            return out
        add(Case(f"kv_cache_update {H} pos=5", {"c": cache, "u": upd, "p": g.scalar(5, np.int32)},
                 [f"%y = tfc.kv_cache_update %c, %u, %p dim = 2 : "
                  f"({ty(cache)}, {ty(upd)}, tensor<i32>) -> {ty(cache)}"],
                 {"y": e}, lambda i: {"y": kv_ref(i["c"], i["u"], 5)}, dict(rtol=0, atol=0)))

        # --- data movement ---
        x = normal(2, 3, 5)
        add(Case(f"transpose {H}", {"x": x},
                 [f"%y = tfc.transpose %x perm = [2, 0, 1] : {ty(x)} -> {ttype((5, 2, 3), e)}"],
                 {"y": e}, lambda i: {"y": i["x"].transpose(2, 0, 1)}, dict(rtol=0, atol=0)))
        add(Case(f"reshape {H}", {"x": x},
                 [f"%y = tfc.reshape %x : {ty(x)} -> {ttype((6, 5), e)}"],
                 {"y": e}, lambda i: {"y": i["x"].reshape(6, 5)}, dict(rtol=0, atol=0)))
        a, b = normal(2, 1, 3), normal(2, 4, 3)
        add(Case(f"concat {H}", {"a": a, "b": b},
                 [f"%y = tfc.concat %a, %b dim = 1 : ({ty(a)}, {ty(b)}) -> {ttype((2, 5, 3), e)}"],
                 {"y": e}, lambda i: {"y": np.concatenate([i["a"], i["b"]], 1)},
                 dict(rtol=0, atol=0)))
        x = normal(5, 9, 4)
        add(Case(f"slice {H}", {"x": x},
                 [f"%y = tfc.slice %x start = [1, 0, 1] limit = [5, 9, 3] stride = [2, 3, 1] : "
                  f"{ty(x)} -> {ttype((2, 3, 2), e)}"],
                 {"y": e}, lambda i: {"y": strided_slice(i["x"], [1, 0, 1], [5, 9, 3], [2, 3, 1])},
                 dict(rtol=0, atol=0)))
        x = normal(2, 7, 3)
        add(Case(f"dynamic_slice {H}", {"x": x, "s": g.scalar(4, np.int32)},
                 [f"%y = tfc.dynamic_slice %x[%s] dim = 1 : ({ty(x)}, tensor<i32>) -> "
                  f"{ttype((2, 2, 3), e)}"],
                 {"y": e}, lambda i: {"y": i["x"][:, 4:6]}, dict(rtol=0, atol=0)))
        x = normal(3, 1)
        add(Case(f"broadcast_to {H}", {"x": x},
                 [f"%y = tfc.broadcast_to %x : {ty(x)} -> {ttype((2, 3, 4), e)}"],
                 {"y": e}, lambda i: {"y": np.broadcast_to(i["x"], (2, 3, 4))},
                 dict(rtol=0, atol=0)))
        x = normal(2, 3)
        add(Case(f"iota and constant {H}", {"x": x},
                 [f"%c = tfc.constant dense<[[1.5, -2.0, 3.25]]> : {ttype((1, 3), e)}",
                  f"%t = tfc.iota dim = 1 : {ty(x)}",
                  f"%u = tfc.add %x, %c : {ty(x)}, {ttype((1, 3), e)} -> {ty(x)}",
                  f"%y = tfc.mul %u, %t : {ty(x)}, {ty(x)} -> {ty(x)}"],
                 {"y": e},
                 lambda i, dt=dt: {"y": (i["x"] + np.array([[1.5, -2.0, 3.25]])).astype(dt)
                            .astype(np.float64) * np.arange(3)}, tol))

        # --- reductions ---
        x = normal(3, 40, 5)
        for op, fn in [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max)]:
            for dims, keep in [([1], False), ([0, 2], True)]:
                out = fn(x.astype(np.float64), axis=tuple(dims), keepdims=keep).shape
                kd = " keepdim" if keep else ""
                add(Case(f"{op} {H} dims={dims}{kd}", {"x": x},
                         [f"%y = tfc.{op} %x dims = {dims}{kd} : {ty(x)} -> {ttype(out, e)}"],
                         {"y": e}, lambda i, fn=fn, dims=dims, keep=keep: {
                             "y": fn(i["x"], axis=tuple(dims), keepdims=keep)}, tol))
        x = normal(3, 7, 4)
        add(Case(f"argmax {H}", {"x": x},
                 [f"%y = tfc.argmax %x dim = 1 : {ty(x)} -> {ttype((3, 4), 'i32')}"],
                 {"y": "i32"}, lambda i: {"y": np.argmax(i["x"], axis=1)}))

        # --- cross_entropy (f32 loss), its gradient, sample ---
        logits, t = normal(2, 5, 300, scale=3), g.ints(0, 300, 2, 5)
        t[0, 1] = -100
        add(Case(f"cross_entropy {H} logits", {"l": logits, "t": t},
                 [f"%y = tfc.cross_entropy %l, %t ignore_index = -100 : {ty(logits)}, {ty(t)} "
                  f"-> tensor<f32>"],
                 {"y": "f32"}, lambda i: {"y": cross_entropy(i["l"], i["t"])},
                 dict(rtol=1e-5, atol=1e-5)))

        def ce_grad_ref(i):
            sm = softmax(i["l"], -1)
            oh = np.zeros_like(sm)
            count = 0
            for r in np.ndindex(i["t"].shape):
                if i["t"][r] != -100:
                    oh[r + (int(i["t"][r]),)] = 1
                    count += 1
                else:
                    sm[r] = 0
            return {"y": (sm - oh) * i["gr"] / count}
        add(Case(f"cross_entropy_grad {H}", {"l": logits, "t": t, "gr": g.scalar(1.5, np.float32)},
                 [f"%y = tfc.cross_entropy_grad %l, %t, %gr ignore_index = -100 : "
                  f"({ty(logits)}, {ty(t)}, tensor<f32>) -> {ty(logits)}"],
                 {"y": e}, ce_grad_ref, tol))
        logits = normal(3, 17, scale=3)
        add(Case(f"sample {H} temperature 0 (greedy)",
                 {"l": logits, "t": g.scalar(0.0, np.float32), "k": g.scalar(0, np.int32),
                  "p": g.scalar(1.0, np.float32), "seed": g.scalar(7, np.int64)},
                 [f"%y = tfc.sample %l, %t, %k, %p, %seed : ({ty(logits)}, tensor<f32>, "
                  f"tensor<i32>, tensor<f32>, tensor<i64>) -> {ttype((3,), 'i32')}"],
                 {"y": "i32"}, lambda i: {"y": np.argmax(i["l"], -1)}))
        logits = normal(4, 50)
        add(Case(f"sample {H} temperature 1, top_k 1 (the argmax)",
                 {"l": logits, "t": g.scalar(1.0, np.float32), "k": g.scalar(1, np.int32),
                  "p": g.scalar(1.0, np.float32), "seed": g.scalar(7, np.int64)},
                 [f"%y = tfc.sample %l, %t, %k, %p, %seed : ({ty(logits)}, tensor<f32>, "
                  f"tensor<i32>, tensor<f32>, tensor<i64>) -> {ttype((4,), 'i32')}"],
                 {"y": "i32"}, lambda i: {"y": np.argmax(i["l"], -1)}))
        x = g.positive(40, 50).astype(dt)

        def dropout_check(i, o, rate=0.25, dt=dt):
            y, xx = o["y"].astype(np.float64), i["x"]
            kept = y != 0
            want = (xx[kept] / (1 - rate)).astype(dt).astype(np.float64)
            scaled_ok = np.array_equal(y[kept], want)
            frac = kept.mean()
            ok = scaled_ok and abs(frac - (1 - rate)) < 0.05
            return ok, f"kept {frac:.3f} (want {1 - rate}), kept values scaled: {scaled_ok}"
        add(Case(f"dropout {H} rate=0.25", {"x": x, "seed": g.scalar(1234, np.int64)},
                 [f"%y = tfc.dropout %x, %seed rate = 0.25 : {ty(x)}, tensor<i64> -> {ty(x)}"],
                 {"y": e}, check=dropout_check))


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def run_tool(args, cwd):
    p = harness.run_tool(args, cwd=cwd, timeout=TOOL_TIMEOUT_S)
    return p.returncode, p.stdout + p.stderr


def compare(got, want, elt, tol):
    if got.shape != want.shape:
        return False, f"shape {list(got.shape)} != {list(want.shape)}", float("inf")
    if elt in ("i32", "i64"):
        diff = np.abs(got.astype(np.int64) - np.asarray(want).astype(np.int64))
        md = float(diff.max()) if diff.size else 0.0
        return md == 0, f"max diff {md:g}", md
    g64, w64 = got.astype(np.float64), np.asarray(want, dtype=np.float64)
    if "atol_scale" in tol:  # 16-bit outputs: ulps of the output's scale, max |want|
        finite = np.abs(w64[np.isfinite(w64)])
        scale = float(finite.max()) if finite.size else 0.0
        tol = dict(rtol=tol["rtol"], atol=tol["atol"] + tol["atol_scale"] * scale)
    # NaN must give NaN and an infinity the same infinity; finite values within
    # the tolerance. (A NaN where a number is wanted fails: NaN <= tol is False.)
    both_nan = np.isnan(g64) & np.isnan(w64)
    same_inf = np.isinf(w64) & (g64 == w64)
    exact = both_nan | same_inf
    with np.errstate(invalid="ignore"):
        diff = np.where(exact, 0.0, np.abs(g64 - w64))
        # (inf <= atol + rtol * inf holds: an infinity must match exactly)
        bad = ~exact & (np.isinf(w64) | ~(diff <= tol["atol"] + tol["rtol"] * np.abs(w64)))
    md = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
    ok = not bool(bad.any())
    detail = f"max diff {md:.3g}"
    if not ok:
        k = int(np.flatnonzero(bad.ravel())[0])
        detail += (f", {int(bad.sum())} of {bad.size} elements out of tolerance; first at "
                   f"flat index {k}: got {float(g64.ravel()[k])!r}, want {float(w64.ravel()[k])!r}")
    return ok, detail, md


def opt_level(flags):
    """The -O level tfc will use with these flags: the last -ON wins, default 2."""
    level = 2
    for f in flags:
        if len(f) == 3 and f.startswith("-O") and f[2].isdigit():
            level = int(f[2])
    return level


def fuses(flags):
    """Whether tfc-fuse runs: -O2 and above, unless --no-fuse."""
    return opt_level(flags) >= 2 and "--no-fuse" not in flags


def run_case(case, tfc, tfc_run, work, verbose):
    d = os.path.join(work, "".join(c if c.isalnum() else "_" for c in case.name))
    os.makedirs(d, exist_ok=True)
    inputs64 = {n: f64(a) for n, a in case.inputs.items()}
    want = case.ref(inputs64) if case.ref else None
    shapes = {}
    for n in case.outputs:
        if n in case.out_shapes:
            shapes[n] = case.out_shapes[n]
        elif want is not None:
            shapes[n] = tuple(np.asarray(want[n]).shape)
        else:
            shapes[n] = case.inputs["x"].shape
    with open(os.path.join(d, "op.mlir"), "w") as f:
        f.write(case.module(shapes))
    flags = harness.tfc_flags()
    rc, out = run_tool([tfc, "op.mlir", "-o", "op.so", "--report=report.json"], d)
    if rc != 0:
        return False, "tfc failed:\n" + out
    if case.fused:
        with open(os.path.join(d, "report.json")) as f:
            fusion = json.load(f)["entries"]["f"].get("fusion", {})
        groups = fusion.get("groups", 0) + fusion.get("attention", 0)
        want_groups = case.fused if fuses(flags) else 0
        if groups != want_groups:
            return False, f"{groups} fused kernels, expected {want_groups}"
    os.makedirs(os.path.join(d, "out"), exist_ok=True)
    args = [tfc_run, "op.so", "call", "f", "--out-dir", "out"]
    weights = {**case.params, **case.bf16_inputs()}
    if weights:
        write_safetensors(os.path.join(d, "w.safetensors"), weights)
        args += ["--weights", "w.safetensors"]
    else:
        args += ["--init-seed", "0"]
    for n, a in case.inputs.items():
        if a.dtype == BF16:
            continue
        np.save(os.path.join(d, n + ".npy"), a)
        args += ["--in", f"{n}={n}.npy"]
    if case.states or case.bf16_outputs():
        args += ["--state-out", "state.safetensors"]
    rc, out = run_tool(args, d)
    if case.expect_error:
        ok = rc != 0 and case.expect_error in out
        return ok, (f"failed as expected: {out.strip().splitlines()[-1]}" if ok
                    else f"expected an error containing '{case.expect_error}', got rc={rc}:\n{out}")
    if rc != 0:
        return False, "tfc-run failed:\n" + out
    state = (read_safetensors(os.path.join(d, "state.safetensors"))
             if case.states or case.bf16_outputs() else {})
    got = {n: state["out_" + n] if e == "bf16" else np.load(os.path.join(d, "out", n + ".npy"))
           for n, e in case.outputs.items()}
    if case.check:
        return case.check(inputs64, got)
    details, all_ok = [], True
    for n, elt in case.outputs.items():
        want_n = np.asarray(want[n])
        if got[n].dtype != NP_TYPES[elt]:
            return False, f"{n}: dtype {got[n].dtype}, expected {NP_TYPES[elt]}"
        ok, detail, _ = compare(got[n], want_n, elt, case.tol)
        all_ok &= ok
        details.append(f"{n}: {detail}")
        if not ok or verbose:  # a failure in CI must be readable without a rerun
            details.append(f"\n  got  {got[n].ravel()[:8]}\n  want {want_n.ravel()[:8]}")
    if case.state_ref:
        for n, w in case.state_ref(inputs64).items():
            elt = MLIR_TYPES[state[n].dtype]
            ok, detail, _ = compare(state[n], w, elt, case.tol)
            all_ok &= ok
            details.append(f"state {n}: {detail}")
            if not ok:
                details.append(f"\n  got  {state[n].ravel()[:8]}\n  want "
                               f"{np.asarray(w).ravel()[:8]}")
    return all_ok, "; ".join(details)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="directory holding tfc and tfc-run")
    ap.add_argument("--work-dir", help="keep the modules, inputs and outputs here")
    ap.add_argument("--seed", type=int,
                    help="the inputs' seed (default: $TFC_TEST_SEED, else from the clock)")
    harness.add_selection_args(ap)
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()

    tools = harness.find_tools(opts.bin_dir)
    if tools is None:
        return 1
    tfc, tfc_run = tools
    if opts.seed is None and os.environ.get("TFC_TEST_SEED"):
        opts.seed = int(os.environ["TFC_TEST_SEED"])
    seed = opts.seed if opts.seed is not None else int(time.time()) % 100000
    flags = harness.tfc_flags()
    print(f"seed {seed} (reproduce with --seed {seed}); tfc flags {flags or 'none'}: "
          f"-O{opt_level(flags)}, fusion {'on' if fuses(flags) else 'off'}")
    # Built from the seed before any selection, so a case's inputs do not
    # depend on which cases run.
    cases = harness.select_cases(ap, opts, build_cases(Gen(seed)))
    if not cases:
        return 1

    work = harness.scratch_dir(opts.work_dir, "tfc-ops-")
    return harness.run_cases(
        cases, lambda case: run_case(case, tfc, tfc_run, work, opts.verbose),
        work, keep=bool(opts.work_dir))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The CUDA C++ that `tfc --target=cuda` writes, checked against NumPy without a
GPU: each case is a module of one kernel (an op, or a group tfc-fuse makes),
compiled by tfc through NVRTC (so the source is valid CUDA for the chosen
architecture), then the same source compiled as host C++ with host_shim.h and
run over every (block, thread) of a small grid on fresh random inputs. This
checks each kernel's arithmetic, broadcasting, reduction and row indexing and
its grid-stride loop; running on a GPU is scripts/gpu-check.sh's job.

Every case with float tensors runs again in bf16 and in f16 (HALF_CASES).

    check_cuda_kernels.py --bin-dir build/bin [--seed S] [--work-dir DIR] [--only SUBSTR]
                          [--every K --offset J]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.normpath(os.path.join(HERE, "..", "..", "cuda_emulator", "host_shim.h"))
TIMEOUT = 600  # a host compile of a driver; 120 s timed out on a loaded machine

C_TYPES = {"f32": "float", "bf16": "unsigned short", "f16": "tfc_f16", "i32": "int",
           "i64": "long long"}
NP_STORAGE = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16, "i32": np.int32,
              "i64": np.int64}
# The spacing of a 16-bit format's numbers in [1, 2).
HALF_EPS = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}
# f32's unit roundoff. A sum of n terms computed in f32, in any order, is within
# n * F32_U * (the sum of the terms' magnitudes) of the exact sum (Higham, "Accuracy and
# Stability of Numerical Algorithms", 2.2); a tolerance below that fails on some seed when
# the terms cancel, however small its relative error looks against the result.
F32_U = 2.0 ** -24


def bf16_bits(x):
    """float32 -> bf16 bits, rounding to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Case:
    def __init__(self, name, body, inputs, outputs, ref, rtol=1e-5, atol=1e-6,
                 draw=None, error=0, inputs_from=None, ulps=None, f32_inputs=(),
                 terms=0, magnitude=None, flags=()):
        self.name, self.body, self.inputs, self.outputs = name, body, inputs, outputs
        # Extra tfc options (--cuda-tf32).
        self.flags = tuple(flags)
        self.ref, self.rtol, self.atol, self.draw = ref, rtol, atol, draw
        # 16-bit outputs: within `ulps` ulps of the value plus as many of the
        # output's scale (max |want|), instead of rtol and atol.
        self.ulps = ulps
        # Inputs that stay f32 in the 16-bit variant (rotary's frequencies).
        self.f32_inputs = f32_inputs
        # The run-time error code the kernel must report (0: none): a value of
        # enum tfc_kernel_error in runtime/include/tfc/artifact_abi.h.
        self.error = error
        # Derives inputs from the drawn ones (an op's own output as input).
        self.inputs_from = inputs_from
        # f32 rounding of the sums behind each output element: the length of the longest
        # chain of f32 additions (and products) feeding one element, and a function of
        # the inputs giving, per output, the sum of the magnitudes of the terms. f32
        # outputs then also allow 2 * terms * F32_U * magnitude (F32_U above), so that
        # the bound scales with the terms, not with a result that cancellation made
        # small. The default magnitude is the reference on the inputs' absolute values:
        # exact for sums of products, an upper bound through silu and other functions
        # with |f(x)| <= f(|x|).
        self.terms = terms
        self.magnitude = magnitude or (lambda *a: ref(*[np.abs(x) for x in a]))


def ttype(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def module_text(case):
    args = ", ".join(f"%x{i}: {ttype(s, d)}" for i, (s, d) in enumerate(case.inputs))
    results = ", ".join(ttype(s, d) for s, d in case.outputs)
    return f"func.func @f({args}) -> ({results}) {{\n{case.body}\n}}\n"


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * w


def cross_entropy(x, t):
    with np.errstate(divide="ignore"):  # a masked (-inf) logit's probability is 0
        logp = np.log(softmax(x, -1))
    rows = [i for i in range(len(t)) if t[i] != -100]
    return np.mean([-logp[i, int(t[i])] for i in rows]) if rows else 0.0


def cross_entropy_grad(x, t, g):
    x2, t2 = x.reshape(-1, x.shape[-1]), t.reshape(-1)
    counted = t2 != -100
    d = softmax(x2, -1)
    d[np.arange(len(t2)), np.where(counted, t2, 0).astype(np.int64)] -= 1
    d *= (g / counted.sum()) * counted[:, None]
    return d.reshape(x.shape)


def embedding_grad(g, ids, rows):
    out = np.zeros((rows, g.shape[-1]))
    for p, i in enumerate(ids.reshape(-1).astype(np.int64)):
        out[i] += g.reshape(-1, g.shape[-1])[p]
    return out


def rotary(x, offset, theta, inverse, freq=None):
    d = x.shape[-1]
    half = d // 2
    pos = offset + np.arange(x.shape[-2])[:, None]
    if freq is None:
        freq = theta ** (-2.0 * np.arange(half) / d)
    ang = pos * freq
    co, si = np.cos(ang), np.sin(ang) * (-1 if inverse else 1)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * co - x2 * si, x2 * co + x1 * si], axis=-1)


def attention(q, k, v, causal, offset=None, scale=None):
    """softmax(scale q k^T + mask) v over [B, H, T, D], grouped-query heads; a query row
    that sees no key (causal, Tq > Tk) is 0, as the op defines it."""
    b, h, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    k = np.repeat(k, h // hkv, axis=1)
    v = np.repeat(v, h // hkv, axis=1)
    scale = 1 / np.sqrt(d) if scale is None else scale
    s = scale * q @ np.swapaxes(k, -1, -2)
    if not causal:
        return softmax(s, -1) @ v
    off = tk - tq if offset is None else offset
    visible = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + off
    seen = visible.any(-1)[:, None]
    p = softmax(np.where(visible, s, np.where(seen, -np.inf, 0)), -1)
    return np.where(seen, p @ v, 0)


def paged_keys(table_row, pos, tq, nb, s):
    """The blocks a paged row reads (up to its first entry < 0, or one >= nb: reported) and
    its visible keys, min(pos + tq, those blocks' positions)."""
    n = 0
    while n < len(table_row) and n * s < pos + tq and 0 <= table_row[n] < nb:
        n += 1
    return [int(x) for x in table_row[:n]], max(0, min(pos + tq, n * s))


def paged_attention(q, kp, vp, table, pos):
    """tfc.paged_attention: each row's visible keys gathered from the pools in order, then
    causal attention at the row's position."""
    b, h, tq, d = q.shape
    nb, hkv, s, dv = vp.shape
    out = np.zeros((b, h, tq, dv))
    for r in range(b):
        blocks, keys = paged_keys(table[r], int(pos[r]), tq, nb, s)
        if keys == 0:
            continue
        k = np.concatenate([kp[i] for i in blocks], axis=1)[None, :, :keys]
        v = np.concatenate([vp[i] for i in blocks], axis=1)[None, :, :keys]
        out[r] = attention(q[r:r + 1], k, v, True, int(pos[r]))[0]
    return out


def paged_kv_write(pool, update, pos, table):
    """kv_cache_update with blocks: row r's token l into block table[r, p // S], slot
    p % S, p = pos[r] + l; entries < 0 (and, reported, positions past the table or entries
    past the pool) write nothing."""
    pool = pool.copy()
    nb, _, s, _ = pool.shape
    for r in range(update.shape[0]):
        for l in range(update.shape[2]):
            p = int(pos[r]) + l
            if 0 <= p < table.shape[1] * s and 0 <= table[r, p // s] < nb:
                pool[int(table[r, p // s]), :, p % s] = update[r, :, l]
    return pool


def paged_draw(tables, positions):
    """Draws normal floats, and the given block tables and positions (by shape)."""
    return lambda rng, shape: (np.array(tables[shape]) if shape in tables else
                               np.array(positions[shape]) if shape in positions else
                               rng.standard_normal(shape))


def attention_grads(q, k, v, do, causal, o=None):
    """(dq, dk, dv) of attention by central differences would be slow; the
    analytic formulas in float64, written independently of the kernel. With
    `o` (the forward's output as given to the op), rowsum(dp * p) is taken as
    rowsum(do * o), equal for an exact o, as the op's definition computes it:
    a 16-bit o's rounding then counts as the input it is."""
    b, h, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    g = h // hkv
    ke, ve = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = 1 / np.sqrt(d)
    s = scale * q @ np.swapaxes(ke, -1, -2)
    if causal:
        visible = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
        s = np.where(visible, s, -np.inf)
    p = softmax(s, -1)
    dv_e = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(ve, -1, -2)
    rowsum = (dp * p).sum(-1, keepdims=True) if o is None else (do * o).sum(-1, keepdims=True)
    ds = p * (dp - rowsum) * scale
    dq = ds @ ke
    dk_e = np.swapaxes(ds, -1, -2) @ q
    fold = lambda x: x.reshape(b, hkv, g, *x.shape[2:]).sum(2)  # noqa: E731
    return dq, fold(dk_e), fold(dv_e)


def philox4x32_10(c, k):
    """Philox-4x32-10 as Salmon et al. (SC'11) define it."""
    m32 = 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m32, (p0 >> 32) ^ c[3] ^ k[1], p0 & m32]
        k = [(k[0] + 0x9E3779B9) & m32, (k[1] + 0xBB67AE85) & m32]
    return c


# Random123's known answers, so that this reference stands on its own.
assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
assert philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                     [0xA4093822, 0x299F31D0]) == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def philox_uniform_double(seed, counter, stream):
    """tfc's draw: key = seed, counter = (counter lo, counter hi, stream, 0),
    53 bits of the first two words."""
    m32 = 0xFFFFFFFF
    c = philox4x32_10([counter & m32, (counter >> 32) & m32, stream, 0],
                      [seed & m32, (seed >> 32) & m32])
    bits = ((c[0] << 21) ^ (c[1] >> 11)) & ((1 << 53) - 1)
    return bits / 9007199254740992.0


def sample(logits, temperature, top_k, top_p, seed):
    """tfc.sample per row: greedy, or a draw among the top-k then top-p
    candidates in (logit descending, index ascending) order."""
    out = []
    for b, x in enumerate(logits.astype(np.float64)):
        if not temperature > 0:
            out.append(int(np.argmax(x)))
            continue
        order = sorted(range(len(x)), key=lambda j: (-x[j], j))
        k = len(x) if top_k <= 0 or top_k >= len(x) else int(top_k)
        w = np.exp((x - x.max()) / temperature)
        cand = order[:k]
        mass = w[cand].sum() if k < len(x) else w.sum()
        if top_p < 1:
            cum, kept = 0.0, 0
            while kept < k:
                cum += w[cand[kept]]
                kept += 1
                if cum >= top_p * mass:
                    break
            cand, mass = cand[:kept], cum
        elif k == len(x):
            cand = list(range(len(x)))  # all kept: index order
        u = philox_uniform_double(int(seed), b, 0x53414D50)
        cum, pick = 0.0, cand[-1]
        for j in cand:
            cum += w[j]
            if cum > u * mass:
                pick = j
                break
        out.append(pick)
    return np.array(out)


def dropout(x, seed, rate):
    """The CPU's mask: keep element e iff its 24-bit Philox uniform >= rate."""
    m32 = 0xFFFFFFFF
    keep = [(philox4x32_10([e & m32, e >> 32, 0, 0], [seed & m32, (seed >> 32) & m32])[0] >> 8)
            / 16777216.0 >= np.float32(rate) for e in range(x.size)]
    return np.where(np.array(keep).reshape(x.shape), x * np.float32(1 / (1 - rate)), 0.0)


def attention_grad_case(label, heads, kv_heads, t, d, tk=None, dv=None, causal=True):
    """attention_grad of one batch row, f32, against NumPy's gradients of attention (its
    `out` operand is the forward's output). Tq = t, Tk = tk (default t), Dv = dv (default d);
    causal with the last query seeing every key."""
    tk, dv = tk or t, dv or d
    q, k, v, o = (1, heads, t, d), (1, kv_heads, tk, d), (1, kv_heads, tk, dv), (1, heads, t, dv)
    types = ", ".join(ttype(s, "f32") for s in (q, k, v, o, o))
    results = ", ".join(ttype(s, "f32") for s in (q, k, v))
    mask = " causal" if causal else ""
    return Case(f"attention_grad{mask}, {label}",
                f"  %0:3 = tfc.attention_grad %x0, %x1, %x2, %x3, %x4{mask} : ({types}) -> ({results})\n"
                f"  return %0#0, %0#1, %0#2 : {results}",
                [(q, "f32"), (k, "f32"), (v, "f32"), (o, "f32"), (o, "f32")],
                [(q, "f32"), (k, "f32"), (v, "f32")],
                lambda q, k, v, o, do: list(attention_grads(q, k, v, do, causal, o)),
                rtol=1e-4, atol=1e-5,
                inputs_from=lambda q, k, v, o, do: [q, k, v, attention(q, k, v, causal), do])


def sample_case(label, temperature, top_k, top_p):
    return Case(f"sample {label}",
                "  %0 = tfc.sample %x0, %x1, %x2, %x3, %x4 : (tensor<4x50xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<4xi32>\n"
                "  return %0 : tensor<4xi32>",
                [((4, 50), "f32"), ((), "f32"), ((), "i32"), ((), "f32"), ((), "i64")],
                [((4,), "i32")],
                lambda x, t, k, p, s: [sample(x, float(t), int(k), float(p), int(s))],
                rtol=0, atol=0,
                draw=lambda rng, shape: (rng.standard_normal(shape) * 2 if shape else None),
                # The generator's seed from the drawn logits: fresh per run.
                inputs_from=lambda x, t, k, p, s: [
                    x, temperature, top_k, top_p,
                    int(abs(x.view(np.uint32).astype(np.uint64).sum())) % 2**40 + 1])


def log_softmax_magnitude(x):
    """log_softmax(x) = x - max - log(sum exp(x - max)): the three terms' magnitudes."""
    m = x.max(-1, keepdims=True)
    return [np.abs(x) + np.abs(m) + np.abs(np.log(np.exp(x - m).sum(-1, keepdims=True)))]


def layer_norm_magnitude(x, w, b):
    """(x - mean) / std * w + b: x - mean cancels near the mean, so the magnitude is that of
    |x| + |mean| scaled as the result is."""
    std = np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    return [np.abs(w) * (np.abs(x) + np.abs(x.mean(-1, keepdims=True))) / std + np.abs(b)]


def attention_magnitude(q, k, v, *rest):
    """sum_j p_j v_j with p = softmax(q.k / sqrt(D)): the values' magnitude, times the
    scores' (the exp of a rounded score is off relatively by its rounding)."""
    score = np.abs(q).max() * np.abs(k).max() * np.sqrt(q.shape[-1])
    return [np.broadcast_to(np.abs(v).max() * (1 + score), q.shape[:-1] + v.shape[-1:])]


def tf32(x):
    """f32 values rounded to TF32 (10 bits of mantissa), to nearest with ties away from zero
    (cvt.rna.tf32.f32); inf and NaN as they are."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    finite = (u & 0x7F800000) != 0x7F800000
    r = np.where(finite, (u + 0x1000) & 0xFFFFE000, u).astype(np.uint32)
    return r.view(np.float32).astype(np.float64)


def with_inf_nan(rng, shape, at=None):
    """Normal draws, with an inf and a NaN in row at[0] (columns at[1] and at[1] + 1)."""
    x = rng.standard_normal(shape)
    if at is not None:
        x[at[0], at[1]], x[at[0], at[1] + 1] = np.inf, np.nan
    return x


def with_nans(rng, shape):
    x = rng.standard_normal(shape)
    x.flat[::5] = np.nan
    return x


CASES = [
    Case("add broadcast [3,1,5]+[4,5]",
         "  %0 = tfc.add %x0, %x1 : tensor<3x1x5xf32>, tensor<4x5xf32> -> tensor<3x4x5xf32>\n"
         "  return %0 : tensor<3x4x5xf32>",
         [((3, 1, 5), "f32"), ((4, 5), "f32")], [((3, 4, 5), "f32")],
         lambda a, b: [a + b]),
    Case("gelu tanh",
         "  %0 = tfc.gelu %x0 approximate = tanh : tensor<7x9xf32>\n"
         "  return %0 : tensor<7x9xf32>",
         [((7, 9), "f32")], [((7, 9), "f32")], lambda x: [gelu_tanh(x)]),
    Case("fused x*w+b -> sigmoid -> sub [5,6]",
         "  %0 = tfc.mul %x0, %x1 : tensor<5x6xf32>, tensor<6xf32> -> tensor<5x6xf32>\n"
         "  %1 = tfc.add %0, %x2 : tensor<5x6xf32>, tensor<5x1xf32> -> tensor<5x6xf32>\n"
         "  %2 = tfc.sigmoid %1 : tensor<5x6xf32>\n"
         "  %3 = tfc.sub %2, %x0 : tensor<5x6xf32>, tensor<5x6xf32> -> tensor<5x6xf32>\n"
         "  return %3 : tensor<5x6xf32>",
         [((5, 6), "f32"), ((6,), "f32"), ((5, 1), "f32")], [((5, 6), "f32")],
         lambda x, w, b: [1 / (1 + np.exp(-(x * w + b))) - x]),
    Case("max propagates NaN",
         "  %0 = tfc.max %x0, %x1 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>\n"
         "  return %0 : tensor<4x5xf32>",
         [((4, 5), "f32"), ((4, 5), "f32")], [((4, 5), "f32")],
         lambda a, b: [np.maximum(a, b)], draw=with_nans),
    Case("reduce_sum dims [0, -1] keepdim",
         "  %0 = tfc.reduce_sum %x0 dims = [0, -1] keepdim : tensor<2x3x4xf32> -> tensor<1x3x1xf32>\n"
         "  return %0 : tensor<1x3x1xf32>",
         [((2, 3, 4), "f32")], [((1, 3, 1), "f32")],
         lambda x: [x.sum(axis=(0, 2), keepdims=True)],
         terms=8),
    Case("reduce_mean dims [1]",
         "  %0 = tfc.reduce_mean %x0 dims = [1] : tensor<4x6x3xf32> -> tensor<4x3xf32>\n"
         "  return %0 : tensor<4x3xf32>",
         [((4, 6, 3), "f32")], [((4, 3), "f32")], lambda x: [x.mean(axis=1)],
         terms=7),
    Case("reduce_max dims [-1]",
         "  %0 = tfc.reduce_max %x0 dims = [-1] : tensor<5x7xf32> -> tensor<5xf32>\n"
         "  return %0 : tensor<5xf32>",
         [((5, 7), "f32")], [((5,), "f32")], lambda x: [x.max(axis=-1)]),
    # kernels/reduce.cuh: rows wider than a warp (a warp an output), and a bias gradient's
    # column sums over two leading dimensions (32 warps down 120 rows, 3 tiles of columns).
    Case("reduce_max rows wider than a warp propagate NaN",
         "  %0 = tfc.reduce_max %x0 dims = [-1] : tensor<9x100xf32> -> tensor<9xf32>\n"
         "  return %0 : tensor<9xf32>",
         [((9, 100), "f32")], [((9,), "f32")], lambda x: [x.max(axis=-1)],
         draw=lambda rng, shape: np.where(np.arange(900).reshape(shape) == 437, np.nan,
                                          rng.standard_normal(shape))),
    Case("reduce_sum columns over leading dims",
         "  %0 = tfc.reduce_sum %x0 dims = [0, 1] : tensor<3x40x70xf32> -> tensor<70xf32>\n"
         "  return %0 : tensor<70xf32>",
         [((3, 40, 70), "f32")], [((70,), "f32")], lambda x: [x.sum(axis=(0, 1))],
         terms=120),
    Case("softmax dim 1 of [2,3,5]",
         "  %0 = tfc.softmax %x0 dim = 1 : tensor<2x3x5xf32> -> tensor<2x3x5xf32>\n"
         "  return %0 : tensor<2x3x5xf32>",
         [((2, 3, 5), "f32")], [((2, 3, 5), "f32")], lambda x: [softmax(x, 1)]),
    Case("log_softmax dim -1",
         "  %0 = tfc.log_softmax %x0 dim = -1 : tensor<4x9xf32> -> tensor<4x9xf32>\n"
         "  return %0 : tensor<4x9xf32>",
         [((4, 9), "f32")], [((4, 9), "f32")], lambda x: [np.log(softmax(x, -1))],
         terms=11, magnitude=log_softmax_magnitude),
    # Wider than a warp (lanes stride over the columns, a partial last stride) and more
    # rows than a block of the row kernels takes (8): kernels/row.cuh's warp per row.
    Case("softmax rows wider than a warp",
         "  %0 = tfc.softmax %x0 dim = -1 : tensor<11x70xf32> -> tensor<11x70xf32>\n"
         "  return %0 : tensor<11x70xf32>",
         [((11, 70), "f32")], [((11, 70), "f32")], lambda x: [softmax(x, -1)],
         terms=72),
    Case("layer_norm rows wider than a warp",
         "  %0 = tfc.layer_norm %x0 weight %x1 bias %x2 eps = 1.0e-5 : (tensor<10x75xf32>, tensor<75xf32>, tensor<75xf32>) -> tensor<10x75xf32>\n"
         "  return %0 : tensor<10x75xf32>",
         [((10, 75), "f32"), ((75,), "f32"), ((75,), "f32")], [((10, 75), "f32")],
         lambda x, w, b: [layer_norm(x, w, b, 1e-5)],
         terms=77, magnitude=layer_norm_magnitude),
    Case("layer_norm weight bias",
         "  %0 = tfc.layer_norm %x0 weight %x1 bias %x2 eps = 1.0e-5 : (tensor<3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<3x16xf32>\n"
         "  return %0 : tensor<3x16xf32>",
         [((3, 16), "f32"), ((16,), "f32"), ((16,), "f32")], [((3, 16), "f32")],
         lambda x, w, b: [layer_norm(x, w, b, 1e-5)],
         terms=18, magnitude=layer_norm_magnitude),
    Case("rms_norm weight",
         "  %0 = tfc.rms_norm %x0 weight %x1 eps = 1.0e-6 : (tensor<3x16xf32>, tensor<16xf32>) -> tensor<3x16xf32>\n"
         "  return %0 : tensor<3x16xf32>",
         [((3, 16), "f32"), ((16,), "f32")], [((3, 16), "f32")],
         lambda x, w: [rms_norm(x, w, 1e-6)]),
    Case("exp bf16",
         "  %0 = tfc.exp %x0 : tensor<4x8xbf16>\n  return %0 : tensor<4x8xbf16>",
         [((4, 8), "bf16")], [((4, 8), "bf16")], lambda x: [np.exp(x)],
         rtol=8e-3, atol=1e-3),
    Case("cast f32 -> bf16",
         "  %0 = tfc.cast %x0 : tensor<10xf32> -> tensor<10xbf16>\n"
         "  return %0 : tensor<10xbf16>",
         [((10,), "f32")], [((10,), "bf16")], lambda x: [x], rtol=0, atol=0),
    Case("cast f32 -> i32 (toward zero)",
         "  %0 = tfc.cast %x0 : tensor<10xf32> -> tensor<10xi32>\n"
         "  return %0 : tensor<10xi32>",
         [((10,), "f32")], [((10,), "i32")], lambda x: [np.trunc(x * 1.0)],
         rtol=0, atol=0, draw=lambda rng, s: rng.standard_normal(s) * 50),
    Case("sub i32 broadcast",
         "  %0 = tfc.sub %x0, %x1 : tensor<3x4xi32>, tensor<4xi32> -> tensor<3x4xi32>\n"
         "  return %0 : tensor<3x4xi32>",
         [((3, 4), "i32"), ((4,), "i32")], [((3, 4), "i32")], lambda a, b: [a - b],
         rtol=0, atol=0),
    Case("mul i64",
         "  %0 = tfc.mul %x0, %x1 : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>\n"
         "  return %0 : tensor<6xi64>",
         [((6,), "i64"), ((6,), "i64")], [((6,), "i64")], lambda a, b: [a * b],
         rtol=0, atol=0),
    Case("matmul batch-broadcast transpose_rhs",
         "  %0 = tfc.matmul %x0, %x1 transpose_rhs : tensor<2x1x3x5xf32>, tensor<4x6x5xf32> -> tensor<2x4x3x6xf32>\n"
         "  return %0 : tensor<2x4x3x6xf32>",
         [((2, 1, 3, 5), "f32"), ((4, 6, 5), "f32")], [((2, 4, 3, 6), "f32")],
         lambda a, b: [a @ np.swapaxes(b, -1, -2)],
         terms=5),
    Case("matmul transpose_lhs",
         "  %0 = tfc.matmul %x0, %x1 transpose_lhs : tensor<7x3xf32>, tensor<7x4xf32> -> tensor<3x4xf32>\n"
         "  return %0 : tensor<3x4xf32>",
         [((7, 3), "f32"), ((7, 4), "f32")], [((3, 4), "f32")], lambda a, b: [a.T @ b],
         terms=7),
    # Past one 64x64 tile and one k-step of 32 in every dimension, with edges: in bf16
    # and f16 (HALF_CASES) these run on the tensor-core kernel (kernels/gemm.cuh).
    Case("matmul tiled batch",
         "  %0 = tfc.matmul %x0, %x1 : tensor<2x70x40xf32>, tensor<40x90xf32> -> tensor<2x70x90xf32>\n"
         "  return %0 : tensor<2x70x90xf32>",
         [((2, 70, 40), "f32"), ((40, 90), "f32")], [((2, 70, 90), "f32")],
         lambda a, b: [a @ b], terms=40),
    Case("linear tiled bias transpose_weight",
         "  %0 = tfc.linear %x0, %x1 bias %x2 transpose_weight : (tensor<130x48xf32>, tensor<72x48xf32>, tensor<72xf32>) -> tensor<130x72xf32>\n"
         "  return %0 : tensor<130x72xf32>",
         [((130, 48), "f32"), ((72, 48), "f32"), ((72,), "f32")], [((130, 72), "f32")],
         lambda x, w, b: [x @ w.T + b], terms=49),
    # At most 8 rows, a decode step's: kernels/gemm.cuh's tfc_gemv. GPT-2's weight layout
    # (a lane a column, 32 warps down K = 100, three blocks of columns, the last partial) and
    # LLaMA's (a warp a column, 20 columns: warps past N).
    Case("linear decode rows GEMV bias",
         "  %0 = tfc.linear %x0, %x1 bias %x2 : (tensor<3x100xf32>, tensor<100x70xf32>, tensor<70xf32>) -> tensor<3x70xf32>\n"
         "  return %0 : tensor<3x70xf32>",
         [((3, 100), "f32"), ((100, 70), "f32"), ((70,), "f32")], [((3, 70), "f32")],
         lambda x, w, b: [x @ w + b], terms=101),
    Case("linear decode rows GEMV transpose_weight",
         "  %0 = tfc.linear %x0, %x1 transpose_weight : (tensor<1x2x70xf32>, tensor<20x70xf32>) -> tensor<1x2x20xf32>\n"
         "  return %0 : tensor<1x2x20xf32>",
         [((1, 2, 70), "f32"), ((20, 70), "f32")], [((1, 2, 20), "f32")],
         lambda x, w: [x @ w.T], terms=70),
    # f32 through TF32 on tensor cores (--cuda-tf32; kernels/gemm.cuh's tfc_gemm_tf32_64x64):
    # against the product of the operands rounded to TF32 (so that only the f32 sums'
    # rounding remains), with an inf and a NaN among them; batched with a transposed lhs,
    # and a linear with bias in LLaMA's layout.
    Case("matmul tf32 batch transpose_lhs",
         "  %0 = tfc.matmul %x0, %x1 transpose_lhs : tensor<2x40x70xf32>, tensor<40x90xf32> -> tensor<2x70x90xf32>\n"
         "  return %0 : tensor<2x70x90xf32>",
         [((2, 40, 70), "f32"), ((40, 90), "f32")], [((2, 70, 90), "f32")],
         lambda a, b: [np.swapaxes(tf32(a), -1, -2) @ tf32(b)], terms=40,
         magnitude=lambda a, b: [np.swapaxes(np.abs(tf32(a)), -1, -2) @ np.abs(tf32(b))],
         flags=["--cuda-tf32"]),
    Case("linear tf32 bias transpose_weight, inf and NaN",
         "  %0 = tfc.linear %x0, %x1 bias %x2 transpose_weight : (tensor<130x48xf32>, tensor<72x48xf32>, tensor<72xf32>) -> tensor<130x72xf32>\n"
         "  return %0 : tensor<130x72xf32>",
         [((130, 48), "f32"), ((72, 48), "f32"), ((72,), "f32")], [((130, 72), "f32")],
         lambda x, w, b: [tf32(x) @ tf32(w).T + b], terms=49,
         magnitude=lambda x, w, b: [np.abs(tf32(x)) @ np.abs(tf32(w)).T + np.abs(b)],
         draw=lambda rng, shape: with_inf_nan(rng, shape, at=(5, 7) if shape == (130, 48) else None),
         flags=["--cuda-tf32"]),
    Case("linear bias (GPT-2 layout)",
         "  %0 = tfc.linear %x0, %x1 bias %x2 : (tensor<2x3x8xf32>, tensor<8x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>\n"
         "  return %0 : tensor<2x3x5xf32>",
         [((2, 3, 8), "f32"), ((8, 5), "f32"), ((5,), "f32")], [((2, 3, 5), "f32")],
         lambda x, w, b: [x @ w + b],
         terms=9),
    Case("linear transpose_weight bf16 (LLaMA layout)",
         "  %0 = tfc.linear %x0, %x1 transpose_weight : (tensor<4x16xbf16>, tensor<6x16xbf16>) -> tensor<4x6xbf16>\n"
         "  return %0 : tensor<4x6xbf16>",
         [((4, 16), "bf16"), ((6, 16), "bf16")], [((4, 6), "bf16")],
         lambda x, w: [x @ w.T], rtol=8e-3, atol=1e-2),
    Case("cross_entropy with ignored rows",
         "  %0 = tfc.cross_entropy %x0, %x1 ignore_index = -100 : tensor<5x7xf32>, tensor<5xi32> -> tensor<f32>\n"
         "  return %0 : tensor<f32>",
         [((5, 7), "f32"), ((5,), "i32")], [((), "f32")],
         lambda x, t: [cross_entropy(x, t)],
         draw=lambda rng, shape: (np.array([3, -100, 0, 6, -100]) if shape == (5,)
                                  else rng.standard_normal(shape))),
    Case("cross_entropy_grad",
         "  %0 = tfc.cross_entropy_grad %x0, %x1, %x2 ignore_index = -100 : (tensor<2x3x6xf32>, tensor<2x3xi32>, tensor<f32>) -> tensor<2x3x6xf32>\n"
         "  return %0 : tensor<2x3x6xf32>",
         [((2, 3, 6), "f32"), ((2, 3), "i32"), ((), "f32")], [((2, 3, 6), "f32")],
         lambda x, t, g: [cross_entropy_grad(x, t, g)],
         draw=lambda rng, shape: (np.array([[1, -100, 5], [0, 2, -100]]) if shape == (2, 3)
                                  else rng.standard_normal(shape))),
    # Past 512 blocks of 8 rows (the last block's sum over the blocks' partials, warps that
    # take a second row), rows wider than a warp, a masked column of -inf logits.
    Case("cross_entropy over many blocks, masked logits",
         "  %0 = tfc.cross_entropy %x0, %x1 ignore_index = -100 : tensor<4100x40xf32>, tensor<4100xi32> -> tensor<f32>\n"
         "  return %0 : tensor<f32>",
         [((4100, 40), "f32"), ((4100,), "i32")], [((), "f32")],
         lambda x, t: [cross_entropy(x, t)],
         draw=lambda rng, shape: (np.where(rng.random(shape) < 0.1, -100,
                                           rng.integers(0, 39, shape)) if shape == (4100,)
                                  else np.concatenate([rng.standard_normal((4100, 39)),
                                                       np.full((4100, 1), -np.inf)], 1)),
         terms=4100 + 40,
         magnitude=lambda x, t: [2 * np.abs(x[np.isfinite(x)]).max() + np.log(x.shape[1])]),
    # Rows wider than a warp, an out-of-range target (reported, its row 0).
    Case("cross_entropy_grad wide rows, a target out of range",
         "  %0 = tfc.cross_entropy_grad %x0, %x1, %x2 ignore_index = -100 : (tensor<11x100xf32>, tensor<11xi32>, tensor<f32>) -> tensor<11x100xf32>\n"
         "  return %0 : tensor<11x100xf32>",
         [((11, 100), "f32"), ((11,), "i32"), ((), "f32")], [((11, 100), "f32")],
         # the bad target's row is 0, but it counts in the mean's divisor (9 rows, not 8)
         lambda x, t, g: [cross_entropy_grad(x, np.where(t == 100, -100, t), g) * 8 / 9],
         draw=lambda rng, shape: (np.array([99, -100, 0, 5, 100, 42, 7, -100, 63, 31, 1])
                                  if shape == (11,) else rng.standard_normal(shape)),
         error=3),
    # 300 rows: the block's 8 warps count the targets together (each a share, past 32 rows).
    Case("cross_entropy_grad 300 rows, ignored targets",
         "  %0 = tfc.cross_entropy_grad %x0, %x1, %x2 ignore_index = -100 : (tensor<300x10xf32>, tensor<300xi32>, tensor<f32>) -> tensor<300x10xf32>\n"
         "  return %0 : tensor<300x10xf32>",
         [((300, 10), "f32"), ((300,), "i32"), ((), "f32")], [((300, 10), "f32")],
         lambda x, t, g: [cross_entropy_grad(x, t, g)],
         draw=lambda rng, shape: (np.where(rng.random(shape) < 0.3, -100,
                                           rng.integers(0, 10, shape)) if shape == (300,)
                                  else rng.standard_normal(shape) if shape else np.array(1.5))),
    Case("embedding_grad, repeated ids",
         "  %0 = tfc.embedding_grad %x0, %x1 : (tensor<2x4x3xf32>, tensor<2x4xi32>) -> tensor<6x3xf32>\n"
         "  return %0 : tensor<6x3xf32>",
         [((2, 4, 3), "f32"), ((2, 4), "i32")], [((6, 3), "f32")],
         lambda g, ids: [embedding_grad(g, ids, 6)],
         draw=lambda rng, shape: (np.array([[1, 4, 1, 0], [4, 4, 2, 1]]) if shape == (2, 4)
                                  else rng.standard_normal(shape)),
         terms=8),
    # 200 positions onto 4 rows: a 16-bit table summed in place would round
    # 50 times a row (the [bf16] and [f16] variants check that it does not).
    Case("embedding_grad, 200 positions onto 4 rows",
         "  %0 = tfc.embedding_grad %x0, %x1 : (tensor<4x50x3xf32>, tensor<4x50xi32>) -> tensor<4x3xf32>\n"
         "  return %0 : tensor<4x3xf32>",
         [((4, 50, 3), "f32"), ((4, 50), "i32")], [((4, 3), "f32")],
         lambda g, ids: [embedding_grad(g, ids, 4)],
         draw=lambda rng, shape: (rng.integers(0, 4, shape) if shape == (4, 50)
                                  else rng.standard_normal(shape)),
         terms=200),
    # A table of 200 rows x 1024 columns: work items of a column and a block of 4 rows (the
    # last block 4 rows too: 50 blocks), 120 positions with repeats.
    Case("embedding_grad into an existing gradient, blocks of rows",
         "  %0 = tfc.embedding_grad %x0, %x1 into %x2 : (tensor<3x40x1024xf32>, tensor<3x40xi32>, tensor<200x1024xf32>) -> tensor<200x1024xf32>\n"
         "  return %0 : tensor<200x1024xf32>",
         [((3, 40, 1024), "f32"), ((3, 40), "i32"), ((200, 1024), "f32")],
         [((200, 1024), "f32")],
         lambda g, ids, w: [embedding_grad(g, ids, 200) + w],
         draw=lambda rng, shape: (rng.integers(0, 60, shape) if shape == (3, 40)
                                  else rng.standard_normal(shape)),
         terms=121),
    Case("rotary at an offset",
         "  %0 = tfc.rotary %x0 offset %x1 theta = 1.000000e+04 : (tensor<1x2x3x8xf32>, tensor<i32>) -> tensor<1x2x3x8xf32>\n"
         "  return %0 : tensor<1x2x3x8xf32>",
         [((1, 2, 3, 8), "f32"), ((), "i32")], [((1, 2, 3, 8), "f32")],
         lambda x, p: [rotary(x, int(p), 1e4, False)],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(1000)),
    Case("rotary inverse",
         "  %0 = tfc.rotary %x0 theta = 5.000000e+05 inverse : (tensor<2x1x4x6xf32>) -> tensor<2x1x4x6xf32>\n"
         "  return %0 : tensor<2x1x4x6xf32>",
         [((2, 1, 4, 6), "f32")], [((2, 1, 4, 6), "f32")],
         lambda x: [rotary(x, 0, 5e5, True)]),
    Case("rotary at an offset, scaled frequencies",
         "  %0 = tfc.rotary %x0 offset %x1 frequencies %x2 theta = 1.000000e+04 : (tensor<1x2x3x8xf32>, tensor<i32>, tensor<4xf32>) -> tensor<1x2x3x8xf32>\n"
         "  return %0 : tensor<1x2x3x8xf32>",
         [((1, 2, 3, 8), "f32"), ((), "i32"), ((4,), "f32")], [((1, 2, 3, 8), "f32")],
         lambda x, p, f: [rotary(x, int(p), 1e4, False, f.astype(np.float64))],
         draw=lambda rng, shape: (np.array(1000) if shape == () else
                                  np.abs(rng.standard_normal(shape)) * 0.1 if shape == (4,)
                                  else rng.standard_normal(shape)),
         f32_inputs=(2,)),
    Case("attention causal, grouped-query (H 4, Hkv 2)",
         "  %0 = tfc.attention %x0, %x1, %x2 causal : (tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32>\n"
         "  return %0 : tensor<2x4x5x8xf32>",
         [((2, 4, 5, 8), "f32"), ((2, 2, 5, 8), "f32"), ((2, 2, 5, 8), "f32")],
         [((2, 4, 5, 8), "f32")], lambda q, k, v: [attention(q, k, v, True)],
         terms=5 + 8, magnitude=attention_magnitude),
    Case("attention over a KV cache at a position (decode)",
         "  %0 = tfc.attention %x0, %x1, %x2 offset %x3 causal : (tensor<1x2x1x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<i32>) -> tensor<1x2x1x4xf32>\n"
         "  return %0 : tensor<1x2x1x4xf32>",
         [((1, 2, 1, 4), "f32"), ((1, 2, 6, 4), "f32"), ((1, 2, 6, 4), "f32"), ((), "i32")],
         [((1, 2, 1, 4), "f32")], lambda q, k, v, p: [attention(q, k, v, True, int(p))],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(3),
         terms=6 + 4, magnitude=attention_magnitude),
    # Head dims that are multiples of 16: in bf16 and f16 the tensor-core flash attention
    # (kernels/attention.cuh), here and in the "attention flash" cases.
    Case("cross-attention, Tq != Tk, Dv != D, bf16",
         "  %0 = tfc.attention %x0, %x1, %x2 : (tensor<1x2x3x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x32xbf16>) -> tensor<1x2x3x32xbf16>\n"
         "  return %0 : tensor<1x2x3x32xbf16>",
         [((1, 2, 3, 16), "bf16"), ((1, 2, 7, 16), "bf16"), ((1, 2, 7, 32), "bf16")],
         [((1, 2, 3, 32), "bf16")], lambda q, k, v: [attention(q, k, v, False)],
         rtol=2e-2, atol=2e-2),
    # Two query tiles of 64 and two key tiles, grouped-query, Dv != D; causal at position
    # -4 (clamp(i - 4 + 1, 0, Tk) keys): the first 4 query rows see no key and are 0.
    Case("attention flash tiles: causal, grouped-query, rows that see no key",
         "  %0 = tfc.attention %x0, %x1, %x2 offset %x3 causal : (tensor<1x4x70x32xf32>, tensor<1x2x66x32xf32>, tensor<1x2x66x16xf32>, tensor<i32>) -> tensor<1x4x70x16xf32>\n"
         "  return %0 : tensor<1x4x70x16xf32>",
         [((1, 4, 70, 32), "f32"), ((1, 2, 66, 32), "f32"), ((1, 2, 66, 16), "f32"),
          ((), "i32")],
         [((1, 4, 70, 16), "f32")], lambda q, k, v, p: [attention(q, k, v, True, int(p))],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(-4),
         terms=66 + 32, magnitude=attention_magnitude),
    # Prefill into a KV cache: 6 queries at position 90 of 100 keys (the last key tile
    # partly visible), batch 2, D 64 (GPT-2's).
    Case("attention flash over a KV cache at a position, D 64",
         "  %0 = tfc.attention %x0, %x1, %x2 offset %x3 causal : (tensor<2x2x6x64xf32>, tensor<2x1x100x64xf32>, tensor<2x1x100x64xf32>, tensor<i32>) -> tensor<2x2x6x64xf32>\n"
         "  return %0 : tensor<2x2x6x64xf32>",
         [((2, 2, 6, 64), "f32"), ((2, 1, 100, 64), "f32"), ((2, 1, 100, 64), "f32"),
          ((), "i32")],
         [((2, 2, 6, 64), "f32")], lambda q, k, v, p: [attention(q, k, v, True, int(p))],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(90),
         terms=100 + 64, magnitude=attention_magnitude),
    # Decode (at most 4 query rows a head): the keys split in chunks of 128 over blocks
    # (tfc_attention_decode). 2 rows at position 200 of 300 keys: three chunks, the last
    # seen by neither row; grouped-query, Dv != D.
    Case("attention decode split over a KV cache",
         "  %0 = tfc.attention %x0, %x1, %x2 offset %x3 causal : (tensor<2x4x2x16xf32>, tensor<2x2x300x16xf32>, tensor<2x2x300x24xf32>, tensor<i32>) -> tensor<2x4x2x24xf32>\n"
         "  return %0 : tensor<2x4x2x24xf32>",
         [((2, 4, 2, 16), "f32"), ((2, 2, 300, 16), "f32"), ((2, 2, 300, 24), "f32"),
          ((), "i32")],
         [((2, 4, 2, 24), "f32")], lambda q, k, v, p: [attention(q, k, v, True, int(p))],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(200),
         terms=300 + 16, magnitude=attention_magnitude),
    # Position -1: the first row sees no key (0), the second one key.
    Case("attention decode, a row that sees no key",
         "  %0 = tfc.attention %x0, %x1, %x2 offset %x3 causal : (tensor<1x2x2x8xf32>, tensor<1x1x5x8xf32>, tensor<1x1x5x8xf32>, tensor<i32>) -> tensor<1x2x2x8xf32>\n"
         "  return %0 : tensor<1x2x2x8xf32>",
         [((1, 2, 2, 8), "f32"), ((1, 1, 5, 8), "f32"), ((1, 1, 5, 8), "f32"), ((), "i32")],
         [((1, 2, 2, 8), "f32")], lambda q, k, v, p: [attention(q, k, v, True, int(p))],
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(-1),
         terms=5 + 8, magnitude=attention_magnitude),
    attention_grad_case("grouped-query", 4, 2, 5, 6),
    # d = 64: rows of dQ, dK and dV in two chunks of 32 columns each.
    attention_grad_case("d 64", 2, 1, 3, 64),
    # In bf16 and f16 these run on tensor cores (tfc_flash_attention_bwd): two tiles of
    # queries and of keys, grouped-query, Dv != D; and LLaMA's head dim 128 (32-row tiles).
    attention_grad_case("flash tiles, grouped-query, Tq != Tk, Dv != D", 4, 2, 70, 32,
                        tk=80, dv=16),
    attention_grad_case("flash D 128", 2, 1, 40, 128, tk=36, causal=False),
    sample_case("greedy", 0.0, 0, 1.0),
    sample_case("temperature 1, all kept", 1.0, 0, 1.0),
    sample_case("top_k 5", 0.8, 5, 1.0),
    sample_case("top_p 0.9", 1.2, 0, 0.9),
    sample_case("top_k 10 then top_p 0.5", 1.0, 10, 0.5),
    Case("argmax dim 1, first of ties",
         "  %0 = tfc.argmax %x0 dim = 1 : tensor<3x6x2xf32> -> tensor<3x2xi32>\n"
         "  return %0 : tensor<3x2xi32>",
         [((3, 6, 2), "f32")], [((3, 2), "i32")], lambda x: [np.argmax(x, axis=1)],
         rtol=0, atol=0, draw=lambda rng, shape: rng.integers(0, 3, shape).astype(np.float64)),
    Case("dropout rate 0.3",
         "  %0 = tfc.dropout %x0, %x1 rate = 3.000000e-01 : tensor<64xf32>, tensor<i64> -> tensor<64xf32>\n"
         "  return %0 : tensor<64xf32>",
         [((64,), "f32"), ((), "i64")], [((64,), "f32")],
         lambda x, s: [dropout(x, int(s), 0.3)], rtol=1e-6, atol=0,
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(rng.integers(1, 2**40))),
    Case("transpose perm [2, 0, 1]",
         "  %0 = tfc.transpose %x0 perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>\n"
         "  return %0 : tensor<4x2x3xf32>",
         [((2, 3, 4), "f32")], [((4, 2, 3), "f32")],
         lambda x: [x.transpose(2, 0, 1)], rtol=0, atol=0),
    Case("slice strided bf16",
         "  %0 = tfc.slice %x0 start = [1, 0] limit = [5, 7] stride = [2, 3] : tensor<6x7xbf16> -> tensor<2x3xbf16>\n"
         "  return %0 : tensor<2x3xbf16>",
         [((6, 7), "bf16")], [((2, 3), "bf16")], lambda x: [x[1:5:2, 0:7:3]],
         rtol=0, atol=0),
    Case("dynamic_slice clamps its start",
         "  %0 = tfc.dynamic_slice %x0[%x1] dim = 1 : (tensor<2x8x3xf32>, tensor<i32>) -> tensor<2x3x3xf32>\n"
         "  return %0 : tensor<2x3x3xf32>",
         [((2, 8, 3), "f32"), ((), "i32")], [((2, 3, 3), "f32")],
         lambda x, s: [x[:, min(max(int(s), 0), 5):min(max(int(s), 0), 5) + 3, :]],
         rtol=0, atol=0,
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(rng.integers(-3, 9))),
    Case("concat dim 1",
         "  %0 = tfc.concat %x0, %x1 dim = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>\n"
         "  return %0 : tensor<2x7xf32>",
         [((2, 3), "f32"), ((2, 4), "f32")], [((2, 7), "f32")],
         lambda a, b: [np.concatenate([a, b], axis=1)], rtol=0, atol=0),
    Case("iota dim 1 i32",
         "  %0 = tfc.iota dim = 1 : tensor<3x5xi32>\n  return %0 : tensor<3x5xi32>",
         [], [((3, 5), "i32")], lambda: [np.broadcast_to(np.arange(5), (3, 5))],
         rtol=0, atol=0),
    Case("embedding",
         "  %0 = tfc.embedding %x0, %x1 : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>\n"
         "  return %0 : tensor<2x3x4xf32>",
         [((10, 4), "f32"), ((2, 3), "i32")], [((2, 3, 4), "f32")],
         lambda t, ids: [t[ids.astype(np.int64)]], rtol=0, atol=0,
         draw=lambda rng, shape: (rng.integers(0, 10, shape) if len(shape) == 2 and shape[1] == 3
                                  else rng.standard_normal(shape))),
    Case("embedding id out of range reports",
         "  %0 = tfc.embedding %x0, %x1 : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>\n"
         "  return %0 : tensor<3x4xf32>",
         [((10, 4), "f32"), ((3,), "i32")], [((3, 4), "f32")],
         lambda t, ids: [np.stack([t[int(i)] if 0 <= i < 10 else np.zeros(4) for i in ids])],
         rtol=0, atol=0, error=1,
         draw=lambda rng, shape: (np.array([3, 10, -1]) if shape == (3,)
                                  else rng.standard_normal(shape))),
    Case("kv_cache_update copy at a position",
         "  %0 = tfc.kv_cache_update %x0, %x1, %x2 dim = 1 : (tensor<2x6x3xf32>, tensor<2x2x3xf32>, tensor<i32>) -> tensor<2x6x3xf32>\n"
         "  return %0 : tensor<2x6x3xf32>",
         [((2, 6, 3), "f32"), ((2, 2, 3), "f32"), ((), "i32")], [((2, 6, 3), "f32")],
         lambda c, u, p: [np.concatenate([c[:, :int(p)], u, c[:, int(p) + 2:]], axis=1)],
         rtol=0, atol=0,
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(rng.integers(0, 5))),
    Case("kv_cache_update past the end reports",
         "  %0 = tfc.kv_cache_update %x0, %x1, %x2 dim = 1 : (tensor<2x6x3xf32>, tensor<2x2x3xf32>, tensor<i32>) -> tensor<2x6x3xf32>\n"
         "  return %0 : tensor<2x6x3xf32>",
         [((2, 6, 3), "f32"), ((2, 2, 3), "f32"), ((), "i32")], [((2, 6, 3), "f32")],
         lambda c, u, p: [c], rtol=0, atol=0, error=2,
         draw=lambda rng, shape: rng.standard_normal(shape) if shape else np.array(5)),
    # A paged KV cache (kernels/attention.cuh: tfc_paged_kv_write): rows at their own
    # positions through their block tables, across a block boundary; an idle row (no block)
    # writes nothing.
    Case("kv_cache_update paged: rows through block tables, an idle row dropped",
         "  %0 = tfc.kv_cache_update %x0, %x1, %x2 blocks %x3 dim = 2 : (tensor<6x2x4x3xf32>, tensor<3x2x2x3xf32>, tensor<3xi32>, tensor<3x3xi32>) -> tensor<6x2x4x3xf32>\n"
         "  return %0 : tensor<6x2x4x3xf32>",
         [((6, 2, 4, 3), "f32"), ((3, 2, 2, 3), "f32"), ((3,), "i32"), ((3, 3), "i32")],
         [((6, 2, 4, 3), "f32")], lambda c, u, p, t: [paged_kv_write(c, u, p, t)],
         rtol=0, atol=0,
         draw=paged_draw({(3, 3): [[4, 1, -1], [2, 0, 5], [-1, -1, -1]]}, {(3,): [3, 0, 0]})),
    Case("kv_cache_update paged past the table reports",
         "  %0 = tfc.kv_cache_update %x0, %x1, %x2 blocks %x3 dim = 2 : (tensor<6x2x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1xi32>, tensor<1x3xi32>) -> tensor<6x2x4x3xf32>\n"
         "  return %0 : tensor<6x2x4x3xf32>",
         [((6, 2, 4, 3), "f32"), ((1, 2, 2, 3), "f32"), ((1,), "i32"), ((1, 3), "i32")],
         [((6, 2, 4, 3), "f32")], lambda c, u, p, t: [c], rtol=0, atol=0, error=2,
         draw=paged_draw({(1, 3): [[0, 1, 2]]}, {(1,): [12]})),
    Case("kv_cache_update paged, a block outside the pool reports",
         "  %0 = tfc.kv_cache_update %x0, %x1, %x2 blocks %x3 dim = 2 : (tensor<6x2x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1xi32>, tensor<1x3xi32>) -> tensor<6x2x4x3xf32>\n"
         "  return %0 : tensor<6x2x4x3xf32>",
         [((6, 2, 4, 3), "f32"), ((1, 2, 2, 3), "f32"), ((1,), "i32"), ((1, 3), "i32")],
         [((6, 2, 4, 3), "f32")], lambda c, u, p, t: [c], rtol=0, atol=0, error=6,
         draw=paged_draw({(1, 3): [[0, 9, 2]]}, {(1,): [5]})),
    # Paged attention, a decode step (the decode kernel through the tables): rows at their
    # own positions, grouped-query, Dv != D; row 2 at position 13 holds 2 blocks (8 keys,
    # its table ends), row 3 is idle (0).
    Case("paged_attention decode: rows through block tables, a short table, an idle row",
         "  %0 = tfc.paged_attention %x0, %x1, %x2, %x3, %x4 : (tensor<4x4x1x16xf32>, tensor<10x2x4x16xf32>, tensor<10x2x4x24xf32>, tensor<4x5xi32>, tensor<4xi32>) -> tensor<4x4x1x24xf32>\n"
         "  return %0 : tensor<4x4x1x24xf32>",
         [((4, 4, 1, 16), "f32"), ((10, 2, 4, 16), "f32"), ((10, 2, 4, 24), "f32"),
          ((4, 5), "i32"), ((4,), "i32")],
         [((4, 4, 1, 24), "f32")], lambda *a: [paged_attention(*a)],
         draw=paged_draw({(4, 5): [[7, 2, 9, -1, -1], [0, 5, 1, 3, 8], [4, 6, -1, -1, -1],
                                   [-1, -1, -1, -1, -1]]}, {(4,): [9, 19, 13, 0]}),
         terms=20 + 16, magnitude=attention_magnitude),
    # A prefill chunk of 6 queries a row, through the decode kernel too (a block per query
    # row and chunk of 128 keys): row 0 at position 20 (two blocks), row 1 at position 150,
    # whose queries see keys of both chunks.
    Case("paged_attention prefill chunk over two key chunks",
         "  %0 = tfc.paged_attention %x0, %x1, %x2, %x3, %x4 : (tensor<2x2x6x8xf32>, tensor<12x1x16x8xf32>, tensor<12x1x16x8xf32>, tensor<2x10xi32>, tensor<2xi32>) -> tensor<2x2x6x8xf32>\n"
         "  return %0 : tensor<2x2x6x8xf32>",
         [((2, 2, 6, 8), "f32"), ((12, 1, 16, 8), "f32"), ((12, 1, 16, 8), "f32"),
          ((2, 10), "i32"), ((2,), "i32")],
         [((2, 2, 6, 8), "f32")], lambda *a: [paged_attention(*a)],
         draw=paged_draw({(2, 10): [[3, 0, -1, -1, -1, -1, -1, -1, -1, -1],
                                    [11, 1, 2, 4, 5, 6, 7, 8, 9, 10]]}, {(2,): [20, 150]}),
         terms=160 + 8, magnitude=attention_magnitude),
    # A block table entry past the pool: reported, and the row's keys end before it.
    Case("paged_attention, a block outside the pool reports",
         "  %0 = tfc.paged_attention %x0, %x1, %x2, %x3, %x4 : (tensor<1x2x1x8xf32>, tensor<4x1x4x8xf32>, tensor<4x1x4x8xf32>, tensor<1x3xi32>, tensor<1xi32>) -> tensor<1x2x1x8xf32>\n"
         "  return %0 : tensor<1x2x1x8xf32>",
         [((1, 2, 1, 8), "f32"), ((4, 1, 4, 8), "f32"), ((4, 1, 4, 8), "f32"),
          ((1, 3), "i32"), ((1,), "i32")],
         [((1, 2, 1, 8), "f32")], lambda *a: [paged_attention(*a)], error=6,
         draw=paged_draw({(1, 3): [[2, 7, 1]]}, {(1,): [9]}),
         terms=4 + 8, magnitude=attention_magnitude),
    # Where the decode kernel's partials would pass their cap (a table of 65536 blocks of
    # 128: 65536 key chunks a query row), a thread a query row (tfc_paged_attention_rows);
    # the row reads its table only up to its first entry < 0.
    Case("paged_attention a thread a row past the decode kernel's partials",
         "  %0 = tfc.paged_attention %x0, %x1, %x2, %x3, %x4 : (tensor<1x4x1x8xf32>, tensor<3x2x128x8xf32>, tensor<3x2x128x64xf32>, tensor<1x65536xi32>, tensor<1xi32>) -> tensor<1x4x1x64xf32>\n"
         "  return %0 : tensor<1x4x1x64xf32>",
         [((1, 4, 1, 8), "f32"), ((3, 2, 128, 8), "f32"), ((3, 2, 128, 64), "f32"),
          ((1, 65536), "i32"), ((1,), "i32")],
         [((1, 4, 1, 64), "f32")], lambda *a: [paged_attention(*a)],
         draw=paged_draw({(1, 65536): [[2, 0, 1] + [-1] * 65533]}, {(1,): [300]}),
         terms=301 + 8, magnitude=attention_magnitude),
]


def moe_route(logits, k):
    """f32 softmax, the k largest probabilities, the lower index first on ties."""
    x = np.asarray(logits, np.float32)
    p = np.exp(x - x.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return np.argsort(-p, axis=-1, kind="stable")[:, :k]


def moe_ffn(x, ids, w, *experts):
    y = np.zeros_like(x)
    for n in range(x.shape[0]):
        for e in ids[n].astype(np.int64):
            if not 0 <= e < len(experts) // 3:
                continue
            w1, w3, w2 = experts[3 * e: 3 * e + 3]
            g, u = w1 @ x[n], w3 @ x[n]
            y[n] += w[n, e] * (w2 @ (g / (1 + np.exp(-g)) * u))
    return y


MOE_EXPERTS = "tensor<5x4xf32>, tensor<5x4xf32>, tensor<4x5xf32>"
MOE_TYPES = (f"(tensor<6x4xf32>, tensor<6x2xi32>, tensor<6x3xf32>, {MOE_EXPERTS}, "
             f"{MOE_EXPERTS}, {MOE_EXPERTS}) -> tensor<6x4xf32>")
# moe_ffn of D 4, F 5, top-2: sums of D, then of F, then of k terms, and silu.
MOE_TERMS = 4 + 5 + 2 + 2
MOE_INPUTS = [((6, 4), "f32"), ((6, 2), "i32"), ((6, 3), "f32")] + \
    [s for _ in range(3) for s in (((5, 4), "f32"), ((5, 4), "f32"), ((4, 5), "f32"))]
CASES += [
    Case("moe_route top-2 of 5 (ties: the lower index)",
         "  %0 = tfc.moe_route %x0 top_k = 2 : tensor<7x5xf32> -> tensor<7x2xi32>\n"
         "  return %0 : tensor<7x2xi32>",
         [((7, 5), "f32")], [((7, 2), "i32")], lambda l: [moe_route(l, 2)], rtol=0, atol=0,
         draw=lambda rng, shape: np.concatenate([rng.standard_normal((5, 5)) * 2,
                                                 np.full((1, 5), 0.5),
                                                 [[1.0, 3.0, 0.0, 3.0, -1.0]]])),
    # Expert 2 is chosen by no token: its matrices are never read.
    Case("moe_ffn 3 experts top-2, one unused",
         "  %0 = tfc.moe_ffn %x0, %x1, %x2 experts " +
         ", ".join(f"%x{i}" for i in range(3, 12)) + f" : {MOE_TYPES}\n"
         "  return %0 : tensor<6x4xf32>",
         MOE_INPUTS, [((6, 4), "f32")], lambda *a: [moe_ffn(*a)],
         draw=lambda rng, shape: (np.array([[0, 1], [1, 0], [0, 1], [1, 0], [1, 0], [0, 1]])
                                  if shape == (6, 2) else rng.standard_normal(shape)),
         terms=MOE_TERMS),
    Case("moe_ffn expert id out of range reports",
         "  %0 = tfc.moe_ffn %x0, %x1, %x2 experts " +
         ", ".join(f"%x{i}" for i in range(3, 12)) + f" : {MOE_TYPES}\n"
         "  return %0 : tensor<6x4xf32>",
         MOE_INPUTS, [((6, 4), "f32")], lambda *a: [moe_ffn(*a)], error=5,
         draw=lambda rng, shape: (np.array([[0, 1], [1, 3], [0, 2], [1, 0], [2, 0], [0, 1]])
                                  if shape == (6, 2) else rng.standard_normal(shape)),
         terms=MOE_TERMS),
]


def moe_ffn_grads(x, ids, w, dy, *experts):
    """torch autograd of moe_ffn's formula on the same routing (float64): dx,
    dweights (0 outside each token's chosen experts), then per expert dw1,
    dw3, dw2. Out-of-range ids choose nothing, as the kernel skips them."""
    x, w = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w))
    mats = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in experts]
    rows = []
    for n in range(x.shape[0]):
        y = torch.zeros(x.shape[1], dtype=torch.float64)
        for e in ids[n].astype(np.int64):
            if 0 <= e < len(mats) // 3:
                w1, w3, w2 = mats[3 * e: 3 * e + 3]
                y = y + w[n, e] * (w2 @ (torch.nn.functional.silu(w1 @ x[n]) * (w3 @ x[n])))
        rows.append(y)
    torch.stack(rows).backward(torch.tensor(dy, dtype=torch.float64))
    return [t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            for t in [x, w] + mats]


def moe_inputs(n, d, f, experts, k, grad):
    """x, ids, weights (, dy) and the 3E expert matrices of moe_ffn(_grad)."""
    mats = [((f, d), "f32"), ((f, d), "f32"), ((d, f), "f32")] * experts
    return [((n, d), "f32"), ((n, k), "i32"), ((n, experts), "f32")] + \
        ([((n, d), "f32")] if grad else []) + mats


# Sums of D products of unit normals: the absolute error of f32 grows with D.
def moe_case(label, ids, d=4, f=5, experts=3, error=0):
    n, k = len(ids), len(ids[0])
    ins = moe_inputs(n, d, f, experts, k, grad=False)
    types = f"({', '.join(ttype(s, t) for s, t in ins)}) -> {ttype((n, d), 'f32')}"
    return Case(f"moe_ffn {experts} experts top-{k}, D {d}, {label}",
                "  %0 = tfc.moe_ffn %x0, %x1, %x2 experts " +
                ", ".join(f"%x{i}" for i in range(3, len(ins))) + f" : {types}\n"
                f"  return %0 : {ttype((n, d), 'f32')}",
                ins, [((n, d), "f32")], lambda *a: [moe_ffn(*a)], error=error,
                rtol=1e-4, atol=2.5e-6 * d, terms=d + f + k + 2,
                draw=lambda rng, shape: (np.array(ids) if shape == (n, k)
                                         else rng.standard_normal(shape)))


def moe_grad_case(label, ids, d=4, f=5, experts=3, error=0):
    n, k = len(ids), len(ids[0])
    ins = moe_inputs(n, d, f, experts, k, grad=True)
    outs = [((n, d), "f32"), ((n, experts), "f32")] + ins[4:]
    results = ", ".join(ttype(s, t) for s, t in outs)
    types = f"({', '.join(ttype(s, t) for s, t in ins)}) -> ({results})"
    return Case(f"moe_ffn_grad {experts} experts top-{k}, D {d}, {label}",
                f"  %0:{len(outs)} = tfc.moe_ffn_grad %x0, %x1, %x2, %x3 experts " +
                ", ".join(f"%x{i}" for i in range(4, len(ins))) + f" : {types}\n"
                "  return " + ", ".join(f"%0#{i}" for i in range(len(outs))) +
                f" : {results}",
                # dweights = dy . out sums d * f products of four N(0, 1) factors
                # (terms up to ~100): f32 rounding reaches ~1.2e-5 there (seed
                # 1829068), past moe_ffn's 2.5e-6 * d; a wrong formula is O(1) off.
                ins, outs, moe_ffn_grads, rtol=1e-4, atol=1e-5 * d, error=error,
                terms=2 * (d + f) + k + 4,
                draw=lambda rng, shape: (np.array(ids) if shape == (n, k)
                                         else rng.standard_normal(shape)))


CASES += [
    # Expert 2 is chosen by no token: its gradients are exact zeros.
    moe_grad_case("one unused", [[0, 1], [1, 0], [0, 1], [1, 0], [1, 0], [0, 1]]),
    moe_grad_case("all used", [[2, 1], [1, 0], [0, 2], [2, 0], [1, 2], [0, 1]]),
    moe_grad_case("expert id out of range reports",
                  [[0, 1], [1, 3], [0, 2], [1, 0], [2, 0], [0, 1]], error=5),
    # Rows wider than a chunk of 32 columns: chunks of 32 and 8, expert 0 unused.
    moe_case("two chunks", [[1, 2], [2, 1], [1, 2], [2, 1]], d=40, f=3),
    moe_grad_case("two chunks", [[1, 2], [2, 1], [1, 2], [2, 1]], d=40, f=3),
]


def half_variant(case, dt):
    """`case` with its f32 tensors of rank >= 1 in `dt` (bf16 or f16); 0-d f32
    operands (a sampling temperature, a loss gradient) and results (a loss)
    stay f32, as the ops define them. The reference takes the 16-bit inputs,
    so only the kernel's own rounding counts: 1 ulp of the value plus 1 of
    the output's scale (f32 accumulation and one rounding give half an ulp)."""
    swap = lambda s, t: dt if t in ("f32", "bf16") and len(s) > 0 else t  # noqa: E731
    kept = {ttype(case.inputs[i][0], "f32") for i in case.f32_inputs}
    body = re.sub(r"tensor<[0-9x]*x(f32|bf16)>",
                  lambda m: m[0] if m[0] in kept else m[0][:-len(m[1]) - 1] + dt + ">",
                  case.body)
    return Case(f"{case.name} [{dt}]", body,
                [(s, t if i in case.f32_inputs else swap(s, t))
                 for i, (s, t) in enumerate(case.inputs)],
                [(s, swap(s, t)) for s, t in case.outputs], case.ref, case.rtol, case.atol,
                case.draw, case.error, case.inputs_from, ulps=1.0, terms=case.terms,
                magnitude=case.magnitude)


def cast_case(src, dst, ref=lambda x: [x], **kw):
    return Case(f"cast {src} -> {dst}",
                f"  %0 = tfc.cast %x0 : tensor<10x{src}> -> tensor<10x{dst}>\n"
                f"  return %0 : tensor<10x{dst}>",
                [((10,), src)], [((10,), dst)], ref, rtol=0, atol=0, **kw)


def has_float_tensor(case):
    return any(t in ("f32", "bf16") and len(s) > 0 for s, t in case.inputs + case.outputs)


# Every op that has a float tensor again in bf16 and in f16 (casts apart:
# those are listed below with their pairs of types).
HALF_CASES = [half_variant(c, dt) for dt in ("bf16", "f16") for c in CASES
              if has_float_tensor(c) and not c.name.startswith("cast ") and not c.flags
              and not (dt == "bf16" and "bf16" in c.name)] + [
    cast_case("f32", "f16"), cast_case("f16", "f32"), cast_case("bf16", "f32"),
    cast_case("bf16", "f16"), cast_case("f16", "bf16"),
    cast_case("f16", "i32", lambda x: [np.trunc(x)],
              draw=lambda rng, s: rng.standard_normal(s) * 50),
    cast_case("i32", "f16", draw=lambda rng, s: rng.integers(-3000, 3000, s)),
]


def draw_input(rng, shape, dtype, draw):
    x = draw(rng, shape) if draw else rng.standard_normal(shape)
    if x is None:  # set by the case's inputs_from
        x = np.zeros(shape)
    if dtype == "f32":
        return np.asarray(x, np.float32)
    if dtype == "bf16":
        return bf16_bits(np.asarray(x, np.float32))
    if dtype == "f16":
        return np.asarray(x, np.float16)
    if draw:
        return np.asarray(x).astype(NP_STORAGE[dtype])
    return rng.integers(-1000, 1000, size=shape).astype(NP_STORAGE[dtype])


def encode(x, dtype):
    """A value as the kernel's buffer stores it."""
    if dtype == "bf16":
        return bf16_bits(np.asarray(x, np.float32))
    return np.asarray(x, NP_STORAGE[dtype])


def as_float(x, dtype):
    return bf16_value(x).astype(np.float64) if dtype == "bf16" else x.astype(np.float64)


def the_one_call(out_mlir):
    """The kernel called by @f, per kernel parameter the entry argument number
    it gets, and the (from, to) entry arguments copied before the call (the
    planner copies a KV cache that is not updated in place)."""
    text = open(out_mlir).read()
    entry = text[text.index("func.func @f("):]
    copies = [(int(a), int(b)) for a, b in
              re.findall(r"memref\.copy %arg(\d+), %arg(\d+)", entry)]
    calls = re.findall(r"call @(\w+)\(([^)]*)\)", entry)
    if len(calls) != 1:
        raise RuntimeError(f"expected one kernel call in @f, found {len(calls)}")
    name, args = calls[0]
    numbers = []
    for a in args.split(","):
        m = re.fullmatch(r"\s*%arg(\d+)\s*", a)
        if not m:
            raise RuntimeError(f"kernel argument {a.strip()} is not an entry argument")
        numbers.append(int(m.group(1)))
    return name, numbers, copies


def launch_shape(path, kernel):
    """The launch of |kernel|: a tiled kernel's own (tfc.cuda.launch: grid, block, dynamic
    shared bytes); else a small 1-D grid (3 blocks of 4 threads) that makes a grid-stride
    loop take several items per thread."""
    text = open(path).read()
    decl = re.search(r"func\.func private @" + re.escape(kernel) + r"\(.*", text)
    m = re.search(r"tfc\.cuda\.launch = array<i64: ([^>]*)>", decl.group(0)) if decl else None
    if m:
        return [int(v) for v in m.group(1).split(",")]
    return [3, 1, 1, 4, 1, 1, 0]


DRIVER = """#include "{shim}"
#include "{source}"
#include <cstdio>
#include <vector>
static void read(const char* path, void* data, size_t bytes) {{
  FILE* f = std::fopen(path, "rb");
  if (!f || std::fread(data, 1, bytes, f) != bytes) {{ std::perror(path); std::exit(1); }}
  std::fclose(f);
}}
static void write(const char* path, const void* data, size_t bytes) {{
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(data, 1, bytes, f) != bytes) {{ std::perror(path); std::exit(1); }}
  std::fclose(f);
}}
int main() {{
{buffers}
  tfc_emu::LaunchConfig config;
  config.kernel = "{kernel}";
  config.grid = {{{grid}}};
  config.block = {{{block}}};
  config.dynamic_shared = {shared};
  const std::string fault = tfc_emu::launch(config, [&] {{ {kernel}({args}); }});
  if (!fault.empty()) {{ std::fprintf(stderr, "%s\\n", fault.c_str()); return 1; }}
{writes}
  std::printf("error %u\\n", tfc_error_code);
  return 0;
}}
"""


HOST_FLAGS = ["-std=c++17", "-O1", "-ffp-contract=off"]


def precompiled_header(work, dump):
    """The emulator's shim and the kernel library (the first case's dump/tfc/, the same
    for every kernel of one tfc) as one precompiled header, which every case's driver
    then includes first (`-include`): the library's include guards make each kernel's
    own `#include "tfc/prelude.cuh"` empty, and a host compile takes a third less.
    None when g++ cannot build it (the drivers then compile without)."""
    d = os.path.join(work, "pch")
    header = os.path.join(d, "pch.h")
    if os.path.exists(header + ".gch"):
        return header
    if os.path.exists(d):
        return None  # tried, and failed: no second try
    shutil.copytree(os.path.join(dump, "tfc"), os.path.join(d, "tfc"))
    open(header, "w").write(f'#include "{SHIM}"\n#include "{d}/tfc/prelude.cuh"\n'
                            "#include <cstdio>\n#include <vector>\n")
    r = subprocess.run(["c++", *HOST_FLAGS, "-x", "c++-header", header, "-o", header + ".gch"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        print(f"note: no precompiled header ({r.stderr.strip()[:500]})", flush=True)
        return None
    return header


def run_case(case, tools, work, rng, arch_turn):
    tfc = tools[0]
    d = os.path.join(work, re.sub(r"[^A-Za-z0-9]+", "_", case.name).strip("_"))
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "case.mlir")
    open(src, "w").write(module_text(case))
    dump = os.path.join(d, "dump")
    out_mlir = os.path.join(d, "codegen.mlir")
    # The kernels' source does not depend on the architecture; NVRTC compiles it for
    # sm_80 (the oldest supported, its limits the tightest) every case, and for sm_90
    # every fourth case, which case turning with the seed.
    archs = ("sm_80", "sm_90") if case.index % 4 == arch_turn else ("sm_80",)
    for arch in archs:
        r = subprocess.run([tfc, src, "--target=cuda", f"--cuda-arch={arch}", *case.flags,
                            "--compile-to=codegen", f"--dump-ir={dump}", "-o", out_mlir],
                           capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            return False, f"tfc --cuda-arch={arch} failed: {r.stderr.strip()[:2000]}"
    kernel, params, copies = the_one_call(out_mlir)
    launch = launch_shape(out_mlir, kernel)
    n_in = len(case.inputs)
    buf = lambda p: f"a{p}" if p < n_in else f"o{p - n_in}"  # noqa: E731

    inputs = [draw_input(rng, s, dt, case.draw) for s, dt in case.inputs]
    if case.inputs_from:
        values = [as_float(x, dt) for x, (_, dt) in zip(inputs, case.inputs)]
        inputs = [encode(x, dt) for x, (_, dt) in
                  zip(case.inputs_from(*values), case.inputs)]
    buffers, args, writes = [], [], []
    for i, x in enumerate(inputs):
        path = os.path.join(d, f"in{i}.bin")
        x.tofile(path)
        ctype = C_TYPES[case.inputs[i][1]]
        buffers.append(f"  std::vector<{ctype}> a{i}({max(x.size, 1)});\n"
                       f"  read(\"{path}\", a{i}.data(), {x.nbytes});")
    for j, (shape, dt) in enumerate(case.outputs):
        size = int(np.prod(shape))
        ctype = C_TYPES[dt]
        buffers.append(f"  std::vector<{ctype}> o{j}({size});")
        writes.append(f"  write(\"{os.path.join(d, f'out{j}.bin')}\", o{j}.data(), "
                      f"{size} * sizeof({ctype}));")
    for src_arg, dst_arg in copies:
        buffers.append(f"  {buf(dst_arg)} = {buf(src_arg)};")
    for p in params:
        args.append(f"{buf(p)}.data()")
    driver = os.path.join(d, "driver.cpp")
    open(driver, "w").write(DRIVER.format(
        shim=SHIM, source=os.path.join(dump, kernel + ".cu"),
        buffers="\n".join(buffers), kernel=kernel, args=", ".join(args),
        grid=", ".join(map(str, launch[0:3])), block=", ".join(map(str, launch[3:6])),
        shared=launch[6],
        writes="\n".join(writes)))
    exe = os.path.join(d, "driver")
    pch = precompiled_header(work, dump)
    r = subprocess.run(["c++", *HOST_FLAGS, "-Winvalid-pch", *(["-include", pch] if pch else []),
                        "-o", exe, driver], capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        return False, f"host compile failed: {r.stderr.strip()[:2000]}"
    r = subprocess.run([exe], capture_output=True, text=True, timeout=TIMEOUT, cwd=d)
    if r.returncode != 0:
        return False, f"host run failed ({r.returncode}): {r.stderr.strip()}"

    reported = int(r.stdout.split()[-1])
    if reported != case.error:
        return False, f"{kernel}: reported error code {reported}, expected {case.error}"
    values = [as_float(x, dt) for x, (_, dt) in zip(inputs, case.inputs)]
    wants = case.ref(*values)
    magnitudes = case.magnitude(*values) if case.terms else [None] * len(wants)
    details = []
    ok = True
    for j, ((shape, dt), want, mag) in enumerate(zip(case.outputs, wants, magnitudes)):
        got = np.fromfile(os.path.join(d, f"out{j}.bin"), NP_STORAGE[dt]).reshape(shape)
        want = np.asarray(want, np.float64).reshape(shape)
        if dt == "bf16":
            want = as_float(bf16_bits(want.astype(np.float32)), "bf16")
        if dt == "f16":
            want = want.astype(np.float16).astype(np.float64)
        got = as_float(got, dt)
        nan_ok = np.array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        err = np.abs(got - want)[finite]
        if case.ulps is not None and dt in HALF_EPS:
            scale = np.abs(want[finite]).max() if finite.any() else 0.0
            bound = case.ulps * HALF_EPS[dt] * (np.abs(want[finite]) + scale)
        else:
            bound = case.atol + case.rtol * np.abs(want)
            if mag is not None and dt == "f32":
                mag = np.broadcast_to(np.abs(np.asarray(mag, np.float64)), shape)
                bound = bound + 2 * case.terms * F32_U * mag
            bound = bound[finite]
        bad = int((err > bound).sum()) if err.size else 0
        if not nan_ok or bad:
            ok = False
            # The element furthest past its bound (not the largest error: a large
            # result's error may be well within its bound while a small one's is not).
            ratio = np.full(want.shape, -1.0)
            ratio[finite] = err / np.maximum(bound, np.finfo(np.float64).tiny)
            idx = int(np.argmax(ratio.ravel()))
            details.append(f"out{j}: {bad} elements off, NaNs match: {nan_ok}; "
                           f"worst at flat {idx}: got {got.ravel()[idx]!r} "
                           f"want {want.ravel()[idx]!r} "
                           f"(|err| {ratio.ravel()[idx]:.2g}x its bound)")
        else:
            details.append(f"out{j} max|err| {err.max() if err.size else 0:.1e}")
    return ok, f"{kernel}: " + "; ".join(details)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir")
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("TFC_TEST_SEED", 0)) or
                    int.from_bytes(os.urandom(3), "little"))
    harness.add_selection_args(ap)
    args = ap.parse_args()
    print(f"seed {args.seed} (reproduce with --seed {args.seed})", flush=True)
    tools = harness.find_tools(args.bin_dir, names=("tfc",))
    if tools is None:
        return 1
    work = harness.scratch_dir(args.work_dir, "tfc-cuda-")
    cases = harness.select_cases(ap, args, CASES + HALF_CASES)
    if not cases:
        return 1
    # Each case draws from its own stream (the seed and its index), so that a failure
    # replays with --seed S --only NAME on the same inputs, whatever else runs.
    return harness.run_cases(
        cases, lambda c: run_case(c, tools, work, np.random.default_rng([args.seed, c.index]),
                                  args.seed % 4),
        work, keep=bool(args.work_dir))


if __name__ == "__main__":
    sys.exit(main())

"""Independent float64 NumPy references for tfc's model library.

Written from the model definitions, not from tfc's code:

* GPT-2: Hugging Face `GPT2LMHeadModel` (Conv1D weights [in, out] used as x @ W + b,
  layer norm eps 1e-5, `gelu_new` (tanh approximation), causal attention scaled by
  1/sqrt(head dim), LM head tied to `wte`).
* LLaMA: Hugging Face `LlamaForCausalLM` (RMSNorm `w * x / sqrt(mean(x^2) + eps)`,
  rotate-half RoPE with `inv_freq = theta^(-arange(0, Dh, 2)/Dh)`, grouped-query
  attention via `repeat_kv` (query head h reads kv head h // (H/Hkv)), SwiGLU
  `down(silu(gate(x)) * up(x))`, `torch.nn.Linear` weights [out, in], untied
  `lm_head.weight` unless tied to `model.embed_tokens.weight`).
* encdec: docs/models/encdec.md (pre-norm encoder-decoder of the seed article),
  generalised to any (D, H, F, V); `self_test()` checks it against
  docs/models/encdec_reference.py for the article's sizes.
* Cross-entropy: mean of -log_softmax(logits)[target] over the positions whose target
  is not `ignore_index` (-100); 0 when no position counts (tfc's convention; PyTorch
  would give NaN). The targets are aligned with the logits: unlike HF's
  `labels`, no shift happens here; the caller shifts.
* Greedy generation and the sampling filters (temperature, top-k, top-p) as
  probability distributions (HF's `TemperatureLogitsWarper`, `TopKLogitsWarper`,
  `TopPLogitsWarper`, in that order).

Weights are read with `read_safetensors` (no dependency beyond numpy).
Run `python reference.py` for the self-test.
"""
import json
import math
import os
import struct
import sys

import numpy as np

# ------------------------------------------------------------------ safetensors
_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U8": np.uint8, "BOOL": np.bool_,
}


def read_safetensors(path):
    """path -> (dict name -> np.ndarray (the file's dtype; BF16 widened to float32),
    metadata dict). Format: u64 little-endian header length N, N bytes of JSON
    {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then
    the data; offsets are relative to the end of the header."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds the file size {len(blob)}")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        dtype, shape = info["dtype"], tuple(info["shape"])
        begin, end = info["data_offsets"]
        raw = blob[base + begin:base + end]
        if dtype == "BF16":
            u16 = np.frombuffer(raw, dtype="<u2")
            arr = (u16.astype(np.uint32) << 16).view(np.float32)
        elif dtype in _ST_DTYPES:
            arr = np.frombuffer(raw, dtype=np.dtype(_ST_DTYPES[dtype]).newbyteorder("<"))
        else:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        count = int(np.prod(shape)) if shape else 1
        if arr.size != count:
            raise ValueError(f"{path}: tensor {name}: {arr.size} elements for shape {shape}")
        out[name] = arr.reshape(shape)
    return out, meta


def write_safetensors(path, tensors):
    """Writes a dict name -> array (f32/f64/i32/i64) as safetensors (for tests)."""
    rev = {np.dtype(v): k for k, v in _ST_DTYPES.items()}
    header, offset, chunks = {}, 0, []
    for name in sorted(tensors):
        shape = list(np.shape(tensors[name]))  # ascontiguousarray makes a 0-d array 1-d
        a = np.ascontiguousarray(tensors[name])
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": rev[a.dtype], "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    hj = json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(chunks))


def f64(w, name):
    return np.asarray(w[name], dtype=np.float64)


# ------------------------------------------------------------------ primitives
def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))


def layer_norm(x, w, b, eps):
    """torch.nn.LayerNorm: biased variance, eps inside the sqrt."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    """HF `gelu_new` / torch gelu(approximate='tanh')."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def causal_attention(q, k, v, offset=0):
    """q (B,H,Tq,D), k/v (B,H,Tk,D): key j visible to query i iff j <= i + offset."""
    d = q.shape[-1]
    s = np.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(d)
    Tq, Tk = q.shape[2], k.shape[2]
    visible = np.arange(Tk)[None, :] <= (np.arange(Tq)[:, None] + offset)
    s = np.where(visible, s, -np.inf)
    return np.einsum("bhij,bhjd->bhid", softmax(s), v)


# ------------------------------------------------------------------ GPT-2
def gpt2_forward(w, tokens, n_layer, n_head, eps=1e-5):
    """HF GPT2LMHeadModel.forward(input_ids) logits. tokens (B,T) ints -> (B,T,V)."""
    tokens = np.asarray(tokens)
    B, T = tokens.shape
    wte = f64(w, "wte.weight")
    h = wte[tokens] + f64(w, "wpe.weight")[np.arange(T)][None]
    C = h.shape[-1]
    Dh = C // n_head

    def heads(x):  # (B,T,C) -> (B,H,T,Dh)   HF _split_heads
        return x.reshape(B, T, n_head, Dh).transpose(0, 2, 1, 3)

    for i in range(n_layer):
        p = f"h.{i}."
        a = layer_norm(h, f64(w, p + "ln_1.weight"), f64(w, p + "ln_1.bias"), eps)
        qkv = a @ f64(w, p + "attn.c_attn.weight") + f64(w, p + "attn.c_attn.bias")
        q, k, v = np.split(qkv, 3, axis=-1)                   # HF: .split(C, dim=2)
        y = causal_attention(heads(q), heads(k), heads(v))
        y = y.transpose(0, 2, 1, 3).reshape(B, T, C)          # HF _merge_heads
        h = h + (y @ f64(w, p + "attn.c_proj.weight") + f64(w, p + "attn.c_proj.bias"))
        m = layer_norm(h, f64(w, p + "ln_2.weight"), f64(w, p + "ln_2.bias"), eps)
        u = gelu_tanh(m @ f64(w, p + "mlp.c_fc.weight") + f64(w, p + "mlp.c_fc.bias"))
        h = h + (u @ f64(w, p + "mlp.c_proj.weight") + f64(w, p + "mlp.c_proj.bias"))
    h = layer_norm(h, f64(w, "ln_f.weight"), f64(w, "ln_f.bias"), eps)
    return h @ wte.T                                          # tied lm_head


def gpt2_forward_naive(w, tokens, n_layer, n_head, eps=1e-5):
    """The same model written a second, deliberately different way (per row, per
    token, per head loops; explicit formulas) to cross-check gpt2_forward."""
    tokens = np.asarray(tokens)
    wte = f64(w, "wte.weight")
    wpe = f64(w, "wpe.weight")
    C = wte.shape[1]
    Dh = C // n_head

    def ln(x, g, b):
        n = x.size
        mean = sum(x) / n
        var = sum((xi - mean) ** 2 for xi in x) / n
        return np.array([(xi - mean) / math.sqrt(var + eps) for xi in x]) * g + b

    def gelu(x):
        return np.array([0.5 * t * (1 + math.tanh(math.sqrt(2 / math.pi) *
                                                   (t + 0.044715 * t * t * t))) for t in x])

    out = []
    for row in tokens:
        T = len(row)
        xs = [wte[t] + wpe[i] for i, t in enumerate(row)]
        for L in range(n_layer):
            p = f"h.{L}."
            Wa, ba = f64(w, p + "attn.c_attn.weight"), f64(w, p + "attn.c_attn.bias")
            qs, ks, vs = [], [], []
            for x in xs:
                a = ln(x, f64(w, p + "ln_1.weight"), f64(w, p + "ln_1.bias"))
                qkv = Wa.T.dot(a) + ba
                qs.append(qkv[:C]); ks.append(qkv[C:2 * C]); vs.append(qkv[2 * C:])
            new = []
            for i in range(T):
                y = np.zeros(C)
                for hd in range(n_head):
                    sl = slice(hd * Dh, (hd + 1) * Dh)
                    sc = [qs[i][sl].dot(ks[j][sl]) / math.sqrt(Dh) for j in range(i + 1)]
                    mx = max(sc)
                    e = [math.exp(s - mx) for s in sc]
                    z = sum(e)
                    y[sl] = sum((e[j] / z) * vs[j][sl] for j in range(i + 1))
                x = xs[i] + f64(w, p + "attn.c_proj.weight").T.dot(y) + f64(w, p + "attn.c_proj.bias")
                m = ln(x, f64(w, p + "ln_2.weight"), f64(w, p + "ln_2.bias"))
                u = gelu(f64(w, p + "mlp.c_fc.weight").T.dot(m) + f64(w, p + "mlp.c_fc.bias"))
                new.append(x + f64(w, p + "mlp.c_proj.weight").T.dot(u) + f64(w, p + "mlp.c_proj.bias"))
            xs = new
        out.append([wte.dot(ln(x, f64(w, "ln_f.weight"), f64(w, "ln_f.bias"))) for x in xs])
    return np.array(out)


# ------------------------------------------------------------------ LLaMA
def rms_norm(x, weight, eps):
    """HF LlamaRMSNorm: weight * x / sqrt(mean(x^2) + eps)."""
    return weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rope_cos_sin(positions, head_dim, theta):
    """HF LlamaRotaryEmbedding (default rope): inv_freq[i] = theta^(-2i/Dh),
    emb = cat(freqs, freqs) -> cos, sin of shape (T, Dh)."""
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x (B,H,T,Dh), cos/sin (T,Dh)."""
    return x * cos[None, None] + rotate_half(x) * sin[None, None]


def repeat_kv(x, n_rep):
    """HF repeat_kv: (B,Hkv,T,D) -> (B,Hkv*n_rep,T,D), head h reads kv head h//n_rep."""
    if n_rep == 1:
        return x
    B, Hkv, T, D = x.shape
    return np.broadcast_to(x[:, :, None], (B, Hkv, n_rep, T, D)).reshape(B, Hkv * n_rep, T, D)


def llama_forward(w, tokens, n_layer, n_head, n_kv_head, rms_eps=1e-5,
                  rope_theta=10000.0, tie_embeddings=False):
    """HF LlamaForCausalLM.forward(input_ids) logits. tokens (B,T) -> (B,T,V)."""
    tokens = np.asarray(tokens)
    B, T = tokens.shape
    emb = f64(w, "model.embed_tokens.weight")
    h = emb[tokens]
    D = h.shape[-1]
    Dh = D // n_head
    cos, sin = rope_cos_sin(np.arange(T), Dh, rope_theta)

    def lin(x, name):  # torch.nn.Linear without bias: x @ W^T, W (out, in)
        return x @ f64(w, name).T

    def heads(x, n):
        return x.reshape(B, T, n, Dh).transpose(0, 2, 1, 3)

    for i in range(n_layer):
        p = f"model.layers.{i}."
        a = rms_norm(h, f64(w, p + "input_layernorm.weight"), rms_eps)
        q = heads(lin(a, p + "self_attn.q_proj.weight"), n_head)
        k = heads(lin(a, p + "self_attn.k_proj.weight"), n_kv_head)
        v = heads(lin(a, p + "self_attn.v_proj.weight"), n_kv_head)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = n_head // n_kv_head
        y = causal_attention(q, repeat_kv(k, rep), repeat_kv(v, rep))
        y = y.transpose(0, 2, 1, 3).reshape(B, T, n_head * Dh)
        h = h + lin(y, p + "self_attn.o_proj.weight")
        m = rms_norm(h, f64(w, p + "post_attention_layernorm.weight"), rms_eps)
        g = lin(m, p + "mlp.gate_proj.weight")
        u = lin(m, p + "mlp.up_proj.weight")
        h = h + lin(silu(g) * u, p + "mlp.down_proj.weight")
    h = rms_norm(h, f64(w, "model.norm.weight"), rms_eps)
    head = emb if tie_embeddings else f64(w, "lm_head.weight")
    return h @ head.T


# ------------------------------------------------------------------ encdec
def sinusoidal_positions(T, D):
    """PE[t,2i] = sin(t * 10000^(-2i/D)), PE[t,2i+1] = cos(same)."""
    ang = np.arange(T, dtype=np.float64)[:, None] * \
        10000.0 ** (-2.0 * np.arange(D // 2, dtype=np.float64) / D)[None, :]
    pe = np.zeros((T, D))
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return pe


def _encdec_norm(x, eps=1e-8):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _encdec_attention(w, prefix, x, c, n_head, causal):
    """encdec.md §3.2: per-head P x P projections of the split input (no bias),
    scores / sqrt(P), additive -1e9 causal mask, merge heads, @ wo (no bias)."""
    B, Tq, D = x.shape
    Tk = c.shape[1]
    P = D // n_head
    xh, ch = x.reshape(B, Tq, n_head, P), c.reshape(B, Tk, n_head, P)
    q = np.einsum("bthd,hdp->bhtp", xh, f64(w, prefix + ".wq"))
    k = np.einsum("bthd,hdp->bhtp", ch, f64(w, prefix + ".wk"))
    v = np.einsum("bthd,hdp->bhtp", ch, f64(w, prefix + ".wv"))
    s = np.einsum("bhtp,bhfp->bhtf", q, k) / math.sqrt(P)
    if causal:
        s = s + np.triu(np.full((Tq, Tk), -1e9), k=1)
    z = np.einsum("bhtf,bhfp->bhtp", softmax(s), v).transpose(0, 2, 1, 3).reshape(B, Tq, D)
    return z @ f64(w, prefix + ".wo")


def _encdec_ff(w, prefix, x):
    u = x @ f64(w, prefix + ".w1") + f64(w, prefix + ".b1")
    return np.where(u > 0, u, 0.1 * u) @ f64(w, prefix + ".w2") + f64(w, prefix + ".b2")


def encdec_encode(w, src, n_head):
    table = f64(w, "embed.table")
    r = table[np.asarray(src)] + sinusoidal_positions(src.shape[1], table.shape[1])[None]
    r = r + _encdec_attention(w, "encoder.mha", _encdec_norm(r), _encdec_norm(r), n_head, False)
    return r + _encdec_ff(w, "encoder.ff", _encdec_norm(r))       # no final encoder norm


def encdec_decode(w, tgt_in, z, n_head, final_norm=True):
    table = f64(w, "embed.table")
    r = table[np.asarray(tgt_in)] + sinusoidal_positions(tgt_in.shape[1], table.shape[1])[None]
    n = _encdec_norm(r)
    r = r + _encdec_attention(w, "decoder.mha", n, n, n_head, True)
    r = r + _encdec_attention(w, "decoder.mhca", _encdec_norm(r), z, n_head, False)
    r = r + _encdec_ff(w, "decoder.ff", _encdec_norm(r))
    h = _encdec_norm(r) if final_norm else r                       # Norm6
    return h @ f64(w, "output.w") + f64(w, "output.b")


def encdec_forward(w, src, tgt_in, n_head=4):
    """encdec.md §4: src (B,S), tgt_in (B,T) (starting with Start) -> logits (B,T,V).
    The embedding table is read from the weights (`embed.table`)."""
    src, tgt_in = np.asarray(src), np.asarray(tgt_in)
    return encdec_decode(w, tgt_in, encdec_encode(w, src, n_head), n_head)


def encdec_greedy(w, src, steps, start=10, n_head=4):
    """encdec.md §5 with Norm6 applied (the recommended graph): full prefix re-run."""
    z = encdec_encode(w, np.asarray(src), n_head)
    seq = np.full((src.shape[0], 1), start, dtype=np.int64)
    for _ in range(steps):
        nxt = np.argmax(encdec_decode(w, seq, z, n_head)[:, -1], axis=-1)
        seq = np.concatenate([seq, nxt[:, None]], axis=1)
    return seq


# ------------------------------------------------------------------ loss
def cross_entropy(logits, targets, ignore_index=-100):
    """Mean over positions with target != ignore_index of -log_softmax[target];
    0.0 when none counts. logits (..., V), targets (...) ints."""
    logits = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    lp = log_softmax(logits).reshape(-1, logits.shape[-1])
    t = targets.reshape(-1)
    keep = t != ignore_index
    if not keep.any():
        return 0.0
    if (t[keep] < 0).any() or (t[keep] >= logits.shape[-1]).any():
        raise ValueError("target out of [0, V)")
    return float(-lp[np.nonzero(keep)[0], t[keep]].mean())


# ------------------------------------------------------------------ generation / sampling
def greedy_generate(forward_fn, prompt, n_new):
    """Greedy continuation of a causal LM without a KV cache: each step re-runs
    forward_fn(tokens (B,T)) -> logits (B,T,V) on the whole prefix and appends the
    argmax of the last position. Returns (B, n_new) new tokens."""
    seq = np.asarray(prompt)
    new = []
    for _ in range(n_new):
        nxt = np.argmax(forward_fn(seq)[:, -1], axis=-1)
        new.append(nxt)
        seq = np.concatenate([seq, nxt[:, None].astype(seq.dtype)], axis=1)
    return np.stack(new, axis=1)


def sampling_distribution(logits, temperature=1.0, top_k=0, top_p=1.0):
    """The distribution `sample` draws from, per row: logits (B,V) -> probs (B,V).
    temperature <= 0: greedy (one-hot argmax, first index on ties).
    Otherwise logits / temperature, then top-k (k > 0: drop logits below the k-th
    largest; ties at the k-th value stay, as HF's TopKLogitsWarper), then top-p
    (p < 1: keep the smallest prefix of the descending order whose mass reaches p,
    i.e. token i stays iff the mass strictly before it is < p; at least one stays;
    HF's TopPLogitsWarper), then renormalise."""
    logits = np.asarray(logits, dtype=np.float64)
    B, V = logits.shape
    if temperature <= 0:
        out = np.zeros((B, V))
        out[np.arange(B), np.argmax(logits, axis=-1)] = 1.0
        return out
    x = logits / temperature
    if top_k > 0 and top_k < V:
        kth = np.sort(x, axis=-1)[:, V - top_k][:, None]
        x = np.where(x < kth, -np.inf, x)
    p = softmax(x)
    if top_p < 1.0:
        order = np.argsort(-p, axis=-1, kind="stable")
        ps = np.take_along_axis(p, order, axis=-1)
        before = np.cumsum(ps, axis=-1) - ps
        keep_sorted = before < top_p
        keep_sorted[:, 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        p = np.where(keep, p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)
    return p


# ------------------------------------------------------------------ relative error
def rel_err(got, ref):
    """max|got - ref| / max|ref| (ref's scale; 1 when ref is all zeros)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    return float(np.max(np.abs(got - ref))) / (scale if scale > 0 else 1.0)


# ------------------------------------------------------------------ self-test
def _random_gpt2(rng, n_layer, n_head, C, V, n_ctx):
    w = {"wte.weight": rng.normal(0, 0.5, (V, C)), "wpe.weight": rng.normal(0, 0.5, (n_ctx, C)),
         "ln_f.weight": rng.normal(1, 0.2, C), "ln_f.bias": rng.normal(0, 0.2, C)}
    for i in range(n_layer):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = rng.normal(1, 0.2, C)
            w[p + ln + ".bias"] = rng.normal(0, 0.2, C)
        for name, shape in (("attn.c_attn", (C, 3 * C)), ("attn.c_proj", (C, C)),
                            ("mlp.c_fc", (C, 4 * C)), ("mlp.c_proj", (4 * C, C))):
            w[p + name + ".weight"] = rng.normal(0, 0.3, shape)
            w[p + name + ".bias"] = rng.normal(0, 0.2, shape[1])
    return w


def _llama_rotary_naive(x, positions, theta):
    """Rotate-half RoPE per pair (j, j + Dh/2), written with explicit angles."""
    out = np.empty_like(x)
    Dh = x.shape[-1]
    half = Dh // 2
    for ti, t in enumerate(positions):
        for j in range(half):
            ang = t * theta ** (-2.0 * j / Dh)
            c, s = math.cos(ang), math.sin(ang)
            a, b = x[..., ti, j], x[..., ti, j + half]
            out[..., ti, j] = a * c - b * s
            out[..., ti, j + half] = b * c + a * s
    return out


def self_test():
    rng = np.random.default_rng(1234)
    ok = True

    def report(name, err, tol):
        nonlocal ok
        good = err <= tol
        ok &= good
        print(f"  {name}: max rel diff {err:.3e} (tol {tol:g}) {'ok' if good else 'FAIL'}")

    # GPT-2: vectorised vs loop-per-token implementation.
    w = _random_gpt2(rng, 2, 4, 16, 23, 12)
    toks = rng.integers(0, 23, (2, 7))
    report("gpt2 vectorised vs naive", rel_err(gpt2_forward(w, toks, 2, 4),
                                               gpt2_forward_naive(w, toks, 2, 4)), 1e-12)
    # causality: logits at t do not depend on tokens after t
    t2 = toks.copy(); t2[:, 5:] = (t2[:, 5:] + 1) % 23
    report("gpt2 causal", rel_err(gpt2_forward(w, t2, 2, 4)[:, :5],
                                  gpt2_forward(w, toks, 2, 4)[:, :5]), 0)

    # LLaMA pieces: RoPE vs per-pair rotation, repeat_kv vs explicit head mapping.
    x = rng.normal(size=(2, 3, 5, 8))
    cos, sin = rope_cos_sin(np.arange(5), 8, 500.0)
    report("rope rotate-half vs per-pair", rel_err(apply_rope(x, cos, sin),
                                                   _llama_rotary_naive(x, range(5), 500.0)), 1e-13)
    kv = rng.normal(size=(2, 2, 5, 8))
    rep = repeat_kv(kv, 3)
    report("repeat_kv head h -> h//3", rel_err(rep, np.stack([kv[:, h // 3] for h in range(6)], 1)), 0)
    # RoPE makes attention scores depend on relative positions only.
    q, k = rng.normal(size=8), rng.normal(size=8)

    def score(tq, tk):
        cq, sq = rope_cos_sin([tq], 8, 10000.0)
        ck, sk = rope_cos_sin([tk], 8, 10000.0)
        return (apply_rope(q[None, None, None], cq, sq) * apply_rope(k[None, None, None], ck, sk)).sum()
    report("rope relative", abs(score(7, 3) - score(14, 10)) / abs(score(7, 3)), 1e-12)

    # LLaMA with n_kv_head == n_head and tied embeddings == a GPT-2-like loop check:
    # compare against an explicit per-token implementation.
    D, H, Hkv, F, V, L = 16, 4, 2, 24, 19, 2
    lw = {"model.embed_tokens.weight": rng.normal(0, 0.5, (V, D)),
          "model.norm.weight": rng.normal(1, 0.2, D), "lm_head.weight": rng.normal(0, 0.5, (V, D))}
    for i in range(L):
        p = f"model.layers.{i}."
        lw[p + "input_layernorm.weight"] = rng.normal(1, 0.2, D)
        lw[p + "post_attention_layernorm.weight"] = rng.normal(1, 0.2, D)
        for n, shape in (("self_attn.q_proj", (D, D)), ("self_attn.k_proj", (Hkv * D // H, D)),
                         ("self_attn.v_proj", (Hkv * D // H, D)), ("self_attn.o_proj", (D, D)),
                         ("mlp.gate_proj", (F, D)), ("mlp.up_proj", (F, D)), ("mlp.down_proj", (D, F))):
            lw[p + n + ".weight"] = rng.normal(0, 0.4, shape)
    toks = rng.integers(0, V, (2, 6))
    got = llama_forward(lw, toks, L, H, Hkv, 1e-5, 10000.0)
    report("llama vs naive", rel_err(got, _llama_naive(lw, toks, L, H, Hkv, 1e-5, 10000.0)), 1e-12)
    tied = llama_forward(lw, toks, L, H, Hkv, tie_embeddings=True)
    lw_tied = dict(lw, **{"lm_head.weight": lw["model.embed_tokens.weight"]})
    report("llama tied == lm_head := embed_tokens",
           rel_err(tied, llama_forward(lw_tied, toks, L, H, Hkv)), 0)

    # encdec vs docs/models/encdec_reference.py (article sizes, its init and table).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "..", "docs", "models"))
    try:
        import encdec_reference as er
    except ImportError as e:
        print(f"  encdec: cannot import docs/models/encdec_reference.py ({e}) FAIL")
        ok = False
    else:
        ew = dict(er.init_params(3))
        ew["embed.table"] = er.EMBED
        src = rng.integers(0, 10, (5, 16))
        tgt = rng.integers(0, 10, (5, 16))
        mine = encdec_forward(ew, src, er.add_start_token(tgt), 4)
        theirs = er.forward(ew, src, tgt)
        report("encdec vs encdec_reference.forward", rel_err(mine, theirs), 1e-12)
        lm = cross_entropy(mine, er.add_finish_token(tgt))
        lt = er.sparse_cross_entropy(theirs, er.add_finish_token(tgt), eps=0.0)
        report("cross_entropy vs encdec_reference (eps=0)", abs(lm - lt) / abs(lt), 1e-12)
        g_mine = encdec_greedy(ew, src, 16)
        g_theirs = er.generate(ew, src)
        report("encdec greedy vs encdec_reference.generate", float((g_mine != g_theirs).sum()), 0)

    # cross_entropy: ignore_index and the all-ignored case.
    lg = rng.normal(size=(2, 3, 5))
    tg = np.array([[1, -100, 4], [0, 2, -100]])
    manual = -np.mean([np.log(softmax(lg[0, 0])[1]), np.log(softmax(lg[0, 2])[4]),
                       np.log(softmax(lg[1, 0])[0]), np.log(softmax(lg[1, 1])[2])])
    report("cross_entropy ignore_index", abs(cross_entropy(lg, tg) - manual) / manual, 1e-14)
    report("cross_entropy all ignored -> 0", abs(cross_entropy(lg, np.full((2, 3), -100))), 0)

    # sampling filters.
    lo = np.log(np.array([[0.5, 0.2, 0.15, 0.1, 0.05]]))
    d = sampling_distribution(lo, 1.0, 0, 0.65)      # 0.5 + 0.2 reaches 0.65 -> {0,1}
    report("top_p=0.65 support {0,1}", rel_err(d, [[0.5 / 0.7, 0.2 / 0.7, 0, 0, 0]]), 1e-14)
    d = sampling_distribution(lo, 1.0, 3, 1.0)
    report("top_k=3", rel_err(d, [[0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0, 0]]), 1e-14)
    d = sampling_distribution(lo, 0.0, 0, 1.0)
    report("temperature 0 greedy", rel_err(d, [[1, 0, 0, 0, 0]]), 0)
    d = sampling_distribution(lo, 2.0, 0, 1.0)
    report("temperature 2", rel_err(d, [np.sqrt([0.5, 0.2, 0.15, 0.1, 0.05]) /
                                        np.sqrt([0.5, 0.2, 0.15, 0.1, 0.05]).sum()]), 1e-14)
    d = sampling_distribution(lo, 1.0, 0, 0.01)
    report("top_p tiny keeps the argmax", rel_err(d, [[1, 0, 0, 0, 0]]), 0)

    # safetensors round trip, including BF16 decoding.
    import tempfile
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "t.safetensors")
        t = {"a": rng.normal(size=(3, 4)).astype(np.float32), "b": np.arange(5, dtype=np.int32)}
        write_safetensors(path, t)
        back, _ = read_safetensors(path)
        report("safetensors round trip", float(any((back[k] != t[k]).any() for k in t)), 0)
        bf = np.array([1.0, -2.5, 3.140625], dtype=np.float32)
        raw = (bf.view(np.uint32) >> 16).astype("<u2").tobytes()
        hj = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(hj)) + hj + raw)
        back, _ = read_safetensors(path)
        report("safetensors bf16", float((back["x"] != bf).any()), 0)

    # greedy_generate vs. a hand loop on the GPT-2 reference.
    fw = lambda s: gpt2_forward(w, s, 2, 4)
    gen = greedy_generate(fw, toks[:, :3] % 23, 4)
    seq = toks[:, :3] % 23
    for _ in range(4):
        seq = np.concatenate([seq, np.argmax(gpt2_forward_naive(w, seq, 2, 4)[:, -1], -1)[:, None]], 1)
    report("greedy_generate vs naive loop", float((gen != seq[:, 3:]).sum()), 0)
    print("self-test", "passed" if ok else "FAILED")
    return ok


def _llama_naive(w, tokens, n_layer, n_head, n_kv_head, eps, theta):
    """Per-token, per-head LLaMA with explicit rotation angles and explicit GQA."""
    emb = f64(w, "model.embed_tokens.weight")
    D = emb.shape[1]
    Dh = D // n_head
    group = n_head // n_kv_head

    def rms(x, g):
        return g * x / math.sqrt(sum(t * t for t in x) / len(x) + eps)

    def rot(v, t):
        out = np.empty_like(v)
        half = Dh // 2
        for j in range(half):
            ang = t * theta ** (-2.0 * j / Dh)
            out[j] = v[j] * math.cos(ang) - v[j + half] * math.sin(ang)
            out[j + half] = v[j + half] * math.cos(ang) + v[j] * math.sin(ang)
        return out

    res = []
    for row in tokens:
        xs = [emb[t].copy() for t in row]
        for L in range(n_layer):
            p = f"model.layers.{L}."
            Wq, Wk, Wv, Wo = (f64(w, p + f"self_attn.{n}_proj.weight") for n in "qkvo")
            qs, ks, vs = [], [], []
            for t, x in enumerate(xs):
                a = rms(x, f64(w, p + "input_layernorm.weight"))
                q, k, v = Wq.dot(a), Wk.dot(a), Wv.dot(a)
                qs.append([rot(q[h * Dh:(h + 1) * Dh], t) for h in range(n_head)])
                ks.append([rot(k[h * Dh:(h + 1) * Dh], t) for h in range(n_kv_head)])
                vs.append([v[h * Dh:(h + 1) * Dh] for h in range(n_kv_head)])
            new = []
            for i, x in enumerate(xs):
                y = []
                for h in range(n_head):
                    kvh = h // group
                    sc = np.array([qs[i][h].dot(ks[j][kvh]) / math.sqrt(Dh) for j in range(i + 1)])
                    e = np.exp(sc - sc.max())
                    y.append(sum(e[j] / e.sum() * vs[j][kvh] for j in range(i + 1)))
                x = x + Wo.dot(np.concatenate(y))
                m = rms(x, f64(w, p + "post_attention_layernorm.weight"))
                g = f64(w, p + "mlp.gate_proj.weight").dot(m)
                u = f64(w, p + "mlp.up_proj.weight").dot(m)
                new.append(x + f64(w, p + "mlp.down_proj.weight").dot(g / (1 + np.exp(-g)) * u))
            xs = new
        res.append([f64(w, "lm_head.weight").dot(rms(x, f64(w, "model.norm.weight"))) for x in xs])
    return np.array(res)


if __name__ == "__main__":
    sys.exit(0 if self_test() else 1)

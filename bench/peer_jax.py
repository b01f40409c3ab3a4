#!/usr/bin/env python3
"""JAX (jit, XLA CPU) peer for tfc's GPT-2 benchmarks (bench/run_bench.py --jax).

GPT-2 written directly in JAX, the same math as peer_torch.py and Hugging Face's
GPT2LMHeadModel (Conv1D layouts, tanh GELU, tied LM head), on the same .safetensors
weights tfc uses. Every measured function is one jax.jit; the first call (compilation)
is excluded from the timings. Prints one JSON line with the measurement.

  peer_jax.py forward --weights W --batch 4 --seq 64 --repeat 10
  peer_jax.py decode  --weights W --prompt 128 --new 64
  peer_jax.py train   --weights W --batch 4 --seq 64 --repeat 5
  peer_jax.py logits  --weights W --tokens T.npy --out L.npy   (the check: forward's logits)

train is one jitted step: loss, gradients, clipping to global norm 1.0 and AdamW
(lr 1e-4, weight decay 0.1 on matrices, betas 0.9 / 0.95, eps 1e-8), with the parameters
and moments donated (updated in place). decode keeps a KV cache of n_ctx positions per
layer, as static shapes require in XLA: each token's attention runs over all n_ctx
positions with the ones past the current masked, so it reads the whole cache (~15% more
bytes than the weights alone at gpt2-124m; tfc and PyTorch read only the filled part).
Threads: XLA's CPU client uses every core (2 here); it does not spin between calls.
"""
import argparse
import json
import resource
import time

import numpy as np

from f32_weights import load_safetensors  # bench/, next to this script


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["forward", "decode", "train", "logits"])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2, help="recorded only (see above)")
    ap.add_argument("--tokens", help="logits: the int32 token ids [B, T] (.npy)")
    ap.add_argument("--out", help="logits: where to write the logits (.npy)")
    a = ap.parse_args()

    import jax
    import jax.numpy as jnp

    params = {k: jnp.asarray(v) for k, v in load_safetensors(a.weights, "peer_jax").items()}
    n_layer = sum(1 for k in params if k.endswith(".ln_1.weight"))
    H = a.n_head
    vocab, C = params["wte.weight"].shape
    n_ctx = params["wpe.weight"].shape[0]

    def layer_norm(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * w + b

    def gelu(x):  # tanh approximation, as GPT-2
        return 0.5 * x * (1 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))

    def attention(q, k, v, mask):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
        s = jnp.where(mask, s, -jnp.inf)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    def block(p, i, x, kv=None, pos=0):
        """One layer; kv = (k_cache, v_cache) [B, H, n_ctx, D] to write at pos and read."""
        h = f"h.{i}"
        B, T, _ = x.shape
        a_ = layer_norm(x, p[h + ".ln_1.weight"], p[h + ".ln_1.bias"])
        qkv = a_ @ p[h + ".attn.c_attn.weight"] + p[h + ".attn.c_attn.bias"]
        q, k, v = jnp.transpose(qkv.reshape(B, T, 3, H, C // H), (2, 0, 3, 1, 4))
        if kv is None:
            mask = jnp.tril(jnp.ones((T, T), bool))
        else:
            kc = jax.lax.dynamic_update_slice(kv[0], k, (0, 0, pos, 0))
            vc = jax.lax.dynamic_update_slice(kv[1], v, (0, 0, pos, 0))
            k, v, kv = kc, vc, (kc, vc)
            mask = jnp.arange(n_ctx)[None, :] <= (pos + jnp.arange(T))[:, None]
        y = jnp.transpose(attention(q, k, v, mask), (0, 2, 1, 3)).reshape(B, T, C)
        x = x + y @ p[h + ".attn.c_proj.weight"] + p[h + ".attn.c_proj.bias"]
        m = layer_norm(x, p[h + ".ln_2.weight"], p[h + ".ln_2.bias"])
        m = gelu(m @ p[h + ".mlp.c_fc.weight"] + p[h + ".mlp.c_fc.bias"])
        return x + m @ p[h + ".mlp.c_proj.weight"] + p[h + ".mlp.c_proj.bias"], kv

    def forward(p, tokens):
        x = p["wte.weight"][tokens] + p["wpe.weight"][: tokens.shape[1]]
        for i in range(n_layer):
            x, _ = block(p, i, x)
        x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
        return jnp.einsum("btc,vc->btv", x, p["wte.weight"])

    def median(xs):
        return sorted(xs)[len(xs) // 2]

    def timed(fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        jax.block_until_ready(out)
        return out, (time.perf_counter() - t) * 1e3

    result = {"peer": f"jax {jax.__version__} jit", "threads": a.threads,
              "device": jax.devices()[0].platform}
    rng = np.random.default_rng(0)
    if a.what == "logits":
        logits = jax.jit(forward)(params, jnp.asarray(np.load(a.tokens)))
        np.save(a.out, np.asarray(logits))
        result.update(logits=a.out)
    elif a.what == "forward":
        tokens = jnp.asarray(rng.integers(0, vocab, (a.batch, a.seq), dtype=np.int32))
        fwd = jax.jit(forward)
        timed(fwd, params, tokens)  # compilation
        ms = [timed(fwd, params, tokens)[1] for _ in range(a.repeat)]
        result.update(ms=median(ms), min_ms=min(ms))
    elif a.what == "decode":
        def step(p, caches, tokens, pos):
            x = p["wte.weight"][tokens] + jax.lax.dynamic_slice_in_dim(
                p["wpe.weight"], pos, tokens.shape[1])
            new = []
            for i in range(n_layer):
                x, kv = block(p, i, x, caches[i], pos)
                new.append(kv)
            x = layer_norm(x[:, -1:], p["ln_f.weight"], p["ln_f.bias"])
            return jnp.argmax(jnp.einsum("btc,vc->btv", x, p["wte.weight"]), -1).astype(jnp.int32), new

        step = jax.jit(step, donate_argnums=(1,))
        empty = lambda: [(jnp.zeros((1, H, n_ctx, C // H)), jnp.zeros((1, H, n_ctx, C // H)))
                         for _ in range(n_layer)]
        prompt = jnp.asarray(rng.integers(0, vocab, (1, a.prompt), dtype=np.int32))
        # Compile both shapes (prompt, one token) before timing.
        tok, caches = step(params, empty(), prompt, 0)
        tok, caches = step(params, caches, tok, a.prompt)
        jax.block_until_ready(tok)
        (tok, caches), prefill_ms = timed(step, params, empty(), prompt, 0)
        t = time.perf_counter()
        for i in range(a.new):
            tok, caches = step(params, caches, tok, a.prompt + i)
        jax.block_until_ready(tok)
        decode_s = time.perf_counter() - t
        result.update(prefill_tok_s=a.prompt / (prefill_ms / 1e3), decode_tok_s=a.new / decode_s)
    else:
        tokens = rng.integers(0, vocab, (a.batch, a.seq + 1), dtype=np.int32)
        x, y = jnp.asarray(tokens[:, :-1]), jnp.asarray(tokens[:, 1:])

        def loss_fn(p):
            logits = forward(p, x)
            logp = jax.nn.log_softmax(logits, axis=-1)
            return -jnp.take_along_axis(logp, y[..., None], -1).mean()

        lr, wd, b1, b2, eps = 1e-4, 0.1, 0.9, 0.95, 1e-8

        def train_step(p, m, v, t):
            loss, g = jax.value_and_grad(loss_fn)(p)
            norm = jnp.sqrt(sum(jnp.sum(gi * gi) for gi in g.values()))
            scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
            new_p, new_m, new_v = {}, {}, {}
            for k in p:
                gk = g[k] * scale
                new_m[k] = b1 * m[k] + (1 - b1) * gk
                new_v[k] = b2 * v[k] + (1 - b2) * gk * gk
                mh = new_m[k] / (1 - b1 ** t)
                vh = new_v[k] / (1 - b2 ** t)
                decay = wd if p[k].ndim >= 2 else 0.0
                new_p[k] = p[k] - lr * (mh / (jnp.sqrt(vh) + eps) + decay * p[k])
            return loss, new_p, new_m, new_v

        step = jax.jit(train_step, donate_argnums=(0, 1, 2))
        p = dict(params)
        m = {k: jnp.zeros_like(w) for k, w in p.items()}
        v = {k: jnp.zeros_like(w) for k, w in p.items()}
        ms = []
        for r in range(a.repeat + 1):
            (loss, p, m, v), dt = timed(step, p, m, v, jnp.float32(r + 1))
            if r > 0:  # the first call compiles
                ms.append(dt)
        result.update(ms=median(ms), min_ms=min(ms), loss=float(loss),
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

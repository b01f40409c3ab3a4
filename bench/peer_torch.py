#!/usr/bin/env python3
"""PyTorch eager peer for tfc's GPT-2 benchmarks (bench/run_bench.py).

GPT-2 written directly in PyTorch (the same math as Hugging Face's
GPT2LMHeadModel: Conv1D layouts, tanh GELU, tied LM head), loading the same
.safetensors weights tfc uses, so both run the same model on the same
numbers. Attention uses F.scaled_dot_product_attention (fused where PyTorch
has it). Prints one JSON line with the measurement.

  peer_torch.py forward  --weights W --batch 4 --seq 64 --repeat 10
  peer_torch.py decode   --weights W --prompt 128 --new 64
  peer_torch.py train    --weights W --batch 4 --seq 64 --repeat 5

On a GPU (scripts/gpu-check.sh): --device cuda, with --compile for
torch.compile (inductor; forward and train) and --bf16 for autocast to bfloat16
(the weights stay f32, as mixed-precision training keeps them).
"""
import argparse
import contextlib
import json
import resource
import time

import numpy as np
import torch
import torch.nn.functional as F

from f32_weights import load_safetensors  # bench/, next to this script


class GPT2(torch.nn.Module):
    def __init__(self, weights, n_head):
        super().__init__()
        self.p = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(v) for k, v in weights.items()})
        self.n_layer = sum(1 for k in weights if k.endswith(".ln_1.weight"))
        self.n_head = n_head

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def block(self, i, x, cache=None, pos=0):
        h = f"h.{i}"
        B, T, C = x.shape
        a = F.layer_norm(x, (C,), self.w(h + ".ln_1.weight"), self.w(h + ".ln_1.bias"), 1e-5)
        qkv = torch.addmm(self.w(h + ".attn.c_attn.bias"), a.view(-1, C),
                          self.w(h + ".attn.c_attn.weight")).view(B, T, 3, self.n_head, -1)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        if cache is not None:
            kc, vc = cache[i]
            kc[:, :, pos:pos + T] = k
            vc[:, :, pos:pos + T] = v
            k, v = kc[:, :, :pos + T], vc[:, :, :pos + T]
            causal = T > 1
        else:
            causal = True
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        y = y.transpose(1, 2).reshape(B * T, C)
        x = x + torch.addmm(self.w(h + ".attn.c_proj.bias"), y,
                            self.w(h + ".attn.c_proj.weight")).view(B, T, C)
        m = F.layer_norm(x, (C,), self.w(h + ".ln_2.weight"), self.w(h + ".ln_2.bias"), 1e-5)
        m = F.gelu(torch.addmm(self.w(h + ".mlp.c_fc.bias"), m.view(B * T, C),
                               self.w(h + ".mlp.c_fc.weight")), approximate="tanh")
        return x + torch.addmm(self.w(h + ".mlp.c_proj.bias"), m,
                               self.w(h + ".mlp.c_proj.weight")).view(B, T, C)

    def forward(self, tokens, cache=None, pos=0, last_only=False):
        B, T = tokens.shape
        x = self.w("wte.weight")[tokens] + self.w("wpe.weight")[pos:pos + T]
        for i in range(self.n_layer):
            x = self.block(i, x, cache, pos)
        if last_only:
            x = x[:, -1:]
        x = F.layer_norm(x, (x.shape[-1],), self.w("ln_f.weight"), self.w("ln_f.bias"), 1e-5)
        return x @ self.w("wte.weight").t()


def median(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["forward", "decode", "train"])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--bf16", action="store_true", help="autocast to bfloat16")
    ap.add_argument("--tf32", action="store_true",
                    help="allow TF32 in f32 products and convolutions (CUDA)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    model = GPT2({k: torch.from_numpy(v.copy()) for k, v in
                 load_safetensors(a.weights, "peer_torch").items()}, a.n_head).to(dev)
    step = torch.compile(model) if a.compile else model
    vocab = model.w("wte.weight").shape[0]
    g = torch.Generator().manual_seed(0)
    mode = "torch.compile" if a.compile else "eager"
    result = {"peer": f"pytorch {torch.__version__} {mode}" + (" bf16" if a.bf16 else "")
              + (" tf32" if a.tf32 else ""),
              "threads": a.threads, "device": a.device}
    cast = (torch.autocast(dev.type, dtype=torch.bfloat16) if a.bf16
            else contextlib.nullcontext())

    def now():
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter()
    if a.what == "forward":
        tokens = torch.randint(0, vocab, (a.batch, a.seq), generator=g).to(dev)
        with torch.no_grad(), cast:
            step(tokens)  # warm-up (and compilation)
            ms = []
            for _ in range(a.repeat):
                t = now()
                step(tokens)
                ms.append((now() - t) * 1e3)
        result.update(ms=median(ms), min_ms=min(ms))
    elif a.what == "decode":
        C = model.w("wte.weight").shape[1]
        n_ctx = model.w("wpe.weight").shape[0]
        cache = [(torch.zeros(1, a.n_head, n_ctx, C // a.n_head, device=dev),
                  torch.zeros(1, a.n_head, n_ctx, C // a.n_head, device=dev))
                 for _ in range(model.n_layer)]
        prompt = torch.randint(0, vocab, (1, a.prompt), generator=g).to(dev)
        with torch.no_grad(), cast:
            # warm-up, as the other peers (llama.cpp evaluates 8 tokens; tfc-run generate
            # --warmup 1): the timed prefill rewrites the same cache positions
            model(prompt, cache, 0, last_only=True)
            t = now()
            logits = model(prompt, cache, 0, last_only=True)
            prefill = now() - t
            tok = logits[:, -1].argmax(-1, keepdim=True)
            t = now()
            for i in range(a.new):
                logits = model(tok, cache, a.prompt + i, last_only=True)
                tok = logits[:, -1].argmax(-1, keepdim=True)
            decode = now() - t
        result.update(prefill_tok_s=a.prompt / prefill, decode_tok_s=a.new / decode)
    else:
        tokens = torch.randint(0, vocab, (a.batch, a.seq + 1), generator=g).to(dev)
        x, y = tokens[:, :-1], tokens[:, 1:]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
        ms = []
        for r in range(a.repeat + 1):
            t = now()
            with cast:
                loss = F.cross_entropy(step(x).reshape(-1, vocab).float(), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if r > 0:
                ms.append((now() - t) * 1e3)
        result.update(ms=median(ms), min_ms=min(ms),
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        if dev.type == "cuda":  # the peak of PyTorch's allocator over the steps
            result.update(device_mb=torch.cuda.max_memory_allocated(dev) / 2**20)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

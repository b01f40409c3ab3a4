#!/usr/bin/env python3
"""Hugging Face models as people bring them, against `transformers` itself.

For each case a small random model of a supported architecture is built with
`transformers` (weights from a fresh seed, printed; --seed S reproduces) and
saved with `save_pretrained` (f32 or bf16, in one file or sharded through
model.safetensors.index.json). Then, with nothing but the saved directory:

    tfc-trace --hf DIR --set batch=2 --set seq=16 -o model.mlir
    tfc model.mlir -o model.so
    tfc-run model.so call forward --weights DIR --in tokens=tokens.npy
    tfc-run model.so generate --weights DIR --prompt-tokens ... --max-new-tokens 32

and checks:
  - forward: logits within 1e-4 of the largest |logit| of transformers' own
    forward (in f32, on the checkpoint's values: a bf16 checkpoint is read by
    both as the same f32 numbers);
  - greedy generation: the same 32 tokens as transformers' generate(); at a
    step where the two differ, transformers' own logits must show a near tie
    there (the two best within 1e-5 of the largest |logit|), else it fails.

Cases cover GPT2LMHeadModel, LlamaForCausalLM (grouped-query attention,
llama3 rope scaling, tied embeddings, attention and MLP biases, a head_dim
that is not hidden / heads), MistralForCausalLM (with a sliding window the
context never reaches) and Qwen2ForCausalLM (q/k/v biases, linear rope
scaling).

MixtralForCausalLM (2 layers, 4 experts, top-2, sharded) is checked further:
  - the unweighted load-balancing loss (`tfc-run call router_aux_loss`)
    against transformers' `aux_loss` (output_router_logits=True, no attention
    mask) within 1e-5 relative;
  - `tfc --optimizer=adamw`'s loss_grad: the loss (cross-entropy on the
    shifted tokens + router_aux_loss_coef * aux) against transformers' loss
    with labels within 1e-5 relative, and every parameter's gradient against
    torch autograd within 1e-4 of its largest element (transformers' fused
    experts.gate_up_proj / down_proj split into the checkpoint's w1, w3, w2).
    Routing is piecewise constant: the smallest gap between a token's k-th
    and (k+1)-th router probability is printed, and the gradients are not
    compared when it is under 1e-5 (a near tie, where either side may route
    differently).

Two cases compile with `tfc --precision=bf16` (parameters, KV cache and
compute in bf16) and compare with transformers running the same checkpoint in
bf16: logits within 3e-2 of the largest |logit|, and ties up to 3e-2.

    check_hf_models.py --bin-dir build/bin [--seed S] [--work-dir DIR] [--keep]
"""
import argparse
import os
import random
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import harness  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402

BATCH, SEQ, PROMPT, NEW_TOKENS = 2, 16, 8, 32


@dataclass
class Case:
    name: str
    config: object
    dtype: torch.dtype = torch.float32
    shard: str = ""  # max_shard_size for save_pretrained ("" = one file)
    precision: str = "f32"  # tfc --precision; bf16 compares with transformers in bf16


def cases():
    t = transformers
    common = dict(vocab_size=256, max_position_embeddings=64,
                  num_hidden_layers=2, hidden_size=64, intermediate_size=96,
                  num_attention_heads=4, initializer_range=0.1)
    return [
        Case("gpt2", t.GPT2Config(vocab_size=256, n_positions=64, n_embd=64,
                                  n_layer=2, n_head=4, initializer_range=0.1,
                                  resid_pdrop=0, embd_pdrop=0, attn_pdrop=0,
                                  bos_token_id=0, eos_token_id=0)),
        Case("llama-gqa-llama3-rope-tied-sharded",
             t.LlamaConfig(**common, num_key_value_heads=2, tie_word_embeddings=True,
                           rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0,
                                            "factor": 8.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 16}),
             shard="40KB"),
        Case("llama-biases-head-dim-bf16",
             t.LlamaConfig(**common, num_key_value_heads=4, attention_bias=True,
                           mlp_bias=True, head_dim=32, rms_norm_eps=1e-5),
             dtype=torch.bfloat16),
        Case("mistral-window",
             t.MistralConfig(**common, num_key_value_heads=1, sliding_window=4096)),
        Case("qwen2-linear-rope-bf16-sharded",
             t.Qwen2Config(**common, num_key_value_heads=2, tie_word_embeddings=True,
                           rope_parameters={"rope_type": "linear", "rope_theta": 1000000.0,
                                            "factor": 2.0}),
             dtype=torch.bfloat16, shard="40KB"),
        Case("llama-bf16-artifact",
             t.LlamaConfig(**common, num_key_value_heads=2, attention_bias=True),
             dtype=torch.bfloat16, precision="bf16"),
        Case("gpt2-bf16-artifact-f32-checkpoint",
             t.GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                          initializer_range=0.1, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0,
                          bos_token_id=0, eos_token_id=0),
             precision="bf16"),
        Case("mixtral-4-experts-top2-sharded",
             t.MixtralConfig(**common, num_key_value_heads=2, num_local_experts=4,
                             num_experts_per_tok=2, router_aux_loss_coef=0.02),
             shard="40KB"),
    ]


# Logits tolerance and what counts as a tie, relative to the largest |logit|:
# f32 differs from transformers only by summation order; bf16 rounds every
# op's result to 8 bits of mantissa, in both, at points fusion may move.
TOLERANCE = {"f32": (1e-4, 1e-5), "bf16": (3e-2, 3e-2)}


def save_model(case, seed, directory):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(case.config)
    # Biases start at zero in transformers' init: give them values, so that a
    # bias that is loaded into the wrong place or not at all shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
    model = model.to(case.dtype)
    kwargs = {"max_shard_size": case.shard} if case.shard else {}
    model.save_pretrained(directory, **kwargs)
    # Read back as a user would: the checkpoint's values in f32 (or in bf16,
    # the reference of a bf16 artifact).
    dtype = torch.bfloat16 if case.precision == "bf16" else torch.float32
    loaded = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=dtype)
    loaded.eval()
    return loaded


def hf_greedy(model, prompt):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=NEW_TOKENS,
                             do_sample=False, eos_token_id=None, pad_token_id=0,
                             min_new_tokens=NEW_TOKENS)
    return out[0, len(prompt):].tolist()


def hf_logits(model, tokens):
    with torch.no_grad():
        return model(torch.tensor(tokens)).logits.float().numpy()


def run_case(case, seed, tools, work):
    tfc, tfc_run, tfc_trace = tools
    d = os.path.join(work, case.name)
    hf_dir = os.path.join(d, "hf")
    os.makedirs(hf_dir)
    model = save_model(case, seed, hf_dir)
    shards = sorted(f for f in os.listdir(hf_dir) if f.endswith(".safetensors"))

    mlir, so = os.path.join(d, "model.mlir"), os.path.join(d, "model.so")
    for args in ([tfc_trace, "--hf", hf_dir, "--set", f"batch={BATCH}",
                  "--set", f"seq={SEQ}", "-o", mlir],
                 [tfc, mlir, "-o", so, f"--precision={case.precision}"] + harness.tfc_flags()):
        r = harness.run_tool(args)
        if r.returncode != 0:
            return False, f"{os.path.basename(args[0])} failed: {r.stderr.strip()}"

    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 256, size=(BATCH, SEQ), dtype=np.int32)
    np.save(os.path.join(d, "tokens.npy"), tokens)
    r = harness.run_tool([tfc_run, so, "call", "forward", "--weights", hf_dir,
                          "--in", f"tokens={os.path.join(d, 'tokens.npy')}",
                          "--out-dir", d, "--threads", "2"])
    if r.returncode != 0:
        return False, f"tfc-run call forward failed: {r.stderr.strip()}"
    got = np.load(os.path.join(d, "logits.npy"))
    want = hf_logits(model, tokens)
    scale = float(np.abs(want).max())
    err = float(np.abs(got - want).max()) / scale
    tolerance, tie_gap = TOLERANCE[case.precision]
    if not err <= tolerance:
        return False, f"logits differ by {err:.2e} of max |logit| {scale:.3g}"

    prompt = rng.integers(0, 256, size=PROMPT).tolist()
    r = harness.run_tool([tfc_run, so, "generate", "--weights", hf_dir, "--prompt-tokens",
                          " ".join(map(str, prompt)), "--max-new-tokens", str(NEW_TOKENS),
                          "--quiet", "--threads", "2"])
    if r.returncode != 0:
        return False, f"tfc-run generate failed: {r.stderr.strip()}"
    ours = [int(t) for t in r.stdout.strip().splitlines()[-1].split()]
    theirs = hf_greedy(model, prompt)
    tie = ""
    if ours != theirs:
        k = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                 min(len(ours), len(theirs)))
        if k >= min(len(ours), len(theirs)):
            return False, f"generated {len(ours)} tokens, transformers {len(theirs)}"
        row = hf_logits(model, [prompt + theirs[:k]])[0, -1]
        gap = float(row[theirs[k]] - row[ours[k]]) / float(np.abs(row).max())
        if gap > tie_gap:
            return False, (f"greedy token {k} is {ours[k]}, transformers {theirs[k]} "
                           f"(not a tie: logit gap {gap:.2e} of the largest)")
        tie = f" up to token {k}, a near tie there (gap {gap:.1e})"
    moe = ""
    if isinstance(case.config, transformers.MixtralConfig):
        ok, moe = check_mixtral(case, model, tools, d, hf_dir, mlir, tokens)
        if not ok:
            return False, moe
    dtype = str(case.dtype).replace("torch.", "")
    return True, (f"{dtype} checkpoint, {len(shards)} shard(s), --precision={case.precision}: "
                  f"logits within {err:.1e}, "
                  f"greedy tokens identical{tie or f' ({NEW_TOKENS} of {NEW_TOKENS})'}{moe}")


def hf_gradients(model, tokens):
    """transformers' loss (CE + coef * aux) and its gradients under the
    checkpoint's names: the fused experts split into w1, w3 and w2."""
    model.zero_grad()
    with torch.enable_grad():
        out = model(torch.tensor(tokens, dtype=torch.long),
                    labels=torch.tensor(tokens, dtype=torch.long), output_router_logits=True)
        out.loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        g = p.grad.detach().float().numpy()
        if name.endswith(".mlp.gate.weight"):
            grads[name.replace(".mlp.", ".block_sparse_moe.")] = g
        elif name.endswith(".mlp.experts.gate_up_proj"):
            prefix, f = name[:-len("gate_up_proj")].replace(".mlp.", ".block_sparse_moe."), g.shape[1] // 2
            for e in range(g.shape[0]):
                grads[f"{prefix}{e}.w1.weight"] = g[e, :f]
                grads[f"{prefix}{e}.w3.weight"] = g[e, f:]
        elif name.endswith(".mlp.experts.down_proj"):
            prefix = name[:-len("down_proj")].replace(".mlp.", ".block_sparse_moe.")
            for e in range(g.shape[0]):
                grads[f"{prefix}{e}.w2.weight"] = g[e]
        else:
            grads[name] = g
    margin = min(float((p[:, k - 1] - p[:, k]).min())
                 for p in (torch.softmax(r.detach().float(), -1).sort(-1, descending=True)[0]
                           for r in out.router_logits)
                 for k in [model.config.num_experts_per_tok])
    return float(out.loss.detach()), float(out.aux_loss.detach()), grads, margin


def check_mixtral(case, model, tools, d, hf_dir, mlir, tokens):
    """The load-balancing loss, the training loss and its gradients."""
    tfc, tfc_run, _ = tools
    tokens_npy = os.path.join(d, "tokens.npy")
    r = harness.run_tool([tfc_run, os.path.join(d, "model.so"), "call", "router_aux_loss",
                          "--weights", hf_dir, "--in", f"tokens={tokens_npy}",
                          "--out-dir", d, "--threads", "2"])
    if r.returncode != 0:
        return False, f"tfc-run call router_aux_loss failed: {r.stderr.strip()}"
    aux = float(np.load(os.path.join(d, "aux_loss.npy")))
    want_loss, want_aux, want_grads, margin = hf_gradients(model, tokens)
    aux_err = abs(aux - want_aux) / abs(want_aux)
    if not aux_err <= 1e-5:
        return False, f"router_aux_loss {aux:.7g}, transformers' aux_loss {want_aux:.7g}"

    so = os.path.join(d, "train.so")
    r = harness.run_tool([tfc, mlir, "-o", so, "--optimizer=adamw"] + harness.tfc_flags())
    if r.returncode != 0:
        return False, f"tfc --optimizer=adamw failed: {r.stderr.strip()}"
    targets = np.full_like(tokens, -100)
    targets[:, :-1] = tokens[:, 1:]
    targets_npy = os.path.join(d, "targets.npy")
    np.save(targets_npy, targets)
    out = os.path.join(d, "grad")
    r = harness.run_tool([tfc_run, so, "call", "loss_grad", "--weights", hf_dir,
                          "--in", f"tokens={tokens_npy}", "--in", f"targets={targets_npy}",
                          "--out-dir", out, "--threads", "2"])
    if r.returncode != 0:
        return False, f"tfc-run call loss_grad failed: {r.stderr.strip()}"
    loss = float(np.load(os.path.join(out, "loss.npy")))
    loss_err = abs(loss - want_loss) / abs(want_loss)
    if not loss_err <= 1e-5:
        return False, f"loss {loss:.7g}, transformers {want_loss:.7g} (CE + coef * aux)"
    note = (f"; aux loss within {aux_err:.1e}, loss within {loss_err:.1e}, "
            f"routing margin {margin:.1e}")
    if margin < 1e-5:
        return True, note + " (a near tie: gradients not compared)"
    worst, worst_name = 0.0, ""
    for name, want in want_grads.items():
        path = os.path.join(out, f"grad.{name}.npy")
        if not os.path.exists(path):
            return False, f"loss_grad has no gradient for {name}"
        got = np.load(path)
        err = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)
        if err > worst:
            worst, worst_name = err, name
    if not worst <= 1e-4:
        return False, f"gradient of {worst_name} differs by {worst:.2e} of its largest element"
    return True, note + f", {len(want_grads)} gradients within {worst:.1e} ({worst_name})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--work-dir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tools = harness.find_tools(args.bin_dir, ("tfc", "tfc-run", "tfc-trace"))
    if tools is None:
        return 1
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"seed {seed} (--seed {seed} reproduces); transformers {transformers.__version__}, "
          f"torch {torch.__version__}", flush=True)
    torch.set_num_threads(2)
    work = harness.scratch_dir(args.work_dir, "tfc-hf-")
    return harness.run_cases(cases(), lambda c: run_case(c, seed, tools, work), work,
                             args.keep or bool(args.work_dir))


if __name__ == "__main__":
    sys.exit(main())

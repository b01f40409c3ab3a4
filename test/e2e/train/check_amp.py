#!/usr/bin/env python3
"""Mixed-precision training (`tfc --precision=bf16|f16 --optimizer=adamw`, tfc-autocast)
against PyTorch's autocast, on a small GPT-2 (2 layers, n_embd 64, 4 heads).

  1. loss_grad vs torch.autocast('cpu', dtype) on the same random weights far from init
     and random tokens/targets (some -100), per 16-bit type; the reference is written
     here with torch.nn.functional (linear, scaled_dot_product_attention, layer_norm,
     gelu, cross_entropy), independent of tfc's model library:
       loss   |tfc - torch| / |torch|                         <= 2 u
       grads  |tfc - torch| / |torch| over all gradients      <= 8 u
              max|tfc - torch| / max|torch| per tensor         <= 16 u
     u = the type's unit roundoff (bf16 2^-9, f16 2^-12): both compute every matmul and
     attention in 16 bits and round each result once, but they accumulate in different
     orders, so a product may round to the neighbouring 16-bit value (1 ulp = 2u); the
     backward goes through 4 such rounding layers per block (and PyTorch's CPU kernels
     round some intermediates that tfc keeps in f32). And the other way: the f32 artifact
     is NOT within check_model_grads' f32 tolerance (1e-4) of the 16-bit one, and tfc's
     contract written out in torch (operands rounded to 16 bits, f32 inside, each result
     rounded once) is nearer to the 16-bit artifact than to the f32 one: the casts happen.
  2. f16 dynamic loss scaling: one train_step with the default scale 65536 updates the
     weights (no overflow); one with --loss-scale 2^40 (the seeded gradients overflow f16)
     returns overflow 1, leaves every parameter and moment byte-identical, train.step 0,
     and halves amp.loss_scale; from 1999 good steps one more doubles the scale (GradScaler's
     growth interval 2000); `tfc-run train` with that scale reports
     "step N: f16 gradient overflow, step skipped, loss scale A -> B" for each such step,
     keeps training once the scale is low enough, and every saved tensor is finite; 30 steps
     straight == 15 + --resume 15 byte for byte, with train.step trailing the skipped steps.
  3. --steps (default 300) steps of `tfc-run train` from the same init and data in f32,
     bf16 and f16: the final eval loss (20 batches) and the mean training loss of the
     last 50 steps within 2% of f32's.
Fresh random weights and tokens each run (the seed is printed; reproduce with --seed).
Last line `N passed, M failed`; exit status non-zero on any failure.
"""
import argparse
import math
import os
import random
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
sys.path.insert(0, os.path.join(HERE, ".."))
import reference as ref  # noqa: E402
from harness import run_tool, scratch_dir, find_tools  # noqa: E402
from check_train import corpus, write_u16  # noqa: E402

N_LAYER, N_HEAD, N_EMBD, VOCAB, BATCH, SEQ = 2, 4, 64, 96, 4, 32
SETS = [f"n_layer={N_LAYER}", f"n_head={N_HEAD}", f"n_embd={N_EMBD}", f"vocab_size={VOCAB}",
        "n_ctx=64", f"batch={BATCH}", f"seq={SEQ}", "prefill_len=16"]
UNIT_ROUNDOFF = {"bf16": 2.0 ** -9, "f16": 2.0 ** -12}
TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}
F32_GRAD_TOL = 1e-4  # test/e2e/grad/check_model_grads.py's GRAD_TOL
ADAMW = {"lr": 3e-3, "min_lr": 3e-4, "warmup": 0.0, "total_steps": 10.0, "schedule": 0.0,
         "weight_decay": 0.1, "grad_clip": 1.0, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8}
BIG_SCALE = 2.0 ** 40


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def verdict(self, name, ok, detail=""):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        self.passed += bool(ok)
        self.failed += not ok


def tool(args, expect=0):
    result = run_tool(args, timeout=900)
    if expect is not None and result.returncode != expect:
        raise RuntimeError(f"exit {result.returncode} (expected {expect}): "
                           f"{' '.join(map(str, args))}\n{result.stdout[-2000:]}"
                           f"{result.stderr[-2000:]}")
    return result


def rel_l2(got, want):
    """|got - want| / |want| over every tensor of two {name: array} together."""
    d = sum(float(((np.asarray(got[n], np.float64) - want[n]) ** 2).sum()) for n in want)
    return math.sqrt(d / sum(float((np.asarray(want[n], np.float64) ** 2).sum()) for n in want))


def rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def torch_gpt2_loss(w, tokens, targets, dtype, emulate=False):
    """GPT-2's mean cross-entropy with torch.nn.functional, returning (loss, {name:
    gradient}). dtype None: f32. Else under torch.autocast('cpu', dtype); or, with
    `emulate`, tfc's contract written out: the operands of linear and attention rounded to
    dtype, the op computed in f32 and its result rounded once (x.to(dtype).float(), whose
    autograd rounds the gradients at the same places as tfc.cast's VJP)."""
    p = {n: torch.tensor(a, dtype=torch.float32, requires_grad=True) for n, a in w.items()}
    tok = torch.tensor(tokens, dtype=torch.long)
    B, T = tokens.shape
    H, C = N_HEAD, N_EMBD
    r = (lambda x: x.to(dtype).float()) if emulate else (lambda x: x)

    def linear(x, weight, bias=None):
        return r(F.linear(r(x), r(weight), None if bias is None else r(bias)))

    def attention(q, k, v):
        return r(F.scaled_dot_product_attention(r(q), r(k), r(v), is_causal=True))

    with torch.autocast("cpu", dtype=dtype or torch.bfloat16,
                        enabled=dtype is not None and not emulate):
        h = p["wte.weight"][tok] + p["wpe.weight"][:T]
        for i in range(N_LAYER):
            q = f"h.{i}."
            a = F.layer_norm(h, (C,), p[q + "ln_1.weight"], p[q + "ln_1.bias"], 1e-5)
            # GPT-2 stores Conv1D weights as (in, out): linear takes (out, in).
            qkv = linear(a, p[q + "attn.c_attn.weight"].t(), p[q + "attn.c_attn.bias"])
            heads = [x.reshape(B, T, H, C // H).transpose(1, 2) for x in qkv.split(C, dim=2)]
            y = attention(*heads).transpose(1, 2).reshape(B, T, C)
            h = h + linear(y, p[q + "attn.c_proj.weight"].t(), p[q + "attn.c_proj.bias"])
            m = F.layer_norm(h, (C,), p[q + "ln_2.weight"], p[q + "ln_2.bias"], 1e-5)
            u = F.gelu(linear(m, p[q + "mlp.c_fc.weight"].t(), p[q + "mlp.c_fc.bias"]),
                       approximate="tanh")
            h = h + linear(u, p[q + "mlp.c_proj.weight"].t(), p[q + "mlp.c_proj.bias"])
        h = F.layer_norm(h, (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
        logits = linear(h, p["wte.weight"])
        loss = F.cross_entropy(logits.reshape(B * T, -1).float(),
                               torch.tensor(targets, dtype=torch.long).reshape(-1),
                               ignore_index=-100)
    loss.backward()
    return float(loss.detach()), {n: t.grad.numpy().astype(np.float64) for n, t in p.items()}


class Check:
    def __init__(self, bins, work, seed, res):
        self.tfc, self.tfc_run, self.trace = bins
        self.work, self.res = work, res
        self.rng = np.random.default_rng(seed)
        self.ncall = 0

    def p(self, name):
        return os.path.join(self.work, name)

    def compile(self, precision, extra=()):
        so = self.p(f"gpt2_{precision}{''.join(extra).replace('-', '_')}.so")
        t0 = time.time()
        tool([self.tfc, self.p("gpt2.mlir"), "--optimizer=adamw", f"--precision={precision}",
              *extra, "-o", so])
        print(f"  compiled --precision={precision} {' '.join(extra)} in {time.time() - t0:.1f} s")
        return so

    def call(self, so, entry, weights, inputs, state_out=None, weights_out=None, state_in=None):
        self.ncall += 1
        d = self.p(f"call{self.ncall:02d}_{entry}")
        os.makedirs(d, exist_ok=True)
        cli = [self.tfc_run, so, "call", entry, "--weights", weights, "--out-dir", d]
        for n, a in inputs.items():
            if isinstance(a, np.ndarray):
                np.save(os.path.join(d, f"in_{n}.npy"), a)
                cli += ["--in", f"{n}={os.path.join(d, f'in_{n}.npy')}"]
            else:
                cli += ["--in", f"{n}={a!r}"]
        if state_in:
            cli += ["--state-in", state_in]
        if state_out:
            cli += ["--state-out", state_out]
        if weights_out:
            cli += ["--weights-out", weights_out]
        tool(cli)
        return {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)
                if f.endswith(".npy") and not f.startswith("in_")}

    def weights(self):
        """Random weights far from init (gains != 1, biases != 0), f32."""
        w = {}
        for line in open(self.p("gpt2.mlir")):
            if "tfc.param @" not in line:
                continue
            name = line.split("@")[1].split()[0]
            shape = tuple(int(d) for d in line.split("tensor<")[1].split("xf32")[0].split("x"))
            init = line.split('"')[1]
            if init == "ones":
                a = 1.0 + self.rng.normal(0, 0.2, shape)
            elif init == "zeros":
                a = self.rng.normal(0, 0.1, shape)
            else:
                a = self.rng.normal(0, 1.0 / np.sqrt(shape[0]), shape)
            w[name] = a.astype(np.float32)
        return w

    def batch(self):
        tokens = self.rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
        targets = self.rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
        targets[self.rng.random((BATCH, SEQ)) < 0.2] = -100
        return tokens, targets

    # 1.
    def check_autocast(self, sos, w, wpath):
        tokens, targets = self.batch()
        inp = {"tokens": tokens, "targets": targets}
        got = {pr: self.call(so, "loss_grad", wpath, inp) for pr, so in sos.items()}
        grads = {pr: {n: o["grad." + n] for n in w} for pr, o in got.items()}
        want32 = torch_gpt2_loss(w, tokens, targets, None)
        for pr in ("bf16", "f16"):
            u = UNIT_ROUNDOFF[pr]
            loss, g = torch_gpt2_loss(w, tokens, targets, TORCH_DTYPE[pr])
            tfc_loss = float(got[pr]["loss"])
            e = abs(tfc_loss - loss) / abs(loss)
            self.res.verdict(f"{pr} loss vs torch.autocast", e <= 2 * u,
                             f"tfc {tfc_loss:.6f} torch {loss:.6f} rel {e:.1e} (tol 2u = "
                             f"{2 * u:.1e}); torch f32 {want32[0]:.6f}")
            errs = sorted(((rel(grads[pr][n], g[n]), n) for n in w), reverse=True)
            total = rel_l2(grads[pr], g)
            self.res.verdict(f"{pr} gradients vs torch.autocast",
                             errs[0][0] <= 16 * u and total <= 8 * u,
                             f"all together |tfc - torch| / |torch| {total:.1e} (tol 8u = "
                             f"{8 * u:.1e}); per tensor worst max-rel {errs[0][0]:.1e} "
                             f"({errs[0][1]}), median {errs[len(errs) // 2][0]:.1e} over "
                             f"{len(errs)} (tol 16u = {16 * u:.1e}); torch {pr} vs torch f32: "
                             f"{rel_l2(g, want32[1]):.1e}")
            # The contract written out (operands rounded, one rounding per result) is
            # nearer to the 16-bit artifact than to the f32 one, and the f32 artifact is
            # far outside f32's tolerance of the 16-bit one: the casts happen.
            contract = torch_gpt2_loss(w, tokens, targets, TORCH_DTYPE[pr], emulate=True)[1]
            tfc_vs_f32 = max(rel(grads["f32"][n], grads[pr][n]) for n in w)
            near, far = rel_l2(grads[pr], contract), rel_l2(grads["f32"], contract)
            self.res.verdict(
                f"the {pr} casts happen", tfc_vs_f32 > F32_GRAD_TOL and near < far,
                f"max rel |tfc f32 - tfc {pr}| {tfc_vs_f32:.1e} > f32 tol {F32_GRAD_TOL:.0e}; "
                f"vs the contract in torch: tfc {pr} {near:.1e} < tfc f32 {far:.1e}")

    # 2.
    def check_loss_scaling(self, so16, big, w, wpath):
        tokens, targets = self.batch()
        inp = {"tokens": tokens, "targets": targets} | ADAMW
        for name, so, overflow, scale in (("65536", so16, 0, 65536.0),
                                          ("2^40", big, 1, BIG_SCALE)):
            wout, sout = self.p(f"w_{name}.safetensors"), self.p(f"s_{name}.safetensors")
            o = self.call(so, "train_step", wpath, inp, state_out=sout, weights_out=wout)
            new, _ = ref.read_safetensors(wout)
            state, _ = ref.read_safetensors(sout)
            same = [n for n in w if np.array_equal(new[n], w[n])]
            finite = all(np.isfinite(a).all() for a in list(new.values()) + list(state.values()))
            moments0 = all(not state[k].any() for k in state if k.startswith("opt."))
            detail = (f"overflow {float(o['overflow']):g}, loss_scale "
                      f"{float(o['loss_scale']):g} -> {float(o['next_loss_scale']):g} "
                      f"(state {float(state['amp.loss_scale']):g}), train.step "
                      f"{int(state['train.step'])}, {len(same)}/{len(w)} parameters unchanged, "
                      f"moments {'zero' if moments0 else 'set'}, all finite: {finite}")
            if overflow:
                ok = (float(o["overflow"]) == 1 and len(same) == len(w) and moments0 and
                      int(state["train.step"]) == 0 and
                      float(state["amp.loss_scale"]) == scale / 2 and
                      float(o["next_loss_scale"]) == scale / 2 and finite)
            else:
                ok = (float(o["overflow"]) == 0 and not same and not moments0 and
                      int(state["train.step"]) == 1 and
                      float(state["amp.loss_scale"]) == scale and finite)
            self.res.verdict(f"f16 train_step, loss scale {name}", ok, detail)

        # Growth: after 2000 good steps in a row the scale doubles and the count restarts
        # (state carried from the good step above, with the count set to 1999).
        state, _ = ref.read_safetensors(self.p("s_65536.safetensors"))
        state = {k: np.array(v) for k, v in state.items()}
        state["amp.good_steps"] = np.array(1999.0, np.float32)
        ref.write_safetensors(self.p("s_1999.safetensors"), state)
        o = self.call(so16, "train_step", self.p("w_65536.safetensors"), inp,
                      state_in=self.p("s_1999.safetensors"), state_out=self.p("s_2000.safetensors"))
        after, _ = ref.read_safetensors(self.p("s_2000.safetensors"))
        self.res.verdict("f16 loss scale doubles after 2000 good steps",
                         float(o["overflow"]) == 0 and float(o["next_loss_scale"]) == 131072 and
                         float(after["amp.loss_scale"]) == 131072 and
                         float(after["amp.good_steps"]) == 0 and int(after["train.step"]) == 2,
                         f"good steps 1999 -> {float(after['amp.good_steps']):g}, loss scale "
                         f"{float(o['loss_scale']):g} -> {float(after['amp.loss_scale']):g}")

        # The trainer: the message with the step, then training resumes.
        write_u16(self.p("train.bin"), corpus(50000, 1))
        ckpt = self.p("big.safetensors")
        r = tool([self.tfc_run, big, "train", "--data", self.p("train.bin"), "--batch",
                  str(BATCH), "--seq", str(SEQ), "--weights", wpath, "--steps", "40",
                  "--lr", "3e-3", "--save", ckpt])
        notices = [l for l in r.stderr.splitlines() if "f16 gradient overflow" in l]
        want = (f"step 1: f16 gradient overflow, step skipped, loss scale "
                f"{BIG_SCALE:g} -> {BIG_SCALE / 2:g}")
        saved, _ = ref.read_safetensors(ckpt)
        finite = all(np.isfinite(a).all() for a in saved.values())
        skipped = len(notices)
        self.res.verdict("tfc-run train reports each f16 overflow with its step",
                         bool(notices) and notices[0] == want and finite and
                         int(saved["state.train.step"]) == 40 - skipped and
                         any(not np.array_equal(saved[n], w[n]) for n in w),
                         f"{skipped} skipped of 40 (first: '{notices[0] if notices else ''}', "
                         f"last: '{notices[-1] if notices else ''}'); checkpoint finite: {finite}, "
                         f"state.train.step {int(saved['state.train.step'])}")

        # Resume across skipped steps (train.step trails the trainer's step): 30 steps
        # straight == 15 + --resume 15, byte for byte.
        common = [self.tfc_run, big, "train", "--data", self.p("train.bin"), "--batch",
                  str(BATCH), "--seq", str(SEQ), "--lr", "3e-3", "--warmup", "5",
                  "--schedule", "cosine"]
        tool(common + ["--weights", wpath, "--steps", "30", "--save", self.p("st.safetensors")])
        tool(common + ["--weights", wpath, "--steps", "15", "--total-steps", "30",
                       "--save", self.p("sp.safetensors")])
        tool(common + ["--resume", self.p("sp.safetensors"), "--steps", "30",
                       "--save", self.p("sp.safetensors")])
        a, b = (open(self.p(f), "rb").read() for f in ("st.safetensors", "sp.safetensors"))
        saved, meta = ref.read_safetensors(self.p("sp.safetensors"))
        self.res.verdict("f16 resume across skipped steps", a == b,
                         f"30 straight {'==' if a == b else '!='} 15 + resume 15, byte for byte "
                         f"(step {meta.get('step')}, train.step {int(saved['state.train.step'])})")

    # 3.
    def check_convergence(self, sos, steps):
        write_u16(self.p("train.bin"), corpus(50000, 1))
        write_u16(self.p("val.bin"), corpus(5000, 2))
        final = {}
        for pr, so in sos.items():
            log = self.p(f"train_{pr}.csv")
            t0 = time.time()
            tool([self.tfc_run, so, "train", "--data", self.p("train.bin"), "--batch",
                  str(BATCH), "--seq", str(SEQ), "--init-seed", "0", "--steps", str(steps),
                  "--lr", "3e-3", "--warmup", "20", "--schedule", "cosine", "--min-lr", "3e-4",
                  "--eval-data", self.p("val.bin"), "--eval-every", str(steps),
                  "--eval-batches", "20", "--log", log, "--save", self.p(f"run_{pr}.safetensors")])
            seconds = time.time() - t0
            rows = [l.split(",") for l in open(log).read().splitlines()[1:]]
            losses = [float(r[1]) for r in rows]
            final[pr] = (float(rows[-1][5]), sum(losses[-50:]) / 50, losses[0])
            print(f"  {pr}: {steps} steps in {seconds:.1f} s; first loss {losses[0]:.4f}, "
                  f"last-50 mean {final[pr][1]:.4f}, eval {final[pr][0]:.4f}")
        f32 = final["f32"]
        for pr in ("bf16", "f16"):
            ev, tr = (final[pr][0] - f32[0]) / f32[0], (final[pr][1] - f32[1]) / f32[1]
            self.res.verdict(f"{steps} steps {pr} vs f32: final loss within 2%",
                             abs(ev) <= 0.02 and abs(tr) <= 0.02 and f32[1] < 0.7 * f32[2],
                             f"eval {final[pr][0]:.4f} vs {f32[0]:.4f} ({ev:+.2%}), last-50 "
                             f"mean {final[pr][1]:.4f} vs {f32[1]:.4f} ({tr:+.2%}); f32 fell "
                             f"from {f32[2]:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    bins = find_tools(args.bin_dir, ("tfc", "tfc-run", "tfc-trace"))
    if not bins:
        return 1
    work = scratch_dir(args.work_dir, "tfc-amp-")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    print(f"seed {seed} (reproduce with --seed {seed})")
    torch.manual_seed(seed)
    res = Results()
    c = Check(bins, work, seed, res)
    try:
        tool([c.trace, "gpt2", *sum((["--set", s] for s in SETS), []), "-o", c.p("gpt2.mlir")])
        sos = {pr: c.compile(pr) for pr in ("f32", "bf16", "f16")}
        big = c.compile("f16", ("--loss-scale=1099511627776",))
        w = c.weights()
        wpath = c.p("w0.safetensors")
        ref.write_safetensors(wpath, w)
        for section in (lambda: c.check_autocast(sos, w, wpath),
                        lambda: c.check_loss_scaling(sos["f16"], big, w, wpath),
                        lambda: c.check_convergence(sos, args.steps)):
            t0 = time.time()
            section()
            print(f"  ({time.time() - t0:.1f} s)")
    except Exception as e:  # a broken section is a failure, reported, not a crash
        res.verdict("run", False, f"{type(e).__name__}: {e}")
    print(f"{res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

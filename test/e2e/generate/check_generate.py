#!/usr/bin/env python3
"""End-to-end checks of `tfc-run MODEL.so generate` against float64 NumPy references.

For each model: trace (tfc-trace) -> compile (tfc) -> init (tfc-run init, a fresh seed,
printed) -> generate, and compare with test/e2e/models/reference.py (the float64
references shared with check_models.py):

  greedy              32 new tokens == the reference's greedy continuation token for token,
                      the reference re-running the full forward on the whole prefix at every
                      step (so this also proves prefill + KV-cache decode == recomputation);
                      with the initial weights and with perturbed ones (weights far from init)
  sampling            temperature 1, top-k 20: a fixed seed gives the same tokens twice and
                      at --threads 1 and 2; another seed gives other tokens; every sampled
                      token is in the support of the reference's top-k distribution
  context             a prompt longer than n_ctx fails cleanly (exit 1, one error line); a
                      prompt that fills the context generates until n_ctx and says so
  errors              token id >= vocab, empty prompt: clean failures
  tokenizer (gpt2)    --prompt TEXT --tokenizer DIR (a byte-level vocabulary written here)
                      encodes like --prompt-tokens, streams the decoded text, stops at
                      <|endoftext|>
  batched             --prompts FILE on models with a generation batch G > 1: more requests
                      than rows, of lengths from 1 to near n_ctx, each request's greedy tokens
                      == the reference and == --prompt-tokens alone; the same prompts
                      shuffled and among others give the same tokens; sampled requests draw
                      as they do alone; a G = 1 model and bad lines fail cleanly
  paged               the same with a paged KV cache (kv_block, a pool smaller than G full
                      contexts): requests preempted when blocks run out still get the
                      reference's tokens; prompts with a shared prefix reuse its blocks
  encdec              greedy generation from Start == the reference's (16 tokens)

A tool that exits non-zero fails its check (its stderr is printed). The last line is
`N passed, M failed`; the exit code is non-zero on any failure.

  check_generate.py --bin-dir build/bin [--work-dir DIR] [--seed S]
                    [--models gpt2,llama,gpt2-b3,llama-b4,gpt2-paged,llama-paged,encdec]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REF_SOURCE = os.path.join(os.path.dirname(HERE), "models", "reference.py")
sys.path.insert(0, os.path.dirname(REF_SOURCE))
try:  # the shared float64 references of test/e2e/models
    import reference as ref  # noqa: E402
except ImportError as e:
    print(f"check_generate: cannot import {REF_SOURCE}: {e}\n0 passed, 1 failed")
    sys.exit(1)
REF_NEEDS = ["read_safetensors", "write_safetensors", "gpt2_forward", "llama_forward",
             "greedy_generate", "sampling_distribution", "encdec_greedy"]

TOOL_TIMEOUT_S = 900
NEW_TOKENS = 32

# Every option spelled out, so a change of tfc-trace's defaults cannot desync the
# reference. `prompt` is the prompt length of the main checks.
CONFIGS = {
    "gpt2": dict(
        # a training batch of 4 and generation at its own batch 1 (the default)
        model="gpt2", label="gpt2 (B=4, generation B=1)", prompt=13, tokenizer=True,
        sets=dict(n_layer=2, n_head=4, n_embd=64, vocab_size=256, n_ctx=64,
                  batch=4, gen_batch=1, seq=16, prefill_len=16)),
    "llama": dict(
        model="llama", label="llama (B=1, GQA 4/2)", prompt=21,
        sets=dict(n_layer=2, n_head=4, n_kv_head=2, dim=64, hidden_dim=176,
                  vocab_size=256, n_ctx=64, rms_eps=1e-5, rope_theta=10000,
                  tie_embeddings=0, batch=1, gen_batch=1, seq=16, prefill_len=16)),
    # a generation batch > 1 (rows replicated, row 0 reported) and a chunk length that does
    # not divide n_ctx (the last chunk of a long prompt starts earlier to fit the cache);
    # --prompts: continuous batching, each row its own sequence
    "gpt2-b3": dict(
        model="gpt2", label="gpt2 (generation B=3, P=12)", prompt=29, context=True,
        batched=True,
        sets=dict(n_layer=2, n_head=4, n_embd=64, vocab_size=256, n_ctx=64,
                  batch=2, gen_batch=3, seq=16, prefill_len=12)),
    "llama-b4": dict(
        model="llama", label="llama (generation B=4, GQA 4/2)", prompt=21, batched=True,
        sets=dict(n_layer=2, n_head=4, n_kv_head=2, dim=64, hidden_dim=176,
                  vocab_size=256, n_ctx=64, rms_eps=1e-5, rope_theta=10000,
                  tie_embeddings=0, batch=1, gen_batch=4, seq=16, prefill_len=16)),
    # A paged KV cache (kv_block): a pool smaller than G full contexts, so that requests
    # are preempted (and recomputed) when it runs out, and shared prompt prefixes reuse
    # their blocks; single prompts run through the serving entries (no prefill/decode).
    "gpt2-paged": dict(
        model="gpt2", label="gpt2 (paged KV cache: 20 blocks of 4, generation B=3)", prompt=29,
        context=True, batched=True,
        sets=dict(n_layer=2, n_head=4, n_embd=64, vocab_size=256, n_ctx=64,
                  batch=2, gen_batch=3, seq=16, prefill_len=12, kv_block=4, kv_blocks=20)),
    "llama-paged": dict(
        model="llama", label="llama (paged KV cache: 8 blocks of 8, generation B=4, GQA)",
        prompt=21, batched=True,
        sets=dict(n_layer=2, n_head=4, n_kv_head=2, dim=64, hidden_dim=176,
                  vocab_size=256, n_ctx=64, rms_eps=1e-5, rope_theta=10000,
                  tie_embeddings=0, batch=1, gen_batch=4, seq=16, prefill_len=16, kv_block=8,
                  kv_blocks=8)),
    "encdec": dict(
        model="encdec", label="encdec (article sizes)",
        sets=dict(batch=64, d_model=32, n_head=4, ff_mult=4, vocab_size=12,
                  src_len=16, tgt_len=17)),
}
DEFAULT_MODELS = "gpt2,llama,gpt2-b3,llama-b4,gpt2-paged,llama-paged,encdec"


# ----------------------------------------------------------------------------- output
class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def verdict(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"[{'PASS' if ok else 'FAIL'}] {name}" + (f": {detail}" if detail else ""))
        sys.stdout.flush()

    def summary(self):
        return f"{self.passed} passed, {self.failed} failed"


def indent(text, prefix="    | ", keep=30, width=400):
    lines = text.rstrip().splitlines() or ["(no output)"]
    if len(lines) > keep:
        errors = [l for l in lines if "error" in l.lower()][:8]
        lines = errors + [f"... ({len(lines) - keep} lines)"] + lines[-keep:]
    return "\n".join(prefix + (l if len(l) <= width else l[:width] + " ...") for l in lines)


def ids_text(ids, n=40):
    ids = list(ids)
    return " ".join(str(int(i)) for i in ids[:n]) + (" ..." if len(ids) > n else "")


# ----------------------------------------------------------------------------- tools
class ToolError(Exception):
    pass


class Run:
    def __init__(self, code, out, err, seconds, shown):
        self.code, self.out, self.err, self.seconds, self.shown = code, out, err, seconds, shown

    def ids(self):
        """The generated ids: the last line of stdout."""
        lines = self.out.rstrip(b"\n").split(b"\n")
        last = lines[-1].decode() if lines else ""
        return [int(t) for t in last.split()]

    def text(self):
        """With a tokenizer: the streamed text (stdout before the ids line, less the newline)."""
        body = self.out.rstrip(b"\n")
        cut = body.rfind(b"\n")
        return body[:cut] if cut >= 0 else b""

    def stderr(self):
        return self.err.decode(errors="replace")


class Tools:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir

    def run(self, tool, args, check=True, timeout=TOOL_TIMEOUT_S):
        exe = os.path.join(self.bin_dir, tool)
        if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
            raise ToolError(f"tool not found: {exe} (not built yet?)")
        cmd = [exe] + [str(a) for a in args]
        shown = " ".join(cmd)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolError(f"$ {shown}\n  timed out after {timeout} s")
        except OSError as e:  # e.g. the binary is being relinked
            raise ToolError(f"$ {shown}\n  cannot run: {e}")
        dt = time.time() - t0
        r = Run(p.returncode, p.stdout, p.stderr, dt, shown)
        if check and p.returncode != 0:
            sig = f" (signal {-p.returncode})" if p.returncode < 0 else ""
            raise ToolError(f"$ {shown}\n  exit code {p.returncode}{sig} after {dt:.2f} s\n"
                            + indent(r.stderr() or p.stdout.decode(errors="replace")))
        return r


# ----------------------------------------------------------------------------- tokenizer
def bytes_to_unicode():
    """GPT-2's byte -> printable character table (encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def write_tokenizer(folder, ids_of_bytes, eos_id=None):
    """A byte-level BPE tokenizer with no merges: byte b is token ids_of_bytes[b];
    "<|endoftext|>" is token eos_id when given."""
    os.makedirs(folder, exist_ok=True)
    table = bytes_to_unicode()
    vocab = {table[b]: int(ids_of_bytes[b]) for b in range(256)}
    if eos_id is not None:
        vocab["<|endoftext|>"] = int(eos_id)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
    return folder


# ----------------------------------------------------------------------------- one model
class ModelCheck:
    def __init__(self, key, cfg, tools, work, seed, results, speeds):
        self.key, self.cfg, self.tools = key, cfg, tools
        self.model = cfg["model"]
        self.label = cfg["label"]
        self.sets = cfg["sets"]
        self.work = work
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.res = results
        self.speeds = speeds
        self.V = self.sets["vocab_size"]

    def check(self, name, ok, detail=""):
        self.res.verdict(f"{self.label}: {name}", ok, detail)

    def step(self, name, fn):
        """Runs fn(); a ToolError or an exception fails the check `name`."""
        try:
            return fn()
        except ToolError as e:
            self.check(name, False, "tool failed\n" + str(e))
        except Exception:  # a harness or reference bug: fail this check, go on
            self.check(name, False, "harness error\n" + indent(traceback.format_exc()))
        return None

    # -- reference
    def ref_logits(self, w, tokens):
        """Full forward (B, T) -> (B, T, V) in float64."""
        s = self.sets
        if self.model == "gpt2":
            return ref.gpt2_forward(w, tokens, s["n_layer"], s["n_head"])
        return ref.llama_forward(w, tokens, s["n_layer"], s["n_head"], s["n_kv_head"],
                                 float(s["rms_eps"]), float(s["rope_theta"]),
                                 bool(s["tie_embeddings"]))

    def ref_greedy(self, w, prompt, n_new):
        """Greedy continuation re-running the whole prefix each step."""
        seq = np.asarray(prompt, dtype=np.int64)[None]
        return [int(t) for t in
                ref.greedy_generate(lambda x: self.ref_logits(w, x), seq, n_new)[0]]

    def perturbed(self, w):
        """Weights far from init (gains != 1, biases != 0, larger matrices): logits with
        clear margins, every term exercised."""
        out = {}
        for name, a in w.items():
            if name.endswith("bias"):
                b = self.rng.normal(0, 0.1, a.shape)
            elif a.ndim == 1:  # norms' gains
                b = 1.0 + self.rng.normal(0, 0.2, a.shape)
            else:
                fan_in = a.shape[0] if a.ndim == 2 else a.shape[-2]
                b = self.rng.normal(0, 1.0 / np.sqrt(max(fan_in, 1)), a.shape) * 2.0
            out[name] = np.asarray(b, dtype=a.dtype)
        return out

    # -- tfc-run generate
    def generate(self, weights, prompt, n_new=NEW_TOKENS, extra=(), check=True):
        args = [self.so, "generate", "--weights", weights]
        if prompt is not None:
            args += ["--prompt-tokens", " ".join(str(int(t)) for t in prompt)]
        if n_new is not None:
            args += ["--max-new-tokens", n_new]
        return self.tools.run("tfc-run", args + list(extra), check=check)

    def compare_greedy(self, name, w, wpath, prompt, n_new=NEW_TOKENS, run=None,
                       expect_len=None):
        run = run or self.generate(wpath, prompt, n_new)
        got = run.ids()
        want = self.ref_greedy(w, prompt, expect_len or n_new)
        detail = f"{len(got)} tokens, prompt {len(prompt)}\n    tfc {ids_text(got)}\n    ref {ids_text(want)}"
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
            if k < min(len(got), len(want)):
                seq = list(prompt) + want[:k]
                logits = self.ref_logits(w, np.asarray(seq)[None])[0, -1]
                order = np.argsort(-logits)
                detail += (f"\n    first difference at step {k}: tfc {got[k]}, ref {want[k]}; "
                           f"ref logits there: top {order[0]} {logits[order[0]]:+.6f}, "
                           f"2nd {order[1]} {logits[order[1]]:+.6f}, "
                           f"tfc's token {logits[got[k]]:+.6f}")
            else:
                detail += f"\n    lengths differ: tfc {len(got)}, ref {len(want)}"
        self.check(name, got == want, detail)
        return run

    def speed(self, run):
        err = run.stderr()
        pre = re.search(r"prefill\s+(\d+) tokens in\s+([\d.]+) ms .*?([\d.]+) tokens/s", err)
        dec = re.search(r"decode\s+(\d+) tokens in\s+([\d.]+) ms .*?([\d.]+) tokens/s", err)
        if pre and dec:
            self.speeds.append((self.label, int(pre.group(1)), float(pre.group(3)),
                                int(dec.group(1)), float(dec.group(3))))
        return [l for l in err.splitlines() if re.match(r"tfc-run: (prefill|decode|sample|total|load|forward)", l)]

    def expect_failure(self, name, run, part):
        err = run.stderr()
        ok = (run.code == 1 and f"tfc-run: error: " in err and part in err
              and "Traceback" not in err and run.out == b"")
        self.check(name, ok, f"exit {run.code}; stderr:\n" + indent(err)
                   + ("" if part in err else f"\n    (expected: {part!r})"))

    # -- the checks
    def build(self):
        print(f"\n=== {self.label} (seed {self.seed}) ===")
        os.makedirs(self.work, exist_ok=True)
        mlir = os.path.join(self.work, "model.mlir")
        self.so = os.path.join(self.work, "model.so")
        args = [self.model] + [a for k, v in self.sets.items() for a in ("--set", f"{k}={v}")]
        if self.step("trace", lambda: self.tools.run("tfc-trace", args + ["-o", mlir])) is None:
            return None
        if self.step("compile", lambda: self.tools.run("tfc", [mlir, "-o", self.so])) is None:
            return None
        wpath = os.path.join(self.work, "init.safetensors")
        if self.step("init", lambda: self.tools.run(
                "tfc-run", [self.so, "init", "--seed", self.seed, "-o", wpath])) is None:
            return None
        w, _ = ref.read_safetensors(wpath)
        wp = self.perturbed(w)
        wp_path = os.path.join(self.work, "perturbed.safetensors")
        ref.write_safetensors(wp_path, wp)
        self.check("trace, compile, init", True,
                   f"{len(w)} parameters, init seed {self.seed}")
        return w, wpath, wp, wp_path

    def run(self):
        built = self.build()
        if built is None:
            return
        if self.model == "encdec":
            return self.run_encdec(*built)
        w, wpath, wp, wp_path = built
        s, V = self.sets, self.V
        n_ctx = s["n_ctx"]
        prompt = [int(t) for t in self.rng.integers(0, V, self.cfg["prompt"])]

        # greedy == reference, initial and perturbed weights
        def greedy_init():
            r = self.compare_greedy(f"greedy {NEW_TOKENS} tokens == reference (init weights)",
                                    w, wpath, prompt)
            for line in self.speed(r):
                print("    " + line)
        self.step("greedy (init weights)", greedy_init)
        self.step("greedy (perturbed weights)", lambda: self.compare_greedy(
            f"greedy {NEW_TOKENS} tokens == reference (perturbed weights)", wp, wp_path, prompt))

        # sampling: reproducible, thread-independent, seed-dependent, in the top-k support
        def sampling():
            opts = ["--temperature", "1", "--top-k", "20"]
            seed = int(self.rng.integers(0, 2**31))
            a = self.generate(wp_path, prompt, extra=opts + ["--seed", seed]).ids()
            b = self.generate(wp_path, prompt, extra=opts + ["--seed", seed]).ids()
            t1 = self.generate(wp_path, prompt, extra=opts + ["--seed", seed, "--threads", 1]).ids()
            t2 = self.generate(wp_path, prompt, extra=opts + ["--seed", seed, "--threads", 2]).ids()
            c = self.generate(wp_path, prompt, extra=opts + ["--seed", seed + 1]).ids()
            self.check("sampling: same seed, same tokens", a == b and len(a) == NEW_TOKENS,
                       f"seed {seed}\n    run 1 {ids_text(a)}\n    run 2 {ids_text(b)}")
            self.check("sampling: --threads 1 == --threads 2 == default", t1 == t2 == a,
                       f"\n    -j1 {ids_text(t1)}\n    -j2 {ids_text(t2)}")
            self.check("sampling: another seed, other tokens", c != a,
                       f"seed {seed + 1}: {ids_text(c)}")
            full = self.ref_logits(wp, np.asarray(prompt + a)[None])[0]
            outside = []
            for i, tok in enumerate(a):
                p = ref.sampling_distribution(full[len(prompt) + i - 1][None], 1.0, 20)[0]
                if p[tok] <= 0:
                    outside.append((i, tok))
            greedy = self.ref_greedy(wp, prompt, NEW_TOKENS)
            self.check("sampling: every token in the reference top-20 support", not outside,
                       (f"outside at (step, token) {outside[:5]}" if outside else
                        f"{len(a)} tokens; {sum(x != y for x, y in zip(a, greedy))} differ "
                        f"from greedy"))
        self.step("sampling", sampling)

        # errors
        def errors():
            too_long = [int(t) for t in self.rng.integers(0, V, n_ctx + 1)]
            self.expect_failure(f"prompt of {n_ctx + 1} tokens > n_ctx {n_ctx} fails cleanly",
                                self.generate(wpath, too_long, 4, check=False),
                                f"more than the model's context of {n_ctx}")
            self.expect_failure(f"token id {V} >= vocab fails cleanly",
                                self.generate(wpath, prompt[:3] + [V], 4, check=False),
                                f"prompt token {V} (at position 3) is out of range")
            self.expect_failure("empty prompt fails cleanly",
                                self.generate(wpath, [], 4, check=False), "the prompt is empty")
            self.expect_failure("missing weights file fails cleanly",
                                self.generate(os.path.join(self.work, "none.safetensors"),
                                              prompt, 4, check=False), "none.safetensors")
        self.step("errors", errors)

        if self.cfg.get("context"):
            self.step("context", lambda: self.check_context(wp, wp_path))
        if self.cfg.get("batched"):
            self.step("batched", lambda: self.check_batched(wp, wp_path))
        elif self.model == "gpt2":
            def one_row():
                path = self.write_prompts("one-row.txt", [prompt])
                self.expect_failure("--prompts on a model with one generation row fails cleanly",
                                    self.batched(wpath, path, 4, check=False),
                                    "--set gen_batch=")
            self.step("batched (one row)", one_row)
        if self.cfg.get("tokenizer"):
            self.step("tokenizer", lambda: self.check_tokenizer(wp, wp_path, prompt))

    def check_context(self, w, wpath):
        """Prompts that reach the end of the cache: generation stops at n_ctx and says so."""
        n_ctx, V = self.sets["n_ctx"], self.V
        for length in (n_ctx - 2, n_ctx):
            prompt = [int(t) for t in self.rng.integers(0, V, length)]
            run = self.generate(wpath, prompt, 10)
            expect = n_ctx - length + 1  # the last one comes from the logits at n_ctx - 1
            self.compare_greedy(f"prompt {length} of n_ctx {n_ctx}: {expect} tokens == reference",
                                w, wpath, prompt, run=run, expect_len=expect)
            self.check(f"prompt {length} of n_ctx {n_ctx}: stop at the context said on stderr",
                       "context limit" in run.stderr(), indent(run.stderr(), keep=4))

    def write_prompts(self, name, prompts):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write("".join(" ".join(str(t) for t in p) + "\n" for p in prompts))
        return path

    def batched(self, wpath, prompts_path, n_new, extra=(), check=True):
        return self.tools.run("tfc-run", [self.so, "generate", "--weights", wpath, "--prompts",
                                          prompts_path, "--max-new-tokens", n_new] + list(extra),
                              check=check)

    def check_batched(self, w, wpath):
        """--prompts: continuous batching, each row of the generation batch its own sequence
        at its own position (decode_rows, prefill_row)."""
        G, P, n_ctx, V = (self.sets["gen_batch"], self.sets["prefill_len"], self.sets["n_ctx"],
                          self.V)
        new = 12
        # More requests than rows; lengths 1, around the chunk, several chunks, and one whose
        # generation reaches the end of the cache.
        lengths = [5, 1, P, P + 1, 2 * P + 3, n_ctx - 4, 7, 3, P - 1]
        prompts = [[int(t) for t in self.rng.integers(0, V, n)] for n in lengths]
        run = self.batched(wpath, self.write_prompts("prompts.txt", prompts), new)
        rows = [json.loads(line) for line in run.out.decode().splitlines()]
        self.check(f"{len(prompts)} requests over {G} rows: one JSON line each, in order",
                   [r["request"] for r in rows] == list(range(1, len(prompts) + 1)) and
                   all(0 <= r["row"] < G for r in rows) and
                   [r["prompt_tokens"] for r in rows] == lengths,
                   indent(run.out.decode(), keep=12))
        if len(rows) != len(prompts):
            return
        bad = []
        for i, (prompt, r) in enumerate(zip(prompts, rows)):
            want = self.ref_greedy(w, prompt, min(new, n_ctx - len(prompt) + 1))
            if r["tokens"] != want:
                bad.append(f"request {i + 1} (prompt {len(prompt)}, row {r['row']})\n"
                           f"    tfc {ids_text(r['tokens'])}\n    ref {ids_text(want)}")
        self.check("each request's greedy tokens == the reference", not bad, "\n    ".join(bad))
        # (A paged pool smaller than the rows' contexts may hold fewer requests than rows.)
        every_row = "kv_block" in self.sets or sorted({r["row"] for r in rows}) == list(range(G))
        self.check("every row used, and requests waited for a free one",
                   every_row and any(r["queued_ms"] > 0 for r in rows),
                   f"rows {[r['row'] for r in rows]}")
        ctx = rows[lengths.index(n_ctx - 4)]
        self.check("the request that reaches n_ctx stops there and says so",
                   ctx["stop"] == "reached the context limit" and len(ctx["tokens"]) == 5,
                   f"{ctx}")
        alone = [self.generate(wpath, prompts[i], new).ids() for i in (0, 4, 5)]
        self.check("== tfc-run generate --prompt-tokens alone (3 requests)",
                   alone == [rows[i]["tokens"] for i in (0, 4, 5)],
                   "\n    ".join(ids_text(a) for a in alone))

        # The same prompts in another order, twice each: the same tokens per prompt.
        order = [int(i) for i in self.rng.permutation(2 * len(prompts)) % len(prompts)]
        again = self.batched(wpath, self.write_prompts("shuffled.txt",
                                                       [prompts[i] for i in order]), new)
        got = [json.loads(line)["tokens"] for line in again.out.decode().splitlines()]
        self.check("shuffled and duplicated, among other neighbours: the same tokens",
                   got == [rows[i]["tokens"] for i in order], f"order {order}")

        # Sampling: each request draws as it would alone (its seed, its own logits).
        opts = ["--temperature", "1", "--top-k", "20", "--seed", 11]
        sampled = self.batched(wpath, self.write_prompts("sampled.txt", prompts[:G + 1]), new,
                               opts)
        got = [json.loads(line)["tokens"] for line in sampled.out.decode().splitlines()]
        alone = [self.generate(wpath, p, new, extra=opts).ids() for p in prompts[:G + 1]]
        self.check(f"sampled ({' '.join(map(str, opts))}): each request == alone", got == alone,
                   "\n    ".join(f"{ids_text(a)} | {ids_text(b)}" for a, b in zip(got, alone)))

        if "kv_block" in self.sets:
            self.check_paged(w, wpath)

        # Bad files.
        path = os.path.join(self.work, "bad-line.txt")
        with open(path, "w") as f:
            f.write("1 2 3\n4 five 6\n")
        self.expect_failure("a line that is not token ids fails naming the line",
                            self.batched(wpath, path, 4, check=False), "bad-line.txt: line 2")
        path = self.write_prompts("bad-id.txt", [[1, 2], [3, V]])
        self.expect_failure(f"token id {V} fails naming the prompt",
                            self.batched(wpath, path, 4, check=False),
                            f"bad-id.txt: prompt 2: prompt token {V}")

    def check_paged(self, w, wpath):
        """A paged KV cache: requests that outgrow the pool are preempted and still get the
        reference's tokens; prompts with a shared prefix reuse its blocks."""
        def paged_line(result):
            m = re.search(r"paged KV cache: (\d+) blocks of (\d+) positions; (\d+) prompt "
                          r"tokens reused from cached prefixes; (\d+) preemptions",
                          result.stderr())
            return [int(g) for g in m.groups()] if m else None
        G, S, blocks = self.sets["gen_batch"], self.sets["kv_block"], self.sets["kv_blocks"]
        V, n_ctx = self.V, self.sets["n_ctx"]
        # G prompts of one block each fit the pool at once; generating 6 blocks more each
        # (more than G * 7 blocks in all) outgrows it, so some are preempted and recomputed.
        new = min(6 * S, n_ctx - S)
        prompts = [[int(t) for t in self.rng.integers(0, V, S)] for _ in range(G)]
        grow = self.batched(wpath, self.write_prompts("outgrow.txt", prompts), new)
        got = [json.loads(l)["tokens"] for l in grow.out.decode().splitlines()]
        want = [self.ref_greedy(w, p, new) for p in prompts]
        line = paged_line(grow)
        self.check(f"{G} requests outgrowing the pool of {blocks} blocks: preempted, each still "
                   "== the reference",
                   got == want and line is not None and line[:2] == [blocks, S] and line[3] > 0,
                   indent(grow.stderr(), keep=3) + "\n    " +
                   "\n    ".join(f"{ids_text(a)} | {ids_text(b)}" for a, b in zip(got, want)))
        # A shared prefix of 2.5 blocks, then each prompt its own tail: the second and later
        # reuse its 2 whole blocks, and each still gets the reference's tokens.
        new = 12
        head = [int(t) for t in self.rng.integers(0, V, 2 * S + S // 2)]
        prompts = [head + [int(t) for t in self.rng.integers(0, V, n)] for n in (1, 3, S, 2)]
        shared = self.batched(wpath, self.write_prompts("shared.txt", prompts), new)
        got = [json.loads(l)["tokens"] for l in shared.out.decode().splitlines()]
        want = [self.ref_greedy(w, p, new) for p in prompts]
        self.check(f"{len(prompts)} prompts sharing a {len(head)}-token prefix: each == the "
                   "reference", got == want,
                   "\n    ".join(f"{ids_text(a)} | {ids_text(b)}" for a, b in zip(got, want)))
        line = paged_line(shared)
        self.check("the shared prefix's whole blocks were reused",
                   line is not None and line[2] >= 2 * S, indent(shared.stderr(), keep=6))

        # A bf16 model (weights and pool in bf16): the same tokens as the unpaged bf16 model
        # on the same prompts (weights read from a folder, converted on load).
        folder = os.path.join(self.work, "bf16-weights")
        os.makedirs(folder, exist_ok=True)
        shutil.copy(wpath, os.path.join(folder, "model.safetensors"))
        outputs = []
        for tag, sets in (("paged", self.sets),
                          ("unpaged", {k: v for k, v in self.sets.items()
                                       if k not in ("kv_block", "kv_blocks")})):
            mlir, so = (os.path.join(self.work, f"bf16-{tag}.{e}") for e in ("mlir", "so"))
            self.tools.run("tfc-trace", [self.model] + [a for k, v in sets.items()
                                                         for a in ("--set", f"{k}={v}")] +
                           ["-o", mlir])
            self.tools.run("tfc", [mlir, "--precision=bf16", "-o", so])
            result = self.tools.run("tfc-run", [so, "generate", "--weights", folder,
                                                "--prompts", self.write_prompts(
                                                    "bf16.txt", prompts), "--max-new-tokens",
                                                new])
            outputs.append([json.loads(l)["tokens"] for l in result.out.decode().splitlines()])
        self.check("--precision=bf16 (a bf16 pool): the unpaged bf16 model's tokens",
                   outputs[0] == outputs[1] and len(outputs[0]) == len(prompts),
                   "\n    ".join(f"{ids_text(a)} | {ids_text(b)}" for a, b in zip(*outputs)))

    def check_tokenizer(self, w, wpath, prompt):
        """--prompt TEXT with a byte-level tokenizer; streamed text; <|endoftext|>."""
        tok_dir = write_tokenizer(os.path.join(self.work, "tok"), list(range(256)))
        text = "Hello, tfc!"
        by_text = self.tools.run("tfc-run", [self.so, "generate", "--weights", wpath,
                                             "--prompt", text, "--tokenizer", tok_dir,
                                             "--max-new-tokens", 16])
        by_ids = self.generate(wpath, list(text.encode()), 16)
        self.check("--prompt TEXT --tokenizer == --prompt-tokens of its bytes",
                   by_text.ids() == by_ids.ids() and len(by_text.ids()) == 16,
                   f"\n    text {ids_text(by_text.ids())}\n    ids  {ids_text(by_ids.ids())}")
        self.check("streamed text == the bytes of the ids", by_text.text() == bytes(by_text.ids()),
                   f"text {by_text.text()[:40]!r}")
        # <|endoftext|> takes the id of the greedy run's 6th token (its first occurrence
        # ends the run); that byte's token moves to id 256, beyond the model's vocabulary.
        greedy = self.ref_greedy(w, prompt, NEW_TOKENS)
        eos = greedy[5]
        k = greedy.index(eos)
        ids = list(range(256))
        ids[eos] = 256
        eos_dir = write_tokenizer(os.path.join(self.work, "tok_eos"), ids, eos_id=eos)
        run = self.generate(wpath, prompt, NEW_TOKENS, extra=["--tokenizer", eos_dir])
        want_text = bytes(greedy[:k])
        self.check("stops at <|endoftext|> (included in the ids, not in the text)",
                   run.ids() == greedy[:k + 1] and run.text() == want_text,
                   f"eos {eos} (step {k})\n    tfc  {ids_text(run.ids())}\n    want "
                   f"{ids_text(greedy[:k + 1])}\n    text {run.text()!r} want {want_text!r}")

    def run_encdec(self, w, wpath, wp, wp_path):
        s = self.sets
        S, T, V = s["src_len"], s["tgt_len"], s["vocab_size"]
        src = [int(t) for t in self.rng.integers(0, 10, S)]
        for name, weights, path in (("init weights", w, wpath), ("perturbed weights", wp, wp_path)):
            def one():
                run = self.generate(path, src, None)
                got = run.ids()
                want = [int(t) for t in ref.encdec_greedy(
                    weights, np.asarray(src)[None], T - 1, V - 2, s["n_head"])[0, 1:]]
                self.check(f"greedy {T - 1} tokens == reference ({name})", got == want,
                           f"\n    tfc {ids_text(got)}\n    ref {ids_text(want)}")
                for line in self.speed(run):
                    print("    " + line)
            self.step(f"greedy ({name})", one)

        def errors():
            self.expect_failure("--temperature 1 is refused",
                                self.generate(wpath, src, None, ["--temperature", "1"],
                                              check=False),
                                "encdec generation is greedy")
            self.expect_failure(f"{S - 1} source tokens (not {S}) fails cleanly",
                                self.generate(wpath, src[:-1], None, check=False),
                                f"exactly {S} source tokens")
            self.expect_failure(f"token id {V} >= vocab fails cleanly",
                                self.generate(wpath, src[:-1] + [V], None, check=False),
                                "out of range")
        self.step("errors", errors)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True, help="directory of tfc, tfc-trace, tfc-run")
    ap.add_argument("--work-dir", help="scratch directory (default: a fresh temp dir)")
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"default {DEFAULT_MODELS}")
    ap.add_argument("--seed", type=int, help="base seed (default: fresh, printed)")
    args = ap.parse_args(argv)

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") % (2**31)
    print(f"check_generate: seed {seed} (reproduce with --seed {seed})")
    print(f"reference: {REF_SOURCE}")
    missing = [f for f in REF_NEEDS if not hasattr(ref, f)]
    if missing:
        print(f"[FAIL] reference: {REF_SOURCE} lacks {', '.join(missing)}\n0 passed, 1 failed")
        return 1
    work = args.work_dir or tempfile.mkdtemp(prefix="tfc-e2e-generate-")
    if args.work_dir and os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work, exist_ok=True)
    print(f"work dir: {work}")
    tools = Tools(os.path.abspath(args.bin_dir))
    results = Results()
    speeds = []
    t0 = time.time()
    for i, key in enumerate(m.strip() for m in args.models.split(",") if m.strip()):
        if key not in CONFIGS:
            results.verdict(f"model {key}", False, f"unknown (known: {', '.join(CONFIGS)})")
            continue
        ModelCheck(key, CONFIGS[key], tools, os.path.join(work, key), seed + i, results,
                   speeds).run()
    if speeds:
        print("\nspeed (greedy, init weights; wall clock, load excluded):")
        for label, p, pr, d, dr in speeds:
            print(f"  {label:24s} prefill {p:3d} tokens {pr:10.1f} tokens/s   "
                  f"decode {d:3d} tokens {dr:10.1f} tokens/s")
    print(f"\ntotal {time.time() - t0:.1f} s")
    print(results.summary())
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())

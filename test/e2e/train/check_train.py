#!/usr/bin/env python3
"""End-to-end check of `tfc-run train` on a small GPT-2.

Traces gpt2 with a small config, compiles it with --optimizer=adamw, writes a synthetic
corpus (a repeating pattern with noise, uint16 like nanoGPT's train.bin) and checks:
  1. 300 steps: the loss falls (mean of the last 50 steps < 0.7 x mean of the first 50),
     the CSV log has every step, the eval loss falls, and the --plot PNG decodes with
     tfc-run's independent decoder (tools/tfc-run/test/decode_png.py: CRCs, filters, size, curve colours);
  2. resume: 20 steps straight vs 10 + --resume 10 give byte-identical parameters and
     optimizer state;
  3. NaN: --lr 1e30 stops with a message naming the step, exit 1, and the last good
     checkpoint stays (finite, at an earlier step);
  4. bad input: token ids >= vocab (file and offset named), a too-short file, a batch the
     model was not compiled for (with the tfc-trace hint), a checkpoint of another model.
Exit 0 when every check passes; prints the numbers either way.
"""
import argparse
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "tfc-run", "test"))
from decode_png import decode as decode_png_file  # noqa: E402

VOCAB, BATCH, SEQ = 64, 4, 32
GPT2 = ["n_layer=2", "n_head=2", "n_embd=32", f"vocab_size={VOCAB}", "n_ctx=64",
        f"batch={BATCH}", f"seq={SEQ}", "prefill_len=16"]

failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        failures.append(message)


TOOL_TIMEOUT_S = 1800  # the longest run: 300 training steps


def run(cmd, expect=0, timeout=TOOL_TIMEOUT_S, **kwargs):
    """Runs cmd; exits the check with FAIL naming it when it exits otherwise
    than `expect` or runs past `timeout` seconds (a hung tool must not stall CI)."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"FAIL: timed out after {timeout} s: {' '.join(cmd)}")
    if expect is not None and result.returncode != expect:
        print("$ " + " ".join(cmd))
        print(result.stdout[-3000:])
        print(result.stderr[-3000:])
        raise SystemExit(f"FAIL: exit {result.returncode}, expected {expect}: {' '.join(cmd)}")
    return result


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
    return tensors, meta, header


def decode_png(path):
    """The plot through tfc-run's independent PNG decoder: size and the set of colours."""
    width, height, rgb, _ = decode_png_file(path)
    return width, height, {rgb[i:i + 3] for i in range(0, len(rgb), 3)}


def corpus(count, seed):
    pick = random.Random(0)
    pattern = [pick.randrange(VOCAB) for _ in range(29)]  # the same in every split
    rng = random.Random(seed)
    tokens = []
    for i in range(count):
        tokens.append(rng.randrange(VOCAB) if rng.random() < 0.1 else pattern[i % len(pattern)])
    return tokens


def write_u16(path, tokens):
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    tfc = os.path.join(args.bin_dir, "tfc")
    trace = os.path.join(args.bin_dir, "tfc-trace")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = lambda name: os.path.join(work, name)

    sets = sum((["--set", s] for s in GPT2), [])
    run([trace, "gpt2", *sets, "-o", p("gpt2.mlir")])
    start = time.time()
    compiled = run([tfc, p("gpt2.mlir"), "--optimizer=adamw", "-o", p("gpt2.so")], expect=None)
    if compiled.returncode != 0:
        errors = [l for l in compiled.stderr.splitlines() if "error" in l]
        print("FAIL: tfc --optimizer=adamw could not compile the training step:")
        print("\n".join(errors[:5]) or compiled.stderr[-2000:])
        return 1
    print(f"compiled gpt2 ({' '.join(GPT2)}) with --optimizer=adamw in {time.time() - start:.1f}s")

    write_u16(p("train.bin"), corpus(50000, 1))
    write_u16(p("val.bin"), corpus(5000, 2))
    model = p("gpt2.so")
    shapes = ["--batch", str(BATCH), "--seq", str(SEQ)]
    common = [tfc_run, model, "train", "--data", p("train.bin")] + shapes

    # 1. Training: the loss falls.
    start = time.time()
    result = run(common + ["--init-seed", "0", "--steps", str(args.steps), "--lr", "3e-3",
                           "--warmup", "20", "--schedule", "cosine", "--min-lr", "3e-4",
                           "--eval-data", p("val.bin"), "--eval-every", "50",
                           "--eval-batches", "10", "--save", p("run.safetensors"),
                           "--save-every", "100", "--log", p("train.csv"),
                           "--plot", p("loss.png")])
    seconds = time.time() - start
    rows = [l.split(",") for l in open(p("train.csv")).read().splitlines()[1:]]
    check(len(rows) == args.steps, f"the log has {len(rows)} rows for {args.steps} steps")
    losses = [float(r[1]) for r in rows]
    evals = [(int(r[0]), float(r[5])) for r in rows if len(r) > 5 and r[5]]
    first, last = sum(losses[:50]) / 50, sum(losses[-50:]) / 50
    print(f"loss: first 50 steps mean {first:.4f}, last 50 mean {last:.4f} "
          f"(ratio {last / first:.3f}); ln(V) = {math.log(VOCAB):.4f}")
    print("loss every 25 steps: " + ", ".join(f"{losses[i]:.3f}" for i in range(0, len(losses), 25)))
    print("eval loss: " + ", ".join(f"{s}: {v:.3f}" for s, v in evals))
    print(f"{args.steps} steps in {seconds:.1f}s ({args.steps * BATCH * SEQ / seconds:.0f} tok/s)")
    check(last < 0.7 * first, "mean loss of the last 50 steps < 0.7 x the first 50")
    window = [sum(losses[i:i + 50]) / 50 for i in range(0, len(losses) - 49, 50)]
    check(all(b < a * 1.02 for a, b in zip(window, window[1:])),
          "the 50-step mean loss falls steadily: " + ", ".join(f"{w:.3f}" for w in window))
    check(len(evals) >= 2 and evals[-1][1] < evals[0][1], "the eval loss falls")
    width, height, pixels = decode_png(p("loss.png"))
    check((width, height) == (800, 500) and bytes([20, 80, 200]) in pixels,
          f"loss.png decodes ({width}x{height}, the curve drawn)")
    tensors, meta, _ = read_safetensors(p("run.safetensors"))
    check(meta.get("step") == str(args.steps) and "state.train.step" in tensors and
          any(k.startswith("state.opt.m.") for k in tensors) and "wte.weight" in tensors,
          "the checkpoint holds parameters, state.* and the step")

    # 2. Resume: 20 straight == 10 + resume 10, byte for byte.
    hyper = ["--lr", "3e-3", "--warmup", "5", "--schedule", "cosine", "--seed", "7"]
    run(common + ["--init-seed", "3", "--steps", "20", "--save", p("straight.safetensors")] + hyper)
    run(common + ["--init-seed", "3", "--steps", "10", "--total-steps", "20",
                  "--save", p("split.safetensors")] + hyper)
    resumed = run(common + ["--resume", p("split.safetensors"), "--steps", "20",
                            "--save", p("split.safetensors")] + hyper)
    a, meta_a, _ = read_safetensors(p("straight.safetensors"))
    b, meta_b, _ = read_safetensors(p("split.safetensors"))
    differ = sorted(k for k in a if a[k] != b.get(k))
    check(set(a) == set(b) and not differ and meta_a["step"] == meta_b["step"] == "20",
          f"20 steps straight == 10 + resume 10, byte for byte ({len(a)} tensors"
          + (f"; differ: {differ[:5]}" if differ else "") + ")")

    # Threads: generated loops and library kernels split rows, never a sum,
    # so 1 and 2 threads give the same bytes (run with
    # TFC_OPTIONS=--parallel-min-work=0 every parallel loop is split).
    run(common + ["--init-seed", "3", "--steps", "10", "--threads", "1",
                  "--save", p("one.safetensors")] + hyper)
    run(common + ["--init-seed", "3", "--steps", "10", "--threads", "2",
                  "--save", p("two.safetensors")] + hyper)
    one, _, _ = read_safetensors(p("one.safetensors"))
    two, _, _ = read_safetensors(p("two.safetensors"))
    differ = sorted(k for k in one if one[k] != two.get(k))
    check(set(one) == set(two) and not differ,
          "10 steps on 1 and on 2 threads give the same checkpoint, byte for byte"
          + (f" (differ: {differ[:5]})" if differ else ""))

    # 3. NaN: stop, name the step, keep the last good checkpoint.
    run(common + ["--init-seed", "0", "--steps", "5", "--save", p("nan.safetensors")])
    bad = run(common + ["--resume", p("nan.safetensors"), "--steps", "100", "--lr", "1e30",
                        "--grad-clip", "0", "--save-every", "1", "--save", p("nan.safetensors")],
              expect=1)
    message = bad.stderr.strip().splitlines()[-1]
    print("  " + message)
    kept, kept_meta, _ = read_safetensors(p("nan.safetensors"))
    finite = all(all(math.isfinite(x) for x in struct.unpack(f"<{len(v) // 4}f", v))
                 for k, v in kept.items() if k != "state.train.step")
    step = int(kept_meta["step"])
    check("stopping without saving" in message and f"step {step + 1}:" in message and finite,
          f"lr 1e30 stops at step {step + 1}, exit 1; the checkpoint of step {step} is kept and finite")

    # 4. Bad input.
    tokens = corpus(2000, 3)
    tokens[1234] = VOCAB + 5
    write_u16(p("bad.bin"), tokens)
    bad = run([tfc_run, model, "train", *shapes, "--init-seed", "0", "--steps", "3", "--data", p("bad.bin"),
                        "--save", p("x.safetensors")], expect=1)
    check(f"bad.bin: token id {VOCAB + 5} at offset 1234" in bad.stderr,
          "a token id >= vocab names the file and the offset")
    write_u16(p("short.bin"), corpus(SEQ, 4))
    short = run([tfc_run, model, "train", *shapes, "--init-seed", "0", "--steps", "3", "--data", p("short.bin"),
                          "--save", p("x.safetensors")], expect=1)
    check("too few" in short.stderr, "a too-short data file is refused")
    shape = run([tfc_run, model, "train", "--data", p("train.bin"), "--batch", "8", "--seq",
                 str(SEQ), "--init-seed", "0", "--steps", "3", "--save", p("x.safetensors")], expect=1)
    check(f"was compiled for --batch {BATCH} --seq {SEQ}" in shape.stderr and
          "tfc-trace" in shape.stderr, "a batch the model was not compiled for says how to retrace")
    run([trace, "gpt2", *sets, "--set", "n_embd=48", "-o", p("other.mlir")])
    # The other model must compile: if it does not, the check cannot run,
    # which is a failure, not a pass.
    other = run([tfc, p("other.mlir"), "--optimizer=adamw", "-o", p("other.so")], expect=None)
    check(other.returncode == 0, "the other model (n_embd=48) compiles"
          + ("" if other.returncode == 0 else f": exit {other.returncode}\n{other.stderr[-2000:]}"))
    if other.returncode == 0:
        wrong = run([tfc_run, p("other.so"), "train", "--data", p("train.bin"), "--resume",
                     p("run.safetensors"), "--steps", str(args.steps + 5),
                     "--save", p("y.safetensors")], expect=1)
        check("written for another model" in wrong.stderr, "a checkpoint of another model is refused")

    print(f"\n{len(failures)} check(s) failed" if failures else "\nall checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Dropout in training (gpt2 traced with --set dropout=0.1).

Checks that the masks are a function of the seed alone: `loss_train` with
the same dropout_seed gives the same loss, another seed another loss, and
differs from the dropout-free `loss`; `tfc-run train` gives byte-identical
checkpoints with 1 and 2 threads, and a run resumed halfway equals the
uninterrupted one. Ends with one line `N passed, M failed`.

The tokens, targets and corpus are random: the seed is printed first;
reproduce with --seed S or TFC_TEST_SEED=S.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(f"{'PASS' if ok else 'FAIL'} {name}{(': ' + detail) if detail else ''}")
    passed += ok
    failed += not ok


TOOL_TIMEOUT_S = 900  # no hung tool may stall CI


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"timed out after {TOOL_TIMEOUT_S} s: {' '.join(cmd)}")
        raise SystemExit(f"0 passed, {failed + 1} failed")
    if p.returncode != 0:
        print(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
        raise SystemExit(f"0 passed, {failed + 1} failed")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the tokens, targets and corpus (default: $TFC_TEST_SEED, "
                         "else fresh)")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    b = lambda tool: os.path.join(a.bin_dir, tool)
    w = lambda name: os.path.join(a.work_dir, name)

    run([b("tfc-trace"), "gpt2", "--set", "batch=2", "--set", "seq=16", "--set", "dropout=0.1",
         "-o", w("d.mlir")])
    run([b("tfc"), w("d.mlir"), "--optimizer=adamw", "-o", w("d.so")])
    run([b("tfc-run"), w("d.so"), "init", "--seed", "3", "-o", w("w.safetensors")])
    seed = a.seed
    if seed is None and os.environ.get("TFC_TEST_SEED"):
        seed = int(os.environ["TFC_TEST_SEED"])
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little") % (2**31)
    print(f"seed {seed} (reproduce with --seed {seed} or TFC_TEST_SEED={seed})", flush=True)
    rng = np.random.default_rng(seed)
    np.save(w("tokens.npy"), rng.integers(0, 256, (2, 16), dtype=np.int32))
    np.save(w("targets.npy"), rng.integers(0, 256, (2, 16), dtype=np.int32))
    rng.integers(0, 256, 4000).astype(np.uint16).tofile(w("data.bin"))

    def loss(entry, seed=None):
        cmd = [b("tfc-run"), w("d.so"), "call", entry, "--weights", w("w.safetensors"),
               "--in", "tokens=" + w("tokens.npy"), "--in", "targets=" + w("targets.npy"),
               "--out-dir", w("out")]
        if seed is not None:
            cmd += ["--in", f"dropout_seed={seed}"]
        run(cmd)
        return float(np.load(w("out/loss.npy")))

    plain = loss("loss")
    a1, a2, other = loss("loss_train", 7), loss("loss_train", 7), loss("loss_train", 8)
    check("same dropout_seed, same loss", a1 == a2, f"{a1} vs {a2}")
    check("another dropout_seed, another loss", a1 != other, f"{a1} vs {other}")
    check("loss_train differs from the dropout-free loss", a1 != plain, f"{a1} vs {plain}")

    def train(out, steps, threads, resume=None):
        cmd = [b("tfc-run"), w("d.so"), "train", "--data", w("data.bin"), "--steps", str(steps),
               "--batch", "2", "--seq", "16", "--lr", "1e-3", "--threads", str(threads),
               "--save", w(out)]
        cmd += ["--resume", w(resume)] if resume else ["--weights", w("w.safetensors")]
        run(cmd)
        with open(w(out), "rb") as f:
            return f.read()

    one = train("t1.safetensors", 12, 1)
    two = train("t2.safetensors", 12, 2)
    check("1 and 2 threads give identical checkpoints", one == two)
    train("half.safetensors", 6, 2)
    resumed = train("resumed.safetensors", 12, 2, resume="half.safetensors")
    check("resumed halfway equals uninterrupted", resumed == two)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

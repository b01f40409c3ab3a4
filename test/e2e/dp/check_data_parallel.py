#!/usr/bin/env python3
"""End-to-end check of data-parallel training (tfc --dp=N, mpirun -np N tfc-run ... train).

A small GPT-2 compiled three ways: one process at the global batch G (the reference), and
--dp=2 / --dp=4 at the per-rank batch G/2 and G/4. Each trains 10 steps with AdamW and with
SGD (fp32, no dropout) from the same initial weights on the same data; each rank reads its own rows of the
global batch (BatchSampler), so the averaged gradients, and the weights, must equal the single
process's within 1e-5 relative: with SGD (momentum) per element (max |a - b| / max |b| per
tensor); with AdamW, which turns gradients at rounding-noise level into O(lr) updates, per
tensor as a whole (||a - b|| / ||b||), the attention's key bias (exact gradient zero) only
staying at noise level. Also checked:
  - only rank 0 prints the step lines and writes the checkpoint and the log;
  - resuming from rank 0's checkpoint under mpirun continues bit-identically;
  - gradient buckets of several sizes (--dp-bucket-mb 0, 8 KB, the default 25 MB, -1 for one
    blocking all-reduce per gradient) and --dp-overlap=false: each equals one process; at
    DP=2 all give the same bytes; a rerun gives the same bytes;
  - the loss in the log equals the single process's per step;
  - a world size other than the compiled one is refused before any step, with a message;
  - an artifact compiled for one process is refused under mpirun -np 2;
  (a rank that stalls is test/Tools/comm/communicator-mpi.test's).
Prints the numbers and one verdict line.
"""
import argparse
import os
import random
import shutil
import struct
import sys
import time

import numpy as np

_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_E2E, "models"))
sys.path.insert(0, os.path.join(_E2E, "train"))
from check_train import run  # noqa: E402  (a tool run that fails the check by name)
from reference import read_safetensors as _read_with_meta  # noqa: E402


def read_safetensors(path):
    return _read_with_meta(path)[0]


VOCAB, SEQ, GLOBAL_BATCH, STEPS, N_EMBD = 64, 16, 4, 10, 32
GPT2 = ["n_layer=2", "n_head=2", f"n_embd={N_EMBD}", f"vocab_size={VOCAB}", "n_ctx=32",
        f"seq={SEQ}", "prefill_len=8"]
RTOL = 1e-5
failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        failures.append(message)


def read_losses(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    return [float(r[1]) for r in rows[1:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    args = parser.parse_args()
    tfc = os.path.join(args.bin_dir, "tfc")
    trace = os.path.join(args.bin_dir, "tfc-trace")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    mpirun = args.mpirun.split() + ["--oversubscribe"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = lambda name: os.path.join(work, name)

    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    tokens = [rng.randrange(VOCAB) for _ in range(20000)]
    with open(p("train.bin"), "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    seed = rng.randrange(1 << 30)
    print(f"data: 20000 random tokens; sampler seed {seed}")

    models = {}
    for world in (1, 2, 4):
        batch = GLOBAL_BATCH // world
        sets = sum((["--set", s] for s in GPT2 + [f"batch={batch}"]), [])
        run([trace, "gpt2", *sets, "-o", p(f"b{batch}.mlir")])
        dp = [f"--dp={world}"] if world > 1 else []
        for opt in ("adamw", "sgd"):
            run([tfc, p(f"b{batch}.mlir"), f"--optimizer={opt}", *dp, "-o",
                 p(f"{opt}-dp{world}.so")])
            models[opt, world] = p(f"{opt}-dp{world}.so")
    models[1], models[2] = models["adamw", 1], models["adamw", 2]
    hyper = {"adamw": ["--lr", "3e-3", "--warmup", "2"],
             "sgd": ["--lr", "0.3", "--momentum", "0.9"]}

    def train(world, tag, extra=(), expect=0, timeout=600, launch=True, opt="adamw",
              model=None):
        cmd = [tfc_run, model or models[opt, world], "train", "--data", p("train.bin"), "--init-seed",
               "0", "--seed", str(seed), "--steps", str(STEPS), *hyper[opt],
               "--save", p(f"{tag}.safetensors"), "--log", p(f"{tag}.csv"), *extra]
        if launch and world > 1:
            cmd = mpirun + ["-np", str(world)] + cmd
        return run(cmd, expect=expect, timeout=timeout, env=env)

    def worst_difference(opt, world, got, reference):
        """The largest relative difference of a tensor (the measure the optimizer needs)."""
        worst, worst_name = 0.0, ""
        for name, want in reference.items():
            if want.dtype != np.float32:
                check(np.array_equal(got[name], want), f"{opt} DP={world}: {name} equal")
                continue
            a, b = got[name].astype(np.float64).ravel(), want.astype(np.float64).ravel()
            if opt == "adamw" and name.endswith("attn.c_attn.bias"):
                # The key bias (columns [C, 2C)) has an exact gradient of zero (softmax
                # does not change when every score of a query moves by q.b): what it gets
                # is rounding noise, which AdamW normalizes into updates of random sign.
                # It must stay at noise level in both runs, and is left out.
                key = np.arange(N_EMBD, 2 * N_EMBD)
                noise = max(float(np.max(np.abs(a[key]))), float(np.max(np.abs(b[key]))))
                check(noise < 1e-4, f"{opt} DP={world}: {name}: the key bias stays at "
                      f"noise level ({noise:.1e}) in both runs")
                a, b = np.delete(a, key), np.delete(b, key)
            if opt == "sgd":
                # The update is linear in the gradient: elementwise, max |a-b| / max |b|.
                rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
            else:
                # AdamW divides each gradient by its own running RMS, so an element whose
                # gradient is near rounding noise moves by O(lr) whatever the summation
                # order: compare each tensor as a whole, ||a-b|| / ||b||.
                rel = float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(b)), 1e-30)
            if rel > worst:
                worst, worst_name = rel, name
        return worst, worst_name

    for opt in ("adamw", "sgd"):
        start = time.time()
        train(1, f"{opt}-single", opt=opt)
        t_single = time.time() - start
        reference = read_safetensors(p(f"{opt}-single.safetensors"))
        ref_losses = read_losses(p(f"{opt}-single.csv"))
        for world in (2, 4):
            start = time.time()
            result = train(world, f"{opt}-dp{world}", opt=opt)
            seconds = time.time() - start
            got = read_safetensors(p(f"{opt}-dp{world}.safetensors"))
            check(set(got) == set(reference),
                  f"{opt} DP={world}: the checkpoint holds the same tensors")
            worst, worst_name = worst_difference(opt, world, got, reference)
            measure = "max|a-b|/max|b|" if opt == "sgd" else "||a-b||/||b||"
            check(worst <= RTOL, f"{opt} DP={world} vs one process at batch {GLOBAL_BATCH} "
                  f"after {STEPS} steps: worst {measure} {worst:.2e} ({worst_name}) <= {RTOL:g}")
            losses = read_losses(p(f"{opt}-dp{world}.csv"))
            loss_diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
            check(len(losses) == STEPS and loss_diff <= RTOL,
                  f"{opt} DP={world}: the logged loss of every step equals the single "
                  f"process's (max rel diff {loss_diff:.2e})")
            text = result.stdout + result.stderr
            finals = text.count(f"step {STEPS}/{STEPS}")
            check(finals == 1 and text.count("trained steps") == 1,
                  f"{opt} DP={world}: only rank 0 prints ({finals} final step lines)")
            print(f"      {opt} DP={world}: {seconds:.1f} s for {STEPS} steps with mpirun "
                  f"start-up; one process at batch {GLOBAL_BATCH}: {t_single:.1f} s")

    # Gradient buckets (tfc --dp-bucket-mb, --dp-overlap): the default above (25 MB) puts this
    # model's gradients (about 150 KB) in one bucket; here every gradient alone (0), buckets
    # of about 8 KB (one to three gradients each), one blocking all-reduce per gradient (-1),
    # and buckets waited for right after their start. Each must equal one process as above
    # (SGD: elementwise); at DP=2 a sum of two floats does not depend on how the gradients are
    # grouped, so every layout must give the default's bytes; and a rerun the same bytes.
    reference = read_safetensors(p("sgd-single.safetensors"))
    default2 = read_safetensors(p("sgd-dp2.safetensors"))
    cases = [(2, ["--dp-bucket-mb=0"]), (2, ["--dp-bucket-mb=0.008"]),
             (2, ["--dp-bucket-mb=-1"]), (2, ["--dp-bucket-mb=0.008", "--dp-overlap=false"]),
             (4, ["--dp-bucket-mb=0"]), (4, ["--dp-bucket-mb=0.008"])]
    for i, (world, flags) in enumerate(cases):
        tag = f"sgd-dp{world}-buckets{i}"
        run([tfc, p(f"b{GLOBAL_BATCH // world}.mlir"), "--optimizer=sgd", f"--dp={world}",
             *flags, "-o", p(tag + ".so")])
        what = f"sgd DP={world} {' '.join(flags)}"
        train(world, tag, opt="sgd", model=p(tag + ".so"))
        got = read_safetensors(p(tag + ".safetensors"))
        worst, worst_name = worst_difference("sgd", world, got, reference)
        check(worst <= RTOL, f"{what} vs one process: worst max|a-b|/max|b| {worst:.2e} "
              f"({worst_name}) <= {RTOL:g}")
        if world == 2:
            check(all(np.array_equal(got[k], default2[k]) for k in default2),
                  f"{what}: the same bytes as the default buckets")
        if i == 1 or i == 5:
            train(world, tag + "-again", opt="sgd", model=p(tag + ".so"))
            again = read_safetensors(p(tag + "-again.safetensors"))
            check(all(np.array_equal(again[k], got[k]) for k in got),
                  f"{what}: a second run gives the same bytes")

    # Resume under mpirun: 5 steps, then --resume to 10, gives the bytes of 10 straight (the
    # checkpoint is rank 0's; every rank reads it and the sampler's position).
    run(mpirun + ["-np", "2", tfc_run, models["adamw", 2], "train", "--data", p("train.bin"),
                  "--init-seed", "0", "--seed", str(seed), "--steps", "5", "--total-steps",
                  str(STEPS), *hyper["adamw"], "--save", p("half.safetensors")], env=env)
    run(mpirun + ["-np", "2", tfc_run, models["adamw", 2], "train", "--data", p("train.bin"),
                  "--resume", p("half.safetensors"), "--steps", str(STEPS), *hyper["adamw"],
                  "--save", p("resumed.safetensors")], env=env)
    straight, resumed = read_safetensors(p("adamw-dp2.safetensors")), read_safetensors(
        p("resumed.safetensors"))
    check(set(straight) == set(resumed) and
          all(np.array_equal(straight[k], resumed[k]) for k in straight),
          "adamw DP=2: 5 steps + --resume to 10 equal 10 straight, bit for bit")

    # A world of another size than the compiled one, before any step.
    wrong = train(2, "wrong1", expect=None, launch=False)
    check(wrong.returncode != 0 and "compiled for 2 processes" in wrong.stderr and
          "not under mpirun" in wrong.stderr and "step 1" not in wrong.stderr,
          "--dp=2 artifact without mpirun: refused before any step: " +
          wrong.stderr.strip().splitlines()[-1][:160])
    wrong = run(mpirun + ["-np", "4", tfc_run, models[2], "train", "--data", p("train.bin"),
                          "--init-seed", "0", "--steps", "2", "--save", p("w.safetensors")],
                expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and "compiled for 2 processes" in text and
          "runs in a world of 4" in text and "step 1" not in text,
          "--dp=2 artifact under mpirun -np 4: refused before any step")
    wrong = run(mpirun + ["-np", "2", tfc_run, models[1], "train", "--data", p("train.bin"),
                          "--init-seed", "0", "--steps", "2", "--save", p("w.safetensors")],
                expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and "compiled for one process" in text,
          "a one-process artifact under mpirun -np 2: refused (compile with --dp)")

    # A rank that dies or stalls: test/Tools/comm/communicator-mpi.test stalls one
    # deterministically and checks the others' timeout. Killing a rank of a whole training job
    # found by pgrep proved flaky on a loaded machine (the pid found was not always rank 1's
    # training process yet), so it is not repeated here.

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": data-parallel training")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

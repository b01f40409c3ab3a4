#!/usr/bin/env python3
"""End-to-end check of gradient accumulation (tfc --microbatches=M, tfc-microbatch).

A small GPT-2 and a small LLaMA traced at a micro-batch of B rows and compiled with
--microbatches=M take M x B rows a step and make one optimizer update: after 10 steps
(AdamW and SGD, f32, the same initial weights and data) the weights, the optimizer state and
the logged loss equal one process compiled at M x B rows within 1e-5 relative (AdamW 1e-4), element-wise
(max |a - b| / max |b| per tensor; AdamW with --eps 1e-4, as check_data_parallel.py explains:
the micro-batches sum each gradient in another order, and eps 1e-8 turns rounding of
near-zero gradients into O(lr) differences). Also:
  - the train_step arena (tfc --report) does not grow with M (M = 8 holds no more than M = 4,
    both below one process's at 4 x B, whose activations are 4 times larger): each
    micro-batch's backward runs before the next one's forward;
  - with --mpi (only these): --dp=2 --microbatches=2 under mpirun equals one process at
    4 x B, and so does --tp=2 --microbatches=2;
  - resume: 5 steps, then --resume for 5 more, gives the bytes of 10 straight;
  - bad flags are refused with a message: --microbatches=0, without --optimizer.
Prints the numbers and one verdict line.
"""
import json
import os
import subprocess
import sys

import numpy as np

_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_E2E, "dp"))
from check_data_parallel import (  # noqa: E402
    check, compare, failures, mpi_job, random_tokens, read_losses, read_safetensors,
    same_tensors, STEPS, RTOL, TrainingRuns, VOCAB)

B = 2  # rows of one micro-batch
MODELS = {
    "gpt2": ["n_layer=2", "n_head=2", "n_embd=32", f"vocab_size={VOCAB}", "n_ctx=32",
             "seq=16", "prefill_len=8"],
    "llama": ["n_layer=2", "n_head=4", "n_kv_head=2", "dim=32", "hidden_dim=64",
              f"vocab_size={VOCAB}", "n_ctx=32", "seq=16", "prefill_len=8"],
}
HYPER = {"adamw": ["--lr", "3e-3", "--warmup", "2", "--eps", "1e-4"],
         "sgd": ["--lr", "0.3", "--momentum", "0.9"]}


def main():
    args, mpirun, env, p = mpi_job(__doc__, [("--mpi", {"action": "store_true"})])
    tfc = os.path.join(args.bin_dir, "tfc")
    runs = TrainingRuns(args, mpirun, env, p, MODELS, HYPER, random_tokens(p("train.bin")))
    traced = runs.traced

    def compile_(model, rows, tag, *flags):
        return runs.compile(model, tag, *flags, rows=rows)

    def arena(tag):
        with open(p(f"{tag}.json")) as f:
            return json.load(f)["entries"]["train_step"]["arena_bytes"]

    def train(so, tag, opt, world=1, steps=STEPS, extra=()):
        runs.train(so, tag, opt, world=world, steps=steps, extra=extra)
        return read_safetensors(p(f"{tag}.safetensors")), read_losses(p(f"{tag}.csv"))

    def same_run(label, got, reference):
        (weights, losses), (ref_weights, ref_losses) = got, reference
        compare(weights, ref_weights, label, "one process at the whole batch")
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
        check(len(losses) == STEPS and diff <= RTOL,
              f"{label}: the logged loss of every step equals one process's (max rel diff "
              f"{diff:.2e})")

    for model in MODELS:
        for opt in ("adamw", "sgd"):
            one = compile_(model, 4 * B, f"{model}-{opt}-one", f"--optimizer={opt}")
            reference = train(one, f"{model}-{opt}-one", opt)
            if not args.mpi:
                m4 = compile_(model, B, f"{model}-{opt}-m4", f"--optimizer={opt}",
                              "--microbatches=4")
                same_run(f"{model} {opt} --microbatches=4 at B={B}",
                         train(m4, f"{model}-{opt}-m4", opt), reference)
                if opt == "adamw":
                    # The arena holds one micro-batch's activations (and the gradients' running
                    # sums), whatever M.
                    sizes = {m: arena(f"{model}-{opt}-m{m}") for m in (4,)}
                    for m in (2, 8):
                        compile_(model, B, f"{model}-{opt}-m{m}", f"--optimizer={opt}",
                                 f"--microbatches={m}")
                        sizes[m] = arena(f"{model}-{opt}-m{m}")
                    whole = arena(f"{model}-{opt}-one")
                    check(sizes[2] <= sizes[4] and sizes[8] <= sizes[4] and sizes[4] < whole,
                          f"{model}: the train_step arena does not grow past M=4 (M=2: {sizes[2]}, "
                          f"M=4: {sizes[4]}, M=8: {sizes[8]} bytes), below one process's at "
                          f"{4 * B} rows ({whole} bytes)")
                    # Resume in the middle of an accumulated run: the bytes of a straight run.
                    train(m4, f"{model}-m4-half", opt, steps=5)
                    train(m4, f"{model}-m4-resumed", opt, steps=STEPS,
                          extra=["--resume", p(f"{model}-m4-half.safetensors")])
                    check(same_tensors(read_safetensors(p(f"{model}-m4-resumed.safetensors")),
                                       read_safetensors(p(f"{model}-{opt}-m4.safetensors"))),
                          f"{model} --microbatches=4: 5 steps + --resume 5 give the bytes of 10")

            if args.mpi:
                # Composed with data and tensor parallelism: 2 ranks x 2 micro-batches of B.
                dp = compile_(model, B, f"{model}-dp2-m2", f"--optimizer={opt}", "--dp=2",
                              "--microbatches=2")
                same_run(f"{model} --dp=2 --microbatches=2 at B={B}",
                         train(dp, f"{model}-dp2-m2", opt, world=2), reference)
                tp = compile_(model, 2 * B, f"{model}-tp2-m2", f"--optimizer={opt}",
                              "--tp=2", "--microbatches=2")
                same_run(f"{model} --tp=2 --microbatches=2 at B={2 * B}",
                         train(tp, f"{model}-tp2-m2", opt, world=2), reference)

    # Refusals, before any work.
    mlir = traced("gpt2", B)
    for flags, want in ((["--optimizer=adamw", "--microbatches=0"],
                         "--microbatches=0: give the number of micro-batches"),
                        (["--microbatches=2"], "--microbatches=2 accumulates the gradients "
                                               "of train_step: it needs --optimizer")):
        result = subprocess.run([tfc, mlir, *flags, "-o", p("refused.so")],
                                capture_output=True, text=True)
        check(result.returncode != 0 and want in result.stderr and
              not os.path.exists(p("refused.so")),
              f"tfc {' '.join(flags)} is refused: {result.stderr.strip()[:120]!r}")

    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        sys.exit(1)
    print("PASSED: gradient accumulation equals one process at the whole batch")


if __name__ == "__main__":
    main()

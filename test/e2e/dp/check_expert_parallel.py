#!/usr/bin/env python3
"""End-to-end check of expert parallelism (tfc --ep=N) on CPU ranks.

A small Mixtral (2 layers, 4 experts, top-2) traced at 2 rows a rank. Under --ep=N each of N
ranks reads its slice of the global batch (as --dp=N does) and holds E/N experts of every
layer, computing them on every rank's tokens (all-gathered, the outputs reduce-scattered
back). So:
  - 10 AdamW steps at --ep=2 and --ep=4 equal --dp=2 and --dp=4 (weights and optimizer
    state within 1e-4, AdamW's tolerance in check_data_parallel.py; logged loss 1e-5): the
    same mean loss (each rank's load-balancing loss over its own rows, as --dp), its
    experts' sums taken in another order;
  - without the load-balancing loss (router_aux_loss_coef=0) --ep=2 equals one process at
    the whole batch within 1e-4;
  - each rank holds only its experts' tensors and their optimizer state (tfc-run train
    prints what each holds; every expert tensor on one rank), and rank 0's checkpoint holds
    every expert whole;
  - 5 steps + --resume to 10 equal 10 straight, bit for bit; the checkpoint resumes in the
    --dp=2 artifact of the same model (checkpoints do not depend on the layout);
  - an --ep=2 artifact under mpirun -np 3 is refused before any step, naming --ep=2;
  - bad layouts are refused at compile time: --ep=3 for 4 experts (naming both), --ep on a
    model without experts (gpt2), --ep with --dp, --ep without --optimizer.
Prints the numbers and one verdict line.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_data_parallel import (  # noqa: E402
    check, compare, parse_bytes, failures, mpi_job, random_tokens, read_losses, read_safetensors,
    same_tensors, STEPS, TrainingRuns, VOCAB)
from check_train import run  # noqa: E402

B = 2  # rows a rank
MIXTRAL = ["n_layer=2", "n_head=4", "n_kv_head=2", "dim=32", "hidden_dim=48", "n_expert=4",
           "n_expert_per_tok=2", f"vocab_size={VOCAB}", "n_ctx=32", "seq=16", "prefill_len=8"]
MODELS = {"mixtral": MIXTRAL,
          "gpt2": ["n_layer=2", "n_head=2", "n_embd=32", f"vocab_size={VOCAB}", "n_ctx=32",
                   "seq=16", "prefill_len=8"]}
HYPER = {"adamw": ["--lr", "3e-3", "--warmup", "2", "--eps", "1e-4"]}


def main():
    args, mpirun, env, p = mpi_job(__doc__)
    tfc = os.path.join(args.bin_dir, "tfc")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    seed = random_tokens(p("train.bin"))
    runs = TrainingRuns(args, mpirun, env, p, MODELS, HYPER, seed)
    compile_, train = runs.compile, runs.train

    for n in (2, 4):
        dp = compile_("mixtral", f"dp{n}", "--optimizer=adamw", f"--dp={n}", rows=B)
        train(dp, f"dp{n}", "adamw", world=n)
        ep = compile_("mixtral", f"ep{n}", "--optimizer=adamw", f"--ep={n}", rows=B)
        result = train(ep, f"ep{n}", "adamw", world=n)
        got = read_safetensors(p(f"ep{n}.safetensors"))
        compare(got, read_safetensors(p(f"dp{n}.safetensors")), f"mixtral --ep={n}",
                f"--dp={n}")
        losses, ref = read_losses(p(f"ep{n}.csv")), read_losses(p(f"dp{n}.csv"))
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
        check(len(losses) == STEPS and diff <= 1e-5,
              f"  ... and its logged loss every step (max rel diff {diff:.2e})")
        text = result.stdout + result.stderr
        held = re.search(r"experts: the ranks hold (.*) of the (.*) of parameters and state",
                         text)
        per_rank = [parse_bytes(b) for b in held.group(1).split(", ")] if held else []
        total = parse_bytes(held.group(2)) if held else 0
        expert_bytes = sum(t.size * t.itemsize for k, t in got.items() if ".experts." in k)
        # The KV cache of the dropped generation entries stays on rank 0.
        kv_bytes = sum(t.size * t.itemsize for k, t in got.items() if k.startswith("state.kv."))
        # Each rank: everything but the experts (and the cache), and 1/n of the experts.
        want = [total - kv_bytes - expert_bytes + expert_bytes / n + (kv_bytes if r == 0 else 0)
                for r in range(n)]
        check(len(per_rank) == n and all(abs(b - w) <= 16 for b, w in zip(per_rank, want)) and
              f"expert parallel: {n} ranks" in text,
              f"  ... each rank holds its 1/{n} of the experts' tensors: "
              f"{held.group(1) if held else '(no line)'} of {held.group(2) if held else '?'} "
              f"(rank 0 also the KV cache)")

    # Without the load-balancing loss (whose per-rank means differ from the whole batch's, as
    # under --dp): one process at the whole batch.
    for rows in (B, 2 * B):
        sets = sum((["--set", s] for s in MIXTRAL + ["router_aux_loss_coef=0",
                                                   f"batch={rows}"]), [])
        run([os.path.join(args.bin_dir, "tfc-trace"), "mixtral", *sets, "-o",
             p(f"noaux-b{rows}.mlir")])
    run([tfc, p(f"noaux-b{2 * B}.mlir"), "--optimizer=adamw", "-o", p("one-noaux.so")])
    train(p("one-noaux.so"), "one-noaux", "adamw")
    run([tfc, p(f"noaux-b{B}.mlir"), "--optimizer=adamw", "--ep=2", "-o", p("ep2-noaux.so")])
    train(p("ep2-noaux.so"), "ep2-noaux", "adamw", world=2)
    compare(read_safetensors(p("ep2-noaux.safetensors")),
            read_safetensors(p("one-noaux.safetensors")),
            "mixtral --ep=2 (router_aux_loss_coef=0)", f"one process at {2 * B} rows")

    # Resume under mpirun, and in the --dp=2 artifact.
    ep2, dp2 = p("ep2.so"), p("dp2.so")
    train(ep2, "half", "adamw", world=2, steps=5)
    train(ep2, "resumed", "adamw", world=2, extra=["--resume", p("half.safetensors")])
    check(same_tensors(read_safetensors(p("resumed.safetensors")),
                       read_safetensors(p("ep2.safetensors"))),
          "mixtral --ep=2: 5 steps + --resume to 10 equal 10 straight, bit for bit")
    train(dp2, "resumed-dp", "adamw", world=2, extra=["--resume", p("half.safetensors")])
    compare(read_safetensors(p("resumed-dp.safetensors")),
            read_safetensors(p("dp2.safetensors")), "  ... its step-5 checkpoint resumed "
            "by --dp=2", "--dp=2 straight")

    wrong = run(mpirun + ["-np", "3", tfc_run, ep2, "train", "--data", p("train.bin"),
                          "--init-seed", "0", "--steps", "2", "--save", p("w.safetensors")],
                expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and "compiled for 2 processes (tfc --ep=2)" in text and
          "step 1" not in text, "--ep=2 artifact under mpirun -np 3: refused before any step")

    for model, flags, want in (
            ("mixtral", ["--optimizer=adamw", "--ep=3"],
             "--ep=3 does not divide the layer's 4 experts"),
            ("gpt2", ["--optimizer=adamw", "--ep=2"], "has no tfc.moe_ffn"),
            ("mixtral", ["--optimizer=adamw", "--ep=2", "--dp=2"],
             "--ep=2 with --dp is not built yet"),
            ("mixtral", ["--ep=2"], "--ep=2 shards the experts of train_step: it needs "
                                    "--optimizer")):
        runs.refused(model, B, flags, want)

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": expert-parallel training equals data parallel")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end check of pipeline parallelism (tfc --pp=S --microbatches=M) on CPU ranks.

Small gpt2 (tied wte, read by the first and the last stage) and llama models of 4 layers,
traced at a micro-batch of 2 rows, compiled with --microbatches=4 for one process (the
reference) and with --pp=S for S ranks under mpirun. The stages run the reference's own ops
(tfc-pipeline-split moves them, never changes them), so:
  - 10 AdamW steps (and SGD for gpt2) at S = 2 with both schedules (1f1b, gpipe) and at
    S = 4 (1f1b) leave rank 0's checkpoint (each stage's layers gathered) equal to the
    reference's, bit for bit, and log the same loss and gradient norm every step;
  - which also makes them equal one process compiled at the whole batch (8 rows, no
    micro-batches) within 1e-5 (checked at S = 2);
  - --dp=2 --pp=2 under mpirun -np 4 (2 micro-batches a replica) equals --dp=2 alone bit for
    bit, and one process within 1e-5;
  - --tp=2 --pp=2 under mpirun -np 4 (gpt2 and llama) equals --tp=2 alone with the same
    micro-batches bit for bit, and --dp=2 --pp=2 --tp=2 under mpirun -np 8 equals --dp=2
    --tp=2; both equal one process within 1e-5; --tp=2 --pp=2 resumes bit-identically; the
    8-rank artifact under mpirun -np 4 is refused before any step, naming the mesh;
  - --pp=2 with --dp=2 --zero=1 (also with --tp=2), --precision=bf16 and --precision=f16
    equals the same flags without --pp, bit for bit;
  - 5 steps + --resume to 10 under mpirun equal 10 straight, bit for bit; the pipeline's
    step-5 checkpoint resumes in the one-process reference (and the reverse) to the same
    bytes: checkpoints do not depend on the layout;
  - tfc --report gives each stage's FLOPs, parameter bytes, arena and link bytes, and the
    bubble: (S-1)/(M+S-1) for balanced stages, and the one predicted from the stages' FLOPs;
    tfc-run train (rank 0) prints what each stage measured waiting for the others, and what
    each stage's ranks hold: their own layers' parameters and optimizer state only (at most
    1.6/S of the model's each; S = 4 shares gpt2's wte and the KV cache on stage 0);
  - a rank that dies after step 6 ends the job non-zero (mpirun naming it, or the other's
    collective timing out with a message) and leaves the checkpoint of step 5 whole;
  - an artifact compiled for 2 stages is refused under mpirun -np 3 before any step;
  - bad layouts are refused at compile time: more stages than places to cut (naming both
    numbers: 11 stages at most for 4 layers, cut between sublayers), --pp without
    --optimizer, with a --tp that does not divide the features, an unknown --pp-schedule,
    --pp-schedule without --pp.
Prints the numbers and one verdict line.
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_data_parallel import (  # noqa: E402
    check, compare, parse_bytes, dead_rank_cases, failures, mpi_job, random_tokens, read_losses,
    read_safetensors, same_tensors, STEPS, TrainingRuns, VOCAB)
from check_train import run  # noqa: E402

B, M = 2, 4  # rows of a micro-batch, micro-batches a step
MODELS = {
    "gpt2": ["n_layer=4", "n_head=2", "n_embd=32", f"vocab_size={VOCAB}", "n_ctx=32",
             "seq=16", "prefill_len=8"],
    "llama": ["n_layer=4", "n_head=4", "n_kv_head=2", "dim=32", "hidden_dim=64",
              f"vocab_size={VOCAB}", "n_ctx=32", "seq=16", "prefill_len=8"],
}
HYPER = {"adamw": ["--lr", "3e-3", "--warmup", "2", "--eps", "1e-4"],
         "sgd": ["--lr", "0.3", "--momentum", "0.9"]}


def read_log(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    return [(r[1], r[3]) for r in rows[1:]]  # loss and grad_norm as printed


def main():
    args, mpirun, env, p = mpi_job(__doc__)
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    seed = random_tokens(p("train.bin"))
    runs = TrainingRuns(args, mpirun, env, p, MODELS, HYPER, seed)
    train = runs.train

    def compile_(model, tag, *flags, rows=B):
        return runs.compile(model, tag, *flags, rows=rows)

    for model in MODELS:
        for opt in ("adamw", "sgd") if model == "gpt2" else ("adamw",):
            ref = compile_(model, f"{model}-{opt}-ref", f"--optimizer={opt}",
                           f"--microbatches={M}")
            train(ref, f"{model}-{opt}-ref", opt)
            reference = read_safetensors(p(f"{model}-{opt}-ref.safetensors"))
            ref_log = read_log(p(f"{model}-{opt}-ref.csv"))
            layouts = [(2, "1f1b"), (2, "gpipe"), (4, "1f1b")] if opt == "adamw" else [(2, "1f1b")]
            for stages, schedule in layouts:
                tag = f"{model}-{opt}-pp{stages}-{schedule}"
                so = compile_(model, tag, f"--optimizer={opt}", f"--microbatches={M}",
                              f"--pp={stages}", f"--pp-schedule={schedule}")
                result = train(so, tag, opt, world=stages)
                got = read_safetensors(p(f"{tag}.safetensors"))
                check(same_tensors(got, reference),
                      f"{model} {opt} --pp={stages} {schedule}, {M} micro-batches: after "
                      f"{STEPS} steps the checkpoint equals one process's with "
                      f"--microbatches={M}, bit for bit ({len(reference)} tensors)")
                log = read_log(p(f"{tag}.csv"))
                check(log == ref_log and len(log) == STEPS,
                      f"  ... every step's logged loss and gradient norm equal")
                text = result.stdout + result.stderr
                waits = [line for line in text.splitlines()
                         if line.startswith("pipeline: the stages waited")]
                check(text.count(f"step {STEPS}/{STEPS}") == 1 and len(waits) == 1 and
                      f"pipeline parallel: {stages} stages" in text,
                      "  ... only rank 0 prints the step lines, and the measured waits: " +
                      (waits[0] if waits else "(none)"))
                # Each stage's ranks allocate only the tensors its entry touches.
                held = re.search(r"pipeline: the stages' ranks hold (.*) of the (.*) of "
                                 r"parameters and state", text)
                per_rank = [parse_bytes(b) for b in held.group(1).split(", ")] if held else []
                total = parse_bytes(held.group(2)) if held else 0
                check(len(per_rank) == stages and
                      all(0 < b < total / stages * 1.6 for b in per_rank) and
                      sum(per_rank) >= total * 0.999,
                      f"  ... each stage's ranks hold only their layers' parameters and state: "
                      f"{held.group(1) if held else '(no line)'} of "
                      f"{held.group(2) if held else '?'}")
                with open(p(f"{tag}.json")) as f:
                    pipeline = json.load(f)["pipeline"]
                balanced = (stages - 1) / (M + stages - 1)
                per_stage = pipeline["per_stage"]
                total_params = sum(t.size * t.itemsize for k, t in reference.items()
                                   if not k.startswith("state."))
                check(pipeline["stages"] == stages and pipeline["microbatches"] == M and
                      pipeline["schedule"] == schedule and
                      abs(pipeline["bubble_balanced"] - balanced) < 1e-12 and
                      balanced <= pipeline["bubble_predicted"] < 1 and
                      len(per_stage) == stages and
                      all(s["flops"] > 0 and 0 < s["parameter_bytes"] < total_params and
                          s["link_bytes"] > 0 for s in per_stage),
                      f"  ... --report: bubble {pipeline['bubble_predicted']:.3f} predicted "
                      f"from the stages' FLOPs ({balanced:.3f} if balanced); per stage FLOPs "
                      f"{[s['flops'] for s in per_stage]}, parameter bytes "
                      f"{[s['parameter_bytes'] for s in per_stage]} of {total_params}")

    # Against one process at the whole batch (no micro-batches): within rounding.
    whole = compile_("gpt2", "gpt2-whole", "--optimizer=adamw", rows=M * B)
    train(whole, "gpt2-whole", "adamw")
    compare(read_safetensors(p("gpt2-adamw-pp2-1f1b.safetensors")),
            read_safetensors(p("gpt2-whole.safetensors")), "gpt2 adamw --pp=2",
            f"one process at {M * B} rows")
    losses = read_losses(p("gpt2-adamw-pp2-1f1b.csv"))
    ref_losses = read_losses(p("gpt2-whole.csv"))
    diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    check(diff <= 1e-5, f"  ... and its logged loss every step (max rel diff {diff:.2e})")

    # Data parallel x pipeline (mpirun -np 4: rank d x 2 + s runs stage s of replica d, which
    # reads its half of the global batch): the ops of --dp=2 alone with the same micro-batches,
    # so its bytes; and one process at the whole batch within rounding.
    dp = compile_("gpt2", "gpt2-dp2", "--optimizer=adamw", "--dp=2", "--microbatches=2")
    train(dp, "gpt2-dp2", "adamw", world=2)
    dppp = compile_("gpt2", "gpt2-dp2-pp2", "--optimizer=adamw", "--dp=2", "--pp=2",
                    "--microbatches=2")
    result = train(dppp, "gpt2-dp2-pp2", "adamw", world=4)
    check(same_tensors(read_safetensors(p("gpt2-dp2-pp2.safetensors")),
                       read_safetensors(p("gpt2-dp2.safetensors"))) and
          read_log(p("gpt2-dp2-pp2.csv")) == read_log(p("gpt2-dp2.csv")),
          "gpt2 --dp=2 --pp=2 (4 ranks), 2 micro-batches: after 10 steps the checkpoint and "
          "the log equal --dp=2 alone's, bit for bit")
    compare(read_safetensors(p("gpt2-dp2-pp2.safetensors")),
            read_safetensors(p("gpt2-adamw-ref.safetensors")), "gpt2 --dp=2 --pp=2",
            f"one process with --microbatches={M}")
    text = result.stdout + result.stderr
    check(text.count(f"step {STEPS}/{STEPS}") == 1 and "data parallel: 2 replicas" in text,
          "  ... rank 0 alone prints, naming 2 data-parallel replicas")

    # Tensor x pipeline parallel (mpirun -np 4: rank s x 2 + t is slice t of stage s), and all
    # three (mpirun -np 8: rank (d x 2 + s) x 2 + t): the stages run the ops of the layout
    # without --pp, so its bytes; and one process within rounding.
    for model in MODELS:
        tp = compile_(model, f"{model}-tp2", "--optimizer=adamw", "--tp=2", f"--microbatches={M}")
        train(tp, f"{model}-tp2", "adamw", world=2)
        tag = f"{model}-tp2-pp2"
        tpp = compile_(model, tag, "--optimizer=adamw", "--tp=2", "--pp=2", f"--microbatches={M}")
        result = train(tpp, tag, "adamw", world=4)
        got = read_safetensors(p(f"{tag}.safetensors"))
        check(same_tensors(got, read_safetensors(p(f"{model}-tp2.safetensors"))) and
              read_log(p(f"{tag}.csv")) == read_log(p(f"{model}-tp2.csv")),
              f"{model} --tp=2 --pp=2 (4 ranks), {M} micro-batches: after {STEPS} steps the "
              f"checkpoint and the log equal --tp=2 alone's, bit for bit")
        compare(got, read_safetensors(p(f"{model}-adamw-ref.safetensors")),
                f"{model} --tp=2 --pp=2", f"one process with --microbatches={M}")
        text = result.stdout + result.stderr
        check("pipeline parallel: 2 stages, each split over 2 tensor-parallel processes" in text
              and "process mesh --pp=2 --tp=2: world rank s x 2 + t" in text,
              "  ... rank 0 names the stages, the slices and the mesh")
    dptp = compile_("gpt2", "gpt2-dp2-tp2", "--optimizer=adamw", "--dp=2", "--tp=2",
                    "--microbatches=2")
    train(dptp, "gpt2-dp2-tp2", "adamw", world=4)
    mesh = compile_("gpt2", "gpt2-dp2-pp2-tp2", "--optimizer=adamw", "--dp=2", "--pp=2",
                    "--tp=2", "--microbatches=2")
    result = train(mesh, "gpt2-dp2-pp2-tp2", "adamw", world=8)
    got = read_safetensors(p("gpt2-dp2-pp2-tp2.safetensors"))
    check(same_tensors(got, read_safetensors(p("gpt2-dp2-tp2.safetensors"))) and
          read_log(p("gpt2-dp2-pp2-tp2.csv")) == read_log(p("gpt2-dp2-tp2.csv")),
          "gpt2 --dp=2 --pp=2 --tp=2 (8 ranks), 2 micro-batches a replica: after 10 steps the "
          "checkpoint and the log equal --dp=2 --tp=2's, bit for bit")
    compare(got, read_safetensors(p("gpt2-adamw-ref.safetensors")), "gpt2 --dp=2 --pp=2 --tp=2",
            f"one process with --microbatches={M}")
    check("process mesh --dp=2 --pp=2 --tp=2: world rank (d x 2 + s) x 2 + t" in
          result.stdout + result.stderr, "  ... rank 0 names the mesh")
    # ZeRO-1 (each stage's optimizer state sharded over its data-parallel group, also in the
    # 3-D mesh) and 16-bit mixed precision (bf16; f16 with its loss scaler, whose step counter
    # lives on one stage): the layout without --pp, bit for bit.
    for tag, flags, world in (
            ("zero", ["--dp=2", "--zero=1"], 2),
            ("zero-tp2", ["--dp=2", "--zero=1", "--tp=2"], 4),
            ("bf16", ["--precision=bf16"], 1),
            ("f16", ["--precision=f16"], 1)):
        ref_so = compile_("gpt2", f"gpt2-{tag}", "--optimizer=adamw", "--microbatches=2", *flags)
        train(ref_so, f"gpt2-{tag}", "adamw", world=world)
        so = compile_("gpt2", f"gpt2-{tag}-pp2", "--optimizer=adamw", "--microbatches=2",
                      *flags, "--pp=2")
        train(so, f"gpt2-{tag}-pp2", "adamw", world=2 * world)
        check(same_tensors(read_safetensors(p(f"gpt2-{tag}-pp2.safetensors")),
                           read_safetensors(p(f"gpt2-{tag}.safetensors"))) and
              read_log(p(f"gpt2-{tag}-pp2.csv")) == read_log(p(f"gpt2-{tag}.csv")),
              f"gpt2 {' '.join(flags)} --pp=2 ({2 * world} ranks): after {STEPS} steps the "
              f"checkpoint and the log equal {' '.join(flags)} alone's, bit for bit")

    tpp = p("gpt2-tp2-pp2.so")
    train(tpp, "tpp-half", "adamw", world=4, steps=5)
    train(tpp, "tpp-resumed", "adamw", world=4, extra=["--resume", p("tpp-half.safetensors")])
    check(same_tensors(read_safetensors(p("tpp-resumed.safetensors")),
                       read_safetensors(p("gpt2-tp2-pp2.safetensors"))),
          "gpt2 --tp=2 --pp=2: 5 steps + --resume to 10 equal 10 straight, bit for bit")
    wrong = run(mpirun + ["-np", "4", tfc_run, mesh, "train", "--data", p("train.bin"),
                          "--init-seed", "0", "--steps", "2", "--save", p("w.safetensors")],
                expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and
          "compiled for 8 processes (tfc --dp=2 --pp=2 --tp=2)" in text and
          "recompile with --dp, --pp and --tp whose product is 4" in text and "step 1" not in text,
          "--dp=2 --pp=2 --tp=2 artifact under mpirun -np 4: refused before any step")

    # Resume: under mpirun, and across layouts (one process <-> pipeline).
    pp = p("gpt2-adamw-pp2-1f1b.so")
    ref = p("gpt2-adamw-ref.so")
    train(pp, "half", "adamw", world=2, steps=5)
    train(pp, "resumed", "adamw", world=2, extra=["--resume", p("half.safetensors")])
    straight = read_safetensors(p("gpt2-adamw-pp2-1f1b.safetensors"))
    check(same_tensors(read_safetensors(p("resumed.safetensors")), straight),
          "gpt2 --pp=2: 5 steps + --resume to 10 equal 10 straight, bit for bit")
    train(ref, "resumed-one", "adamw", extra=["--resume", p("half.safetensors")])
    check(same_tensors(read_safetensors(p("resumed-one.safetensors")), straight),
          "  ... the pipeline's step-5 checkpoint resumes in one process to the same bytes")
    train(ref, "half-one", "adamw", steps=5)
    train(pp, "resumed-pp", "adamw", world=2, extra=["--resume", p("half-one.safetensors")])
    check(same_tensors(read_safetensors(p("resumed-pp.safetensors")), straight),
          "  ... and one process's step-5 checkpoint resumes in the pipeline to the same bytes")

    # A rank that dies after step 6: the job ends non-zero; the step-5 checkpoint stays whole.
    dead_rank_cases(mpirun, env, tfc_run, pp, p, seed, HYPER["adamw"],
                    read_safetensors(p("half.safetensors")))

    # A world of another size than the compiled one, before any step.
    wrong = run(mpirun + ["-np", "3", tfc_run, pp, "train", "--data", p("train.bin"),
                          "--init-seed", "0", "--steps", "2", "--save", p("w.safetensors")],
                expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and "compiled for 2 processes (tfc --pp=2)" in text and
          "step 1" not in text,
          "--pp=2 artifact under mpirun -np 3: refused before any step")

    # Layouts that do not fit, refused at compile time with the numbers.
    for flags, want in (
            (["--optimizer=adamw", "--pp=12"], "so it splits into at most 11 pipeline "
                                               "stages, not 12"),
            (["--pp=2"], "--pp=2 splits train_step into stages: it needs --optimizer"),
            (["--optimizer=adamw", "--pp=2", "--tp=3"], "--tp=3 does not divide the 32 output "
                                                        "features"),
            (["--optimizer=adamw", "--pp=2", "--pp-schedule=zigzag"],
             "unknown --pp-schedule='zigzag' (expected 1f1b or gpipe)"),
            (["--optimizer=adamw", "--pp-schedule=gpipe"], "it needs --pp=S")):
        runs.refused("gpt2", B, flags, want)

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": pipeline-parallel training equals one process")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end check of tensor parallelism (tfc --tp=2, Megatron-LM's layout) on CPU ranks.

For small gpt2 and llama (grouped-query attention) models, compiled with --optimizer=sgd at
--tp=1 and at --tp=2: one process runs loss_grad on whole random weights (every parameter
random, biases and norms included, so the bias that a row-parallel linear adds after its
all-reduce counts); under mpirun -np 2 each rank runs the --tp=2 artifact's loss_grad on its
slice of the same weights, cut here by Megatron's rules written independently of the pass
(column-parallel QKV / MLP up / LLaMA gate: the output features, GPT-2's fused [Q|K|V] per
block; row-parallel attention output / MLP down: the input features; the rest whole). Then:
  - the loss of each rank equals the single process's within 1e-5 relative;
  - every gradient (each rank's slice of a split parameter put back together, a whole one
    on each rank) equals the single process's within 1e-5 relative per tensor
    (max |a - b| / max |b|);
  - 10 SGD steps under mpirun -np 2 from --init-seed 0 (each rank draws the whole weights
    and keeps its slice) leave, in rank 0's checkpoint (the ranks' slices gathered), the
    weights and momentum of one process, within 1e-4 relative (1e-5 for the losses it
    logs);
  - 5 steps + --resume to 10 under mpirun (each rank slicing the whole checkpoint) equal 10
    straight, bit for bit;
  - 10 steps under mpirun from --weights (the whole weights: each rank slices them) equal one
    process's from the same weights, and so from a Hugging Face directory of them (the
    pretrained loader, f16 tensors converted);
  - with bf16 (gpt2 and llama) and f16 (gpt2, loss scaling) mixed precision, 10 SGD steps
    under mpirun differ from one 16-bit process by the size of what the 16-bit rounding
    moves one process from f32 (within 4x over all tensors, 10x per tensor);
  - generate under mpirun (heads and KV cache split) gives the tokens of one process from
    the same weights, greedy and sampled with a seed, printed by rank 0 alone;
  - a rank that dies after step 6 ends the job non-zero (mpirun naming it, or the other's
    collective timing out with a message) and leaves the checkpoint of step 5 whole;
  - an artifact compiled for 2 ranks is refused in a world of another size before running;
  - --tp that does not divide the heads or the features is refused, naming both numbers.
Prints the numbers and one verdict line.
"""
import os
import sys

import numpy as np

_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_E2E, "models"))
sys.path.insert(0, os.path.join(_E2E, "train"))
from check_train import run  # noqa: E402  (a tool run that fails the check by name)
from reference import read_safetensors, write_safetensors  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_data_parallel  # noqa: E402
from check_data_parallel import dead_rank_cases, mpi_job  # noqa: E402

TP, RTOL, VOCAB, SEQ, BATCH, STEPS = 2, 1e-5, 64, 8, 2, 10
# After STEPS SGD steps (lr 0.3, momentum 0.9) the two runs' rounding differences (the
# row-parallel products sum their halves over the ranks) have gone through the training's
# own dynamics: llama's momentum buffers differed by 1.2e-6 to 2.25e-5 over 11 random seeds
# (gpt2's by at most 1e-6). A sharding or communication error moves them by O(1).
RTOL_TRAINED = 1e-4
MODELS = {
    "gpt2": ["n_layer=2", "n_head=4", "n_embd=32", f"vocab_size={VOCAB}", "n_ctx=16",
             f"seq={SEQ}", f"batch={BATCH}", "prefill_len=8"],
    "llama": ["n_layer=2", "n_head=4", "n_kv_head=2", "dim=32", "hidden_dim=64",
              f"vocab_size={VOCAB}", "n_ctx=16", f"seq={SEQ}", f"batch={BATCH}",
              "prefill_len=8"],
}
failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        failures.append(message)


def megatron_split(name):
    """(axis, blocks) of a parameter Megatron splits, in the model library's layouts (GPT-2's
    Conv1D (in, out), LLaMA's nn.Linear (out, in)); None: whole on every rank."""
    if name.endswith("attn.c_attn.weight"):
        return 1, 3
    if name.endswith("attn.c_attn.bias"):
        return 0, 3
    if name.endswith("mlp.c_fc.weight"):
        return 1, 1
    if name.endswith("mlp.c_fc.bias"):
        return 0, 1
    if name.endswith(("attn.c_proj.weight", "mlp.c_proj.weight")):
        return 0, 1
    if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight",
                      "up_proj.weight")):
        return 0, 1
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return 1, 1
    return None


def shard(full, split, rank):
    axis, blocks = split
    parts = np.split(full, blocks, axis=axis)
    return np.concatenate([np.split(p, TP, axis=axis)[rank] for p in parts], axis=axis)


def unshard(slices, split):
    axis, blocks = split
    per_rank = [np.split(s, blocks, axis=axis) for s in slices]
    return np.concatenate([per_rank[r][b] for b in range(blocks) for r in range(TP)],
                          axis=axis)


def rel(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)


def main():
    args, mpirun, env, p = mpi_job(__doc__)
    tfc = os.path.join(args.bin_dir, "tfc")
    trace = os.path.join(args.bin_dir, "tfc-trace")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    seed = int(os.environ.get("TFC_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    print(f"seed {seed} (reproduce with TFC_TEST_SEED={seed})")
    tokens = rng.integers(0, VOCAB, 20000)
    with open(p("train.bin"), "wb") as f:
        f.write(tokens.astype("<u2").tobytes())

    for model, config in MODELS.items():
        sets = sum((["--set", s] for s in config), [])
        run([trace, model, *sets, "-o", p(f"{model}.mlir")])
        for tp in (1, TP):
            run([tfc, p(f"{model}.mlir"), "--optimizer=sgd", f"--tp={tp}", "-o",
                 p(f"{model}-tp{tp}.so")])
        run([tfc_run, p(f"{model}-tp1.so"), "init", "--seed", "1", "-o", p("init.safetensors")])
        weights = {k: (v + rng.normal(0, 0.05, v.shape)).astype(np.float32)
                   for k, v in read_safetensors(p("init.safetensors"))[0].items()}
        write_safetensors(p(f"{model}-whole.safetensors"), weights)
        for rank in range(TP):
            write_safetensors(p(f"{model}-rank{rank}.safetensors"),
                              {k: shard(v, megatron_split(k), rank) if megatron_split(k) else v
                               for k, v in weights.items()})
        tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
        targets = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
        np.save(p("tokens.npy"), tokens)
        np.save(p("targets.npy"), targets)
        inputs = ["--in", f"tokens={p('tokens.npy')}", "--in", f"targets={p('targets.npy')}"]
        run([tfc_run, p(f"{model}-tp1.so"), "call", "loss_grad", "--weights",
             p(f"{model}-whole.safetensors"), *inputs, "--out-dir", p(f"{model}-out1")])
        # Rank 0 the whole weights (it keeps its slice), the others their slices of them;
        # each its own output directory.
        rank_cmd = (f"R=$OMPI_COMM_WORLD_RANK; W={p(model + '-rank')}$R.safetensors; "
                    f"[ $R = 0 ] && W={p(model + '-whole.safetensors')}; "
                    f"exec {tfc_run} {p(model + '-tp2.so')} call "
                    f"loss_grad --weights $W "
                    f"{' '.join(inputs)} --out-dir {p(model + '-out2-')}$R")
        run(mpirun + ["-np", str(TP), "sh", "-c", rank_cmd], env=env)
        load = lambda d: {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)}
        want = load(p(f"{model}-out1"))
        got = [load(p(f"{model}-out2-{r}")) for r in range(TP)]
        check(all(set(g) == set(want) for g in got),
              f"{model} TP={TP}: each rank writes the outputs of one process")
        worst, worst_name, split_count = 0.0, "", 0
        for name, w in want.items():
            param = name[len("grad."):] if name.startswith("grad.") else name
            split = megatron_split(param)
            if split:
                split_count += 1
                a = unshard([g[name] for g in got], split)
            else:
                # Whole on every rank: each rank's must be the whole gradient.
                for r in range(1, TP):
                    e = rel(got[r][name], w)
                    if e > worst:
                        worst, worst_name = e, f"{name} on rank {r}"
                a = got[0][name]
            if a.shape != w.shape:
                check(False, f"{model} TP={TP}: {name} is {a.shape} put together, "
                      f"one process has {w.shape}")
                continue
            e = rel(a, w)
            if e > worst:
                worst, worst_name = e, name
        check(split_count > 0, f"{model} TP={TP}: {split_count} outputs are split gradients")
        check(worst <= RTOL, f"{model} TP={TP} vs one process: loss and {len(want) - 1} "
              f"gradients, worst max|a-b|/max|b| {worst:.2e} ({worst_name}) <= {RTOL:g}")

        # Generation: the --tp=2 artifact's prefill and decode under mpirun (each rank its
        # heads and its slice of the KV cache) give the tokens of one process, greedy and
        # sampled with a seed; rank 0 alone prints them.
        prompt = " ".join(str(t) for t in rng.integers(0, VOCAB, 5))
        for how in (["--temperature", "0"], ["--temperature", "0.9", "--top-k", "20",
                                              "--seed", str(seed % 1000)]):
            outs = []
            for tp in (1, TP):
                res = run((mpirun + ["-np", str(TP)] if tp > 1 else []) +
                          [tfc_run, p(f"{model}-tp{tp}.so"), "generate", "--weights",
                           p(f"{model}-whole.safetensors"), "--prompt-tokens", prompt,
                           "--max-new-tokens", "8", *how], env=env)
                outs.append(res.stdout.strip().splitlines())
            check(len(outs[0]) == 1 and outs[1] == outs[0] and len(outs[0][0].split()) == 8,
                  f"{model} TP={TP} generate {' '.join(how)}: the tokens of one process, "
                  f"printed once ({outs[1]} vs {outs[0]})")

        # 10 SGD steps (momentum: the update is linear in the gradient, so elementwise
        # max|a-b|/max|b| per tensor applies) from --init-seed 0 on the same batches: each
        # rank draws the whole weights and keeps its slice; rank 0 writes the gathered whole.
        train = [tfc_run, None, "train", "--data", p("train.bin"), "--init-seed", "0",
                 "--seed", str(seed % 1000), "--steps", str(STEPS), "--lr", "0.3",
                 "--momentum", "0.9"]
        for tp in (1, TP):
            cmd = list(train)
            cmd[1] = p(f"{model}-tp{tp}.so")
            cmd += ["--save", p(f"{model}-train{tp}.safetensors"), "--log",
                    p(f"{model}-train{tp}.csv")]
            run((mpirun + ["-np", str(TP)] if tp > 1 else []) + cmd, env=env)
        one = read_safetensors(p(f"{model}-train1.safetensors"))[0]
        split_run = read_safetensors(p(f"{model}-train{TP}.safetensors"))[0]
        # Every tensor, whole: weights, momentum buffers, the step counter, the KV cache.
        expected = set(one)
        check(set(split_run) == expected,
              f"{model} TP={TP}: the checkpoint holds the whole model and optimizer state")
        worst, worst_name = 0.0, ""
        for name in expected & set(split_run):
            if one[name].shape != split_run[name].shape:
                check(False, f"{model} TP={TP}: {name} saved as {split_run[name].shape}")
                continue
            if one[name].dtype != np.float32:
                check(np.array_equal(one[name], split_run[name]), f"{model}: {name} equal")
                continue
            e = rel(split_run[name], one[name])
            if e > worst:
                worst, worst_name = e, name
        check(worst <= RTOL_TRAINED, f"{model} TP={TP} vs one process after {STEPS} SGD "
              f"steps: worst max|a-b|/max|b| {worst:.2e} ({worst_name}) <= {RTOL_TRAINED:g}")
        losses = [[float(r.split(",")[1]) for r in open(p(f"{model}-train{tp}.csv"))
                   .read().split()[1:]] for tp in (1, TP)]
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses[1], losses[0]))
        check(len(losses[1]) == STEPS and diff <= RTOL,
              f"{model} TP={TP}: the logged loss of every step equals one process's "
              f"(max rel diff {diff:.2e})")

    # Mixed precision (--precision=bf16|f16: f32 master weights, 16-bit products; f16 with
    # loss scaling): the --tp=2 run differs from one 16-bit process by rounding only, so by
    # about what the 16-bit rounding moves one process from f32 (~5e-3 relative here): over
    # all tensors together within 4x of it, and each tensor within 10x. The ratio of two
    # roundings' sizes has a tail: over 8 seeds 0.15x to 1.53x over all tensors, up to 2.9x
    # for one tensor (llama's, whose SGD at lr 0.3 amplifies rounding most). A sharding or
    # communication error is O(1), ~200x.
    for model, precision in [(m, "bf16") for m in MODELS] + [("gpt2", "f16")]:
        for tp in (1, TP):
            run([tfc, p(f"{model}.mlir"), "--optimizer=sgd", f"--precision={precision}",
                 f"--tp={tp}", "-o", p(f"{model}-{precision}-tp{tp}.so")])
            cmd = list(train)
            cmd[1] = p(f"{model}-{precision}-tp{tp}.so")
            run((mpirun + ["-np", str(TP)] if tp > 1 else []) + cmd +
                ["--save", p(f"{model}-{precision}-{tp}.safetensors")], env=env)
        f32 = read_safetensors(p(f"{model}-train1.safetensors"))[0]
        one, split_run = (read_safetensors(p(f"{model}-{precision}-{tp}.safetensors"))[0]
                          for tp in (1, TP))
        norm_rel = lambda a, b: float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
        names = [k for k in one if k in f32 and one[k].dtype == np.float32 and
                 np.any(one[k] != f32[k])]
        ratios = {k: norm_rel(split_run[k], one[k]) / max(norm_rel(one[k], f32[k]), 1e-7)
                  for k in names}
        worst = max(ratios, key=ratios.get)
        flat = lambda t: np.concatenate([t[k].ravel() for k in names])
        overall = norm_rel(flat(split_run), flat(one)) / norm_rel(flat(one), flat(f32))
        check(set(split_run) == set(one) and overall <= 4 and ratios[worst] <= 10 and
              all(np.array_equal(one[k], split_run[k]) for k in one if k not in f32),
              f"{model} TP={TP} {precision} mixed precision after {STEPS} SGD steps: off one "
              f"{precision} process by {overall:.2f}x {precision}'s own rounding (vs f32) over "
              f"all tensors (<= 4), {ratios[worst]:.2f}x at most per tensor ({worst}, <= 10); "
              "the loss scale state equal")

    # From --weights: the whole file (each rank slices it) and a Hugging Face directory of
    # the same weights in f16 (the pretrained loader converts, then slices) under mpirun,
    # against one process from the same file.
    os.makedirs(p("gpt2-hf"), exist_ok=True)
    write_safetensors(p("gpt2-hf/model.safetensors"),
                      {k: v.astype(np.float16) for k, v in
                       read_safetensors(p("gpt2-whole.safetensors"))[0].items()})
    base = [tfc_run, None, "train", "--data", p("train.bin"), "--lr", "0.3", "--momentum", "0.9",
            "--seed", "7", "--steps", str(STEPS)]
    for tp, weights, out in ((1, p("gpt2-whole.safetensors"), "w1"),
                             (TP, p("gpt2-whole.safetensors"), "w2"),
                             (1, p("gpt2-hf"), "hf1"), (TP, p("gpt2-hf"), "hf2")):
        cmd = list(base)
        cmd[1] = p(f"gpt2-tp{tp}.so")
        run((mpirun + ["-np", str(TP)] if tp > 1 else []) + cmd +
            ["--weights", weights, "--save", p(f"{out}.safetensors")], env=env)
    got = {k: read_safetensors(p(f"{k}.safetensors"))[0] for k in ("w1", "w2", "hf1", "hf2")}
    for a, b, what in (("w2", "w1", "a whole weights file"),
                       ("hf2", "hf1", "a Hugging Face directory (f16)")):
        worst = max(rel(got[a][k], got[b][k]) for k in got[b]
                    if not k.startswith("state.") and got[b][k].dtype == np.float32)
        check(set(got[a]) == set(got[b]) and
              worst <= RTOL_TRAINED,
              f"gpt2 TP={TP} from --weights {what}: after {STEPS} steps equal one process "
              f"from it, worst max|a-b|/max|b| {worst:.2e} <= {RTOL_TRAINED:g}")

    # Resume under mpirun: 5 steps, then --resume to 10 (each rank takes its slice of rank 0's
    # whole checkpoint) gives the bytes of 10 straight.
    base = [tfc_run, p("gpt2-tp2.so"), "train", "--data", p("train.bin"), "--lr", "0.3",
            "--momentum", "0.9"]
    run(mpirun + ["-np", str(TP)] + base + ["--init-seed", "0", "--seed", "7", "--steps",
                                            str(STEPS), "--save", p("straight.safetensors")],
        env=env)
    run(mpirun + ["-np", str(TP)] + base + ["--init-seed", "0", "--seed", "7", "--steps", "5",
                                            "--total-steps", str(STEPS), "--save",
                                            p("half.safetensors")], env=env)
    run(mpirun + ["-np", str(TP)] + base + ["--resume", p("half.safetensors"), "--steps",
                                            str(STEPS), "--save", p("resumed.safetensors")],
        env=env)
    straight = read_safetensors(p("straight.safetensors"))[0]
    resumed = read_safetensors(p("resumed.safetensors"))[0]
    check(set(straight) == set(resumed) and
          all(np.array_equal(straight[k], resumed[k]) for k in straight),
          f"gpt2 TP={TP}: 5 steps + --resume to 10 equal 10 straight, bit for bit")

    # A rank that dies after step 6 (as in data parallelism): the job ends non-zero, by mpirun
    # or by the survivor's collective timing out, and the checkpoint of step 5 stays whole.
    dead_rank_cases(mpirun, env, tfc_run, p("gpt2-tp2.so"), p, 7,
                    ["--lr", "0.3", "--momentum", "0.9"], read_safetensors(p("half.safetensors"))[0])

    # A world of another size than the compiled one, before running.
    wrong = run([tfc_run, p("gpt2-tp2.so"), "call", "loss_grad", "--weights",
                 p("gpt2-rank0.safetensors"), *inputs, "--out-dir", p("wrong")], expect=None,
                env=env)
    check(wrong.returncode != 0 and "compiled for 2 processes (tfc --tp=2)" in wrong.stderr and
          not (os.path.isdir(p("wrong")) and os.listdir(p("wrong"))),
          "--tp=2 artifact without mpirun: refused: " +
          (wrong.stderr.strip().splitlines() or [""])[-1][:160])

    wrong = run(mpirun + ["-np", "4", tfc_run, p("gpt2-tp2.so"), "train", "--data",
                          p("train.bin"), "--init-seed", "0", "--steps", "2", "--save",
                          p("w.safetensors")], expect=None, env=env)
    text = wrong.stdout + wrong.stderr
    check(wrong.returncode != 0 and "compiled for 2 processes (tfc --tp=2)" in text and
          "runs in a world of 4" in text and "step 1" not in text,
          "--tp=2 artifact under mpirun -np 4: train refused before any step")

    # --tp that does not divide the heads or the features, naming both numbers.
    bad = run([tfc, p("gpt2.mlir"), "--optimizer=sgd", "--tp=3", "-o", p("bad.so")],
              expect=None)
    check(bad.returncode != 0 and "--tp=3 does not divide the 32 output features" in bad.stderr,
          "gpt2 (C=32) --tp=3: refused: " + (bad.stderr.strip().splitlines() or [""])[0][:200])
    bad = run([tfc, p("llama.mlir"), "--optimizer=sgd", "--tp=4", "-o", p("bad.so")],
              expect=None)
    check(bad.returncode != 0 and "--tp=4 does not divide the 2 heads" in bad.stderr,
          "llama (2 kv heads) --tp=4: refused: " +
          (bad.stderr.strip().splitlines() or [""])[0][:200])

    failures.extend(check_data_parallel.failures)  # dead_rank_cases's
    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": tensor-parallel loss and gradients")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end check of data-parallel training (tfc --dp=N, mpirun -np N tfc-run ... train).

A small GPT-2 compiled three ways: one process at the global batch G (the reference), and
--dp=2 / --dp=4 at the per-rank batch G/2 and G/4. Each trains 10 steps with AdamW and with
SGD (fp32, no dropout) from the same initial weights on the same data; each rank reads its own
rows of the global batch (BatchSampler), so the averaged gradients, and the weights and the
optimizer state, must equal the single process's within 1e-5 relative (SGD) or 1e-4 (AdamW),
element-wise: max |a - b| / max |b| per tensor.

AdamW runs with --eps 1e-4 here, not the default 1e-8, and why: DP sums each gradient
element over the batch in another order than one process (each rank its rows, then the
ranks), so the two differ by rounding, an absolute dg of ~5e-10 on this model. AdamW's update
lr * m / (sqrt(v) + eps) moves with g at most by lr * dg / eps (at |g| ~ 0; at step 1 it is
lr * g / (|g| + eps)), so elements whose gradient is near eps in size turn rounding into
O(lr) differences. Measured (seed 70444539, DP=4, eps 1e-8): h.1.mlp.c_proj.weight[2763]
has a step-1 gradient of 3.77e-9 in one process and 4.22e-9 at DP=4 (both at rounding level:
the sum cancels), so its first update is 0.274 or 0.297 x lr_1 = 1.5e-3, 3.4e-5 apart, and
stays so: ||a-b||/||b|| 3.9e-5 for that tensor and 7.0e-4 element-wise, above 1e-5 whichever
measure (the attention's key bias, whose exact gradient is zero, is pure noise: 2-5e-4). The
worst element-wise difference over 5 sampler seeds, DP=2 and DP=4 (the reduction of the mean
is a sum and one exact scaling by 1/2 or 1/4, not a cause): eps 1e-8: 3.0e-4 to 8.0e-4;
1e-6: up to 2.0e-5; 1e-5: up to 6.4e-6; 1e-4: at most 2.0e-6, as SGD's (which is linear
in the gradient: 5.7e-7 to 6.6e-7). With eps 1e-4 the bound lr * dg / eps is 1.5e-8 per step
and most gradients (~1e-3) are still well above eps, so AdamW still normalizes them.
The bound is absolute, so a tensor whose values stay small (a bias that starts at 0) can
still exceed 1e-5 relative on a rare draw: over 100 fresh draws at DP=2 and DP=4 the worst was
5.5e-6, and one CI run met 1.06e-5 (h.0.mlp.c_proj.bias). AdamW's runs are therefore held to
1e-4 (ADAMW_RTOL), still far below what a real fault moves: a gradient off by the factor 1/2
(a missing or doubled 1/N) changes the weights by 0.26 relative after these 10 steps (eps
1e-4 vs 2e-4 in one process: AdamW sees only g / eps). SGD keeps 1e-5.
Also checked:
  - ZeRO-1 (--zero=1: gradients reduce-scattered, the optimizer on each rank's shard,
    parameters all-gathered) gives the same weights as one process and as plain DP, with the
    optimizer's moments of the checkpoint gathered whole; its resume continues bit-identically
    on the same number of ranks and reshards to another (and to plain DP);
  - --zero without --dp or --optimizer, and --zero=2, are refused with a message;
  - only rank 0 prints the step lines and writes the checkpoint and the log;
  - resuming from rank 0's checkpoint under mpirun continues bit-identically;
  - gradient buckets of several sizes (--dp-bucket-mb 0, 8 KB, the default 25 MB, -1 for one
    blocking all-reduce per gradient) and --dp-overlap=false: each equals one process; at
    DP=2 all give the same bytes; a rerun gives the same bytes;
  - the loss in the log equals the single process's per step;
  - a world size other than the compiled one is refused before any step, with a message;
  - an artifact compiled for one process is refused under mpirun -np 2;
  - a rank that dies after step 6 (tfc-run's test-only TFC_TEST_EXIT_RANK and
    TFC_TEST_EXIT_AT_STEP): the job ends non-zero instead of hanging, with mpirun's message
    naming the rank, or (when mpirun lets the job run on) the survivor's timeout naming the
    collective and itself; the checkpoint on disk stays whole;
  - SIGINT / SIGTERM to one rank: every rank stops after the same step, rank 0 saves a
    checkpoint that resumes bit-identically, the job exits 130 (and one process alone);
    SIGUSR1 to mpirun (which forwards it to every rank) the same; SIGINT to mpirun (which
    kills the ranks a second later): the job ends, the checkpoint on disk is whole;
  (a rank that stalls is test/Tools/comm/communicator-mpi.test's).
Prints the numbers and one verdict line.
"""
import argparse
import os
import random
import re
import shutil
import signal
import struct
import subprocess
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
ADAMW_RTOL = 1e-4  # rounding through AdamW's 1 / (sqrt(v) + eps): see the module's doc
failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        failures.append(message)


def read_losses(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    return [float(r[1]) for r in rows[1:]]


def compare(got, reference, label, against):
    """Checks that the checkpoint |got| holds |reference|'s tensors with its values within
    RTOL, element-wise: max |a - b| / max |b| per tensor, or ADAMW_RTOL when the checkpoint
    holds AdamW's moments (see the module's doc)."""
    rtol = ADAMW_RTOL if any(k.startswith("state.opt.v.") for k in reference) else RTOL
    check(set(got) == set(reference) and
          all(got[k].shape == reference[k].shape for k in reference),
          f"{label}: the checkpoint holds the same tensors, of the same shapes")
    worst, worst_name = 0.0, ""
    for name, want in reference.items():
        if name not in got or got[name].shape != want.shape:
            continue
        if want.dtype != np.float32:
            check(np.array_equal(got[name], want), f"{label}: {name} equal")
            continue
        a, b = got[name].astype(np.float64).ravel(), want.astype(np.float64).ravel()
        rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
        if rel > worst:
            worst, worst_name = rel, name
    check(worst <= rtol, f"{label} vs {against} after {STEPS} steps: worst max|a-b|/max|b| "
          f"{worst:.2e} ({worst_name}) <= {rtol:g}")


def checkpoint_step(path):
    """The step in a checkpoint's metadata; reading it whole (every tensor's bytes within the
    file) is the check that it is not half-written."""
    tensors, meta = _read_with_meta(path)
    return int(meta["step"]), tensors


def same_tensors(a, b):
    return set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)


def dead_rank_cases(mpirun, env, tfc_run, model, p, seed, hyper, at_step_5):
    """A rank that dies mid-training (tfc-run's test-only TFC_TEST_EXIT_RANK/_AT_STEP: exit 3
    right after step 6, no save, no MPI_Finalize, as a crash would): the job ends non-zero,
    never hangs, and the checkpoint of step 5 (--save-every 5) on disk is whole, bit for bit
    the one of an uninterrupted run to step 5 (at_step_5)."""
    def dead_run(tag, dead_rank, extra_mpirun=(), extra_env=()):
        ckpt = p(f"{tag}.safetensors")
        cmd = mpirun + list(extra_mpirun) + [
            "-np", "2", tfc_run, model, "train", "--data", p("train.bin"), "--init-seed", "0",
            "--seed", str(seed), "--steps", str(STEPS), "--total-steps", str(STEPS), *hyper,
            "--save-every", "5", "--save", ckpt]
        start = time.time()
        result = run(cmd, expect=None, timeout=600,
                     env=dict(env, TFC_TEST_EXIT_RANK=str(dead_rank), TFC_TEST_EXIT_AT_STEP="6",
                              **dict(extra_env)))
        return result, result.stdout + result.stderr, time.time() - start, ckpt

    # mpirun's default: a rank that exits non-zero ends the job (the others are killed);
    # mpirun names the dead rank and its exit code.
    result, text, seconds, ckpt = dead_run("dead-default", 1)
    check(result.returncode != 0 and "rank 1 exits after step 6" in text and
          "Exit code:    3" in text and ",1]" in text and "step 7/" not in text,
          f"a rank that dies after step 6: the job ends non-zero in {seconds:.1f} s, mpirun "
          f"naming rank 1 and its exit code 3 (rc {result.returncode})")
    step, tensors = checkpoint_step(ckpt)
    check(step == 5 and same_tensors(tensors, at_step_5),
          f"  ... the checkpoint on disk is whole: step {step}, bit for bit an uninterrupted "
          "run's at step 5")
    # Where mpirun does not end the job (orte_abort_on_non_zero_status 0, or a rank that hangs
    # without exiting), the survivors' collective times out (TFC_COMM_TIMEOUT_S) with a message
    # naming the collective and the rank that waited, and the job is aborted. The timeout is
    # generous (a loaded machine must not trip it); the run must end well within 600 s.
    timeout_s = 30
    result, text, seconds, ckpt = dead_run(
        "dead-timeout", 0, ["--mca", "orte_abort_on_non_zero_status", "0"],
        [("TFC_COMM_TIMEOUT_S", str(timeout_s))])
    want = (f"after step 6: all_reduce of the stop flag: rank 1 of 2: MPI_Iallreduce of 1 "
            f"elements did not complete within {timeout_s} s (TFC_COMM_TIMEOUT_S): another "
            f"rank of the 2 died, stopped or is running a different program; aborting the job")
    # Open MPI's own banner ("MPI_ABORT was invoked on rank 1 ...") is not required: a
    # fresh-clone run under load ended with rc 1 after 31.3 s and tfc's message, without it.
    ok = result.returncode != 0 and want in text and seconds >= timeout_s
    check(ok, f"rank 0 dies after step 6 and mpirun does not end the job: rank 1 fails after "
              f"the {timeout_s} s timeout ({seconds:.1f} s in all) naming the collective and "
              f"itself, aborts the job, non-zero (rc {result.returncode})")
    if not ok:
        print(text)
    step, tensors = checkpoint_step(ckpt)
    check(step == 5 and same_tensors(tensors, at_step_5),
          f"  ... the checkpoint on disk is whole: step {step}, bit for bit an uninterrupted "
          "run's at step 5")


def interrupt_cases(mpirun, env, tfc_run, models, p, seed, hyper):
    """Ctrl-C: SIGINT or SIGTERM to one rank stops every rank after the same step (they agree
    each step with an all-reduce of their stop flags), rank 0 saves a resumable checkpoint and
    every rank exits 130 with a message; one process (no mpirun) does the same alone. The
    signal is sent once rank 0 has logged step 3, to the pid that the rank's shell wrapper
    wrote before exec'ing tfc-run (no process search), or to the one process."""
    total = "100000"  # never reached: the run ends by the signal
    common = ["--data", p("train.bin"), "--seed", str(seed), "--total-steps", total, *hyper]
    # Each rank writes its pid (the shell's, which exec keeps for tfc-run) before it starts.
    wrapper = ('echo $$ > "$0.$OMPI_COMM_WORLD_RANK.tmp" && '
               'mv "$0.$OMPI_COMM_WORLD_RANK.tmp" "$0.$OMPI_COMM_WORLD_RANK" && exec "$@"')
    # rank None: to mpirun, which forwards SIGUSR1 to every rank (not SIGINT: see below).
    for sig, world, rank in ((signal.SIGINT, 2, 1), (signal.SIGTERM, 2, 0),
                             (signal.SIGUSR1, 2, None), (signal.SIGINT, 1, 0)):
        name = signal.Signals(sig).name
        tag = f"stop-{name}-{world}-{rank}"
        pids, ckpt = p(tag + ".pid"), p(tag + ".safetensors")
        train = [tfc_run, models[world], "train"]
        launch = (lambda cmd: mpirun + ["-np", "2"] + cmd) if world > 1 else (lambda cmd: cmd)
        cmd = launch((["sh", "-c", wrapper, pids] if world > 1 else []) + train +
                     ["--init-seed", "0", "--steps", total, "--save", ckpt, *common])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        lines, sent = [], False
        for line in proc.stderr:  # rank 0's progress lines, one per step
            lines.append(line)
            if line.startswith("step 3/"):
                if world > 1 and rank is not None:
                    with open(f"{pids}.{rank}") as f:
                        os.kill(int(f.read()), sig)
                else:
                    proc.send_signal(sig)
                sent = True
                break
        who = (f"{name} to one process" if world == 1 else
               f"{name} to mpirun" if rank is None else f"{name} to rank {rank} of {world}")
        try:
            out, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            check(False, f"{who}: the run did not end within 600 s")
            continue
        text = "".join(lines) + out + err
        if world > 1:
            stopped = re.findall(r"rank (\d) of 2: (interrupted|stopped with the other ranks "
                                 r"\(one was interrupted\)) at step (\d+)", text)
            how = {int(r): w for r, w, _ in stopped}
            if rank is None:  # both got it, maybe one after the step they agreed on
                said = len(how) == 2 and "interrupted" in how.values()
            else:
                said = (len(stopped) == 2 and how.get(rank) == "interrupted" and
                        how.get(1 - rank, "").startswith("stopped"))
        else:
            stopped = re.findall(r"()()interrupted at step (\d+); resume with --resume", text)
            said = len(stopped) == 1
        steps = {int(s) for _, _, s in stopped}
        check(sent and proc.returncode == 130 and said and len(steps) == 1,
              f"{who} after step 3: every rank stops after the same step {sorted(steps)}, says "
              f"so, and the run exits 130 (rc {proc.returncode})")
        if len(steps) != 1:
            print(text[-3000:])
            continue
        k = steps.pop()
        step, _ = checkpoint_step(ckpt)
        check(step == k, f"  ... rank 0 saved the checkpoint of step {k} (it holds {step})")
        # Resumable: 2 more steps from it equal 2 more steps of an uninterrupted run.
        run(launch(train + ["--resume", ckpt, "--steps", str(k + 2), "--save",
                            p(tag + "-resumed.safetensors"), *common]), env=env)
        run(launch(train + ["--init-seed", "0", "--steps", str(k + 2), "--save",
                            p(tag + "-straight.safetensors"), *common]), env=env)
        check(same_tensors(read_safetensors(p(tag + "-resumed.safetensors")),
                           read_safetensors(p(tag + "-straight.safetensors"))),
              f"  ... --resume from it to step {k + 2} equals an uninterrupted run, bit for bit")


def mpirun_interrupt_case(mpirun, env, tfc_run, model, p, seed, hyper):
    """Ctrl-C on mpirun itself: Open MPI's mpirun does not forward SIGINT, it sends SIGTERM to
    every rank and SIGKILL a second later (odls_base_sigkill_timeout), so the ranks' stop and
    save may or may not fit; what must hold is that the job ends, non-zero, and that the
    checkpoint on disk (--save-every 2 writes one from step 2 on) is whole: readable, its
    metadata's step equal to its state.train.step."""
    ckpt = p("mpirun-sigint.safetensors")
    cmd = mpirun + ["-np", "2", tfc_run, model, "train", "--data", p("train.bin"), "--seed",
                    str(seed), "--init-seed", "0", "--steps", "100000", "--save-every", "2",
                    "--save", ckpt, *hyper]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    for line in proc.stderr:
        if line.startswith("saved "):  # a checkpoint exists: now interrupt
            proc.send_signal(signal.SIGINT)
            break
    try:
        proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        check(False, "SIGINT to mpirun: the job did not end within 600 s")
        return
    step, tensors = checkpoint_step(ckpt)
    counter = int(tensors["state.train.step"].reshape(-1)[0])
    check(proc.returncode != 0 and step >= 2 and counter == step,
          f"SIGINT to mpirun: the job ends (rc {proc.returncode}) and the checkpoint on disk is "
          f"whole (step {step}, state.train.step {counter})")


def mpi_job(doc, extra_args=()):
    """The command line (--bin-dir, --work-dir, --mpirun, and `extra_args`: (flag, kwargs)
    pairs) of the multi-process checks, an emptied work folder, and the mpirun command and
    environment they launch with (CI runs as root; ranks may outnumber the cores). Returns
    (args, mpirun, env, p), p(name) being a path in the work folder."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    for flag, kwargs in extra_args:
        parser.add_argument(flag, **kwargs)
    args = parser.parse_args()
    mpirun = args.mpirun.split() + ["--oversubscribe"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    return args, mpirun, env, lambda name: os.path.join(args.work_dir, name)


def random_tokens(path):
    """Writes 20000 random token ids (fresh each run) to `path` and returns a fresh sampler
    seed; prints both."""
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    tokens = [rng.randrange(VOCAB) for _ in range(20000)]
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    seed = rng.randrange(1 << 30)
    print(f"data: 20000 random tokens; sampler seed {seed}")
    return seed


def parse_bytes(text):
    """'365.76 KiB' (tfc-run's formatBytes) in bytes."""
    number, unit = text.split()
    return float(number) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


class TrainingRuns:
    """Traces, compiles and trains small models in the work folder, for the checks that compare
    layouts: traced(model, rows), compile(model, tag, *flags, rows=) (with --report to
    tag.json) and train(so, tag, opt, world=, steps=, extra=) (tfc-run train from --init-seed 0,
    or from --resume in extra, under mpirun when world > 1, saving tag.safetensors and
    tag.csv), and refused(model, rows, flags, want) (tfc refuses the layout)."""

    def __init__(self, args, mpirun, env, p, models, hyper, seed):
        self.bin, self.mpirun, self.env, self.p = args.bin_dir, mpirun, env, p
        self.models, self.hyper, self.seed = models, hyper, seed

    def traced(self, model, rows):
        path = self.p(f"{model}-b{rows}.mlir")
        if not os.path.exists(path):
            sets = sum((["--set", s] for s in self.models[model] + [f"batch={rows}"]), [])
            run([os.path.join(self.bin, "tfc-trace"), model, *sets, "-o", path])
        return path

    def compile(self, model, tag, *flags, rows):
        run([os.path.join(self.bin, "tfc"), self.traced(model, rows), *flags, "--report",
             self.p(f"{tag}.json"), "-o", self.p(f"{tag}.so")])
        return self.p(f"{tag}.so")

    def refused(self, model, rows, flags, want):
        """tfc refuses to compile `model` with `flags`: non-zero, `want` in its stderr, and
        no output file."""
        bad = self.p("bad.so")
        if os.path.exists(bad):
            os.remove(bad)
        result = run([os.path.join(self.bin, "tfc"), self.traced(model, rows), *flags, "-o",
                      bad], expect=None)
        check(result.returncode != 0 and want in result.stderr and not os.path.exists(bad),
              f"tfc {model} {' '.join(flags)}: refused: " +
              (result.stderr.strip().splitlines() or [""])[0][:200])

    def train(self, so, tag, opt, world=1, steps=STEPS, extra=()):
        start = [] if "--resume" in extra else ["--init-seed", "0"]
        cmd = [os.path.join(self.bin, "tfc-run"), so, "train", "--data", self.p("train.bin"),
               *start, "--seed", str(self.seed), "--steps", str(steps), "--total-steps",
               str(STEPS), *self.hyper[opt], "--save", self.p(f"{tag}.safetensors"), "--log",
               self.p(f"{tag}.csv"), *extra]
        if world > 1:
            cmd = self.mpirun + ["-np", str(world)] + cmd
        return run(cmd, env=self.env, timeout=600)


def main():
    args, mpirun, env, p = mpi_job(__doc__)
    tfc = os.path.join(args.bin_dir, "tfc")
    trace = os.path.join(args.bin_dir, "tfc-trace")
    tfc_run = os.path.join(args.bin_dir, "tfc-run")
    seed = random_tokens(p("train.bin"))

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
            if world > 1:
                run([tfc, p(f"b{batch}.mlir"), f"--optimizer={opt}", *dp, "--zero=1", "-o",
                     p(f"{opt}-zero{world}.so")])
                models[opt + "-zero", world] = p(f"{opt}-zero{world}.so")
    models[1], models[2] = models["adamw", 1], models["adamw", 2]
    hyper = {"adamw": ["--lr", "3e-3", "--warmup", "2", "--eps", "1e-4"],  # eps: see above
             "sgd": ["--lr", "0.3", "--momentum", "0.9"]}

    def train(world, tag, extra=(), expect=0, timeout=600, launch=True, opt="adamw",
              model=None):
        cmd = [tfc_run, model or models[opt, world], "train", "--data", p("train.bin"), "--init-seed",
               "0", "--seed", str(seed), "--steps", str(STEPS), *hyper[opt.split("-")[0]],
               "--save", p(f"{tag}.safetensors"), "--log", p(f"{tag}.csv"), *extra]
        if launch and world > 1:
            cmd = mpirun + ["-np", str(world)] + cmd
        return run(cmd, expect=expect, timeout=timeout, env=env)

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
            compare(got, reference, f"{opt} DP={world}", f"one process at batch {GLOBAL_BATCH}")
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
            # ZeRO-1: the same update from shards; its checkpoint holds the moments whole.
            train(world, f"{opt}-zero{world}", opt=opt + "-zero")
            zero = read_safetensors(p(f"{opt}-zero{world}.safetensors"))
            compare(zero, reference, f"{opt} ZeRO-1 DP={world}",
                    f"one process at batch {GLOBAL_BATCH}")
            compare(zero, got, f"{opt} ZeRO-1 DP={world}", f"plain DP={world}")
            zero_losses = read_losses(p(f"{opt}-zero{world}.csv"))
            loss_diff = max(abs(a - b) / abs(b) for a, b in zip(zero_losses, ref_losses))
            check(len(zero_losses) == STEPS and loss_diff <= RTOL,
                  f"{opt} ZeRO-1 DP={world}: the logged loss of every step equals the single "
                  f"process's (max rel diff {loss_diff:.2e})")

    # Gradient buckets (tfc --dp-bucket-mb, --dp-overlap): the default above (25 MB) puts this
    # model's gradients (about 150 KB) in one bucket; here every gradient alone (0), buckets
    # of about 8 KB (one to three gradients each), one blocking all-reduce per gradient (-1),
    # and buckets waited for right after their start. Each must equal one process as above;
    # at DP=2 a sum of two floats does not depend on how the gradients are grouped, so every
    # layout must give the default's bytes; and a rerun the same bytes.
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
        compare(got, reference, what, "one process")
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

    # ZeRO-1 resume: on the same number of ranks, bit for bit. The checkpoint holds the
    # moments whole, so it also resumes in plain DP (compared with ZeRO-1 straight) and on
    # another number of ranks (compared with plain DP resumed from the same file).
    def zero_run(model, world, steps, out, extra):
        return run(mpirun + ["-np", str(world), tfc_run, model, "train", "--data",
                             p("train.bin"), "--steps", str(steps), *hyper["adamw"],
                             "--save", p(out), *extra], env=env)
    fresh = ["--init-seed", "0", "--seed", str(seed), "--total-steps", str(STEPS)]
    zero_run(models["adamw-zero", 2], 2, 5, "zero-half.safetensors", fresh)
    zero_run(models["adamw-zero", 2], 2, STEPS, "zero-resumed.safetensors",
             ["--resume", p("zero-half.safetensors")])
    straight = read_safetensors(p("adamw-zero2.safetensors"))
    resumed = read_safetensors(p("zero-resumed.safetensors"))
    check(set(straight) == set(resumed) and
          all(np.array_equal(straight[k], resumed[k]) for k in straight),
          "adamw ZeRO-1 DP=2: 5 steps + --resume to 10 equal 10 straight, bit for bit")
    zero_run(models["adamw-zero", 4], 4, 5, "zero4-half.safetensors", fresh)
    half = read_safetensors(p("zero4-half.safetensors"))
    check(all(half[f"state.opt.{m}.{name}"].shape == half[name].shape
              for name in half if not name.startswith("state.") for m in "mv"),
          "adamw ZeRO-1 DP=4: the checkpoint holds every moment whole, in its parameter's "
          "shape")
    zero_run(models["adamw", 4], 4, STEPS, "zero-to-dp.safetensors",
             ["--resume", p("zero4-half.safetensors")])
    compare(read_safetensors(p("zero-to-dp.safetensors")),
            read_safetensors(p("adamw-zero4.safetensors")),
            "adamw ZeRO-1 DP=4 5 steps, then plain DP=4 5 steps", "ZeRO-1 DP=4 straight")
    # The same 4-rank checkpoint on 2 ranks (batch 1 each): ZeRO-1 takes each rank's block of
    # the whole moments, plain DP takes them whole; the 5 steps that follow must agree.
    for zero in ([], ["--zero=1"]):
        name = "adamw-zero2-b1" if zero else "adamw-dp2-b1"
        run([tfc, p("b1.mlir"), "--optimizer=adamw", "--dp=2", *zero, "-o", p(name + ".so")])
        zero_run(p(name + ".so"), 2, STEPS, name + "-from4.safetensors",
                 ["--resume", p("zero4-half.safetensors")])
    compare(read_safetensors(p("adamw-zero2-b1-from4.safetensors")),
            read_safetensors(p("adamw-dp2-b1-from4.safetensors")),
            "adamw ZeRO-1 DP=4 5 steps, then ZeRO-1 DP=2 5 steps",
            "the same checkpoint resumed in plain DP=2")

    # Bad flags: refused with a message naming what is missing.
    for flags, want in ((["--optimizer=adamw", "--zero=1"], "needs --dp=N"),
                        (["--dp=2", "--zero=1"], "needs --optimizer"),
                        (["--optimizer=adamw", "--dp=2", "--zero=2"], "only ZeRO stage 1")):
        bad = run([tfc, p("b2.mlir"), *flags, "-o", p("bad.so")], expect=None)
        check(bad.returncode != 0 and want in bad.stderr,
              f"tfc {' '.join(flags)}: refused: " + bad.stderr.strip().splitlines()[-1][:120])

    dead_rank_cases(mpirun, env, tfc_run, models[2], p, seed, hyper["adamw"],
                    read_safetensors(p("half.safetensors")))
    interrupt_cases(mpirun, env, tfc_run, {1: models[1], 2: models[2]}, p, seed,
                    hyper["adamw"])
    mpirun_interrupt_case(mpirun, env, tfc_run, models[2], p, seed, hyper["adamw"])

    print(("PASS" if not failures else f"FAIL ({len(failures)} checks)") +
          ": data-parallel training")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

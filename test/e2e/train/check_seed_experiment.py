#!/usr/bin/env python3
"""The seed article's experiment with `tfc-seed-experiment` (examples/seed-experiment; docs/models/encdec.md).

1. The data generators equal the reference's (docs/models/encdec_reference.py) for the
   same seeds: palindrome(py_rng=random.Random(S), np_rng=np.random.RandomState(S)) and
   pointer_index(np_rng=np.random.RandomState(S)) -- needs NumPy (scripts/install-deps.sh
   installs it); without it the check fails, it is not skipped.
2. tfc-trace encdec, tfc --optimizer=adamw, then the experiment (10 epochs x 64 steps,
   Adam 1e-2 -> 1e-5 with 128 warm-up steps): the validation loss after epoch 10 must be
   < 0.1 and at least 8 of the article's 9 examples exact. Prints the per-epoch losses and
   the wall time.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

# No tool may hang CI: every run has a limit, and a timeout names the command.
TOOL_TIMEOUT_S = 900        # a trace, a compile, the data dumps
EXPERIMENT_TIMEOUT_S = 3600  # 10 epochs x 64 steps (about a minute on 2 cores)


def run(cmd, timeout=TOOL_TIMEOUT_S, **kwargs):
    try:
        return subprocess.run(cmd, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"FAIL: timed out after {timeout} s: {' '.join(cmd)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--src-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = lambda name: os.path.join(work, name)
    b = lambda name: os.path.join(args.bin_dir, name)
    failures = []

    def check(condition, message):
        print(("ok    " if condition else "FAIL  ") + message, flush=True)
        if not condition:
            failures.append(message)

    run([b("tfc-trace"), "encdec", "-o", p("encdec.mlir")], check=True)
    # The generators need only the loss entry: check them on a forward-only build first.
    run([b("tfc"), p("encdec.mlir"), "-o", p("encdec_fwd.so")], check=True,
        capture_output=True)
    try:
        import random
        import numpy as np
        sys.path.insert(0, os.path.join(args.src_dir, "docs", "models"))
        import encdec_reference as ref
    except ImportError as error:  # a check that cannot run is a failure, not a pass
        check(False, f"generator comparison cannot run: {error} (NumPy and "
                     f"docs/models/encdec_reference.py are needed)")
        ref = None
    if ref is not None:
        for task in ("palindrome", "pointer_index"):
            prefix = p(f"{task}.")
            run([b("tfc-seed-experiment"), p("encdec_fwd.so"), "--task", task,
                 "--seed", str(args.seed), "--dump-data", prefix],
                check=True, capture_output=True)
            if task == "palindrome":
                train, valid = ref.palindrome(py_rng=random.Random(args.seed),
                                              np_rng=np.random.RandomState(args.seed))
            else:
                train, valid = ref.pointer_index(np_rng=np.random.RandomState(args.seed))
            ours_train, ours_valid = np.load(prefix + "train.npy"), np.load(prefix + "valid.npy")
            check(np.array_equal(ours_train, train) and np.array_equal(ours_valid, valid),
                  f"{task} data equal the reference's for seed {args.seed} "
                  f"(train {ours_train.shape}, valid {ours_valid.shape})")

    compiled = run([b("tfc"), p("encdec.mlir"), "--optimizer=adamw", "-o",
                    p("encdec.so")], capture_output=True, text=True)
    if compiled.returncode != 0:
        errors = [l for l in compiled.stderr.splitlines() if "error" in l]
        print("FAIL: tfc --optimizer=adamw could not compile encdec's training step:")
        print("\n".join(errors[:5]) or compiled.stderr[-2000:])
        return 1
    start = time.time()
    result = run([b("tfc-seed-experiment"), p("encdec.so"), "--seed",
                  str(args.seed), "--plot", p("seed.png"), "--log", p("seed.csv")],
                 timeout=EXPERIMENT_TIMEOUT_S, capture_output=True, text=True)
    wall = time.time() - start
    print(result.stdout)
    if result.returncode != 0:
        print(result.stderr[-3000:])
        print(f"FAIL: tfc-seed-experiment exited with {result.returncode}")
        return 1
    valid = [float(v) for v in re.findall(r"valid loss ([0-9.]+)", result.stdout)]
    exact = re.search(r"exact: (\d+)/(\d+)", result.stdout)
    check(len(valid) == 10, f"10 epochs reported ({len(valid)})")
    check(bool(valid) and valid[-1] < 0.1, f"validation loss after the last epoch < 0.1 "
          f"({valid[-1] if valid else 'none'})")
    check(exact is not None and int(exact.group(1)) >= 8,
          f"at least 8 of 9 examples exact ({exact.group(0) if exact else 'none'})")
    print(f"experiment wall time (process): {wall:.1f}s")

    # The thread count changes no number: each kernel's sums keep their order for any
    # split, and the validation batches, shared out over one single-threaded context per
    # thread, are summed in batch order. Short runs (2 epochs of 8 steps), logs compared
    # apart from their seconds column.
    logs = {}
    for threads in (1, 3):
        short = run([b("tfc-seed-experiment"), p("encdec.so"), "--seed", str(args.seed),
                     "--epochs", "2", "--steps-per-epoch", "8", "--threads", str(threads),
                     "--log", p(f"short-{threads}.csv")], capture_output=True, text=True)
        check(short.returncode == 0, f"tfc-seed-experiment --threads {threads} ran "
              f"(exit {short.returncode}: {short.stderr[-500:]})")
        if short.returncode == 0:
            with open(p(f"short-{threads}.csv")) as f:
                logs[threads] = [line.rsplit(",", 1)[0] for line in f]
    if len(logs) == 2:
        check(logs[1] == logs[3] and len(logs[1]) == 1 + 2 * 9,
              f"--threads 1 and --threads 3 log the same losses ({len(logs[1])} and "
              f"{len(logs[3])} lines; first difference: "
              f"{next((a + ' / ' + c for a, c in zip(logs[1], logs[3]) if a != c), 'none')})")
    print(f"\n{len(failures)} check(s) failed" if failures else "\nall checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

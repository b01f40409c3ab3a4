#!/usr/bin/env python3
"""Mutation fuzzer for tfc's MLIR input: no input may crash tfc or tfc-opt.

Seeds: every model of `tfc-trace --list-models` at its small default config (and gpt2
with a paged KV cache), and the output of every phase of `tfc` on it (each phase tfc lists:
--compile-to=input|graph|kernels|..., all but input with and without
--optimizer=adamw). Each mutant is one seed
file with 1-3 seeded mutations (operand swaps and replacements, type and shape
edits, deleted, duplicated and moved ops, attribute and number edits,
truncation, stray bytes). Each mutant goes through

  tfc-opt MUTANT -o /dev/null                 (parse, verify, print)
  tfc MUTANT [flags] --compile-to=kernels     (every pass; 1 in 4 with
       or --emit=llvm -o /dev/null             --emit=llvm, the LLVM lowering)

with a time limit, and must not: die of a signal or exit >= 128 (134 is an
abort: an assertion), print a sanitizer report, run past the limit, or exit
non-zero without a message on stderr. A non-zero exit with a message (the
parse or verifier error) is the expected outcome for most mutants.

Reproducible: the seed is printed first and in every failure; mutant i of a run
depends only on (seed, i) and the seed files, which are deterministic. Every
failing mutant is written to --failures-dir with the command lines that failed
and a .sh that replays them.

Environment (for CI and long campaigns):
  TFC_FUZZ_SEED      the seed (default: fresh, printed)
  TFC_FUZZ_MUTANTS   mutants per run (default 300: under a minute on 2
                     cores, release or ASan tools; most mutants stop at the
                     parser or verifier)
  TFC_FUZZ_JOBS      parallel mutants (default: 2)
  TFC_FUZZ_TIMEOUT   seconds per tool run (default 120)

  mlir_mutate.py --bin-dir build/bin --work-dir /tmp/fz [--seed S] [--mutants N]
                 [--only-mutant I] [--failures-dir DIR] [--no-exclude]

The last line is `N mutants, R tool runs, F failures[, X excluded]`; exit
status 1 on any failure.
"""
import argparse
import concurrent.futures
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time

# Runs that are known to fail and are being fixed elsewhere; each entry says
# why. Remove an entry with its fix: the fuzzer then reports any regression.
EXCLUDED = [
    # (phase, tool) pairs known to fail, each with the issue that tracks it.
    # Empty: defect 1 (kernels-phase output fed back into tfc) is fixed.
]

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:", "ERROR: ThreadSanitizer",
                     "ERROR: MemorySanitizer", "SUMMARY: UndefinedBehaviorSanitizer")
CRASH_MARKERS = ("Stack dump:", "PLEASE submit a bug report",
                 "malloc(): ", "free(): ", "double free", "corrupted")

ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index"]
ODD_INTS = ["0", "1", "-1", "2", "3", "7", "63", "64", "65", "1024", "-2147483648",
            "2147483647", "4294967296", "9223372036854775807", "99999999999999999999"]
ODD_FLOATS = ["0.0", "-0.0", "1.0e+38", "-1.0e+38", "1.0e-45", "0x7FC00000", "0x7F800000",
              "0xFF800000", "nan", "inf"]

SSA = re.compile(r"%[A-Za-z0-9_.$-]+(?:#\d+)?")
TENSOR = re.compile(r"(tensor|memref)<([0-9?x]*)([a-z]+[0-9]*)")
NUMBER = re.compile(r"(?<![%@#\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
OP_LINE = re.compile(r"^\s*(?:%[^=]+= )?[a-z_]+\.[a-z_.]+")


# --------------------------------------------------------------------------- mutations
# Each takes (rng, lines) and returns the new lines (a list of strings, each
# without its newline), or None when it does not apply to this file.

def op_lines(lines):
    return [i for i, l in enumerate(lines) if OP_LINE.match(l)]


def swap_operands(rng, lines):
    cands = [i for i in op_lines(lines) if len(operands(lines[i])) >= 2]
    if not cands:
        return None
    i = rng.choice(cands)
    ops = operands(lines[i])
    (s1, e1), (s2, e2) = sorted(rng.sample(ops, 2))
    l = lines[i]
    lines[i] = l[:s1] + l[s2:e2] + l[e1:s2] + l[s1:e1] + l[e2:]
    return lines


def operands(line):
    """Spans of the SSA uses on an op line (not its results)."""
    eq = line.find(" = ")
    start = eq + 3 if eq >= 0 and SSA.match(line.strip()) else 0
    return [m.span() for m in SSA.finditer(line, start)]


def replace_operand(rng, lines):
    cands = [i for i in op_lines(lines) if operands(lines[i])]
    if not cands:
        return None
    i = rng.choice(cands)
    # another value defined within 40 lines before (or after: a forward use)
    window = lines[max(0, i - 40):i + 10]
    names = sorted({m.group() for l in window for m in SSA.finditer(l)})
    if not names:
        return None
    name = rng.choice(names)
    s, e = rng.choice(operands(lines[i]))
    lines[i] = lines[i][:s] + name + lines[i][e:]
    # half the time also a second use of the same name elsewhere (another
    # function, too), so that one value's uses disagree in type or cross a
    # function boundary (issue 13, defect 2)
    if rng.random() < 0.5:
        j = rng.choice(cands)
        if operands(lines[j]):
            s, e = rng.choice(operands(lines[j]))
            lines[j] = lines[j][:s] + name + lines[j][e:]
    return lines


def edit_type(rng, lines):
    cands = [(i, m) for i, l in enumerate(lines) for m in TENSOR.finditer(l)]
    if not cands:
        return None
    i, m = rng.choice(cands)
    kind, dims, elt = m.group(1), m.group(2), m.group(3)
    ds = [d for d in dims.split("x") if d]
    choice = rng.randrange(4)
    if choice == 0 and ds:                       # one dimension
        k = rng.randrange(len(ds))
        ds[k] = rng.choice(["0", "1", "?", str(int(ds[k]) + 1) if ds[k].isdigit() else "2",
                            "3", "4096", "9223372036854775807"])
    elif choice == 1:                            # element type
        elt = rng.choice(ELEMENT_TYPES)
    elif choice == 2 and ds:                     # drop a dimension
        del ds[rng.randrange(len(ds))]
    else:                                        # add one
        ds.insert(rng.randrange(len(ds) + 1), rng.choice(["1", "2", "16"]))
    new = f"{kind}<{''.join(d + 'x' for d in ds)}{elt}"
    l = lines[i]
    lines[i] = l[:m.start()] + new + l[m.end():]
    return lines


def delete_op(rng, lines):
    cands = op_lines(lines)
    if not cands:
        return None
    del lines[rng.choice(cands)]
    return lines


def duplicate_op(rng, lines):
    cands = op_lines(lines)
    if not cands:
        return None
    i = rng.choice(cands)
    copy = lines[i]
    if rng.random() < 0.5:  # a fresh result name: no redefinition error
        copy = re.sub(r"^(\s*)%([A-Za-z0-9_]+)", r"\1%dup_\2", copy, count=1)
    lines.insert(rng.choice([i + 1, rng.choice(cands)]), copy)
    return lines


def move_op(rng, lines):
    cands = op_lines(lines)
    if len(cands) < 2:
        return None
    i = rng.choice(cands)
    line = lines.pop(i)
    lines.insert(rng.choice([j for j in cands if j < len(lines)] or [0]), line)
    return lines


def edit_number(rng, lines):
    """Attributes (dim =, perm = [...], rate =, eps =, dense<...>, arena
    offsets, ...) and any other number literal."""
    cands = [(i, m) for i, l in enumerate(lines) for m in NUMBER.finditer(l)
             if "tensor<" not in l[max(0, m.start() - 8):m.start()]]
    if not cands:
        return None
    i, m = rng.choice(cands)
    is_float = "." in m.group() or "e" in m.group().lower()
    new = rng.choice(ODD_FLOATS if is_float and rng.random() < 0.7 else ODD_INTS)
    l = lines[i]
    lines[i] = l[:m.start()] + new + l[m.end():]
    return lines


def edit_attribute(rng, lines):
    """Strings and named attributes: tfc.fused kinds, tfc.name, init specs,
    symbol names, enum keywords; or a whole attribute dropped."""
    strings = [(i, m) for i, l in enumerate(lines) for m in re.finditer(r'"[^"]*"', l)]
    words = [(i, m) for i, l in enumerate(lines)
             for m in re.finditer(r"\b(?:dim|perm|rate|eps|approximate|keepdim|causal|"
                                  r"alpha|ignore_index|start|limit|stride|scale|offset|"
                                  r"frozen|bias|weight)\b", l)]
    symbols = [(i, m) for i, l in enumerate(lines) for m in re.finditer(r"@[\w.]+", l)]
    pools = [p for p in (strings, words, symbols) if p]
    if not pools:
        return None
    i, m = rng.choice(rng.choice(pools))
    new = rng.choice(['""', '"linear"', '"pointwise"', '"row"', '"reduction"', '"zeros"',
                      '"ones"', '"normal(0, 0.02)"', '"x"', "none", "tanh", "@nope",
                      "@wte.weight", "dim", ""])
    l = lines[i]
    lines[i] = l[:m.start()] + new + l[m.end():]
    return lines


def truncate(rng, lines):
    text = "\n".join(lines)
    if not text:
        return None
    cut = rng.randrange(len(text))
    return text[:cut].split("\n")


def stray_bytes(rng, lines):
    if not lines:
        return None
    i = rng.randrange(len(lines))
    l = lines[i]
    k = rng.randrange(len(l) + 1)
    lines[i] = l[:k] + rng.choice(["{", "}", "(", ")", "<", ">", ",", ":", "=", "%", "^bb1",
                                   "\\", "'", "\"", "#", "!"]) + l[k:]
    return lines


MUTATIONS = [
    ("swap operands", swap_operands, 3),
    ("replace operand", replace_operand, 4),
    ("edit type", edit_type, 4),
    ("delete op", delete_op, 2),
    ("duplicate op", duplicate_op, 2),
    ("move op", move_op, 1),
    ("edit number", edit_number, 3),
    ("edit attribute", edit_attribute, 2),
    ("truncate", truncate, 1),
    ("stray bytes", stray_bytes, 1),
]


def mutate(rng, text):
    """1-3 mutations of `text`; returns (mutant, [names])."""
    lines = text.split("\n")
    names = []
    weights = [w for _, _, w in MUTATIONS]
    for _ in range(rng.choice([1, 1, 2, 3])):
        for _attempt in range(8):
            name, fn, _ = rng.choices(MUTATIONS, weights)[0]
            out = fn(rng, list(lines))
            if out is not None:
                lines = out
                names.append(name)
                break
    return "\n".join(lines), names


# --------------------------------------------------------------------------- running
class Runner:
    def __init__(self, bin_dir, timeout):
        self.bin = os.path.abspath(bin_dir)
        self.timeout = timeout
        self.env = dict(os.environ)
        # Leaks are not memory errors, and libLLVM (not instrumented) holds
        # some on error paths; every other sanitizer report fails the run.
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        self.env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        self.env.pop("TFC_OPTIONS", None)  # the fuzzer chooses the flags

    def tool(self, name):
        return os.path.join(self.bin, name)

    def run(self, args, cwd=None):
        """(rc, stderr text, seconds); rc None on a timeout."""
        t0 = time.time()
        try:
            p = subprocess.run(args, cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=self.env, timeout=self.timeout)
            return p.returncode, p.stderr.decode(errors="replace"), time.time() - t0
        except subprocess.TimeoutExpired as e:
            err = (e.stderr or b"").decode(errors="replace")
            return None, err, time.time() - t0


def verdict(rc, err):
    """None if the run is acceptable, else why not."""
    if rc is None:
        return "timed out (a hang)"
    for marker in SANITIZER_MARKERS:
        if marker in err:
            return f"sanitizer report ({marker.strip()})"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc >= 128:
        return f"exit code {rc} (>= 128: a crash; 134 is an abort)"
    for marker in CRASH_MARKERS:
        if marker in err:
            return f"crash output ({marker.strip()})"
    if rc != 0 and not err.strip():
        return f"exit code {rc} without a message on stderr"
    return None


def list_phases(runner):
    """tfc's phases, from its message for an unknown one (stable, tested in
    test/Tools/tfc/bad-input.test), so that a new phase is fuzzed too."""
    p = subprocess.run([runner.tool("tfc"), os.devnull, "--compile-to=no-such-phase"],
                       capture_output=True, text=True, timeout=runner.timeout)
    m = re.search(r"\(phases: ([a-z, -]+)\)", p.stderr)
    if not m:
        raise RuntimeError(f"cannot read tfc's phases from:\n{p.stderr}")
    return [x.strip() for x in m.group(1).split(",")]


def make_seeds(runner, work):
    """Writes the seed files; returns [(name, phase, path)]."""
    phases = list_phases(runner)
    out = subprocess.run([runner.tool("tfc-trace"), "--list-models"], capture_output=True,
                         text=True, timeout=runner.timeout)
    if out.returncode != 0:
        raise RuntimeError(f"tfc-trace --list-models failed:\n{out.stderr}")
    models = [l.split(":")[0].strip() for l in out.stdout.splitlines() if ":" in l]
    if not models:
        raise RuntimeError("tfc-trace --list-models listed no model")
    # defaults are small (gpt2: 2 layers, C=64); encdec's batch 64 is cut to 2 so its
    # graphs stay small too; gpt2 also as a server (a paged KV cache, serving entries)
    variants = [(model, model, ["--set", "batch=2"] if model == "encdec" else [])
                for model in models]
    if "gpt2" in models:
        variants.append(("gpt2paged", "gpt2", ["--set", "gen_batch=2", "--set", "kv_block=16"]))
    seeds = []
    for label, model, sets in variants:
        traced = os.path.join(work, f"{label}.mlir")
        p = subprocess.run([runner.tool("tfc-trace"), model, *sets, "-o", traced],
                           capture_output=True, text=True, timeout=runner.timeout)
        if p.returncode != 0:
            raise RuntimeError(f"tfc-trace {model} failed:\n{p.stderr}")
        for phase in phases:
            for opt in ([""] if phase == "input" else ["", "adamw"]):
                name = f"{label}-{phase}" + (f"-{opt}" if opt else "")
                path = os.path.join(work, name + ".mlir")
                args = [runner.tool("tfc"), traced, f"--compile-to={phase}", "-o", path]
                if opt:
                    args.append(f"--optimizer={opt}")
                p = subprocess.run(args, capture_output=True, text=True,
                                   timeout=runner.timeout)
                if p.returncode != 0:
                    raise RuntimeError(f"{' '.join(args)} failed:\n{p.stderr}")
                seeds.append((name, phase, path))
    return seeds


def commands(runner, path, phase, rng_flags):
    """The runs of one mutant: [(tool label, argv)]."""
    tfc_args = [runner.tool("tfc"), path] + rng_flags
    return [("tfc-opt", [runner.tool("tfc-opt"), path, "-o", os.devnull]),
            ("tfc", tfc_args)]


def pick_flags(rng, phase, index):
    flags = []
    extra = rng.choice([[], [], ["-O0"], ["-O1"], ["-O3"], ["--no-fuse"], ["--no-remat"],
                        ["--no-schedule"], ["--remat-budget=1"]])
    flags += extra
    if phase == "input" and rng.random() < 0.4:
        flags.append(rng.choice(["--optimizer=adamw", "--optimizer=sgd"]))
    if index % 4 == 3:
        flags += ["--emit=llvm", "-o", os.devnull]
    else:
        flags += ["--compile-to=kernels", "-o", os.devnull]
    return flags


def fuzz_one(runner, seeds, texts, seed, index, work):
    """Mutant `index` of run `seed`: returns (runs, excluded, failures)."""
    rng = random.Random(f"{seed}:{index}")
    name, phase, _ = seeds[index % len(seeds)]
    mutant, how = mutate(rng, texts[name])
    path = os.path.join(work, f"mutant-{index}.mlir")
    with open(path, "w") as f:
        f.write(mutant)
    flags = pick_flags(rng, phase, index)
    runs = excluded = 0
    failures = []
    for label, args in commands(runner, path, phase, flags):
        if (phase, label) in EXCLUDED:
            excluded += 1
            continue
        rc, err, dt = runner.run(args)
        runs += 1
        why = verdict(rc, err)
        if why:
            failures.append(dict(seed=seed, index=index, source=name, mutations=how,
                                 label=label, args=args, rc=rc, why=why, err=err,
                                 mutant=mutant))
    os.remove(path)
    return runs, excluded, failures


def save_failure(fdir, f, runner):
    os.makedirs(fdir, exist_ok=True)
    base = os.path.join(fdir, f"seed{f['seed']}-mutant{f['index']}-{f['label']}")
    with open(base + ".mlir", "w") as out:
        out.write(f["mutant"])
    argv = [base + ".mlir" if a.endswith(f"mutant-{f['index']}.mlir") else a
            for a in f["args"]]
    line = " ".join(shlex.quote(a) for a in argv)
    with open(base + ".sh", "w") as out:
        out.write("#!/bin/sh\n# replay: seed %s, mutant %s of %s (%s): %s\n%s\n"
                  % (f["seed"], f["index"], f["source"], ", ".join(f["mutations"]),
                     f["why"], line))
    with open(base + ".txt", "w") as out:
        out.write(f"{f['why']}\n$ {line}\nexit code {f['rc']}\n--- stderr\n{f['err']}")
    return base, line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="holds tfc, tfc-opt, tfc-trace")
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mutants", type=int, default=None)
    ap.add_argument("--only-mutant", type=int, default=None,
                    help="run just this mutant of the run (replay)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--no-exclude", action="store_true",
                    help="also run what EXCLUDED lists (to see whether it still fails)")
    ap.add_argument("--failures-dir", default=None,
                    help="where failing mutants go (default: WORK/failures)")
    a = ap.parse_args(argv)

    env = os.environ
    seed = a.seed if a.seed is not None else int(env.get("TFC_FUZZ_SEED") or
                                                 random.SystemRandom().randrange(2**31))
    count = a.mutants if a.mutants is not None else int(env.get("TFC_FUZZ_MUTANTS", "300"))
    jobs = a.jobs or int(env.get("TFC_FUZZ_JOBS", "2"))
    timeout = a.timeout or float(env.get("TFC_FUZZ_TIMEOUT", "120"))
    print(f"mlir_mutate: seed {seed} (reproduce with --seed {seed} or TFC_FUZZ_SEED={seed}), "
          f"{count} mutants, {jobs} jobs, {timeout:.0f} s per tool run", flush=True)
    if a.no_exclude:
        EXCLUDED.clear()
    for phase, label in EXCLUDED:
        print(f"excluded: {label} on {phase}-phase mutants (see EXCLUDED in {__file__})")

    runner = Runner(a.bin_dir, timeout)
    for t in ("tfc", "tfc-opt", "tfc-trace"):
        if not os.access(runner.tool(t), os.X_OK):
            print(f"error: {runner.tool(t)} not found (build it first)")
            print("0 mutants, 0 tool runs, 1 failures")
            return 1
    if os.path.isdir(a.work_dir):
        shutil.rmtree(a.work_dir)
    os.makedirs(a.work_dir)
    fdir = a.failures_dir or os.path.join(a.work_dir, "failures")

    t0 = time.time()
    seeds = make_seeds(runner, a.work_dir)
    texts = {}
    for name, _, path in seeds:
        with open(path) as f:
            texts[name] = f.read()
    print(f"{len(seeds)} seed files ({', '.join(n for n, _, _ in seeds)}) "
          f"in {time.time() - t0:.0f} s", flush=True)

    indices = [a.only_mutant] if a.only_mutant is not None else list(range(count))
    runs = excluded = 0
    failures = []
    t1 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(fuzz_one, runner, seeds, texts, seed, i, a.work_dir)
                   for i in indices]
        for fut in concurrent.futures.as_completed(futures):
            r, x, fs = fut.result()
            runs += r
            excluded += x
            for f in fs:
                base, line = save_failure(fdir, f, runner)
                failures.append(f)
                print(f"FAIL seed {f['seed']} mutant {f['index']} ({f['source']}: "
                      f"{', '.join(f['mutations'])}): {f['label']} {f['why']}\n"
                      f"  $ {line}\n  saved as {base}.mlir (.sh replays it, .txt has "
                      f"stderr); regenerate with --seed {f['seed']} --only-mutant "
                      f"{f['index']}", flush=True)
                tail = f["err"].strip().splitlines()[-6:]
                print("  | " + "\n  | ".join(tail) if tail else "  | (no stderr)", flush=True)
    print(f"mutants ran in {time.time() - t1:.0f} s (total {time.time() - t0:.0f} s)")
    summary = f"{len(indices)} mutants, {runs} tool runs, {len(failures)} failures"
    if excluded:
        summary += f", {excluded} excluded"
    print(summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

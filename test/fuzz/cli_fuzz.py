#!/usr/bin/env python3
"""Command-line fuzzer: random flag values and paths for tfc-run, tfc and tfc-trace.

A sandbox holds a tiny compiled GPT-2 (`m.mlir`, `m.so`), a token file, a checkpoint, a
text file, and the paths a hostile or careless user gives: a FIFO, a folder, an empty file,
a symbolic link to the model, a hard link to the data, a missing file, /dev/null, /dev/zero
and the empty string. Each mutant is one command line drawn from a table of every
subcommand's options (paths from the pool above, inputs and outputs colliding on purpose;
numbers at and past their limits, NaN, words, empty strings; an odd TFC_OPTIONS) and runs
with a time limit. A run must:

  - end by itself (a hang is a FIFO opened for reading, a thread count that never ends);
  - exit 0, 1 or 2, never by a signal or an abort (exit 128+);
  - print a message on stderr when it exits non-zero;
  - leave every file it was given as an input byte-for-byte as it was, and never succeed
    with an output that is the same file as one of its inputs or outputs
    (docs/reliability.md, "Outputs and untrusted files").

Reproducible: the seed is printed first and in every failure; mutant i depends only on
(seed, i). The sandbox is restored after any run that changed it.

  cli_fuzz.py --bin-dir build/bin --work-dir DIR [--seed S] [--mutants N]

The last line is `N mutants, F failures`; exit status 1 on any failure.
"""
import argparse
import hashlib
import os
import random
import shlex
import shutil
import stat
import subprocess
import sys
import time

TIMEOUT_S = 30

# The pools values are drawn from. Paths are relative to the sandbox.
PRECIOUS = ["m.mlir", "m.so", "data.bin", "ck.safetensors", "text.txt", "tokens.npy"]
LINKS = {"link-m.so": "m.so"}            # symbolic links
HARD_LINKS = {"hard-data.bin": "data.bin"}
IN_PATHS = PRECIOUS + ["link-m.so", "hard-data.bin", "./m.so", "dir/../data.bin", "fifo",
                       "dir", "empty", "missing", "", "/dev/null", "/dev/zero"]
# No FIFO among outputs: opening a FIFO to write waits for a reader by design (tfc
# writes pipes in place, as `-o /dev/stdout` needs).
OUT_PATHS = PRECIOUS + ["link-m.so", "hard-data.bin", "./ck.safetensors", "dir/../m.so",
                        "dir", "new.out", "new2.out",
                        "dir/new.out", "", "/dev/null", "missing-dir/x.out"]
INTS = ["0", "-1", "1", "2", "3", "64", "1000", "1000000", "99999999999999999999999", "abc",
        "", "1e3", "0x10", " 1", "nan", "2.5"]
FLOATS = ["0", "-1", "0.5", "3e-3", "1e308", "1e-400", "nan", "inf", "-inf", "abc", ""]
WORDS = ["", "x", "bytes", "gpt2", "abc def", "'unbalanced", "\x01", "é" * 3, "--", "-"]

# Thread counts: past the bound (1024) and absurd ones must be refused at once; a valid
# count far above the cores (1000 on 2) is slow by nature, not a fuzzing target.
THREADS = ["0", "1", "2", "8", "1025", "1000000", "-1", "abc", ""]
# Kinds of option value.
IN, OUT, INT, FLOAT, WORD, FLAG, THREADS_KIND = "in", "out", "int", "float", "word", "flag", \
    "threads"

# tfc-run's subcommands: (needs the model, positional arguments (IN marks an input path),
# base options that make a valid run short, options to fuzz with their kinds). Each option
# appears once: tfc-run refuses an option given twice.
COMMON_RUN = {"--threads": THREADS_KIND, "--device": INT}
TFC_RUN = {
    "info": (True, [], {}, {"--verbose": FLAG}),
    "init": (True, [], {"-o": "new.out"}, {"-o": OUT, "--seed": INT}),
    "export": (True, [(IN, "ck.safetensors")], {"-o": "new.out"},
               {"-o": OUT, "--allow-unexpected": FLAG}),
    "call": (True, ["forward"], {"--init-seed": "0", "--in": "tokens=tokens.npy"},
             dict(COMMON_RUN, **{"--weights": IN, "--init-seed": INT, "--in": IN,
                                 "--out-dir": OUT, "--state-in": IN, "--state-out": OUT,
                                 "--weights-out": OUT, "--repeat": INT, "--mmap": FLAG})),
    "generate": (True, [], {"--weights": "ck.safetensors", "--prompt-tokens": "1 2 3",
                            "-n": "4"},
                 dict(COMMON_RUN, **{"--weights": IN, "--tokenizer": IN,
                                     "--max-new-tokens": INT, "--temperature": FLOAT,
                                     "--top-k": INT, "--top-p": FLOAT, "--seed": INT,
                                     "--warmup": INT, "--mmap": FLAG})),
    "train": (True, [], {"--init-seed": "0", "--data": "data.bin", "--steps": "2",
                         "--save": "new2.out"},
              dict(COMMON_RUN, **{"--weights": IN, "--init-seed": INT, "--data": IN,
                                  "--eval-data": IN, "--resume": IN, "--steps": INT,
                                  "--lr": FLOAT, "--save": OUT, "--save-every": INT,
                                  "--log": OUT, "--plot": OUT, "--seed": INT,
                                  "--batch": INT, "--warmup": INT, "--grad-clip": FLOAT})),
    "profile": (True, ["forward"], {"--init-seed": "0", "--repeat": "1", "--warmup": "0",
                                    "--in": "tokens=tokens.npy"},
                dict(COMMON_RUN, **{"--weights": IN, "--json": OUT, "--plot": OUT,
                                    "--repeat": INT, "--top": INT,
                                    "--peak-gflops": FLOAT, "--bandwidth-gbs": FLOAT})),
    "inspect": (False, [(IN, "ck.safetensors")], {}, {"--values": INT}),
    "tokenize": (False, [(IN, "text.txt")], {"--tokenizer": "bytes", "-o": "new.out"},
                 {"--tokenizer": IN, "-o": OUT, "--val-fraction": FLOAT,
                  "--val-output": OUT}),
}
# Values that parse: half of the numbers drawn, so that runs get past the option checks
# to the files.
GOOD_INTS = ["0", "1", "2", "3"]
GOOD_FLOATS = ["0.5", "0.1", "1", "3e-3"]
# Options of tfc (the compiler) worth fuzzing; each run compiles at most to the graph
# phase unless it fuzzes a codegen option.
TFC = {"-o": OUT, "--report": OUT, "--cpu": WORD, "--dp": INT, "--tp": INT,
       "--dp-bucket-mb": FLOAT, "--parallel-min-work": INT, "--no-decay": WORD,
       "--optimizer": WORD, "--remat-budget": INT}
CPUS = ["i386", "i686", "pentium4", "x86-64", "znver4", "native", "bogus", ""]
TFC_OPTIONS = ["", "--no-fuse", "'unbalanced", "\"x", "--dp=0", "-O9"]


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def identity(sandbox, path):
    """What a path names, as the tools must compare it: (device, inode) of an existing
    file after links, else the real folder and the name; None for what is not a file."""
    if not path or path == "-":
        return None
    full = os.path.join(sandbox, path)
    try:
        st = os.stat(full)
        if not stat.S_ISREG(st.st_mode):
            return None
        return ("ino", st.st_dev, st.st_ino)
    except OSError:
        parent = os.path.realpath(os.path.dirname(full) or ".")
        return ("new", parent, os.path.basename(full))


class Sandbox:
    def __init__(self, root, bin_dir):
        self.root, self.bin = root, bin_dir
        self.pristine = os.path.join(root, ".pristine")

    def tool(self, name):
        return os.path.join(self.bin, name)

    def build(self):
        os.makedirs(self.pristine)
        run = lambda *a: subprocess.run([str(x) for x in a], cwd=self.pristine, check=True,
                                        capture_output=True, timeout=300)
        run(self.tool("tfc-trace"), "gpt2", "--set", "vocab_size=256", "--set", "n_layer=1",
            "--set", "n_head=2", "--set", "n_embd=16", "--set", "n_ctx=16", "--set",
            "batch=2", "--set", "seq=8", "-o", "m.mlir")
        run(self.tool("tfc"), "m.mlir", "--optimizer=adamw", "-o", "m.so")
        with open(os.path.join(self.pristine, "text.txt"), "w") as f:
            f.write("The quick brown fox jumps over the lazy dog. " * 20)
        run(self.tool("tfc-run"), "tokenize", "--tokenizer", "bytes", "text.txt", "-o",
            "data.bin")
        run(self.tool("tfc-run"), "m.so", "init", "--seed", "0", "-o", "ck.safetensors")
        # forward's tokens, int32 [2, 8], as a .npy file (format version 1.0).
        header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 8), }"
        header += " " * (63 - (10 + len(header)) % 64) + "\n"
        with open(os.path.join(self.pristine, "tokens.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                    header.encode() +
                    b"".join(i.to_bytes(4, "little") for i in range(1, 17)))
        self.hashes = {p: sha(os.path.join(self.pristine, p)) for p in PRECIOUS}
        self.restore()

    def restore(self):
        """Lays the sandbox out anew from the pristine copies."""
        for name in os.listdir(self.root):
            if name == ".pristine":
                continue
            full = os.path.join(self.root, name)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.remove(full)
        for p in PRECIOUS:
            shutil.copy(os.path.join(self.pristine, p), os.path.join(self.root, p))
        for link, target in LINKS.items():
            os.symlink(target, os.path.join(self.root, link))
        for link, target in HARD_LINKS.items():
            os.link(os.path.join(self.root, target), os.path.join(self.root, link))
        os.mkfifo(os.path.join(self.root, "fifo"))
        os.mkdir(os.path.join(self.root, "dir"))
        open(os.path.join(self.root, "empty"), "w").close()

    def changed(self):
        return [p for p in PRECIOUS
                if not os.path.isfile(os.path.join(self.root, p))
                or sha(os.path.join(self.root, p)) != self.hashes[p]]


def draw(rng, kind):
    if kind == IN:
        return rng.choice(IN_PATHS)
    if kind == OUT:
        return rng.choice(OUT_PATHS)
    if kind == THREADS_KIND:
        return rng.choice(THREADS)
    if kind == INT:
        return rng.choice(INTS if rng.random() < 0.5 else GOOD_INTS)
    if kind == FLOAT:
        return rng.choice(FLOATS if rng.random() < 0.5 else GOOD_FLOATS)
    return rng.choice(WORDS)


def mutant(rng, sandbox):
    """One command line: (argv, env, input paths, output paths)."""
    env = dict(os.environ)
    choice = rng.random()
    if choice < 0.8:
        name = rng.choice(sorted(TFC_RUN))
        needs_model, positional, base, options = TFC_RUN[name]
        model = rng.choice(["m.so"] * 6 + ["link-m.so", "fifo", "dir", "empty", "m.mlir",
                                           "missing", ""]) if needs_model else None
        argv = [sandbox.tool("tfc-run")] + ([model, name] if needs_model else [name])
        inputs = [model] if needs_model else []
        outputs = []
        for arg in positional:
            if isinstance(arg, tuple):
                # An input path, sometimes replaced by another one of the pool.
                arg = arg[1] if rng.random() < 0.7 else rng.choice(IN_PATHS)
                inputs.append(arg)
            argv.append(arg)
        chosen = dict(base)
        for _ in range(rng.randint(1, 4)):
            opt = rng.choice(sorted(options))
            value = None if options[opt] == FLAG else draw(rng, options[opt])
            if opt == "--in" and value is not None:
                value = "tokens=" + value
            chosen[opt] = value
        for opt, value in chosen.items():
            argv += [opt] if value is None else [opt, value]
            kind = options.get(opt, IN if opt in ("--data", "--in") else
                               OUT if opt in ("-o", "--save") else WORD)
            if value is None or kind not in (IN, OUT):
                continue
            if opt == "--in":
                value = value.split("=", 1)[1]
            if opt == "--tokenizer" and value in ("bytes", "gpt2"):
                continue
            (inputs if kind == IN else outputs).append(value)
    elif choice < 0.93:
        argv = [sandbox.tool("tfc"), "m.mlir"]
        inputs, outputs = ["m.mlir"], []
        opts = {}
        for _ in range(rng.randint(1, 3)):
            opt = rng.choice(sorted(TFC))
            opts[opt] = (rng.choice(CPUS) if opt == "--cpu" else draw(rng, TFC[opt]))
        opts.setdefault("-o", "new.out")
        if "--cpu" not in opts and rng.random() < 0.7:
            argv.append("--compile-to=graph")
        for opt, value in opts.items():
            argv.append(f"{opt}={value}" if opt != "-o" else "-o")
            if opt == "-o":
                argv.append(value)
            if TFC[opt] == OUT:
                outputs.append(value)
        if rng.random() < 0.3:
            env["TFC_OPTIONS"] = rng.choice(TFC_OPTIONS)
    else:
        out = rng.choice(OUT_PATHS)
        argv = [sandbox.tool("tfc-trace"), "gpt2", "--set", "n_layer=1", "-o", out]
        inputs, outputs = [], [out]
    return argv, env, [p for p in inputs if p is not None], outputs


def check(sandbox, argv, env, inputs, outputs, exits):
    """Runs one mutant; returns the reason it failed, or None. Counts exit codes in
    `exits`."""
    try:
        r = subprocess.run(argv, cwd=sandbox.root, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"hung: still running after {TIMEOUT_S} s"
    err = r.stderr.decode(errors="replace")
    exits[r.returncode] = exits.get(r.returncode, 0) + 1
    if r.returncode < 0 or r.returncode >= 128:
        return f"died: exit {r.returncode}; stderr: {err[-800:]}"
    if r.returncode not in (0, 1, 2):
        return f"exit {r.returncode}; stderr: {err[-800:]}"
    if r.returncode != 0 and not err.strip():
        return f"exit {r.returncode} without a message on stderr"
    # An input the command was given must be as it was: compare what each input path
    # names with the pristine copy of the file behind it.
    changed = set(sandbox.changed())
    for p in inputs:
        target = LINKS.get(p, HARD_LINKS.get(p, os.path.normpath(p) if p else p))
        if target in changed:
            return f"destroyed its input {p!r} (exit {r.returncode}); stderr: {err[-400:]}"
    if r.returncode == 0:
        ids = [(p, identity(sandbox.root, p)) for p in inputs + outputs]
        # Identities as the files were before the run: the sandbox was laid out so.
        for a in range(len(ids)):
            for b in range(a + 1, len(ids)):
                (pa, ia), (pb, ib) = ids[a], ids[b]
                if ia is not None and ia == ib and (a >= len(inputs) or b >= len(inputs)):
                    return (f"exit 0 with {pa!r} and {pb!r} naming the same file "
                            "(an output onto an input or another output)")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("TFC_FUZZ_SEED", 0)) or
                    int.from_bytes(os.urandom(3), "little"))
    ap.add_argument("--mutants", type=int,
                    default=int(os.environ.get("TFC_FUZZ_CLI_MUTANTS", 300)))
    args = ap.parse_args()
    print(f"cli_fuzz: seed {args.seed} (reproduce with TFC_FUZZ_SEED={args.seed})",
          flush=True)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    sandbox = Sandbox(os.path.abspath(args.work_dir), os.path.abspath(args.bin_dir))
    sandbox.build()
    failures = 0
    exits = {}
    start = time.time()
    for i in range(args.mutants):
        rng = random.Random(args.seed * 1_000_003 + i)
        argv, env, inputs, outputs = mutant(rng, sandbox)
        reason = check(sandbox, argv, env, inputs, outputs, exits)
        shown = " ".join(shlex.quote(os.path.basename(a) if a.startswith(sandbox.bin) else a)
                         for a in argv)
        extra = f" TFC_OPTIONS={shlex.quote(env['TFC_OPTIONS'])}" if "TFC_OPTIONS" in env \
            and env.get("TFC_OPTIONS") != os.environ.get("TFC_OPTIONS") else ""
        if reason:
            failures += 1
            print(f"FAIL seed {args.seed} mutant {i}:{extra} {shown}\n  {reason}", flush=True)
        sandbox.restore()
    # Most runs are refused (that is the point); some must get through to real work.
    print(f"cli_fuzz: {time.time() - start:.0f} s; exit codes: " +
          ", ".join(f"{code}: {n}" for code, n in sorted(exits.items())))
    print(f"{args.mutants} mutants, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

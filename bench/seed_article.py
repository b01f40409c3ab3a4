#!/usr/bin/env python3
"""Peer for `tfc-seed-experiment MODEL.so`: the seed-002 article's OWN NumPy code.

The article (/work/shared/seeds/002_*.txt, Russian, "a transformer by hand") is read at
run time; none of its code is stored here. The script

  1. extracts the article's code blocks listed in BLOCKS (each found by a distinctive
     first line), in article order;
  2. restores Python indentation, which the stored text has lost (see reindent());
  3. exec()s them in one fresh namespace: model, backward pass, Adam, schedule, data
     generator, the palindrome data set, the hyper-parameters, `fit(...)` (10 epochs of
     64 steps, batch 64, d_model 32, 4 heads, vocab 12, 16 tokens) and `predict` on the
     article's 9 example palindromes;
  4. prints the article's own per-epoch output, the 9 predictions, the number that are
     exact, and one JSON line.

Nothing in the math is changed. What is done to make the text run non-interactively:
  * indentation is rebuilt (the text has none): block openers (`...:`) indent, and
    `return`/`raise`/`break`/`continue`/`pass`, `def`/`class`, `else`/`elif`/`except`
    dedent; the remaining dedents (end of a loop or `if` body without a `return`) are
    ambiguous in flat text and are listed per block in BLOCKS ("dedent" hints);
  * prose glued onto the last line of a block (`return seqКод реализует…`) is cut off;
  * IPython shell escapes (`!nvidia-smi`, `!pip install cupy-cuda12x`) are dropped and
    `cupy` is made unimportable, so the article's own `try: import cupy … except:
    import numpy as np` takes its NumPy branch;
  * the article's print loop over the predictions is garbled in the text (prose glued in
    front of its body), so the block stops before it and this script prints the
    predictions in the same `f"{r} -> {p}"` form and counts the exact ones;
  * the article's shape smoke-test and its matrix-statistics demo are not run (they
    define nothing the experiment uses; the smoke test would also draw from the RNG).

Timing: wall_s is the article's `fit(...)` call alone: 10 epochs x 64 training steps
(forward, loss, backward, Adam) plus the article's per-epoch validation pass over the
85 validation batches and its prints. Data generation (`gen.palindrome()`) is a separate
block in the article and is timed separately (data_s), as is prediction.

Threads: nothing is changed. The article's code is mostly np.einsum with the default
optimize=False, which does not call BLAS, so it runs single-threaded in effect; the
BLAS name and thread count are reported, with process CPU time / wall time.

  python3 bench/seed_article.py [ARTICLE] [--seed N] [--dump]

--seed N calls np.random.seed(N) and random.seed(N) before the article's code runs
(the article sets no seed; its palindrome data come from Python's `random`, its
parameters and shuffles from NumPy's global RNG). --dump prints the reconstructed code
and exits.
"""
import argparse
import glob
import json
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_ARTICLE = os.path.join(REPO, "..", "shared", "seeds", "002_*.txt")

# The article's code blocks used, in article order. `start`: the block's first line,
# exactly (must occur once in the text). The block runs until prose resumes (a line
# starting with Cyrillic text, or Cyrillic text glued after code on the last line).
# `stop_before`: end the block before the first line starting with this text.
# `dedent`: (line prefix, levels) for the ambiguous dedents, consumed in order.
# `drop_prefix`: physical lines starting with this are dropped. `phase`: for timing.
BLOCKS = [
    dict(name="imports", start="try:", drop_prefix="!",
         dedent=[("import random", 1)]),
    dict(name="globals", start="# Глобальные параметры:"),
    dict(name="parameters", start="# Параметры внимания (для энкодера и декодера):"),
    dict(name="vocab", start="# Работа с вокабуляром:"),
    dict(name="call", start="def call(X: np.ndarray, Y: np.ndarray = None) -> np.ndarray:",
         dedent=[("return seq", 1)]),
    dict(name="softmax..predict", start="def softmax(X: np.ndarray) -> np.ndarray:",
         dedent=[("return np.array(predictions", 1)]),
    dict(name="MHA", start="def MHA(X: np.ndarray, is_decoder: bool = False, index: int = 0, "
         "neg_inf: float = -1e9) -> tuple[np.ndarray, dict]:",
         dedent=[("A_softmax = softmax(A)", 1)]),
    dict(name="positional_encoding",
         start="def positional_encoding(X: np.ndarray) -> tuple[np.ndarray, dict]:"),
    dict(name="FF", start="def FF(X: np.ndarray, index: int = 0) -> tuple[np.ndarray, dict]:"),
    dict(name="MHCA",
         start="def MHCA(X: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, dict]:"),
    dict(name="output", start="def output(X: np.ndarray) -> tuple[np.ndarray, dict]:"),
    dict(name="SparseCrossEntropy", start="def SparseCrossEntropy(prediction: np.ndarray, "
         "target: np.ndarray, eps: float = 1e-8) -> tuple[int, np.ndarray]:"),
    dict(name="backward_*", start="def backward_normalize(dY: np.ndarray, cache: dict) "
         "-> tuple[np.ndarray, dict]:",
         dedent=[("tmp = np.sum(dA * A_softmax", 1)]),  # end of backward_MHA's mask `if`
    dict(name="backward", start="def backward(loss: np.ndarray, cache) -> tuple[dict, ...]:"),
    dict(name="normalize", start="def normalize(X: np.ndarray, eps: float = 1e-8):"),
    dict(name="optimizer", start="def optimizer(",
         dedent=[("gradients = [elem", 1), ("return state", 1)]),
    dict(name="fit", start="def fit(",
         dedent=[("state = dict()", 1), ("for step, (batch, target)", 1),
                 ("for batch, target in data_valid", 1),
                 ("general_loss_train /= step_per_epoch", 1)]),
    dict(name="Generator", start="class Generator:",
         dedent=[("data.append(data_batch)", 1), ("data = np.array((data, target)", 1),  # palindrome
                 ("data.append(data_batch)", 1), ("data = np.array((data, target)", 1)]),  # pointer_index
    dict(name="dataset", start="gen = Generator(", phase="data"),
    # its last comment has the next prose glued on, so its end is given explicitly
    dict(name="hyper-parameters", start="epoch = 10", stop_before="def sheduler("),
    dict(name="sheduler", start="def sheduler(step, warmup_steps=128):"),
    dict(name="fit-call", start="fit(", phase="train"),
    dict(name="predict", start='print("\\nВывод: ")', stop_before="for r, p in zip(",
         phase="predict"),
]

CYRILLIC = re.compile("[\u0400-\u04ff]")
OPENERS = ("if", "elif", "else", "for", "while", "try", "except", "finally", "with",
           "def", "class")
CLOSERS = ("return", "raise", "continue", "break", "pass")


class Scan:
    """Tracks strings and brackets across physical lines; finds glued prose."""

    def __init__(self):
        self.triple = None  # the open triple quote, if inside one
        self.depth = 0

    def line(self, text):
        """-> (code, glued, code_without_comment): `code` is text cut where Cyrillic
        prose starts outside strings and comments (glued=True when cut)."""
        i, n, comment_at = 0, len(text), None
        while i < n:
            if self.triple:
                j = text.find(self.triple, i)
                if j < 0:
                    return text, False, text
                i, self.triple = j + 3, None
                continue
            c = text[i]
            if c in "\"'":
                if text.startswith(c * 3, i):
                    self.triple, i = c * 3, i + 3
                    continue
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
                continue
            if c == "#":
                comment_at = i
                break
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth -= 1
            elif CYRILLIC.match(c):
                code = text[:i].rstrip()
                return code, True, code
            i += 1
        code = text.rstrip()
        return code, False, (code if comment_at is None else text[:comment_at].rstrip())


def extract(lines, spec):
    starts = [k for k, l in enumerate(lines) if l.strip() == spec["start"]]
    if len(starts) != 1:
        sys.exit(f"seed_article: block {spec['name']!r}: start line found {len(starts)} "
                 f"times (want 1): {spec['start']!r}")
    scan, out = Scan(), []
    for l in lines[starts[0]:]:
        if spec.get("stop_before") and l.lstrip().startswith(spec["stop_before"]):
            break
        if spec.get("drop_prefix") and l.startswith(spec["drop_prefix"]):
            continue
        at_code_start = scan.triple is None and scan.depth == 0
        code, glued, bare = scan.line(l)
        if glued and not code:
            break  # a prose line
        out.append((code, bare, at_code_start))
        if glued:
            break
    return out


def reindent(block, spec):
    """Rebuild indentation of one block (see the module docstring)."""
    hints = list(spec.get("dedent", []))
    stack, out, comments, k = [], [], [], 0
    while k < len(block):
        # one logical line: the physical lines up to depth 0 outside strings
        group = [block[k]]
        k += 1
        while k < len(block) and not block[k][2]:
            group.append(block[k])
            k += 1
        first = group[0][0].strip()
        if not first or first.startswith("#"):
            comments.append(first)  # indented like the next code line
            continue
        word = re.match(r"[A-Za-z_]*", first).group(0)
        if hints and first.startswith(hints[0][0]):
            del stack[len(stack) - hints.pop(0)[1]:]
        if word in ("def", "class") or first.startswith("@"):
            while stack and stack[-1] != "class":
                stack.pop()
        elif word in ("else", "elif", "except", "finally"):
            if stack and stack[-1] in ("if", "elif", "try", "except", "for", "while"):
                stack.pop()
        level = len(stack)
        out.extend("    " * level + c for c in comments)
        comments.clear()
        out.append("    " * level + first)
        out.extend("    " * (level + 1) + g[0].strip() for g in group[1:])
        if word in OPENERS and group[-1][1].endswith(":"):
            stack.append(word)
        elif word in CLOSERS and stack:
            stack.pop()
    out.extend("    " * len(stack) + c for c in comments)
    if hints:
        sys.exit(f"seed_article: block {spec['name']!r}: dedent hints not matched: {hints}")
    return "\n".join(out) + "\n"


class Tee:
    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, s):
        self.text.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()


def blas_info(np):
    name, threads, how = "unknown", None, None
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{deps.get('name')} {deps.get('version', '')}".strip()
    except Exception:  # older numpy
        pass
    try:
        import threadpoolctl
        info = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
        if info:
            threads, how = info[0].get("num_threads"), "threadpoolctl"
    except ImportError:
        import ctypes
        libs = set()
        with open("/proc/self/maps") as f:
            for l in f:
                p = l.split()[-1]
                if "openblas" in os.path.basename(p).lower() and ".so" in p:
                    libs.add(p)
        for p in sorted(libs):
            lib = ctypes.CDLL(p)
            for fn in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                       "openblas_get_num_threads"):
                if hasattr(lib, fn):
                    threads, how = getattr(lib, fn)(), f"{fn} (ctypes)"
                    break
            if threads is not None:
                break
    return name, threads, how


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("article", nargs="?", default=DEFAULT_ARTICLE)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--dump", action="store_true", help="print the reconstructed code, exit")
    a = ap.parse_args()

    paths = sorted(glob.glob(a.article))
    if len(paths) != 1:
        sys.exit(f"seed_article: {a.article}: {len(paths)} matches (want 1)")
    with open(paths[0], encoding="utf-8") as f:
        lines = f.read().splitlines()
    code = [(spec, reindent(extract(lines, spec), spec)) for spec in BLOCKS]
    if a.dump:
        for spec, src in code:
            print(f"# ===== block {spec['name']} =====\n{src}")
        return
    for spec, src in code:
        compile(src, f"<article:{spec['name']}>", "exec")  # fail before any work

    sys.modules["cupy"] = None  # the article's `import cupy` fails -> its NumPy branch
    import numpy as np
    blas, threads, how = blas_info(np)
    print(f"article: {os.path.normpath(paths[0])} ({len(BLOCKS)} code blocks)")
    print(f"numpy {np.__version__}, BLAS {blas}, BLAS threads {threads}"
          f"{f' (via {how})' if how else ''}; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')} (not changed)")
    if a.seed is not None:
        np.random.seed(a.seed)
        random.seed(a.seed)
        print(f"seed: {a.seed} (np.random.seed and random.seed)")
    else:
        print("seed: none (as in the article; runs differ)")
    sys.stdout.flush()

    ns = {"__name__": "__article__", "__builtins__": __builtins__}
    times, tee = {}, Tee(sys.stdout)
    real_stdout, sys.stdout = sys.stdout, tee
    try:
        for spec, src in code:
            phase = spec.get("phase", "setup")
            t, c = time.perf_counter(), time.process_time()
            exec(compile(src, f"<article:{spec['name']}>", "exec"), ns)
            w, c = time.perf_counter() - t, time.process_time() - c
            pw, pc = times.get(phase, (0.0, 0.0))
            times[phase] = (pw + w, pc + c)
    finally:
        sys.stdout = real_stdout

    printed = "".join(tee.text)
    val = [float(v) for v in re.findall(r"Ошибка модели на тесте: ([-+0-9.eE]+)", printed)]
    request, prediction = ns["request"][0], ns["prediction"][0]
    exact = 0
    for r, p in zip(request, prediction):  # the article's garbled print loop, as intended
        half = list(r[: len(r) // 2])
        ok = list(p[1:]) == half + half[::-1]
        exact += ok
        print(f"{r} -> {p}{'' if ok else '   (not exact)'}")
    wall, cpu = times["train"]
    print(f"\nexact: {exact}/{len(request)}")
    print("val loss per epoch: " + ", ".join(f"{v:.4f}" for v in val))
    print(f"fit(): {wall:.2f} s wall, {cpu:.2f} s CPU (ratio {cpu / wall:.2f}); "
          f"data generation {times['data'][0]:.2f} s; predict {times['predict'][0]:.2f} s")
    print(json.dumps({
        "peer": "article NumPy code", "numpy": np.__version__, "blas": blas,
        "wall_s": round(wall, 3), "val_loss": val[-1] if val else None, "exact": exact,
        "exact_of": len(request), "val_loss_per_epoch": val, "cpu_s": round(cpu, 3),
        "blas_threads": threads, "seed": a.seed, "data_s": round(times["data"][0], 3),
        "wall_includes": "fit(): 10 epochs x 64 train steps + per-epoch validation",
    }))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A CUDA artifact against the CPU artifact of the same model, entry by entry.

For gpt2, llama, mixtral and encdec (the small defaults of tfc-trace), with
weights drawn by `tfc-run init` from a fresh seed (printed; --seed S
reproduces) and fresh random tokens:
  - forward, loss and loss_grad (mixtral: also router_aux_loss) through
    `tfc-run call`: logits within
    1e-4 of the largest logit (f32), the loss within 1e-5 relative, each
    gradient within 1e-4 of its largest element (in bf16, with the products on
    tensor cores: 3e-2, bf16's; gpt2-bf16 is mixed-precision training,
    gpt2-bf16-infer bf16 weights);
  - `generate` (gpt2, llama, mixtral, llama-paged): greedy and seeded sampling give the
    same tokens; llama is traced with a generation batch of 3, and `generate
    --prompts` (continuous batching: decode_rows and prefill_row, each row its own
    sequence at its own position) gives the same tokens for every request; so does
    llama-paged, whose KV cache is a pool of blocks too small for its requests (paged
    attention through block tables, preemption);
  - `train` (gpt2, llama, mixtral, gpt2-bf16; AdamW, 3 steps): the same losses (1e-5
    relative; gpt2-bf16 2e-3) and
    parameters within 1e-5 relative (the norm of the difference over the norm
    of all parameters; the worst tensor is printed: a few elements, like
    attention's key bias whose gradient is zero up to rounding, are steered by
    rounding noise through Adam's normalization);
  - a token id out of range is refused by both with the same message;
  - with the emulated driver, which library ran the products: the fake cuBLASLt
    next to it (test/cuda_emulator/cublaslt: every product a GPU gives to
    cuBLASLt), or with `--products kernels` tfc's own product kernels (the path
    of a GPU without cuBLASLt).

Where: on a GPU (scripts/gpu-check.sh: `--build DIR` here, where tfc is, then
`--run DIR` there), or here with the emulated driver (`--emulate LIBCUDA`:
test/cuda_emulator's libcuda.so.1, which runs the kernels' CUDA C++ compiled for
the host), which is how CI checks the whole host half of a CUDA artifact:
launches, plan copies, constants, the device arena, uploads and downloads,
graph capture and replay, the error word.

    check_cuda_artifacts.py --bin-dir build/bin --emulate build/test/cuda_emulator/libcuda.so.1
    check_cuda_artifacts.py --bin-dir build/bin --build DIR [--cuda-arch sm_90]
    check_cuda_artifacts.py --bin-dir DIR --run DIR [--device N]
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import harness  # noqa: E402

class Model:
    """A model of the check: what tfc-trace traces, the optimizer (None: no training
    entries), whether it is decoder-only (generate, and train with an optimizer), tfc's
    extra flags, and the tolerances of call outputs and of training (relative)."""

    def __init__(self, trace, optimizer, decoder, flags=(), call_limit=1e-4, train_limit=1e-5,
                 generate=True, grad_limit=None, trace_sets=(), batched=False):
        self.trace, self.optimizer, self.decoder = trace, optimizer, decoder
        self.trace_sets = [a for item in trace_sets for a in ("--set", item)]
        self.batched = batched  # generate --prompts (a generation batch > 1)
        self.flags, self.call_limit, self.train_limit = list(flags), call_limit, train_limit
        self.generate = generate
        # The limit of loss_grad's gradients where it differs from call_limit: see encdec's.
        self.grad_limit = grad_limit if grad_limit is not None else call_limit


MODELS = {
    "gpt2": Model("gpt2", "adamw", True),
    "llama": Model("llama", "adamw", True, trace_sets=["gen_batch=3"], batched=True),
    "mixtral": Model("mixtral", "adamw", True),
    # A paged KV cache (kv_block): 8 blocks of 8 positions for 3 rows of up to 64, so that
    # the 5 requests of `--prompts` (up to 52 tokens each) outgrow the pool and are
    # preempted; single prompts run through the serving entries with an identity table.
    "llama-paged": Model("llama", None, True,
                         trace_sets=["gen_batch=3", "kv_block=8", "kv_blocks=8"],
                         batched=True),
    # encdec's leaky ReLU has a kink: where a pre-activation lies within rounding of 0, the
    # CPU and the device may take different slopes (1 or 0.1), which moves that unit's share of
    # every gradient upstream of it by O(its share). Seed 14167805: one (row, unit) of the
    # encoder's MLP out of B x T x 128; grad.encoder.ff.w1 then differs by 2.2e-3 of its
    # largest element (31 of 4096 elements, the unit's column), the attention's weights
    # upstream by up to 5.7e-4; w2's gradient, which reads the activation's continuous value,
    # by 1e-6, and the loss by 8e-7. So its gradients are held to 1e-2, still far below what a
    # wrong kernel gives (O(1)); its forward and loss keep 1e-4 and 1e-5.
    "encdec": Model("encdec", "sgd", False, grad_limit=1e-2),
    # bf16, with the products on tensor cores (kernels/gemm.cuh), against the CPU's bf16
    # kernels: mixed-precision training, and inference with bf16 weights. Both round the
    # same bf16 operands; their f32 sums differ in order, and a stored bf16 intermediate can
    # then differ by an ulp (2^-8), so the limits are bf16's. Greedy tokens are compared in
    # f32 only: in bf16 a near-tie may break either way. Flash attention (kernels/
    # attention.cuh) rounds the probabilities to bf16 before multiplying them by V, as
    # FlashAttention-2 and PyTorch's SDPA do, where the CPU keeps them f32: after 3 AdamW
    # steps (whose sign-like updates amplify a gradient's noise near zero) the parameters
    # differ by 4.8e-4 to 5.5e-4 over seeds (5e-5 before it), so the limit is 2e-3.
    "gpt2-bf16": Model("gpt2", "adamw", True, ["--precision=bf16"], call_limit=3e-2,
                       train_limit=2e-3, generate=False),
    "gpt2-bf16-infer": Model("gpt2", None, True, ["--precision=bf16"], call_limit=3e-2,
                             generate=False),
}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    types = {"F32": np.float32, "I32": np.int32, "I64": np.int64, "BF16": np.uint16}
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]],
                             types[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


def entries_of(tfc_run, model):
    """{entry: [(input name, dtype, shape)]} from `tfc-run MODEL info`."""
    out = harness.run_tool([tfc_run, model, "info"]).stdout
    entries, current = {}, None
    for line in out.splitlines():
        m = re.match(r"  (\w+)  \(arena", line)
        if m:
            current = entries.setdefault(m.group(1), [])
            continue
        m = re.match(r"    in\s+(\S+)\s+(\w+)\s+\[([0-9, ]*)\]", line)
        if m and current is not None:
            shape = [int(d) for d in m.group(3).split(",") if d.strip()]
            current.append((m.group(1), m.group(2), shape))
    return entries


class Checker:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.passed = self.failed = 0
        self.library_products = 0  # products run by the fake cuBLASLt (emulated runs)
        self.env = dict(os.environ)
        self.tfc_run = os.path.abspath(os.path.join(args.bin_dir, "tfc-run"))

    def result(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        self.passed += ok
        self.failed += not ok

    def run(self, model, *args, env=None, check=True):
        on_gpu = model.endswith("-cuda.so")
        device = ["--device", str(self.args.device)] if on_gpu and \
            args[0] in ("call", "generate", "train") else []
        # Under compute-sanitizer: any error it finds fails the run (exit 97).
        wrap = ["compute-sanitizer", f"--tool={self.args.sanitizer}", "--error-exitcode=97",
                "--print-limit=20"] if on_gpu and self.args.sanitizer else []
        p = subprocess.run([*wrap, self.tfc_run, model, *args, *device], cwd=self.work,
                           env=env or self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           timeout=harness.timeout_s(600))
        # The fake cuBLASLt counts the products it ran when its handle goes.
        self.library_products += sum(
            int(m) for m in re.findall(r"fake-cublaslt: (\d+) products", p.stderr))
        if check and p.returncode != 0:
            raise RuntimeError(f"tfc-run {os.path.basename(model)} {' '.join(args)}: "
                               f"{p.stderr.strip()[-2000:]}")
        return p

    def both(self, name, *args, check=True):
        return [self.run(os.path.join(self.work, f"{name}-{kind}.so"), *args, check=check)
                for kind in ("cpu", "cuda")]


def build(args, work, names):
    """Traces and compiles every model for the CPU and for CUDA into `work`."""
    tfc = os.path.join(args.bin_dir, "tfc")
    trace = os.path.join(args.bin_dir, "tfc-trace")
    for name in names:
        spec = MODELS[name]
        train = [f"--optimizer={spec.optimizer}"] if spec.optimizer else []
        train += spec.flags
        mlir = os.path.join(work, f"{name}.mlir")
        for cmd in (
                [trace, spec.trace, *spec.trace_sets, "-o", mlir],
                [tfc, mlir, *train, "-o", os.path.join(work, f"{name}-cpu.so")],
                [tfc, mlir, *train, "--target=cuda",
                 f"--cuda-arch={args.cuda_arch}", "-o", os.path.join(work, f"{name}-cuda.so")]
                + ([f"--dump-ir={os.path.join(work, name + '-dump')}"] if args.emulate else [])):
            p = harness.run_tool(cmd, timeout=900)
            if p.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}:\n{p.stderr[-3000:]}")
        if args.emulate:
            kernels = os.path.join(work, f"{name}-kernels.so")
            p = harness.run_tool([sys.executable,
                                  os.path.join(HERE, "..", "..", "cuda_emulator",
                                               "build_host_kernels.py"),
                                  "--dump-dir", os.path.join(work, name + "-dump"),
                                  "--out", kernels], timeout=900)
            if p.returncode != 0:
                raise RuntimeError(f"build_host_kernels.py ({name}):\n{p.stdout}{p.stderr}")


def check_model(c, name, rng):
    spec = MODELS[name]
    optimizer, decoder = spec.optimizer, spec.decoder
    cpu, cuda = (os.path.join(c.work, f"{name}-{k}.so") for k in ("cpu", "cuda"))
    if c.args.emulate:
        c.env["TFC_CUDA_DRIVER"] = os.path.abspath(c.args.emulate)
        c.env["TFC_CUDA_EMULATOR_KERNELS"] = os.path.join(c.work, f"{name}-kernels.so")
        c.env["TFC_CUBLASLT_LIBRARY"] = os.path.join(
            os.path.dirname(os.path.abspath(c.args.emulate)), "cublaslt", "libcublasLt.so.13")
    if c.args.products:
        c.env["TFC_CUDA_PRODUCTS"] = c.args.products
    c.library_products = 0
    weights = f"{name}-w.safetensors"
    c.run(cpu, "init", "--seed", str(c.seed), "-o", weights)
    meta = json.loads(re.search(r"metadata:\s+(.*)", c.run(cpu, "info").stdout).group(1))
    config = meta.get("config", {})
    vocab = config.get("vocab_size") or config.get("vocab") or 12

    # call: forward, loss, loss_grad on fresh tokens.
    entries = entries_of(c.tfc_run, cpu)
    for entry in ("forward", "loss", "loss_grad", "router_aux_loss"):
        if entry not in entries:
            continue
        ins = []
        for arg, dtype, shape in entries[entry]:
            path = f"{name}-{entry}-{arg}.npy"
            np.save(os.path.join(c.work, path), rng.integers(0, vocab, shape).astype(np.int32))
            ins += ["--in", f"{arg}={path}"]
        outs = []
        for kind, model in (("cpu", cpu), ("cuda", cuda)):
            out_dir = f"{name}-{entry}-{kind}"
            c.run(model, "call", entry, "--weights", weights, *ins, "--out-dir", out_dir)
            outs.append({f[:-4]: np.load(os.path.join(c.work, out_dir, f))
                         for f in os.listdir(os.path.join(c.work, out_dir))})
        worst, where = 0.0, "0"
        for key, a in outs[0].items():
            b = outs[1][key]
            scale = float(np.abs(a).max()) or 1.0
            err = float(np.abs(a.astype(np.float64) - b).max()) / scale
            limit = (spec.call_limit / 10 if a.ndim == 0
                     else spec.grad_limit if key.startswith("grad.") else spec.call_limit)
            if err / limit > worst:
                worst, where = err / limit, f"{key} {err:.2e} (limit {limit:.0e})"
        c.result(f"{name} {entry}", worst <= 1.0,
                 f"{len(outs[0])} outputs; worst {where}")

    if decoder and spec.generate:
        for extra, what in (([], "greedy"),
                            (["--temperature", "0.8", "--top-k", "20", "--seed", str(c.seed)],
                             "sampled")):
            tokens = [p.stdout.split() for p in
                      c.both(name, "generate", "--weights", weights, "--prompt-tokens", "1 2 3",
                             "--max-new-tokens", "24", *extra)]
            c.result(f"{name} generate {what}", tokens[0] == tokens[1] and len(tokens[0]) == 24,
                     f"cpu {' '.join(tokens[0][:8])} ..., cuda {' '.join(tokens[1][:8])} ...")

    if spec.batched:
        # More requests than rows, prompts of 1 to 40 tokens (several prefill chunks).
        lengths = [3, 1, 17, 40, 9]
        with open(os.path.join(c.work, f"{name}-prompts.txt"), "w") as f:
            for n in lengths:
                f.write(" ".join(str(int(t)) for t in rng.integers(0, vocab, n)) + "\n")
        for extra, what in (([], "greedy"),
                            (["--temperature", "0.8", "--top-k", "20", "--seed", str(c.seed)],
                             "sampled")):
            runs = c.both(name, "generate", "--weights", weights, "--prompts",
                          f"{name}-prompts.txt", "--max-new-tokens", "12", *extra)
            outputs = [[json.loads(line)["tokens"] for line in p.stdout.splitlines()]
                       for p in runs]
            # A paged cache's engine says how often it preempted; the pool is sized so that
            # the 40-token prompt and its neighbours outgrow it.
            preempted = [re.search(r"(\d+) preemptions", p.stderr) for p in runs]
            paged = preempted[1] is not None
            c.result(f"{name} generate --prompts {what}",
                     outputs[0] == outputs[1] and len(outputs[0]) == len(lengths) and
                     all(len(t) == 12 for t in outputs[0]) and
                     (not paged or int(preempted[1].group(1)) > 0),
                     f"{len(outputs[1])} requests over 3 rows"
                     + (f", {preempted[1].group(1)} preemptions" if paged else "")
                     + f"; cpu {outputs[0][0][:6]} ..., cuda {outputs[1][0][:6]} ...")

    if decoder and optimizer:
        data = f"{name}-train.bin"
        rng.integers(0, vocab, 4096).astype(np.uint16).tofile(os.path.join(c.work, data))
        logs, ckpts = [], []
        for kind, model in (("cpu", cpu), ("cuda", cuda)):
            c.run(model, "train", "--weights", weights, "--data", data, "--steps", "3",
                  "--save", f"{name}-{kind}.ckpt.safetensors", "--log", f"{name}-{kind}.csv",
                  "--seed", str(c.seed))
            logs.append([float(line.split(",")[1]) for line in
                         open(os.path.join(c.work, f"{name}-{kind}.csv")).read().split()[1:]])
            ckpts.append(read_safetensors(os.path.join(c.work, f"{name}-{kind}.ckpt.safetensors")))
        start = read_safetensors(os.path.join(c.work, weights))
        loss_err = max(abs(a - b) / abs(a) for a, b in zip(*logs))
        diff = norm = moved = worst = 0.0
        worst_key = ""
        for key in start:
            a, b = ckpts[0][key].astype(np.float64), ckpts[1][key].astype(np.float64)
            diff += float(np.sum((a - b) ** 2))
            norm += float(np.sum(a ** 2))
            moved = max(moved, float(np.abs(a - start[key]).max()))
            err = np.linalg.norm(a - b) / (np.linalg.norm(a) or 1.0)
            if err > worst:
                worst, worst_key = err, key
        param_err = (diff / norm) ** 0.5
        c.result(f"{name} train 3 steps ({optimizer})",
                 len(logs[1]) == 3 and loss_err <= spec.train_limit and
                 param_err <= spec.train_limit and moved > 0,
                 f"losses {logs[1]}, relative error {loss_err:.1e}; parameters moved "
                 f"{moved:.1e}, relative error {param_err:.1e} (worst tensor {worst_key} "
                 f"{worst:.1e})")

    if decoder:
        bad = f"{name}-bad.npy"
        tokens = rng.integers(0, vocab, entries["forward"][0][2]).astype(np.int32)
        tokens.flat[3] = vocab + 7
        np.save(os.path.join(c.work, bad), tokens)
        # The last line of the error (the fake cuBLASLt's count comes after it).
        errors = [[line for line in p.stderr.strip().splitlines()
                   if not line.startswith("fake-cublaslt:")][-1] if p.returncode else "(no error)"
                  for p in c.both(name, "call", "forward", "--weights", weights, "--in",
                                  f"{entries['forward'][0][0]}={bad}", "--out-dir", "bad",
                                  check=False)]
        same = errors[0].split(": ")[-1] == errors[1].split(": ")[-1]
        c.result(f"{name} bad token", same and "out of range" in errors[1],
                 f"cuda says: {errors[1]}")

    if c.args.emulate:
        kernels = c.args.products == "kernels"
        c.result(f"{name} products on {'tfc kernels' if kernels else 'cuBLASLt'}",
                 (c.library_products == 0) == kernels,
                 f"{c.library_products} products ran on the fake cuBLASLt")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--emulate", help="the emulated libcuda.so.1 (no GPU)")
    parser.add_argument("--build", help="only build the artifacts into this folder")
    parser.add_argument("--run", help="only run, on the artifacts of --build in this folder")
    parser.add_argument("--work-dir")
    parser.add_argument("--cuda-arch", default="sm_90")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--products", choices=["cublaslt", "kernels"],
                        help="what runs the CUDA artifacts' matrix products "
                             "(TFC_CUDA_PRODUCTS; default: cuBLASLt where it loads)")
    parser.add_argument("--sanitizer", choices=["memcheck", "racecheck", "synccheck",
                                                "initcheck"],
                        help="run the CUDA artifacts under compute-sanitizer with this tool "
                             "(a GPU and compute-sanitizer on PATH)")
    args = parser.parse_args()
    names = args.models.split(",")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    print(f"seed {seed} (reproduce with --seed {seed})")
    if args.build:
        os.makedirs(args.build, exist_ok=True)
        build(args, args.build, names)
        print(f"built {len(names)} models for the CPU and CUDA {args.cuda_arch} in {args.build}")
        return 0
    work = args.run or harness.scratch_dir(args.work_dir, "tfc-cuda-artifacts-")
    if not args.run:
        build(args, work, names)
    c = Checker(args, work)
    c.seed = seed
    rng = np.random.default_rng(seed)
    for name in names:
        try:
            check_model(c, name, rng)
        except Exception as e:  # a broken model is a failure, not a crash of the suite
            c.result(name, False, f"{type(e).__name__}: {e}")
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())

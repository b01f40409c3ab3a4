"""Writes a checkpoint as Hugging Face's save_pretrained does, with the real `safetensors`
package, and compares weights files; for hf-weights.test.

  hf_checkpoint.py write NAMES.safetensors DIR --dtype bf16|f16 [--shards N] [--prefix P]
                         [--buffer NAME]... [--seed S]
      DIR gets the tensors of NAMES.safetensors (names and shapes; the values are random)
      in --dtype, each name prefixed with P: model.safetensors, or with --shards N > 1,
      model-0000i-of-0000N.safetensors and model.safetensors.index.json. Each --buffer adds
      a non-parameter tensor. DIR.f32.safetensors gets the same values widened to float32 by
      NumPy under the model's own names: the reference a strict load takes.
  hf_checkpoint.py same A.safetensors B.safetensors
      Exits 1 unless both files have the same tensors with bit-identical values.
"""
import argparse
import json
import os
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import load_file, save_file

DTYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def write(args):
    names = load_file(args.names)
    rng = np.random.default_rng(args.seed)
    hf, reference = {}, {}
    for name, like in sorted(names.items()):
        values = rng.normal(0.0, 0.5, like.shape).astype(np.float32)
        values[values == 0] = 0.25  # never zeros
        stored = values.astype(DTYPES[args.dtype])
        hf[args.prefix + name] = stored
        reference[name] = stored.astype(np.float32)  # exact widening
    for buffer in args.buffer:
        hf[buffer] = rng.normal(size=(4,)).astype(np.float32)
    os.makedirs(args.dir, exist_ok=True)
    save_file(reference, args.dir.rstrip("/") + ".f32.safetensors", metadata={"format": "pt"})
    if args.shards <= 1:
        save_file(hf, os.path.join(args.dir, "model.safetensors"), metadata={"format": "pt"})
        return
    keys = sorted(hf)
    per_shard = -(-len(keys) // args.shards)
    weight_map = {}
    for i in range(args.shards):
        shard = f"model-{i + 1:05d}-of-{args.shards:05d}.safetensors"
        part = {k: hf[k] for k in keys[i * per_shard:(i + 1) * per_shard]}
        save_file(part, os.path.join(args.dir, shard), metadata={"format": "pt"})
        weight_map.update({k: shard for k in part})
    total = sum(v.nbytes for v in hf.values())
    with open(os.path.join(args.dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def same(args):
    a, b = load_file(args.a), load_file(args.b)
    if sorted(a) != sorted(b):
        print(f"different tensors: {sorted(set(a) ^ set(b))}")
        return 1
    for name in sorted(a):
        if a[name].dtype != b[name].dtype or not np.array_equal(a[name], b[name]):
            print(f"{name}: values differ")
            return 1
    print(f"{len(a)} tensors bit-identical")
    return 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("names")
    w.add_argument("dir")
    w.add_argument("--dtype", choices=sorted(DTYPES), required=True)
    w.add_argument("--shards", type=int, default=1)
    w.add_argument("--prefix", default="")
    w.add_argument("--buffer", action="append", default=[])
    w.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("same")
    s.add_argument("a")
    s.add_argument("b")
    args = parser.parse_args()
    if args.command == "write":
        write(args)
        return 0
    return same(args)


if __name__ == "__main__":
    sys.exit(main())

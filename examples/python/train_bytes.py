"""Trains a small byte-level GPT-2 on a text file with tfc, then samples from it.

    python examples/python/train_bytes.py input.txt [steps] [work_dir]

Needs the tfc package (pip install ./python) and the compiler: tfc-trace and tfc from
$TFC_BUILD_DIR/bin (default build/bin)."""
import os, subprocess, sys
import numpy as np
import tfc

text_file, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000
work = sys.argv[3] if len(sys.argv) > 3 else "bytes-model"
os.makedirs(work, exist_ok=True)
tool = lambda name: os.path.join(os.environ.get("TFC_BUILD_DIR", "build"), "bin", name)
model, data = os.path.join(work, "model.so"), os.path.join(work, "train.npy")
subprocess.run([tool("tfc-trace"), "gpt2", "--set", "vocab_size=256", "--set", "n_ctx=128",
                "--set", "seq=64", "--set", "batch=8", "-o", model + ".mlir"], check=True)
subprocess.run([tool("tfc"), model + ".mlir", "-o", model, "--optimizer=adamw"], check=True)

tokenizer = tfc.Tokenizer.load("bytes")  # token i is byte i
np.save(data, tokenizer.encode(open(text_file, "rb").read()).astype(np.uint8))
params = tfc.Params(tfc.Artifact(model))
params.init(seed=0)
ctx = tfc.Context(params)


def report(p):  # after every step and save; returning False would stop (and save)
    if p["event"] == "step" and (p["step"] % 100 == 0 or p["step"] == steps):
        print(f"step {p['step']}  loss {p['loss']:.3f}", flush=True)


ctx.train(data, steps=steps, lr=1e-3, warmup=steps // 20, schedule="cosine",
          checkpoint=os.path.join(work, "checkpoint.safetensors"), on_progress=report)
print(ctx.generate("The ", tokenizer=tokenizer, max_new_tokens=300, temperature=0.8, top_k=40))

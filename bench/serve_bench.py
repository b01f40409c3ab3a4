#!/usr/bin/env python3
"""Serving benchmark: `tfc-run serve` against llama.cpp's `llama-server`, one load driver.

Both serve the same GPT-2 124M weights (tfc's initializer, seed 1; F32 for both: a tfc f32
artifact and an F32 GGUF) on 2 threads, and the same tokenizer: a synthetic GPT-2 BPE
vocabulary of 50257 printable tokens (every token has text, so both stream one event a
token), written as vocab.json/merges.txt for tfc and into the GGUF for llama.cpp. The
driver sends a fixed request mix (seeded: prompts of 32-512 tokens given as token ids,
outputs of 32-256 tokens with ignore_eos, greedy) to /v1/completions with stream=true from
C concurrent clients (C = 1, 4, 16), and measures per request the time to the first token
and the gaps between tokens, and overall the generated tokens per second.

  tfc:       tfc-trace gpt2 --set preset=gpt2-124m --set gen_batch=16 --set prefill_len=128
             tfc-run model.so serve --threads 2 (16 rows, continuous batching)
  tfc paged: the same with --set kv_block=16 --set kv_blocks=N (--kv-blocks N): a paged
             KV cache of N blocks instead of 16 rows of 1024 positions
  llama.cpp: llama-server -t 2 -tb 2 --parallel 16 --ctx-size 16384 (16 slots of 1024,
             continuous batching), built from the llama.cpp sources that llama-cpp-python
             vendors (bench/setup_peer.sh)

  serve_bench.py --bin-dir build/bin --llama-server PATH --python VENV/bin/python
                 [--work DIR] [--concurrency 1,4,16] [--requests 6,16,32] [--only tfc|llama]
                 [--kv-blocks N] [--bf16] [--prefill-chunks K] [--repeat R]

--bf16: 16-bit weights in both, tfc --precision=bf16 (weights and KV cache bf16, sums f32)
and a BF16 GGUF (matrices BF16, norms and biases F32) for llama.cpp.

Prints a JSON line per (server, concurrency) and a Markdown table, with each server
process's peak resident memory (VmHWM: weights, KV cache, buffers). The machine has 2 cores:
the driver's threads share them with the server (both servers alike).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 50257
EOS = VOCAB - 1


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def synthetic_vocab(seed=0):
    """256 byte tokens, then merges of lowercase-letter tokens up to 8 letters, then
    <|endoftext|>: (tokens by id, merges)."""
    rng = random.Random(seed)
    tokens = bytes_to_unicode()
    known = set(tokens)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pool = list(letters)
    merges = []
    while len(tokens) < VOCAB - 1:
        a, b = rng.choice(pool), rng.choice(pool)
        if len(a) + len(b) > 8 or a + b in known:
            continue
        tokens.append(a + b)
        known.add(a + b)
        pool.append(a + b)
        merges.append(f"{a} {b}")
    tokens.append("<|endoftext|>")
    return tokens, merges


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"serve_bench: {' '.join(map(str, cmd))}\n{p.stderr[-3000:]}")
    return p.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"serve_bench: the server exited ({proc.returncode})")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit("serve_bench: the server did not become healthy")


def one_request(port, prompt, max_tokens):
    """Streams one completion; returns (first-token seconds, token timestamps, tokens)."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "ignore_eos": True})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body=body,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]}")
    stamps = []
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        event = json.loads(data)
        choices = event.get("choices") or []
        if choices and (choices[0].get("text") or choices[0].get("content")):
            stamps.append(time.perf_counter())
    conn.close()
    return start, stamps


def peak_rss_mb(pid):
    """The process's peak resident memory so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def drive(port, mix, concurrency):
    """Runs every request of |mix| from |concurrency| clients; returns the measures."""
    queue = list(enumerate(mix))
    lock = threading.Lock()
    results = [None] * len(mix)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                i, (prompt, n) = queue.pop(0)
            results[i] = one_request(port, prompt, n)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    wall = time.perf_counter() - t0
    ttft, itl, tokens, short = [], [], 0, 0
    for (prompt, n), (start, stamps) in zip(mix, results):
        tokens += len(stamps)
        short += len(stamps) != n
        if stamps:
            ttft.append(stamps[0] - start)
            itl += [b - a for a, b in zip(stamps, stamps[1:])]

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

    return {"requests": len(mix), "tokens": tokens, "short_requests": short,
            "wall_s": wall, "tokens_per_s": tokens / wall,
            "ttft_p50_ms": 1e3 * pct(ttft, 0.5), "ttft_p99_ms": 1e3 * pct(ttft, 0.99),
            "itl_p50_ms": 1e3 * pct(itl, 0.5), "itl_p99_ms": 1e3 * pct(itl, 0.99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--llama-server", help="llama.cpp's llama-server binary")
    ap.add_argument("--python", default=sys.executable, help="a Python with gguf (the peer venv)")
    ap.add_argument("--work", default="/tmp/tfc-serve-bench")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--requests", default="6,16,32")
    ap.add_argument("--only", choices=["tfc", "llama"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefill-len", type=int, default=128, help="tfc's prefill chunk P")
    ap.add_argument("--kv-blocks", type=int, default=0,
                    help="also serve tfc with a paged KV cache of this many blocks of 16")
    ap.add_argument("--bf16", action="store_true",
                    help="16-bit weights: tfc --precision=bf16 (weights and KV cache in bf16), "
                         "llama.cpp a BF16 GGUF")
    ap.add_argument("--prefill-chunks", type=int, default=2,
                    help="tfc-run serve --prefill-chunks (prompt chunks per engine step)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="server processes per peer, interleaved; the table gives medians")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    w = lambda name: os.path.join(a.work, name)  # noqa: E731
    bin_ = lambda name: os.path.join(a.bin_dir, name)  # noqa: E731

    # The model, its weights, the tokenizer (tfc's files and the GGUF's).
    def artifact(precision, kv_blocks=0):
        """gpt2-124m with 16 generation rows, compiled once into the work folder."""
        so = w(f"gpt2-p{a.prefill_len}-kv{kv_blocks}-{precision}.so")
        if not os.path.exists(so):
            paged = (["--set", "kv_block=16", "--set", f"kv_blocks={kv_blocks}"] if kv_blocks
                     else [])
            run([bin_("tfc-trace"), "gpt2", "--set", "preset=gpt2-124m", "--set", "gen_batch=16",
                 "--set", f"prefill_len={a.prefill_len}", "--set", "batch=1", "--set", "seq=64",
                 *paged, "-o", w("gpt2.mlir")])
            run([bin_("tfc"), w("gpt2.mlir"), f"--precision={precision}", "-o", so])
        return so

    precision = "bf16" if a.bf16 else "f32"
    so = artifact(precision)
    paged = artifact(precision, a.kv_blocks) if a.kv_blocks else None
    if not os.path.exists(w("w.safetensors")):  # f32 weights for every peer and precision
        run([bin_("tfc-run"), artifact("f32"), "init", "--seed", "1", "-o", w("w.safetensors")])
    # tfc converts a checkpoint folder's dtypes on load (a .safetensors file must match):
    # the bf16 artifacts read the f32 weights as a Hugging Face folder.
    os.makedirs(w("weights"), exist_ok=True)
    if not os.path.exists(w("weights/model.safetensors")):
        os.symlink(w("w.safetensors"), w("weights/model.safetensors"))
    tokens, merges = synthetic_vocab()
    os.makedirs(w("tok"), exist_ok=True)
    with open(w("tok/vocab.json"), "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    with open(w("tok/merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    gguf_path = w(f"gpt2-{precision}.gguf")
    if a.only != "tfc" and not os.path.exists(gguf_path):
        run([a.python, os.path.join(HERE, "peer_llamacpp.py"), "gguf", "--weights",
             w("w.safetensors"), "--n-head", "12", "--out", gguf_path, "--vocab", w("tok"),
             *(["--bf16"] if a.bf16 else [])])

    rng = random.Random(7)
    levels = [int(c) for c in a.concurrency.split(",")]
    counts = [int(n) for n in a.requests.split(",")]
    mixes = {c: [([rng.randrange(0, VOCAB - 1) for _ in range(rng.randint(32, 512))],
                  rng.randint(32, 256)) for _ in range(n)] for c, n in zip(levels, counts)}

    servers = []
    if a.only != "llama":
        servers.append(("tfc", lambda port: [bin_("tfc-run"), so, "serve", "--weights",
                                             w("weights"), "--tokenizer", w("tok"),
                                             "--port", port, "--threads", a.threads,
                                             "--max-queue", "64", "--prefill-chunks",
                                             a.prefill_chunks]))
        if a.kv_blocks:
            servers.append((f"tfc paged ({a.kv_blocks} blocks)",
                            lambda port: [bin_("tfc-run"), paged, "serve", "--weights",
                                          w("weights"), "--tokenizer", w("tok"),
                                          "--port", port, "--threads", a.threads,
                                          "--max-queue", "64", "--prefill-chunks",
                                          a.prefill_chunks]))
    if a.only != "tfc":
        if not a.llama_server:
            sys.exit("serve_bench: --llama-server PATH (bench/setup_peer.sh builds it)")
        servers.append(("llama.cpp", lambda port: [a.llama_server, "-m", gguf_path,
                                                   "--port", port, "-t", a.threads, "-tb",
                                                   a.threads, "--parallel", "16", "--ctx-size",
                                                   "16384", "-ngl", "0", "--no-webui"]))
    rows = []
    for _, (name, command) in [(r, s) for r in range(a.repeat) for s in servers]:
        port = free_port()
        proc = subprocess.Popen([str(c) for c in command(port)], stdout=subprocess.DEVNULL,
                                stderr=open(w(f"{name.split()[0]}.log"), "w"))
        try:
            wait_healthy(port, proc)
            one_request(port, list(range(1, 33)), 8)  # warm-up
            for c in levels:
                m = drive(port, mixes[c], c)
                m.update(server=name, concurrency=c, peak_rss_mb=peak_rss_mb(proc.pid))
                print(json.dumps(m), flush=True)
                rows.append(m)
        finally:
            proc.terminate()
            proc.wait(30)
    # Medians over the processes of each (server, concurrency).
    print(f"\nmedians of {a.repeat} server process(es) each\n"
          "| server | concurrency | requests | tokens/s | TTFT p50 / p99 (ms) | "
          "inter-token p50 / p99 (ms) | peak RSS (MB) |\n|---|---|---|---|---|---|---|")
    for name, _ in servers:
        for c in levels:
            runs = [m for m in rows if m["server"] == name and m["concurrency"] == c]
            med = {k: statistics.median(m[k] for m in runs)
                   for k in ("tokens_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms",
                             "itl_p99_ms", "peak_rss_mb")}
            print(f"| {name} | {c} | {runs[0]['requests']} | {med['tokens_per_s']:.1f} | "
                  f"{med['ttft_p50_ms']:.0f} / {med['ttft_p99_ms']:.0f} | "
                  f"{med['itl_p50_ms']:.1f} / {med['itl_p99_ms']:.1f} | "
                  f"{med['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()

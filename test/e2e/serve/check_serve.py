#!/usr/bin/env python3
"""End-to-end checks of `tfc-run MODEL.so serve` with the official OpenAI client.

A small gpt2 (8 generation rows, 128 tokens, weights far from init so that greedy tokens
vary) is traced, compiled and served on a free loopback port, with a byte tokenizer whose
ids are the ASCII bytes (so every generated text is ASCII) and an <|endoftext|>. What each
request must return is what `tfc-run generate` gives for its prompt alone:

  api         /health, /v1/models (client.models.list()), /metrics (Prometheus text)
  completions greedy, whole and streamed (client.completions.create), == generate alone;
              a stop string cuts the text before it; seeded sampling == generate's
  chat        plain template ("user: ...\\nassistant:"), whole and streamed, == generate of
              the rendered prompt
  concurrency 24 clients at once over 8 rows, each exactly its own greedy text
  disconnect  a client that closes its stream mid-way: its row is freed (running 0, the
              request counted abandoned, far fewer tokens generated than asked)
  queue       with every row busy and the queue (--max-queue 16) full: 503 with Retry-After
  errors      401 without the API key; 413 past --max-body; bad JSON, unknown fields,
              wrong types, n > 1: 400 naming the field; a fuzz of 80 mutated bodies: never a
              500 or a dropped connection, the server healthy after
  shutdown    SIGTERM during a stream: the stream ends with [DONE], the server exits 0
  paged       the same model with a paged KV cache of 20 blocks of 16 (a sixth of 8 full
              rows): 24 concurrent clients, half sharing a long prefix, each exactly its own
              text; /metrics shows the blocks, prefix reuse and preemptions

The server runs with TFC_SERVE_TEST_STEP_DELAY_MS (a pause after each engine step) so that
the tiny model's requests last long enough to be cut, queued and drained. All traffic is
on 127.0.0.1, bounded in count and time. The last line is `N passed, M failed`.

  check_serve.py --bin-dir build/bin [--work-dir DIR] [--seed S]
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "generate"))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import check_generate  # noqa: E402  (write_tokenizer)
import reference as ref  # noqa: E402  (read_safetensors, write_safetensors)

try:
    import openai
except ImportError:
    print("check_serve: the openai package is missing (scripts/install-deps.sh installs it)")
    print("0 passed, 1 failed")
    sys.exit(1)

ROWS = 8
VOCAB = 128        # the model's ids: ASCII bytes
EOS = 127          # <|endoftext|> (DEL moves to an id the model never produces)
API_KEY = "tfc-test-key"
STEP_DELAY_MS = 3  # a pause after each engine step (test only)
QUEUE = 16         # --max-queue
SETS = dict(n_layer=2, n_head=4, n_embd=64, vocab_size=VOCAB, n_ctx=256, batch=2,
            gen_batch=ROWS, seq=16, prefill_len=16)


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        self.passed += bool(ok)
        self.failed += not ok
        print(f"[{'PASS' if ok else 'FAIL'}] {name}" + (f": {detail}" if detail else ""),
              flush=True)


def run(args, **kw):
    p = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"$ {' '.join(map(str, args))}\n{p.stderr.decode()[-2000:]}")
    return p


class Server:
    """tfc-run serve on a free loopback port."""

    def __init__(self, bin_dir, model, weights, tokenizer, log, extra=()):
        env = dict(os.environ, TFC_SERVE_TEST_STEP_DELAY_MS=str(STEP_DELAY_MS))
        self.log_path = log
        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "tfc-run"), model, "serve", "--weights", weights,
             "--tokenizer", tokenizer, "--port", "0", "--api-key", API_KEY, *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        self.port = None
        while time.time() < deadline and self.proc.poll() is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("the server did not start:\n" + open(log).read()[-2000:])
        self.base = f"http://127.0.0.1:{self.port}"

    def client(self, key=API_KEY):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=key, max_retries=0,
                             timeout=120)

    def request(self, method, path, body=None, headers=None, key=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Content-Type": "application/json"}
        if key:
            h["Authorization"] = f"Bearer {API_KEY}"
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, dict(r.getheaders()), data

    def metrics(self):
        _, _, data = self.request("GET", "/metrics")
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir")
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"check_serve: seed {seed} (reproduce with --seed {seed})")
    rng = np.random.default_rng(seed)
    work = args.work_dir or tempfile.mkdtemp(prefix="tfc-serve-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bin_dir = os.path.abspath(args.bin_dir)
    tool = lambda name: os.path.join(bin_dir, name)  # noqa: E731
    res = Results()

    # The model, weights far from init, and the byte tokenizer.
    mlir, so = os.path.join(work, "gpt2.mlir"), os.path.join(work, "gpt2.so")
    run([tool("tfc-trace"), "gpt2", *[a for k, v in SETS.items() for a in ("--set", f"{k}={v}")],
         "-o", mlir])
    run([tool("tfc"), mlir, "-o", so])
    init = os.path.join(work, "init.safetensors")
    run([tool("tfc-run"), so, "init", "--seed", seed, "-o", init])
    w, _ = ref.read_safetensors(init)
    perturbed = {}
    for name, a in w.items():
        if a.ndim == 1:
            b = (1.0 if "ln" in name and name.endswith("weight") else 0.0) + rng.normal(0, 0.2, a.shape)
        else:
            b = rng.normal(0, 2.0 / np.sqrt(a.shape[0]), a.shape)
        perturbed[name] = np.asarray(b, dtype=a.dtype)
    weights = os.path.join(work, "w.safetensors")
    ref.write_safetensors(weights, perturbed)
    ids = list(range(256))
    ids[EOS] = 256
    tok = check_generate.write_tokenizer(os.path.join(work, "tok"), ids, eos_id=EOS)

    def alone(prompt, n, extra=()):
        """What `tfc-run generate` gives for |prompt| alone: its text (the streamed bytes)."""
        p = run([tool("tfc-run"), so, "generate", "--weights", weights, "--tokenizer", tok,
                 "--prompt", prompt, "--max-new-tokens", n, "--quiet", *extra])
        body = p.stdout.rstrip(b"\n")
        ids_line = body[body.rfind(b"\n") + 1:]
        text = body[:body.rfind(b"\n")] if b"\n" in body else b""
        return text.decode(), [int(t) for t in ids_line.split()]

    server = Server(bin_dir, so, weights, tok, os.path.join(work, "serve.log"),
                    ["--max-queue", str(QUEUE), "--max-body", "65536", "--drain-timeout", "20"])
    client = server.client()

    def step(name, fn):
        try:
            fn()
        except Exception:
            res.check(name, False, "\n" + traceback.format_exc()[-3000:])

    def api():
        status, _, body = server.request("GET", "/health", key=False)
        res.check("/health", status == 200 and json.loads(body) == {"status": "ok"}, body)
        models = client.models.list()
        res.check("/v1/models lists the model", [m.id for m in models.data] == ["gpt2"],
                  str(models.data))
        m = server.metrics()
        res.check("/metrics: Prometheus text with the rows", m.get("tfc_rows") == ROWS and
                  "tfc_time_to_first_token_seconds_count" in m, f"{len(m)} samples")
    step("api", api)

    prompts = ["Hello, world", "a", "The quick brown fox jumps over the lazy dog. " * 3,
               "0123456789"]

    def completions():
        for i, prompt in enumerate(prompts[:3]):
            want, _ = alone(prompt, 24)
            got = client.completions.create(model="gpt2", prompt=prompt, max_tokens=24,
                                            temperature=0)
            res.check(f"completion {i + 1} (prompt {len(prompt)} bytes) == generate alone",
                      got.choices[0].text == want, f"{got.choices[0].text!r} vs {want!r}")
            parts, finish = [], None
            for chunk in client.completions.create(model="gpt2", prompt=prompt, max_tokens=24,
                                                   temperature=0, stream=True):
                parts.append(chunk.choices[0].text)
                finish = chunk.choices[0].finish_reason or finish
            # An event a token (each byte here), then the one with the finish reason.
            res.check(f"  ... streamed: the same text, an event a token, finish_reason {finish}",
                      "".join(parts) == want and finish in ("length", "stop") and
                      len(parts) == len(want) + 1, f"{len(parts)} events")
        # A stop string: the text ends before it.
        want, _ = alone(prompts[3], 40)
        stop = want[6:8] if len(want) >= 8 else None
        if stop:
            got = client.completions.create(model="gpt2", prompt=prompts[3], max_tokens=40,
                                            temperature=0, stop=[stop])
            res.check(f"stop {stop!r}: the text ends before its first occurrence",
                      got.choices[0].text == want[:want.index(stop)] and
                      got.choices[0].finish_reason == "stop",
                      f"{got.choices[0].text!r} of {want!r}")
        # Seeded sampling: the same draws as alone.
        want, _ = alone(prompts[0], 24, ["--temperature", "0.8", "--top-k", "20", "--seed", "5"])
        got = client.completions.create(model="gpt2", prompt=prompts[0], max_tokens=24,
                                        temperature=0.8, seed=5, extra_body={"top_k": 20})
        res.check("sampled (temperature 0.8, top_k 20, seed 5) == generate alone",
                  got.choices[0].text == want, f"{got.choices[0].text!r} vs {want!r}")
        res.check("usage counts the tokens", got.usage.prompt_tokens == len(prompts[0]) and
                  got.usage.completion_tokens >= len(want), str(got.usage))
    step("completions", completions)

    def chat():
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi there"}]
        rendered = "system: Be brief.\nuser: Hi there\nassistant:"
        want, _ = alone(rendered, 20)
        got = client.chat.completions.create(model="gpt2", messages=messages, max_tokens=20,
                                             temperature=0)
        res.check("chat (plain template) == generate of the rendered prompt",
                  got.choices[0].message.content == want and
                  got.choices[0].message.role == "assistant",
                  f"{got.choices[0].message.content!r} vs {want!r}")
        parts, roles = [], []
        for chunk in client.chat.completions.create(model="gpt2", messages=messages,
                                                    max_tokens=20, temperature=0, stream=True):
            if chunk.choices:
                parts.append(chunk.choices[0].delta.content or "")
                roles.append(chunk.choices[0].delta.role)
        res.check("  ... streamed: the role first, then the same text",
                  roles[0] == "assistant" and "".join(parts) == want, f"{len(parts)} events")
    step("chat", chat)

    def concurrency():
        texts = ["".join(chr(int(c)) for c in rng.integers(32, 127, int(n)))
                 for n in rng.integers(1, 60, 24)]
        path = os.path.join(work, "prompts.txt")
        # The reference: each prompt's greedy text alone (generate --prompts gives each
        # request the tokens it gets alone: test/e2e/generate.test).
        with open(path, "w") as f:
            f.write("".join(t + "\n" for t in texts))
        p = run([tool("tfc-run"), so, "generate", "--weights", weights, "--tokenizer", tok,
                 "--prompts", path, "--max-new-tokens", 20, "--quiet"])
        want = [json.loads(line)["text"] for line in p.stdout.decode().splitlines()]
        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(24) as pool:
            got = list(pool.map(lambda t: server.client().completions.create(
                model="gpt2", prompt=t, max_tokens=20, temperature=0).choices[0].text, texts))
        bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
        res.check(f"24 concurrent clients over {ROWS} rows: each exactly its own text",
                  not bad and len(got) == 24,
                  f"{time.time() - start:.1f} s; differ: {[(got[i], want[i]) for i in bad[:3]]}")
    step("concurrency", concurrency)

    def stream_send(body):
        """Sends a request; its response (whose headers come with its first token) is
        read by the caller."""
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        # Headers and body go in two writes: without TCP_NODELAY the second waits for a
        # delayed ACK (40 ms a request), longer than a tiny model's whole request.
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.request("POST", "/v1/completions", body=json.dumps(body),
                     headers={"Authorization": f"Bearer {API_KEY}",
                              "Content-Type": "application/json"})
        return conn

    def stream_open(body):
        conn = stream_send(body)
        return conn, conn.getresponse()

    def wait_idle(seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            m = server.metrics()
            if m["tfc_requests_running"] == 0 and m["tfc_requests_queued"] == 0:
                return m
            time.sleep(0.05)
        return server.metrics()

    def disconnect():
        before = wait_idle()
        conn, r = stream_open({"prompt": "abc", "max_tokens": 200, "temperature": 0,
                               "stream": True, "ignore_eos": True})
        first = r.readline()
        conn.sock.close()
        conn.close()
        after = wait_idle()
        made = after["tfc_generation_tokens_total"] - before["tfc_generation_tokens_total"]
        res.check("a client that closes its stream frees its row (counted abandoned)",
                  first.startswith(b"data: ") and after["tfc_requests_running"] == 0 and
                  after["tfc_requests_abandoned_total"] == before["tfc_requests_abandoned_total"] + 1
                  and made < 150, f"{made:.0f} of 200 tokens generated; first line {first[:40]!r}; "
                  f"running {after['tfc_requests_running']:.0f}, abandoned "
                  f"{after['tfc_requests_abandoned_total'] - before['tfc_requests_abandoned_total']:.0f}")
    step("disconnect", disconnect)

    def queue_full():
        wait_idle()
        held = [stream_send({"prompt": f"q{i}", "max_tokens": 240, "temperature": 0,
                             "stream": True, "ignore_eos": True}) for i in range(ROWS + QUEUE)]
        deadline = time.time() + 20
        while time.time() < deadline and server.metrics()["tfc_requests_queued"] < QUEUE:
            time.sleep(0.02)
        m = server.metrics()
        status, headers, body = server.request(
            "POST", "/v1/completions", json.dumps({"prompt": "x", "max_tokens": 2}))
        res.check(f"{ROWS} rows busy and {QUEUE} queued: the next request gets 503 with "
                  "Retry-After", status == 503 and headers.get("Retry-After") == "1" and
                  "queue is full" in json.loads(body)["error"]["message"],
                  f"{status} {body[:200]}; running {m['tfc_requests_running']:.0f}, queued "
                  f"{m['tfc_requests_queued']:.0f}, rejected {m['tfc_requests_rejected_total']:.0f}")
        for conn in held:
            conn.sock.close()
            conn.close()
        m = wait_idle()
        res.check("  ... the held streams closed: every row freed",
                  m["tfc_requests_running"] == 0 and m["tfc_requests_queued"] == 0, "")
    step("queue", queue_full)

    def errors():
        status, _, body = server.request("POST", "/v1/completions",
                                         json.dumps({"prompt": "x"}), key=False)
        res.check("no API key: 401", status == 401 and b"API key" in body, f"{status}")
        status, _, body = server.request("POST", "/v1/completions",
                                         json.dumps({"prompt": "x" * 70000}))
        res.check("a body over --max-body: 413", status == 413, f"{status} {body[:120]}")
        cases = [("{", None), ('{"prompt": "x", "colour": 1}', "colour"),
                 ('{"prompt": "x", "max_tokens": "3"}', "max_tokens"),
                 ('{"prompt": "x", "temperature": 5}', "temperature"),
                 ('{"prompt": "x", "n": 2}', "n"),
                 ('{"prompt": ["a", "b"]}', "prompt"),
                 ('{"prompt": "x", "max_tokens": 100000}', "max_tokens"),
                 ('{"prompt": [1, 2, 300]}', "prompt"),
                 ('{"messages": []}', "messages")]
        for body, param in cases:
            path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
            status, _, out = server.request("POST", path, body)
            err = json.loads(out).get("error", {})
            res.check(f"400 for {body[:40]}", status == 400 and err.get("param") == param and
                      err.get("message"), f"{status} {out[:200]}")
        # A small fuzz: byte flips, cuts and splices of a valid body.
        base = json.dumps({"model": "gpt2", "prompt": "fuzz", "max_tokens": 3, "temperature": 0,
                           "stop": ["\n"], "seed": 1, "stream": False}).encode()
        statuses = {}
        fuzz = random.Random(seed)
        for _ in range(80):
            b = bytearray(base)
            for _ in range(fuzz.randint(1, 4)):
                kind, at = fuzz.randrange(3), fuzz.randrange(len(b))
                if kind == 0:
                    b[at] = fuzz.randrange(256)
                elif kind == 1:
                    del b[at:at + fuzz.randint(1, 8)]
                else:
                    b[at:at] = fuzz.choice([b"{", b"]", b'"', b"1e999", b"null", b"-", b"\xff"])
            path = "/v1/chat/completions" if fuzz.random() < 0.3 else "/v1/completions"
            status, _, out = server.request("POST", path, bytes(b))
            statuses[status] = statuses.get(status, 0) + 1
            if status != 200:
                json.loads(out)["error"]["message"]
        status, _, _ = server.request("GET", "/health", key=False)
        res.check("80 mutated bodies: only 200 and 400, JSON errors, the server healthy",
                  set(statuses) <= {200, 400} and status == 200, str(statuses))
    step("errors", errors)

    def shutdown():
        wait_idle()
        conn, r = stream_open({"prompt": "bye", "max_tokens": 150, "temperature": 0,
                               "stream": True, "ignore_eos": True})
        first = r.readline()
        server.proc.send_signal(signal.SIGTERM)
        rest = r.read()
        conn.close()
        code = server.stop(timeout=30)
        res.check("SIGTERM during a stream: the stream ends with [DONE], the server exits 0",
                  first.startswith(b"data: ") and rest.rstrip().endswith(b"data: [DONE]") and
                  code == 0, f"exit {code}; log: {open(server.log_path).read()[-300:]!r}")
    step("shutdown", shutdown)
    if server.proc.poll() is None:
        server.stop(signal.SIGKILL)

    def paged():
        sets = dict(SETS, kv_block=16, kv_blocks=20)
        mlir, paged_so = os.path.join(work, "paged.mlir"), os.path.join(work, "paged.so")
        run([tool("tfc-trace"), "gpt2",
             *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")], "-o", mlir])
        run([tool("tfc"), mlir, "-o", paged_so])
        head = "".join(chr(int(c)) for c in rng.integers(32, 127, 40))
        texts = [(head if i % 2 else "") + "".join(chr(int(c)) for c in rng.integers(32, 127, n))
                 for i, n in enumerate(rng.integers(1, 50, 24))]
        path = os.path.join(work, "paged-prompts.txt")
        with open(path, "w") as f:
            f.write("".join(t + "\n" for t in texts))
        # The reference: the unpaged model's texts.
        p = run([tool("tfc-run"), so, "generate", "--weights", weights, "--tokenizer", tok,
                 "--prompts", path, "--max-new-tokens", 40, "--quiet"])
        want = [json.loads(line)["text"] for line in p.stdout.decode().splitlines()]
        pserver = Server(bin_dir, paged_so, weights, tok, os.path.join(work, "serve-paged.log"))
        try:
            with concurrent.futures.ThreadPoolExecutor(24) as pool:
                got = list(pool.map(lambda t: pserver.client().completions.create(
                    model="gpt2", prompt=t, max_tokens=40, temperature=0).choices[0].text,
                    texts))
            bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
            res.check("paged KV cache (20 blocks of 16): 24 concurrent clients, each exactly "
                      "its own text (== the unpaged model's)", not bad and len(got) == 24,
                      f"differ: {[(got[i], want[i]) for i in bad[:3]]}")
            m = pserver.metrics()
            res.check("  ... /metrics: 20 blocks, none held when idle, the shared prefix's "
                      "blocks reused, preemptions counted",
                      m.get("tfc_kv_blocks") == 20 and m.get("tfc_kv_blocks_used") == 0 and
                      m.get("tfc_prefix_reused_tokens_total", 0) >= 32 and
                      "tfc_preemptions_total" in m,
                      str({k: v for k, v in m.items() if "kv" in k or "pre" in k}))
        finally:
            pserver.stop()
    step("paged", paged)
    print(res.__dict__ and f"{res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Context.generate and Context.train (the runtime's Generator and Trainer), checked against
`tfc-run generate` / `tfc-run train` on the same weights and data, and greedy generation
against a loop over the forward entry written here."""
import numpy as np
import pytest

import tfc
from conftest import CONFIG, read_safetensors, run, write_safetensors

B, T, V = CONFIG["batch"], CONFIG["seq"], CONFIG["vocab_size"]


@pytest.fixture
def ctx(model_path):
    params = tfc.Params(tfc.Artifact(str(model_path)))
    params.init(11)
    return tfc.Context(params)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A byte-level token file (1-D .npy): text the model can learn a little of."""
    path = tmp_path_factory.mktemp("data") / "train.npy"
    text = "the quick brown fox jumps over the lazy dog. " * 40
    np.save(path, np.frombuffer(text.encode(), np.uint8))
    return path


def test_greedy_ids_match_a_forward_loop(ctx):
    prompt = [5, 17, 200]
    got = ctx.generate(prompt, max_new_tokens=T - len(prompt))
    assert got.dtype == np.int32 and len(got) == T - len(prompt)
    sequence = list(prompt)
    while len(sequence) < T:  # argmax of forward's logits at the last position
        tokens = np.zeros((B, T), np.int32)
        tokens[:, :len(sequence)] = sequence
        logits = ctx.call("forward", tokens=tokens)["logits"]
        sequence.append(int(logits[0, len(sequence) - 1].argmax()))
    assert got.tolist() == sequence[len(prompt):]


def test_sampled_ids_match_tfc_run_generate(ctx, model_path, tools, tmp_path):
    weights = tmp_path / "w.safetensors"
    ctx.params.save(str(weights))
    settings = dict(max_new_tokens=12, temperature=0.9, top_k=40, top_p=0.95, seed=7)
    got, stats = ctx.generate([1, 2, 3], return_stats=True, **settings)
    out = run([tools["tfc-run"], model_path, "generate", "--weights", weights,
               "--prompt-tokens", "1 2 3", "--quiet",
               *[a for k, v in settings.items() for a in (f"--{k.replace('_', '-')}", v)]])
    assert got.tolist() == [int(i) for i in out.split("\n")[-2].split()]
    assert stats["prompt_tokens"] == 3 and stats["generated_tokens"] == 12
    assert stats["stop_reason"] == "max_new_tokens"


def test_generate_batch_matches_generate_alone(ctx):
    # More prompts than the model's generation rows (gen_batch=2), of 1 to 20 tokens.
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, V, n).tolist() for n in (3, 1, 20, 9, 5)]
    for settings in (dict(max_new_tokens=8), dict(max_new_tokens=8, temperature=0.9, top_k=40,
                                                 seed=5)):
        got, stats = ctx.generate_batch(prompts, return_stats=True, **settings)
        want = [ctx.generate(p, **settings).tolist() for p in prompts]
        assert [g.tolist() for g in got] == want
        assert sorted({s["row"] for s in stats}) == [0, 1]
        assert [s["prompt_tokens"] for s in stats] == [len(p) for p in prompts]
    streamed = []
    texts = ctx.generate_batch(["ab", "the "], tokenizer=tfc.Tokenizer.load("bytes"),
                               max_new_tokens=4,
                               on_token=lambda i, tok, piece: streamed.append((i, tok, piece)))
    assert all(isinstance(t, str) for t in texts)
    assert sorted(i for i, _, _ in streamed) == [0] * 4 + [1] * 4
    assert b"".join(p for i, _, p in streamed if i == 1).decode(errors="replace") == texts[1]
    with pytest.raises(ValueError, match="prompt 1: prompt token 999"):
        ctx.generate_batch([[1, 2], [999]])


def test_paged_kv_cache_generates_as_the_contiguous_one(ctx, tools, tmp_path):
    # The same model with a paged KV cache of 8 blocks of 4 (one row's 32 positions):
    # generate and generate_batch give the contiguous model's tokens (requests preempted).
    mlir, so = tmp_path / "paged.mlir", tmp_path / "paged.so"
    sets = [a for k, v in dict(CONFIG, kv_block=4, kv_blocks=8).items()
            for a in ("--set", f"{k}={v}")]
    run([tools["tfc-trace"], "gpt2", *sets, "-o", mlir])
    run([tools["tfc"], mlir, "-o", so])
    ctx.params.save(str(tmp_path / "w.safetensors"))
    paged = tfc.Params(tfc.Artifact(str(so)))
    paged.load(str(tmp_path / "w.safetensors"))
    pctx = tfc.Context(paged)
    rng = np.random.default_rng(4)
    prompts = [rng.integers(0, V, n).tolist() for n in (3, 1, 20, 9, 5, 17)]
    want = [ctx.generate(p, max_new_tokens=10).tolist() for p in prompts]
    assert [pctx.generate(p, max_new_tokens=10).tolist() for p in prompts] == want
    assert [g.tolist() for g in pctx.generate_batch(prompts, max_new_tokens=10)] == want


def test_text_prompt_streams_and_stops(ctx):
    tok = tfc.Tokenizer.load("bytes")
    pieces = []
    text = ctx.generate("the ", tokenizer=tok, max_new_tokens=6, temperature=1.0, seed=1,
                        on_token=lambda i, piece: pieces.append((i, piece)))
    assert isinstance(text, str) and len(pieces) == 6
    assert "".join(p for _, p in pieces) == text
    ids = [i for i, _ in pieces]
    assert text == tok.decode(ids)
    # False from the callback stops; the stopping token is kept.
    seen = []
    result, stats = ctx.generate("the ", tokenizer=tok, max_new_tokens=6, return_stats=True,
                                 on_token=lambda i, piece: seen.append(i) or len(seen) < 2)
    assert len(seen) == 2 and stats["stop_reason"] == "callback" and len(result) <= 2
    # A stop token ends generation too.
    first = int(ctx.generate([1, 2, 3], max_new_tokens=1)[0])
    _, stats = ctx.generate([1, 2, 3], max_new_tokens=6, stop_tokens=[first], return_stats=True)
    assert stats["generated_tokens"] == 1 and stats["stop_reason"] == "stop_token"


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(prompt="hi"), ValueError, "a text prompt needs a tokenizer"),
    (dict(prompt=[]), ValueError, "empty"),
    (dict(prompt=[V]), ValueError, str(V)),
    (dict(prompt=[[1, 2]]), ValueError, "one-dimensional"),
    (dict(prompt=[1], max_new_tokens=0), ValueError, "max"),
])
def test_generate_errors(ctx, kwargs, error, message):
    with pytest.raises(error, match=message):
        ctx.generate(**kwargs)


def test_callback_errors_propagate_and_cannot_reenter(ctx):
    def boom(i, piece):
        raise ZeroDivisionError("from the callback")
    with pytest.raises(ZeroDivisionError, match="from the callback"):
        ctx.generate([1], on_token=boom)
    with pytest.raises(RuntimeError, match="in use by this thread"):
        ctx.generate([1], on_token=lambda i, p: ctx.call("forward", np.zeros((B, T), np.int32)))
    assert len(ctx.generate([1], max_new_tokens=2)) == 2  # still usable


HYPER = dict(lr=3e-3, warmup=2, schedule="cosine", min_lr=1e-4, weight_decay=0.05)


def test_train_matches_tfc_run_train(ctx, model_path, tools, data, tmp_path):
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    log = tmp_path / "ours.csv"
    progress = []
    result = ctx.train(str(data), steps=6, seed=3, checkpoint=str(ours), log=str(log),
                       on_progress=progress.append, **HYPER)
    run([tools["tfc-run"], model_path, "train", "--init-seed", 11, "--data", data, "--steps", 6,
         "--seed", 3, "--save", theirs, "--log", tmp_path / "theirs.csv", "--lr", 3e-3,
         "--warmup", 2, "--schedule", "cosine", "--min-lr", 1e-4, "--weight-decay", 0.05])
    assert (result["first_step"], result["last_step"], result["stopped"]) == (1, 6, False)
    assert result["checkpoint"] == str(ours)
    assert [p["step"] for p in progress if p["event"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert [p["step"] for p in progress if p["event"] == "saved"] == [6]
    assert [h["step"] for h in result["history"]] == [1, 2, 3, 4, 5, 6]
    their_log = np.genfromtxt(tmp_path / "theirs.csv", delimiter=",", names=True)
    np.testing.assert_allclose([h["loss"] for h in result["history"]], their_log["loss"],
                               rtol=1e-5)
    np.testing.assert_allclose([h["lr"] for h in result["history"]], their_log["lr"], rtol=1e-6)
    expected = read_safetensors(theirs)
    got = read_safetensors(ours)
    assert set(got) == set(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    for name in ctx.params:  # the context's parameters are the trained ones
        np.testing.assert_array_equal(ctx.params[name], got[name])


def test_stop_from_the_callback_saves_and_resume_continues(model_path, data, tmp_path):
    def fresh():
        params = tfc.Params(tfc.Artifact(str(model_path)))
        params.init(11)
        return tfc.Context(params)

    whole = fresh()
    whole.train(str(data), steps=6, **HYPER)
    ckpt = tmp_path / "part.safetensors"
    part = fresh()
    result = part.train(str(data), steps=6, checkpoint=str(ckpt), **HYPER,
                        on_progress=lambda p: p["step"] < 3)
    assert result["stopped"] and result["last_step"] == 3
    resumed = fresh()
    result = resumed.train(str(data), steps=6, resume=str(ckpt), **HYPER)
    assert (result["first_step"], result["last_step"]) == (4, 6)
    for name in whole.params:  # bit-identical to the uninterrupted run
        np.testing.assert_array_equal(resumed.params[name], whole.params[name], err_msg=name)


def test_load_weights_takes_a_checkpoints_parameters(model_path, ctx, data, tmp_path):
    ckpt = tmp_path / "trained.safetensors"
    ctx.train(str(data), steps=2, checkpoint=str(ckpt), **HYPER)
    params = tfc.Params(tfc.Artifact(str(model_path)))
    params.init(12)
    notes = params.load_weights(ckpt)
    assert len(notes) == 1 and "is a training checkpoint: taking its" in notes[0], notes
    for name in ctx.params:
        np.testing.assert_array_equal(params[name], ctx.params[name], err_msg=name)
    params.save(tmp_path / "plain.safetensors")
    assert tfc.Params(params.artifact).load_weights(tmp_path / "plain.safetensors") == []
    extra = dict(read_safetensors(tmp_path / "plain.safetensors"), extra=np.ones(3, np.float32))
    write_safetensors(tmp_path / "extra.safetensors", extra)
    with pytest.raises(ValueError, match="unexpected tensor 'extra'"):
        tfc.Params(params.artifact).load_weights(tmp_path / "extra.safetensors")
    assert "ignoring 1 tensors" in tfc.Params(params.artifact).load_weights(
        tmp_path / "extra.safetensors", allow_unexpected=True)[0]


def test_keyboard_interrupt_saves_then_raises(ctx, data, tmp_path):
    ckpt = tmp_path / "interrupted.safetensors"

    def interrupt(progress):
        if progress["step"] == 2 and progress["event"] == "step":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        ctx.train(str(data), steps=10, checkpoint=str(ckpt), on_progress=interrupt)
    saved = read_safetensors(ckpt)
    assert int(saved["state.train.step"]) == 2


def test_train_errors(ctx, data, tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        ctx.train(str(tmp_path / "none.npy"), steps=1)
    assert error.value.filename == str(tmp_path / "none.npy")
    with pytest.raises(ValueError, match="schedule 'cosin'"):
        ctx.train(str(data), steps=1, schedule="cosin")
    with pytest.raises(ValueError, match="at least 1"):
        ctx.train(str(data), steps=0)

    def boom(progress):
        raise ZeroDivisionError("in on_progress")
    with pytest.raises(ZeroDivisionError, match="in on_progress"):
        ctx.train(str(data), steps=3, on_progress=boom)
    with pytest.raises(FileNotFoundError):
        ctx.train(str(data), steps=3, resume=str(tmp_path / "missing.safetensors"))


def test_train_releases_the_gil(ctx, data):
    # While one long call trains in a thread, this thread keeps running Python code. With
    # the GIL held through the call, this loop would stall for the call's whole duration.
    import threading
    import time
    thread = threading.Thread(target=ctx.train, args=(str(data),), kwargs=dict(steps=100))
    start = last = time.perf_counter()
    thread.start()
    longest_stall = 0.0
    while thread.is_alive():
        now = time.perf_counter()
        longest_stall = max(longest_stall, now - last)
        last = now
    thread.join()
    duration = time.perf_counter() - start
    assert longest_stall < duration / 2, (longest_stall, duration)

"""Context.call: entry points called with NumPy arrays, checked against `tfc-run call` on
the same inputs (its .npy outputs), against NumPy references, and against each other
(prefill + decode through the KV cache == forward)."""
import json
import threading

import numpy as np
import pytest

import tfc
from conftest import CONFIG, read_safetensors, run

B, T, V = CONFIG["batch"], CONFIG["seq"], CONFIG["vocab_size"]
SEED = 5
# train_step's hyper-parameters (0-d inputs), as tfc-run takes them inline.
HYPER = dict(lr=1e-2, min_lr=1e-3, warmup=0.0, total_steps=10.0, schedule=0.0,
             weight_decay=0.1, grad_clip=1.0, beta1=0.9, beta2=0.95, eps=1e-8)


@pytest.fixture
def ctx(model_path):
    params = tfc.Params(tfc.Artifact(str(model_path)))
    params.init(SEED)
    return tfc.Context(params)


@pytest.fixture
def tokens():
    return np.random.default_rng(0).integers(0, V, size=(B, T), dtype=np.int32)


def tfc_run_call(tools, model_path, tmp_path, entry, inputs, extra=()):
    """Outputs of `tfc-run call` on the same inputs (arrays as .npy, scalars inline)."""
    args = [tools["tfc-run"], model_path, "call", entry, "--init-seed", SEED,
            "--out-dir", tmp_path, *extra]
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            np.save(tmp_path / f"in_{name}.npy", value)
            value = tmp_path / f"in_{name}.npy"
        args += ["--in", f"{name}={value}"]
    run(args)
    return lambda name: np.load(tmp_path / f"{name}.npy")


def log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_forward_matches_tfc_run(ctx, tokens, tools, model_path, tmp_path):
    out = ctx.call("forward", tokens=tokens)
    assert list(out) == ["logits"]
    expected = tfc_run_call(tools, model_path, tmp_path, "forward", {"tokens": tokens})("logits")
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-5, atol=1e-6)


def test_loss_is_the_cross_entropy_of_forward(ctx, tokens):
    targets = np.roll(tokens, -1, axis=1)
    logits = ctx.call("forward", tokens)["logits"]
    expected = -np.take_along_axis(log_softmax(logits), targets[..., None], axis=-1).mean()
    loss = ctx.call("loss", tokens, targets=targets)["loss"]
    assert loss.shape == () and loss.dtype == np.float32
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_outputs_are_new_arrays_owning_their_memory(ctx, tokens):
    first = ctx.call("forward", tokens=tokens)["logits"]
    second = ctx.call("forward", tokens=tokens)["logits"]
    for out in (first, second):
        assert out.flags.owndata and out.base is None and out.flags.c_contiguous
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, second)


def test_inputs_by_position_name_and_python_values(ctx, tokens):
    targets = np.roll(tokens, 1, axis=1)
    by_name = ctx.call("loss", tokens=tokens, targets=targets)["loss"]
    assert ctx.call("loss", tokens, targets)["loss"] == by_name
    assert ctx.call("loss", targets=targets, tokens=tokens)["loss"] == by_name
    assert ctx.call("loss", tokens.tolist(), targets.tolist())["loss"] == by_name
    # One array as two inputs: the ABI forbids aliasing, so the binding copies it.
    same = ctx.call("loss", tokens=tokens, targets=tokens.copy())["loss"]
    assert ctx.call("loss", tokens=tokens, targets=tokens)["loss"] == same


def test_contiguous_inputs_are_not_copied(ctx, tokens):
    # An int32 view of a parameter's own buffer: passed as it is, the runtime sees the
    # input alias the parameter (and refuses); that proves no copy was made.
    flat = ctx.params["wte.weight"].reshape(-1)
    as_ints = flat.view(np.int32)
    as_ints[:2 * B * T] = np.arange(2 * B * T) % V  # valid token ids in the buffer
    aliased = as_ints[:B * T].reshape(B, T)
    with pytest.raises(ValueError, match="overlap in memory") as error:
        ctx.call("forward", tokens=aliased)
    assert "input 'tokens'" in str(error.value) and "parameter 'wte.weight'" in str(error.value)
    # A strided view of the same buffer is copied into a contiguous array: no alias.
    strided = as_ints[:2 * B * T:2].reshape(B, T)
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(ctx.call("forward", tokens=strided)["logits"],
                                  ctx.call("forward", tokens=np.array(strided))["logits"])


def test_prefill_and_decode_through_the_kv_cache_match_forward(ctx, tokens, tmp_path):
    # forward's rows and length are those of prefill and decode here.
    assert (CONFIG["gen_batch"], CONFIG["prefill_len"]) == (B, T)
    full = ctx.call("forward", tokens=tokens)["logits"]
    n = 5
    chunk = tokens.copy()
    chunk[:, n:] = 0  # past n: padding that must not matter
    got = ctx.call("prefill", tokens=chunk, pos=0, n=n)["logits"]
    np.testing.assert_allclose(got, full[:, n - 1], rtol=1e-4, atol=1e-5)
    assert np.abs(ctx.state("kv.0.k")).sum() > 0

    cache = tmp_path / "cache.safetensors"
    ctx.save_state(str(cache))
    saved = read_safetensors(cache)
    np.testing.assert_array_equal(saved["kv.0.v"], ctx.state("kv.0.v"))
    for pos in (n, n + 1):
        got = ctx.call("decode", token=tokens[:, pos:pos + 1], pos=pos)["logits"]
        np.testing.assert_allclose(got, full[:, pos], rtol=1e-4, atol=1e-5)

    ctx.reset_state()
    assert not ctx.state("kv.0.k").any()
    ctx.load_state(str(cache))
    got = ctx.call("decode", token=tokens[:, n:n + 1], pos=np.int32(n))["logits"]
    np.testing.assert_allclose(got, full[:, n], rtol=1e-4, atol=1e-5)


def test_sample_greedy_is_argmax(ctx):
    logits = np.random.default_rng(1).standard_normal((B, V)).astype(np.float32)
    ids = ctx.call("sample", logits=logits, temperature=0.0, top_k=0, top_p=1.0, seed=0)["ids"]
    np.testing.assert_array_equal(ids, logits.argmax(axis=-1))


def test_train_step_matches_tfc_run_and_updates_views(ctx, tokens, tools, model_path,
                                                      tmp_path):
    targets = np.roll(tokens, -1, axis=1)
    view = ctx.params["h.0.mlp.c_fc.weight"]
    before = view.copy()
    out = ctx.call("train_step", tokens=tokens, targets=targets, **HYPER)
    assert set(out) == {"loss", "lr", "grad_norm"}
    assert not np.array_equal(view, before)  # the view sees the in-place update

    weights = tmp_path / "after.safetensors"
    ref = tfc_run_call(tools, model_path, tmp_path, "train_step",
                       {"tokens": tokens, "targets": targets, **HYPER},
                       extra=["--weights-out", weights])
    np.testing.assert_allclose(out["loss"], ref("loss"), rtol=1e-5)
    np.testing.assert_allclose(out["grad_norm"], ref("grad_norm"), rtol=1e-4)
    expected = read_safetensors(weights)
    for name in ctx.params:
        np.testing.assert_allclose(ctx.params[name], expected[name], rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def test_concurrent_calls_from_threads(ctx, tokens):
    # Calls release the GIL; the binding's locks keep one call per context at a time.
    expected = ctx.call("forward", tokens=tokens)["logits"]
    other = tfc.Context(ctx.params, num_threads=1)  # shares the parameters
    results, errors = [], []

    def work(context):
        try:
            for _ in range(20):
                results.append(context.call("forward", tokens=tokens)["logits"])
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in (ctx, ctx, other, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80
    for got in results:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_kernel_profile_matches_tfc_run_profile(ctx, model_path, tools, tokens, tmp_path):
    """Context.kernel_profile on calls made here against `tfc-run profile --json` on the
    same model and machine figures: the same kernels, launches, cost-model figures and
    floors (times differ: each times its own calls)."""
    with pytest.raises(RuntimeError, match="profiling"):
        ctx.kernel_profile("forward", peak_gflops=100, bandwidth_gbs=20)
    ctx.set_profiling(True)
    for _ in range(3):
        ctx.call("forward", tokens=tokens)
    with pytest.raises(ValueError, match="peak_gflops and bandwidth_gbs"):
        ctx.kernel_profile("forward")
    with pytest.raises(ValueError, match="must be positive"):
        ctx.kernel_profile("forward", peak_gflops=0, bandwidth_gbs=20)
    with pytest.raises(ValueError, match="must be positive"):
        ctx.kernel_profile("forward", peak_gflops=100, bandwidth_gbs=float("nan"))
    with pytest.raises(ValueError, match="no_such_entry"):
        ctx.kernel_profile("no_such_entry", peak_gflops=100, bandwidth_gbs=20)
    ours = ctx.kernel_profile("forward", peak_gflops=100, bandwidth_gbs=20)
    assert ours["calls"] == 3
    assert sum(k["launches"] for k in ours["kernels"]) == ctx.artifact.entry("forward").num_kernels
    seconds = [k["seconds"] for k in ours["kernels"]]
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 0
    assert ours["total"]["seconds"] == pytest.approx(sum(seconds))
    assert {k["regime"] for k in ours["kernels"]} <= {"compute", "memory", "overhead"}

    json_path = tmp_path / "profile.json"
    run([tools["tfc-run"], model_path, "profile", "forward", "--repeat", 1, "--json", json_path,
         "--peak-gflops", 100, "--bandwidth-gbs", 20])
    theirs = {k["name"]: k for k in json.loads(json_path.read_text())["kernels"]}
    assert set(theirs) == {k["name"] for k in ours["kernels"]}
    for kernel in ours["kernels"]:
        other = theirs[kernel["name"]]
        for key in ("ops", "kind", "launches", "flops", "bytes"):
            assert kernel[key] == other[key], (kernel["name"], key)
        assert kernel["floor_seconds"] == pytest.approx(other["floor_seconds"], rel=1e-6)
        assert kernel["floor_seconds"] > 0

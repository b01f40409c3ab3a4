"""Wrong inputs raise ValueError naming the input, and never crash the interpreter."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfc
from conftest import CONFIG

B, T = CONFIG["batch"], CONFIG["seq"]
GOOD = np.zeros((B, T), np.int32)


@pytest.fixture(scope="module")
def ctx(model_path):
    params = tfc.Params(tfc.Artifact(str(model_path)))
    params.init(0)
    return tfc.Context(params)


@pytest.mark.parametrize("call, message", [
    (lambda c: c.call("forward", tokens=GOOD.astype(np.int64)),
     r"input 'tokens' has dtype int64, expected int32 \(arrays are not cast"),
    (lambda c: c.call("forward", tokens=GOOD.astype(np.float32)),
     "input 'tokens' has dtype float32, expected int32"),
    (lambda c: c.call("forward", tokens=GOOD[:, :3]),
     r"input 'tokens' has shape \(2, 3\), expected \(2, 8\)"),
    (lambda c: c.call("forward", tokens=GOOD[None]),
     r"input 'tokens' has shape \(1, 2, 8\), expected \(2, 8\)"),
    (lambda c: c.call("forward", tokens=np.int32(1)),
     r"input 'tokens' has shape \(\), expected \(2, 8\)"),
    (lambda c: c.call("forward", tokenz=GOOD), r"has no input 'tokenz' \(inputs: tokens\)"),
    (lambda c: c.call("forward"), "input 'tokens' is missing"),
    (lambda c: c.call("loss", GOOD), "input 'targets' is missing"),
    (lambda c: c.call("forward", GOOD, GOOD), r"takes 1 input \(tokens\), got 2 positional"),
    (lambda c: c.call("forward", GOOD, tokens=GOOD),
     "input 'tokens' is given both by position and by name"),
    (lambda c: c.call("decode", token=GOOD[:, :1], pos=1.5),
     "input 'pos' is a float of dtype float64, which does not convert to int32"),
    (lambda c: c.call("decode", token=GOOD[:, :1], pos=2 ** 40),
     "input 'pos': 1099511627776 does not fit in int32"),
    (lambda c: c.call("decode", token=GOOD[:, :1], pos="3"),
     "input 'pos' is a str of dtype <U1, expected numbers"),
    (lambda c: c.call("decode", token=GOOD[:, :1], pos=None), "input 'pos' is a NoneType"),
    (lambda c: c.call("forward", tokens=[[1, 2], [3]]), "input 'tokens'"),
    (lambda c: c.call("forward", tokens=np.full((B, T), 10 ** 6, np.int32)),
     "entry 'forward'.*out of range"),
    (lambda c: c.call("forwad", tokens=GOOD), "no entry 'forwad'.*did you mean 'forward'"),
])
def test_wrong_inputs_raise_value_error(ctx, call, message):
    with pytest.raises(ValueError, match=message):
        call(ctx)
    # The context is still usable afterwards.
    assert ctx.call("forward", tokens=GOOD)["logits"].shape == (B, T, CONFIG["vocab_size"])


def test_missing_state_file_names_the_path(ctx, tmp_path):
    path = str(tmp_path / "state.safetensors")
    with pytest.raises(FileNotFoundError) as error:
        ctx.load_state(path)
    assert error.value.filename == path


def test_unknown_state_tensor(ctx):
    with pytest.raises(KeyError, match="no state tensor 'kv.9.k'"):
        ctx.state("kv.9.k")


def test_calls_before_the_parameters_are_set(model_path):
    context = tfc.Context(tfc.Params(tfc.Artifact(str(model_path))))
    with pytest.raises(RuntimeError, match="wte.weight"):
        context.call("forward", tokens=GOOD)


def test_bad_calls_leave_the_interpreter_alive(model_path):
    # In a child process, so that a crash shows as a failed test rather than ending pytest.
    script = textwrap.dedent(f"""
        import numpy as np, tfc
        ctx = tfc.Context(tfc.Params(tfc.Artifact({str(model_path)!r})))
        ctx.params.init(0)
        bad = [None, "x", b"x", 1.5, [[1, 2], [3]], np.zeros((2, 8), object),
               np.zeros((2, 8), np.complex64), np.zeros((0,), np.int32), np.zeros((8, 2), np.int32),
               np.zeros((2, 8), ">i4"), np.zeros((2, 8), np.int32)[:, ::-1] - 1, 2 ** 70,
               np.full((2, 8), -1, np.int32), object()]
        for value in bad:
            for entry, kwargs in [("forward", dict(tokens=value)),
                                  ("decode", dict(token=np.zeros((2, 1), np.int32), pos=value))]:
                try:
                    ctx.call(entry, **kwargs)
                except ValueError:
                    pass
                else:
                    raise SystemExit(f"no ValueError for {{entry}} {{value!r}}")
        for value in bad:
            try:
                ctx.params["wpe.weight"] = value
            except ValueError:
                pass
        print("alive")
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "alive", result.stderr


# Issue 29 ------------------------------------------------------------------------------------

P = CONFIG["prefill_len"]


def run_alive(script, timeout=120):
    """Runs |script| in a child interpreter (a crash or a hang fails the test, not pytest)."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0 and result.stdout.strip().endswith("alive"), \
        f"exit {result.returncode}\n{result.stdout}{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("threads", [1025, 2000, 10 ** 6])
def test_thread_counts_above_the_bound_are_refused(model_path, threads):
    # 10**6 started threads until the system refused one (an abort).
    params = tfc.Params(tfc.Artifact(model_path))
    with pytest.raises(ValueError, match=f"num_threads is {threads}: at most 1024 threads"):
        tfc.Context(params, num_threads=threads)


def test_a_thread_the_system_refuses_is_a_memory_error_not_a_deadlock(model_path):
    # num_threads=1000 deadlocked in the constructor's unwinding when a thread could not
    # start: here the child's address space has room for a few thread stacks, not 1000.
    out = run_alive(f"""
        import resource, tfc
        params = tfc.Params(tfc.Artifact({str(model_path)!r}))
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (used + (256 << 20), hard))
        try:
            tfc.Context(params, num_threads=1000)
        except MemoryError as error:
            print(error)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        params.init(0)
        ctx = tfc.Context(params, num_threads=2)
        print("alive")
        """, timeout=60)
    assert "cannot start 1000 threads" in out, out


@pytest.mark.parametrize("kwargs, message", [
    (dict(pos=0, n=0), rf"entry 'prefill': n = 0 is out of range: .* 1 to {P}"),
    (dict(pos=0, n=-3), "n = -3 is out of range"),
    (dict(pos=0, n=10 ** 6), "n = 1000000 is out of range"),
    (dict(pos=CONFIG["n_ctx"] - 2, n=1),
     rf"position {CONFIG['n_ctx'] - 2} \+ {P} tokens exceeds the context: the model's context "
     rf"length \(n_ctx\) is {CONFIG['n_ctx']}, so pos is at most {CONFIG['n_ctx'] - P}"),
    (dict(pos=-1, n=1), "pos = -1 is not a position in the KV cache"),
])
def test_prefill_inputs_outside_the_cache_are_refused(ctx, kwargs, message):
    # Checked by the library (every caller), not only by `tfc-run call`: n was clamped and a
    # position past the context failed as "embedding: id out of range".
    tokens = np.zeros((CONFIG["gen_batch"], P), np.int32)
    with pytest.raises(ValueError, match=message):
        ctx.call("prefill", tokens=tokens, **kwargs)
    assert ctx.call("prefill", tokens=tokens, pos=0, n=P)["logits"].shape[0] == CONFIG["gen_batch"]


def test_a_damaged_artifact_is_refused_before_loading(model_path, tmp_path):
    # Bytes overwritten in a model.so ended in an ld.so assertion or a SIGSEGV, which killed
    # the interpreter; the checksum tfc appends is checked before dlopen.
    data = bytearray(model_path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8] = bytes(b ^ 0xA5 for b in data[middle:middle + 8])
    (tmp_path / "damaged.so").write_bytes(bytes(data))
    (tmp_path / "cut.so").write_bytes(model_path.read_bytes()[:-24])
    out = run_alive(f"""
        import tfc
        for name in ("damaged.so", "cut.so"):
            try:
                tfc.Artifact({str(tmp_path)!r} + "/" + name)
            except RuntimeError as error:
                print(error)
            else:
                raise SystemExit("loaded " + name)
        print("alive")
        """)
    assert "damaged.so: the artifact is damaged: its checksum does not match (the file was " \
        "changed after tfc wrote it); recompile it" in out, out
    assert "cut.so: the artifact has no tfc checksum: not written by this tfc, or truncated; " \
        "recompile it" in out, out


def test_path_arguments_take_path_objects_and_empty_paths_are_not_found(model_path, tmp_path):
    with pytest.raises(FileNotFoundError):
        tfc.Artifact("")
    with pytest.raises(FileNotFoundError):
        tfc.Artifact(tmp_path / "missing.so")
    artifact = tfc.Artifact(model_path)  # a pathlib.Path
    params = tfc.Params(artifact)
    params.init(0)
    params.save(tmp_path / "w.safetensors")
    tfc.Params(artifact).load(tmp_path / "w.safetensors")
    ctx = tfc.Context(params)
    ctx.save_state(tmp_path / "state.safetensors")
    ctx.load_state(tmp_path / "state.safetensors")
    with pytest.raises(TypeError, match=r"Artifact: path must be str, bytes or os.PathLike"):
        tfc.Artifact(3)
    with pytest.raises(ValueError, match="Artifact: path .* NUL character"):
        tfc.Artifact("model\0.so")


def test_a_lone_surrogate_is_named_not_a_cast_error(ctx):
    tok = tfc.Tokenizer.load("bytes")
    with pytest.raises(ValueError, match=r"tokenizer: text is not valid text: it holds the "
                                         r"lone surrogate U\+D800 at index 2"):
        tok.encode("ab\ud800")
    with pytest.raises(ValueError, match=r"generate: prompt is not valid text: .*U\+DC00 at "
                                         r"index 0"):
        ctx.generate("\udc00x", tokenizer=tok, max_new_tokens=1)
    with pytest.raises(ValueError, match=r"Artifact: path .* U\+D800"):
        tfc.Artifact("m\ud800.so")
    assert list(tok.encode("ab")) == [97, 98]  # still usable


def test_train_refuses_a_checkpoint_over_its_data(model_path, tmp_path):
    data = tmp_path / "train.npy"
    np.save(data, np.frombuffer(b"the quick brown fox " * 20, np.uint8))
    before = data.read_bytes()
    params = tfc.Params(tfc.Artifact(model_path))
    params.init(0)
    with pytest.raises(ValueError, match="same file"):
        tfc.Context(params).train(data, steps=1, checkpoint=data)
    assert data.read_bytes() == before

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

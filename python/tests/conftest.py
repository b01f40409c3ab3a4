"""Fixtures of the tfc Python tests: the tools of a tfc build (tfc-trace, tfc, tfc-run), a
small GPT-2 compiled once per session, and .safetensors/.npy helpers written here in plain
NumPy, so that the checks do not go through the bindings under test.

The tools come from $TFC_BUILD_DIR/bin (default: build/ at the repository root; a relative
TFC_BUILD_DIR is taken from the repository root, as scripts/test.sh sets it). Without them
the tests that need a model fail and say so; nothing is skipped."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# A GPT-2 small enough to trace and compile in a few seconds; --optimizer=adamw adds
# loss_grad and train_step to forward, loss, prefill, decode and sample.
CONFIG = dict(n_layer=1, n_head=4, n_embd=32, vocab_size=256, n_ctx=32, batch=2, gen_batch=2,
              seq=8, prefill_len=8)


def build_dir():
    path = pathlib.Path(os.environ.get("TFC_BUILD_DIR", "build"))
    return path if path.is_absolute() else REPO / path


def run(args, timeout=300):
    """Runs a tool; on failure raises with its command line and output."""
    args = [str(a) for a in args]
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout}{result.stderr}")
    return result.stdout


@pytest.fixture(scope="session")
def tools():
    bin_dir = build_dir() / "bin"
    paths = {name: bin_dir / name for name in ("tfc", "tfc-trace", "tfc-run")}
    missing = [str(p) for p in paths.values() if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"tfc tools not found: {', '.join(missing)}; build them "
                    "(scripts/build.sh) or set TFC_BUILD_DIR to a build folder", pytrace=False)
    return paths


@pytest.fixture(scope="session")
def model_path(tools, tmp_path_factory):
    """The compiled test model (model.so)."""
    folder = tmp_path_factory.mktemp("model")
    mlir, so = folder / "model.mlir", folder / "model.so"
    sets = [arg for k, v in CONFIG.items() for arg in ("--set", f"{k}={v}")]
    run([tools["tfc-trace"], "gpt2", *sets, "-o", mlir])
    run([tools["tfc"], mlir, "-o", so, "--optimizer=adamw"])
    return so


_NPY_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I32": np.int32,
               "I64": np.int64, "U8": np.uint8, "I8": np.int8}


def read_safetensors(path):
    """The tensors of a .safetensors file as a dict of arrays (metadata dropped)."""
    data = pathlib.Path(path).read_bytes()
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + header_len])
    body = data[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(body[begin:end], dtype=_NPY_DTYPES[info["dtype"]]) \
            .reshape(info["shape"]).copy()
    return tensors


def write_safetensors(path, tensors):
    """Writes a dict of arrays as a .safetensors file."""
    names = {np.dtype(v): k for k, v in _NPY_DTYPES.items()}
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    pathlib.Path(path).write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))

"""tfc.Params.load_pretrained: a GPT-2 checkpoint as Hugging Face writes it (float16 shards
under an index, names under "transformer.", attention-mask buffers), written here in plain
NumPy; the values must be NumPy's exact float16 -> float32 widening."""
import json

import numpy as np
import pytest

import tfc
from conftest import write_safetensors


@pytest.fixture
def artifact(model_path):
    return tfc.Artifact(str(model_path))


def write_checkpoint(artifact, folder, shards=2, shapes=None):
    """Random float16 values for every parameter, as transformer.<name>, in |shards| files
    and an index, plus two buffers; returns the float32 values each parameter must get."""
    rng = np.random.default_rng(5)
    tensors, expected = {}, {}
    for name, spec in artifact.params.items():
        shape = (shapes or {}).get(name, spec.shape)
        values = rng.normal(0.0, 0.5, shape).astype(np.float16)
        values[values == 0] = 1
        tensors["transformer." + name] = values
        expected[name] = values.astype(np.float32)
    tensors["transformer.h.0.attn.bias"] = np.tril(np.ones((1, 1, 4, 4), np.float32))
    tensors["transformer.h.0.attn.masked_bias"] = np.array(-1e4, np.float32)
    folder.mkdir(exist_ok=True)
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = names[i::shards]
        write_safetensors(folder / shard, {k: tensors[k] for k in part})
        weight_map.update({k: shard for k in part})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return expected


def test_load_pretrained_converts_and_reports(artifact, tmp_path):
    expected = write_checkpoint(artifact, tmp_path / "hf")
    params = tfc.Params(artifact)
    report = params.load_pretrained(str(tmp_path / "hf"))
    assert params.all_set
    for name, values in expected.items():
        np.testing.assert_array_equal(params[name], values, err_msg=name)
    skipped = sorted(t["name"] for t in report if t["param"] is None)
    assert skipped == ["transformer.h.0.attn.bias", "transformer.h.0.attn.masked_bias"]
    loaded = {t["param"]: t for t in report if t["param"] is not None}
    assert sorted(loaded) == sorted(artifact.params)
    assert loaded["wte.weight"]["name"] == "transformer.wte.weight"
    assert loaded["wte.weight"]["dtype"] == "float16"
    assert loaded["wte.weight"]["file"].endswith(".safetensors")


def test_load_pretrained_refuses_a_wrong_shape_and_changes_nothing(artifact, tmp_path):
    spec = artifact.params["wpe.weight"]
    bad_shape = (spec.shape[0] - 1, spec.shape[1])
    write_checkpoint(artifact, tmp_path / "hf", shapes={"wpe.weight": bad_shape})
    params = tfc.Params(artifact)
    params.init(3)
    before = np.array(params["wpe.weight"])
    with pytest.raises(ValueError, match=r"tensor 'transformer.wpe.weight' in "
                                         r"'model-0000[12]-of-00002.safetensors' \(parameter "
                                         r"'wpe.weight'\) has shape"):
        params.load_pretrained(str(tmp_path / "hf"))
    np.testing.assert_array_equal(params["wpe.weight"], before)

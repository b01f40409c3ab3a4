"""tfc.Params: init, load and save against `tfc-run init` and files written in plain
NumPy; parameters as NumPy views of the runtime's buffers."""
import numpy as np
import pytest

import tfc
from conftest import read_safetensors, run, write_safetensors


@pytest.fixture
def artifact(model_path):
    return tfc.Artifact(str(model_path))


def test_init_matches_tfc_run_init(artifact, model_path, tools, tmp_path):
    reference = tmp_path / "ref.safetensors"
    run([tools["tfc-run"], model_path, "init", "--seed", "7", "-o", reference])
    expected = read_safetensors(reference)
    params = tfc.Params(artifact)
    assert not params.all_set
    params.init(7)
    assert params.all_set and len(params) == len(expected)
    assert params.keys() == list(artifact.params)
    for name in params:
        np.testing.assert_array_equal(params[name], expected[name], err_msg=name)


def test_save_then_load_round_trips(artifact, tmp_path):
    params = tfc.Params(artifact)
    params.init(1)
    path = tmp_path / "w.safetensors"
    params.save(str(path))
    saved = read_safetensors(path)
    other = tfc.Params(artifact)
    other.load(str(path))
    for name in params:
        np.testing.assert_array_equal(saved[name], params[name])
        np.testing.assert_array_equal(other[name], params[name])


def test_load_refuses_unexpected_tensors_unless_allowed(artifact, tmp_path):
    params = tfc.Params(artifact)
    params.init(2)
    tensors = {name: np.array(params[name]) for name in params}
    tensors["extra.weight"] = np.zeros(3, np.float32)
    path = tmp_path / "extra.safetensors"
    write_safetensors(path, tensors)
    fresh = tfc.Params(artifact)
    with pytest.raises(ValueError, match="extra.weight"):
        fresh.load(str(path))
    assert not fresh.all_set  # nothing changed
    fresh.load(str(path), allow_unexpected=True)
    np.testing.assert_array_equal(fresh["wte.weight"], params["wte.weight"])


def test_load_refuses_a_wrong_shape_naming_the_tensor(artifact, tmp_path):
    params = tfc.Params(artifact)
    params.init(2)
    tensors = {name: np.array(params[name]) for name in params}
    tensors["wpe.weight"] = tensors["wpe.weight"][:3]
    path = tmp_path / "bad.safetensors"
    write_safetensors(path, tensors)
    with pytest.raises(ValueError, match="wpe.weight"):
        tfc.Params(artifact).load(str(path))


def test_load_missing_file_names_the_path(artifact, tmp_path):
    path = str(tmp_path / "missing.safetensors")
    with pytest.raises(FileNotFoundError) as error:
        tfc.Params(artifact).load(path)
    assert error.value.filename == path


def test_a_parameter_is_a_view_of_the_runtime_buffer(artifact, tmp_path):
    params = tfc.Params(artifact)
    params.init(3)
    view = params["wpe.weight"]
    assert view.base is params and view.flags.writeable and not view.flags.owndata
    assert np.shares_memory(view, params["wpe.weight"])  # the same buffer each time
    view[0, 0] = 42.0  # writes through: what save() writes is the view's memory
    path = tmp_path / "w.safetensors"
    params.save(str(path))
    assert read_safetensors(path)["wpe.weight"][0, 0] == 42.0
    del params  # the view keeps the parameters alive
    assert view[0, 0] == 42.0


@pytest.mark.parametrize("copy", [False, True])
def test_views_of_loaded_parameters_write_without_touching_the_file(artifact, tmp_path, copy):
    # Saved by tfc, the file's tensors are aligned: load maps them copy-on-write (unless
    # copy=True), and the views must still be writable without changing the file.
    params = tfc.Params(artifact)
    params.init(4)
    path = tmp_path / "w.safetensors"
    params.save(str(path))
    before = path.read_bytes()
    loaded = tfc.Params(artifact)
    loaded.load(str(path), copy=copy)
    for name in params:
        np.testing.assert_array_equal(loaded[name], params[name], err_msg=name)
    view = loaded["wte.weight"]
    assert view.flags.writeable
    view[0, 0] = 42.0
    view[-1, :] = -1.0
    assert loaded["wte.weight"][0, 0] == 42.0
    assert path.read_bytes() == before
    path.unlink()  # the parameters own their mapping
    assert loaded["wte.weight"][-1, 0] == -1.0
    np.testing.assert_array_equal(loaded["wpe.weight"], params["wpe.weight"])


def test_assignment_copies_with_checks(artifact):
    params = tfc.Params(artifact)
    spec = artifact.params["ln_f.bias"]
    value = np.arange(spec.shape[0], dtype=np.float32)
    params["ln_f.bias"] = value
    assert params.is_set("ln_f.bias") and not params.is_set("ln_f.weight")
    value[0] = -1  # a copy was taken
    np.testing.assert_array_equal(params["ln_f.bias"], np.arange(spec.shape[0]))
    with pytest.raises(ValueError, match=r"parameter 'ln_f.bias' has shape \(3,\)"):
        params["ln_f.bias"] = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="parameter 'ln_f.bias' has dtype float64"):
        params["ln_f.bias"] = np.zeros(spec.shape, np.float64)


def test_unset_and_unknown_parameters(artifact):
    params = tfc.Params(artifact)
    with pytest.raises(RuntimeError, match="'wte.weight' is not set"):
        params["wte.weight"]
    with pytest.raises(KeyError, match="no parameter 'wte'"):
        params["wte"]
    assert "wte.weight" in params and "wte" not in params
    assert repr(params).endswith("16 tensors, 0 set>")

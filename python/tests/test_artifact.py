"""tfc.Artifact: what a compiled model describes, checked against the traced config and
against `tfc-run info`."""
import numpy as np
import pytest

import tfc
from conftest import CONFIG, run

B, T, V, C = CONFIG["batch"], CONFIG["seq"], CONFIG["vocab_size"], CONFIG["n_embd"]


def test_identity_matches_tfc_run_info(model_path, tools):
    artifact = tfc.Artifact(str(model_path))
    info = dict(line.split(":", 1) for line in run([tools["tfc-run"], model_path, "info"])
                .splitlines() if ":" in line and not line.startswith(" "))
    assert artifact.path == str(model_path)
    assert artifact.module_hash == info["hash"].strip()
    assert artifact.target == info["target"].strip()
    assert artifact.compiler_version == info["compiler"].strip()


def test_metadata_is_the_traced_config(model_path):
    metadata = tfc.Artifact(str(model_path)).metadata
    assert metadata["model"] == "gpt2"
    for key, value in CONFIG.items():
        assert metadata["config"][key] == value, key


def test_entries_params_state(model_path):
    artifact = tfc.Artifact(str(model_path))
    # gen_batch 2: the serving entries too (decode_rows, decode_rows_1, prefill_row)
    assert sorted(artifact.entries) == ["decode", "decode_rows", "decode_rows_1", "forward",
                                        "loss", "loss_grad", "prefill", "prefill_row",
                                        "sample", "train_step"]
    forward = artifact.entries["forward"]
    assert forward.name == "forward"
    assert list(forward.inputs) == ["tokens"]
    tokens = forward.inputs["tokens"]
    assert (tokens.dtype, tokens.shape, tokens.dtype_name) == (np.int32, (B, T), "int32")
    logits = forward.outputs["logits"]
    assert (logits.dtype, logits.shape, logits.size, logits.nbytes) == \
        (np.float32, (B, T, V), B * T * V, 4 * B * T * V)
    assert artifact.entry("loss").outputs["loss"].shape == ()
    assert artifact.entry("train_step").inputs["lr"].shape == ()

    wte = artifact.params["wte.weight"]
    assert (wte.name, wte.shape, wte.dtype) == ("wte.weight", (V, C), np.float32)
    assert wte.init.startswith("normal(")
    assert len(artifact.params) == 4 + 12 * CONFIG["n_layer"]
    assert "kv.0.k" in artifact.state and artifact.state["kv.0.k"].init == "zeros"


def test_reprs_are_readable(model_path):
    artifact = tfc.Artifact(str(model_path))
    text = repr(artifact)
    assert text.startswith(f"tfc.Artifact('{model_path}')")
    assert f"forward(tokens: int32[{B}, {T}]) -> (logits: float32[{B}, {T}, {V}])" in text
    assert artifact.module_hash in text
    assert repr(artifact.params["wte.weight"]) == \
        "TensorSpec('wte.weight', float32, (256, 32), init='normal(0.0, 0.02)')"
    assert repr(artifact.entry("loss")) == \
        f"Entry(loss(tokens: int32[{B}, {T}], targets: int32[{B}, {T}]) -> (loss: float32[]))"


def test_missing_file_is_file_not_found_with_the_path(tmp_path):
    path = str(tmp_path / "nope.so")
    with pytest.raises(FileNotFoundError) as error:
        tfc.Artifact(path)
    assert error.value.filename == path and path in str(error.value)


def test_not_a_model_names_the_file(tmp_path):
    path = tmp_path / "text.so"
    path.write_text("not an ELF file")
    with pytest.raises(RuntimeError, match="text.so"):
        tfc.Artifact(str(path))


def test_unknown_entry_lists_the_entries(model_path):
    with pytest.raises(ValueError, match="did you mean 'forward'"):
        tfc.Artifact(str(model_path)).entry("forwrd")

"""tfc.Tokenizer: the byte tokenizer against Python's own UTF-8, the GPT-2 BPE against the
independent Python reference's fixture (runtime/test/data/bpe_fixture.txt)."""
import json

import numpy as np
import pytest

import tfc
from conftest import REPO

FIXTURE = REPO / "runtime" / "test" / "data" / "bpe_fixture.txt"


def test_bytes_tokenizer():
    tok = tfc.Tokenizer.load("bytes")
    assert (tok.kind, tok.vocab_size, tok.eos_id) == ("bytes", 256, None)
    text = "héllo, wörld ✓"
    ids = tok.encode(text)
    assert ids.dtype == np.int32 and ids.tolist() == list(text.encode("utf-8"))
    assert tok.encode(b"\xff\x00").tolist() == [255, 0]
    assert tok.decode(ids) == text and tok.decode(ids.tolist()) == text
    assert tok.decode_bytes(ids[:2]) == b"h\xc3"  # ends inside a UTF-8 sequence
    assert tok.decode(ids[:2]) == "h\ufffd"
    assert tok.decode(np.array([104, 105], np.int64)) == "hi"
    assert repr(tok) == "<tfc.Tokenizer bytes, vocab_size=256>"


@pytest.mark.parametrize("ids, message", [
    ([256], "256"), ([-1], "-1"), ([2 ** 40], "out of range"), ([[1, 2]], "one-dimensional"),
    ([1.5], "integers"),
])
def test_bad_ids_raise_value_error(ids, message):
    with pytest.raises(ValueError, match=message):
        tfc.Tokenizer.load("bytes").decode(ids)


def test_bad_text_raises_value_error():
    with pytest.raises(ValueError, match="str or bytes"):
        tfc.Tokenizer.load("bytes").encode(42)


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    """The fixture's tiny BPE vocabulary as vocab.json + merges.txt, and its cases."""
    folder = tmp_path_factory.mktemp("bpe")
    vocab, merges, cases, decodes = {}, [], [], []
    for line in FIXTURE.read_text().splitlines():
        fields = line.split("\t")
        if fields[0] == "vocab":
            vocab[bytes.fromhex(fields[1]).decode()] = int(fields[2])
        elif fields[0] == "merge":
            merges.append(f"{bytes.fromhex(fields[1]).decode()} {bytes.fromhex(fields[2]).decode()}")
        elif fields[0] == "case":
            cases.append((bytes.fromhex(fields[1]), [int(i) for i in fields[2].split()]))
        elif fields[0] == "decode":
            decodes.append(([int(i) for i in fields[1].split()], bytes.fromhex(fields[2])))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    assert cases and decodes
    return folder, vocab, cases, decodes


def test_bpe_matches_the_python_reference(bpe):
    folder, vocab, cases, decodes = bpe
    tok = tfc.Tokenizer.load(str(folder))
    assert tok.kind == "gpt2-bpe" and tok.vocab_size == len(vocab)
    for text, ids in cases:
        assert tok.encode(text).tolist() == ids, text
    for ids, text in decodes:
        assert tok.decode(ids) == text.decode("utf-8")


def test_missing_tokenizer_folder_names_the_path(tmp_path):
    path = str(tmp_path / "no-such-tokenizer")
    with pytest.raises(FileNotFoundError) as error:
        tfc.Tokenizer.load(path)
    assert error.value.filename == path and path in str(error.value)


def test_folder_without_merges_names_the_file(bpe, tmp_path):
    (tmp_path / "vocab.json").write_text((bpe[0] / "vocab.json").read_text())
    with pytest.raises(FileNotFoundError) as error:
        tfc.Tokenizer.load(str(tmp_path))
    assert error.value.filename == str(tmp_path / "merges.txt")


def sentencepiece_tokenizer_json():
    """A LLaMA 2-style tokenizer.json: <unk> <s> </s>, byte tokens, "▁a" and "▁ab"."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
    for token in ["▁", "a", "b", "▁a", "▁ab"]:
        vocab[token] = len(vocab)
    special = [{"id": i, "content": t, "special": True, "normalized": False, "lstrip": False,
                "rstrip": False, "single_word": False} for i, t in enumerate(["<unk>", "<s>", "</s>"])]
    return {
        "version": "1.0", "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                                  "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True,
                  "byte_fallback": True, "vocab": vocab, "merges": [["▁", "a"], ["▁a", "b"]]},
    }


def test_tokenizer_json(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(sentencepiece_tokenizer_json()),
                                             encoding="utf-8")
    for spec in [tmp_path, tmp_path / "tokenizer.json"]:
        tok = tfc.Tokenizer.load(str(spec))
        assert (tok.kind, tok.vocab_size, tok.bos_id, tok.eos_id) == (
            "hf-bpe-sentencepiece", 264, 1, 2)
        ids = tok.encode("ab é</s>")
        # "▁ab", "▁", é by byte fallback (C3 A9), </s>.
        assert ids.tolist() == [263, 259, 3 + 0xC3, 3 + 0xA9, 2]
        assert tok.decode(ids) == "ab é</s>"  # as tokenizers decodes: no leading space
        assert tok.decode_bytes(ids[:3]) == b" ab \xc3"  # streaming: raw bytes


def test_unsupported_tokenizer_json_names_the_model_type(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram", "vocab": []}}))
    with pytest.raises(Exception, match="model type 'Unigram' is not supported"):
        tfc.Tokenizer.load(str(tmp_path))

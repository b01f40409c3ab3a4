#!/usr/bin/env python3
"""Cross-checks tfc's tokenizer.json tokenizers against Hugging Face's `tokenizers`.

Trains small BPE tokenizers with `tokenizers` (BpeTrainer on a generated corpus) in the
styles of real models: GPT-2 (ByteLevel), LLaMA 3 (Split + ByteLevel, ignore_merges),
Qwen2 (NFC + Split + ByteLevel), LLaMA 2 / Mistral (SentencePiece-style: byte fallback,
Prepend/Replace normalizer, Replace/ByteFallback/Fuse/Strip decoder) and Metaspace ones,
with special and added tokens and TemplateProcessing where real models have them. Then
encodes a mixed-script text line by line and whole with tfc (tfc-runtime-tokenizer-tool)
and compares the ids with `tokenizers`' encode(add_special_tokens=False), the decoded
text with decode(skip_special_tokens=False), and bosId/eosId with what `tokenizers`
adds and has. Prints one line per tokenizer and a verdict; exits 1 on any difference.

usage: hf_tokenizer_check.py TOOL WORKDIR
       hf_tokenizer_check.py token-file BIN TOKENIZER_DIR FILE...
       hf_tokenizer_check.py generate OUT ERR TOKENIZER_DIR PROMPT
The second form checks a `tfc-run tokenize` output: BIN (llm.c .bin) must hold the FILEs
encoded by `tokenizers`, joined by the end-of-text token. The third checks the stdout OUT
and stderr ERR of `tfc-run generate --prompt PROMPT`: the prompt's length is that of
`tokenizers`' encode with special tokens (BOS first), and the streamed text (raw bytes)
completes the prompt's text as `tokenizers` decodes prompt and generated ids together.
"""

import json
import os
import random
import subprocess
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")

WORDS = {
    "en": "the quick brown fox jumps over lazy dog it's we're they've I'm you'll he'd "
          "tokenizer model training data people bring their own files".split(),
    "ru": "съешь же ещё этих мягких французских булок да выпей чаю привет мир".split(),
    "zh": "我们 今天 天气 很好 模型 训练 数据 中文 分词 测试".split(),
    "ja": "こんにちは 世界 東京 カタカナ ひらがな テスト です ます".split(),
    "mix": ["naïve", "café", "Ünïcödé", "straße", "ﬁne", "e\u0301", "A\u030a", "1234567",
            "3.14159", "x²", "½", "😀", "👩‍💻", "👨‍👩‍👧", "🇫🇷", "#hash", "@user", "C++",
            "don't", "DON'T", "I'LL", "\u00a0nbsp", "tab\there"],
}


def make_corpus(rng, lines):
    out = []
    for _ in range(lines):
        words = []
        for _ in range(rng.randrange(3, 14)):
            script = rng.choice(list(WORDS))
            words.append(rng.choice(WORDS[script]))
        sep = rng.choice([" ", " ", " ", "  ", "\t", ", ", ". "])
        out.append(sep.join(words))
    return out


def test_texts(rng):
    """The texts to compare: hand-picked hard cases and generated lines."""
    texts = [
        "Hello world", " Hello", "  two leading spaces", "trailing spaces   ", "",
        " ", "\n", "\r\n", "a\r\nb\r\n\r\nc", "tabs\t\tand\tspaces  \t x",
        "line one\nline two\n\nline four\n", "   \n  \n x",
        "numbers 1 12 123 1234 12345 3.14159 1,000,000", "٣٤٥ ١٢ Ⅻ",
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "我们今天在东京测试中文分词。", "こんにちは、世界！カタカナとひらがな。",
        "emoji 😀😀 👩‍💻 👨‍👩‍👧 🇫🇷🇩🇪 ❤️", "café naïve e\u0301 A\u030a \u1100\u1161\u11a8 \uac00\u11a8",
        "ﬁne ﬂy x² ½ Å Ω", "o\u0308\u0301 a\u0323\u0302 q\u0307\u0323",
        "it's It'S we'RE they've I'm you'll he'd 'x '", "don't DON'T ſ 'ſ",
        "rare: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᚠᛇᚻ ꙮ 𓀀 \u2028 \u3000 full width",
        "special <|endoftext|> inside<|endoftext|>text<s>x</s> <s> </s>",
        "<|begin_of_text|>hi<|eot_id|> <|im_start|>user\nhi<|im_end|>",
        "tools: <tool>x</tool> a <tool> b  <tool>  c", "word<tool>word",
        "normalized: hello world, hello worlds", "@@ ### $$$ ... !!! ???\n\n\n---",
        "x\u00a0y \u200bz \u200d", "\u0000 control \u0007 \u001b[0m",
        "separators \u001c\u001d\u001e\u001f \u0085 \u000b\u000c x\u0085y",
        "single words: word swordfish words word_word word. (word) wordword",
    ]
    texts += make_corpus(rng, 40)
    return texts


def train(name, corpus, model, normalizer, pre_tokenizer, decoder, special, vocab_size,
          post=None, alphabet=None, byte_tokens=False, added=()):
    tok = Tokenizer(model)
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoder
    specials = list(special)
    if byte_tokens:  # LLaMA 2's <0x00>..<0xFF>: in the vocabulary, not added tokens
        specials += ["<0x%02X>" % b for b in range(256)]
    options = {"limit_alphabet": 300} if byte_tokens else {}  # rare characters fall back
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=alphabet or [], show_progress=False,
                                  **options)
    tok.train_from_iterator(corpus, trainer)
    if added:
        tok.add_tokens(list(added))
    if post is not None:
        tok.post_processor = post(tok)
    data = json.loads(tok.to_str())
    if byte_tokens:
        data["added_tokens"] = [t for t in data["added_tokens"]
                                if not t["content"].startswith("<0x")]
    return name, data


def sp_model():
    return models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True)


def configs(corpus):
    byte_alphabet = pre_tokenizers.ByteLevel.alphabet()
    out = []

    # GPT-2: ByteLevel with its regex; merges as "a b" strings, as GPT-2's file has them.
    name, data = train(
        "gpt2", corpus, models.BPE(),
        None, pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel(),
        ["<|endoftext|>"], 700, post=lambda t: processors.ByteLevel(trim_offsets=False),
        alphabet=byte_alphabet)
    data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                               for m in data["model"]["merges"]]
    out.append((name, data))

    # ByteLevel adding a prefix space, RoBERTa-like, with a single_word added token.
    out.append(train(
        "bytelevel-prefix", corpus, models.BPE(),
        None, pre_tokenizers.ByteLevel(add_prefix_space=True), decoders.ByteLevel(),
        ["<s>", "</s>"], 600,
        post=lambda t: processors.RobertaProcessing(("</s>", t.token_to_id("</s>")),
                                                    ("<s>", t.token_to_id("<s>"))),
        alphabet=byte_alphabet,
        added=[AddedToken("word", single_word=True, normalized=False)]))

    # Digits one by one before ByteLevel's regex.
    out.append(train(
        "digits", corpus, models.BPE(),
        None, pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                       pre_tokenizers.ByteLevel(add_prefix_space=False)]),
        decoders.ByteLevel(), ["<|endoftext|>"], 600, alphabet=byte_alphabet))

    # Punctuation apart (each character), then ByteLevel without its regex.
    out.append(train(
        "punctuation", corpus, models.BPE(),
        None, pre_tokenizers.Sequence([pre_tokenizers.Punctuation(),
                                       pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                                use_regex=False)]),
        decoders.ByteLevel(), ["<|endoftext|>"], 600, alphabet=byte_alphabet))

    # LLaMA 3: Split by its regex, then ByteLevel without a regex; ignore_merges.
    llama3_specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    out.append(train(
        "llama3", corpus, models.BPE(ignore_merges=True),
        None,
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        decoders.ByteLevel(), llama3_specials, 900,
        post=lambda t: processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))])]),
        alphabet=byte_alphabet,
        added=[AddedToken("<tool>", lstrip=True, rstrip=True, normalized=False)]))

    # Whole words in the vocabulary that no merge makes (as in LLaMA 3's, converted from
    # tiktoken): ignore_merges makes each one token.
    # They take the ids after the vocabulary's, and the added tokens after them keep
    # following the vocabulary (`tokenizers` numbers added tokens that are not in the
    # vocabulary after it, whatever the file says).
    name, data = out[-1]
    vocab = data["model"]["vocab"]
    next_id = 1 + max(vocab.values())
    for word in [" tokenizer", " привет", "Hello", " 😀"]:
        token = "".join(chr(BYTE_TO_CHAR[b]) for b in word.encode("utf-8"))
        if token not in vocab:
            vocab[token] = next_id
            next_id += 1
    for added_token in data["added_tokens"]:
        if added_token["content"] not in vocab:
            added_token["id"] = next_id
            next_id += 1

    # Qwen2: NFC, Split by its regex (single digits), ByteLevel; no BOS.
    out.append(train(
        "qwen2", corpus, models.BPE(),
        normalizers.NFC(),
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        decoders.ByteLevel(), ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 800,
        post=lambda t: processors.ByteLevel(trim_offsets=False), alphabet=byte_alphabet))

    # LLaMA 2 / Mistral: SentencePiece-style BPE with byte fallback.
    sp_decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                    decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    bos = lambda t: processors.TemplateProcessing(  # noqa: E731
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", t.token_to_id("<s>"))])
    out.append(train(
        "llama2", corpus, sp_model(),
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]),
        None, sp_decoder, ["<unk>", "<s>", "</s>"], 900, post=bos, byte_tokens=True,
        added=[AddedToken("hello world", normalized=True)]))

    # Newer SentencePiece-style files: Metaspace (prepend "first", no split) and the
    # same decoder.
    out.append(train(
        "metaspace-first", corpus, sp_model(),
        None, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False),
        sp_decoder, ["<unk>", "<s>", "</s>"], 900, post=bos, byte_tokens=True))

    # Gemma-style: spaces replaced by "▁" first, a Split at " " merged with the previous
    # piece, the decoder without Strip.
    out.append(train(
        "gemma", corpus, sp_model(),
        normalizers.Replace(" ", "▁"),
        pre_tokenizers.Sequence([
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=False),
            pre_tokenizers.Split(" ", behavior="merged_with_previous")]),
        decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                           decoders.Fuse()]),
        ["<pad>", "<eos>", "<bos>", "<unk>"], 800, byte_tokens=True))

    # Metaspace splitting at each "▁" with its own decoder (which keeps byte-fallback
    # tokens as text, as `tokenizers` does).
    out.append(train(
        "metaspace-always", corpus, sp_model(),
        None, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        ["<unk>", "<s>", "</s>"], 700, post=bos, byte_tokens=True))
    return out


# Characters that NFC decomposes, reorders or composes: marks of several combining classes,
# Hangul jamo and syllables, singletons, composition exclusions, Greek, Indic, kana.
NFC_POOL = [0x41, 0x61, 0x65, 0x6F, 0x300, 0x301, 0x302, 0x308, 0x323, 0x327, 0x345, 0x344,
            0x340, 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x212B, 0x2126, 0xE9, 0xC5, 0x1E0A,
            0x1E0C, 0x307, 0x1F00, 0x3B1, 0x313, 0x342, 0x915, 0x93C, 0x929, 0xFB01, 0x3099,
            0x304B, 0x309A, 0x30AB, 0xB47, 0xB3E, 0xCC6, 0xCC2, 0xCD5, 0x1B05, 0x1B35, 0x20,
            0x4E00, 0x1D15E, 0x1D165, 0x1D16E, 0x5B8, 0x5B7, 0x591, 0xFB2, 0xF80, 0xF71, 0xF72]


def nfc_config(rng):
    """A byte-level tokenizer without merges behind NFC (its ids are the NFC text's bytes),
    and random texts of NFC_POOL's characters."""
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet(),
                                               key=lambda c: BYTE_OF[c]))}
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": False},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                        "use_regex": False},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": []}}
    texts = ["".join(chr(rng.choice(NFC_POOL)) for _ in range(rng.randrange(1, 12)))
             for _ in range(2000)]
    return data, texts


def byte_of():
    """GPT-2's bytes_to_unicode, inverted: stand-in character -> byte."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


BYTE_OF = byte_of()
BYTE_TO_CHAR = {b: ord(c) for c, b in BYTE_OF.items()}


def run_tool(tool, spec, texts, path):
    with open(path, "wb") as f:
        f.write(b"\xff".join(t.encode("utf-8") for t in texts))
    result = subprocess.run([tool, spec, path], capture_output=True, check=False)
    lines = result.stdout.decode("utf-8").splitlines()
    errors = [l for l in lines if l.startswith("error:")]
    if result.returncode != 0 and not errors:
        errors.append("error: exit %d: %s" % (result.returncode, result.stderr.decode()))
    header = lines[0].split() if lines else []
    info = dict(zip(header[0::2], header[1::2]))
    ids, decoded = [], []
    for line in lines[1:]:
        if line.startswith("ids"):
            ids.append([int(x) for x in line.split()[1:]])
        elif line.startswith("text"):
            parts = line.split()
            decoded.append(bytes.fromhex(parts[1] if len(parts) > 1 else "").decode("utf-8"))
    return info, ids, decoded, errors


def check_token_file(path, folder, files):
    import numpy as np  # pylint: disable=import-outside-toplevel

    header = np.fromfile(path, dtype="<i4", count=256)
    dtype = "<u2" if header[1] == 1 else "<u4"
    got = np.fromfile(path, dtype=dtype, offset=1024).astype(np.int64).tolist()
    reference = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    names = ["<|endoftext|>", "</s>", "<|end_of_text|>", "<|im_end|>"]
    eos = next(reference.token_to_id(t) for t in names if reference.token_to_id(t) is not None)
    expected = []
    for i, name in enumerate(files):
        with open(name, encoding="utf-8") as f:
            if i > 0:
                expected.append(eos)
            expected += reference.encode(f.read(), add_special_tokens=False).ids
    if got != expected:
        at = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b),
                  min(len(got), len(expected)))
        print("FAIL: %d tokens, tokenizers %d; first difference at %d: %s vs %s" % (
            len(got), len(expected), at, got[at:at + 8], expected[at:at + 8]))
        return 1
    print("OK: %d tokens identical to tokenizers" % len(got))
    return 0


def check_generate(out_path, err_path, folder, prompt):
    import re  # pylint: disable=import-outside-toplevel

    reference = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    with open(out_path, "rb") as f:
        out = f.read()
    with open(err_path, encoding="utf-8", errors="replace") as f:
        err = f.read()
    text, _, ids_line = out[:-1].rpartition(b"\n")
    generated = [int(x) for x in ids_line.split()]
    prompt_ids = reference.encode(prompt, add_special_tokens=True).ids
    match = re.search(r"prompt (\d+) tokens", err)
    problems = []
    if not match or int(match.group(1)) != len(prompt_ids):
        problems.append("prompt length: %s, tokenizers %d" % (
            match and match.group(1), len(prompt_ids)))
    full = reference.decode(prompt_ids + generated, skip_special_tokens=False)
    start = reference.decode(prompt_ids, skip_special_tokens=False).encode("utf-8")
    streamed = (start + text).decode("utf-8", "replace")
    if streamed != full:
        problems.append("streamed %r, tokenizers %r" % (streamed, full))
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print("OK: %d prompt tokens, %d generated, streamed text identical to tokenizers" % (
            len(prompt_ids), len(generated)))
    return 1 if problems else 0


def main():
    if sys.argv[1] == "generate":
        return check_generate(*sys.argv[2:6])
    if sys.argv[1] == "token-file":
        return check_token_file(sys.argv[2], sys.argv[3], sys.argv[4:])
    tool, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(0)
    corpus = make_corpus(rng, 400)
    texts = test_texts(rng)
    whole = "\n".join(texts)
    nfc_data, nfc_texts = nfc_config(rng)
    failures = 0
    for name, data in configs(corpus) + [("nfc-random", nfc_data)]:
        all_texts = nfc_texts if name == "nfc-random" else texts + [whole]
        folder = os.path.join(workdir, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
        reference = Tokenizer.from_str(json.dumps(data))
        info, ids, decoded, errors = run_tool(tool, folder, all_texts,
                                              os.path.join(workdir, name + ".texts"))
        problems = list(errors)
        if len(ids) != len(all_texts) or len(decoded) != len(all_texts):
            problems.append("the tool printed %d results for %d texts" % (len(ids), len(all_texts)))
        else:
            for i, text in enumerate(all_texts):
                expected = reference.encode(text, add_special_tokens=False).ids
                if ids[i] != expected:
                    problems.append("text %d %r: ids %s, tokenizers %s" % (
                        i, text[:60], ids[i][:40], expected[:40]))
                    continue
                expected_text = reference.decode(expected, skip_special_tokens=False)
                if decoded[i] != expected_text:
                    at = next((k for k, (a, b) in enumerate(zip(decoded[i], expected_text))
                               if a != b), min(len(decoded[i]), len(expected_text)))
                    problems.append("text %d %r: decoded %r, tokenizers %r (from character %d)" % (
                        i, text[:40], decoded[i][max(0, at - 20):at + 40],
                        expected_text[max(0, at - 20):at + 40], at))
        # BOS: the token `tokenizers` puts before a text when adding special tokens.
        plain = reference.encode("Hello", add_special_tokens=False).ids
        special = reference.encode("Hello", add_special_tokens=True).ids
        expected_bos = str(special[0]) if special[1:len(plain) + 1] == plain and \
            len(special) > len(plain) else "-"
        if info.get("bos") != expected_bos:
            problems.append("bos %s, tokenizers adds %s" % (info.get("bos"), expected_bos))
        eos = "-"
        for candidate in ["<|endoftext|>", "</s>", "<|end_of_text|>", "<|im_end|>"]:
            if reference.token_to_id(candidate) is not None:
                eos = str(reference.token_to_id(candidate))
                break
        if info.get("eos") != eos:
            problems.append("eos %s, expected %s" % (info.get("eos"), eos))
        vocab = max(reference.get_vocab(with_added_tokens=True).values()) + 1
        if info.get("vocab") != str(vocab):
            problems.append("vocab %s, tokenizers %d" % (info.get("vocab"), vocab))
        tokens = sum(len(x) for x in ids)
        print("%-18s %-22s %4d texts %6d tokens: %s" % (
            name, info.get("kind"), len(all_texts), tokens,
            "identical" if not problems else "%d DIFFERENCES" % len(problems)))
        for problem in problems[:10]:
            print("  " + problem)
        failures += len(problems)
    print("hf-tokenizer check: %s" % ("PASS" if failures == 0 else "FAIL (%d)" % failures))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

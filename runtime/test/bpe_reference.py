#!/usr/bin/env python3
"""Reference GPT-2 byte-level BPE for the runtime's tokenizer tests.

A plain Python rendering of what OpenAI's encoder.py and Hugging Face's GPT2Tokenizer do,
written separately from runtime/src/tokenizers/tokenizer.cpp. It writes fixtures (test inputs with the
ids they must encode to) that runtime/test/tokenizer_test.cpp checks the C++ tokenizer
against.

The pre-tokenizer runs GPT-2's own pattern through the `regex` module when that is
installed (as Hugging Face does), and otherwise an equivalent hand-written matcher over
Python's unicodedata; `selfcheck` compares the two.

Commands:
  synthetic --seed S --cases N --out FILE [--tokenizer DIR --gpt2-cases M]
      Trains a tiny BPE vocabulary on a built-in corpus (byte tokens under ids permuted by
      S, merges partly shuffled out of order), then writes it and N random cases with their
      ids. With --tokenizer (a real GPT-2 vocab.json/merges.txt), also M cases for it.
  cases --tokenizer DIR --seed S --cases N --out FILE
      Only cases, for the tokenizer in DIR.
  selfcheck [--tokenizer DIR]
      Compares the two pre-tokenizers on random text, and with DIR checks known GPT-2 ids.

Fixture lines are tab-separated; bytes are in hex so that nothing needs escaping:
  vocab <token utf-8> <id>        merge <a utf-8> <b utf-8>        (in rank order)
  case <input bytes> <ids>        gpt2case <input bytes> <ids>     (ids space-separated)
  decode <ids> <Hugging Face's decode(ids): the bytes decoded with errors="replace">
  gpt2decode <ids> <the same for the GPT-2 vocabulary>
Inputs that are not UTF-8 are handled as Python would see them after
bytes.decode("utf-8", "surrogateescape"): each undecodable byte one character that is
neither letter, number nor space, mapped back to its own byte.
"""

import argparse
import json
import random
import sys
import unicodedata

try:
    import regex  # the module Hugging Face uses
except ImportError:  # pragma: no cover - depends on the machine
    regex = None

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
END_OF_TEXT = "<|endoftext|>"

# Unicode's White_Space property: \s in the `regex` module (str.isspace() differs on
# U+001C..U+001F).
WHITE_SPACE = frozenset(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680]
    + list(range(0x2000, 0x200B))
    + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}


# --- pre-tokenization -------------------------------------------------------------------

def char_class(ch):
    cp = ord(ch)
    if cp in WHITE_SPACE:
        return "s"
    category = unicodedata.category(ch)
    if category[0] == "L":
        return "L"
    if category[0] == "N":
        return "N"
    return "o"


def pretokenize_by_hand(text):
    """GPT-2's pattern, alternative by alternative, with regex backtracking spelled out."""
    classes = [char_class(ch) for ch in text]
    pieces = []
    i, n = 0, len(text)
    while i < n:
        match = None
        for contraction in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"):
            if text.startswith(contraction, i):
                match = i + len(contraction)
                break
        if match is None:
            for wanted in ("L", "N", "o"):  # ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
                for start in ((i + 1, i) if text[i] == " " else (i,)):
                    if start < n and classes[start] == wanted:
                        end = start
                        while end < n and classes[end] == wanted:
                            end += 1
                        match = end
                        break
                if match is not None:
                    break
        if match is None and classes[i] == "s":
            run_end = i
            while run_end < n and classes[run_end] == "s":
                run_end += 1
            # '\s+(?!\S)': the longest run prefix not followed by a non-space character.
            for end in range(run_end, i, -1):
                if end == n or classes[end] == "s":
                    match = end
                    break
            if match is None:  # '\s+'
                match = run_end
        assert match is not None and match > i, (text, i)
        pieces.append(text[i:match])
        i = match
    return pieces


_COMPILED = regex.compile(GPT2_PATTERN) if regex is not None else None


def pretokenize(text):
    if _COMPILED is not None:
        return _COMPILED.findall(text)
    return pretokenize_by_hand(text)


# --- BPE ----------------------------------------------------------------------------------

class Bpe:
    def __init__(self, encoder, merges):
        self.encoder = encoder
        self.decoder = {v: k for k, v in encoder.items()}
        self.ranks = dict(zip(merges, range(len(merges))))
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda pair: self.ranks.get(pair, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            merged = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        self.cache[token] = word
        return word

    def encode_ordinary(self, text):
        ids = []
        for piece in pretokenize(text):
            mapped = "".join(BYTE_ENCODER[b] for b in piece.encode("utf-8", "surrogateescape"))
            ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids

    def encode(self, text):
        if END_OF_TEXT not in self.encoder:
            return self.encode_ordinary(text)
        ids = []
        parts = text.split(END_OF_TEXT)
        for k, part in enumerate(parts):
            if k:
                ids.append(self.encoder[END_OF_TEXT])
            ids.extend(self.encode_ordinary(part))
        return ids

    def decode(self, ids):
        text = "".join(self.decoder[i] for i in ids)
        return bytearray(BYTE_DECODER[c] for c in text).decode("utf-8", errors="replace")


def load_tokenizer(directory):
    with open(directory + "/vocab.json", encoding="utf-8") as f:
        encoder = json.load(f)
    with open(directory + "/merges.txt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    merges = [tuple(line.split(" ")) for line in lines if line]
    return Bpe(encoder, merges)


# --- a tiny trainer -------------------------------------------------------------------------

CORPUS = """
The quick brown fox jumps over the lazy dog. It's what we've said: they're here, I'm sure
you'll see, he'd know. Don't stop! Numbers: 12345, 3.14159, 2024-06-01, 100% and $42.99.
    Indented code: for (int i = 0; i < 10; ++i) { total += values[i]; }  // comment
Café, naïve, résumé, façade, Straße, Ångström, señor, über, coöperate.
日本語のテキストです。中文文本在这里。한국어 텍스트입니다. Русский текст здесь. Ελληνικά κείμενα.
हिन्दी पाठ यहाँ है। عربى نص هنا ١٢٣. Emoji: 😀😃😄 👍🏽 🎉🎉 ❤️ 👨‍👩‍👧.
the the the the and and and of of to to in in is is was was that that with with
   multiple   spaces   and	tabs	and
newlines

and more newlines\r\nwindows line ends.
"""


def train(corpus, num_merges):
    counts = {}
    for piece in pretokenize(corpus):
        word = tuple(BYTE_ENCODER[b] for b in piece.encode("utf-8"))
        counts[word] = counts.get(word, 0) + 1
    merges = []
    for _ in range(num_merges):
        pairs = {}
        for word, count in counts.items():
            for pair in zip(word, word[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        new_counts = {}
        for word, count in counts.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new_counts[tuple(out)] = new_counts.get(tuple(out), 0) + count
        counts = new_counts
    return merges


def synthetic_tokenizer(seed, swaps):
    rng = random.Random(seed)
    merges = train(CORPUS, 400)
    # Some merges out of order (a part merged before it exists, ranks that undercut the
    # merge that made a part): real files never do this, but Hugging Face handles it.
    for _ in range(swaps):
        a, b = rng.randrange(len(merges)), rng.randrange(len(merges))
        merges[a], merges[b] = merges[b], merges[a]
    byte_tokens = [BYTE_ENCODER[b] for b in range(256)]
    rng.shuffle(byte_tokens)
    encoder = {}
    for token in byte_tokens:
        encoder[token] = len(encoder)
    for a, b in merges:
        encoder.setdefault(a + b, len(encoder))
    encoder[END_OF_TEXT] = len(encoder)
    # A repeated merge (the later rank wins) exercises the loader.
    merges.append(merges[3])
    return encoder, merges


# --- random text --------------------------------------------------------------------------

PIECES = [
    "hello", "Hello", "world", "the", "The", "quick", "fox", "dog", "a", "I", "x", "ABC",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "n't", "''", "'", "'x", "'lls",
    ".", ",", "!", "?", "...", "--", "(", ")", "{", "}", "[]", "\"", "#", "@", "$", "%", "&",
    "*", "+", "=", "<", ">", "/", "\\", "|", "~", "`", "^", "_", ";", ":",
    "0", "1", "42", "2024", "3.14", "1,000", "١٢٣", "½", "²", "Ⅻ", "٣", "๓",
    " ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "\u00a0", "\u3000",
    "\u2009", "\u2028", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u200b", "\ufeff", "\x00",
    "café", "naïve", "e\u0301", "Straße", "Ångström", "señor", "ÉCOLE", "ǅ", "ʰ",
    "日本語", "中文", "テキスト", "한국어", "Русский", "Ελληνικά", "हिन्दी", "عربى", "שלום",
    "😀", "👍🏽", "🎉", "❤️", "👨‍👩‍👧", "🇺🇸", "𝔘𝔫𝔦", "𐍈",
    "<|endoftext|>", "<|endoftext", "endoftext|>", "<|", "|>",
]


def random_code_point(rng):
    while True:
        cp = rng.choice((rng.randrange(0x80), rng.randrange(0x800), rng.randrange(0x10000),
                         rng.randrange(0x110000)))
        # Assigned code points only: unassigned ones may be letters in a newer Unicode.
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co"):
            return chr(cp)


def random_text(rng):
    parts = []
    for _ in range(rng.randrange(1, 14)):
        roll = rng.random()
        if roll < 0.7:
            parts.append(rng.choice(PIECES))
        elif roll < 0.85:
            parts.append(" ")
        else:
            parts.append("".join(random_code_point(rng) for _ in range(rng.randrange(1, 5))))
    return "".join(parts)


def random_bytes(rng):
    """Text with bytes that are not UTF-8 mixed in, as a Python str via surrogateescape."""
    data = bytearray(random_text(rng).encode("utf-8"))
    for _ in range(rng.randrange(1, 4)):
        junk = rng.choice([b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98",
                           b"\xed\xa0\x80", b"\xc0\xaf", b"\xf5\x80\x80\x80",
                           bytes([rng.randrange(0x80, 0x100)])])
        at = rng.randrange(len(data) + 1)
        data[at:at] = junk
    return bytes(data)


def cases(bpe, rng, count, kind, out):
    for k in range(count):
        if k % 5 == 4:
            data = random_bytes(rng)
        else:
            data = random_text(rng).encode("utf-8")
        text = data.decode("utf-8", "surrogateescape")
        ids = bpe.encode(text)
        out.write("%s\t%s\t%s\n" % (kind, data.hex(), " ".join(map(str, ids))))
        if k % 7 == 0 and ids:
            # A slice of the ids, which may cut a character: Hugging Face's lossy decode.
            lo = rng.randrange(len(ids))
            hi = rng.randrange(lo, len(ids)) + 1
            sliced = ids[lo:hi]
            out.write("%s\t%s\t%s\n" % (kind.replace("case", "decode"), " ".join(map(str, sliced)),
                                            bpe.decode(sliced).encode("utf-8").hex()))


def write_synthetic(args):
    encoder, merges = synthetic_tokenizer(args.seed, args.swaps)
    bpe = Bpe(encoder, merges)
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="ascii") as out:
        out.write("# Generated by runtime/test/bpe_reference.py synthetic --seed %d --cases %d "
                  "(pre-tokenizer: %s); do not edit.\n"
                  % (args.seed, args.cases, "regex" if _COMPILED else "unicodedata"))
        for token, token_id in encoder.items():
            out.write("vocab\t%s\t%d\n" % (token.encode("utf-8").hex(), token_id))
        for a, b in merges:
            out.write("merge\t%s\t%s\n" % (a.encode("utf-8").hex(), b.encode("utf-8").hex()))
        cases(bpe, rng, args.cases, "case", out)
        if args.tokenizer:
            cases(load_tokenizer(args.tokenizer), rng, args.gpt2_cases, "gpt2case", out)


def write_cases(args):
    bpe = load_tokenizer(args.tokenizer)
    with open(args.out, "w", encoding="ascii") as out:
        cases(bpe, random.Random(args.seed), args.cases, "case", out)


def selfcheck(args):
    rng = random.Random(args.seed)
    checked = 0
    if _COMPILED is None:
        print("selfcheck: the regex module is not installed; nothing to compare against")
    else:
        for _ in range(args.cases):
            text = random_bytes(rng).decode("utf-8", "surrogateescape") if rng.random() < 0.2 \
                else random_text(rng)
            expected = _COMPILED.findall(text)
            actual = pretokenize_by_hand(text)
            if expected != actual:
                print("MISMATCH %r: regex %r, by hand %r" % (text, expected, actual))
                return 1
            checked += 1
    if args.tokenizer:
        bpe = load_tokenizer(args.tokenizer)
        for text, ids in [("Hello world", [15496, 995]), ("<|endoftext|>", [50256])]:
            if bpe.encode(text) != ids:
                print("GPT-2 %r: got %r, want %r" % (text, bpe.encode(text), ids))
                return 1
    print("selfcheck: %d texts agree" % checked)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("synthetic", "cases", "selfcheck"):
        p = sub.add_parser(name)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--cases", type=int, default=300)
        p.add_argument("--tokenizer", required=(name == "cases"))
        if name != "selfcheck":
            p.add_argument("--out", required=True)
        if name == "synthetic":
            p.add_argument("--gpt2-cases", type=int, default=200)
            p.add_argument("--swaps", type=int, default=20,
                           help="merges swapped out of rank order")
    args = parser.parse_args()
    if args.command == "synthetic":
        write_synthetic(args)
    elif args.command == "cases":
        write_cases(args)
    else:
        return selfcheck(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

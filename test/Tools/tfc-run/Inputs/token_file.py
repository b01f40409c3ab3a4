"""An independent reader of the token files `tfc-run tokenize` writes.

  token_file.py tokenizer FIXTURE DIR
      Writes DIR/vocab.json and DIR/merges.txt from the runtime's committed BPE fixture
      (runtime/test/data/bpe_fixture.txt).
  token_file.py check TRAIN [--val VAL --fraction F] --tokenizer bytes|DIR FILE...
      Reads TRAIN (and VAL) as llm.c .bin files (NumPy: header, then the ids), and checks
      that they hold the FILEs encoded as expected: their bytes (bytes), or the ids of
      runtime/test/bpe_reference.py with <|endoftext|> between files (DIR); VAL holds the
      tail after int(n * (1 - F)) tokens. Prints one OK line or exits non-zero.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "runtime", "test"))
import bpe_reference  # noqa: E402

MAGIC = 20240520


def read_bin(path):
    header = np.fromfile(path, dtype="<i4", count=256)
    assert header[0] == MAGIC, "%s: magic %d" % (path, header[0])
    assert header[1] in (1, 2), "%s: version %d" % (path, header[1])
    assert not header[3:].any(), "%s: header words 3.. are not zero" % path
    dtype = "<u2" if header[1] == 1 else "<u4"
    tokens = np.fromfile(path, dtype=dtype, offset=256 * 4)
    assert len(tokens) == header[2], "%s: header says %d tokens, file holds %d" % (
        path, header[2], len(tokens))
    return tokens.astype(np.int64)


def write_tokenizer(args):
    vocab, merges = {}, []
    with open(args.fixture, encoding="ascii") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "vocab":
                vocab[bytes.fromhex(fields[1]).decode("utf-8")] = int(fields[2])
            elif fields[0] == "merge":
                merges.append(" ".join(bytes.fromhex(h).decode("utf-8") for h in fields[1:3]))
    os.makedirs(args.dir, exist_ok=True)
    with open(os.path.join(args.dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(args.dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    return 0


def check(args):
    if args.tokenizer == "bytes":
        expected = []
        for name in args.files:
            expected.extend(open(name, "rb").read())
    else:
        bpe = bpe_reference.load_tokenizer(args.tokenizer)
        eos = bpe.encoder.get(bpe_reference.END_OF_TEXT)
        expected = []
        for k, name in enumerate(args.files):
            if k and eos is not None:
                expected.append(eos)
            expected.extend(bpe.encode(open(name, encoding="utf-8").read()))
    train = read_bin(args.train)
    tokens = train
    if args.val:
        val = read_bin(args.val)
        n = len(expected)
        if len(train) != int(n * (1 - args.fraction)):
            print("FAIL: %d training tokens of %d, want int(n * (1 - %g)) = %d"
                  % (len(train), n, args.fraction, int(n * (1 - args.fraction))))
            return 1
        tokens = np.concatenate([train, val])
    if tokens.tolist() != expected:
        diff = next((i for i, (a, b) in enumerate(zip(tokens.tolist(), expected)) if a != b),
                    min(len(tokens), len(expected)))
        print("FAIL: %d tokens, want %d; first difference at %d" % (len(tokens), len(expected), diff))
        return 1
    print("OK: %d tokens%s" % (len(tokens), " (train %d, val %d)" % (len(train), len(val))
                               if args.val else ""))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("tokenizer")
    p.add_argument("fixture")
    p.add_argument("dir")
    p = sub.add_parser("check")
    p.add_argument("train")
    p.add_argument("--val")
    p.add_argument("--fraction", type=float, default=0.0)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    return write_tokenizer(args) if args.command == "tokenizer" else check(args)


if __name__ == "__main__":
    sys.exit(main())

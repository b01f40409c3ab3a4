#!/usr/bin/env python3
"""Decodes an 8-bit RGB PNG with Python's zlib alone, as a reader independent of libpng.

Usage: decode_png.py IN.png OUT.ppm   (or import it: decode(path))

Checks the signature, every chunk's CRC and the zlib stream (with its Adler-32), undoes the
five row filters of the PNG specification, writes the pixels as a binary PPM (P6) and prints
"size W H" and one "text KEY=VALUE" line per tEXt chunk. Exits non-zero on anything else.
"""
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode(path):
    """(width, height, RGB bytes row by row, [(key, value) of each tEXt chunk])."""
    blob = open(path, "rb").read()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "bad signature"
    i, idat, header, texts, ended = 8, b"", None, [], False
    while i < len(blob):
        (n,) = struct.unpack(">I", blob[i:i + 4])
        kind, body = blob[i + 4:i + 8], blob[i + 8:i + 8 + n]
        (crc,) = struct.unpack(">I", blob[i + 8 + n:i + 12 + n])
        assert crc == zlib.crc32(kind + body), f"bad CRC in {kind}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"tEXt":
            key, value = body.split(b"\0", 1)
            texts.append((key.decode("latin-1"), value.decode("latin-1")))
        elif kind == b"IEND":
            ended = True
        i += 12 + n
    assert header is not None and ended, "no IHDR or IEND"
    width, height, depth, color, _, _, interlace = header
    assert (depth, color, interlace) == (8, 2, 0), f"not 8-bit RGB, non-interlaced: {header}"
    raw = zlib.decompress(idat)
    stride = 3 * width
    assert len(raw) == height * (1 + stride), "wrong data size"
    out, previous = bytearray(), bytearray(stride)
    for r in range(height):
        kind = raw[r * (1 + stride)]
        row = bytearray(raw[r * (1 + stride) + 1:(r + 1) * (1 + stride)])
        assert kind <= 4, f"bad filter {kind} in row {r}"
        for x in range(stride if kind else 0):
            left = row[x - 3] if x >= 3 else 0
            up = previous[x]
            corner = previous[x - 3] if x >= 3 else 0
            if kind == 1:
                row[x] = (row[x] + left) & 0xFF
            elif kind == 2:
                row[x] = (row[x] + up) & 0xFF
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 0xFF
            else:
                row[x] = (row[x] + paeth(left, up, corner)) & 0xFF
        out += row
        previous = row
    return width, height, bytes(out), texts


def main():
    width, height, out, texts = decode(sys.argv[1])
    with open(sys.argv[2], "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (width, height) + out)
    print("size", width, height)
    for key, value in texts:
        print(f"text {key}={value}")


if __name__ == "__main__":
    main()

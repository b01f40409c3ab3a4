#!/usr/bin/env python3
"""Cross-checks the runtime's .npy reader and writer against NumPy.

For every dtype the runtime supports (and a few shapes, including a scalar and an empty
array), NumPy writes a file with fresh random data; the runtime must read it (same dtype,
shape and bytes, by checksum) and write a copy that NumPy loads back equal. Files NumPy
writes in formats 2.0 and 3.0 must load too, and Fortran-order, big-endian and complex
arrays must be refused with a message naming the file.

Usage: npy_numpy_check.py PATH/TO/tfc-runtime-npy-tool
Prints one line per failure and ends with a single verdict line.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {
    "F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32,
    "I64": np.int64, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "U32": np.uint32,
    "BOOL": np.bool_, "I16": np.int16, "U64": np.uint64,
}
SHAPES = [(), (0,), (7,), (3, 5), (2, 1, 4)]


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def random_array(rng, dtype, shape):
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    if raw.size and not raw.any():
        raw[0] = 1
    return raw.view(dtype).reshape(shape)


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    failures = []
    checks = 0
    with tempfile.TemporaryDirectory(prefix="tfc-npy-check-") as tmp:
        for name, dtype in DTYPES.items():
            for shape in SHAPES:
                checks += 1
                label = f"{name} {shape}"
                array = random_array(rng, dtype, shape)
                src = os.path.join(tmp, f"numpy_{name}_{len(shape)}.npy")
                np.save(src, array)
                info = run(tool, "info", src)
                expected = (f"{name} {','.join(map(str, shape)) or 'scalar'} {array.nbytes} "
                            f"{fnv1a64(array.tobytes()):016x}")
                if info.returncode != 0 or info.stdout.strip() != expected:
                    failures.append(f"{label}: runtime read {info.stdout.strip()!r}"
                                    f" {info.stderr.strip()!r}, expected {expected!r}")
                    continue
                out = os.path.join(tmp, f"tfc_{name}_{len(shape)}.npy")
                copy = run(tool, "copy", src, out)
                if copy.returncode != 0:
                    failures.append(f"{label}: runtime copy failed: {copy.stderr.strip()}")
                    continue
                back = np.load(out, allow_pickle=False)
                if back.dtype != array.dtype or back.shape != array.shape or \
                        back.tobytes() != array.tobytes():
                    failures.append(f"{label}: NumPy read back {back.dtype} {back.shape}")
                with open(out, "rb") as f:
                    head = f.read(10)
                header_len = int.from_bytes(head[8:10], "little")
                if head[6:8] != b"\x01\x00" or (10 + header_len) % 64 != 0:
                    failures.append(f"{label}: runtime wrote version {head[6]}.{head[7]}, "
                                    f"header length {header_len}")

        # Other format versions NumPy can write.
        for version in [(2, 0), (3, 0)]:
            checks += 1
            array = random_array(rng, np.float32, (4, 3))
            path = os.path.join(tmp, f"v{version[0]}.npy")
            with open(path, "wb") as f:
                np.lib.format.write_array(f, array, version=version)
            info = run(tool, "info", path)
            if info.returncode != 0 or f"{fnv1a64(array.tobytes()):016x}" not in info.stdout:
                failures.append(f"format {version}: {info.stdout.strip()} {info.stderr.strip()}")

        # Arrays the runtime must refuse, naming the file and the reason.
        refused = {
            "fortran": (np.asfortranarray(random_array(rng, np.float32, (3, 4))), "fortran_order"),
            "bigendian": (random_array(rng, np.float32, (5,)).astype(">f4"), "big-endian"),
            "complex": (random_array(rng, np.float32, (4,)).view(np.complex64), "unsupported dtype"),
        }
        for label, (array, keyword) in refused.items():
            checks += 1
            path = os.path.join(tmp, f"refused_{label}.npy")
            np.save(path, array)
            info = run(tool, "info", path)
            if info.returncode != 1 or keyword not in info.stderr or path not in info.stderr:
                failures.append(f"{label}: expected refusal with {keyword!r}, got rc="
                                f"{info.returncode} {info.stdout.strip()!r} {info.stderr.strip()!r}")

    for failure in failures:
        print("FAIL:", failure)
    verdict = "PASS" if not failures else "FAIL"
    print(f"npy NumPy cross-check: {verdict} ({checks - len(failures)}/{checks} checks, "
          f"numpy {np.__version__}, seed {seed})")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())

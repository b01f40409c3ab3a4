"""The peers' one reader of tfc's weights: an F32 .safetensors file as NumPy arrays."""
import json
import struct

import numpy as np


def load_safetensors(path, who="bench"):
    """{name: read-only float32 array} of every tensor in |path|; exits naming the file and
    the tensor if one is not F32 (the peers compare tfc's f32 runs)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{who}: {path}: tensor {name} is {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])
    return out

"""tfc: run models compiled by tfc (model.so) from Python, with NumPy arrays.

    import numpy as np, tfc
    model = tfc.Artifact("gpt2.so")
    params = tfc.Params(model)
    params.load("gpt2.safetensors")          # or params.init(seed=0)
    ctx = tfc.Context(params)
    logits = ctx.call("forward", tokens=np.zeros((2, 16), np.int32))["logits"]

See python/README.md for the whole API and the rules for inputs.
"""
from tfc._tfc import ABI_VERSION, Artifact, Context, Entry, Params, TensorSpec, Tokenizer

__all__ = ["ABI_VERSION", "Artifact", "Context", "Entry", "Params", "TensorSpec", "Tokenizer"]
__version__ = "0.1.0"

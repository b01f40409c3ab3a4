#!/usr/bin/env python3
"""llama.cpp peer for tfc's GPT-2 benchmarks (bench/run_bench.py --llamacpp).

llama.cpp through the llama-cpp-python package, built from its sources on this machine
(bench/setup_peer.sh: `pip install --no-binary llama-cpp-python`, so GGML is compiled for
this CPU), on the same weights as tfc: `gguf` writes tfc's GPT-2 .safetensors as an F32
GGUF file with the `gguf` package, in the layout llama.cpp's own convert_hf_to_gguf.py
gives GPT-2 (Conv1D weights transposed to [out, in], the tied LM head written out as
`output.weight`). The token ids are fed directly, so the vocabulary in the file is a
placeholder of the right size ("<t0>", "<t1>", ...) that nothing tokenizes. Prints one JSON
line per measurement.

  peer_llamacpp.py gguf   --weights W.safetensors --n-head 12 --out model.gguf
  peer_llamacpp.py decode --gguf model.gguf --prompt 128 --new 64 --threads 2
  peer_llamacpp.py logits --gguf model.gguf --tokens T.npy --out L.npy   (the check: the
                          logits of every position of row 0 of T)

decode: the prompt's tokens in one batch (prefill, n_batch = the prompt's length), then
greedy decoding one token at a time, as tfc-run generate does; llama.cpp's defaults
otherwise (its KV cache in F16, which it keeps for F32 models too: noted next to its figures).
"""
import argparse
import json
import time

import numpy as np

from f32_weights import load_safetensors  # bench/, next to this script


def read_vocab(folder):
    """A GPT-2 BPE tokenizer folder (vocab.json, merges.txt): (tokens by id, merges)."""
    with open(f"{folder}/vocab.json", encoding="utf-8") as f:
        ids = json.load(f)
    tokens = [None] * len(ids)
    for token, i in ids.items():
        tokens[i] = token
    with open(f"{folder}/merges.txt", encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    return tokens, merges


def write_gguf(weights, n_head, out, vocab_folder=None, bf16=False):
    """GPT-2 as GGUF: F32, or with bf16 its matrices in BF16 (norms and biases F32, as
    llama.cpp's converter writes --outtype bf16)."""
    import gguf
    w = load_safetensors(weights, "peer_llamacpp")
    vocab, C = w["wte.weight"].shape
    n_ctx = w["wpe.weight"].shape[0]
    n_layer = sum(1 for k in w if k.endswith(".ln_1.weight"))
    g = gguf.GGUFWriter(out, "gpt2")
    g.add_name("tfc gpt2")
    g.add_context_length(n_ctx)
    g.add_embedding_length(C)
    g.add_feed_forward_length(w["h.0.mlp.c_fc.weight"].shape[1])
    g.add_block_count(n_layer)
    g.add_head_count(n_head)
    g.add_layer_norm_eps(1e-5)
    g.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if bf16 else gguf.LlamaFileType.ALL_F32)
    g.add_tokenizer_model("gpt2")
    g.add_tokenizer_pre("gpt-2")
    if vocab_folder:  # a real BPE vocabulary (serve_bench.py's: every token has text)
        tokens, merges = read_vocab(vocab_folder)
        assert len(tokens) == vocab, f"{vocab_folder} has {len(tokens)} tokens, the model {vocab}"
        g.add_token_list(tokens)
        g.add_token_types([gguf.TokenType.NORMAL] * (vocab - 1) + [gguf.TokenType.CONTROL])
        g.add_token_merges(merges)
    else:
        g.add_token_list([f"<t{i}>" for i in range(vocab)])
        g.add_token_types([gguf.TokenType.NORMAL] * vocab)
        g.add_token_merges(["<t0> <t1>"])  # llama.cpp requires the key; an empty list is not written
    g.add_bos_token_id(vocab - 1)
    g.add_eos_token_id(vocab - 1)
    def add(name, array):
        if bf16 and array.ndim == 2:
            qtype = gguf.GGMLQuantizationType.BF16
            g.add_tensor(name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
        else:
            g.add_tensor(name, array)

    conv1d = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
              ".mlp.c_proj.weight")
    names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
             "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    for k, v in w.items():
        if k.startswith("h."):
            _, i, rest = k.split(".", 2)
            module, kind = rest.rsplit(".", 1)
            name = f"blk.{i}.{names[module]}.{kind}"
        else:
            name = {"wte.weight": "token_embd.weight", "wpe.weight": "position_embd.weight",
                    "ln_f.weight": "output_norm.weight", "ln_f.bias": "output_norm.bias"}[k]
        add(name, np.ascontiguousarray(v.T if k.endswith(conv1d) else v))
    add("output.weight", np.ascontiguousarray(w["wte.weight"]))
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    return {"gguf": out, "layers": n_layer, "width": C, "vocab": vocab}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["gguf", "decode", "logits"])
    ap.add_argument("--weights", help="gguf: tfc's GPT-2 weights (.safetensors, F32)")
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--bf16", action="store_true", help="gguf: matrices in BF16 (else F32)")
    ap.add_argument("--vocab", help="gguf: a GPT-2 BPE folder for the vocabulary (default: "
                                    "placeholders <tN>)")
    ap.add_argument("--out", help="gguf: the GGUF file to write; logits: the .npy to write")
    ap.add_argument("--gguf", help="decode, logits: the GGUF file")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", help="logits: int32 token ids [B, T] (.npy); row 0 is used")
    a = ap.parse_args()
    if a.what == "gguf":
        print(json.dumps(write_gguf(a.weights, a.n_head, a.out, a.vocab, a.bf16)))
        return

    import llama_cpp
    rows = np.load(a.tokens)[0].tolist() if a.what == "logits" else None
    n_batch = len(rows) if rows else a.prompt
    # n_ctx=0: the model's own context length, as tfc's KV cache has.
    llm = llama_cpp.Llama(model_path=a.gguf, n_ctx=0, n_batch=n_batch, n_ubatch=n_batch,
                          n_threads=a.threads, n_threads_batch=a.threads,
                          logits_all=a.what == "logits", verbose=False)
    result = {"peer": f"llama.cpp (llama-cpp-python {llama_cpp.__version__})",
              "threads": a.threads}
    if a.what == "logits":
        llm.eval(rows)
        np.save(a.out, np.asarray(llm.scores[:len(rows)], dtype=np.float32))
        result.update(logits=a.out)
    else:
        vocab = llm.n_vocab()
        # The last token's logits as llama_get_logits gives them (eval copies none
        # without logits_all).
        last = lambda: np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(vocab,))
        prompt = np.random.default_rng(0).integers(0, vocab - 1, a.prompt).tolist()
        llm.eval(prompt[:8])  # warm-up: the threads and the first allocations
        llm.reset()
        t = time.perf_counter()
        llm.eval(prompt)
        prefill = time.perf_counter() - t
        tok = int(np.argmax(last()))
        t = time.perf_counter()
        for _ in range(a.new):
            llm.eval([tok])
            tok = int(np.argmax(last()))
        decode = time.perf_counter() - t
        result.update(prefill_tok_s=a.prompt / prefill, decode_tok_s=a.new / decode)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Mutation fuzzer for `tfc-trace --hf`: no config.json may crash or hang it.

Seeds: the configs of test/Frontend/Inputs/hf and one config of each supported
architecture written here with the fields real checkpoints have. Each mutant
is a seed with 1-3 seeded mutations: a field deleted, or set to another JSON
type, null, a negative, zero, huge (2**63, 10**30, a 400-digit integer, 1e308),
fractional or non-finite-looking number, a number as a string ("500000"), a
long string, an empty or nested object; rope settings replaced, emptied or
retyped (`{}`, `{"type": null}`, `{"rope_type": 123}`); a value nested 60 to
70 or 50,000 levels deep (the limit is 64); the text truncated or a byte
flipped. Every 25th mutant is not a file but a FIFO or a folder named
config.json (which must be refused at once, not wait for a writer). Each runs
as

  tfc-trace --hf MUTANT.json -o /dev/null

with a time limit, and must exit 0, or 1 with one `tfc-trace: error:` line:
never a signal, an abort, a hang or a silent failure. A mutant whose one
mutation puts a non-number (a string, null, a list, an object, a boolean) in a
number field the importer reads must be refused: the docs promise a field of
the wrong JSON type is never traced as its default.

Reproducible: the seed is printed first and in every failure; mutant i depends
only on (seed, i).

  hf_config_mutate.py --bin-dir build/bin --work-dir DIR [--seed S] [--mutants N]

The last line is `N mutants, F failures`; exit status 1 on any failure.
"""
import argparse
import copy
import glob
import json
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "..", "Frontend", "Inputs", "hf")

SEEDS = [
    {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 2, "n_head": 4,
     "n_embd": 32, "n_positions": 64, "n_inner": None, "vocab_size": 100,
     "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "resid_pdrop": 0.1},
    {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
     "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
     "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 64,
     "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "attention_bias": False,
     "mlp_bias": False, "head_dim": 8,
     "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
     "rope_theta": 500000.0},
    {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 32,
     "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4,
     "num_key_value_heads": 1, "vocab_size": 100, "max_position_embeddings": 64,
     "sliding_window": 4096, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}},
    {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 32,
     "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4,
     "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 64,
     "use_sliding_window": False, "sliding_window": None,
     "rope_parameters": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}},
]

ODD_VALUES = [None, True, False, 0, -1, 1, 3, 2**31, 2**31 - 1, 2**63 - 1, -2**63, 2**63,
              10**30, 10**400, 1e308, -1e308, 0.5, 1e-320, "", "x" * 300, "500000", "1e-6",
              "silu", "gelu", "llama3", "yarn", [], [1, 2], {}, {"type": None},
              {"rope_type": 123}, {"rope_type": "llama3"}, {"type": "linear", "factor": "2"},
              {"rope_type": "linear", "factor": None}]

# The number fields the importer reads, by architecture: a non-number in one
# of them must be refused (the oracle of `must_refuse`).
NUMBER_FIELDS = {
    "GPT2LMHeadModel": {"n_layer", "n_head", "n_embd", "vocab_size", "n_positions",
                        "layer_norm_epsilon", "resid_pdrop"},
    "LlamaForCausalLM": {"hidden_size", "intermediate_size", "num_hidden_layers",
                         "num_attention_heads", "vocab_size", "rms_norm_eps", "rope_theta",
                         "max_position_embeddings"},
}
for _arch in ("MistralForCausalLM", "Qwen2ForCausalLM", "MixtralForCausalLM"):
    NUMBER_FIELDS[_arch] = NUMBER_FIELDS["LlamaForCausalLM"]
NUMBER_FIELDS["MixtralForCausalLM"] = NUMBER_FIELDS["LlamaForCausalLM"] | {
    "num_local_experts", "num_experts_per_tok", "router_aux_loss_coef"}


def deep_text(config, rng):
    """`config` as text with one field (new or existing) replaced by a deep value."""
    depth = rng.choice([rng.randint(60, 70), 50000])
    if rng.random() < 0.5:
        value = "[" * depth + "]" * depth
    else:
        value = '{"a":' * depth + "1" + "}" * depth
    key = rng.choice(sorted(config) + ["deep"]) if config else "deep"
    rest = {k: v for k, v in config.items() if k != key}
    head = json.dumps(rest)
    return head[:-1] + (", " if rest else "") + json.dumps(key) + ": " + value + "}"


def load_seeds():
    seeds = [json.dumps(s, indent=1) for s in SEEDS]
    for path in sorted(glob.glob(os.path.join(INPUTS, "**", "*.json"), recursive=True)):
        with open(path, encoding="utf-8", errors="replace") as f:
            seeds.append(f.read())
    return seeds


def odd(rng):
    """A fresh copy of one of ODD_VALUES: a shared dict or list put into a config and then
    mutated in place would change the pool, or hold itself (seed 131711372: json.dumps
    raised "Circular reference detected")."""
    return copy.deepcopy(rng.choice(ODD_VALUES))


def must_refuse(config, key):
    """Whether a config whose only change is `key` must be refused: a number field the
    importer reads now holds something else."""
    arch = config.get("architectures")
    if not isinstance(arch, list) or len(arch) != 1 or not isinstance(arch[0], str):
        return False
    value = config.get(key)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return key in NUMBER_FIELDS.get(arch[0], ()) and key in config and not number


def mutate(text, rng):
    """A mutant of `text`, and whether it must be refused (see must_refuse)."""
    try:
        config = json.loads(text)
    except ValueError:
        config = None
    count = rng.randint(1, 3)
    refuse = False
    for _ in range(count):
        kind = rng.random()
        if isinstance(config, dict) and config and kind < 0.05:
            return deep_text(config, rng), False
        if isinstance(config, dict) and config and kind < 0.8:
            key = rng.choice(sorted(config))
            if kind < 0.15:
                del config[key]
            elif kind < 0.3 and isinstance(config[key], dict) and config[key]:
                sub = rng.choice(sorted(config[key]))
                config[key][sub] = odd(rng)
            elif kind < 0.4 and isinstance(config[key], int):
                config[key] = rng.choice([2**31 - 1, 2**31, 10**6, 0, -5])  # a size at its limits
            elif kind < 0.5 and isinstance(config[key], (int, float)):
                config[key] = str(config[key])  # a number as a string: "500000"
            else:
                config[key] = odd(rng)
            refuse = count == 1 and must_refuse(config, key)
        else:
            text = json.dumps(config) if config is not None else text
            config = None
            if text and rng.random() < 0.5:
                text = text[:rng.randrange(len(text))]
            elif text:
                i = rng.randrange(len(text))
                text = text[:i] + chr(rng.randrange(1, 256)) + text[i + 1:]
    return (json.dumps(config) if config is not None else text), refuse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("TFC_FUZZ_SEED", random.randrange(2**31))))
    ap.add_argument("--mutants", type=int, default=int(os.environ.get("TFC_FUZZ_MUTANTS", 300)))
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    print(f"hf_config_mutate: seed {args.seed}", flush=True)
    trace = os.path.join(args.bin_dir, "tfc-trace")
    os.makedirs(args.work_dir, exist_ok=True)
    seeds = load_seeds()
    failures = 0
    for i in range(args.mutants):
        rng = random.Random(f"{args.seed}/{i}")
        text, refuse = mutate(rng.choice(seeds), rng)
        path = os.path.join(args.work_dir, f"mutant-{i}.json")
        special = None
        if i % 25 == 24:
            # Not a regular file: a FIFO (open() would wait for a writer for ever) or a
            # folder, each given as the file and as a model folder's config.json.
            special = rng.choice(["fifo", "dir"])
            path = os.path.join(args.work_dir, f"mutant-{i}-{special}")
            if rng.random() < 0.5:
                os.makedirs(path, exist_ok=True)
                target = os.path.join(path, "config.json")
            else:
                target = path
            if special == "fifo":
                os.mkfifo(target)
            else:
                os.makedirs(target, exist_ok=True)
            refuse = True
        else:
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        try:
            r = subprocess.run([trace, "--hf", path, "-o", os.devnull], capture_output=True,
                               text=True, errors="replace", timeout=args.timeout)
            problem = None
            if r.returncode not in (0, 1):
                problem = f"exit status {r.returncode}"
            elif r.returncode == 1 and "tfc-trace: error: " not in r.stderr:
                problem = "exit 1 without an error message"
            elif refuse and r.returncode == 0:
                problem = "exit 0: a field of the wrong type or a special file was accepted"
        except subprocess.TimeoutExpired:
            problem = f"ran past {args.timeout:.0f} s"
        if problem:
            failures += 1
            print(f"FAIL mutant {i} (seed {args.seed}): {problem}: {path}\n"
                  f"  {r.stderr.strip()[:500] if problem[0] == 'e' else ''}", flush=True)
        elif special:
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        else:
            os.remove(path)
    print(f"{args.mutants} mutants, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

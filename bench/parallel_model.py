#!/usr/bin/env python3
"""Expected step time and scaling efficiency of data and tensor parallel training, on paper.

From tfc's own counts (`tfc --report`: the train_step's FLOPs, and the bytes its gradient
all-reduces move, link_bytes) of gpt2-124m and of a 7B LLaMA (LLaMA-1 7B's shape), this
prints the expected time of one training step per GPU, split into compute and communication,
and the scaling efficiency (the one-GPU step's compute time over the N-GPU step's time, at
the same per-GPU batch) for

  - DP (data parallel): one ring all-reduce of the gradients per step, each GPU sending and
    receiving 2 (n-1)/n x the gradient bytes;
  - ZeRO-1: a reduce-scatter of the gradients and an all-gather of the parameters, each
    (n-1)/n x the bytes: the same bytes as DP's all-reduce, so the same time in this model
    (its gain is memory: the optimizer state divided by n);
  - TP=8 (Megatron-LM tensor parallel within a node): the step's FLOPs divided by 8 and,
    per layer, two all-reduces of the activations (B x T x C values) in the forward and two
    in the backward, each 2 (t-1)/t x their bytes, on the critical path; on 64 GPUs the 8
    nodes add DP across them over the gradients of their 1/8 of the model;
  - PP=8 (tfc --pp, 1F1B within a node, M = 4 x 8 micro-batches of the per-GPU batch): each
    GPU does 1/8 of the model's FLOPs for M micro-batches, the step lasting (M + S - 1) / M
    of that (the bubble, (S-1)/(M+S-1)), plus each micro-batch's activations sent forward
    and their gradients back (B x T x C values each way, point to point, exposed); on 64 GPUs
    DP across the nodes over each stage's 1/8 of the gradients;
  - TP=8 x PP=8 on 64 GPUs (tfc --tp=8 --pp=8: TP within a node, one stage a node, M = 4 x 8
    micro-batches): 1/64 of the model per GPU, TP's all-reduces over NVLink, the stages'
    activations over InfiniBand, the bubble as for PP;

on 8 GPUs of one node (NVLink) and on 64 GPUs (8 nodes, InfiniBand), next to Megatron-LM's
published figures. Every hardware number is a parameter (defaults: H100/H200 SXM). The model
state each GPU holds is counted as mixed-precision Adam's 16 bytes per parameter (bf16
weights and gradients, f32 master weights and two moments): DP holds it all, ZeRO-1 divides
the 12 optimizer bytes by n, TP and PP divide all of it by their degree.

The model is deliberately simple: a collective takes bytes / (link bandwidth x efficiency);
across nodes the per-GPU network link is the bottleneck of the ring (hierarchical NCCL
rings reach about the NIC's bandwidth per GPU); compute takes FLOPs / (peak x MFU);
`--overlap` is the fraction of the DP/ZeRO communication hidden behind the backward (0: tfc
today, whose collectives are blocking calls after each gradient; 1: perfect bucketed
overlap). TP's all-reduces are never overlapped. Latency terms are left out (the
collectives here move hundreds of MB).

The counts come from tfc itself: the script traces the two models with tfc-trace, compiles
train_step with `tfc --optimizer=adamw --dp=2 --report` (--emit=mlir: no code generation,
seconds even for 7B) and reads the report: FLOPs of one sequence (batch 1), and the gradient
elements = link_bytes / 4 - 1 (at --dp=2 a ring all-reduce sends 2 (2-1)/2 = 1 x its f32
bytes; the extra element is the loss's mean). The FLOPs per token are checked against the
analytic 6 N + 6 L T C per token (Kaplan et al. 2020's 6 N for the matmuls; causal
attention's products over half the T x T scores), which must agree within 10% (they agree
within 2%: the embedding lookups are not matmuls, the element-wise ops add a little). Pure Python, no dependencies:

  python3 bench/parallel_model.py --bin-dir build/bin
  python3 bench/parallel_model.py --bin-dir build/bin --nvlink-gbs 450 --ib-gbits 400 \\
      --peak-tflops 989 --mfu 0.4 --bytes-per-value 2 --overlap 0
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# The models (tfc-trace presets or --set lists) and their training batches per GPU.
MODELS = {
    "gpt2-124m": {
        "trace": ["gpt2", "--set", "preset=gpt2-124m"],
        "seq": 1024,
        "micro_batch": 16,  # llm.c's per-GPU batch of GPT-2 124M is 64 x 1024; 16 fits any GPU
        "layers": 12, "width": 768,
    },
    "llama-7b": {
        # LLaMA-1 7B (Touvron et al. 2023): 32 layers, width 4096, 32 heads, SwiGLU 11008,
        # vocabulary 32000, context 2048.
        "trace": ["llama", "--set", "n_layer=32", "--set", "dim=4096", "--set", "n_head=32",
                  "--set", "n_kv_head=32", "--set", "hidden_dim=11008", "--set",
                  "vocab_size=32000", "--set", "n_ctx=2048", "--set", "prefill_len=16"],
        "seq": 2048,
        "micro_batch": 4,
        "layers": 32, "width": 4096,
    },
}

# Published figures (the only ones quoted; both are from the papers' abstracts).
MEGATRON = [
    ("Shoeybi et al. 2019, 'Megatron-LM: Training Multi-Billion Parameter Language Models "
     "Using Model Parallelism' (arXiv:1909.08053)",
     "8.3B GPT-2, 512 V100 GPUs (8-way tensor x 64-way data parallel): 15.1 PFLOP/s, "
     "76% scaling efficiency against a single-GPU baseline of 39 TFLOP/s (30% of peak)"),
    ("Narayanan et al. 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters "
     "Using Megatron-LM' (SC21, arXiv:2104.04473)",
     "1T GPT, 3072 A100 GPUs (tensor x pipeline x data parallel): 502 PFLOP/s, 52% of "
     "theoretical peak per GPU"),
]


def report_counts(bin_dir, name, spec, work):
    """FLOPs of train_step for one sequence, and the number of gradient elements, from tfc."""
    mlir = os.path.join(work, f"{name}.mlir")
    report = os.path.join(work, f"{name}.json")
    subprocess.run([os.path.join(bin_dir, "tfc-trace"), *spec["trace"], "--set", "batch=1",
                    "--set", f"seq={spec['seq']}", "-o", mlir], check=True)
    subprocess.run([os.path.join(bin_dir, "tfc"), mlir, "--optimizer=adamw", "--dp=2",
                    f"--report={report}", "--emit=mlir", "-o", os.devnull], check=True)
    with open(report) as f:
        step = json.load(f)["entries"]["train_step"]
    # --dp=2: the ring all-reduce sends 2 (n-1)/n = 1 x the f32 bytes of each collective: the
    # gradients and the loss (one element).
    grads = step["link_bytes"] // 4 - 1
    return step["flops"], grads


def ring_all_reduce(bytes_, n):
    return 2.0 * (n - 1) / n * bytes_ if n > 1 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", default="build/bin", help="tfc and tfc-trace")
    parser.add_argument("--peak-tflops", type=float, default=989.0,
                        help="the GPU's dense peak (default 989: H100/H200 SXM bf16)")
    parser.add_argument("--mfu", type=float, default=0.40,
                        help="the fraction of peak the kernels reach (default 0.40)")
    parser.add_argument("--nvlink-gbs", type=float, default=450.0,
                        help="NVLink bandwidth per GPU per direction, GB/s (default 450: "
                             "NVLink4 on H100/H200 SXM, 900 GB/s both ways)")
    parser.add_argument("--ib-gbits", type=float, default=400.0,
                        help="network bandwidth per GPU per direction, Gb/s (default 400: "
                             "one NDR InfiniBand NIC per GPU)")
    parser.add_argument("--link-efficiency", type=float, default=0.80,
                        help="the fraction of link bandwidth a collective reaches (default "
                             "0.80, about NCCL's bus bandwidth on large messages)")
    parser.add_argument("--bytes-per-value", type=float, default=2.0,
                        help="bytes of a gradient or activation on the wire (default 2: bf16 "
                             "mixed precision, as Megatron-LM; tfc's f32 training today: 4)")
    parser.add_argument("--overlap", type=float, default=0.0,
                        help="fraction of the DP/ZeRO communication hidden behind the backward "
                             "(default 0: tfc today)")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    args = parser.parse_args()

    peak = args.peak_tflops * 1e12 * args.mfu
    nvlink = args.nvlink_gbs * 1e9 * args.link_efficiency
    ib = args.ib_gbits / 8 * 1e9 * args.link_efficiency
    print(f"GPU: {args.peak_tflops:g} TFLOP/s peak x MFU {args.mfu:g} = {peak / 1e12:.0f} "
          f"TFLOP/s; NVLink {args.nvlink_gbs:g} GB/s, network {args.ib_gbits:g} Gb/s per GPU "
          f"per direction, both at {args.link_efficiency:.0%}; {args.bytes_per_value:g} bytes "
          f"per value; {args.overlap:.0%} of DP communication overlapped\n")

    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, spec in MODELS.items():
            flops_seq, grads = report_counts(args.bin_dir, name, spec, work)
            T, L, C = spec["seq"], spec["layers"], spec["width"]
            per_token = flops_seq / T
            # 6 N per token for the matmuls of forward and backward, and 6 L T C for causal
            # attention's scores and weighted sum (half of the T x T products).
            analytic = 6 * grads + 6 * L * T * C
            print(f"{name}: {grads / 1e6:.1f} M parameters; train_step {per_token / 1e9:.3f} "
                  f"GFLOP/token (tfc --report), analytic 6N + 6LTC = {analytic / 1e9:.3f} "
                  f"({per_token / analytic - 1:+.1%}); batch {spec['micro_batch']} x {T} "
                  "tokens per GPU")
            if abs(per_token / analytic - 1) > 0.10:  # a counting error, not a rounding
                sys.exit(f"{name}: tfc's FLOPs and the analytic count differ by more than 10%")
            tokens = spec["micro_batch"] * T
            grad_bytes = grads * args.bytes_per_value
            t_one = flops_seq * spec["micro_batch"] / peak  # one GPU, no communication
            act_bytes = tokens * C * args.bytes_per_value  # one TP all-reduce's buffer
            state = 16.0 * grads  # mixed-precision Adam: bytes of model state
            for n in (8, 64):
                nodes = max(1, n // args.gpus_per_node)
                link = nvlink if nodes == 1 else ib
                # DP: one ring all-reduce of the gradients.
                sent = ring_all_reduce(grad_bytes, n)
                rows.append(dict(model=name, gpus=n, how="DP", compute=t_one, tp=0.0,
                                 dp=sent / link, sent=sent, tokens=tokens * n, state=state))
                # ZeRO-1: reduce-scatter + all-gather, (n-1)/n x the bytes each.
                sent = 2 * (n - 1) / n * grad_bytes
                rows.append(dict(model=name, gpus=n, how="ZeRO-1", compute=t_one, tp=0.0,
                                 dp=sent / link, sent=sent, tokens=tokens * n,
                                 state=4.0 * grads + 12.0 * grads / n))
                # TP=8 in each node (the model split 8 ways: 1/8 of the FLOPs per GPU for the
                # same micro-batch), 4 all-reduces of the activations per layer; DP over the
                # nodes of each GPU's 1/8 of the gradients.
                t = args.gpus_per_node
                tp_sent = 4 * L * ring_all_reduce(act_bytes, t)
                dp_sent = ring_all_reduce(grad_bytes / t, nodes)
                rows.append(dict(model=name, gpus=n,
                                 how=f"TP={t}" + (f" x DP={nodes}" if nodes > 1 else ""),
                                 compute=t_one / t, tp=tp_sent / nvlink, dp=dp_sent / ib,
                                 sent=tp_sent + dp_sent, tokens=tokens * n / t,
                                 state=state / t))
                # PP=8 in each node, 1F1B over M = 4 S micro-batches (each the per-GPU batch):
                # a GPU computes 1/S of the model for M micro-batches; the bubble stretches it
                # by (M + S - 1) / M; each micro-batch's activations go forward and their
                # gradients back over NVLink; DP over the nodes of each stage's gradients.
                S = args.gpus_per_node
                M = 4 * S
                compute = t_one * M / S
                bubble = compute * (S - 1) / M
                pp_sent = 2 * M * act_bytes
                dp_sent = ring_all_reduce(grad_bytes / S, nodes)
                rows.append(dict(model=name, gpus=n,
                                 how=f"PP={S} (M={M})" + (f" x DP={nodes}" if nodes > 1 else ""),
                                 compute=compute, tp=bubble + pp_sent / nvlink,
                                 dp=dp_sent / ib, sent=pp_sent + dp_sent,
                                 tokens=tokens * M * nodes, state=state / S))
                if nodes > 1:
                    # TP=8 in each node x PP over the nodes (Megatron's layout for the largest
                    # models, tfc --pp=S --tp=8): a GPU computes 1/(8 S) of the model for M
                    # micro-batches; its TP all-reduces over NVLink for its L/S layers, each
                    # micro-batch's activations (whole on every TP rank) over InfiniBand.
                    S = nodes
                    M = 4 * S
                    compute = t_one * M / (S * t)
                    bubble = compute * (S - 1) / M
                    tp_sent = M * 4 * (L / S) * ring_all_reduce(act_bytes, t)
                    pp_sent = 2 * M * act_bytes
                    rows.append(dict(model=name, gpus=n, how=f"TP={t} x PP={S} (M={M})",
                                     compute=compute,
                                     tp=bubble + tp_sent / nvlink + pp_sent / ib, dp=0.0,
                                     sent=tp_sent + pp_sent, tokens=tokens * M,
                                     state=state / (S * t)))

    print("\n| model | GPUs | parallelism | compute / step | communication / step "
          "(TP or PP bubble + sends, + DP) | bytes sent per GPU / step | step time | scaling "
          "efficiency | efficiency, DP overlapped | tokens/s (all GPUs) | model state / GPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        step = r["compute"] + r["tp"] + (1 - args.overlap) * r["dp"]
        overlapped = r["compute"] + r["tp"] + max(0.0, r["dp"] - r["compute"])
        comm = r["tp"] + r["dp"]
        print(f"| {r['model']} | {r['gpus']} | {r['how']} | {r['compute'] * 1e3:.1f} ms | "
              f"{comm * 1e3:.1f} ms | {r['sent'] / 1e9:.2f} GB | {step * 1e3:.1f} ms | "
              f"{r['compute'] / step:.0%} | {r['compute'] / overlapped:.0%} | "
              f"{r['tokens'] / step / 1e6:.2f} M | {r['state'] / 1e9:.2f} GB |")
    print("\nPP's bubble counts as exposed communication (the stages idle while the "
          "pipeline fills and drains): (S-1)/(M+S-1) of the step, as tfc --report's "
          "pipeline.bubble_balanced.")
    print("\nscaling efficiency: compute / step time, the share of the ideal n-fold speed-up "
          "reached at the same per-GPU work (with --overlap of the DP communication hidden); "
          "'DP overlapped': the DP/ZeRO communication entirely behind the compute (buckets "
          "launched during the backward), TP's all-reduces still exposed.")
    print("\nMegatron-LM's published figures (measured, for comparison):")
    for source, figure in MEGATRON:
        print(f"  - {source}: {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

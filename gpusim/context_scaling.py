"""Context parallelism past the machines measured here: when a ring's transfer hides under its compute, the
longest context a GPU's memory holds, and PREDICTIONS for 8, 64 and 512 GPUs (model only; their assumptions
are in ASSUMPTIONS).

The overlap condition (Ring Attention, Liu, Zaharia, Abbeel 2023, Sec. 3): in one ring step without a mask a GPU
attends c queries to c keys, 4 c^2 d FLOPs per query head (S = Q K^T and O = P V, 2 c^2 d each), at F FLOP/s,
while it receives the next K and V shard, 2 c d itemsize bytes per K/V head, at B bytes/s. The transfer hides when

    4 c^2 d H / F >= 2 c d itemsize H_kv / B   <=>   c >= itemsize F H_kv / (2 B H)

so for multi-head attention in bf16 (itemsize 2, H_kv = H): c >= F / B, the paper's "minimal block size". A causal
zigzag step does c x c/2 of that work against the same transfer: twice the threshold. The model adds a per-step
latency to each transfer (links.ASSUMED_STEP_LATENCY_S) that the condition leaves out.
"""
import math
from dataclasses import dataclass

from .context import simulate as context_simulate
from .hardware import get_gpu
from .shape import positive_int, positive_number
from .links import LINKS, TPU_BF16_FLOPS_PER_S, get_link

ASSUMPTIONS = ("Predictions of the model, not measurements: every GPU runs the project's flash2 at the rate "
               "gpusim predicts for its shard (H200 preset); links run at their nominal per-direction rate with "
               f"{LINKS['nvlink4'].step_latency_s * 1e6:.0f} µs per step; every GPU of a node has its own "
               "InfiniBand NDR port; a ring spanning nodes waits on its slowest (inter-node) hop; steps run in "
               "lockstep; "
               "the all-to-all over nodes is not modelled beyond that slowest link; a transfer beside the attention "
               "costs it nothing (NCCL's kernels take SMs and HBM bandwidth from it in practice); the forward pass "
               "only: no context-parallel backward is modelled.")


def minimal_shard_tokens(flops_per_s, link_bytes_per_s, itemsize=2, heads=1, kv_heads=1):
    """The shortest shard c (tokens per GPU) whose non-causal ring step hides its K/V transfer: itemsize F H_kv /
    (2 B H). A causal zigzag step (c x c/2 of work, the same transfer) needs twice this; the link's per-step latency
    (links.ASSUMED_STEP_LATENCY_S, which the model adds to each transfer) is left out, so a real step needs more."""
    flops_per_s, link_bytes_per_s = positive_number("flops_per_s", flops_per_s), positive_number(
        "link_bytes_per_s", link_bytes_per_s)
    itemsize, heads, kv_heads = (positive_int(n, v) for n, v in (("itemsize", itemsize), ("heads", heads),
                                                                 ("kv_heads", kv_heads)))
    return itemsize * flops_per_s * kv_heads / (2 * link_bytes_per_s * heads)


@dataclass(frozen=True)
class PaperRow:
    device: str
    flops_per_s: float
    link: str  # a gpusim.links preset
    paper_block_tokens: float  # Ring Attention (Liu, Zaharia, Abbeel 2023), Table 2, "Minimal Blocksize"


# Ring Attention, Table 2 ("Minimal sequence length needed on each device"; checked against transcriptions
# of the paper's text): per host FLOPS and unidirectional interconnect bandwidth, "minimal block size required
# c = FLOPS/Bandwidth" (its Sec. 3 counts 4 d c^2 FLOPs and 4 c d bytes of bf16 K and V per step), and s = 6c.
# Its A100 InfiniBand row prints 24.5 where 312 TF / 12.5 GB/s is 24.96 (and its own 149.5 = 6c gives 24.9).
RING_PAPER_TABLE = (
    PaperRow("A100 NVLink", get_gpu("A100-80GB").bf16_matmul_flops_per_s, "nvlink3", 1.0e3),
    PaperRow("A100 InfiniBand", get_gpu("A100-80GB").bf16_matmul_flops_per_s, "ib-a100-ring-paper", 24.5e3),
    PaperRow("TPU v3", TPU_BF16_FLOPS_PER_S["TPU v3"], "tpu-v3-ici", 1.1e3),
    PaperRow("TPU v4", TPU_BF16_FLOPS_PER_S["TPU v4"], "tpu-v4-ici", 1.0e3),
    PaperRow("TPU v5e", TPU_BF16_FLOPS_PER_S["TPU v5e"], "tpu-v5e-ici", 1.1e3),
)


def ring_paper_table():
    """[(device, our minimal block in tokens, the paper's)], bf16, multi-head (the paper's setting)."""
    return [(row.device, minimal_shard_tokens(row.flops_per_s, get_link(row.link).send_bytes_per_s),
             row.paper_block_tokens) for row in RING_PAPER_TABLE]


def peak_bytes(strategy, gpus, seq, algo="flash2", **shape):
    """HBM one GPU allocates for the pass (the model's hbm_peak_bytes)."""
    return context_simulate(algo, gpus=gpus, strategy=strategy, seq=seq, **shape).hbm_peak_bytes


def max_context(strategy, gpus, *, gpu="H200", link="nvlink4", causal=True, **shape):
    """The longest sequence whose pass fits each GPU's HBM, to a multiple of 2P tokens: the footprint is linear
    in N (Q, K, V, O, buffers and LSE per token), so one evaluation gives it. One line where not even 2P tokens
    fit."""
    unit = 2 * positive_int("gpus", gpus)  # every strategy's pieces divide it
    probe = unit * 64
    per_token = peak_bytes(strategy, gpus, probe, gpu=gpu, link=link, causal=causal, **shape) / probe
    hbm = get_gpu(gpu)
    if per_token * unit > hbm.hbm_bytes:
        raise ValueError(f"no context fits each GPU's HBM: even the shortest, {unit:,} tokens (2 x gpus={gpus}), "
                         f"needs {math.ceil(per_token * unit):,} B per GPU, more than {hbm.name}'s {hbm.hbm_bytes:,} B")
    return int(hbm.hbm_bytes / per_token) // unit * unit


@dataclass(frozen=True)
class Prediction:
    gpus: int
    link: str
    strategy: str
    seq: int
    time_s: float
    link_send_bytes: int  # per GPU, whole pass
    overlap_margin: float | None  # compute / transfer of the tightest ring step (>= 1: hidden)
    max_seq: int  # the longest context that fits each GPU's HBM
    tflops_per_gpu: float


PREDICTED = ((8, "node8-nvlink4", ("ring", "zigzag", "ulysses")),
             (64, "nodes-nvlink4-ib-ndr", ("zigzag", "usp")),
             (512, "nodes-nvlink4-ib-ndr", ("zigzag", "usp")))
CONTEXTS = (1 << 17, 1 << 19, 1 << 20, 1 << 21, 1 << 22)  # 128K .. 4M tokens


def predictions(heads=32, kv_heads=8, head_dim=128, dtype="bf16", gpu="H200", causal=True, contexts=CONTEXTS,
                setups=PREDICTED):
    """A Prediction per (setup, strategy, context): see ASSUMPTIONS."""
    shape = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype, gpu=gpu, causal=causal)
    out = []
    for gpus, link, strategies in setups:
        for strategy in strategies:
            longest = max_context(strategy, gpus, link=link, **shape)
            for seq in contexts:
                r = context_simulate("flash2", gpus=gpus, strategy=strategy, link=link, seq=seq, **shape)
                flops = 4 * heads * seq * seq * head_dim / (2 if causal else 1)  # the useful FLOPs
                out.append(Prediction(gpus, link, strategy, seq, r.predicted_time_s, r.link_send_bytes,
                                      r.overlap_margin, longest, flops / gpus / r.predicted_time_s / 1e12))
    return out


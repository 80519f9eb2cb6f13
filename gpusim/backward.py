"""The backward pass of attention: HBM bytes per kernel and tensor in closed form, FLOPs, and the memory
training needs. Execute mode (the tiles walked on NumPy arrays) is gpusim/execute.py execute_backward.

Gradients of O = softmax(S) V with S = τ Q Kᵀ (τ = 1/sqrt(d)), given dO:
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP - D) with D = rowsum(dO ∘ O) = rowsum(P ∘ dP),
    dQ = τ dS K,  dK = τ dSᵀ Q.
The forward keeps what these need: naive attention keeps P (N x N_kv per head); FlashAttention keeps
O and the row log-sum-exp (LSE; l and m for flash1) and recomputes S and P tile by tile.

Each algorithm's backward is a pass of its own (gpusim/passes/naive_backward.py, flash1_backward.py,
flash2_backward.py: its kernels, counts, FLOPs, tiles and schedule); this module makes its configuration
(config), and answers what a training step needs of memory (model_memory). Causal is torch's is_causal=True
(top-left); fully masked tiles are skipped, as in the forward. A K/V block no query sees (N_kv > N) is not
read, and its dK, dV are written as zeros.
"""
import math
from dataclasses import replace

import numpy as np

from .hardware import DTYPE_BYTES, dtype_name, get_gpu
from .occupancy import exceeded, occupancy, resources
from .passes import BACKWARD, algo_name
from .shape import (MIN_BLOCK, Backward, Tiles, check_groups, counts, flag, given_tiles,  # noqa: F401 (Backward)
                    knobs_of, positive_int)
from .theorems import theorem5  # noqa: F401 (gpusim.backward.theorem5)

ALGOS = tuple(BACKWARD)
KERNELS = {algo: p.KERNELS for algo, p in BACKWARD.items()}
TENSORS = ("Q", "K", "V", "O", "dO", "P", "dP", "dS", "LSE", "l", "m", "D", "dQ", "dK", "dV")


def pass_of(algo):
    """The backward pass of the forward named algo (any case): the one place a backward configuration looks it up."""
    algo = algo_name(algo)
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} has no backward model: choose one of {', '.join(ALGOS)}")
    return BACKWARD[algo]


def default_blocks(algo, gpu, head_dim, dtype):
    """(block_q, block_kv) for the backward: the pass's starting tiles, halved until every kernel fits."""
    return pass_of(algo).default_blocks(get_gpu(gpu), head_dim, dtype)


def resident(cfg):
    """cfg with its larger tile halved (never below MIN_BLOCK) until an SM holds a block of every kernel: a default
    tile may need more SRAM than a block gets (naive's forward's pick, whose backward's dv kernel stages more) or, at a
    large head_dim, more registers per thread than the GPU has (flash2's dK/dV at 128 x 32, d = 256: 328 of the H200's
    255). One line where none does (config's, where the SRAM is what still does not fit)."""
    start = f"{cfg.block_q} x {cfg.block_kv}"
    while (kernel := _unheld(cfg)) and max(cfg.block_q, cfg.block_kv) > MIN_BLOCK:
        br, bc = cfg.block_q, cfg.block_kv
        cfg = replace(cfg, block_q=br // 2) if br > bc else replace(cfg, block_kv=bc // 2)
    if kernel and cfg.sram_bytes(kernel) <= cfg.gpu.sram_bytes_per_block:
        res = resources(cfg, kernel)
        need, limit = exceeded(cfg.gpu, res, occupancy(cfg.gpu, res))
        raise ValueError(f"the backward's tiles, the rule's {start} halved to {cfg.block_q} x {cfg.block_kv}, need "
                         f"{need} in its {kernel} kernel at head_dim={cfg.head_dim} ({cfg.dtype}); {limit}")
    return cfg


def _unheld(cfg):
    """The first of cfg's kernels whose block no SM can hold (or whose SRAM a block cannot have), or None."""
    return next((k for k in cfg.kernels if cfg.sram_bytes(k) > cfg.gpu.sram_bytes_per_block
                 or not occupancy(cfg.gpu, resources(cfg, k)).blocks_per_sm), None)


def config(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, block_q=None, block_kv=None,
           causal=False, dtype="fp16", gpu="A100-40GB", tiles=None, halve=False):
    """The backward of one attention call, checked once; every error is one line naming the value. tiles: a
    gpusim.Tiles instead of block_q, block_kv, whose num_warps, num_stages (where set) every kernel takes. halve:
    the tiles are a rule's, halved until every kernel fits (resident), not taken as given."""
    pass_ = pass_of(algo)
    block_q, block_kv, tiles = given_tiles(tiles, block_q, block_kv)
    dtype = dtype_name(dtype)
    if dtype == "fp8":
        raise ValueError("dtype='fp8': an fp8 forward has no backward here (train in fp16, bf16 or fp32)")
    gpu = get_gpu(gpu)
    gpu.matmul_flops_per_s(dtype)  # raises for a dtype the GPU's tensor cores lack
    pass_.check(gpu, positive_int("head_dim", head_dim), dtype)
    kv_heads, seq_kv = heads if kv_heads is None else kv_heads, seq if seq_kv is None else seq_kv
    seq, head_dim, heads, batch, kv_heads, seq_kv = counts(seq=seq, head_dim=head_dim, heads=heads, batch=batch,
                                                           kv_heads=kv_heads, seq_kv=seq_kv).values()
    check_groups(heads, kv_heads)
    br, bc = pass_.default_blocks(gpu, head_dim, dtype)
    block_q, block_kv = Tiles(br if block_q is None else block_q, bc if block_kv is None else block_kv).blocks
    causal = flag("causal", causal)
    cfg = Backward(pass_.algo, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv, bool(causal), dtype,
                   gpu, pass_, knobs_of(pass_, tiles))
    cfg = resident(cfg) if halve else cfg
    for kernel in cfg.kernels:
        if cfg.sram_bytes(kernel) > gpu.sram_bytes_per_block:
            raise ValueError(f"block_q={cfg.block_q}, block_kv={cfg.block_kv}, head_dim={head_dim} ({dtype}) need "
                             f"{cfg.sram_bytes(kernel):,} B of SRAM in the backward's {kernel} kernel; "
                             f"{gpu.name} has {gpu.sram_bytes_per_block:,} B per thread block")
    return cfg


def count(cfg):
    """{(kernel, tensor): (read_bytes, write_bytes)} of the backward, over all batches and heads."""
    return cfg.pass_.count(cfg)


def first_touch(cfg):
    """{(kernel, tensor): (read_bytes, write_bytes)}: each tensor's bytes a kernel touches at least once."""
    return cfg.pass_.first_touch(cfg)


def flops(cfg):
    """{kernel: (matmul_flops, other_flops, exps)} over all batches and heads."""
    return cfg.pass_.flops(cfg)


def saved_bytes(cfg):
    """{tensor: bytes} the forward keeps for the backward."""
    return cfg.pass_.saved_bytes(cfg)


def peak_bytes(cfg):
    return cfg.pass_.peak_bytes(cfg)


def nominal_flops(batch, heads, seq, head_dim, causal, seq_kv=None):
    """The FlashAttention-2 paper's convention for TFLOP/s: the backward is 2.5 times the forward's
    4 B H N N_kv d (its two matmuls), halved when causal: five matmuls, S recomputed and dV, dP, dQ, dK."""
    shape = counts(batch=batch, heads=heads, seq=seq, seq_kv=seq if seq_kv is None else seq_kv, head_dim=head_dim)
    return 2.5 * 4 * math.prod(shape.values()) / (2 if flag("causal", causal) else 1)


def model_memory(algo, *, layers, heads, head_dim, batch, seq, dtype="fp16", kv_heads=None, causal=False,
                 gpu="A100-40GB"):
    """Attention's share of a model's training memory (no weights, optimizer state or MLP activations):
    every layer keeps what its forward saved until its backward; one layer's backward is running at a
    time, on top of that. {saved_per_layer, saved_per_model, peak_bytes, fits}."""
    layers = counts(layers=layers)["layers"]
    cfg = config(algo, seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, causal=causal,
                 dtype=dtype, gpu=gpu)
    saved = sum(cfg.pass_.saved_bytes(cfg).values())
    peak = layers * saved + cfg.pass_.peak_bytes(cfg) - saved
    return {"saved_per_layer": saved, "saved_per_model": layers * saved, "peak_bytes": peak,
            "fits": peak <= cfg.gpu.hbm_bytes}


def max_trainable_seq(algo, *, layers, heads, head_dim, batch, gpu="A100-40GB", **shape):
    """The longest sequence whose attention training memory (model_memory) fits in the GPU's HBM; 0 if none."""
    def fits(seq):
        return model_memory(algo, layers=layers, heads=heads, head_dim=head_dim, batch=batch, seq=seq, gpu=gpu,
                            **shape)["fits"]
    lo, hi = 0, 1
    while fits(hi):  # lo fits (or is 0), hi does not
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def theorem5_counts(seq, head_dim, sram_bytes, gpu="H100-SXM", dtype="fp16"):
    """Theorem 5 shown by the counts: for each SRAM size (bytes per thread block), flash1's backward bytes
    with the paper's blocks for that SRAM, times M / (N² d²) (flat if the theorem holds), and the bytes
    naive attention's backward moves through its N x N matrices (P, dP, dS), which no SRAM changes."""
    if not isinstance(sram_bytes, (list, tuple, range, np.ndarray)) or np.ndim(sram_bytes) != 1:
        raise ValueError(f"sram_bytes={sram_bytes!r} must be a list of SRAM sizes in bytes, e.g. [{sram_bytes!r}]")
    rows = []
    for size in (positive_int("sram_bytes", size) for size in sram_bytes):
        g = replace(get_gpu(gpu), name=f"{size // 1024} KiB", sram_bytes_per_block=size, sram_bytes_per_sm=size)
        m = size // DTYPE_BYTES[dtype]
        flash = sum(r + w for r, w in count(config("flash1", seq=seq, head_dim=head_dim, dtype=dtype, gpu=g)).values())
        naive = count(config("naive", seq=seq, head_dim=head_dim, dtype=dtype, gpu=g))
        rows.append({"sram_bytes": size, "sram_elements": m, "flash_bytes": flash,
                     "flash_ratio": flash * m / (seq**2 * head_dim**2),
                     "naive_nxn_bytes": sum(r + w for (_, t), (r, w) in naive.items() if t in ("P", "dP", "dS"))})
    return rows

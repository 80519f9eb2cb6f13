"""Standard attention's backward (Algorithm 3 of the FlashAttention paper; gpusim/backward.py counts it) as
the time model sees kernels/naive_backward.py: five launches, their grids, the steps of each program, how
they launch, and which reads reach DRAM. The configuration is a backward_common.BackwardPass.

    dv: dV = Pᵀ dO   one program per K/V block (Bc rows) and K/V head, a step per (query head, Q block)
    dp: dP = dO Vᵀ   one program per tile of the (Tr x Tc) grid, one step; a causal mask's skipped tiles exit
    ds: dS           one program per row: one step, or two passes over Bc chunks when the row is streamed
    dq: dQ = τ dS K  one program per Q block, a step per K/V block it visits
    dk: dK = τ dSᵀ Q like dv
"""
import numpy as np

from .. import backward
from ..hardware import STATS_BYTES
from ..tiling import TAIL, Work, ramp_work, uniform_work
from .backward_common import column_work, padded, shared_bytes as _shared, spilled
from .backward_common import (DEFAULT_LAUNCH, compiled_name, count, dram_reads, flops, issue,  # noqa: F401
                              programs, streams)  # the interface, shared
from .common import warps

KERNELS = backward.KERNELS["naive"]
TENSOR_BYTES = {}
L2_REUSE = {kernel: ("first_touch", ()) for kernel in KERNELS}  # backward_common.dram_reads
FENCED = ()
TMA = False
SETUP_S = 0.0
STEP_TENSORS = {"dv": ("P", "dO"), "dp": ("dO", "V"), "ds": ("P", "dP"), "dq": ("dS", "K"), "dk": ("dS", "Q")}
SHARED_BY = {"dv": "kv_head", "dp": "head", "ds": "program", "dq": "head", "dk": "kv_head"}


def work(cfg, kernel):
    t, groups = cfg.tiling, cfg.batch * cfg.kv_heads
    if kernel in ("dv", "dk"):
        return column_work(t, groups, cfg.group)
    if kernel == "dq":
        return ramp_work(t, cfg.bh)
    if kernel == "ds":
        if cfg.ds_fits:
            return uniform_work(cfg.bh * cfg.seq, 1)
        return uniform_work(cfg.bh * cfg.seq, 2 * -(-t.tile_elements // cfg.seq // cfg.block_kv))
    return _tile_work(cfg)


def _tile_work(cfg):
    """dp's grid: Tr*Tc programs per head, program p at tile (p // Tc, p % Tc); the visited tiles do one
    step, the rest (right of a causal diagonal) read their J_i and exit."""
    t = cfg.tiling
    grid = t.n_q_blocks * t.n_kv_blocks
    visited = t.tiles
    last = grid - 1 - np.arange(min(grid, TAIL))  # the launch order, backwards from its end
    head = (last % t.n_kv_blocks < t.kv_blocks_at(last // t.n_kv_blocks)).astype(int).tolist()
    n = min(cfg.bh * grid, TAIL)
    values, counts = zip(*[(v, c) for v, c in ((1, visited), (0, grid - visited)) if c])
    return Work(values, tuple(c * cfg.bh for c in counts), tuple((head * -(-n // len(head)))[:n]))


def launch(cfg, kernel):
    """(num_warps, num_stages) as kernels/naive_backward.py launches them: the tiled kernels as naive
    attention's forward (kernels/launch.py options), one buffer per tile; ds with Triton's defaults."""
    return DEFAULT_LAUNCH if kernel == "ds" else (warps(cfg.block_q), 1)


def shared_bytes(cfg, kernel, num_stages):
    return _shared(cfg, kernel, num_stages, 0)


def register_tiles(cfg, kernel):
    """dv, dk: the fp32 accumulator (Bc x d); dq: Br x d; dp: the fp32 tile (Br x Bc); ds: a row of P and
    of dP in fp32 (padded to a power of two), or a Bc chunk of each: a long row spills (spilled)."""
    d = padded(cfg.head_dim)
    if kernel == "ds":
        row = padded(cfg.seq_kv) if cfg.ds_fits else cfg.block_kv
        return spilled(cfg, 2 * STATS_BYTES * row, DEFAULT_LAUNCH[0])
    return STATS_BYTES * {"dv": cfg.block_kv * d, "dk": cfg.block_kv * d, "dq": cfg.block_q * d,
                          "dp": cfg.block_q * cfg.block_kv}[kernel]


def compiled_shape(cfg, kernel):
    """What a compiled kernel is specialised on beyond its tiles: ds, the row it holds (N_kv padded)."""
    return padded(cfg.seq_kv) if kernel == "ds" else cfg.head_dim

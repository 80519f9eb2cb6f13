"""FlashAttention-1's backward (Algorithm 4 of the FlashAttention paper; gpusim/backward.py counts it) as the
time model sees it: one program per (batch, K/V head) holds K_j, V_j and their gradients while every Q
block that sees them streams past, reading Q_i, O_i, dO_i, dQ_i, l_i, m_i and writing dQ_i back. The
project has no Triton kernel of it: it launches as the forward flash1 does (gpusim/algorithms/flash1.py),
one buffer per tile, each step's stores landing before the next step reads dQ_i again.
"""
from .. import backward
from ..tiling import uniform_work
from .backward_common import padded, shared_bytes as _shared, spilled
from .backward_common import (compiled_name, count, dram_reads, flops, issue,  # noqa: F401
                              programs, streams)  # the interface, shared
from .common import warps

KERNELS = backward.KERNELS["flash1"]
TENSOR_BYTES = {}
L2_REUSE = {"flash1_bwd": ("first_touch", ())}  # backward_common.dram_reads
FENCED = ("flash1_bwd",)  # dQ_i is written back every step and read again at the next K/V block
TMA = False
SETUP_S = 0.0
STEP_TENSORS = {"flash1_bwd": ("Q", "K", "V", "O", "dO", "dQ", "l", "m")}
SHARED_BY = {"flash1_bwd": "kv_head"}  # re-reads of the group's Q, O, dO, dQ, l, m (backward_common.dram_reads)


def work(cfg, kernel):
    """One program per (batch, K/V head) walks every visited tile of each query head of its group."""
    return uniform_work(cfg.batch * cfg.kv_heads, cfg.group * cfg.tiling.tiles)


def launch(cfg, kernel):
    return warps(cfg.block_q), 1


def shared_bytes(cfg, kernel, num_stages):
    return _shared(cfg, kernel, num_stages, 0)


def register_tiles(cfg, kernel):
    """dK_j and dV_j accumulated in fp32 (Bc x d each), and two fp32 score tiles live at once (P_ij, then
    dP_ij and dS_ij). The paper's tiles (Bc = M / 4d) hold more than a block's registers: they spill."""
    tiles = 8 * cfg.block_kv * padded(cfg.head_dim) + 8 * cfg.block_q * cfg.block_kv
    return spilled(cfg, tiles, launch(cfg, kernel)[0])

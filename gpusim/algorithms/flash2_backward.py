"""FlashAttention-2's backward (gpusim/backward.py counts it) as the time model sees kernels/backward.py:
three launches, their grids, the steps of each program, how they launch, and which reads reach DRAM.

    preprocess: D = rowsum(dO ∘ O)   one program per Q block (Br rows), one step
    dkdv:  one program per K/V block of Br == block_q rows and K/V head, a step per (query head, Q block
           of Bc == block_kv rows) that sees it: Q_i, dO_i, LSE_i, D_i streamed past K_j, V_j
    dq:    one program per Q block (Br rows), a step per K/V block (Bc rows) it visits: K_j, V_j streamed
"""
from .. import backward
from ..tiling import ramp_work, uniform_work
from .backward_common import column_work, padded, shared_bytes as _shared
from .backward_common import (DEFAULT_LAUNCH, compiled_name, count, dram_reads, flops, issue,  # noqa: F401
                              programs, streams)  # the interface, shared
from .common import pipeline_stages, warps

KERNELS = backward.KERNELS["flash2"]
TENSOR_BYTES = {}
L2_REUSE = {kernel: ("first_touch", ()) for kernel in KERNELS}  # backward_common.dram_reads
FENCED = ()
TMA = False
SETUP_S = 0.0
STEP_TENSORS = {"preprocess": ("O", "dO"), "dkdv": ("Q", "dO", "LSE", "D"), "dq": ("K", "V")}
SHARED_BY = {"preprocess": "program", "dkdv": "kv_head", "dq": "head"}


def work(cfg, kernel):
    if kernel == "dkdv":
        return column_work(cfg.kv_tiling, cfg.batch * cfg.kv_heads, cfg.group)
    if kernel == "dq":
        return ramp_work(cfg.tiling, cfg.bh)
    return uniform_work(cfg.bh * cfg.tiling.n_q_blocks, 1)


def stage_bytes(cfg, kernel):
    """One more buffer of the two streamed tiles (Bc rows, d padded), as kernels/backward.py sizes it."""
    return 0 if kernel == "preprocess" else 2 * cfg.block_kv * padded(cfg.head_dim) * cfg.itemsize


def launch(cfg, kernel):
    """(num_warps, num_stages) as kernels/backward.py launches them (kernels/launch.py options): the loops
    pipelined as deep as fits by the forward's rule; preprocess with Triton's defaults."""
    if kernel == "preprocess":
        return DEFAULT_LAUNCH
    return warps(cfg.block_q), pipeline_stages(cfg, kernel, stage_bytes(cfg, kernel))


def shared_bytes(cfg, kernel, num_stages):
    return _shared(cfg, kernel, num_stages, stage_bytes(cfg, kernel))


def register_tiles(cfg, kernel):
    """dkdv: dK_j and dV_j accumulated in fp32 (Br x d each); dq: dQ_i (Br x d); both: two fp32 score tiles
    live at once (P_ij, then dP_ij and dS_ij; Br x Bc). preprocess: none; the compiler streams O_i ∘ dO_i
    into its row sums (its compiles in gpusim/compiled.py need fewer registers than REGISTER_BASE)."""
    d, tile = padded(cfg.head_dim), 8 * cfg.block_q * cfg.block_kv
    return {"preprocess": 0, "dkdv": 8 * cfg.block_q * d + tile, "dq": 4 * cfg.block_q * d + tile}[kernel]

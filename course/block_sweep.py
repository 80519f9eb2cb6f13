"""What notebook 4's TilingExplorer plots beside the tiles, swept with gpusim: HBM traffic against the SRAM
size (Theorem 2 of the FlashAttention paper) and the predicted time of every block pair. Pure functions of
a `config`, the keyword arguments of gpusim.simulate.
"""
from dataclasses import replace

import numpy as np

import gpusim

from .block_sliders import BLOCKS

SRAM_SIZES = tuple(2**p for p in range(12, 22))  # 4 KiB .. 2 MiB of SRAM per thread block


def with_sram(gpu, sram_bytes):
    """The GPU with `sram_bytes` of SRAM per thread block (and per SM)."""
    gpu = gpusim.get_gpu(gpu)
    return replace(gpu, name=f"{gpu.name}, {sram_bytes // 1024} KiB SRAM", sram_bytes_per_block=sram_bytes,
                   sram_bytes_per_sm=sram_bytes)


def theorem2_curve(config, sram_sizes=SRAM_SIZES):
    """HBM traffic against the SRAM size M, with gpusim's default blocks for each M: the simulated bytes of
    config's algorithm (`flash`) and of naive attention, and Theorem 2's N²d²/M (M in elements) scaled to meet
    the flash curve at the smallest M. Sizes no block fits in are left out."""
    c = config | dict(block_q=None, block_kv=None)
    sizes, flash, naive = [], [], []
    for m in sram_sizes:
        gpu = with_sram(c["gpu"], m)
        try:
            f = gpusim.simulate(**(c | dict(gpu=gpu)))
        except ValueError:
            continue
        sizes.append(m)
        flash.append(f.hbm_bytes)
        naive.append(gpusim.simulate(**(c | dict(algo="naive", gpu=gpu))).hbm_bytes)
    e = gpusim.DTYPE_BYTES[c["dtype"]]
    shape = np.array([gpusim.theorem2(c["seq"], c["head_dim"], m / e)["flash"] for m in sizes])
    return {"sram_bytes": sizes, "flash": flash, "naive": naive, "theorem2": list(shape * flash[0] / shape[0])}


def block_grid(config, blocks=BLOCKS):
    """Predicted time, HBM bytes and SRAM per thread block of every (block_q, block_kv) in blocks x blocks,
    rows block_q, columns block_kv; NaN where gpusim refuses the pair."""
    grid = {key: np.full((len(blocks), len(blocks)), np.nan) for key in ("time", "bytes", "sram")}
    for a, bq in enumerate(blocks):
        for b, bkv in enumerate(blocks):
            try:
                r = gpusim.simulate(**(config | dict(block_q=bq, block_kv=bkv)))
            except ValueError:
                continue
            grid["time"][a, b], grid["bytes"][a, b], grid["sram"][a, b] = (r.predicted_time_s, r.hbm_bytes,
                                                                            r.sram_bytes_per_block)
    return grid


def best_blocks(grid, blocks=BLOCKS):
    """(block_q, block_kv, predicted seconds) of the fastest pair of a block_grid."""
    a, b = np.unravel_index(np.nanargmin(grid["time"]), grid["time"].shape)
    return blocks[a], blocks[b], float(grid["time"][a, b])

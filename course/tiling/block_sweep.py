"""What notebook 4's TilingExplorer plots beside the tiles, swept with gpusim: the bytes the SMs request against the SRAM
size (Theorem 2 of the FlashAttention paper) and the predicted time of every block pair. Pure functions of
a `config`, the keyword arguments of gpusim.simulate.
"""
import math
from dataclasses import replace

import numpy as np

import gpusim

from ..block_sliders import BLOCKS

SRAM_SIZES = tuple(2**p for p in range(12, 22))  # 4 KiB .. 2 MiB of SRAM per thread block


def with_sram(gpu, sram_bytes):
    """The GPU with `sram_bytes` of SRAM per thread block (and per SM)."""
    gpu = gpusim.get_gpu(gpu)
    return replace(gpu, name=f"{gpu.name}, {sram_bytes // 1024} KiB SRAM", sram_bytes_per_block=sram_bytes,
                   sram_bytes_per_sm=sram_bytes)


def theorem2_curve(config, sram_sizes=SRAM_SIZES):
    """The bytes the SMs request against the SRAM size M, each M with the blocks the algorithm's paper rule gives it
    (gpusim.paper_blocks): the simulated bytes of config's algorithm (`flash`) and of naive attention (NaN at a size
    whose rule blocks the algorithm cannot run: at d = 256 flash2's and naive's rule blocks never fit at the same
    size), and Theorem 2's N²d²/M (M in elements) scaled to meet the flash curve at its smallest M (all NaN where
    it has none). Sizes that neither runs at are left out."""
    points = {m: [_paper_bytes(config, algo, with_sram(config["gpu"], m)) for algo in (config["algo"], "naive")]
              for m in sram_sizes}
    sizes = [m for m, pair in points.items() if any(map(_ran, pair))]
    flash, naive = ([points[m][i] for m in sizes] for i in (0, 1))
    e = gpusim.DTYPE_BYTES[config["dtype"]]
    shape = np.array([gpusim.theorem2(config["seq"], config["head_dim"], m / e)["flash"] for m in sizes])
    first = next((i for i, f in enumerate(flash) if _ran(f)), None)
    scale = np.nan if first is None else flash[first] / shape[first]
    return {"sram_bytes": sizes, "flash": flash, "naive": naive, "theorem2": list(shape * scale)}


def _ran(nbytes):
    """Whether _paper_bytes counted bytes (an int, which may pass 2**63: no NumPy array of them) or NaN."""
    return not (isinstance(nbytes, float) and math.isnan(nbytes))


def _paper_bytes(config, algo, gpu):
    """The bytes the SMs request for algo on gpu with its paper rule's blocks; NaN where gpusim refuses them."""
    try:
        return gpusim.simulate(**(config | dict(algo=algo, gpu=gpu, **paper_blocks(algo, gpu, config)))).hbm_bytes
    except ValueError:
        return np.nan


def paper_blocks(algo, gpu, config):
    """{block_q, block_kv} of gpusim.paper_blocks: the algorithm's paper rule for the GPU's SRAM."""
    return dict(zip(("block_q", "block_kv"), gpusim.paper_blocks(algo, gpu, config["head_dim"], config["dtype"])))


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


RULES = {  # what gpusim.paper_blocks computes, per algorithm
    "naive": "its matmuls' 128 x 128 tiles, halved until they fit",
    "flash1": "Algorithm 1's rule: B_c = ⌈M/4d⌉, B_r = min(B_c, d)",
    "flash2": "gpusim's adaptation of Algorithm 1's rule to FlashAttention-2's loop order, Q blocks outer: "
              "B_r = ⌈M/4d⌉ at most 128, B_c = min(B_r, d) (no paper gives this one)"}
RULES["hopper"] = RULES["flash2"]  # the Hopper pass inherits flash2's


def tile_choice(best, config, kernel_gpu="H200-measured"):
    """The explorer's fastest pair (`best`, for `config`: gpusim.simulate's keyword arguments) beside the algorithm's
    rule (gpusim.paper_blocks, named by RULES) and the tile the project's kernels launch on the H200 (best_blocks on
    the measured preset: flash1 and flash2 launch the tile gpusim predicts fastest on the GPU they run on), in
    three lines with the comparison computed."""
    block_q, block_kv, seconds = best
    algo, gpu, d, dtype = config["algo"], config["gpu"], config["head_dim"], config["dtype"]
    shape = {k: v for k, v in config.items() if k not in ("algo", "gpu", "block_q", "block_kv")}
    paper = gpusim.paper_blocks(algo, gpu, d, dtype)
    kernel = gpusim.best_blocks(algo, gpu=kernel_gpu, **shape)
    same = "the same tile as" if (block_q, block_kv) == tuple(kernel) else "not the fastest tile"
    return [f"Fastest pair for {algo} on {gpu} (N = {config['seq']:,}): {block_q} x {block_kv}, predicted "
            f"{seconds * 1e3:.3f} ms.",
            f"gpusim.paper_blocks gives B_r x B_c = {paper[0]} x {paper[1]} on {gpu}, by {RULES[algo]}.",
            f"The project's kernels launch gpusim's fastest tile for the GPU they run on: on the H200 ({kernel_gpu}) "
            f"that is {kernel[0]} x {kernel[1]}, {same} on {gpu}."]

"""What several chapters read from gpusim alone: the dtypes a GPU supports, the Hopper presets, the matmul
units, a result's time terms, per-tile terms and occupancy, and the longest sequence that fits. Rows are a
list of dicts with the same keys (gpusim_course.formatting.html_table). Each chapter's own tables are in its
model.py.
"""
import math

import gpusim
from gpusim.passes import FORWARD


def supported_dtypes(gpu):
    """The dtypes the GPU has tensor cores for (gpusim raises for the others)."""
    gpu = gpusim.get_gpu(gpu)
    out = []
    for dtype in gpusim.DTYPE_BYTES:
        try:
            gpu.matmul_flops_per_s(dtype)
            out.append(dtype)
        except ValueError:
            pass
    return out


def hopper_gpus():
    """The presets of Hopper GPUs (sm_90): the only ones with TMA and warpgroup matmuls, which
    FlashAttention-3's overlap needs."""
    return [name for name, g in gpusim.PRESETS.items() if g.arch == "sm_90"]


def runnable(gpu, algo, head_dims=()):
    """What gpusim runs on the GPU: the algorithms (the hopper pass needs a Hopper GPU), `algo`'s kernel's dtypes
    that the GPU has tensor cores for (the hopper kernel's no fp32), and the head dims of `head_dims` its kernel
    takes (the hopper kernel's 64 and 128): ([algo, ...], [dtype, ...], [head_dim, ...])."""
    algos = [a for a in gpusim.ALGOS if _takes(FORWARD[a], gpu, 64)]  # the pass's own check: 64 every kernel runs
    kernel = FORWARD[algo]
    dtypes = [d for d in supported_dtypes(gpu) if not kernel.DTYPES or d in kernel.DTYPES]
    return algos, dtypes, [d for d in head_dims if _takes(kernel, gpu, d)]


def _takes(kernel, gpu, head_dim):
    """Whether the pass's kernel runs head_dim on the GPU (its check raises, in one line, where not)."""
    try:
        kernel.check(gpusim.get_gpu(gpu), head_dim)
    except ValueError:
        return False
    return True


def matmul_units(dtype):
    """Which units run gpusim's matmuls of `dtype`: the tensor cores, or for fp32 the CUDA cores (full-precision
    fp32, as torch's default and the project's kernels compute it; TF32 tensor cores round the inputs)."""
    return "fp32 on the CUDA cores" if dtype == "fp32" else f"{dtype} tensor cores"


def time_terms(result):
    """Per kernel, the roofline terms of gpusim's time model (KernelResult): memory time, matmul time on
    the tensor cores, non-matmul time on the CUDA cores, and the predicted time (waves and launch overhead
    included), with what makes it longer than its terms (busy, latency_bound, stored_after, launch)."""
    c = result.config
    return [{"label": f"{c.algo}: {k.name}" if c.algo == "naive" else k.name, "t_memory": k.memory_time_s,
             "t_matmul": k.matmul_time_s, "t_other": k.other_time_s, "t_compute": k.compute_time_s,
             "busy": k.busy_fraction, "latency_bound": k.latency_bound,
             "stored_after": c.pass_.STORED_AFTER.get(k.name),  # a tensor stored after the loads and dot, or None
             "launch": c.pass_.launch_s(c, k.name),  # the launch's own seconds (an empty kernel's)
             "predicted": k.predicted_time_s, "bound": k.bound} for k in result.kernels]


def tile_terms(result):
    """The first kernel's roofline terms (time_terms) averaged per tile of S on one SM, with the `period` of
    one tile, max(t_memory, t_compute), and whether the kernel overlaps its matmuls with the softmax."""
    t, c, k = time_terms(result)[0], result.config, result.kernels[0]
    tiles_per_sm = c.tiling.tiles * c.bh / c.gpu.sm_count
    out = {key: t[key] / tiles_per_sm for key in ("t_memory", "t_matmul", "t_other", "t_compute")}
    return out | {"period": max(out["t_memory"], out["t_compute"]), "overlapped": k.overlap}


def occupancy(result):
    """The first kernel's thread blocks, how many an SM keeps resident (gpusim's occupancy) and the waves
    they run in."""
    k, g = result.kernels[0], result.config.gpu
    return {"thread blocks": k.programs, "blocks per SM": k.blocks_per_sm,
            "waves": math.ceil(k.programs / (g.sm_count * k.blocks_per_sm))}


def footprint_blocks(algo, gpu, **shape):
    """{block_q, block_kv} for footprints at any N: gpusim.best_blocks' tile at N = 4,096 (given blocks kept). A
    peak footprint does not depend on the tiles (naive's rows of S are N_kv rounded up to 16 with any tile the
    kernels run), and a tile that fits at one N fits at every N, so one search serves a sweep over N: about
    5-50 ms, where a search per length made notebook 3's explorer take a second a slider move."""
    blocks = {name: shape.pop(name, None) for name in ("block_q", "block_kv")}
    if None not in blocks.values():
        return blocks
    return dict(zip(blocks, gpusim.best_blocks(algo, seq=4096, gpu=gpu, **shape, **blocks)))


MAX_SEQ = 1 << 32  # largest_fitting_seq's cap: no preset holds this many tokens (2**30 at most: one fp8 head, d = 32)


def largest_fitting_seq(algo, gpu, **shape):
    """The longest sequence whose peak HBM footprint fits the GPU, on one tile (footprint_blocks): a bound doubled
    from 1 until a length does not fit, then bisection below it (over gpusim.simulate). MAX_SEQ where that still
    fits (seq_limit_text says "at least"); 0 where one token does not."""
    shape |= footprint_blocks(algo, gpu, **shape)

    def fits(seq):
        return gpusim.simulate(algo, seq=seq, gpu=gpu, **shape).fits_in_hbm

    lo, hi = 0, 1
    while fits(hi):
        if hi >= MAX_SEQ:
            return MAX_SEQ
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def seq_limit_text(seq):
    """largest_fitting_seq's length as a readout writes it: "at least" where the search stopped at its cap."""
    return f"at least {seq:,}" if seq >= MAX_SEQ else f"{seq:,}"

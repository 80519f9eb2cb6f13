"""Tables over gpusim alone: small functions that return rows (a list of dicts with the same keys, shown by
gpusim_course.formatting.html_table) or a sentence, for the presets, the time model's terms, the bytes the SMs request per
tensor, the causal mask, the softmax variants and when FlashAttention helps. Measured numbers are in
gpusim_course.measurements and gpusim_course.nsight; floating-point comparisons in gpusim_course.bits.
"""
import math

import numpy as np

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .formatting import DRAM_BYTES, SM_BYTES, share_words, span


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


def matmul_units(dtype):
    """Which units run gpusim's matmuls of `dtype`: the tensor cores, or for fp32 the CUDA cores (full-precision
    fp32, as torch's default and the project's kernels compute it; TF32 tensor cores round the inputs)."""
    return "fp32 on the CUDA cores" if dtype == "fp32" else f"{dtype} tensor cores"


def hierarchy_rows():
    """One row per preset: the kitchen counter (SRAM, all SMs together) against the fridge (HBM)."""
    rows = []
    for g in gpusim.PRESETS.values():
        rows.append({
            "GPU": g.name, "SMs": g.sm_count, "SRAM per SM": fmt_bytes(g.sram_bytes_per_sm),
            "SRAM, all SMs": fmt_bytes(g.sm_count * g.sram_bytes_per_sm),
            "SRAM bandwidth": f"{g.sram_bytes_per_s / 1e12:.0f} TB/s" if g.sram_bytes_per_s else "not published",
            "HBM": fmt_bytes(g.hbm_bytes), "HBM bandwidth": f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s",
            "HBM / SRAM capacity": f"{g.hbm_bytes / (g.sm_count * g.sram_bytes_per_sm):,.0f}x",
            "SRAM / HBM bandwidth": (f"{g.sram_bytes_per_s / g.hbm_bytes_per_s:.0f}x" if g.sram_bytes_per_s
                                     else "not published"),
        })
    return rows


def kitchen_numbers(gpu):
    """The kitchen analogy in one GPU's numbers: one thread block's counter, all counters, the fridge."""
    g = gpusim.get_gpu(gpu)
    return (f"{g.name}: one thread block's counter (SRAM) holds {fmt_bytes(g.sram_bytes_per_block)}; all "
            f"{g.sm_count} SMs' counters together {fmt_bytes(g.sm_count * g.sram_bytes_per_sm)}; the fridge (HBM) "
            f"{fmt_bytes(g.hbm_bytes)}, {g.hbm_bytes / g.sram_bytes_per_block:,.0f} times one counter, reached at "
            f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s shared by all SMs.")


def ridge_rows(dtypes=("fp16", "fp8", "fp32")):
    """The ridge point (FLOPs per byte of HBM traffic) of every preset and dtype it supports; a GPU without
    tensor cores for a dtype says so ("no fp8 tensor cores")."""
    return [{"GPU": g.name} | {f"ridge point {d} (FLOP/B)": (round(g.matmul_flops_per_s(d) / g.hbm_bytes_per_s)
                                                             if d in supported_dtypes(g) else f"no {d} tensor cores")
                               for d in dtypes} for g in gpusim.PRESETS.values()]


def time_terms(result):
    """Per kernel, the roofline terms of gpusim's time model (KernelResult): memory time, matmul time on
    the tensor cores, non-matmul time on the CUDA cores, and the predicted time (waves and launch overhead
    included)."""
    c = result.config
    return [{"label": f"{c.algo}: {k.name}" if c.algo == "naive" else k.name, "t_memory": k.memory_time_s,
             "t_matmul": k.matmul_time_s, "t_other": k.other_time_s, "t_compute": k.compute_time_s,
             "busy": k.busy_fraction, "latency_bound": k.latency_bound,
             "predicted": k.predicted_time_s, "bound": k.bound} for k in result.kernels]


def time_rows(result):
    """time_terms formatted for a table."""
    return [{"kernel": r["label"], "memory": fmt_time(r["t_memory"]), "matmul": fmt_time(r["t_matmul"]),
             "non-matmul": fmt_time(r["t_other"]), "SMs busy": f"{r['busy']:.0%}",
             "predicted": fmt_time(r["predicted"]), "bound by": r["bound"]} for r in time_terms(result)]


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


def tensor_rows(results):
    """Bytes the SMs request, read and written, per tensor, one column pair per result; then the totals and
    the part of them that reaches DRAM (gpusim's L2 model)."""
    tensors = dict.fromkeys(t for r in results for t in r.by_tensor)
    rows = []
    for t in tensors:
        row = {"tensor": t}
        for r in results:
            v = r.by_tensor.get(t, {"read_bytes": 0, "write_bytes": 0})
            row |= {f"{r.config.algo} read": fmt_bytes(v["read_bytes"]),
                    f"{r.config.algo} written": fmt_bytes(v["write_bytes"])}
        rows.append(row)
    totals = [(f"total {SM_BYTES}", "hbm"), (f"of which {DRAM_BYTES}", "dram")]
    return rows + [{"tensor": label} | {f"{r.config.algo} {k}": fmt_bytes(getattr(r, f"{level}_{attr}_bytes"))
                                        for r in results for k, attr in (("read", "read"), ("written", "write"))}
                   for label, level in totals]


def causal_rows(block_q=None, block_kv=None, **shape):
    """FlashAttention-2 with and without the causal mask on the same tile (block_q x block_kv; None: the tile
    gpusim picks without the mask): tiles computed, bytes requested and reaching DRAM, predicted time."""
    if block_q is None or block_kv is None:
        c = gpusim.simulate("flash2", causal=False, **shape).config
        block_q, block_kv = block_q or c.block_q, block_kv or c.block_kv
    rows = []
    for causal in (False, True):
        r = gpusim.simulate("flash2", causal=causal, block_q=block_q, block_kv=block_kv, **shape)
        t = r.config.tiling
        rows.append({"causal": causal, "tile": f"{block_q} x {block_kv}",
                     "tiles computed": f"{t.tiles:,} of {t.n_q_blocks * t.n_kv_blocks:,}",
                     "S elements kept": t.kept_elements, f"bytes {SM_BYTES}": fmt_bytes(r.hbm_bytes),
                     f"bytes {DRAM_BYTES}": fmt_bytes(r.dram_read_bytes + r.dram_write_bytes),
                     "predicted": fmt_time(r.predicted_time_s)})
    return rows


def softmax_accesses(n=4096, seed=0):
    """Loads and stores per element of the three softmax variants, counted by gpusim.softmax."""
    x = np.random.default_rng(seed).standard_normal(n)
    rows = []
    for variant in ("naive", "safe", "online"):
        r = gpusim.softmax(x, variant, chunk=256)
        rows.append({"variant": variant, "loads": r.loads, "stores": r.stores,
                     "accesses per element": r.accesses_per_element})
    return rows


def largest_fitting_seq(algo, gpu, **shape):
    """The longest sequence whose peak HBM footprint fits the GPU (bisection over gpusim.simulate)."""
    lo, hi = 1, 1 << 24
    if gpusim.simulate(algo, seq=hi, gpu=gpu, **shape).fits_in_hbm:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if gpusim.simulate(algo, seq=mid, gpu=gpu, **shape).fits_in_hbm else (lo, mid)
    return lo


def nonmatmul_shares(gpu="A100-40GB", seq=4096, head_dims=(64, 128), block=64):
    """flash1 against flash2 on the same block x block tiles (FA2 benchmark shape): per head_dim and algo the
    Result, the non-matmul share of its FLOPs and of its compute time (gpusim's roofline terms)."""
    out = []
    for d in head_dims:
        batch, heads = gpusim.fa2_shape(seq, d)
        for algo in ("flash1", "flash2"):
            r = gpusim.simulate(algo, seq=seq, head_dim=d, batch=batch, heads=heads, gpu=gpu, block_q=block,
                                block_kv=block)
            t = time_terms(r)[0]
            out.append({"head_dim": d, "algo": algo, "result": r,
                        "flops_share": r.flops_other / (r.flops_matmul + r.flops_other),
                        "time_share": t["t_other"] / (t["t_matmul"] + t["t_other"])})
    return out


def nonmatmul_rows(gpu="A100-40GB", seq=4096, head_dims=(64, 128), block=64):
    """nonmatmul_shares as a table."""
    return [{"head_dim": s["head_dim"], "algo": s["algo"], "non-matmul FLOPs": f"{s['flops_share']:.1%}",
             "non-matmul compute time": f"{s['time_share']:.1%}",
             "predicted": fmt_time(s["result"].predicted_time_s)} for s in nonmatmul_shares(gpu, seq, head_dims, block)]


def nonmatmul_sentence(gpu="A100-40GB", seq=4096, head_dims=(64, 128), block=64):
    """The non-matmul share of compute time per algorithm, in numbers and in words (formatting.share_words)."""
    shares = nonmatmul_shares(gpu, seq, head_dims, block)
    parts = []
    for algo in ("flash1", "flash2"):
        mine = [s["time_share"] for s in shares if s["algo"] == algo]
        parts.append(f"{algo} {span(mine, '{:.0%}')} ({share_words(max(mine))})")
    return (f"gpusim's non-matmul share of compute time on {gpusim.get_gpu(gpu).name}: " + "; ".join(parts) +
            " (the source: ~50% for FlashAttention-1, ~30% for -2).")


def fa3_rows(gpu="H100-SXM", seq=8192, head_dim=128, causal=False):
    """The FlashAttention-3 claims of the blog post "FlashAttention: The GPU Memory Hack That Changed
    Everything" beside gpusim's predictions (FA2 benchmark shape)."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    shape = dict(seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal, gpu=gpu)
    base = gpusim.simulate("flash2", **shape)
    rows = []
    for algo, dtype, claim in (("flash2", "fp16", "baseline"), ("hopper", "fp16", "~1.5x faster than FA-2"),
                               ("hopper", "fp8", "~2x faster than FA-2")):
        r = gpusim.simulate(algo, dtype=dtype, **shape)
        peak = r.config.gpu.matmul_flops_per_s(dtype)
        rows.append({"kernel": f"{algo} {dtype}", "the blog post claims": claim,
                     "predicted time": fmt_time(r.predicted_time_s),
                     "predicted speedup over flash2 fp16": f"{base.predicted_time_s / r.predicted_time_s:.2f}x",
                     "matmul utilization": (f"{r.flops_matmul / r.predicted_time_s / peak:.0%} of "
                                            f"{peak / 1e12:,.0f} TFLOP/s"),
                     f"bytes {SM_BYTES}": fmt_bytes(r.hbm_bytes)})
    return rows

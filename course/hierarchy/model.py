"""What notebook 1 shows from gpusim alone, as data: the presets' memory hierarchy, the kitchen's numbers
and each GPU's ridge points. No widgets, no plotting.
"""
import gpusim
from gpusim.units import fmt_bytes

from ..tables import supported_dtypes


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


# The source's kitchen (the blog post): each number as it quotes it, and how a preset gives the same quantity.
KITCHEN = {"SRAM ~20 MB": (20e6, lambda g: g.sm_count * g.sram_bytes_per_sm),
           "~19 TB/s": (19e12, lambda g: g.sram_bytes_per_s), "HBM ~80 GB": (80e9, lambda g: g.hbm_bytes),
           "~3 TB/s": (3e12, lambda g: g.hbm_bytes_per_s)}


def kitchen_ratio_sentence():
    """How many times the fridge's bandwidth the quote makes the counter's (its ~19 TB/s over its ~3 TB/s, the
    numbers of two GPUs) against the same ratio on one GPU: the presets that have a published SRAM bandwidth."""
    sram, hbm = KITCHEN["~19 TB/s"][0], KITCHEN["~3 TB/s"][0]
    own = [f"{g.name} {g.sram_bytes_per_s / g.hbm_bytes_per_s:.0f}x" for g in gpusim.PRESETS.values()
           if g.sram_bytes_per_s]
    return (f"The quote's counter is {sram / hbm:.1f}x as fast as its fridge (~{sram / 1e12:.0f} TB/s over "
            f"~{hbm / 1e12:.0f} TB/s); on one GPU, the presets with a published SRAM bandwidth: {', '.join(own)}.")


def ridge_rows(dtypes=("fp16", "fp8", "fp32")):
    """The ridge point (FLOPs per byte of HBM traffic) of every preset and dtype it supports; a GPU without
    tensor cores for a dtype says so ("no fp8 tensor cores")."""
    return [{"GPU": g.name} | {f"ridge point {d} (FLOP/B)": (round(g.matmul_flops_per_s(d) / g.hbm_bytes_per_s)
                                                             if d in supported_dtypes(g) else f"no {d} tensor cores")
                               for d in dtypes} for g in gpusim.PRESETS.values()]

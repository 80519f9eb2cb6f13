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


def ridge_rows(dtypes=("fp16", "fp8", "fp32")):
    """The ridge point (FLOPs per byte of HBM traffic) of every preset and dtype it supports; a GPU without
    tensor cores for a dtype says so ("no fp8 tensor cores")."""
    return [{"GPU": g.name} | {f"ridge point {d} (FLOP/B)": (round(g.matmul_flops_per_s(d) / g.hbm_bytes_per_s)
                                                             if d in supported_dtypes(g) else f"no {d} tensor cores")
                               for d in dtypes} for g in gpusim.PRESETS.values()]

"""Notebook 1's measurements beside gpusim: results/<gpu>/ceilings.json's bandwidth and matmul ceilings
against the preset's, and l2_reuse.json's L2 a re-read finds against gpusim's rule (GPU.l2_reuse_bytes).
"""
import gpusim


def ceilings_rows(data, gpu="H200"):
    """Measured ceilings (the JSON of results/<gpu>/ceilings.json) beside the preset's datasheet numbers."""
    g = gpusim.get_gpu(gpu)
    pairs = [("HBM bandwidth (copy)", data["copy_bytes_per_s"], g.hbm_bytes_per_s, "TB/s", 1e12),
             ("fp16 matmul", data["matmul_float16_flops_per_s"], g.fp16_matmul_flops_per_s, "TFLOP/s", 1e12),
             ("fp8 matmul", data["matmul_fp8_e4m3_flops_per_s"], g.fp8_matmul_flops_per_s, "TFLOP/s", 1e12)]
    return [{"quantity": name, "measured": f"{m / scale:,.2f} {unit}", "datasheet (preset)": f"{d / scale:,.2f} {unit}",
             "measured / datasheet": f"{m / d:.0%}"} for name, m, d, unit, scale in pairs] + [
        {"quantity": "measured on", "measured": f"{data['gpu']}, {data['date']}", "datasheet (preset)": g.name,
         "measured / datasheet": ""}]


L2_PATTERNS = {"every_sm": ("every SM reads it all", True), "spread": ("spread over the SMs", False),
               "own": ("each SM its own slice", False)}  # pattern: (what it is, read from every SM)


def l2_reuse_rows(data, gpu="H200"):
    """Per pattern of results/<gpu>/l2_reuse.json: the working set at which half the re-reads missed, beside
    the L2 gpusim lets that pattern fill."""
    g = gpusim.get_gpu(gpu)
    rows = []
    for pattern, (what, every_sm) in L2_PATTERNS.items():
        measured, rule = data["half_missed_at_bytes"][pattern], g.l2_reuse_bytes(every_sm)
        rows.append({"pattern": what, "half the re-reads miss at": f"{measured / 2**20:.1f} MiB",
                     "gpusim's L2 for it": f"{rule / 2**20:.0f} MiB of {g.l2_bytes / 2**20:.0f}",
                     "gpusim / measured": f"{rule / measured:.2f}"})
    return rows

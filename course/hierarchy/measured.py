"""Notebook 1's measurements beside gpusim: results/<gpu>/ceilings.json's bandwidth and matmul ceilings
against the preset's.
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

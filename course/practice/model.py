"""What notebook 7 shows from gpusim alone, as data: the FlashAttention-3 claims beside gpusim's predictions."""
import gpusim
from gpusim.units import fmt_bytes, fmt_time

from ..formatting import SM_BYTES


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

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
        rows.append({"kernel": f"{algo} {dtype}", "tile": f"{r.config.block_q} x {r.config.block_kv}",
                     "the blog post claims": claim,
                     "predicted time": fmt_time(r.predicted_time_s),
                     "predicted speedup over flash2 fp16": f"{base.predicted_time_s / r.predicted_time_s:.2f}x",
                     "matmul utilization": (f"{r.flops_matmul / r.predicted_time_s / peak:.0%} of "
                                            f"{peak / 1e12:,.0f} TFLOP/s"),
                     f"bytes {SM_BYTES}": fmt_bytes(r.hbm_bytes)})
    return rows


def fa3_bytes_sentence(gpu="H100-SXM", seq=8192, head_dim=128, causal=False):
    """fa3_rows' bytes compared at one tile, the Hopper kernel's: flash2's and the Hopper kernel's in fp16 and fp8,
    beside flash2's at its own tile (the byte column of fa3_rows differs with the tile each kernel launches)."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    shape = dict(seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal, gpu=gpu)
    h16, h8 = (gpusim.simulate("hopper", dtype=dtype, **shape) for dtype in ("fp16", "fp8"))
    tile = dict(block_q=h16.config.block_q, block_kv=h16.config.block_kv)
    same, own = gpusim.simulate("flash2", **shape, **tile), gpusim.simulate("flash2", **shape)
    return (f"At the Hopper kernel's tile, {tile['block_q']} x {tile['block_kv']}, flash2 requests "
            f"{fmt_bytes(same.hbm_bytes)} and the Hopper kernel {fmt_bytes(h16.hbm_bytes)} in fp16, "
            f"{fmt_bytes(h8.hbm_bytes)} in fp8 ({h8.hbm_bytes / h16.hbm_bytes:.2f}x); at its own tile, "
            f"{own.config.block_q} x {own.config.block_kv}, flash2 requests {fmt_bytes(own.hbm_bytes)}.")

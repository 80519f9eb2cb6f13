"""What notebooks 4 and 5 show from gpusim alone, as data: HBM traffic per tensor, the causal mask's tiles
and the non-matmul share of compute time. No widgets, no plotting.
"""
import math

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from ..formatting import DRAM_BYTES, SM_BYTES, range_words, span
from ..standard.model import moved
from ..tables import time_terms


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
    """The non-matmul share of compute time per algorithm, in numbers and in words (formatting.range_words)."""
    shares = nonmatmul_shares(gpu, seq, head_dims, block)
    parts = []
    for algo in ("flash1", "flash2"):
        mine = [s["time_share"] for s in shares if s["algo"] == algo]
        parts.append(f"{algo} {span(mine, '{:.0%}')} ({range_words(mine)})")
    return (f"gpusim's non-matmul share of compute time on {gpusim.get_gpu(gpu).name}, N = {seq:,}: "
            + "; ".join(parts) +
            " (the source: ~50% for FlashAttention-1, ~30% for -2).")


def sm_bandwidth_phrase(gpu="A100-40GB"):
    """What one SM can move from DRAM in gpusim (GPU.port_bytes_per_s) against its even share of the GPU's
    bandwidth, and how few SMs that rate keeps DRAM busy with: bandwidth, unlike FLOPs, is not split per SM."""
    g = gpusim.get_gpu(gpu)
    port, share = g.port_bytes_per_s("hbm"), g.hbm_bytes_per_s / g.sm_count
    enough = math.ceil(g.hbm_bytes_per_s / port)
    return (f"{port / 1e9:.0f} GB/s from DRAM on the {g.name}, {port / share:.1f}x an SM's even share "
            f"(1/{g.sm_count} of {g.hbm_bytes_per_s / 1e9:,.0f} GB/s): {enough} SMs, {enough / g.sm_count:.0%} of "
            f"them, keep DRAM busy")


def loop_order_phrase(gpu="A100-40GB", seq=8192, head_dim=64):
    """flash1 against flash2 at gpusim's default blocks, FA2 benchmark shape (notebook 5's per-tensor table): flash1's
    O, l, m round trips, flash2's K and V reads, the bytes the SMs request and those reaching DRAM."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    r1, r2 = (gpusim.simulate(a, seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=gpu)
              for a in ("flash1", "flash2"))
    round_trips, kv = (fmt_bytes(sum(moved(r, t) for t in tensors)) for r, tensors in ((r1, "Olm"), (r2, "KV")))
    dram = [fmt_bytes(r.dram_read_bytes + r.dram_write_bytes) for r in (r1, r2)]
    return (f"on the {r1.config.gpu.name} at N = {seq:,}, flash1's O, ℓ and m round trips come to {round_trips} and "
            f"flash2's K and V reads to {kv}; the SMs request {fmt_bytes(r1.hbm_bytes)} for flash1 and "
            f"{fmt_bytes(r2.hbm_bytes)} for flash2, of which {dram[0]} and {dram[1]} reach DRAM")

"""Notebook 2's measurements beside gpusim: Nsight Compute's bytes and times per algorithm
(results/<gpu>/ncu.json, course/nsight.py) next to gpusim's prediction for the same shape.
"""
import gpusim
from gpusim.units import fmt_bytes, fmt_time

from ..nsight import kernel_names


def ncu_measured(rows, seq, head_dim, causal=False, algos=("naive", "flash2")):
    """Nsight Compute's DRAM bytes (read + written) and kernel time of each algorithm at one size (rows of
    ncu.json), summed over its kernels: {algo: (bytes, seconds, what)}, the format measured_rows takes."""
    out = {}
    for algo in algos:
        names = kernel_names(algo)
        picked = [r for r in rows if r["kernel"] in names and (r["seq"], r["head_dim"], r["causal"]) ==
                  (seq, head_dim, causal)]
        if not picked:
            raise ValueError(f"ncu.json has no {algo} launch at N={seq}, d={head_dim}, causal={causal}")
        total = {q: sum(r["measured"] for r in picked if r["quantity"] == q) for q in ("dram_read_bytes",
                                                                                     "dram_write_bytes", "time_s")}
        out[algo] = (total["dram_read_bytes"] + total["dram_write_bytes"], total["time_s"],
                     f"the project's Triton kernel{'s' if len(names) > 1 else ''} {', '.join(names)}")
    return out


def measured_rows(measured, gpu, seq, head_dim, **shape):
    """Measured DRAM traffic and time ({algo: (bytes, seconds, what was measured)}) beside gpusim's DRAM
    bytes and predicted time for the same shape: FlashAttention-2's benchmark batch and heads (gpusim.fa2_shape)
    unless `shape` names them."""
    shape = dict(zip(("batch", "heads"), gpusim.fa2_shape(seq, head_dim))) | shape
    rows = []
    for algo, (nbytes, seconds, what) in measured.items():
        r = gpusim.simulate(algo, gpu=gpu, seq=seq, head_dim=head_dim, **shape)
        rows.append({"algo": algo, "measured": what, "measured DRAM traffic": fmt_bytes(nbytes),
                     "gpusim DRAM traffic": fmt_bytes(r.dram_read_bytes + r.dram_write_bytes),
                     "measured time": fmt_time(seconds), "gpusim predicted": fmt_time(r.predicted_time_s)})
    return rows


def copy_time_sentence(measured, ceilings):
    """Naive attention's measured DRAM bytes (ncu_measured's) moved at the measured copy bandwidth (ceilings.json)
    against its measured time, and how many times fewer bytes FlashAttention-2 moved."""
    nbytes, seconds, _ = measured["naive"]
    rate = ceilings["copy_bytes_per_s"]
    return (f"Moving naive attention's measured bytes at the H200's measured copy bandwidth ({rate / 1e12:.2f} TB/s) "
            f"takes {nbytes / rate * 1e3:.2f} ms of its measured {seconds * 1e3:.2f} ms; FlashAttention-2 moved "
            f"{nbytes / measured['flash2'][0]:.0f}x fewer bytes.")

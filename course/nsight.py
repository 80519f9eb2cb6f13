"""Nsight Compute against gpusim: the rows of results/<gpu>/ncu.json (one per kernel launch and quantity,
each with gpusim's `simulated` value, the `measured` one and their `rel_err`), summed per algorithm,
grouped per kernel and told as sentences.
"""
import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .formatting import span


# Times are compared for launches of 100 us or more: benchmarks/ncu.py's MIN_TIME_S, which ncu.json does not
# record (its time target does: ncu.json["targets"]["time_s"]).
MIN_TIME_S = 100e-6


def kernel_names(algo):
    """The kernels gpusim launches for an algorithm, as ncu.json names them: ("qk", "softmax", "pv") for
    naive, (algo,) for the fused ones."""
    return tuple(k.name for k in gpusim.simulate(algo, seq=16, head_dim=16).kernels)


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


def ncu_row(rows, kernel, quantity, seq, head_dim, causal=False):
    """The one ncu.json row of a kernel, quantity and size."""
    return next(r for r in rows if (r["kernel"], r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
                (kernel, quantity, seq, head_dim, causal))


def _ncu_groups(rows, quantity, min_time_s=MIN_TIME_S):
    groups = {}
    for r in rows:
        if r["quantity"] == quantity and r["rel_err"] is not None and not (
                quantity == "time_s" and r["measured"] < min_time_s):
            groups.setdefault((r["kernel"], r["head_dim"], r["causal"]), []).append(r)
    return groups


def ncu_error_rows(rows, quantity, min_time_s=MIN_TIME_S):
    """Per kernel, head dimension and mask: how far gpusim is from Nsight Compute for one quantity of
    ncu.json, (gpusim - measured) / measured, over all lengths and at the longest; byte counts also say in
    how many launches they were equal to the byte. Times of launches under min_time_s are left out."""
    out = []
    for (kernel, d, causal), rs in _ncu_groups(rows, quantity, min_time_s).items():
        rs = sorted(rs, key=lambda r: r["seq"])
        row = {"kernel": kernel, "d": d, "causal": causal, "launches": len(rs),
               "N": f"{rs[0]['seq']:,} to {rs[-1]['seq']:,}"}
        if quantity != "time_s":
            row["equal to the byte"] = sum(r["simulated"] == r["measured"] for r in rs)
        row |= {"(gpusim - measured) / measured": span([r["rel_err"] for r in rs], "{:+.1%}"),
                "at the longest N": f"{rs[-1]['rel_err']:+.1%}"}
        out.append(row)
    return out


def ncu_findings(rows, targets, min_time_s=MIN_TIME_S):
    """What Nsight Compute found against gpusim (rows of ncu.json), as sentences computed from the rows;
    `targets` is ncu.json's {quantity: largest |rel_err| aimed for}: the DRAM reads' and the time's are quoted."""
    target_time, target_reads = targets["time_s"], targets["dram_read_bytes"]

    def errs(quantity, kernels=None, causal=None):
        return [r for (k, _, c), rs in _ncu_groups(rows, quantity, min_time_s).items() for r in rs
                if (kernels is None or k in kernels) and (causal is None or c == causal)]

    l2 = _ncu_groups(rows, "l2_to_sm_bytes")
    kernels = list(dict.fromkeys(k for k, _, _ in l2))
    exact = [k for k in kernels if all(r["simulated"] == r["measured"] for r in errs("l2_to_sm_bytes", {k}))]
    out = [f"Bytes from L2 into the SMs: equal to gpusim's count to the byte in every launch of "
           f"{', '.join(exact)} ({len(errs('l2_to_sm_bytes', exact))} launches)."]
    naive_kernels = kernel_names("naive")
    naive = errs("l2_to_sm_bytes", naive_kernels)
    if naive:
        out.append(f"The naive kernels ({', '.join(naive_kernels)}): within "
                   f"{max(abs(r['rel_err']) for r in naive):.0%} of gpusim's count.")
    plain, masked = errs("l2_to_sm_bytes", {"flash1"}, False), errs("l2_to_sm_bytes", {"flash1"}, True)
    if plain and masked:
        more = [r["measured"] / r["simulated"] - 1 for r in masked]
        out.append(f"flash1: within {max(abs(r['rel_err']) for r in plain):.1%} without the mask; with the causal "
                   f"mask the SMs read {span(more, '{:.0%}')} more than gpusim counts.")
    writes = errs("dram_write_bytes")
    out.append(f"DRAM writes: within {max(abs(r['rel_err']) for r in writes):.0%} of gpusim's L2 model in all "
               f"{len(writes)} launches.")
    reads = errs("dram_read_bytes")
    far = sorted((r for r in reads if abs(r["rel_err"]) > target_reads), key=lambda r: r["rel_err"])
    out.append(f"DRAM reads: within {target_reads:.0%} in {len(reads) - len(far)} of {len(reads)} launches"
               + ("; the others: " + ", ".join(f"{r['kernel']} N={r['seq']:,} d={r['head_dim']}"
                                               f"{' causal' if r['causal'] else ''} ({r['rel_err']:+.0%})"
                                               for r in far) if far else "") + ".")
    times = errs("time_s")
    below = sum(r["simulated"] < r["measured"] for r in times)
    close = [f"{k} d={d}{' causal' if c else ''}" for (k, d, c), rs in _ncu_groups(rows, "time_s", min_time_s).items()
             if abs(max(rs, key=lambda r: r["seq"])["rel_err"]) <= target_time]
    out.append(f"Time: gpusim's prediction is below the measured time in {below} of {len(times)} launches (of "
               f"{min_time_s * 1e6:.0f} us or more), by up to {-min(r['rel_err'] for r in times):.0%}; within "
               f"{target_time:.0%} at the longest N for: {', '.join(close)}.")
    return out


def measured_rows(measured, gpu, **shape):
    """Measured DRAM traffic and time ({algo: (bytes, seconds, what was measured)}) beside gpusim's DRAM
    bytes and predicted time for the same shape."""
    rows = []
    for algo, (nbytes, seconds, what) in measured.items():
        r = gpusim.simulate(algo, gpu=gpu, **shape)
        rows.append({"algo": algo, "measured": what, "measured DRAM traffic": fmt_bytes(nbytes),
                     "gpusim DRAM traffic": fmt_bytes(r.dram_read_bytes + r.dram_write_bytes),
                     "measured time": fmt_time(seconds), "gpusim predicted": fmt_time(r.predicted_time_s)})
    return rows

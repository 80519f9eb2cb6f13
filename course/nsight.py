"""Nsight Compute against gpusim: the rows of results/<gpu>/ncu.json (one per kernel launch and quantity,
each with gpusim's `simulated` value, the `measured` one and their `rel_err`): what the chapters that read
it share (the kernels of an algorithm, the rows grouped per kernel). Notebook 2 sums them per algorithm
(standard/measured.py), 6 tells them as sentences (practice/measured.py), 12 lists gpusim's error per kernel
(provenance/measured.py).
"""
import gpusim

# Times are compared for launches of 100 us or more: benchmarks/ncu.py's MIN_TIME_S, which ncu.json does not
# record (its time target does: ncu.json["targets"]["time_s"]).
MIN_TIME_S = 100e-6


def kernel_names(algo):
    """The kernels gpusim launches for an algorithm, as ncu.json names them: ("qk", "softmax", "pv") for
    naive, (algo,) for the fused ones (on the H200, the GPU ncu.json profiled: the hopper pass needs one)."""
    return tuple(k.name for k in gpusim.simulate(algo, seq=64, head_dim=64, gpu="H200").kernels)


def _ncu_groups(rows, quantity, min_time_s=MIN_TIME_S):
    groups = {}
    for r in rows:
        if r["quantity"] == quantity and r["rel_err"] is not None and not (
                quantity == "time_s" and r["measured"] < min_time_s):
            groups.setdefault((r["kernel"], r["head_dim"], r["causal"]), []).append(r)
    return groups

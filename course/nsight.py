"""Nsight Compute against gpusim: the rows of results/<gpu>/ncu.json (one per kernel launch and quantity,
each with gpusim's `simulated` value, the `measured` one and their `rel_err`): what the chapters that read
it share (the kernels of an algorithm, the rows grouped per kernel). Notebook 2 sums them per algorithm
(standard/measured.py), 6 tells them as sentences (practice/measured.py), 12 lists gpusim's error per kernel
(provenance/measured.py).
"""
import json
from pathlib import Path

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


def flash1_hint_rows(results, gpu="H200-measured"):
    """results/<gpu>/flash1_l1.json (benchmarks/flash1_l1.py): per shape, {variant: its row} ("evict_last", the kernel
    as it is; "plain", without the hint; "evict_last_o") with gpusim's L2 -> SM count of the kernel as it is (`count`),
    of its tensors alone (`tensors`, less its spill reloads) and its time (`predicted_ms`)."""
    shapes = {}
    for r in json.loads((Path(results) / "flash1_l1.json").read_text())["rows"]:
        shapes.setdefault((r["head_dim"], r["causal"], r["seq"]), {})[r["variant"]] = r
    out = []
    for (d, causal, seq), variants in shapes.items():
        shape = {key: variants["evict_last"][key] for key in ("dtype", "batch", "heads", "block_q", "block_kv")}
        k = gpusim.simulate("flash1", seq=seq, head_dim=d, causal=causal, **shape, gpu=gpu).kernels[0]
        out.append(dict(variants, head_dim=d, causal=causal, seq=seq, count=k.read_bytes,
                        tensors=k.read_bytes - k.spill_read_bytes, predicted_ms=k.predicted_time_s * 1e3))
    return out


def tensor_bytes_over_count(row, counted):
    """A flash1_l1.json row's tensors' L2 -> SM bytes (Nsight's total less its local-memory reloads) over `counted`."""
    return (row["l2_to_sm_bytes"] - row["spill_l2_to_sm_bytes"]) / counted

"""Where standard attention's time goes, operation by operation, as in Figure 1 (right) of the
FlashAttention paper: the kernels of standard attention (S = QKᵀ, softmax, O = PV) beside FlashAttention-2's
one fused kernel, from gpusim's predicted time and, where the project measured them, Nsight Compute's kernel
times (results/<gpu>/ncu.json) for the same shape.
"""
import matplotlib.pyplot as plt
import numpy as np

import gpusim

from ..plots import legend_outside

OPERATIONS = {"qk": "matmul S = QKᵀ", "softmax": "softmax", "pv": "matmul O = PV", "flash2": "fused kernel"}
COLORS = {"qk": "tab:blue", "softmax": "tab:green", "pv": "tab:cyan", "flash2": "tab:purple"}


def operation_times(seq, head_dim, causal=False, gpu="H200-measured", ncu_rows=None):
    """One row per kernel of naive attention and FlashAttention-2 at seq and head_dim (FA2 benchmark batch x
    heads): gpusim's predicted seconds, and Nsight Compute's measured ones where ncu_rows has that launch."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    rows = []
    for algo in ("naive", "flash2"):
        r = gpusim.simulate(algo, seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal, gpu=gpu)
        for k in r.kernels:
            measured = [x["measured"] for x in ncu_rows or [] if (x["kernel"], x["quantity"], x["seq"], x["head_dim"],
                                                                 x["causal"]) == (k.name, "time_s", seq, head_dim,
                                                                                  causal)]
            rows.append({"algo": algo, "kernel": k.name, "operation": OPERATIONS[k.name],
                         "gpusim_s": k.predicted_time_s, "measured_s": measured[0] if measured else None,
                         "bound": k.bound})
    return rows


def shares(rows, key="gpusim_s"):
    """{kernel: its share of its algorithm's time} for the rows that have `key`."""
    totals = {}
    for r in rows:
        if r[key] is not None:
            totals[r["algo"]] = totals.get(r["algo"], 0) + r[key]
    return {r["kernel"]: r[key] / totals[r["algo"]] for r in rows if r[key] is not None}


def softmax_sentence(rows):
    """The softmax's share of standard attention's time, gpusim's and measured (operation_times' rows)."""
    predicted, measured = shares(rows)["softmax"], shares(rows, "measured_s")["softmax"]
    return (f"The softmax, which does a few FLOPs per score, takes {predicted:.0%} of standard attention's time in "
            f"gpusim and {measured:.0%} on the H200; the two matmuls, all the FLOPs, take the rest.")


def figure1(rows, title):
    """Stacked bars of time per operation: standard attention and FlashAttention-2, predicted and measured."""
    fig, ax = plt.subplots(figsize=(9, 3.8), layout="constrained")
    bars = [(algo, key) for algo in ("naive", "flash2") for key in ("gpusim_s", "measured_s")
            if any(r["algo"] == algo and r[key] is not None for r in rows)]
    for x, (algo, key) in enumerate(bars):
        bottom = 0.0
        for r in (r for r in rows if r["algo"] == algo):
            ms = r[key] * 1e3
            ax.barh(x, ms, left=bottom, color=COLORS[r["kernel"]], ec="white",
                    label=r["operation"] if key == "gpusim_s" else None)
            bottom += ms
        ax.text(bottom, x, f" {bottom:.2f} ms", va="center", fontsize=10)
    names = {"naive": "standard attention", "flash2": "FlashAttention-2"}
    ax.set_yticks(np.arange(len(bars)), [f"{names[a]}\n({'gpusim' if k == 'gpusim_s' else 'Nsight, H200'})"
                                          for a, k in bars])
    ax.invert_yaxis()
    ax.margins(x=0.15)
    ax.set(xlabel="ms", title=title)
    legend_outside(ax)
    return fig


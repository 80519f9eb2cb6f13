"""Notebook 2's figure of gpusim's time terms per kernel (the Figure 1 breakdown is breakdown.py)."""
import matplotlib.pyplot as plt
import numpy as np

from ..plots import legend_outside
from ..tables import time_terms


def time_terms_figure(results, title):
    """Grouped bars per kernel of the results: memory time, matmul time, non-matmul time and gpusim's predicted
    time (tables.time_terms)."""
    rows = [t for r in results for t in time_terms(r)]
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    keys = [("t_memory", "memory (bytes / bandwidth)", "tab:red"), ("t_matmul", "matmul (tensor cores)", "tab:blue"),
            ("t_other", "non-matmul (CUDA cores)", "tab:green"), ("predicted", "predicted (gpusim)", "k")]
    x = np.arange(len(rows))
    for n, (key, label, color) in enumerate(keys):
        ax.bar(x + (n - 1.5) * 0.2, [r[key] * 1e6 for r in rows], 0.2, color=color, label=label,
               alpha=0.35 if key == "predicted" else 0.85)
    ax.set_xticks(x, [r["label"] for r in rows])
    ax.set(ylabel="µs", title=title, yscale="log")
    ax.grid(alpha=0.3, axis="y")
    legend_outside(ax)
    return fig

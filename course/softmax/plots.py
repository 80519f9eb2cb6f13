"""Notebook 3's figure: the ULP distances between two computations of the same thing (bits.py)."""
import matplotlib.pyplot as plt
import numpy as np

ULP_BINS = 16  # distances of ULP_BINS or more share the last bar


def ulp_figure(comparisons):
    """Histograms of the ULP distance between two computations, one panel per comparison
    (bits.bit_comparison and bits.attention_bits results)."""
    fig, axes = plt.subplots(1, len(comparisons), figsize=(4 * len(comparisons), 3), layout="constrained",
                             squeeze=False)
    for ax, c in zip(axes[0], comparisons):
        counts = np.bincount(np.minimum(c["ulps"].ravel(), ULP_BINS), minlength=ULP_BINS + 1)
        ax.bar(np.arange(ULP_BINS + 1), counts / c["ulps"].size, color="tab:blue")
        ax.set_xticks([0, ULP_BINS // 2, ULP_BINS], ["0", str(ULP_BINS // 2), f"≥{ULP_BINS}"])
        ax.set(title=f"{c['label']}: {c['equal_fraction']:.1%} bit-identical", xlabel="ULP distance",
               ylabel="share of elements")
        ax.grid(alpha=0.3, axis="y")
    return fig

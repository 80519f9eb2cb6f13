"""Notebook 6's figure: the measured benchmarks beside gpusim's predictions."""
import matplotlib.pyplot as plt

import gpusim

from ..plots import COLORS, FONT_PT
from .measured import bench_group, predictions
from ..provenance.plots import PROVIDER_STYLE


def bench_figure(rows, predicted=None):
    """Measured attention benchmarks (rows of results/*/bench.json) against sequence length: time per
    provider, speedup over the `naive` provider, and peak memory. `predicted` ({algo: [Result]}) overlays
    gpusim's predictions dashed."""
    fig, (ax_t, ax_s, ax_m) = plt.subplots(1, 3, figsize=(14, 5.5), layout="constrained")
    ok = [r for r in rows if r.get("ms") is not None]
    by_provider = {}
    for r in sorted(ok, key=lambda r: r["seq"]):
        by_provider.setdefault(r["provider"], []).append(r)
    naive = {r["seq"]: r["ms"] for r in by_provider.get("naive", [])}
    for provider, rs in by_provider.items():
        color, style = PROVIDER_STYLE.get(provider, (COLORS.get(provider), "-"))
        line = dict(marker="o", ms=4, ls=style, color=color)
        ax_t.plot([r["seq"] for r in rs], [r["ms"] for r in rs], **line, label=f"{provider} (measured)")
        ax_m.plot([r["seq"] for r in rs], [r["peak_bytes"] / 2**30 for r in rs], **line, label=provider)
        sped = [r for r in rs if r["seq"] in naive and provider != "naive"]
        ax_s.plot([r["seq"] for r in sped], [naive[r["seq"]] / r["ms"] for r in sped], **line, label=provider)
    for algo, results in (predicted or {}).items():
        seqs = [r.config.seq for r in results]
        color = COLORS.get(algo)
        ax_t.plot(seqs, [r.predicted_time_s * 1e3 for r in results], "--", color=color, label=f"{algo} (gpusim)")
        ax_m.plot(seqs, [r.hbm_peak_bytes / 2**30 for r in results], "--", color=color, alpha=0.6)
    for algo, curve in gpusim.speedups([r for results in (predicted or {}).values() for r in results]).items():
        ax_s.plot(list(curve), list(curve.values()), "--", color=COLORS.get(algo), label=f"{algo} (gpusim)")
    for ax, title, ylabel in [(ax_t, "time", "ms"), (ax_s, "speedup over naive", "x"), (ax_m, "peak memory", "GiB")]:
        ax.set(title=title, ylabel=ylabel, xlabel="sequence length N", xscale="log")
        ax.grid(alpha=0.3)
    ax_t.set_yscale("log")
    ax_m.set_yscale("log")
    handles, labels = ax_t.get_legend_handles_labels()  # every provider measured, and gpusim's lines: once, under all
    fig.legend(handles, labels, loc="outside lower center", ncols=min(5, len(labels) or 1), fontsize=FONT_PT)
    return fig


def bench_figures(rows, causal=False, head_dims=(64, 128), gpu="H200-measured"):
    """bench_figure of bench.json's fp16 rows, one per head dimension, with gpusim's predictions on `gpu`."""
    figures = []
    for head_dim in head_dims:
        group = bench_group(rows, dtype="fp16", head_dim=head_dim, causal=causal)
        measured = tuple(a for a in ("naive", "flash1", "flash2") if any(r["provider"] == a for r in group))
        fig = bench_figure(group, predictions(group, gpu=gpu, algos=measured))  # gpusim's lines of what ran
        fig.suptitle(f"d = {head_dim}{', causal' if causal else ''}: measured (solid) and gpusim (dashed)")
        figures.append(fig)
    return figures

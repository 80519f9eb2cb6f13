"""Notebooks 4 and 5's figures: gpusim's sweeps (also `python -m gpusim_course.provenance.plots sweep`) and
score grids in tiles side by side.
"""
import matplotlib.pyplot as plt

import gpusim

from ..plots import COLORS, TRAFFIC_TITLE, draw_score_grid, fa2_shape_text, legend_outside, score_grid_axes


def _by_algo(results):
    out = {}
    for r in results:
        out.setdefault(r.config.algo, []).append(r)
    return out


def sweep_figure(results):
    """Four panels against sequence length: predicted time, speedup over naive, HBM bytes moved, and
    peak HBM footprint with the GPU's capacity drawn in. Configurations that do not fit are hollow."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), layout="constrained")
    (ax_t, ax_s), (ax_b, ax_m) = axes
    for algo, rs in _by_algo(results).items():
        seqs = [r.config.seq for r in rs]
        fits = [r for r in rs if r.fits_in_hbm]
        color = COLORS.get(algo)
        ax_t.plot([r.config.seq for r in fits], [r.predicted_time_s * 1e3 for r in fits], "o-", color=color, label=algo)
        ax_b.plot(seqs, [r.hbm_bytes / 2**30 for r in rs], "o-", color=color, label=algo)
        ax_b.plot(seqs, [(r.dram_read_bytes + r.dram_write_bytes) / 2**30 for r in rs], "--", color=color)
        ax_m.plot(seqs, [r.hbm_peak_bytes / 2**30 for r in rs], "-", color=color, label=algo)
        ax_m.plot([r.config.seq for r in fits], [r.hbm_peak_bytes / 2**30 for r in fits], "o", color=color)
        ax_m.plot([r.config.seq for r in rs if not r.fits_in_hbm],
                  [r.hbm_peak_bytes / 2**30 for r in rs if not r.fits_in_hbm], "o", mfc="none", color=color)
    for algo, curve in gpusim.speedups(results).items():
        ax_s.plot(list(curve), list(curve.values()), "o-", color=COLORS.get(algo), label=f"naive's time / {algo}'s")
    gpu = results[0].config.gpu
    ax_m.axhline(gpu.hbm_bytes / 2**30, color="k", ls="--", lw=1, label=f"{gpu.name} HBM")
    c = results[0].config
    fig.suptitle(f"Predicted on {gpu.name}: d={c.head_dim}, {c.dtype}{', causal' if c.causal else ''}, "
                 f"{fa2_shape_text()}")
    for ax, title, ylabel in [(ax_t, "predicted time", "ms"), (ax_s, "speedup over naive attention", "x"),
                              (ax_b, TRAFFIC_TITLE, "GiB"), (ax_m, "peak HBM footprint", "GiB")]:
        ax.set(title=title, ylabel=ylabel, xlabel="sequence length N")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        legend_outside(ax)
    for ax in (ax_t, ax_b, ax_m):
        ax.set_yscale("log")
    return fig


def score_grid_figure(tilings, titles):
    """Score grids side by side (draw_score_grid), e.g. without and with the causal mask."""
    fig, axes = plt.subplots(1, len(tilings), figsize=(4.5 * len(tilings), 4), layout="constrained", squeeze=False)
    for ax, tiling, title in zip(axes[0], tilings, titles):
        score_grid_axes(ax, tiling.seq_q, tiling.seq_kv)
        draw_score_grid(ax, tiling)
        ax.set_xlabel(title)
    return fig


def causal_grid_figure(seq=512, head_dim=64, block=64):
    """score_grid_figure of FlashAttention-2's tiles without and with the causal mask, one `block` x `block` tile
    a cell: the hatched tiles the mask skips."""
    tilings = [gpusim.simulate("flash2", seq=seq, head_dim=head_dim, block_q=block, block_kv=block,
                               causal=causal).config.tiling for causal in (False, True)]
    return score_grid_figure(tilings, ["not causal", "causal: hatched tiles are skipped"])

"""The training notebook's figures: attention's training memory across a model's layers (the source's
O(n²) -> O(n)), where FlashAttention-2's dQ atomic adds would land, the FlashAttention paper's Figure 2
(left) with gpusim's numbers, and the fwd + bwd speedup, predicted against measured. Figures are
matplotlib.figure.Figure objects (no pyplot state); fonts at matplotlib's 10 pt and up; legends outside
the axes."""
import numpy as np
from matplotlib.figure import Figure

from gpusim import backward

from . import model

GIB = 2**30
ALGO_COLORS = {"naive": "tab:red", "flash1": "tab:orange", "flash2": "tab:blue"}


def memory_figure(rows, gpu_bytes, gpu_name, longest):
    """What every layer's forward keeps for the backward, summed over the model, against the sequence length
    (log-log: slope 2 is O(n²), slope 1 is O(n)), with the GPU's HBM and the longest trainable lengths."""
    fig = Figure(figsize=(8, 4.6), layout="constrained")
    ax = fig.subplots()
    seqs = [r["seq"] for r in rows]
    for algo, what in (("naive", "naive: Q, K, V and P"), ("flash2", "FlashAttention-2: Q, K, V, O and the LSE")):
        ax.plot(seqs, [r[f"{algo}_saved_bytes"] / GIB for r in rows], "o-", color=ALGO_COLORS[algo], label=what)
        ax.axvline(longest[algo], color=ALGO_COLORS[algo], ls=":", lw=1.5,
                   label=f"longest that fits, {algo}: {longest[algo]:,}")
    ax.axhline(gpu_bytes / GIB, color="k", lw=1.5, label=f"{gpu_name} HBM")
    ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="GiB kept for the backward, all layers",
           title="what the forward keeps for the backward, across the model")
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def slopes(rows):
    """{algo: the log-log slope of the saved bytes over the last two lengths}: 2 for O(n²), 1 for O(n)."""
    first, last = rows[-2], rows[-1]
    return {algo: float(np.log(last[f"{algo}_saved_bytes"] / first[f"{algo}_saved_bytes"]) /
                        np.log(last["seq"] / first["seq"])) for algo in ("naive", "flash2")}


def dq_figure(seq=512, head_dim=64, block_q=128, block_kv=32, causal=True):
    """Left: the dK/dV kernel's tiles (a column of programs per K/V block, Q blocks streamed past each); every
    tile would add its τ dS_ij K_j into dQ_i with fp32 atomic adds. Right: how many adds land on each Q
    block, against the one write of gpusim's separate dQ kernel."""
    cfg = backward.config("flash2", seq=seq, head_dim=head_dim, block_q=block_q, block_kv=block_kv, causal=causal)
    t = cfg.kv_tiling  # K/V blocks of Br rows held, Q blocks of Bc rows streamed
    grid = np.zeros((t.n_q_blocks, t.n_kv_blocks))
    for i in range(t.n_q_blocks):
        grid[i, : t.kv_blocks_of(i)] = 1
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax_grid, ax_bars = fig.subplots(1, 2, width_ratios=(1, 1.2))
    ax_grid.imshow(grid, cmap="Blues", vmin=0, vmax=1.6, aspect="auto", interpolation="nearest")
    for i, j in zip(*np.nonzero(grid)):
        ax_grid.text(j, i, "+=", ha="center", va="center", fontsize=10)
    ax_grid.set(xlabel=f"K/V block j (one dK/dV program each, {block_q} keys)",
                ylabel=f"Q block i ({block_kv} rows)", title="dK/dV kernel: each tile adds into dQ_i",
                xticks=range(t.n_kv_blocks), yticks=range(t.n_q_blocks))
    rows = model.dq_updates(seq, head_dim, block_q, block_kv, causal)
    blocks = np.arange(len(rows))
    ax_bars.barh(blocks - 0.2, [r["atomic_bytes"] / 1024 for r in rows], 0.4, color="tab:orange",
                 label="atomic adds: fp32 sent per tile (reduced in L2)")
    ax_bars.barh(blocks + 0.2, [r["dq_kernel_write_bytes"] / 1024 for r in rows], 0.4, color="tab:blue",
                 label="separate dQ kernel: one write")
    ax_bars.set(xlabel="KiB into dQ_i", yticks=blocks, ylim=(len(rows) - 0.5, -0.5), title="bytes into each dQ block")
    ax_bars.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    return fig


def figure2_figure(rows, published):
    """gpusim's GB read + written, fwd + bwd, per algorithm (forward and backward stacked, as the SMs request
    them; what reaches DRAM beside), with the paper's published values as lines."""
    fig = Figure(figsize=(8.5, 4.4), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["fwd_GB"] for r in rows], 0.4, color="0.6", label="forward (SM side)")
    ax.bar(x - 0.2, [r["bwd_GB"] for r in rows], 0.4, bottom=[r["fwd_GB"] for r in rows],
           color=[ALGO_COLORS[r["algo"]] for r in rows])
    for r in rows:  # one legend entry per color: each algorithm's backward has its own
        ax.bar(0, 0, 0, color=ALGO_COLORS[r["algo"]], label=f"backward, {r['algo']} (SM side)")
    ax.bar(x + 0.2, [r["dram_GB"] for r in rows], 0.4, color="none", edgecolor="k", hatch="//",
           label="fwd + bwd reaching DRAM")
    for value, label, color in [(v, f"paper, standard: {v} GB", "tab:red") for v in published["standard"]] + [
            (published["flash"], f"paper, FlashAttention: {published['flash']} GB", "tab:blue")]:
        ax.axhline(value, color=color, ls="--", lw=1.2, label=label)
    ax.set(xticks=x, xticklabels=[r["algo"] for r in rows], ylabel="GB (10⁹ B) read + written",
           title="FlashAttention paper, Figure 2 (left): GPT-2 medium, N=1024, A100")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def memory_sentence(rows, longest, gpu):
    """slopes of model_memory_rows and the longest trainable sequences (model.longest_trainable), in words."""
    slope = slopes(rows)
    return (f"log-log slopes: standard attention {slope['naive']:.2f}, FlashAttention-2 {slope['flash2']:.2f}; "
            f"longest sequence whose attention memory fits in {gpu}'s HBM: {longest['naive']:,} (standard) against "
            f"{longest['flash2']:,} (FlashAttention-2), {longest['flash2'] / longest['naive']:.0f}x longer")


def speedup_figure(groups):
    """fwd + bwd speedup of FlashAttention over standard attention against N, one panel per (head_dim,
    causal), each line a ratio of times that its label names (the slower one's / the faster one's): gpusim's
    prediction (naive's / flash2's) and, where measured, the project's naive kernels' / its flash2's (the same pair),
    and torch naive's / the project's flash2's and / SDPA's FlashAttention-2's.
    groups: {(head_dim, causal): measured.speedup_rows}."""
    ncols = min(2, len(groups))  # an SVG shows at its own size: two panels a row keep 9 inches readable
    nrows = -(-len(groups) // ncols)
    fig = Figure(figsize=(9, 3.2 * nrows + 0.8), layout="constrained")
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    styles = {"predicted speedup": ("k", "--", None, "gpusim: naive's time / flash2's"),
              "measured, naive / flash2": ("tab:red", "-", "s", "measured: the project's naive's time / its flash2's"),
              "measured, torch naive / flash2": ("tab:blue", "-", "o",
                                                 "measured: torch naive's time / the project's flash2's"),
              "measured, torch naive / sdpa_flash": ("0.45", ":", "^", "measured: torch naive's time / SDPA flash's")}
    for ax, ((head_dim, causal), rows) in zip(axes, groups.items()):
        for key, (color, style, marker, label) in styles.items():
            points = [(r["seq"], r[key]) for r in rows if r[key] is not None]
            if points:
                ax.plot(*zip(*points), color=color, linestyle=style, marker=marker, label=label)
        ax.axhline(1, color="0.7", lw=1)
        ax.set(xlabel="sequence length N", title=f"d={head_dim}, {'causal' if causal else 'not causal'}", yscale="log")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    for ax in axes[::ncols]:
        ax.set_ylabel("fwd + bwd: standard / flash time")
    handles = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=2, frameon=False)
    return fig

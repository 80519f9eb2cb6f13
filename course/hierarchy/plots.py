"""The FlashAttention paper's Figure 1 (left and middle), redrawn with matplotlib: the memory hierarchy as a
pyramid with each level's size and bandwidth (from gpusim's presets; the CPU's level is the paper's own
number, gpusim has no CPU), and the tiling: the outer loop over K/V blocks copies K_j and V_j to SRAM, the
inner loop over Q blocks copies Q_i, computes softmax(Q_i K_jᵀ) V_j on chip and writes O_i back to HBM. The
right panel of Figure 1 (the time per operation) is gpusim_course.standard.breakdown.figure1. Beside them, the
L2 a re-read finds (results/h200/l2_reuse.json) against gpusim's rule.
"""
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Polygon, Rectangle

import gpusim
from gpusim.units import fmt_bytes

from .measured import L2_PATTERNS

PAPER_CPU = ("Main memory (CPU DRAM)", "12.8 GB/s", "> 1 TB")  # the paper's Figure 1: gpusim models no CPU


def hierarchy_rows(gpu="A100-40GB"):
    """[(level, bandwidth, size)] from the top of the pyramid down: SRAM (all SMs), HBM, the CPU's DRAM."""
    g = gpusim.get_gpu(gpu)
    sram = "not published" if not g.sram_bytes_per_s else f"{g.sram_bytes_per_s / 1e12:.0f} TB/s"
    return [("GPU SRAM (all SMs)", sram, fmt_bytes(g.sm_count * g.sram_bytes_per_sm)),
            ("GPU HBM", f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s", fmt_bytes(g.hbm_bytes)), PAPER_CPU]  # as the table


def hierarchy_figure(gpu="A100-40GB"):
    """Figure 1, left: the pyramid, each level labelled with its bandwidth and size."""
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    rows = hierarchy_rows(gpu)
    colors = ("#f4a582", "#92c5de", "#d9d9d9")
    for k, ((level, bandwidth, size), color) in enumerate(zip(rows, colors)):
        top, bottom = 3 - k, 2 - k  # level k spans heights bottom..top; the pyramid widens downwards
        half_top, half_bottom = 0.28 * (3 - top) + 0.12, 0.28 * (3 - bottom) + 0.12
        ax.add_patch(Polygon([(-half_bottom, bottom), (half_bottom, bottom), (half_top, top), (-half_top, top)],
                             closed=True, facecolor=color, edgecolor="k"))
        ax.text(0, bottom + 0.3, level.split(" (")[0].replace("GPU ", ""), ha="center", va="center", fontsize=10)
        ax.text(1.0, bottom + 0.5, f"{level}:\n{bandwidth}  ({size})", ha="left", va="center", fontsize=10)
    ax.text(1.0, 3.2, "bandwidth  (size)", ha="left", fontsize=10, style="italic")
    ax.set(xlim=(-1.0, 2.3), ylim=(-0.1, 3.4), title=f"Memory hierarchy: {gpusim.get_gpu(gpu).name}")
    ax.axis("off")
    return fig


def tiling_figure(blocks=4, outer=1, inner=2):
    """Figure 1, middle: Q (N x d), Kᵀ (d x N) and V (N x d) in HBM cut into `blocks` blocks; the outer loop's
    block `outer` of K and V and the inner loop's block `inner` of Q are copied to SRAM, where
    softmax(Q_i K_jᵀ) V_j is computed, and O_i is written back to HBM."""
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.subplots()
    h, w = 0.5, 0.9  # a block of rows: height h of a matrix w wide (d)

    def matrix(x, y, name, transposed=False, pick=None, color="tab:blue"):
        for b in range(blocks):
            if transposed:  # Kᵀ: blocks side by side
                box = (x + b * h, y, h, w)
            else:
                box = (x, y + (blocks - 1 - b) * h, w, h)
            chosen = b == pick
            ax.add_patch(Rectangle(box[:2], box[2], box[3], facecolor=color if chosen else "white",
                                   alpha=0.8 if chosen else 1, edgecolor="k"))
        ax.text(x + (blocks * h if transposed else w) / 2, y - 0.25, name, ha="center", fontsize=11)

    matrix(0.0, 0.6, "Q (N x d)", pick=inner, color="tab:orange")
    matrix(1.4, 1.1, "Kᵀ (d x N)", transposed=True, pick=outer, color="tab:green")
    matrix(3.8, 0.6, "V (N x d)", pick=outer, color="tab:green")
    matrix(11.2, 0.6, "O (N x d)", pick=inner, color="tab:purple")
    ax.add_patch(Rectangle((5.6, 0.3), 4.6, 2.4, facecolor="#fff3e6", edgecolor="tab:red", lw=2))
    ax.text(7.9, 2.45, "SRAM (one thread block)", ha="center", color="tab:red", fontsize=11)
    ax.text(7.9, 1.6, "S_ij = Q_i K_jᵀ,  m_i, ℓ_i\nO_i += softmax(S_ij) V_j", ha="center", va="center", fontsize=11)
    arrow = dict(arrowstyle="-|>", mutation_scale=14, lw=1.5)
    ax.add_patch(FancyArrowPatch((w + 0.05, 0.6 + (blocks - 1 - inner + 0.5) * h), (5.6, 1.2), color="tab:orange",
                                 **arrow))
    ax.add_patch(FancyArrowPatch((1.4 + (outer + 0.5) * h, 1.1 + w + 0.05), (5.6, 2.2), color="tab:green",
                                 connectionstyle="arc3,rad=-0.3", **arrow))
    ax.add_patch(FancyArrowPatch((3.8 + w + 0.05, 0.6 + (blocks - 1 - outer + 0.5) * h), (5.6, 1.6),
                                 color="tab:green", **arrow))
    ax.add_patch(FancyArrowPatch((10.2, 1.4), (11.2, 0.6 + (blocks - 1 - inner + 0.5) * h), color="tab:purple",
                                 **arrow))
    ax.text(0.2, 3.5, "outer loop: each K/V block j (copy K_j, V_j to SRAM)\n"
                      "inner loop: each Q block i (copy Q_i to SRAM, compute, write O_i to HBM)",
            fontsize=10, va="top")
    ax.text(10.7, 2.9, "HBM", fontsize=11, ha="center")
    ax.set(xlim=(-0.2, 12.4), ylim=(-0.1, 3.6), title="Tiling (FlashAttention-1's loop order, the paper's Figure 1)")
    ax.axis("off")
    return fig


def l2_reuse_figure(rows, gpu="H200"):
    """The share of re-reads that missed L2 against the bytes re-read, per pattern of l2_reuse.json's rows, with
    the L2 gpusim lets data read from every SM fill (dashed), from one SM at a time (dotted), and its size."""
    g = gpusim.get_gpu(gpu)
    fig = Figure(figsize=(6.4, 3.2), layout="constrained")
    ax = fig.subplots()
    for pattern, (label, _) in L2_PATTERNS.items():
        points = sorted((r["working_set_bytes"] / 2**20, r["reread_miss"]) for r in rows if r["pattern"] == pattern)
        ax.plot(*zip(*points), marker="o", markersize=3, label=label)
    for every_sm, style, who in ((True, "--", "every SM"), (False, ":", "one SM at a time")):
        mib = g.l2_reuse_bytes(every_sm) / 2**20
        ax.axvline(mib, color="k", linestyle=style, linewidth=1, label=f"gpusim, read by {who}: {mib:.0f} MiB")
    ax.axvline(g.l2_bytes / 2**20, color="0.6", linewidth=1)
    ax.set(xlabel="bytes re-read (MiB)", ylabel="re-reads that miss L2", ylim=(-0.05, 1.1),
           title=f"The L2 a re-read finds: {g.name} ({g.l2_bytes / 2**20:.0f} MiB, gray)")
    ax.legend(fontsize=8, loc="center right")
    return fig

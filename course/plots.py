"""Matplotlib figures: the score grid split into tiles (drawn into the widgets' axes too), gpusim's sweeps and
time terms, ULP histograms, and the project's GPU measurements (results/<gpu>/bench.json, ncu.json) beside
gpusim. `python -m gpusim_course.plots` redraws the charts of a results file."""
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.patches import Polygon, Rectangle

import gpusim

COLORS = {"naive": "tab:red", "flash1": "tab:orange", "flash2": "tab:blue", "hopper": "tab:purple"}
FONT_PT = 10  # the smallest text in any figure
TRAFFIC_TITLE = "bytes the SMs request (solid) and that reach DRAM (dashed)"


def legend_outside(ax, where="right", **kwargs):
    """The axes' legend beside it (where="right") or under it ("below"), off the data, at FONT_PT; none for axes
    without labelled artists."""
    if not ax.get_legend_handles_labels()[0]:
        return None
    place = (dict(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0) if where == "right" else
             dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2))
    return ax.legend(fontsize=FONT_PT, **place | kwargs)


def fa2_shape_text():
    """The FlashAttention-2 benchmark shape (gpusim.fa2_shape) in words: "batch = max(1, 16k / N), heads x d =
    2048" (16k tokens a batch up to N = 16k, one sequence beyond)."""
    tokens, model_dim = gpusim.fa2_shape(1, 1)  # batch at N = 1 is the token count; heads at d = 1 the model width
    return f"batch = max(1, {tokens // 1024}k / N), heads x d = {model_dim}"


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
        ax_s.plot(list(curve), list(curve.values()), "o-", color=COLORS.get(algo), label=f"{algo} over naive")
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


# The course's figures: draw_score_grid and score_grid_axes draw into a widget's axes (gpusim_course.explorers
# and .steppers); the *_figure functions make the notebooks' static figures.

GRID_MAX_LINES = 16  # tile boundaries drawn per axis of the score grid at most: more would blur into grey


def score_grid_axes(ax, seq_q, seq_kv):
    """Limits and labels of a score grid (the part that stays while the tiles change), and two empty title
    lines that keep room for draw_score_grid's caption when the layout is computed."""
    ax.set(xlim=(0, seq_kv), ylim=(seq_q, 0), xlabel="key index (columns of S)", ylabel="query index (rows of S)")
    ax.set_title("\n", fontsize=FONT_PT)


def first_block_tiles(cfg, limit=2**20):
    """Tr x Tc array marking the tiles the first thread block works through: Q block 0's row (flash2,
    hopper), K/V block 0's column (flash1), one tile (naive's S = QKᵀ); None for grids over `limit` tiles."""
    t = cfg.tiling
    if t.n_q_blocks * t.n_kv_blocks > limit:
        return None
    tiles = np.zeros((t.n_q_blocks, t.n_kv_blocks))
    if cfg.algo == "flash1":
        tiles[t.q_blocks(0), 0] = 1
    elif cfg.algo == "naive":
        tiles[0, 0] = 1
    else:
        tiles[0, :t.kv_blocks_of(0)] = 1
    return tiles


def draw_score_grid(ax, tiling, tile=None, done=None):
    """The score matrix S (N x N_kv) split into Br x Bc tiles: tiles causal masking skips hatched grey,
    `done` (a Tr x Tc array, 1 for computed tiles) shaded blue, `tile` (i, j) outlined in orange; (i, None)
    outlines the whole row of Q block i. Returns the artists it added."""
    t = tiling
    artists = []
    if done is not None:
        artists.append(ax.imshow(done, cmap="Blues", vmin=0, vmax=2.5, interpolation="nearest", aspect="auto",
                                 extent=(0, t.n_kv_blocks * t.block_kv, t.n_q_blocks * t.block_q, 0)))
    ends = [t.keys_of(i) for i in range(t.n_q_blocks)]
    stairs = [(t.seq_kv, 0)] + [(x, y) for i, e in enumerate(ends) for x, y in
                                ((e, i * t.block_q), (e, min((i + 1) * t.block_q, t.seq_q)))] + [(t.seq_kv, t.seq_q)]
    artists.append(ax.add_patch(Polygon(stairs, closed=True, fc="0.88", ec="0.6", hatch="//", lw=0.5)))
    every = -(-max(t.n_q_blocks, t.n_kv_blocks) // GRID_MAX_LINES)  # dense grids: every n-th boundary
    segments = [[(x, 0), (x, t.seq_q)] for x in range(every * t.block_kv, t.seq_kv, every * t.block_kv)]
    segments += [[(0, y), (t.seq_kv, y)] for y in range(every * t.block_q, t.seq_q, every * t.block_q)]
    artists.append(ax.add_collection(LineCollection(segments, colors="0.55", lw=0.6), autolim=False))
    if tile is not None:
        i, j = tile
        rows = t.q_rows(i)
        cols = (0, t.seq_kv) if j is None else t.kv_rows(j)
        artists.append(ax.add_patch(Rectangle((cols[0], rows[0]), cols[1] - cols[0], rows[1] - rows[0],
                                              fc=(1, 0.55, 0, 0.45), ec="tab:orange", lw=2)))
    lines = f"\n(a line every {every} tiles)" if every > 1 else ""
    artists.append(ax.text(0.5, 1.01, f"S in {t.n_q_blocks} x {t.n_kv_blocks} tiles of Br={t.block_q} x Bc={t.block_kv}"
                                      f"{lines}", transform=ax.transAxes, ha="center", va="bottom", fontsize=FONT_PT))
    return artists


def time_terms_figure(rows, title):
    """Grouped bars per kernel: memory time, matmul time, non-matmul time and gpusim's predicted time,
    from tables.time_terms rows."""
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


ULP_BINS = 16  # distances of ULP_BINS or more share the last bar


def ulp_figure(comparisons):
    """Histograms of the ULP distance between two computations, one panel per comparison
    (tables.bit_comparison results)."""
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
        legend_outside(ax, "below")
    ax_t.set_yscale("log")
    ax_m.set_yscale("log")
    return fig


def score_grid_figure(tilings, titles):
    """Score grids side by side (draw_score_grid), e.g. without and with the causal mask."""
    fig, axes = plt.subplots(1, len(tilings), figsize=(4.5 * len(tilings), 4), layout="constrained", squeeze=False)
    for ax, tiling, title in zip(axes[0], tilings, titles):
        score_grid_axes(ax, tiling.seq_q, tiling.seq_kv)
        draw_score_grid(ax, tiling)
        ax.set_xlabel(title)
    return fig


NCU_COLORS = COLORS | {"qk": "tab:red", "softmax": "tab:pink", "pv": "tab:brown"}  # the naive kernels in reds


def ncu_figure(rows):
    """Nsight Compute measurements (results/*/ncu.json rows) against gpusim, one panel per quantity."""
    quantities = list(dict.fromkeys(r["quantity"] for r in rows))
    fig, axes = plt.subplots(1, len(quantities), figsize=(3.6 * len(quantities), 4.8), layout="constrained",
                             squeeze=False)
    for ax, quantity in zip(axes[0], quantities):
        for kernel in dict.fromkeys(r["kernel"] for r in rows):
            pts = [(r["measured"], r["simulated"]) for r in rows if r["quantity"] == quantity and r["kernel"] == kernel
                   and r["measured"]]
            if pts:
                ax.plot(*zip(*pts), "o", color=NCU_COLORS.get(kernel), label=kernel, alpha=0.7)
        lo, hi = ax.get_xlim()
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set(xscale="log", yscale="log", title=quantity, xlabel="measured (Nsight Compute)", ylabel="gpusim")
        legend_outside(ax, "below")
    return fig


PROVIDER_STYLE = {"naive": ("tab:red", "-"), "torch_naive": ("tab:red", ":"), "sdpa_math": ("0.5", ":"),
                  "flash1": ("tab:orange", "-"), "flash2": ("tab:blue", "-"), "hopper": ("tab:purple", "-"),
                  "hopper fp8": ("tab:purple", "--"), "sdpa_flash": ("tab:green", "-"),
                  "sdpa_efficient": ("tab:olive", "-"), "sdpa_cudnn": ("k", "-")}
BENCH_CHARTS = {"speedup": ("speedup over the project's naive kernels", "x"),
                "tflops": ("TFLOP/s (4·B·H·N²·d, halved when causal)", "TFLOP/s"),
                "memory": ("peak memory", "GiB")}


def _series(rows, head_dim, causal, chart):
    """{label: [(seq, value)]} for one panel of a benchmark chart; fp16 rows, plus the fp8 Hopper kernel."""
    rows = [r for r in rows if r["head_dim"] == head_dim and r["causal"] == causal and "ms" in r
            and (r["dtype"] == "fp16" or (r["dtype"] == "fp8" and chart == "tflops"))]
    naive = {r["seq"]: r["ms"] for r in rows if r["provider"] == "naive" and r["dtype"] == "fp16"}
    out = {}
    for r in sorted(rows, key=lambda r: r["seq"]):
        label = r["provider"] + (" fp8" if r["dtype"] == "fp8" else "")
        value = {"tflops": r.get("tflops"), "memory": r["peak_bytes"] / 2**30,
                 "speedup": naive[r["seq"]] / r["ms"] if r["seq"] in naive else None}[chart]
        if value is not None and not (chart == "speedup" and label == "naive"):
            out.setdefault(label, []).append((r["seq"], value))
    return out


def bench_chart(rows, chart, environment=None):
    """One benchmark chart (`speedup`, `tflops` or `memory`) against sequence length: a panel per head
    dimension and causal mask, a line per provider, from the rows of results/<gpu>/bench.json."""
    title, ylabel = BENCH_CHARTS[chart]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), layout="constrained", sharex=True)
    for ax, (head_dim, causal) in zip(axes.flat, [(64, False), (64, True), (128, False), (128, True)]):
        for label, points in _series(rows, head_dim, causal, chart).items():
            color, style = PROVIDER_STYLE.get(label, (None, "-"))
            ax.plot(*zip(*points), marker="o", ms=3, ls=style, color=color, label=label)
        ax.set(title=f"d={head_dim}{', causal' if causal else ''}", xlabel="sequence length N", ylabel=ylabel)
        ax.set_xscale("log", base=2)
        if chart != "tflops":
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside right upper", fontsize=FONT_PT)
    env = environment or {}
    fig.suptitle(f"{title}\n{env.get('gpu', '')}, fp16, {fa2_shape_text()}; "
                 f"torch {env.get('torch', '?')}, triton {env.get('triton', '?')}, {env.get('date', '')}")
    return fig


def save_bench_figures(path):
    """Draw the three benchmark charts of a results/<gpu>/bench.json beside it; return the PNG paths."""
    path = Path(path)
    data = json.loads(path.read_text())
    out = []
    for chart in BENCH_CHARTS:
        png = path.with_name(f"bench_{chart}.png")
        bench_chart(data["rows"], chart, data.get("environment")).savefig(png, dpi=110)
        plt.close("all")
        out.append(png)
    return out


def main(argv=None):
    """python -m gpusim_course.plots {sweep,bench,ncu} FILE.json: the figure(s) beside the JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m gpusim_course.plots", description=main.__doc__.split(":")[0])
    ap.add_argument("kind", choices=("sweep", "bench", "ncu"))
    ap.add_argument("path", type=Path)
    args = ap.parse_args(argv)
    data = json.loads(args.path.read_text())
    if args.kind == "bench":
        pngs = save_bench_figures(args.path)
    else:
        png = args.path.with_suffix(".png")
        fig = (sweep_figure([gpusim.simulate(**r["config"]) for r in data]) if args.kind == "sweep"
               else ncu_figure(data["rows"]))
        fig.savefig(png, dpi=120)
        pngs = [png]
    for png in pngs:
        print("wrote", png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

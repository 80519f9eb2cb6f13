"""Notebook 12's figures, and the command that redraws a results file's charts beside it:

    python -m gpusim_course.provenance.plots {sweep,bench,ncu} FILE.json
"""
import json
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter

import gpusim

from ..plots import COLORS, FONT_PT, fa2_shape_text
from ..tiling.plots import sweep_figure
from . import heldout

NCU_COLORS = COLORS | {"qk": "tab:red", "softmax": "tab:pink", "pv": "tab:brown"}  # the naive kernels in reds


def ncu_figure(rows, columns=4):
    """Nsight Compute measurements (results/*/ncu.json rows) against gpusim, one panel per quantity, at most `columns`
    panels a row (so that the figure keeps a readable size on the page), and one legend of the kernels under them."""
    quantities = list(dict.fromkeys(r["quantity"] for r in rows))
    ncols = min(columns, len(quantities))
    nrows = -(-len(quantities) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.6 * nrows + 0.5), layout="constrained",
                             squeeze=False)
    for ax in axes.flat[len(quantities):]:
        ax.remove()
    for ax, quantity in zip(axes.flat, quantities):
        for kernel in dict.fromkeys(r["kernel"] for r in rows):
            pts = [(r["measured"], r["simulated"]) for r in rows if r["quantity"] == quantity and r["kernel"] == kernel
                   and r["measured"]]
            if pts:
                ax.plot(*zip(*pts), "o", color=NCU_COLORS.get(kernel), label=kernel, alpha=0.7)
        lo, hi = ax.get_xlim()
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set(xscale="log", yscale="log", title=quantity, xlabel="measured (Nsight Compute)", ylabel="gpusim")
        ax.xaxis.set_minor_formatter(NullFormatter())  # under a decade wide, a panel labels its minor ticks: crowded
    kernels = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(kernels.values(), kernels.keys(), loc="outside lower center", ncols=len(kernels), fontsize=FONT_PT)
    return fig


PROVIDER_STYLE = {"naive": ("tab:red", "-"), "torch_naive": ("tab:red", ":"), "sdpa_math": ("0.5", ":"),
                  "flash1": ("tab:orange", "-"), "flash2": ("tab:blue", "-"), "hopper": ("tab:purple", "-"),
                  "hopper fp8": ("tab:purple", "--"), "sdpa_flash": ("tab:green", "-"),
                  "sdpa_efficient": ("tab:olive", "-"), "sdpa_cudnn": ("k", "-")}


BENCH_CHARTS = {"speedup": ("speedup over the project's naive kernels", "x"),
                "tflops": ("TFLOP/s (4·B·H·N²·d, halved when causal)", "TFLOP/s"),
                "memory": ("peak memory", "GiB")}


def heldout_figure(results):
    """Every held-out row's predicted / measured time, one strip per kind on a log axis, the 20% band shaded."""
    pairs = [p for path in heldout.files(results) for p in heldout.ratios(path)]
    labels = list(heldout.KINDS.values())
    fig, ax = plt.subplots(figsize=(7.5, 3.2), layout="constrained")
    ax.axvspan(1 - heldout.WITHIN, 1 + heldout.WITHIN, color="0.9", zorder=0, label="within 20%")
    for y, ((_, algo), label) in enumerate(heldout.KINDS.items()):
        xs = [x for kind, x in pairs if kind == label]
        ax.plot(xs, [y + 0.25 * ((i * 0.618) % 1 - 0.5) for i in range(len(xs))], "o", ms=3, alpha=0.5,
                color=COLORS.get(algo, "tab:gray") if label != "training step" else "tab:green")
        labels[y] = f"{label}: {heldout.within([(label, x) for x in xs]):.0%} of {len(xs)}"
    ax.set(xscale="log", yticks=range(len(labels)), yticklabels=labels, xlabel="gpusim's time / measured time")
    ax.set_xticks([0.5, 0.8, 1, 1.2, 2], ["0.5", "0.8", "1", "1.2", "2"])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend(loc="lower right", fontsize=FONT_PT)
    return fig


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
        ax.set(title=f"d={head_dim}{', causal' if causal else ''}", ylabel=ylabel)
        ax.set_xscale("log", base=2)
        if chart != "tflops":
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:  # the panels share N: named under the bottom row only
        ax.set_xlabel("sequence length N")
    providers = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(providers.values(), providers.keys(), loc="outside lower center", ncols=min(6, len(providers) or 1),
               fontsize=FONT_PT)  # under the panels, off the two-line title
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


def _results(ap, kind, path):
    """The JSON at path, or argparse's one line (exit 2): no such file, not JSON, or not a file of `kind`."""
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        ap.error(f"{path}: {err.strerror}")
    except json.JSONDecodeError as err:
        ap.error(f"{path} is not JSON ({err.msg}, line {err.lineno})")
    if kind == "sweep":
        if not (isinstance(data, list) and data and all(isinstance(r, dict) and "config" in r for r in data)):
            ap.error(f"{path} holds no sweep: expected a list of results, as `python -m gpusim sweep --out` writes")
    elif not (isinstance(data, dict) and isinstance(data.get("rows"), list) and data["rows"]):
        ap.error(f"{path} holds no {kind} rows: expected an object with \"rows\", as results/h200/{kind}.json")
    return data


def main(argv=None):
    """python -m gpusim_course.provenance.plots {sweep,bench,ncu} FILE.json: the figure(s) beside the JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m gpusim_course.provenance.plots", description=main.__doc__.split(":")[0])
    ap.add_argument("kind", choices=("sweep", "bench", "ncu"))
    ap.add_argument("path", type=Path)
    args = ap.parse_args(argv)
    data = _results(ap, args.kind, args.path)
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

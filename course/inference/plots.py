"""The decode notebook's figures: the Flash-Decoding chart (time against cache length, split against
unsplit, measured beside gpusim) and the KV-cache memory map of a serving run. Figures are
matplotlib.figure.Figure objects (no pyplot state); fonts stay at matplotlib's 10 pt and up, and legends
sit outside the axes, below them."""
import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from . import measured

CURVES = {  # name: (color, line style, marker)
    "split KV, measured": ("tab:blue", "-", "o"), "split KV, gpusim": ("tab:blue", "--", None),
    "num_splits=1, measured": ("tab:red", "-", "s"), "num_splits=1, gpusim": ("tab:red", "--", None),
    "fastest SDPA, measured": ("0.45", ":", "^"),
}
OWNER_COLORS = colormaps["tab20"].colors
FREE = (1.0, 1.0, 1.0, 1.0)
RESERVED_ALPHA = 0.22  # a reserved cell that holds no token: the owner's color, faded


FIGURE_WIDTH_IN = 9  # JupyterLab shows an SVG at its own size: 9 inches fit the notebook's column


def flash_decoding_figure(data, batches=(1, 8, 64), gpu=measured.GPU):
    """Time of one decode step against cache length, one panel per batch: the split-KV kernel and
    num_splits=1 as measured (decode.json) and as gpusim predicts them on `gpu` (the preset of the GPU that timed
    `data`), and the fastest SDPA backend."""
    fig = Figure(figsize=(FIGURE_WIDTH_IN, 4.2), layout="constrained")
    axes = fig.subplots(1, len(batches), sharey=True)
    for ax, batch in zip(axes, batches):
        for name, (x, y) in measured.series(data, batch, gpu).items():
            color, style, marker = CURVES[name]
            ax.plot(x, y, linestyle=style, marker=marker, color=color, label=name)
        lesson = measured.unsplit_lesson(data, batch)
        ax.set(xscale="log", yscale="log", xlabel="cached tokens per request",
               title=f"batch {batch}\nnum_splits=1: {lesson['num_splits=1 programs']} programs")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("ms per decode step (one layer)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)  # within the 9 inches
    fig.suptitle(f"Flash-Decoding on the {gpu.split('-')[0]}: {_shape_text(data)}")
    return fig


def _shape_text(data):
    row = data["rows"][0]
    return (f"{row['heads']} query heads, {row['kv_heads']} K/V heads, d={row['head_dim']}, {row['dtype']}, "
            f"pages of {data['page_size']} tokens")


def memory_map_image(serving, cell_tokens, ncols):
    """An RGBA image of the KV-cache memory, one cell per `cell_tokens` tokens, `ncols` cells a row: the
    owner's color where tokens are cached, faded where the allocator reserved room that holds none (a
    contiguous slot's unused tail, a page's empty rows), white where free."""
    mm = serving.memory_map
    per_block = mm.block_tokens // cell_tokens  # cells per slot or page (a page smaller than a cell: 1)
    cells = []
    for owner, used in zip(mm.owner, mm.used_tokens):
        if owner < 0:
            cells += [FREE] * max(1, per_block)
            continue
        color = OWNER_COLORS[owner % len(OWNER_COLORS)]
        full = -(-used // cell_tokens) if per_block > 1 else int(used == mm.block_tokens)
        cells += [(*color, 1.0)] * full + [(*color, RESERVED_ALPHA)] * (max(1, per_block) - full)
    rows = -(-len(cells) // ncols)
    cells += [FREE] * (rows * ncols - len(cells))
    return np.array(cells).reshape(rows, ncols, 4)


def draw_memory_map(ax, serving, cell_tokens, ncols, title):
    """The memory map of `serving` (its last step) on `ax`, as memory_map_image draws it."""
    image = memory_map_image(serving, cell_tokens, ncols)
    ax.imshow(image, aspect="auto", interpolation="nearest")
    ax.set(xticks=[], yticks=[], title=title)
    return image

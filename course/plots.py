"""What the chapters' figures share: the algorithms' colors, the smallest font, legends outside the axes and
the score grid split into tiles (drawn into the widgets' axes and into notebook 5's static figure). Each
chapter's own figures are in its plots.py."""
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.patches import Polygon, Rectangle

import gpusim


COLORS = {"naive": "tab:red", "flash1": "tab:orange", "flash2": "tab:blue", "hopper": "tab:purple"}
FONT_PT = 10  # the smallest text in any figure
TRAFFIC_TITLE = "bytes the SMs request (solid)\nand that reach DRAM (dashed)"


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


# draw_score_grid and score_grid_axes draw into a widget's axes (the widgets of notebooks 2, 4 and 5) or a figure's.

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


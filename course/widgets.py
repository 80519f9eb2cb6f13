"""The course's interactive widgets, on top of gpusim (the numbers the notebooks print are in gpusim_course.tables).

Every widget is a class with its controls as attributes (ipywidgets sliders, dropdowns, checkboxes), a
`readout` (ipywidgets.HTML with the numbers) and a `figure` (a matplotlib Figure). Setting a control's
value, from the browser or from Python, runs `update()` synchronously: it recomputes with gpusim, rewrites
the readout, redraws the figure and swaps the PNG in an ipywidgets.Image. Swapping one image is atomic, so
the plot changes in place without flicker or stale copies, and it needs no front-end extension: it works
in JupyterLab and with no front end at all (nbclient, tests). Tests set values and read the
numbers (`.result`, `.hbm_bytes`, ...) and the figure's artists.

Display a widget by ending a cell with it. Errors from gpusim (a block that overflows SRAM, a dtype the
GPU lacks) are shown in the readout in one line, never as a traceback.
"""
import io
import json
import math
from dataclasses import replace
from html import escape

import ipywidgets as W
import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .tables import html_table, largest_fitting_seq, supported_dtypes, time_terms
from .plots import COLORS, draw_score_grid, score_grid_axes

BLOCKS = tuple(2**p for p in range(4, 10))  # 16 .. 512: the values the block sliders move between
SEQS = tuple(2**p for p in range(8, 18))  # 256 .. 131,072
LONG_SEQS = tuple(2**p for p in range(9, 21))  # 512 .. 1,048,576
HEAD_DIMS = (32, 64, 128, 256)
DPI = 72
STAGED = {  # what each kernel stages in SRAM (gpusim.config.Config.sram_bytes)
    "flash1": "K_j and V_j (kept for the whole inner loop), Q_i, O_i, l_i, m_i",
    "flash2": "Q_i (kept for the whole inner loop), K_j, V_j",
}


# ---------------------------------------------------------------------------------------------------
# The base class and shared controls


class Live:
    """Rows of controls, an HTML readout and a figure image; refresh() runs on every control change.

    Subclasses implement update() (compute with gpusim, set the readout) and draw() (the figure). Those
    whose figure mostly stays put while a slider moves also return a key from static_key(): while it is
    unchanged only draw_dynamic()'s artists are redrawn over the cached rest (Agg blitting), which keeps
    a step or block-size change at a few tens of milliseconds."""

    def __init__(self, rows, figsize, ncols=1, nrows=1):
        self.readout = W.HTML()
        self.image = W.Image(format="png")
        self.figure = Figure(figsize=figsize, dpi=DPI, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.subplots(nrows, ncols, squeeze=False).ravel()
        self.error = None
        self._busy = False
        self._static = self._background = None
        self._dynamic = []
        self.ui = W.VBox([W.HBox(row) for row in rows] + [self.readout, self.image])
        for row in rows:
            for control in row:
                if isinstance(control, W.ValueWidget) and not isinstance(control, W.Play):
                    control.observe(self._on_change, "value")
        self.refresh()

    def _on_change(self, change):
        if not self._busy:
            self.refresh()

    def refresh(self):
        """Recompute and redraw; a ValueError from gpusim goes to the readout and keeps the last figure."""
        self._busy = True
        try:
            self.update()
            self.error = None
        except ValueError as err:
            self.error = str(err)
            self.readout.value = f"<p style='color:#b00'><b>gpusim:</b> {escape(str(err))}</p>"
            return
        finally:
            self._busy = False
        self._render()

    def _render(self):
        canvas, key = self.figure.canvas, self.static_key()
        if key is None or key != self._static:
            self._dynamic = []
            for ax in [ax for ax in self.figure.axes if ax not in self.axes]:  # colorbars
                ax.remove()
            for ax in self.axes:
                ax.clear()
            self.draw()
            canvas.draw()
            self._background, self._static = canvas.copy_from_bbox(self.figure.bbox), key
        else:
            for artist in self._dynamic:
                artist.remove()
            canvas.restore_region(self._background)
        self._dynamic = self.draw_dynamic()
        for artist in self._dynamic:
            artist.set_animated(True)
            self.figure.draw_artist(artist)
        width, height = canvas.get_width_height(physical=True)
        buf = io.BytesIO()
        PIL.Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buf, format="png", compress_level=1)
        self.image.value = buf.getvalue()

    def update(self):
        raise NotImplementedError

    def draw(self):
        raise NotImplementedError

    def static_key(self):
        """None: redraw everything on every change."""
        return None

    def draw_dynamic(self):
        """The artists that change while static_key() stays the same."""
        return []

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def gpu_dropdown(value):
    return W.Dropdown(options=list(gpusim.PRESETS), value=gpusim.get_gpu(value).name, description="GPU")


def seq_slider(value, seqs=SEQS, description="seq (N)"):
    return W.SelectionSlider(options=[(f"{n:,}", n) for n in seqs], value=value, description=description,
                             continuous_update=False)


def dropdown(description, options, value):
    return W.Dropdown(options=options, value=value, description=description)


def step_controls():
    """An IntSlider for the step and a Play button that advances it in the browser."""
    step = W.IntSlider(value=0, min=0, max=0, description="step")
    play = W.Play(interval=500, min=0, max=0)
    W.jslink((play, "value"), (step, "value"))
    return step, play


def set_step_range(step, play, last):
    play.max = step.max = last
    step.value = min(step.value, last)


def sync_dtypes(gpu_control, dtype_control):
    """Offer only the dtypes the chosen GPU supports; keep the choice when it still exists."""
    options = supported_dtypes(gpu_control.value)
    if list(dtype_control.options) != options:
        keep = dtype_control.value if dtype_control.value in options else "fp16"
        dtype_control.options = options
        dtype_control.value = keep


def _table_html(rows):
    return html_table(rows).data


# ---------------------------------------------------------------------------------------------------
# Notebook 1: the roofline


class RooflineExplorer(Live):
    """The roofline of a GPU (attainable FLOP/s against arithmetic intensity) with its ridge point, and
    where gpusim's time model puts the kernels of naive attention and FlashAttention-2."""

    def __init__(self, gpu="A100-40GB", dtype="fp16", seq=4096, head_dim=64):
        self.gpu = gpu_dropdown(gpu)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        super().__init__([[self.gpu, self.dtype], [self.seq, self.head_dim]], figsize=(8, 4.6))

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        g = gpusim.get_gpu(self.gpu.value)
        self.peak = g.matmul_flops_per_s(self.dtype.value)
        self.ridge = self.peak / g.hbm_bytes_per_s
        batch, heads = gpusim.fa2_shape(self.seq.value, self.head_dim.value)
        shape = dict(seq=self.seq.value, head_dim=self.head_dim.value, batch=batch, heads=heads,
                     dtype=self.dtype.value, gpu=g)
        self.results = [gpusim.simulate(algo, **shape) for algo in ("naive", "flash2")]
        terms = [t for r in self.results for t in time_terms(r)]
        kernels = [k for r in self.results for k in r.kernels]
        self.points = [(t["label"], (k.flops_matmul + k.flops_other) / (k.read_bytes + k.write_bytes),
                        (k.flops_matmul + k.flops_other) / k.predicted_time_s) for t, k in zip(terms, kernels)]
        rows = [{"kernel": name, "FLOPs per byte": f"{i:,.1f}", "achieved (model)": f"{p / 1e12:,.1f} TFLOP/s",
                 "bound by": t["bound"]} for (name, i, p), t in zip(self.points, terms)]
        self.readout.value = (
            f"<p><b>{g.name}</b>: {self.peak / 1e12:,.1f} TFLOP/s ({self.dtype.value} tensor cores) over "
            f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s of HBM: the ridge point is <b>{self.ridge:,.0f} FLOPs per "
            f"byte</b>. A kernel doing fewer FLOPs per byte waits on memory.</p>" + _table_html(rows))

    def draw(self):
        ax, g = self.axes[0], gpusim.get_gpu(self.gpu.value)
        x = np.logspace(-1, 4.5, 200)
        roofs = [(f"{self.dtype.value} tensor cores over HBM", self.peak, g.hbm_bytes_per_s, "-", "tab:blue"),
                 ("fp32 CUDA cores (non-matmul) over HBM", g.fp32_flops_per_s, g.hbm_bytes_per_s, "-", "tab:green")]
        if g.l2_bytes_per_s:
            roofs.append((f"{self.dtype.value} tensor cores over L2", self.peak, g.l2_bytes_per_s, ":", "tab:blue"))
        for label, flops, bw, style, color in roofs:
            ax.plot(x, np.minimum(flops, x * bw) / 1e12, style, color=color, label=label)
        ax.axvline(self.ridge, color="0.4", ls="--", lw=1)
        ax.annotate(f"ridge point\n{self.ridge:,.0f} FLOP/B", (self.ridge, self.peak / 1e12 / 30), fontsize=8,
                    xytext=(4, 0), textcoords="offset points")
        markers = {"naive: qk": "s", "naive: softmax": "v", "naive: pv": "^"}
        for name, intensity, achieved in self.points:
            ax.plot(intensity, achieved / 1e12, ls="none", marker=markers.get(name, "o"), ms=8, label=name,
                    color=COLORS["naive" if name.startswith("naive") else "flash2"])
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per byte moved)", ylabel="TFLOP/s",
               title=f"Roofline of {g.name}; points: gpusim's predicted time")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")


# ---------------------------------------------------------------------------------------------------
# Notebook 2: standard attention


NAIVE_STEPS = {"1: S = QKᵀ·scale": "qk", "2: P = softmax(S)": "softmax", "3: O = PV": "pv"}
NAIVE_TENSORS = ("Q", "K", "V", "S", "P", "O")


class NaiveStepper(Live):
    """Standard attention one kernel at a time: the bytes each reads and writes, and where its time goes."""

    def __init__(self, gpu="A100-40GB", seq=4096, head_dim=64, heads=1):
        self.heads = heads
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.step = W.ToggleButtons(options=list(NAIVE_STEPS), description="kernel")
        super().__init__([[self.gpu, self.head_dim], [self.seq], [self.step]], figsize=(11, 3.8), ncols=2)

    @property
    def kernel(self):
        return NAIVE_STEPS[self.step.value]

    def update(self):
        self.result = r = gpusim.simulate("naive", seq=self.seq.value, head_dim=self.head_dim.value,
                                          heads=self.heads, gpu=self.gpu.value)
        self.bytes = {t: r.counts.get((self.kernel, t), (0, 0)) for t in NAIVE_TENSORS}
        self.terms = time_terms(r)
        self.readout.value = self._story(r)

    def draw(self):
        ax_b, ax_t = self.axes
        x = np.arange(len(NAIVE_TENSORS))
        total = self.result.by_tensor
        for off, d, color, label in ((-0.2, 0, "tab:blue", "read"), (0.2, 1, "tab:orange", "written")):
            key = ("read_bytes", "write_bytes")[d]
            ax_b.bar(x + off, [total.get(t, {key: 0})[key] / 2**20 for t in NAIVE_TENSORS], 0.4, color="none",
                     ec=color, ls=":")
            ax_b.bar(x + off, [self.bytes[t][d] / 2**20 for t in NAIVE_TENSORS], 0.4, color=color,
                     label=f"{label} by this kernel")
        ax_b.set_xticks(x, NAIVE_TENSORS)
        ax_b.set(ylabel="MiB", title=f"HBM traffic of kernel {self.step.index + 1} (dotted: all three kernels)")
        ax_b.legend(fontsize=8)
        labels = [t["label"].split(": ")[1] for t in self.terms]
        series = (("t_memory", "tab:red", "memory"), ("t_compute", "tab:blue", "compute"),
                  ("predicted", "k", "predicted"))
        for n, (key, color, label) in enumerate(series):
            bars = ax_t.bar(np.arange(3) + (n - 1) * 0.27, [t[key] * 1e6 for t in self.terms], 0.27, color=color,
                            label=label)
            for bar, name in zip(bars, labels):
                bar.set_alpha(0.9 if name == self.kernel else 0.25)
        ax_t.set_xticks(np.arange(3), labels)
        ax_t.set(ylabel="µs", title="time per kernel (gpusim's roofline terms)")
        ax_t.legend(fontsize=8)

    def _story(self, r):
        c, e = r.config, r.config.itemsize
        moved = [", ".join(f"{t} {fmt_bytes(rw[d])}" for t, rw in self.bytes.items() if rw[d]) for d in (0, 1)]
        term = self.terms[self.step.index]
        passes = "" if c.softmax_fits else (f" A row of S ({fmt_bytes(c.seq_kv * e)}) does not fit in "
                                            f"{fmt_bytes(c.gpu.sram_bytes_per_block)} of SRAM, so the softmax "
                                            f"streams it three times.")
        return (f"<p><b>Kernel {self.step.index + 1} ({self.kernel})</b> reads {moved[0]} and writes {moved[1]}. "
                f"One N × N matrix is {c.bh} × {c.seq:,} × {c.seq_kv:,} × {e} B = "
                f"<b>{fmt_bytes(c.bh * c.seq * c.seq_kv * e)}</b>.{passes} Memory time "
                f"{fmt_time(term['t_memory'])} against compute {fmt_time(term['t_compute'])}: "
                f"<b>{term['bound']}-bound</b>. All three kernels: {fmt_bytes(r.hbm_bytes)} moved, predicted "
                f"{fmt_time(r.predicted_time_s)}.</p>")


class FootprintExplorer(Live):
    """Peak HBM footprint against sequence length, naive against FlashAttention-2, with the GPU's capacity."""

    def __init__(self, gpu="A100-40GB", heads=1, batch=1, head_dim=128, dtype="fp16"):
        self.gpu = gpu_dropdown(gpu)
        self.heads = W.IntSlider(value=heads, min=1, max=64, description="heads", continuous_update=False)
        self.batch = W.IntSlider(value=batch, min=1, max=32, description="batch", continuous_update=False)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        super().__init__([[self.gpu, self.dtype, self.head_dim], [self.heads, self.batch]], figsize=(8, 4.2))

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        shape = dict(heads=self.heads.value, batch=self.batch.value, head_dim=self.head_dim.value,
                     dtype=self.dtype.value, gpu=self.gpu.value)
        self.curves = {algo: [gpusim.simulate(algo, seq=n, **shape) for n in LONG_SEQS] for algo in ("naive", "flash2")}
        self.limit = {algo: largest_fitting_seq(algo, **shape) for algo in self.curves}
        at_128k = gpusim.simulate("naive", seq=131072, **shape)
        g = at_128k.config.gpu
        self.readout.value = (
            f"<p>At N = 131,072, naive attention writes S = {fmt_bytes(at_128k.by_tensor['S']['write_bytes'])} (and P "
            f"as much) and needs <b>{fmt_bytes(at_128k.hbm_peak_bytes)}</b> at its peak: "
            f"{'it fits in' if at_128k.fits_in_hbm else 'more than'} the {g.name}'s {fmt_bytes(g.hbm_bytes)}. "
            f"The longest sequence naive attention fits: <b>{self.limit['naive']:,}</b> tokens; "
            f"FlashAttention-2: <b>{self.limit['flash2']:,}</b>.</p>")

    def draw(self):
        ax, g = self.axes[0], gpusim.get_gpu(self.gpu.value)
        for algo, rs in self.curves.items():
            ax.plot(LONG_SEQS, [r.hbm_peak_bytes / 2**30 for r in rs], "o-", color=COLORS[algo], label=algo)
        ax.axhline(g.hbm_bytes / 2**30, color="k", ls="--", lw=1, label=f"{g.name} HBM ({fmt_bytes(g.hbm_bytes)})")
        ax.axvline(131072, color="0.5", ls=":", lw=1, label="N = 131,072 (128K)")
        ax.axvline(self.limit["naive"], color=COLORS["naive"], ls="--", lw=1, alpha=0.6,
                   label=f"naive fits up to N = {self.limit['naive']:,}")
        ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="GiB",
               title=f"peak HBM footprint: batch {self.batch.value} x {self.heads.value} heads, "
                     f"d={self.head_dim.value}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------
# Notebook 3: the online softmax


class OnlineSoftmaxStepper(Live):
    """One row of scores, read chunk by chunk: the running max m, the running sum d (the paper's l) and the
    rescale factor exp(m_old - m_new) after each chunk, from gpusim.softmax(x, "online", chunk)."""

    def __init__(self, n=64, chunk=8, seed=1):
        self.x = np.random.default_rng(seed).standard_normal(n) * 2
        self.chunk = W.IntSlider(value=chunk, min=1, max=n, description="chunk", continuous_update=False)
        self.step, self.play = step_controls()
        super().__init__([[self.chunk], [self.play, self.step]], figsize=(9, 5), nrows=2)

    def update(self):
        self.steps = gpusim.softmax(self.x, "online", chunk=self.chunk.value).steps
        set_step_range(self.step, self.play, len(self.steps) - 1)
        k = self.step.value
        _, self.m, self.d, self.rescale = self.steps[k]
        self.m_old = self.steps[k - 1][1] if k else -np.inf
        self.lo, self.hi = k * self.chunk.value, min((k + 1) * self.chunk.value, self.x.size)
        final = np.exp(self.x - self.x.max()).sum()
        self.readout.value = (
            f"<p>Step {k + 1} of {len(self.steps)} reads x[{self.lo}:{self.hi}]. m: {self.m_old:.4f} → "
            f"<b>{self.m:.4f}</b>; rescale = exp(m_old − m_new) = <b>{self.rescale:.4f}</b>"
            f"{' (the max did not move: nothing to fix)' if self.rescale == 1 else ''}; "
            f"d = d_old · rescale + Σ exp(x − m_new) = <b>{self.d:.4f}</b>."
            + (f" Done: d equals Σ exp(x − max x) = {final:.4f}, the safe softmax's normalizer, after one pass "
               f"over x instead of two.</p>" if k == len(self.steps) - 1 else "</p>"))

    def static_key(self):
        return self.chunk.value

    def draw(self):
        ax_x, ax_d = self.axes
        ax_x.bar(np.arange(self.x.size), self.x, color="0.85")
        ax_x.set(title="one row of scores x: read (blue), this chunk (orange), not yet read (grey)", xlabel="element")
        ds = [s[2] for s in self.steps]
        ax_d.plot(range(1, len(ds) + 1), ds, "o-", color="0.85")
        ax_d.axhline(np.exp(self.x - self.x.max()).sum(), color="k", ls="--", lw=1, label="Σ exp(x − max x)")
        ax_d.plot([], [], "o-", color="tab:green", label="running d after each chunk")
        ax_d.set(xlabel="chunks read", ylabel="d", title="the normalizer d, rescaled whenever the max grows")
        ax_d.legend(fontsize=8)

    def draw_dynamic(self):
        ax_x, ax_d = self.axes
        idx = np.arange(self.hi)
        bars = ax_x.bar(idx, self.x[:self.hi], color=np.where(idx < self.lo, "tab:blue", "tab:orange"))
        out = list(bars) + [ax_x.axhline(self.m, color="tab:red", lw=1.5)]
        if np.isfinite(self.m_old):
            out.append(ax_x.axhline(self.m_old, color="tab:red", ls=":", lw=1))
        k = self.step.value
        out += ax_d.plot(range(1, k + 2), [s[2] for s in self.steps[:k + 1]], "o-", color="tab:green")
        out.append(ax_x.text(0.01, 0.97, f"m = {self.m:.3f} (red), before: {self.m_old:.3f} (dotted)",
                             transform=ax_x.transAxes, va="top", fontsize=8))
        return out


# ---------------------------------------------------------------------------------------------------
# Notebook 4: tiling


def is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def snap(old, new):
    """A block slider moved from old to new: the next power of two in the direction it moved."""
    if new > old:
        return 1 << (new - 1).bit_length()
    return 1 << (new.bit_length() - 1)


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


class TilingExplorer(Live):
    """Block sizes against HBM traffic. block_q and block_kv move between powers of two and only as far as
    the GPU's SRAM allows (the readout says why, in gpusim's words). The readout's
    <span class="gpusim-hbm-bytes" data-config='{...}'> holds r.hbm_read_bytes + r.hbm_write_bytes for
    r = gpusim.simulate(**data-config). Panels: the tiled score grid, Theorem 2's curve (HBM traffic
    against SRAM size) and the predicted time of every block pair that fits."""

    def __init__(self, algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                 gpu="A100-40GB", block_q=None, block_kv=None):
        self.heads, self.batch = heads, batch
        br, bc = gpusim.default_blocks(algo, gpu, head_dim, dtype)
        self.algo = dropdown("algo", gpusim.ALGOS, algo)
        self.gpu = gpu_dropdown(gpu)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.causal = W.Checkbox(value=causal, description="causal")
        self.block_q, self.block_kv = (
            W.IntSlider(value=value, min=BLOCKS[0], max=BLOCKS[-1], step=BLOCKS[0], description=name,
                        continuous_update=False)
            for name, value in (("block_q", block_q or br), ("block_kv", block_kv or bc)))
        self._cache = {}
        super().__init__([[self.algo, self.gpu, self.dtype], [self.seq, self.head_dim, self.causal],
                          [self.block_q, self.block_kv]], figsize=(13, 4.2), ncols=3)

    @property
    def config(self):
        """The keyword arguments of gpusim.simulate that the controls describe."""
        return dict(algo=self.algo.value, seq=self.seq.value, head_dim=self.head_dim.value, heads=self.heads,
                    batch=self.batch, block_q=self.block_q.value, block_kv=self.block_kv.value,
                    causal=self.causal.value, dtype=self.dtype.value, gpu=self.gpu.value)

    @property
    def hbm_bytes(self):
        return self.result.hbm_read_bytes + self.result.hbm_write_bytes

    @property
    def best(self):
        """(block_q, block_kv, predicted seconds) of the fastest block pair that fits."""
        a, b = np.unravel_index(np.nanargmin(self.grid["time"]), self.grid["time"].shape)
        return BLOCKS[a], BLOCKS[b], float(self.grid["time"][a, b])

    def _on_change(self, change):
        if change["owner"] in (self.block_q, self.block_kv) and not self._busy and not is_pow2(change["new"]):
            change["owner"].value = snap(change["old"], change["new"])  # comes back here with a power of two
            return
        super()._on_change(change)

    def static_key(self):
        return tuple((k, v) for k, v in self.config.items() if k not in ("block_q", "block_kv"))

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        self._fit_blocks()
        self.result = r = gpusim.simulate(**self.config)
        if self.static_key() not in self._cache:
            self._cache = {self.static_key(): (self._theorem2_curve(), self._block_grid())}
        self.curve, self.grid = self._cache[self.static_key()]
        naive = gpusim.simulate(**(self.config | dict(algo="naive", block_q=None, block_kv=None)))
        data = json.dumps(self.config).replace("&", "&amp;").replace("'", "&#39;")
        span = f"<span class=\"gpusim-hbm-bytes\" data-config='{data}'>{self.hbm_bytes:,}</span>"
        rows = [{"HBM bytes": label} | {t: v[key] for t, v in r.by_tensor.items()}
                for label, key in (("read", "read_bytes"), ("written", "write_bytes"))]
        limits = "".join(f"<br>{name} stops at {b}: {escape(msg)}" for name, (b, msg) in self.limits.items())
        self.readout.value = (
            f"<p><b>HBM traffic</b> (bytes read + written): {span} B = {fmt_bytes(self.hbm_bytes)}; naive attention "
            f"moves {fmt_bytes(naive.hbm_bytes)} ({naive.hbm_bytes / self.hbm_bytes:,.1f}x). SRAM per thread block: "
            f"{r.sram_bytes_per_block:,} of {r.config.gpu.sram_bytes_per_block:,} B; "
            f"{r.kernels[-1].programs:,} thread blocks; predicted {fmt_time(r.predicted_time_s)}."
            f"<small>{limits}</small></p>" + _table_html(rows))

    def _fits(self, **change):
        """None when simulate() accepts the config with `change`, else gpusim's message."""
        try:
            gpusim.simulate(**(self.config | change))
            return None
        except ValueError as err:
            return str(err)

    def _fit_blocks(self):
        """Reset blocks that no longer fit to gpusim's defaults, then cap each slider at the largest power of
        two that fits beside the other; remember gpusim's message for the first size that does not."""
        c = self.config
        if self._fits():
            self.block_q.max = self.block_kv.max = BLOCKS[-1]
            defaults = gpusim.default_blocks(c["algo"], c["gpu"], c["head_dim"], c["dtype"])
            self.block_q.value, self.block_kv.value = defaults
        gpusim.simulate(**self.config)  # raises gpusim's error for what no block size can fix
        self.limits = {}
        for slider in (self.block_q, self.block_kv):
            name = slider.description
            fitting = [b for b in BLOCKS if not self._fits(**{name: b})]
            slider.max = fitting[-1]
            if fitting[-1] < BLOCKS[-1]:
                self.limits[name] = (fitting[-1], self._fits(**{name: 2 * fitting[-1]}))

    def _theorem2_curve(self):
        """HBM traffic against the SRAM size M, with gpusim's default blocks for each M: the simulated
        flash and naive bytes, and Theorem 2's N²d²/M shape scaled to meet the flash curve at the smallest M."""
        c = self.config | dict(block_q=None, block_kv=None)
        gpu = gpusim.get_gpu(c["gpu"])
        sizes, flash, naive = [], [], []
        for m in (2**p for p in range(12, 22)):
            small = replace(gpu, name=f"{gpu.name}, {m // 1024} KiB SRAM", sram_bytes_per_block=m, sram_bytes_per_sm=m)
            try:
                f = gpusim.simulate(**(c | dict(gpu=small)))
            except ValueError:
                continue
            sizes.append(m)
            flash.append(f.hbm_bytes)
            naive.append(gpusim.simulate(**(c | dict(algo="naive", gpu=small))).hbm_bytes)
        e = gpusim.DTYPE_BYTES[c["dtype"]]
        shape = np.array([gpusim.theorem2(c["seq"], c["head_dim"], m / e)["flash"] for m in sizes])
        scale = flash[0] / shape[0]
        return {"sram_bytes": sizes, "flash": flash, "naive": naive, "theorem2": list(shape * scale)}

    def _block_grid(self):
        """Predicted time, HBM bytes and SRAM of every (block_q, block_kv) in BLOCKS x BLOCKS; NaN where it
        does not fit."""
        grid = {key: np.full((len(BLOCKS), len(BLOCKS)), np.nan) for key in ("time", "bytes", "sram")}
        for a, bq in enumerate(BLOCKS):
            for b, bkv in enumerate(BLOCKS):
                if not self._fits(block_q=bq, block_kv=bkv):
                    r = gpusim.simulate(**(self.config | dict(block_q=bq, block_kv=bkv)))
                    grid["time"][a, b], grid["bytes"][a, b] = r.predicted_time_s, r.hbm_bytes
                    grid["sram"][a, b] = r.sram_bytes_per_block
        return grid

    def draw(self):
        ax_grid, ax_thm, ax_heat = self.axes
        score_grid_axes(ax_grid, self.seq.value, self.seq.value)
        c, algo = self.curve, self.algo.value
        kib = [m / 1024 for m in c["sram_bytes"]]
        ax_thm.plot(kib, [b / 2**30 for b in c["naive"]], "o-", color=COLORS["naive"], label="naive (simulated)")
        ax_thm.plot(kib, [b / 2**30 for b in c["flash"]], "o-", color=COLORS[algo], label=f"{algo}, default blocks")
        ax_thm.plot(kib, [b / 2**30 for b in c["theorem2"]], "k--", lw=1, label="Theorem 2: N²d²/M (scaled)")
        ax_thm.axvline(gpusim.get_gpu(self.gpu.value).sram_bytes_per_block / 1024, color="0.5", ls=":", lw=1,
                       label=f"{self.gpu.value}'s SRAM per block")
        sram, nbytes = self.grid["sram"] / 1024, self.grid["bytes"] / 2**30
        ax_thm.plot([np.nanmin(sram), np.nanmax(sram)], [np.nanmin(nbytes), np.nanmax(nbytes)], ls="none")
        ax_thm.set(xscale="log", yscale="log", xlabel="SRAM per thread block M (KiB)", ylabel="HBM traffic (GiB)",
                   title="Theorem 2 (star: your blocks)")
        ax_thm.grid(alpha=0.3, which="both")
        ax_thm.legend(fontsize=7)
        image = ax_heat.imshow(self.grid["time"] * 1e3, cmap="viridis_r", origin="lower")
        self.figure.colorbar(image, ax=ax_heat, label="predicted ms (blank: does not fit)")
        ax_heat.set_xticks(range(len(BLOCKS)), BLOCKS)
        ax_heat.set_yticks(range(len(BLOCKS)), BLOCKS)
        best = np.unravel_index(np.nanargmin(self.grid["time"]), self.grid["time"].shape)
        ax_heat.plot(best[1], best[0], "w*", ms=12)
        ax_heat.set(xlabel="block_kv (Bc)", ylabel="block_q (Br)",
                    title=f"best {np.nanmin(self.grid['time']) * 1e3:.3g} ms (white star)")

    def draw_dynamic(self):
        ax_grid, ax_thm, ax_heat = self.axes
        r = self.result
        out = draw_score_grid(ax_grid, r.config.tiling, tile=(0, 0), done=first_block_tiles(r.config))
        out += ax_thm.plot(r.sram_bytes_per_block / 1024, self.hbm_bytes / 2**30, "*", ms=14, color="tab:orange")
        out += ax_heat.plot(BLOCKS.index(r.config.block_kv), BLOCKS.index(r.config.block_q), "s", ms=14, mfc="none",
                            mec="tab:orange", mew=2)
        return out


# ---------------------------------------------------------------------------------------------------
# Notebooks 4 and 5: stepping through the tile schedule


def trace(algo, seq, head_dim, block_q, block_kv, causal, gpu):
    """One (batch, head) of a flash kernel run by gpusim's execute mode, with its trace."""
    return gpusim.simulate(algo, seq=seq, head_dim=head_dim, block_q=block_q, block_kv=block_kv, causal=causal,
                           gpu=gpu, trace=True)


def cumulative_bytes(steps):
    """{tensor: [read, written]} over the given steps."""
    out = {}
    for s in steps:
        for direction, moves in enumerate((s.loads, s.stores)):
            for tensor, nbytes in moves:
                out.setdefault(tensor, [0, 0])[direction] += nbytes
    return out


def done_tiles(steps, tiling):
    """Tr x Tc array: 1 for the tiles of S computed in the given steps."""
    done = np.zeros((tiling.n_q_blocks, tiling.n_kv_blocks))
    for s in steps:
        if None not in s.tile:
            done[s.tile] = 1
    return done


def describe_step(s):
    moves = [f"{'loads' if d == 0 else 'stores'} " + ", ".join(f"{t} ({n:,} B)" for t, n in m)
             for d, m in enumerate((s.loads, s.stores)) if m]
    return "; ".join(moves) or "moves nothing"


def grid_tile(step):
    """The tile a step highlights: (i, j), (i, None) for a row's final store, None for initialisation."""
    return None if step.tile == (None, None) else step.tile


class TileStepper(Live):
    """One thread block's walk over the score grid, step by step: the tile it works on, what it loads and
    stores, what sits in its SRAM, the running m_i, l_i and rescale factor of its rows."""

    def __init__(self, algo="flash2", seq=256, head_dim=64, block_q=64, block_kv=32, causal=False, gpu="A100-40GB"):
        self.head_dim, self.gpu = head_dim, gpu
        self.algo = W.ToggleButtons(options=["flash1", "flash2"], value=algo, description="algo")
        self.seq = dropdown("seq (N)", [64, 128, 256, 512, 1024], seq)
        self.br = dropdown("Br", BLOCKS[:-1], block_q)
        self.bc = dropdown("Bc", BLOCKS[:-1], block_kv)
        self.causal = W.Checkbox(value=causal, description="causal")
        self.step, self.play = step_controls()
        self._traced = None
        super().__init__([[self.algo, self.causal], [self.seq, self.br, self.bc], [self.play, self.step]],
                         figsize=(11, 4.2), ncols=2)

    def static_key(self):
        return self.algo.value, self.seq.value, self.br.value, self.bc.value, self.causal.value

    def update(self):
        if self._traced != self.static_key():
            self.result = trace(*self.static_key()[:2], self.head_dim, *self.static_key()[2:], self.gpu)
            self._traced = self.static_key()
            set_step_range(self.step, self.play, len(self.result.trace) - 1)
        steps = self.result.trace
        self.current = s = steps[self.step.value]
        self.so_far = cumulative_bytes(steps[:self.step.value + 1])
        self.total = cumulative_bytes(steps)
        cap = self.result.config.gpu.sram_bytes_per_block
        stats = "" if s.m_i is None else (
            f"<br>its first rows: m_i = {np.array2string(s.m_i[:4], precision=3)}, l_i = "
            f"{np.array2string(s.l_i[:4], precision=3)}, rescale = {np.array2string(s.rescale[:4], precision=3)} …")
        self.readout.value = (f"<p>Step {self.step.value + 1} of {len(steps)}: {s.kernel} thread block {s.program}, "
                              f"tile (i, j) = {s.tile}: {describe_step(s)}.<br>SRAM holds {STAGED[self.algo.value]}: "
                              f"<b>{s.sram_bytes:,} B</b> of {cap:,} B.{stats}</p>")

    def draw(self):
        score_grid_axes(self.axes[0], self.seq.value, self.seq.value)
        ax = self.axes[1]
        x = np.arange(len(self.total))
        for off, d, color, label in ((-0.2, 0, "tab:blue", "read"), (0.2, 1, "tab:orange", "written")):
            ax.bar(x + off, [rw[d] / 1024 for rw in self.total.values()], 0.4, color="none", ec=color, ls=":",
                   label=f"{label} (whole kernel)")
        ax.set_xticks(x, list(self.total))
        ax.set(ylabel="KiB", title="HBM traffic so far (solid) of the whole kernel (dotted)")
        ax.legend(fontsize=8)

    def draw_dynamic(self):
        steps = self.result.trace[:self.step.value + 1]
        out = draw_score_grid(self.axes[0], self.result.config.tiling, tile=grid_tile(self.current),
                              done=done_tiles(steps, self.result.config.tiling))
        x = np.arange(len(self.total))
        for off, d, color in ((-0.2, 0, "tab:blue"), (0.2, 1, "tab:orange")):
            out += list(self.axes[1].bar(x + off, [self.so_far.get(t, [0, 0])[d] / 1024 for t in self.total], 0.4,
                                         color=color))
        return out


class LoopOrderComparison(Live):
    """FlashAttention-1 and -2 on the same problem, step by step side by side: the loop order over the
    score grid and the HBM traffic each has moved so far."""

    def __init__(self, seq=256, head_dim=64, block=64, causal=False, gpu="A100-40GB"):
        runs = {algo: trace(algo, seq, head_dim, block, block, causal, gpu) for algo in ("flash1", "flash2")}
        self.traces = {algo: r.trace for algo, r in runs.items()}
        self.tiling = runs["flash2"].config.tiling
        self.moved = {algo: np.cumsum([sum(n for _, n in s.loads + s.stores) for s in steps])
                      for algo, steps in self.traces.items()}
        self.step, self.play = step_controls()
        self.play.max = self.step.max = max(len(t) for t in self.traces.values()) - 1
        super().__init__([[self.play, self.step]], figsize=(13, 4), ncols=3)

    def at(self, algo):
        steps = self.traces[algo]
        return min(self.step.value, len(steps) - 1)

    def update(self):
        self.readout.value = "<p>" + "<br>".join(
            f"<b>{algo}</b> step {self.at(algo) + 1} of {len(steps)}: {describe_step(steps[self.at(algo)])}; "
            f"{fmt_bytes(int(self.moved[algo][self.at(algo)]))} moved so far"
            for algo, steps in self.traces.items()) + "</p>"

    def static_key(self):
        return "traces"

    def draw(self):
        for ax, algo in zip(self.axes, self.traces):
            score_grid_axes(ax, self.tiling.seq_q, self.tiling.seq_kv)
            ax.set_xlabel(f"{algo}: " + ("K/V blocks outer, Q blocks inner" if algo == "flash1"
                                         else "Q blocks outer, K/V blocks inner"))
        ax = self.axes[2]
        for algo, moved in self.moved.items():
            ax.plot(np.arange(1, len(moved) + 1), moved / 1024, color=COLORS[algo], label=algo)
        ax.set(xlabel="step", ylabel="KiB", title="HBM traffic so far")
        ax.legend(fontsize=8)

    def draw_dynamic(self):
        out = []
        for ax, (algo, steps) in zip(self.axes, self.traces.items()):
            k = self.at(algo)
            out += draw_score_grid(ax, self.tiling, tile=grid_tile(steps[k]),
                                   done=done_tiles(steps[:k + 1], self.tiling))
            out += self.axes[2].plot(k + 1, self.moved[algo][k] / 1024, "o", color=COLORS[algo])
        return out


# ---------------------------------------------------------------------------------------------------
# Notebook 5: parallelism


class WavesExplorer(Live):
    """How much of the GPU each algorithm keeps busy. FlashAttention-1 runs one thread block per (batch,
    head); FlashAttention-2 one per (batch, head, Q block), so it fills the SMs at small batch x heads."""

    def __init__(self, gpu="A100-40GB", seq=8192, batch=1, heads=16, head_dim=64):
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq, LONG_SEQS[:-2])
        self.batch = W.IntSlider(value=batch, min=1, max=64, description="batch", continuous_update=False)
        self.heads = W.IntSlider(value=heads, min=1, max=64, description="heads", continuous_update=False)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        super().__init__([[self.gpu, self.head_dim], [self.seq], [self.batch, self.heads]], figsize=(11, 3.8), ncols=2)

    @property
    def seqs(self):
        return [n for _, n in self.seq.options]

    def update(self):
        shape = dict(batch=self.batch.value, heads=self.heads.value, head_dim=self.head_dim.value, gpu=self.gpu.value)
        self.curves = {algo: [gpusim.simulate(algo, seq=n, **shape) for n in self.seqs]
                       for algo in ("flash1", "flash2")}
        self.busy = {algo: [time_terms(r)[0]["busy"] for r in rs] for algo, rs in self.curves.items()}
        now = self.seqs.index(self.seq.value)
        rows = []
        for algo, rs in self.curves.items():
            r, k = rs[now], rs[now].kernels[0]
            g = r.config.gpu
            per_sm = max(1, g.sram_bytes_per_sm // k.sram_bytes_per_block)
            rows.append({"algo": algo, "thread blocks": k.programs, "blocks per SM (SRAM)": per_sm,
                         "waves": math.ceil(k.programs / (g.sm_count * per_sm)),
                         "SMs busy (gpusim)": f"{self.busy[algo][now]:.0%}", "predicted": fmt_time(r.predicted_time_s)})
        self.readout.value = _table_html(rows)

    def draw(self):
        ax_b, ax_t = self.axes
        for algo, rs in self.curves.items():
            ax_b.plot(self.seqs, self.busy[algo], "o-", color=COLORS[algo], label=algo)
            ax_t.plot(self.seqs, [r.predicted_time_s * 1e3 for r in rs], "o-", color=COLORS[algo], label=algo)
        for ax in (ax_b, ax_t):
            ax.axvline(self.seq.value, color="0.5", ls=":")
            ax.set(xscale="log", xlabel="sequence length N")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        g = gpusim.get_gpu(self.gpu.value)
        ax_b.set(ylabel="share of the GPU busy", ylim=(0, 1.05), title=f"{g.name}: {g.sm_count} SMs, how many work")
        ax_t.set(yscale="log", ylabel="ms", title="predicted time")


# ---------------------------------------------------------------------------------------------------
# Notebook 7: overlap on Hopper


class OverlapExplorer(Live):
    """One SM's inner loop, drawn from gpusim's per-tile averages: FlashAttention-2 runs the softmax between
    its two matmuls; FlashAttention-3 (`hopper`) overlaps them (warp specialization, ping-pong between two
    warpgroups) while TMA loads the next K/V tiles asynchronously."""

    ITERATIONS = 4

    def __init__(self, gpu="H100-SXM", seq=8192, head_dim=128, dtype="fp16"):
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        super().__init__([[self.gpu, self.dtype, self.head_dim], [self.seq]], figsize=(11, 4), nrows=2)

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        batch, heads = gpusim.fa2_shape(self.seq.value, self.head_dim.value)
        shape = dict(seq=self.seq.value, head_dim=self.head_dim.value, batch=batch, heads=heads, gpu=self.gpu.value)
        baseline = "fp16" if self.dtype.value == "fp8" else self.dtype.value  # FlashAttention-2 has no fp8 kernel
        self.results = {"flash2": gpusim.simulate("flash2", **shape, dtype=baseline),
                        "hopper": gpusim.simulate("hopper", **shape, dtype=self.dtype.value)}
        self.per_tile = {}
        for algo, r in self.results.items():
            t = time_terms(r)[0]
            tiles_per_sm = r.config.tiling.tiles * r.config.bh / r.config.gpu.sm_count
            self.per_tile[algo] = {key: t[key] / tiles_per_sm for key in ("t_memory", "t_matmul", "t_other")}
        f2, h = (self.results[a].predicted_time_s for a in ("flash2", "hopper"))
        rows = [{"algo": f"{a} ({r.config.dtype})"} | {k: fmt_time(v) for k, v in time_terms(r)[0].items()
                                                        if k.startswith("t_") or k == "predicted"}
                for a, r in self.results.items()]
        self.readout.value = (f"<p>Predicted: flash2 {fmt_time(f2)}, hopper {fmt_time(h)}: <b>{f2 / h:.2f}x</b>.</p>"
                              + _table_html(rows))

    def draw(self):
        for ax, (algo, r) in zip(self.axes, self.results.items()):
            self._timeline(ax, algo, r, self.per_tile[algo])
        end = max(ax.get_xlim()[1] for ax in self.axes)
        for ax in self.axes:
            ax.set_xlim(0, end)

    def _timeline(self, ax, algo, r, d):
        mm, other, mem = d["t_matmul"] * 1e9, d["t_other"] * 1e9, d["t_memory"] * 1e9
        overlap = algo == "hopper"
        period = max(mem, mm, other) if overlap else max(mem, mm + other)
        for n in range(self.ITERATIONS):
            start = n * period
            bar = dict(ec="white", lw=1)
            ax.broken_barh([(start, mem)], (1.65, 0.7), color="tab:red", alpha=0.7, **bar)
            if overlap:  # matmuls of tile n while the other warpgroup runs the softmax of tile n - 1
                ax.broken_barh([(start, mm)], (0.65, 0.7), color="tab:blue", **bar)
                ax.broken_barh([(start + (period - other if n else mm), other)], (-0.35, 0.7), color="tab:green", **bar)
            else:  # S = QKᵀ, then the softmax, then PV: one after the other
                ax.broken_barh([(start, mm / 2), (start + mm / 2 + other, mm / 2)], (0.65, 0.7), color="tab:blue",
                               **bar)
                ax.broken_barh([(start + mm / 2, other)], (-0.35, 0.7), color="tab:green", **bar)
        ax.set_yticks([2, 1, 0], ["loads (TMA)" if overlap else "loads", "tensor cores", "CUDA cores"])
        ax.set(xlabel="ns (average per tile on one SM, from gpusim's roofline terms)",
               title=f"{algo} ({r.config.dtype}): one tile every {period:,.0f} ns")

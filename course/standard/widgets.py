"""Notebook 2's widgets (widget.Live subclasses): the HBM footprint explorer, standard attention's traffic
against N and d, and the stepper through its three kernels.
"""
import ipywidgets as W
import numpy as np
from matplotlib.patches import Patch

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from ..formatting import SM_BYTES
from ..plots import COLORS, FONT_PT, legend_outside
from ..tables import footprint_blocks, largest_fitting_seq, seq_limit_text, supported_dtypes, time_terms
from ..widget import HEAD_DIMS, LONG_SEQS, Live, Question, dropdown, gpu_dropdown, seq_slider, sync_dtypes
from .model import moved, sp_share, streaming_sentence, tile_phrase, traffic


class FootprintExplorer(Live):
    """Peak HBM footprint against sequence length, naive against FlashAttention-2, with the GPU's capacity."""

    def __init__(self, gpu="A100-40GB", heads=1, batch=1, head_dim=128, dtype="fp16"):
        self.gpu = gpu_dropdown(gpu)
        self.heads = W.IntSlider(value=heads, min=1, max=64, description="heads", continuous_update=False)
        self.batch = W.IntSlider(value=batch, min=1, max=32, description="batch", continuous_update=False)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        super().__init__([[self.gpu, self.dtype, self.head_dim], [self.heads, self.batch]], figsize=(11, 4.6))

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        shape = dict(heads=self.heads.value, batch=self.batch.value, head_dim=self.head_dim.value,
                     dtype=self.dtype.value, gpu=self.gpu.value)
        tiles = {algo: footprint_blocks(algo, **shape) for algo in ("naive", "flash2")}  # one search, any N
        self.curves = {algo: [gpusim.simulate(algo, seq=n, **shape, **tiles[algo]) for n in LONG_SEQS]
                       for algo in tiles}
        self.limit = {algo: largest_fitting_seq(algo, **shape, **tiles[algo]) for algo in tiles}
        at_128k = gpusim.simulate("naive", seq=131072, **shape, **tiles["naive"])
        g = at_128k.config.gpu
        self.readout.value = (
            f"<p>At N = 131,072, naive attention writes S = {fmt_bytes(at_128k.by_tensor['S']['write_bytes'])} (and P "
            f"as much) and needs <b>{fmt_bytes(at_128k.hbm_peak_bytes)}</b> at its peak: "
            f"{'it fits in' if at_128k.fits_in_hbm else 'more than'} the {g.name}'s {fmt_bytes(g.hbm_bytes)}. "
            f"The longest sequence naive attention fits: <b>{seq_limit_text(self.limit['naive'])}</b> tokens; "
            f"FlashAttention-2: <b>{seq_limit_text(self.limit['flash2'])}</b>.</p>")
        self.at_128k = at_128k

    def question(self):
        c = self.at_128k.config
        return Question(f"How much HBM does naive attention need at its peak for N = 131,072, batch {c.batch} x "
                        f"{c.heads} heads, d = {c.head_dim}, {c.dtype}?", "bytes", self.at_128k.hbm_peak_bytes,
                        fmt_bytes(self.at_128k.hbm_peak_bytes))

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
        legend_outside(ax)


TENSORS = ("Q", "K", "V", "S", "P", "O")


class TrafficExplorer(Live):
    """Notebook 2: the bytes standard attention and FlashAttention-2 move per tensor, for one head of N tokens
    and head size d, both at one tile (model.traffic_tile), so that the bytes scale with N and d alone; S and P's
    share of standard attention's traffic in the readout."""

    def __init__(self, gpu="A100-40GB", seq=4096, head_dim=64):
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        super().__init__([[self.gpu, self.seq, self.head_dim]], figsize=(9, 3.8))

    def update(self):
        results = traffic(self.seq.value, self.head_dim.value, self.gpu.value)
        self.naive, self.flash = results["naive"], results["flash2"]
        c, total = self.naive.config, self.naive.hbm_bytes
        self.readout.value = (
            f"<p>N = {c.seq:,}, d = {c.head_dim}, fp16, one head, both at one tile, B<sub>r</sub> × B<sub>c</sub> = "
            f"<b>{c.block_q} × {c.block_kv}</b> ({tile_phrase(c)}): "
            f"standard attention moves <b><span class='gpusim-traffic'>{total:,}</span> B</b> ({fmt_bytes(total)}), "
            f"of which S and P are {sp_share(self.naive):.0%}; FlashAttention-2 moves "
            f"{fmt_bytes(self.flash.hbm_bytes)} ({total / self.flash.hbm_bytes:.1f}x fewer). Both read K and V once "
            f"per block of {c.block_q} queries; standard attention also reads Q once per block of {c.block_kv} keys, "
            f"and S and P.</p>")

    def draw(self):
        """A bar per tensor and algorithm on a log axis reaching a decade under the least nonzero bar; a tensor an
        algorithm never moves (FlashAttention-2's S and P) is marked 0 at the axis' foot, not drawn as a byte."""
        ax = self.axes[0]
        mib = {algo: [moved(r, t) / 2**20 for t in TENSORS]
               for algo, r in (("naive", self.naive), ("flash2", self.flash))}
        floor = min(v for values in mib.values() for v in values if v) / 10
        for k, (algo, values) in enumerate(mib.items()):
            xs = [x + 0.4 * k - 0.2 for x in range(len(TENSORS))]
            ax.bar([x for x, v in zip(xs, values) if v], [v - floor for v in values if v], 0.4, bottom=floor,
                   color=COLORS[algo], label=algo)
            for x in (x for x, v in zip(xs, values) if not v):
                ax.text(x, floor, "0", ha="center", va="bottom", color=COLORS[algo], fontsize=FONT_PT)
        ax.set(xticks=range(len(TENSORS)), xticklabels=TENSORS, yscale="log", ylabel="MiB read + written",
               ylim=(floor, None), title=f"bytes per tensor, N = {self.seq.value:,}, d = {self.head_dim.value}, tile "
                     f"{self.naive.config.block_q} × {self.naive.config.block_kv}")
        ax.grid(alpha=0.3, axis="y")
        legend_outside(ax)


NAIVE_STEPS = {"1: S = QKᵀ·scale": "qk", "2: P = softmax(S)": "softmax", "3: O = PV": "pv"}  # label: gpusim's kernel


NAIVE_TENSORS = ("Q", "K", "V", "S", "P", "O")


class NaiveStepper(Live):
    """Standard attention one kernel at a time: the bytes each reads and writes, and where its time goes."""

    def __init__(self, gpu="A100-40GB", seq=4096, head_dim=64, heads=1):
        self.heads = heads
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.step = W.ToggleButtons(options=list(NAIVE_STEPS), description="kernel")
        super().__init__([[self.gpu, self.head_dim], [self.seq], [self.step]], figsize=(11, 4.8), ncols=2)

    @property
    def kernel(self):
        return NAIVE_STEPS[self.step.value]

    def update(self):
        self.result = r = gpusim.simulate("naive", seq=self.seq.value, head_dim=self.head_dim.value,
                                          heads=self.heads, gpu=self.gpu.value)
        self.bytes = {t: r.counts.get((self.kernel, t), (0, 0)) for t in NAIVE_TENSORS}
        self.terms = time_terms(r)
        self.readout.value = self._story(r)

    def question(self):
        c, (read, written) = self.result.config, self.moved
        return Question(f"How many bytes will kernel {self.step.index + 1} ({self.kernel}) read and write for one "
                        f"head of N = {c.seq:,}, d = {c.head_dim}, {c.dtype} on {c.gpu.name}?", "bytes",
                        read + written, fmt_bytes(read + written))

    @property
    def moved(self):
        """(read, written) bytes of the chosen kernel, all tensors."""
        return tuple(sum(rw[d] for rw in self.bytes.values()) for d in (0, 1))

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
        ax_b.set(ylabel=f"MiB {SM_BYTES}", title=f"kernel {self.step.index + 1}'s bytes (dotted: all three kernels)")
        legend_outside(ax_b, "below")
        labels = [t["label"].split(": ")[1] for t in self.terms]
        series = (("t_memory", "tab:red", "memory"), ("t_compute", "tab:blue", "compute"),
                  ("predicted", "k", "predicted"))
        for n, (key, color, label) in enumerate(series):
            bars = ax_t.bar(np.arange(3) + (n - 1) * 0.27, [t[key] * 1e6 for t in self.terms], 0.27, color=color,
                            label=label)
            for bar, name in zip(bars, labels):
                bar.set_alpha(0.9 if name == self.kernel else 0.25)
        for x, t in enumerate(self.terms):  # a predicted bar above both terms: say why
            if longer(t):
                ax_t.annotate(idle_note(t), (x + 0.27, t["predicted"] * 1e6), ha="center", va="bottom", fontsize=10,
                              xytext=(0, 2), textcoords="offset points")
        ax_t.set_xticks(np.arange(3), labels)
        ax_t.margins(y=0.2)
        ax_t.set(ylabel="µs", title="time per kernel (gpusim's roofline terms)")
        legend_outside(ax_t, "below", ncols=3, handles=[Patch(color=c, label=label) for _, c, label in series])

    def _story(self, r):
        c, e = r.config, r.config.itemsize
        moved = [", ".join(f"{t} {fmt_bytes(rw[d])}" for t, rw in self.bytes.items() if rw[d]) for d in (0, 1)]
        term = self.terms[self.step.index]
        idle = "" if not longer(term) else (
            f" Its predicted time, {fmt_time(term['predicted'])}, is longer than both terms because "
            f"{idle_reason(term)}.")
        return (f"<p><b>Kernel {self.step.index + 1} ({self.kernel})</b> reads {moved[0]} and writes {moved[1]}. "
                f"One N × N matrix is {c.bh} × {c.seq:,} × {c.seq_kv:,} × {e} B = "
                f"<b>{fmt_bytes(c.bh * c.seq * c.seq_kv * e)}</b>.{streaming_sentence(c)} Memory time "
                f"{fmt_time(term['t_memory'])} against compute {fmt_time(term['t_compute'])}: "
                f"<b>{term['bound']}-bound</b>.{idle} All three kernels: {fmt_bytes(r.hbm_bytes)} {SM_BYTES}, "
                f"predicted {fmt_time(r.predicted_time_s)}.</p>")


BUSY = 0.9  # below this share of the SMs' slots busy, the figure says how many are idle
LAUNCH_SHARE = 0.05  # from this share of a kernel's predicted time, the figure names its launch


def longer(term):
    """Why a kernel's predicted time exceeds its roofline terms, from gpusim's busy_fraction, latency_bound, the
    pass's STORED_AFTER and its launch's own time, as (a sentence, a few words for the figure) each; none where none
    of the four applies."""
    reasons = []
    if term["busy"] < BUSY:
        reasons.append((f"only {term['busy']:.0%} of the SMs' slots are busy (the roofline terms assume all)",
                        f"{term['busy']:.0%} of SMs busy"))
    if term["latency_bound"]:
        reasons.append(("each thread block waits on its own chain of loads (latency-bound), not on a full unit",
                        "latency-bound"))
    above = term["predicted"] > max(term["t_memory"], term["t_compute"])
    if term["stored_after"] and above:
        reasons.append((f"its thread blocks all store their tile of {term['stored_after']} after their loads and "
                        f"matmul, in step, so no block's store hides under another's loads (gpusim prices the store "
                        f"after the rest)", f"{term['stored_after']} stored after"))
    if above and term["launch"] >= LAUNCH_SHARE * term["predicted"]:
        reasons.append((f"the launch itself takes {fmt_time(term['launch'])} of it (an empty kernel's time, which no "
                        f"roofline term holds)", "launch"))
    return reasons


def idle_reason(term):
    """longer's sentences, joined."""
    return " and ".join(sentence for sentence, _ in longer(term))


def idle_note(term):
    """longer's words, for the figure."""
    return "\n".join(words for _, words in longer(term))

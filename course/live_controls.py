"""Live controls for the sections that showed only static outputs (issue 26): standard attention's traffic
against N and d (notebook 2), FlashAttention-1 against -2 on a tile and mask the learner picks (notebook 5),
and what SDPA picks on the H200 for an input the learner picks (notebook 6). Each is a widget.Live: moving a
control recomputes the readout (its number in a span with a class the browser test reads) and redraws the
figure.
"""
from html import escape

import ipywidgets as W

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from . import evidence, sdpa
from .block_sliders import BLOCKS
from .plots import COLORS, legend_outside
from .widget import HEAD_DIMS, Live, block_dropdown, dropdown, gpu_dropdown, seq_slider

TENSORS = ("Q", "K", "V", "S", "P", "O")


def _bytes(result, tensor):
    t = result.by_tensor.get(tensor, {})
    return t.get("read_bytes", 0) + t.get("write_bytes", 0)


class TrafficExplorer(Live):
    """Notebook 2: the bytes standard attention and FlashAttention-2 move per tensor, for one head of N tokens
    and head size d; S and P's share of standard attention's traffic in the readout."""

    def __init__(self, gpu="A100-40GB", seq=4096, head_dim=64):
        self.gpu = gpu_dropdown(gpu)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        super().__init__([[self.gpu, self.seq, self.head_dim]], figsize=(9, 3.8))

    def update(self):
        shape = dict(seq=self.seq.value, head_dim=self.head_dim.value, gpu=self.gpu.value, dtype="fp16")
        self.naive, self.flash = gpusim.simulate("naive", **shape), gpusim.simulate("flash2", **shape)
        total = self.naive.hbm_bytes
        sp = _bytes(self.naive, "S") + _bytes(self.naive, "P")
        self.readout.value = (
            f"<p>N = {self.seq.value:,}, d = {self.head_dim.value}, fp16, one head: standard attention moves "
            f"<b><span class='gpusim-traffic'>{total:,}</span> B</b> ({fmt_bytes(total)}), of which S and P are "
            f"{sp / total:.0%}; FlashAttention-2 moves {fmt_bytes(self.flash.hbm_bytes)} "
            f"({total / self.flash.hbm_bytes:.1f}x fewer).</p>")

    def draw(self):
        ax = self.axes[0]
        xs = range(len(TENSORS))
        for k, (algo, r) in enumerate((("naive", self.naive), ("flash2", self.flash))):
            ax.bar([x + 0.4 * k - 0.2 for x in xs], [max(_bytes(r, t), 1) / 2**20 for t in TENSORS], 0.4,
                   color=COLORS[algo], label=algo)
        ax.set(xticks=list(xs), xticklabels=TENSORS, yscale="log", ylabel="MiB read + written",
               title=f"bytes per tensor, N = {self.seq.value:,}, d = {self.head_dim.value}")
        ax.grid(alpha=0.3, axis="y")
        legend_outside(ax)


class FlashCompare(Live):
    """Notebook 5: FlashAttention-1 against -2 on the tile (block_q x block_kv) and mask the learner picks, in
    the FlashAttention-2 benchmark shape: bytes per tensor and predicted time."""

    def __init__(self, gpu="A100-40GB", seq=8192, head_dim=64, block_q=64, block_kv=64, causal=False):
        self.gpu = gpu_dropdown(gpu)
        self.seq, self.head_dim = seq, head_dim
        self.block_q = block_dropdown("block_q", list(BLOCKS), block_q)
        self.block_kv = block_dropdown("block_kv", list(BLOCKS), block_kv)
        self.causal = W.Checkbox(value=causal, description="causal")
        super().__init__([[self.gpu, self.causal], [self.block_q, self.block_kv]], figsize=(9, 3.8))

    def update(self):
        batch, heads = gpusim.fa2_shape(self.seq, self.head_dim)
        shape = dict(seq=self.seq, head_dim=self.head_dim, batch=batch, heads=heads, gpu=self.gpu.value,
                     block_q=self.block_q.value, block_kv=self.block_kv.value, causal=self.causal.value)
        self.results = {algo: gpusim.simulate(algo, **shape) for algo in ("flash1", "flash2")}
        f1, f2 = self.results["flash1"], self.results["flash2"]
        self.readout.value = (
            f"<p>{self.block_q.value} x {self.block_kv.value} tiles{', causal' if self.causal.value else ''}, "
            f"N = {self.seq:,}, batch {batch} x {heads} heads: flash1 moves {fmt_bytes(f1.hbm_bytes)} in "
            f"{fmt_time(f1.predicted_time_s)}, flash2 {fmt_bytes(f2.hbm_bytes)} in {fmt_time(f2.predicted_time_s)}: "
            f"flash2 predicted <b><span class='gpusim-ratio'>{f1.predicted_time_s / f2.predicted_time_s:.2f}</span>x"
            f"</b> faster.</p>")

    def draw(self):
        ax = self.axes[0]
        tensors = ("Q", "K", "V", "O")
        xs = range(len(tensors))
        for k, (algo, r) in enumerate(self.results.items()):
            ax.bar([x + 0.4 * k - 0.2 for x in xs], [_bytes(r, t) / 2**30 for t in tensors], 0.4,
                   color=COLORS[algo], label=algo)
        ax.set(xticks=list(xs), xticklabels=tensors, ylabel="GiB read + written",
               title=f"bytes per tensor, {self.block_q.value} x {self.block_kv.value}"
                     f"{', causal' if self.causal.value else ''}")
        ax.grid(alpha=0.3, axis="y")
        legend_outside(ax)


class SdpaPickExplorer(Live):
    """Notebook 6: pick an input (dtype, head_dim, mask) of the H200's probe (sdpa_backends.json): which backend
    PyTorch picked, which ran when forced, and whether the summary's conditions hold for it."""

    def __init__(self, results):
        rows, _ = evidence.rows_of(results, "sdpa_backends.json", ("dtype", "head_dim", "mask", "device"))
        self.rows = [r for r in rows if r["device"] == "cuda"]
        if not self.rows:
            raise FileNotFoundError("sdpa_backends.json: not measured here")
        first = self.rows[0]
        self.dtype = dropdown("dtype", sorted({r["dtype"] for r in self.rows}), first["dtype"])
        self.head_dim = dropdown("head_dim", sorted({r["head_dim"] for r in self.rows}), first["head_dim"])
        self.mask = dropdown("mask", sorted({r["mask"] for r in self.rows}), first["mask"])
        super().__init__([[self.dtype, self.head_dim, self.mask]], figsize=(8, 2.4))

    def update(self):
        key = (self.dtype.value, self.head_dim.value, self.mask.value)
        self.row = next((r for r in self.rows if (r["dtype"], r["head_dim"], r["mask"]) == key), None)
        if self.row is None:
            raise ValueError(f"the H200's probe has no input {key[0]}, d = {key[1]}, mask {key[2]}: it varies one "
                             f"thing at a time from fp16, d = 64, no mask")
        meets = sdpa.source_conditions(self.row)
        ran = [b.split("_")[0].lower() for b in sdpa.BACKENDS if self.row[b]["ran"]]
        self.readout.value = (
            f"<p>{escape(key[0])}, d = {key[1]}, mask {escape(key[2])} on sm_{escape(str(self.row['sm']))}: PyTorch "
            f"picks <b><span class='gpusim-sdpa-pick'>{escape(self.row['picked'])}</span></b>; forced, "
            f"{', '.join(ran)} ran. The summary's conditions {'hold' if meets else 'do not hold'} for it.</p>")

    def draw(self):
        ax = self.axes[0]
        names = [b.split("_")[0].lower() for b in sdpa.BACKENDS]
        colors = ["#1a7f37" if self.row[b]["ran"] else "#b00" for b in sdpa.BACKENDS]
        edges = [3 if b == self.row["picked"] else 0 for b in sdpa.BACKENDS]
        ax.bar(names, [1] * len(names), color=colors, edgecolor="k", linewidth=edges)
        ax.set(yticks=[], title="forced: green ran, red refused; outlined: PyTorch's pick", ylim=(0, 1.2))

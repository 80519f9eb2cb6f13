"""Notebook 1's widget (a widget.Live over gpusim's time model): the roofline explorer."""
import numpy as np

import gpusim
from gpusim.units import fmt_time

from ..formatting import table_html
from ..plots import COLORS, legend_outside
from ..tables import matmul_units, supported_dtypes, time_terms
from ..widget import HEAD_DIMS, Live, Question, dropdown, gpu_dropdown, seq_slider, sync_dtypes


def intensity(flops_per_byte):
    """FLOPs per byte to three significant figures (the softmax's 1.25 at fp16, not 1.2), whole from 100 on."""
    return f"{flops_per_byte:.3g}" if flops_per_byte < 100 else f"{flops_per_byte:,.0f}"


class RooflineExplorer(Live):
    """The roofline of a GPU (attainable FLOP/s against arithmetic intensity) with its ridge point, and
    where gpusim's time model puts the kernels of naive attention and FlashAttention-2. Each kernel is drawn
    twice: hollow at its FLOPs per byte the SMs request (the intensity the L2 roof limits, dotted) and
    filled at its FLOPs per byte that reaches DRAM (the intensity the HBM roof limits): re-reads that hit in
    L2 never reach HBM, which is how a kernel can sit above the HBM roof at its requested intensity."""

    def __init__(self, gpu="A100-40GB", dtype="fp16", seq=4096, head_dim=64):
        self.gpu = gpu_dropdown(gpu)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        super().__init__([[self.gpu, self.dtype], [self.seq, self.head_dim]], figsize=(11, 5))

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
        flops = [k.flops_matmul + k.flops_other for k in kernels]
        self.points = [(t["label"], f / (k.read_bytes + k.write_bytes), f / k.predicted_time_s)
                       for t, k, f in zip(terms, kernels, flops)]
        self.dram_intensity = [f / max(1, k.dram_read_bytes + k.dram_write_bytes) for k, f in zip(kernels, flops)]
        rows = [{"kernel": name, "FLOPs per byte requested": intensity(i), "FLOPs per DRAM byte": intensity(di),
                 "achieved (model)": f"{p / 1e12:,.1f} TFLOP/s", "bound by": t["bound"]}
                for (name, i, p), di, t in zip(self.points, self.dram_intensity, terms)]
        above = [name for name, i, p in self.points if p > i * g.hbm_bytes_per_s * 1.001]
        l2 = (f" The dotted roof is the same peak over L2's {g.l2_bytes_per_s / 1e12:.1f} TB/s: the SMs' requests "
              f"are served by L2, which holds the re-read tiles; only the misses reach HBM." if g.l2_bytes_per_s else "")
        why = (f" {', '.join(above)} sit{'s' if len(above) == 1 else ''} above the HBM roof at the intensity of the "
               f"bytes requested (hollow): part of those bytes hit in L2, so at the FLOPs per DRAM byte (filled) "
               f"{'it is' if len(above) == 1 else 'they are'} under it." if above else "")
        self.readout.value = (
            f"<p><b>{g.name}</b>: {self.peak / 1e12:,.1f} TFLOP/s ({matmul_units(self.dtype.value)}) over "
            f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s of HBM: the ridge point is <b>{self.ridge:,.0f} FLOPs per "
            f"byte</b>. A kernel doing fewer FLOPs per byte waits on memory.{l2}{why}</p>" + table_html(rows))

    def question(self):
        r = self.results[0]
        c = r.config
        return Question(f"How long will standard attention (3 kernels) take on {c.gpu.name}: batch {c.batch} x "
                        f"{c.heads} heads, N = {c.seq:,}, d = {c.head_dim}, {c.dtype}?", "time",
                        r.predicted_time_s, fmt_time(r.predicted_time_s))

    def draw(self):
        ax, g = self.axes[0], gpusim.get_gpu(self.gpu.value)
        x = np.logspace(-1, 4.5, 200)
        units = matmul_units(self.dtype.value)
        roofs = [(f"{units} over HBM", self.peak, g.hbm_bytes_per_s, "-", "tab:blue"),
                 ("fp32 CUDA cores (non-matmul) over HBM", g.fp32_flops_per_s, g.hbm_bytes_per_s, "-", "tab:green")]
        if g.l2_bytes_per_s:
            roofs.append((f"{units} over L2", self.peak, g.l2_bytes_per_s, ":", "tab:blue"))
        for label, flops, bw, style, color in roofs:
            ax.plot(x, np.minimum(flops, x * bw) / 1e12, style, color=color, label=label)
        ax.axvline(self.ridge, color="0.4", ls="--", lw=1)
        ax.annotate(f"ridge point\n{self.ridge:,.0f} FLOP/B", (self.ridge, self.peak / 1e12 / 30), fontsize=10,
                    xytext=(4, 0), textcoords="offset points")
        markers = {"naive: qk": "s", "naive: softmax": "v", "naive: pv": "^"}
        for (name, intensity, achieved), dram in zip(self.points, self.dram_intensity):
            style = dict(marker=markers.get(name, "o"), ms=8, color=COLORS["naive" if name.startswith("naive")
                                                                            else "flash2"])
            ax.plot([intensity, dram], [achieved / 1e12] * 2, "-", lw=1, color=style["color"], alpha=0.5)
            ax.plot(intensity, achieved / 1e12, ls="none", mfc="none", **style)
            ax.plot(dram, achieved / 1e12, ls="none", label=name, **style)
        ax.set(xscale="log", yscale="log", xlabel="FLOPs per byte: requested by the SMs (hollow), reaching DRAM "
               "(filled)", ylabel="TFLOP/s", title=f"Roofline of {g.name}; points: gpusim's predicted time")
        ax.grid(alpha=0.3, which="both")
        legend_outside(ax)

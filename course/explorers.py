"""The course's model explorers: widgets (gpusim_course.widget.Live) over gpusim's counts and time model,
one per notebook idea: the roofline (notebook 1), the HBM footprint (2), the block sizes against HBM
traffic (4), how many SMs work (5) and the Hopper kernel's overlap (7). The steppers, which walk through a
schedule, are in gpusim_course.steppers.
"""
import json
from html import escape

import ipywidgets as W
import numpy as np

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from . import block_sliders, block_sweep
from .block_sliders import BLOCK_LABELS, BLOCK_NAMES, BLOCKS
from .formatting import DRAM_BYTES, SM_BYTES, table_html
from .plots import COLORS, draw_score_grid, first_block_tiles, legend_outside, score_grid_axes
from .tables import hopper_gpus, largest_fitting_seq, matmul_units, occupancy, supported_dtypes, tile_terms, time_terms
from .widget import (HEAD_DIMS, LONG_SEQS, Live, Question, block_slider, dropdown, gpu_dropdown, seq_slider,
                     sync_dtypes)


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
        rows = [{"kernel": name, "FLOPs per byte requested": f"{i:,.1f}", "FLOPs per DRAM byte": f"{di:,.1f}",
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


class TilingExplorer(Live):
    """Block sizes against the bytes the SMs request. block_q (Br) and block_kv (Bc) move between powers of two and only as
    far as the GPU's SRAM allows (gpusim_course.block_sliders; the readout says why, in gpusim's words). The
    readout's <span class="gpusim-hbm-bytes" data-config='{...}'> holds r.hbm_read_bytes + r.hbm_write_bytes
    for r = gpusim.simulate(**data-config). Panels (gpusim_course.block_sweep): the tiled score grid, Theorem
    2's curve (bytes requested against SRAM size) and the predicted time of every block pair that fits."""

    def __init__(self, algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                 gpu="A100-40GB", block_q=None, block_kv=None):
        self.heads, self.batch = heads, batch
        br, bc = gpusim.paper_blocks(algo, gpu, head_dim, dtype)
        self.algo = dropdown("algo", gpusim.ALGOS, algo)
        self.gpu = gpu_dropdown(gpu)
        self.dtype = dropdown("dtype", supported_dtypes(gpu), dtype)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", HEAD_DIMS, head_dim)
        self.causal = W.Checkbox(value=causal, description="causal")
        self.block_q = block_slider("block_q", block_q or br, BLOCKS)
        self.block_kv = block_slider("block_kv", block_kv or bc, BLOCKS)
        self._sweeps = {}
        super().__init__([[self.algo, self.gpu, self.dtype], [self.seq, self.head_dim, self.causal],
                          [self.block_q, self.block_kv]], figsize=(13, 5.6), ncols=3)

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
        return block_sweep.best_blocks(self.grid)

    def _on_change(self, change):
        slider = change["owner"]
        if slider in (self.block_q, self.block_kv) and not self._busy and not block_sliders.is_pow2(change["new"]):
            slider.value = block_sliders.snap(change["old"], change["new"])  # comes back here with a power of two
            return
        super()._on_change(change)

    def static_key(self):
        return tuple((k, v) for k, v in self.config.items() if k not in BLOCK_NAMES)

    def update(self):
        sync_dtypes(self.gpu, self.dtype)
        self._fit_blocks()
        self.result = r = gpusim.simulate(**self.config)
        if self.static_key() not in self._sweeps:
            self._sweeps = {self.static_key(): (block_sweep.theorem2_curve(self.config),
                                                block_sweep.block_grid(self.config))}
        self.curve, self.grid = self._sweeps[self.static_key()]
        naive = gpusim.simulate(**(self.config | dict(algo="naive", block_q=None, block_kv=None)))
        data = json.dumps(self.config).replace("&", "&amp;").replace("'", "&#39;")
        span = f"<span class=\"gpusim-hbm-bytes\" data-config='{data}'>{self.hbm_bytes:,}</span>"
        rows = [{f"bytes {SM_BYTES}": label} | {t: v[key] for t, v in r.by_tensor.items()}
                for label, key in (("read", "read_bytes"), ("written", "write_bytes"))]
        limits = "".join(f"<br>{name} stops at {b}: {escape(msg)}" for name, (b, msg) in self.limits.items())
        dram = r.dram_read_bytes + r.dram_write_bytes
        self.readout.value = (
            f"<p><b>Bytes {SM_BYTES}</b> (every load and store, the paper's HBM accesses): {span} B = "
            f"{fmt_bytes(self.hbm_bytes)}, of which {fmt_bytes(dram)} {DRAM_BYTES} (gpusim's L2 model); naive "
            f"attention requests {fmt_bytes(naive.hbm_bytes)} ({naive.hbm_bytes / self.hbm_bytes:,.1f}x). SRAM per "
            f"thread block: {r.sram_bytes_per_block:,} of {r.config.gpu.sram_bytes_per_block:,} B; "
            f"{r.kernels[-1].programs:,} thread blocks; predicted {fmt_time(r.predicted_time_s)}."
            f"<small>{limits}</small></p>" + table_html(rows))

    def question(self):
        c = self.config
        return Question(f"How many bytes will the SMs request (read + write) for {c['algo']} with block_q = "
                        f"{c['block_q']}, block_kv = {c['block_kv']}: N = {c['seq']:,}, d = {c['head_dim']}, "
                        f"{c['heads']} heads, {c['dtype']}{', causal' if c['causal'] else ''} on {c['gpu']}?",
                        "bytes", self.hbm_bytes, f"{self.hbm_bytes:,} B ({fmt_bytes(self.hbm_bytes)})")

    def _fit_blocks(self):
        """Set the sliders to block_sliders.fit_blocks: gpusim's defaults for blocks that no longer fit, each
        capped at the largest power of two that fits beside the other."""
        config, caps, self.limits = block_sliders.fit_blocks(self.config)
        for name in BLOCK_NAMES:
            slider = getattr(self, name)
            slider.max = BLOCKS[-1]
            slider.value = config[name]
            slider.max = caps[name]

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
        ax_thm.set(xscale="log", yscale="log", xlabel="SRAM per thread block M (KiB)",
                   ylabel="GiB requested by the SMs", title="Theorem 2 (star: your blocks)")
        ax_thm.grid(alpha=0.3, which="both")
        legend_outside(ax_thm, "below")
        image = ax_heat.imshow(self.grid["time"] * 1e3, cmap="viridis_r", origin="lower")
        self.figure.colorbar(image, ax=ax_heat, label="predicted ms (blank: does not fit)")
        ax_heat.set_xticks(range(len(BLOCKS)), BLOCKS)
        ax_heat.set_yticks(range(len(BLOCKS)), BLOCKS)
        bq, bkv, seconds = self.best
        ax_heat.plot(BLOCKS.index(bkv), BLOCKS.index(bq), "w*", ms=12)
        ax_heat.set(xlabel=BLOCK_LABELS["block_kv"], ylabel=BLOCK_LABELS["block_q"],
                    title=f"best {seconds * 1e3:.3g} ms (white star)")

    def draw_dynamic(self):
        ax_grid, ax_thm, ax_heat = self.axes
        r = self.result
        out = draw_score_grid(ax_grid, r.config.tiling, tile=(0, 0), done=first_block_tiles(r.config))
        out += ax_thm.plot(r.sram_bytes_per_block / 1024, self.hbm_bytes / 2**30, "*", ms=14, color="tab:orange")
        out += ax_heat.plot(BLOCKS.index(r.config.block_kv), BLOCKS.index(r.config.block_q), "s", ms=14, mfc="none",
                            mec="tab:orange", mew=2)
        return out


class WavesExplorer(Live):
    """How much of the GPU each algorithm keeps busy. FlashAttention-1 runs one thread block per (batch,
    head); FlashAttention-2 one per (batch, head, Q block), so it fills the SMs at small batch x heads."""

    def __init__(self, gpu="A100-40GB", seq=8192, batch=None, heads=None, head_dim=64):
        """batch, heads: the FlashAttention-2 benchmark's at seq and head_dim (gpusim.fa2_shape) unless given."""
        shape = gpusim.fa2_shape(seq, head_dim)
        batch, heads = batch or shape[0], heads or shape[1]
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
        self.now = {algo: rs[now] for algo, rs in self.curves.items()}
        rows = [{"algo": algo} | occupancy(rs[now]) | {"SMs busy (gpusim)": f"{self.busy[algo][now]:.0%}",
                                                       "predicted": fmt_time(rs[now].predicted_time_s)}
                for algo, rs in self.curves.items()]
        self.readout.value = (f"<p>batch {shape['batch']} x {shape['heads']} heads, N = {self.seq.value:,}, d = "
                              f"{shape['head_dim']}, fp16, each with gpusim's fastest tile:</p>" + table_html(rows))

    def question(self):
        r = self.now["flash1"]
        c = r.config
        return Question(f"How long will FlashAttention-1 take on {c.gpu.name} for batch {c.batch} x {c.heads} heads, "
                        f"N = {c.seq:,}, d = {c.head_dim}?", "time", r.predicted_time_s, fmt_time(r.predicted_time_s))

    def draw(self):
        ax_b, ax_t = self.axes
        for algo, rs in self.curves.items():
            ax_b.plot(self.seqs, self.busy[algo], "o-", color=COLORS[algo], label=algo)
            ax_t.plot(self.seqs, [r.predicted_time_s * 1e3 for r in rs], "o-", color=COLORS[algo], label=algo)
        for ax in (ax_b, ax_t):
            ax.axvline(self.seq.value, color="0.5", ls=":")
            ax.set(xscale="log", xlabel="sequence length N")
            ax.grid(alpha=0.3)
        legend_outside(ax_t)
        g = gpusim.get_gpu(self.gpu.value)
        ax_b.set(ylabel="share of the GPU busy", ylim=(0, 1.05), title=f"{g.name}: {g.sm_count} SMs, how many work")
        ax_t.set(yscale="log", ylabel="ms", title="predicted time")


class OverlapExplorer(Live):
    """One SM's inner loop, drawn from gpusim's per-tile averages: FlashAttention-2 runs the softmax between
    its two matmuls; FlashAttention-3 (`hopper`) overlaps them (warp specialization, ping-pong between two
    warpgroups) while TMA loads the next K/V tiles asynchronously."""

    ITERATIONS = 4

    def __init__(self, gpu="H100-SXM", seq=8192, head_dim=128, dtype="fp16"):
        """gpu: a Hopper GPU (tables.hopper_gpus): FlashAttention-3's TMA and warpgroup matmuls exist on no other."""
        self.gpu = gpu_dropdown(gpu, hopper_gpus())
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
        self.per_tile = {algo: tile_terms(r) for algo, r in self.results.items()}
        f2, h = (self.results[a].predicted_time_s for a in ("flash2", "hopper"))
        rows = [{"algo": f"{a} ({r.config.dtype})"} | {k: fmt_time(v) for k, v in time_terms(r)[0].items()
                                                        if k.startswith("t_") or k == "predicted"}
                for a, r in self.results.items()]
        self.readout.value = (f"<p>Predicted: flash2 {fmt_time(f2)}, hopper {fmt_time(h)}: <b>{f2 / h:.2f}x</b>.</p>"
                              + table_html(rows))

    def question(self):
        r = self.results["hopper"]
        c = r.config
        return Question(f"How long will the Hopper kernel (FlashAttention-3 style, {c.dtype}) take on {c.gpu.name} "
                        f"for batch {c.batch} x {c.heads} heads, N = {c.seq:,}, d = {c.head_dim}?", "time",
                        r.predicted_time_s, fmt_time(r.predicted_time_s))

    def draw(self):
        for ax, (algo, r) in zip(self.axes, self.results.items()):
            self._timeline(ax, algo, r, self.per_tile[algo])
        end = max(ax.get_xlim()[1] for ax in self.axes)
        for ax in self.axes:
            ax.set_xlim(0, end)

    def _timeline(self, ax, algo, r, d):
        mm, other, mem, period = (d[key] * 1e9 for key in ("t_matmul", "t_other", "t_memory", "period"))
        overlap = d["overlapped"]
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
        ax.set_yticks([2, 1, 0], ["loads (TMA)" if algo == "hopper" else "loads", "tensor cores", "CUDA cores"])
        ax.set(xlabel="ns (average per tile on one SM, from gpusim's roofline terms)",
               title=f"{algo} ({r.config.dtype}): one tile every {period:,.0f} ns")

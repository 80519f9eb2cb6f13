"""Notebooks 6 and 7's widgets (widget.Live subclasses): what SDPA picks on the H200 for a chosen input, and
the Hopper kernel's overlap.
"""
from html import escape

import gpusim
from gpusim.passes import hopper
from gpusim.units import fmt_time

from .. import evidence
from ..formatting import faster_or_slower, table_html
from ..tables import hopper_gpus, runnable, tile_terms, time_terms
from ..widget import Live, Question, dropdown, gpu_dropdown, seq_slider, sync_dtypes
from . import sdpa


class SdpaPickExplorer(Live):
    """Notebook 6: pick an input (dtype, head_dim, mask) of the H200's probe (sdpa_backends.json), which varies one
    of them at a time from fp16, d = 64, no mask: which backend PyTorch picked, which ran when forced, and whether
    the summary's conditions hold for it."""

    def __init__(self, results):
        rows, _ = evidence.rows_of(results, "sdpa_backends.json", ("dtype", "head_dim", "mask", "device"))
        self.rows = [r for r in rows if r["device"] == "cuda"]
        if not self.rows:
            raise FileNotFoundError("sdpa_backends.json: not measured here")
        self.input = dropdown("input", [(_probe_input(r), i) for i, r in enumerate(self.rows)], 0)
        super().__init__([[self.input]], figsize=(8, 2.4))

    def update(self):
        self.row = row = self.rows[self.input.value]
        meets = sdpa.source_conditions(row)
        ran = [b.split("_")[0].lower() for b in sdpa.BACKENDS if row[b]["ran"]]
        self.readout.value = (
            f"<p>{escape(_probe_input(row))} on sm_{escape(str(row['sm']))}: PyTorch "
            f"picks <b><span class='gpusim-sdpa-pick'>{escape(row['picked'])}</span></b>; forced, "
            f"{', '.join(ran)} ran. The summary's conditions {'hold' if meets else 'do not hold'} for it.</p>")

    def draw(self):
        ax = self.axes[0]
        names = [b.split("_")[0].lower() for b in sdpa.BACKENDS]
        colors = ["#1a7f37" if self.row[b]["ran"] else "#b00" for b in sdpa.BACKENDS]
        edges = [3 if b == self.row["picked"] else 0 for b in sdpa.BACKENDS]
        ax.bar(names, [1] * len(names), color=colors, edgecolor="k", linewidth=edges)
        ax.set(yticks=[], title="forced: green ran, red refused; outlined: PyTorch's pick", ylim=(0, 1.2))


def _probe_input(row):
    return f"{row['dtype']}, d = {row['head_dim']}, mask {row['mask']}"


def hopper_dtypes(gpu):
    """The dtypes the Hopper kernel runs (no fp32) that the GPU has tensor cores for."""
    return runnable(gpu, "hopper")[1]


def serial_note(cfg):
    """Where the launch table runs the Hopper kernel without warp specialization, a sentence saying its timeline is
    therefore drawn serially; else ""."""
    if hopper.launch_options(cfg)["warp_specialize"]:
        return ""
    return (f" The launch table runs the Hopper kernel at {cfg.dtype}, d = {cfg.head_dim}"
            f"{', causal' if cfg.causal else ''} software-pipelined, without warp specialization "
            f"(gpusim/passes/hopper.py LAUNCHES), so its timeline is drawn serially: whatever it gains over flash2 "
            f"here is not from overlap.")


T_COMPUTE = ("t_compute is the roofline's: the sum of t_matmul and t_other for a kernel that runs them one after the "
             "other, the larger of the two for one designed to overlap them (ideal ping-pong, which the Hopper kernel "
             "does not reach); the predicted time holds only the overlap the kernel was measured to get.")


class OverlapExplorer(Live):
    """One SM's inner loop, drawn from gpusim's per-tile averages of its roofline terms: FlashAttention-2 runs the
    softmax between its two matmuls; FlashAttention-3's design (`hopper`, warp-specialized) overlaps them by
    ping-pong between two warpgroups while TMA loads the next K/V tiles, drawn so. The readout's times are
    gpusim's full model, which gives the Triton kernel only the overlap it was measured to get (triton 3.6
    cannot ping-pong: gpusim/passes/hopper.py WS_STEP_RATIO)."""

    ITERATIONS = 4

    def __init__(self, gpu="H100-SXM", seq=8192, head_dim=128, dtype="fp16"):
        """gpu: a Hopper GPU (tables.hopper_gpus): FlashAttention-3's TMA and warpgroup matmuls exist on no other."""
        self.gpu = gpu_dropdown(gpu, hopper_gpus())
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", hopper.HEAD_DIMS, head_dim)  # the head dims the Hopper kernel runs
        self.dtype = dropdown("dtype", hopper_dtypes(gpu), dtype)
        super().__init__([[self.gpu, self.dtype, self.head_dim], [self.seq]], figsize=(11, 4), nrows=2)

    def update(self):
        sync_dtypes(self.gpu, self.dtype, hopper_dtypes)
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
        factor, word = faster_or_slower(f2, h)
        self.readout.value = (f"<p>Predicted: flash2 {fmt_time(f2)}, hopper {fmt_time(h)}: hopper is <b>{factor:.2f}x "
                              f"{word}</b> than flash2.{serial_note(self.results['hopper'].config)}</p>"
                              + table_html(rows) + f"<p>{T_COMPUTE}</p>")

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
               title=f"{algo} ({r.config.dtype}): one tile every {period:,.0f} ns"
               + (" if fully overlapped" if d["overlapped"] else ""))

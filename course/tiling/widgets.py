"""Notebooks 4 and 5's widgets (widget.Live subclasses): block sizes against HBM traffic and how many SMs
work (explorers), one thread block's tiles and FlashAttention-1 beside -2 (steppers), and FlashAttention-1
against -2 on a tile and mask the learner picks.
"""
import json
from html import escape

import ipywidgets as W
import numpy as np

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .. import block_sliders
from ..block_sliders import BLOCK_LABELS, BLOCK_NAMES, BLOCKS
from ..formatting import DRAM_BYTES, SM_BYTES, faster_or_slower, table_html, tile_words
from ..plots import COLORS, draw_score_grid, first_block_tiles, legend_outside, score_grid_axes
from ..standard.model import moved
from ..tables import occupancy, runnable, time_terms
from ..widget import (HEAD_DIMS, LONG_SEQS, Live, Question, block_dropdown, block_slider, dropdown, gpu_dropdown,
                      seq_slider, set_step_range, step_controls, sync_options)
from . import block_sweep


class TilingExplorer(Live):
    """Block sizes against the bytes the SMs request. block_q (Br) and block_kv (Bc) move between powers of two and only as
    far as the GPU's SRAM allows (gpusim_course.block_sliders; the readout says why, in gpusim's words). The
    readout's <span class="gpusim-hbm-bytes" data-config='{...}'> holds r.hbm_read_bytes + r.hbm_write_bytes
    for r = gpusim.simulate(**data-config). Panels (gpusim_course.tiling.block_sweep): the tiled score grid, Theorem
    2's curve (bytes requested against SRAM size) and the predicted time of every block pair that fits."""

    def __init__(self, algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                 gpu="A100-40GB", block_q=None, block_kv=None):
        self.heads, self.batch = heads, batch
        br, bc = gpusim.paper_blocks(algo, gpu, head_dim, dtype)
        algos, dtypes, head_dims = runnable(gpu, algo, HEAD_DIMS)
        self.algo = dropdown("algo", algos, algo)
        self.gpu = gpu_dropdown(gpu)
        self.dtype = dropdown("dtype", dtypes, dtype)
        self.seq = seq_slider(seq)
        self.head_dim = dropdown("head_dim", head_dims, head_dim)
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
        sync_options(self.algo, runnable(self.gpu.value, self.algo.value)[0], "flash2")  # hopper: Hopper GPUs only
        _, dtypes, head_dims = runnable(self.gpu.value, self.algo.value, HEAD_DIMS)
        sync_options(self.dtype, dtypes, "fp16")
        sync_options(self.head_dim, head_dims, 64)
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
        """Set the sliders to block_sliders.fit_blocks: the paper's blocks (gpusim.paper_blocks), or gpusim's pick
        where those do not fit either, for blocks that no longer fit, each capped at the largest power of two that
        fits beside the other."""
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
        ax_thm.plot(kib, [b / 2**30 for b in c["flash"]], "o-", color=COLORS[algo], label=f"{algo}, the paper's blocks")
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
            ax.set(xscale="log", xlabel="sequence length N")
            ax.grid(alpha=0.3)
        legend_outside(ax_t)
        g = gpusim.get_gpu(self.gpu.value)
        ax_b.set(ylabel="share of the GPU busy", ylim=(0, 1.05), title=f"{g.name}: {g.sm_count} SMs, how many work")
        ax_t.set(yscale="log", ylabel="ms", title="predicted time")

    def static_key(self):
        """The curves stay while N moves: only its line does."""
        return self.gpu.value, self.head_dim.value, self.batch.value, self.heads.value

    def draw_dynamic(self):
        return [ax.axvline(self.seq.value, color="0.5", ls=":") for ax in self.axes]


STAGED = {  # what each kernel stages in SRAM, as gpusim counts it (the trace's sram_bytes)
    "flash1": "K_j and V_j (kept for the whole inner loop), Q_i, O_i, l_i, m_i",
    "flash2": "Q_i (kept for the whole inner loop), K_j, V_j",
}


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
        self.block_q = block_dropdown("block_q", BLOCKS[:-1], block_q)
        self.block_kv = block_dropdown("block_kv", BLOCKS[:-1], block_kv)
        self.causal = W.Checkbox(value=causal, description="causal")
        self.step, self.play = step_controls()
        self._traced = None
        super().__init__([[self.algo, self.causal], [self.seq, self.block_q, self.block_kv], [self.play, self.step]],
                         figsize=(11, 4.2), ncols=2)

    def static_key(self):
        return self.algo.value, self.seq.value, self.block_q.value, self.block_kv.value, self.causal.value

    def update(self):
        if self._traced != self.static_key():
            algo, seq, block_q, block_kv, causal = self.static_key()
            self.result = trace(algo, seq, self.head_dim, block_q, block_kv, causal, self.gpu)
            self._traced = self.static_key()
            set_step_range(self.step, self.play, len(self.result.trace))
        steps = self.result.trace
        self.current = s = steps[self.step.value - 1]
        self.so_far = cumulative_bytes(steps[:self.step.value])
        self.total = cumulative_bytes(steps)
        cap = self.result.config.gpu.sram_bytes_per_block
        stats = "" if s.m_i is None else (
            f"<br>its first rows: m_i = {np.array2string(s.m_i[:4], precision=3)}, l_i = "
            f"{np.array2string(s.l_i[:4], precision=3)}, rescale = {np.array2string(s.rescale[:4], precision=3)} …")
        self.readout.value = (f"<p>Step {self.step.value} of {len(steps)}: {s.kernel} thread block {s.program}, "
                              f"{tile_words(s.tile)}: {describe_step(s)}.<br>SRAM holds {STAGED[self.algo.value]}: "
                              f"<b>{s.sram_bytes:,} B</b> of {cap:,} B.{stats}</p>")

    def draw(self):
        score_grid_axes(self.axes[0], self.seq.value, self.seq.value)
        ax = self.axes[1]
        x = np.arange(len(self.total))
        for off, d, color, label in ((-0.2, 0, "tab:blue", "read"), (0.2, 1, "tab:orange", "written")):
            ax.bar(x + off, [rw[d] / 1024 for rw in self.total.values()], 0.4, color="none", ec=color, ls=":",
                   label=f"{label} (whole kernel)")
        ax.set_xticks(x, list(self.total))
        ax.set(ylabel=f"KiB {SM_BYTES}", title="bytes so far (solid) of the whole kernel (dotted)")
        legend_outside(ax)

    def draw_dynamic(self):
        steps = self.result.trace[:self.step.value]
        out = draw_score_grid(self.axes[0], self.result.config.tiling, tile=grid_tile(self.current),
                              done=done_tiles(steps, self.result.config.tiling))
        x = np.arange(len(self.total))
        for off, d, color in ((-0.2, 0, "tab:blue"), (0.2, 1, "tab:orange")):
            out += list(self.axes[1].bar(x + off, [self.so_far.get(t, [0, 0])[d] / 1024 for t in self.total], 0.4,
                                         color=color))
        return out


class LoopOrderComparison(Live):
    """FlashAttention-1 and -2 on the same problem, step by step side by side: the loop order over the
    score grid and the bytes each has requested so far."""

    def __init__(self, seq=256, head_dim=64, block=64, causal=False, gpu="A100-40GB"):
        runs = {algo: trace(algo, seq, head_dim, block, block, causal, gpu) for algo in ("flash1", "flash2")}
        self.traces = {algo: r.trace for algo, r in runs.items()}
        self.tiling = runs["flash2"].config.tiling
        self.moved = {algo: np.cumsum([sum(n for _, n in s.loads + s.stores) for s in steps])
                      for algo, steps in self.traces.items()}
        self.step, self.play = step_controls()
        self.play.max = self.step.max = max(len(t) for t in self.traces.values())
        super().__init__([[self.play, self.step]], figsize=(13, 5), ncols=3)

    def at(self, algo):
        steps = self.traces[algo]
        return min(self.step.value, len(steps)) - 1

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
        ax.set(xlabel="step", ylabel=f"KiB {SM_BYTES}", title="bytes so far")
        legend_outside(ax, "below")

    def draw_dynamic(self):
        out = []
        for ax, (algo, steps) in zip(self.axes, self.traces.items()):
            k = self.at(algo)
            out += draw_score_grid(ax, self.tiling, tile=grid_tile(steps[k]),
                                   done=done_tiles(steps[:k + 1], self.tiling))
            out += self.axes[2].plot(k + 1, self.moved[algo][k] / 1024, "o", color=COLORS[algo])
        return out


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
        factor, word = faster_or_slower(f1.predicted_time_s, f2.predicted_time_s)
        self.readout.value = (
            f"<p>{self.block_q.value} x {self.block_kv.value} tiles{', causal' if self.causal.value else ''}, "
            f"N = {self.seq:,}, batch {batch} x {heads} heads: flash1 moves {fmt_bytes(f1.hbm_bytes)} in "
            f"{fmt_time(f1.predicted_time_s)}, flash2 {fmt_bytes(f2.hbm_bytes)} in {fmt_time(f2.predicted_time_s)}: "
            f"flash2 predicted <b><span class='gpusim-ratio'>{factor:.2f}</span>x</b> {word}.</p>")

    def draw(self):
        ax = self.axes[0]
        tensors = ("Q", "K", "V", "O")
        xs = range(len(tensors))
        for k, (algo, r) in enumerate(self.results.items()):
            ax.bar([x + 0.4 * k - 0.2 for x in xs], [moved(r, t) / 2**30 for t in tensors], 0.4,
                   color=COLORS[algo], label=algo)
        ax.set(xticks=list(xs), xticklabels=tensors, ylabel="GiB read + written",
               title=f"bytes per tensor, {self.block_q.value} x {self.block_kv.value}"
                     f"{', causal' if self.causal.value else ''}")
        ax.grid(alpha=0.3, axis="y")
        legend_outside(ax)

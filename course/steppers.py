"""The course's steppers: widgets (gpusim_course.widget.Live) that walk through a schedule one step at a
time: standard attention's three kernels (notebook 2), the online softmax chunk by chunk (3), one thread
block's tiles with its running m_i and l_i (4) and FlashAttention-1 beside -2 (5).
"""
import ipywidgets as W
import numpy as np
from matplotlib.patches import Patch

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .block_sliders import BLOCKS
from .formatting import SM_BYTES
from .plots import COLORS, draw_score_grid, legend_outside, score_grid_axes
from .tables import time_terms
from .widget import (HEAD_DIMS, Live, Question, block_dropdown, dropdown, gpu_dropdown, seq_slider, set_step_range,
                     step_controls)

STAGED = {  # what each kernel stages in SRAM, as gpusim counts it (the trace's sram_bytes)
    "flash1": "K_j and V_j (kept for the whole inner loop), Q_i, O_i, l_i, m_i",
    "flash2": "Q_i (kept for the whole inner loop), K_j, V_j",
}
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
            if t["busy"] < BUSY or t["latency_bound"]:
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
        idle = "" if term["busy"] >= BUSY and not term["latency_bound"] else (
            f" Its predicted time, {fmt_time(term['predicted'])}, is longer than both terms because "
            f"{idle_reason(term)}.")
        passes = "" if c.softmax_fits else (f" A row of S ({fmt_bytes(c.seq_kv * e)}) does not fit in "
                                            f"{fmt_bytes(c.gpu.sram_bytes_per_block)} of SRAM, so the softmax "
                                            f"streams it three times.")
        return (f"<p><b>Kernel {self.step.index + 1} ({self.kernel})</b> reads {moved[0]} and writes {moved[1]}. "
                f"One N × N matrix is {c.bh} × {c.seq:,} × {c.seq_kv:,} × {e} B = "
                f"<b>{fmt_bytes(c.bh * c.seq * c.seq_kv * e)}</b>.{passes} Memory time "
                f"{fmt_time(term['t_memory'])} against compute {fmt_time(term['t_compute'])}: "
                f"<b>{term['bound']}-bound</b>.{idle} All three kernels: {fmt_bytes(r.hbm_bytes)} {SM_BYTES}, "
                f"predicted {fmt_time(r.predicted_time_s)}.</p>")


BUSY = 0.9  # below this share of the SMs' slots busy, the figure says how many are idle


def idle_reason(term):
    """Why a kernel's predicted time exceeds its roofline terms, from gpusim's busy_fraction and latency_bound."""
    reasons = []
    if term["busy"] < BUSY:
        reasons.append(f"only {term['busy']:.0%} of the SMs' slots are busy (the roofline terms assume all)")
    if term["latency_bound"]:
        reasons.append("each thread block waits on its own chain of loads (latency-bound), not on a full unit")
    return " and ".join(reasons)


def idle_note(term):
    """idle_reason in a few words, for the figure."""
    return "\n".join(([f"{term['busy']:.0%} of SMs busy"] if term["busy"] < BUSY else []) +
                      (["latency-bound"] if term["latency_bound"] else []))


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
        set_step_range(self.step, self.play, len(self.steps))
        k = self.step.value - 1
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
        ax_d.set(xlabel="chunks read (= step)", ylabel="d", title="the normalizer d, rescaled whenever the max grows")
        legend_outside(ax_d)

    def draw_dynamic(self):
        ax_x, ax_d = self.axes
        idx = np.arange(self.hi)
        bars = ax_x.bar(idx, self.x[:self.hi], color=np.where(idx < self.lo, "tab:blue", "tab:orange"))
        out = list(bars) + [ax_x.axhline(self.m, color="tab:red", lw=1.5)]
        if np.isfinite(self.m_old):
            out.append(ax_x.axhline(self.m_old, color="tab:red", ls=":", lw=1))
        k = self.step.value
        out += ax_d.plot(range(1, k + 1), [s[2] for s in self.steps[:k]], "o-", color="tab:green")
        out.append(ax_x.text(1.01, 0.97, f"m = {self.m:.3f} (red)\nbefore: {self.m_old:.3f} (dotted)",
                             transform=ax_x.transAxes, va="top", fontsize=10))
        return out


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

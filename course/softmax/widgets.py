"""Notebook 3's widget (a widget.Live): the online softmax, chunk by chunk."""
import ipywidgets as W
import numpy as np

import gpusim

from ..plots import legend_outside
from ..widget import Live, set_step_range, step_controls


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

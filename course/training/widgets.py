"""The training notebook's widget: the backward pass tile by tile (gpusim's execute mode), with what each
step recomputes on chip highlighted against what naive attention reads back from HBM. It asks for a guess
of the whole backward's bytes before it shows them (its question(), course/widget.py)."""
from html import escape

import ipywidgets as W
from matplotlib.patches import Rectangle

from gpusim.units import fmt_bytes

from ..formatting import tile_words
from ..widget import Live, Question, dropdown, set_step_range, step_controls
from . import model

NXN = ("P", "dP", "dS")  # the N x N matrices only naive attention moves
KERNEL_COLORS = {"preprocess": "tab:green", "dkdv": "tab:blue", "dq": "tab:purple", "flash1_bwd": "tab:orange",
                 "dv": "tab:red", "dp": "tab:red", "ds": "tab:red", "dk": "tab:red"}


class BackwardStepper(Live):
    """One head of a small problem (seq x seq scores), the backward's steps in schedule order."""

    def __init__(self, algo="flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True):
        self.shape = dict(seq=seq, head_dim=head_dim, block_q=block_q, block_kv=block_kv)
        self.algo = dropdown("algo", ["flash2", "flash1", "naive"], algo)
        self.causal = W.Checkbox(value=causal, description="causal")
        self.step, self.play = step_controls()
        super().__init__([[self.algo, self.causal], [self.play, self.step]], figsize=(10, 4.4), ncols=2)

    def update(self):
        self.steps = model.backward_steps(self.algo.value, causal=self.causal.value, **self.shape)
        set_step_range(self.step, self.play, len(self.steps))
        self.at = self.steps[self.step.value - 1]
        self.total = sum(sum(s["loads"].values()) + sum(s["stores"].values()) for s in self.steps)
        self.readout.value = f"<p>Step {self.step.value} of {len(self.steps)}: {escape(describe(self.at))}</p>"

    def question(self):
        mask = "causal" if self.causal.value else "not causal"
        return Question(f"How many bytes does the whole {self.algo.value} backward move (reads + writes) for one "
                        f"head of N = {self.shape['seq']}, d = {self.shape['head_dim']}, {mask}?", "bytes",
                        self.total, f"{self.total:,} B ({fmt_bytes(self.total)})")

    def draw(self):
        ax_grid, ax_bytes = self.axes
        n = self.shape["seq"]
        for s in self.steps[: self.step.value]:
            current = s is self.at
            (r0, r1), (c0, c1) = s["rows"] or (0, n), s["keys"] or (0, n)
            if s["rows"] is None or s["keys"] is None:  # a program's first or last step: a band, outlined
                if current:
                    ax_grid.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, fill=False, ls="--", lw=2.5))
                continue
            reads_nxn = any(t in NXN for t in s["loads"]) or any(t in NXN for t in s["stores"])
            color = "tab:orange" if s["recomputes"] else "tab:red" if reads_nxn else KERNEL_COLORS[s["kernel"]]
            ax_grid.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, facecolor=color,
                                        alpha=0.9 if current else 0.25, hatch="xx" if s["recomputes"] else None,
                                        edgecolor="k" if current else "white", lw=2.5 if current else 0.5))
        ax_grid.set(xlim=(0, n), ylim=(n, 0), aspect="equal", xlabel="key", ylabel="query row",
                    title=f"{self.at['kernel']} kernel, program {self.at['program']}")
        moved = {}
        for s in self.steps[: self.step.value]:
            for tensor, nbytes in list(s["loads"].items()) + list(s["stores"].items()):
                moved[tensor] = moved.get(tensor, 0) + nbytes
        names = list(moved)
        ax_bytes.barh(names, [moved[t] for t in names], color=["tab:red" if t in NXN else "tab:blue" for t in names])
        ax_bytes.invert_yaxis()
        ax_bytes.set(xlabel="bytes so far (red: N x N matrices)", title="traffic by tensor")


def describe(step):
    """One step of the backward in words."""
    moved = ", ".join(f"{t} {n:,} B" for t, n in (step["loads"] | step["stores"]).items()) or "nothing"
    where = ""
    if step["rows"] and step["keys"]:
        where = (f" on query rows {step['rows'][0]}..{step['rows'][1] - 1} x keys "
                 f"{step['keys'][0]}..{step['keys'][1] - 1}")
    again = (f"; recomputes {step['recomputes']} on chip from Q, K and the LSE (P never comes from HBM)"
             if step["recomputes"] else "")
    tile = tile_words(step["tile"])
    return f"{step['kernel']} kernel, program {step['program']}, {tile}{where}: moves {moved}{again}."

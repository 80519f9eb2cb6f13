"""A picture of a learner's memory accesses, as triton-viz draws them: for each input tensor, which of its rows
(those of the first batch and head) each program loaded, and at which of its loads of that tensor (the step),
from the guard's log of the kernel run in the child; beside gpusim's schedule for the same configuration
(Flash2Puzzle: its trace's tiles) or, where gpusim keeps no trace, the reference solution's accesses.

    >>> puzzles.show_accesses("causal_skip", causal_skip)  # a matplotlib figure (puzzles.show_accesses)
"""
import matplotlib.pyplot as plt
import numpy as np

from .guard import LOAD


def pictured_rows(shape):
    """The rows drawn of a tensor: those of its first (batch, head) matrix, (B, H, N, d), or of a 2-d one; all
    of a (B, H, 1, d) one (decode's one query row per head)."""
    return shape[-2] if shape[-2] > 1 else int(np.prod(shape[:-1]))


def loads_by_step(log, tensors):
    """{tensor: {program: [pictured rows of its 1st, 2nd, ... load of the tensor]}}."""
    out = {t: {} for t in tensors}
    for a in log.accesses:
        if a.kind != LOAD or a.tensor not in out:
            continue
        shape = log.tensors[a.tensor].shape
        first = a.elements[a.elements < pictured_rows(shape) * shape[-1]]
        if first.size:
            out[a.tensor].setdefault(a.program, []).append(np.unique(first // shape[-1]))
    return out


def schedule_loads(puzzle, tensors):
    """gpusim's flash2 trace as loads_by_step: at each step of program (0, 0, i), the tile rows it loads."""
    out = {t: {} for t in tensors}
    size = {"Q": puzzle.block_q, "K": puzzle.block_kv, "V": puzzle.block_kv}
    for s in puzzle.schedule():
        if s.program[:2] != (0, 0):
            continue
        i, j = s.tile
        for tensor, _ in s.loads:
            if tensor in out:
                block = i if tensor == "Q" else j
                rows = np.arange(block * size[tensor], min((block + 1) * size[tensor], puzzle.seq))
                out[tensor].setdefault((i, 0), []).append(rows)
    return out


def _image(by_program, n_rows):
    """(rows x programs array of the step at which each program first loaded each row, NaN if never; labels)."""
    programs = sorted(by_program)
    image = np.full((n_rows, max(len(programs), 1)), np.nan)
    for x, p in enumerate(programs):
        for step, rows in reversed(list(enumerate(by_program[p]))):
            image[rows, x] = step
    return image, programs


def figure(rows, mine, theirs, title):
    """Two rows of panels (yours, then `title`'s), one column per tensor, on one colour scale of steps."""
    images = [[_image(loads[t], rows[t]) for t in rows] for loads in (mine, theirs)]
    steps = max([1] + [int(np.nanmax(image)) for row in images for image, _ in row if np.isfinite(image).any()])
    fig, axes = plt.subplots(2, len(rows), figsize=(2.2 * len(rows) + 1, 4.6), squeeze=False, layout="constrained")
    for row, who in enumerate(("your kernel", title)):
        for col, (tensor, (image, programs)) in enumerate(zip(rows, images[row])):
            ax = axes[row, col]
            shown = ax.imshow(image, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0, vmax=steps)
            ax.set_title(f"{tensor}: {who}", fontsize=8)
            ax.set_xticks(range(len(programs)), [",".join(map(str, p)) for p in programs], fontsize=6)
            ax.tick_params(axis="y", labelsize=6)
            if col == 0:
                ax.set_ylabel("row (batch 0, head 0 of a (B, H, N, d) tensor)", fontsize=6)
        fig.colorbar(shown, ax=axes[row, :].tolist(), label="step (its k-th load)", shrink=0.8)
    fig.supxlabel("program (tl.program_id values)", fontsize=8)
    return fig

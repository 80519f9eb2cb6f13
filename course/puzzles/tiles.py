"""Where an attention kernel goes wrong, tile by tile (Flash2Puzzle, DecodePuzzle): the first Q block (or
program) whose rows are wrong and the first K/V block after which they go wrong (the kernel is rerun on the
first 1, 2, ... K/V blocks of keys); the first program whose traffic differs from gpusim's schedule and how
many K/V tiles it loaded against it (from the guard's log of its accesses); under the causal mask, the first
Q block that masks a K/V block all of whose keys its rows see (from the steps at which it called tl.where)."""
import numpy as np
import torch

import gpusim

from ..checks import Stop
from .guard import LOAD
from .kinds import LSE_TOL, O_TOL, SEE


def _errors(puzzle, got, want, p, v):
    """(max |O - O_ref| / max |v|, max |LSE - LSE_ref|) over program p's rows; NaN counts as infinitely wrong."""
    at = puzzle.region(p)
    scale = float(v.abs().max())

    def worst(x, ref):
        diff = (x[at].double() - ref[at]).abs()
        return float("inf") if not torch.isfinite(diff).all() else float(diff.max())
    return worst(got["O"], want["O"]) / scale, worst(got["LSE"], want["LSE"])


def _wrong(errors):
    return errors[0] > O_TOL or errors[1] > LSE_TOL


def _first_wrong_tile(puzzle, kernel, inputs, p, run):
    """The first K/V block j such that program p is wrong when the keys end after block j (contiguous K/V);
    run: puzzles.run, the guarded launch."""
    k, v = inputs["K"], inputs["V"]
    for j in range(-(-k.shape[2] // puzzle.block_kv)):
        n = min((j + 1) * puzzle.block_kv, k.shape[2])
        fewer = {**inputs, "K": k[:, :, :n].contiguous(), "V": v[:, :, :n].contiguous()}
        got = run(puzzle, kernel, None, fewer)[0]
        if _wrong(_errors(puzzle, got, puzzle.reference(fewer), p, v)):
            return j
    return None


def _right_on(puzzle, kernel, inputs, run):
    """Whether every program of the kernel is right on `inputs` (run: puzzles.run, the guarded launch)."""
    got, want = run(puzzle, kernel, None, inputs)[0], puzzle.reference(inputs)
    return not any(_wrong(_errors(puzzle, got, want, p, inputs["V"])) for p in range(puzzle.programs))


def correct_by_tile(puzzle, kernel, inputs, got, want, run):
    """Raise Stop naming the first wrong tile, or return the largest errors, in words (run: puzzles.run)."""
    v = inputs["V"]  # paged or not, the same values
    errors = [_errors(puzzle, got, want, p, v) for p in range(puzzle.programs)]
    bad = next((p for p, e in enumerate(errors) if _wrong(e)), None)
    if bad is None:
        return (f"O within {max(e[0] for e in errors):.2g} x max|v| and the LSE within "
                f"{max(e[1] for e in errors):.1e} of float64 attention")
    o_err, lse_err = errors[bad]
    cut = puzzle.keys_as_queries(inputs)
    if not np.isfinite(o_err):
        symptom, where = "nan", "its output holds NaN or infinity"
    elif cut is not None and _right_on(puzzle, kernel, cut, run):
        symptom, where = "n_kv", (f"its output is off by {o_err:.3g} x max|v| (tolerance {O_TOL:.2g}), yet every "
                                  f"program is right where K and V hold only N = {puzzle.seq} keys, as many as Q has "
                                  f"rows (N_KV = {puzzle.seq_kv} here)")
    elif o_err <= O_TOL:
        symptom, where = "lse", f"O is right but the log-sum-exp is off by {lse_err:.3g}"
    elif getattr(puzzle, "page_size", None) is not None:
        symptom, where = "later_block", f"its output is off by {o_err:.3g} x max|v| (tolerance {O_TOL:.2g})"
    else:
        j = _first_wrong_tile(puzzle, kernel, inputs, bad, run)
        symptom = "first_block" if j == 0 else "later_block"
        where = (f"its output is off by {o_err:.3g} x max|v| (tolerance {O_TOL:.2g}), first when the keys end "
                 f"after K/V block {j}: {puzzle.tile(bad, j)}" if j is not None
                 else f"its output is off by {o_err:.3g}")
    raise Stop("wrong", f"Correctness: {puzzle.block(bad)} is wrong: {where}. {puzzle.hint(symptom)}")


def _per_program(log):
    """{grid index along axis 0: {tensor: bytes read + written}} from the guard's log."""
    out = {}
    for a in log.accesses:
        mine = out.setdefault(a.program[0], {})
        mine[a.tensor] = mine.get(a.tensor, 0) + a.elements.size * log.tensors[a.tensor].itemsize
    return out


def bytes_by_program(puzzle, log, moved, counted):
    """Raise Stop naming the first program (along the grid's first axis) whose traffic differs from gpusim's."""
    expected, mine_all = puzzle.counted_per_program(), _per_program(log)
    p = next((p for p in range(puzzle.programs)
              if {t: n for t, n in mine_all.get(p, {}).items() if n} != {t: n for t, n in expected[p].items() if n}),
             None)
    if p is None:
        return
    mine = mine_all.get(p, {})
    tiles = ", ".join(f"{t} {mine.get(t, 0) / puzzle.tile_bytes():g} tiles (gpusim: "
                      f"{expected[p].get(t, 0) / puzzle.tile_bytes():g})" for t in ("K", "V"))
    others = ", ".join(f"{t} {mine.get(t, 0):,} B (gpusim: {expected[p].get(t, 0):,} B)"
                       for t in sorted(set(mine) | set(expected[p]))
                       if mine.get(t, 0) != expected[p].get(t, 0) and t not in ("K", "V"))
    more = any(mine.get(t, 0) > expected[p].get(t, 0) for t in ("K", "V"))
    total = sum(sum(rw.values()) for rw in moved.values())
    want = sum(sum(rw.values()) for rw in counted.values())
    raise Stop("wrong", f"Bytes: the output is right, but the kernel moves {total:,} B where gpusim's schedule "
                        f"moves {want:,} B. The first program that differs is {puzzle.block(p)}: "
                        f"{tiles + (f'; {others}' if others else '')}. "
                        f"{puzzle.hint('more_kv' if more else 'other_bytes')} {SEE.format(puzzle.name)}")


def masked_steps(log):
    """{program: the K/V steps (0, 1, ...: its K loads so far, less one) in which it called tl.where}; a call
    before its first K load is not a step's."""
    out = {}
    for program, seen in log.wheres:
        step = sum(a.program == program and a.tensor == "K" and a.kind == LOAD for a in log.accesses[:seen]) - 1
        if step >= 0:
            out.setdefault(program, set()).add(step)
    return out


def check_masks(puzzle, log):
    """Under the causal mask: raise Stop naming the first Q block that masks a K/V block left of its first row's
    diagonal (gpusim's tiling: unmasked_blocks_of), or return how many steps were masked, in words."""
    tiling = gpusim.simulate("flash2", **puzzle.config()).config.tiling
    masked = masked_steps(log)
    for program, steps in sorted(masked.items()):
        whole = tiling.unmasked_blocks_of(program[0])
        if min(steps) < whole:
            raise Stop("wrong", f"Masks: the output and the bytes are right, but {puzzle.block(program[0])} masks "
                                f"K/V block {min(steps)}, which every row of it sees whole: {len(steps)} of its "
                                f"steps are masked where only the diagonal's need it. {puzzle.hint('masks')}")
    steps = sum(map(len, masked.values()))
    want = puzzle.batch * puzzle.heads * (tiling.tiles - tiling.unmasked_tiles)
    return f"masks {steps} of the launch's steps (gpusim's schedule: the diagonal's {want})"

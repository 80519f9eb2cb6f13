"""Notebook 3's exercise, checked against gpusim (course/checks.py).

    >>> from gpusim_course.softmax import exercises
    >>> exercises.check("tile_update", tile_update)
    >>> exercises.solution("tile_update")
"""
import numpy as np

import gpusim

from .. import checks
from ..checks import Stop, arrays, call


def tile_update(m_i, l_i, acc, s_ij, v_j):
    m_new = np.maximum(m_i, s_ij.max(axis=1))
    alpha = np.exp(m_i - m_new)  # rescales what was summed under the old max
    p_ij = np.exp(s_ij - m_new[:, None])
    return m_new, alpha * l_i + p_ij.sum(axis=1), alpha[:, None] * acc + p_ij @ v_j


# Tolerances. float32's unit roundoff is 2^-24 = 6e-8, and an update rounds each entry once per term it sums (the Bc
# products p_ij v_j and the rescaled old acc): (Bc + 2) x 6e-8 = 1.1e-6 at Bc = 16 of the sum of the terms' sizes at
# most, and O = acc / l, over every K/V block, N x 6e-8 = 3.8e-6 of max |v| at N = 64. 1e-5 of those sizes accepts an
# update computed in float32, as a GPU accumulates it; the mistakes the hints name (the old acc or l not rescaled,
# a wrong max) are off by a good share of them.
F32_TOL = 1e-5


def _near(got, want, size):
    """Whether got is want within F32_TOL of `size`, the size (elementwise) of the terms summed into want."""
    return bool(np.all(np.abs(got - want) <= F32_TOL * size))


def _check_tile_update(fn, seq=64, head_dim=16, block=16):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 1, seq, head_dim)) * 2 for _ in range(3))
    r = gpusim.simulate("flash2", q=q, k=k, v=v, block_q=block, block_kv=block, trace=True)
    steps = [s for s in r.trace if s.program == (0, 0, 0) and s.tile[1] is not None]
    q_i = q[0, 0, :block]
    m, l, acc = np.full(block, -np.inf), np.zeros(block), np.zeros((block, head_dim))
    for j, step in enumerate(steps):
        k_j, v_j = k[0, 0, j * block:(j + 1) * block], v[0, 0, j * block:(j + 1) * block]
        s_ij = q_i @ k_j.T / np.sqrt(head_dim)
        text, got = call(fn, (m, l, acc, s_ij, v_j))
        m_new, l_new, acc_new = arrays(text, got, ("m_new", "l_new", "acc_new"))
        at = f"At K/V block j = {j}"
        for name, x, like, old in (("m_new", m_new, "m_i", m), ("l_new", l_new, "l_i", l),
                                   ("acc_new", acc_new, "acc", acc)):
            if x.shape != old.shape:
                each = "a row of d values" if like == "acc" else "one value"
                raise Stop("wrong", f"{at}, {name} has shape {x.shape}: it should be {old.shape}, like {like} "
                                     f"({each} per query row).")
        if not _near(m_new, step.m_i, np.abs(step.m_i)):
            raise Stop("wrong", f"{at}, m_new differs from gpusim's m_i. m_new is the larger of m_i and the tile's "
                                 f"row max, s_ij.max(axis=1).")
        if not _near(l_new, step.l_i, step.l_i):  # a sum of positive terms: l is their size
            unscaled = l + np.exp(s_ij - step.m_i[:, None]).sum(axis=1)
            why = ("you added the new sum without rescaling the old l_i: multiply it by exp(m_i − m_new) first."
                   if _near(l_new, unscaled, unscaled) else "l_new = exp(m_i − m_new)·l_i + Σ exp(s_ij − m_new).")
            raise Stop("wrong", f"{at}, l_new differs from gpusim's l_i: {why}")
        alpha, p_ij = np.exp(m - step.m_i), np.exp(s_ij - step.m_i[:, None])
        want, size = alpha[:, None] * acc + p_ij @ v_j, alpha[:, None] * np.abs(acc) + p_ij @ np.abs(v_j)
        if not _near(acc_new, want, size):
            why = ("acc_new is already divided by l_new: keep acc unnormalized, and divide by l_i once, after the "
                   "last block (O = acc / l)." if _near(acc_new, want / step.l_i[:, None], size / step.l_i[:, None])
                   else "the old acc needs the same rescale, exp(m_i − m_new)[:, None]·acc + "
                        "exp(s_ij − m_new[:, None]) @ v_j.")
            raise Stop("wrong", f"{at}, acc_new is off: {why}")
        m, l, acc = m_new, l_new, acc_new
    if not _near(acc / l[:, None], r.output[0, 0, :block], np.abs(v).max()):  # O's rows: weighted means of v's
        raise Stop("wrong", "m and l match but O = acc / l differs from gpusim's output.")
    return (f"m_i and l_i match gpusim's trace at all {len(steps)} K/V blocks, and acc / l_i equals "
            f"FlashAttention-2's output for the first {block} rows.")

EXERCISES = {
    "tile_update": (_check_tile_update, tile_update),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; returns a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

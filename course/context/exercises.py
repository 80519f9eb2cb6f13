"""Notebook 13's exercise, checked against gpusim (course/checks.py): merge two partial attention results.

    >>> from gpusim_course.context import exercises as ex
    >>> ex.check("merge_partials", merge_partials)
    >>> ex.solution("merge_partials")
"""
import numpy as np

import gpusim

from .. import checks
from ..checks import Stop, arrays, call


def merge_partials(o1, lse1, o2, lse2):
    lse = np.logaddexp(lse1, lse2)  # log(exp(lse1) + exp(lse2)): the whole row's normaliser, stably
    o = np.exp(lse1 - lse)[:, None] * o1 + np.exp(lse2 - lse)[:, None] * o2  # each part's share of it
    return o, lse


def _lse(q, k):
    s = q @ k.T * q.shape[-1] ** -0.5
    m = s.max(axis=1)
    return m + np.log(np.exp(s - m[:, None]).sum(axis=1))


def _case(seed, rows, keys, split, head_dim, shift=0.0, scale=1.0):
    """Two partials of one head, each gpusim's flash2 run on its share of the keys, and the whole answer
    (gpusim's reference on every key); `scale` multiplies the queries, and so the scores and the LSEs."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, head_dim)) for n in (rows, keys, keys))
    q *= scale
    k[split:] += shift  # a shift makes one part's scores dominate: the weights must not be halves
    parts = []
    for sl in (slice(0, split), slice(split, keys)):
        o = gpusim.simulate("flash2", q=q[None, None], k=k[None, None, sl], v=v[None, None, sl], block_q=16,
                            block_kv=16).output[0, 0]
        parts += [o, _lse(q, k[sl])]
    whole = gpusim.reference_attention(q[None, None], k[None, None], v[None, None])[0, 0]
    return tuple(parts), (whole, _lse(q, k))


# Tolerances, from float32's unit roundoff u = 2^-24 = 6e-8. lse = log(exp(lse1) + exp(lse2)) rounds a few numbers
# as large as L = max |lse_i| and an O(1) log term: a float32 answer is within about 4u (L + 1) = 2.4e-7 (L + 1).
# O weighs o1 and o2 by exp(lse_i - lse), each weight off by about u (|lse| + 1) relative (a float32 difference of
# numbers of size |lse|, exponentiated), and adds the two: within about 4u (|lse| + 1)(|o1| + |o2|). F32_TOL = 1e-6
# leaves four times that; an answer off by more than FAR = 1e-3 of those sizes has a wrong formula, not rounding.
F32_TOL, FAR = 1e-6, 1e-3


def _check_merge_partials(fn):
    cases = [_case(0, 16, 48, 16, 16), _case(1, 32, 64, 40, 16, shift=0.7), _case(2, 8, 32, 31, 32),
             _case(3, 8, 32, 12, 16, scale=250.0)]  # LSEs past 709, where exp overflows even float64
    for args, (o_want, lse_want) in cases:
        text, got = call(fn, args)
        o, lse = arrays(text, got, ("o", "lse"))
        if o.shape != o_want.shape or lse.shape != lse_want.shape:
            raise Stop("wrong", f"shapes {o.shape} and {lse.shape}: expected {o_want.shape} (like o1) and "
                                f"{lse_want.shape} (like lse1).")
        o1, lse1, o2, lse2 = args
        lse_size = 1 + np.maximum(np.abs(lse1), np.abs(lse2))
        lse_off = _off(lse, lse_want)
        if not np.all(lse_off <= F32_TOL * lse_size):
            raise Stop("wrong", f"the lse of {text} is off by up to {lse_off.max():.3g}. "
                                + _lse_hint(lse, lse1, lse2, np.all(lse_off <= FAR * lse_size)))
        o_size = (1 + np.abs(lse_want))[:, None] * (np.abs(o1) + np.abs(o2))
        o_off = _off(o, o_want)
        if not np.all(o_off <= F32_TOL * o_size):
            raise Stop("wrong", f"the lse is right, O is off by up to {o_off.max():.3g}. "
                                + _o_hint(o, o1, o2, np.all(o_off <= FAR * o_size)))
    return f"matches attention over all the keys on all {len(cases)} cases."


def _off(got, want):
    """|got - want|, inf where got is not finite (an exp that overflowed)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(got), np.abs(got - want), np.inf)


def _lse_hint(lse, lse1, lse2, near):
    if not np.all(np.isfinite(lse)):
        return ("It is not finite: exp of a large lse overflows (above 88.7 in float32, 709.8 in float64). "
                "np.logaddexp(lse1, lse2) computes log(exp(lse1) + exp(lse2)) without overflow.")
    if np.allclose(lse, np.maximum(lse1, lse2)):
        return "The max is only the larger part: the whole normaliser is exp(lse1) + exp(lse2), logged."
    if np.allclose(lse, lse1 + lse2):
        return "Adding logs multiplies the sums: add the sums, exp(lse1) + exp(lse2), then take the log."
    if near:
        return ("Close, but more than float32 rounding: compute log(exp(lse1) + exp(lse2)) exactly, in float32 or "
                "float64 (no float16, no approximation).")
    return "lse = log(exp(lse1) + exp(lse2)); np.logaddexp does it without overflow."


def _o_hint(o, o1, o2, near):
    if np.allclose(o, (o1 + o2) / 2):
        return "Not halves: each part weighs its share of the whole row's sum, exp(lse_i - lse)."
    if np.allclose(o, o1 + o2):
        return "Each O_i is already normalised by its own sum: rescale it by exp(lse_i - lse) before adding."
    if near:
        return "Close, but more than float32 rounding: compute the weighted sum in float32 or float64 (no float16)."
    return "O = exp(lse1 - lse) O1 + exp(lse2 - lse) O2, one weight per row (broadcast over d)."


EXERCISES = {"merge_partials": (_check_merge_partials, merge_partials)}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    checks.solution(EXERCISES, name)

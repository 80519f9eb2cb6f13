"""Notebook 13's exercise, checked against gpusim (course/checks.py): merge two partial attention results.

    >>> from gpusim_course.context import exercises as ex
    >>> ex.check("merge_partials", merge_partials)
    >>> ex.solution("merge_partials")
"""
import numpy as np

import gpusim

from .. import checks
from ..checks import Stop, call


def merge_partials(o1, lse1, o2, lse2):
    lse = np.logaddexp(lse1, lse2)  # log(exp(lse1) + exp(lse2)): the whole row's normaliser, stably
    o = np.exp(lse1 - lse)[:, None] * o1 + np.exp(lse2 - lse)[:, None] * o2  # each part's share of it
    return o, lse


def _lse(q, k):
    s = q @ k.T * q.shape[-1] ** -0.5
    m = s.max(axis=1)
    return m + np.log(np.exp(s - m[:, None]).sum(axis=1))


def _case(seed, rows, keys, split, head_dim, shift=0.0):
    """Two partials of one head, each gpusim's flash2 run on its share of the keys, and the whole answer
    (gpusim's reference on every key)."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, head_dim)) for n in (rows, keys, keys))
    k[split:] += shift  # a shift makes one part's scores dominate: the weights must not be halves
    parts = []
    for sl in (slice(0, split), slice(split, keys)):
        o = gpusim.simulate("flash2", q=q[None, None], k=k[None, None, sl], v=v[None, None, sl], block_q=16,
                            block_kv=16).output[0, 0]
        parts += [o, _lse(q, k[sl])]
    whole = gpusim.reference_attention(q[None, None], k[None, None], v[None, None])[0, 0]
    return tuple(parts), (whole, _lse(q, k))


def _check_merge_partials(fn):
    cases = [_case(0, 16, 48, 16, 16), _case(1, 32, 64, 40, 16, shift=0.7), _case(2, 8, 32, 31, 32)]
    for args, (o_want, lse_want) in cases:
        text, got = call(fn, args)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise Stop("wrong", f"merge_partials returned {type(got).__name__}: return the pair (o, lse).")
        o, lse = (np.asarray(x, dtype=float) for x in got)
        if o.shape != o_want.shape or lse.shape != lse_want.shape:
            raise Stop("wrong", f"shapes {o.shape} and {lse.shape}: expected {o_want.shape} (like o1) and "
                                f"{lse_want.shape} (like lse1).")
        o1, lse1, o2, lse2 = args
        if not np.allclose(lse, lse_want, rtol=1e-9, atol=1e-9):
            raise Stop("wrong", f"the lse of {text} is off by up to {np.abs(lse - lse_want).max():.3g}. "
                                + _lse_hint(lse, lse1, lse2))
        if not np.allclose(o, o_want, rtol=1e-9, atol=1e-9):
            raise Stop("wrong", f"the lse is right, O is off by up to {np.abs(o - o_want).max():.3g}. "
                                + _o_hint(o, o1, o2, lse1, lse2, lse_want))
    return f"matches attention over all the keys on all {len(cases)} cases."


def _lse_hint(lse, lse1, lse2):
    if np.allclose(lse, np.maximum(lse1, lse2)):
        return "The max is only the larger part: the whole normaliser is exp(lse1) + exp(lse2), logged."
    if np.allclose(lse, lse1 + lse2):
        return "Adding logs multiplies the sums: add the sums, exp(lse1) + exp(lse2), then take the log."
    return "lse = log(exp(lse1) + exp(lse2)); np.logaddexp does it without overflow."


def _o_hint(o, o1, o2, lse1, lse2, lse):
    if np.allclose(o, (o1 + o2) / 2):
        return "Not halves: each part weighs its share of the whole row's sum, exp(lse_i - lse)."
    if np.allclose(o, o1 + o2):
        return "Each O_i is already normalised by its own sum: rescale it by exp(lse_i - lse) before adding."
    return "O = exp(lse1 - lse) O1 + exp(lse2 - lse) O2, one weight per row (broadcast over d)."


EXERCISES = {"merge_partials": (_check_merge_partials, merge_partials)}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    checks.solution(EXERCISES, name)

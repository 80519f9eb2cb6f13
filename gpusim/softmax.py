"""The three softmax algorithms of Milakov & Gimelshein, "Online normalizer calculation for softmax"
(2018), run over a vector in HBM chunk by chunk, every element access counted.

naive:  d = sum exp(x);                      y = exp(x) / d           2 loads + 1 store per element
safe:   m = max x;  d = sum exp(x - m);      y = exp(x - m) / d       3 loads + 1 store
online: m, d together in one pass, rescaling d by exp(m_old - m_new) whenever the max grows;
        y = exp(x - m) / d                                            2 loads + 1 store

The arithmetic runs in the precision of x (float16, float32 or float64), so the variants can be compared
bit for bit.
"""
from dataclasses import dataclass

import numpy as np

from .memory import Memory
from .shape import positive_int

VARIANTS = ("naive", "safe", "online")


@dataclass(frozen=True)
class SoftmaxResult:
    y: np.ndarray
    loads: int  # element loads from HBM
    stores: int  # element stores to HBM
    steps: tuple  # online: one (chunk, m, d, rescale) per chunk of the first pass

    @property
    def accesses_per_element(self):
        return (self.loads + self.stores) / self.y.size

    @property
    def out_of_range(self):
        """True where the arithmetic left the dtype's range and y is no distribution (NaN, or summing to 0): the naive
        variant's exp(x), or their sum, past the largest value (x above about 88.7 in float32, 11.1 in float16), or
        every exp(x) rounded to 0 (0 / 0). The safe and online variants subtract the max first: exps in (0, 1]."""
        total = self.y.astype(np.float64).sum()
        return not (np.isfinite(total) and abs(total - 1) < 0.5)


def softmax(x, variant="online", chunk=1):
    """Softmax of a 1-D array, reading and writing HBM `chunk` elements at a time. The naive variant is run as
    written, so that its failure shows: past exp's range its y is no distribution and `out_of_range` is True."""
    x = np.asarray(x)
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}")
    if x.ndim != 1 or x.size == 0 or not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be a non-empty 1-D floating-point array, got shape {x.shape} and dtype {x.dtype}")
    bad = np.flatnonzero(np.isnan(x) | (x == np.inf))
    if bad.size or np.all(x == -np.inf):
        at = f"x[{bad[0]}]={x[bad[0]]}" if bad.size else "every element of x is -inf"
        raise ValueError(f"{at}: a softmax takes finite scores (-inf, a masked one, aside) and at least one above -inf")
    positive_int("chunk", chunk)
    mem = Memory({"x": x, "y": np.empty_like(x)}, {"x": 1, "y": 1})  # 1 "byte" per element: counts elements
    chunks = [slice(c, min(c + chunk, x.size)) for c in range(0, x.size, chunk)]
    zero, steps = x.dtype.type(0), []
    m = x.dtype.type(0)  # the naive variant subtracts nothing
    if variant == "safe":
        m = x.dtype.type(-np.inf)
        for c in chunks:  # pass 1: read N
            m = np.maximum(m, mem.load("", "x", c).max())
    if variant == "online":
        m, d = x.dtype.type(-np.inf), zero
        for i, c in enumerate(chunks):  # pass 1: read N, max and normaliser together
            xc = mem.load("", "x", c)
            m_new = np.maximum(m, xc.max())
            ref = m_new if m_new > -np.inf else zero  # masked scores alone so far: exp(-inf - 0) = 0, not NaN
            rescale = np.exp(m - ref)
            d = d * rescale + np.exp(xc - ref).sum(dtype=x.dtype)
            m = m_new
            steps.append((i, m, d, rescale))
    else:
        d = zero
        for c in chunks:  # pass 2 (safe) or pass 1 (naive): read N
            d = d + np.exp(mem.load("", "x", c) - m).sum(dtype=x.dtype)
    for c in chunks:  # last pass: read N, write N
        mem.store("", "y", c, np.exp(mem.load("", "x", c) - m) / d)
    loads, stores = (sum(rw[i] for rw in mem.counts.values()) for i in (0, 1))
    return SoftmaxResult(mem.tensors["y"], loads, stores, tuple(steps))

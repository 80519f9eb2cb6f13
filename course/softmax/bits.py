"""Bit for bit: how many representable floats lie between two computations of the same thing (the safe
and the online softmax, standard attention and FlashAttention-2), measured on gpusim's NumPy arithmetic.
"""
import numpy as np

import gpusim


def ulp_distance(a, b):
    """How many representable floats lie between a and b, elementwise (0 means the same bits)."""
    a, b = np.asarray(a), np.asarray(b)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = (x.view(bits).astype(np.int64) for x in (a, b))
    magnitude = np.int64((1 << (8 * a.dtype.itemsize - 1)) - 1)  # every bit but the sign
    oa, ob = (np.where(i < 0, -(i & magnitude), i) for i in (ia, ib))  # ordered: adjacent floats differ by 1
    return np.abs(oa - ob)


ROWS, ROW_LEN = 2000, 1024  # the course's sample: notebook 3's measurement and the scorecard's row on it


def bit_comparison(dtype, rows=ROWS, n=ROW_LEN, chunk=128, seed=0):
    """Safe softmax against online softmax (gpusim.softmax, arithmetic in `dtype`) on random rows."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * 3).astype(dtype)
    safe = np.stack([gpusim.softmax(row, "safe", chunk).y for row in x])
    online = np.stack([gpusim.softmax(row, "online", chunk).y for row in x])
    return compare(f"softmax, {np.dtype(dtype).name}", safe, online)


def attention_bits(seq=256, head_dim=64, seed=0):
    """FlashAttention-2's output against standard attention's, both run by gpusim in float32."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 1, seq, head_dim)).astype(np.float32) for _ in range(3))
    naive = gpusim.simulate("naive", q=q, k=k, v=v).output
    flash = gpusim.simulate("flash2", q=q, k=k, v=v, block_q=64, block_kv=64).output
    return compare("attention output, float32", naive, flash)


def compare(label, a, b):
    """The ULP distances between a and b (same dtype and shape) and their summary: the share of elements
    with the same bits, the largest distance, and the largest difference relative to max |a|, also in units
    of the dtype's unit roundoff u (2^-24 for float32, 2^-11 for float16)."""
    ulps = ulp_distance(a, b)
    difference = float(np.abs(a.astype(np.float64) - b).max() / np.abs(a).max())
    u = float(np.finfo(a.dtype).eps) / 2
    return {"label": label, "elements": ulps.size, "equal_fraction": float((ulps == 0).mean()),
            "max_ulp": int(ulps.max()), "ulps": ulps, "max_difference": difference, "u": u,
            "max_u": difference / u}


def bits_rows(comparisons):
    """A table row per comparison (compare's dicts)."""
    return [{"comparison": c["label"], "elements": c["elements"], "bit-identical": f"{c['equal_fraction']:.2%}",
             "max ULP distance": c["max_ulp"], "max |difference| / max |value|": f"{c['max_difference']:.1e}",
             "in u": f"{c['max_u']:.1f}"} for c in comparisons]


def bits_verdict(comparisons):
    """One sentence on whether the comparisons were bit-for-bit identical, from the measurement."""
    identical = [c["label"] for c in comparisons if c["equal_fraction"] == 1]
    differ = [f"{c['label']}: {1 - c['equal_fraction']:.1%} of elements differ, by at most {c['max_ulp']:,} ULP, "
              f"{c['max_u']:.1f} u of the largest value (u = 2^{np.log2(c['u']):.0f})"
              for c in comparisons if c["equal_fraction"] < 1]
    if not differ:
        return "Measured: bit-for-bit identical in every comparison (" + ", ".join(identical) + ")."
    return ("Measured: not bit-for-bit identical. " + "; ".join(differ) + ". The algebra is exact; floating-point "
            "addition is not associative, and the two orders of operations round differently. A ULP is the gap "
            "to the next float at the element's own size, tiny near zero, so a small element off by little can be "
            "many ULPs off; u, the dtype's unit roundoff, measures the difference against the largest value.")


def exp_overflow(dtype):
    """The score above which e^x overflows in `dtype`: log of its largest finite number (numpy.finfo)."""
    return float(np.log(np.finfo(dtype).max))


def exp_overflow_line(dtypes=(np.float16, np.float32, np.float64)):
    """exp_overflow of each dtype, in one line."""
    return "e^x overflows above: " + ", ".join(f"{np.dtype(d).name} {exp_overflow(d):.1f}" for d in dtypes)

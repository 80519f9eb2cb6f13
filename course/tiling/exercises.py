"""Notebooks 4 and 5's exercises, checked against gpusim (course/checks.py).

    >>> from gpusim_course.tiling import exercises
    >>> exercises.check("causal_kept", causal_kept)
    >>> exercises.solution("causal_kept")
"""
import math

import gpusim

from .. import checks
from ..checks import numeric


def flash2_k_read_bytes(seq, head_dim, block_q, itemsize):
    return math.ceil(seq / block_q) * seq * head_dim * itemsize  # all of K, once per Q block


def _flash2_k_case(seq, head_dim, block_q, dtype):
    """((seq, head_dim, block_q, itemsize), gpusim's K read bytes) for one head of FlashAttention-2."""
    r = gpusim.simulate("flash2", seq=seq, head_dim=head_dim, block_q=block_q, block_kv=32, dtype=dtype,
                        gpu="H100-SXM")
    return (seq, head_dim, block_q, gpusim.DTYPE_BYTES[dtype]), r.by_tensor["K"]["read_bytes"]


def _check_flash2_k_read_bytes(fn):
    def hint(args, got, want):
        seq, d, br, e = args
        if got == seq * d * e:
            return "That is K once. Every Q block's thread block loads all of K: Tr = ceil(N / Br) times."
        if got == (seq // br) * seq * d * e:  # round() too, where the remainder is under half a block
            return (f"N = {seq} is not a multiple of Br = {br} here: the last Q block holds only {seq % br} rows and "
                    f"still loads all of K, so Tr = ceil(N / Br) = {-(-seq // br)}: round up, never down or to the "
                    f"nearest (use ceil).")
        return "K read bytes = Tr × N × d × itemsize, with Tr = ceil(N / Br)."

    # uneven N with a large remainder (1000 / 128 = 7.8) and a small one (1040 / 128 = 8.1): round() misses the latter
    cases = [(4096, 64, 128, "fp16"), (1000, 64, 128, "bf16"), (2048, 128, 64, "fp32"), (300, 32, 16, "fp16"),
             (1040, 64, 128, "fp16")]
    return numeric(fn, [_flash2_k_case(*c) for c in cases], hint)


def causal_kept(seq_q, seq_kv, align):
    if align == "bottom_right":  # row r sees keys 0 .. r + seq_kv - seq_q: the last row sees them all
        return sum(min(r + 1 + seq_kv - seq_q, seq_kv) for r in range(seq_q))
    return sum(min(r + 1, seq_kv) for r in range(seq_q))  # top-left: row r sees keys 0 .. r


def _kept_case(seq_q, seq_kv, align):
    """((seq_q, seq_kv, align), the S elements gpusim's causal mask keeps)."""
    tiling = gpusim.simulate("flash2", seq=seq_q, seq_kv=seq_kv, head_dim=16, causal=True,
                             causal_align=align).config.tiling
    return (seq_q, seq_kv, align), tiling.kept_elements


# Both alignments, with query and key lengths equal (where they agree) and different (where they do not).
# Bottom-right needs seq_q <= seq_kv: otherwise its first rows would see no key (gpusim refuses it).
KEPT_CASES = [(4, 4, "top_left"), (1000, 1000, "top_left"), (5, 9, "top_left"), (9, 5, "top_left"),
              (1, 4096, "top_left"), (4096, 1, "top_left"), (7, 7, "bottom_right"), (5, 9, "bottom_right"),
              (1, 4096, "bottom_right"), (300, 1000, "bottom_right")]


def _check_causal_kept(fn):
    def hint(args, got, want):
        n, nk, align = args
        other = "top_left" if align == "bottom_right" else "bottom_right"
        if n <= nk and got == causal_kept(n, nk, other):
            return (f"That is the {other.replace('_', '-')} count: with align={align!r} row r sees keys 0 .. r"
                    + (" + N_kv - N (the last row sees every key)." if align == "bottom_right" else "."))
        if got == n * (n - 1) // 2:
            return "Row r sees keys 0 .. r inclusive: r + 1 keys, the diagonal included."
        return "Sum over rows r of the keys row r sees, at most N_kv."

    return numeric(fn, [_kept_case(*c) for c in KEPT_CASES], hint)


EXERCISES = {
    "flash2_k_read_bytes": (_check_flash2_k_read_bytes, flash2_k_read_bytes),
    "causal_kept": (_check_causal_kept, causal_kept),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; returns a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

"""The course's exercises. The learner writes a small function in a notebook; `check(name, fn)` runs it on
several cases, compares each answer with gpusim, and says right, wrong (with the case and a hint about the
likely mistake) or not yet (the stub still returns None or raises NotImplementedError). It never raises.
`solution(name)` prints a reference solution.

    >>> from gpusim_course import exercises
    >>> exercises.check("causal_kept", causal_kept)
    >>> exercises.solution("causal_kept")
"""
import math

import numpy as np

import gpusim

from . import checks
from .checks import Stop, call, numeric

# ---------------------------------------------------------------------------------------------------
# Notebook 1


def ridge_point(gpu, dtype):
    return gpu.matmul_flops_per_s(dtype) / gpu.hbm_bytes_per_s


def _check_ridge_point(fn):
    cases = [(gpu, dtype) for gpu in gpusim.PRESETS.values() for dtype in ("fp16", "fp32")]

    def hint(args, got, want):
        gpu, dtype = args
        if math.isclose(got, 1 / want, rel_tol=1e-6):
            return "That is bytes per FLOP: divide the FLOP rate by the bandwidth."
        if dtype == "fp16" and math.isclose(got, gpu.fp32_flops_per_s / gpu.hbm_bytes_per_s, rel_tol=1e-6):
            return "Use the tensor-core rate of the dtype, gpu.matmul_flops_per_s(dtype), not the CUDA cores' fp32."
        return "The ridge point is the peak FLOP/s of the dtype over the HBM bandwidth in bytes/s."

    return numeric(fn, [(args, ridge_point(*args)) for args in cases], hint, rel_tol=1e-9)


# ---------------------------------------------------------------------------------------------------
# Notebook 2


def naive_sp_bytes(seq, itemsize):
    return 4 * seq * seq * itemsize  # S written, S read, P written, P read


def _naive_sp_case(seq, dtype):
    """((seq, itemsize), gpusim's S and P bytes) for one head of naive attention in `dtype`."""
    t = gpusim.simulate("naive", seq=seq, head_dim=64, dtype=dtype, gpu="H100-SXM").by_tensor
    return (seq, gpusim.DTYPE_BYTES[dtype]), sum(t[x]["read_bytes"] + t[x]["write_bytes"] for x in ("S", "P"))


def _check_naive_sp_bytes(fn):
    def hint(args, got, want):
        seq, e = args
        if got == 2 * seq * seq * e:
            return "You counted each matrix once: S is written by kernel 1 and read by kernel 2, P is written " \
                   "by kernel 2 and read by kernel 3."
        if got == want // e:
            return "That is elements: multiply by itemsize for bytes."
        return "Count four N × N transfers: S out, S in, P out, P in."

    # fp32 first: at 2 bytes an element, N² x 4 elements is also 2 N² x 2 bytes, and the hints could not tell
    # "forgot the itemsize" from "counted each matrix once".
    cases = [(4096, "fp32"), (128, "fp16"), (1000, "bf16"), (3000, "fp8")]
    return numeric(fn, [_naive_sp_case(*c) for c in cases], hint)


# ---------------------------------------------------------------------------------------------------
# Notebook 3


def tile_update(m_i, l_i, acc, s_ij, v_j):
    m_new = np.maximum(m_i, s_ij.max(axis=1))
    alpha = np.exp(m_i - m_new)  # rescales what was summed under the old max
    p_ij = np.exp(s_ij - m_new[:, None])
    return m_new, alpha * l_i + p_ij.sum(axis=1), alpha[:, None] * acc + p_ij @ v_j


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
        if not isinstance(got, tuple) or len(got) != 3:
            raise Stop("wrong", f"{fn.__name__} should return the tuple (m_new, l_new, acc_new), "
                                 f"got {type(got).__name__}.")
        m_new, l_new, acc_new = (np.asarray(x, dtype=float) for x in got)
        at = f"At K/V block j = {j}"
        if m_new.shape != m.shape or not np.allclose(m_new, step.m_i):
            raise Stop("wrong", f"{at}, m_new differs from gpusim's m_i. m_new is the larger of m_i and the tile's "
                                 f"row max, s_ij.max(axis=1).")
        if l_new.shape != l.shape or not np.allclose(l_new, step.l_i):
            unscaled = l + np.exp(s_ij - step.m_i[:, None]).sum(axis=1)
            why = ("you added the new sum without rescaling the old l_i: multiply it by exp(m_i − m_new) first."
                   if l_new.shape == l.shape and np.allclose(l_new, unscaled) else
                   "l_new = exp(m_i − m_new)·l_i + Σ exp(s_ij − m_new).")
            raise Stop("wrong", f"{at}, l_new differs from gpusim's l_i: {why}")
        expected_acc = tile_update(m, l, acc, s_ij, v_j)[2]
        if acc_new.shape != acc.shape or not np.allclose(acc_new, expected_acc):
            raise Stop("wrong", f"{at}, acc_new is off: the old acc needs the same rescale, "
                                 f"exp(m_i − m_new)[:, None]·acc + exp(s_ij − m_new[:, None]) @ v_j.")
        m, l, acc = m_new, l_new, acc_new
    if not np.allclose(acc / l[:, None], r.output[0, 0, :block]):
        raise Stop("wrong", "m and l match but O = acc / l differs from gpusim's output.")
    return (f"m_i and l_i match gpusim's trace at all {len(steps)} K/V blocks, and acc / l_i equals "
            f"FlashAttention-2's output for the first {block} rows.")


# ---------------------------------------------------------------------------------------------------
# Notebook 4


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
        if got == (seq // br) * seq * d * e:
            return "N is not a multiple of Br here: the last, partial Q block still loads all of K (use ceil)."
        return "K read bytes = Tr × N × d × itemsize, with Tr = ceil(N / Br)."

    cases = [(4096, 64, 128, "fp16"), (1000, 64, 128, "bf16"), (2048, 128, 64, "fp32"), (300, 32, 16, "fp16")]
    return numeric(fn, [_flash2_k_case(*c) for c in cases], hint)


# ---------------------------------------------------------------------------------------------------
# Notebook 5


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
    "ridge_point": (_check_ridge_point, ridge_point),
    "naive_sp_bytes": (_check_naive_sp_bytes, naive_sp_bytes),
    "tile_update": (_check_tile_update, tile_update),
    "flash2_k_read_bytes": (_check_flash2_k_read_bytes, flash2_k_read_bytes),
    "causal_kept": (_check_causal_kept, causal_kept),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; returns a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

"""The training notebook's exercises, checked against gpusim.backward (course/checks.py).

    >>> from gpusim_course.training import exercises as ex
    >>> ex.check("bytes_saved_per_layer", bytes_saved_per_layer)
    >>> ex.solution("bytes_saved_per_layer")
"""
import gpusim
from gpusim import backward

from .. import checks
from ..checks import numeric
from . import model

LSE_BYTES = 4  # the log-sum-exp is kept in fp32 whatever the dtype


def bytes_saved_per_layer(batch, heads, seq, head_dim, itemsize):
    p = batch * heads * seq * seq * itemsize  # what naive attention keeps: P, N x N per head
    o_and_lse = batch * heads * seq * (head_dim * itemsize + LSE_BYTES)  # what FlashAttention keeps instead
    return p - o_and_lse


def _check_bytes_saved_per_layer(fn):
    # every N a multiple of 16: naive's kernels pad P's rows to one (kernels/naive.py), N x 1008 at N = 1000
    shapes = [(1, 16, 1024, 64, "fp16"), (8, 32, 2048, 128, "bf16"), (2, 12, 1008, 64, "fp32"),
              (4, 16, 4096, 64, "fp16")]
    cases = [((b, h, n, d, gpusim.DTYPE_BYTES[dtype]), model.bytes_saved_per_layer(n, d, h, b, dtype))
             for b, h, n, d, dtype in shapes]

    def hint(args, got, want):
        b, h, n, d, e = args
        want = bytes_saved_per_layer(*args)
        if got == want + b * h * n * LSE_BYTES:
            return "FlashAttention keeps the LSE as well as O: one fp32 number per query row."
        if got == want + b * h * n * (LSE_BYTES - e):
            return "The LSE is stored in fp32 (4 bytes) whatever the dtype of Q, K, V and O."
        if got == b * h * n * n * e:
            return "That is P alone: subtract what FlashAttention keeps instead (O and the LSE)."
        if got == want // (b * h):
            return "Every (batch, head) keeps its own P, O and LSE: multiply by batch x heads."
        return "saved = B·H·N²·itemsize (P) - B·H·N·(d·itemsize + 4) (O and the fp32 LSE)."

    return numeric(fn, cases, hint)


def backward_flops(batch, heads, seq, head_dim, causal):
    forward = 4 * batch * heads * seq * seq * head_dim  # two matmuls: S = Q Kᵀ and O = P V
    return 2.5 * forward / (2 if causal else 1)  # five matmuls: S again, dV, dP, dQ, dK


def _check_backward_flops(fn):
    shapes = [(1, 16, 1024, 64, False), (1, 16, 1024, 64, True), (8, 32, 2048, 128, False), (2, 8, 4096, 128, True)]
    cases = [(args, backward.nominal_flops(*args)) for args in shapes]

    def hint(args, got, want):
        b, h, n, d, causal = args
        forward = 4 * b * h * n * n * d / (2 if causal else 1)
        want = 2.5 * forward
        if got == forward:
            return "That is the forward's two matmuls. The backward runs five: S again, dV, dP, dQ and dK."
        if got == 2 * forward:
            return "Four matmuls (dV, dP, dQ, dK) forget S: FlashAttention recomputes it in the backward."
        if got == 3.5 * forward:
            return ("3.5x is what gpusim's flash2 runs (its dQ kernel recomputes S and dP again); the convention "
                    "counts the five matmuls the algorithm needs.")
        if causal and got == 2 * want:
            return "With a causal mask half the scores are masked: halve it, as for the forward."
        return "backward FLOPs = 2.5 x the forward's 4·B·H·N²·d, halved when causal."

    return numeric(fn, cases, hint, rel_tol=1e-12)


EXERCISES = {
    "bytes_saved_per_layer": (_check_bytes_saved_per_layer, bytes_saved_per_layer),
    "backward_flops": (_check_backward_flops, backward_flops),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

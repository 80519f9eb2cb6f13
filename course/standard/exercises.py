"""Notebook 2's exercise, checked against gpusim (course/checks.py).

    >>> from gpusim_course.standard import exercises
    >>> exercises.check("naive_sp_bytes", naive_sp_bytes)
    >>> exercises.solution("naive_sp_bytes")
"""
import gpusim

from .. import checks
from ..checks import numeric


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
    # "forgot the itemsize" from "counted each matrix once". Every N a multiple of 16: the kernels pad S's and P's
    # rows to one (kernels/naive.py), so at N = 1000 they move 1000 x 1008 elements, not N².
    cases = [(4096, "fp32"), (128, "fp16"), (1008, "bf16"), (3008, "fp8")]
    return numeric(fn, [_naive_sp_case(*c) for c in cases], hint)

EXERCISES = {
    "naive_sp_bytes": (_check_naive_sp_bytes, naive_sp_bytes),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; returns a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

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
        if e != 2 and got == 4 * seq * seq * 2:
            return f"That is 2 bytes an element, but itemsize is {e} here: multiply by the itemsize you are given."
        if got == 2 * seq * seq * e:
            return "You counted each matrix once: S is written by kernel 1 and read by kernel 2, P is written " \
                   "by kernel 2 and read by kernel 3."
        if got == want // e:
            return "That is elements: multiply by itemsize for bytes."
        return "Count four N × N transfers: S out, S in, P out, P in."

    # fp8 first: at 1 byte an element, "counted each matrix once" (2 N²), "2 bytes whatever the dtype" (8 N²) and
    # the answer (4 N²) differ, and "forgot the itemsize" is right there, so fp32 comes next, where it is not (at
    # 2 bytes an element 4 N² elements is also 2 N² x 2 bytes; at 4, 2 N² x 4 is also 4 N² x 2). Every N a multiple
    # of 16: the kernels pad S's and P's rows to one (kernels/naive.py), so at N = 1000 they move 1000 x 1008
    # elements, not N².
    cases = [(3008, "fp8"), (4096, "fp32"), (128, "fp16"), (1008, "bf16")]
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

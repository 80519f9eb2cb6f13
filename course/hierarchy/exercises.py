"""Notebook 1's exercise, checked against gpusim (course/checks.py).

    >>> from gpusim_course.hierarchy import exercises
    >>> exercises.check("ridge_point", ridge_point)
    >>> exercises.solution("ridge_point")
"""
import math

import gpusim

from .. import checks
from ..checks import numeric


def ridge_point(gpu, dtype):
    return gpu.matmul_flops_per_s(dtype) / gpu.hbm_bytes_per_s


def _priced(gpu, dtype):
    """Whether gpusim prices a matmul of `dtype` on `gpu` (fp32 on the CUDA cores, the rest on its tensor cores)."""
    try:
        gpu.matmul_flops_per_s(dtype)
    except ValueError:  # no tensor cores of that dtype: a T4 has no bf16, an A100 no fp8
        return False
    return True


def _check_ridge_point(fn):
    cases = [(gpu, dtype) for gpu in gpusim.PRESETS.values() for dtype in gpusim.DTYPE_BYTES if _priced(gpu, dtype)]

    def hint(args, got, want):
        gpu, dtype = args
        if math.isclose(got, 1 / want, rel_tol=1e-6):
            return "That is bytes per FLOP: divide the FLOP rate by the bandwidth."
        if dtype != "fp32" and math.isclose(got, gpu.fp32_flops_per_s / gpu.hbm_bytes_per_s, rel_tol=1e-6):
            return "Use the tensor-core rate of the dtype, gpu.matmul_flops_per_s(dtype), not the CUDA cores' fp32."
        if dtype != "fp16" and math.isclose(got, ridge_point(gpu, "fp16"), rel_tol=1e-6):
            return (f"Use the rate of the dtype asked for, gpu.matmul_flops_per_s(dtype): {gpu.name}'s {dtype} is not "
                    f"fp16's.")
        for factor, unit in ((1e9, "GB/s"), (1e12, "TB/s"), (1e-12, "TFLOP/s")):
            if math.isclose(got, want * factor, rel_tol=1e-6):
                return f"Off by {factor:g}: a rate in {unit}? Both rates in base units: FLOP/s over bytes/s."
        return "The ridge point is the peak FLOP/s of the dtype over the HBM bandwidth in bytes/s."

    # 1e-6: an answer computed in float32 (np.float32 rates, or a ratio of them) is off by a few roundings of
    # 2^-24 = 6e-8 each; the mistakes the hints name differ from the answer by a factor, not a rounding
    return numeric(fn, [(args, ridge_point(*args)) for args in cases], hint, rel_tol=1e-6)

EXERCISES = {
    "ridge_point": (_check_ridge_point, ridge_point),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; returns a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)

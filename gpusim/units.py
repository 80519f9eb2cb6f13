"""Bytes, FLOPs and seconds as people read them: scaled to the largest unit that keeps the number at least 1 as
printed, up to PiB, PFLOP and hours; past a million of those, in scientific notation."""
import decimal
import numbers
import sys

BYTE_UNITS = (("PiB", 1024**5, 2), ("TiB", 1024**4, 2), ("GiB", 1024**3, 2), ("MiB", 1024**2, 2), ("KiB", 1024, 2))
FLOP_UNITS = (("PFLOP", 1e15, 2), ("TFLOP", 1e12, 2), ("GFLOP", 1e9, 2), ("MFLOP", 1e6, 2), ("kFLOP", 1e3, 2))
TIME_UNITS = (("h", 3600.0, 2), ("min", 60.0, 2), ("s", 1.0, 2), ("ms", 1e-3, 3), ("us", 1e-6, 3), ("ns", 1e-9, 1))
MAX_FLOAT = sys.float_info.max


def _scaled(x, units):
    """x in the largest of `units` (name, size, decimals) in which it prints as at least 1 (3,599.9999 s is 1.00 h,
    not 60.00 min); None below the smallest, which takes only x >= its size (1,023 B stays exact)."""
    for i, (unit, size, decimals) in enumerate(units):
        v = x / size
        if (x >= size) if i == len(units) - 1 else (round(v, decimals) >= 1):
            return f"{v:,.{decimals}f} {unit}" if v < 1e6 else f"{v:.3e} {unit}"
    return None


def _fmt(x, units, smallest, base):
    """x scaled by `units`; `smallest` prints x below them. A negative x is its magnitude with a minus sign; NaN and
    infinity print as themselves, in the `base` unit."""
    if isinstance(x, numbers.Integral):
        x = int(x)  # a NumPy integer as a Python int: -int8(-128) is -128 again
        if abs(x) > MAX_FLOAT:  # 10**400 B: past any float, in the largest unit
            return f"{decimal.Decimal(x) / decimal.Decimal(units[0][1]):.3e} {units[0][0]}"
    elif x != x or abs(x) == float("inf"):
        return f"{float(x)} {base}"
    if x < 0:
        text = _fmt(-x, units, smallest, base)
        return text if float(text.split()[0].replace(",", "")) == 0 else "-" + text  # -1e-12 s prints 0.0 ns
    return _scaled(x, units) or smallest(abs(x))  # abs: -0.0 B is 0.0 B


def fmt_bytes(n):
    """1536 -> '1.50 KiB'; 2**80 -> '1.074e+09 PiB'."""
    return _fmt(n, BYTE_UNITS, lambda n: f"{n:,} B", "B")


def fmt_flops(n):
    """2.5e12 -> '2.50 TFLOP'."""
    return _fmt(n, FLOP_UNITS, lambda n: f"{n:,} FLOP", "FLOP")


def fmt_time(s):
    """0.0123 -> '12.300 ms'; nanoseconds up to hours; -0.002 -> '-2.000 ms'."""
    return _fmt(s, TIME_UNITS, lambda s: f"{s * 1e9:,.1f} ns", "s")

"""Bytes, FLOPs and seconds as people read them: scaled to the largest unit that keeps the number at least 1,
up to PiB, PFLOP and hours; past a million of those, in scientific notation."""

BYTE_UNITS = (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
FLOP_UNITS = (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3))
TIME_UNITS = (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


def _scaled(x, units, decimals):
    for unit, size in units:
        if x >= size:
            v = x / size
            return f"{v:,.{decimals}f} {unit}" if v < 1e6 else f"{v:.3e} {unit}"
    return None


def fmt_bytes(n):
    """1536 -> '1.50 KiB'; 2**80 -> '1.074e+09 PiB'."""
    return _scaled(n, BYTE_UNITS, 2) or f"{n:,} B"


def fmt_flops(n):
    """2.5e12 -> '2.50 TFLOP'."""
    return _scaled(n, FLOP_UNITS, 2) or f"{n:,} FLOP"


def fmt_time(s):
    """0.0123 -> '12.300 ms'; microseconds up to hours."""
    return (_scaled(s, TIME_UNITS[:3], 2) or _scaled(s, TIME_UNITS[3:], 3)) if s >= 1e-6 else f"{s * 1e9:,.1f} ns"

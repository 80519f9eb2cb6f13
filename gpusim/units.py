"""Bytes and seconds as people read them: scaled to the largest unit that keeps the number at least 1."""

BYTE_UNITS = (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
TIME_UNITS = (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


def fmt_bytes(n):
    """1536 -> '1.50 KiB'; anything from one byte to 1024 PiB and past."""
    for unit, size in BYTE_UNITS:
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,} B"


def fmt_time(s):
    """0.0123 -> '12.300 ms'; microseconds up to hours."""
    for unit, size in TIME_UNITS:
        if s >= size:
            return f"{s / size:,.3f} {unit}" if size < 1 else f"{s / size:,.2f} {unit}"
    return f"{s * 1e9:,.1f} ns"

"""How the course shows rows and numbers: an HTML table of a list of dicts, and number spans as text.

No IPython here: `html_table` returns an `Html`, which Jupyter shows through its `_repr_html_`.
"""
from dataclasses import dataclass
from html import escape

import numpy as np

# Where bytes are counted. Result.hbm_bytes (and by_tensor, counts) are every load and store of the tensors the
# kernels issue (a compiled kernel's spills are counted apart, Result.spills): the bytes the SMs request from the memory system, the FlashAttention paper's "HBM accesses". L2
# serves the re-reads it still holds; Result.dram_* is the part that reaches DRAM (the HBM chips), as
# gpusim's L2 model (gpusim/l2.py) estimates it.
SM_BYTES = "requested by the SMs"
DRAM_BYTES = "reaching DRAM"


@dataclass(frozen=True)
class Html:
    """A piece of HTML that a notebook cell shows rendered."""
    html: str

    def _repr_html_(self):
        return self.html


def table_html(rows):
    """The <table> of a list of dicts with the same keys: a header of the keys, a row per dict."""
    head = "".join(f"<th>{escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(cell(v))}</td>" for v in r.values()) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_table(rows):
    """table_html(rows), shown as a table when it ends a notebook cell."""
    return Html(table_html(rows))


def cell(value):
    """A table cell: integers with thousands separators, floats to 3 significant digits (whole numbers
    from 10,000 on), anything else as str."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    return f"{value:,.3g}" if abs(value) < 1e4 else f"{value:,.0f}"


def share_words(fraction):
    """A share in words that cannot mislead: "a minority" only below 40%, "about half" to 60%, "most" above."""
    if fraction < 0.4:
        return "a minority"
    return "about half" if fraction <= 0.6 else "most"


def range_words(fractions):
    """A range of shares in words, share_words at both ends: "about half", or "a minority to about half" where the
    ends differ (a range is never named by its largest end alone)."""
    low, high = share_words(min(fractions)), share_words(max(fractions))
    return low if low == high else f"{low} to {high}"


def faster_or_slower(before_s, after_s):
    """(factor, word): how many times faster or slower after_s is than before_s, the factor at least 1 ("0.52x faster"
    is 1.92x slower)."""
    return (before_s / after_s, "faster") if after_s <= before_s else (after_s / before_s, "slower")


def span(values, fmt="{:.2f}"):
    """'lo to hi' of the values, or one value when both ends print the same."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo} to {hi}"


def tile_words(tile):
    """A trace step's tile (i, j) as words: a step of one Q block alone (a row's final store, the backward's
    preprocess) or one K/V block alone (dK_j, dV_j's loads and stores) has None for the other."""
    i, j = tile
    if i is None and j is None:
        return "no tile (before the first)"
    if j is None:
        return f"Q block i = {i} alone"
    return f"K/V block j = {j} alone" if i is None else f"tile (i, j) = ({i}, {j})"

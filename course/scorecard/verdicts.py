"""The claims scorecard (notebook 11): every concrete claim of the two source documents (the blog post
"FlashAttention: The GPU Memory Hack That Changed Everything" and the chapter summary "FlashAttention
Implementation > Summary"), with gpusim's prediction computed live, the H200 measurement read from
results/h200/*.json where one exists, and a verdict computed from those numbers by a stated rule:

- a range "a-b" holds where a value lies in [a, b];
- "~x" (and "up to x" for a best value) holds where a value lies within ABOUT of x: [x / 1.25, 1.25 x];
- a scaling "O(n^k)" holds where the fitted log-log slope lies within SLOPE of k;
- a comparison ("bigger", "more than", "fits") holds where it is true;
- the verdict is "holds" when every observation satisfies the claim, "holds under conditions" when some do
  (the reason names where; the verdict's cell, in how many of the cases where they are a range's), "wrong" when none does. Measurements decide where they exist; gpusim otherwise,
  where gpusim models what the claim is about; "not testable here" where neither does (a whole model's time
  would be, without results/h200/end_to_end.json). Each reason says what was measured and what was not.

The claims themselves, each a function of the results folder, are in gpusim_course.scorecard.claims.
"""
import json
from dataclasses import dataclass, replace
from functools import lru_cache
from html import escape
from pathlib import Path

import numpy as np

from ..formatting import Html, table_html

ABOUT = 1.25  # "~x": within a factor of 1.25 either way
SLOPE = 0.25  # "O(n^k)": a fitted exponent within k +- 0.25
VERDICTS = ("holds", "holds under conditions", "wrong", "not testable here")
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"  # the course's notebooks, beside its package


@dataclass(frozen=True)
class Obs:
    """One number a verdict is computed from: its value, where it was taken (`at`, e.g. "N=4,096") and the
    group of conditions it belongs to (e.g. "d=64, causal")."""
    value: float
    at: str = ""
    group: str = ""


@dataclass(frozen=True)
class Judged:
    verdict: str
    reason: str
    share: tuple = ()  # "holds under conditions" over observations: (how many inside, how many), shown by its verdict


def about(x):
    return x / ABOUT, x * ABOUT


def interval(observations, lo, hi, claim, fmt="{:.1f}x", what="measured"):
    """The verdict of a claim that a value lies in [lo, hi], over the observations."""
    inside = [o for o in observations if lo <= o.value <= hi]
    values = [o.value for o in observations]
    spread = (f"{what} {fmt.format(values[0])}" if len(values) == 1 else
              f"{what} {fmt.format(min(values))} to {fmt.format(max(values))} over {len(values)} cases")
    if len(inside) == len(observations):
        return Judged("holds", f"{spread}: all inside {claim}.")
    if not inside:
        side = "above" if min(values) > hi else "below" if max(values) < lo else "outside"
        return Judged("wrong", f"{spread}: every one {side} {claim}.")
    return Judged("holds under conditions", f"{spread}: inside {claim} {_where(observations, inside)}.",
                  (len(inside), len(observations)))


def _where(observations, inside):
    """Where the observations inside lie: whole groups, else the cases themselves."""
    groups = {}
    for o in observations:
        groups.setdefault(o.group, []).append(o)
    whole = [g for g, os in groups.items() if g and all(o in inside for o in os)]
    if whole:  # the cases inside the groups not wholly inside are named too
        rest = [o for o in inside if o.group not in whole]
        return ("for " + "; ".join(whole) + (f"; at {_cases(rest)}" if rest else "")
                + f" ({len(inside)} of {len(observations)} cases)")
    outside = [o for o in observations if o not in inside]
    if len(outside) < len(inside):  # name the exceptions, the fewer
        return f"at every case but {_cases(outside)} ({len(inside)} of {len(observations)} cases)"
    return f"at {_cases(inside)} ({len(inside)} of {len(observations)} cases)"


def _cases(observations):
    cases = [f"{o.group + ' ' if o.group else ''}{o.at}".strip() for o in observations]
    return ", ".join(cases[:4]) + (f" and {len(cases) - 4} more" if len(cases) > 4 else "")


def noting(judged, sentence):
    """The same verdict with a sentence added to its reason (what was and was not measured)."""
    return replace(judged, reason=f"{judged.reason} {sentence[:1].upper()}{sentence[1:].rstrip('.')}.")


def each(checks):
    """The verdict of a claim made of parts: checks is [(part, true or false)]."""
    ok = [part for part, good in checks if good]
    bad = [part for part, good in checks if not good]
    if not bad:
        return Judged("holds", f"{'; '.join(ok)}.")
    if not ok:
        return Judged("wrong", f"{'; '.join(bad)}.")
    return Judged("holds under conditions", f"{'; '.join(ok)}; but {'; '.join(bad)}.")


def slope(xs, ys):
    """The least-squares slope of log y against log x: the k of y ~ x^k."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


@dataclass(frozen=True)
class Row:
    claim: str  # as written in the source
    source: str  # "blog post" or "chapter summary"
    predicted: str  # gpusim, computed live
    measured: str  # the H200 (results/h200/*.json), or "" where nothing was measured
    judged: Judged
    rule: str  # the rule the verdict follows, in a few words
    notebook: str  # the notebook file where the learner runs the experiment
    section: str  # its heading ("": the notebook as a whole)

    @property
    def link(self):
        """The notebook, at the cell holding the section's heading (`#cell-id=`: JupyterLab scrolls there also
        when it opens the notebook, which it does not for a heading's anchor), or at the heading's anchor where
        the notebook is not beside this package."""
        if not self.section:
            return self.notebook
        cell = heading_cell(self.notebook, self.section)
        return f"{self.notebook}#cell-id={cell}" if cell else f"{self.notebook}#{anchor(self.section)}"


def anchor(heading):
    """JupyterLab's anchor of a markdown heading: its text with spaces as hyphens."""
    return heading.strip().replace(" ", "-")


def heading_cell(notebook, heading):
    """The id of the markdown cell of NOTEBOOKS/notebook that opens with the heading `heading` (each heading of
    the course opens a cell of its own: tests/test_course_layout.py); None where the notebook or the heading is
    not there."""
    return opening_headings(notebook).get(heading.strip())


@lru_cache(maxsize=None)
def opening_headings(notebook):
    """{heading: the id of the markdown cell it opens} of NOTEBOOKS/notebook, read once; {} where it is not there."""
    path = NOTEBOOKS / notebook
    if not path.exists():
        return {}
    firsts = {cell.get("id"): "".join(cell["source"]).partition("\n")[0]
              for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "markdown"}
    return {first.lstrip("#").strip(): cell for cell, first in firsts.items() if first.startswith("#")}


def with_evidence(row):
    """A row whose reason says what was not measured: the claims that say it themselves are left as they are;
    otherwise the H200 alone was measured (no other GPU), or nothing was and gpusim's model decides."""
    said = ("not measured", "did not run")
    if row.judged.verdict == "not testable here" or any(x in row.judged.reason.lower() for x in said):
        return row
    note = ("Measured on the lent H200 alone: other GPUs not measured here" if row.measured else
            "Not measured here: gpusim's model decides")
    return replace(row, judged=noting(row.judged, note))


def rows_table(rows, columns=None):
    """The scorecard as dicts (one per claim) for gpusim_course.formatting.html_table or a DataFrame; only the keys
    in `columns`, in that order, when given."""
    rows = [with_evidence(r) for r in rows]
    table = [{"claim": r.claim, "source": r.source, "gpusim predicts": r.predicted,
              "H200 measured": r.measured or "not measured", "verdict": r.judged.verdict, "reason": r.judged.reason,
              "rule": r.rule, "experiment": r.link} for r in rows]
    return table if columns is None else [{k: row[k] for k in columns} for row in table]


def rules_line(x=2):
    """The rules' tolerances in one line: ABOUT, with the interval it gives "~x", and SLOPE."""
    lo, hi = about(x)
    return (f"~x: within a factor of {ABOUT} either way, e.g. ~{x}x holds from {lo:.1f}x to {hi:.1f}x; "
            f"O(n^k): a fitted exponent within {SLOPE} of k")


COLORS = {"holds": "#1a7f37", "holds under conditions": "#8a6d00", "wrong": "#b00",
          "not testable here": "#555"}


def html(rows):
    """The scorecard as an HTML table: verdicts in color, each experiment a link into its notebook."""
    cells = []
    for r in map(with_evidence, rows):
        verdict = f"<b style='color:{COLORS[r.judged.verdict]}'>{r.judged.verdict}</b>" + (
            "<br><small>in {} of {} cases</small>".format(*r.judged.share) if r.judged.share else "")
        cells.append({"claim": r.claim, "gpusim predicts": r.predicted, "H200 measured": r.measured or "—",
                      "verdict": verdict, "reason": r.judged.reason, "experiment": (r.link, r.section)})
    head = "".join(f"<th>{k}</th>" for k in cells[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(k, v)}</td>" for k, v in c.items()) + "</tr>" for c in cells)
    return Html(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _cell(key, value):
    if key == "verdict":
        return value
    if key == "experiment":
        return f"<a href='{escape(value[0])}'>{escape(value[1] or value[0])}</a>"
    return escape(str(value))


def counts(rows):
    """{verdict: how many rows}."""
    return {v: sum(r.judged.verdict == v for r in rows) for v in VERDICTS}


def summary_html(rows):
    """The verdicts counted, as a table."""
    return Html(table_html([counts(rows)]))


def verdict_list(rows, verdict):
    """The claims with one verdict, each with its reason, as an HTML list (notebook 11's summary of them); "none"
    where no claim has it."""
    items = "".join(f"<li><i>{escape(r.claim)}</i>: {escape(r.judged.reason)}</li>" for r in rows
                    if r.judged.verdict == verdict)
    return Html(f"<p><b>{escape(verdict)}</b> ({counts(rows)[verdict]}){'' if items else ': none.'}</p>"
                + (f"<ul>{items}</ul>" if items else ""))

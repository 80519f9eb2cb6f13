"""How the notebooks' exercises are checked. The learner writes a small function;
`check(exercises, name, fn)` calls it on several cases, compares each answer with gpusim's, and returns a
Verdict: right, wrong (the case, gpusim's answer and a hint aimed at the likely mistake) or not yet (the
stub still returns None or raises NotImplementedError). It never raises for the learner's code.

Each exercise module keeps {name: (checker, reference solution)}; a checker raises Stop or returns the
message for a right answer. The exercises of hierarchy/, standard/, softmax/ and tiling/ (notebooks 1 to 5),
inference/, training/ and context/, and the puzzles (puzzles/checker.py, puzzles/tiles.py) all report through it.
"""
import inspect
import math
from dataclasses import dataclass
from html import escape

import numpy as np

import gpusim

COLORS = {"right": "#1a7f37", "wrong": "#b00", "not yet": "#8a6d00"}


@dataclass(frozen=True)
class Verdict:
    name: str
    status: str  # "right", "wrong" or "not yet"
    message: str

    def __bool__(self):
        return self.status == "right"

    def __str__(self):
        return f"{self.name}: {self.status}. {self.message}"

    def _repr_html_(self):
        color = COLORS[self.status]
        return (f"<div style='border-left:4px solid {color};padding:4px 8px'><b style='color:{color}'>"
                f"{self.status}</b> ({escape(self.name)}): {escape(self.message)}</div>")


class Stop(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def call(fn, args):
    """(the call as text, fn(*args)); a stub or a crash becomes a Stop. fn gets copies of the arrays: an answer
    that updates its arguments in place (acc *= alpha) must not change what the checker compares it with."""
    name = name_of(fn)
    text = f"{name}({', '.join(map(show, args))})"
    try:
        got = fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    except NotImplementedError:
        raise Stop("not yet", f"{name} still raises NotImplementedError: replace it with your code.") from None
    except Exception as err:  # the learner's bug, reported as a verdict rather than a traceback
        raise Stop("wrong", f"{text} raised {type(err).__name__}: {err}") from None
    if got is None:
        raise Stop("not yet", f"{name} returns None: fill in its body and return the answer.")
    return text, got


def name_of(fn):
    """What the learner calls fn: its name (a functools.partial has none: its function's)."""
    while not hasattr(fn, "__name__") and hasattr(fn, "func"):
        fn = fn.func
    return getattr(fn, "__name__", type(fn).__name__)


def arrays(text, got, names):
    """The learner's answer `got`, a tuple (or a list) of len(names) things, as float arrays; a Stop where it is
    not one, or where an item is not numbers."""
    if not (isinstance(got, (tuple, list)) and len(got) == len(names)):
        what = f"a {type(got).__name__} of {len(got)}" if isinstance(got, (tuple, list)) else type(got).__name__
        raise Stop("wrong", f"{text} returned {what}: return the tuple ({', '.join(names)}).")
    out = []
    for name, x in zip(names, got):
        try:
            out.append(np.asarray(x, dtype=float))
        except (TypeError, ValueError):  # a string, a ragged list
            raise Stop("wrong", f"{text} returned {name} = {repr(x)[:60]}: return numbers (an array).") from None
    return out


def show(x):
    """An argument as the learner would write it: a GPU by its name, an array by its shape."""
    return x.name if isinstance(x, gpusim.GPU) else f"array{x.shape}" if isinstance(x, np.ndarray) else repr(x)


def numeric(fn, cases, hint, rel_tol=0.0):
    """Check fn against (args, gpusim's answer) pairs; the first miss stops with the case and
    hint(args, got, want).
    rel_tol=0: integers (byte counts) must be equal."""
    for args, want in cases:
        text, got = call(fn, args)
        array = isinstance(got, np.ndarray)
        if not (isinstance(got, (int, float, np.integer, np.floating)) or array and got.ndim == 0 and
                got.dtype.kind in "iuf"):
            one = array and got.size == 1
            raise Stop("wrong", f"{text} returned {got!r}, not a number; gpusim says {want:,}. Return one int or "
                                f"float{' (.item() takes the number out of a one-element array)' if one else ''}.")
        if not _close(got, want, rel_tol):
            raise Stop("wrong", f"{text} returned {got:,}; gpusim says {want:,}. {hint(args, got, want)}")
    return f"matches gpusim on all {len(cases)} cases."


def _close(got, want, rel_tol):
    """math.isclose, False for an int too large for a float (10**400 raised OverflowError)."""
    try:
        return math.isclose(got, want, rel_tol=rel_tol)
    except OverflowError:
        return False


def check(exercises, name, fn):
    """Run the learner's `fn` for exercise `name` of `exercises` ({name: (checker, reference)}); a Verdict."""
    if name not in exercises:
        raise ValueError(f"no exercise {name!r}: choose one of {', '.join(exercises)}")
    if not callable(fn):
        return Verdict(name, "not yet", f"check takes your function itself, {name}, not {repr(fn)[:40]}: the "
                                        f"checker calls it on cases of its own.")
    try:
        return Verdict(name, "right", exercises[name][0](fn))
    except Stop as stop:
        return Verdict(name, stop.status, stop.message)


def solution(exercises, name):
    """Print the reference solution of exercise `name`."""
    print(inspect.getsource(exercises[name][1]))

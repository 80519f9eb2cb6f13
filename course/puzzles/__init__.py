"""Notebook 10 (write the kernels) and the puzzle at the end of notebooks 3, 4, 5, 8, 9 and 13: Triton kernels
the learner writes, checked in a child process.

    >>> from gpusim_course import puzzles
    >>> puzzles.check("online_softmax", my_kernel)  # a Verdict: right, wrong (and where), or not yet
    >>> puzzles.solution("online_softmax")  # prints the hidden reference solution

The modules: checker.py (check, solution, show_accesses: what the notebooks call), catalog.py (the puzzles and
their notebooks), kinds.py (what each kind launches, its reference and tolerances), tiles.py (the first wrong
tile), guard.py (every pointer checked before it is dereferenced), picture.py (the rows each program loaded),
sandbox.py (the child process), solutions.py (the hidden reference kernels).

`puzzles.check` and the rest of checker.py's names are loaded on first use, not when this package is
imported: the child (`python -m gpusim_course.puzzles.sandbox`) imports this package before it runs, and
must set TRITON_INTERPRET before Triton is imported; checker.py imports Triton.
"""


import importlib


def __getattr__(name):
    checker = importlib.import_module(f"{__name__}.checker")
    try:
        return getattr(checker, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    checker = importlib.import_module(f"{__name__}.checker")
    return sorted(set(globals()) | {n for n in vars(checker) if not n.startswith("_")})

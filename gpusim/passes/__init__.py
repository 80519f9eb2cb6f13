"""One module per pass, each the one home of its rules (gpusim/passes/base.py states the interface):

    naive, flash1, flash2, hopper          the forward passes simulate() takes (ALGOS)
    naive_backward, flash1_backward,       their backward passes (a training step: simulate(..., backward=True))
    flash2_backward
    split_kv                               decoding from a KV cache (Flash-Decoding)

Each module holds one instance of its Pass subclass; PASSES finds it by name. gpusim/config.py,
backward.py and decode.py look a pass up once, when they make a configuration, and the configuration
carries it from then on.
"""
import difflib

from .flash1 import FLASH1
from .flash1_backward import FLASH1_BACKWARD
from .flash2 import FLASH2
from .flash2_backward import FLASH2_BACKWARD
from .hopper import HOPPER
from .naive import NAIVE
from .naive_backward import NAIVE_BACKWARD
from .split_kv import SPLIT_KV

FORWARD = {p.name: p for p in (NAIVE, FLASH1, FLASH2, HOPPER)}
BACKWARD = {p.algo: p for p in (NAIVE_BACKWARD, FLASH1_BACKWARD, FLASH2_BACKWARD)}  # by the forward's name
ALGOS = tuple(FORWARD)  # the forward (prefill) passes
DECODE = (SPLIT_KV.name,)
PASSES = FORWARD | {SPLIT_KV.name: SPLIT_KV} | {p.name: p for p in BACKWARD.values()}


def get(algo):
    """The pass of an algorithm (or of a backward pass: "<algo>_backward"), by name (case-insensitive);
    an unknown name raises. The one lookup by name."""
    found = PASSES.get(str(algo).lower())
    return named(algo) if found is None else found  # named raises: no pass has the name


def named(algo):
    """algo's name (algo_name) where it is a forward or decoding pass's, else one line listing those and the
    closest."""
    if (name := algo_name(algo)) not in ALGOS + DECODE:
        close = difflib.get_close_matches(str(algo).lower(), ALGOS + DECODE, n=2, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ValueError(f"algo={algo!r} is not one of {', '.join(ALGOS + DECODE)}{hint}")
    return name


def algo_name(algo):
    """algo as its pass's name where it names one in any case ("FLASH2": "flash2"), else as given (for the line
    that refuses it to name): the one normaliser of the entry points, so that a name in any case is the same call."""
    lower = algo.lower() if isinstance(algo, str) else None
    return lower if lower in PASSES else algo

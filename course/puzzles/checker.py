"""Kernels the learner writes, in the style of Triton-Puzzles: a Triton kernel with blanks (`...`), at the end of
the notebook that teaches it, filled in by the learner and checked in a child process (sandbox.py), so
that no mistake takes the notebook down, each mistake getting a verdict of one or two lines:

1. safety: every pointer of every tl.load and tl.store is checked before it is dereferenced (guard.py):
   an access outside its tensor names the program, the tensor and the element offset; a loop that never
   ends is stopped at RUNAWAY times the reference's loads and stores, or after sandbox.TIMEOUT_S;
2. the output's dtype and shape (where the learner allocates it), the batch and head each program touches
   (against the reference solution's), and that each output element is stored once;
3. correctness: the outputs against a float64 reference, with a tolerance each kind justifies
   (kinds.py); a wrong answer names the first wrong tile or program;
4. bytes: every tl.load and tl.store, counted by gpusim_kernels.trace_io, equal (==) to gpusim's count for the
   same schedule (gpusim.simulate, gpusim.decode, gpusim.backward, gpusim.softmax) or to a stated closed form;
5. masks, under the causal mask: no Q block masks (calls tl.where in) a step whose K/V block all its rows see;
then all five again at each further shape the puzzle names (Flash2Puzzle.also), a miss there named with its shape.

    >>> from gpusim_course import puzzles
    >>> puzzles.check("online_softmax", my_kernel)  # a Verdict: right, wrong (and where), or not yet
    >>> puzzles.solution("online_softmax")  # prints the hidden reference solution
    >>> puzzles.show_accesses("online_softmax", my_kernel)  # its loads beside gpusim's schedule (picture.py)
"""
import ast
import inspect
import re
import textwrap

import numpy as np
import torch

from ..checks import Stop, Verdict
from . import solutions
from .catalog import PUZZLES
from .guard import LOAD, STORE, Log, guarded, program_text
from .kinds import SEE, by_tensor
from .sandbox import CHILD, TIMEOUT_S, Source, load_sources
from .tiles import check_masks

RESCALE = ("The rescale runs the wrong way: alpha = exp(m_i - m_new) is at most 1 and shrinks what was summed "
           "under the old, smaller max; exp(m_new - m_i) grows it (and is inf on the first tile, where m_i = -inf).")
RUNAWAY = 20  # a kernel that makes this many times the reference's loads and stores runs a loop that never ends
_REFERENCE_LOGS = {}  # in the child: puzzle (at each of its shapes) -> the reference solution's Log on its inputs


def blanks(kernel):
    """How many `...` blanks the kernel's source still holds (its docstring aside)."""
    fn = getattr(kernel, "fn", kernel)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return sum(isinstance(node, ast.Constant) and node.value is Ellipsis for node in ast.walk(tree))


def sources(name, kernel, launcher=None):
    """The learner's functions as text, to send to the child; a Stop ("not yet") while blanks remain."""
    puzzle = _puzzle(name)
    if puzzle.launcher and launcher is None:
        raise Stop("not yet", f"{name} needs your launcher too: puzzles.check({name!r}, kernel, launcher).")
    fns = [kernel] + ([launcher] if puzzle.launcher else [])
    if not all(inspect.isfunction(getattr(fn, "fn", fn)) and getattr(fn, "__name__", "") != "<lambda>" for fn in fns):
        raise Stop("not yet", READS_SOURCE)
    try:
        left = sum(blanks(fn) for fn in fns)
        if left:
            raise Stop("not yet", f"the kernel still has {left} blank(s) (`...`): fill them in and run the cell again.")
        return Source.of(fns)
    except (OSError, TypeError):  # no source to read: made by exec
        raise Stop("not yet", READS_SOURCE) from None


def check(name, kernel, launcher=None, timeout_s=TIMEOUT_S):
    """Check the learner's Triton `kernel` (and `launcher`, for the warm-ups) for puzzle `name`, in a child
    process; returns a Verdict (shown in color), never raises for the learner's code."""
    try:
        sent = sources(name, kernel, launcher)
    except Stop as stop:
        return Verdict(name, stop.status, stop.message)
    return ask(name, "checker.check_here", sent, timeout_s)


def ask(name, action, sent, timeout_s=TIMEOUT_S):
    """The child's answer to `action` on the learner's functions, or the Verdict on a loop that never ends or
    a crash."""
    answer = CHILD.ask(action, name, sent, timeout_s=timeout_s)
    if answer[0] == "timeout":
        return Verdict(name, "wrong", _never_ends(_puzzle(name), answer[1], timeout_s))
    if answer[0] == "died":
        return Verdict(name, "wrong", f"the kernel crashed the checker's process (exit code {answer[1]}); your "
                                      f"notebook is fine. Look for a pointer the masks do not cover.")
    return Verdict(name, *answer) if isinstance(answer[0], str) else answer  # (status, message) or data


READS_SOURCE = ("the checker reads your functions' source: define each with def (not lambda) in a notebook cell or a "
                "file, and pass the function itself.")
SENT = ("the checker runs your functions' source in a process of its own, with torch, triton, tl and what they name "
        "from your notebook of its functions, the modules and modules' functions it can import by name, and "
        "constants (an int, float, str or bool, or a tl.constexpr of one); define anything else inside them")
MASK = "mask the lanes past the end (padding rows: mask=rows[:, None] < N; padding keys: keys[:, None] < N_KV)."
LOOP = "a loop runs over the blocks, range(0, tl.cdiv(N, BLOCK)); a while loop must advance its counter"


def _never_ends(puzzle, progress, timeout_s):
    program, accesses = tuple(progress[:max(progress[3], 1)]), progress[4]
    return (f"the loop never ends: check your loop bounds ({puzzle.hint('loop') or LOOP}). Program "
            f"{program_text(program)} was still running after {timeout_s} s; loads and stores so far: {accesses:,}.")


def _puzzle(name):
    if name not in PUZZLES:
        raise ValueError(f"no puzzle {name!r}: choose one of {', '.join(PUZZLES)}")
    return PUZZLES[name]


def check_here(name, sent, folder, progress=None):
    """In the child: import the learner's functions and check them; (status, message)."""
    puzzle = PUZZLES[name]
    try:
        kernel, *launcher = _loaded(sent, folder)
        return "right", _verdict(puzzle, kernel, launcher[0] if launcher else None, progress)
    except Stop as stop:
        return stop.status, stop.message


def _loaded(sent, folder):
    """load_sources, or a Stop where the source does not run as a file of its own (a name only the notebook has)."""
    try:
        return load_sources(sent, folder)
    except Exception as err:
        raise Stop("wrong", f"your code did not load: {type(err).__name__}: {_last_line(err)} ({SENT}).") from None


def run(puzzle, kernel, launcher, inputs, progress=None, limit=None):
    """(outputs, Log, bytes moved {tensor: {"read_bytes", "write_bytes"}}) of one guarded, traced launch; a Stop
    for an access outside the tensors (before it happens), for more than `limit` accesses, or any error the
    kernel raises."""
    from gpusim_kernels import trace_io
    log, got = Log(progress=progress, limit=limit), {}

    def launch():
        with guarded(log), np.errstate(all="ignore"):  # a wrong kernel's NaNs are reported in the verdict
            got.update(puzzle.run(kernel, launcher, inputs))
    try:
        moved = by_tensor(trace_io(launch, by_kernel=True))
    except Exception as err:  # the learner's bug, reported in the verdict rather than as a traceback
        if log.runaway is not None:
            raise Stop("wrong", f"the loop never ends: check your loop bounds ({puzzle.hint('loop') or LOOP}). "
                                f"Program {program_text(log.runaway)} was still running after {limit:,} loads and "
                                f"stores, {RUNAWAY} times the reference's for the whole launch.") from None
        if log.error is None:
            sent = f" ({SENT})" if _name_error(err) else ""
            raise Stop("wrong", f"the kernel raised {type(err).__name__}: {_last_line(err)}{sent}") from None
        _check_allocated(puzzle, log)
        raise Stop("wrong", f"{log.error}: {puzzle.hint('padding') or MASK}") from None
    return got, log, moved


def _name_error(err):
    """Whether err is a NameError, or wraps one (the interpreter raises a kernel's as an InterpreterError)."""
    while err is not None and not isinstance(err, NameError):
        err = err.__cause__ or err.__context__
    return err is not None


def _last_line(err):
    lines = str(err).strip().splitlines()
    return lines[-1] if lines else ""


def _reference_log(puzzle):
    if puzzle not in _REFERENCE_LOGS:
        kernel = getattr(solutions, f"{puzzle.name}_kernel" if puzzle.launcher else puzzle.name)
        launcher = getattr(solutions, puzzle.name) if puzzle.launcher else None
        _REFERENCE_LOGS[puzzle] = run(puzzle, kernel, launcher, puzzle.inputs())[1]
    return _REFERENCE_LOGS[puzzle]


def _verdict(puzzle, kernel, launcher, progress):
    """The checks at the puzzle's shape, then at each of its variants (a formula right at one tile shape can be
    wrong at another): a miss there names the shape."""
    said = _verdict_at(puzzle, kernel, launcher, progress)
    for other in puzzle.variants():
        try:
            _verdict_at(other, kernel, launcher, progress)
        except Stop as stop:
            raise Stop(stop.status, f"At {other.shape} (right at {puzzle.shape}): {stop.message}") from None
        said += f" Right at {other.shape} too."
    return said


def _verdict_at(puzzle, kernel, launcher, progress):
    inputs = puzzle.inputs()
    limit = RUNAWAY * len(_reference_log(puzzle).accesses)
    got, log, moved = run(puzzle, kernel, launcher, inputs, progress, limit)
    _check_allocated(puzzle, log)
    _check_offsets(puzzle, log)
    _check_stores(puzzle, log)
    want = puzzle.reference(inputs)
    errors = check_correct(puzzle, kernel, launcher, inputs, got, want, log)
    counted = check_bytes(puzzle, moved, log)
    masks = f"; it {check_masks(puzzle, log)}" if puzzle.causal else ""
    shown = ", ".join(f"{t} {rw['read_bytes'] + rw['write_bytes']:,} B" for t, rw in counted.items())
    return f"{errors}, and the loads and stores equal {puzzle.counted_by} to the byte: {shown}{masks}."


def _check_allocated(puzzle, log):
    """The outputs the learner allocated have the reference's dtype and shape."""
    ref = _reference_log(puzzle).tensors
    for name in puzzle.outputs if puzzle.launcher else ():
        mine, want = log.tensors.get(name), ref[name]
        if mine is None:
            raise Stop("wrong", f"Output: the kernel was never launched with its output {name}.")
        if (mine.dtype, mine.shape) != (want.dtype, want.shape):
            raise Stop("wrong", f"Output: {name} is {mine.dtype} of shape {mine.shape}; the result is {want.dtype} "
                                f"of shape {want.shape}: allocate it so (torch.empty(shape, dtype=x.dtype)), "
                                f"since tl.store converts to the pointer's type and writes where the strides say.")


def _check_offsets(puzzle, log):
    """Each program touches the batches and heads the reference solution's touches: a missing batch offset
    reads another batch's rows (and is named as such, not as a head mistake)."""
    ref = _reference_log(puzzle)
    for tensor, axes in puzzle.layouts.items():
        if tensor not in log.tensors:
            continue
        shape = log.tensors[tensor].shape
        for kind in (LOAD, STORE):
            want = ref.touched(tensor, kind)
            for program, elements in sorted(log.touched(tensor, kind).items()):
                mine = want.get(program, np.zeros(0, np.int64))
                got, expected = np.unravel_index(elements, shape), np.unravel_index(mine, shape)
                for axis, dim in enumerate(axes):
                    stray, own = np.setdiff1d(got[axis], expected[axis]), np.unique(expected[axis])
                    if dim and stray.size:
                        raise Stop("wrong", _stray(puzzle, program, kind, tensor, dim, stray[0], own,
                                                   mine.size and np.isin(mine, elements).all()))


def _stray(puzzle, program, kind, tensor, dim, stray, own, all_own):
    """The verdict on a program that touched another batch's or head's rows: every element of its own as well, it
    reads padding rows it should mask; otherwise its offset is wrong (a head offset that steps by another tensor's
    rows, N for N_KV, still touches its own head, but not all of it)."""
    verb = "read rows" if kind == LOAD else "wrote rows"
    own = ", ".join(map(str, own)) or "none"
    if all_own:
        return (f"Offsets: {puzzle.describe(program)} {verb} of {dim} {stray} of {tensor} besides its own ({dim} "
                f"{own}): {puzzle.hint('padding') or 'those are padding rows, mask them.'}")
    return (f"Offsets: {puzzle.describe(program)} {verb} of {dim} {stray} of {tensor}, where it should touch only "
            f"{dim} {own}: check the {dim} offset. {puzzle.hint(dim)}")


def _check_stores(puzzle, log):
    """Every element of each output is stored exactly once."""
    for name in puzzle.outputs:
        size = int(np.prod(log.tensors[name].shape))
        stored = log.touched(name, STORE)
        counts = np.bincount(np.concatenate([np.zeros(0, np.int64), *stored.values()]), minlength=size)
        never, twice = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
        if never.size:
            raise Stop("wrong", f"Stores: {never.size:,} of {name}'s {size:,} elements are never stored (the first: "
                                f"element {never[0]:,}): every output element is written, by one program.")
        if twice.size:
            by = [program_text(p) for p, e in sorted(stored.items()) if twice[0] in e]
            raise Stop("wrong", f"Stores: element {twice[0]:,} of {name} is stored {counts[twice[0]]} times (by "
                                f"programs {', '.join(by)}): each output element is written once, by one program.")


def flipped_rescale(kernel):
    """Whether the kernel's source rescales by exp(m_new - m_i), the wrong way round."""
    source = inspect.getsource(getattr(kernel, "fn", kernel))
    return re.search(r"exp\(\s*m_new\w*\s*-\s*m_i\w*\s*\)", source) is not None


def _wrong_element(puzzle, got, want, inputs):
    """(output name, flat index, tolerance) of the first element outside the tolerance, in the order puzzle.judged
    gives, or None; an infinity or NaN first, in whichever output (the cause the others inherit)."""
    for overflow in (True, False):
        for name in puzzle.judged:
            tol = puzzle.tolerance(name, want[name], inputs)
            bad = ~((got[name].double() - want[name]).abs() <= tol)  # NaN is wrong
            if overflow:
                bad &= ~torch.isfinite(got[name]) & torch.isfinite(want[name])
            if bad.any():
                return name, int(np.flatnonzero(bad.flatten().numpy())[0]), tol
    return None


def check_correct(puzzle, kernel, launcher, inputs, got, want, log):
    """Raise Stop naming the first wrong tile or program, or return how close the outputs are, in words."""
    wrong = _wrong_element(puzzle, got, want, inputs)
    if wrong is not None and flipped_rescale(kernel):
        raise Stop("wrong", f"Correctness: the output is wrong. {RESCALE}")
    if puzzle.region is not None:
        from .tiles import correct_by_tile
        return correct_by_tile(puzzle, kernel, inputs, got, want, run)
    if wrong is not None:
        name, flat, tol = wrong
        value = float(got[name].flatten()[flat])
        writer = next((p for p, e in log.touched(name, STORE).items() if flat in e), None)
        index = tuple(int(i) for i in np.unravel_index(flat, tuple(got[name].shape)))
        symptom = "nan" if not np.isfinite(value) else puzzle.symptom(name, index, got, inputs) or name
        raise Stop("wrong", f"Correctness: {name}{list(index)} is {value:.4g} where float64 gives "
                            f"{float(want[name].flatten()[flat]):.4g} (tolerance {tol:.2g}); "
                            f"{puzzle.describe(writer) if writer else 'no program'} stored it. {puzzle.hint(symptom)}")
    worst = {n: float((got[n].double() - want[n]).abs().max()) for n in puzzle.outputs}
    return "the largest errors " + ", ".join(
        f"{n} {e:.2g} (tolerance {puzzle.tolerance(n, want[n], inputs):.2g})" for n, e in worst.items())


def check_bytes(puzzle, moved, log):
    """Raise Stop naming what differs from gpusim's count (or the closed form), or return the count."""
    counted = puzzle.counted()
    if moved == counted:
        return counted
    if puzzle.counted_per_program is not None:
        from .tiles import bytes_by_program
        bytes_by_program(puzzle, log, moved, counted)
    differ = "; ".join(f"{t} {rw.get(k, 0):,} B {k.split('_')[0]} (expected {counted.get(t, {}).get(k, 0):,})"
                       for t, rw in {**{t: {} for t in counted}, **moved}.items()
                       for k in ("read_bytes", "write_bytes")
                       if rw.get(k, 0) != counted.get(t, {}).get(k, 0))
    more = sum(sum(rw.values()) for rw in moved.values()) > sum(sum(rw.values()) for rw in counted.values())
    raise Stop("wrong", f"Bytes: the output is right, but the loads and stores differ from the count: {differ}. "
                        f"{puzzle.hint('more_bytes' if more else 'fewer_bytes')} {SEE.format(puzzle.name)}")


def solution_source(name):
    """The source of the hidden reference solution of puzzle `name` (kernel, then launcher)."""
    puzzle = _puzzle(name)
    names = [f"{name}_kernel", name] if puzzle.launcher else [name]
    return "\n\n".join(textwrap.dedent(inspect.getsource(getattr(getattr(solutions, n), "fn",
                                                                 getattr(solutions, n)))) for n in names)


def solution(name):
    """Print the reference solution of puzzle `name`."""
    print(solution_source(name))


def accesses_here(name, sent, folder, progress=None):
    """In the child: ({tensor: number of rows}, the learner's loads_by_step, the reference's, its title), or
    (status, message) where the kernel stops early."""
    from .picture import loads_by_step, pictured_rows, schedule_loads
    puzzle = PUZZLES[name]
    inputs = puzzle.inputs()
    tensors = [t for t, x in inputs.items() if x.dim() in (2, 4, 5) and x.shape[-1] > 1]  # matrices, not statistics
    rows = {t: pictured_rows(tuple(inputs[t].shape)) for t in tensors}
    try:
        kernel, *launcher = _loaded(sent, folder)
        mine = loads_by_step(run(puzzle, kernel, launcher[0] if launcher else None, inputs, progress)[1], tensors)
    except Stop as stop:
        return stop.status, stop.message
    if puzzle.schedule is not None:
        return rows, mine, schedule_loads(puzzle, tensors), "gpusim's schedule"
    kernel = getattr(solutions, f"{name}_kernel" if puzzle.launcher else name)
    reference = getattr(solutions, name) if puzzle.launcher else None
    return rows, mine, loads_by_step(run(puzzle, kernel, reference, inputs)[1], tensors), "the reference solution"


def show_accesses(name, kernel, launcher=None):
    """A figure of the rows of Q, K, V (or the inputs) each program of the learner's kernel loaded, step by step,
    beside gpusim's schedule (picture.py); a Verdict instead when the kernel cannot run to the end."""
    from .picture import figure
    try:
        answer = ask(name, "checker.accesses_here", sources(name, kernel, launcher))
    except Stop as stop:
        return Verdict(name, stop.status, stop.message)
    return answer if isinstance(answer, Verdict) else figure(*answer)

"""The guard around a learner's kernel in Triton's interpreter: every pointer of every tl.load and tl.store is
checked against the launch's tensor arguments BEFORE it is dereferenced (masked-off lanes excluded), so an
access outside them becomes a verdict naming the program, the tensor and the element offset instead of a
crash of the process ("double free or corruption"). It hooks the interpreter where trace_io does
(gpusim_kernels/trace.py) and, entered inside trace_io, runs first. It also records which elements each
program loaded and stored, in order: the checks compare them with the reference solution's (wrong batch
or head offsets), count each output element's stores, and draw them (picture.py); and where each program
called tl.where (the masks of a causal kernel, counted per K/V step by tiles.check_masks).
"""
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest.mock import patch

import numpy as np
import torch
from triton.runtime import interpreter

LOAD, STORE = "load", "store"


@dataclass(frozen=True)
class Tensor:
    name: str
    start: int  # first byte's address
    itemsize: int
    shape: tuple
    dtype: str

    @property
    def numel(self):
        return int(np.prod(self.shape))

    @property
    def end(self):
        return self.start + self.numel * self.itemsize


@dataclass
class Access:
    program: tuple  # tl.program_id(0), (1), (2)
    tensor: str
    kind: str  # LOAD or STORE
    elements: np.ndarray  # flat element indices of the mask-true lanes, in lane order


@dataclass
class Log:
    """What one launch (or several) did, access by access; `error` holds the out-of-bounds verdict, if any,
    `runaway` the program that made more than `limit` accesses (a loop that does not end)."""
    tensors: dict = field(default_factory=dict)  # name -> Tensor
    accesses: list = field(default_factory=list)
    wheres: list = field(default_factory=list)  # (program, how many accesses it followed) per tl.where call
    error: str | None = None
    limit: int | None = None
    runaway: tuple | None = None
    progress: object = None  # a shared int array: the running program's ids, their number, the accesses so far

    def touched(self, tensor, kind):
        """{program: flat element indices it accessed (kind) in `tensor`, in order}."""
        out = {}
        for a in self.accesses:
            if a.tensor == tensor and a.kind == kind:
                out.setdefault(a.program, []).append(a.elements)
        return {p: np.concatenate(e) for p, e in out.items()}


class OutOfBounds(Exception):
    pass


def program_text(program):
    """(0, 3): the program's tl.program_id values along the grid's axes."""
    return "(" + ", ".join(str(x) for x in program) + ")"


def _program(builder):
    """The running program's ids along the grid's axes (up to the last one of more than one program)."""
    axes = max((a + 1 for a, n in enumerate(builder.grid_dim) if n > 1), default=1)
    return tuple(int(x) for x in builder.grid_idx[:axes])


def _owner(addresses, tensors):
    """The tensor an access belongs to: the one holding most of its lanes, or, when none holds any, the one
    its addresses lie nearest to (an access wholly past a tensor's end)."""
    held = [(int(((addresses >= t.start) & (addresses < t.end)).sum()), t) for t in tensors]
    most, owner = max(held, key=lambda h: h[0])
    if most:
        return owner
    return min(tensors, key=lambda t: min(abs(int(addresses.min()) - t.end), abs(int(addresses.max()) - t.start)))


def _out_of_bounds(program, kind, tensor, offset):
    where = (f"past its {tensor.numel:,} elements" if offset >= tensor.numel
             else "before its first element")
    target = "from" if kind == LOAD else "to"
    return f"program {program_text(program)}: {kind} {target} {tensor.name} at element offset {offset:,}, {where}"


def _launch_tensors(named):
    """A Tensor for each torch tensor among a launch's arguments ({name: value})."""
    return [Tensor(n, x.data_ptr(), x.element_size(), tuple(x.shape), str(x.dtype).removeprefix("torch."))
            for n, x in named.items() if isinstance(x, torch.Tensor)]


def _note_progress(log, program):
    """The running program's ids, how many, and the accesses so far, where a watcher reads them (log.progress)."""
    if log.progress is not None:
        log.progress[:len(program)], log.progress[3], log.progress[4] = program, len(program), log.progress[4] + 1


def _check(log, tensors, program, ptrs, mask, kind):
    """Record one tl.load or tl.store of `program` in log, or raise OutOfBounds (log.error or log.runaway set)."""
    addresses = np.asarray(ptrs.data)[np.broadcast_to(np.asarray(mask.data).astype(bool), ptrs.data.shape)]
    _note_progress(log, program)
    if log.limit is not None and len(log.accesses) >= log.limit:
        log.runaway = program
        raise OutOfBounds(f"more than {log.limit:,} loads and stores")
    if not addresses.size:
        return
    tensor = _owner(addresses, tensors)
    outside = (addresses < tensor.start) | (addresses >= tensor.end)
    if outside.any():
        offset = (int(addresses[outside][0]) - tensor.start) // tensor.itemsize
        log.error = _out_of_bounds(program, kind, tensor, offset)
        raise OutOfBounds(log.error)
    elements = (addresses.astype(np.int64) - tensor.start) // tensor.itemsize
    log.accesses.append(Access(program, tensor.name, kind, elements))


@contextmanager
def guarded(log):
    """Check and record every tl.load and tl.store of the launches made inside; raises OutOfBounds (the
    interpreter wraps it in an InterpreterError) with log.error set before any bad pointer is dereferenced."""
    executor, builder = interpreter.GridExecutor, interpreter.InterpreterBuilder
    init_args, load, store = executor._init_args_hst, builder.create_masked_load, builder.create_masked_store
    select = builder.create_select
    launch = {}

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        launch["tensors"] = _launch_tensors({**dict(zip(self.arg_names, args_hst)), **kwargs_hst})
        log.tensors.update({t.name: t for t in launch["tensors"]})
        return args_hst, kwargs_hst

    def masked_load(self, ptrs, mask, *rest, **kw):
        _check(log, launch["tensors"], _program(self), ptrs, mask, LOAD)
        return load(self, ptrs, mask, *rest, **kw)

    def masked_store(self, ptrs, value, mask, *rest):
        _check(log, launch["tensors"], _program(self), ptrs, mask, STORE)
        return store(self, ptrs, value, mask, *rest)

    def where(self, cond, lhs, rhs):
        log.wheres.append((_program(self), len(log.accesses)))
        return select(self, cond, lhs, rhs)

    with (patch.object(executor, "_init_args_hst", init_args_hst),
          patch.object(builder, "create_masked_load", masked_load),
          patch.object(builder, "create_masked_store", masked_store),
          patch.object(builder, "create_select", where)):
        yield log

"""trace_io: the bytes a kernel really moves, counted load by load under Triton's interpreter.

While fn runs, two of the interpreter's entry points are wrapped: the one that copies a launch's tensor
arguments (and the tensors of its TMA descriptor arguments) to the host (which gives each argument's memory
range and the kernel's name), and the
builder's masked load and store, which every tl.load and tl.store reaches (unmasked ones with an all-true
mask). Each access adds, to the argument whose range holds its addresses, the element size times the
number of mask-true elements: what a GPU would move, with nothing for the elements a mask turns off.
Arguments are named as in gpusim (Q, K, V, S, P, O, l, m, LSE) and kernels as name + "_kernel".
"""
from contextlib import contextmanager
from unittest.mock import patch

import numpy as np
from triton.runtime import interpreter

from gpusim.simulate import by_tensor

from .interpreter import INTERPRETED


def trace_io(fn, *args, by_kernel=False, **kwargs):
    """Run fn(*args, **kwargs) and count its kernels' HBM traffic. Returns {tensor: {"read_bytes": int,
    "write_bytes": int}} as gpusim's Result.by_tensor, or with by_kernel=True {(kernel, tensor): (read_bytes,
    write_bytes)} as its Result.counts."""
    if not INTERPRETED:
        raise RuntimeError("trace_io needs Triton's interpreter: set TRITON_INTERPRET=1 before importing kernels")
    counts = {}
    with _recording(counts):
        fn(*args, **kwargs)
    counts = {key: tuple(rw) for key, rw in counts.items()}
    return counts if by_kernel else by_tensor(counts)


@contextmanager
def _recording(counts):
    launch = {}  # the running launch: kernel name and [(tensor, first address, end address)]
    executor, builder = interpreter.GridExecutor, interpreter.InterpreterBuilder
    init_args, load, store = executor._init_args_hst, builder.create_masked_load, builder.create_masked_store

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        named = {**dict(zip(self.arg_names, args_hst)), **kwargs_hst}
        launch["kernel"] = self.fn.__name__.removesuffix("_kernel")
        tensors = {name: getattr(x, "base", x) for name, x in named.items()}  # a TMA descriptor's: its base
        launch["ranges"] = sorted((x.data_ptr(), x.data_ptr() + x.numel() * x.element_size(), name)
                                  for name, x in tensors.items() if hasattr(x, "data_ptr"))
        for (_, end, name), (start, _, other) in zip(launch["ranges"], launch["ranges"][1:]):
            if start < end:
                raise ValueError(f"{launch['kernel']}: arguments {name} and {other} share memory, so trace_io "
                                 f"cannot tell their traffic apart: pass separate tensors")
        return args_hst, kwargs_hst

    def count(ptrs, mask, direction):
        addresses = ptrs.data[np.asarray(mask.data).astype(bool)]  # a block mask & a scalar one: int32 0/1
        moved = 0
        for start, end, name in launch["ranges"]:
            n = int(((addresses >= start) & (addresses < end)).sum())
            if n:
                entry = counts.setdefault((launch["kernel"], name), [0, 0])
                entry[direction] += n * (ptrs.get_element_ty().primitive_bitwidth // 8)
                moved += n
        if moved != addresses.size:
            raise RuntimeError(f"{launch['kernel']}: {addresses.size - moved} accesses outside its tensor arguments")

    def masked_load(self, ptrs, mask, *rest, **kw):  # TMA descriptor loads pass keywords
        count(ptrs, mask, 0)
        return load(self, ptrs, mask, *rest, **kw)

    def masked_store(self, ptrs, value, mask, *rest):
        count(ptrs, mask, 1)
        return store(self, ptrs, value, mask, *rest)

    with (patch.object(executor, "_init_args_hst", init_args_hst),
          patch.object(builder, "create_masked_load", masked_load),
          patch.object(builder, "create_masked_store", masked_store)):
        yield

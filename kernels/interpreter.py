"""Triton's interpreter (TRITON_INTERPRET=1), which runs the kernels on CPU tensors, and three fixes to
triton 3.6.0's, applied when gpusim_kernels is imported in interpreter mode, so that it computes what the GPU does:

- a loop `for j in range(n)` over a runtime n converts a one-element array with int(), which NumPy 2.4
  refuses (triton-lang/triton#9171);
- tl.dot on bf16 multiplies the raw bits the interpreter stores bf16 as (triton-lang/triton#11584): the
  operands now go through fp32, which is exact (a product of two bf16 values fits in fp32) and accumulates
  in fp32, as bf16 tensor cores do;
- fp32 -> bf16 casts truncate; the GPU rounds to nearest even, which halves the error of a bf16 output.

And one for speed: every call of a device function (a @triton.jit helper called from a kernel) patched
triton.language again, walking its modules' members (about 3 ms a call; a third of naive attention's time on
CPU), although the launch running it had patched the same modules and Triton never restores a device
function's patch. Inside a launch, a device function whose modules the launch patched is not patched again.
"""
import numpy as np
import triton
import triton.language as tl
from triton.runtime import interpreter

# @triton.jit reads TRITON_INTERPRET when it decorates, so the mode at import is every kernel's mode.
INTERPRETED = triton.knobs.runtime.interpret
Builder, Handle = interpreter.InterpreterBuilder, interpreter.TensorHandle


def _patch_lang_tensor(tensor, scope, original=interpreter._patch_lang_tensor):
    original(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))


def _create_dot(self, a, b, d, input_precision, max_num_imprecise_acc, original=Builder.create_dot):
    return original(self, _fp32(a), _fp32(b), d, input_precision, max_num_imprecise_acc)


def _fp32(x):  # a bf16 value is the top half of the fp32 one
    if x.dtype != tl.bfloat16:
        return x
    return Handle((x.data.astype(np.uint32) << 16).view(np.float32), tl.float32)


def _cast_impl(self, src, dst_type, original=Builder.cast_impl):
    if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
        bits = src.data.astype(np.float32).view(np.uint32)
        return Handle(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16), tl.bfloat16)
    return original(self, src, dst_type)


_PATCHED = []  # per launch in progress (innermost last): the ids of the language modules it has patched


def _launch(self, *args, original=interpreter.GridExecutor.__call__, **kwargs):
    _PATCHED.append(set())
    try:
        return original(self, *args, **kwargs)
    finally:
        _PATCHED.pop()


def _patch_lang(fn, original=interpreter._patch_lang):
    modules = {id(m) for m in fn.__globals__.values() if m is tl or m is tl.core}
    if _PATCHED and _PATCHED[-1] and modules <= _PATCHED[-1]:
        return None  # a device function's call, its modules patched by the launch: Triton discards the scope
    scope = original(fn)
    if _PATCHED:
        _PATCHED[-1].update(modules)
    return scope


if INTERPRETED:
    interpreter.GridExecutor.__call__, interpreter._patch_lang = _launch, _patch_lang
    interpreter._patch_lang_tensor = _patch_lang_tensor
    Builder.create_dot, Builder.cast_impl = _create_dot, _cast_impl

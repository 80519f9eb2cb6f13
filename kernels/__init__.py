"""Triton kernels for naive attention, FlashAttention-1, FlashAttention-2, a Hopper (FlashAttention-3
style) kernel and Flash-Decoding (split KV over a paged cache) that move exactly the bytes
gpusim counts, a float64 reference beside them, and trace_io, which proves the first claim by counting
every tl.load and tl.store under Triton's interpreter. The backward passes of naive attention and
FlashAttention-2 (gpusim.backward counts them) come with autograd wrappers: *_attention_trainable.
The entry points are torch custom ops (kernels/ops.py) under torch.compile; decoding is planned once and run
per layer (DecodePlan). A q with no rows (batch, heads or N 0) gets empty outputs (and a backward dq empty, dk and
dv zeros) without a launch, as SDPA: naive, flash1, flash2 and their backwards; the Hopper kernel and decoding refuse
it (one line), as gpusim, which counts launches, does.

Set TRITON_INTERPRET=1 before importing gpusim_kernels to run them on CPU tensors (the interpreter).
"""
from .backward import flash2_attention_backward, flash2_attention_trainable
from .decode import DecodePlan, decode_attention, plan_for_cache
from .flash1 import flash1_attention
from .flash2 import flash2_attention
from .hopper import hopper_attention, to_fp8
from .naive import naive_attention
from .naive_backward import naive_attention_backward, naive_attention_trainable
from . import ops  # noqa: F401  (registers the custom ops torch.ops.gpusim.*, which torch.compile keeps whole)
from .reference import reference_attention
from .trace import trace_io

__all__ = ["DecodePlan", "decode_attention", "flash1_attention", "flash2_attention", "flash2_attention_backward",
           "flash2_attention_trainable", "hopper_attention", "naive_attention", "naive_attention_backward",
           "naive_attention_trainable", "plan_for_cache", "reference_attention", "to_fp8", "trace_io"]

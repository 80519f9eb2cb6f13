"""The entry points as torch custom ops (torch.ops.gpusim.*), so that torch.compile(fullgraph=True) keeps them
in its graph, one node each, without tracing into Triton or gpusim. Each op's fake (register_fake) gives its
outputs' shapes and dtypes from the inputs' alone; the tiles are chosen inside the op, from shapes, as in eager.
A custom op takes no dataclass: a gpusim.Tiles given as tiles= reaches an op as its fields (block_q, block_kv,
num_warps, num_stages; the hopper op's own too), and the op makes the Tiles again (kernels/launch.py op_fields,
op_keywords).

The public functions (flash2_attention, ..., flash2_attention_trainable) call their op while torch.compile
traces them, and launch directly otherwise: eager, a custom op's dispatch costs tens of microseconds per
call, as much as the launch. gpusim::flash2_attention's backward (register_autograd) is
gpusim::flash2_attention_backward.
The ops return new tensors only: none mutates or aliases an input.
"""
from typing import Optional

import torch
from torch import Tensor

from .backward import flash2_attention_backward
from .flash1 import flash1_attention
from .flash2 import flash2_attention
from .hopper import OUT_DTYPES, hopper_attention
from .launch import first_derivative_only, op_keywords
from .naive import naive_attention


def _lse(q):
    return q.new_empty(q.shape[:3], dtype=torch.float32)


def _like(x, dtype=None):
    """A contiguous tensor shaped like x, as every op returns (empty_like would keep a transposed input's strides)."""
    return x.new_empty(x.shape, dtype=dtype or x.dtype)


@torch.library.custom_op("gpusim::flash2_attention", mutates_args=())
def flash2_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, block_q: Optional[int], block_kv: Optional[int],
              num_warps: Optional[int], num_stages: Optional[int], backward_block_q: Optional[int],
              backward_block_kv: Optional[int], gpu: Optional[str]) -> tuple[Tensor, Tensor]:
    """(O, LSE) of flash2_attention; backward_block_q, backward_block_kv: the tiles of its backward."""
    return flash2_attention(q, k, v, causal=causal, **op_keywords(block_q, block_kv, num_warps, num_stages),
                            return_lse=True, gpu=gpu)


@flash2_op.register_fake
def _(q, k, v, causal, block_q, block_kv, num_warps, num_stages, backward_block_q, backward_block_kv, gpu):
    return _like(q), _lse(q)


def _flash2_setup(ctx, inputs, output):
    q, k, v, causal, _, _, _, _, block_q, block_kv, gpu = inputs
    ctx.save_for_backward(q, k, v, *output)
    ctx.options = (causal, block_q, block_kv, gpu)
    ctx.set_materialize_grads(False)  # an output no loss used has no gradient (None), not zeros


@first_derivative_only("gpusim::flash2_attention")
def _flash2_backward(ctx, do, dlse):
    """The gradients of O and of the LSE (dS = P ∘ (dP - D + dLSE)); either None where no loss used it (under
    torch.compile the LSE's is a tensor, zeros where unused)."""
    q, k, v, o, lse = ctx.saved_tensors
    do = torch.zeros_like(o) if do is None else do
    return (*torch.ops.gpusim.flash2_attention_backward(q, k, v, o, lse, do, dlse, *ctx.options),
            None, None, None, None, None, None, None, None)


flash2_op.register_autograd(_flash2_backward, setup_context=_flash2_setup)


@torch.library.custom_op("gpusim::flash2_attention_backward", mutates_args=())
def flash2_backward_op(q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, do: Tensor, dlse: Optional[Tensor],
                       causal: bool, block_q: Optional[int], block_kv: Optional[int],
                       gpu: Optional[str]) -> tuple[Tensor, Tensor, Tensor]:
    return flash2_attention_backward(q, k, v, o, lse, do, causal=causal, block_q=block_q, block_kv=block_kv,
                                     gpu=gpu, dlse=dlse)


@flash2_backward_op.register_fake
def _(q, k, v, o, lse, do, dlse, causal, block_q, block_kv, gpu):
    return _like(q), _like(k), _like(v)


@torch.library.custom_op("gpusim::flash1_attention", mutates_args=())
def flash1_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, block_q: Optional[int], block_kv: Optional[int],
              num_warps: Optional[int], num_stages: Optional[int], gpu: Optional[str]) -> Tensor:
    return flash1_attention(q, k, v, causal=causal, **op_keywords(block_q, block_kv, num_warps, num_stages), gpu=gpu)


@flash1_op.register_fake
def _(q, k, v, causal, block_q, block_kv, num_warps, num_stages, gpu):
    return _like(q, torch.float32)


@torch.library.custom_op("gpusim::naive_attention", mutates_args=())
def naive_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, block_q: Optional[int], block_kv: Optional[int],
             num_warps: Optional[int], num_stages: Optional[int], gpu: Optional[str]) -> Tensor:
    return naive_attention(q, k, v, causal=causal, **op_keywords(block_q, block_kv, num_warps, num_stages), gpu=gpu)


@naive_op.register_fake
def _(q, k, v, causal, block_q, block_kv, num_warps, num_stages, gpu):
    return _like(q)


@torch.library.custom_op("gpusim::hopper_attention", mutates_args=())
def hopper_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, fp8_scale: Optional[list[float]],
              block_q: Optional[int], block_kv: Optional[int], num_warps: Optional[int], num_stages: Optional[int],
              warp_specialize: Optional[bool], mask: Optional[str], overlap: Optional[bool],
              lpt_heads: Optional[int]) -> tuple[Tensor, Tensor]:
    return hopper_attention(q, k, v, causal=causal, return_lse=True, fp8_scale=fp8_scale, block_q=block_q,
                            block_kv=block_kv, num_warps=num_warps, num_stages=num_stages,
                            warp_specialize=warp_specialize, mask=mask, overlap=overlap, lpt_heads=lpt_heads)


@hopper_op.register_fake
def _(q, k, v, causal, fp8_scale, block_q, block_kv, num_warps, num_stages, warp_specialize, mask, overlap,
      lpt_heads):
    return _like(q, OUT_DTYPES.get(q.dtype, q.dtype)), _lse(q)

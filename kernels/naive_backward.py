"""Standard attention's backward pass (Algorithm 3 of the FlashAttention paper), one launch per line, and
naive_attention_trainable, which autograd can differentiate. The forward saved P (N x N_kv per head, its
rows LD apart: kernels/naive.py); the backward reads it, writes dP and dS (rows LD apart too) to HBM and reads
them back: the quadratic traffic FlashAttention removes. For contrast with kernels/backward.py;
gpusim.backward counts the bytes they move.

    dv: dV = Pᵀ dO          one program per K/V block and K/V head, over the group's query heads
    dp: dP = dO Vᵀ          one program per visited tile, written whole
    ds: dS = P ∘ (dP - rowsum(P ∘ dP))   one program per row
    dq: dQ = τ dS K         one program per Q block
    dk: dK = τ dSᵀ Q        like dv
"""
import torch
import triton
import triton.language as tl

from gpusim.shape import Tiles

from .backward import (backward_config, bwd_constants, check_backward, empty_grads, no_rows,
                       prepare_backward)
from .launch import (check_tensors, checked_config, first_derivative_only, in_slices, launch, one_row, options,
                     past_grid)
from gpusim.passes.naive import score_row

from .naive import naive_attention, row_block_product, tile_product
from .tiles import first_q_block, kv_blocks_visited, row_offsets


@triton.jit
def _summed_over_queries(A, X, bkv, j, N, LD, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                         Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """Σ A_ijᵀ X_i over the query heads of K/V head bkv's group and the Q blocks that see K/V block j:
    (Bc, d) in fp32. A is an (N, LD) matrix per head (P or dS, 0 past key N_kv), X an (N, d) one (dO or Q)."""
    keys = j * Bc + tl.arange(0, Bc)
    acc = tl.zeros([Bc, BLOCK_D], tl.float32)
    for g in range(GROUP):
        bh = bkv * GROUP + g
        for i in range(first_q_block(j, N, Br, Bc, CAUSAL), tl.cdiv(N, Br)):
            rows = i * Br + tl.arange(0, Br)
            a_mask = (rows < N)[:, None] & (keys < LD)[None, :]
            a_offs = rows.to(tl.int64)[:, None] * LD + keys[None, :]  # int64: N * LD may pass 2**31
            a_ij = tl.load(A + bh * N * LD + a_offs, mask=a_mask, other=0.0)  # read Br*Bc
            x_offs, x_mask = row_offsets(rows, N, HEAD_DIM, BLOCK_D)
            # .cg: every K/V block's program loads X_i, and two on one SM would hit in its L1 (Nsight: dk and dv read
            # 1.7-2.5% under the count at N = 4096, d = 64, run 50: results/h200/logs/run50_51_ncu_bwd.tar.gz); so
            # every load is L2 -> SM
            x_i = tl.load(X + bh * N * HEAD_DIM + x_offs, mask=x_mask, other=0.0, cache_modifier=".cg")  # read Br*d
            acc += tl.dot(tl.trans(a_ij), x_i, input_precision="ieee")
    return acc


@triton.jit
def dv_kernel(P, dO, dV, N, N_KV, LD, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    j = tl.program_id(0)  # K/V block
    bkv = tl.program_id(1).to(tl.int64)  # b * H_kv + kv head
    dv = _summed_over_queries(P, dO, bkv, j, N, LD, GROUP, HEAD_DIM, BLOCK_D, Br, Bc, CAUSAL)
    offs, mask = row_offsets(j * Bc + tl.arange(0, Bc), N_KV, HEAD_DIM, BLOCK_D)
    tl.store(dV + bkv * N_KV * HEAD_DIM + offs, dv.to(dV.dtype.element_ty), mask=mask)  # write Bc*d


@triton.jit
def dk_kernel(dS, Q, dK, N, N_KV, LD, scale, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    j = tl.program_id(0)
    bkv = tl.program_id(1).to(tl.int64)
    dk = _summed_over_queries(dS, Q, bkv, j, N, LD, GROUP, HEAD_DIM, BLOCK_D, Br, Bc, CAUSAL) * scale
    offs, mask = row_offsets(j * Bc + tl.arange(0, Bc), N_KV, HEAD_DIM, BLOCK_D)
    tl.store(dK + bkv * N_KV * HEAD_DIM + offs, dk.to(dK.dtype.element_ty), mask=mask)  # write Bc*d


@triton.jit
def dp_kernel(dO, V, dP, N, N_KV, LD, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    tile_product(dO, V, dP, N, N_KV, LD, 1.0, GROUP, HEAD_DIM, BLOCK_D, Br, Bc, CAUSAL)  # dP = dO Vᵀ, tile by tile


@triton.jit
def ds_kernel(P, dP, dS, N, N_KV, LD, CAUSAL: tl.constexpr, ONE_PASS: tl.constexpr, BLOCK_N: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr):
    row = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    at = (bh * N + row) * LD
    # The row's part of the tiles the forward wrote (all LD of it unless causal). P is 0 at masked keys and past
    # key N_kv, so dS is.
    n = tl.minimum(kv_blocks_visited(row // Br, N, N_KV, Br, Bc, CAUSAL) * Bc, LD) if CAUSAL else LD
    if ONE_PASS:  # the row's P and dP fit in SRAM: read each once
        cols = tl.arange(0, BLOCK_N)
        p = tl.load(P + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read n
        dp = tl.load(dP + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read n
        ds = p * (dp - tl.sum(p * dp, 0))
        tl.store(dS + at + cols, ds.to(dS.dtype.element_ty), mask=cols < n)  # write n
    else:  # streamed in chunks of Bc: a pass for rowsum(P ∘ dP), one for dS
        d_row = 0.0
        for c in range(0, n, Bc):
            cols = c + tl.arange(0, Bc)
            p = tl.load(P + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read Bc
            dp = tl.load(dP + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read Bc
            d_row += tl.sum(p * dp, 0)
        for c in range(0, n, Bc):
            cols = c + tl.arange(0, Bc)
            p = tl.load(P + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read Bc
            dp = tl.load(dP + at + cols, mask=cols < n, other=0.0).to(tl.float32)  # read Bc
            tl.store(dS + at + cols, (p * (dp - d_row)).to(dS.dtype.element_ty), mask=cols < n)  # write Bc


@triton.jit
def dq_kernel(dS, K, dQ, N, N_KV, LD, scale, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    row_block_product(dS, K, dQ, N, N_KV, LD, scale, GROUP, HEAD_DIM, BLOCK_D, Br, Bc, CAUSAL)  # dQ = τ dS K


def naive_attention_backward(q, k, v, p, do, *, causal=False, block_q=None, block_kv=None, tiles=None, gpu=None):
    """(dq, dk, dv) of attention for the output gradient do, from the P that naive_attention(...,
    return_p=True) saved with the same block_q, block_kv (a causal P is written only in the forward's
    visited tiles), or tiles=gpusim.Tiles(...), whose num_warps, num_stages (where set) its five kernels take.
    Causal and not given (or one given): naive_attention's own choice for these tensors, the tiles its P was written
    at (not causal, P is written whole, and gpusim.backward's defaults for naive attention run).
    Gradients in q's dtype; dk, dv summed over each K/V head's group."""
    if no_rows(q):  # every check, P's and do's on their own shapes and the rest on one_row's; no launch
        check_backward(q, k, v, do, block_q, block_kv, tiles)
        check_p(p, q, k)
        backward_config("naive", *one_row(q, k, v, do=do).values(), causal=causal, block_q=block_q,
                        block_kv=block_kv, gpu=gpu, tiles=tiles)
        return empty_grads(q, k, v)
    if causal and tiles is None and (block_q is None or block_kv is None):  # the forward's: P's unwritten tiles
        forward = checked_config("naive", q, k, v, causal=causal, block_q=block_q, block_kv=block_kv, gpu=gpu)
        block_q, block_kv = forward.block_q, forward.block_kv
    cfg, q, k, v, do = prepare_backward("naive", q, k, v, do, causal=causal, block_q=block_q, block_kv=block_kv,
                                        gpu=gpu, tiles=tiles)
    check_p(p, q, k)
    if past_grid(cfg):  # past CUDA's grid along y: a call per slice of the batch
        return in_slices(naive_attention_backward, cfg, (q, k, v, p, do),
                         dict(causal=causal, tiles=tiles, gpu=gpu))
    ld, t, scale = score_row(cfg), cfg.tiling, cfg.head_dim**-0.5
    p, kv_grid, n, nk = rows_apart(p, ld), (t.n_kv_blocks, cfg.batch * cfg.kv_heads), cfg.seq, cfg.seq_kv
    dv = torch.empty_like(v)
    launch(dv_kernel, kv_grid, p, do, dv, n, nk, ld, **bwd_constants(cfg, "dv"))
    dp = torch.empty_like(p)
    launch(dp_kernel, (t.n_q_blocks * t.n_kv_blocks, cfg.bh), do, v, dp, n, nk, ld, **bwd_constants(cfg, "dp"))
    ds = torch.empty_like(p)
    launch(ds_kernel, (cfg.seq, cfg.bh), p, dp, ds, n, nk, ld, CAUSAL=cfg.causal, ONE_PASS=cfg.ds_fits,
           BLOCK_N=triton.next_power_of_2(ld), Br=cfg.block_q, Bc=cfg.block_kv, **options(cfg, "ds"))
    del dp  # freed before dQ and dK are allocated: the peak is P, dP and dS together
    dq = torch.empty_like(q)
    launch(dq_kernel, (t.n_q_blocks, cfg.bh), ds, k, dq, n, nk, ld, scale, **bwd_constants(cfg, "dq"))
    dk = torch.empty_like(k)
    launch(dk_kernel, kv_grid, ds, q, dk, n, nk, ld, scale, **bwd_constants(cfg, "dk"))
    return dq, dk, dv


def check_p(p, q, k):
    """One line unless p is the forward's P of q and k: (B, H, N, N_kv) in q's dtype, on q's device."""
    check_tensors(dict(p=p))
    if p.shape != (*q.shape[:3], k.shape[2]) or p.dtype != q.dtype or p.device != q.device:
        raise ValueError(f"p is {tuple(p.shape)} ({p.dtype}, on {p.device}): expected the forward's P, "
                         f"{(*q.shape[:3], k.shape[2])} ({q.dtype}, on {q.device})")


def rows_apart(p, ld):
    """P (B, H, N, N_kv) as a view of an (B, H, N, ld) buffer, rows ld apart: the forward's own (naive_attention's
    return_p), or a copy with zeros past key N_kv."""
    b, h, n, nk = p.shape
    if p.stride() == (h * n * ld, n * ld, ld, 1):
        return p.as_strided((b, h, n, ld), p.stride())
    return torch.nn.functional.pad(p, (0, ld - nk)).contiguous()  # a pad of 0 keeps a transposed view's strides


class NaiveAttention(torch.autograd.Function):
    """naive_attention forward (P saved), naive_attention_backward backward, on the same tiles."""

    @staticmethod
    def forward(ctx, q, k, v, causal, tiles, gpu):
        o, p = naive_attention(q, k, v, causal=causal, tiles=tiles, gpu=gpu, return_p=True)
        ctx.save_for_backward(q, k, v, p)
        ctx.options = dict(causal=causal, tiles=tiles, gpu=gpu)
        return o

    @staticmethod
    @first_derivative_only("naive_attention_trainable")  # its backward is kernels: no second derivative
    def backward(ctx, do):
        return (*naive_attention_backward(*ctx.saved_tensors, do, **ctx.options), None, None, None)


def naive_attention_trainable(q, k, v, *, causal=False, block_q=None, block_kv=None, tiles=None, gpu=None):
    """naive_attention that autograd differentiates, with naive_attention_backward. Both passes run on the
    same tiles: block_q, block_kv or tiles=gpusim.Tiles(...) (its num_warps, num_stages too, where set), or
    gpusim.backward's defaults for naive attention (which fit the forward)."""
    if no_rows(q):  # every check on one_row's shape; no tiles to choose (no launch either way)
        backward_config("naive", *one_row(q, k, v, do=q).values(), causal=causal, block_q=block_q,
                        block_kv=block_kv, gpu=gpu, tiles=tiles)
        return NaiveAttention.apply(q, k, v, causal, tiles, gpu)
    cfg = prepare_backward("naive", q, k, v, q, causal=causal, block_q=block_q, block_kv=block_kv, gpu=gpu,
                           tiles=tiles)[0]
    return NaiveAttention.apply(q, k, v, causal, tiles or Tiles(cfg.block_q, cfg.block_kv), gpu)

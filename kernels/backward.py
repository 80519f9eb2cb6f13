"""FlashAttention-2's backward pass in three launches, and flash2_attention_trainable, which autograd can
differentiate (loss.backward() runs these kernels; under torch.compile through kernels/ops.py's custom ops).

The forward saved O and the row log-sum-exp (LSE), not P. The backward recomputes P_ij = exp(S_ij - LSE_i)
tile by tile: "preprocess" writes D = rowsum(dO ∘ O); "dkdv" holds one K/V block (Br == block_q rows) and
sums dV_j = Σ P_ijᵀ dO_i and dK_j = τ Σ dS_ijᵀ Q_i as Q blocks (Bc == block_kv rows) stream past, over the
query heads of its K/V head's group (grouped-query attention); "dq" holds one Q block (Br rows) and sums
dQ_i = τ Σ dS_ij K_j as K/V blocks (Bc rows) stream past, recomputing S and dP again rather than adding
into dQ atomically (gpusim/passes/flash2_backward.py says why). gpusim.backward counts the bytes they move.
"""
from functools import lru_cache

import torch
import triton
import triton.language as tl

from gpusim import backward as model
from gpusim import best_blocks
from gpusim.shape import given_tiles

from .flash2 import flash2_attention
from .interpreter import INTERPRETED
from .launch import (DTYPES, KEY_BLOCKS, LAUNCH_CACHE_SIZE, Launch, check_gpu, check_inputs, check_pair, check_tensors,
                     detect_gpu, first_derivative_only, in_slices, int_blocks, keyed, launch, launch_kept, metas,
                     one_row, op_fields, op_keywords, options, past_grid, signature)
from .tiles import first_q_block, keep, kv_blocks_visited, row_offsets

TORCH_DTYPES = {name: dtype for dtype, name in DTYPES.items()}  # gpusim's dtype name: the torch dtype


@triton.jit
def preprocess_kernel(O, dO, D, N, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, Br: tl.constexpr):
    i = tl.program_id(0)  # Q block
    bh = tl.program_id(1).to(tl.int64)  # b * H + h
    rows = i * Br + tl.arange(0, Br)
    offs, mask = row_offsets(rows, N, HEAD_DIM, BLOCK_D)
    o_i = tl.load(O + bh * N * HEAD_DIM + offs, mask=mask, other=0.0).to(tl.float32)  # read Br*d
    do_i = tl.load(dO + bh * N * HEAD_DIM + offs, mask=mask, other=0.0).to(tl.float32)  # read Br*d
    tl.store(D + bh * N + rows, tl.sum(o_i * do_i, 1), mask=rows < N)  # write Br (fp32)


@triton.jit
def kept_t(keys, rows, N, N_KV, CAUSAL: tl.constexpr):
    """keep(rows, keys, ...) transposed, built as (keys, rows): which scores of Sᵀ exist and survive the mask."""
    kept = (keys < N_KV)[:, None] & (rows < N)[None, :]
    if CAUSAL:
        kept = kept & (keys[:, None] <= rows[None, :])
    return kept


@triton.jit
def dkdv_kernel(Q, K, V, dO, LSE, D, dK, dV, N, N_KV, scale, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
                BLOCK_D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    # Works on the transposed tiles Sᵀ, Pᵀ, dPᵀ, dSᵀ (Br, Bc), products of tiles loaded from HBM, so that
    # tl.trans only touches loaded tiles (as in the forward and dq_kernel). Compiled on the H200 (triton
    # 3.6.0), the form dK_j += tl.dot(tl.trans(dS_ij), Q_i), a transpose of a tile derived from a tl.dot
    # result, gave dK 8u off where the interpreter gives 0.6u and dQ, with dS untransposed, was right.
    j = tl.program_id(0)  # K/V block of Br rows, held
    bkv = tl.program_id(1).to(tl.int64)  # b * H_kv + kv head; its query heads are bkv * GROUP + g
    keys = j * Br + tl.arange(0, Br)
    kv_offs, kv_mask = row_offsets(keys, N_KV, HEAD_DIM, BLOCK_D)
    first, T_q = first_q_block(j, N, Bc, Br, CAUSAL), tl.cdiv(N, Bc)  # Q blocks of Bc rows that see block j
    seen = kv_mask & (first < T_q)  # a block no query sees is not read
    k_j = tl.load(K + bkv * N_KV * HEAD_DIM + kv_offs, mask=seen, other=0.0)  # read Br*d; k_j stays in SRAM
    v_j = tl.load(V + bkv * N_KV * HEAD_DIM + kv_offs, mask=seen, other=0.0)  # read Br*d; v_j stays in SRAM
    dk = tl.zeros([Br, BLOCK_D], tl.float32)  # dK_j / τ, in registers
    dv = tl.zeros([Br, BLOCK_D], tl.float32)  # dV_j, in registers
    for g in range(GROUP):
        bh = bkv * GROUP + g
        for i in range(first, T_q):
            rows = i * Bc + tl.arange(0, Bc)
            q_offs, q_mask = row_offsets(rows, N, HEAD_DIM, BLOCK_D)
            q_i = tl.load(Q + bh * N * HEAD_DIM + q_offs, mask=q_mask, other=0.0)  # read Bc*d
            do_i = tl.load(dO + bh * N * HEAD_DIM + q_offs, mask=q_mask, other=0.0)  # read Bc*d
            lse_i = tl.load(LSE + bh * N + rows, mask=rows < N, other=0.0)  # read Bc (fp32)
            d_i = tl.load(D + bh * N + rows, mask=rows < N, other=0.0)  # read Bc (fp32)
            s_t = tl.dot(k_j, tl.trans(q_i), input_precision="ieee") * scale  # Sᵀ recomputed, (Br, Bc)
            p_t = tl.where(kept_t(keys, rows, N, N_KV, CAUSAL), tl.exp(s_t - lse_i[None, :]), 0.0)  # Pᵀ
            dv += tl.dot(p_t.to(do_i.dtype), do_i, input_precision="ieee")
            dp_t = tl.dot(v_j, tl.trans(do_i), input_precision="ieee")  # dPᵀ
            ds_t = p_t * (dp_t - d_i[None, :])  # dSᵀ in fp32, rounded to the input dtype only for the dot
            dk += tl.dot(ds_t.to(q_i.dtype), q_i, input_precision="ieee")
    tl.store(dK + bkv * N_KV * HEAD_DIM + kv_offs, (dk * scale).to(dK.dtype.element_ty), mask=kv_mask)  # write Br*d
    tl.store(dV + bkv * N_KV * HEAD_DIM + kv_offs, dv.to(dV.dtype.element_ty), mask=kv_mask)  # write Br*d


@triton.jit
def dq_kernel(Q, K, V, dO, LSE, D, dQ, N, N_KV, scale, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
              BLOCK_D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    i = tl.program_id(0)  # Q block of Br rows, held
    bh = tl.program_id(1).to(tl.int64)  # b * H + h; its K/V head is b * H_kv + h // GROUP
    kv_head = (bh // GROUP) * N_KV * HEAD_DIM
    rows = i * Br + tl.arange(0, Br)
    q_offs, q_mask = row_offsets(rows, N, HEAD_DIM, BLOCK_D)
    q_i = tl.load(Q + bh * N * HEAD_DIM + q_offs, mask=q_mask, other=0.0)  # read Br*d; stays in SRAM
    do_i = tl.load(dO + bh * N * HEAD_DIM + q_offs, mask=q_mask, other=0.0)  # read Br*d; stays in SRAM
    lse_i = tl.load(LSE + bh * N + rows, mask=rows < N, other=0.0)  # read Br (fp32)
    d_i = tl.load(D + bh * N + rows, mask=rows < N, other=0.0)  # read Br (fp32)
    dq = tl.zeros([Br, BLOCK_D], tl.float32)  # dQ_i / τ, in registers
    for j in range(kv_blocks_visited(i, N, N_KV, Br, Bc, CAUSAL)):
        keys = j * Bc + tl.arange(0, Bc)
        kv_offs, kv_mask = row_offsets(keys, N_KV, HEAD_DIM, BLOCK_D)
        k_j = tl.load(K + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d
        s_ij = tl.dot(q_i, tl.trans(k_j), input_precision="ieee") * scale  # S recomputed, again
        p_ij = tl.where(keep(rows, keys, N_KV, CAUSAL), tl.exp(s_ij - lse_i[:, None]), 0.0)
        dp_ij = tl.dot(do_i, tl.trans(v_j), input_precision="ieee")
        ds_ij = p_ij * (dp_ij - d_i[:, None])
        dq += tl.dot(ds_ij.to(k_j.dtype), k_j, input_precision="ieee")
    tl.store(dQ + bh * N * HEAD_DIM + q_offs, (dq * scale).to(dQ.dtype.element_ty), mask=q_mask)  # write Br*d


def prepare_backward(algo, q, k, v, do, *, causal, block_q, block_kv, gpu, tiles=None):
    """Check q, k, v, do and the tiles; return gpusim.backward's configuration and the tensors contiguous."""
    cfg = backward_config(algo, q, k, v, do, causal=causal, block_q=block_q, block_kv=block_kv, gpu=gpu, tiles=tiles)
    return cfg, q.contiguous(), k.contiguous(), v.contiguous(), do.contiguous()


def check_backward(q, k, v, do, block_q, block_kv, tiles):
    """check_inputs and the gradient's check; (block_q, block_kv, tiles) as given_tiles returns them."""
    block_q, block_kv, tiles = given_tiles(tiles, block_q, block_kv)
    check_inputs(q, k, v, block_q, block_kv)
    if not hasattr(do, "shape") or do.shape != q.shape or do.dtype != q.dtype or do.device != q.device:
        got = (tuple(do.shape), do.dtype, str(do.device)) if hasattr(do, "shape") else type(do).__name__
        raise ValueError(f"do is {got}: expected the output's gradient, shaped like q {tuple(q.shape)}, {q.dtype}, "
                         f"on {q.device}")
    return block_q, block_kv, tiles


def no_rows(q):
    """Whether q is a tensor with no rows (batch, heads or N 0): a backward then launches nothing (launch.one_row)."""
    return isinstance(q, torch.Tensor) and not q.numel()


def empty_grads(q, k, v):
    """(dq, dk, dv) of a q with no rows, as SDPA's backward returns them: dq empty, dk and dv zeros (no query reads
    a key)."""
    return tuple(make(x, memory_format=torch.contiguous_format)
                 for make, x in ((torch.empty_like, q), (torch.zeros_like, k), (torch.zeros_like, v)))


def check_saved(o, lse, q_shape, q_dtype):
    """One line unless o and lse are shaped as the forward of a q of q_shape wrote them, o in q_dtype (q's) and
    lse in fp32. Tensors or their Meta: the cached launch build checks them once per key."""
    if tuple(o.shape) != tuple(q_shape) or tuple(lse.shape) != tuple(q_shape[:3]) or lse.dtype != torch.float32:
        raise ValueError(f"o {tuple(o.shape)} and lse {tuple(lse.shape)} ({lse.dtype}) must be the forward's: "
                         f"{tuple(q_shape)} and {tuple(q_shape[:3])} (torch.float32)")
    if o.dtype != q_dtype:
        raise ValueError(f"o has dtype {o.dtype} but q has {q_dtype}: o must be the forward's output, in q's dtype")


def backward_config(algo, q, k, v, do, *, causal, block_q, block_kv, gpu, tiles=None):
    """check_backward, then gpusim.backward's configuration (flash2's tiles not given: default_backward_blocks;
    tiles: a gpusim.Tiles instead of block_q, block_kv). Tensors or their Meta."""
    block_q, block_kv, tiles = check_backward(q, k, v, do, block_q, block_kv, tiles)
    shape = dict(batch=q.shape[0], heads=q.shape[1], kv_heads=k.shape[1], seq=q.shape[2], seq_kv=k.shape[2],
                 head_dim=q.shape[3], causal=causal, dtype=DTYPES[q.dtype],
                 gpu=detect_gpu(q.device) if gpu is None else gpu)
    if tiles is not None:
        return model.config(algo, tiles=tiles, **shape)
    if algo == "flash2" and (block_q is None or block_kv is None):
        block_q, block_kv = default_backward_blocks(dict(shape, block_q=block_q, block_kv=block_kv))
    return model.config(algo, block_q=block_q, block_kv=block_kv, **shape)


def default_backward_blocks(shape):
    """flash2's backward tiles for a shape (best_blocks' keywords; one of block_q, block_kv given: its best pair):
    the tiles gpusim predicts fastest for the backward. Called once per shape: the backward's launch is cached."""
    return best_blocks("flash2", backward=True, **shape)


def backward_launch(algo, tensors, causal, tiles, block_q, block_kv, gpu, parts):
    """The checked Launch of a backward for tensors {q, k, v, do, and what the forward saved}: built once per
    key (as kernels/launch.py's forward_launch), then a look-up. parts(cfg, saved): the grids and constants,
    after checking the saved tensors' Meta against cfg."""
    given_tiles(tiles, block_q, block_kv)  # one line each, before the key is hashed
    check_gpu(gpu)
    if type(block_q) not in KEY_BLOCKS or type(block_kv) not in KEY_BLOCKS:  # a NumPy integer: the int's key
        block_q, block_kv = int_blocks(block_q, block_kv)
    return keyed(_cached_backward, algo, signature(tensors), causal, tiles, block_q, block_kv, gpu, parts, INTERPRETED)


@lru_cache(maxsize=LAUNCH_CACHE_SIZE, typed=True)
def _cached_backward(algo, sig, causal, tiles, block_q, block_kv, gpu, parts, interpreted):
    meta = metas(sig)
    if len({m.device for m in meta.values()}) > 1:
        raise ValueError(", ".join(f"{name} on {m.device}" for name, m in meta.items()) + ": the backward's tensors "
                         "must be on one device")
    cfg = backward_config(algo, meta.pop("q"), meta.pop("k"), meta.pop("v"), meta.pop("do"), causal=causal,
                          block_q=block_q, block_kv=block_kv, gpu=gpu, tiles=tiles)
    return Launch(cfg, *parts(cfg, meta), {})


def bwd_constants(cfg, kernel):
    """Compile-time constants of a backward kernel, with its launch options: its tiles and options gpusim's
    Tiles for it (cfg.pass_.tiles, as the model prices them)."""
    tiles = cfg.pass_.tiles(cfg, kernel)
    return dict(GROUP=cfg.group, HEAD_DIM=cfg.head_dim, BLOCK_D=triton.next_power_of_2(cfg.head_dim),
                Br=tiles.block_q, Bc=tiles.block_kv, CAUSAL=cfg.causal, num_warps=tiles.num_warps,
                num_stages=tiles.num_stages)


def flash2_attention_backward(q, k, v, o, lse, do, *, causal=False, block_q=None, block_kv=None, tiles=None,
                              gpu=None, dlse=None):
    """(dq, dk, dv) of attention for the output gradient do, from what flash2_attention(..., return_lse=True)
    returned: o (B, H, N, d) in q's dtype and lse (B, H, N, fp32). Gradients in q's dtype; dk, dv summed over
    each K/V head's group. block_q, block_kv: Br held, Bc streamed (default: gpusim.best_blocks(..., backward=True)), or
    tiles=gpusim.Tiles(...), whose num_warps, num_stages (where set) all three kernels take. dlse: a loss's
    gradient through lse too (lse's shape, fp32), whose term P ∘ dLSE joins dS: D - dLSE in place of D, one
    elementwise op between the preprocess and the other two kernels.

    causal must be the forward's: P is recomputed from lse with this call's mask, and nothing in o or lse says
    which mask made them, so a mismatch (causal=False on a causal forward's o and lse) is not detected and
    gives wrong gradients."""
    if dlse is not None:
        check_tensors(dict(lse=lse, dlse=dlse))
        if dlse.shape != lse.shape or dlse.dtype != torch.float32 or dlse.device != lse.device:
            raise ValueError(f"dlse is {tuple(dlse.shape)} {dlse.dtype} on {dlse.device}: expected lse's gradient, "
                             f"{tuple(lse.shape)} torch.float32 on {lse.device}")
    if no_rows(q):  # every check, o's and lse's on their own shapes and the rest on one_row's; no launch
        check_backward(q, k, v, do, block_q, block_kv, tiles)
        check_tensors(dict(o=o, lse=lse))
        check_saved(o, lse, q.shape, q.dtype)
        backward_launch("flash2", one_row(q, k, v, do=do, o=o, lse=lse), causal, tiles, block_q, block_kv, gpu, _parts)
        return empty_grads(q, k, v)
    tensors = dict(q=q, k=k, v=v, do=do, o=o, lse=lse)
    launched = backward_launch("flash2", tensors, causal, tiles, block_q, block_kv, gpu, _parts)
    if past_grid(launched.cfg):  # past CUDA's grid along y: a call per slice of the batch
        return in_slices(_sliced_backward, launched.cfg, (q, k, v, o, lse, do, *(() if dlse is None else (dlse,))),
                         dict(causal=causal, tiles=tiles, gpu=gpu))
    return launched_backward(launched, *(x.contiguous() for x in tensors.values()),
                             None if dlse is None else dlse.contiguous())


def _sliced_backward(q, k, v, o, lse, do, dlse=None, **options):
    """flash2_attention_backward of one slice of the batch (in_slices slices dlse with the others)."""
    return flash2_attention_backward(q, k, v, o, lse, do, dlse=dlse, **options)


def launched_backward(launched, q, k, v, do, o, lse, dlse=None):
    """The three launches of a checked backward Launch on contiguous tensors: (dq, dk, dv); with dlse, D - dLSE
    between the preprocess and the other two (dS = P ∘ (dP - D + dLSE))."""
    cfg = launched.cfg
    d = torch.empty_like(lse)  # D = rowsum(dO ∘ O), (B, H, N) fp32
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    scale = cfg.head_dim**-0.5
    preprocess = (preprocess_kernel, "preprocess", (o, do, d, cfg.seq))
    rest = ((dkdv_kernel, "dkdv", (q, k, v, do, lse, d, dk, dv, cfg.seq, cfg.seq_kv, scale)),
            (dq_kernel, "dq", (q, k, v, do, lse, d, dq, cfg.seq, cfg.seq_kv, scale)))
    if dlse is None:
        launch_kept(launched, (preprocess, *rest), launch)
    else:
        launch_kept(launched, (preprocess,), launch)
        d.sub_(dlse)
        launch_kept(launched, rest, launch)
    return dq, dk, dv


def _parts(cfg, saved):
    """The three launches' grids and constants, once o and lse are checked to be the forward's."""
    check_saved(saved["o"], saved["lse"], (cfg.batch, cfg.heads, cfg.seq, cfg.head_dim), TORCH_DTYPES[cfg.dtype])
    t = cfg.tiling
    grids = {"preprocess": (t.n_q_blocks, cfg.bh), "dkdv": (cfg.kv_tiling.n_kv_blocks, cfg.batch * cfg.kv_heads),
             "dq": (t.n_q_blocks, cfg.bh)}
    consts = {"preprocess": dict(HEAD_DIM=cfg.head_dim, BLOCK_D=triton.next_power_of_2(cfg.head_dim),
                                 Br=cfg.block_q, **options(cfg, "preprocess")),
              "dkdv": bwd_constants(cfg, "dkdv"), "dq": bwd_constants(cfg, "dq")}
    return grids, consts


class Flash2Attention(torch.autograd.Function):
    """flash2_attention forward (O and the LSE saved), flash2_attention_backward backward: the eager path.
    (torch.compile gets the custom op gpusim::flash2_attention instead, kernels/ops.py, whose eager dispatch
    costs tens of microseconds more per call.) autograd runs the backward on its own thread for the device,
    where each torch call costs more (docs/perf.md): so the forward looks up the backward's launch (do shaped,
    typed and placed as O: autograd gives the gradient O's metadata) where a gradient is wanted (grad_enabled: the
    caller's grad mode, which needs_input_grad does not see), and the backward only allocates and launches."""

    @staticmethod
    def forward(ctx, q, k, v, causal, fields, backward_blocks, gpu, grad_enabled):
        o, lse = flash2_attention(q, k, v, causal=causal, **op_keywords(*fields), return_lse=True, gpu=gpu)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.options = dict(causal=causal, block_q=backward_blocks[0], block_kv=backward_blocks[1], gpu=gpu)
        ctx.launched = None  # no gradient asked for, no rows, or in slices: flash2_attention_backward's path
        if grad_enabled and any(ctx.needs_input_grad[:3]) and not no_rows(q):
            tensors = dict(q=q, k=k, v=v, do=o, o=o, lse=lse)
            launched = backward_launch("flash2", tensors, causal, None, *backward_blocks, gpu, _parts)
            ctx.launched = None if past_grid(launched.cfg) else launched
        return o

    @staticmethod
    @first_derivative_only("flash2_attention_trainable")  # its backward is kernels: no second derivative
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        if ctx.launched is None:
            return (*flash2_attention_backward(q, k, v, o, lse, do, **ctx.options), None, None, None, None, None)
        tensors = (x.contiguous() for x in (q, k, v, do))  # o and lse are the forward's own: contiguous
        return (*launched_backward(ctx.launched, *tensors, o, lse), None, None, None, None, None)


def flash2_attention_trainable(q, k, v, *, causal=False, block_q=None, block_kv=None, tiles=None,
                               backward_blocks=None, gpu=None):
    """flash2_attention that autograd differentiates: o = flash2_attention_trainable(q, k, v); o.sum().backward()
    fills q.grad, k.grad, v.grad with FlashAttention-2's backward. block_q, block_kv, or tiles=gpusim.Tiles(...):
    the forward's tiles (and the backward's blocks unless backward_blocks = (block_q, block_kv) is given; the
    backward's warps and stages are gpusim's rule, its loops not the forward's); None: gpusim's choice (the
    backward's: default_backward_blocks). Under torch.compile: the custom op gpusim::flash2_attention
    (kernels/ops.py; gpu a preset name)."""
    fields = op_fields("flash2", tiles, block_q, block_kv)
    backward_blocks = fields[:2] if backward_blocks is None else check_pair("backward_blocks", backward_blocks)
    if torch.compiler.is_compiling():
        return torch.ops.gpusim.flash2_attention(q, k, v, causal, *fields, *backward_blocks, gpu)[0]
    return Flash2Attention.apply(q, k, v, causal, fields, backward_blocks, gpu, torch.is_grad_enabled())

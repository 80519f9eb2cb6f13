"""FlashAttention-2's forward pass (Dao, 2023, Algorithm 1): one program per (batch, head, Q block).

Q_i is read once and stays in SRAM while every K_j, V_j it needs streams past; the softmax is online,
in fp32 registers (m_i, l_i, acc), and O_i is rescaled once at the end. Per (batch, head) the kernel reads
Q once and K, V once per Q block, and writes O and the log-sum-exp once: no N x N matrix in HBM.
"""
import torch
import triton
import triton.language as tl

from gpusim.shape import flag

from .launch import constants, forward_launch, in_slices, launch, op_fields, past_grid
from .tiles import keep, kv_blocks_visited, row_offsets, unmasked_blocks


@triton.jit
def _attend(acc, l_i, m_i, q_i, K, V, kv_head, rows, lo, hi, N_KV, scale, D: tl.constexpr, BLOCK_D: tl.constexpr,
            Bc: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr):
    """The online softmax over K/V blocks lo .. hi-1. MASKED: blocks that cross the causal diagonal or the
    end of the keys; every other block is seen whole by every row and needs no mask (FlashAttention-2,
    Sec. 3.1: only the diagonal blocks of a causal row are masked)."""
    for j in range(lo, hi):
        keys = j * Bc + tl.arange(0, Bc)
        kv_offs, kv_mask = row_offsets(keys, N_KV, D, BLOCK_D)
        k_j = tl.load(K + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d
        s_ij = tl.dot(q_i, tl.trans(k_j), input_precision="ieee") * scale  # in registers
        if MASKED:
            s_ij = tl.where(keep(rows, keys, N_KV, CAUSAL), s_ij, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_ij, 1))  # finite: block 0 holds key 0, which every row sees
        alpha = tl.exp(m_i - m_new)  # rescales what was summed under the old max
        p_ij = tl.exp(s_ij - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p_ij, 1)
        acc = acc * alpha[:, None] + tl.dot(p_ij.to(v_j.dtype), v_j, input_precision="ieee")
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def flash2_kernel(Q, K, V, O, LSE, N, N_KV, scale, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
                  Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    i = tl.program_id(0)  # Q block
    bh = tl.program_id(1).to(tl.int64)  # b * H + h; its K/V head (grouped-query) is b * H_kv + h // GROUP
    q_head = bh * N * D
    kv_head = (bh // GROUP) * N_KV * D
    rows = i * Br + tl.arange(0, Br)
    q_offs, q_mask = row_offsets(rows, N, D, BLOCK_D)
    q_i = tl.load(Q + q_head + q_offs, mask=q_mask, other=0.0)  # read Br*d; q_i stays in SRAM
    m_i = tl.full([Br], float("-inf"), tl.float32)  # running row max, in registers
    l_i = tl.zeros([Br], tl.float32)  # running row sum of exp(s - m_i), in registers
    acc = tl.zeros([Br, BLOCK_D], tl.float32)  # O_i not yet divided by l_i, in registers
    n_blocks = kv_blocks_visited(i, N, N_KV, Br, Bc, CAUSAL)  # blocks 0 .. J_i - 1, as gpusim's tiling visits
    n_whole = unmasked_blocks(i, N_KV, Br, Bc, CAUSAL)  # the first blocks every row sees whole: no mask
    acc, l_i, m_i = _attend(acc, l_i, m_i, q_i, K, V, kv_head, rows, 0, n_whole, N_KV, scale, D, BLOCK_D, Bc,
                            CAUSAL, False)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q_i, K, V, kv_head, rows, n_whole, n_blocks, N_KV, scale, D, BLOCK_D,
                            Bc, CAUSAL, True)
    o_mask = q_mask
    if D >= 128 and Br == 64:  # the rows' mask again, written so that the compiler cannot reuse q_mask, whose per-row
        # predicates kept alive through the K/V loop slowed these tiles 1.1-1.6x where N is not a multiple of 16
        # (docs/perf.md, "Lengths not a multiple of 16 in flash2": where else it was measured, and why not there)
        o_mask = ((N - rows) > 0)[:, None] & (tl.arange(0, BLOCK_D) < D)[None, :]
    tl.store(O + q_head + q_offs, (acc / l_i[:, None]).to(O.dtype.element_ty), mask=o_mask)  # write Br*d
    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)


def flash2_attention(q, k, v, *, causal=False, block_q=None, block_kv=None, tiles=None, return_lse=False, gpu=None):
    """softmax(q kᵀ / sqrt(d)) v by FlashAttention-2. q: (B, H, N, d); k, v: (B, H_kv, N_kv, d), H_kv
    dividing H. Returns O in q's dtype, and with return_lse=True also the row log-sum-exp (fp32, (B, H, N)),
    which the kernel always writes (the backward pass needs it). block_q, block_kv: Br, Bc (default: the
    tile gpusim predicts fastest, gpusim.best_blocks), or tiles=gpusim.Tiles(block_q, block_kv, num_warps=...,
    num_stages=...), whose knobs not None override gpusim's launch rule (and are priced); gpu: the gpusim GPU
    whose shared memory the tiles must fit (default: detected; under torch.compile a preset name)."""
    flag("return_lse", return_lse)
    if torch.compiler.is_compiling():  # one node of torch.compile's graph: the custom op (kernels/ops.py)
        fields = op_fields("flash2", tiles, block_q, block_kv)
        o, lse = torch.ops.gpusim.flash2_attention(q, k, v, causal, *fields, None, None, gpu)
        return (o, lse) if return_lse else o
    launched = forward_launch("flash2", q, k, v, causal, tiles, block_q, block_kv, gpu, _parts)
    if launched and past_grid(launched.cfg):  # past CUDA's grid along y: a call per slice of the batch
        return in_slices(flash2_attention, launched.cfg, (q, k, v), dict(causal=causal, tiles=tiles,
                                                                          return_lse=return_lse, gpu=gpu))
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q, memory_format=torch.contiguous_format)  # (an empty q's strides may be any)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    if launched:  # None: no rows, nothing to launch
        cfg, grids, consts, _ = launched
        launch(flash2_kernel, grids, q, k, v, o, lse, cfg.seq, cfg.seq_kv, cfg.head_dim**-0.5, **consts)
    return (o, lse) if return_lse else o


def check_flash2(q, k, v, causal=False):
    """Every check flash2_attention makes on q, k, v at its own tiles, without a launch: one line for each fault."""
    forward_launch("flash2", q, k, v, causal, None, None, None, None, _parts)


def _parts(cfg):
    """The launch's grid and constants (built once per shape, kernels/launch.py)."""
    return (cfg.tiling.n_q_blocks, cfg.bh), constants(cfg, "flash2")

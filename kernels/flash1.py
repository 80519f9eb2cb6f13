"""FlashAttention-1's forward pass (Dao et al., 2022, Algorithm 1), line by line: one program per
(batch, head). K/V blocks are the outer loop, Q blocks the inner one, so every step reads O_i, l_i, m_i
back from HBM and writes them again: the traffic FlashAttention-2's swapped loops remove. O is an fp32
accumulator in HBM, returned in fp32.
"""
import torch
import triton
import triton.language as tl

from .launch import constants, forward_launch, launch, op_fields
from .tiles import keep, kv_blocks_visited, row_offsets


@triton.jit
def flash1_kernel(Q, K, V, O, l, m, N, N_KV, scale, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
                  Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)  # b * H + h; its K/V head (grouped-query) is b * H_kv + h // GROUP
    q_head = bh * N * D
    kv_head = (bh // GROUP) * N_KV * D
    T_r = tl.cdiv(N, Br)
    for i in range(T_r):  # line 2: O = 0, l = 0, m = -inf in HBM
        rows = i * Br + tl.arange(0, Br)
        q_offs, q_mask = row_offsets(rows, N, D, BLOCK_D)
        tl.store(O + q_head + q_offs, tl.zeros([Br, BLOCK_D], tl.float32), mask=q_mask)  # write Br*d (fp32)
        tl.store(l + bh * N + rows, tl.zeros([Br], tl.float32), mask=rows < N)  # write Br
        tl.store(m + bh * N + rows, tl.full([Br], float("-inf"), tl.float32), mask=rows < N)  # write Br
    tl.debug_barrier()  # other threads than those storing may load these: make the stores visible
    for j in range(kv_blocks_visited(T_r - 1, N, N_KV, Br, Bc, CAUSAL)):  # line 5: K/V blocks some Q block sees
        keys = j * Bc + tl.arange(0, Bc)
        kv_offs, kv_mask = row_offsets(keys, N_KV, D, BLOCK_D)
        k_j = tl.load(K + kv_head + kv_offs, mask=kv_mask, other=0.0)  # line 6: read Bc*d; k_j stays in SRAM
        v_j = tl.load(V + kv_head + kv_offs, mask=kv_mask, other=0.0)  # line 6: read Bc*d; v_j stays in SRAM
        first_i = (j * Bc) // Br if CAUSAL else 0  # causal: Q blocks above the one holding row j * Bc skip j
        for i in range(first_i, T_r):  # line 7
            rows = i * Br + tl.arange(0, Br)
            q_offs, q_mask = row_offsets(rows, N, D, BLOCK_D)
            # line 8, read Br*d, Br*d (fp32), Br, Br: evict_last keeps these lines in L1 over the spills' (the
            # loads ask L1 for about 1.6x the bytes L2 sends them, the rest L1 hits; run 152)
            q_i = tl.load(Q + q_head + q_offs, mask=q_mask, other=0.0, eviction_policy="evict_last")
            o_i = tl.load(O + q_head + q_offs, mask=q_mask, other=0.0, eviction_policy="evict_last")
            l_i = tl.load(l + bh * N + rows, mask=rows < N, other=0.0, eviction_policy="evict_last")
            m_i = tl.load(m + bh * N + rows, mask=rows < N, other=0.0, eviction_policy="evict_last")
            tl.debug_barrier()  # every thread has read O_i, l_i, m_i before any overwrites them
            s_ij = tl.dot(q_i, tl.trans(k_j), input_precision="ieee") * scale  # line 9, in registers
            s_ij = tl.where(keep(rows, keys, N_KV, CAUSAL), s_ij, float("-inf"))
            m_tilde = tl.max(s_ij, 1)  # line 10; -inf for a row whose keys in block j are all masked
            p_tilde = tl.exp(s_ij - tl.where(m_tilde == float("-inf"), 0.0, m_tilde)[:, None])
            l_tilde = tl.sum(p_tilde, 1)
            m_new = tl.maximum(m_i, m_tilde)  # line 11; finite: every row sees key 0, in block 0
            alpha = tl.exp(m_i - m_new)
            beta = tl.exp(m_tilde - m_new)
            l_new = alpha * l_i + beta * l_tilde
            p_v = tl.dot(p_tilde.to(v_j.dtype), v_j, input_precision="ieee")
            o_i = ((l_i * alpha)[:, None] * o_i + beta[:, None] * p_v) / l_new[:, None]
            tl.store(O + q_head + q_offs, o_i, mask=q_mask)  # line 12: write Br*d (fp32)
            tl.store(l + bh * N + rows, l_new, mask=rows < N)  # line 13: write Br
            tl.store(m + bh * N + rows, m_new, mask=rows < N)  # line 13: write Br
            tl.debug_barrier()  # the next step's loads of O_i, l_i, m_i must see these stores


def flash1_attention(q, k, v, *, causal=False, block_q=None, block_kv=None, tiles=None, gpu=None):
    """softmax(q kᵀ / sqrt(d)) v by FlashAttention-1. q: (B, H, N, d); k, v: (B, H_kv, N_kv, d), H_kv
    dividing H. Returns O in fp32 (the accumulator the kernel read-modify-writes in HBM). block_q,
    block_kv: Br, Bc (default: the tile gpusim predicts fastest, gpusim.best_blocks), or tiles=gpusim.Tiles(...)
    with num_warps, num_stages if wanted (as flash2_attention); gpu: the gpusim GPU whose shared memory the
    tiles must fit (default: detected)."""
    if torch.compiler.is_compiling():  # one node of torch.compile's graph: the custom op (kernels/ops.py)
        return torch.ops.gpusim.flash1_attention(q, k, v, causal, *op_fields("flash1", tiles, block_q, block_kv), gpu)
    launched = forward_launch("flash1", q, k, v, causal, tiles, block_q, block_kv, gpu, _parts)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    if launched:  # None: no rows, nothing to launch
        cfg, grid, consts, _ = launched
        l, m = (torch.empty(q.shape[:3], dtype=torch.float32, device=q.device) for _ in range(2))
        launch(flash1_kernel, grid, q, k, v, o, l, m, cfg.seq, cfg.seq_kv, cfg.head_dim**-0.5, **consts)
    return o


def _parts(cfg):
    """The launch's grid and constants (built once per shape, kernels/launch.py)."""
    return (cfg.bh,), constants(cfg, "flash1")

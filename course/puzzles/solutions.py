"""Reference solutions of the kernel puzzles (the last section of notebooks 3, 4, 5, 8, 9 and 10), hidden
until the learner asks: gpusim_course.puzzles.solution(name) prints one. Each is the notebook's template with
its blanks filled in, and each moves exactly the bytes gpusim counts for its schedule, or the closed form its
traffic comments state (tests/test_course_puzzles.py). The warm-ups and the two-GPU merge come with the
launcher the learner writes too (`name`, beside the kernel `name_kernel`).

Each is a whole kernel, as the learner types it into one notebook cell, so the attention kernels repeat the
online softmax update on purpose: a solution that called a shared helper would not be one the learner could
type and read whole. Names follow the papers: Br == block_q, Bc == block_kv, m_i (running row max), l_i
(running row sum), acc (O_i not yet divided by l_i). Q, K, V, O are (B, H, N, d) contiguous; LSE is (B, H, N) in fp32.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def online_softmax(Q, K, V, O, LSE, N, N_KV, scale, D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr):
    """FlashAttention-2's forward pass: one program per (Q block i, batch x head); the online softmax update
    of the inner loop is the puzzle."""
    i, bh = tl.program_id(0), tl.program_id(1)
    rows, cols = i * Br + tl.arange(0, Br), tl.arange(0, D)
    q_i = tl.load(Q + bh * N * D + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)  # read Br*d
    m_i = tl.full([Br], float("-inf"), tl.float32)
    l_i = tl.zeros([Br], tl.float32)
    acc = tl.zeros([Br, D], tl.float32)
    for j in range(0, tl.cdiv(N_KV, Bc)):
        keys = j * Bc + tl.arange(0, Bc)
        kv = bh * N_KV * D + keys[:, None] * D + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        s_ij = tl.dot(q_i, tl.trans(k_j)) * scale
        s_ij = tl.where(keys[None, :] < N_KV, s_ij, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_ij, 1))
        alpha = tl.exp(m_i - m_new)  # rescales what was summed under the old max
        p_ij = tl.exp(s_ij - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p_ij, 1)
        acc = acc * alpha[:, None] + tl.dot(p_ij.to(v_j.dtype), v_j)
        m_i = m_new
    tl.store(O + bh * N * D + rows[:, None] * D + cols[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=rows[:, None] < N)  # write Br*d
    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)


@triton.jit
def causal_skip(Q, K, V, O, LSE, N, N_KV, scale, D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr):
    """FlashAttention-2 under the causal mask (row r sees keys 0..r): Q block i visits only the K/V blocks
    that hold a key one of its rows sees, and masks only the blocks that cross the diagonal."""
    i, bh = tl.program_id(0), tl.program_id(1)
    rows, cols = i * Br + tl.arange(0, Br), tl.arange(0, D)
    q_i = tl.load(Q + bh * N * D + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)  # read Br*d
    m_i = tl.full([Br], float("-inf"), tl.float32)
    l_i = tl.zeros([Br], tl.float32)
    acc = tl.zeros([Br, D], tl.float32)
    last_row = tl.minimum((i + 1) * Br, N) - 1
    n_blocks = tl.minimum(last_row // Bc + 1, tl.cdiv(N_KV, Bc))  # the block of the last row's last key, + 1
    n_whole = tl.minimum(i * Br // Bc, N_KV // Bc)  # blocks left of the first row's diagonal: no mask
    for j in range(0, n_blocks):
        keys = j * Bc + tl.arange(0, Bc)
        kv = bh * N_KV * D + keys[:, None] * D + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        s_ij = tl.dot(q_i, tl.trans(k_j)) * scale
        if j >= n_whole:  # the diagonal blocks: key <= row
            s_ij = tl.where((keys[None, :] <= rows[:, None]) & (keys[None, :] < N_KV), s_ij, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_ij, 1))
        alpha = tl.exp(m_i - m_new)
        p_ij = tl.exp(s_ij - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p_ij, 1)
        acc = acc * alpha[:, None] + tl.dot(p_ij.to(v_j.dtype), v_j)
        m_i = m_new
    tl.store(O + bh * N * D + rows[:, None] * D + cols[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=rows[:, None] < N)  # write Br*d
    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)


@triton.jit
def gqa_decode(Q, K, V, O, LSE, cache_seqlens, scale, S, H: tl.constexpr, H_KV: tl.constexpr,
               D: tl.constexpr, Bc: tl.constexpr, BLOCK_R: tl.constexpr):
    """One decode step with grouped-query attention: one new token per query head, H heads sharing H_KV K/V
    heads (GROUP = H // H_KV each). One program per (batch, K/V head) serves its GROUP query heads as the rows
    of one tile (BLOCK_R >= GROUP rows, the rest masked), so each K/V block is loaded once per group."""
    GROUP: tl.constexpr = H // H_KV
    pid = tl.program_id(0)  # b * H_KV + kv_head
    b, kv_head = pid // H_KV, pid % H_KV
    n_keys = tl.load(cache_seqlens + b)  # read 1 (int32)
    heads = kv_head * GROUP + tl.arange(0, BLOCK_R)  # the group's query heads
    in_group = tl.arange(0, BLOCK_R) < GROUP
    cols = tl.arange(0, D)
    q_rows = (b * H + heads)[:, None] * D + cols[None, :]
    q = tl.load(Q + q_rows, mask=in_group[:, None], other=0.0)  # read GROUP*d
    m_i = tl.full([BLOCK_R], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_R], tl.float32)
    acc = tl.zeros([BLOCK_R, D], tl.float32)
    for j in range(0, tl.cdiv(n_keys, Bc)):
        keys = j * Bc + tl.arange(0, Bc)
        kv = (pid * S + keys)[:, None] * D + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < n_keys, other=0.0)  # read Bc*d, once for the whole group
        v_j = tl.load(V + kv, mask=keys[:, None] < n_keys, other=0.0)  # read Bc*d
        s = tl.where(keys[None, :] < n_keys, tl.dot(q, tl.trans(k_j)) * scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v_j.dtype), v_j)
        m_i = m_new
    tl.store(O + q_rows, (acc / l_i[:, None]).to(O.dtype.element_ty), mask=in_group[:, None])  # write GROUP*d
    tl.store(LSE + b * H + heads, m_i + tl.log(l_i), mask=in_group)  # write GROUP (fp32)


@triton.jit
def masked_tile_kernel(X, Y, M, N, BLOCK: tl.constexpr):
    """Copy X (M, N) to Y, one BLOCK x BLOCK tile per program (i, j); the edge tiles reach past X: masked."""
    i, j = tl.program_id(0), tl.program_id(1)
    rows, cols = i * BLOCK + tl.arange(0, BLOCK), j * BLOCK + tl.arange(0, BLOCK)
    offs = rows[:, None] * N + cols[None, :]  # X, Y: (M, N) contiguous
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(X + offs, mask=inside)  # read the tile's elements inside X
    tl.store(Y + offs, tile, mask=inside)  # write them


def masked_tile(x, block=16):
    y = torch.empty_like(x)  # (M, N), x's dtype
    grid = (triton.cdiv(x.shape[0], block), triton.cdiv(x.shape[1], block))
    masked_tile_kernel[grid](x, y, x.shape[0], x.shape[1], BLOCK=block)
    return y


@triton.jit
def dot_tile_kernel(A, B, Y, M, N, K, BLOCK: tl.constexpr):
    """Y = A @ B, A (M, K), B (K, N): program (i, j) sums the BLOCK x BLOCK tile of Y over K, BLOCK at a time."""
    i, j = tl.program_id(0), tl.program_id(1)
    rows, cols = i * BLOCK + tl.arange(0, BLOCK), j * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK)):
        ks = k * BLOCK + tl.arange(0, BLOCK)
        a = tl.load(A + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                    other=0.0)  # read the tile of A inside it
        b = tl.load(B + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N),
                    other=0.0)  # read the tile of B inside it
        acc += tl.dot(a, b)
    tl.store(Y + rows[:, None] * N + cols[None, :], acc.to(Y.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))  # write the tile of Y inside it


def dot_tile(a, b, block=16):
    y = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype)  # (M, N)
    grid = (triton.cdiv(a.shape[0], block), triton.cdiv(b.shape[1], block))
    dot_tile_kernel[grid](a, b, y, a.shape[0], b.shape[1], a.shape[1], BLOCK=block)
    return y


@triton.jit
def row_softmax_kernel(X, Y, N, BLOCK: tl.constexpr):
    """softmax of row r of X (M, N) by program r, the whole row in one tile (BLOCK >= N)."""
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + r * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)  # read N
    p = tl.exp(x - tl.max(x, 0))  # the padding: exp(-inf) = 0
    tl.store(Y + r * N + cols, (p / tl.sum(p, 0)).to(Y.dtype.element_ty), mask=cols < N)  # write N


def row_softmax(x):
    y = torch.empty_like(x)  # (M, N)
    row_softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


@triton.jit
def online_row_softmax_kernel(X, Y, N, BLOCK: tl.constexpr):
    """softmax of row r of X (M, N), BLOCK elements at a time: pass 1 keeps the running max m_i and the sum
    l_i of exp(x - m_i), rescaling l_i when the max grows; pass 2 writes exp(x - m_i) / l_i."""
    r = tl.program_id(0)
    m_i = float("-inf")
    l_i = 0.0
    for c in range(0, tl.cdiv(N, BLOCK)):
        cols = c * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + r * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)  # read BLOCK
        m_new = tl.maximum(m_i, tl.max(x, 0))
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m_i = m_new
    for c in range(0, tl.cdiv(N, BLOCK)):
        cols = c * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + r * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)  # read BLOCK again
        tl.store(Y + r * N + cols, (tl.exp(x - m_i) / l_i).to(Y.dtype.element_ty), mask=cols < N)  # write BLOCK


def online_row_softmax(x, block=16):
    y = torch.empty_like(x)  # (M, N)
    online_row_softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=block)
    return y


@triton.jit
def flash2_forward(Q, K, V, O, LSE, N, N_KV, scale, H: tl.constexpr, D: tl.constexpr, Br: tl.constexpr,
                   Bc: tl.constexpr):
    """FlashAttention-2's forward pass, one program per (Q block i, b * H + h): where each (batch, head)
    starts and which rows exist are the puzzle."""
    i, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    q_head = b * H * N * D + h * N * D  # Q, O: (B, H, N, d)
    kv_head = b * H * N_KV * D + h * N_KV * D  # K, V: (B, H, N_KV, d)
    rows, cols = i * Br + tl.arange(0, Br), tl.arange(0, D)
    q_i = tl.load(Q + q_head + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)  # read Br*d
    m_i = tl.full([Br], float("-inf"), tl.float32)
    l_i = tl.zeros([Br], tl.float32)
    acc = tl.zeros([Br, D], tl.float32)
    for j in range(0, tl.cdiv(N_KV, Bc)):
        keys = j * Bc + tl.arange(0, Bc)
        kv = kv_head + keys[:, None] * D + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv, mask=keys[:, None] < N_KV, other=0.0)  # read Bc*d
        s_ij = tl.where(keys[None, :] < N_KV, tl.dot(q_i, tl.trans(k_j)) * scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_ij, 1))
        alpha = tl.exp(m_i - m_new)
        p_ij = tl.exp(s_ij - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p_ij, 1)
        acc = acc * alpha[:, None] + tl.dot(p_ij.to(v_j.dtype), v_j)
        m_i = m_new
    tl.store(O + q_head + rows[:, None] * D + cols[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=rows[:, None] < N)  # write Br*d
    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)


@triton.jit
def dkdv(Q, K, V, dO, LSE, D, dK, dV, N, scale, H: tl.constexpr, HEAD_DIM: tl.constexpr, Br: tl.constexpr,
         Bc: tl.constexpr):
    """FlashAttention-2's backward, dK and dV: program j holds K/V block j (Br rows) while the Q blocks (Bc
    rows) stream past, recomputing P from the LSE the forward saved: Pᵀ = exp(Sᵀ - LSE), dV_j += Pᵀ dO_i,
    dSᵀ = Pᵀ ∘ (dPᵀ - D_i) with dPᵀ = V_j dO_iᵀ, dK_j += τ dSᵀ Q_i. D = rowsum(dO ∘ O) (B, H, N), from the
    preprocess kernel."""
    j, bh = tl.program_id(0), tl.program_id(1)
    head = bh * N * HEAD_DIM  # every tensor (B, H, N, d); LSE, D (B, H, N)
    keys, cols = j * Br + tl.arange(0, Br), tl.arange(0, HEAD_DIM)
    kv = head + keys[:, None] * HEAD_DIM + cols[None, :]
    k_j = tl.load(K + kv, mask=keys[:, None] < N, other=0.0)  # read Br*d; stays in SRAM
    v_j = tl.load(V + kv, mask=keys[:, None] < N, other=0.0)  # read Br*d; stays in SRAM
    dk = tl.zeros([Br, HEAD_DIM], tl.float32)
    dv = tl.zeros([Br, HEAD_DIM], tl.float32)
    for i in range(0, tl.cdiv(N, Bc)):
        rows = i * Bc + tl.arange(0, Bc)
        qo = head + rows[:, None] * HEAD_DIM + cols[None, :]
        q_i = tl.load(Q + qo, mask=rows[:, None] < N, other=0.0)  # read Bc*d
        do_i = tl.load(dO + qo, mask=rows[:, None] < N, other=0.0)  # read Bc*d
        lse_i = tl.load(LSE + bh * N + rows, mask=rows < N, other=0.0)  # read Bc (fp32)
        d_i = tl.load(D + bh * N + rows, mask=rows < N, other=0.0)  # read Bc (fp32)
        s_t = tl.dot(k_j, tl.trans(q_i)) * scale  # Sᵀ (Br, Bc)
        p_t = tl.where((keys[:, None] < N) & (rows[None, :] < N), tl.exp(s_t - lse_i[None, :]), 0.0)
        dv += tl.dot(p_t.to(do_i.dtype), do_i)
        dp_t = tl.dot(v_j, tl.trans(do_i))
        dk += tl.dot((p_t * (dp_t - d_i[None, :])).to(q_i.dtype), q_i)
    tl.store(dK + kv, (dk * scale).to(dK.dtype.element_ty), mask=keys[:, None] < N)  # write Br*d
    tl.store(dV + kv, dv.to(dV.dtype.element_ty), mask=keys[:, None] < N)  # write Br*d


@triton.jit
def dq(Q, K, V, dO, LSE, D, dQ, N, scale, H: tl.constexpr, HEAD_DIM: tl.constexpr, Br: tl.constexpr,
       Bc: tl.constexpr):
    """FlashAttention-2's backward, dQ: program i holds Q block i (Br rows) and sums dQ_i = τ Σ_j dS_ij K_j
    as the K/V blocks (Bc rows) stream past, P_ij = exp(S_ij - LSE_i) and dS_ij = P_ij ∘ (dO_i V_jᵀ - D_i)."""
    i, bh = tl.program_id(0), tl.program_id(1)
    head = bh * N * HEAD_DIM  # every tensor (B, H, N, d); LSE, D (B, H, N)
    rows, cols = i * Br + tl.arange(0, Br), tl.arange(0, HEAD_DIM)
    qo = head + rows[:, None] * HEAD_DIM + cols[None, :]
    q_i = tl.load(Q + qo, mask=rows[:, None] < N, other=0.0)  # read Br*d
    do_i = tl.load(dO + qo, mask=rows[:, None] < N, other=0.0)  # read Br*d
    lse_i = tl.load(LSE + bh * N + rows, mask=rows < N, other=0.0)  # read Br (fp32)
    d_i = tl.load(D + bh * N + rows, mask=rows < N, other=0.0)  # read Br (fp32)
    dq_i = tl.zeros([Br, HEAD_DIM], tl.float32)
    for j in range(0, tl.cdiv(N, Bc)):
        keys = j * Bc + tl.arange(0, Bc)
        kv = head + keys[:, None] * HEAD_DIM + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < N, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv, mask=keys[:, None] < N, other=0.0)  # read Bc*d
        s_ij = tl.dot(q_i, tl.trans(k_j)) * scale
        p_ij = tl.where(keys[None, :] < N, tl.exp(s_ij - lse_i[:, None]), 0.0)
        dp_ij = tl.dot(do_i, tl.trans(v_j))
        dq_i += tl.dot((p_ij * (dp_ij - d_i[:, None])).to(k_j.dtype), k_j)
    tl.store(dQ + qo, (dq_i * scale).to(dQ.dtype.element_ty), mask=rows[:, None] < N)  # write Br*d


@triton.jit
def split_kv_merge(O_partial, LSE_partial, O, LSE, cache_seqlens, H: tl.constexpr, SPLITS: tl.constexpr,
                   D: tl.constexpr, Bc: tl.constexpr):
    """Flash-Decoding's reduce: program (h, b) merges the partial results of request b's active splits,
    O = Σ_s exp(LSE_s - LSE) O_s with LSE = log Σ_s exp(LSE_s). O_partial (SPLITS, B, H, 1, d) fp32,
    LSE_partial (SPLITS, B, H, 1) fp32; a request's splits past its last chunk hold nothing and are not read."""
    h, b = tl.program_id(0), tl.program_id(1)
    n_chunks = tl.cdiv(tl.load(cache_seqlens + b), Bc)  # read 1 (int32)
    s = tl.arange(0, SPLITS)
    active = s < tl.cdiv(n_chunks, tl.cdiv(n_chunks, SPLITS))  # the splits that hold a chunk
    at = (s * tl.num_programs(1) + b) * H + h  # row (b, h) of each split
    cols = tl.arange(0, D)
    lse_s = tl.load(LSE_partial + at, mask=active, other=float("-inf"))  # read active (fp32)
    o_s = tl.load(O_partial + at[:, None] * D + cols[None, :], mask=active[:, None], other=0.0)  # read active*d
    m = tl.max(lse_s, 0)
    w = tl.exp(lse_s - m)  # 0 for the empty splits
    l_sum = tl.sum(w, 0)
    tl.store(O + (b * H + h) * D + cols, (tl.sum(w[:, None] * o_s, 0) / l_sum).to(O.dtype.element_ty))  # write d
    tl.store(LSE + b * H + h, m + tl.log(l_sum))  # write 1 (fp32)


@triton.jit
def paged_decode(Q, K, V, O, LSE, block_table, cache_seqlens, scale, max_pages, H: tl.constexpr,
                 H_KV: tl.constexpr, D: tl.constexpr, Bc: tl.constexpr, BLOCK_R: tl.constexpr):
    """gqa_decode over a paged cache: K, V (pages, Bc, H_KV, d), request b's keys j*Bc .. j*Bc + Bc - 1 on page
    block_table[b, j] (a page holds one chunk of Bc keys)."""
    GROUP: tl.constexpr = H // H_KV
    pid = tl.program_id(0)  # b * H_KV + kv_head
    b, kv_head = pid // H_KV, pid % H_KV
    n_keys = tl.load(cache_seqlens + b)  # read 1 (int32)
    heads = kv_head * GROUP + tl.arange(0, BLOCK_R)
    in_group = tl.arange(0, BLOCK_R) < GROUP
    cols = tl.arange(0, D)
    q_rows = (b * H + heads)[:, None] * D + cols[None, :]
    q = tl.load(Q + q_rows, mask=in_group[:, None], other=0.0)  # read GROUP*d
    m_i = tl.full([BLOCK_R], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_R], tl.float32)
    acc = tl.zeros([BLOCK_R, D], tl.float32)
    for j in range(0, tl.cdiv(n_keys, Bc)):
        page = tl.load(block_table + b * max_pages + j)  # read 1 (int32): where chunk j lives
        slot = tl.arange(0, Bc)
        keys = j * Bc + slot
        kv = ((page * Bc + slot) * H_KV + kv_head)[:, None] * D + cols[None, :]
        k_j = tl.load(K + kv, mask=keys[:, None] < n_keys, other=0.0)  # read Bc*d
        v_j = tl.load(V + kv, mask=keys[:, None] < n_keys, other=0.0)  # read Bc*d
        s = tl.where(keys[None, :] < n_keys, tl.dot(q, tl.trans(k_j)) * scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v_j.dtype), v_j)
        m_i = m_new
    tl.store(O + q_rows, (acc / l_i[:, None]).to(O.dtype.element_ty), mask=in_group[:, None])  # write GROUP*d
    tl.store(LSE + b * H + heads, m_i + tl.log(l_i), mask=in_group)  # write GROUP (fp32)


@triton.jit
def gpu_merge_kernel(O1, LSE1, O2, LSE2, O, LSE, D: tl.constexpr):
    """Two GPUs each attended to half of the keys: merge their (O_g, LSE_g) into attention over all of them,
    one query row per program: LSE = log(exp(LSE1) + exp(LSE2)), O = exp(LSE1 - LSE) O1 + exp(LSE2 - LSE) O2."""
    r = tl.program_id(0)  # row of (B, H, N)
    cols = tl.arange(0, D)
    lse1, lse2 = tl.load(LSE1 + r), tl.load(LSE2 + r)  # read 1 + 1 (fp32)
    m = tl.maximum(lse1, lse2)
    lse = m + tl.log(tl.exp(lse1 - m) + tl.exp(lse2 - m))
    o1 = tl.load(O1 + r * D + cols).to(tl.float32)  # read d
    o2 = tl.load(O2 + r * D + cols).to(tl.float32)  # read d
    tl.store(O + r * D + cols, (tl.exp(lse1 - lse) * o1 + tl.exp(lse2 - lse) * o2).to(O.dtype.element_ty))  # write d
    tl.store(LSE + r, lse)  # write 1 (fp32)


def gpu_merge(o1, lse1, o2, lse2):
    o = torch.empty_like(o1)  # (B, H, N, d)
    lse = torch.empty_like(lse1)  # (B, H, N), fp32
    gpu_merge_kernel[(lse1.numel(),)](o1, lse1, o2, lse2, o, lse, D=o1.shape[-1])
    return o, lse

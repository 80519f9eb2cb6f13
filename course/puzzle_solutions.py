"""Reference solutions of the kernel puzzles (notebook 10), hidden until the learner asks:
gpusim_course.puzzles.solution(name) prints one. Each is the notebook's template with its blanks filled in,
and each moves exactly the bytes gpusim counts for its schedule (tests/test_course_puzzles.py).

Each is a whole kernel, as the learner types it into one notebook cell, so the three repeat the online softmax
update on purpose: a solution that called a shared helper would not be one the learner could type and read
whole. Names follow the papers: Br == block_q, Bc == block_kv, m_i (running row max), l_i (running row sum), acc (O_i
not yet divided by l_i). Q, K, V, O are (B, H, N, d) contiguous; LSE is (B, H, N) in fp32.
"""
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

"""Execute mode: naive attention, FlashAttention-1 and FlashAttention-2 run tile by tile on NumPy arrays,
every HBM access going through a counted Memory. The reference beside them takes the same arrays.

Arrays are shaped (B, H, N, d) as in torch's scaled_dot_product_attention; K and V may have fewer heads
(grouped-query attention). The arithmetic runs in the arrays' precision (at least float32); the modeled
`dtype` only sets how many bytes each element costs.
"""
from itertools import product

import numpy as np

from .memory import Memory


def reference_attention(q, k, v, *, causal=False):
    """softmax(q kᵀ / sqrt(d)) v in float64, the whole N x N matrix at once."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, N, N_kv)
    if causal:  # top-left aligned, as torch's is_causal: row r sees keys 0..r
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def execute(cfg, q, k, v, trace=False):
    """Run cfg.algo on q, k, v; return (output, counted Memory)."""
    work = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    b, h, n, nk, d = cfg.batch, cfg.heads, cfg.seq, cfg.seq_kv, cfg.head_dim
    tensors = {"Q": q.astype(work), "K": k.astype(work), "V": v.astype(work), "O": np.zeros((b, h, n, d), work)}
    if cfg.algo == "naive":
        tensors |= {"S": np.zeros((b, h, n, nk), work), "P": np.zeros((b, h, n, nk), work)}
    elif cfg.algo == "flash1":
        tensors |= {"l": np.zeros((b, h, n), work), "m": np.zeros((b, h, n), work)}
    else:  # flash2, hopper
        tensors |= {"LSE": np.zeros((b, h, n), work)}
    mem = Memory(tensors, {name: cfg.tensor_bytes(name) for name in tensors}, trace)
    {"naive": _naive, "flash1": _flash1, "flash2": _flash2, "hopper": _flash2}[cfg.algo](mem, cfg)
    return tensors["O"], mem


def _masked_scores(q_i, k_j, scale, keep):
    s = q_i @ k_j.T * scale  # (Br, Bc), on chip
    return s if keep is None else np.where(keep, s, -np.inf)


def _naive(mem, cfg):
    """Algorithm 0 of the FlashAttention paper as three kernels, each a grid of tiled programs."""
    t, scale, d = cfg.tiling, cfg.head_dim**-0.5, cfg.head_dim
    heads = list(product(range(cfg.batch), range(cfg.heads)))
    for b, h in heads:  # kernel 1: S = Q Kᵀ · scale, one program per (Br, Bc) tile of S
        for i in range(t.n_q_blocks):
            r = slice(*t.q_rows(i))
            for j in t.kv_blocks(i):
                c = slice(*t.kv_rows(j))
                q_i = mem.load("qk", "Q", (b, h, r))  # read Br*d
                k_j = mem.load("qk", "K", (b, cfg.kv_head(h), c))  # read Bc*d
                mem.store("qk", "S", (b, h, r, c), q_i @ k_j.T * scale)  # write Br*Bc: the whole tile
                mem.step("qk", (b, h, i, j), (i, j), cfg.sram_bytes("qk", r.stop - r.start, c.stop - c.start))
    for b, h in heads:  # kernel 2: P = softmax(S), one program per row, over the row's part of the visited tiles
        for row in range(cfg.seq):
            visible = min(row + 1, cfg.seq_kv) if cfg.causal else cfg.seq_kv
            _softmax_row(mem, cfg, b, h, row, int(t.keys_per_q_block[row // cfg.block_q]), visible)
    for b, h in heads:  # kernel 3: O = P V, one program per Br rows of O
        for i in range(t.n_q_blocks):
            r = slice(*t.q_rows(i))
            acc = np.zeros((r.stop - r.start, d), mem.tensors["O"].dtype)  # fp32 accumulator, on chip
            for j in t.kv_blocks(i):
                c = slice(*t.kv_rows(j))
                p_ij = mem.load("pv", "P", (b, h, r, c))  # read Br*Bc (P is 0 right of the diagonal)
                v_j = mem.load("pv", "V", (b, cfg.kv_head(h), c))  # read Bc*d
                acc += p_ij @ v_j
                mem.step("pv", (b, h, i), (i, j), cfg.sram_bytes("pv", r.stop - r.start, c.stop - c.start))
            mem.store("pv", "O", (b, h, r), acc)  # write Br*d
            mem.step("pv", (b, h, i), (i, None), cfg.sram_bytes("pv", r.stop - r.start, 0))


def _softmax_row(mem, cfg, b, h, row, n, visible):
    """Softmax of one row of S over its first n entries (the visited tiles), of which the first `visible`
    survive the causal mask: the rest are masked in SRAM and get P = 0. A row that fits in SRAM is read
    once; a longer one is streamed in block_kv chunks by the safe softmax: a pass for the max, one for
    the sum, one to write P (3 reads + 1 write per element)."""
    sram = cfg.sram_bytes("softmax")

    def masked(c):  # a chunk of S, read from HBM, with the masked keys set to -inf
        return np.where(np.arange(c.start, c.stop) < visible, mem.load("softmax", "S", (b, h, row, c)), -np.inf)

    if cfg.softmax_fits:
        x = masked(slice(0, n))  # read N
        e = np.exp(x - x.max())
        mem.store("softmax", "P", (b, h, row, slice(0, n)), e / e.sum())  # write N
        mem.step("softmax", (b, h, row), (row, 0), sram)
        return
    chunks = [slice(c, min(c + cfg.block_kv, n)) for c in range(0, n, cfg.block_kv)]
    m_row = max(masked(c).max() for c in chunks)  # pass 1: read N
    mem.step("softmax", (b, h, row), (row, 1), sram)
    l_row = sum(np.exp(masked(c) - m_row).sum() for c in chunks)  # pass 2: read N
    mem.step("softmax", (b, h, row), (row, 2), sram)
    for c in chunks:  # pass 3: read N, write N
        mem.store("softmax", "P", (b, h, row, c), np.exp(masked(c) - m_row) / l_row)
    mem.step("softmax", (b, h, row), (row, 3), sram)


def _flash1(mem, cfg):
    """Algorithm 1 of the FlashAttention paper, line by line. One thread block per (batch, head):
    K/V blocks in the outer loop, Q blocks inner, O, l, m read-modify-written in HBM on every step."""
    t, scale = cfg.tiling, cfg.head_dim**-0.5
    for b, h in product(range(cfg.batch), range(cfg.heads)):
        mem.store("flash1", "O", (b, h), 0.0)  # line 2: write N*d (fp32)
        mem.store("flash1", "l", (b, h), 0.0)  # line 2: write N
        mem.store("flash1", "m", (b, h), -np.inf)  # line 2: write N
        mem.step("flash1", (b, h), (None, None), 0)
        for j in range(t.n_kv_blocks):
            q_blocks = t.q_blocks(j)
            if not q_blocks:  # causal: no query sees these keys
                continue
            c = slice(*t.kv_rows(j))
            k_j = mem.load("flash1", "K", (b, cfg.kv_head(h), c))  # line 6: read Bc*d; K_j stays in SRAM
            v_j = mem.load("flash1", "V", (b, cfg.kv_head(h), c))  # line 6: read Bc*d; V_j stays in SRAM
            for i in q_blocks:
                r = slice(*t.q_rows(i))
                q_i = mem.load("flash1", "Q", (b, h, r))  # line 8: read Br*d
                o_i = mem.load("flash1", "O", (b, h, r))  # line 8: read Br*d (fp32)
                l_i = mem.load("flash1", "l", (b, h, r))  # line 8: read Br
                m_i = mem.load("flash1", "m", (b, h, r))  # line 8: read Br
                s_ij = _masked_scores(q_i, k_j, scale, t.keep(r, c))  # line 9
                m_tilde = s_ij.max(axis=1)  # line 10: a row whose keys are all masked has m_tilde = -inf
                p_tilde = np.exp(s_ij - np.where(np.isfinite(m_tilde), m_tilde, 0.0)[:, None])
                l_tilde = p_tilde.sum(axis=1)
                m_new = np.maximum(m_i, m_tilde)  # line 11 (finite: every row sees key 0 in block 0)
                alpha, beta = np.exp(m_i - m_new), np.exp(m_tilde - m_new)
                l_new = alpha * l_i + beta * l_tilde
                o_i = ((l_i * alpha)[:, None] * o_i + beta[:, None] * (p_tilde @ v_j)) / l_new[:, None]
                mem.store("flash1", "O", (b, h, r), o_i)  # line 12: write Br*d (fp32)
                mem.store("flash1", "l", (b, h, r), l_new)  # line 13: write Br
                mem.store("flash1", "m", (b, h, r), m_new)  # line 13: write Br
                mem.step("flash1", (b, h), (i, j), cfg.sram_bytes("flash1", r.stop - r.start, c.stop - c.start),
                         m_i=m_new, l_i=l_new, rescale=alpha)


def _flash2(mem, cfg):
    """The FlashAttention-2 forward: one thread block per (batch, head, Q block); K/V blocks inner;
    O rescaled only once at the end; O and the log-sum-exp written once. The Hopper kernel moves the
    same tiles (asynchronously, which changes the time, not the bytes)."""
    t, scale, d, K = cfg.tiling, cfg.head_dim**-0.5, cfg.head_dim, cfg.algo
    for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):
        r = slice(*t.q_rows(i))
        q_i = mem.load(K, "Q", (b, h, r))  # read Br*d; Q_i stays in SRAM
        m_i = np.full(r.stop - r.start, -np.inf, q_i.dtype)  # running row max, on chip
        l_i = np.zeros(r.stop - r.start, q_i.dtype)  # running row sum of exp(s - m_i), on chip
        acc = np.zeros((r.stop - r.start, d), q_i.dtype)  # un-normalised O_i, on chip
        for j in t.kv_blocks(i):
            c = slice(*t.kv_rows(j))
            k_j = mem.load(K, "K", (b, cfg.kv_head(h), c))  # read Bc*d
            v_j = mem.load(K, "V", (b, cfg.kv_head(h), c))  # read Bc*d
            s_ij = _masked_scores(q_i, k_j, scale, t.keep(r, c))
            m_new = np.maximum(m_i, s_ij.max(axis=1))  # finite: block 0 holds key 0, which every row sees
            alpha = np.exp(m_i - m_new)  # rescale factor for what was summed so far
            p_ij = np.exp(s_ij - m_new[:, None])
            l_i = alpha * l_i + p_ij.sum(axis=1)
            acc = alpha[:, None] * acc + p_ij @ v_j
            m_i = m_new
            mem.step(K, (b, h, i), (i, j), cfg.sram_bytes(K, r.stop - r.start, c.stop - c.start),
                     m_i=m_i, l_i=l_i, rescale=alpha)
        mem.store(K, "O", (b, h, r), acc / l_i[:, None])  # write Br*d
        mem.store(K, "LSE", (b, h, r), m_i + np.log(l_i))  # write Br
        mem.step(K, (b, h, i), (i, None), cfg.sram_bytes(K, r.stop - r.start, 0))

"""Execute mode for Flash-Decoding (gpusim/decode.py): the split-KV and reduce kernels run program by
program, chunk by chunk, on NumPy arrays, every HBM access going through a counted Memory, so the counts
can be checked against the closed form. The float64 reference sits beside it with the same arguments.

Arrays: q (B, H, seq, d); a paged cache (num_pages, P, kv_heads, d) with block_table (B, max_pages), or a
contiguous cache (B, kv_heads, S, d); cache_seqlens, one length per request. The arithmetic runs in the
arrays' precision (at least float32); the launch's dtype only sets the bytes each element costs.
"""
from itertools import product

import numpy as np

from .decode import check_block_table, launch_for_cache
from .shape import INDEX_BYTES
from .hardware import STATS_BYTES
from .execute import floats
from .memory import Memory


def decode_attention(q, k_cache, v_cache, *, cache_seqlens, block_table=None, causal_align="bottom_right",
                     num_splits=None, block_kv=None, grouped=True, dtype="fp16", gpu="H200", trace=False):
    """Run Flash-Decoding on NumPy arrays. Returns (output (B, H, seq, d), DecodeLaunch, counted Memory)."""
    q, k_cache, v_cache = (floats(name, x) for name, x in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)))
    launch = launch_for_cache(q.shape, k_cache.shape, v_cache.shape, cache_seqlens, paged=block_table is not None,
                              causal_align=causal_align, num_splits=num_splits, block_kv=block_kv, grouped=grouped,
                              dtype=dtype, gpu=gpu)
    if block_table is not None:
        check_block_table(block_table, launch.seq_kv, k_cache.shape[0], launch.page_size)
    out, mem = execute(launch, q, k_cache, v_cache, block_table, trace)
    return out, launch, mem


def decode_reference(q, k_cache, v_cache, *, cache_seqlens, block_table=None, causal_align="bottom_right"):
    """softmax(q kᵀ / sqrt(d)) v in float64, request by request, each over its whole cache at once."""
    q = np.asarray(q, dtype=np.float64)
    out = np.zeros_like(q)
    seq, d = q.shape[2], q.shape[3]
    for b, n in enumerate(np.asarray(cache_seqlens).tolist()):
        k, v = (_request_cache(np.asarray(x, dtype=np.float64), b, n, block_table) for x in (k_cache, v_cache))
        group = q.shape[1] // k.shape[0]
        k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (H, L_b, d)
        s = q[b] @ np.swapaxes(k, -1, -2) / np.sqrt(d)  # (H, seq, L_b)
        last = np.arange(seq) + (n - seq if causal_align == "bottom_right" else 0)  # row i sees keys 0..last[i]
        s = np.where(np.arange(n)[None, :] <= last[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        out[b] = (p / p.sum(axis=-1, keepdims=True)) @ v
    return out


def _request_cache(cache, b, n, block_table):
    """Request b's first n cached tokens, (kv_heads, n, d)."""
    if block_table is None:
        return cache[b, :, :n]
    pages = np.asarray(block_table)[b, : -(-n // cache.shape[1])]
    return np.swapaxes(cache[pages].reshape(-1, *cache.shape[2:])[:n], 0, 1)


def execute(launch, q, k_cache, v_cache, block_table=None, trace=False):
    """Walk every program of the launch's kernels; return (output, counted Memory)."""
    L = launch
    work = np.result_type(q.dtype, k_cache.dtype, np.float32)
    b, h, n, d, S = L.batch, L.heads, L.seq, L.head_dim, L.num_splits
    tensors = {"Q": q.astype(work), "K": k_cache.astype(work), "V": v_cache.astype(work),
               "cache_seqlens": np.array(L.seq_kv, dtype=np.int32),
               "O": np.zeros((b, h, n, d), work), "LSE": np.zeros((b, h, n), work)}
    if L.page_size is not None:
        tensors["block_table"] = np.asarray(block_table)
    if S > 1:  # partials: fp32 on the GPU; kept in the working precision here, counted as fp32
        tensors |= {"O_partial": np.zeros((S, b, h, n, d), work), "LSE_partial": np.zeros((S, b, h, n), work)}
    sizes = {"Q": L.itemsize, "K": L.itemsize, "V": L.itemsize, "O": L.out_itemsize, "cache_seqlens": INDEX_BYTES,
             "block_table": INDEX_BYTES}
    mem = Memory(tensors, {name: sizes.get(name, STATS_BYTES) for name in tensors}, trace)
    for batch, unit, split in product(range(b), range(L.units), range(S)):
        _program(mem, L, batch, unit, split)
    if S > 1:
        for batch, head, row in product(range(b), range(h), range(n)):
            _reduce(mem, L, batch, head, row)
    return tensors["O"], mem


def _program(mem, L, b, unit, split):
    """One program of the decode / split_kv kernel: query heads of `unit`, chunks of split `split`."""
    kernel, program = L.kernels[0], (b, unit, split)
    n_keys = int(mem.load(kernel, "cache_seqlens", b))  # read 1 int32: L_b
    first, end = L.split_chunks(b, split)
    if first == end:  # a short request's empty split: nothing more to do
        mem.step(kernel, program, (split, None), 0)
        return
    visible = n_keys if L.causal_align == "bottom_right" else min(n_keys, L.seq)  # K_b
    heads, kvh, Bc, P = L.query_heads(unit), L.kv_head(unit), L.block_kv, L.page_size
    q_i = mem.load(kernel, "Q", (b, slice(heads.start, heads.stop))).reshape(L.rows, -1)  # read G*seq*d
    row = np.arange(L.rows) % L.seq
    last = row + (n_keys - L.seq if L.causal_align == "bottom_right" else 0)  # row sees keys 0..last
    m_i = np.full(L.rows, -np.inf, q_i.dtype)  # running row max, on chip
    l_i = np.zeros(L.rows, q_i.dtype)  # running row sum of exp(s - m_i)
    acc = np.zeros_like(q_i)  # un-normalised O rows
    page = None
    for j in range(first, end):
        keys = np.arange(j * Bc, min((j + 1) * Bc, visible))
        if P is None:
            where = (b, kvh, slice(keys[0], keys[-1] + 1))
        elif Bc >= P:  # the chunk spans whole pages: read their Bc/P entries (fewer in the last chunk)
            pages = mem.load(kernel, "block_table", (b, slice(keys[0] // P, keys[-1] // P + 1)))  # read <= Bc/P
            where = (pages[keys // P - keys[0] // P], keys % P, kvh)
        else:  # P/Bc chunks share a page: its entry is read at the page's first chunk or the split's first
            if page is None or keys[0] % P == 0:
                page = int(mem.load(kernel, "block_table", (b, keys[0] // P)))  # read 1 int32
            where = (page, keys % P, kvh)
        k_j = mem.load(kernel, "K", where)  # read (keys in the chunk)*d: the real rows only
        v_j = mem.load(kernel, "V", where)  # read (keys in the chunk)*d
        s_ij = np.where(keys[None, :] <= last[:, None], q_i @ k_j.T / np.sqrt(L.head_dim), -np.inf)
        m_new = np.maximum(m_i, s_ij.max(axis=1))
        m_safe = np.where(np.isfinite(m_new), m_new, 0.0)  # a row whose keys here are all masked keeps -inf
        alpha = np.exp(m_i - m_safe)
        p_ij = np.exp(s_ij - m_safe[:, None])
        l_i = alpha * l_i + p_ij.sum(axis=1)
        acc = alpha[:, None] * acc + p_ij @ v_j
        m_i = m_new
        mem.step(kernel, program, (split, j), L.sram_bytes(kernel), m_i=m_i, l_i=l_i, rescale=alpha)
    seen = l_i > 0  # rows with no visible key in this split: partial O = 0, LSE = -inf
    o = np.divide(acc, l_i[:, None], out=np.zeros_like(acc), where=seen[:, None])
    lse = np.where(seen, m_i + np.log(np.where(seen, l_i, 1.0)), -np.inf)
    heads_of = (b, slice(heads.start, heads.stop))
    if L.num_splits == 1:
        mem.store(kernel, "O", heads_of, o.reshape(len(heads), L.seq, -1))  # write G*seq*d
        mem.store(kernel, "LSE", heads_of, lse.reshape(len(heads), L.seq))  # write G*seq (fp32)
    else:
        mem.store(kernel, "O_partial", (split, *heads_of), o.reshape(len(heads), L.seq, -1))  # write G*seq*d fp32
        mem.store(kernel, "LSE_partial", (split, *heads_of), lse.reshape(len(heads), L.seq))  # write G*seq fp32
    mem.step(kernel, program, (split, None), L.sram_bytes(kernel))


def _reduce(mem, L, b, h, i):
    """One program of the reduce kernel: query row i of head h of request b. Each split's O was divided by
    its own sum exp(LSE_s); weighted by exp(LSE_s - LSE) they add up to O, LSE = log sum_s exp(LSE_s)."""
    mem.load("reduce", "cache_seqlens", b)  # read 1 int32: how many splits request b filled
    filled = slice(0, int(L.active_splits[b]))
    lse_s = mem.load("reduce", "LSE_partial", (filled, b, h, i))  # read a_b (fp32)
    o_s = mem.load("reduce", "O_partial", (filled, b, h, i))  # read a_b*d (fp32)
    m = lse_s.max()  # finite: split 0 holds key 0, which every row sees
    w = np.exp(lse_s - m)  # 0 for a split where the row saw no key (LSE_s = -inf)
    row = (b, h, slice(i, i + 1))
    mem.store("reduce", "O", row, (w @ o_s / w.sum())[None])  # write d
    mem.store("reduce", "LSE", row, m + np.log(w.sum()))  # write 1 (fp32)
    mem.step("reduce", (b, h, i), (None, None), L.sram_bytes("reduce"), m_i=[m], l_i=[w.sum()], rescale=w)

"""Execute mode for Flash-Decoding (gpusim/decode.py): the arrays in a counted Memory, on which the split-KV
and reduce kernels run program by program, chunk by chunk (gpusim/passes/split_kv.py execute), so the
counts can be checked against the closed form. The float64 reference sits beside it with the same arguments.

Arrays: q (B, H, seq, d); a paged cache (num_pages, P, kv_heads, d) with block_table (B, max_pages), or a
contiguous cache (B, kv_heads, S, d); cache_seqlens, one length per request. The arithmetic runs in the
arrays' precision (at least float32); the launch's dtype only sets the bytes each element costs.
"""
import numpy as np

from .decode import check_block_table, launch_for_cache
from .shape import INDEX_BYTES
from .hardware import STATS_BYTES
from .execute import check_overflow, floats
from .memory import Memory


def decode_attention(q, k_cache, v_cache, *, cache_seqlens, block_table=None, causal_align="bottom_right",
                     num_splits=None, block_kv=None, grouped=True, dtype="fp16", gpu="H200", trace=False):
    """Run Flash-Decoding on NumPy arrays. Returns (output (B, H, seq, d), DecodeLaunch, counted Memory)."""
    q, k_cache, v_cache = (floats(name, x, finite=name == "q") for name, x in (("q", q), ("k_cache", k_cache),
                                                                               ("v_cache", v_cache)))
    launch = launch_for_cache(q.shape, k_cache.shape, v_cache.shape, cache_seqlens, paged=block_table is not None,
                              causal_align=causal_align, num_splits=num_splits, block_kv=block_kv, grouped=grouped,
                              dtype=dtype, gpu=gpu)
    if block_table is not None:
        check_block_table(block_table, launch.seq_kv, k_cache.shape[0], launch.page_size)
    out, mem = execute(launch, q, k_cache, v_cache, block_table, trace, ("k_cache", "v_cache"))
    return out, launch, mem


def decode_reference(q, k_cache, v_cache, *, cache_seqlens, block_table=None, causal_align="bottom_right",
                     return_lse=False):
    """softmax(q kᵀ / sqrt(d)) v in float64, request by request, each over its whole cache at once; with
    return_lse=True also the log-sum-exp of each row's scores (B, H, seq), natural log, as the kernels return it."""
    q = np.asarray(q, dtype=np.float64)
    out, lse = np.zeros_like(q), np.zeros(q.shape[:3])
    seq, d = q.shape[2], q.shape[3]
    for b, n in enumerate(np.asarray(cache_seqlens).tolist()):
        k, v = (_request_cache(np.asarray(x, dtype=np.float64), b, n, block_table) for x in (k_cache, v_cache))
        group = q.shape[1] // k.shape[0]
        k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (H, L_b, d)
        s = q[b] @ np.swapaxes(k, -1, -2) / np.sqrt(d)  # (H, seq, L_b)
        last = np.arange(seq) + (n - seq if causal_align == "bottom_right" else 0)  # row i sees keys 0..last[i]
        s = np.where(np.arange(n)[None, :] <= last[:, None], s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        p = np.exp(s - m)
        out[b] = (p / p.sum(axis=-1, keepdims=True)) @ v
        lse[b] = (m + np.log(p.sum(axis=-1, keepdims=True)))[..., 0]
    return (out, lse) if return_lse else out


def _request_cache(cache, b, n, block_table):
    """Request b's first n cached tokens, (kv_heads, n, d)."""
    if block_table is None:
        return cache[b, :, :n]
    pages = np.asarray(block_table)[b, : -(-n // cache.shape[1])]
    return np.swapaxes(cache[pages].reshape(-1, *cache.shape[2:])[:n], 0, 1)


def check_read(launch, caches, block_table, names=("k", "v")):
    """{name: the rows the requests read, (rows, d)}, or one line where a request's cached positions 0 .. L_b - 1
    hold a NaN or infinity. Past L_b a real cache holds whatever was there (a reused page, a longer request's
    tokens): no program reads it, so it is neither checked nor returned."""
    read = {}
    for name, cache in zip(names, caches):
        parts = [_request_cache(cache, b, n, block_table) for b, n in enumerate(launch.seq_kv)]
        for b, part in enumerate(parts):
            bad = np.argwhere(~np.isfinite(part))  # (kv_head, position, i)
            if bad.size:
                raise ValueError(f"{name} holds NaN or infinity at position {bad[0][1]:,} of request {b}, within its "
                                 f"cache_seqlens[{b}]={launch.seq_kv[b]:,} tokens")
        read[name] = np.concatenate([part.reshape(-1, cache.shape[-1]) for part in parts])
    return read


def execute(launch, q, k_cache, v_cache, block_table=None, trace=False, names=("k", "v")):
    """Walk every program of the launch's kernels; return (output, counted Memory). The caches are checked finite
    where the requests read them (check_read; names: theirs in its line); q is the caller's to check."""
    arrays = {"q": q} | check_read(launch, (k_cache, v_cache), block_table, names)  # as the programs read them
    L = launch
    work = np.result_type(q.dtype, k_cache.dtype, np.float32)
    check_overflow(work, arrays)
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
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is check_overflow's one line
        L.pass_.execute(mem, L)
    check_overflow(work, arrays, [tensors["O"]])
    return tensors["O"], mem

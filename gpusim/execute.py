"""Execute mode: a pass's tile walk (gpusim/passes/) run on NumPy arrays, every HBM access going
through a counted Memory. The float64 reference beside it takes the same arrays.

Arrays are shaped (B, H, N, d) as in torch's scaled_dot_product_attention; K and V may have fewer heads
(grouped-query attention). The arithmetic runs in the arrays' precision (at least float32); the modeled
`dtype` only sets how many bytes each element costs.
"""
import numpy as np

from .memory import Memory


def reference_attention(q, k, v, *, causal=False, causal_align="top_left"):
    """softmax(q kᵀ / sqrt(d)) v in float64, the whole N x N_kv matrix at once. causal: row r sees keys
    0..r (top_left, torch's is_causal) or 0..r + N_kv - N (bottom_right)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, N, N_kv)
    if causal:
        n, n_kv = s.shape[-2:]
        s = np.where(np.tri(n, n_kv, n_kv - n if causal_align == "bottom_right" else 0, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _shape(cfg, tensor):
    b, h, n, nk, d = cfg.batch, cfg.heads, cfg.seq, cfg.seq_kv, cfg.head_dim
    return {"O": (b, h, n, d), "S": (b, h, n, nk), "P": (b, h, n, nk)}.get(tensor, (b, h, n))


def execute(cfg, q, k, v, trace=False):
    """Run cfg.algo on q, k, v; return (output, counted Memory). HBM holds the tensors the algorithm's
    kernels move (the keys of its count)."""
    work = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    tensors = {"Q": q.astype(work), "K": k.astype(work), "V": v.astype(work)}
    for _, name in cfg.pass_.count(cfg):
        tensors.setdefault(name, np.zeros(_shape(cfg, name), work))
    mem = Memory(tensors, {name: cfg.tensor_bytes(name) for name in tensors}, trace)
    cfg.pass_.execute(mem, cfg)
    return tensors["O"], mem

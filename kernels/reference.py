"""The float64 reference the kernels are checked against: the whole N x N_kv score matrix at once."""
import torch


def reference_attention(q, k, v, *, causal=False):
    """softmax(q kᵀ / sqrt(d)) v in float64, on q's device. Shapes as the kernels take them: q (B, H, N, d),
    k and v (B, H_kv, N_kv, d); causal as torch's is_causal=True (row r sees keys 0..r, top-left aligned)."""
    if q.shape[1] % k.shape[1] or k.shape != v.shape:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k and v must match, and "
                         f"their heads divide q's")
    q, k, v = (x.double() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        hidden = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(diagonal=1)
        s = s.masked_fill(hidden, float("-inf"))
    return s.softmax(dim=-1) @ v

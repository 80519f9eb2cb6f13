"""FlashAttention-2's work partitioning inside a thread block (Dao 2023, Sec. 3.3): how the warps of one
thread block share a tile S_ij = Q_i K_jᵀ of Br x Bc scores.

- split-K ("sliced K", FlashAttention-1): every warp takes Bc / W of the keys for all Br rows, so each ends
  with a partial row max, row sum and partial O_i (Br x d, fp32) that must be combined: written to shared
  memory, a barrier, read back and added (with the online softmax's rescaling), and a barrier before the
  buffer is reused.
- split-Q (FlashAttention-2): every warp takes Br / W of the query rows and all the keys, so its rows' m_i,
  l_i and O_i are its own: nothing is exchanged. Each warp reads all of K_j and V_j from shared memory (as
  in split-K each warp reads all of Q_i), and one barrier guards the K/V buffer.

Both run here on NumPy arrays, one warp after the other, counting every byte each warp reads from or writes
to shared memory and every barrier, for the tile gpusim picks; both give the same m_i, l_i and O_i.
"""
from dataclasses import dataclass, field

import numpy as np

import gpusim

ACC_BYTES = 4  # partial O and the statistics are fp32


@dataclass
class Shared:
    """Shared-memory traffic of one tile: bytes read and written by the warps, and barriers."""
    read_bytes: int = 0
    write_bytes: int = 0
    barriers: int = 0
    exchanged_bytes: int = 0  # the part that is partial results passed between warps
    per_warp: list = field(default_factory=list)  # what each warp computed, in words


def split_k(q_i, k_j, v_j, m_i, l_i, acc, warps, itemsize):
    """One tile, the keys split over the warps; returns (m_new, l_new, acc_new) and the Shared count."""
    smem, (br, d), bc = Shared(), q_i.shape, k_j.shape[0]
    parts = []
    for w, keys in enumerate(np.array_split(np.arange(bc), warps)):
        smem.read_bytes += (br + 2 * len(keys)) * d * itemsize  # all of Q_i; its slice of K_j and V_j
        s = q_i @ k_j[keys].T / np.sqrt(d)
        m_w = s.max(axis=1)
        p = np.exp(s - m_w[:, None])
        parts.append((m_w, p.sum(axis=1), p @ v_j[keys]))
        smem.write_bytes += br * (d + 2) * ACC_BYTES  # its partial O (Br x d) and row max and sum, fp32
        smem.per_warp.append(f"warp {w}: keys {keys[0]}..{keys[-1]} of every row 0..{br - 1}")
    smem.barriers += 1  # every partial written before any is read
    smem.read_bytes += warps * br * (d + 2) * ACC_BYTES  # the combine reads every partial back
    smem.exchanged_bytes = 2 * warps * br * (d + 2) * ACC_BYTES
    m_new = np.maximum(m_i, np.max([m for m, _, _ in parts], axis=0))
    alpha = np.exp(m_i - m_new)
    l_new = alpha * l_i + sum(np.exp(m - m_new) * l for m, l, _ in parts)
    acc_new = alpha[:, None] * acc + sum(np.exp(m - m_new)[:, None] * o for m, _, o in parts)
    smem.barriers += 1  # the partial buffer and K_j, V_j free for the next tile
    return (m_new, l_new, acc_new), smem


def split_q(q_i, k_j, v_j, m_i, l_i, acc, warps, itemsize):
    """One tile, the query rows split over the warps; returns (m_new, l_new, acc_new) and the Shared count.
    Q_i's rows sit in each warp's registers from the first tile on, so only K_j and V_j are read here."""
    smem, (br, d), bc = Shared(), q_i.shape, k_j.shape[0]
    out = [np.empty_like(m_i), np.empty_like(l_i), np.empty_like(acc)]
    for w, rows in enumerate(np.array_split(np.arange(br), warps)):
        smem.read_bytes += 2 * bc * d * itemsize  # all of K_j and V_j
        s = q_i[rows] @ k_j.T / np.sqrt(d)
        m_new = np.maximum(m_i[rows], s.max(axis=1))
        alpha, p = np.exp(m_i[rows] - m_new), np.exp(s - m_new[:, None])
        out[0][rows], out[1][rows] = m_new, alpha * l_i[rows] + p.sum(axis=1)
        out[2][rows] = alpha[:, None] * acc[rows] + p @ v_j
        smem.per_warp.append(f"warp {w}: rows {rows[0]}..{rows[-1]}, every key 0..{bc - 1}")
    smem.barriers += 1  # K_j, V_j free for the next tile
    return tuple(out), smem


SCHEMES = {"split-K (FlashAttention-1's warp split)": split_k, "split-Q (FlashAttention-2's warp split)": split_q}


def one_tile(block_q, block_kv, head_dim, itemsize, warps, seed=0):
    """Both schemes on the same random tile, from a state that has already seen one tile:
    {scheme: ((m, l, acc), Shared)}."""
    rng = np.random.default_rng(seed)
    q_i, k_j, v_j = (rng.standard_normal((n, head_dim)) for n in (block_q, block_kv, block_kv))
    m_i, l_i, acc = rng.standard_normal(block_q), rng.random(block_q) + 1, rng.standard_normal((block_q, head_dim))
    return {name: fn(q_i, k_j, v_j, m_i, l_i, acc, warps, itemsize) for name, fn in SCHEMES.items()}


def partition_rows(gpu="A100-40GB", seq=4096, head_dim=64, warps=4, dtype="fp16"):
    """Per scheme, for gpusim's FlashAttention-2 tile of this shape (FA2 benchmark batch x heads): what a warp
    computes, shared-memory bytes and barriers per tile, and over the whole kernel beside the bytes the SMs
    request from memory."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    r = gpusim.simulate("flash2", seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=gpu, dtype=dtype)
    c = r.config
    tiles = c.tiling.tiles * c.bh
    rows = []
    for name, (_, smem) in one_tile(c.block_q, c.block_kv, head_dim, c.itemsize, warps).items():
        rows.append({"scheme": name, "tile": f"{c.block_q} x {c.block_kv}, {warps} warps",
                     "a warp computes": smem.per_warp[0].split(": ", 1)[1],
                     "shared memory per tile": smem.read_bytes + smem.write_bytes,
                     "of it, partials exchanged": smem.exchanged_bytes, "barriers per tile": smem.barriers,
                     "shared memory, whole kernel": (smem.read_bytes + smem.write_bytes) * tiles,
                     "bytes the SMs request (gpusim)": r.hbm_bytes})
    return rows

"""Training: what the course's backward-pass notebook computes. Tables are lists of dicts (numbers, not
formatted text); gpusim.backward counts, gpusim.train walks the tiles.

    >>> from gpusim_course.training import model
    >>> model.saved_rows(seqs=(1024, 8192), head_dim=64, heads=16)
    >>> model.backward_steps("flash2", seq=64, head_dim=16)
"""
import numpy as np

import gpusim
from gpusim import backward
from gpusim.hardware import STATS_BYTES

RECOMPUTES = {"flash2": {"dkdv": "S_ij, P_ij", "dq": "S_ij, P_ij, dP_ij"},  # per tile, on chip
              "flash1": {"flash1_bwd": "S_ij, P_ij"}}
# FlashAttention paper, Figure 2 (left): GPT-2 medium on an A100, fp16; HBM GB read + written, fwd + bwd.
FIGURE2 = dict(seq=1024, head_dim=64, heads=16, batch=64, dtype="fp16", gpu="A100-40GB")
FIGURE2_PUBLISHED_GB = {"standard": (40.3, 35.3), "flash": 4.4}  # the paper's versions disagree on standard


def saved_rows(seqs, head_dim, heads, batch=1, dtype="fp16"):
    """Why the forward keeps the LSE and not P: per layer, the bytes naive attention saves for its backward
    beyond Q, K, V (P, N² per head) against FlashAttention-2's (O and the LSE, N(d + 2) per head at fp16)."""
    rows = []
    for seq in seqs:
        naive, flash = (backward.saved_bytes(backward.config(algo, seq=seq, head_dim=head_dim, heads=heads,
                                                             batch=batch, dtype=dtype)) for algo in ("naive", "flash2"))
        rows.append({"seq": seq, "naive_P_bytes": naive["P"], "flash_O_bytes": flash["O"],
                     "flash_LSE_bytes": flash["LSE"], "ratio": naive["P"] / (flash["O"] + flash["LSE"])})
    return rows


def bytes_saved_per_layer(seq, head_dim, heads, batch=1, dtype="fp16"):
    """Exercise answer: what storing O and the LSE instead of P saves in one layer, in bytes."""
    row = saved_rows([seq], head_dim, heads, batch, dtype)[0]
    return row["naive_P_bytes"] - row["flash_O_bytes"] - row["flash_LSE_bytes"]


def backward_steps(algo="flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True, seed=0):
    """The backward's tiles in schedule order, executed on random arrays: kernel, program, tile (i, j),
    the query rows and keys the tile covers (None outside a tile), bytes loaded and stored by tensor, and
    what the step recomputes on chip ("" when nothing)."""
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal((1, 1, seq, head_dim)) for _ in range(4))
    run = gpusim.train(algo, q=q, k=k, v=v, do=do, backward_blocks=(block_q, block_kv), causal=causal, trace=True)
    cfg = run.backward_config
    steps = []
    for s in (s for s in run.trace if s.kernel in cfg.kernels):  # the backward's steps, after the forward's
        tiling = cfg.kv_tiling if s.kernel == "dkdv" else cfg.tiling
        i, j = s.tile
        if s.kernel == "ds":  # naive's ds walks whole rows: tile (row, pass)
            rows, keys = (i, i + 1), (0, cfg.tiling.keys_of(i // cfg.block_q))
        else:
            rows, keys = (None if i is None else tiling.q_rows(i)), (None if j is None else tiling.kv_rows(j))
        steps.append({"kernel": s.kernel, "program": s.program, "tile": s.tile, "loads": dict(s.loads),
                      "stores": dict(s.stores), "rows": rows, "keys": keys,
                      "recomputes": RECOMPUTES.get(algo, {}).get(s.kernel, "") if None not in s.tile else ""})
    return steps


def lse_recovers_p(seq=256, head_dim=64, seed=0):
    """Why one number per row is enough: P = softmax(S) row by row equals exp(S - LSE) with LSE = log sum
    exp(S), so the forward keeps the LSE (N floats per head) and the backward recomputes P from Q, K and it.
    Returns the bytes per head of P (fp16) and of the LSE (fp32), and the largest |P - exp(S - LSE)| in
    float64 (at most about one unit of float64 roundoff, 2**-52 ~ 2.2e-16)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((seq, head_dim)), rng.standard_normal((seq, head_dim))
    s = q @ k.T / np.sqrt(head_dim)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m) / np.exp(s - m).sum(axis=1, keepdims=True)  # the softmax naive attention stores
    lse = m + np.log(np.exp(s - m).sum(axis=1, keepdims=True))  # what FlashAttention stores instead
    return {"P bytes per head": seq * seq * gpusim.DTYPE_BYTES["fp16"], "LSE bytes per head": seq * STATS_BYTES,
            "max |P - exp(S - LSE)|": float(np.abs(p - np.exp(s - lse)).max())}


def dq_updates(seq, head_dim, block_q=128, block_kv=32, causal=False, dtype="fp16"):
    """Where dQ's updates go, per block of query rows of the dK/dV kernel (Bc rows): with fp32 atomic adds
    every K/V block (Br rows) that sees it adds τ dS_ij K_j into dQ_i: rows x d fp32 sent to the L2 each, as a
    reduction (an atomic add whose old value nobody reads compiles to RED: the L2's atomic units read, add and
    write the line; the SM reads nothing back); gpusim's flash2 instead writes each dQ row once from its own dQ
    kernel."""
    cfg = backward.config("flash2", seq=seq, head_dim=head_dim, block_q=block_q, block_kv=block_kv, causal=causal,
                          dtype=dtype)
    t = cfg.kv_tiling
    return [{"rows": t.q_rows(i), "atomic_adds": int(adds), "atomic_bytes": int(adds * n * head_dim * 4),
             "dq_kernel_write_bytes": int(n * head_dim * cfg.itemsize)}
            for i, n, adds in ((i, t.q_rows(i)[1] - t.q_rows(i)[0], t.kv_blocks_of(i)) for i in range(t.n_q_blocks))]


def dq_choice_rows(seq, head_dim, heads=1, batch=1, block_q=128, block_kv=32, causal=False, dtype="fp16",
                   gpu="H200"):
    """The two ways to produce dQ, side by side: gpusim's separate dQ kernel (what its dq kernel moves, and
    the S and dP it recomputes a second time: 4 d FLOPs per score) against FlashAttention-2's fp32 atomic
    adds from the dK/dV kernel (Bc x d fp32 sent to the L2 per tile, reduced there, plus zeroing the fp32 buffer
    and a pass that converts it to the dtype)."""
    cfg = backward.config("flash2", seq=seq, head_dim=head_dim, heads=heads, batch=batch, block_q=block_q,
                          block_kv=block_kv, causal=causal, dtype=dtype, gpu=gpu)
    kernel_bytes = sum(r + w for (k, _), (r, w) in backward.count(cfg).items() if k == "dq")
    adds = sum(r["atomic_bytes"] for r in dq_updates(seq, head_dim, block_q, block_kv, causal, dtype))
    buffer = seq * head_dim * STATS_BYTES  # the fp32 accumulator, per (batch, head)
    convert = buffer + seq * head_dim * cfg.itemsize  # read fp32, write the dtype
    return [{"dQ produced by": "a separate dQ pass (gpusim's and the project's dq kernel; Triton's tutorial: a second "
                               "loop of its one backward kernel)",
             "bytes for dQ": kernel_bytes, "extra matmul FLOPs": 4 * head_dim * cfg.tiling.tile_elements * cfg.bh,
             "same result every run": True},
            {"dQ produced by": "fp32 atomic adds in the dK/dV kernel (FlashAttention-2)",
             "bytes for dQ": cfg.bh * (adds + buffer + convert), "extra matmul FLOPs": 0,
             "same result every run": False}]


def model_memory_rows(seqs, layers=24, heads=16, head_dim=64, batch=8, dtype="fp16", gpu="A100-40GB"):
    """Attention's training memory across a model's layers (gpusim.backward.model_memory) for naive attention
    and FlashAttention-2 at each length: saved per model and the peak, and whether it fits the GPU."""
    rows = []
    for seq in seqs:
        row = {"seq": seq}
        for algo in ("naive", "flash2"):
            m = backward.model_memory(algo, layers=layers, heads=heads, head_dim=head_dim, batch=batch, seq=seq,
                                      dtype=dtype, gpu=gpu)
            row |= {f"{algo}_saved_bytes": m["saved_per_model"], f"{algo}_peak_bytes": m["peak_bytes"],
                    f"{algo}_fits": m["fits"]}
        rows.append(row)
    return rows


def longest_trainable(layers=24, heads=16, head_dim=64, batch=8, dtype="fp16", gpu="A100-40GB"):
    """{algo: the longest sequence whose attention training memory fits the GPU}: where naive runs out."""
    return {algo: backward.max_trainable_seq(algo, layers=layers, heads=heads, head_dim=head_dim, batch=batch,
                                             dtype=dtype, gpu=gpu) for algo in ("naive", "flash2")}


def backward_flops_ratio(seq=1024, head_dim=64, causal=False):
    """Exercise answer: backward matmul FLOPs over the forward's, by convention (2.5) and as each
    algorithm's kernels run them (naive 2, flash1 2.5, flash2 3.5: its dQ kernel recomputes S and dP)."""
    out = {"convention": backward.nominal_flops(1, 1, seq, head_dim, causal) / (4 * seq * seq * head_dim /
                                                                              (2 if causal else 1))}
    for algo in backward.ALGOS:
        cfg = backward.config(algo, seq=seq, head_dim=head_dim, causal=causal)
        fwd = gpusim.simulate(algo, seq=seq, head_dim=head_dim, causal=causal, block_q=cfg.block_q,
                              block_kv=cfg.block_kv).flops_matmul  # the same tiles: the same partial tiles
        out[algo] = sum(mm for mm, _, _ in backward.flops(cfg).values()) / fwd
    return out


def figure2_left(causal=False):
    """gpusim's numbers for the FlashAttention paper's Figure 2 (left), GB read + written in fp16, per
    algorithm: forward and backward as the SMs request them (gpusim's counts), and what reaches DRAM through
    gpusim's L2 model (gpusim/l2.py), fwd + bwd: the training step's own, where the backward's once counted its
    first touches alone, as if the L2 caught every re-read that the forward's model sends to DRAM."""
    rows = []
    for algo in backward.ALGOS:
        cfg = backward.config(algo, causal=causal, **FIGURE2)
        tiles = dict(block_q=cfg.block_q, block_kv=cfg.block_kv)
        fwd = gpusim.simulate(algo, causal=causal, **tiles, **FIGURE2)
        step = gpusim.simulate(algo, causal=causal, backward=True, backward_blocks=tuple(tiles.values()), **tiles,
                               **FIGURE2)
        bwd = sum(r + w for r, w in backward.count(cfg).values())
        rows.append({"algo": algo, "fwd_GB": fwd.hbm_bytes / 1e9, "bwd_GB": bwd / 1e9,
                     "total_GB": (fwd.hbm_bytes + bwd) / 1e9,
                     "dram_GB": (step.dram_read_bytes + step.dram_write_bytes) / 1e9})
    return rows

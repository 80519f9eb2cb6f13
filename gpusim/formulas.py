"""Count mode: each algorithm's HBM bytes in closed form, summed over Q blocks (no tile walk), so one
configuration up to N = 1,048,576 counts in well under a millisecond. Tests check every entry equals
what execute mode counts while it walks the schedule.

Per (batch, head), with e bytes per element, n_i rows in Q block i, J_i K/V blocks visited by it and
k_i the K/V rows those blocks hold (Tc and N_kv when not causal), the comments give each count.
"""
from .hardware import STATS_BYTES


def count(cfg):
    """{(kernel, tensor): (read_bytes, write_bytes)} over all batches and heads."""
    t, d, e, f = cfg.tiling, cfg.head_dim, cfg.itemsize, STATS_BYTES
    n, j, k = t.rows_per_q_block, t.kv_blocks_per_q_block, t.keys_per_q_block
    row_visits = int((j * n).sum())  # sum_i J_i n_i: query rows times K/V blocks they meet
    keys_read = int(k.sum())  # sum_i k_i: K (or V) rows loaded, once per Q block
    if cfg.algo == "naive":
        tiles = t.tile_elements  # S entries in the visited tiles (N * N_kv when not causal)
        passes = 1 if cfg.softmax_fits else 3
        per_head = {
            ("qk", "Q"): (row_visits * d * e, 0),  # each S tile reads its Br*d rows of Q
            ("qk", "K"): (keys_read * d * e, 0),  # and its Bc*d rows of K
            ("qk", "S"): (0, tiles * e),  # write N*N_kv
            ("softmax", "S"): (passes * tiles * e, 0),  # read N*N_kv once, or 3 times when a row overflows SRAM
            ("softmax", "P"): (0, tiles * e),  # write N*N_kv
            ("pv", "P"): (tiles * e, 0),  # read N*N_kv
            ("pv", "V"): (keys_read * d * e, 0),  # each O tile reads V for its visited blocks
            ("pv", "O"): (0, cfg.seq * d * cfg.tensor_bytes("O")),  # write N*d
        }
    elif cfg.algo == "flash1":
        o = cfg.tensor_bytes("O")
        per_head = {
            ("flash1", "K"): (int(k.max()) * d * e, 0),  # each K_j once (outer loop)
            ("flash1", "V"): (int(k.max()) * d * e, 0),
            ("flash1", "Q"): (row_visits * d * e, 0),  # Q_i once per inner step
            ("flash1", "O"): (row_visits * d * o, cfg.seq * d * o + row_visits * d * o),  # init, then RMW
            ("flash1", "l"): (row_visits * f, cfg.seq * f + row_visits * f),
            ("flash1", "m"): (row_visits * f, cfg.seq * f + row_visits * f),
        }
    else:  # flash2, hopper
        kernel, o = cfg.algo, cfg.tensor_bytes("O")
        per_head = {
            (kernel, "Q"): (cfg.seq * d * e, 0),  # read N*d once
            (kernel, "K"): (keys_read * d * e, 0),  # K_j once per Q block: Tr*N_kv*d when not causal
            (kernel, "V"): (keys_read * d * e, 0),
            (kernel, "O"): (0, cfg.seq * d * o),  # write N*d once
            (kernel, "LSE"): (0, cfg.seq * f),  # write N
        }
    return {key: (r * cfg.bh, w * cfg.bh) for key, (r, w) in per_head.items()}


def theorem2(seq, head_dim, sram_elements):
    """The FlashAttention paper's Theorem 2, in elements moved: standard attention Θ(Nd + N²),
    FlashAttention Θ(N²d²/M). Orders of growth, constants 1: for overlaying on simulated counts."""
    return {"naive": seq * head_dim + seq**2, "flash": seq**2 * head_dim**2 / sram_elements}

"""FlashAttention-1's backward (Algorithm 4 of the FlashAttention paper), line by line, one kernel: K/V
blocks outer, Q blocks inner. One program per (batch, K/V head) holds K_j, V_j and their gradients while
every Q block that sees them streams past; every inner step reads Q_i, O_i, dO_i, dQ_i, l_i, m_i and writes
dQ_i back. dQ is an fp32 accumulator in HBM (read-modify-written Tc times, as the forward's O is), so O, dO
and dQ are fp32. dQ, dK, dV are zeroed in HBM first (line 5); K/V blocks no query sees are skipped. The
project has no Triton kernel of it: it launches as the forward flash1 does (gpusim/passes/flash1.py), one
buffer per tile, each step's stores landing before the next step reads dQ_i again.
"""
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES
from ..tiling import uniform_work
from .backward_base import BackwardPass, group_heads, spilled, sums
from .common import masked_scores, padded, pow2_floor, warps

# Non-matmul FLOPs per score: scale, subtract m, exp, subtract D, multiply by P, multiply by 1/l_i.
PER_SCORE = 6
# Per query row per step: 1/l_i, and per element of the row D_i = rowsum(dO_i ∘ O_i) again (2) and
# dQ_i + τ (dS K)_i (2).
PER_ROW_STEP, PER_ROW_ELEMENT_STEP = 1, 4


class Flash1Backward(BackwardPass):
    """Algorithm 4: one kernel, dQ read-modify-written in HBM every step."""
    name, algo = "flash1_backward", "flash1"
    KERNELS = ("flash1_bwd",)
    SAVED = ("O", "l", "m")
    TENSOR_BYTES = {"O": STATS_BYTES, "dO": STATS_BYTES, "dQ": STATS_BYTES}  # the forward's fp32 O, its gradient,
    #                                                                          and the fp32 dQ accumulator
    L2_REUSE = {"flash1_bwd": ("own", ())}  # BackwardPass.dram_reads
    FENCED = ("flash1_bwd",)  # dQ_i is written back every step and read again at the next K/V block
    STEP_TENSORS = {"flash1_bwd": ("Q", "K", "V", "O", "dO", "dQ", "l", "m")}
    SHARED_BY = {"flash1_bwd": "kv_head"}  # re-reads of the group's Q, O, dO, dQ, l, m

    def start_blocks(self, gpu, head_dim, dtype):
        """The paper's Bc = ceil(M / 4d), Br = min(Bc, d) for an SRAM of M elements."""
        big = self.paper_bc(gpu, head_dim, dtype)
        return pow2_floor(min(big, head_dim)), big

    def sram_bytes(self, cfg, kernel, rows, keys):
        """K_j, V_j; Q_i, O_i, dO_i, dQ_i, l_i, m_i."""
        d, e, f, o = cfg.head_dim, cfg.itemsize, STATS_BYTES, cfg.tensor_bytes("O")
        return 2 * keys * d * e + rows * d * (e + 2 * o + STATS_BYTES) + 2 * rows * f

    def tables(self, cfg):
        d, e, o, f, dq = cfg.head_dim, cfg.itemsize, cfg.tensor_bytes("O"), STATS_BYTES, cfg.tensor_bytes("dQ")
        n, nk, k = cfg.seq, cfg.seq_kv, "flash1_bwd"
        s = sums(cfg.tiling)
        rv, seen = s["row_visits"], s["kv_rows_seen"]
        per_q = {(k, "Q"): (rv * d * e, 0), (k, "O"): (rv * d * o, 0), (k, "dO"): (rv * d * o, 0),  # line 10
                 (k, "dQ"): (rv * d * dq, n * d * dq + rv * d * dq),  # line 5: zero; line 10: read, line 21: write
                 (k, "l"): (rv * f, 0), (k, "m"): (rv * f, 0)}
        per_kv = {(k, "K"): (seen * d * e, 0), (k, "V"): (seen * d * e, 0),  # line 7: each K_j, V_j once
                  (k, "dK"): (0, nk * d * e + seen * d * e), (k, "dV"): (0, nk * d * e + seen * d * e)}  # 5, 24
        return per_q, per_kv

    def flop_tables(self, cfg):
        """5 matmuls per score: S recomputed, then dV, dP, dQ, dK."""
        d, nk, te = cfg.head_dim, cfg.seq_kv, cfg.tiling.tile_elements
        rv = sums(cfg.tiling)["row_visits"]
        per_row = PER_ROW_STEP + PER_ROW_ELEMENT_STEP * d
        return {"flash1_bwd": (10 * d * te, PER_SCORE * te + per_row * rv, te)}, {"flash1_bwd": (0, nk * d, 0)}

    def work(self, cfg, kernel):
        """One program per (batch, K/V head) walks every visited tile of each query head of its group."""
        return uniform_work(cfg.batch * cfg.kv_heads, cfg.group * cfg.tiling.tiles)

    def launch(self, cfg, kernel):
        return warps(cfg.block_q), 1

    def register_tiles(self, cfg, kernel):
        """dK_j and dV_j accumulated in fp32 (Bc x d each), and two fp32 score tiles live at once (P_ij, then
        dP_ij and dS_ij). The paper's tiles (Bc = M / 4d) hold more than a block's registers: they spill."""
        tiles = 8 * cfg.block_kv * padded(cfg.head_dim) + 8 * cfg.block_q * cfg.block_kv
        return spilled(cfg, tiles, self.launch(cfg, kernel)[0])

    def execute(self, mem, cfg):
        """Algorithm 4 of the FlashAttention paper, line by line: one program per (batch, K/V head), K/V blocks
        outer, the group's query heads and their Q blocks inner; dQ_i read-modify-written in HBM every step."""
        t, scale, K = cfg.tiling, cfg.head_dim**-0.5, "flash1_bwd"
        for b, hk in product(range(cfg.batch), range(cfg.kv_heads)):
            for h in group_heads(cfg, hk):
                mem.store(K, "dQ", (b, h), 0.0)  # line 5: write N*d (fp32)
            mem.store(K, "dK", (b, hk), 0.0)  # line 5: write N_kv*d
            mem.store(K, "dV", (b, hk), 0.0)  # line 5: write N_kv*d
            mem.step(K, (b, hk), (None, None), 0)
            for j in range(t.n_kv_blocks):  # line 6
                q_blocks = t.q_blocks(j)
                if not q_blocks:  # causal: no query sees these keys
                    continue
                c = slice(*t.kv_rows(j))
                k_j = mem.load(K, "K", (b, hk, c))  # line 7: read Bc*d
                v_j = mem.load(K, "V", (b, hk, c))  # line 7: read Bc*d
                dk_j, dv_j = np.zeros_like(k_j), np.zeros_like(v_j)  # line 8, on chip
                for h, i in product(group_heads(cfg, hk), q_blocks):  # line 9
                    r = slice(*t.q_rows(i))
                    # line 10: read Br*d each
                    q_i, o_i, do_i, dq_i = (mem.load(K, x, (b, h, r)) for x in ("Q", "O", "dO", "dQ"))
                    l_i, m_i = mem.load(K, "l", (b, h, r)), mem.load(K, "m", (b, h, r))  # line 10: read Br each
                    p_ij = np.exp(masked_scores(q_i, k_j, scale, t.keep(r, c)) - m_i[:, None]) / l_i[:, None]  # 11-13
                    dv_j += p_ij.T @ do_i  # line 16
                    dp_ij = do_i @ v_j.T  # line 17
                    ds_ij = p_ij * (dp_ij - (do_i * o_i).sum(axis=1)[:, None])  # lines 19-20: D_i, dS_ij
                    mem.store(K, "dQ", (b, h, r), dq_i + scale * ds_ij @ k_j)  # line 21: write Br*d (fp32)
                    dk_j += scale * ds_ij.T @ q_i  # line 22
                    mem.step(K, (b, hk), (i, j), cfg.sram_bytes(K))
                mem.store(K, "dK", (b, hk, c), dk_j)  # line 24: write Bc*d
                mem.store(K, "dV", (b, hk, c), dv_j)  # line 24: write Bc*d
                mem.step(K, (b, hk), (None, j), cfg.sram_bytes(K))


FLASH1_BACKWARD = Flash1Backward()

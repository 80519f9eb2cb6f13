"""FlashAttention-1's forward pass (Dao et al., 2022, Algorithm 1), line by line: one thread block per
(batch, head). K/V blocks are the outer loop, Q blocks the inner one, so every step reads O_i, l_i, m_i
back from HBM and writes them again: the traffic FlashAttention-2's swapped loops remove. O is an fp32
accumulator in HBM.
"""
import math
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES, check_dtype
from ..tiling import uniform_work
from .base import Pass
from .common import (compiled_issue, estimated_issue, local_bytes, masked_scores, per_step_spill, pow2_floor,
                     qkvo_bytes, shrink_to_fit, spill_traffic, warps)

# Per score, as kernels/flash1.py runs it: scale, the mask (key <= row, key < N_kv, select: every tile is
# masked), row max, subtract, exp (a multiply by log2(e) and an exp2), row sum, P converted to the dtype.
# Per row per step (Algorithm 1, lines 11-12): m_new, two exp(a - b), l_new, the two coefficients
# l_i e^(m_i - m_new) / l_new and e^(m~ - m_new) / l_new, then 3 FLOPs per element of O_i.
PER_SCORE = 10
PER_ROW_STEP = 1 + 4 + 3 + 3
PER_O_ELEMENT_STEP = 3


def _staged(rows, keys, d, e):  # Q_i, K_j, V_j, and O_i (fp32), l_i, m_i read back from HBM
    return rows * d * e + 2 * keys * d * e + rows * d * STATS_BYTES + 2 * rows * STATS_BYTES


class Flash1(Pass):
    """FlashAttention-1's forward: one program per head, O, l and m read back and written every step."""
    name = "flash1"
    KERNELS = ("flash1",)
    TENSOR_BYTES = {"O": STATS_BYTES}  # O is read-modify-written Tc times: an fp32 accumulator in HBM
    L2_REUSE = {"flash1": ("rmw_per_head", ("Q", "O", "l", "m"))}
    STEP_TENSORS = {"flash1": ("Q", "K", "V", "O", "l", "m")}  # a step: Q_i, O_i, l_i, m_i in and out (K_j, V_j per j)
    FENCED = ("flash1",)  # a step's stores are fenced (MEMBAR in the compiled loop) before O_i, l_i, m_i are read again
    # Its step issues at the rate of one warp per scheduler (gpusim/cost.py's ISSUE_HIDING) however many warps an SM
    # holds: measured per step (benchmarks/flash1_steps.py, bench.json's d = 64 rows, the half the time model's
    # constants were fitted on), 4 warps with one block per SM and 8 with two issue alike, where the per-warp line
    # would double the rate. Why is not established (a sub-unit's throughput, shared-memory instructions say,
    # would do it). The held-out d = 128 rows (8 warps, one block) are reported in docs/perf.md.
    FLAT_ISSUE = ("flash1",)

    def paper_blocks(self, gpu, head_dim, dtype):
        """The paper's Bc = ceil(M / 4d), Br = min(Bc, d) for an SRAM of M elements; powers of two, halved
        until they fit."""
        e = check_dtype(dtype)
        big = pow2_floor(math.ceil(gpu.sram_bytes_per_block // e / (4 * head_dim)))
        return shrink_to_fit(pow2_floor(min(big, head_dim)), big,
                             lambda br, bc: _staged(br, bc, head_dim, e), gpu.sram_bytes_per_block)

    def sram_bytes(self, cfg, kernel, rows, keys):
        """The paper's budget: K_j, V_j, Q_i and O_i (4 tiles of d), plus l_i and m_i."""
        return _staged(rows, keys, cfg.head_dim, cfg.itemsize)

    def programs(self, cfg, kernel):
        return cfg.bh

    def work(self, cfg, kernel):
        """One program per (batch, head) walks every visited tile: sum_i J_i steps."""
        return uniform_work(cfg.bh, cfg.tiling.tiles)

    def issue(self, cfg, kernel, res, other_flops, exps, steps, programs):
        """A step is the inner loop (the last by address: inside the K/V loop, after the initialising loop)."""
        if not res.loops:
            return estimated_issue(res, other_flops, exps, steps)
        return compiled_issue(res, [(len(res.loops) - 1, 1.0)])

    def spill(self, cfg, kernel, res, steps, programs):
        """Spill traffic of kernels/flash1.py's three loops, in address order: the initialising loop (T_r
        iterations a program), the K/V loop (the K/V blocks the last Q block sees, J_{T_r - 1}) and, nested in
        it, the Q loop (the steps: sum_i J_i a program); the K/V loop's own bytes are its range's less the Q
        loop's. A compile of another shape is taken as the base pass's loops in turn."""
        if len(res.loops) != 3:
            return per_step_spill(res, steps, programs)
        t = cfg.tiling
        runs = [(local_bytes(res, 0), programs * t.n_q_blocks),
                (local_bytes(res, 1, less=(2,)), programs * t.kv_blocks_of(t.n_q_blocks - 1)),
                (local_bytes(res, 2), steps), (local_bytes(res, less=(0, 1)), programs)]
        return spill_traffic(res, runs)

    def register_tiles(self, cfg, kernel):
        """S_ij in fp32 (P_ij takes its registers), O_i read back and P_ij V_j in fp32, and Q_i."""
        return 4 * cfg.block_q * cfg.block_kv + (8 + cfg.itemsize) * cfg.block_q * cfg.head_dim

    def peak_bytes(self, cfg):
        """Q, K, V, the fp32 O, l and m."""
        return qkvo_bytes(cfg) + 2 * cfg.bh * cfg.seq * STATS_BYTES

    def count(self, cfg):
        t, d, e, f, o = cfg.tiling, cfg.head_dim, cfg.itemsize, STATS_BYTES, cfg.tensor_bytes("O")
        rv = t.row_visits  # query rows times the K/V blocks they meet
        per_head = {
            ("flash1", "K"): (t.max_keys * d * e, 0),  # each K_j once (outer loop)
            ("flash1", "V"): (t.max_keys * d * e, 0),
            ("flash1", "Q"): (rv * d * e, 0),  # Q_i once per inner step
            ("flash1", "O"): (rv * d * o, cfg.seq * d * o + rv * d * o),  # init, then read-modify-write
            ("flash1", "l"): (rv * f, cfg.seq * f + rv * f),
            ("flash1", "m"): (rv * f, cfg.seq * f + rv * f),
        }
        return {key: (r * cfg.bh, w * cfg.bh) for key, (r, w) in per_head.items()}

    def flops(self, cfg):
        """exp(S - m~) per score; exp(m_i - m_new), exp(m~ - m_new) per row and step."""
        t, d = cfg.tiling, cfg.head_dim
        tile_el, rv = t.tile_elements, t.row_visits
        other = PER_SCORE * tile_el + (PER_ROW_STEP + PER_O_ELEMENT_STEP * d) * rv
        per_head = (4 * d * tile_el, other, tile_el + 2 * rv)
        return {"flash1": tuple(x * cfg.bh for x in per_head)}

    def launch(self, cfg, kernel):
        """One buffer per tile: each step's loads wait for the last step's stores (barriers), no pipelining."""
        return warps(cfg.block_q), 1

    def execute(self, mem, cfg):
        """Algorithm 1 of the FlashAttention paper, line by line, on the counted memory."""
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
                    s_ij = masked_scores(q_i, k_j, scale, t.keep(r, c))  # line 9
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


FLASH1 = Flash1()

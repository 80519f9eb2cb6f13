"""FlashAttention-2's forward pass (Dao, 2023): one thread block per (batch, head, Q block); K/V blocks in
the inner loop; O rescaled once at the end; O and the log-sum-exp written once.

Per (batch, head): Q read once; K and V once per Q block (k_i rows for Q block i: Tr * N_kv when not
causal); O (N*d) and LSE (N) written once. No N x N matrix in HBM.
"""
import math
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES, check_dtype
from ..tiling import ramp_work
from .base import Pass
from .common import (compiled_issue, estimated_issue, local_bytes, masked_scores, padded, per_step_spill,
                     pipeline_stages, pow2_floor, qkvo_bytes, shrink_to_fit, spill_traffic, warps)

# Non-matmul operations, as kernels/flash2.py executes them. Per element of S computed: scale, row max,
# subtract, exp (a multiply by log2(e) and an exp2), row sum, and P converted to the dtype for the second
# matmul: 7, one of them on the special function units. Per element of a masked tile (the causal diagonal, a
# ragged last block): key <= row, and with key < N_kv, select: 3 more. Per query row each time it meets a
# K/V block: m_new, alpha = exp(m_i - m_new), l_i = alpha l_i + rowsum; O_i is multiplied by alpha (1 per
# element). Per row at the end: LSE = m_i + log(l_i), and d divisions O_i / l_i.
PER_SCORE = 7
PER_MASKED_SCORE = 3
PER_ROW_STEP = 1 + 2 + 2
PER_O_ELEMENT_STEP = 1
PER_ROW_END = 2


def _staged(rows, keys, d, e, kv_buffers):
    return rows * d * e + kv_buffers * 2 * keys * d * e  # Q_i, and K_j, V_j in each buffer


class Flash2(Pass):
    """FlashAttention-2's forward: one program per Q block, K/V blocks streamed past it."""
    KERNELS = ("flash2",)
    name = "flash2"
    L2_REUSE = {"flash2": ("kv_per_q_block", ("K", "V"))}
    STEP_TENSORS = {"flash2": ("K", "V")}  # loaded every step of the K/V loop; Q_i before it, O_i and LSE after
    # One program per SM issues its loop at the full rate on tiles of 64 rows or more, 4 or 8 warps: measured, the loop
    # without its loads (benchmarks/overlap.py) takes its matmuls plus its instructions at one a clock per scheduler
    # 0.97-1.03x at d = 128 on 4 warps (run 103, results/h200/overlap_d128.json; run 57's overlap.json, d = 64: 0.92 and
    # 0.98x on 64 x 64 and 128 x 64, 0.66-0.79x on the 32-key tiles), 1.01-1.27x on 8 (runs 103 and 113, overlap_d64.json:
    # its two warps per scheduler overlap some of one's matmuls with the other's instructions). 32-row tiles on 4 warps
    # take 1.7-1.9x that sum (run 113) and keep ISSUE_HIDING's line (0.84-0.92x).
    LONE_FULL_ISSUE = ("flash2",)
    # Its Q tile's load and its O tile's store, outside the loop, move at the rate one program copies (cost.own_copy):
    # results/h200/program_start.json (run 118), short programs wave after wave at four tiles per head dim
    OWN_COPY = ("flash2",)
    KV_BUFFERS = 1  # K_j, V_j buffers the SRAM model counts (software pipelining adds its own: stage_bytes)

    def paper_blocks(self, gpu, head_dim, dtype):
        """gpusim's adaptation of the FlashAttention paper's rule (Algorithm 1: Bc = ceil(M / 4d), Br = min(Bc, d)) to
        FlashAttention-2's loop order, Q blocks outer, which no paper gives: Br = ceil(M / 4d) for an SRAM of M
        elements, Bc = min(Br, d), Br at most 128 (its fp32 S_ij and O_i live in registers); powers of two, halved
        until they fit."""
        e = check_dtype(dtype)
        big = pow2_floor(math.ceil(gpu.sram_bytes_per_block // e / (4 * head_dim)))
        small = pow2_floor(min(big, head_dim))
        return shrink_to_fit(min(big, 128), min(small, 128),
                             lambda br, bc: _staged(br, bc, head_dim, e, self.KV_BUFFERS), gpu.sram_bytes_per_block)

    def sram_bytes(self, cfg, kernel, rows, keys):
        """Q_i (kept for the whole inner loop), K_j, V_j in KV_BUFFERS buffers. The fp32 S_ij and O_i live in
        registers."""
        return _staged(rows, keys, cfg.head_dim, cfg.itemsize, self.KV_BUFFERS)

    def programs(self, cfg, kernel):
        return cfg.bh * cfg.tiling.n_q_blocks

    def issue(self, cfg, kernel, res, other_flops, exps, steps, programs):
        """Instructions per step: the compiled kernel's unmasked loop (the first) and masked loop (the last), in
        the share of steps each runs; or estimated from the operations counted."""
        if not res.loops:
            return estimated_issue(res, other_flops, exps, steps)
        t = cfg.tiling
        whole = t.unmasked_elements / t.tile_elements if t.tile_elements else 1.0
        return compiled_issue(res, [(0, whole), (len(res.loops) - 1, 1 - whole)])

    def spill(self, cfg, kernel, res, steps, programs):
        """Spill traffic of kernels/flash2.py's two K/V loops: the first runs each Q block's unmasked blocks
        (the tiling's unmasked tiles, over every head), the last the rest (the diagonal, a ragged last block);
        the code outside them once per program. Not a clean map: Triton's software pipeline peels iterations
        out of a loop (up to num_stages - 1), whose code is outside it; here every step counts the loop's bytes
        and the peeled code counts once more, with the rest outside the loops (over by at most that code's
        bytes per program). A compile of another shape is taken as the base pass's loops in turn."""
        if len(res.loops) != 2:
            return per_step_spill(res, steps, programs)
        unmasked = cfg.bh * cfg.tiling.unmasked_tiles
        runs = [(local_bytes(res, 0), unmasked), (local_bytes(res, 1), steps - unmasked),
                (local_bytes(res, less=(0, 1)), programs)]
        return spill_traffic(res, runs)

    def work(self, cfg, kernel):
        """Q block i does J_i steps; the grid (Tr, B*H) launches the Q blocks of a head in order."""
        return ramp_work(cfg.tiling, cfg.bh)

    def stage_bytes(self, cfg, kernel):
        """One more pipeline stage holds another K_j and V_j (d rounded up to a power of two, as Triton tiles it)."""
        return 2 * cfg.block_kv * padded(cfg.head_dim) * cfg.itemsize

    def register_tiles(self, cfg, kernel):
        """Bytes a block keeps in registers: S_ij in fp32 and as P_ij in the dtype, the fp32 accumulator O_i, and
        Q_i (the first matmul's A operand)."""
        return cfg.block_q * cfg.block_kv * (4 + cfg.itemsize) + (4 + cfg.itemsize) * cfg.block_q * cfg.head_dim

    def peak_bytes(self, cfg):
        """HBM allocated at once: Q, K, V, O and the LSE."""
        return qkvo_bytes(cfg) + cfg.bh * cfg.seq * STATS_BYTES

    def count(self, cfg):
        """{(kernel, tensor): (read_bytes, write_bytes)} over all batches and heads."""
        kernel = self.KERNELS[0]
        t, d, e, o = cfg.tiling, cfg.head_dim, cfg.itemsize, cfg.tensor_bytes("O")
        per_head = {
            (kernel, "Q"): (cfg.seq * d * e, 0),  # read N*d once
            (kernel, "K"): (t.keys_read * d * e, 0),  # K_j once per Q block: Tr*N_kv*d when not causal
            (kernel, "V"): (t.keys_read * d * e, 0),
            (kernel, "O"): (0, cfg.seq * d * o),  # write N*d once
            (kernel, "LSE"): (0, cfg.seq * STATS_BYTES),  # write N
        }
        return {key: (r * cfg.bh, w * cfg.bh) for key, (r, w) in per_head.items()}

    def flops(self, cfg):
        """{kernel: (matmul_flops, other_flops, exps)}: exp(S - m_new) per score, alpha per row and step,
        log(l_i) per row. Partial causal tiles are computed whole, fully masked ones skipped."""
        t, d = cfg.tiling, cfg.head_dim
        tile_el, row_visits = t.tile_elements, t.row_visits
        other = (PER_SCORE * tile_el + PER_MASKED_SCORE * (tile_el - t.unmasked_elements) +
                 (PER_ROW_STEP + PER_O_ELEMENT_STEP * d) * row_visits + (PER_ROW_END + d) * cfg.seq)
        per_head = (4 * d * tile_el, other, tile_el + row_visits + cfg.seq)
        return {self.KERNELS[0]: tuple(x * cfg.bh for x in per_head)}

    def launch(self, cfg, kernel):
        """(num_warps, num_stages) of the Triton kernel: Triton software-pipelines the K/V loop."""
        return warps(cfg.block_q), pipeline_stages(cfg, kernel, self.stage_bytes(cfg, kernel))

    def execute(self, mem, cfg):
        """The FlashAttention-2 forward, tile by tile on the counted memory. The Hopper kernel moves the same
        tiles (asynchronously, which changes the time, not the bytes)."""
        kernel = self.KERNELS[0]
        t, scale, d = cfg.tiling, cfg.head_dim**-0.5, cfg.head_dim
        for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):
            r = slice(*t.q_rows(i))
            q_i = mem.load(kernel, "Q", (b, h, r))  # read Br*d; Q_i stays in SRAM
            m_i = np.full(r.stop - r.start, -np.inf, q_i.dtype)  # running row max, on chip
            l_i = np.zeros(r.stop - r.start, q_i.dtype)  # running row sum of exp(s - m_i), on chip
            acc = np.zeros((r.stop - r.start, d), q_i.dtype)  # un-normalised O_i, on chip
            for j in t.kv_blocks(i):
                c = slice(*t.kv_rows(j))
                k_j = mem.load(kernel, "K", (b, cfg.kv_head(h), c))  # read Bc*d
                v_j = mem.load(kernel, "V", (b, cfg.kv_head(h), c))  # read Bc*d
                s_ij = masked_scores(q_i, k_j, scale, t.keep(r, c))
                m_new = np.maximum(m_i, s_ij.max(axis=1))  # finite: block 0 holds key 0, which every row sees
                alpha = np.exp(m_i - m_new)  # rescale factor for what was summed so far
                p_ij = np.exp(s_ij - m_new[:, None])
                l_i = alpha * l_i + p_ij.sum(axis=1)
                acc = alpha[:, None] * acc + p_ij @ v_j
                m_i = m_new
                mem.step(kernel, (b, h, i), (i, j), cfg.sram_bytes(kernel, r.stop - r.start, c.stop - c.start),
                         m_i=m_i, l_i=l_i, rescale=alpha)
            mem.store(kernel, "O", (b, h, r), acc / l_i[:, None])  # write Br*d
            mem.store(kernel, "LSE", (b, h, r), m_i + np.log(l_i))  # write Br
            mem.step(kernel, (b, h, i), (i, None), cfg.sram_bytes(kernel, r.stop - r.start, 0))


FLASH2 = Flash2()

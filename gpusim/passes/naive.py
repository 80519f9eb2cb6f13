"""Standard attention (Algorithm 0 of the FlashAttention paper) as three kernels, each a grid of tiled
programs: S = Q Kᵀ · scale written to HBM, a row softmax reading S and writing P, O = P V reading P back.
The N x N_kv matrices S and P make its HBM traffic quadratic in the sequence length.

Causal: the qk programs of visited tiles write them whole; the softmax reads and writes the row's part of
those tiles (masking in registers, P = 0 right of the diagonal); pv reads them whole.
"""
from itertools import product

import numpy as np

from ..hardware import WARP, check_dtype
from ..tiling import ramp_work, uniform_work
from .base import Pass
from .common import padded, pipeline_stages, shrink_to_fit, warps

# The rows of S and P (and of the backward's dP and dS) lie N_kv rounded up to ALIGN elements apart: Triton specialises
# an integer argument divisible by 16, so every row is 16-byte aligned and moves in 16-byte vectors. Rows N_kv apart,
# N_kv not a multiple of 16, moved an element at a time (docs/perf.md, "Rows not a multiple of 16").
ALIGN = 16


def score_row(cfg):
    """LD, the elements from one row of S (P, dP, dS) to the next: N_kv rounded up to ALIGN, within the K/V
    blocks' width (Tc x Bc, which the kernels' blocks, powers of two from 16, always reach). The kernels write
    the LD - N_kv past the last key (0) and read them back with the rest, so they move with the counts."""
    return min(-(-cfg.seq_kv // ALIGN) * ALIGN, cfg.tiling.n_kv_blocks * cfg.block_kv)

# Both matmuls start at 128 x 128 tiles, halved until they fit (paper_blocks; kernels/naive.py runs best_blocks'
# tile when given none).
MATMUL_TILE = 128
PER_SCORE_QK = 1  # the scale
# softmax per element: max, sum, divide; subtract and exp once per pass that computes exponentials
SOFTMAX_PER_ELEMENT = 3
SOFTMAX_PER_EXP = 2


def _qk(rows, keys, d, e):  # Q_i, K_j
    return rows * d * e + keys * d * e


def _pv(rows, keys, d, e):  # P_ij, V_j
    return rows * keys * e + keys * d * e


ROW_WARPS = (8, 16)  # a softmax program's warps: 8, more for long rows, up to 16
ROW_ELEMENTS_PER_THREAD = 64  # softmax rows get warps until each thread holds at most this many (fp32 registers)
# One pass holds a row (rounded to a power of two) in fp32 registers: 32 K elements in 16 warps is 64 a thread,
# about 100 registers with the rest; a row of 64 K would need 512 threads x 168 registers, more than an SM has.
MAX_ROW_ELEMENTS = 1 << 15


def scores(cfg):
    """Entries of S (P, dP, dS) the visited tiles write per head, the padding past N_kv included."""
    return cfg.tiling.padded_elements(score_row(cfg))


def padded_tile(x, cols):
    """A tile of scores for the keys it holds, widened with zeros to the columns `cols` it is stored in."""
    return np.pad(x, ((0, 0), (0, cols.stop - cols.start - x.shape[1])))


def row_elements(cfg):
    """A row of S as the softmax program loads it: LD rounded up to a power of two (a tl.arange)."""
    return padded(score_row(cfg))


def softmax_limits(cfg):
    """What one row of S exceeds where the softmax streams it: "registers" (its row_elements, in fp32 in one block,
    past MAX_ROW_ELEMENTS), "sram" (its bytes past the GPU's SRAM per block); () where it reads each row once."""
    return tuple(limit for limit, over in (("registers", row_elements(cfg) > MAX_ROW_ELEMENTS),
                                           ("sram", score_row(cfg) * cfg.itemsize > cfg.gpu.sram_bytes_per_block))
                 if over)


def row_warps(cfg):
    """Warps of a softmax program: enough that a one-pass row is at most ROW_ELEMENTS_PER_THREAD per thread."""
    if not cfg.softmax_fits:
        return ROW_WARPS[0]
    return min(ROW_WARPS[1], max(ROW_WARPS[0], row_elements(cfg) // (WARP * ROW_ELEMENTS_PER_THREAD)))


def _softmax_row(mem, cfg, b, h, row, n, visible):
    """Softmax of one row of S over its first n entries (the visited tiles), of which the first `visible`
    survive the causal mask: the rest are masked in SRAM and get P = 0. A row that fits in SRAM is read
    once; a longer one is streamed in block_kv chunks by the safe softmax: a pass for the max, one for
    the sum, one to write P (3 reads + 1 write per element)."""
    sram = cfg.sram_bytes("softmax")

    def masked(c):  # a chunk of S, read from HBM, with the masked keys set to -inf
        return np.where(np.arange(c.start, c.stop) < visible, mem.load("softmax", "S", (b, h, row, c)), -np.inf)

    if cfg.softmax_fits:
        x = masked(slice(0, n))  # read N
        e = np.exp(x - x.max())
        mem.store("softmax", "P", (b, h, row, slice(0, n)), e / e.sum())  # write N
        mem.step("softmax", (b, h, row), (row, 0), sram)
        return
    chunks = [slice(c, min(c + cfg.block_kv, n)) for c in range(0, n, cfg.block_kv)]
    m_row = max(masked(c).max() for c in chunks)  # pass 1: read N
    mem.step("softmax", (b, h, row), (row, 1), sram)
    l_row = sum(np.exp(masked(c) - m_row).sum() for c in chunks)  # pass 2: read N
    mem.step("softmax", (b, h, row), (row, 2), sram)
    for c in chunks:  # pass 3: read N, write N
        mem.store("softmax", "P", (b, h, row, c), np.exp(masked(c) - m_row) / l_row)
    mem.step("softmax", (b, h, row), (row, 3), sram)


class Naive(Pass):
    """Standard attention: three kernels, S and P in HBM."""
    name = "naive"
    KERNELS = ("qk", "softmax", "pv")
    MATRICES = "S and P"
    BACKWARD_AT_FORWARD_TILES = True  # kernels/naive_backward.py tiles its matmuls as the forward does
    L2_REUSE = {"qk": ("tiles", ("Q", "K")), "softmax": ("row_passes", ("S",)), "pv": ("kv_per_q_block", ("V",))}
    STEP_TENSORS = {"qk": ("Q", "K"), "softmax": ("S", "P"), "pv": ("P", "V")}  # qk: one step, its store after
    # The issue rate one resident softmax warp per scheduler sustains (gpusim/cost.py's ISSUE_HIDING, 0.45, is the
    # flash loops'). A one-pass row is block-synchronous: each thread folds its 64 elements into the row max and then
    # the sum in chains of 64 dependent FMNMX / FADD, each followed by a block-wide reduction through shared memory
    # (two bar.sync); while a block waits, only other blocks' warps issue. It shows where registers leave few warps
    # resident: 2 blocks of 8 warps at N = 16K, 1 of 16 at 32K (4 warps per scheduler), where Nsight measured the
    # causal softmax issue-bound at 1.6x the time predicted with 0.45, its bytes exact (results/h200/ncu.json).
    # Fitted on bench.json's naive d = 64 rows (least squares of log predicted / measured); d = 128 is held out.
    ISSUE_HIDING = {"softmax": 0.14}
    # Measured one by one, replayed from a CUDA graph as every forward is timed (results/h200/naive_launches.json, run
    # 148; docs/perf.md, "Naive's three launches one by one"): each launch adds an empty kernel's graph launch (one to
    # three empty kernels in a row: 0.66-0.85 us each), not the 3.2 us of one timed with CUDA events, which priced the
    # calls of 7-12 us about 7.4 us slow; pv's lone programs keep their S - 1 tiles in flight at 4 and 8 warps (its
    # steps priced up to 3.6x slow waiting for each whole load); and qk's programs store their tile after their loads
    # and dot, in series (qk_parts.json, run 149: the program takes 0.88-0.96 of its halves timed apart, in series).
    GRAPH_LAUNCH = True
    LONE_PIPELINED = ("pv",)
    STORED_AFTER = {"qk": "S"}

    def paper_blocks(self, gpu, head_dim, dtype):
        """128 x 128 matmul tiles, halved until both matmul kernels' tiles fit."""
        e = check_dtype(dtype)
        return shrink_to_fit(MATMUL_TILE, MATMUL_TILE,
                             lambda br, bc: max(_qk(br, bc, head_dim, e), _pv(br, bc, head_dim, e)),
                             gpu.sram_bytes_per_block)

    def score_row(self, cfg):
        return score_row(cfg)

    def compiled_shape(self, cfg, kernel):
        """What a compiled kernel is specialised on beyond its tiles (gpusim/compiled.py): head_dim, or the row
        the softmax holds."""
        return row_elements(cfg) if kernel == "softmax" else cfg.head_dim

    def softmax_fits(self, cfg):
        """The softmax reads a row once when it fits both the SRAM (the model's staging) and, in fp32, the
        registers of one block (at most MAX_ROW_ELEMENTS); otherwise it streams the row in block_kv chunks,
        three passes."""
        return not softmax_limits(cfg)

    def sram_bytes(self, cfg, kernel, rows, keys):
        d, e = cfg.head_dim, cfg.itemsize
        if kernel == "qk":
            return _qk(rows, keys, d, e)
        if kernel == "softmax":  # one row of S, or one block_kv chunk of it per pass
            return (score_row(cfg) if self.softmax_fits(cfg) else cfg.block_kv) * e
        return _pv(rows, keys, d, e)

    def programs(self, cfg, kernel):
        t = cfg.tiling
        return cfg.bh * {"qk": t.tiles, "softmax": cfg.seq, "pv": t.n_q_blocks}[kernel]

    def work(self, cfg, kernel):
        """qk: one tile per program. softmax: a row that fits is one step (one load of the row, one store);
        a streamed row is three passes of Bc chunks. pv: Q block i does J_i steps."""
        t = cfg.tiling
        if kernel == "qk":
            return uniform_work(self.programs(cfg, kernel), 1)
        if kernel == "pv":
            return ramp_work(t, cfg.bh)
        if self.softmax_fits(cfg):
            return uniform_work(self.programs(cfg, kernel), 1)
        return uniform_work(self.programs(cfg, kernel), 3 * -(-scores(cfg) // cfg.seq // cfg.block_kv))

    def stage_bytes(self, cfg, kernel):
        if kernel != "pv":
            return 0
        return (cfg.block_q * cfg.block_kv + cfg.block_kv * padded(cfg.head_dim)) * cfg.itemsize

    def register_tiles(self, cfg, kernel):
        """qk: the fp32 S tile; pv: the fp32 O_i; softmax: a row (or chunk) in fp32."""
        if kernel == "qk":
            return 4 * cfg.block_q * cfg.block_kv
        if kernel == "pv":
            return 4 * cfg.block_q * cfg.head_dim
        return 4 * (row_elements(cfg) if self.softmax_fits(cfg) else cfg.block_kv)

    def peak_bytes(self, cfg):
        """S is freed after the softmax, before O is allocated; S and P are allocated whole (N x LD) even when
        causal."""
        q = cfg.bh * cfg.seq * cfg.head_dim * cfg.itemsize
        kv = 2 * cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
        o = cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")
        nn = cfg.bh * cfg.seq * score_row(cfg) * cfg.itemsize  # one N x LD matrix, S or P
        return q + kv + max(2 * nn, nn + o)

    def count(self, cfg):
        """Per (batch, head), n_i rows in Q block i, J_i K/V blocks visited, k_i K/V rows they hold."""
        t, d, e = cfg.tiling, cfg.head_dim, cfg.itemsize
        tiles = scores(cfg)  # S entries in the visited tiles, padding included (N * LD when not causal)
        passes = 1 if self.softmax_fits(cfg) else 3
        per_head = {
            ("qk", "Q"): (t.row_visits * d * e, 0),  # each S tile reads its Br*d rows of Q
            ("qk", "K"): (t.keys_read * d * e, 0),  # and its Bc*d rows of K
            ("qk", "S"): (0, tiles * e),  # write N*LD
            ("softmax", "S"): (passes * tiles * e, 0),  # read N*LD once, or 3 times when a row overflows SRAM
            ("softmax", "P"): (0, tiles * e),  # write N*LD
            ("pv", "P"): (tiles * e, 0),  # read N*LD
            ("pv", "V"): (t.keys_read * d * e, 0),  # each O tile reads V for its visited blocks
            ("pv", "O"): (0, cfg.seq * d * cfg.tensor_bytes("O")),  # write N*d
        }
        return {key: (r * cfg.bh, w * cfg.bh) for key, (r, w) in per_head.items()}

    def flops(self, cfg):
        d, tile_el = cfg.head_dim, cfg.tiling.tile_elements
        exp_passes = 1 if self.softmax_fits(cfg) else 2  # a streamed row recomputes its exponentials
        per_head = {
            "qk": (2 * d * tile_el, PER_SCORE_QK * tile_el, 0),
            "softmax": (0, (SOFTMAX_PER_ELEMENT + SOFTMAX_PER_EXP * exp_passes) * tile_el, exp_passes * tile_el),
            "pv": (2 * d * tile_el, 0, 0),
        }
        return {kernel: tuple(x * cfg.bh for x in counts) for kernel, counts in per_head.items()}

    def launch(self, cfg, kernel):
        """(num_warps, num_stages): one buffer per tile except pv's K/V loop, which Triton software-pipelines."""
        if kernel == "pv":
            return warps(cfg.block_q), pipeline_stages(cfg, kernel, self.stage_bytes(cfg, kernel))
        if kernel == "softmax":
            return row_warps(cfg), 1
        return warps(cfg.block_q), 1

    def execute_steps(self, cfg):
        """Steps execute mode walks: a step per tile of qk and pv, one per row of the softmax."""
        return cfg.bh * (cfg.tiling.tiles + cfg.seq)

    def execute(self, mem, cfg):
        """Three kernels, each a grid of tiled programs, on the counted memory."""
        t, scale, d = cfg.tiling, cfg.head_dim**-0.5, cfg.head_dim
        heads = list(product(range(cfg.batch), range(cfg.heads)))
        ld = score_row(cfg)
        for b, h in heads:  # kernel 1: S = Q Kᵀ · scale, one program per (Br, Bc) tile of S
            for i in range(t.n_q_blocks):
                r = slice(*t.q_rows(i))
                for j in t.kv_blocks(i):
                    c, cols = slice(*t.kv_rows(j)), t.score_cols(j, ld)
                    q_i = mem.load("qk", "Q", (b, h, r))  # read Br*d
                    k_j = mem.load("qk", "K", (b, cfg.kv_head(h), c))  # read Bc*d
                    mem.store("qk", "S", (b, h, r, cols), padded_tile(q_i @ k_j.T * scale, cols))  # write Br*Bc
                    mem.step("qk", (b, h, i, j), (i, j), cfg.sram_bytes("qk", r.stop - r.start, c.stop - c.start))
        for b, h in heads:  # kernel 2: P = softmax(S), one program per row, over the row's part of the visited tiles
            for row in range(cfg.seq):
                visible = min(row + 1 + t.offset, cfg.seq_kv) if cfg.causal else cfg.seq_kv
                last = t.kv_blocks_of(row // cfg.block_q) - 1
                _softmax_row(mem, cfg, b, h, row, t.score_cols(last, ld).stop, visible)
        for b, h in heads:  # kernel 3: O = P V, one program per Br rows of O
            for i in range(t.n_q_blocks):
                r = slice(*t.q_rows(i))
                acc = np.zeros((r.stop - r.start, d), mem.tensors["O"].dtype)  # fp32 accumulator, on chip
                for j in t.kv_blocks(i):
                    c = slice(*t.kv_rows(j))
                    p_ij = mem.load("pv", "P", (b, h, r, t.score_cols(j, ld)))  # read Br*Bc (0 right of the diagonal)
                    v_j = mem.load("pv", "V", (b, cfg.kv_head(h), c))  # read Bc*d
                    acc += p_ij[:, :c.stop - c.start] @ v_j
                    mem.step("pv", (b, h, i), (i, j), cfg.sram_bytes("pv", r.stop - r.start, c.stop - c.start))
                mem.store("pv", "O", (b, h, r), acc)  # write Br*d
                mem.step("pv", (b, h, i), (i, None), cfg.sram_bytes("pv", r.stop - r.start, 0))


NAIVE = Naive()

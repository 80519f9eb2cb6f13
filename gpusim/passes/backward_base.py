"""What the backward passes (naive_backward, flash1_backward, flash2_backward) share: their counts as sums
over Q blocks (each pass states its tables), the memory a training step holds, the tiles they start from,
the schedule of programs that each hold a K/V block while Q blocks stream past, and which of a kernel's
reads reach DRAM. gpusim/backward.py makes their configuration (gpusim.shape.Backward) and tells the
gradients' algebra.

Counts are integers, {(kernel, tensor): (read_bytes, write_bytes)} over all batches and heads, written as
sums over Q blocks i (and K/V blocks j) of a Tiling: n_i rows, J_i K/V blocks visited, k_i K/V rows in
them (sums below is the one place the per-block arrays are touched).
"""
import math

import numpy as np

from ..hardware import DTYPE_BYTES, STATS_BYTES, WARP
from ..shape import MIN_BLOCK, Backward
from ..tiling import MAX_BINS, TAIL, Work, scaled, uniform_work
from .base import Pass
from .common import REGISTER_BASE, pow2_floor

FIRST_TOUCH_REFERENCE = "results/h200/ncu_bwd.json"  # Nsight's DRAM reads against first touches
DEFAULT_LAUNCH = (4, 3)  # Triton's num_warps, num_stages for a launch that passes none (preprocess, ds)


def sums(t):
    """Per (batch, head) sums over the Q blocks i of Tiling t."""
    return {"row_visits": t.row_visits,  # Σ_i n_i J_i: query rows times the K/V blocks they meet
            "keys_read": t.keys_read,  # Σ_i k_i: K/V rows loaded, once per Q block
            "tile_elements": t.tile_elements,  # Σ_i n_i k_i: scores in the visited tiles
            "kv_rows_seen": t.max_keys}  # K/V rows in the blocks some Q block visits (the last visits most)


def total(cfg, per_q, per_kv):
    """Sum per-(batch, query head) and per-(batch, K/V head) entries over all heads."""
    out = {}
    for table, copies in ((per_q, cfg.bh), (per_kv, cfg.batch * cfg.kv_heads)):
        for key, values in table.items():
            old = out.get(key, (0,) * len(values))
            out[key] = tuple(a + b * copies for a, b in zip(old, values))
    return out


def column_work(tiling, groups, per_block):
    """K/V block j of each of `groups` (batch, K/V head) problems does per_block steps for every Q block
    that sees it (i >= first_q_block(j)); the grid (Tc, groups) launches a problem's K/V blocks in order, so a causal
    launch runs each problem's longest program first (j = 0 sees every Q block) and its shortest last: longest_first
    (cost.list_schedule; measured: results/h200/dkdv_ramp.json, run 136). Long ramps are binned as
    gpusim/tiling.py's ramp_work bins them."""
    tr, tc = tiling.n_q_blocks, tiling.n_kv_blocks
    if not tiling.causal:
        return uniform_work(groups * tc, per_block * tr)

    def steps(j):
        row = np.maximum(0, j * tiling.block_kv - tiling.offset)  # the first row that sees key j * Bc
        return per_block * (tr - np.where(row < tiling.seq_q, row // tiling.block_q, tr))

    if tc <= MAX_BINS:
        values, counts = np.unique(steps(np.arange(tc)), return_counts=True)
    else:
        edges = np.linspace(0, tc, MAX_BINS + 1).astype(np.int64)
        values, counts = steps((edges[:-1] + edges[1:]) // 2), np.diff(edges)
    head = steps(tc - 1 - np.arange(min(tc, TAIL)))  # the launch order, backwards from its end
    return Work(values, scaled(counts, groups), np.resize(head, min(groups * tc, TAIL)), longest_first=True)


def group_heads(cfg, hk):
    """The query heads that share K/V head hk."""
    return range(hk * cfg.group, (hk + 1) * cfg.group)


def spilled(cfg, tile_bytes, num_warps):
    """Register tiles of a block whose threads would need more than the GPU allows (255 registers): ptxas
    keeps what fits and spills the rest to local memory, whose traffic is not modelled."""
    most = (cfg.gpu.max_registers_per_thread - REGISTER_BASE) * 4 * WARP * num_warps  # 4 bytes a register
    return min(tile_bytes, most)


class BackwardPass(Pass):
    """A backward pass: the forward `algo`'s gradients. Subclasses state their tables (tables, flop_tables),
    what they stage (sram_bytes), the tiles they start from (start_blocks) and their schedule."""
    algo = ""  # the forward's name: naive, flash1, flash2
    SAVED = ()  # what the backward reads of the forward's outputs, besides Q, K, V
    KV_HELD = ()  # kernels whose K/V blocks follow kv_tiling (flash2's dkdv)
    # {kernel: which programs share what they re-read}: "kv_head" (the K/V blocks of one (batch, K/V head):
    # Q, dO, LSE, D or dS streamed past them), "head" (the blocks of one (batch, head)), or "program" (a row
    # re-read by its own program); dram_reads below
    SHARED_BY = {}

    def tables(self, cfg):
        """({(kernel, tensor): (read, write)} per (batch, query head), the same per (batch, K/V head))."""
        raise NotImplementedError

    def flop_tables(self, cfg):
        """({kernel: (matmul, other, exps)} per (batch, query head), the same per (batch, K/V head))."""
        raise NotImplementedError

    def start_blocks(self, gpu, head_dim, dtype):
        """(block_q, block_kv) before halving to fit (default_blocks)."""
        raise NotImplementedError

    def execute_steps(self, cfg):
        """Steps execute mode walks: the tiles of the kernels that hold a Q block and of those that hold a
        K/V block."""
        return cfg.bh * (cfg.tiling.tiles + cfg.kv_tiling.tiles)

    def kv_tiling(self, cfg):
        """The tiling of the kernels that hold a K/V block while Q blocks stream past: cfg.tiling's."""
        return cfg.tiling

    def count(self, cfg):
        return total(cfg, *self.tables(cfg))

    def flops(self, cfg):
        """{kernel: (matmul_flops, other_flops, exps)} over all batches and heads; other_flops includes the
        exps. The τ of dQ and dK is applied once per element written."""
        out = total(cfg, *self.flop_tables(cfg))
        return {kernel: out[kernel] for kernel in self.KERNELS}

    def default_blocks(self, gpu, head_dim, dtype):  # the backward's default tiles (backward.config)
        """(block_q, block_kv): start_blocks, the larger halved until every kernel fits (never below
        MIN_BLOCK)."""
        br, bc = (max(MIN_BLOCK, b) for b in self.start_blocks(gpu, head_dim, dtype))
        while max(br, bc) > MIN_BLOCK:
            probe = Backward(self.algo, 1, 1, 1, 1, 1, head_dim, br, bc, False, dtype, gpu, self)
            if all(probe.sram_bytes(k) <= gpu.sram_bytes_per_block for k in self.KERNELS):
                break
            br, bc = (br // 2, bc) if br > bc else (br, bc // 2)
        return br, bc

    def paper_bc(self, gpu, head_dim, dtype):
        """The paper's Bc = ceil(M / 4d) for an SRAM of M elements, a power of two."""
        return pow2_floor(math.ceil(gpu.sram_bytes_per_block / DTYPE_BYTES[dtype] / (4 * head_dim)))

    def first_touch(self, cfg):
        """{(kernel, tensor): (read_bytes, write_bytes)}: each tensor's bytes a kernel touches at least once,
        what reaches DRAM when L2 catches every re-read (rule 1 of gpusim/l2.py). K and V count once per K/V
        head, not once per query head."""
        d, e = cfg.head_dim, cfg.itemsize
        n, nk, te = cfg.seq, cfg.seq_kv, cfg.tiling.padded_elements(self.score_row(cfg))
        rows = {"Q": n * d, "O": n * d, "dO": n * d, "dQ": n * d, "LSE": n, "l": n, "m": n, "D": n,
                "P": te, "dP": te, "dS": te, "dK": nk * d, "dV": nk * d}
        per_q, per_kv = {}, {}
        for (kernel, tensor), (read, write) in self.count(cfg).items():
            if tensor in ("K", "V"):
                seen = sums(cfg.kv_tiling if kernel in self.KV_HELD else cfg.tiling)["kv_rows_seen"]
                per_kv[(kernel, tensor)] = (seen * d * e, 0)
            else:
                size = rows[tensor] * cfg.tensor_bytes(tensor)
                table = per_kv if tensor in ("dK", "dV") else per_q
                table[(kernel, tensor)] = (size if read else 0, size if write else 0)
        return total(cfg, per_q, per_kv)

    def saved_bytes(self, cfg):
        """{tensor: bytes} the forward keeps for the backward: Q, K, V and SAVED."""
        q = cfg.bh * cfg.seq * cfg.head_dim * cfg.itemsize
        kv = cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
        sizes = {"P": cfg.bh * cfg.seq * self.score_row(cfg) * cfg.itemsize,
                 "O": cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")}
        return {"Q": q, "K": kv, "V": kv} | {s: sizes.get(s, cfg.bh * cfg.seq * STATS_BYTES) for s in self.SAVED}

    def gradient_bytes(self, cfg):
        """{tensor: bytes} of dO and the gradients."""
        kv = cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
        return {"dO": cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O"),
                "dQ": cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("dQ"), "dK": kv, "dV": kv}

    def footprint(self, cfg):
        """[(moment, {tensor: bytes})]: what the project's kernels hold in HBM at the fullest moments of one
        training step of one attention call: the forward's saved tensors, then those with the gradients."""
        saved = self.saved_bytes(cfg)
        return [("forward", saved), ("backward", saved | self.gradient_bytes(cfg))]

    def peak_bytes(self, cfg):
        return max(sum(live.values()) for _, live in self.footprint(cfg))

    def programs(self, cfg, kernel):
        return self.work(cfg, kernel).programs

    def compiled_name(self, cfg, kernel):
        """The kernel's name in gpusim/compiled.py (benchmarks/resources.py): naive's and flash2's backward both
        have a "dq" kernel."""
        return f"{self.algo}_bwd_{kernel}"

    def dram_reads(self, cfg, kernel, sm_reads, flight):
        """Rule 2 of gpusim/l2.py for the backward's kernels: re-reads hit while the data the programs in
        flight share fits in L2, and then only each tensor's first touch (first_touch) reaches DRAM, as
        Nsight measured (FIRST_TOUCH_REFERENCE). Otherwise (rule 3) the programs of a unit that run together
        still share each read: its data comes from DRAM once a wave of them; a program re-reading only its own
        misses every time. SHARED_BY says which programs share what they re-read."""
        first = {t: r for (k, t), (r, _) in self.first_touch(cfg).items() if k == kernel}
        reread = [t for t, r in sm_reads.items() if r > first[t]]
        if not reread:
            return dict(sm_reads)
        programs = self.programs(cfg, kernel)
        units = {"kv_head": cfg.batch * cfg.kv_heads, "head": cfg.bh, "program": programs}[self.SHARED_BY[kernel]]
        working_set = sum(first[t] for t in reread) / units  # what one unit's programs re-read
        units_in_flight = math.ceil(flight / (programs / units))
        every_sm = self.SHARED_BY[kernel] != "program"  # a unit's programs run across the SMs
        if units_in_flight * working_set <= cfg.gpu.l2_reuse_bytes(every_sm):
            return {t: first[t] for t in sm_reads}
        if not every_sm:
            return dict(sm_reads)
        waves = math.ceil(programs / units / flight)  # rule 3: a unit's programs running together share each read
        return {t: min(r, first[t] * waves) for t, r in sm_reads.items()}

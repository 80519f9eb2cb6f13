"""What the backward passes' modules (naive_backward, flash1_backward, flash2_backward) share as the time
model sees them: the configuration named by its pass, the schedule of programs that each hold a K/V block
while Q blocks stream past, and which of a kernel's reads reach DRAM."""
import math
from dataclasses import dataclass

import numpy as np

from .. import backward
from ..occupancy import REGISTER_BASE, WARP
from ..tiling import MAX_BINS, TAIL, Work, uniform_work
from .common import per_step_issue

FIRST_TOUCH_REFERENCE = "results/h200/ncu_bwd.json"  # Nsight's DRAM reads against first touches
DEFAULT_LAUNCH = (4, 3)  # Triton's num_warps, num_stages for a launch that passes none (preprocess, ds)


@dataclass(frozen=True)
class BackwardPass:
    """gpusim/backward.py's Backward as gpusim/cost.py, occupancy.py and l2.py read a configuration: `algo`
    names the pass's module ("flash2_backward", ...), `kernels` its launches; the rest is the Backward's."""
    of: backward.Backward

    @property
    def algo(self):
        return f"{self.of.algo}_backward"

    @property
    def kernels(self):
        return backward.KERNELS[self.of.algo]

    def __getattr__(self, name):
        if name == "of":  # not set yet (copy, unpickling): nothing to delegate to
            raise AttributeError(name)
        return getattr(self.of, name)


def column_work(tiling, groups, per_block):
    """K/V block j of each of `groups` (batch, K/V head) problems does per_block steps for every Q block
    that sees it (i >= first_q_block(j)); the grid (Tc, groups) launches a problem's K/V blocks in order.
    Long ramps are binned as gpusim/tiling.py's ramp_work bins them."""
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
    head = steps(tc - 1 - np.arange(min(tc, TAIL))).tolist()  # the launch order, backwards from its end
    n = min(groups * tc, TAIL)
    return Work(tuple(int(v) for v in values), tuple(int(c) * groups for c in counts),
                tuple((head * -(-n // len(head)))[:n]))


def count(cfg):
    return backward.count(cfg.of)


def flops(cfg):
    return backward.flops(cfg.of)


def programs(cfg, kernel):
    from . import get
    return sum(get(cfg.algo).work(cfg, kernel).counts)


def streams(cfg, kernel):
    """Independent instruction streams in a block (warp specialization): one, all warps alike."""
    return 1


def issue(cfg, kernel, res, other_flops, exps, steps, programs):
    """From the compiled kernel (benchmarks/resources.py), its loops the steps; else estimated."""
    return per_step_issue(res, other_flops, exps, steps)


def compiled_name(cfg, kernel):
    """The kernel's name in gpusim/compiled.py (benchmarks/resources.py): naive's and flash2's backward both
    have a "dq" kernel."""
    return f"{cfg.of.algo}_bwd_{kernel}"


def dram_reads(cfg, kernel, sm_reads):
    """Rule 2 of gpusim/l2.py for the backward's kernels: re-reads hit while the data the programs in flight
    share fits in L2, and then only each tensor's first touch (gpusim.backward.first_touch) reaches DRAM,
    as Nsight measured (FIRST_TOUCH_REFERENCE); otherwise every read misses. The module's SHARED_BY says
    which programs share what they re-read: "kv_head" (the K/V blocks of one (batch, K/V head): Q, dO, LSE,
    D or dS streamed past them), "head" (the blocks of one (batch, head): K, V, dO or Q), or "program" (a
    row re-read by its own program)."""
    from ..l2 import in_flight  # gpusim/l2.py imports the algorithms: imported when called
    from . import get
    shared_by = get(cfg.algo).SHARED_BY[kernel]
    first = {t: r for (k, t), (r, _) in backward.first_touch(cfg.of).items() if k == kernel}
    reread = [t for t, r in sm_reads.items() if r > first[t]]
    if not reread:
        return dict(sm_reads)
    programs = get(cfg.algo).programs(cfg, kernel)
    units = {"kv_head": cfg.batch * cfg.kv_heads, "head": cfg.bh, "program": programs}[shared_by]
    working_set = sum(first[t] for t in reread) / units  # what one unit's programs re-read
    units_in_flight = math.ceil(in_flight(cfg, kernel) / (programs / units))
    fits = units_in_flight * working_set <= cfg.gpu.l2_bytes
    return {t: first[t] if fits else r for t, r in sm_reads.items()}


def spilled(cfg, tile_bytes, num_warps):
    """Register tiles of a block whose threads would need more than the GPU allows (255 registers): ptxas
    keeps what fits and spills the rest to local memory, whose traffic is not modelled."""
    most = (cfg.gpu.max_registers_per_thread - REGISTER_BASE) * 4 * WARP * num_warps  # 4 bytes a register
    return min(tile_bytes, most)


def shared_bytes(cfg, kernel, num_stages, stage_bytes):
    return cfg.sram_bytes(kernel) + (num_stages - 1) * stage_bytes


def padded(d):
    """d rounded up to a power of two, as Triton tiles it (BLOCK_D)."""
    return 1 << (d - 1).bit_length()

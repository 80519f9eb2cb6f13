"""What several passes share: tile sizes that fit, the masked score tile, software-pipeline depth, warps,
the issue of a step, and the spills of a compiled loop."""
import numpy as np

from ..compiled import ISSUE_PER_OP
from ..hardware import WARP
from ..shape import MIN_BLOCK

REGISTER_BASE = 40  # per thread besides the tiles: addresses, loop counters, m_i and l_i fragments (fitted to
#                     the compiled kernels of gpusim/compiled.py: tests/test_presets.py checks the estimate)


def pow2_floor(x):
    return 1 << (int(x).bit_length() - 1)


def shrink_to_fit(br, bc, need, limit):
    """Halve the larger of (br, bc) until need(br, bc) <= limit or both are MIN_BLOCK."""
    br, bc = max(MIN_BLOCK, br), max(MIN_BLOCK, bc)
    while need(br, bc) > limit and max(br, bc) > MIN_BLOCK:
        br, bc = (br // 2, bc) if br > bc else (br, bc // 2)
    return br, bc


def masked_scores(q_i, k_j, scale, keep):
    s = q_i @ k_j.T * scale  # (Br, Bc), on chip
    return s if keep is None else np.where(keep, s, -np.inf)


def pipeline_stages(cfg, kernel, per_stage_bytes, max_stages=3, budget=0.8):
    """Software-pipelining depth of a K/V loop: the next tiles load into spare buffers while these are used,
    as deep (up to max_stages) as fits in `budget` of a block's shared memory (the rest is Triton's scratch)."""
    staged, limit = cfg.sram_bytes(kernel), budget * cfg.gpu.sram_bytes_per_block  # once, not once a depth
    return max([s for s in range(2, max_stages + 1) if staged + (s - 1) * per_stage_bytes <= limit], default=1)


def warps(block_q):
    """8 warps for 128-row tiles, whose fp32 scores and accumulator would not fit in 4 warps' registers."""
    return 8 if block_q >= 128 else 4


def estimated_issue(res, other_flops, exps, steps):
    """(instructions a warp issues per step, of them MUFU, of them spill reloads, per program besides): where
    nothing was compiled,
    the step's non-matmul operations over the block's lanes, times ISSUE_PER_OP, the instructions the
    compiled flash2 loops issue per counted operation (gpusim/compiled.py, derived from their disassembly:
    addresses, masks, conversions and moves come with every operation counted)."""
    lanes = WARP * res.num_warps * max(steps, 1)
    return ISSUE_PER_OP * other_flops / lanes, exps / lanes, 0.0, 0.0


def compiled_issue(res, step_loops):
    """(instructions per step, MUFU per step, spill reloads (LDL) per step, instructions per program besides)
    from the compiled kernel: step_loops, the loops a step runs, weighted [(loop index, weight)]; the rest of
    the kernel once."""
    instructions, mufu, reloads = (sum(w * res.loops[i][k] for i, w in step_loops) for k in range(3))
    in_loops = sum(loop[0] for loop in res.loops)
    return instructions, mufu, reloads, max(0, res.issued[0] - in_loops)


def per_step_issue(res, other_flops, exps, steps):
    """issue() of a kernel whose steps are the iterations of its loops, taken in turn (one loop: every step;
    a streamed row's passes: each in its share), or, without a loop, the whole kernel once per program;
    estimated from the operations where nothing was compiled."""
    if not res.issued[0]:
        return estimated_issue(res, other_flops, exps, steps)
    if not res.loops:
        return res.issued[0], res.issued[1], res.issued[2], 0.0
    return compiled_issue(res, [(i, 1 / len(res.loops)) for i in range(len(res.loops))])


# Where a compiled figure sits in gpusim/compiled.py's loop tuples: (instructions, MUFU, LDL, LDL bytes, STL bytes)
LDL_BYTES, STL_BYTES = 3, 4


def local_bytes(res, loop=None, less=()):
    """(LDL bytes, STL bytes) per thread of one iteration of compiled loop `loop`, or of the whole kernel (None),
    less those of the loops `less`: a loop's range holds the loops nested in it, the kernel's every loop."""
    figures = res.issued if loop is None else res.loops[loop]
    return tuple(figures[k] - sum(res.loops[i][k] for i in less) for k in (LDL_BYTES, STL_BYTES))


def spill_traffic(res, runs):
    """(L2->SM, SM->L2) bytes of local memory: runs, [((LDL bytes, STL bytes) per thread, times run over the
    grid)], each byte loaded (LDL) or stored (STL) by every thread of the block. Nothing where not compiled."""
    if not res.compiled:
        return 0, 0
    return tuple(int(res.threads * sum(nbytes[k] * n for nbytes, n in runs)) for k in (0, 1))


def per_step_spill(res, steps, programs):
    """spill_traffic() of a kernel whose steps are the iterations of its loops, taken in turn (sibling loops,
    none nested: steps split between them, the first ones taking the remainder's share), its code outside the
    loops once per program; without a loop, the whole kernel once per program."""
    n = len(res.loops)
    runs = [(local_bytes(res, i), steps * (i + 1) // n - steps * i // n) for i in range(n)]
    return spill_traffic(res, runs + [(local_bytes(res, less=range(n)), programs)])


def padded(d):
    """d rounded up to a power of two, as Triton tiles it (BLOCK_D, a tl.arange)."""
    return 1 << (d - 1).bit_length()


def qkvo_bytes(cfg):
    """HBM for Q, K, V and O: (B, H, N, d), twice (B, H_kv, N_kv, d), and O in its own width."""
    q = cfg.bh * cfg.seq * cfg.head_dim * cfg.itemsize
    kv = 2 * cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
    return q + kv + cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")

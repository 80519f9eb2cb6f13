"""Predicted time of a launch: occupancy, latency and the busiest unit, program by program.

The model, in five steps, each a choice written down here:

1. Occupancy. Each thread block holds registers, shared memory and warps (gpusim/occupancy.py); an SM
   keeps `b` blocks resident, as CUDA's occupancy calculator computes it. A tile that leaves no block
   resident cannot run and is refused.
2. Units per SM. The tensor cores run matmuls at the dtype's peak times the efficiency of the tile shape
   and warp count (measured on the H200 by benchmarks/matmul_tiles.py); exponentials run on the special
   function units (16 per clock per SM); the rest on the CUDA cores; bytes move at the SM's share of the
   L2 bandwidth (L2 hits) and of the DRAM bandwidth (the part that misses, gpusim/l2.py). DRAM's rate
   depends on what the kernel sends it: reads alone stream faster than a copy's mix of reads and writes
   (GPU.dram_bytes_per_s, from the kernel's share of writes). A step's dots multiply whole block_q x block_kv
   tiles, the rows and keys past a ragged edge masked, not skipped (dot_padding()).
3. One program. A program does a prologue (its first loads: one memory latency plus the transfer), J
   steps (one K/V tile each for the flash kernels), and an epilogue (its stores). Within one program the
   matmuls, the exponentials and the rest run one after the other (a warp waits for its own results), and
   a step's loads are exposed unless they arrive ahead of it (TMA copies issued num_stages ahead, or a
   warp-specialized producer), in which case a step waits only for what the prefetch distance does not cover
   (Triton's cp.async pipelining, num_stages > 1, still waits about a load per step, as measured, but for a lone
   4-warp program, whose S - 1 tiles in flight share one round of compute and loads: lone_pipeline(), and a 4-warp one
   of 64 rows or more beside others, whose pipeline is its own code's: pipelined_beside(); and a lone
   8-warp one, whose tiles arrive at the rate measured for it: lone_copy(); a flash2 program's own Q and O tiles move
   at that rate too, at any residency: own_copy()); each spill
   reload in the compiled step waits
   an L2 hit. A kernel whose warps' issue rate Nsight measured (measured(): flash2's dK/dV) is timed as Nsight sees it:
   its dots at the tensor pipe's rate, its instructions as issued, at that rate, its loads off the chain. That critical path is chain(J). The compiled code's spill traffic (pass_.spill: its loops'
   LDL and STL bytes times their iterations) moves with the steps' bytes, between the SMs and L2 only (assumed to
   miss L1, which a 227 KiB shared-memory carveout leaves at about 28 KiB). A block of
   fewer warps than an SM has schedulers (the decode reduce's 2) issues its chain at its own warps' rate, however
   many programs are resident (own_hiding): their warps raise the SM's rate, not its own.
4. One SM. The b resident programs share the units, so a program occupies its slot for
   tau(J) = max(chain(J), b * busiest(J)), busiest(J) being the time of the busiest unit for one program.
   With one resident program (b = 1) nothing runs on the units while it waits for its first loads (a
   prefetching kernel's first K/V tile among them) and its set-up (the Hopper kernel's, measured per launch kind on a
   lone program), so those add to b * busiest(J) (alone_wait; a TMA copy's bytes are in busiest(J) already, so it adds
   its latency only); with two or more, another program's steps fill them.
   This is Little's law: an SM completes b programs per max(latency, work); a kernel whose b programs
   cannot keep the busiest unit busy (one store burst per program, nothing overlapping it) is
   latency-bound, and its achieved bandwidth is the bytes b programs keep in flight over their latency.
5. The grid. Programs go to the SMs' b slots in launch order, each slot taking the next program when its
   last one ends: all slots stay busy until the last wave, whose time is set by its longest program
   (the last Q blocks of a causal launch, the longest ones, run last). Time = (sum of tau - the last
   wave's, each at b an SM) / slots + the last wave's longest tau, plus the launch overhead (before_last). A last
   wave of fewer programs than slots holds fewer than b on an SM (last_per_sm: at most ceil(last / SMs)), and its
   longest program shares its SM's units with only those (alone, nothing hides its first loads). A launch of one wave spread unevenly over the
   SMs (136 programs on 132) leaves most SMs a program fewer, each with its own Schedule (fewer warps hide less):
   its longest program is priced on both and the slower counts (last_longest). The L2 and DRAM serve the whole
   GPU: in a last wave of fewer programs than slots, the bytes of an SM's b programs move at the share of
   the wave's programs per SM (last / SMs), not of b; a program
   shorter than the wave's longest counts in that share by its bytes against the longest's (it finishes
   early and frees its share: a ragged decode batch's short requests). A launch that orders its longest programs
   first (the Hopper kernel's causal launches; the backward's causal dK/dV, each problem's first K/V blocks, which
   see every Q block, first) past one wave has its shortest programs last, not its longest: it is priced as the
   hardware runs it, each program to the slot that frees first, for its tau beside b - 1 others (list_schedule).
   The launch adds its cost once
   (pass_.launch_s: an empty kernel's, less what a programmatic dependent launch hides). A kernel of one step whose
   programs store their tile after their loads and dot (naive's qk), all in the same phase, adds that store after the
   rest, at the rate a stream of stores reaches (stored_after). A ragged decode batch of one wave over a paged cache is
   priced apart (ragged_wave, ragged_time): the greater of its longest program's steps and its bytes at the DRAM's rate,
   and RAGGED_OVERLAP of the lesser.

Rates are the GPU preset's (datasheet peaks, or measured ones for H200-measured and H100-measured).

In the code, each step is a function reading one record: occupied() (step 1) makes the Grid; rates()
(step 2); unit_times() (with sm_hiding() and own_hiding()), one_step() and step_chain() (step 3) make the Schedule;
busy() (with sm_compute()), chain(), tau() and alone_wait() (step 4); waves() (step 5, with last_longest() and
list_schedule()) makes
the Timing; launch_time() runs the five, and kernel_time() adds stored_after().
"""
import heapq
import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from .hardware import WARP
from .occupancy import exceeded, occupancy, resources

# ISSUE_HIDING and CONTENTION: fitted on the d = 64 rows of results/h200/bench.json and tiles.json (docs/perf.md:
# the d = 128 rows, not fitted on, are reported there; notebook 6 splits its tile picks the same way).
FITTED_HEAD_DIM = 64  # the head dim of the rows the two were fitted on
ISSUE_HIDING = 0.45  # the issue rate one resident warp per scheduler sustains; more warps hide more (a lone
#                      program's one or two warps per scheduler issue at the full rate, measured: full_issue())
CONTENTION = 0.15  # the share of the lesser of a program's memory and compute time that does not overlap
# RAGGED_OVERLAP: fitted on results/h100/ragged_wave.json (run 178, 48 ragged decode batches on an H100, none a held-out
# row): the share of the lesser of a ragged wave's longest steps and its bytes' time that does not overlap the greater,
# such that the file's median predicted / measured is 1 (benchmarks/report_gpus.ragged_overlap_fit); the held-out sets
# of both GPUs, not fitted on, are reported in docs/perf.md ("A ragged decode wave").
RAGGED_OVERLAP = 0.38
ISSUED_PER_COUNTED = 1.184  # instructions Nsight counts issued per one of pass_.issue's (the compiled loop's): the
#                            median of runs 128 and 129's 22 launches, 1.16-1.23 each (report_steps.issued_ratio)
# The K/V bytes a step of run 95's lone programs moved at GPU.lone_copy_bytes_per_s (results/h200/lone_program.json)
LONE_COPY_STEP_BYTES = (16 * 2**10, 64 * 2**10)
ISSUE_PER_CLOCK = 4  # warp instructions an SM issues per clock: one per warp scheduler, four per SM (Hopper,
#                      Ampere and Ada whitepapers: an SM is four processing blocks, each with its own scheduler)


@dataclass(frozen=True)
class Timing:
    predicted_time_s: float
    memory_time_s: float  # the roofline terms, at the whole GPU's rates, for comparison
    matmul_time_s: float
    other_time_s: float
    busy_fraction: float  # the share of the SMs' slot time that programs fill
    blocks_per_sm: int
    registers_per_thread: int
    limited_by: str  # what caps the blocks per SM: registers, shared memory, warps or blocks
    latency_bound: bool  # True when a program's critical path, not a unit, sets its slot time
    spill_read_bytes: int  # L2 -> SM: the compiled kernel's spill reloads (LDL), over the grid (Grid.spill)
    spill_write_bytes: int  # SM -> L2: its spill stores (STL)


@dataclass(frozen=True)
class Grid:
    """Step 1: one kernel's launch as the time model reads it. counts and dram: {tensor: (read, write)}."""
    cfg: object
    kernel: str
    counts: dict
    dram: dict
    flops: tuple  # (matmul, other, exps)
    res: object  # occupancy.Resources
    occ: object  # occupancy.Occupancy
    work: object  # tiling.Work
    programs: int
    steps: int  # over all programs
    resident: int  # b: blocks an SM really holds (fewer when the grid is small)
    slots: int  # SMs x b
    spill: tuple  # (L2->SM, SM->L2) bytes of local memory: the compiled kernel's spills (pass_.spill)


@dataclass(frozen=True)
class Schedule:
    """Step 3: one program's step and its fixed part, as one SM sees them."""
    grid: Grid
    rate: dict  # step 2: {unit: per-SM rate}
    serial_s: float  # a warp group's matmuls, then the rest, on the program's own chain (own_hiding)
    overlapped_s: float  # the same as the SM's units share it (sm_hiding), its streams overlapped
    fixed_compute_s: float  # instructions per program besides the steps
    step_bytes: tuple  # (SM bytes, DRAM bytes, SM bytes read, DRAM bytes read) per step
    fixed_bytes: tuple  # the same per program, outside the steps
    chain_s: float  # a step on one program's critical path
    setup_s: float
    prefetched: bool
    own_s: float = 0.0  # first_loads' own loads, and its first step's (program_loads)
    first_s: float = 0.0


def kernel_time(cfg, kernel, counts, dram, matmul_flops, other_flops, exps):
    """Timing of one launch of `kernel`; counts and dram: {tensor: (read_bytes, write_bytes)} between the
    SMs and L2, and the part of it that reaches DRAM. The five steps of the module's docstring (and stored_after)."""
    flops = (matmul_flops, other_flops, exps)
    timing = launch_time(cfg, kernel, counts, dram, flops)
    stored = cfg.pass_.STORED_AFTER.get(kernel)
    return timing if stored is None else stored_after(timing, cfg, kernel, counts, dram, flops, stored)


def launch_time(cfg, kernel, counts, dram, flops):
    """Steps 1-5: the Grid, its rates, one program's Schedule, and the waves' Timing."""
    grid = occupied(cfg, kernel, counts, dram, flops)
    return waves(one_step(grid, rates(grid)))


def launch_seconds(cfg, kernel, counts, dram, flops):
    """launch_time's predicted_time_s alone: the same steps, step 5 stopping at its time (wave_time), where the rest of
    the Timing (the roofline terms, the busy fraction, whether a program's chain sets it) is not read."""
    grid = occupied(cfg, kernel, counts, dram, flops)
    return wave_time(one_step(grid, rates(grid)))[0]


def predicted_time(cfg, kernel, counts, dram, flops):
    """kernel_time's predicted_time_s alone, for a caller that reads nothing else (a tile search prices every candidate
    for it: gpusim/run.py best_blocks). A STORED_AFTER kernel's is stored_after's, which prices the launch with its
    writes only for the Timing's other fields: that launch is skipped here (it fits where the one without does, the
    same resources and occupancy)."""
    tensor = cfg.pass_.STORED_AFTER.get(kernel)
    if tensor is None:
        return launch_seconds(cfg, kernel, counts, dram, flops)
    return launch_seconds(cfg, kernel, *unstored(tensor, counts, dram), flops) + store_time(cfg, counts, tensor)


def stored_after(timing, cfg, kernel, counts, dram, flops, tensor):
    """A kernel of one step whose programs store `tensor`'s tile after their loads and dot (pass_.STORED_AFTER: naive's
    qk), the programs of a wave starting together: they are all in the same phase, so no program's store hides under
    another's loads and dot, as steps 4 and 5 would have it. Its time is the launch without those writes, then the
    writes at the rate a stream of stores alone reaches (GPU.store_bytes_per_s). Measured: results/h200/qk_parts.json
    (run 149), qk's program takes 0.88-0.96 of its loads and dot timed without the store plus the store timed alone,
    at 16K-65K programs (docs/perf.md, "Naive's three launches one by one"). timing: the launch with the writes, whose
    other fields it keeps."""
    first = launch_seconds(cfg, kernel, *unstored(tensor, counts, dram), flops)
    return replace(timing, predicted_time_s=first + store_time(cfg, counts, tensor))


def unstored(tensor, *tables):
    """Each {tensor: (read, write)} table without `tensor`'s writes (stored_after's launch before its store)."""
    return [{t: (read, 0 if t == tensor else write) for t, (read, write) in table.items()} for table in tables]


def store_time(cfg, counts, tensor):
    """stored_after's store: `tensor`'s writes at the rate a stream of stores alone reaches."""
    rate = cfg.gpu.store_bytes_per_s or cfg.gpu.hbm_bytes_per_s
    return counts[tensor][1] / rate


def schedule(result, cfg=None):
    """Steps 1-3 of a one-kernel Result's launch, as kernel_time makes them: its Grid and Schedule (with cfg, another
    configuration's, for a launch option that changes no byte)."""
    k = result.kernels[0]
    counts = {t: rw for (kernel, t), rw in result.counts.items() if kernel == k.name}
    dram = {t: rw for (kernel, t), rw in result.dram.items() if kernel == k.name}
    grid = occupied(cfg or result.config, k.name, counts, dram, (k.flops_matmul, k.flops_other, k.exps))
    return grid, one_step(grid, rates(grid))


def occupied(cfg, kernel, counts, dram, flops):
    """Step 1: the blocks an SM keeps resident, and the programs and steps of the grid."""
    res = resources(cfg, kernel)
    occ = occupancy(cfg.gpu, res)
    if occ.blocks_per_sm == 0:
        raise ValueError(infeasible(cfg, kernel, res, occ))
    work = cfg.pass_.work(cfg, kernel)
    programs, steps = work.programs, work.steps
    b = min(occ.blocks_per_sm, -(-programs // cfg.gpu.sm_count))  # blocks an SM really holds
    spill = cfg.pass_.spill(cfg, kernel, res, steps, programs)
    return Grid(cfg, kernel, counts, dram, flops, res, occ, work, programs, steps, b, cfg.gpu.sm_count * b, spill)


def rates(grid):
    """Step 2: each unit's rate per SM: tensor cores (at the tile's measured efficiency), instruction issue,
    special function units, and the SM's share of the L2 and DRAM bandwidth."""
    cfg, gpu, sms = grid.cfg, grid.cfg.gpu, grid.cfg.gpu.sm_count
    return dict(tensor=gpu.matmul_flops_per_s(cfg.dtype) * mma_efficiency(gpu, cfg, grid.res.num_warps) / sms,
                issue=ISSUE_PER_CLOCK * gpu.clock_hz, sfu=gpu.sfu_ops_per_s / sms,
                l2=(gpu.l2_bytes_per_s or gpu.hbm_bytes_per_s) / sms,
                dram=gpu.dram_bytes_per_s(_write_share(grid.dram)) / sms)


def unit_times(grid, rate, hiding=None):
    """One program's step on each unit alone, its instructions issued at `hiding` of the SM's peak rate (None: the SM's,
    sm_hiding; own_hiding on its own chain), and the instructions it issues per program besides."""
    cfg, kernel, res, pass_ = grid.cfg, grid.kernel, grid.res, grid.cfg.pass_
    hiding = sm_hiding(grid) if hiding is None else hiding
    matmul_flops, other_flops, exps = grid.flops
    step_instructions, step_mufu, step_reloads, fixed_instructions = pass_.issue(
        cfg, kernel, res, other_flops, exps, grid.steps, grid.programs)
    issued = ISSUED_PER_COUNTED if measured(grid) else 1.0
    unit = dict(mma=matmul_flops * dot_padding(grid) / max(grid.steps, 1) / rate["tensor"] / pipe(grid),
                issue=step_instructions * issued * res.num_warps / rate["issue"] / hiding,
                sfu=step_mufu * res.num_warps * WARP / rate["sfu"])
    return unit, step_reloads, fixed_instructions * issued * res.num_warps / rate["issue"]


def issue_rate(grid, warps):
    """The share of its peak (one instruction a clock) a scheduler holding `warps` resident warps issues at. It issues
    only while it has a warp ready: with few warps, the latency of dependent instructions shows (Little's law again,
    for instructions); each warp adds the rate one sustains (ISSUE_HIDING, or the kernel's own)."""
    pass_, kernel = grid.cfg.pass_, grid.kernel
    per_warp = pass_.MEASURED_ISSUE.get(kernel) or pass_.ISSUE_HIDING.get(kernel, ISSUE_HIDING)  # a kernel's own
    return 1.0 if full_issue(grid) else min(1.0, warps * per_warp)


def sm_hiding(grid):
    """The SM's issue rate, a share of its peak, with its resident programs' warps dealt over its schedulers (one warp
    per scheduler for a FLAT_ISSUE kernel): what its programs' steps share (busy)."""
    warps = 1 if grid.kernel in grid.cfg.pass_.FLAT_ISSUE else grid.resident * grid.res.num_warps / ISSUE_PER_CLOCK
    return issue_rate(grid, warps)


def own_hiding(grid):
    """The issue rate, a share of the SM's peak, of one program's own step (its chain). Other warps on a scheduler
    fill the cycles a warp waits on its dependent instructions: they raise the SM's rate (sm_hiding, what busy()
    shares), not that warp's own. A block of fewer warps than the SM has schedulers (the decode reduce's 2) therefore
    issues its chain at its own warps' rate, one program alone, however many are resident: two reduce programs on an
    SM (one wave of 160 over 132 SMs) do not halve each other's chain, as the SM's rate would. A block of
    ISSUE_PER_CLOCK warps or more keeps the SM's rate on its chain too: ISSUE_HIDING was fitted so, at full occupancy
    on the 4- and 8-warp forward kernels (their chains and busy times together), and stands in for how their
    neighbours overlap."""
    if grid.kernel in grid.cfg.pass_.FLAT_ISSUE or grid.res.num_warps >= ISSUE_PER_CLOCK:
        return sm_hiding(grid)
    return issue_rate(grid, grid.res.num_warps / ISSUE_PER_CLOCK)  # its own warps, no other program's


def measured(grid):
    """A kernel timed as Nsight sees it (pass_.MEASURED_ISSUE): its dots at the tensor pipe's rate (pipe), its
    instructions as issued (ISSUED_PER_COUNTED), its warps at the rate measured over the cycles the pipe is idle, and
    its loads off its chain (one_step: Nsight's rate already holds the little they stall it). The fitted ISSUE_HIDING
    and CONTENTION took mma_efficiency's wall clock and the counted instructions in; a measured rate cannot. Measured:
    results/h200/bwd_rates.json (run 128), dK/dV's stalls on its loads (long scoreboard) 0.11-0.23 cycles an
    instruction, on fixed-latency waits, shared-memory reads and barriers 3.5-4.6 (docs/perf.md, "dK/dV as Nsight measures it")."""
    return grid.kernel in grid.cfg.pass_.MEASURED_ISSUE


def pipe(grid):
    """How much faster a measured() kernel's dots run on the tensor pipe than mma_efficiency (a loop's wall clock)
    says: GPU.tensor_pipe_ratio at the nearest block_kv; 1 for every other kernel, where the GPU has none, and in
    fp32, whose dots run on the CUDA cores, not the tensor pipe (measured in fp16): the ratio priced fp32's dK/dV
    above the fp32 peak."""
    table = dict(grid.cfg.gpu.tensor_pipe_ratio)
    if not measured(grid) or not table or grid.cfg.dtype == "fp32":
        return 1.0
    return at_nearest(table, grid.cfg.block_kv)


def at_nearest(table, block_kv):
    """{block_kv: value}'s value at the block_kv nearest this one (in factors of two)."""
    return table[min(table, key=lambda kv: abs(math.log2(kv / block_kv)))]


def dot_padding(grid):
    """Whole tiles' elements over the counted ones: a kernel's dots multiply whole block_q x block_kv tiles, the rows
    and keys past a ragged edge masked (pass_.dot_tiling). Measured: results/h200/ragged_tiles.json (run 122), flash2
    at 128 x 128 and the Hopper kernel run N = N_kv = 385 to 512 in the same time (within 4%, but the Hopper kernel
    at d = 64: 10%) while the counted FLOPs grow 1.77x, and take 1.45-1.55x as long at 513 (a fifth block); flash2 at
    64 x 64 steps up at 449 and at 513. Derived from the tiles, nothing fitted."""
    tiling = grid.cfg.pass_.dot_tiling(grid.cfg, grid.kernel)
    if tiling is None or not tiling.tile_elements:
        return 1.0
    return tiling.whole_elements / tiling.tile_elements


def full_issue(grid):
    """A lone program on its SM with one or two warps per scheduler and a tile of 64 rows or more, of a kernel
    measured so (pass_.LONE_FULL_ISSUE): it issues at the full rate, one instruction a clock per scheduler, where
    ISSUE_HIDING (fitted at full occupancy) would issue at 0.45 of it (one warp) or 0.9 (two)."""
    return (grid.kernel in grid.cfg.pass_.LONE_FULL_ISSUE and grid.resident == 1 and grid.cfg.block_q >= 64
            and grid.res.num_warps in (ISSUE_PER_CLOCK, 2 * ISSUE_PER_CLOCK))


def lone_pipeline(grid):
    """A lone 4-warp program (cost.full_issue, one warp per scheduler), or a lone program of any warp count of a kernel
    measured so (pass_.LONE_PIPELINED: naive's pv, results/h200/naive_launches.json, run 148), that Triton pipelines
    S > 2 stages deep: its step takes one round of its compute and loads over the S - 1 tiles in flight, and at least
    its compute, where other cp.async steps (but lone_copy's) wait for their whole load. Measured:
    results/h200/lone_program.json (run 95), the cold lone steps at 3 and 4 stages, which the whole wait prices
    1.39-1.88x, and their loop without loads (run 103, overlap_d128.json), which full_issue prices 0.97-1.03x. 8-warp
    programs follow their own measured rate (lone_copy): their loop alone is priced 1.01-1.27x, so Little's law on
    their priced compute would not hold them. The twentieth session's trial (report_steps.lone_pipelined), adopted in
    the twenty-second's. A 4-warp program of 16 or 32 rows (its instructions on ISSUE_HIDING's line, not full_issue's)
    pipelines so too: adopted on the prediction of results/h100/lone_stages.json (run 221; docs/perf.md, "A lone
    program of 16 or 32 rows pipelined"), its lone launches at 3 and 4 stages 0 -> 61 of 72 within 20%."""
    pass_ = grid.cfg.pass_
    lone = grid.resident == 1 and ((grid.kernel in pass_.LONE_FULL_ISSUE and grid.res.num_warps == ISSUE_PER_CLOCK)
                                   or grid.kernel in pass_.LONE_PIPELINED)
    return lone and grid.res.num_stages > 2


def pipelined_beside(grid):
    """A 4-warp program of 64 rows or more (full_issue's tiles, one warp per scheduler) of a pass_.LONE_FULL_ISSUE
    kernel that Triton pipelines S > 2 stages deep, beside other programs on its SM (b > 1): its step is Little's
    law's, as alone (lone_pipeline), at the issue rate the SM's warps share; the pipeline is the program's own code,
    and the bandwidth the programs share is the SM's busy time's already. Measured: results/h100/pair_edge.json (run
    218), a second program on an SM costing its neighbour far less than a whole wait a step; adopted on the prediction
    of results/h100/pipeline_beside.json (run 219; docs/perf.md, "A program's pipeline beside another"): of its 90
    flash2 launches at one to four programs an SM, 62 -> 71 within 20%, none lost. Not at 16 or 32 rows: the same
    credit there (report_launches.small_beside) loses held-out rows (run 221's section)."""
    return (grid.kernel in grid.cfg.pass_.LONE_FULL_ISSUE and grid.resident > 1 and grid.cfg.block_q >= 64
            and grid.res.num_warps == ISSUE_PER_CLOCK and grid.res.num_stages > 2)


def lone_copy(grid):
    """A lone 8-warp program (cost.full_issue, two warps per scheduler) on 16 rows per warp that Triton pipelines S > 2
    stages deep, on a GPU whose rate for it was measured (GPU.lone_copy_bytes_per_s): its step takes the longer of its
    compute and its K/V tiles' bytes at that rate. Measured: results/h200/lone_program.json (run 95), the cold lone
    steps of 128 rows at 3 and 4 stages and both head dims, 16-64 KiB a step, each moving its bytes at 17.4-19.7 GB/s
    (the rate: their median), where the whole wait prices them 1.10-1.63x; the rate is what they show, not explained
    (4-warp programs move 32 KiB steps faster: lone_pipeline). Tiles of 32 rows per warp were not measured so and keep
    the whole wait (docs/perf.md, "A lone 8-warp program's copy rate"). A pass_.LONE_COPY kernel's program moves its
    step at that rate where lone_gather says."""
    if grid.cfg.gpu.lone_copy_bytes_per_s is None:
        return False
    if grid.kernel in grid.cfg.pass_.LONE_COPY:
        return lone_gather(grid)
    return (full_issue(grid) and grid.res.num_warps == 2 * ISSUE_PER_CLOCK and grid.res.num_stages >= 3
            and grid.cfg.block_q == 16 * grid.res.num_warps)


def lone_gather(grid):
    """A program of a pass_.LONE_COPY kernel that gathers its tiles through address loads (pass_.ADDRESS_TENSORS: a
    paged cache's block table), in a launch of no more programs than SMs (one an SM, a single partial wave), whose
    step's tiles are LONE_COPY_STEP_BYTES: it moves them, and its addresses with them, at GPU.lone_copy_bytes_per_s.
    Measured: results/h200/split_lone.json (run 170), the split kernel's 4 warps at 16, 32 and 64 padded rows, 128
    programs over pages of 16, 32 KiB steps, 1.71-1.99 us each against 1.74 at that rate (docs/perf.md, "A split
    program alone on its SM"), and the unsplit decode kernel's 8 programs at 1.48-1.92 us (split_lone_others.json, run
    172); other step sizes take run 95's range of them."""
    pass_ = grid.cfg.pass_
    addresses = [t for t in pass_.ADDRESS_TENSORS.get(grid.kernel, ()) if t in grid.counts]
    if not addresses or grid.programs > grid.cfg.gpu.sm_count:
        return False
    tiles = pass_.step_tile_bytes(grid.cfg, grid.kernel)  # a whole step's: the average over steps fell below 16 KiB
    return LONE_COPY_STEP_BYTES[0] <= tiles <= LONE_COPY_STEP_BYTES[1]  # at a partial last chunk, doubling the time


def one_step(grid, rate):
    """Step 3: a step's compute (serial within a warp group, overlapped across streams), its bytes, and its
    time on one program's critical path (the loads it waits for, fences, spill reloads, addresses)."""
    cfg, kernel, pass_ = grid.cfg, grid.kernel, grid.cfg.pass_
    shared, alone = sm_hiding(grid), own_hiding(grid)
    unit, step_reloads, fixed_compute = unit_times(grid, rate, shared)
    own = unit if alone == shared else unit_times(grid, rate, alone)[0]  # on its own chain: its own warps' rate
    streams = pass_.streams(cfg, kernel)  # independent consumer warp groups in a block (warp specialization)
    serial = (unit["mma"] + max(unit["issue"], unit["sfu"])) / streams  # a warp group's matmuls, then the rest
    chained = (own["mma"] + max(own["issue"], own["sfu"])) / streams  # the same on the program's own chain
    # Two streams that overlap perfectly hide the lesser unit's time; where a kernel states how much its streams
    # really hide, measured (the warp-specialized Hopper launch's step over its software-pipelined twin's,
    # results/h200/program_setup.json), that ratio of the serial step replaces the ideal.
    ratio = pass_.step_ratio(cfg, kernel)
    overlapped = (ratio * (unit["mma"] + max(unit["issue"], unit["sfu"])) if ratio is not None else
                  max(unit.values()) + (unit["mma"] + max(unit["issue"], unit["sfu"]) - max(unit.values())) / streams)
    step, fixed = _split(grid.counts, grid.dram, pass_.STEP_TENSORS[kernel])
    # Spills live in L2 (no DRAM bytes): their reloads and stores, all counted with the steps (those outside the
    # loops, once per program, are a prologue's few bytes)
    step = (step[0] + sum(grid.spill), step[1], step[2] + grid.spill[0], step[3])
    step_bytes, fixed_bytes = _per(step, grid.steps), _per(fixed, grid.programs)
    # A step waits for its loads: Triton's software pipeline issues cp.async copies ahead, but measured
    # (results/h200/tiles.json against matmul_tiles.json) a lone block still waits about a load per step; TMA
    # copies (num_stages deep) and a warp-specialized producer keep them off the consumers' path.
    # a producer warp group, or TMA copies on barriers, load ahead; a measured() kernel's rate holds its loads' stalls
    prefetched = streams > 1 or pass_.TMA or measured(grid)
    draft = Schedule(grid, rate, chained, overlapped if streams > 1 else serial, fixed_compute, step_bytes,
                 fixed_bytes, 0.0, pass_.setup_s(cfg), prefetched)
    own_s, first_s = program_loads(draft)
    return Schedule(**{**draft.__dict__, "chain_s": step_chain(draft, step_reloads), "own_s": own_s,
                       "first_s": first_s})


def step_chain(step, step_reloads):
    """A step on one program's critical path: its compute, and the loads it waits for (all of them, or what
    the prefetch distance does not cover); stores fenced before the next step; spill reloads; the loads that
    give the step's addresses."""
    grid, gpu = step.grid, step.grid.cfg.gpu
    pass_, kernel, stages = grid.cfg.pass_, grid.kernel, grid.res.num_stages
    addresses = pass_.ADDRESS_TENSORS.get(kernel, ())
    loads = wait(gpu, step.step_bytes)
    if step.prefetched:
        chain = max(step.serial_s, loads / max(1, stages - 1))
    elif lone_pipeline(grid) or pipelined_beside(grid):  # Little's law: a round of compute and loads over S - 1 tiles
        chain = max(step.serial_s, (step.serial_s + loads) / (stages - 1))
    elif lone_copy(grid):  # its tiles arrive at the rate measured for it, under its compute
        chain = max(step.serial_s, step.step_bytes[2] / gpu.lone_copy_bytes_per_s)
        addresses = () if kernel in pass_.LONE_COPY else addresses  # a lone gather's arrive with its tiles
    else:
        chain = step.serial_s + loads
    if kernel in pass_.FENCED:  # the step's stores must land (at their port rate, an L2 round trip) first
        chain += gpu.l2_latency_s + (step.step_bytes[0] - step.step_bytes[2]) / gpu.port_bytes_per_s("l2")
    # A spill reload (LDL in the compiled step) waits for its register: the spilled lines do not stay in L1
    # (Nsight: flash1's extra L2->SM bytes are its reloads' 4 B per thread, every step), so each is an L2 hit
    # waited for alone (the idle pointer chase's latency, results/h200/latency.json), one after another.
    chain += step_reloads * gpu.l2_idle_latency_s
    for tensor in addresses:  # loads that give the step's addresses
        if tensor in grid.counts:  # (a paged gather's block table) are waited for before the step's other loads
            chain += wait(gpu, _per((0, 0, grid.counts[tensor][0], grid.dram[tensor][0]), grid.steps))
    return chain


def wait(gpu, nbytes):
    """Loading these bytes, alone: the latency of the level they come from, then the port."""
    if not nbytes[2]:
        return 0.0
    miss = min(1.0, nbytes[3] / nbytes[2])
    port = (1 - miss) / gpu.port_bytes_per_s("l2") + miss / gpu.port_bytes_per_s("hbm")
    return latency(gpu, miss) + nbytes[2] * port


def latency(gpu, miss):
    """A load's latency when a share `miss` of its bytes come from DRAM, the rest from L2."""
    return gpu.l2_latency_s + miss * (gpu.hbm_latency_s - gpu.l2_latency_s)


def chain(step, j):
    """One program alone: its first loads, its set-up, j steps, its epilogue."""
    return first_loads(step, j) + step.fixed_compute_s + j * step.chain_s


def first_loads(step, j):
    """What a program waits for besides its steps: its own loads (Q's tile; with own_copy, its O tile's store too), its
    set-up, and where it prefetches (num_stages ahead), its first step's loads, which nothing earlier in the program
    issued (program_loads, made once with the step)."""
    return step.own_s + step.setup_s + (j > 0) * step.first_s


def program_loads(step):
    """(own, first): a program's wait for its own loads, and for its first step's loads where it prefetches."""
    gpu = step.grid.cfg.gpu
    first = wait(gpu, step.step_bytes) if step.prefetched else 0.0
    own = own_wait(gpu, step.fixed_bytes) if own_copy(step.grid) else wait(gpu, step.fixed_bytes)
    return own, first


def own_copy(grid):
    """A kernel whose programs copy their own tiles (pass_.OWN_COPY: flash2's Q tile in, its O tile out, outside the
    K/V loop, nothing else in flight in the program) on a GPU that measured the rate one program copies at
    (GPU.lone_copy_bytes_per_s): those bytes move at that rate, whatever the residency. Measured:
    results/h200/program_start.json (run 118), flash2's short programs wave after wave, whose steady-state cost per
    wave the port-rate wait priced 0.58-0.69x at one K/V block (docs/perf.md, "A program's own tiles")."""
    return grid.kernel in grid.cfg.pass_.OWN_COPY and grid.cfg.gpu.lone_copy_bytes_per_s is not None


def own_wait(gpu, nbytes):
    """A program's own loads and stores outside its steps, at the rate one program copies: the level's latency, then
    every byte read or written (nbytes: as wait's) at GPU.lone_copy_bytes_per_s."""
    if not nbytes[2]:
        return 0.0
    return latency(gpu, min(1.0, nbytes[3] / nbytes[2])) + nbytes[0] / gpu.lone_copy_bytes_per_s


def busy(step, j, sharing, resident):
    """Step 4: an SM's time for its `resident` programs of j steps: their bytes at the bandwidth share of `sharing`
    programs (the L2 and DRAM serve the whole GPU, so in a wave of fewer programs than slots each SM's share
    grows), their work on the SM's own units."""
    rate = step.rate
    moved = (step.fixed_bytes[0] + j * step.step_bytes[0], step.fixed_bytes[1] + j * step.step_bytes[1])
    memory = sharing * np.maximum(moved[0] / rate["l2"], moved[1] / rate["dram"])
    compute = sm_compute(step, j, resident)
    contention = step.grid.cfg.pass_.CONTENTION.get(step.grid.kernel, CONTENTION)  # a kernel's own, where it has one
    return np.maximum(memory, compute) + contention * np.minimum(memory, compute)


def sm_compute(step, j, resident):
    """An SM's compute for its `resident` programs of j steps: they take turns on its units, resident x one program's."""
    return resident * (step.fixed_compute_s + j * step.overlapped_s)


def tau(step, j, sharing, resident):
    """A program of j steps holds its slot for max(chain, busy) beside resident - 1 others on its SM (b in a full
    wave); alone on it (resident = 1) what it waits besides its busy time (alone_wait) overlaps no other program's
    work. j: an int, or an array of them (a launch's J values): an int64 array is cast to float64 once here, where
    every product with a float would cast it again (NumPy computes int64 * float64 on the int64 cast to float64: the
    same numbers, cast once instead of six times)."""
    if isinstance(j, np.ndarray) and j.dtype == np.int64:
        j = j.astype(np.float64)
    alone = alone_wait(step, j) if resident == 1 else 0.0
    return np.maximum(chain(step, j), busy(step, j, sharing, resident) + alone)


def alone_wait(step, j):
    """What a program alone on its SM waits besides its busy time: its first loads and set-up (first_loads); a TMA
    pass's program, its set-up and its first copies' latencies only, their bytes being in its busy time already (at the
    SM's share of the bandwidth). Measured: results/h200/hopper_stalls.json and hopper_kv.json (runs 139 and 140;
    docs/perf.md, "A lone Hopper program's wait, adopted"): a lone program's TMA copies are its busy time's, not a
    port-rate wait besides."""
    if not step.grid.cfg.pass_.TMA:
        return first_loads(step, j)
    gpu = step.grid.cfg.gpu
    return (step.setup_s + latency(gpu, min(1.0, step.fixed_bytes[3] / step.fixed_bytes[2]))
            + (j > 0) * latency(gpu, min(1.0, step.step_bytes[3] / step.step_bytes[2])))


def last_per_sm(grid, last):
    """The programs an SM holds in a last wave of `last`: b where it fills the slots, fewer where it does not (the
    wave's programs spread over the SMs, at most ceil(last / SMs) on one). Measured: results/h200/last_wave.json (run
    121): past b programs per SM, a launch's leftover programs cost less than a full wave's (docs/perf.md, "A launch's
    last wave")."""
    return min(grid.resident, math.ceil(last / grid.cfg.gpu.sm_count))


def waves(step):
    """Step 5: the grid over the SMs' slots, the last wave set by its longest program; the Timing."""
    grid = step.grid
    cfg, gpu, b, slots = grid.cfg, grid.cfg.gpu, grid.resident, grid.slots
    sms, (matmul_flops, other_flops, exps) = gpu.sm_count, grid.flops
    time, busy_s, sharing, launch, tail_steps = wave_time(step)
    longest_j = int(tail_steps.max())
    return Timing(
        predicted_time_s=time,
        memory_time_s=max(sum(map(sum, grid.counts.values())) / step.rate["l2"] / sms,
                          sum(map(sum, grid.dram.values())) / step.rate["dram"] / sms),
        matmul_time_s=matmul_flops / gpu.matmul_flops_per_s(cfg.dtype),
        other_time_s=(other_flops - exps) / gpu.fp32_flops_per_s + exps / gpu.sfu_ops_per_s,
        busy_fraction=min(1.0, busy_s / slots / (time - launch)),  # at most 1: a sum of floats can pass it by 1e-15
        blocks_per_sm=grid.occ.blocks_per_sm,
        registers_per_thread=grid.res.registers_per_thread,
        limited_by=grid.occ.limited_by,
        latency_bound=bool(chain(step, longest_j) > busy(step, longest_j, sharing, b)),
        spill_read_bytes=grid.spill[0], spill_write_bytes=grid.spill[1],
    )


def wave_time(step):
    """Step 5's time: the grid over the SMs' slots, the last wave set by its longest program, and the launch's cost;
    with what waves() reads besides: (time, the slots' busy time (the waves before the last, and the last wave's
    programs at its share of the bandwidth), the last wave's bandwidth sharing, the launch's cost, the last wave's
    steps)."""
    grid = step.grid
    work, b, slots = grid.work, grid.resident, grid.slots
    taus = tau(step, work.values, b, b)  # every program in a full wave, as arrays
    total = float(np.dot(work.counts.astype(np.float64), taus))
    last = (grid.programs - 1) % slots + 1  # programs in the last wave (integers: exact at any count)
    tail_steps = work.tail[:last]  # the last wave's programs
    sharing = wave_sharing(step, tail_steps, last)
    tail = tau(step, tail_steps, sharing, b).tolist()  # at the wave's share of the bandwidth, b an SM
    longest = last_longest(step, tail_steps, sharing, tail, last)
    launch = grid.cfg.pass_.launch_s(grid.cfg, grid.kernel)
    before = before_last(step, total, tail_steps)
    time = (ragged_time(step) if ragged_wave(grid) else
            (list_schedule(step, total) if listed(grid) else before / slots + longest) + launch)
    return time, before + sum(tail), sharing, launch, tail_steps


def before_last(step, total, tail_steps):
    """The slots' time before the last wave, times slots: every program's tau at b an SM (total) less the last wave's
    programs' (tail_steps, their steps) at b an SM too, as total counted them; so a launch of one wave costs its longest
    program's time alone. Until the sixty-seventh session the last wave's were subtracted at the wave's share of the
    bandwidth, which left (each program's tau at b an SM less its tau at the wave's share) / slots in a wave that does
    not fill the slots: results/h100/pipeline_beside.json's launches of 198 programs (run 219) priced 1.08-1.39x.
    Adopted on the prediction of results/h100/wave_term.json (run 220; docs/perf.md, "The last wave counted once")."""
    grid = step.grid
    if grid.programs <= grid.slots:  # one wave: nothing before it
        return 0.0
    return max(0.0, total - float(np.sum(tau(step, tail_steps, grid.resident, grid.resident))))  # >= 0 but rounding


def last_longest(step, tail_steps, sharing, tail, last):
    """The last wave's longest program: beside last_per_sm programs on its SM (fullest; on SMs holding fewer than b, its
    programs take less). A launch of one wave spread unevenly over the SMs (136 programs on 132) leaves the rest of
    them a program fewer, each with its own Schedule (fewer warps on an SM hide less of a chain's issue: own_hiding;
    one alone hides none of its first loads): its longest is priced on both, and the slower counts."""
    grid = step.grid
    b, sms = grid.resident, grid.cfg.gpu.sm_count
    longest = fullest(step, tail_steps, sharing, tail, last)
    fewer = last // sms
    if grid.programs != last or not 1 <= fewer < b:
        return longest
    held = schedule_at(step, fewer)
    return max(longest, float(np.max(tau(held, tail_steps, sharing, fewer))))


def fullest(step, tail_steps, sharing, tail, last):
    """The last wave's longest program beside last_per_sm programs on its SM (tail: the wave's taus at b an SM, as the
    waves before it count them); where that is fewer than b, on a Schedule of its own at that count, as last_longest
    prices a one-wave launch's SMs that hold fewer (a program alone keeps a lone program's pipeline and issue rate,
    not b programs'). Adopted on the prediction of results/h100/last_alone.json (run 221; docs/perf.md, "A last wave
    alone on its SMs"): of its 56 launches, 47 -> 56 within 20%."""
    grid = step.grid
    per_sm = last_per_sm(grid, last)
    if per_sm == grid.resident:
        return max(tail)
    held = schedule_at(step, per_sm)
    return max(tau(held, tail_steps, sharing, per_sm).tolist())


def schedule_at(step, per_sm):
    """The launch's Schedule made again at per_sm programs an SM (slots: per_sm an SM), for SMs that hold fewer than
    b: fewer warps on an SM hide less of a chain's issue (own_hiding), and one alone takes a lone program's rules."""
    grid = step.grid
    return one_step(replace(grid, resident=per_sm, slots=grid.cfg.gpu.sm_count * per_sm), step.rate)


def ragged_wave(grid):
    """A launch of no more programs than slots (one wave) of a pass_.LONE_COPY kernel gathering over a paged cache,
    whose programs take different numbers of steps because its requests differ in length (pass_.ragged): a ragged
    decode batch, priced by ragged_time."""
    pass_, gpu = grid.cfg.pass_, grid.cfg.gpu
    return (grid.kernel in pass_.LONE_COPY and gpu.lone_copy_bytes_per_s is not None and grid.programs <= grid.slots
            and any(t in grid.counts for t in pass_.ADDRESS_TENSORS.get(grid.kernel, ()))
            and pass_.ragged(grid.cfg, grid.kernel))


def ragged_time(step):
    """A ragged wave's time: its longest program's steps, each the longer of its chain and its tiles at the rate a
    lone program copies (a long request's programs run their last steps alone on their SMs: lone_gather's rate, and
    its chain where that is longer, as split_lone_d64.json measured at d = 64), against all its bytes at the GPU's
    DRAM rate; the greater, and RAGGED_OVERLAP of the lesser (the long programs share the DRAM with the short ones
    while those run), then its first loads and the launch. The waves' rule (a wave's time its longest program's, at the
    wave's share of the bandwidth, plus (the wave's time at b programs an SM less that) / slots) held the H200's ragged
    held-out batches with a term that grows with a slower DRAM, which the H100's batches do not (docs/perf.md)."""
    grid, gpu = step.grid, step.grid.cfg.gpu
    j = int(grid.work.values.max())
    steps = j * max(step.chain_s, step.step_bytes[2] / gpu.lone_copy_bytes_per_s)
    memory = sum(map(sum, grid.dram.values())) / (step.rate["dram"] * gpu.sm_count)
    return (max(steps, memory) + RAGGED_OVERLAP * min(steps, memory) + first_loads(step, j) + step.fixed_compute_s
            + grid.cfg.pass_.launch_s(grid.cfg, grid.kernel))


def listed(grid):
    """A launch whose longest programs go first (Work.longest_first: the Hopper kernel's causal launches, the
    backward's causal dK/dV: measured, results/h200/lpt_order.json and dkdv_ramp.json at one program an SM,
    results/h100/dkdv_edge.json at two to seven) of more programs than slots: its last wave is not the last programs
    launched (its shortest), so it is priced as the hardware hands programs out, list_schedule()."""
    return grid.work.longest_first and grid.programs > grid.slots


def list_schedule(step, total):
    """Step 5 as the hardware runs it: each program, in launch order, goes to the slot that frees first, and holds
    it for its tau in a full wave (beside b - 1 others on its SM); the end is the last slot's. Exact for a launch of
    at most TAIL programs (the Work's tail holds them all); before a longer launch's tail, its programs keep every slot
    busy."""
    slots, b = step.grid.slots, step.grid.resident
    order = tau(step, step.grid.work.tail[::-1], b, b).tolist()  # the tail in launch order
    free = [max(0.0, total - sum(order)) / slots] * slots  # when each slot takes its first program of the tail
    for t in order:
        heapq.heapreplace(free, free[0] + t)
    return max(free)


def wave_sharing(step, steps, last):
    """The programs per SM whose bytes share the L2 and DRAM with the last wave's longest program: its
    `last` programs over the SMs when they are alike; when they are not (a ragged decode batch, a causal
    launch's ramp), the shorter ones finish early and free their share, so each counts by its bytes against
    the longest's. The wave then moves all its bytes at the whole GPU's rate, as it does."""
    rate = step.rate
    moved = np.maximum((step.fixed_bytes[0] + steps * step.step_bytes[0]) / rate["l2"],
                       (step.fixed_bytes[1] + steps * step.step_bytes[1]) / rate["dram"])
    top = float(np.max(moved)) if len(moved) else 0.0
    sms = step.grid.cfg.gpu.sm_count
    return float(np.sum(moved)) / top / sms if top > 0 else last / sms


def mma_efficiency(gpu, cfg, num_warps):
    """The fraction of the tensor-core peak a tile of block_q x block_kv at head_dim with num_warps reaches
    (gpu.mma_efficiency, measured), or the nearest measured shape's, or 1 where none was measured."""
    return _nearest_efficiency(gpu.mma_efficiency, (cfg.block_q, cfg.block_kv, cfg.head_dim, num_warps))


@lru_cache(maxsize=None)
def _nearest_efficiency(measured, key):
    """mma_efficiency's lookup in a GPU's measured ((block_q, block_kv, head_dim, num_warps), fraction) pairs (computed
    once a process for each)."""
    table = dict(measured)
    if not table:
        return 1.0
    if key in table:
        return table[key]
    distance = lambda k: sum(abs(math.log2(a) - math.log2(b)) for a, b in zip(k, key))  # noqa: E731
    return table[min(table, key=distance)]


def _write_share(dram):
    """The share of a kernel's DRAM bytes that are writes."""
    reads, writes = (sum(rw[i] for rw in dram.values()) for i in (0, 1))
    return writes / (reads + writes) if reads + writes else 0.0


def _split(counts, dram, step_tensors):
    """For the step tensors and for the rest: (SM bytes, DRAM bytes, SM bytes read, DRAM bytes read)."""
    split = ([0, 0, 0, 0], [0, 0, 0, 0])  # the step tensors', the rest's
    for i, table in enumerate((counts, dram)):
        for t, rw in table.items():
            part = split[t not in step_tensors]
            part[i] += sum(rw)
            part[2 + i] += rw[0]
    return tuple(map(tuple, split))


def _per(nbytes, n):
    return tuple(x / n for x in nbytes) if n else (0.0,) * len(nbytes)


def infeasible(cfg, kernel, res, occ):
    """One line: what the tile needs and what the GPU allows."""
    need, limit = exceeded(cfg.gpu, res, occ)
    return (f"block_q={cfg.block_q}, block_kv={cfg.block_kv}, head_dim={cfg.head_dim} ({cfg.dtype}) in the "
            f"{kernel} kernel need {need}; {limit}")

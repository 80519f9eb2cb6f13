"""The model as it was before each of its changes, for docs/perf.md's sections written before them: context managers
that put gpusim.cost, a pass (Flash2, Flash2Backward, Hopper, Naive, SplitKV), gpusim's compiled table or the held-out
scoring back as it was while a block runs (line_issue, one_warp_issue, no_lone_pipeline, no_lone_copy, no_own_copy,
full_last_wave, counted_dots, no_measured_issue, preset_host_floor, no_list_schedule, dkdv_by_waves, lone_by_port,
events_launch, naive_before, shared_chain, reduce_at_split_tiles, split_rows_before, reduce_before,
lone_split_before, unsplit_lone_before, even_waves, one_slot_listed, alone_pipelines, waves_at_share,
pipelines_from_64, tail_at_b), each an
agreement.trial (_patched) with the held-out rows it can move (FLASH2_ROWS, HOPPER_ROWS, TRAIN_ROWS, NAIVE_ROWS,
DECODE_ROWS).
benchmarks/perf_report.py's as_written picks each table's.
"""
from contextlib import contextmanager
from functools import partial

from benchmarks import agreement
from gpusim import cost, occupancy, tiling
from gpusim.compiled import COMPILED
from gpusim.passes.flash2 import Flash2
from gpusim.passes.flash2_backward import Flash2Backward
from gpusim.passes import hopper as hopper_pass
from gpusim.passes.hopper import Hopper
from gpusim.passes.naive import Naive
from gpusim.passes.split_kv import REDUCE_ROWS, SplitKV
from gpusim.shape import MIN_ROWS
from gpusim_course.provenance import heldout


@contextmanager
def no_lone_pipeline():
    """The model before the twenty-second session's cost.lone_pipeline (and the twenty-fourth's cost.lone_copy), while
    the block runs: every cp.async step of flash2 waits for its whole load, as every figure docs/perf.md quotes from
    before it."""
    with no_lone_copy(), _patched(cost, "lone_pipeline", lambda grid: False, "no_lone_pipeline",
                                   moves=FLASH2_ROWS | NAIVE_ROWS):  # flash2's full_issue, naive's LONE_PIPELINED pv
        yield


@contextmanager
def no_lone_copy():
    """The model before the twenty-fourth session's cost.lone_copy, while the block runs: a lone 8-warp flash2 program
    pipelined 3 or 4 deep waits for its compute and its whole load each step, as every figure docs/perf.md quotes from
    before it."""
    with no_own_copy(), _patched(cost, "lone_copy", lambda grid: False, "no_lone_copy",
                                moves=FLASH2_ROWS | DECODE_ROWS):  # flash2's full_issue, SplitKV's LONE_COPY
        yield


@contextmanager
def no_own_copy():
    """The model before the twenty-fifth session's cost.own_copy, while the block runs: a flash2 program's Q tile is
    waited for at the port's rate and its O tile's store not at all, as every figure docs/perf.md quotes from before
    it."""
    with full_last_wave(), _patched(cost, "own_copy", lambda grid: False, "no_own_copy", moves=FLASH2_ROWS):
        yield


@contextmanager
def full_last_wave():
    """The model before the twenty-sixth session's cost.last_per_sm, while the block runs: a last wave's programs share
    their SM's units with b - 1 others however few it holds, as every figure docs/perf.md quotes from before it."""
    with counted_dots(), _patched(cost, "last_per_sm", lambda grid, last: grid.resident, "full_last_wave"):
        yield


@contextmanager
def counted_dots():
    """The model before the twenty-seventh session's cost.dot_padding, while the block runs: a step's dots priced on
    the counted FLOPs (the valid rows times the valid keys), as every figure docs/perf.md quotes from before it."""
    with no_measured_issue(), _patched(cost, "dot_padding", lambda grid: 1.0, "counted_dots",
                                      moves=FLASH2_ROWS | HOPPER_ROWS | NAIVE_ROWS):  # SplitKV's dot_tiling: None
        yield


# The held-out rows a trial of flash2's kernel alone moves (Flash2's LONE_FULL_ISSUE and OWN_COPY, cost.full_issue's
# and cost.own_copy's: no other pass's kernel is named flash2; a training step runs it for its forward).
FLASH2_ROWS = frozenset({("forward", "flash2"), ("train", "flash2")})
HOPPER_ROWS = frozenset({("forward", "hopper")})  # the held-out rows a trial of the Hopper kernel's pricing alone moves
TRAIN_ROWS = frozenset({("train", "flash2")})  # and a trial of flash2's backward, or of a training step's host floor
NAIVE_ROWS = frozenset({("forward", "naive")})  # and a trial of naive's forward kernels
DECODE_ROWS = frozenset({("decode", "split_kv")})  # and a trial of the decode kernels' pricing


@contextmanager
def _patched(module, name, value, key, rows=False, moves=None):
    """module.name = value while the block runs, an agreement.trial described by key (what it computed kept apart
    from the model's; rows=True: a swap of measured rows; moves: the held-out rows it can move, if not all)."""
    base = getattr(module, name)
    setattr(module, name, value)
    try:
        with agreement.trial(key, rows, moves):
            yield
    finally:
        setattr(module, name, base)


@contextmanager
def line_issue():
    """The model before the nineteenth session's cost.full_issue, while the block runs: a lone flash2 program of 4
    warps per SM issues on ISSUE_HIDING's line (0.45 of the full rate), as every figure docs/perf.md quotes from
    before it."""
    with no_own_copy(), _patched(Flash2, "LONE_FULL_ISSUE", (), "line_issue", moves=FLASH2_ROWS):
        yield


def one_warp_full_issue(grid):
    """cost.full_issue as the nineteenth and twentieth sessions had it: a lone program of 4 warps (one per scheduler),
    of any tile, issues at the full rate; 8 warps issue on ISSUE_HIDING's line."""
    return (grid.kernel in grid.cfg.pass_.LONE_FULL_ISSUE and grid.resident == 1
            and grid.res.num_warps == cost.ISSUE_PER_CLOCK)


@contextmanager
def one_warp_issue():
    """The model before the twenty-first session's cost.full_issue (two warps per scheduler, 64 rows or more), while
    the block runs: one_warp_full_issue in its place, and no cost.lone_pipeline (it came after), as every figure
    docs/perf.md quotes from the sections between."""
    with no_lone_pipeline(), _patched(cost, "full_issue", one_warp_full_issue, "one_warp_issue",
                                   moves=FLASH2_ROWS):  # its rule, as cost.full_issue's, holds LONE_FULL_ISSUE's alone
        yield


@contextmanager
def events_launch():
    """The model before the thirty-fifth session's second change, while the block runs: the Hopper kernel launched in
    GPU.launch_overhead_s (3.2 µs, CUDA events around each call) like every kernel, not in the empty kernel's launch
    replayed from a CUDA graph (GPU.graph_launch_s), as every figure docs/perf.md quotes from before it (and so no
    lone split program at one program's copy rate: lone_split_before)."""
    with lone_split_before(), _patched(Hopper, "GRAPH_LAUNCH", False, "events_launch", moves=HOPPER_ROWS):
        yield


@contextmanager
def lone_by_port():
    """The model before the thirty-fifth session's lone Hopper programs, while the block runs: a Hopper program's set-up
    1.421 µs warp-specialized (then gpusim.passes.hopper.WS_SETUP_S, derived from results/h200/program_setup.json,
    run 18) and none software-pipelined, and alone on its SM its first loads at the port's rate besides its busy
    time (cost.first_loads, as every other program's), as every figure docs/perf.md quotes from before it."""
    def setup_s(self, cfg):
        return 1.421e-06 if hopper_pass.launch_options(cfg)["warp_specialize"] else 0.0
    with events_launch(), _patched(Hopper, "setup_s", setup_s, "lone_by_port_setup", moves=HOPPER_ROWS), _patched(
            cost, "alone_wait", cost.first_loads, "lone_by_port", moves=HOPPER_ROWS):  # first_loads is a non-TMA pass's
        yield


@contextmanager
def no_measured_issue():
    """The model before the twenty-ninth session's cost.measured, while the block runs: dK/dV's warps on ISSUE_HIDING's
    line, its dots at mma_efficiency's rate, its instructions as counted, its loads on its chain."""
    with no_list_schedule(), _patched(Flash2Backward, "MEASURED_ISSUE", {}, "no_measured_issue", moves=TRAIN_ROWS):
        yield


@contextmanager
def preset_host_floor():
    """The model before the thirtieth session's host probe, while the block runs: every training step's host floor the
    preset's (GPU.train_step_host_s, host_run105.json's run), whatever the host's speed measured beside it."""
    with even_waves(), _patched(heldout, "simulated", partial(heldout.simulated, host_probe=False),
                                "preset_host_floor", moves=TRAIN_ROWS):  # the host probe is a training row's
        yield


COLUMN_KERNELS = ("dkdv", "dk", "dv")  # the backward's K/V-major launches (backward_base.column_work)


@contextmanager
def dkdv_by_waves():
    """The model before the thirty-third session's list-scheduled dK/dV, while the block runs: the backward's causal
    K/V-major launches (COLUMN_KERNELS), which run each problem's longest programs first, priced by the last-wave
    rule, as every figure docs/perf.md quotes from before it."""
    with lone_by_port():
        base = cost.listed  # as lone_by_port leaves it (one program an SM: one_slot_listed)
        with _patched(cost, "listed", lambda grid: base(grid) and grid.kernel not in COLUMN_KERNELS, "dkdv_by_waves",
                      moves=TRAIN_ROWS):
            yield


@contextmanager
def no_list_schedule():
    """The model before the thirty-first session's cost.list_schedule, while the block runs: every launch priced by the
    last-wave rule, the Hopper kernel's longest-first launches on a tail of each head's Q blocks in turn (its groups of
    heads not interleaved), as every figure docs/perf.md quotes from before it."""
    def work(self, cfg, kernel):
        return tiling.ramp_work(cfg.tiling, cfg.bh, (1, self.launch_order(cfg)[1]))
    with dkdv_by_waves(), _patched(Hopper, "work", work, "no_list_schedule_work", moves=HOPPER_ROWS), _patched(
            cost, "listed", lambda grid: False, "no_list_schedule", moves=HOPPER_ROWS | TRAIN_ROWS):  # longest_first
        yield


@contextmanager
def naive_events_launch():
    """The model before the thirty-ninth session's change, in part: naive's launches in GPU.launch_overhead_s (3.2 µs,
    CUDA events around each call), not in the graph's (Naive.GRAPH_LAUNCH)."""
    with waves_at_share(), _patched(Naive, "GRAPH_LAUNCH", False, "naive_events_launch", moves=NAIVE_ROWS):
        yield


@contextmanager
def pv_whole_wait():
    """The same, in part: pv's lone programs waiting for each step's whole load (Naive.LONE_PIPELINED)."""
    with waves_at_share(), _patched(Naive, "LONE_PIPELINED", (), "pv_whole_wait", moves=NAIVE_ROWS):
        yield


@contextmanager
def qk_overlapped():
    """The same, in part: qk's store hiding under its programs' loads and dots (Naive.STORED_AFTER,
    cost.stored_after)."""
    with waves_at_share(), _patched(Naive, "STORED_AFTER", {}, "qk_overlapped", moves=NAIVE_ROWS):
        yield


@contextmanager
def naive_before():
    """The model before the thirty-ninth session's change: the three above together."""
    with naive_events_launch(), pv_whole_wait(), qk_overlapped():
        yield


def split_tiles(self, launch, kernel):
    """SplitKV.compiled_tiles before the reduce's fix: every kernel under the split kernel's tiles (its padded query
    rows, the chunk). Of the reduce, only the entry at 16 rows and chunks of 64 was compiled: the same compiled kernel
    as its own entry at (REDUCE_ROWS, 64) now; at any other tiles, the estimate."""
    tiles = (launch.block_q, launch.block_kv)
    return (REDUCE_ROWS, 64) if kernel == "reduce" and tiles == (16, 64) else tiles


@contextmanager
def shared_chain():
    """The model before the decode reduce's fix, in part: a program's chain at its SM's issue rate whatever its warps
    (cost.own_hiding as cost.sm_hiding), so that two 2-warp reduce programs on an SM halved each other's chain. Only a
    block of fewer warps than the SM's schedulers is priced otherwise now: the decode reduce's."""
    with even_waves(), _patched(cost, "own_hiding", cost.sm_hiding, "shared_chain", moves=DECODE_ROWS):
        yield


@contextmanager
def reduce_at_split_tiles():
    """The same, in part: the reduce's compiled resources looked up under the split kernel's tiles (split_tiles)."""
    with even_waves(), _patched(SplitKV, "compiled_tiles", split_tiles, "reduce_at_split_tiles", moves=DECODE_ROWS):
        yield


# gpusim/compiled.py before the decode kernels were compiled past one tile of query rows: of decode and split_kv only
# the entries at MIN_ROWS padded rows (Llama-3-8B's 1 to 4 query rows a request, DECODE_D64's 1 and 2)
ONE_ROW_TILE = {key: value for key, value in COMPILED.items()
                if key[1] not in ("decode", "split_kv") or key[5] == MIN_ROWS}


@contextmanager
def split_rows_before():
    """The model before the split kernel's tiles of more query rows were compiled (docs/perf.md, "A model artefact,
    fixed"), while the block runs: a decode or split_kv launch whose query rows pad past MIN_ROWS is priced from the
    estimate (gpusim.occupancy.resources without its compiled entry, ONE_ROW_TILE), as every figure docs/perf.md
    quotes from before it."""
    with lone_split_before(), _patched(occupancy, "COMPILED", ONE_ROW_TILE, "split_rows_before", moves=DECODE_ROWS):
        yield


@contextmanager
def lone_split_before():
    """The model before the forty-seventh session's lone split program (docs/perf.md, "A split program alone on its
    SM"), while the block runs: a split_kv program alone on its SM issues its compute on ISSUE_HIDING's line, then waits
    for its block table's and its tiles' whole loads each step (SplitKV.LONE_COPY empty), as every figure docs/perf.md
    quotes from before it."""
    with even_waves(), _patched(SplitKV, "LONE_COPY", (), "lone_split_before", moves=DECODE_ROWS):
        yield


@contextmanager
def unsplit_lone_before():
    """The model before the forty-ninth session's lone unsplit program (docs/perf.md, "What happened on the H200"),
    while the block runs: the lone copy rule the split kernel's only (SplitKV.LONE_COPY), the unsplit decode kernel's
    lone program waiting for its block table's and its tiles' whole loads each step."""
    with even_waves(), _patched(SplitKV, "LONE_COPY", ("split_kv",), "unsplit_lone_before", moves=DECODE_ROWS):
        yield


@contextmanager
def before_ragged():
    """The model before the fifty-first session's ragged decode wave (cost.ragged_wave; docs/perf.md, "A ragged decode
    wave, adopted"), while the block runs: every decode batch priced by the waves' rule, as every figure docs/perf.md
    quotes from before it."""
    with even_waves(), _patched(cost, "ragged_wave", lambda grid: False, "before_ragged", moves=DECODE_ROWS):
        yield


@contextmanager
def even_waves():
    """The model before the sixty-fifth session's cost.last_longest (and the list schedule at two or more programs an
    SM, after it), while the block runs: a one-wave launch spread unevenly over the SMs (136 programs on 132) priced on
    its fullest SMs alone, with the launch's Schedule, as every figure docs/perf.md quotes from before it (each context
    above that enters no other enters this one, but naive's three, whose launches it does not move: they enter
    waves_at_share, the one later change that moves them)."""
    with one_slot_listed(), _patched(cost, "last_longest", cost.fullest, "even_waves"):
        yield


@contextmanager
def one_slot_listed():
    """The model before the sixty-sixth session's list schedule at two or more programs an SM (cost.listed), while the
    block runs: a longest-first launch past one wave of b > 1 programs an SM priced by the last-wave rule alone (as
    before the sixty-fifth session's cost.in_full, which bounded it below and which the list schedule replaced)."""
    base = cost.listed  # an outer context's, where one has put an older rule back

    def listed(grid):
        return grid.resident == 1 and base(grid)
    with alone_pipelines(), _patched(cost, "listed", listed, "one_slot_listed", moves=HOPPER_ROWS | TRAIN_ROWS):
        yield


@contextmanager
def reduce_before():
    """The model before the decode reduce's fix (docs/perf.md, "A model artefact, fixed"), while the block runs: the two
    above together, and the split kernel's entries at one tile of query rows only (split_rows_before), as every figure
    docs/perf.md quotes from before it."""
    with split_rows_before(), shared_chain(), reduce_at_split_tiles():
        yield


@contextmanager
def _within_both(outer, inner):
    with outer, inner:
        yield


@contextmanager
def alone_pipelines():
    """The model before the sixty-seventh session's cost.pipelined_beside, while the block runs: a 4-warp flash2 program
    beside others on its SM waits for every step's loads whole, its pipeline credited alone only (cost.lone_pipeline),
    as every figure docs/perf.md quotes from before it."""
    with waves_at_share(), _patched(cost, "pipelined_beside", lambda grid: False, "alone_pipelines",
                                    moves=FLASH2_ROWS):
        yield


def before_last_at_share(step, total, tail_steps):
    """cost.before_last before the sixty-seventh session: every program's tau at b an SM less the last wave's programs'
    at the wave's share of the bandwidth (as cost.wave_time prices them)."""
    grid = step.grid
    sharing = cost.wave_sharing(step, tail_steps, (grid.programs - 1) % grid.slots + 1)
    return total - sum(cost.tau(step, tail_steps, sharing, grid.resident).tolist())


@contextmanager
def waves_at_share():
    """The model before the sixty-seventh session's last wave counted once (cost.before_last), while the block runs:
    a launch's waves before its last priced as every program's tau at b an SM less the last wave's at its share of the
    bandwidth, as every figure docs/perf.md quotes from before it."""
    with pipelines_from_64(), _patched(cost, "before_last", before_last_at_share, "waves_at_share"):
        yield


def pipelined_from_64(grid):
    """cost.lone_pipeline before the sixty-eighth session: a lone 4-warp program of 64 rows or more (cost.full_issue's
    tiles), or a lone program of a pass_.LONE_PIPELINED kernel, pipelined S > 2 deep."""
    lone = ((cost.full_issue(grid) and grid.res.num_warps == cost.ISSUE_PER_CLOCK)
            or (grid.kernel in grid.cfg.pass_.LONE_PIPELINED and grid.resident == 1))
    return lone and grid.res.num_stages > 2


@contextmanager
def pipelines_from_64():
    """The model before the sixty-eighth session's two rules, while the block runs: a lone 4-warp program of 16 or 32
    rows waits for every step's loads whole (cost.lone_pipeline at 64 rows or more), as every figure docs/perf.md
    quotes from before it; and tail_at_b."""
    with tail_at_b(), _patched(cost, "lone_pipeline", pipelined_from_64, "pipelines_from_64", moves=FLASH2_ROWS):
        yield


def fullest_at_b(step, tail_steps, sharing, tail, last):
    """cost.fullest before the sixty-eighth session: the last wave's longest program beside last_per_sm others, on the
    launch's Schedule (made at b an SM) whatever that count."""
    per_sm = cost.last_per_sm(step.grid, last)
    return max(tail if per_sm == step.grid.resident else cost.tau(step, tail_steps, sharing, per_sm).tolist())


@contextmanager
def tail_at_b():
    """The model before the sixty-eighth session's cost.fullest, while the block runs: a last wave of fewer programs an
    SM than b priced on the launch's Schedule, made at b an SM."""
    with _patched(cost, "fullest", fullest_at_b, "tail_at_b"):
        yield

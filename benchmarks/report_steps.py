"""docs/perf.md's tables of a step on an SM, measured and priced, and the trials of its pricing: a lone flash2 program
(lone_program.json) and its compute alone (overlap_d128.json), the issue rate (measured_issue, and the tables of
line_issue and one_warp_issue), the pipeline (pipelined, lone_pipelined), the copies (lone_copy), whole tiles in the
dots (ragged_tiles.json), programs sharing an SM (mva, shared_sm, exposed_wait); and the backward's: several query
heads per K/V head (bwd_gqa.json), its programs sharing an SM (bwd_sharing.json), Nsight's issue rates and the
tensor pipe (bwd_rates.json, fwd_rates.json: nsight_pipe, cost.measured).
"""
import itertools
import json
import math
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path

import numpy as np

from benchmarks import agreement, h200_constants
from benchmarks.report_heldout import (
    BLIND_LONE_COPY, BLIND_LONE_PIPELINE, BLIND_MEASURED_ISSUE, BLIND_TWO_WARP, BLIND_WHOLE_DOTS, EIGHTEEN, NEWEST,
    TWENTY_EIGHT, TWENTY_SIX, TWENTY_TWO, change_scores, labelled, meets_target, model_scores, sets_share, trial_scores)
from benchmarks.report_history import (
    FLASH2_ROWS, NAIVE_ROWS, TRAIN_ROWS, _patched, counted_dots, line_issue, no_lone_copy, no_lone_pipeline,
    no_measured_issue, one_warp_issue)
from benchmarks.report_kernels import backward_kernel, bwd_kernel_rows, tiles_bwd_table
import gpusim
from gpusim import cost
from gpusim.passes.flash1 import Flash1
from gpusim.passes.flash2 import Flash2
from gpusim.passes.flash2_backward import Flash2Backward
from gpusim_course.provenance import heldout


def lone_program_rows(l2="cold"):
    """results/h200/lone_program.json's launches with their inputs `l2` ("cold": rotated past twice the L2, as the
    fitted and held-out sets are timed; "warm": one set replayed) against the current model: {(head_dim, block_q,
    block_kv, num_stages): (step measured, step predicted, J = 1 measured, J = 1 predicted)}, in µs; a step is the
    slope of the time over J = 1-16 K/V blocks (least squares for the measured, J = 1 to 16 for gpusim's)."""
    out = {}
    for key, us in h200_constants.lone_steps(l2).items():
        one, sixteen = (lone_launch_us(*key, steps) for steps in (1, 16))
        out[key] = (h200_constants.slope(us), (sixteen - one) / 15, us[1], one)
    return out


def lone_program_table():
    """lone_program_rows() as docs/perf.md's table: the step and the one-step launch, measured warm and cold,
    gpusim's, and gpusim's over the cold measurement; the last column, the step under pipelined_chain (not
    adopted) over the cold one."""
    lines = ["| d | tile | stages | step warm, µs | cold | gpusim | ÷ cold | J = 1 warm, µs | cold | gpusim | ÷ cold "
             "| S − 1 in flight ÷ cold |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    warm = lone_program_rows("warm")
    with pipelined():
        trial = lone_program_rows("cold")
    for key, (slope, step, one, predicted) in lone_program_rows("cold").items():
        d, bq, bk, stages = key
        w = warm.get(key, (float("nan"),) * 4)
        lines.append(f"| {d} | {bq} × {bk} | {stages} | {w[0]:.2f} | {slope:.2f} | {step:.2f} | {step / slope:.2f} | "
                     f"{w[2]:.2f} | {one:.2f} | {predicted:.2f} | {predicted / one:.2f} | {trial[key][1] / slope:.2f} |")
    return "\n".join(lines)


def pipelined_chain(base, step, step_reloads):
    """A trial rule, not adopted (docs/perf.md, "A lone program"): a flash2 step that Triton pipelines num_stages
    S > 2 deep waits for one round of its compute and loads over the S - 1 tiles in flight, and at least for its
    compute (Little's law); at S = 2, for every other kernel, and where the model pipelines already
    (cost.lone_pipeline), the model's rule (base: cost.step_chain)."""
    chain, stages = base(step, step_reloads), step.grid.res.num_stages
    if step.prefetched or stages <= 2 or step.grid.kernel != "flash2" or cost.lone_pipeline(step.grid):
        return chain
    loads = cost.wait(step.grid.cfg.gpu, step.step_bytes)
    return chain - step.serial_s - loads + max(step.serial_s, (step.serial_s + loads) / (stages - 1))


# cost.lone_pipeline as adopted: the model's rule, which no_lone_pipeline() turns off for the sections written before it.
LONE_PIPELINE = cost.lone_pipeline


@contextmanager
def lone_pipelined():
    """The twentieth session's trial (docs/perf.md, "A lone program's pipeline"), adopted since: cost.lone_pipeline
    back in force inside a context that turned it off. Inside one_warp_issue() it is the trial as tried: Little's law
    for the pipeline (pipelined_chain) where a lone 4-warp flash2 program issues at the full rate."""
    with _patched(cost, "lone_pipeline", LONE_PIPELINE, "lone_pipelined", moves=FLASH2_ROWS | NAIVE_ROWS):
        yield


@contextmanager
def pipelined():
    """The model with pipelined_chain in cost.one_step's place of cost.step_chain, while the block runs."""
    with _patched(cost, "step_chain", partial(pipelined_chain, cost.step_chain), "pipelined"):
        yield


def lone_launch(head_dim, tiles, steps, programs_per_sm=1):
    """gpusim's Result for lone_program.py's launch: 132 x programs_per_sm programs (programs_per_sm on each SM), one Q
    block and `steps` K/V blocks each."""
    return gpusim.simulate("flash2", batch=1, heads=132 * programs_per_sm, seq=tiles.block_q,
                           seq_kv=steps * tiles.block_kv, head_dim=head_dim, dtype="fp16", gpu=agreement.PRESET,
                           tiles=tiles)


def lone_launch_us(head_dim, block_q, block_kv, num_stages, steps):
    """gpusim's time for lone_program.py's launch, µs."""
    return 1e6 * lone_launch(head_dim, gpusim.Tiles(block_q, block_kv, num_stages=num_stages), steps).predicted_time_s


def compute_alone_rows():
    """results/h200/overlap_d128.json (run 103): flash2's loop without its loads at d = 128, one program per SM, against
    gpusim's compute of a lone flash2 step on that tile: {(block_q, block_kv): (warps, measured µs per step, matmuls,
    issue, issue at the full rate, SFU, serial, the step's load wait)}, gpusim's in µs (cost.unit_times, one_step's
    serial_s, cost.wait), for lone_program.py's launch (132 programs, one per SM)."""
    out = {}
    for r in json.loads((agreement.RESULTS / "overlap_d128.json").read_text())["rows"]:
        if r["programs_per_sm"] != 1 or "ms" not in r:
            continue
        grid, step = cost.schedule(gpusim.simulate("flash2", batch=1, heads=132, seq=r["br"], seq_kv=16 * r["bc"],
                                              head_dim=r["d"], dtype="fp16", gpu=agreement.PRESET, block_q=r["br"],
                                              block_kv=r["bc"]))
        unit, _, _ = cost.unit_times(grid, step.rate)
        with measured_issue():  # the same instructions issued at the full rate
            full, _, _ = cost.unit_times(grid, step.rate)
        assert grid.resident == 1 and grid.res.num_warps == r["num_warps"]
        out[r["br"], r["bc"]] = (r["num_warps"], r["ms"] * 1e3 / r["repeats"], *(1e6 * unit[u] for u in ("mma", "issue")),
                                 1e6 * full["issue"], 1e6 * unit["sfu"], 1e6 * step.serial_s,
                                 1e6 * cost.wait(grid.cfg.gpu, step.step_bytes))
    return out


def compute_alone_table():
    """compute_alone_rows() as docs/perf.md's table."""
    lines = ["| tile | warps | measured, µs a step | gpusim: matmuls | issue | SFU | serial | ÷ measured | "
             "matmuls + issue at the full rate, ÷ measured |", "|---|---|---|---|---|---|---|---|---|"]
    for (bq, bk), (warps, us, mma, issue, full, sfu, serial, _) in compute_alone_rows().items():
        lines.append(f"| {bq} × {bk} | {warps} | {us:.3f} | {mma:.3f} | {issue:.3f} | {sfu:.3f} | {serial:.3f} | "
                     f"{serial / us:.2f} | {(mma + max(full, sfu)) / us:.2f} |")
    return "\n".join(lines)


def exposed_loads_table():
    """The lone step (lone_program.json, cold) less its compute alone (compute_alone_rows), at d = 128 on the tiles both
    measured, per pipeline depth: what the step's loads add, against gpusim's wait for them (cost.wait)."""
    alone = compute_alone_rows()
    lines = ["| tile | warps | stages | lone step, µs | compute alone | step − compute | gpusim's wait | ÷ wait |",
             "|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, stages), (step, *_) in sorted(lone_program_rows("cold").items()):
        if d == 128 and (bq, bk) in alone:
            warps, compute, *_, wait = alone[bq, bk]
            lines.append(f"| {bq} × {bk} | {warps} | {stages} | {step:.2f} | {compute:.2f} | {step - compute:.2f} | "
                         f"{wait:.2f} | {(step - compute) / wait:.2f} |")
    return "\n".join(lines)


@contextmanager
def measured_issue():
    """A trial, not adopted (docs/perf.md, "That compute alone, measured"): cost.ISSUE_HIDING at what run 103 measured
    (1.0: one warp per scheduler issues flash2's loop at the full rate), flash1 keeping the 0.45 fitted on its rows as
    its own, while the block runs."""
    base, flash1 = cost.ISSUE_HIDING, Flash1.ISSUE_HIDING
    cost.ISSUE_HIDING, Flash1.ISSUE_HIDING = 1.0, {"flash1": base}
    try:
        with agreement.trial("measured_issue"):
            yield
    finally:
        cost.ISSUE_HIDING, Flash1.ISSUE_HIDING = base, flash1


def issue_trial_table():
    """trial_scores() under the model and under measured_issue()."""
    now = model_scores()
    with measured_issue():
        trial = trial_scores()
    return "\n".join(["| rows | the model | `ISSUE_HIDING` 1.0 (trial) |", "|---|---|---|"]
                     + [f"| {name} | {now[name]} | {trial[name]} |" for name in now])


def lone_pipeline_table():
    """trial_scores() under the model and under lone_pipelined(), and run 111's two sets, as docs/perf.md's table."""
    now, newest = model_scores(), sets_share(NEWEST)
    with lone_pipelined():
        trial, newest_trial = trial_scores(), sets_share(NEWEST)
    return "\n".join(["| rows | the model | S − 1 in flight, lone 4-warp programs (trial) |", "|---|---|---|"]
                      + [f"| {name} | {now[name]} | {trial[name]} |" for name in now]
                      + [f"| held-out, run 111's two sets | {newest} | {newest_trial} |"])


def two_warp_overlap_step(base, grid, rate):
    """A trial rule, not adopted (docs/perf.md, "Two warps per scheduler"): cost.one_step (base), but a lone flash2
    program of 8 warps where cost.full_issue holds overlaps one warp's matmuls with the other's instructions on each
    scheduler: its step's compute the greater of the two plus half the lesser, as two streams would."""
    step = base(grid, rate)
    if not cost.full_issue(grid) or grid.res.num_warps != 2 * cost.ISSUE_PER_CLOCK:
        return step
    unit, step_reloads, _ = cost.unit_times(grid, rate)
    units = (unit["mma"], max(unit["issue"], unit["sfu"]))
    compute = max(units) + min(units) / 2
    draft = replace(step, serial_s=compute, overlapped_s=compute)
    return replace(draft, chain_s=cost.step_chain(draft, step_reloads))


@contextmanager
def two_warp_overlap():
    """The model with two_warp_overlap_step in cost.schedule's place of cost.one_step, while the block runs."""
    with _patched(cost, "one_step", partial(two_warp_overlap_step, cost.one_step), "two_warp_overlap",
                  moves=FLASH2_ROWS):  # a step where cost.full_issue holds: flash2's alone
        yield


def adopted_pipeline_table():
    """trial_scores() before the twenty-second session's cost.lone_pipeline (no_lone_pipeline) and after it; the sets
    scored apart from the trials (runs 111 and 112), and run 114's, scored once (blind) after it."""
    rows = (("held-out, runs 111 and 112 (four sets)", NEWEST + BLIND_TWO_WARP),
            ("held-out, run 114's two sets (blind)", BLIND_LONE_PIPELINE))
    with no_lone_pipeline():
        before, before_sets = model_scores(), [sets_share(names) for _, names in rows]
    now = model_scores()
    return "\n".join(["| rows | every step waits its whole load (before) | S − 1 in flight, lone 4-warp programs (the "
                      "model) |", "|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} |" for name in now]
                     + [f"| {label} | {b} | {sets_share(names)} |" for (label, names), b in zip(rows, before_sets)])


def lone_copy_table():
    """trial_scores() before the twenty-fourth session's cost.lone_copy (no_lone_copy) and after it; all the held-out
    sets scored before it, pooled; run 116's two sets, scored once (blind) after it."""
    with no_lone_copy():
        before, pooled_before = model_scores(), sets_share(TWENTY_TWO)
    now = model_scores()
    return "\n".join(["| rows | every 8-warp step waits its whole load (before) | lone 8-warp programs at the copy rate "
                      "(the model) |", "|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} |" for name in now]
                     + [f"| held-out, the twenty-two sets scored before it | {pooled_before} | {sets_share(TWENTY_TWO)} |",
                        f"| held-out, run 116's two sets (blind) | - | {sets_share(BLIND_LONE_COPY)} |"])


def lone_copy_steps_table():
    """lone_program_rows() of 8 warps (128 rows) at 3 and 4 stages: the cold step, gpusim's before cost.lone_copy and
    with it, and the rate each step moves its K/V bytes at."""
    with no_lone_copy():
        before = lone_program_rows("cold")
    lines = ["| d | tile | stages | step cold, µs | K/V bytes ÷ step, GB/s | gpusim before, ÷ cold | with the copy rate, "
             "÷ cold |", "|---|---|---|---|---|---|---|"]
    for key, (slope, step, *_) in lone_program_rows("cold").items():
        d, bq, bk, stages = key
        if h200_constants.copy_bound(key):
            lines.append(f"| {d} | {bq} × {bk} | {stages} | {slope:.2f} | {2 * bk * d * 2 / slope / 1e3:.1f} | "
                         f"{before[key][1] / slope:.2f} | {step / slope:.2f} |")
    return "\n".join(lines)


def ragged_tiles_rows():
    """results/h200/ragged_tiles.json (run 122): {(kernel, head_dim): {N: (measured ms, gpusim's ms on the counted
    FLOPs, gpusim's ms on whole tiles)}}, each kernel at N = N_kv from 385 to 513."""
    rows = [dict(r, provider=r["kernel"].split("_")[0])
            for r in json.loads((agreement.RESULTS / "ragged_tiles.json").read_text())["rows"]]
    with counted_dots():
        counted = [agreement.predicted_s(row) for row in rows]
    out = {}
    for row, before in zip(rows, counted):
        out.setdefault((row["kernel"], row["head_dim"]), {})[row["seq"]] = (row["ms"], before * 1e3,
                                                                            agreement.predicted_s(row) * 1e3)
    return out


def ragged_tiles_share(field):
    """The share of ragged_tiles.json's launches gpusim prices within 20%; field 1: on the counted FLOPs, 2: whole."""
    ratios = [t[field] / t[0] for launches in ragged_tiles_rows().values() for t in launches.values()]
    return f"{sum(abs(r - 1) <= 0.2 for r in ratios) / len(ratios):.1%} of {len(ratios)}"


def ragged_tiles_table():
    """ragged_tiles_rows(): per kernel and head dim, the measured times from N = 385 to 513, and gpusim's over them
    on the counted FLOPs and on whole tiles (cost.dot_padding)."""
    lines = ["| kernel | d | measured ms, N = 385 / 416 / 448 / 480 / 512 / 513 | gpusim / measured, counted FLOPs | "
             "whole tiles (the model) |", "|---|---|---|---|---|"]
    for (kernel, d), launches in ragged_tiles_rows().items():
        cells = [" / ".join(f"{t[0]:.3f}" for t in launches.values())] + [
            " / ".join(f"{t[field] / t[0]:.2f}" for t in launches.values()) for field in (1, 2)]
        lines.append(f"| {kernel} | {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def whole_dots_trial_table():
    """trial_scores() before the twenty-seventh session's cost.dot_padding (counted_dots) and after it, with
    ragged_tiles.json's rows; the thirty held-out sets scored before it, pooled and per kind, and how many meet issue 24's
    target; run 121's two sets, scored once (blind) after it."""
    def scores(field):
        pooled = labelled([p for name in TWENTY_SIX for p in agreement.heldout_rows(name)])
        return model_scores() | {"ragged_tiles.json": ragged_tiles_share(field)} | {
            f"held-out, {label}": heldout.share(pooled, label) for label in heldout.KINDS.values()} | (
            change_scores(TWENTY_SIX, "thirty", BLIND_WHOLE_DOTS, 121))
    with counted_dots():
        before = scores(1)
    now = scores(2)
    return "\n".join(["| rows | dots on the counted FLOPs (before) | on whole tiles (the model) |", "|---|---|---|"]
                      + [f"| {name} | {before[name]} | {now[name]} |" for name in now])


def bwd_gqa_rows():
    """results/h200/bwd_gqa.json (run 127): {(kernel, head_dim, causal, seq): {kv_heads: (measured ms, gpusim's ms)}},
    each backward kernel at batch 1 and 16 query heads, priced at the tiles it ran."""
    out = {}
    for r in json.loads((agreement.RESULTS / "bwd_gqa.json").read_text())["rows"]:
        model = backward_kernel(r, r["kernel"]).predicted_time_s * 1e3
        out.setdefault((r["kernel"], r["head_dim"], r["causal"], r["seq"]), {})[r["kv_heads"]] = (r["ms"], model)
    return out


def bwd_gqa_table():
    """bwd_gqa_rows(): per kernel and shape, the measured time at 16, 8, 4 and 2 K/V heads, the slowdown from 16 to 2
    measured and in gpusim, and gpusim's time over the measured one at each."""
    lines = ["| kernel | d | causal | N | ms at 16 / 8 / 4 / 2 K/V heads | 2 ÷ 16, measured | gpusim | "
             "gpusim ÷ measured, 16 / 8 / 4 / 2 |", "|---|---|---|---|---|---|---|---|"]
    for (kernel, d, causal, seq), kv in bwd_gqa_rows().items():
        lines.append(f"| {kernel} | {d} | {'yes' if causal else 'no'} | {seq:,} | "
                     + " / ".join(f"{m:.3f}" for m, _ in kv.values())
                     + f" | {kv[2][0] / kv[16][0]:.2f} | {kv[2][1] / kv[16][1]:.2f} | "
                     + " / ".join(f"{p / m:.2f}" for m, p in kv.values()) + " |")
    return "\n".join(lines)


def bwd_sharing_rows():
    """results/h200/bwd_sharing.json (run 126): {(kernel, head_dim, block_q, block_kv): {m: (measured µs, gpusim's µs,
    b)}}, one step of each of the m programs an SM holds: the slope of a one-wave launch's time from J = 4 to 16 steps,
    b the programs gpusim has an SM hold."""
    launches = {}
    for r in json.loads((agreement.RESULTS / "bwd_sharing.json").read_text())["rows"]:
        result = gpusim.simulate("flash2", seq=r["seq"], seq_kv=r["seq_kv"], head_dim=r["head_dim"], heads=r["heads"],
                                 dtype="fp16", gpu=agreement.PRESET, backward=True,
                                 backward_blocks=(r["block_q"], r["block_kv"]))
        kernel = next(k for k in result.kernels if k.name == r["kernel"])
        key = (r["kernel"], r["head_dim"], r["block_q"], r["block_kv"])
        launches.setdefault(key, {}).setdefault(r["per_sm"], {})[r["steps"]] = (
            r["ms"] * 1e3, kernel.predicted_time_s * 1e6, kernel.blocks_per_sm)
    return {key: {m: ((j[16][0] - j[4][0]) / 12, (j[16][1] - j[4][1]) / 12, j[16][2]) for m, j in per_sm.items()}
            for key, per_sm in launches.items()}


def bwd_sharing_table():
    """bwd_sharing_rows(): per kernel and tile, a step of the m programs an SM holds, measured, and gpusim's over it."""
    lines = ["| kernel | d | tile | b | µs a step, m = 1 … b per SM | gpusim ÷ measured |", "|---|---|---|---|---|---|"]
    for (kernel, d, bq, bk), steps in bwd_sharing_rows().items():
        b = steps[max(steps)][2]
        lines.append(f"| {kernel} | {d} | {bq} × {bk} | {b} | " + " / ".join(f"{m:.2f}" for m, _, _ in steps.values())
                     + " | " + " / ".join(f"{p / m:.2f}" for m, p, _ in steps.values()) + " |")
    return "\n".join(lines)


def full_sm_steps(group=("fp16", 64, False, 8192, 2, 16)):
    """{(kernel, block_q, block_kv): (µs a step of b programs in bwd_kernels.json's launch of `group` (dtype, head dim,
    causal, N, batch, heads): its time over its steps per slot, the SMs x b slots gpusim has; µs a step of b programs
    in bwd_sharing.json's one-wave probe)} for the d = 64 tiles both measured: the same SM full, its tiles from L2 in
    the training launch (each K/V or Q block read by many programs), from DRAM in the probe."""
    sharing = bwd_sharing_rows()
    out = {}
    for r in bwd_kernel_rows():
        key = (r["kernel"], r["head_dim"], r["block_q"], r["block_kv"])
        if tuple(r[k] for k in ("dtype", "head_dim", "causal", "seq", "batch", "heads")) != group or key not in sharing:
            continue
        cfg = gpusim.backward.config("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"],
                                     causal=r["causal"], block_q=r["block_q"], block_kv=r["block_kv"],
                                     gpu=agreement.PRESET)
        work = cfg.pass_.work(cfg, r["kernel"])
        steps = work.steps
        slots = cfg.gpu.sm_count * r["model_blocks"]
        probe = sharing[key]
        out[key[0], *key[2:]] = (r["ms"] * 1e3 / (steps / slots), probe[max(probe)][0])
    return out


@contextmanager
def backward_full_issue(kernels=("dkdv", "dq")):
    """A trial, not adopted (docs/perf.md, "The backward's programs sharing an SM"): cost.full_issue's rule for a lone
    program (the full issue rate) given to these kernels of flash2's backward, while the block runs."""
    with _patched(Flash2Backward, "LONE_FULL_ISSUE", kernels, ("backward_full_issue", kernels), moves=TRAIN_ROWS):
        yield


def bwd_rates_rows():
    """results/h200/bwd_rates.json (run 128), each launch with what Nsight shows of it and gpusim's parts of the same
    launch (nsight_parts)."""
    out = []
    for r in json.loads((agreement.RESULTS / "bwd_rates.json").read_text())["rows"]:
        shape = dict(seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"], causal=r["causal"],
                     dtype=r["dtype"], gpu=agreement.PRESET)
        cfg = gpusim.backward.config("flash2", block_q=r["block_q"], block_kv=r["block_kv"], **shape)
        result = gpusim.simulate("flash2", backward=True, backward_blocks=(r["block_q"], r["block_kv"]), **shape)
        out.append(nsight_parts(r, cfg, result))
    return out


def forward_nsight_rows(name="bwd_stalls.json"):
    """The forward launches of results/h200/bwd_stalls.json (run 60: flash2 at 64 x 32, 64 x 64 and 128 x 64, the last
    also as its default tile) or fwd_rates.json (run 129: d = 64 and 128, five tiles each), each with nsight_parts."""
    out = []
    for r in json.loads((agreement.RESULTS / name).read_text())["rows"]:
        if r["kernel"] == "flash2":
            result = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"],
                                     causal=r["causal"], dtype=r["dtype"], gpu=agreement.PRESET,
                                     block_q=r["block_q"], block_kv=r["block_kv"])
            out.append(nsight_parts(r, result.config, result))
    return out


def nsight_parts(r, cfg, result):
    """Nsight's row r of one launch of r["kernel"], with b (programs an SM holds), the issue rate of one warp over the
    cycles its tensor pipe is idle (idle_rate), tensor share + issue rate (busy), gpusim's matmul time over the tensor
    pipe's active time (mma), its instructions (at the full rate, one a clock per scheduler) over those issued
    (issued), and gpusim's time over the measured (ratio)."""
    k = next(k for k in result.kernels if k.name == r["kernel"])
    grid = cost.occupied(cfg, k.name, {t: rw for (n, t), rw in result.counts.items() if n == k.name},
                         {t: rw for (n, t), rw in result.dram.items() if n == k.name},
                         (k.flops_matmul, k.flops_other, k.exps))
    rate = cost.rates(grid)
    unit, _, _ = cost.unit_times(grid, rate)
    instructions = cfg.pass_.issue(cfg, k.name, grid.res, k.flops_other, k.exps, grid.steps, grid.programs)[0]
    per_sm, seconds = grid.steps / cfg.gpu.sm_count, r["us"] * 1e-6  # a step's, over the SM's steps
    issue_s = instructions * grid.res.num_warps / rate["issue"]  # a step's instructions at one a clock a scheduler
    return dict(r, b=grid.resident, idle_rate=idle_rate(r), busy=r["tensor_pct"] / 100 + r["issue_per_cycle"],
                mma=unit["mma"] * per_sm / (r["tensor_pct"] / 100 * seconds),
                issued=issue_s * per_sm / (r["issue_per_cycle"] * seconds), ratio=k.predicted_time_s / seconds)


def idle_rate(r):
    """Nsight's row r of one launch: the instructions one warp issues a cycle over the cycles the tensor pipe is idle
    (the scheduler's issue rate over its idle share, per warp it holds)."""
    return r["issue_per_cycle"] / (1 - r["tensor_pct"] / 100) / r["warps_per_scheduler"]


def nsight_table(rows):
    """Rows of nsight_parts as docs/perf.md shows them."""
    lines = ["| d | kernel | tile | b | warps per scheduler | a warp's issue rate, tensor pipe idle | tensor + issue | "
             "gpusim's matmul ÷ tensor active | gpusim's instructions ÷ issued | gpusim ÷ measured |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['head_dim']} | {r['kernel']} | {r['block_q']} × {r['block_kv']} | {r['b']} | "
                     f"{r['warps_per_scheduler']:.1f} | {r['idle_rate']:.2f} | {r['busy']:.2f} | {r['mma']:.2f} | "
                     f"{r['issued']:.2f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def dkdv_warp_rate():
    """The issue rate of one resident dK/dV warp, from Nsight (results/h200/bwd_stalls.json, run 60): its instructions a
    cycle over the cycles its tensor pipe is idle, per warp per scheduler, the mean over the two dK/dV launches (64 x 64
    and 64 x 32, fp16, d = 64, N = 8K)."""
    rows = [r for r in json.loads((agreement.RESULTS / "bwd_stalls.json").read_text())["rows"] if r["kernel"] == "dkdv"]
    return float(np.mean([idle_rate(r) for r in rows]))


@contextmanager
def dkdv_measured_rate():
    """A trial, not adopted (docs/perf.md, "The backward's programs sharing an SM"): flash2's dK/dV warps issue at the
    rate Nsight measured for them (dkdv_warp_rate) instead of ISSUE_HIDING's, at every tile, while the block runs."""
    rate = dkdv_warp_rate()
    with _patched(Flash2Backward, "ISSUE_HIDING", {"dkdv": rate}, ("dkdv_measured_rate", rate), moves=TRAIN_ROWS):
        yield


def nsight_launches():
    """runs 128 and 129's launches (bwd_rates.json: dK/dV and dQ; fwd_rates.json: the flash2 forward), each with
    nsight_parts."""
    return bwd_rates_rows() + forward_nsight_rows("fwd_rates.json")


def measured_warp_rate(kernel="dkdv"):
    """The issue rate of one `kernel` warp over the cycles its tensor pipe is idle, the median of run 128's launches
    (results/h200/bwd_rates.json: six tiles, d = 64 and 128)."""
    return float(np.median([r["idle_rate"] for r in bwd_rates_rows() if r["kernel"] == kernel]))


@lru_cache(maxsize=None)
def pipe_ratios():
    """{block_kv: gpusim's matmul time over the tensor pipe's active cycles}, the median over nsight_launches' of that
    block_kv (every kernel, d, block_q and warp count alike): how much faster the pipe runs than the efficiencies
    matmul_tiles.py measured by the wall clock (gpu.mma_efficiency) say (under no_measured_issue; computed
    once a process, as nsight_pipe reads it on every entry)."""
    by_kv = {}
    with no_measured_issue():  # gpusim's matmul time at mma_efficiency
        launches = nsight_launches()
    for r in launches:
        by_kv.setdefault(r["block_kv"], []).append(r["mma"])
    return {kv: float(np.median(v)) for kv, v in sorted(by_kv.items())}


@lru_cache(maxsize=None)
def issued_ratio():
    """gpusim's instructions over those Nsight counted issued, the median over nsight_launches (once a process)."""
    with no_measured_issue():  # gpusim's instructions as counted
        return float(np.median([r["issued"] for r in nsight_launches()]))


PIPE_KERNELS = ("flash2", "dkdv", "dq")  # the kernels Nsight measured so (runs 128, 129)
PIPE_GRID = ((0.35, 0.4, 0.45, 0.5), (0.0, 0.05, 0.1, 0.15, 0.3))  # (ISSUE_HIDING, CONTENTION) refitted on


def pipe_rates(base, pipe, issued, grid):
    """cost.rates (base), the tensor pipe of PIPE_KERNELS at pipe[block_kv] (the nearest block_kv's) times its rate,
    and their instruction issue at `issued` of it (their instructions over issued_ratio)."""
    rate = base(grid)
    if grid.kernel not in PIPE_KERNELS:
        return rate
    return dict(rate, tensor=rate["tensor"] * cost.at_nearest(pipe, grid.cfg.block_kv), issue=rate["issue"] * issued)


@contextmanager
def nsight_pipe(hiding, contention, issued=False):
    """A trial, not adopted (docs/perf.md, "The tensor pipe's rate from Nsight"): PIPE_KERNELS' dots at the tensor
    pipe's rate Nsight measured (pipe_ratios), with issued, their instructions as Nsight counts them (issued_ratio), and
    their ISSUE_HIDING and CONTENTION at `hiding` and `contention`, while the block runs."""
    scale = issued_ratio() if issued else 1.0
    rates = partial(pipe_rates, cost.rates, pipe_ratios(), scale)
    saved = {cls: (cls.ISSUE_HIDING, cls.CONTENTION) for cls in (Flash2, Flash2Backward)}
    for cls in saved:
        kernels = [k for k in PIPE_KERNELS if k in cls.STEP_TENSORS]
        cls.ISSUE_HIDING = {**cls.ISSUE_HIDING, **dict.fromkeys(kernels, hiding)}
        cls.CONTENTION = {**cls.CONTENTION, **dict.fromkeys(kernels, contention)}
    try:
        with _patched(cost, "rates", rates, ("nsight_pipe", hiding, contention, issued), moves=FLASH2_ROWS):
            yield
    finally:
        for cls, (hiding_table, contention_table) in saved.items():
            cls.ISSUE_HIDING, cls.CONTENTION = hiding_table, contention_table


def issue_half():
    """The half ISSUE_HIDING and CONTENTION were fitted on: the d = 64 rows of bench.json and tiles.json, priced."""
    return [p for name in ("bench.json", "tiles.json") for p in agreement.rows(name, head_dim=64)]


def fitted_half_error():
    """(share within 20%, mean |ln(gpusim / measured)|) of the half ISSUE_HIDING and CONTENTION were fitted on."""
    pairs = issue_half()
    return agreement.summary(pairs)["within 20%"], float(np.mean([abs(math.log(r)) for _, r in pairs]))


def pipe_fit(issued=False):
    """{(hiding, contention): fitted_half_error()} over PIPE_GRID under nsight_pipe, and the point fitted: the most rows
    within 20%, then the least mean error (computed once a process under each state of the model: agreement.state())."""
    return _pipe_fit(issued, agreement.state())


@lru_cache(maxsize=None)
def _pipe_fit(issued, model):
    scores = {}
    for point in itertools.product(*PIPE_GRID):
        with nsight_pipe(*point, issued=issued):
            scores[point] = fitted_half_error()
    return scores, max(scores, key=lambda p: (scores[p][0], -scores[p][1]))


def backward_picks():
    """tiles_bwd_table's pick ÷ fastest, per group: {(dtype, d, causal, N): ratio}."""
    cells = [line.split(" | ") for line in tiles_bwd_table().splitlines()[2:]]
    return {(c[0][2:], int(c[1]), c[2], c[3]): float(c[7]) for c in cells}


def pipe_scores():
    """trial_scores() and what else the trial moves: every held-out set pooled, how many meet issue 24's target, the
    held-out training steps, bwd_kernels.json's launches within 20%, the backward picks within 5%."""
    sets = {name: agreement.heldout_rows(name) for name in TWENTY_EIGHT}
    train = [p for pairs in sets.values() for p in pairs if p[0]["kind"] == "train"]
    kernels = [r for r in bwd_kernel_rows() if r["kernel"] != "preprocess"]
    picks = backward_picks()
    return model_scores() | {
        "held-out, all sets pooled": sets_share(TWENTY_EIGHT),
        "held-out sets meeting issue 24's target": f"{sum(meets_target(p) for p in sets.values())} of {len(sets)}",
        "held-out training steps, all sets": f"{agreement.summary(train)['within 20%']:.1%}",
        "bwd_kernels.json within 20%": f"{sum(abs(r['ratio'] - 1) <= 0.2 for r in kernels)} of {len(kernels)}",
        "backward picks within 5% (tiles_bwd.json)": f"{sum(r <= 1.05 for r in picks.values())} of {len(picks)}"}


def pipe_trial_table():
    """pipe_scores() under the model, under nsight_pipe at pipe_fit's point and at the next ISSUE_HIDING of the grid,
    and with the instructions as issued at their own fit."""
    point, issued_point = pipe_fit()[1], pipe_fit(True)[1]
    neighbour = (PIPE_GRID[0][PIPE_GRID[0].index(point[0]) + 1], point[1])
    columns = {"the model": nullcontext(), f"pipe, fitted ({point[0]}, {point[1]})": nsight_pipe(*point),
               f"pipe at ({neighbour[0]}, {neighbour[1]})": nsight_pipe(*neighbour),
               f"pipe and instructions issued, fitted ({issued_point[0]}, {issued_point[1]})":
                   nsight_pipe(*issued_point, issued=True)}
    scores = {}
    for name, state in columns.items():
        with state:
            scores[name] = pipe_scores()
    return "\n".join(["| rows | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
                     + [f"| {row} | " + " | ".join(s[row] for s in scores.values()) + " |" for row in scores["the model"]])


def stall_spans(kernel="dkdv"):
    """Run 128's `kernel` launches (bwd_rates.json): (least, most) cycles a warp stalls per instruction issued on its
    loads (long scoreboard), and on fixed-latency waits, shared-memory reads and barriers together."""
    rows = [r for r in json.loads((agreement.RESULTS / "bwd_rates.json").read_text())["rows"] if r["kernel"] == kernel]
    loads = [r["stall_long_scoreboard"] for r in rows]
    rest = [r["stall_wait"] + r["stall_short_scoreboard"] + r["stall_barrier"] for r in rows]
    return (min(loads), max(loads)), (min(rest), max(rest))


def measured_issue_table():
    """pipe_scores() before the twenty-ninth session's cost.measured (no_measured_issue) and after it, with run 122's
    two held-out sets, scored once (blind) after it."""
    def scores():
        return pipe_scores() | {"held-out, run 122's two sets (blind)": sets_share(BLIND_MEASURED_ISSUE)}
    with no_measured_issue():
        before = scores()
    now = scores()
    return "\n".join(["| rows | dK/dV on `ISSUE_HIDING`'s line (before) | dK/dV as Nsight measures it (the model) |",
                      "|---|---|---|"] + [f"| {name} | {before[name]} | {now[name]} |" for name in now])


def lone_eight_warp_rows():
    """The held-out sets' flash2 forwards of one 8-warp program per SM, the rows the twenty-first session's
    cost.full_issue moved: {(d, block_q, block_kv): [(ratio before (one_warp_issue), ratio now)]}."""
    def rows():  # {(set, index): (the row's d, block_q, block_kv, ratio)}, of the eighteen sets scored then
        out = {}
        for name in EIGHTEEN:
            for i, (row, ratio) in enumerate(agreement.heldout_rows(name)):
                if (row["kind"], row["algo"]) == ("forward", "flash2"):
                    grid, _ = cost.schedule(agreement.heldout_simulated(row))
                    if grid.res.num_warps == 2 * cost.ISSUE_PER_CLOCK and grid.resident == 1:
                        out[name, i] = (row["head_dim"], row["block_q"], row["block_kv"], ratio)
        return out
    now = rows()
    with one_warp_issue():
        before = rows()
    groups = {}
    for key, (*tile, ratio) in now.items():
        groups.setdefault(tuple(tile), []).append((before[key][-1], ratio))
    return dict(sorted(groups.items()))


def lone_eight_warp_table():
    """lone_eight_warp_rows() as docs/perf.md's table: rows within 20%, priced fast and slow, before and now."""
    lines = ["| d | tile | rows | within 20%, before → now | priced < 0.8×, before → now | > 1.2× |", "|---|---|---|---|---|---|"]
    for (d, bq, bk), pairs in lone_eight_warp_rows().items():
        def count(test):
            return " → ".join(str(sum(test(pair[i]) for pair in pairs)) for i in (0, 1))
        lines.append(f"| {d} | {bq} × {bk} | {len(pairs)} | {count(lambda x: 0.8 <= x <= 1.2)} | "
                     f"{count(lambda x: x < 0.8)} | {count(lambda x: x > 1.2)} |")
    return "\n".join(lines)


def two_warp_table():
    """trial_scores() under the model before the twenty-first session's cost.full_issue (one_warp_issue), as it stands,
    and with two_warp_overlap() on top; run 111's sets, and run 112's, scored once (blind) as it stands."""
    with one_warp_issue():
        before, newest_before, blind_before = model_scores(), sets_share(NEWEST), sets_share(BLIND_TWO_WARP)
    now = model_scores()
    with two_warp_overlap():
        trial, newest_trial, blind_trial = trial_scores(), sets_share(NEWEST), sets_share(BLIND_TWO_WARP)
    return "\n".join(["| rows | one warp per scheduler (before) | one or two, 64 rows or more (the model) | "
                      "and two warps' overlap (trial) |", "|---|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} | {trial[name]} |" for name in now]
                     + [f"| held-out, run 111's two sets | {newest_before} | {sets_share(NEWEST)} | {newest_trial} |",
                        f"| held-out, run 112's two sets (blind) | {blind_before} | {sets_share(BLIND_TWO_WARP)} | "
                        f"{blind_trial} |"])


def mva(b, demands):
    """Exact mean-value analysis of a closed queueing network (Reiser and Lavenberg, 1980): b programs, each cycling
    through single-server stations of these demands (a step's matmuls on the tensor cores, then its other
    instructions on the issue ports), no think time. The stations' time for b steps, one of each program: the sum of
    the demands at b = 1, tending to b x the largest as b grows."""
    queue, total = [0.0] * len(demands), sum(demands)
    for n in range(1, b + 1):
        residence = [d * (1 + q) for d, q in zip(demands, queue)]
        total = sum(residence)
        queue = [n * r / total for r in residence]
    return total


def sharing_rows(names=("overlap.json", "overlap_d128.json")):
    """overlap.json and overlap_d128.json (runs 57 and 103), or names: flash2's loop without its loads, b programs per SM (no more
    than an SM holds at once of the loop, nor of flash2 in gpusim), against gpusim on the same tile and warps:
    {(d, block_q, block_kv, warps, b): (measured µs for one step of each of the b programs, gpusim's (b turns of a
    step's compute), b turns at the full issue rate, mva() at the full issue rate)}."""
    out = {}
    for name in names:
        for r in json.loads((agreement.RESULTS / name).read_text())["rows"]:
            b = r["programs_per_sm"]
            if r["variant"] != "softmax" or "ms" not in r or b > r["resident"]:
                continue
            grid, step = cost.schedule(lone_launch(r["d"], gpusim.Tiles(r["br"], r["bc"], num_warps=r["num_warps"]), 16,
                                                   b))
            if grid.resident < b:  # flash2 itself (its loads' shared memory) holds fewer than the loop alone
                continue
            with measured_issue():
                unit, _, _ = cost.unit_times(grid, step.rate)
            units = [unit["mma"], max(unit["issue"], unit["sfu"])]
            out[r["d"], r["br"], r["bc"], r["num_warps"], b] = (r["ms"] * 1e3 / r["repeats"], 1e6 * b * step.serial_s,
                                                                1e6 * b * sum(units), 1e6 * mva(b, units))
    return out


def sharing_table(names=("overlap.json", "overlap_d128.json")):
    """sharing_rows(names) as docs/perf.md's table: each rule's time over the measured one."""
    lines = ["| d | tile | warps | programs per SM | measured, µs | gpusim (turns) ÷ measured | "
             "turns, full issue rate | shared (mva), full issue rate |", "|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, warps, b), (us, model, turns, shared) in sharing_rows(names).items():
        lines.append(f"| {d} | {bq} × {bk} | {warps} | {b} | {us:.3f} | {model / us:.2f} | {turns / us:.2f} | "
                     f"{shared / us:.2f} |")
    return "\n".join(lines)


@contextmanager
def shared_sm(contention=cost.CONTENTION):
    """A trial, not adopted: measured_issue(), and an SM's b resident programs sharing its tensor cores and issue ports
    as mva() has them (flash1's flat issue and the warp-specialized kernels as they are), with this CONTENTION."""
    turns = cost.sm_compute

    def shared(step, j, resident):
        grid = step.grid
        if resident == 1 or grid.kernel in grid.cfg.pass_.FLAT_ISSUE or grid.cfg.pass_.streams(
                grid.cfg, grid.kernel) > 1:
            return turns(step, j, resident)
        unit, _, _ = cost.unit_times(grid, step.rate)
        return resident * step.fixed_compute_s + j * mva(resident, [unit["mma"], max(unit["issue"], unit["sfu"])])
    with _patched(cost, "sm_compute", shared, "shared_sm"), \
            _patched(cost, "CONTENTION", contention, ("CONTENTION", contention)), measured_issue():
        yield


CONTENTIONS = (0.15, 0.3, 0.5, 0.7, 1.0)  # the grid the trial's CONTENTION is refitted on


def fitted_half_share():
    """The share within 20% of the half CONTENTION was fitted on (issue_half)."""
    return agreement.summary(issue_half())["within 20%"]


@lru_cache(maxsize=None)
def trial_contention():
    """The CONTENTION of CONTENTIONS whose shared_sm() scores best on the fitted half (computed once a process)."""
    def half(c):
        with shared_sm(c):
            return fitted_half_share()
    return max(CONTENTIONS, key=half)


def sharing_trial_table():
    """trial_scores() under the model and under shared_sm(trial_contention()), as docs/perf.md's table."""
    best, now = trial_contention(), model_scores()
    with shared_sm(best):
        trial = trial_scores()
    return "\n".join(["| rows | the model | programs sharing the SM (mva), full issue rate, "
                      f"`CONTENTION` {best} (trial) |", "|---|---|---|"]
                     + [f"| {name} | {now[name]} | {trial[name]} |" for name in now])


def shared_steps_rows():
    """results/h200/shared_steps.json (run 107): flash2's step with b programs per SM and its loads, the slope of the
    launch's time from J = 4 to 16 steps: {(d, block_q, block_kv, stages, b): (measured µs for one step of each of the
    b programs, gpusim's ÷ measured, shared_sm(trial_contention())'s ÷ measured)}."""
    def model(d, bq, bk, stages, b, steps):
        return 1e3 * lone_launch(d, gpusim.Tiles(bq, bk, num_stages=stages), steps, b).predicted_time_s
    measured = shared_step_slopes()
    now = {key: _slope(model, key) / us for key, us in measured.items()}
    with shared_sm(trial_contention()):
        return {key: (us, now[key], _slope(model, key) / us) for key, us in measured.items()}


def shared_step_slopes(path=None):
    """shared_steps.json (or the file at path, in its format): {(d, block_q, block_kv, stages, b): µs for one step of
    each of the b programs}."""
    ms = {(r["head_dim"], r["block_q"], r["block_kv"], r["num_stages"], r["programs_per_sm"], r["steps"]): r["ms"]
          for r in json.loads(Path(path or agreement.RESULTS / "shared_steps.json").read_text())["rows"] if "ms" in r}
    return {key: _slope(lambda *k: ms[k], key) for key in sorted({key[:5] for key in ms})}


def _slope(times, key):
    """µs a step: the launch's time (ms) at 16 steps less at 4, over 12."""
    return 1e3 * (times(*key, 16) - times(*key, 4)) / 12


def shared_steps_table():
    """shared_steps_rows() as docs/perf.md's table."""
    lines = ["| d | tile | stages | programs per SM | measured, µs | per program | gpusim ÷ measured | "
             "trial ÷ measured |", "|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, stages, b), (us, now, trial) in shared_steps_rows().items():
        lines.append(f"| {d} | {bq} × {bk} | {stages} | {b} | {us:.3f} | {us / b:.3f} | {now:.2f} | {trial:.2f} |")
    return "\n".join(lines)


def shared_step_terms(path=None):
    """shared_steps.json's (or path's) steps with gpusim's terms for them: {(d, block_q, block_kv, stages, b):
    (measured s, a program's compute with the issue at the full rate, its loads' wait (cost.wait), the b programs'
    bytes at the SM's share of the L2 and DRAM bandwidth)}."""
    out = {}
    for key, us in shared_step_slopes(path).items():
        d, bq, bk, stages, b = key
        _, step = cost.schedule(lone_launch(d, gpusim.Tiles(bq, bk, num_stages=stages), 16, b))
        out[key] = (us * 1e-6, *_step_terms(step))
    return out


def _step_terms(step):
    """(compute at the full issue rate, the loads' wait, the b resident programs' bytes at the SM's share) of a step."""
    with measured_issue():
        unit, _, _ = cost.unit_times(step.grid, step.rate)
    rate, b = step.rate, step.grid.resident
    memory = b * max(step.step_bytes[0] / rate["l2"], step.step_bytes[1] / rate["dram"])
    return unit["mma"] + max(unit["issue"], unit["sfu"]), cost.wait(step.grid.cfg.gpu, step.step_bytes), memory


def exposed_step(compute, wait, memory, stages, b, constants):
    """An SM's step with b programs resident: one program's compute and the exposed share of its wait (e2 at 2
    stages, e3 deeper), plus k of each other program's compute (their waits overlapping it), or the bytes' time."""
    e2, e3, k = constants
    return max(compute + (e2 if stages <= 2 else e3) * wait + (b - 1) * k * compute, memory)


WAIT_GRID = (tuple(x / 10 for x in range(8, 17)), tuple(x / 10 for x in range(1, 9)),  # (e2, e3, k)
             tuple(x / 10 for x in range(4, 12)))


@lru_cache(maxsize=None)
def fitted_wait(path=None):
    """(e2, e3, k) of WAIT_GRID fitted on shared_steps.json or path (a microbenchmark: never the sets that judge them):
    the most rows within 20%, then the least mean |log(predicted / measured)|; and that share within 20%."""
    terms = shared_step_terms(path)

    def score(constants):
        errors = [abs(math.log(exposed_step(c, w, m, key[3], key[4], constants) / s))
                  for key, (s, c, w, m) in terms.items()]
        return sum(e <= math.log(1.2) for e in errors), -sum(errors) / len(errors)
    best = max(itertools.product(*WAIT_GRID), key=score)
    return best, score(best)[0] / len(terms)


@contextmanager
def exposed_wait(constants=None):
    """A trial, not adopted: flash2's forward kernel (its loads waited for, not prefetched) holding its slot for the
    first loads, its fixed compute, and j exposed_step()s of these constants (fitted_wait()'s by default); every
    other kernel as it is."""
    tau, constants = cost.tau, tuple(constants or fitted_wait()[0])

    def exposed(step, j, sharing, resident):
        grid = step.grid
        if grid.kernel != "flash2" or step.prefetched:
            return tau(step, j, sharing, resident)
        compute, wait, _ = _step_terms(step)
        moved = (step.fixed_bytes[0] + j * step.step_bytes[0], step.fixed_bytes[1] + j * step.step_bytes[1])
        memory = sharing * np.maximum(moved[0] / step.rate["l2"], moved[1] / step.rate["dram"])
        steps = j * exposed_step(compute, wait, 0.0, grid.res.num_stages, resident, constants)
        return np.maximum(cost.first_loads(step, j) + resident * step.fixed_compute_s + steps, memory)
    with _patched(cost, "tau", exposed, ("exposed_wait", constants), moves=FLASH2_ROWS):  # flash2's steps alone
        yield


def lone_issue_table():
    """trial_scores() before the nineteenth session's cost.full_issue (line_issue) and after, as docs/perf.md's table."""
    with line_issue():
        before = model_scores()
    now = model_scores()
    return "\n".join(["| rows | before `cost.full_issue` | after |", "|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} |" for name in now])


def exposed_wait_table():
    """trial_scores() under the model and under exposed_wait(), with the fit's constants, as docs/perf.md's table."""
    (e2, e3, k), share = fitted_wait()
    with exposed_wait():
        trial = trial_scores()
    now = model_scores()
    return "\n".join([f"| rows | the model | exposed wait (trial: e2 {e2}, e3 {e3}, k {k}) |", "|---|---|---|",
                      f"| shared_steps.json (fitted) | - | {share:.1%} |"]
                     + [f"| {name} | {now[name]} | {trial[name]} |" for name in now])

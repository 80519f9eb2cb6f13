"""docs/perf.md's tables of a launch, measured and priced, and the trials of its pricing: a program's own tiles
(program_start.json, cost.own_copy), a launch's last wave (last_wave.json), a lone program's loads, stores and copies
(launch_parts.json), longest first (lpt_order.json; dK/dV's causal launches, dkdv_ramp.json), the Hopper kernel's
short programs wave after wave (hopper_waves, hopper_starts, hopper_stalls, hopper_kv, hopper_pairs, hopper_lone:
program_cost, lone_latency, the lone set-up, the launch a CUDA graph replays), and naive's three launches
(naive_launches.json, qk_parts.json).
"""
import csv
import json
import re
import tarfile
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import lru_cache

import numpy as np

from benchmarks import agreement
from benchmarks.report_heldout import (
    BLIND_DKDV_LIST, BLIND_LAST_WAVE, BLIND_LIST_SCHEDULE, BLIND_LONE_SETUP, BLIND_NAIVE, BLIND_OWN_COPY, FIRST_OF_35,
    THIRTY, THIRTY_EIGHT, THIRTY_FOUR, THIRTY_TWO, TWENTY_FIVE, TWENTY_FOUR, change_scores, change_table, meets_target,
    model_scores, sets_share)
from benchmarks.report_history import (
    FLASH2_ROWS, HOPPER_ROWS, _patched, _within_both, alone_pipelines, dkdv_by_waves, even_waves, events_launch,
    full_last_wave, lone_by_port, naive_before, no_list_schedule, no_own_copy, one_slot_listed, pipelines_from_64,
    pv_whole_wait, qk_overlapped, waves_at_share)
from benchmarks.report_kernels import _span, backward_kernel
import gpusim
from gpusim import cost
from gpusim.passes import hopper as hopper_pass
from gpusim.passes.hopper import Hopper


@contextmanager
def lone_last_wave():
    """A trial, not adopted (docs/perf.md, "A launch's last wave"): a last wave of k < b programs per SM priced on the
    Schedule of a launch whose SMs hold k (its issue and pipeline rules, cost.full_issue, lone_pipeline and lone_copy,
    at k: alone, a lone program's), while the block runs."""
    tau = cost.tau

    def rescheduled(step, j, sharing, resident):
        grid = step.grid
        if resident < grid.resident:
            step = cost.one_step(replace(grid, resident=resident, slots=grid.cfg.gpu.sm_count * resident), step.rate)
        return tau(step, j, sharing, resident)
    with _patched(cost, "tau", rescheduled, "lone_last_wave"):
        yield


def own_copy_table():
    """trial_scores() before the twenty-fifth session's cost.own_copy (no_own_copy) and after it, with
    results/h200/program_start.json's rows; all the held-out sets scored before it, pooled; run 117's and run 118's
    sets, scored once (blind) after it."""
    with no_own_copy():
        before, start_before, pooled_before = model_scores(), program_start_share(), sets_share(TWENTY_FOUR)
    now = model_scores()
    return "\n".join(["| rows | Q's wait at the port rate, O's store unwaited (before) | a program's own tiles at one "
                      "program's copy rate (the model) |", "|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} |" for name in now]
                     + [f"| program_start.json | {start_before} | {program_start_share()} |",
                        f"| held-out, the twenty-four sets scored before it | {pooled_before} | {sets_share(TWENTY_FOUR)} |",
                        f"| held-out, runs 117 and 118's four sets (blind) | - | {sets_share(BLIND_OWN_COPY)} |"])


def program_start_rows():
    """results/h200/program_start.json (run 118): {(head_dim, block_q, block_kv, J): {waves: (measured µs, gpusim's
    µs, blocks an SM holds)}}, flash2 at the kernel's own launch, one Q block per program, 132 programs a wave."""
    out = {}
    for r in json.loads((agreement.RESULTS / "program_start.json").read_text())["rows"]:
        result = gpusim.simulate("flash2", batch=1, heads=r["heads"], seq=r["seq"], seq_kv=r["seq_kv"],
                                 head_dim=r["head_dim"], dtype="fp16", gpu=agreement.PRESET,
                                 tiles=gpusim.Tiles(r["block_q"], r["block_kv"]))
        grid, _ = cost.schedule(result)
        out.setdefault((r["head_dim"], r["block_q"], r["block_kv"], r["steps"]), {})[r["waves"]] = (
            r["ms"] * 1e3, result.predicted_time_s * 1e6, grid.resident)
    return out


def program_start_share():
    """The share of program_start.json's launches gpusim prices within 20%."""
    ratios = [p / m for waves in program_start_rows().values() for m, p, _ in waves.values()]
    return f"{sum(abs(r - 1) <= 0.2 for r in ratios) / len(ratios):.1%} of {len(ratios)}"


def per_wave(waves, field):
    """A wave's cost in steady state: the time from 1 to 16 waves over the 15 waves added (field 0: measured, 1: gpusim)."""
    return (waves[16][field] - waves[1][field]) / 15


def program_start_table():
    """program_start_rows(): per tile and J, the measured launch at 1, 2, 4 and 16 waves, a wave's cost in steady
    state (per_wave) measured and priced before cost.own_copy and with it, and gpusim's time over the measured one."""
    with no_own_copy():
        before = program_start_rows()
    lines = ["| d | tile | J | b at 16 waves | µs at 1 / 2 / 4 / 16 waves | a wave, µs | gpusim before | with own_copy | "
             "÷ measured, 1 / 2 / 4 / 16 waves |", "|---|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, j), waves in program_start_rows().items():
        lines.append(f"| {d} | {bq} × {bk} | {j} | {waves[16][2]} | " + " / ".join(f"{waves[w][0]:.2f}" for w in waves)
                     + f" | {per_wave(waves, 0):.2f} | {per_wave(before[d, bq, bk, j], 1):.2f} | {per_wave(waves, 1):.2f} | "
                     + " / ".join(f"{p / m:.2f}" for m, p, _ in waves.values()) + " |")
    return "\n".join(lines)


def last_wave_rows():
    """results/h200/last_wave.json (run 121): {(head_dim, block_q, block_kv, J): {m: (measured µs, gpusim's µs, b)}},
    flash2 at the kernel's own launch, one Q block per program, 132 x m programs (m per SM)."""
    out = {}
    for r in json.loads((agreement.RESULTS / "last_wave.json").read_text())["rows"]:
        result = gpusim.simulate("flash2", batch=1, heads=r["heads"], seq=r["seq"], seq_kv=r["seq_kv"],
                                 head_dim=r["head_dim"], dtype="fp16", gpu=agreement.PRESET,
                                 tiles=gpusim.Tiles(r["block_q"], r["block_kv"]))
        out.setdefault((r["head_dim"], r["block_q"], r["block_kv"], r["steps"]), {})[r["per_sm"]] = (
            r["ms"] * 1e3, result.predicted_time_s * 1e6, result.kernels[0].blocks_per_sm)
    return out


def leftover_shares(launches, field):
    """A launch of m = b + k programs per SM over one of b (one full wave), k = 1 .. b - 1: what the last wave of k per
    SM adds, as a share of what a second full wave adds (m = 2b); field 0: measured, 1: gpusim."""
    b = launches[max(launches)][2]
    wave = launches[2 * b][field] - launches[b][field]
    return [(launches[b + k][field] - launches[b][field]) / wave for k in range(1, b)]


def last_wave_share():
    """The share of last_wave.json's launches gpusim prices within 20%."""
    ratios = [p / m for launches in last_wave_rows().values() for m, p, _ in launches.values()]
    return f"{sum(abs(r - 1) <= 0.2 for r in ratios) / len(ratios):.1%} of {len(ratios)}"


def last_wave_table():
    """last_wave_rows(): per tile and J, b, a full wave's measured cost, the leftover waves' shares of it
    (leftover_shares) measured, priced before cost.last_per_sm and with it, and the launches priced within 20%."""
    with full_last_wave():
        before = last_wave_rows()
    lines = ["| d | tile | J | b | a full wave, µs | k = 1 … b − 1 per SM: share of a full wave | gpusim before | "
             "with last_per_sm | within 20%, m = 1–12: before / now |", "|---|---|---|---|---|---|---|---|---|"]
    shares = lambda v: " / ".join(f"{x:.2f}" for x in v)  # noqa: E731
    within = lambda launches: sum(abs(p / m - 1) <= 0.2 for m, p, _ in launches.values())  # noqa: E731
    for key, launches in last_wave_rows().items():
        b = launches[max(launches)][2]
        lines.append(f"| {key[0]} | {key[1]} × {key[2]} | {key[3]} | {b} | "
                     f"{launches[2 * b][0] - launches[b][0]:.1f} | {shares(leftover_shares(launches, 0))} | "
                     f"{shares(leftover_shares(before[key], 1))} | {shares(leftover_shares(launches, 1))} | "
                     f"{within(before[key])} / {within(launches)} |")
    return "\n".join(lines)


def last_wave_trial_table():
    """trial_scores() before the twenty-sixth session's cost.last_per_sm (full_last_wave) and after it, with
    last_wave.json's and program_start.json's rows; the held-out sets scored before it, pooled, and how many meet issue
    24's target; run 119's two sets, scored once (blind) after it."""
    def scores():
        return model_scores() | {"last_wave.json": last_wave_share(), "program_start.json": program_start_share()} | (
            change_scores(TWENTY_FIVE, "twenty-eight", BLIND_LAST_WAVE, 119))
    with full_last_wave():
        before = scores()
    now = scores()
    with lone_last_wave():
        trial = scores()
    return "\n".join(["| rows | an SM's units shared by b in every wave (before) | a last wave's by the programs it holds "
                      "per SM (the model) | the last wave on the schedule of k per SM (trial) |", "|---|---|---|---|"]
                     + [f"| {name} | {before[name]} | {now[name]} | {trial[name]} |" for name in now])


def dkdv_ramp_rows():
    """results/h200/dkdv_ramp.json (run 136): [(row, programs, gpusim's ms by the last-wave rule (dkdv_by_waves),
    gpusim's ms)], each dK/dV launch priced at the tiles it ran."""
    out = []
    for r in json.loads((agreement.RESULTS / "dkdv_ramp.json").read_text())["rows"]:
        with dkdv_by_waves():
            waved = backward_kernel(r, "dkdv").predicted_time_s * 1e3
        kernel = backward_kernel(r, "dkdv")
        out.append((r, kernel.programs, waved, kernel.predicted_time_s * 1e3))
    return out


def dkdv_ramp_table():
    """dkdv_ramp_rows(): per launch shape, its programs and, at each head dim and tile, gpusim ÷ measured by the
    last-wave rule and list-scheduled (causal); the non-causal launches' range, alike either way."""
    groups = {}
    for r, programs, waved, now in dkdv_ramp_rows():
        groups.setdefault((r["causal"], r["kv_heads"], r["seq"], programs), {})[
            (r["head_dim"], r["block_q"], r["block_kv"])] = (r["ms"], waved / r["ms"], now / r["ms"])
    cells = sorted({k for g in groups.values() for k in g})
    lines = ["| K/V heads | N | programs | " + " | ".join(f"d {d}, {bq} × {bk}"
                                                     for d, bq, bk in cells) + " |", "|---|---|---|" + "---|" * len(cells)]
    for (causal, kv, seq, programs), g in groups.items():
        if causal:
            lines.append(f"| {kv} | {seq:,} | {programs} | " + " | ".join(
                f"{g[c][0]:.3f}, {g[c][1]:.2f} → {g[c][2]:.2f}" for c in cells) + " |")
    full = [ratio for (causal, *_), g in groups.items() if not causal for _, ratio, now in g.values()]
    lines.append(f"| non-causal, every shape | | | {min(full):.2f}–{max(full):.2f}× either way |" + " |" * (len(cells) - 1))
    return "\n".join(lines)


def hopper_waves_rows():
    """results/h200/hopper_waves.json (run 137): {(head_dim, causal, steps): {waves: (measured µs, gpusim's µs)}}, the
    Hopper kernel at its own launch, short programs wave after wave."""
    out = {}
    for r in json.loads((agreement.RESULTS / "hopper_waves.json").read_text())["rows"]:
        model = gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"], head_dim=r["head_dim"],
                                causal=r["causal"], dtype=r["dtype"], gpu=agreement.PRESET).predicted_time_s * 1e6
        out.setdefault((r["head_dim"], r["causal"], r["steps"]), {})[r["waves"]] = (r["ms"] * 1e3, model)
    return out


def wave_slopes(waves):
    """(measured, gpusim's) µs a wave costs in steady state: the time from 2 to 16 waves over the 14 between."""
    return tuple((waves[16][k] - waves[2][k]) / 14 for k in (0, 1))


def hopper_waves_table():
    """hopper_waves_rows(): per head dim, mask and J (K/V blocks, or causal, Q blocks), the launch at 1, 2, 4 and 16
    waves, measured and gpusim ÷ measured, and a wave's steady-state cost, measured and in gpusim."""
    lines = ["| d | causal | J, or Q blocks | µs at 1 / 2 / 4 / 16 waves | gpusim ÷ measured | µs a wave, measured | "
             "gpusim | gpusim ÷ measured |", "|---|---|---|---|---|---|---|---|"]
    for (d, causal, steps), waves in hopper_waves_rows().items():
        measured, model = wave_slopes(waves)
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {steps} | "
                     + " / ".join(f"{m:.1f}" for m, _ in waves.values()) + " | "
                     + " / ".join(f"{p / m:.2f}" for m, p in waves.values())
                     + f" | {measured:.2f} | {model:.2f} | {model / measured:.2f} |")
    return "\n".join(lines)


def hopper_starts_rows():
    """results/h200/hopper_starts.json (run 138): {(variant, head_dim, steps): (measured µs a wave, gpusim's, b)}, the
    slope from 2 to 16 waves of each launch the kernel ran (a refused variant has no rows), priced at its knobs."""
    launches = {}
    for r in json.loads((agreement.RESULTS / "hopper_starts.json").read_text())["rows"]:
        if "ms" not in r:
            continue
        tiles = gpusim.Tiles(r["block_q"], r["block_kv"], **{k: r[k] for k in Hopper.KNOBS if k in r})
        model = gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"], head_dim=r["head_dim"],
                                causal=r["causal"], dtype=r["dtype"], gpu=agreement.PRESET,
                                tiles=tiles).predicted_time_s * 1e6
        launches.setdefault((r["variant"], r["head_dim"], r["steps"]), {})[r["waves"]] = (r["ms"] * 1e3, model,
                                                                                           r["per_sm"])
    return {key: (*wave_slopes(w), w[16][2]) for key, w in launches.items()}


def hopper_starts_table():
    """hopper_starts_rows(): per variant and head dim, a wave's cost at J = 1 and 4, gpusim ÷ measured, and the µs a
    program costs beyond gpusim's; the variants the kernel refused, named."""
    rows = hopper_starts_rows()
    lines = ["| launch | d | b | µs a wave at J = 1 / 4, measured | gpusim ÷ measured | µs a program beyond gpusim |",
             "|---|---|---|---|---|---|"]
    for variant, d in dict.fromkeys((v, d) for v, d, _ in rows):
        cells = [rows[variant, d, j] for j in (1, 4)]
        lines.append(f"| {variant} | {d} | {cells[0][2]} | " + " / ".join(f"{m:.2f}" for m, _, _ in cells) + " | "
                     + " / ".join(f"{p / m:.2f}" for m, p, _ in cells) + " | "
                     + " / ".join(f"{(m - p) / b:.2f}" for m, p, b in cells) + " |")
    refused = sorted({r["variant"] for r in json.loads((agreement.RESULTS / "hopper_starts.json").read_text())["rows"]
                      if "error" in r})
    lines.append(f"| refused by the kernel: {', '.join(refused)} (d 64) | | | | | |")
    return "\n".join(lines)


def hopper_starts_summary():
    """run 138's figures docs/perf.md quotes: gpusim ÷ measured of a wave's cost over every launch at d = 64 and at
    d = 128, and the µs a program costs beyond gpusim's at d = 64, rotated (the own causal launch) and not."""
    rows = hopper_starts_rows()
    out = {d: f"{_span([p / m for (_, dd, _), (m, p, _) in rows.items() if dd == d])} at d = {d}" for d in (64, 128)}
    for variant in ("causal, own launch", "causal, not rotated"):
        out[variant] = " and ".join(f"{(m - p) / b:.2f}" for m, p, b in (rows[variant, 64, j] for j in (1, 4)))
    return out


def hopper_stalls_rows():
    """results/h200/hopper_stalls.json (run 139): {(head_dim, causal, steps): {waves: row}}, Nsight Compute's view of
    run 137's launches at 2 and 16 waves."""
    out = {}
    for r in json.loads((agreement.RESULTS / "hopper_stalls.json").read_text())["rows"]:
        out.setdefault((r["head_dim"], r["causal"], r["steps"]), {})[r["waves"]] = r
    return out


def program_cycles(row):
    """A hopper_stalls.json row's SM cycles a program: an SM's active cycles over the programs each of the 132 ran."""
    return row["cycles_active"] * 132 / row["grid"]


def hopper_stalls_table():
    """hopper_stalls_rows(): per head dim, mask and J, the programs an SM holds, a wave's cost under Nsight (the slope
    from 2 to 16 waves), and at 16 waves an SM's active cycles a program, a scheduler's issue rate, the tensor pipe's
    busy share and the three stall reasons with most warps per issued instruction."""
    lines = ["| d | causal | J, or Q blocks | b | µs a wave | an SM's cycles a program | issue a cycle | tensor pipe | "
             "warps stalled per issue: the three most |", "|---|---|---|---|---|---|---|---|---|"]
    for (d, causal, steps), w in hopper_stalls_rows().items():
        r = w[16]
        stalls = sorted(((v, k[6:]) for k, v in r.items() if k.startswith("stall_") and k != "stall_selected"),
                        reverse=True)[:3]
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {steps} | {r['per_sm']} | {(r['us'] - w[2]['us']) / 14:.2f}"
                     f" | {program_cycles(r):,.0f} | {r['issue_per_cycle']:.2f} | "
                     f"{r['tensor_pct']:.0f}% | " + ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for v, k in stalls) + " |")
    return "\n".join(lines)


# run 139's four launches Nsight sampled instruction by instruction (its --launch-skip), d = 64 and 128, 16 waves, J = 1
SOURCE_LAUNCHES = {1: (64, False), 5: (64, True), 9: (128, False), 13: (128, True)}


def hopper_source_shares():
    """results/h200/hopper_stalls_source.tar.gz (run 139): per (head_dim, causal), the share of the warp samples Nsight
    took at each kind of instruction (the opcode, its predicate dropped): the TMA copies' barrier waits (SYNCS and the
    try-wait loop's branch), a warp parked at a barrier (NOP), the warpgroup matmuls' waits (WARPGROUP, HGMMA), the
    epilogue's stores (STG, STS) and the rest."""
    kinds = {"SYNCS": "barrier waits", "BRA": "barrier waits", "NOP": "parked", "WARPGROUP": "matmul waits",
             "HGMMA": "matmul waits", "STG": "stores", "STS": "stores"}
    out = {}
    with tarfile.open(agreement.RESULTS / "hopper_stalls_source.tar.gz") as tar:
        for skip, key in SOURCE_LAUNCHES.items():
            lines = tar.extractfile(f"hopper_source_{skip}.csv").read().decode().splitlines()
            header, *rows = list(csv.reader(lines[1:]))
            at = {name: header.index(name) for name in ("Source", "Warp Stall Sampling (All Samples)")}
            shares = dict.fromkeys([*dict.fromkeys(kinds.values()), "other"], 0)
            for row in rows:
                opcode = re.sub(r"^@!?U?P\w+\s+", "", row[at["Source"]].strip()).split(" ")[0].split(".")[0]
                shares[kinds.get(opcode, "other")] += int(row[at["Warp Stall Sampling (All Samples)"]] or 0)
            total = sum(shares.values())
            out[key] = {kind: n / total for kind, n in shares.items()}
    return out


def hopper_unpriced():
    """{(head_dim, causal, steps): µs}: run 137's wave (measured) less what gpusim's model of it holds besides its
    loads' port-rate waits: the SM's busy time (its programs' bytes at their bandwidth share, their compute), the
    programs' set-up and two DRAM latencies (the first copy in, the first K/V tile)."""
    gpu, out = gpusim.get_gpu(agreement.PRESET), {}
    launches = {(r["head_dim"], r["causal"], r["steps"]): r
                for r in json.loads((agreement.RESULTS / "hopper_waves.json").read_text())["rows"] if r["waves"] == 16}
    for (d, causal, steps), waves in hopper_waves_rows().items():
        r = launches[d, causal, steps]
        grid, step = cost.schedule(gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"],
                                                   head_dim=d, causal=causal, dtype=r["dtype"], gpu=agreement.PRESET))
        j = float(np.dot(grid.work.values, grid.work.counts) / sum(grid.work.counts))  # a program's mean steps
        held = cost.busy(step, j, grid.resident, grid.resident) + step.setup_s + 2 * cost.latency(gpu, 1.0)
        out[d, causal, steps] = wave_slopes(waves)[0] - float(held) * 1e6
    return out


def hopper_stalls_summary():
    """run 139's figures docs/perf.md quotes: per head dim at J = 1 and 16 waves the launches' issue rate and tensor
    pipe (not causal, causal), the sampled shares of the TMA barrier waits and the matmul waits, and the SM cycles a
    not-causal program takes; and hopper_unpriced() per head dim."""
    rows, shares, unpriced = hopper_stalls_rows(), hopper_source_shares(), hopper_unpriced()
    out = {}
    for d in (64, 128):
        one = [rows[d, causal, 1][16] for causal in (False, True)]
        out[d] = (f"{one[0]['issue_per_cycle']:.2f} and {one[1]['issue_per_cycle']:.2f} of a scheduler's cycles, "
                  f"the tensor pipe {one[0]['tensor_pct']:.0f}% and {one[1]['tensor_pct']:.0f}%")
        pct = [[shares[d, c][kind] * 100 for c in (False, True)] for kind in ("barrier waits", "matmul waits")]
        span = [" – ".join(dict.fromkeys(f"{v:.0f}" for v in sorted(kind))).replace(" ", "") + "%" for kind in pct]
        out[d, "source"] = f"{span[0]} at the TMA barriers' waits, {span[1]} at the matmuls'"
        out[d, "cycles"] = f"{program_cycles(one[0]):,.0f}"
        out[d, "unpriced"] = _span([v for (dd, _, _), v in unpriced.items() if dd == d], " µs")
    return out


def hopper_kv_rows():
    """results/h200/hopper_kv.json (run 140): {(head_dim, causal, steps): {kv_heads: (measured µs a wave, gpusim's)}},
    run 137's launches with a K/V head per query head (None) and one for all (1), a wave's steady-state cost."""
    out = {}
    for (name, _, d, causal, steps, kv), slopes in hopper_launch_slopes().items():
        if name == "hopper_kv":
            out.setdefault((d, causal, steps), {})[kv] = slopes
    return out


def hopper_kv_table():
    """hopper_kv_rows(): per head dim, mask and J, a wave's cost with a K/V head per query head and with one for all,
    measured and gpusim ÷ measured, and what sharing K/V cuts, measured and in gpusim."""
    lines = ["| d | causal | J, or Q blocks | µs a wave, own K/V | gpusim ÷ measured | one K/V head | "
             "gpusim ÷ measured | cut, measured | gpusim |", "|---|---|---|---|---|---|---|---|---|"]
    for (d, causal, steps), kvs in hopper_kv_rows().items():
        (own, own_p), (one, one_p) = kvs[None], kvs[1]
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {steps} | {own:.2f} | {own_p / own:.2f} | {one:.2f} | "
                     f"{one_p / one:.2f} | {own - one:.2f} | {own_p - one_p:.2f} |")
    return "\n".join(lines)


def hopper_kv_summary():
    """run 140's figures docs/perf.md quotes, per head dim, not causal: the cut one K/V head makes at J = 1, measured
    and in gpusim; gpusim ÷ measured with one K/V head at J = 1; and with one K/V head a step's cost (from J = 1 to 4)
    and what J = 1 costs beyond one step."""
    rows, out = hopper_kv_rows(), {}
    for d in (64, 128):
        (own, own_p), (one, one_p) = rows[d, False, 1][None], rows[d, False, 1][1]
        step = (rows[d, False, 4][1][0] - one) / 3
        out[d] = (f"{own - one:.2f} µs at d = {d} (gpusim: {own_p - one_p:.2f})", f"{one_p / one:.2f} at d = {d}",
                  f"{step:.2f} µs a step and {one - step:.2f} µs besides at d = {d}")
    return out


def hopper_launch_slopes():
    """{(file, variant, head_dim, causal, steps, kv_heads): (measured µs a wave, gpusim's)}: the steady-state wave of
    every launch of runs 137, 138 and 140 (hopper_waves, hopper_starts, hopper_kv), priced at the knobs it ran."""
    launches = {}
    for name in ("hopper_waves", "hopper_starts", "hopper_kv"):
        for r in json.loads((agreement.RESULTS / f"{name}.json").read_text())["rows"]:
            if "ms" not in r:
                continue
            tiles = gpusim.Tiles(r["block_q"], r["block_kv"], **{k: r[k] for k in Hopper.KNOBS if k in r})
            model = gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"], kv_heads=r.get("kv_heads"),
                                    head_dim=r["head_dim"], causal=r["causal"], dtype=r["dtype"], gpu=agreement.PRESET,
                                    tiles=tiles).predicted_time_s * 1e6
            key = (name, r.get("variant"), r["head_dim"], r["causal"], r["steps"], r.get("kv_heads"))
            launches.setdefault(key, {})[r["waves"]] = (r["ms"] * 1e3, model)
    return {key: wave_slopes(w) for key, w in launches.items()}


def fitted_half(key):
    """The program_cost trial's half fitted on: run 140's launches with one K/V head, not causal."""
    return key[0] == "hopper_kv" and key[5] == 1 and not key[3]


TMA_ALONE_WAIT = cost.alone_wait  # a TMA program alone on its SM: its set-up and copies' latencies (the 35th session's)


@contextmanager
def program_cost(program_s):
    """The thirty-fourth session's first trial (not adopted), while the block runs: a TMA pass's program (the Hopper
    kernel's) costs program_s of its SM's time besides its steps (fixed compute: the programs an SM holds take turns at
    it), and alone on its SM it waits its set-up and its copies' latencies (TMA_ALONE_WAIT)."""
    unit_times = cost.unit_times

    def trial_unit_times(grid, rate, hiding=None):
        unit, reloads, fixed = unit_times(grid, rate, hiding)
        return unit, reloads, fixed + (program_s if grid.cfg.pass_.TMA else 0.0)
    with _patched(cost, "unit_times", trial_unit_times, ("program_cost_fixed", program_s), moves=HOPPER_ROWS), _patched(
            cost, "alone_wait", TMA_ALONE_WAIT, ("program_cost", program_s), moves=HOPPER_ROWS):
        yield


@lru_cache(maxsize=None)
def program_cost_s():
    """program_cost's program_s: where gpusim prices the fitted half's steady-state waves (fitted_half: K and V from L2,
    so that a program is its fixed part and its steps) right on average, gpusim's over the measured, averaged over the
    four launches, equal to 1 (bisection to 1 ns)."""
    def mean_ratio(program_s):
        with program_cost(program_s):
            return np.mean([p / m for key, (m, p) in hopper_launch_slopes().items() if fitted_half(key)])
    low, high = 0.0, 10e-6
    while high - low > 1e-9:
        low, high = ((low + high) / 2, high) if mean_ratio((low + high) / 2) < 1 else (low, (low + high) / 2)
    return round((low + high) / 2, 9)


def figure(ratios):
    """(within 20%, of how many, least, most) of gpusim ÷ measured ratios: a row of trial_table."""
    return sum(abs(x - 1) <= 0.2 for x in ratios), len(ratios), min(ratios), max(ratios)


def hopper_figures(fitted, sets=None):
    """{what: (within 20%, of how many, least, most)} of a Hopper trial's tests under the model in force: the
    microbenchmarks' waves (runs 137, 138 and 140: those `fitted` says the trial's constants came from, the rest),
    bench.json's Hopper rows, and the held-out sets' Hopper rows at d 64 and 128, every row pooled, and the sets meeting
    issue 24's target (of `sets`; None: the 46 scored through the thirty-fourth session, THIRTY_FOUR)."""
    slopes = hopper_launch_slopes()
    groups = {"runs 137, 138 and 140: the launches fitted on": [p / m for key, (m, p) in slopes.items() if fitted(key)],
              "runs 137, 138 and 140: the others": [p / m for key, (m, p) in slopes.items() if not fitted(key)],
              "bench.json: the Hopper kernel's rows": [x for r, x in agreement.rows("bench.json") if r["provider"] == "hopper"]}
    held = {n: agreement.heldout_rows(n) for n in sets or THIRTY_FOUR}
    pooled = [p for pairs in held.values() for p in pairs]
    for d in (64, 128):
        groups[f"held-out sets: the Hopper kernel's rows, d {d}"] = [
            x for r, x in pooled if (r["algo"], r["head_dim"]) == ("hopper", d)]
    groups["held-out sets: every row"] = [x for _, x in pooled]
    out = {name: figure(xs) for name, xs in groups.items()}
    out["held-out sets meeting issue 24's target"] = (sum(meets_target(p) for p in held.values()), len(held), None, None)
    return out


def program_cost_figures():
    """hopper_figures() of the program_cost trial, fitted on fitted_half: as the model stands, and under the trial (at
    program_cost_s())."""
    now = hopper_figures(fitted_half)
    with program_cost(program_cost_s()):
        return now, hopper_figures(fitted_half)


# The lone programs (one an SM, one Q block, J = 1 or N = 1 Q block) each kind's latency is measured on: run 137's own
# launches not causal (warp-specialized) and causal at d 128, run 138's software-pipelined launch not causal, and run
# 142's causal d 64 launch held to one program an SM by its 6 stages.
LONE_LAUNCHES = (("hopper_waves", None, 64, False, 1, None), ("hopper_waves", None, 128, False, 1, None),
                 ("hopper_starts", "full, software-pipelined", 64, False, 1, None),
                 ("hopper_starts", "full, software-pipelined", 128, False, 1, None),
                 ("hopper_waves", None, 128, True, 1, None))


def lone_launches():
    """{launch kind: (gpusim's Result of the lone launch, its measured µs a wave)} of LONE_LAUNCHES and run 142's."""
    rows = {name: json.loads((agreement.RESULTS / f"{name}.json").read_text())["rows"]
            for name in ("hopper_waves", "hopper_starts")}
    slopes, out = hopper_launch_slopes(), {}
    for key in LONE_LAUNCHES:
        name, variant, d, causal, steps, _ = key
        r = next(r for r in rows[name] if (r.get("variant"), r["head_dim"], r["causal"], r["steps"], r["waves"]) ==
                 (variant, d, causal, steps, 16))
        tiles = gpusim.Tiles(r["block_q"], r["block_kv"], **{k: r[k] for k in Hopper.KNOBS if k in r})
        result = gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"], head_dim=d, causal=causal,
                                 dtype=r["dtype"], gpu=agreement.PRESET, tiles=tiles)
        out[hopper_pass.launch_kind(result.config)] = (result, slopes[key][0])
    from benchmarks.hopper_waves import own_tiles
    result = gpusim.simulate("hopper", seq=128, heads=264, head_dim=64, causal=True, dtype="fp16", gpu=agreement.PRESET,
                             tiles=own_tiles(64, True, num_stages=6))
    kind = hopper_pass.launch_kind(result.config)
    out[kind] = (result, hopper_pairs_rows()[6][4][1] / 2)  # 264 lone programs: two waves
    return out


@lru_cache(maxsize=None)
def lone_latency_s():
    """{launch kind: seconds}: what a lone program of each kind waits besides gpusim's chain of it without its set-up,
    at J = 1 (N = 1 causal): the measured wave of lone_launches() less that chain."""
    out = {}
    for kind, (result, measured_us) in lone_launches().items():
        grid, step = cost.schedule(result)
        assert grid.resident == 1, kind  # a lone program: one an SM
        out[kind] = round(measured_us * 1e-6 - (cost.chain(step, 1) - step.setup_s), 9)
    return out


@contextmanager
def lone_latency(latency):
    """The thirty-fourth session's second trial (not adopted), while the block runs: a Hopper program's set-up is what
    a lone program of its launch kind waits besides gpusim's chain (latency: {launch kind: seconds}), and alone on its
    SM it waits its set-up and its copies' latencies (TMA_ALONE_WAIT)."""
    key = tuple(sorted(latency.items()))
    def setup_s(self, cfg):
        return latency[hopper_pass.launch_kind(cfg)]
    with _patched(Hopper, "setup_s", setup_s, ("lone_latency_setup", key), moves=HOPPER_ROWS), _patched(
            cost, "alone_wait", TMA_ALONE_WAIT, ("lone_latency", key), moves=HOPPER_ROWS):
        yield


def lone_latency_figures():
    """hopper_figures() of the lone_latency trial, its constants from LONE_LAUNCHES: as the model stands, and under it."""
    now = hopper_figures(lambda key: key in LONE_LAUNCHES)
    with lone_latency(lone_latency_s()):
        return now, hopper_figures(lambda key: key in LONE_LAUNCHES)


def trial_table(figures, sides=("now", "under the trial")):
    """A Hopper trial's (now, under the trial) hopper_figures, as a table (or a change's, before and after: sides)."""
    now, trial = figures
    lines = [f"| launches | within 20%, {sides[0]} | range | {sides[1]} | range |", "|---|---|---|---|---|"]
    for name, (within, n, low, high) in now.items():
        t = trial[name]
        ranges = [f"{a:.2f}–{b:.2f}×" if a is not None else "" for a, b in ((low, high), (t[2], t[3]))]
        lines.append(f"| {name} | {within} of {n} | {ranges[0]} | {t[0]} of {t[1]} | {ranges[1]} |")
    return "\n".join(lines)


def compiled_sweep(name, group, programs):
    """A Hopper sweep with the compiled kernel read back (hopper_pairs.py, hopper_lone.py), results/h200/NAME: {its
    rows' `group` field: (registers, shared bytes, programs an SM holds (the compiled kernel's), gpusim's, {J: measured
    µs for `programs` programs, the slope over 2 to 16 of gpusim's waves})}, the causal d = 64 launch."""
    rows, out = json.loads((agreement.RESULTS / name).read_text())["rows"], {}
    for value in dict.fromkeys(r[group] for r in rows):
        mine = [r for r in rows if r[group] == value]
        known = next(r for r in mine if r["registers"] is not None)  # its first launch compiled it, read back nothing
        launch = {(r["steps"], r["waves"]): (r["ms"] * 1e3, r["heads"] * r["steps"]) for r in mine}
        costs = {j: (launch[j, 16][0] - launch[j, 2][0]) / (launch[j, 16][1] - launch[j, 2][1]) * programs
                 for j in dict.fromkeys(steps for steps, _ in launch)}
        out[value] = (known["registers"], known["shared_bytes"], known["resident"], known["per_sm"], costs)
    return out


def hopper_pairs_rows():
    """results/h200/hopper_pairs.json (runs 141-142), per stage count: compiled_sweep's, µs for 264 programs (two
    waves of one an SM, one wave of two)."""
    return compiled_sweep("hopper_pairs.json", "num_stages", 264)


def sweep_table(rows, label, programs, gpusim_column):
    """compiled_sweep's rows as a table: per row its label, the compiled kernel's registers, shared memory and the
    programs an SM holds (and gpusim's, with gpusim_column), and `programs` programs' cost at N = 1 and 4 Q blocks."""
    lines = [f"| {label} | registers | shared memory | an SM holds (compiled) | {'gpusim | ' * gpusim_column}µs for "
             f"{programs} programs, N = 1 / 4 Q blocks |", "|---|---|---|---|---|" + "---|" * gpusim_column]
    for value, (registers, shared, held, per_sm, costs) in rows.items():
        lines.append(f"| {value} | {registers} | {shared:,} B | {held} | {f'{per_sm} | ' * gpusim_column}"
                     + " / ".join(f"{costs[j]:.2f}" for j in sorted(costs)) + " |")
    return "\n".join(lines)


def hopper_lone_rows():
    """results/h200/hopper_lone.json (runs 143-144), per variant (one knob of the launch at 6 stages changed):
    compiled_sweep's, µs for 132 programs."""
    return compiled_sweep("hopper_lone.json", "variant", 132)


def hopper_waves_summary():
    """run 137's figures docs/perf.md quotes: gpusim ÷ measured of a wave's cost per head dim and mask, and at d = 64
    the µs a program costs beyond gpusim's (the wave's gap over the programs an SM holds)."""
    rows = json.loads((agreement.RESULTS / "hopper_waves.json").read_text())["rows"]
    per_sm = {(r["head_dim"], r["causal"]): r["per_sm"] for r in rows}
    slopes = {key: wave_slopes(waves) for key, waves in hopper_waves_rows().items()}
    out = {}
    for d, causal in per_sm:
        mine = [v for (dd, c, _), v in slopes.items() if (dd, c) == (d, causal)]
        label = f"d {d}, {'causal' if causal else 'not causal'}"
        out[label] = f"{label}: {_span([p / m for m, p in mine])}"
        if d == 64:
            out[label + ", µs"] = f"{_span([(m - p) / per_sm[d, causal] for m, p in mine], ' µs')} a program"
            one = [w[1][1] / w[1][0] for (dd, c, _), w in hopper_waves_rows().items() if (dd, c) == (d, causal)]
            out[label + ", one wave"] = f"{_span(one)} {'causal' if causal else 'not causal'}"
    return out


def lpt_order_rows():
    """results/h200/lpt_order.json (run 134): [(row, gpusim's ms by the last-wave rule, gpusim's ms, listed)], each row
    priced at the launch it ran (its lpt_heads)."""
    out = []
    for row in json.loads((agreement.RESULTS / "lpt_order.json").read_text())["rows"]:
        def result():
            return gpusim.simulate("hopper", batch=row["batch"], heads=row["heads"], seq=row["seq"],
                                   head_dim=row["head_dim"], causal=True, dtype=row["dtype"], gpu=agreement.PRESET,
                                   tiles=gpusim.Tiles(row["block_q"], row["block_kv"], lpt_heads=row["lpt_heads"]))
        with no_list_schedule():
            before = result().predicted_time_s * 1e3
        now = result()
        out.append((row, before, now.predicted_time_s * 1e3, cost.listed(cost.schedule(now)[0])))
    return out


def lpt_order_table():
    """lpt_order_rows() per head dim and order: the launches, those list-scheduled, and predicted / measured by the
    last-wave rule and by the model (the share within 20% and the span)."""
    rows = lpt_order_rows()
    lines = ["| d | lpt_heads | launches | list-scheduled | last-wave rule: within 20% | span | the model: within 20% "
             "| span |", "|---|---|---|---|---|---|---|---|"]
    for d, lpt in sorted({(r["head_dim"], r["lpt_heads"]) for r, *_ in rows}, key=lambda k: (-k[0], k[1])):
        group = [(r, b, n, listed) for r, b, n, listed in rows if (r["head_dim"], r["lpt_heads"]) == (d, lpt)]
        cells = []
        for i in (1, 2):
            ratios = [g[i] / g[0]["ms"] for g in group]
            cells += [f"{sum(abs(x - 1) <= 0.2 for x in ratios)} of {len(ratios)}", _span(ratios)]
        lines.append(f"| {d} | {lpt} | {len(group)} | {sum(g[3] for g in group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def list_schedule_trial_table():
    """trial_scores() before the thirty-first session's cost.list_schedule (no_list_schedule) and after it, with
    lpt_order.json's rows, the Hopper forwards of the forty sets scored before it, the sets meeting issue 24's target,
    and run 133's four, scored once (blind) after it."""
    lpt = lpt_order_rows()

    def scores(column):
        ratios = [row[column] / row[0]["ms"] for row in lpt]
        sets = {name: agreement.heldout_rows(name) for name in THIRTY + BLIND_LIST_SCHEDULE}

        def hopper(names):
            pairs = [p for name in names for p in sets[name] if p[0]["algo"] == "hopper"]
            return f"{agreement.summary(pairs)['within 20%']:.1%} of {len(pairs)}"
        return model_scores() | {
            "lpt_order.json": f"{sum(abs(x - 1) <= 0.2 for x in ratios) / len(ratios):.1%}",
            "held-out, the forty sets' Hopper forwards": hopper(THIRTY), "held-out, the forty sets": sets_share(THIRTY),
            "held-out sets meeting issue 24's target": f"{sum(meets_target(sets[n]) for n in THIRTY)} of 40",
            "held-out, run 133's four sets (blind)": sets_share(BLIND_LIST_SCHEDULE),
            "run 133's Hopper forwards (blind)": hopper(BLIND_LIST_SCHEDULE),
            "run 133's sets meeting issue 24's target (blind)":
                f"{sum(meets_target(sets[n]) for n in BLIND_LIST_SCHEDULE)} of 4"}
    with no_list_schedule():
        then = scores(1)
    now = scores(2)
    return "\n".join(["| rows | the last-wave rule (before) | list-scheduled where longest first, one per SM (the model) |",
                      "|---|---|---|"] + [f"| {name} | {then[name]} | {now[name]} |" for name in now])


def launch_parts_ms():
    """results/h200/launch_parts.json (run 120): {(kind, programs, tile_bytes, l2): µs}, the median over the warp counts."""
    groups = {}
    for r in json.loads((agreement.RESULTS / "launch_parts.json").read_text())["rows"]:
        groups.setdefault((r["kind"], r["programs"], r["tile_bytes"], r["l2"]), []).append(r["ms"] * 1e3)
    return {key: float(np.median(us)) for key, us in groups.items()}


def launch_parts_table():
    """launch_parts_ms(): per grid and tile, each kind's one-wave launch, µs (the rates it gives: launch_parts_rates)."""
    us = launch_parts_ms()
    lines = ["| programs | tile | empty, µs | load, cold / warm | store | copy, cold / warm |", "|---|---|---|---|---|---|"]
    for programs, size in sorted({(p, b) for _, p, b, _ in us}):
        lines.append(f"| {programs} | {size:,} B | {us['empty', programs, size, 'warm']:.2f} | "
                     f"{us['load', programs, size, 'cold']:.2f} / {us['load', programs, size, 'warm']:.2f} | "
                     f"{us['store', programs, size, 'warm']:.2f} | "
                     f"{us['copy', programs, size, 'cold']:.2f} / {us['copy', programs, size, 'warm']:.2f} |")
    return "\n".join(lines)


def launch_parts_rates(programs=132):
    """GB/s a lone program moves its tile at, from 16 to 32 KiB (launch_parts_ms): a copy's reads, cold and warm, and a
    store's writes; and the copy's time at 128 B less the empty kernel's, µs (its latencies), cold and warm."""
    us = launch_parts_ms()
    rate = lambda kind, l2: 16384 / (us[kind, programs, 32768, l2] - us[kind, programs, 16384, l2]) / 1e3  # noqa: E731
    first = {l2: us["copy", programs, 128, l2] - us["empty", programs, 128, "warm"] for l2 in ("cold", "warm")}
    return dict(copy_cold=rate("copy", "cold"), copy_warm=rate("copy", "warm"), store=rate("store", "warm"),
                first_cold=first["cold"], first_warm=first["warm"])


def naive_launch_rows():
    """results/h200/naive_launches.json (run 148): [(kernel, measured µs, gpusim's µs)] of each of naive's kernels
    launched alone and of the call ("all", its three launches), gpusim at the row's shape and tiles."""
    out = []
    for r in json.loads((agreement.RESULTS / "naive_launches.json").read_text())["rows"]:
        if r["kernel"] == "empty":
            continue
        result = gpusim.simulate("naive", batch=r["batch"], heads=r["heads"], seq=r["seq"], head_dim=r["head_dim"],
                                 causal=r["causal"], dtype="fp16", gpu=agreement.PRESET, block_q=r["block_q"],
                                 block_kv=r["block_kv"])
        times = {k.name: k.predicted_time_s for k in result.kernels} | {"all": result.predicted_time_s}
        out.append((r["kernel"], r["ms"] * 1e3, times[r["kernel"]] * 1e6))
    return out


def naive_empty_us():
    """naive_launches.json's empty kernels replayed from a graph: {(programs, launches in a row): µs}."""
    rows = json.loads((agreement.RESULTS / "naive_launches.json").read_text())["rows"]
    return {(r["programs"], r["launches"]): r["ms"] * 1e3 for r in rows if r["kernel"] == "empty"}


def naive_states():
    """{column: a context manager}: the model before the thirty-ninth session's change, then each of its three parts
    added in turn (naive's launches at the graph's cost; pv's lone programs pipelined; qk's store in series: the model),
    as NAIVE_COLUMNS names them."""
    return {"before": naive_before, "graph": lambda: _within_both(pv_whole_wait(), qk_overlapped()),
            "pv": qk_overlapped, "model": nullcontext}


NAIVE_COLUMNS = ("before | launches at the graph's cost | and pv pipelined | and qk's store in series (the model) |\n"
                 "|---|---|---|---|---|")


def naive_launch_figures():
    """{kernel: {state: (median gpusim ÷ measured, within 20%, of how many, least, most)}} of naive_launch_rows() under
    each of naive_states()."""
    out = {kernel: {} for kernel in ("qk", "softmax", "pv", "all")}
    for state, context in naive_states().items():
        with context():
            rows = naive_launch_rows()
        for kernel in out:
            ratios = [p / m for k, m, p in rows if k == kernel]
            out[kernel][state] = (float(np.median(ratios)), *figure(ratios))
    return out


def naive_launches_table():
    """naive_launch_figures() as docs/perf.md shows them."""
    cell = lambda f: f"{f[0]:.2f} ({f[3]:.2f}–{f[4]:.2f}), {f[1]} of {f[2]}"  # noqa: E731
    lines = ["| kernel | " + NAIVE_COLUMNS]
    for kernel, f in naive_launch_figures().items():
        lines.append(f"| {kernel} | " + " | ".join(cell(f[state]) for state in naive_states()) + " |")
    return "\n".join(lines)


def naive_heldout_figures(names):
    """{state: (naive rows within 20%, of how many)} of these held-out sets under each of naive_states()."""
    out = {}
    for state, context in naive_states().items():
        with context():
            ratios = [x for name in names for r, x in agreement.heldout_rows(name) if r["algo"] == "naive"]
        out[state] = (sum(abs(x - 1) <= 0.2 for x in ratios), len(ratios))
    return out


def naive_heldout_table():
    """naive_heldout_figures() of the sets scored before the change (looked at while it was made) and of runs 146-147's
    (blind), and of the blind sets' every row and those meeting issue 24's target, before and with the change."""
    rows = {"the 54 sets scored before it, naive rows": naive_heldout_figures(THIRTY_EIGHT),
            "runs 146-147's eight sets (blind), naive rows": naive_heldout_figures(BLIND_NAIVE)}
    lines = ["| rows | " + NAIVE_COLUMNS]
    lines += [f"| {name} | " + " | ".join(f"{a} of {b}" for a, b in f.values()) + " |" for name, f in rows.items()]
    with naive_before():
        before = sets_share(BLIND_NAIVE), sum(meets_target(agreement.heldout_rows(n)) for n in BLIND_NAIVE)
    now = sets_share(BLIND_NAIVE), sum(meets_target(agreement.heldout_rows(n)) for n in BLIND_NAIVE)
    lines.append(f"| runs 146-147's eight sets (blind), all rows | {before[0]} | | | {now[0]} |")
    lines.append(f"| of them, sets meeting issue 24's target | {before[1]} of 8 | | | {now[1]} of 8 |")
    return "\n".join(lines)


def qk_parts_us():
    """results/h200/qk_parts.json (run 149): {(heads, seq, head_dim, block_q, block_kv): {part: µs}}."""
    out = {}
    for r in json.loads((agreement.RESULTS / "qk_parts.json").read_text())["rows"]:
        key = (r["heads"], r["seq"], r["head_dim"], r["block_q"], r["block_kv"])
        out.setdefault(key, {})[r["part"]] = r["ms"] * 1e3
    return out


def qk_parts_table():
    """qk_parts_us() beside gpusim's qk at the same launch before the thirty-ninth session's change and with it, and the
    full program over its two halves in series."""
    lines = ["| heads × N, d | tile | full, µs | no store | no dot | store only | empty grid | full ÷ (no store + "
             "store only − empty) | gpusim's qk before → now, µs |", "|---|---|---|---|---|---|---|---|---|"]
    for (heads, seq, d, bq, bk), us in qk_parts_us().items():
        with naive_before():
            before = qk_us(heads, seq, d, bq, bk)
        series = us["no_store"] + us["store_only"] - us["empty"]
        lines.append(f"| {heads} × {seq:,}, {d} | {bq} × {bk} | {us['full']:.1f} | {us['no_store']:.1f} | "
                     f"{us['no_dot']:.1f} | {us['store_only']:.1f} | {us['empty']:.1f} | {us['full'] / series:.2f} | "
                     f"{before:.1f} → {qk_us(heads, seq, d, bq, bk):.1f} |")
    return "\n".join(lines)


def qk_us(heads, seq, head_dim, block_q, block_kv):
    """gpusim's qk launch, µs, fp16, batch 1, non-causal, N = N_kv, at these tiles."""
    return gpusim.simulate("naive", heads=heads, seq=seq, head_dim=head_dim, dtype="fp16", gpu=agreement.PRESET,
                           block_q=block_q, block_kv=block_kv).kernels[0].predicted_time_s * 1e6


def dkdv_list_table():
    """The thirty-third session's list-scheduled dK/dV (change_table): the training steps, by the last-wave rule and
    list-scheduled; the sets scored through the thirty-second session, then the blind two."""
    return change_table(dkdv_by_waves, ("last wave", "listed"), "training steps", lambda r: r["kind"] == "train",
                        THIRTY_TWO, BLIND_DKDV_LIST, "the blind two")


def setup_figures():
    """hopper_figures()'s form for results/h200/program_setup.json's Hopper rows (one program an SM, 1-16 K/V blocks;
    warp-specialized and software-pipelined, d 64 and 128), one wave and 4 or 16."""
    rows = agreement.program_setup_rows()
    groups = {"program_setup.json: one wave": [x for r, x in rows if r["waves"] == 1],
              "program_setup.json: 4 and 16 waves": [x for r, x in rows if r["waves"] > 1]}
    return {name: figure(xs) for name, xs in groups.items()}


def setup_rows_figures():
    """setup_figures() before the thirty-fifth session's set-up of a lone Hopper program (lone_by_port) and after."""
    with lone_by_port():
        before = setup_figures()
    return before, setup_figures()


def graph_launch_figures():
    """The thirty-fifth session's second change, before it (events_launch) and after: hopper_figures() over the 50
    sets scored after its first, setup_figures(), and run 137's launches of one wave."""
    def figures():
        out = hopper_figures(lambda key: key in LONE_LAUNCHES, FIRST_OF_35) | setup_figures()
        one = [waves[1][1] / waves[1][0] for waves in hopper_waves_rows().values()]
        return out | {"run 137: one wave": figure(one)}
    with events_launch():
        before = figures()
    return before, figures()


def lone_setup_table():
    """The thirty-fifth session's set-up of a lone Hopper program (change_table): the Hopper kernel's rows, before it
    (lone_by_port) and after; the sets scored through the thirty-fourth session, then the blind four."""
    return change_table(lone_by_port, ("before", "after"), "Hopper rows", lambda r: r["algo"] == "hopper", THIRTY_FOUR,
                        BLIND_LONE_SETUP, "the blind four")


def dkdv_ramp_summary():
    """run 136's figures docs/perf.md quotes: the causal launches within 20% by the last-wave rule and list-scheduled,
    with their spans, and the non-causal launches' span."""
    rows = dkdv_ramp_rows()
    causal = [(waved / r["ms"], now / r["ms"]) for r, _, waved, now in rows if r["causal"]]
    full = [now / r["ms"] for r, _, _, now in rows if not r["causal"]]
    return {"last wave": f"{sum(abs(w - 1) <= 0.2 for w, _ in causal)} of {len(causal)} within 20% "
                         f"({_span([w for w, _ in causal])})",
            "listed": f"{sum(abs(n - 1) <= 0.2 for _, n in causal)} of {len(causal)} ({_span([n for _, n in causal])})",
            "non-causal": f"{len(full)} non-causal launches {_span(full)}"}


def sm_edge_rows(path=agreement.H100 / "sm_edge.json", before=even_waves):
    """results/h100/sm_edge.json (run 217), or another file of its rows (pair_edge.json, pipeline_beside.json):
    {(head_dim, block_q, block_kv, J): {programs: (measured µs, gpusim's µs under `before` (the model before
    cost.last_longest: even_waves), gpusim's µs)}}, flash2 at one Q block per program, on the measured preset of the
    file's GPU (H100-measured on an H100, else H200-measured); a file whose rows set num_stages (lone_stages.json) keys
    them (head_dim, block_q, block_kv, num_stages, J)."""
    data = json.loads(path.read_text())
    preset = "H100-measured" if "H100" in data["environment"]["gpu"] else agreement.PRESET

    def priced(r):
        tiles = gpusim.Tiles(r["block_q"], r["block_kv"], num_stages=r.get("num_stages"))
        return gpusim.simulate("flash2", batch=1, heads=r["heads"], seq=r["seq"], seq_kv=r["seq_kv"],
                               head_dim=r["head_dim"], dtype="fp16", gpu=preset, tiles=tiles).predicted_time_s * 1e6
    rows = [r for r in data["rows"] if "ms" in r]
    with before():
        was = [priced(r) for r in rows]
    out = {}
    for r, then in zip(rows, was):
        stages = (r["num_stages"],) if "num_stages" in r else ()
        out.setdefault((r["head_dim"], r["block_q"], r["block_kv"], *stages, r["steps"]), {})[r["programs"]] = (
            r["ms"] * 1e3, then, priced(r))
    return out


def sm_edge_table():
    """sm_edge_rows(): per tile and J, the measured launch at 132 programs (one an SM) and what 136 (four SMs holding
    two) costs over it, measured, priced before cost.last_longest and with it; gpusim over the measured at 132."""
    lines = ["| d | tile | J | µs at 132 programs | 136 ÷ 132, measured | gpusim before last_longest | gpusim after it | "
             "gpusim ÷ measured at 132 |", "|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, j), launches in sm_edge_rows().items():
        one, two = launches[132], launches[136]
        lines.append(f"| {d} | {bq} × {bk} | {j} | {one[0]:.2f} | {two[0] / one[0]:.2f} | {two[1] / one[1]:.2f} | "
                     f"{two[2] / one[2]:.2f} | {one[2] / one[0]:.2f} |")
    return "\n".join(lines)


def pair_edge_table(path=agreement.H100 / "pair_edge.json"):
    """sm_edge_rows() of results/h100/pair_edge.json (run 218): per tile, the measured launch at 132 programs (one an
    SM), each larger count's over it, measured and priced, and gpusim over the measured at 132 and at 264 (two on every
    SM)."""
    launches = sm_edge_rows(path)
    counts = sorted(next(iter(launches.values())))[1:]
    lines = ["| d | tile | µs at 132 | ÷ 132 at " + " / ".join(map(str, counts)) + ", measured | gpusim | "
             "gpusim ÷ measured at 132 / 264 |", "|---|---|---|---|---|---|"]
    for (d, bq, bk, _), w in launches.items():
        lines.append(f"| {d} | {bq} × {bk} | {w[132][0]:.2f} | " + " / ".join(f"{w[c][0] / w[132][0]:.2f}" for c in counts)
                     + " | " + " / ".join(f"{w[c][2] / w[132][2]:.2f}" for c in counts)
                     + f" | {w[132][2] / w[132][0]:.2f} / {w[264][2] / w[264][0]:.2f} |")
    return "\n".join(lines)


def _over_measured(launches, counts, priced):
    """gpusim's price (priced: 1 before, 2 now) over the measured time of one tile's launches at each count."""
    return " / ".join(f"{launches[c][priced] / launches[c][0]:.2f}" for c in counts)


def pipeline_beside_rows():
    """sm_edge_rows() of results/h100/pipeline_beside.json (run 219), gpusim before cost.pipelined_beside
    (alone_pipelines) and with it."""
    return sm_edge_rows(agreement.H100 / "pipeline_beside.json", alone_pipelines)


def pipeline_beside_table():
    """pipeline_beside_rows(): per tile and J, the measured launch at 132 programs (one an SM), each larger count's
    over it, and gpusim over the measured at each count, before cost.pipelined_beside and with it."""
    launches = pipeline_beside_rows()
    counts = sorted(next(iter(launches.values())))
    lines = ["| d | tile | J | µs at 132 | ÷ 132 at " + " / ".join(map(str, counts[1:])) + ", measured | gpusim ÷ measured "
             "at each count, before | with `pipelined_beside` |", "|---|---|---|---|---|---|---|"]
    for (d, bq, bk, j), w in launches.items():
        lines.append(f"| {d} | {bq} × {bk} | {j} | {w[132][0]:.2f} | "
                     + " / ".join(f"{w[c][0] / w[132][0]:.2f}" for c in counts[1:]) + " | "
                     + f"{_over_measured(w, counts, 1)} | {_over_measured(w, counts, 2)} |")
    return "\n".join(lines)


def wave_term_rows():
    """sm_edge_rows() of results/h100/wave_term.json (run 220), gpusim before cost.before_last counted the last wave
    once (waves_at_share) and with it."""
    return sm_edge_rows(agreement.H100 / "wave_term.json", waves_at_share)


def wave_term_table():
    """wave_term_rows(): per tile and J, the measured launch at 132 programs and gpusim over the measured at each
    count, before the last wave was counted once and with it."""
    launches = wave_term_rows()
    counts = sorted(next(iter(launches.values())))
    lines = ["| d | tile | J | µs at 132 | gpusim ÷ measured at " + " / ".join(map(str, counts)) + ", before | now |",
             "|---|---|---|---|---|---|"]
    for (d, bq, bk, j), w in launches.items():
        lines.append(f"| {d} | {bq} × {bk} | {j} | {w[132][0]:.2f} | {_over_measured(w, counts, 1)} | "
                     f"{_over_measured(w, counts, 2)} |")
    return "\n".join(lines)


def beside_below_64(grid):
    """A trial's addition to cost.pipelined_beside: a 4-warp program of 16 or 32 rows of a pass_.LONE_FULL_ISSUE kernel
    (flash2's forward), pipelined S > 2 deep, beside others on its SM (b > 1), as that rule has it for 64 rows."""
    return (grid.kernel in grid.cfg.pass_.LONE_FULL_ISSUE and grid.resident > 1 and grid.cfg.block_q < 64
            and grid.res.num_warps == cost.ISSUE_PER_CLOCK and grid.res.num_stages > 2)


@contextmanager
def small_beside():
    """A trial, not adopted (docs/perf.md, "A lone program of 16 or 32 rows pipelined"): cost.pipelined_beside, or
    beside_below_64, while the block runs."""
    pair = cost.pipelined_beside  # an outer context's, where one has put an older rule back
    with _patched(cost, "pipelined_beside", lambda grid: beside_below_64(grid) or pair(grid), "small_beside",
                  moves=FLASH2_ROWS):
        yield


def lone_stages_rows():
    """sm_edge_rows() of results/h100/lone_stages.json (run 221): {(head_dim, block_q, block_kv, num_stages, J):
    {programs: (measured µs, gpusim's µs before the sixty-eighth session's rules (pipelines_from_64), now)}}."""
    return sm_edge_rows(agreement.H100 / "lone_stages.json", pipelines_from_64)


def lone_stages_table():
    """lone_stages_rows(): per tile, stages and J, the measured launch at 66, 132 and 264 programs, and gpusim over the
    measured at each, before cost.lone_pipeline took 16- and 32-row programs in and with it."""
    lines = ["| d | tile | S | J | µs at 66 / 132 / 264 | gpusim ÷ measured, before | now |",
             "|---|---|---|---|---|---|---|"]
    for (d, bq, bk, stages, j), w in lone_stages_rows().items():
        counts = sorted(w)
        lines.append(f"| {d} | {bq} × {bk} | {stages} | {j} | " + " / ".join(f"{w[c][0]:.1f}" for c in counts)
                     + f" | {_over_measured(w, counts, 1)} | {_over_measured(w, counts, 2)} |")
    return "\n".join(lines)


def last_alone_rows():
    """sm_edge_rows() of results/h100/last_alone.json (run 221), before the sixty-eighth session's rules
    (pipelines_from_64) and now: {(head_dim, block_q, block_kv, J): {programs: (measured, before, now)}}."""
    return sm_edge_rows(agreement.H100 / "last_alone.json", pipelines_from_64)


def last_alone_table():
    """last_alone_rows(): per tile and J, the full waves' measured time, what a last wave of one program on 33, 66
    and 132 SMs adds, measured, priced before cost.fullest gave it its own Schedule and now, and gpusim over the
    measured."""
    lines = ["| d | tile | J | µs at b × 132 | + 33 / 66 / 132 programs adds, measured | gpusim before | now | "
             "gpusim ÷ measured, before | now |", "|---|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk, j), w in last_alone_rows().items():
        full, *more = sorted(w)
        adds = [" / ".join(f"{w[c][i] - w[full][i]:.1f}" for c in more) for i in (0, 1, 2)]
        lines.append(f"| {d} | {bq} × {bk} | {j} | {w[full][0]:.1f} | {adds[0]} | {adds[1]} | {adds[2]} | "
                     f"{_over_measured(w, [full, *more], 1)} | {_over_measured(w, [full, *more], 2)} |")
    return "\n".join(lines)


def dkdv_edge_rows():
    """results/h100/dkdv_edge.json (run 217): {(head_dim, block_q, block_kv): [(programs, b, measured µs, gpusim's µs
    by the last-wave rule (one_slot_listed), gpusim's µs list-scheduled)]}, causal dK/dV alone, H100-measured."""
    def priced(r):
        result = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"],
                                 kv_heads=r["kv_heads"], causal=True, dtype=r["dtype"], gpu="H100-measured",
                                 backward=True, backward_blocks=(r["block_q"], r["block_kv"]))
        return next(k for k in result.kernels if k.name == "dkdv")
    rows = json.loads((agreement.H100 / "dkdv_edge.json").read_text())["rows"]
    with one_slot_listed():
        waved = [priced(r).predicted_time_s * 1e6 for r in rows]
    out = {}
    for r, was in zip(rows, waved):
        kernel = priced(r)
        out.setdefault((r["head_dim"], r["block_q"], r["block_kv"]), []).append(
            (kernel.programs, kernel.blocks_per_sm, r["ms"] * 1e3, was, kernel.predicted_time_s * 1e6))
    return out


def dkdv_edge_table():
    """dkdv_edge_rows(): per tile, b, the launches' programs, the largest fall measured from one launch to the next
    larger, and gpusim ÷ measured by the last-wave rule and list-scheduled: its range and the launches within 20%."""
    lines = ["| d | tile | b | programs | largest fall, measured | last-wave rule ÷ measured | within 20% | "
             "list-scheduled ÷ measured | within 20% |", "|---|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk), launches in dkdv_edge_rows().items():
        fall = max(1 - b[2] / a[2] for a, b in zip(launches, launches[1:]))
        cells = []
        for field in (3, 4):
            ratios = [x[field] / x[2] for x in launches]
            cells.append(f"{min(ratios):.2f}–{max(ratios):.2f} | {sum(abs(x - 1) <= 0.2 for x in ratios)} of "
                         f"{len(ratios)}")
        lines.append(f"| {d} | {bq} × {bk} | {launches[0][1]} | {launches[0][0]}–{launches[-1][0]} | {100 * fall:.1f}% | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)

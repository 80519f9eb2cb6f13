"""The held-out sets (results/h200/heldout*.json, never fitted) and their scorings: the sets scored through each
session (HELD_OUT to TRIALED), each once-only scoring blind to a change (the BLIND_* sets, BLIND_SCORINGS,
blind_state), the scores every trial and model change is judged by (trial_scores, model_scores, sets_share,
change_scores, change_table, meets_target), the sets' tables, the host probe beside their training steps, and their
rows as they were before runs 102, 105 and 135 measured them again (remeasured_rows, before_retimed).
"""
import json
import tarfile
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmarks import agreement
from benchmarks.report_history import (
    _patched, before_ragged, counted_dots, dkdv_by_waves, even_waves, events_launch, full_last_wave, lone_by_port,
    lone_split_before, naive_before, no_list_schedule, no_lone_copy, no_lone_pipeline, no_measured_issue, no_own_copy,
    one_warp_issue, preset_host_floor)
from benchmarks.report_kernels import ROOT, _span
from gpusim_course.provenance import heldout


def heldout_table(name="heldout.json"):
    """A held-out set (results/h200/heldout.json, or heldout_SEED.json for seeds 2027-2033) against the current
    model, per kind: never fitted (issue 24's held-out sets)."""
    pairs = agreement.heldout_rows(name)
    kinds = list(dict.fromkeys(f"{r['kind']} {r['algo']}" for r, _ in pairs))
    lines = ["| rows | count | within 20% | within 40% | median predicted / measured | worst |", "|---|---|---|---|---|---|"]
    for label in ["all", *kinds]:
        group = [p for p in pairs if label == "all" or f"{p[0]['kind']} {p[0]['algo']}" == label]
        s, wide = agreement.summary(group), agreement.summary(group, 0.4)
        lines.append(f"| {label} | {s['rows']} | {s['within 20%']:.0%} | {wide['within 40%']:.0%} | {s['median']:.2f} "
                     f"| {s['worst']:.2f} |")
    return "\n".join(lines)


def labelled(pairs):
    """agreement.heldout_rows' (row, ratio) pairs as gpusim_course.provenance.heldout's (kind label, ratio)."""
    return [(heldout.kind(row), ratio) for row, ratio in pairs]


def heldout_sets_table():
    """Every held-out set against the current model, seed by seed, and all of them pooled (heldout.score: the share
    within 20% of all rows and of each kind, and whether the set meets issue 24's target)."""
    sets = {name: labelled(agreement.heldout_rows(name)) for name in reversed(HELD_OUT)}
    rows = [heldout.score(name, pairs) for name, pairs in sets.items()]
    rows.append(heldout.score("all, pooled", [p for pairs in sets.values() for p in pairs]))
    return scores_table(rows)


def scores_table(rows):
    """heldout.score's rows as a markdown table."""
    return "\n".join(["| " + " | ".join(rows[0]) + " |", "|---" * len(rows[0]) + "|"]
                     + ["| " + " | ".join(f"{v:,}" if isinstance(v, int) else v for v in r.values()) + " |" for r in rows])


def trial_scores():
    """The shares within 20% the trial is judged by: the fitted sets, the lone programs' setup rows, the held-out sets
    (all rows, flash2's forwards, its training steps), and best_blocks' picks within 5% of the fastest (tiles.json)."""
    held = [p for name in TRIALED for p in agreement.heldout_rows(name)]
    kind = lambda k: [p for p in held if f"{p[0]['kind']} {p[0]['algo']}" == k]  # noqa: E731
    picks = [ratio for _, ratio in agreement.tile_choice().values() if ratio is not None]
    shares = {name: agreement.summary(agreement.rows(name))["within 20%"] for name in agreement.FILES}
    shares |= {"program_setup.json": agreement.summary(agreement.program_setup_rows())["within 20%"],
               "held-out, all": agreement.summary(held)["within 20%"],
               "held-out, flash2 forwards": agreement.summary(kind("forward flash2"))["within 20%"],
               "held-out, training steps": agreement.summary(kind("train flash2"))["within 20%"]}
    return {name: f"{share:.1%}" for name, share in shares.items()} | {
        "tile picks within 5%": f"{sum(r <= 1.05 for r in picks)} of {len(picks)}"}


def model_scores():
    """trial_scores() under the model in force (as it stands, or a trial's, or as it stood inside line_issue or
    one_warp_issue), once a process for each (agreement.state()): the trial tables share it."""
    return _model_scores(agreement.state())


@lru_cache(maxsize=None)
def _model_scores(model):
    return trial_scores()


def change_scores(names, count, blind, run):
    """A model change's trial-table rows for the held-out sets: those scored before it (`names`, `count` of them in
    words) pooled, how many meet issue 24's target, and the two sets of run `run`, scored once (blind) after it."""
    sets = {name: agreement.heldout_rows(name) for name in names}
    return {f"held-out, the {count} sets scored before it": sets_share(names),
            "held-out sets meeting issue 24's target": f"{sum(meets_target(p) for p in sets.values())} of {len(sets)}",
            f"held-out, run {run}'s two sets (blind)": sets_share(blind)}


def probe_rows(names, probe="host_probe_us"):
    """The training steps of these held-out sets that carry the host probe `probe`: (measured ms, the probe in ms,
    gpusim's GPU time for the step in ms), the GPU time summed over its kernels, before the host floor."""
    out = []
    for name in names:
        for row, _ in agreement.heldout_rows(name):
            if row["kind"] == "train" and row.get(probe):
                out.append((row["ms"], row[probe] * 1e-3, agreement.heldout_gpu_s(row) * 1e3))
    return out


def probe_figures(rows):
    """probe_rows' steps as the host probe prices them: {"host": the host-bound steps' (GPU time under the probe)
    measured ÷ probe, "all": every step's gpusim ÷ measured (the GPU time or the probe, whichever is longer)}."""
    return {"host": [m / p for m, p, g in rows if g < p], "all": [max(p, g) / m for m, p, g in rows]}


def interleaved_table():
    """The training steps of the sets before run 151 (the probe taken just before each) and of run 151's four (the
    probe taken before each, and interleaved with it: the scoring's): the host-bound steps within 20% and their measured
    time over the probe's, and every step within 20%."""
    groups = {f"the {len(THIRTY_NINE)} sets before, the probe just before the step": probe_rows(THIRTY_NINE),
              "run 151's four sets, the probe just before the step": probe_rows(INTERLEAVED, "host_probe_before_us"),
              "run 151's four sets, the probe interleaved with the step (the scoring's)": probe_rows(INTERLEAVED)}
    lines = ["| training steps | host-bound, within 20% | host-bound, measured ÷ probe: median (least–most) | "
             "all, within 20% |", "|---|---|---|---|"]
    for name, rows in groups.items():
        f = probe_figures(rows)
        host, close = f["host"], lambda x: sum(abs(1 / r - 1) <= 0.2 for r in x)  # noqa: E731
        lines.append(f"| {name} | {close(host)} of {len(host)} | {np.median(host):.2f} ({_span(host, '')}) | "
                     f"{sum(abs(r - 1) <= 0.2 for r in f['all'])} of {len(f['all'])} |")
    return "\n".join(lines)


def host_probe_table():
    """Run 132's four sets (the host probe beside each training step) and run 130's two (none), scored once with the
    preset's host floor (preset_host_floor) and with the probe's; every set pooled, and how many meet issue 24's target."""
    unprobed = {n: agreement.heldout_rows(n) for n in THIRTY if n not in BLIND_HOST_PROBE}  # alike either way

    def scores():
        every = unprobed | {n: agreement.heldout_rows(n) for n in BLIND_HOST_PROBE}
        train = [p for n in BLIND_HOST_PROBE for p in every[n] if p[0]["kind"] == "train"]

        def share(names):
            pairs = [p for n in names for p in every[n]]
            return f"{agreement.summary(pairs)['within 20%']:.1%} of {len(pairs)}"
        return {"run 132's four sets, training steps": f"{agreement.summary(train)['within 20%']:.1%} of {len(train)}",
                "run 132's four sets, all rows": share(BLIND_HOST_PROBE),
                "run 132's sets meeting issue 24's target": f"{sum(meets_target(every[n]) for n in BLIND_HOST_PROBE)} of 4",
                "run 130's two sets (no probe), all rows": share(UNCHANGED_MEASURED),
                f"all {len(THIRTY)} sets pooled": share(THIRTY),
                "sets meeting issue 24's target": f"{sum(meets_target(p) for p in every.values())} of {len(every)}"}
    with preset_host_floor():
        before = scores()
    now = scores()
    return "\n".join(["| rows | the preset's host floor (before) | the host probe beside each step (the model) |",
                      "|---|---|---|"] + [f"| {name} | {before[name]} | {now[name]} |" for name in now])


def sets_share(names):
    """The share of these held-out sets' rows within 20%, and their count."""
    pairs = [p for n in names for p in agreement.heldout_rows(n)]
    return f"{agreement.summary(pairs)['within 20%']:.1%} of {len(pairs)}"


REMEASURED = ROOT / "results" / "h200" / "logs" / "run102_heldout_flash2_tiles.tar.gz"
TRAIN_TIMED = ROOT / "results" / "h200" / "logs" / "run105_heldout_train_host.tar.gz"
RETIMED = ROOT / "results" / "h200" / "logs" / "run135_heldout_train_probe.tar.gz"


@lru_cache(maxsize=None)
def files_before_retimed():
    """{set: its file}: the sets whose training steps run 135 timed again with the host probe beside each (seeds 2026
    to 2061), as they were before it (its logs)."""
    with tarfile.open(RETIMED) as tar:
        return {Path(m.name).name: json.load(tar.extractfile(m)) for m in tar.getmembers()
                if m.name.startswith("run135/heldout_before/")}


@lru_cache(maxsize=None)
def rows_before_retimed():
    """{set: rows}: files_before_retimed's rows."""
    return {name: data["rows"] for name, data in files_before_retimed().items()}


@contextmanager
def before_retimed():
    """The held-out sets as they were before run 135 (the training steps of seeds 2026 to 2061 timed without the host
    probe), while the block runs: as every figure docs/perf.md quotes from before it."""
    current = agreement.read_heldout
    with _patched(agreement, "read_heldout", lambda name: rows_before_retimed().get(name) or current(name),
                  "before_retimed", rows=True):
        yield


def retimed_rows():
    """{set: (pairs before run 135, pairs after)}: agreement.heldout_rows of each set run 135 timed again, under the
    model as it stands."""
    with before_retimed():
        before = {n: agreement.heldout_rows(n) for n in retimed_sets()}
    return {n: (before[n], agreement.heldout_rows(n)) for n in retimed_sets()}


def retimed_sets():
    """The sets run 135 timed again, the newest first (as HELD_OUT)."""
    return [n for n in HELD_OUT if n in rows_before_retimed()]


def _trained(pairs):
    """A set's training steps within 20%, as "k of n"."""
    train = [r for row, r in pairs if row["kind"] == "train"]
    return f"{sum(abs(r - 1) <= 0.2 for r in train)} of {len(train)}"


def retimed_steps():
    """[(row after, row before, host-bound, predicted / measured)]: run 135's training steps beside the same steps
    before it; host-bound where gpusim's GPU time for the step is under the host probe beside it."""
    out = []
    for name in retimed_sets():
        for row, was in zip(agreement.read_heldout(name), rows_before_retimed()[name]):
            if row["kind"] == "train" and row.get("ms") and was.get("ms"):
                sim = agreement.heldout_simulated(row)
                gpu_s = sum(k.predicted_time_s for k in sim.kernels)
                out.append((row, was, gpu_s < row["host_probe_us"] * 1e-6, sim.predicted_time_s / (row["ms"] * 1e-3)))
    return out


def retimed_summary():
    """What docs/perf.md says of run 135: the probe's span and median, how far the GPU-bound and the host-bound steps
    moved (after ÷ before), the misses after it by cause, and the sets meeting issue 24's target before and after."""
    steps = retimed_steps()
    probe = [row["host_probe_us"] for row, *_ in steps]
    moved = {bound: [row["ms"] / was["ms"] for row, was, host, _ in steps if host == bound] for bound in (False, True)}
    misses = [(host, x) for _, _, host, x in steps if abs(x - 1) > 0.2]
    slow = [(row, was) for row, was, host, x in steps if not host and x > 1.2]
    slow_before = sum(agreement.heldout_simulated(was).predicted_time_s / (was["ms"] * 1e-3) > 1.2 for _, was in slow)
    with before_retimed():
        met_before = sum(meets_target(agreement.heldout_rows(n)) for n in THIRTY_TWO)
    return {"probe": f"{min(probe):.0f}–{max(probe):.0f} µs (median {np.median(probe):.0f})",
            "GPU-bound": f"{len(moved[False])} GPU-bound steps took {np.median(moved[False]):.2f}× their earlier time "
                         f"(median; {sum(abs(m - 1) <= 0.05 for m in moved[False])} within 5%)",
            "host-bound": f"{len(moved[True])} host-bound ones {_span(moved[True])} (median {np.median(moved[True]):.2f}×)",
            "misses": f"{len(misses)} steps miss 20%: {sum(h for h, _ in misses)} host-bound, "
                      f"{sum(not h and x > 1 for h, x in misses)} GPU-bound priced slow, "
                      f"{sum(not h and x < 1 for h, x in misses)} GPU-bound priced fast",
            "slow": f"measured {_span([row['ms'] for row, _ in slow], ' ms')}, priced "
                    f"{_span([x for _, _, host, x in steps if not host and x > 1.2])}; {slow_before} of the {len(slow)} "
                    "missed so before",
            "sets": f"{met_before} to {sum(meets_target(agreement.heldout_rows(n)) for n in THIRTY_TWO)} of "
                    f"{len(THIRTY_TWO)}"}


def retimed_table():
    """retimed_rows() set by set: the training steps and all rows within 20%, and issue 24's target, before run 135 and
    after; the host probe's span over the set's steps; and the sets pooled."""
    lines = ["| set | training steps within 20%: before | after | host probe, µs | all rows within 20%: before | after "
             "| target met: before | after |", "|---|---|---|---|---|---|---|---|"]
    sets = retimed_rows()
    for name, (before, after) in sets.items():
        probe = [row["host_probe_us"] for row, _ in after if row.get("host_probe_us")]
        lines.append(f"| `{name}` | {_trained(before)} | {_trained(after)} | {min(probe):.0f}–{max(probe):.0f} | "
                     f"{agreement.summary(before)['within 20%']:.1%} | {agreement.summary(after)['within 20%']:.1%} | "
                     f"{'yes' if meets_target(before) else 'no'} | {'yes' if meets_target(after) else 'no'} |")
    pooled = [[p for pairs in sets.values() for p in pairs[i]] for i in (0, 1)]
    met = [sum(meets_target(pairs[i]) for pairs in sets.values()) for i in (0, 1)]
    lines.append(f"| all {len(sets)}, pooled | {_trained(pooled[0])} | {_trained(pooled[1])} | | "
                 f"{agreement.summary(pooled[0])['within 20%']:.1%} | {agreement.summary(pooled[1])['within 20%']:.1%} | "
                 f"{met[0]} of {len(sets)} | {met[1]} of {len(sets)} |")
    return "\n".join(lines)


def remeasured_rows(run=102):
    """{set: [(row before, row after)]}: each held-out set's rows before and after run 102 (flash2's forwards and
    training steps measured again; the earlier rows in its logs, its own in run 105's), or run 105 (the training
    steps timed per call; the rows before it in its logs, its own the set's now)."""
    out = {}
    with tarfile.open(REMEASURED) as first, tarfile.open(TRAIN_TIMED) as second:
        then = set(second.getnames())  # the sets of runs 102 and 105
        for name in [n for n in HELD_OUT if f"run105/heldout_before/{n}" in then]:
            before = json.load((first if run == 102 else second).extractfile(f"run{run}/heldout_before/{name}"))["rows"]
            after = (json.load(second.extractfile(f"run105/heldout_before/{name}"))["rows"] if run == 102 else
                     agreement.read_heldout(name))
            out[name] = list(zip(before, after))
    return out


def _within(rows):
    timed = [r for r in rows if r.get("ms")]
    model = agreement.state()  # agreement.predicted: each row's time kept per state, as the held-out sets' are
    return sum(abs(agreement.predicted(r, model) / (r["ms"] * 1e-3) - 1) <= 0.2 for r in timed), len(timed)


def remeasured_table(run=102):
    """remeasured_rows(run) scored by the current model before and after, and how far the run's flash2 times moved: the
    forwards whose kernel changed (d = 128, 64-row tiles, N not a multiple of 16) and the others (run 102 only), and
    the training steps whose predicted GPU time is under the host floor (GPU.train_step_host_s) or over it."""
    kinds = ("changed", "other", "host", "gpu") if run == 102 else ("host", "gpu")
    head = {"changed": "forwards, changed kernel: after ÷ before", "other": "other forwards",
            "host": "training, host-bound", "gpu": "training, GPU-bound"}
    lines = ["| set | within 20%: before | after | " + " | ".join(head[k] for k in kinds) + " |",
             "|---|---|---|" + "---|" * len(kinds)]
    for name, pairs in remeasured_rows(run).items():
        ratio = {k: [] for k in kinds}
        for a, b in pairs:
            if a["algo"] != "flash2" or not (a.get("ms") and b.get("ms")):
                continue
            if a["kind"] == "train":
                sim = agreement.heldout_simulated(a)
                host = sum(k.predicted_time_s for k in sim.kernels) < sim.config.gpu.train_step_host_s
                ratio["host" if host else "gpu"].append(b["ms"] / a["ms"])
            elif run == 102:
                changed = a["head_dim"] >= 128 and a["block_q"] == 64 and a["seq"] % 16
                ratio["changed" if changed else "other"].append(b["ms"] / a["ms"])
        (was, n), (now, m) = _within([a for a, _ in pairs]), _within([b for _, b in pairs])
        cells = [_span(v) if v else "-" for v in ratio.values()]
        lines.append(f"| `{name}` | {was} of {n} | {now} of {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _within_of(pairs, pick):
    xs = [x for r, x in pairs if pick(r)]
    return f"{sum(abs(x - 1) <= 0.2 for x in xs)} of {len(xs)}"


def change_sets(before, names):
    """{set: (pairs under the model `before` a change, pairs now)} of the held-out sets among `names` whose rows within
    20% the change moves, in names' order."""
    out = {}
    for name in names:
        with before():
            was = agreement.heldout_rows(name)
        now = agreement.heldout_rows(name)
        if [abs(x - 1) <= 0.2 for _, x in was] != [abs(x - 1) <= 0.2 for _, x in now]:
            out[name] = (was, now)
    return out


def change_table(before, sides, rows, pick, scored, blind, blind_label):
    """A model change set by set (`before`: the model before it; sides: what the columns call the two): the rows `pick`
    takes (named `rows`) and all rows within 20%, and issue 24's target, before and after it, in every set it moves;
    then the sets `scored` before it, pooled, and the `blind` ones (blind_label), scored once after it."""
    was, now = sides
    lines = [f"| set | {rows} within 20%: {was} | {now} | all rows within 20%: {was} | {now} | target met: {was} | "
             f"{now} |",
             "|---|---|---|---|---|---|---|"]
    for name, pairs in change_sets(before, scored + blind).items():
        shares = [f"{agreement.summary(side)['within 20%']:.1%}" for side in pairs]
        lines.append(f"| `{name}` | {_within_of(pairs[0], pick)} | {_within_of(pairs[1], pick)} | {shares[0]} | "
                     f"{shares[1]} | {'yes' if meets_target(pairs[0]) else 'no'} | "
                     f"{'yes' if meets_target(pairs[1]) else 'no'} |")
    for label, names in ((f"the {len(scored)} scored before, pooled", scored), (blind_label, blind)):
        with before():
            sides = [{n: agreement.heldout_rows(n) for n in names}]
        sides.append({n: agreement.heldout_rows(n) for n in names})
        pooled = [[p for pairs in side.values() for p in pairs] for side in sides]
        lines.append(f"| {label} | {_within_of(pooled[0], pick)} | {_within_of(pooled[1], pick)} | "
                     f"{agreement.summary(pooled[0])['within 20%']:.1%} | {agreement.summary(pooled[1])['within 20%']:.1%} | "
                     + " | ".join(f"{sum(map(meets_target, side.values()))} of {len(names)}" for side in sides) + " |")
    return "\n".join(lines)


def blind_summary(before, blind):
    """The figures docs/perf.md quotes of a change scored blind on the sets `blind` (`before`: the model before it): the
    rows that crossed 20% either way (gpusim ÷ measured before → after), and the sets' rows within 20% before and
    after."""
    crossed = {True: [], False: []}  # True: came within 20%
    for name in blind:
        with before():
            was = agreement.heldout_rows(name)
        for (r, a), (_, b) in zip(was, agreement.heldout_rows(name)):
            if (abs(a - 1) <= 0.2) != (abs(b - 1) <= 0.2):
                crossed[abs(b - 1) <= 0.2].append(f"{a:.2f} → {b:.2f}× at N = {r['seq']:,}, d = {r['head_dim']}"
                                                  + (", causal" if r["causal"] else ""))
    with before():
        share = sets_share(blind)
    return {"in": "; ".join(crossed[True]), "out": "; ".join(crossed[False]),
            "sets": f"{share} before and {sets_share(blind)} after"}


# The held-out sets, the newest seed first, the first set (seed 2026, heldout.json) last.
HELD_OUT = tuple(sorted((p.name for p in agreement.RESULTS.glob("heldout_*.json")), reverse=True)) + ("heldout.json",)
BLIND = ("heldout_2038.json", "heldout_2039.json")  # run 110: measured before cost.full_issue, scored once after it
# The sets trial_scores() judges by: those through run 110, on which every trial and model change up to the nineteenth
# session's was judged, so that their tables stay theirs. Run 111's two (the twentieth session, which changed no model)
# are scored apart: NEWEST.
NEWEST = ("heldout_2040.json", "heldout_2041.json")
# Run 112's two, measured after the twentieth session's trial and scored once after the twenty-first session's
# cost.full_issue (two warps per scheduler, 64 rows or more), blind to it.
BLIND_TWO_WARP = ("heldout_2042.json", "heldout_2043.json")
# Run 114's two, measured after the twenty-first session's change and scored once after the twenty-second session's
# cost.lone_pipeline, blind to it.
BLIND_LONE_PIPELINE = ("heldout_2044.json", "heldout_2045.json")
# Run 115's two, measured after cost.lone_pipeline and scored once in the twenty-third session, the model unchanged since.
UNCHANGED = ("heldout_2046.json", "heldout_2047.json")
BLIND_LONE_COPY = ("heldout_2048.json", "heldout_2049.json")  # run 116: measured before cost.lone_copy, scored once after
# Runs 117 and 118: measured before the twenty-fifth session's cost.own_copy, scored once after it.
BLIND_OWN_COPY = ("heldout_2050.json", "heldout_2051.json", "heldout_2052.json", "heldout_2053.json")
# Run 119's two, measured after cost.own_copy and scored once after the twenty-sixth session's cost.last_per_sm.
BLIND_LAST_WAVE = ("heldout_2054.json", "heldout_2055.json")
# Run 121's two, measured before cost.last_per_sm and scored once after the twenty-seventh session's cost.dot_padding.
BLIND_WHOLE_DOTS = ("heldout_2056.json", "heldout_2057.json")
# Run 122's two, measured before cost.dot_padding and kept unscored until the twenty-ninth session's cost.measured.
BLIND_MEASURED_ISSUE = ("heldout_2058.json", "heldout_2059.json")
# Run 130's two, measured after cost.measured and scored once in the thirtieth session, the model unchanged for them.
UNCHANGED_MEASURED = ("heldout_2060.json", "heldout_2061.json")
# Run 132's four, measured with the host probe beside each training step, scored once after the thirtieth session's
# change (the probe as the step's host floor: gpusim_course.provenance.heldout.simulated).
BLIND_HOST_PROBE = ("heldout_2062.json", "heldout_2063.json", "heldout_2064.json", "heldout_2065.json")
# Run 133's four, measured after the thirtieth session's change and kept unscored until the thirty-first session's
# cost.list_schedule, scored once after it.
BLIND_LIST_SCHEDULE = ("heldout_2066.json", "heldout_2067.json", "heldout_2068.json", "heldout_2069.json")
# Run 134's two, measured after cost.list_schedule and kept unscored until the thirty-third session's list-scheduled
# dK/dV (dkdv_by_waves, the model before it), scored once after it.
BLIND_DKDV_LIST = ("heldout_2070.json", "heldout_2071.json")
# Run 136's four, measured after the thirty-third session's change and kept unscored until the thirty-fifth session's
# lone Hopper programs (lone_by_port, the model before it), scored once after it.
BLIND_LONE_SETUP = ("heldout_2072.json", "heldout_2073.json", "heldout_2074.json", "heldout_2075.json")
# Run 145's four, measured after the thirty-fifth session's first change and kept unscored until its second, the
# Hopper kernel launched as a graph replays it (events_launch, the model before it), scored once after it.
BLIND_GRAPH_LAUNCH = ("heldout_2076.json", "heldout_2077.json", "heldout_2078.json", "heldout_2079.json")
# Runs 146 and 147's eight, measured after the thirty-fifth session's second change and kept unscored until the
# thirty-ninth session's naive launches (naive_before, the model before it), scored once after it.
BLIND_NAIVE = tuple(f"heldout_{seed}.json" for seed in range(2087, 2079, -1))
# Run 151's four, the host probe's steps interleaved with each training row's (benchmarks/heldout.py's _interleaved),
# measured and scored once in the fortieth session, the model unchanged since the thirty-ninth.
INTERLEAVED = tuple(f"heldout_{seed}.json" for seed in range(2095, 2091, -1))
# Run 150's four, measured after the thirty-ninth session's naive launches and kept unscored in their log until the
# forty-sixth session's decode fix (reduce_before, the model before it), scored once in the forty-seventh.
BLIND_DECODE_REDUCE = tuple(f"heldout_{seed}.json" for seed in range(2091, 2087, -1))
# Runs 168 and 169's four, measured after the forty-sixth session's decode fix and kept unscored in their logs until the
# fifty-first session's ragged decode wave (before_ragged, the model before it), scored once after it.
BLIND_RAGGED = tuple(f"heldout_{seed}.json" for seed in range(2099, 2095, -1))
# Run 199's two (the fifty-fifth session, the H200's first call in eight sessions), drawn on H200-measured and
# predicted before the call, measured and scored once with the model as the fifty-first session's ragged decode wave
# left it.
AFTER_RAGGED_H200 = ("heldout_2101.json", "heldout_2100.json")


def through(last_seed):
    """The held-out sets measured up to seed last_seed (heldout.json, the first, with them), the newest first as
    HELD_OUT: a section's sets as they stood when it was written. Seeds are drawn in order, so sets measured later
    (a higher seed) leave every such group as it was, without being named here."""
    return tuple(name for name in HELD_OUT if name == "heldout.json" or int(name[len("heldout_"):-len(".json")])
                 <= last_seed)


FIFTY = through(2095)  # the 70 scored through the fiftieth session
THIRTY_NINE = through(2087)  # the 62 through the thirty-ninth
THIRTY_EIGHT = through(2079)  # the 54 through the thirty-eighth
FIRST_OF_35 = through(2075)  # the 50 scored after the thirty-fifth session's first change
THIRTY_FOUR = through(2071)  # the 46 through the thirty-fourth
THIRTY_TWO = through(2069)  # the 44 through the thirty-second
THIRTY = through(2065)  # the 40 through the thirtieth
TWENTY_NINE = through(2059)  # the 34 through the twenty-ninth
TWENTY_EIGHT = through(2057)  # the 32 through the twenty-eighth
TWENTY_SIX = through(2055)  # those scored through the twenty-sixth
TWENTY_FIVE = through(2053)  # through the twenty-fifth
TWENTY_FOUR = through(2049)  # through the twenty-fourth
TWENTY_TWO = through(2047)  # through the twenty-third
TWENTY = through(2045)  # through the twenty-second
EIGHTEEN = through(2043)  # through the twenty-first
TRIALED = through(2039)  # the 14 the trials of the twentieth session scored


# Each once-only scoring of held-out sets the README's headline quotes, the oldest first: (the sets, what they were
# scored blind to or with, the model states docs/perf.md's section of them scores them under, outermost first). The
# headline and the sections' tests score them through blind_state, so that the two cannot quote different figures.
# Every one before the fifty-first session's ragged decode wave is scored without it (before_ragged, innermost).
SCORED_BEFORE_RAGGED = (
    (BLIND, "seeds 2038 and 2039, scored blind to `cost.full_issue`", ("retimed", "naive", one_warp_issue)),
    (NEWEST, "seeds 2040 and 2041, measured after every change then", ("retimed", "naive", one_warp_issue)),
    (BLIND_TWO_WARP, "seeds 2042 and 2043, scored blind to the twenty-first session's change to it",
     ("retimed", "naive", no_lone_pipeline)),
    (BLIND_LONE_PIPELINE, "seeds 2044 and 2045, scored blind to the twenty-second session's `cost.lone_pipeline`",
     ("retimed", "naive", no_lone_copy)),
    (UNCHANGED, "seeds 2046 and 2047, measured and scored after every change then", ("retimed", "naive", no_lone_copy)),
    (BLIND_LONE_COPY, "seeds 2048 and 2049, scored blind to the twenty-fourth session's `cost.lone_copy`",
     ("retimed", "naive", no_own_copy)),
    (BLIND_OWN_COPY, "seeds 2050 to 2053, scored blind to the twenty-fifth session's `cost.own_copy`",
     ("retimed", "naive", full_last_wave)),
    (BLIND_LAST_WAVE, "seeds 2054 and 2055, scored blind to the twenty-sixth session's `cost.last_per_sm`",
     ("retimed", "naive", counted_dots)),
    (BLIND_WHOLE_DOTS, "seeds 2056 and 2057, scored blind to the twenty-seventh session's `cost.dot_padding`",
     ("retimed", "naive", no_measured_issue)),
    (BLIND_MEASURED_ISSUE, "seeds 2058 and 2059, scored blind to the twenty-ninth session's `cost.measured`",
     ("retimed", "naive", no_list_schedule)),
    (UNCHANGED_MEASURED, "seeds 2060 and 2061, measured and scored after every change then",
     ("retimed", "naive", no_list_schedule)),
    (BLIND_HOST_PROBE, "seeds 2062 to 2065, with the host's speed measured beside each training step, scored blind "
     "to the thirtieth session's floor from it", ("retimed", "naive", no_list_schedule)),
    (BLIND_LIST_SCHEDULE, "seeds 2066 to 2069, scored blind to the thirty-first session's `cost.list_schedule`",
     ("naive", dkdv_by_waves)),
    (BLIND_DKDV_LIST, "seeds 2070 and 2071, scored blind to the thirty-third session's list-scheduled dK/dV",
     ("naive", lone_by_port)),
    (BLIND_LONE_SETUP, "seeds 2072 to 2075, scored blind to the thirty-fifth session's set-up of a lone Hopper "
     "program", ("naive", events_launch)),
    (BLIND_GRAPH_LAUNCH, "seeds 2076 to 2079, scored blind to the Hopper kernel's launch as a CUDA graph replays it", ("naive",)),
    (BLIND_NAIVE, "seeds 2080 to 2087, scored blind to the thirty-ninth session's naive launches", ()),
    (INTERLEAVED, "seeds 2092 to 2095, the host's speed taken over each training step's own time, scored with the "
     "model unchanged", ()),
    (BLIND_DECODE_REDUCE, "seeds 2088 to 2091, scored blind to the forty-sixth session's decode reduce and its "
     "compiles of several query rows", (lone_split_before,)),
)
BLIND_SCORINGS = tuple((sets, label, (*models, before_ragged)) for sets, label, models in SCORED_BEFORE_RAGGED) + (
    (BLIND_RAGGED, "seeds 2096 to 2099, scored blind to the forty-seventh to fifty-first sessions' changes, the "
     "ragged decode wave's among them", (even_waves,)),
    (AFTER_RAGGED_H200, "seeds 2100 and 2101, measured and scored once after the ragged decode wave, on the H200",
     (even_waves,)),)


@contextmanager
def blind_state(names):
    """The model, and the rows, under which docs/perf.md's section scored the held-out sets `names` (one of
    BLIND_SCORINGS' groups) once: the model as it stood then (before the thirty-ninth session's naive launches,
    naive_before, where it was scored before them), on the rows as they were then (before_retimed) where run 135 has
    timed their training steps again since."""
    states = {sets: models for sets, _, models in BLIND_SCORINGS}[tuple(names)]
    named = {"retimed": before_retimed, "naive": naive_before}
    with ExitStack() as stack:
        for model in states:
            stack.enter_context(named.get(model, model)())
        yield


def blind_scorings():
    """(seeds, how they were scored, rows, rows within 20%) of each once-only scoring in BLIND_SCORINGS, under the
    model and on the rows it was scored with (blind_state)."""
    out = []
    for names, label, _ in BLIND_SCORINGS:
        with blind_state(names):
            pairs = [p for n in names for p in agreement.heldout_rows(n)]
        seeds, how = label.split(", ", 1)
        out.append((seeds, how, len(pairs), agreement.summary(pairs)["within 20%"]))
    return out


def blind_range():
    """The least and the most of blind_scorings' shares, as the README and notebook 12 give them."""
    shares = [share for *_, share in blind_scorings()]
    return (f"the {len(shares)} groups of sets from seed 2038 on had {min(shares):.1%} to {max(shares):.1%} of their "
            "rows within 20%")


def blind_scorings_table():
    """docs/perf.md's table of the blind scorings, the README's range of them."""
    rows = [f"| {seeds[6:]} | {how} | {n} | {share:.1%} |" for seeds, how, n, share in blind_scorings()]
    return "\n".join(["| seeds | scored | rows | within 20% then |", "|---|---|---|---|", *rows])


def meets_target(pairs):
    """Issue 24's target for agreement.heldout_rows' pairs: heldout.meets_target."""
    return heldout.meets_target(labelled(pairs))

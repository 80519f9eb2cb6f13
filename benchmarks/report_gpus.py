"""docs/perf.md's "Another GPU, measured the same way": an H100's microbenchmarks read by the H200's rules
(benchmarks/h200_constants.gpu_constants) beside H200-measured and the datasheet preset H100-SXM, the H100's held-out
sets scored on both presets, seed 2095's rows as the two GPUs timed them, and what the sixty-fifth session's wave
rules moved on every scored file of both GPUs (uneven_wave_moves).

    python -m benchmarks.report_gpus        # the tables and lines docs/perf.md and README print
"""
import dataclasses
import json
import statistics
from functools import lru_cache, wraps

import numpy as np

import gpusim
from gpusim import cost
from benchmarks import agreement, h200_constants, ncu, report_heldout, report_kernels
from benchmarks.report_history import before_ragged, even_waves, one_slot_listed
from gpusim_course.provenance import heldout

H100 = agreement.H100
H200 = h200_constants.RESULTS
PRESETS = ("H100-measured", "H100-SXM")  # the H100's own constants, and its datasheet's
H200_PRESET = heldout.PRESET
SAME_SEED = 2095  # a set both GPUs timed
RUN_179 = ("heldout_3006.json", "heldout_3007.json")  # measured after the ragged decode wave, scored once
RUN_184 = ("heldout_3008.json", "heldout_3009.json")  # the same, in the fifty-second session
AFTER_RAGGED = RUN_179 + RUN_184
KEYS = ("kind", "algo", "batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal", "dtype", "block_q",
        "block_kv", "page_size", "tiles_used")


def as_before(report):
    """report, computed under before_ragged: a section written before the rule quotes the model as it stood."""
    @wraps(report)
    def before(*args, **kwargs):
        with before_ragged():
            return report(*args, **kwargs)
    return before


def ratios(path, preset):
    """[(kind label, predicted / measured)] of a held-out file on `preset` under the model in force (heldout.ratios
    keeps one model's a process)."""
    return [(heldout.kind(r), heldout.simulated(r, preset).predicted_time_s / (r["ms"] * 1e-3))
            for r in heldout.timed(path)]


def _value(value):
    if isinstance(value, tuple):
        return f"{len(value)} tiles"
    return f"{value:.4g}"


DERIVED = {"hbm_port_bytes_per_s": lambda gpu: gpu.port_bytes_per_s("hbm"),  # what a preset without the field prices
           "l2_port_bytes_per_s": lambda gpu: gpu.port_bytes_per_s("l2"),
           "hbm_read_bytes_per_s": lambda gpu: gpu.dram_bytes_per_s(0.0)}


def constants_table():
    """Each GPU field the microbenchmarks set: H200-measured's, the H100's by the same rules, H100-SXM's (its
    datasheet's, the rest the H200's; where it has none, what the model derives in its place), and the H100's over the
    H200's."""
    h200, sxm = gpusim.get_gpu("H200-measured"), gpusim.get_gpu("H100-SXM")
    h100 = h200_constants.gpu_constants(H100, "host_run173")
    lines = ["| field | H200-measured | the H100's, measured | H100-SXM | H100 ÷ H200 |", "|---|---|---|---|---|"]
    for name, value in h100.items():
        ours = getattr(h200, name)
        if name == "mma_efficiency":
            shift = max(abs(a - b) for (_, a), (_, b) in zip(value, ours))
            lines.append(f"| {name} (each tile's share of the fp16 peak) | {len(ours)} tiles | {len(value)} tiles, "
                         f"within {shift:.2f} of the H200's | none | - |")
            continue
        given = getattr(sxm, name)
        datasheet = _value(given) if given else f"{_value(DERIVED[name](sxm))} (derived)" if name in DERIVED else "-"
        lines.append(f"| {name} | {_value(ours)} | {_value(value)} | {datasheet} | {value / ours:.2f} |")
    return "\n".join(lines)


@as_before
def sets_table():
    """The H100's held-out sets, each scored on both presets (heldout.score)."""
    rows = [heldout.score(f"{path.name} on {preset}", ratios(path, preset))
            for path in before_files() for preset in PRESETS]
    return report_heldout.scores_table(rows)


@as_before
def same_rows():
    """{kind label: [(H100 ms / H200 ms, H100-measured's price / H200-measured's)]} for seed 2095's rows that both GPUs
    timed at the same configuration (tiles included)."""
    def timed(results):
        return json.loads((results / f"heldout_{SAME_SEED}.json").read_text())["rows"]
    out = {}
    for a, b in zip(timed(H100), timed(H200)):
        if not (a.get("ms") and b.get("ms")) or any(a.get(k) != b.get(k) for k in KEYS):
            continue
        model = (heldout.simulated(a, PRESETS[0]).predicted_time_s / heldout.simulated(b).predicted_time_s)
        out.setdefault(heldout.kind(a), []).append((a["ms"] / b["ms"], model))
    return out


def ragged_wave_ratios(overlap=None, folder=H100, preset=PRESETS[0]):
    """Predicted / measured of folder's ragged_wave.json's rows (the H100's run 178; the H200's run 201) on the preset
    they ran on, with cost.RAGGED_OVERLAP at `overlap` (None: as it stands)."""
    rows = json.loads((folder / "ragged_wave.json").read_text())["rows"]
    kept = cost.RAGGED_OVERLAP
    cost.RAGGED_OVERLAP = kept if overlap is None else overlap
    try:
        return [heldout.simulated(r, preset).predicted_time_s / (r["ms"] * 1e-3) for r in rows]
    finally:
        cost.RAGGED_OVERLAP = kept


def ragged_overlap_fit(low=0.0, high=1.0):
    """cost.RAGGED_OVERLAP as fitted: the share at which ragged_wave.json's median predicted / measured is 1 (the
    median rises with it), to two decimals."""
    for _ in range(14):  # to 1e-4, past the two decimals kept
        mid = (low + high) / 2
        low, high = (mid, high) if statistics.median(ragged_wave_ratios(mid)) < 1 else (low, mid)
    return round((low + high) / 2, 2)


def lone_d64_step(folder=H100, preset=PRESETS[0]):
    """(the lone split step's slope in us, its tiles at the lone copy rate in us, the preset's chain step in us at
    two programs an SM, where the lone rule does not apply) of folder's split_lone_d64.json (the H100's run 178, the
    H200's run 201): one query row, 16 splits (one program an SM) over the two longest caches, and 32 (two)."""
    rows = [r for r in json.loads((folder / "split_lone_d64.json").read_text())["rows"] if r["seq"] == 1]
    lone = sorted((r for r in rows if r["num_splits"] == 16), key=lambda r: r["steps"])[-2:]
    slope = (lone[1]["ms"] - lone[0]["ms"]) * 1e3 / (lone[1]["steps"] - lone[0]["steps"])
    tile = lone[1]["block_kv"] * lone[1]["head_dim"] * 2 * 2  # K and V, fp16
    two = max((r for r in rows if r["num_splits"] == 32), key=lambda r: r["steps"])
    return slope, tile / gpusim.get_gpu(preset).lone_copy_bytes_per_s * 1e6, two["chain_us"]


def _decode_share(pairs):
    return 100 * heldout.within([p for p in pairs if p[0] == "decode"])


def ragged_scores():
    """{"H100": (decode rows within 20% before the rule, with it, in %), "H200": the same over results/h200's scored
    sets, "H200 sets": (sets meeting issue 24's target before, with it, of all)}."""
    def h200():
        pairs = {n: [(heldout.kind(r), x) for r, x in agreement.heldout_rows(n)] for n in report_heldout.FIFTY}
        return _decode_share([p for v in pairs.values() for p in v]), sum(map(heldout.meets_target, pairs.values()))
    def h100():
        return _decode_share([p for path in before_files() for p in ratios(path, PRESETS[0])])
    with before_ragged():
        (old200, old_met), old100 = h200(), h100()
    (new200, new_met), new100 = h200(), h100()
    return {"H100": (old100, new100), "H200": (old200, new200),
            "H200 sets": (old_met, new_met, len(report_heldout.FIFTY))}


def _within(ratios):
    return sum(abs(r - 1) <= 0.2 for r in ratios)


def blind_ragged_line():
    """Runs 168 and 169's four H200 sets, kept unscored until the ragged decode wave, scored once with it."""
    pairs = [(heldout.kind(r), x) for n in report_heldout.BLIND_RAGGED for r, x in agreement.heldout_rows(n)]
    met = sum(heldout.meets_target([(heldout.kind(r), x) for r, x in agreement.heldout_rows(n)])
              for n in report_heldout.BLIND_RAGGED)
    decode = [x for k, x in pairs if k == "decode"]
    return (f"Seeds 2096 to 2099 (runs 168 and 169 on the H200, kept unscored in their logs since the forty-seventh "
            f"session), scored once with the rule: {_within(x for _, x in pairs)} of their {len(pairs)} rows "
            f"({heldout.within(pairs):.1%}) within 20%; their decode rows {_within(decode)} of {len(decode)} "
            f"({_range(decode)}); {met} of the 4 sets meet issue 24's target.")


def ragged_lines():
    """The ragged decode wave's microbenchmarks and scores, as docs/perf.md states them."""
    slope, lone, chain = lone_d64_step()
    zero, after = ragged_wave_ratios(0.0), ragged_wave_ratios()
    with before_ragged():
        old = ragged_wave_ratios()
    scores = ragged_scores()
    return "\n".join([
        f"- `split_lone_d64.json`: a lone split step at d = 64 (16 KiB of K/V, one program an SM) takes "
        f"{slope:.2f} µs; its tiles at the lone copy rate take {lone:.2f} µs, H100-measured's chain step (two "
        f"programs an SM) {chain:.2f} µs.",
        f"- `ragged_wave.json`, {len(old)} batches: {_within(old)} within 20% before the rule (median "
        f"{statistics.median(old):.2f}); with it, at RAGGED_OVERLAP = 0, {_within(zero)} (median "
        f"{statistics.median(zero):.2f}); at the fitted {cost.RAGGED_OVERLAP}, {_within(after)} ({_range(after)}).",
        f"- The H100's held-out decode rows (seen before the rule, not fitted on): {scores['H100'][0]:.0f}% → "
        f"{scores['H100'][1]:.0f}% within 20%. The H200's scored sets' decode rows: {scores['H200'][0]:.0f}% → "
        f"{scores['H200'][1]:.0f}%; sets meeting issue 24's target {scores['H200 sets'][0]} → "
        f"{scores['H200 sets'][1]} of {scores['H200 sets'][2]}."])


def wave_term(result):
    """The share of a decode batch's price (one wave: no more split programs than slots) that is not its longest
    program's time nor the launch: cost.waves' (sum of tau at b programs an SM - the wave's at its share) / slots,
    which a ragged wave's share below b leaves above zero."""
    grid, step = cost.schedule(result)
    last = (grid.programs - 1) % grid.slots + 1
    tail = np.asarray(grid.work.tail[:last])
    longest = max(cost.tau(step, tail, cost.wave_sharing(step, tail, last), cost.last_per_sm(grid, last)).tolist())
    launch = grid.cfg.pass_.launch_s(grid.cfg, grid.kernel)
    return (result.kernels[0].predicted_time_s - longest - launch) / result.predicted_time_s


@as_before
def decode_steps():
    """Seed 2095's decode batches on both GPUs, longest first: (head_dim, the longest program's steps J, the H100's
    time over the H200's, each GPU's time over J in us, each preset's chain step in us: cost.one_step's chain_s, a
    split program's step on its own critical path; each preset's wave_term)."""
    def timed(results):
        return json.loads((results / f"heldout_{SAME_SEED}.json").read_text())["rows"]
    out = []
    for a, b in zip(timed(H100), timed(H200)):
        if a["kind"] != "decode" or any(a.get(k) != b.get(k) for k in KEYS):
            continue
        ours, theirs = heldout.simulated(a, PRESETS[0]), heldout.simulated(b, H200_PRESET)
        (grid, h100), (_, h200) = cost.schedule(ours), cost.schedule(theirs)
        j = max(grid.work.values)
        out.append((a["head_dim"], j, a["ms"] / b["ms"], b["ms"] * 1e3 / j, a["ms"] * 1e3 / j, h200.chain_s * 1e6,
                    h100.chain_s * 1e6, wave_term(theirs), wave_term(ours)))
    return sorted(out, key=lambda row: -row[1])


def decode_steps_table():
    """decode_steps, as docs/perf.md prints them."""
    lines = ["| d | the longest program's steps J | H100 ÷ H200 | time ÷ J, µs: H200 | H100 | "
             "gpusim's chain step, µs: H200-measured | H100-measured | "
             "the wave term's share of the price: H200-measured | H100-measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d, j, ratio, h200, h100, chain200, chain100, term200, term100 in decode_steps():
        lines.append(f"| {d} | {j} | {ratio:.2f} | {h200:.2f} | {h100:.2f} | {chain200:.2f} | {chain100:.2f} | "
                     f"{100 * term200:.0f}% | {100 * term100:.0f}% |")
    return "\n".join(lines)


def _span(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def same_rows_table():
    """Seed 2095's rows by kind: the H100's time over the H200's, measured and as gpusim prices the two GPUs."""
    lines = ["| kind | rows | H100 ÷ H200, measured: median (range) | gpusim's H100-measured ÷ H200-measured |",
             "|---|---|---|---|"]
    for kind, pairs in same_rows().items():
        lines.append(f"| {kind} | {len(pairs)} | {_span([m for m, _ in pairs])} | {_span([p for _, p in pairs])} |")
    return "\n".join(lines)


def _met(ok):
    return "MET" if ok else "MISSED"


def _range(values, digits=2):
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}–{high}"


def before_files():
    """The H100's held-out sets measured before the ragged decode wave (every one but AFTER_RAGGED)."""
    return [path for path in heldout.files(H100) if path.name not in AFTER_RAGGED]


def drawn_on(path):
    """The preset a held-out set was drawn on (the one its GPU's kernels took their tiles from when it ran)."""
    return json.loads(path.read_text())["environment"]["preset"]


def set_shares(preset, drawn=None):
    """{set: (share within 20%, {kind label: share})} of the H100's held-out sets on `preset` (those measured before the
    ragged decode wave and drawn on the preset `drawn`, where given; every set where not)."""
    paths = heldout.files(H100) if drawn is None else [p for p in before_files() if drawn_on(p) == drawn]
    return {path.name: (heldout.within(pairs), {k: heldout.within([p for p in pairs if p[0] == k])
                                                for k in heldout.KINDS.values()})
            for path in paths
            for pairs in [ratios(path, preset)]}


def decode_rates():
    """{GPU: the DRAM bytes gpusim counts for each decode row of seed 2095 over its measured time, bytes/s}."""
    out = {}
    for name, results, preset in (("H200", H200, "H200-measured"), ("H100", H100, PRESETS[0])):
        rows = [r for r in heldout.timed(results / f"heldout_{SAME_SEED}.json") if r["kind"] == "decode"]
        out[name] = [heldout.simulated(r, preset).dram_read_bytes / (r["ms"] * 1e-3) for r in rows]
    return out


def paged_rates():
    """{programs an SM: (the H100's rate over the H200's, the H200's rate)} of the split kernel's loads alone
    (paged_read.json, pages of 16, the longest runs)."""
    def rates(results):
        rows = json.loads((results / "paged_read.json").read_text())["rows"]
        longest = max(r["steps"] for r in rows)
        return {r["programs_per_sm"]: r["bytes_per_s"] for r in rows
                if r["layout"] == "paged" and r["page_size"] == 16 and r["steps"] == longest}
    h100, h200 = rates(H100), rates(H200)
    return {n: (h100[n] / h200[n], h200[n]) for n in sorted(h200)}


def paged_line():
    """paged_rates, as docs/perf.md states them."""
    rates = paged_rates()
    return (f"At {', '.join(f'{n:.2f}' for n in rates)} programs an SM, the H100 drew "
            f"{', '.join(f'{r:.2f}×' for r, _ in rates.values())} the H200's rate "
            f"({', '.join(f'{h200 / 1e12:.2f}' for _, h200 in rates.values())} TB/s on the H200).")


@as_before
def with_h200_reads():
    """The H100's decode rows priced on H100-measured with H200-measured's DRAM rates (a diagnostic): their ratios."""
    h200 = gpusim.get_gpu("H200-measured")
    gpu = dataclasses.replace(gpusim.get_gpu(PRESETS[0]), hbm_read_bytes_per_s=h200.hbm_read_bytes_per_s,
                              hbm_bytes_per_s=h200.hbm_bytes_per_s)
    return [heldout.simulated(r, gpu).predicted_time_s / (r["ms"] * 1e-3)
            for path in before_files() for r in heldout.timed(path) if r["kind"] == "decode"]


def _microbenchmarks_outcome():
    h200, h100 = gpusim.get_gpu("H200-measured"), gpusim.get_gpu(PRESETS[0])
    copy, reads, peak = h100.hbm_bytes_per_s, h100.hbm_read_bytes_per_s, \
        h100.fp16_matmul_flops_per_s / h200.fp16_matmul_flops_per_s
    shift = max(abs(a - b) for (_, a), (_, b) in zip(h100.mma_efficiency, h200.mma_efficiency))
    latencies = [getattr(h100, f) / getattr(h200, f) for f in ("hbm_latency_s", "l2_latency_s", "l2_idle_latency_s")]
    l2 = h100.l2_bytes_per_s / h200.l2_bytes_per_s
    return (f"- A copy at {copy / 1e12:.2f} TB/s and reads alone at {reads / 1e12:.2f}: "
            f"{_met(2.8e12 <= copy <= 3.1e12 and 3.0e12 <= reads <= 3.3e12)}. The fp16 peak {peak:.3f}× the "
            f"H200's, each tile's share within {shift:.2f} of the H200's: "
            f"{_met(abs(peak - 1) <= 0.05 and shift <= 0.1)}. The latencies {_range(latencies)}× the H200's: {_met(all(abs(x - 1) <= 0.1 for x in latencies))}; the "
            f"L2's rate {l2:.2f}×: {_met(abs(l2 - 1) <= 0.1)}.")


def _same_seed_outcome():
    same = same_rows()
    decode = [m for m, _ in same["decode"]]
    forwards = [m for k in ("flash2", "Hopper") for m, _ in same[k]]
    return (f"- Seed {SAME_SEED}'s decode batches took {_range(decode)}× (median {statistics.median(decode):.2f}) the "
            f"H200's time on the H100: {_met(all(1.3 <= m <= 1.5 for m in decode))}; flash2's and the Hopper kernel's "
            f"forwards {_range(forwards)}×, at every N: {_met(all(0.95 <= m <= 1.10 for m in forwards))}.")


@as_before
def _scores_outcome():
    ours, sxm = set_shares(PRESETS[0], drawn=PRESETS[1]), set_shares(PRESETS[1], drawn=PRESETS[1])
    decode = [100 * kinds["decode"] for _, kinds in ours.values()]
    fewer = sum(sxm[name][0] < share for name, (share, _) in ours.items())
    return (f"- On H100-measured, {_range([100 * s for s, _ in ours.values()], 1)}% of each set's rows within 20%: "
            f"at least 85% in {sum(s >= 0.85 for s, _ in ours.values())} sets of {len(ours)}; every kind at 75% or "
            f"more in {sum(min(k.values()) >= 0.75 for _, k in ours.values())} (decode {_range(decode, 0)}%). On "
            f"H100-SXM {_range([100 * s for s, _ in sxm.values()], 1)}%, fewer than on H100-measured in {fewer} sets "
            f"of {len(ours)}.")


@as_before
def new_sets_outcome():
    """The sets drawn on H100-measured after the tile sweep moved the H100's tiles to it, against their prediction."""
    shares = set_shares(PRESETS[0], drawn=PRESETS[0])
    others = [100 * kinds[k] for _, kinds in shares.values() for k in heldout.KINDS.values() if k != "decode"]
    decode = [100 * kinds["decode"] for _, kinds in shares.values()]
    met = sum(heldout.meets_target(ratios(H100 / name, PRESETS[0])) for name in shares)
    overall = _range([100 * s for s, _ in shares.values()], 1)
    return (f"- {' and '.join(shares)}, drawn on H100-measured, scored on it: {overall}% of each set's rows within "
            f"20%; naive, flash2, Hopper and the training steps {_range(others, 0)}% "
            f"(at least 80% in each set: {_met(min(others) >= 80)}); decode {_range(decode, 0)}% (at most 40%: "
            f"{_met(max(decode) <= 40)}); issue 24's target met in {met} of {len(shares)} sets.")


def after_ragged_outcome(names=RUN_179):
    """Two sets measured after the ragged decode wave (run 179's; run 184's), scored once with it, against their
    prediction."""
    shares = {name: share for name, share in set_shares(PRESETS[0]).items() if name in names}
    overall = [100 * s for s, _ in shares.values()]
    decode = [100 * kinds["decode"] for _, kinds in shares.values()]
    met = sum(heldout.meets_target(ratios(H100 / name, PRESETS[0])) for name in shares)
    return (f"- {' and '.join(shares)}, scored once on H100-measured: {_range(overall, 1)}% of each set's rows within "
            f"20% (at least 85%: {_met(min(overall) >= 85)}); decode {_range(decode, 0)}% (at least 75%: "
            f"{_met(min(decode) >= 75)}); issue 24's target met in {met} of {len(shares)} sets.")


H200_AFTER_RAGGED = ("heldout_2100.json", "heldout_2101.json")  # run 199, drawn on H200-measured


def h200_after_ragged_outcome():
    """Runs 199 and 201 on the H200 against the predictions written before them (docs/perf.md, "A ragged decode
    wave, adopted"): the ragged wave and the lone d = 64 step on H200-measured, and seeds 2100 and 2101 scored once."""
    wave = ragged_wave_ratios(folder=H200, preset=H200_PRESET)
    median, within = statistics.median(wave), sum(abs(x - 1) <= 0.2 for x in wave)
    slope, tiles, chain = lone_d64_step(H200, H200_PRESET)
    pairs = {name: ratios(H200 / name, H200_PRESET) for name in H200_AFTER_RAGGED}
    overall = [100 * heldout.within(p) for p in pairs.values()]
    kinds = [100 * heldout.within([q for q in p if q[0] == k]) for p in pairs.values() for k in {q[0] for q in p}]
    decode = [100 * heldout.within([q for q in p if q[0] == "decode"]) for p in pairs.values()]
    met = sum(heldout.meets_target(p) for p in pairs.values())
    pooled = [q for p in pairs.values() for q in p]
    share = heldout.within(pooled)
    return "\n".join([
        f"- `ragged_wave.json` (run 201) on H200-measured at RAGGED_OVERLAP = {cost.RAGGED_OVERLAP}: median predicted "
        f"/ measured {median:.2f} (0.9–1.1: {_met(0.9 <= median <= 1.1)}); {within} of {len(wave)} rows within 20% "
        f"(at least 44: {_met(within >= 44)}); all {_range(wave)}.",
        f"- `split_lone_d64.json` (run 201): the H200's lone d = 64 split step takes {slope:.2f} µs, against its "
        f"chain on H200-measured, {chain:.2f} µs, and its tiles at the lone copy rate, {tiles:.2f} µs (at least its "
        f"chain: {_met(slope >= chain)}).",
        f"- {' and '.join(pairs)} (run 199), scored once on H200-measured: {_range(overall, 1)}% of each set's rows "
        f"within 20% (at least 90%: {_met(min(overall) >= 90)}), together {round(share * len(pooled))} of their "
        f"{len(pooled)} rows ({share:.1%}); every kind {_range(kinds, 0)}% (at least 80%: "
        f"{_met(min(kinds) >= 80)}); decode {_range(decode, 0)}% (at least 80%: {_met(min(decode) >= 80)}); issue "
        f"24's target met in {met} of {len(pairs)} sets.",
    ])


def _launches(manifest):
    return sum(len(entry["kernels"]) for entry in json.loads((H100 / manifest).read_text())["launches"]
               if not entry.get("setup"))


def _short(summary, quantity, least):
    """The kernels of an ncu.summary whose share of launches within quantity's target is below least: "kernel
    (share)"."""
    return [f"{kernel} ({share:.0%})" for (kernel, q), (_, _, share) in summary.items()
            if q == quantity and share < least]


def _outcome(missed):
    return "MET" if not missed else "MISSED: " + ", ".join(missed)


def hopper_beside_h200():
    """The Hopper kernel's launches of 100 µs or more in both GPUs' forward Nsight runs: the H100's time over the
    H200's, measured and priced, and how long the model prices them on each GPU."""
    def times(rows):
        return {(r["seq"], r["head_dim"], r["causal"]): r for r in rows
                if r["kernel"] == "hopper" and r["quantity"] == "time_s" and r["measured"] >= ncu.MIN_TIME_S}
    h100, h200 = times(forward_rows()), times(ncu.compare_run("ncu", H200))
    both = [k for k in h100 if k in h200]
    measured = [h100[k]["measured"] / h200[k]["measured"] for k in both]
    priced = [h100[k]["simulated"] / h200[k]["simulated"] for k in both]
    def priced_off(rows):
        low, high = (round(100 * f(rows[k]["rel_err"] for k in both)) for f in (min, max))
        return f"from {-low}% short to {high}% long" if low < 0 else f"{low}–{high}% long"
    return (f"- The Hopper kernel's {len(both)} launches of 100 µs or more, on both GPUs: the H100's time "
            f"{_range(measured)}× the H200's, priced {_range(priced)}×; on the H200 (`results/h200/ncu.json`) "
            f"priced {priced_off(h200)}, on the H100 {priced_off(h100)}.")


def nsight_sentence():
    """README's words on run 180: the share of the H100's profiled launches whose L2->SM bytes and DRAM reads meet
    their targets, forward and backward together."""
    rows = [r for r in forward_rows() + ncu.compare_run("ncu_bwd", H100) if r["rel_err"] is not None]
    def share(quantity):
        errs = [abs(r["rel_err"]) for r in rows if r["quantity"] == quantity]
        return sum(e <= ncu.TARGETS[quantity] for e in errs), len(errs), max(errs)
    l2, dram = share("l2_to_sm_bytes"), share("dram_read_bytes")
    return (f"Nsight Compute on it (runs 180 and 183): the bytes the SMs read from L2 within 2% of gpusim's count on "
            f"{l2[0]} of {l2[1]} launches (the worst {report_kernels.up_percent(l2[2])} off), DRAM reads within 10% on "
            f"{dram[0]} of {dram[1]}.")


HOST_AFTER = ("host.json", "host_repeat.json")  # run 189: this tree, each entry and SDPA's in turn, five rounds
HOST_BEFORE = ("host_before.json", "host_before_repeat.json")  # the same call: the tree before kept launches (3758296)
RUN_191 = {"after": ("host_run191_after1.json", "host_run191_after2.json"),  # host_ab.sh on another H100, 54ac6c4
           "before": ("host_run191_before1.json", "host_run191_before2.json")}


@lru_cache(maxsize=None)  # each file read once a process: the reports only read the rows
def host_rows(name, folder=H100):
    """{(entry, batch, heads, seq, head_dim): row} of one of the H100's host files (or the H200's, folder=H200): the
    forward and training rows that have a ratio, not decode's."""
    return {(r["entry"], r["batch"], r["heads"], r["seq"], r["head_dim"]): r
            for r in json.loads((folder / name).read_text())["rows"] if r.get("ratio") and r.get("us")}


def entry_ratios(names, ratio="ratio", folder=H100):
    """{entry: its rows' ratios over SDPA's} of the host files `names` in folder, for issue 24's target entries
    (ratio: the rounds', or "ratio_call", the interleaved calls')."""
    rows = [r for name in names for r in host_rows(name, folder).values()]
    return {entry: [r[ratio] for r in rows if r["entry"] == entry] for entry in report_kernels.HOST_TARGETS}


def _host_parts(names, folder=H100):
    """(for each target entry "`entry` a–b× (≤ t: met on m of n)", the step's µs, SDPA's step's µs) over
    files."""
    parts = [f"`{entry}` {_range(ratios)}× (≤ {report_kernels.HOST_TARGETS[entry]}: met on "
             f"{sum(x <= report_kernels.HOST_TARGETS[entry] for x in ratios)} of {len(ratios)})"
             for entry, ratios in entry_ratios(names, folder=folder).items()]
    steps = [r for name in names for r in host_rows(name, folder).values() if r["entry"] == "flash2_train_step"]
    return parts, [r["us"] for r in steps], [r["sdpa_us"] for r in steps]


RUN_199 = {tree: tuple(f"host_run199_{tree}{turn}.json" for turn in (1, 2)) for tree in ("after", "before")}


def h200_host_line():
    """The lent H200's host again (run 199: host_ab.sh, 3758296's kernels and 6d96a18's, alternately, twice each),
    against issue 24's targets, as host_line states the H100's."""
    after, before = _host_parts(RUN_199["after"], H200), _host_parts(RUN_199["before"], H200)
    calls = entry_ratios(RUN_199["after"], "ratio_call", H200)["flash2_train_step"]
    return (f"On the lent H200's host again (run 199, fifty-fifth session, `benchmarks/host_ab.sh`: this tree's "
            f"kernels at 6d96a18, every launch kept, and 3758296's, before any was, alternately, twice each; six ABBA "
            f"rounds, the median of the rounds' ratios; `results/h200/host_run199_{{after,before}}{{1,2}}.json`): "
            f"{', '.join(after[0])}; the training step {_range(after[1], 0)} µs a call against SDPA's "
            f"{_range(after[2], 0)}, its interleaved `ratio_call` {_range(calls)}×. The tree before, in the same "
            f"call: {', '.join(before[0])}; its training step {_range(before[1], 0)} µs. " + _h200_again())


def _h200_again():
    """Runs 208 and 209 (fifty-eighth session): host.py on an H200 again, this tree, twice in one warm machine."""
    runs = ("host_run208.json", "host_run209.json")
    parts, steps, sdpa = _host_parts(runs, H200)
    calls = entry_ratios(runs, "ratio_call", H200)["flash2_train_step"]
    return (f"Runs 208 and 209 (fifty-eighth session, `results/h200/host_run20{{8,9}}.json`: `benchmarks/host.py` "
            f"on an H200, this tree, twice on one machine): {', '.join(parts)}; the training step "
            f"{_range(steps, 0)} µs a call against SDPA's {_range(sdpa, 0)}, its interleaved `ratio_call` "
            f"{_range(calls)}×.")


def host_line():
    """The H100's per-call cost against issue 24's targets, as the H200's table beside it states them: run 189 (this
    tree, twice; the tree before, twice, alternately in the same call), run 173 (one round each), run 191
    (host_ab.sh), runs 205 to 207 (this tree on other hosts)."""
    after, before = _host_parts(HOST_AFTER), _host_parts(HOST_BEFORE)
    step = "flash2_train_step"
    return (f"On the H100's host (run 189, `results/h100/host.json` and `host_repeat.json`, the same shapes; each "
            f"entry and SDPA's timed in turn, five rounds, the median of the rounds' ratios): {', '.join(after[0])}; "
            f"the training step {_range(after[1], 0)} µs a call against SDPA's {_range(after[2], 0)}. The tree before "
            f"the launches were kept, alternately in the same call (`host_before.json`, `host_before_repeat.json`): "
            f"{', '.join(before[0])}; its training step {_range(before[1], 0)} µs. Run 173 (`host_run173.json`, one "
            f"round each, SDPA's after ours, another host): the training step "
            f"{_range(entry_ratios(('host_run173.json',))[step])}×. Run 191 (`benchmarks/host_ab.sh` on another H100, "
            f"the same two trees, `host_run191_*.json`): the training step "
            f"{_range(entry_ratios(RUN_191['after'])[step])}× SDPA's, the tree before's "
            f"{_range(entry_ratios(RUN_191['before'])[step])}×. Run 205 (`host_run205.json`, fifty-seventh session, "
            f"another H100, this tree again; six ABBA rounds): the training step "
            f"{_range(entry_ratios(('host_run205.json',))[step])}× SDPA's (its interleaved `ratio_call` "
            f"{_range(entry_ratios(('host_run205.json',), 'ratio_call')[step])}×), `flash2_attention` "
            f"{_range(entry_ratios(('host_run205.json',))['flash2_attention'])}×. Run 206 (`host_run206.json`, the "
            f"same session, another H100, after the trainable backward's `once_differentiable` gave way to a check of its "
            f"own): the training step {_range(entry_ratios(('host_run206.json',))[step])}× SDPA's (`ratio_call` "
            f"{_range(entry_ratios(('host_run206.json',), 'ratio_call')[step])}×). Run 207 (`host_run207.json`, "
            f"fifty-eighth session, another H100, after the op's LSE took its gradient): the training step "
            f"{_range(entry_ratios(('host_run207.json',))[step])}× SDPA's (`ratio_call` "
            f"{_range(entry_ratios(('host_run207.json',), 'ratio_call')[step])}×), `flash2_attention` "
            f"{_range(entry_ratios(('host_run207.json',))['flash2_attention'])}×.")


KEPT_RUNS = {189: HOST_AFTER, **{run: (f"host_run{run}_after1.json", f"host_run{run}_after2.json")
                                   for run in (191, 193, 194, 195)},
             **{run: (f"host_run{run}.json",) for run in (205, 206, 207)}}  # the H100's runs with launches kept


def kept_runs_sentence():
    """The training step over SDPA's in every H100 run with the launches kept: where it met issue 24's 1.5x on every
    row, and where not (its range by the rounds)."""
    target = report_kernels.HOST_TARGETS["flash2_train_step"]
    steps = {run: entry_ratios(names)["flash2_train_step"] for run, names in KEPT_RUNS.items()}
    met = [str(run) for run, ratios in steps.items() if max(ratios) <= target]
    missed = [f"{run} ({_range(ratios)}×, {sum(x <= target for x in ratios)} of {len(ratios)} rows)"
              for run, ratios in steps.items() if max(ratios) > target]
    return (f"With the launches kept the training step met the target on every row in runs {', '.join(met)}, and "
            f"not in runs {', '.join(missed)}, by the rounds.")


def kept_outcome():
    """Run 189 against the fifty-third session's prediction (docs/perf.md, "Launches kept"), pair by pair: each
    shape's row of this tree's file against the tree before's of the same turn."""
    pairs = [(after, before[key], key) for a, before in zip(HOST_AFTER, map(host_rows, HOST_BEFORE))
             for key, after in host_rows(a).items() if key in before]
    step = [(a, b) for a, b, (entry, *_) in pairs if entry == "flash2_train_step"]
    less = [1 - a["us"] / b["us"] for a, b in step]
    over = sum(b["ratio"] > 1.5 for _, b in step)
    lower = [a["ratio"] < b["ratio"] for a, b, (entry, *_) in pairs
             if entry in ("flash2_attention", "naive_attention")]
    hopper = [a["ratio"] / b["ratio"] for a, b, (entry, *_) in pairs if entry == "hopper_attention"]
    hopper_us = [a["us"] - b["us"] for a, b, (entry, *_) in pairs if entry == "hopper_attention"]
    return "\n".join([
        f"- The training step within 1.5× SDPA's in {sum(a['ratio'] <= 1.5 for a, _ in step)} of {len(step)} of this "
        f"tree's rows ({_range([a['ratio'] for a, _ in step])}×; all: {_met(all(a['ratio'] <= 1.5 for a, _ in step))})"
        f"; the tree before's over 1.5× in {over} of {len(step)} ({_range([b['ratio'] for _, b in step])}×; at "
        f"least four: {_met(over >= 4)}).",
        f"- The step's host time {_range([100 * x for x in less], 1)}% less than the tree before's in the same turn "
        f"(at least 15% at each shape: {_met(min(less) >= 0.15)}).",
        f"- `flash2_attention` and `naive_attention` a lower ratio than the tree before's in {sum(lower)} of "
        f"{len(lower)} pairs ({_met(all(lower))}); `hopper_attention`'s ratio {_range(hopper)}× the tree before's "
        f"(within 10%: {_met(all(abs(x - 1) <= 0.1 for x in hopper))}); its time a call {_range(hopper_us, 1)} µs "
        f"more than the tree before's.",
    ])


SCRATCH_RUNS = (193, 194)  # host_ab.sh, e7a15bf's kernels against fcbd64f's (the Hopper kernel's launch kept)
CALL_RUN = 195  # the same at cd9ad87, host.py's interleaved calls added
STEP, HOPPER = "flash2_train_step", "hopper_attention"


def ab_pairs(run):
    """(this tree's row, the tree before's, key) of `benchmarks/host_ab.sh`'s files of run `run` (results/h100/
    host_run{run}_{after,before}{1,2}.json), each turn's rows against the same turn's."""
    pairs = []
    for turn in (1, 2):
        before = host_rows(f"host_run{run}_before{turn}.json")
        pairs += [(a, before[key], key) for key, a in host_rows(f"host_run{run}_after{turn}.json").items()]
    return pairs


def _steadier(run):
    """{entry: (pairs of one tree's two runs whose ratio_call differ less than their ratio, pairs)} of the training
    step's and the Hopper kernel's rows, each tree, each shape."""
    counts = {STEP: [0, 0], HOPPER: [0, 0]}
    for tree in ("after", "before"):
        one, two = (host_rows(f"host_run{run}_{tree}{turn}.json") for turn in (1, 2))
        for key in one:
            if key[0] in counts:
                counts[key[0]][0] += (abs(one[key]["ratio_call"] - two[key]["ratio_call"])
                                      < abs(one[key]["ratio"] - two[key]["ratio"]))
                counts[key[0]][1] += 1
    return {entry: tuple(c) for entry, c in counts.items()}


def _interleaving_line(steadier):
    """What interleaving did to run 195's rows: each side's median call against its rounds' time a call, and
    ratio_call against ratio, the forwards' and the training step's; steadier: _steadier's counts."""
    rows = [r for tree in ("after", "before") for turn in (1, 2)
            for r in host_rows(f"host_run{CALL_RUN}_{tree}{turn}.json").values()]
    forwards, steps = [r for r in rows if r["entry"] != STEP], [r for r in rows if r["entry"] == STEP]
    longer = [r[f"{side}_call"] - r[side] for r in forwards for side in ("us", "sdpa_us")]
    drawn = [r["ratio_call"] / r["ratio"] for r in forwards if r["ratio"] < 1]
    ours = [r["us_call"] - r["us"] for r in steps]
    return (f"- Interleaved, run 195's forwards' median calls were longer than their rounds' time a call in "
            f"{sum(x > 0 for x in longer)} of {len(longer)} cases ({len(forwards)} rows, SDPA's and ours; by "
            f"{statistics.median(longer):.1f} µs in the median row), and their `ratio_call` {_range(drawn)}× `ratio` "
            f"where that was under 1; the training step's "
            f"{_range([r['sdpa_us_call'] - r['sdpa_us'] for r in steps], 0)} µs longer for SDPA's, "
            f"from {min(ours):.0f} to {max(ours):.0f} for ours, its `ratio_call` "
            f"{_range([r['ratio_call'] / r['ratio'] for r in steps])}× `ratio`; by entry, the two runs of a tree "
            f"differ less in `ratio_call` than in `ratio` in {steadier[STEP][0]} of {steadier[STEP][1]} of the step's "
            f"pairs and {steadier[HOPPER][0]} of {steadier[HOPPER][1]} of the Hopper kernel's.")


def scratch_outcome():
    """Runs 193-195 against the fifty-fourth session's predictions (docs/perf.md, "The Hopper kernel's launch kept
    too"): the Hopper kernel's time and ratio against e7a15bf's, the other entries', the interleaved calls."""
    by_run = {run: ab_pairs(run) for run in (*SCRATCH_RUNS, CALL_RUN)}
    pairs = [p for run in SCRATCH_RUNS for p in by_run[run]]
    hopper = [(a, b) for a, b, key in pairs if key[0] == HOPPER]
    more = [a["us"] - b["us"] for a, b in hopper]
    ratio = [a["ratio"] / b["ratio"] for a, b in hopper]
    others = [a["ratio"] / b["ratio"] for a, b, key in pairs if key[0] != HOPPER]
    calls = by_run[CALL_RUN]
    hopper_call = [a["ratio_call"] / b["ratio_call"] for a, b, key in calls if key[0] == HOPPER]
    by_entry = _steadier(CALL_RUN)
    steadier, n = (sum(c[i] for c in by_entry.values()) for i in (0, 1))
    steps = [r for a, b, key in calls if key[0] == STEP for r in (a, b)]
    every = [a["ratio"] / b["ratio"] for run_pairs in by_run.values() for a, b, key in run_pairs if key[0] == HOPPER]
    drift = [max(one[key]["us"], two[key]["us"]) / min(one[key]["us"], two[key]["us"])
             for run in (*SCRATCH_RUNS, CALL_RUN) for tree in ("after", "before")
             for one, two in [[host_rows(f"host_run{run}_{tree}{turn}.json") for turn in (1, 2)]] for key in one]
    return "\n".join([
        f"- Runs 193-194: `hopper_attention`'s time a call minus e7a15bf's in the same turn from {min(more):.1f} to "
        f"{max(more):.1f} µs (-4 to -2 at every shape: {_met(all(-4 <= x <= -2 for x in more))}); its ratio "
        f"{_range(ratio)}× e7a15bf's (0.85–0.95: "
        f"{_met(all(0.85 <= x <= 0.95 for x in ratio))}); the other entries' ratios {_range(others)}× e7a15bf's "
        f"(within 5%: {sum(abs(x - 1) <= 0.05 for x in others)} of {len(others)}, "
        f"{_met(all(abs(x - 1) <= 0.05 for x in others))}).",
        f"- Run 195: the two runs of one tree differ less in `ratio_call` than in `ratio` in {steadier} of {n} pairs "
        f"(at least 8: {_met(steadier >= 8)}); `hopper_attention`'s `ratio_call` {_range(hopper_call)}× e7a15bf's "
        f"(0.80–0.95: {_met(all(0.80 <= x <= 0.95 for x in hopper_call))}).",
        f"- Run 195's training steps, both trees: `ratio` {_range([r['ratio'] for r in steps])}× (over 1.5 in "
        f"{sum(r['ratio'] > 1.5 for r in steps)} of {len(steps)}), `ratio_call` "
        f"{_range([r['ratio_call'] for r in steps])}× (over 1.5 in {sum(r['ratio_call'] > 1.5 for r in steps)}).",
        _interleaving_line(by_entry),
        f"- Runs 193-195: `hopper_attention`'s ratio {_range(every)}× e7a15bf's in the same turn, under 1 in "
        f"{sum(x < 1 for x in every)} of {len(every)} pairs ({sum(0.85 <= x <= 0.95 for x in every)} within "
        f"0.85–0.95, {sum(x < 0.85 for x in every)} below); one tree's two runs in one call differed in an entry's "
        f"time a call by up to {max(drift):.2f}× (the median row {statistics.median(drift):.2f}×), the code "
        f"unchanged.",
    ])


TILES_BWD = ("tiles_bwd.json", "tiles_bwd_repeat_a.json", "tiles_bwd_repeat_b.json")  # run 181; run 182, twice


def _tiles_bwd_scores(name):
    """(groups whose pick runs within 5% of the fastest tile, SDPA flash's step over the pick's in each group, and the
    pick in each group by key: its tile and its ms) of one of the H100's tiles_bwd files."""
    groups = report_kernels.tiles_bwd_groups(H100 / name)
    within = sum(g["ms"][g["pick"]] <= 1.05 * g["ms"][g["fastest"]] for g in groups)
    return (within, [g["sdpa"] / g["ms"][g["pick"]] for g in groups],
            {g["key"]: (g["pick"], g["ms"][g["pick"]]) for g in groups})


def tiles_bwd_outcome():
    """Run 181's backward tile sweep on the H100 against its prediction, and run 182's two repeats of it."""
    (within, sdpa, picks), *repeats = [_tiles_bwd_scores(name) for name in TILES_BWD]
    slow = [k for k, ratio in zip(picks, sdpa) if ratio < 0.9]
    lines = [f"- `tiles_bwd.json` (run 181), on H100-measured: the pick within 5% of the fastest tile in {within} of "
             f"{len(sdpa)} groups (at least 14: {_met(within >= 14)}); the step at the pick {_range(sdpa)}× SDPA "
             f"flash's speed (at least 0.9× in every group: {_met(not slow)})."]
    h200 = {g["key"]: g["pick"] for g in report_kernels.tiles_bwd_groups(H200 / "tiles_bwd.json")}
    same = sum(pick == h200.get(key) for key, (pick, _) in picks.items())
    rest = [ratio for ratio in sdpa if ratio >= 0.9]
    lines.append(f"- The picks are H200-measured's in {same} of {len(sdpa)} groups; in the {len(rest)} groups at 0.9× "
                 f"or more the step runs {_range(rest)}× SDPA flash's speed.")
    for key in slow:
        dtype, d, causal, n, batch, heads = key
        again = [picked[key][1] for _, _, picked in repeats]
        lines.append(f"- The group below 0.9×, {dtype}, d = {d}, {'causal' if causal else 'not causal'}, N = {n:,}, "
                     f"{batch} × {heads}: the pick's step took {picks[key][1]:.3f} ms in run 181 and "
                     f"{' and '.join(f'{ms:.3f}' for ms in again)} ms in run 182's two repeats.")
    shares = " and ".join(f"{w} of {len(r)}" for w, r, _ in repeats)
    lines.append(f"- Run 182's two repeats: the pick within 5% in {shares} groups, the step "
                 + " and ".join(f"{_range(r)}×" for _, r, _ in repeats) + " SDPA flash's.")
    return "\n".join(lines)


def forward_rows():
    """The H100's forward launches under Nsight, each once with every quantity: run 180's at d = 64 (its profile of
    every metric stopped before most of d = 128) and run 183's at d = 128 (that half alone, whole)."""
    return ([r for r in ncu.compare_run("ncu", H100) if r["head_dim"] == 64]
            + ncu.compare_run("ncu_d128", H100))


def forward_table():
    """docs/perf.md's table of the H100's forward launches (forward_rows)."""
    return report_kernels.ncu_summary_table(ncu.summary(forward_rows()))


def ncu_outcome():
    """Runs 180 and 183's Nsight jobs on the H100, priced on H100-measured, against the prediction written before
    them."""
    fwd, bwd = ncu.summary(forward_rows()), ncu.summary(ncu.compare_run("ncu_bwd", H100))
    both = {**fwd, **bwd}
    sm_to_l2 = [k for k in _short(both, "sm_to_l2_bytes", 1) if not k.startswith("hopper ")]
    return "\n".join([
        f"- Launches profiled with every metric: the backward's {_launches('manifest_bwd.json')}; the forward's "
        f"{_launches('manifest_dram.json')}, those at d = 64 in run 180 (whose profile of every metric reached "
        f"{_launches('manifest.json')} launches), the {_launches('manifest_d128.json')} at d = 128 in run 183.",
        f"- L2→SM within 2% on every launch: {_outcome(_short(both, 'l2_to_sm_bytes', 1))}. SM→L2 within 2% on "
        f"every launch but the Hopper kernel's: {_outcome(sm_to_l2)} (the Hopper kernel's worst "
        f"{fwd['hopper', 'sm_to_l2_bytes'][1]:.1%}).",
        f"- DRAM reads within 10% on at least 80% of each forward kernel's launches: "
        f"{_outcome(_short(fwd, 'dram_read_bytes', 0.8))}; "
        f"on every backward launch: {_outcome(_short(bwd, 'dram_read_bytes', 1))}.",
        f"- DRAM writes within 20% on at least 90% of each kernel's launches: "
        f"{_outcome(_short(both, 'dram_write_bytes', 0.9))}.",
        f"- Time within 25% on at least 80% of each kernel's launches of 100 µs or more: "
        f"{_outcome(_short(both, 'time_s', 0.8))}.", hopper_beside_h200()])


def outcomes():
    """What happened to each prediction written before the run, as docs/perf.md lists it."""
    return "\n".join([_microbenchmarks_outcome(), _same_seed_outcome(), _scores_outcome()])


def decode_line():
    """The decode rows' diagnosis, as docs/perf.md states it."""
    rates, priced = decode_rates(), with_h200_reads()
    return (f"gpusim's DRAM bytes over the measured time, seed {SAME_SEED}'s decode batches drew "
            f"{_range([r / 1e12 for r in rates['H200']], 1)} TB/s on the H200 and "
            f"{_range([r / 1e12 for r in rates['H100']], 1)} TB/s on the H100; priced on H100-measured with the H200's "
            f"DRAM rates instead of its own (a diagnostic, not adopted), {sum(abs(r - 1) <= 0.2 for r in priced)} of "
            f"the {len(before_files())} sets' {len(priced)} decode rows are within 20% (median "
            f"{statistics.median(priced):.2f}).")


def tile_picks(preset):
    """(groups, picks the fastest measured, picks within 5% of it, the picks off by more, as measured / fastest) of
    best_blocks on `preset` over the H100's tile sweep (a pick the sweep did not time as its rule launches it: None)."""
    picks = [ratio for _, ratio in agreement.tile_choice(results=H100, gpu=preset).values()]
    off = [r for r in picks if r is None or r > 1.05]
    return len(picks), sum(r == 1.0 for r in picks), len(picks) - len(off), off


def _tiles_part(preset):
    groups, fastest, near, off = tile_picks(preset)
    timed = [f"{r:.2f}×" for r in sorted(r for r in off if r is not None)]
    untimed = len(off) - len(timed)
    rest = timed + ([f"{untimed} pick{'s' * (untimed != 1)} the sweep did not time as its kernel launches it"]
                    if untimed else [])
    return (f"`best_blocks` on {preset} picks the fastest tile measured in {fastest} of the {groups} groups and one "
            f"within 5% of it in {near}" + (f" (the rest: {', '.join(rest)})" if rest else ""))


def tiles_line():
    """The tile sweep's outcome on the H100, per preset, as docs/perf.md states it."""
    return "; ".join(_tiles_part(preset) for preset in PRESETS) + "."


def headline_line():
    """README's line: the H100's held-out sets on the preset of its own microbenchmarks, by kind."""
    shares = set_shares(PRESETS[0])
    kinds = {k: [100 * kinds[k] for _, kinds in shares.values()] for k in heldout.KINDS.values()}
    per_kind = ", ".join(f"{k} {_range(vs, 0)}%" for k, vs in kinds.items())
    overall = _range([100 * s for s, _ in shares.values()], 1)
    blind = RUN_179 + RUN_184  # measured after the rule's form was chosen on the others' decode rows
    decode = _range([100 * shares[name][1]["decode"] for name in blind], 0)
    return (f"- **Another GPU** (an H100, its preset `H100-measured` from the same microbenchmarks, run 173, its "
            f"kernels' tiles too since its tile sweep, run 176; `results/h100/`): {len(shares)} held-out sets measured "
            f"on it, {overall}% of each set's rows within 20%; per kind {per_kind} "
            f"(decode priced by the ragged-wave rule adopted on 2026-12-06, whose form was chosen after the other "
            f"{len(shares) - len(blind)} sets' decode rows were read; the {len(blind)} measured after it, blind to it: "
            f"decode {decode}%; `docs/perf.md`, \"A ragged decode wave, adopted\"). {nsight_sentence()}")


def uneven_wave_moves(before=even_waves, after=one_slot_listed):
    """What cost.last_longest moved (docs/perf.md, after "Not every decode shape is monotone yet"), or what the change
    from the model `before` leaves to the one `after` leaves did (nullcontext: the model as it stands): per scored
    group (the H200's held-out sets pooled, the H100's on H100-measured pooled, each fitted file), (rows, rows moved,
    within 20% before, within 20% after, the most and the least a moved row's price grew, as ratios)."""
    def groups():
        h100 = [x for path in sorted(H100.glob("heldout_*.json")) for _, x in ratios(path, PRESETS[0])]
        return ({"H200 held-out": [x for name in report_heldout.HELD_OUT for _, x in agreement.heldout_rows(name)],
                 "H100 held-out": h100}
                | {name: [x for _, x in agreement.rows(name)] for name in agreement.FILES})
    with before():
        was = groups()
    with after():
        now = groups()
    grew = {k: [b / a for a, b in zip(was[k], now[k]) if a != b] or [1.0] for k in now}
    return {k: (len(now[k]), sum(a != b for a, b in zip(was[k], now[k])), _within(was[k]), _within(now[k]),
                max(grew[k]), min(grew[k])) for k in now}


if __name__ == "__main__":
    print(constants_table(), sets_table(), same_rows_table(), outcomes(), decode_line(), sep="\n\n")


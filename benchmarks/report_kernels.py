"""docs/perf.md's tables of the project's kernels as measured, against SDPA and the current model: every timed row of
bench.json and tiles.json (and their fitted and held-out halves), the speedup chart, the tile choice, the kernels
against SDPA, Nsight Compute's counts, naive's rows padded to 16, flash2 at lengths not a multiple of 16, decoding
(decode.json, runs 26-30's logs), the kernels as a user calls them (host.json, serving.json), the backward
(bench_bwd.json, tiles_bwd.json, bwd_kernels.json) and flash1's L1 hint; and what the other report modules share:
the repository's ROOT, the sweep's SEQS, bench_rows and measured, backward_kernel, _span.
"""
import json
import math
import tarfile
from pathlib import Path

import numpy as np

from benchmarks import agreement, ncu
import gpusim
from gpusim.cost import FITTED_HEAD_DIM
from gpusim_course import nsight


ROOT = Path(__file__).resolve().parents[1]
SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768)


def floor3(ratio):
    """A speed ratio to three decimals, rounded down: one just under 1 (0.9999) reads 0.999, not 1.000."""
    return f"{math.floor(ratio * 1e3) / 1e3:.3f}"


def up_percent(share):
    """A worst error as a percent to two decimals, rounded up: 0.213% is within 0.22%, not within 0.2%."""
    return f"{math.ceil(share * 1e4) / 100:.2f}%"


def bench_rows():
    return json.loads((agreement.RESULTS / "bench.json").read_text())["rows"]


def measured(rows, provider, head_dim, causal, seq, dtype="fp16"):
    return next((r for r in rows if r["provider"] == provider and r["head_dim"] == head_dim and r["causal"] == causal
                 and r["seq"] == seq and r["dtype"] == dtype and "ms" in r), None)


def agreement_table():
    lines = ["| file | kernel | rows | within 20% | within 40% | median predicted / measured | worst |",
             "|---|---|---|---|---|---|---|"]
    for name in ("bench.json", "tiles.json"):
        pairs = agreement.rows(name)
        groups = [("all", pairs)] + [(k, [p for p in pairs if p[0].get("algo", p[0].get("provider")) == k])
                                     for k in agreement.KERNELS]
        for kernel, mine in groups:
            if not mine:
                continue
            ratios = sorted(r for _, r in mine)
            near = lambda x: sum(abs(r - 1) <= x for r in ratios) / len(ratios)  # noqa: E731
            worst = max(ratios, key=lambda r: abs(r - 1))
            lines.append(f"| {name} | {kernel} | {len(ratios)} | {near(0.2):.0%} | {near(0.4):.0%} | "
                         f"{ratios[len(ratios) // 2]:.2f} | {worst:.2f} |")
    return "\n".join(lines)


def speedup_pairs():
    """{(d, causal, N): (naive's time over flash2's as bench.json measured it, as the model prices it)}, fp16."""
    rows, out = bench_rows(), {}
    for d in (64, 128):
        for causal in (False, True):
            for n in SEQS:
                a, b = measured(rows, "naive", d, causal, n), measured(rows, "flash2", d, causal, n)
                if not a or not b:
                    continue
                batch, heads = gpusim.fa2_shape(n, d)
                shape = dict(seq=n, head_dim=d, batch=batch, heads=heads, causal=causal, gpu=agreement.PRESET)
                predicted = (gpusim.simulate("naive", block_q=a["block_q"], block_kv=a["block_kv"], **shape)
                             .predicted_time_s / gpusim.simulate("flash2", block_q=b["block_q"],
                                                                 block_kv=b["block_kv"], **shape).predicted_time_s)
                out[d, causal, n] = (a["ms"] / b["ms"], predicted)
    return out


def speedup_table():
    pairs = speedup_pairs()
    lines = ["| d | causal | " + " | ".join(f"{n:,}" for n in SEQS) + " |", "|---|---|" + "---|" * len(SEQS)]
    for d in (64, 128):
        for causal in (False, True):
            cells = [f"{pairs[d, causal, n][0]:.2f} / {pairs[d, causal, n][1]:.2f}" if (d, causal, n) in pairs else "-"
                     for n in SEQS]
            lines.append(f"| {d} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


NAIVE_FLOOR_TARGET = 1.5


def naive_floor_ratios():
    """{(head_dim, causal, N): time over floor} of bench.json's naive rows (fp16): the floor is the model's DRAM bytes of
    the three kernels at the row's tiles over the measured copy bandwidth (ceilings.json)."""
    copy = json.loads((agreement.RESULTS / "ceilings.json").read_text())["copy_bytes_per_s"]
    rows, out = bench_rows(), {}
    for d, causal, n in ((d, c, n) for d in (64, 128) for c in (False, True) for n in SEQS):
        r = measured(rows, "naive", d, causal, n)
        if r is not None:
            sim = gpusim.simulate("naive", batch=r["batch"], heads=r["heads"], seq=n, head_dim=d, causal=causal,
                                  block_q=r["block_q"], block_kv=r["block_kv"], gpu="H200-measured")
            out[d, causal, n] = r["ms"] / 1e3 / ((sim.dram_read_bytes + sim.dram_write_bytes) / copy)
    return out


def naive_floor_table():
    """naive_floor_ratios as perf.md's table, bold where the target (1.5x) is met."""
    ratios = naive_floor_ratios()
    lines = ["| d | causal | " + " | ".join(f"{n:,}" for n in SEQS) + " |", "|---|---|" + "---|" * len(SEQS)]
    for d in (64, 128):
        for causal in (False, True):
            cells = ["-" if (x := ratios.get((d, causal, n))) is None else
                     f"**{x:.2f}**" if x <= NAIVE_FLOOR_TARGET else f"{x:.2f}" for n in SEQS]
            lines.append(f"| {d} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def drift_rows():
    """drift.json's launches (run 211, analysed) beside Nsight's DRAM reads of the same launch (ncu.json, ncu_edges,
    ncu_edges2: flash2, non-causal): K and V's reads (times their bytes) as Nsight measured them, as the LRU replay of
    each repeat's stamps makes them at gpusim's capacity and at run 65's half-miss point, and the DRAM-read error
    (over the measured, as ncu's tables) of the replay and of the model."""
    nsight = {(r["seq"], r["head_dim"]): r for name in ("ncu", "ncu_edges", "ncu_edges2")
              for r in ncu.compare_run(name, agreement.RESULTS) if r["quantity"] == "dram_read_bytes"
              and r["kernel"] == "flash2" and not r["causal"]}
    out = []
    for row in json.loads((agreement.RESULTS / "drift.json").read_text())["rows"]:
        q = row["heads"] * row["seq"] * row["head_dim"] * 2  # Q, and K or V, fp16, batch 1
        seen = nsight[row["seq"], row["head_dim"]]
        replay = [row[key] for key in sorted(row) if key.startswith("kv_reads_")]  # each repeat's, as analysed
        out.append({**{k: row[k] for k in ("seq", "head_dim", "plain_ms", "stamped_ms_0", "start_spread_us_0")},
                    "measured": (seen["measured"] - q) / (2 * q), "model": (seen["simulated"] - q) / (2 * q),
                    "gpusim": [x["gpusim"] for x in replay], "half_missed": [x["half_missed"] for x in replay],
                    "replay_err": [q * (1 + 2 * x["gpusim"]) / seen["measured"] - 1 for x in replay],
                    "model_err": seen["simulated"] / seen["measured"] - 1})
    return out


def _signed(share):
    """A signed error in whole percent, 0% where it rounds to none."""
    return "0%" if round(share * 100) == 0 else f"{share:+.0%}"


def drift_table():
    rows = drift_rows()
    lines = ["| N | d | stamped / plain time | a head's starts spread, µs | K, V read (Nsight) | LRU at gpusim's 30 MiB, "
             "two repeats | LRU at the half-miss point | DRAM reads' error: LRU / model |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seq']:,} | {r['head_dim']} | {r['stamped_ms_0'] / r['plain_ms']:.2f} | "
                     f"{r['start_spread_us_0']:,.0f} | {r['measured']:.2f} | {r['gpusim'][0]:.2f}, {r['gpusim'][1]:.2f} | "
                     f"{r['half_missed'][0]:.2f}, {r['half_missed'][1]:.2f} | "
                     f"{', '.join(map(_signed, r['replay_err']))} / {_signed(r['model_err'])} |")
    target = ncu.TARGETS["dram_read_bytes"]
    replay = sum(abs(e) <= target for r in rows for e in r["replay_err"])
    model = sum(abs(r["model_err"]) <= target for r in rows)
    lines += ["", f"DRAM reads within 10% of Nsight's: the LRU replay on {replay} of {2 * len(rows)} repeats, the model "
              f"on {model} of {len(rows)} launches."]
    return "\n".join(lines)


def tile_table():
    lines = ["| kernel | d | causal | N | best_blocks | its time / the fastest measured |", "|---|---|---|---|---|---|"]
    for (algo, d, causal, seq), (pick, ratio) in sorted(agreement.tile_choice().items()):
        shown = "not measured" if ratio is None else f"{ratio:.3f}"
        lines.append(f"| {algo} | {d} | {'yes' if causal else 'no'} | {seq:,} | {pick[0]} x {pick[1]} | {shown} |")
    return "\n".join(lines)


def against_sdpa_table():
    rows = bench_rows()
    lines = ["| dtype | d | causal | flash2 / SDPA flash, N >= 2K | hopper / SDPA cuDNN, N >= 4K | "
             "hopper fp8 / its fp16, N >= 4K |", "|---|---|---|---|---|---|"]
    for dtype in ("fp16", "bf16"):
        for d in (64, 128):
            for causal in (False, True):
                def span(num, den, least, num_dtype=dtype):
                    ratios = [m_den["ms"] / m_num["ms"] for n in (*SEQS, 65536, 131072) if n >= least
                              for m_num, m_den in [(measured(rows, num, d, causal, n, num_dtype),
                                                    measured(rows, den, d, causal, n, dtype))] if m_num and m_den]
                    return f"{min(ratios):.2f}-{max(ratios):.2f} ({len(ratios)})" if ratios else "-"
                fp8 = span("hopper", "hopper", 4096, "fp8") if dtype == "fp16" else "-"
                lines.append(f"| {dtype} | {d} | {'yes' if causal else 'no'} | {span('flash2', 'sdpa_flash', 2048)} | "
                             f"{span('hopper', 'sdpa_cudnn', 4096)} | {fp8} |")
    return "\n".join(lines)


def halves_table():
    """The fitted constants' halves: d = 64 rows (CONTENTION and ISSUE_HIDING were fitted on them) and d = 128
    rows (reported, not fitted), bench.json and tiles.json together."""
    lines = ["| rows | kernels | within 20% | within 40% | median |", "|---|---|---|---|---|"]
    pairs = agreement.rows("bench.json") + agreement.rows("tiles.json")
    for d, role in ((FITTED_HEAD_DIM, f"d = {FITTED_HEAD_DIM} (fitted)"), (128, "d = 128 (held out)")):
        ratios = sorted(r for row, r in pairs if row["head_dim"] == d)
        near = lambda x: sum(abs(r - 1) <= x for r in ratios) / len(ratios)  # noqa: E731
        lines.append(f"| {role} | {len(ratios)} | {near(0.2):.0%} | {near(0.4):.0%} | {ratios[len(ratios) // 2]:.2f} |")
    return "\n".join(lines)


def _share(pairs):
    s = agreement.summary(pairs)
    return f"{s['within 20%']:.0%} of {s['rows']} (median {s['median']:.2f}, worst {s['worst']:.2f})"


def bounds(file):
    """The bounds tests/test_agreement.py checks for a results file, in words."""
    return "; ".join(f"{group}: at least {w20:.0%} within 20%, {w40:.0%} within 40%"
                     for (f, group), (w20, w40) in agreement.BOUNDS.items() if f == file)


def decode_table():
    """Batch 1 of results/h200/decode.json: the split kernel, num_splits = 1 and the fastest SDPA backend,
    predicted / measured in brackets; the model against every row, by batch; the launches the run timed
    Python for."""
    data, pairs = json.loads((agreement.RESULTS / "decode.json").read_text()), agreement.rows("decode.json")
    key = lambda r: (r["provider"], r["batch"], r["seq_kv"])  # noqa: E731
    ratio = {key(row): r for row, r in pairs}
    cells = {key(r): r for r in data["rows"] if "ms" in r}
    lines = ["| cache | split_kv, ms (splits) | ÷ fastest SDPA speed | contiguous, ms (splits) | ÷ fastest SDPA speed "
             "| num_splits = 1, ms | fastest SDPA, ms | split_kv: copy fraction | num_splits = 1 slowdown: measured, "
             "predicted |", "|---|---|---|---|---|---|---|---|---|"]
    for n, (predicted, measured_) in agreement.unsplit_slowdown().items():
        split, one = cells["split_kv", 1, n], cells["split_kv_1", 1, n]
        contiguous = cells.get(("split_kv_contiguous", 1, n))
        sdpa = fastest_sdpa(data["rows"], n)
        mine = (f"{contiguous['ms']:.3f} ({contiguous['num_splits']}) [{ratio[key(contiguous)]:.2f}] | "
                f"{floor3(sdpa['ms'] / contiguous['ms'])}" if contiguous else "- | -")
        lines.append(f"| {n:,} | {split['ms']:.3f} ({split['num_splits']}) [{ratio[key(split)]:.2f}] | "
                     f"{floor3(sdpa['ms'] / split['ms'])} | {mine} | {one['ms']:.3f} [{ratio[key(one)]:.2f}] | "
                     f"{sdpa['ms']:.3f} ({sdpa['provider']}) | {split['copy_fraction']:.2f} | {measured_:.2f}, "
                     f"{predicted:.2f} |")
    close = [n for n, (predicted, measured_) in agreement.unsplit_slowdown().items()
             if abs(predicted / measured_ - 1) <= 0.25]
    lines += ["", f"The predicted slowdown of num_splits = 1 is within 25% of the measured one at {len(close)} of "
              f"{len(agreement.unsplit_slowdown())} cache lengths ({', '.join(f'{n:,}' for n in close)})."]
    batches = {b: [p for p in pairs if p[0]["batch"] == b] for b in sorted({p[0]["batch"] for p in pairs})}
    lines += ["", f"Every row of the project's kernel (`python -m benchmarks.agreement`): {_share(pairs)} within "
              f"20%; " + "; ".join(f"batch {b}: {_share(mine)}" for b, mine in batches.items()) + "."]
    lines += ["", launch_sweep(), ""]
    lines += [f"Checked by `tests/test_agreement.py`: {bounds('decode.json')}."]
    return "\n".join(lines)


def fastest_sdpa(rows, seq_kv):
    """decode.json's fastest SDPA row at batch 1 and this cache length."""
    return min((r for r in rows if r["provider"].startswith("sdpa") and (r["batch"], r["seq_kv"]) == (1, seq_kv)
                and "ms" in r), key=lambda r: r["ms"])


def layout_table():
    """results/h200/decode_layout.json: each launch's least median (µs) and cuDNN's time over it, per cache."""
    data = json.loads((agreement.RESULTS / "decode_layout.json").read_text())
    names = list(dict.fromkeys(r["variant"] for r in data["rows"]))
    cell = {(r["seq_kv"], r["variant"]): r for r in data["rows"]}
    lines = ["| cache | " + " | ".join(name if name == "cudnn" else f"{name} (splits) ÷ cuDNN speed" for name in names)
             + " |", "|---" * (len(names) + 1) + "|"]
    for n in sorted({r["seq_kv"] for r in data["rows"]}):
        lines.append(f"| {n:,} | " + " | ".join(
            f"{cell[n, name]['ms'] * 1e3:.1f} µs" + (f" ({cell[n, name]['num_splits']}) ×{cell[n, name]['vs_cudnn']:.3f}"
                                                     if name != "cudnn" else "") for name in names) + " |")
    return "\n".join(lines)


EXPERIMENTS = ROOT / "results" / "h200" / "logs" / "run26_30_decode_experiments.tar.gz"
EXPERIMENT_RUNS = ("exp_tma.json", "exp_prefetch_run27.json", "exp_prefetch_run28.json", "exp_fused.json")


def decode_rates():
    """Runs 26-30's baselines (logs only): each launch's time at 32K-128K fitted as intercept + bytes / rate
    (least squares over every run's points), the K and V bytes being one layer of Llama-3-8B's cache, batch 1."""
    import numpy as np
    from gpusim import kvcache
    per_token = kvcache.bytes_per_token("Llama-3-8B") // kvcache.get_model("Llama-3-8B").layers  # K and V, fp16
    names = {"base_paged16": "paged16", "base_contiguous": "contiguous"}
    points = {"cudnn": [], "paged16": [], "contiguous": []}
    with tarfile.open(EXPERIMENTS) as tar:
        for name in EXPERIMENT_RUNS:
            for r in json.load(tar.extractfile(f"logs/{name}"))["rows"]:
                variant = names.get(r["variant"], r["variant"])
                if variant in points and r["seq_kv"] >= 32768:
                    points[variant].append((r["seq_kv"] * per_token, r["ms"] * 1e-3))
    fits = {}
    for variant, xy in points.items():
        x, y = np.array(xy).T
        per_byte, intercept = np.polyfit(x, y, 1)
        fits[variant] = (intercept * 1e6, 1 / per_byte / 1e12, len(xy))
    text = {"cudnn": "cuDNN", "paged16": "the paged kernel (pages of 16 at random)",
            "contiguous": "the same kernel on the contiguous cache"}
    return ("Fitted over runs 26–28 and 30 at 32K–128K (time = intercept + K/V bytes ÷ rate, least squares): " +
            "; ".join(f"{text[v]} {c:.2f} µs + {rate:.2f} TB/s ({n} points)" for v, (c, rate, n) in fits.items()) +
            f". The paged gather streams {1 - fits['paged16'][1] / fits['cudnn'][1]:.1%} slower than cuDNN; "
            f"its fixed cost differs from cuDNN's by {fits['paged16'][0] - fits['cudnn'][0]:+.2f} µs.")


def launch_sweep():
    """results/h200/decode_tiles.json: per case, the kernel's own launch against the fastest swept one."""
    data = json.loads((agreement.RESULTS / "decode_tiles.json").read_text())
    timed = [r for r in data["rows"] if "ms" in r]
    out = []
    for case in dict.fromkeys((r["batch"], r["seq_kv"]) for r in timed):
        mine = [r for r in timed if (r["batch"], r["seq_kv"]) == case]
        own, best = next(r for r in mine if r["default"]), min(mine, key=lambda r: r["ms"])
        out.append(f"batch {case[0]}, {case[1]:,} tokens: {own['ms']:.4f} ms ({own['num_splits']} splits, "
                   f"{own['copy_fraction']:.2f} of copy) against {best['ms']:.4f} ms ({best['num_splits']} splits of "
                   f"{best['block_kv']} keys, {best['num_warps']} warps, {best['num_stages']} stages, "
                   f"{best['copy_fraction']:.2f})")
    return ("Run 9's launch sweep (`decode_tiles.json`), before the split rule counted resident blocks: the "
            "kernel's launch then against the fastest of the swept launches: " +
            "; ".join(out) + ".")


def backward_table():
    """results/h200/bench_bwd.json: flash2's backward against SDPA's flash backward, predicted / measured in
    brackets, the measured peak against gpusim's; the model against every row, by pass."""
    data, pairs = json.loads((agreement.RESULTS / "bench_bwd.json").read_text()), agreement.rows("bench_bwd.json")
    key = lambda r: (r["provider"], r["pass"], r["head_dim"], r["causal"], r["seq"])  # noqa: E731
    ratio = {key(row): r for row, r in pairs}
    cells = {key(r): r for r in data["rows"] if "ms" in r}
    lines = ["| d | causal | tiles | N | flash2 bwd, ms | SDPA flash bwd, ms | flash2 ÷ SDPA speed | flash2 fwd+bwd, ms "
             "| peak, measured / gpusim |", "|---|---|---|---|---|---|---|---|---|"]
    for (provider, pass_, d, causal, n), row in sorted(cells.items(), key=lambda kv: kv[0][2:]):
        if (provider, pass_) != ("flash2", "bwd"):
            continue
        sdpa, both = cells["sdpa_flash", "bwd", d, causal, n], cells["flash2", "fwd+bwd", d, causal, n]
        peak = agreement.simulated(row).hbm_peak_bytes
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {row['block_q']} x {row['block_kv']} | {n:,} | "
                     f"{row['ms']:.3f} [{ratio[key(row)]:.2f}] | {sdpa['ms']:.3f} | {sdpa['ms'] / row['ms']:.2f} | "
                     f"{both['ms']:.3f} [{ratio[key(both)]:.2f}] | {row['peak_bytes'] / peak:.3f} |")
    names = sorted({agreement.name(row) for row, _ in pairs})
    misses = [f"{agreement.name(row)} d = {row['head_dim']}{' causal' if row['causal'] else ''} N = {row['seq']:,} "
              f"({r:.3f})" for row, r in sorted(pairs, key=lambda p: key(p[0])) if abs(r - 1) > 0.2]
    lines += ["", f"Every row of the project's kernels: {_share(pairs)} within 20%; " +
              "; ".join(f"{n}: {_share([q for q in pairs if agreement.name(q[0]) == n])}" for n in names) + ". "
              f"Outside 20%: {', '.join(misses) or 'none'}.", "",
              f"Checked by `tests/test_agreement.py`: {bounds('bench_bwd.json')}."]
    return "\n".join(lines)


def ncu_table(name="ncu", results=agreement.RESULTS):
    """An Nsight Compute run in results (results/h200; results/h100 for the H100's) by name (`ncu.compare_run`: the
    forward's ncu, the long sequences' ncu_edges and ncu_edges2, the backward's ncu_bwd) against the current model:
    per kernel and quantity, the share of launches within the target and the worst error."""
    return ncu_summary_table(ncu.summary(ncu.compare_run(name, results)))


def ncu_summary_table(summary):
    """An ncu.summary as docs/perf.md's table: per kernel, each quantity's share within its target and worst error."""
    names = {"l2_to_sm_bytes": "L2→SM", "sm_to_l2_bytes": "SM→L2", "dram_read_bytes": "DRAM read",
             "dram_write_bytes": "DRAM write", "time_s": "time ≥ 100 µs"}
    lines = ["| kernel | " + " | ".join(f"{name} ({ncu.TARGETS[q]:.0%})" for q, name in names.items()) + " |",
             "|---|" + "---|" * len(names)]
    for kernel in dict.fromkeys(k for k, _ in summary):
        cells = [f"{summary[kernel, q][2]:.0%}, {summary[kernel, q][1]:.1%}" if (kernel, q) in summary else "-"
                 for q in names]
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def naive_rows_table():
    """results/h200/naive_rows.json (run 63, S's and P's rows padded to 16 elements) against naive_gqa.json's same
    shapes (run 42, rows N_kv apart): each kernel's µs, and gpusim's for the kernels as they are now."""
    def load(name):
        rows = json.loads((agreement.RESULTS / name).read_text())["rows"]
        return {(r["batch"], r["heads"], r["seq"], r["head_dim"]): r for r in rows if r["kv_heads"] == r["heads"]}
    before, after = load("naive_gqa.json"), load("naive_rows.json")
    kernels = ("qk", "softmax", "pv")
    lines = ["| batch × heads, N, d | " + " | ".join(f"{k}, µs" for k in kernels) + " | model now, µs |",
             "|---|---|---|---|---|"]
    for (b, h, n, d), r in after.items():
        model = {k.name: k.predicted_time_s * 1e6 for k in gpusim.simulate(
            "naive", batch=b, heads=h, seq=n, head_dim=d, dtype="fp16", gpu=agreement.PRESET).kernels}
        cells = [f"{before[b, h, n, d]['us'][k]:.0f} → {r['us'][k]:.0f}" for k in kernels]
        lines.append(f"| {b} × {h}, {n:,}, {d} | " + " | ".join(cells) + " | "
                     + " / ".join(f"{model[k]:.0f}" for k in kernels) + " |")
    return "\n".join(lines)


def backward_kernel(row, kernel):
    """gpusim's KernelResult of the backward's `kernel` in a training step of a results row's shape (its K/V heads and
    batch where it has them), mask and dtype, at the row's backward tiles."""
    result = gpusim.simulate("flash2", seq=row["seq"], head_dim=row["head_dim"], heads=row["heads"],
                             kv_heads=row.get("kv_heads"), batch=row["batch"], causal=row["causal"], dtype=row["dtype"],
                             gpu=agreement.PRESET, backward=True, backward_blocks=(row["block_q"], row["block_kv"]))
    return next(k for k in result.kernels if k.pass_ == "backward" and k.name == kernel)


def flash1_l1_rows():
    """results/h200/flash1_l1.json (run 153) by shape, with gpusim's counts and time: gpusim_course.nsight's."""
    return nsight.flash1_hint_rows(agreement.RESULTS, agreement.PRESET)


def flash1_l1_table():
    """flash1_l1_rows as docs/perf.md shows them: the kernel's L2 -> SM over gpusim's count; its tensors' (Nsight's
    total less its local-memory reloads) over gpusim's tensors', with the hint and without it; L1's hit share of the
    bytes asked of it; the launches' times."""
    hits = lambda r: r["l1_hit_bytes"] / r["l1_requested_bytes"]  # noqa: E731
    tensors = nsight.tensor_bytes_over_count
    lines = ["| d | causal | N | L2→SM ÷ gpusim's count | tensors' L2→SM ÷ gpusim's: evict_last / none | "
             "L1 hits: evict_last / none | ms: evict_last / none / O_i's only | gpusim, ms |",
             "|---|---|---|---|---|---|---|---|"]
    for r in flash1_l1_rows():
        el, plain, o = r["evict_last"], r["plain"], r["evict_last_o"]
        lines.append(f"| {r['head_dim']} | {'yes' if r['causal'] else 'no'} | {r['seq']:,} | "
                     f"{el['l2_to_sm_bytes'] / r['count']:.3f} | {tensors(el, r['tensors']):.3f} / "
                     f"{tensors(plain, r['tensors']):.3f} | {hits(el):.2f} / {hits(plain):.2f} | "
                     f"{el['ms']:.3f} / {plain['ms']:.3f} / {o['ms']:.3f} | {r['predicted_ms']:.3f} |")
    return "\n".join(lines)


UNALIGNED = ((4096, 4096), (4080, 4080), (4095, 4095), (4095, 4096), (4096, 4095))  # (N, N_kv), as measured


def unaligned_rows(rows=None):
    """results/h200/unaligned.json (or the given rows): {(head_dim, block_q, block_kv): ({(N, N_kv): ms}, gpusim's ms
    at 4096)}."""
    out = {}
    for r in rows or json.loads((agreement.RESULTS / "unaligned.json").read_text())["rows"]:
        if "ms" in r:
            times, _ = out.setdefault((r["head_dim"], r["block_q"], r["block_kv"]), ({}, r["model_ms"]))
            times[r["seq"], r["seq_kv"]] = r["ms"]
    return out


def unaligned_table(rows=None):
    """unaligned_rows() as docs/perf.md's table: the aligned launch's time, each other length's over it, gpusim's."""
    lines = ["| d | tile | N = N_kv = 4,096, ms | 4,080 (÷) | 4,095 (÷) | N 4,095, N_kv 4,096 (÷) | N 4,096, N_kv 4,095 "
             "(÷) | gpusim at 4,096, ms |", "|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk), (times, model) in unaligned_rows(rows).items():
        aligned = times[UNALIGNED[0]]
        lines.append(f"| {d} | {bq} × {bk} | {aligned:.3f} | " + " | ".join(
            f"{times[n] / aligned:.2f}" for n in UNALIGNED[1:]) + f" | {model:.3f} |")
    return "\n".join(lines)


LATE_MASK = ROOT / "results" / "h200" / "logs" / "run104_unaligned_backward.tar.gz"


def backward_rows(late_mask=False):
    """flash2's backward at the unaligned lengths (run 104): the committed kernels (unaligned_backward.json), or with
    dK/dV's and dQ's stores masked anew after their loops (late_mask: the variant in the run's logs)."""
    if not late_mask:
        return json.loads((agreement.RESULTS / "unaligned_backward.json").read_text())["rows"]
    with tarfile.open(LATE_MASK) as tar:
        return json.load(tar.extractfile("run104/new/unaligned_backward.json"))["rows"]


def late_mask_ratios():
    """{(head_dim, block_q, block_kv): {(N, N_kv): the late-mask variant's time over the committed kernel's}}."""
    now, late = unaligned_rows(backward_rows()), unaligned_rows(backward_rows(late_mask=True))
    return {key: {n: late[key][0][n] / ms for n, ms in times.items()} for key, (times, _) in now.items()}


def unaligned_ncu():
    """results/h200/unaligned_ncu_stalls.csv (Nsight Compute's raw page, benchmarks.unaligned --profile's four
    launches): {metric: [its value per launch]} for the metrics docs/perf.md quotes."""
    launches, _ = ncu.raw_table((agreement.RESULTS / "unaligned_ncu_stalls.csv").read_text())
    names = {"gpu__time_duration.sum": "ns", "smsp__inst_executed.sum": "instructions",
             "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "l1_global_load_sectors",
             "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio": "short_scoreboard",
             "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": "wait"}
    return {key: [float(launch[name].replace(",", "")) for launch in launches] for name, key in names.items()}


def o_mask_rows():
    """results/h200/unaligned_o_mask.json: {(head_dim, block_q, block_kv): {(kernel, N, N_kv): ms}}."""
    out = {}
    for r in json.loads((agreement.RESULTS / "unaligned_o_mask.json").read_text())["rows"]:
        if "ms" in r:
            out.setdefault((r["head_dim"], r["block_q"], r["block_kv"]), {})[r["kernel"], r["seq"], r["seq_kv"]] = r["ms"]
    return out


def o_mask_table():
    """o_mask_rows() as docs/perf.md's table: the kernel before (Q's mask kept through the loop) and with O's mask made
    after it, at N = 4,096 and 4,095 (N_kv = 4,096), the fixed kernel's time over the one before, and whether
    kernels/flash2.py ships the fix for the tile (64-row tiles at d >= 128)."""
    lines = ["| d | tile | before: 4,096, ms | 4,095 | after: 4,096 | 4,095 | after ÷ before: 4,096 | 4,095 | ships |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (d, bq, bk), ms in o_mask_rows().items():
        before, after = ([ms[kernel, n, 4096] for n in (4096, 4095)] for kernel in ("q_mask", "late_o_mask"))
        lines.append(f"| {d} | {bq} × {bk} | {before[0]:.3f} | {before[1]:.3f} | {after[0]:.3f} | {after[1]:.3f} | "
                     f"{after[0] / before[0]:.2f} | {after[1] / before[1]:.2f} | {'yes' if d >= 128 and bq == 64 else 'no'} |")
    return "\n".join(lines)


HOST_TARGETS = {"flash2_attention": 1.5, "hopper_attention": 1.5, "flash2_train_step": 1.5, "naive_attention": 3.0}


def host_table():
    """results/h200/host.json (each shape's launch cached) and host_before.json: µs per call where the GPU waits
    for the host, beside SDPA's in the same run, against issue 24's targets."""
    def load(name):
        return {(r["entry"], r["batch"], r["heads"], r["seq"], r["head_dim"], r.get("seq_kv")): r
                for r in json.loads((agreement.RESULTS / name).read_text())["rows"] if r.get("us")}
    before, after = load("host_before.json"), load("host.json")
    lines = ["| entry | batch × heads × N × d | before, µs (÷ SDPA) | cached, µs | SDPA, µs | ÷ SDPA | target |",
             "|---|---|---|---|---|---|---|"]
    for key, row in after.items():
        entry, batch, heads, seq, d, cached = key
        target = HOST_TARGETS.get(entry)
        old = before.get(key)
        was = f"{old['us']:.0f} ({old['us'] / old['sdpa_us']:.2f})" if old else "-"
        ratio = row["us"] / row["sdpa_us"]
        verdict = "-" if target is None else f"≤ {target} {'met' if ratio <= target else 'missed'}"
        shape = f"{batch} × {heads} × {seq:,} × {d}" + (f", {cached:,} cached" if cached else "")
        lines.append(f"| {entry} | {shape} | {was} | {row['us']:.0f} | "
                     f"{row['sdpa_us']:.0f} | {ratio:.2f} | {verdict} |")
    return "\n".join(lines)


def serving_points(folder=agreement.RESULTS):
    """A serving.json's timed rows: {(batch, seq_kv): {provider: ms per token}}."""
    points = {}
    for r in json.loads((folder / "serving.json").read_text())["rows"]:
        if r.get("ms_per_token"):
            points.setdefault((r["batch"], r["seq_kv"]), {})[r["provider"]] = r["ms_per_token"]
    return points


def serving_table(folder=agreement.RESULTS):
    """A serving.json (results/h200/'s unless given): ms per token (32 layers) of the plan run eagerly and from a
    CUDA graph against the fastest SDPA backend the same way, against issue 24's targets."""
    points = serving_points(folder)
    lines = ["| batch | cached tokens | plan eager, ms | fastest SDPA eager | ours ÷ SDPA (≤ 1.1) | plan graphed, ms "
             "| fastest SDPA graphed | SDPA ÷ ours (≥ 1.0; ≥ 0.97 past 16K) |", "|---|---|---|---|---|---|---|---|"]
    for (batch, n), ms in sorted(points.items()):
        eager = min(v for k, v in ms.items() if k.startswith("sdpa") and not k.endswith("graph"))
        graph = min(v for k, v in ms.items() if k.startswith("sdpa") and k.endswith("graph"))
        low = 1.0 if n <= 16384 else 0.97
        lines.append(f"| {batch} | {n:,} | {ms['plan_eager']:.2f} | {eager:.2f} | {ms['plan_eager'] / eager:.2f}"
                     f"{'' if ms['plan_eager'] / eager <= 1.1 else ' (missed)'} | {ms['plan_graph']:.2f} | {graph:.2f} | "
                     f"{graph / ms['plan_graph']:.2f}{'' if graph / ms['plan_graph'] >= low else ' (missed)'} |")
    return "\n".join(lines)


def serving_splits_table():
    """results/h200/serving_splits.json: the graphed plan's ms per token at each split count against the fastest
    SDPA graph, per point; the split rule's pick marked, and whether it was the fastest count."""
    rows = [r for r in json.loads((agreement.RESULTS / "serving_splits.json").read_text())["rows"]
            if r.get("ms_per_token")]
    lines = ["| batch | cached tokens | plan graphed, ms per token at num_splits (rule's pick in bold) | rule's pick "
             "fastest | fastest SDPA graphed, ms | SDPA ÷ pick |", "|---|---|---|---|---|---|"]
    for point in dict.fromkeys((r["batch"], r["seq_kv"]) for r in rows):
        here = [r for r in rows if (r["batch"], r["seq_kv"]) == point]
        plan = [r for r in here if r["provider"] == "plan_graph"]
        pick = next(r for r in plan if r["default"])
        sdpa = min(r["ms_per_token"] for r in here if r["provider"].startswith("sdpa"))
        counts = ", ".join(f"**{r['num_splits']}: {r['ms_per_token']:.3f}**" if r["default"] else
                           f"{r['num_splits']}: {r['ms_per_token']:.3f}" for r in plan)
        fastest = "yes" if pick["ms_per_token"] == min(r["ms_per_token"] for r in plan) else "no"
        lines.append(f"| {point[0]} | {point[1]:,} | {counts} | {fastest} | {sdpa:.3f} | "
                     f"{sdpa / pick['ms_per_token']:.2f} |")
    return "\n".join(lines)


def reduce_warps_table():
    """results/h200/reduce_warps.json: the graphed serving loop's ms per token with the reduce on 1, 2 and 4 warps,
    PDL on and off, each over the fastest of the six at its point; cuDNN's graph over 2 warps with PDL."""
    rows = json.loads((agreement.RESULTS / "reduce_warps.json").read_text())["rows"]
    variants = [(w, p) for w in (1, 2, 4) for p in (True, False)]
    lines = ["| batch | cached tokens | splits | " + " | ".join(f"{w} warp{'s' * (w > 1)}, PDL {'on' if p else 'off'}"
                                                          for w, p in variants) + " | cuDNN ÷ 2 warps, PDL |",
             "|---|---|---|" + "---|" * (len(variants) + 1)]
    for point in dict.fromkeys((r["batch"], r["seq_kv"]) for r in rows):
        here = [r for r in rows if (r["batch"], r["seq_kv"]) == point]
        ms = {(r["reduce_warps"], r["pdl"]): r["ms_per_token"] for r in here if r["provider"] == "plan_graph"}
        cudnn = next(r["ms_per_token"] for r in here if r["provider"] == "sdpa_cudnn_graph")
        best = min(ms.values())
        lines.append(f"| {point[0]} | {point[1]:,} | {here[0]['num_splits']} | "
                     + " | ".join(f"{ms[v] / best:.3f}" for v in variants) + f" | {cudnn / ms[2, True]:.2f} |")
    return "\n".join(lines)


def tiles_bwd_groups(path):
    """A tiles_bwd.json's groups (results/h200's, or another GPU's, picked on its environment's preset): per group its
    key (dtype, d, causal, N, batch, heads), each backward tile's step in ms, SDPA flash's, the fastest tile and
    best_blocks(..., backward=True)'s pick."""
    groups, data = {}, json.loads(Path(path).read_text())
    gpu = data["environment"].get("preset", agreement.PRESET)
    for r in data["rows"]:
        key = (r["dtype"], r["head_dim"], r["causal"], r["seq"], r["batch"], r["heads"])
        groups.setdefault(key, {})[(r["block_q"], r["block_kv"]) if r["provider"] == "flash2" else "sdpa"] = r["ms"]
    out = []
    for (dtype, d, causal, n, batch, heads), ms in groups.items():
        sdpa = ms.pop("sdpa")
        pick = tuple(gpusim.best_blocks("flash2", seq=n, head_dim=d, heads=heads, batch=batch, causal=causal,
                                        dtype=dtype, gpu=gpu, backward=True))
        out.append(dict(key=(dtype, d, causal, n, batch, heads), ms=ms, sdpa=sdpa, fastest=min(ms, key=ms.get),
                        pick=pick))
    return out


def tiles_bwd_table(results=agreement.RESULTS, name="tiles_bwd.json"):
    """results/h200/tiles_bwd.json (or another folder's): the training step (flash2 forward + backward) at four
    backward tiles, the tile best_blocks(..., backward=True) picks, and SDPA flash's step over ours, per group (issue
    24's targets: the pick within 5% of the fastest, the step at least 0.9× SDPA's)."""
    lines = ["| dtype | d | causal | N | batch × heads | fastest tile, ms | pick | pick ÷ fastest | SDPA ÷ pick "
             "| SDPA ÷ fastest |", "|---|---|---|---|---|---|---|---|---|---|"]
    for g in tiles_bwd_groups(Path(results) / name):
        (dtype, d, causal, n, batch, heads), ms, fastest, pick = g["key"], g["ms"], g["fastest"], g["pick"]
        mine = ms.get(pick)
        cells = (f"{mine / ms[fastest]:.2f} | {g['sdpa'] / mine:.2f}" if mine else "not measured | -")
        lines.append(f"| {dtype} | {d} | {'yes' if causal else 'no'} | {n:,} | {batch} × {heads} | {fastest[0]} × "
                     f"{fastest[1]}, {ms[fastest]:.3f} | {pick[0]} × {pick[1]} | {cells} | "
                     f"{g['sdpa'] / ms[fastest]:.2f} |")
    return "\n".join(lines)


def bwd_kernel_rows():
    """results/h200/bwd_kernels.json's timed rows, each with gpusim's time for its kernel (simulate's backward at the
    row's tiles) as model_ms, model / measured as ratio, and the model's blocks per SM and latency_bound."""
    out = []
    for row in json.loads((agreement.RESULTS / "bwd_kernels.json").read_text())["rows"]:
        if "ms" not in row:
            continue
        kernel = backward_kernel(row, row["kernel"])
        out.append(dict(row, model_ms=kernel.predicted_time_s * 1e3, ratio=kernel.predicted_time_s * 1e3 / row["ms"],
                        model_blocks=kernel.blocks_per_sm, latency_bound=kernel.latency_bound))
    return out


def fastest_tiles(rows, field):
    """{group: the tile whose backward kernels' `field` (ms, or model_ms) sum least}."""
    sums = {}
    for r in rows:
        group = tuple(r[k] for k in ("dtype", "head_dim", "causal", "seq", "batch", "heads"))
        key = (group, (r["block_q"], r["block_kv"]))
        sums[key] = sums.get(key, 0.0) + r[field]
    best = {}
    for (group, tiles), total in sums.items():
        if group not in best or total < sums[group, best[group]]:
            best[group] = tiles
    return best


def bwd_kernels_table():
    """results/h200/bwd_kernels.json: each backward kernel's model / measured time at each tile (the range over the
    8 groups of a head dim), and how many groups' three kernels are fastest at the tile, measured and in the model."""
    rows = bwd_kernel_rows()
    tiles = list(dict.fromkeys((r["block_q"], r["block_kv"]) for r in rows))
    wins = {field: fastest_tiles(rows, field) for field in ("ms", "model_ms")}
    lines = ["| d | kernel | " + " | ".join(f"{q} × {kv}" for q, kv in tiles) + " |",
             "|---|---|" + "---|" * len(tiles)]
    for d in sorted({r["head_dim"] for r in rows}):
        for kernel in ("preprocess", "dkdv", "dq"):
            cells = [_span([r["ratio"] for r in rows if (r["head_dim"], r["kernel"], r["block_q"], r["block_kv"]) ==
                            (d, kernel, *t)]) for t in tiles]
            lines.append(f"| {d} | {kernel} | " + " | ".join(cells) + " |")
        for field, label in (("ms", "fastest, measured"), ("model_ms", "fastest, model")):
            count = [sum(g[1] == d and t == tile for g, t in wins[field].items()) for tile in tiles]
            lines.append(f"| {d} | {label} | " + " | ".join(f"{n} of {sum(count)}" for n in count) + " |")
    return "\n".join(lines)


def _span(ratios, unit="×"):
    return f"{min(ratios):.2f}–{max(ratios):.2f}{unit}"


def decode_rows_priced(name):
    """results/h200/NAME (benchmarks/decode_rows.py): each timed row with gpusim's time for its launch now, on the
    row's preset, over the measured."""
    from benchmarks import decode_rows
    from gpusim import decode
    out = []
    for row in json.loads((agreement.RESULTS / name).read_text())["rows"]:
        launch = decode.make_launch(**decode.launch_options(row), seq=row["seq"], block_kv=row["block_kv"],
                                    gpu=row["preset"])
        out.append((row, decode_rows.predicted_ms(launch) / row["ms"]))
    return out


def decode_rows_table(name="decode_rows_h100.json"):
    """The split kernel at 1-16 query rows: µs and gpusim's ratio at the rule's split count and at one row's, the
    rule's time over one row's count's; then the model's share within 20% by rows."""
    priced = decode_rows_priced(name)
    cell = {(r["batch"], r["seq_kv"], r["seq"], r["provider"]): (r, x) for r, x in priced}
    lines = ["| batch | cached tokens | query rows | rule: splits, µs [model ÷ measured] | one row's splits: splits, "
             "µs [model ÷ measured] | rule's time ÷ one row's count's |", "|---|---|---|---|---|---|"]
    for (batch, seq_kv, rows, provider), (r, x) in cell.items():
        if provider != "rule":
            continue
        other = cell.get((batch, seq_kv, rows, "one_row_splits"))
        alt = f"{other[0]['num_splits']}, {other[0]['ms'] * 1e3:.1f} [{other[1]:.2f}]" if other else "same"
        ratio = f"{r['ms'] / other[0]['ms']:.2f}" if other else "-"
        lines.append(f"| {batch} | {seq_kv:,} | {rows} | {r['num_splits']}, {r['ms'] * 1e3:.1f} [{x:.2f}] | {alt} | "
                     f"{ratio} |")
    def share(pairs):
        return f"{sum(abs(x - 1) <= 0.2 for _, x in pairs)} of {len(pairs)}"
    few = [(r, x) for r, x in priced if r["seq"] <= 8]
    many = [(r, x) for r, x in priced if r["seq"] > 8]
    lines += ["", f"The model within 20%: {share(priced)} rows; at 1 to 8 query rows {share(few)} "
              f"({_ratio_span(few)}), at 12 and 16 {share(many)} ({_ratio_span(many)})."]
    return "\n".join(lines)


def split_lone_steps(name="split_lone.json"):
    """A split_lone results file by launch: {(query rows, cache ("paged" or "contiguous"), splits): (block_q, programs
    an SM in gpusim, the measured step in µs, gpusim's in µs, programs)}, each step the slope of the time over a
    program's steps (a least-squares line through the lengths), gpusim's from its price of the same launches on the
    row's preset as the model stands (report_history.lone_split_before for the model before the lone copy rule)."""
    from benchmarks import decode_rows, split_lone
    from gpusim import decode
    groups = {}
    for row in json.loads((agreement.RESULTS / name).read_text())["rows"]:
        launch = decode.make_launch(batch=row["batch"], seq=row["seq"], seq_kv=row["seq_kv"],
                                    page_size=row["page_size"], num_splits=row["num_splits"], block_kv=row["block_kv"],
                                    heads=row["heads"], kv_heads=row["kv_heads"], head_dim=row["head_dim"],
                                    gpu=row["preset"])
        cache = "contiguous" if row["page_size"] is None else "paged"
        groups.setdefault((row["seq"], cache, row["num_splits"]), []).append(
            (launch, row["steps"], row["ms"], decode_rows.predicted_ms(launch)))
    out = {}
    for key, rows in groups.items():
        steps = [s for _, s, _, _ in rows]
        slope = [np.polyfit(steps, [r[i] * 1e3 for r in rows], 1)[0] for i in (2, 3)]
        resident, _, programs = split_lone.model_step(rows[0][0])
        out[key] = (rows[0][0].block_q, resident, *slope, programs)
    return out


def split_lone_table():
    """The split kernel alone on its SM and two an SM: its step measured and gpusim's, before the lone copy rule and
    now."""
    from benchmarks import report_history
    with report_history.lone_split_before():
        before = split_lone_steps()
    lines = ["| query rows | padded rows | splits | programs an SM | measured, µs a step | gpusim before, µs a step of "
             "its price [÷ measured] | gpusim now [÷ measured] |", "|---|---|---|---|---|---|---|"]
    for (rows, cache, splits), (block_q, resident, measured, now, _) in sorted(split_lone_steps().items()):
        was = before[(rows, cache, splits)][3]
        lines.append(f"| {rows} | {block_q} | {splits} | {resident} | {measured:.2f} | {was:.2f} "
                     f"[{was / measured:.2f}] | {now:.2f} [{now / measured:.2f}] |")
    return "\n".join(lines)


def split_lone_others_table():
    """The H100's split_lone_others_h100.json (run 171): the split kernel at 4, 16 and 32 splits and the unsplit
    decode kernel (1), over pages and a contiguous cache, each step beside gpusim's on H100-SXM (no lone copy rate:
    the whole wait) and, at 16 and 32 splits over pages, the H200's (split_lone.json, run 170)."""
    return _others_table("split_lone_others_h100.json", "H100", "H100-SXM", split_lone_steps(), "H200 (run 170)")


def split_lone_others_h200_table():
    """The H200's split_lone_others.json (run 172): the same grid, each step beside gpusim's on H200-measured as it
    priced them at the run (report_history.unsplit_lone_before) and now, and the H100's (run 171)."""
    from benchmarks import report_history
    with report_history.unsplit_lone_before():
        before = split_lone_steps("split_lone_others.json")
    return _others_table("split_lone_others.json", "H200", "H200-measured",
                         split_lone_steps("split_lone_others_h100.json"), "H100 (run 171)", before)


def _others_table(name, gpu, preset, beside, beside_label, before=None):
    """A split_lone_others file's steps, gpusim's on `preset` [÷ measured] (with `before`: at the run, then now) and
    the same launch's step in `beside`."""
    model = (f"gpusim on {preset} at the run, µs [÷ measured] | now" if before else f"gpusim on {preset}, µs "
             "[÷ measured]")
    lines = [f"| query rows | padded rows | cache | splits | programs | programs an SM | {gpu}, µs a step | {model} | "
             f"{beside_label}, µs |", "|---|---|---|---|---|---|---|---|---|" + ("---|" if before else "")]
    for key, (block_q, resident, measured, now, programs) in sorted(split_lone_steps(name).items()):
        there = f"{beside[key][2]:.2f}" if key in beside else "–"
        was = f"{before[key][3]:.2f} [{before[key][3] / measured:.2f}] | " if before else ""
        lines.append(f"| {key[0]} | {block_q} | {key[1]} | {key[2]} | {programs} | {resident} | {measured:.2f} | {was}"
                     f"{now:.2f} [{now / measured:.2f}] | {there} |")
    return "\n".join(lines)


def _ratio_span(pairs):
    return f"{min(x for _, x in pairs):.2f}–{max(x for _, x in pairs):.2f}×"

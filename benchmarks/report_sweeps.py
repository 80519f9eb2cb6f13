"""docs/perf.md's sections on the H100's flagship sweeps (runs 222-225, benchmarks/run_h100_sweep.sh): the
FlashAttention-2 forward sweep (results/h100/bench.json), the training sweep (bench_bwd.json) and the decode sweep
(decode.json), each priced blind on H100-measured, and the serving loop (serving.json), each beside the H200's file
of the same name and against the prediction committed before its run; and a token of both GPUs' graphed serving
loops priced by gpusim (gpusim_course.inference.measured.token_s), worked out after the runs.

    python -m benchmarks.perf_report --write      # writes them with the rest of docs/perf.md
"""
import json
import statistics
from functools import lru_cache

import gpusim
from benchmarks import agreement
from benchmarks.report_gpus import H100, H200, H200_PRESET, PRESETS, _range
from benchmarks.report_kernels import serving_points
from gpusim import decode
from gpusim_course.inference.measured import serving_tokens, warm_cold

SWEEP_KERNELS = (("naive", "fp16"), ("flash2", "fp16"), ("hopper", "fp16"), ("hopper", "fp8"))


@lru_cache(maxsize=None)
def _timed(folder, name, fields):
    """A results file's timed rows, each keyed by its `fields`' values: {key: row}."""
    rows = json.loads((folder / name).read_text())["rows"]
    return {tuple(r[k] for k in fields): r for r in rows if "ms" in r and not r.get("error")}


def _priced(rows, keep, preset):
    """{key: gpusim's time on `preset` / the measured} for the rows whose key `keep` holds, each as agreement prices
    the H200's files' rows."""
    return {key: agreement.predicted_s(row, preset) / (row["ms"] * 1e-3) for key, row in rows.items() if keep(key)}


def sweep(folder=H100):
    """A bench.json's timed rows: {(provider, dtype, head_dim, causal, seq, batch, heads): row}."""
    return _timed(folder, "bench.json", ("provider", "dtype", "head_dim", "causal", "seq", "batch", "heads"))


def sweep_ratios(preset=PRESETS[0]):
    """{key: gpusim's time on `preset` / the measured} for the project's kernels' rows of the H100's sweep (run 222)."""
    return _priced(sweep(), lambda key: key[:2] in SWEEP_KERNELS, preset)


def _over(key, other):
    """The timed row `key`'s time over the same shape's by provider `other` (None where either did not run)."""
    rows, twin = sweep(), (*other, *key[2:])
    return rows[key]["ms"] / rows[twin]["ms"] if key in rows and twin in rows else None


def h100_over_h200(provider, dtype="fp16"):
    """{key: the H100's measured time / the H200's} for `provider`'s rows both sweeps hold."""
    h100, h200 = sweep(H100), sweep(H200)
    return {k: h100[k]["ms"] / h200[k]["ms"] for k in h100.keys() & h200.keys() if k[:2] == (provider, dtype)}


def _cell(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def sweep_table():
    """docs/perf.md's table of the H100's sweep: per shape, flash2's TFLOP/s, SDPA flash's time over flash2's and
    cuDNN's over the Hopper kernel's (above 1: the project's faster), the H100's time over the H200's, and gpusim
    (H100-measured) over the measured for each of the project's kernels."""
    ratios = sweep_ratios()
    lines = ["| d | causal | N | batch × heads | flash2 TFLOP/s | SDPA flash ÷ flash2 | cuDNN ÷ Hopper | "
             "H100 ÷ H200: naive / flash2 / Hopper | gpusim ÷ measured: naive / flash2 / Hopper / Hopper fp8 |",
             "|---|---|---|---|---|---|---|---|---|"]
    later = {p: h100_over_h200(p) for p in ("naive", "flash2", "hopper")}
    for key in sorted(k for k in sweep() if k[:2] == ("flash2", "fp16")):
        _, _, d, causal, seq, batch, heads = key
        speed = [_over(("sdpa_flash", "fp16", *key[2:]), ("flash2", "fp16")),
                 _over(("sdpa_cudnn", "fp16", *key[2:]), ("hopper", "fp16"))]
        h200 = " / ".join(_cell(later[p].get((p, "fp16", *key[2:]))) for p in ("naive", "flash2", "hopper"))
        model = " / ".join(_cell(ratios.get((p, dt, *key[2:]))) for p, dt in SWEEP_KERNELS)
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {seq:,} | {batch} × {heads} | "
                     f"{sweep()[key]['tflops']:.0f} | {_cell(speed[0])} | {_cell(speed[1])} | {h200} | {model} |")
    return "\n".join(lines)


def _share(values, low, high):
    values = list(values)
    return sum(low <= v <= high for v in values), len(values)


def _speedups(seq_from=2048):
    """SDPA flash's time over flash2's (above 1: flash2 the faster) on the H100's sweep, not causal, N >= seq_from."""
    keys = [k for k in sweep() if k[:2] == ("flash2", "fp16") and not k[3] and k[4] >= seq_from]
    return [r for k in keys if (r := _over(("sdpa_flash", "fp16", *k[2:]), k[:2])) is not None]


def sweep_outcome():
    """Run 222's three predictions (benchmarks/run_h100_sweep.sh), each as it came out."""
    ratios, sxm = sweep_ratios(), sweep_ratios(PRESETS[1])
    within, rows = _share(ratios.values(), 0.8, 1.2)
    kernels = [(f"{p} {dt}" if p == "hopper" else p, [r for k, r in ratios.items() if k[:2] == (p, dt)])
               for p, dt in SWEEP_KERNELS]
    per = ", ".join(f"{name} {_share(rs, 0.8, 1.2)[0]} of {len(rs)}" for name, rs in kernels)
    fast = h100_over_h200("flash2") | h100_over_h200("hopper") | h100_over_h200("hopper", "fp8")
    naive = h100_over_h200("naive")
    flash = _speedups()
    return "\n".join([
        f"1. gpusim on H100-measured: {within} of {rows} rows within 20% ({per}); median "
        f"{statistics.median(ratios.values()):.2f}, range {_range(list(ratios.values()))}. On the datasheet preset "
        f"H100-SXM: {_share(sxm.values(), 0.8, 1.2)[0]} of {len(sxm)}. Predicted: at least 90%.",
        f"2. The H100's time over the H200's: flash2 and the Hopper kernel {_range(list(fast.values()))} "
        f"({_share(fast.values(), 0.95, 1.15)[0]} of {len(fast)} in 0.95–1.15), naive {_range(list(naive.values()))} "
        f"({_share(naive.values(), 1.0, 1.5)[0]} of {len(naive)} in 1.0–1.5). Predicted: at least 80% of each.",
        f"3. flash2 over SDPA flash, not causal, N ≥ 2,048: {_range(flash)}× ({sum(r >= 1.0 for r in flash)} of "
        f"{len(flash)} at 1.0× or more). Predicted: every one."])


def training_sweep(folder=H100):
    """A bench_bwd.json's timed rows: {(provider, pass, head_dim, causal, seq): row}."""
    return _timed(folder, "bench_bwd.json", ("provider", "pass", "head_dim", "causal", "seq"))


def training_ratios(preset=PRESETS[0]):
    """{key: gpusim's time on `preset` / the measured} for flash2's and naive's rows of the H100's training sweep (run
    223), each pass as agreement prices the H200's."""
    return _priced(training_sweep(), lambda key: key[0] in ("flash2", "naive"), preset)


def training_table():
    """docs/perf.md's table of the H100's training sweep: per shape and pass, flash2's TFLOP/s, SDPA flash's time over
    flash2's (above 1: flash2 the faster), the H100's time over the H200's (results/h200/bench_bwd.json, whose flash2
    and naive rows are older kernels': runs 6 and 8), and gpusim (H100-measured) over the measured."""
    ratios, rows, h200 = training_ratios(), training_sweep(), training_sweep(H200)
    lines = ["| pass | d | causal | N | flash2 TFLOP/s | SDPA flash ÷ flash2 | H100 ÷ H200: flash2 / SDPA flash | "
             "gpusim ÷ measured: flash2 / naive |", "|---|---|---|---|---|---|---|---|"]
    for key in sorted((k for k in rows if k[0] == "flash2"), key=lambda k: (k[1] != "bwd", *k[2:])):
        at = {p: (p, *key[1:]) for p in ("flash2", "naive", "sdpa_flash")}
        sdpa = rows[at["sdpa_flash"]]["ms"] / rows[key]["ms"] if at["sdpa_flash"] in rows else None
        later = [rows[at[p]]["ms"] / h200[at[p]]["ms"] if at[p] in rows and at[p] in h200 else None
                 for p in ("flash2", "sdpa_flash")]
        _, pass_, d, causal, seq = key
        lines.append(f"| {pass_} | {d} | {'yes' if causal else 'no'} | {seq:,} | {rows[key]['tflops']:.0f} | "
                     f"{_cell(sdpa)} | {' / '.join(map(_cell, later))} | "
                     f"{_cell(ratios.get(key))} / {_cell(ratios.get(at['naive']))} |")
    return "\n".join(lines)


def training_outcome():
    """Run 223's two predictions (benchmarks/run_h100_sweep.sh backward), each as it came out."""
    ratios, rows = training_ratios(), training_sweep()
    per = ", ".join(f"{algo} {pass_} {_share(rs, 0.8, 1.2)[0]} of {len(rs)}" for algo in ("flash2", "naive")
                    for pass_ in ("bwd", "fwd+bwd")
                    if (rs := [r for k, r in ratios.items() if k[:2] == (algo, pass_)]))
    steps = [rows[("sdpa_flash", *k[1:])]["ms"] / r["ms"] for k, r in rows.items()
             if k[:2] == ("flash2", "fwd+bwd") and k[4] >= 2048 and ("sdpa_flash", *k[1:]) in rows]
    within, total = _share(ratios.values(), 0.8, 1.2)
    return "\n".join([
        f"4. gpusim on H100-measured: {within} of {total} rows within 20% ({per}); range "
        f"{_range(list(ratios.values()))}. Predicted: at least 85%.",
        f"5. flash2's training step over SDPA flash's, N ≥ 2,048: {_range(steps)}× "
        f"({sum(s >= 0.9 for s in steps)} of {len(steps)} at 0.9× or more). Predicted: every one."])


SDPA_DECODE = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn")


def decode_sweep(folder=H100):
    """A decode.json's timed rows: {(provider, batch, seq_kv): row}."""
    return _timed(folder, "decode.json", ("provider", "batch", "seq_kv"))


def decode_ratios(preset=PRESETS[0]):
    """{key: gpusim's time on `preset` / the measured} for the decode kernels' rows of the H100's sweep (run 224)."""
    return _priced(decode_sweep(), lambda key: key[0] in agreement.DECODE, preset)


def _against_sdpa(provider, batch, seq_kv):
    """The fastest SDPA backend's time over `provider`'s at one point (above 1: the project's kernel the faster)."""
    rows = decode_sweep()
    sdpa = [rows[(s, batch, seq_kv)]["ms"] for s in SDPA_DECODE if (s, batch, seq_kv) in rows]
    key = (provider, batch, seq_kv)
    return min(sdpa) / rows[key]["ms"] if sdpa and key in rows else None


def decode_sweep_table():
    """docs/perf.md's table of the H100's decode sweep: per batch and cache, split_kv's time, the fastest SDPA
    backend's over split_kv's and over the same kernel on SDPA's contiguous cache, the H100's split_kv time over the
    H200's, and gpusim (H100-measured) over the measured for the three launches of the project's kernel."""
    ratios, rows, h200 = decode_ratios(), decode_sweep(), decode_sweep(H200)
    lines = ["| batch | cache | split_kv µs | fastest SDPA ÷ split_kv / ÷ contiguous | H100 ÷ H200, split_kv | "
             "gpusim ÷ measured: split_kv / split_kv_1 / contiguous |", "|---|---|---|---|---|---|"]
    for key in sorted(k for k in rows if k[0] == "split_kv"):
        _, batch, seq_kv = key
        sdpa = " / ".join(_cell(_against_sdpa(p, batch, seq_kv)) for p in ("split_kv", "split_kv_contiguous"))
        later = rows[key]["ms"] / h200[key]["ms"] if key in h200 else None
        model = " / ".join(_cell(ratios.get((p, batch, seq_kv))) for p in agreement.DECODE)
        lines.append(f"| {batch} | {seq_kv:,} | {rows[key]['ms'] * 1e3:.1f} | {sdpa} | {_cell(later)} | {model} |")
    return "\n".join(lines)


def decode_sweep_outcome():
    """Run 224's three predictions (benchmarks/run_h100_sweep.sh decode), each as it came out."""
    ratios, rows, h200 = decode_ratios(), decode_sweep(), decode_sweep(H200)
    within, total = _share(ratios.values(), 0.8, 1.2)
    per = ", ".join(f"{p} {_share(rs, 0.8, 1.2)[0]} of {len(rs)}" for p in agreement.DECODE
                    if (rs := [r for k, r in ratios.items() if k[0] == p]))
    paged = [x for k in rows if k[0] == "split_kv" and k[2] >= 4096
             if (x := _against_sdpa(*k)) is not None]
    later = [rows[k]["ms"] / h200[k]["ms"] for k in rows if k[0] == "split_kv" and k[2] >= 16384 and k in h200]
    return "\n".join([
        f"6. gpusim on H100-measured: {within} of {total} rows within 20% ({per}); range "
        f"{_range(list(ratios.values()))}. Predicted: at least 85%.",
        f"7. split_kv over its paged cache against the fastest SDPA backend, from 4K: {_range(paged)}× "
        f"({sum(x >= 0.95 for x in paged)} of {len(paged)} at 0.95× or more). Predicted: every one.",
        f"8. split_kv's H100 time over the H200's, from 16K: {_range(later)}× ({_share(later, 1.3, 1.6)[0]} of "
        f"{len(later)} in 1.3–1.6). Predicted: at least 80%."])


def serving_ratios(folder=H100):
    """{(batch, seq_kv): (the plan eager over the fastest SDPA eager, the fastest SDPA graph over the plan graphed)}:
    a serving.json's two ratios per point (eager below 1 and graphed above 1: the project's the faster)."""
    ratios = {}
    for point, ms in serving_points(folder).items():
        eager = min(v for k, v in ms.items() if k.startswith("sdpa") and not k.endswith("graph"))
        graph = min(v for k, v in ms.items() if k.startswith("sdpa") and k.endswith("graph"))
        ratios[point] = ms["plan_eager"] / eager, graph / ms["plan_graph"]
    return ratios


def serving_outcome():
    """Run 225's two predictions (benchmarks/run_h100_sweep.sh serving), and issue 24's graphed target, as they came
    out."""
    ratios = serving_ratios()
    eager, graph = ([r[i] for r in ratios.values()] for i in (0, 1))
    short = [g for (batch, n), (_, g) in ratios.items() if batch == 1 and n <= 16384]
    target = [g >= (1.0 if n <= 16384 else 0.97) for (_, n), (_, g) in ratios.items()]
    return "\n".join([
        f"9. the plan eager over the fastest SDPA eager, per token: {_range(eager)}× ({sum(e <= 1.1 for e in eager)} "
        f"of {len(eager)} at 1.1× or less). Predicted: every point.",
        f"10. the fastest SDPA graph over the plan graphed: {_range(graph)}× ({sum(g >= 0.97 for g in graph)} of "
        f"{len(graph)} at 0.97× or more); at batch 1 up to 16K, {_range(short)}× ({sum(g >= 1.0 for g in short)} of "
        f"{len(short)} at 1.0× or more). Predicted: every point, and every one of those.",
        f"Issue 24's graphed target (1.0× at 4K–16K and below, 0.97× beyond): {sum(target)} of {len(target)} points."])


@lru_cache(maxsize=None)
def serving_priced(folder, preset):
    """{(batch, seq_kv): (the plan's splits, gpusim's ms per token on `preset`, the measured)} for a serving.json's
    graphed plan (plan_graph, priced by gpusim_course.inference.measured.token_s): the model on a use nothing in it
    was fitted to."""
    data = json.loads((folder / "serving.json").read_text())
    return {(t["batch"], t["cache tokens"]): (t["splits"], t["gpusim ms per token"], t["measured ms per token"])
            for t in serving_tokens(data, preset)}


def serving_priced_table():
    """docs/perf.md's table of gpusim's time per token in the graphed serving loop against both GPUs' measured."""
    h200, h100 = serving_priced(H200, H200_PRESET), serving_priced(H100, PRESETS[0])
    lines = ["| batch | cached tokens | splits | H200: measured ms per token | gpusim ÷ measured | H100: measured ms "
             "per token | gpusim ÷ measured |", "|---|---|---|---|---|---|---|"]
    for key in sorted(h200.keys() | h100.keys()):
        cells = [f"{v[2]:.3f} | {v[1] / v[2]:.2f}" if v else "- | -" for v in (h200.get(key), h100.get(key))]
        splits = (h200.get(key) or h100[key])[0]
        lines.append(f"| {key[0]} | {key[1]:,} | {splits} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def sweep_sentence():
    """README's line on the H100's own sweeps (runs 222-225): gpusim's blind score on each, flash2 against SDPA, the
    serving loop against SDPA's."""
    forward, training, decode = sweep_ratios(), training_ratios(), decode_ratios()
    within = [sum(abs(r - 1) <= 0.2 for r in ratios.values()) for ratios in (forward, training, decode)]
    eager, graph = ([r[i] for r in serving_ratios().values()] for i in (0, 1))
    return (f"- **The H100's own sweeps**, three priced blind on H100-measured (runs 222-225, "
            f"`benchmarks/run_h100_sweep.sh`): the FlashAttention-2 sweep (`results/h100/bench.json`) {within[0]} of "
            f"the {len(forward)} rows of the project's kernels within 20%, flash2 {_range(_speedups())}× SDPA flash's "
            f"speed (not causal, N ≥ 2,048); "
            f"the training sweep (`bench_bwd.json`) {within[1]} of {len(training)}; the decode sweep (`decode.json`) "
            f"{within[2]} of {len(decode)}, its misses at {_misses(decode)}; the serving loop (`serving.json`), the "
            f"plan {_range(eager)}× the fastest SDPA eager time per token, graphed {_range(graph)}× the fastest SDPA "
            f"graph's speed (`docs/perf.md`, \"The FlashAttention-2 sweep on the H100, blind\" and the sections after "
            f"it).")


def _misses(ratios):
    """Where a decode sweep's rows outside 20% sit: each batch with its caches' range."""
    caches = {}
    for _, batch, seq_kv in (k for k, r in ratios.items() if abs(r - 1) > 0.2):
        caches.setdefault(batch, set()).add(seq_kv)
    return "; ".join(f"batch {b}, {min(c):,}–{max(c):,} tokens" for b, c in sorted(caches.items()))


@lru_cache(maxsize=None)
def short_cache(folder=H100, preset=PRESETS[0]):
    """A short_cache.json (run 226) per launch, as the course pairs its timings (warm_cold: µs cold and warm), with
    its steps and gpusim's µs on `preset` as the model prices it now: {(batch, seq_kv, num_splits): row}."""
    data = json.loads((folder / "short_cache.json").read_text())
    raw = {(r["batch"], r["seq_kv"], r["num_splits"]): r for r in data["rows"]}
    out = {}
    for launch in warm_cold(data):
        row = raw[launch["batch"], launch["cache tokens"], launch["splits"]]
        price = gpusim.simulate("split_kv", **decode.launch_options(row), block_kv=row["block_kv"], gpu=preset)
        out[launch["batch"], launch["cache tokens"], launch["splits"]] = launch | {
            "steps": row["steps"], "gpusim µs": price.predicted_time_s * 1e6}
    return out


def short_cache_table():
    """docs/perf.md's table of run 226: each launch cold and warm, and gpusim's price over the cold."""
    lines = ["| batch | cached tokens | splits | steps a program | K and V, MiB | cold, µs | warm, µs | warm ÷ cold | "
             "gpusim, µs [÷ cold] |", "|---|---|---|---|---|---|---|---|---|"]
    for (batch, n, splits), v in short_cache().items():
        lines.append(f"| {batch} | {n:,} | {splits} | {v['steps']} | {v['K and V MiB']:.1f} | {v['cold µs']:.2f} | "
                     f"{v['warm µs']:.2f} | {v['warm / cold']:.2f} | {v['gpusim µs']:.2f} "
                     f"[{v['gpusim µs'] / v['cold µs']:.2f}] |")
    return "\n".join(lines)


def short_cache_outcome():
    """Run 226's three predictions (docs/perf.md, "Why the short caches miss: the prediction"), as they came out."""
    lone = {v["steps"]: v for (b, n, s), v in short_cache().items() if (b, s) == (1, 16) and n % 1024 == 0}
    second, second_model = (lone[2][k] - lone[1][k] for k in ("cold µs", "gpusim µs"))
    slope, model = ((lone[8][k] - lone[4][k]) / 4 for k in ("cold µs", "gpusim µs"))
    warm = {(b, n): v["warm / cold"] for (b, n, s), v in short_cache().items() if (b, s) != (1, 16)}
    fits = [r for (b, n), r in warm.items() if n <= 8192]
    past = [r for (b, n), r in warm.items() if n > 8192]
    return "\n".join([
        f"1. The second step, cold: {second:.2f} µs (gpusim {second_model:.2f}). Predicted: under 0.6 µs. From 4 to 8 "
        f"steps, {slope:.2f} µs a step against gpusim's {model:.2f} ({model / slope:.2f}×). Predicted: within 15%.",
        f"2. Warm over cold at batch 1, 4K and batch 8, 1K (16 and 32 MiB): {_range(fits)}×; at batch 1, 16K (64 MiB): "
        f"{_range(past)}×. Predicted: at most 0.85× and 0.95–1.05×.",
        f"3. gpusim over the measured at batch 1, 1,024 tokens, cold: {lone[1]['gpusim µs'] / lone[1]['cold µs']:.2f}×. "
        f"Predicted: 1.4–1.8× on an H100.",
        "Not predicted: serving.json's graphed layer (its time a token over 32) over the warm launch one token past "
        "the power of two, " + ", ".join(f"batch {b} at {n:,} {r:.2f}×" for (b, n), r in serving_beside_warm().items())
        + "."])


def serving_beside_warm(folder=H100):
    """{(batch, seq_kv): serving.json's graphed time a layer (its time a token over its layers) / short_cache.json's
    warm launch one token past seq_kv at the plan's splits}: the serving loop's layers as the warm launch."""
    data = json.loads((folder / "serving.json").read_text())
    layer = {(r["batch"], r["seq_kv"]): r["ms_per_token"] * 1e3 / r["layers"] for r in data["rows"]
             if r["provider"] == "plan_graph" and r.get("ms_per_token")}
    return {(b, n - 1): layer[b, n - 1] / v["warm µs"] for (b, n, s), v in short_cache(folder).items()
            if n % 2 and (b, n - 1) in layer}

"""The claims of the scorecard (scorecard.verdicts), one function each: the claim as written, gpusim's
prediction computed now, the H200 measurement read from results/h200/*.json where one exists, and the
verdict by the scorecard's rules. `rows(results)` evaluates them all (those gpusim alone decides are in
claims_model.py); `results` is the folder of the measurements (results/h200 from the repository
root, ../results/h200 from notebooks/).
"""
import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

import gpusim

from .. import evidence
from ..hierarchy import model as hierarchy_model
from ..inference import measured as inference
from ..measurements import WRITE_S_P, fastest, read_results, timed_by_seq
from ..practice import sdpa
from ..practice.measured import hopper_rows
from ..softmax import bits
from .claims_model import (BLOG, PREDICT_GPU, SUMMARY, block_rule, hbm_reads, kv_linear, kv_waste, matmul_share,
                           parallelism, ratio_span, s_matrix, ten_x, waiting_share, warp_split)
from .verdicts import SLOPE, Judged, Obs, Row, about, each, interval, noting, slope, with_evidence

GROUPS = [(64, False), (64, True), (128, False), (128, True)]
N_MAX = 32768  # the longest N where standard attention ran


def _group(d, causal):
    return f"d={d}{', causal' if causal else ''}"


def _bench(results):
    return read_results(Path(results) / "bench.json")["rows"]


def _pairs(rows, slow, fast, dtype="fp16"):
    """(d, causal, seq, slow row, fast row) where both providers ran, N <= N_MAX."""
    out = []
    for d, causal in GROUPS:
        a, b = (timed_by_seq(rows, p, dtype, d, causal) for p in (slow, fast))
        out += [(d, causal, n, a[n], b[n]) for n in sorted(a.keys() & b.keys()) if n <= N_MAX]
    return out


def _predicted_ratio(pairs, slow, fast, key="predicted_time_s"):
    """gpusim's slow / fast ratio at the shapes of the measured pairs."""
    values = []
    for d, causal, n, row, _ in pairs:
        shape = dict(seq=n, head_dim=d, batch=row["batch"], heads=row["heads"], causal=causal, gpu=PREDICT_GPU)
        a, b = (getattr(gpusim.simulate(algo, **shape), key) for algo in (slow, fast))
        values.append(a / b)
    return values


def _ratios(results, measured, modelled, field="ms", key="predicted_time_s"):
    """Measured slow / fast ratios of `field` for the provider pair `measured` (bench.json), as observations,
    and gpusim's ratios of `key` for the algorithm pair `modelled` at the same shapes."""
    pairs = _pairs(_bench(results), *measured)
    obs = [Obs(s[field] / f[field], f"N={n:,}", _group(d, c)) for d, c, n, s, f in pairs]
    return obs, _predicted_ratio(pairs, *modelled, key)


def speedup(results):
    obs, predicted = _ratios(results, ("torch_naive", "sdpa_flash"), ("naive", "flash2"))
    return Row("FlashAttention: 2-4x faster.", BLOG, f"naive's time / flash2's: {ratio_span(predicted)}",
               f"PyTorch's standard attention's time / SDPA flash's: {ratio_span([o.value for o in obs])}",
               interval(obs, 2, 4, "2-4x"), "range", "05_flash1_vs_flash2.ipynb",
               "Predicted time and speedup against sequence length")


def memory(results):
    obs, predicted = _ratios(results, ("torch_naive", "sdpa_flash"), ("naive", "flash2"), "peak_bytes",
                             "hbm_peak_bytes")
    return Row("5-20x less memory.", BLOG, f"peak footprint, naive's / flash2's: {ratio_span(predicted)}",
               f"peak memory, PyTorch's standard attention's / SDPA flash's: {ratio_span([o.value for o in obs])}",
               interval(obs, 5, 20, "5-20x"), "range", "02_standard_attention.ipynb",
               "Memory: when 128K tokens cannot work")


def fa2_over_fa1(results):
    obs, predicted = _ratios(results, ("flash1", "flash2"), ("flash1", "flash2"))
    return Row("FlashAttention-2 is ~2x faster than FlashAttention-1.", f"{BLOG}, {SUMMARY}",
               f"flash1's time / flash2's: {ratio_span(predicted)}",
               f"the project's flash1 kernel's time / its flash2's: {ratio_span([o.value for o in obs])}",
               noting(interval(obs, *about(2), "~2x (1.6-2.5x)"),
                      "the project's flash1 is the paper's Algorithm 1 as written: one program per (batch, head), "
                      "O, l and m to HBM at every K/V step, so at long N its few programs leave most SMs idle; the "
                      "gap there is that kernel's grid, and a FlashAttention-1 that splits Q blocks over programs "
                      "would close part of it"),
               "~x: within 1.25x", "05_flash1_vs_flash2.ipynb", "FlashAttention-2 against FlashAttention-1: is it 2x?")


def linear_memory(results):
    rows = _bench(results)
    checks, measured = [], []
    for provider, k in (("torch_naive", 2), ("sdpa_flash", 1)):
        per_seq = timed_by_seq(rows, provider, "fp16", 64, False)
        seqs = sorted(per_seq)
        fitted = slope(seqs, [per_seq[n]["peak_bytes"] / per_seq[n]["batch"] for n in seqs])
        measured.append(f"{provider} N^{fitted:.2f}")
        checks.append((f"{provider}'s memory per sequence grows as N^{fitted:.2f} (claim: N^{k})",
                       abs(fitted - k) <= SLOPE))
    seqs = [2**p for p in range(10, 17)]
    predicted = [slope(seqs, [gpusim.simulate(a, seq=n, head_dim=64).hbm_peak_bytes for n in seqs])
                 for a in ("naive", "flash2")]
    return Row("Reduces memory complexity from O(n^2) to O(n).", SUMMARY,
               f"peak footprint of one head: naive N^{predicted[0]:.2f}, flash2 N^{predicted[1]:.2f}",
               "peak memory per sequence (d=64): " + ", ".join(measured), each(checks),
               "O(n^k): fitted exponent within 0.25", "02_standard_attention.ipynb",
               "Memory: when 128K tokens cannot work")


def waiting(results):
    ncu = read_results(Path(results) / "ncu.json")["rows"]
    bandwidth = read_results(Path(results) / "ceilings.json")["copy_bytes_per_s"]
    naive = ("qk", "softmax", "pv")
    obs, predicted = [], []
    for n, d in sorted({(r["seq"], r["head_dim"]) for r in ncu if r["kernel"] in naive and not r["causal"]}):
        picked = [r for r in ncu if r["kernel"] in naive and (r["seq"], r["head_dim"], r["causal"]) == (n, d, False)]
        moved = sum(r["measured"] for r in picked if r["quantity"] in ("dram_read_bytes", "dram_write_bytes"))
        seconds = sum(r["measured"] for r in picked if r["quantity"] == "time_s")
        obs.append(Obs(moved / bandwidth / seconds, f"N={n:,}", f"d={d}"))
        batch, heads = gpusim.fa2_shape(n, d)
        r = gpusim.simulate("naive", seq=n, head_dim=d, batch=batch, heads=heads, gpu=PREDICT_GPU)
        predicted.append(waiting_share(r))
    return Row("Standard attention wastes 90% of its time waiting for data to move between memory chips.", BLOG,
               f"memory time over predicted time on {PREDICT_GPU}, at the profiled shapes: "
               f"{ratio_span(predicted, '{:.0%}')}",
               f"DRAM bytes at the copy bandwidth over the kernels' time (Nsight): "
               f"{ratio_span([o.value for o in obs], '{:.0%}')}",
               interval(obs, *about(0.9), "~90% (72-100%)", "{:.0%}"), "~x: within 1.25x",
               "02_standard_attention.ipynb", "Where the time goes")


MODELS = {"bert": ("BERT", 512, False, 2.2, (100, 45)), "gpt2": ("GPT-2", 1024, True, 2.9, (180, 62))}


def _attention_alone(rows):
    """gpusim's naive time / flash2's at the claim's two shapes (the attention layers alone), as text."""
    shown = []
    for name, seq, causal, _, _ in MODELS.values():
        slow = timed_by_seq(rows, "torch_naive", "fp16", 64, causal)[seq]
        shape = dict(seq=seq, head_dim=64, batch=slow["batch"], heads=slow["heads"], causal=causal, gpu=PREDICT_GPU)
        naive, flash = (gpusim.simulate(algo, **shape).predicted_time_s for algo in ("naive", "flash2"))
        shown.append(f"{name} {naive / flash:.1f}x")
    return ("attention alone, naive's time / flash2's: " + ", ".join(shown)
            + " (gpusim models attention, not whole models)")


def model_table(results):
    """The claim is about whole models, end to end: judged on end_to_end.json (eager attention over SDPA's, the
    ratio only: absolute times depend on the GPU and the batch, which the claim does not name)."""
    ratios = evidence.end_to_end_ratios(results)
    checks, measured = [], []
    for fam, (name, seq, _, claimed, (slow_ms, fast_ms)) in MODELS.items():
        mine = [r for r in ratios if r["family"] == fam]
        mine = [r for r in mine if r["seq"] == seq] or mine  # the claim's length where it was measured
        lo, hi = about(claimed)
        for r in mine:
            at = f"{r['model']} N={r['seq']:,} batch {r['batch']} {r['pass']}"
            measured.append(f"{at}: eager {r['eager_ms']:.1f} ms, SDPA {r['sdpa_ms']:.1f} ms ({r['ratio']:.2f}x)")
            checks.append((f"{at}: {r['ratio']:.2f}x against {name}'s {slow_ms} -> {fast_ms} ms = {claimed}x",
                           lo <= r["ratio"] <= hi))
    missing = [name for fam, (name, *_) in MODELS.items() if not any(r["family"] == fam for r in ratios)]
    if not checks:
        errors = evidence.end_to_end_errors(results)
        judged = Judged("not testable here", "the claim is about whole models end to end, which gpusim does not "
                        "model; no model was timed with eager and SDPA attention here (end_to_end.json"
                        + (f": {errors[0][:120]}" if errors else " is not there") + ").")
    else:
        judged = noting(each(checks), "Only the eager/SDPA ratio is judged (~x: within 1.25x): the absolute "
                        "milliseconds depend on the GPU and the batch, which the claim does not name"
                        + (f"; {', '.join(missing)} not measured here" if missing else ""))
    return Row("BERT (seq 512): 100 ms -> 45 ms, 2.2x; GPT-2 (seq 1K): 180 ms -> 62 ms, 2.9x.", BLOG,
               _attention_alone(_bench(results)), "; ".join(measured) or evidence.NOT_MEASURED, judged,
               "~x: the whole model's eager / SDPA time within 1.25x", "06_real_kernels.ipynb",
               "SDPA in practice: which backend runs")


def kitchen(results):
    ceilings = read_results(Path(results) / "ceilings.json")
    numbers = hierarchy_model.KITCHEN
    matches = {name: [g.name for g in gpusim.PRESETS.values() if get(g) and about(x)[0] <= get(g) <= about(x)[1]]
               for name, (x, get) in numbers.items()}
    one = [g for g in gpusim.PRESETS if all(g in m for m in matches.values())]
    checks = [(f"{name}: {', '.join(m) or 'no preset'}", bool(m)) for name, m in matches.items()]
    judged = each(checks)
    if judged.verdict == "holds" and not one:
        judged = Judged("holds under conditions", f"each number is some GPU's ({judged.reason[:-1]}), but no one "
                                                  f"GPU has all four.")
    return Row("SRAM (on-chip) ~20 MB, ~19 TB/s; HBM (off-chip) ~80 GB, ~3 TB/s.", BLOG,
               "presets within 1.25x: " + "; ".join(c[0] for c in checks),
               f"H200: {ceilings['hbm_bytes'] / 1e9:.0f} GB ({ceilings['hbm_bytes'] / 2**30:.1f} GiB) of HBM at {ceilings['copy_bytes_per_s'] / 1e12:.2f} TB/s "
               f"(copy)", judged, "~x: within 1.25x, one GPU", "01_memory_hierarchy.ipynb", "Motivation: the kitchen")


@lru_cache(maxsize=1)
def _bit_comparisons():
    """Notebook 3's measurements (its sample, bits.ROWS x bits.ROW_LEN), made once a process: two rows judge them."""
    return [bits.attention_bits(), bits.bit_comparison(np.float32)]


# Where the two bit rows' verdicts come from: the H200 column is context, not the evidence
BITS_HERE = ("judged on gpusim's float32 runs on this machine's CPU (notebook 3); bits on a GPU not measured: the "
             "H200 column's errors against float64 differ, so those kernels' bits differ too")


def _measured_errors(results):
    rows = _bench(results)
    at = {p: timed_by_seq(rows, p, "fp16", 64, False)[512]["rel_err"] for p in ("torch_naive", "sdpa_flash")}
    return ", ".join(f"{p} {e:.2e}" for p, e in at.items()) + " relative error against float64 at N=512"


def bit_identical(results):
    comparisons = _bit_comparisons()
    checks = [(f"{c['label']}: {c['equal_fraction']:.1%} of elements bit-identical", c["equal_fraction"] == 1)
              for c in comparisons]
    return Row("The final result is bit-for-bit identical to standard attention.", BLOG,
               "; ".join(c[0] for c in checks), _measured_errors(results), noting(each(checks), BITS_HERE),
               "every element the same bits", "03_online_softmax.ipynb", "Is it bit-for-bit identical?")


def differs(results, units=64):
    comparisons = _bit_comparisons()
    checks = [(f"{c['label']}: differs in {1 - c['equal_fraction']:.1%} of elements, by at most "
               f"{c['max_u']:.0f} u of its largest value", 0 < 1 - c["equal_fraction"] and c["max_u"] <= units)
              for c in comparisons]
    return Row("May produce results that differ from standard attention at floating-point precision.", SUMMARY,
               "; ".join(c[0] for c in checks), _measured_errors(results), noting(each(checks), BITS_HERE),
               f"differs, by at most {units} u of the largest value (fp32: u = 2^-24; not ULPs)",
               "03_online_softmax.ipynb", "Is it bit-for-bit identical?")


def _probe(results):
    """The GPU's probe rows (results/<gpu>/sdpa_backends.json) if it was run there, else []."""
    path = Path(results) / "sdpa_backends.json"
    return [r for r in read_results(path)["rows"] if r["device"] == "cuda"] if path.exists() else []


def _meets_conditions(pick, runs):
    """Whether a measured input meets the summary's conditions: CUDA on sm_80 or newer, fp16/bf16, a head
    dimension flash takes (what ran when forced, sdpa_backends.json; else up to 256), no mask tensor."""
    row = pick | {"device": "cuda", "sm": pick.get("sm") or "90"}
    return sdpa.source_conditions(row) and runs.get(pick["head_dim"], True)


def _inputs(picks):
    def mask(p):
        return f" {p['mask']}" if p["mask"] != "none" else " causal" if p["causal"] else ""
    return ", ".join(f"{p['dtype']} d={p['head_dim']}{mask(p)}" + (f" N={p['seq']:,}" if p.get("seq") else "")
                     for p in picks)


def _cpu_picks():
    """What PyTorch picks on this machine's CPU, where torch is installed (Linux, in this project)."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed here (the project installs it on Linux), so nothing was probed on this CPU"
    return "on this machine's CPU PyTorch picks " + ", ".join(sorted({r["picked"] for r in sdpa.probe("cpu",
                                                                                                     sdpa.CASES[:3])}))


def sdpa_conditions(results):
    """What PyTorch picks unforced (sdpa_pick.json's kernel names, else the dispatcher's choice recorded in
    sdpa_backends.json) for the inputs that meet the stated conditions: does it select flash?"""
    picks, runs = evidence.sdpa_picks(results), evidence.flash_runs(results)
    cpu = "no gpusim prediction (PyTorch's dispatcher is not modelled); " + _cpu_picks()
    claim = ("PyTorch selects FlashAttention when conditions permit (CUDA, fp16/bf16, supported head dimensions; "
             "Ampere or newer).")
    rule, where = "flash picked for every input meeting the conditions", ("06_real_kernels.ipynb",
                                                                           "SDPA in practice: which backend runs")
    if not picks:
        return Row(claim, SUMMARY, cpu, evidence.NOT_MEASURED, Judged(
            "not testable here",
            "what SDPA picks on a GPU was not measured here (sdpa_pick.json, sdpa_backends.json)."),
            rule, *where)
    meets = [p for p in picks if _meets_conditions(p, runs)]
    by_pick = {}
    for p in meets:
        by_pick.setdefault(p["picked"], []).append(p)
    checks = [(f"{name} picked for {len(ps)} of {len(meets)} inputs meeting the conditions ({_inputs(ps)})",
               name == "flash") for name, ps in sorted(by_pick.items(), key=lambda kv: kv[0] != "flash")]
    outside = [p for p in picks if p not in meets]
    note = [f"outside the conditions it picked {', '.join(sorted({p['picked'] for p in outside}))}"] if outside else []
    source = picks[0]["source"]
    note.append(f"measured on the H200 (sm_90, {source}); Ampere (sm_80) not measured here")
    judged = noting(_every_input(checks, by_pick), "; ".join(note))
    counts = {}
    for p in picks:
        counts[p["picked"]] = counts.get(p["picked"], 0) + 1
    measured = (f"sm_90 ({source}): SDPA picks " + ", ".join(f"{k} for {v}" for k, v in sorted(counts.items()))
                + f" of {len(picks)} inputs")
    return Row(claim, SUMMARY, cpu, measured, judged, rule, *where)


CUDNN_FIRST = ("PyTorch's dispatcher puts cuDNN's kernel (a fused, FlashAttention-style kernel of its own, not the "
               "FLASH_ATTENTION backend the claim names) first on sm_90 and sm_100 with a recent cuDNN, and "
               "FlashAttention first on the other GPUs from sm_80 (check_prefer_cudnn_attention and priority_order in "
               "PyTorch's sdp_utils.cpp, read, not measured here)")


def _every_input(checks, by_pick):
    """sdpa_conditions' verdict by its rule: flash for every input meeting the conditions. Where the others were all
    cuDNN's, which PyTorch prefers on Hopper by design, it holds on the other GPUs only (under conditions); any other
    backend picked is wrong as written (each() would say "holds under conditions" wherever flash was picked once)."""
    if all(good for _, good in checks):
        return each(checks)
    parts = "; ".join(part for part, _ in checks)
    hopper = all(str(p.get("sm") or "90") in ("90", "100") for p in by_pick.get("cudnn", ()))
    if set(by_pick) <= {"flash", "cudnn"} and hopper:
        return Judged("holds under conditions", f"not on Hopper: {parts}. {CUDNN_FIRST}.")
    return Judged("wrong", f"wrong as written: {parts}.")


def mask_limits(results):
    probe = [r for r in _probe(results) if r["mask"] in ("boolean", "additive")]
    if probe:
        checks = [(f"a {r['mask']} mask: flash {'runs' if r['FLASH_ATTENTION']['ran'] else 'refused'}",
                   not r["FLASH_ATTENTION"]["ran"]) for r in probe]
        measured = "; ".join(c[0] for c in checks)
    else:
        masks = ("none", "causal", "bottom-right causal")
        checks = [("the project's kernels and gpusim's schedules take only " + ", ".join(masks) + "; a general "
                   "mask would be N x N more bytes to read", True)]
        measured = ""
    return Row("FlashAttention has constraints on attention mask patterns.", SUMMARY,
               "tiles are skipped or masked by the causal rule only", measured, each(checks),
               "a mask tensor is refused", "06_real_kernels.ipynb", "SDPA in practice: which backend runs")


FA3_STAND_IN = ("FlashAttention-3 itself did not run here: the project's Hopper kernel (FlashAttention-2's tiles with "
                "FlashAttention-3's techniques as far as Triton expresses them, docs/hopper.md) stands in for it and "
                "SDPA's FlashAttention-2 for FA-2, on an H200 (the H100's dense peak, more HBM bandwidth)")


FA3_FASTEST = ("FlashAttention-3 itself did not run here: at each N the faster of the two Hopper kernels measured, "
               "SDPA's cuDNN kernel (a fused attention kernel for Hopper) and the project's Hopper kernel, "
               "stands in for it, as the rules ask (the best kernel, not only the project's own), and SDPA's "
               "FlashAttention-2 for FA-2, on an H200 (the H100's dense peak, more HBM bandwidth)")


def fa3_fp16(results):
    """Judged on the faster Hopper kernel measured at each N (cuDNN's or the project's), as fa3_utilization is."""
    rows = hopper_rows(_bench(results), head_dim=128, causal=False, gpu=PREDICT_GPU)
    obs = [Obs(max(r["speed vs SDPA flash"], r["speed vs SDPA flash"] / r["speed vs SDPA cuDNN"]), f"N={r['N']:,}",
               "d=128") for r in rows]
    hopper = [r["speed vs SDPA flash"] for r in rows]
    predicted = _fa3_predicted(rows, "fp16")
    return Row("FA-3 on H100, FP16: ~1.5x faster than FA-2.", BLOG,
               f"flash2's time / hopper's: {ratio_span(predicted)}",
               f"SDPA flash's time / the faster Hopper kernel's (cuDNN's or the project's): "
               f"{ratio_span([o.value for o in obs])}; the project's Hopper kernel's alone: {ratio_span(hopper)}",
               noting(interval(obs, *about(1.5), "~1.5x (1.2-1.9x)"), FA3_FASTEST), "~x: within 1.25x",
               "07_hopper_and_beyond.ipynb", "Measured: the project's Hopper kernel on the H200")


def fa3_fp8(results):
    rows = hopper_rows(_bench(results), head_dim=128, causal=False, gpu=PREDICT_GPU)
    obs = [Obs(r["speed vs SDPA flash"] * r["fp8 speed vs fp16"], f"N={r['N']:,}", "d=128") for r in rows]
    predicted = _fa3_predicted(rows, "fp8")
    return Row("FA-3 on H100, FP8: ~2x faster than FA-2.", BLOG,
               f"flash2 fp16's time / hopper fp8's: {ratio_span(predicted)}",
               f"SDPA flash's time / the Hopper kernel's in fp8: {ratio_span([o.value for o in obs])}",
               noting(interval(obs, *about(2), "~2x (1.6-2.5x)"), FA3_STAND_IN + " (no fp8 kernel of cuDNN's was "
                      "measured)"), "~x: within 1.25x",
               "07_hopper_and_beyond.ipynb", "Measured: the project's Hopper kernel on the H200")


def _fa3_predicted(rows, dtype):
    out = []
    for r in rows:
        batch, heads = gpusim.fa2_shape(r["N"], 128)
        shape = dict(seq=r["N"], head_dim=128, batch=batch, heads=heads, gpu=PREDICT_GPU)
        out.append(gpusim.simulate("flash2", **shape).predicted_time_s /
                   gpusim.simulate("hopper", dtype=dtype, **shape).predicted_time_s)
    return out


PROVIDERS = {"sdpa_cudnn": "SDPA's cuDNN kernel", "sdpa_flash": "SDPA's FlashAttention-2",
             "hopper": "the project's Hopper kernel", "flash2": "the project's FlashAttention-2 kernel"}


def best_rate(rows, provider=None):
    """The bench.json row with the highest fp16/bf16 TFLOP/s (of one provider, or of any)."""
    timed = [r for r in rows if r.get("tflops") and r["dtype"] in ("fp16", "bf16")
             and (provider is None or r["provider"] == provider)]
    return max(timed, key=lambda r: r["tflops"], default=None)


def _band_cases(rows, peak, low):
    """How near the verdict stands to the band's edge: the best fp16 share, and the cases (fp16 or bf16) that reach
    the band's lower end, with their dtypes and kernels."""
    timed = [r for r in rows if r.get("tflops") and r["dtype"] in ("fp16", "bf16")]
    fp16 = max((r["tflops"] for r in timed if r["dtype"] == "fp16"), default=None)
    inside = [r for r in timed if r["tflops"] * 1e12 / peak >= low]
    dtypes, kernels = (" or ".join(sorted({name(r[key]) for r in inside}))
                       for key, name in (("dtype", str), ("provider", lambda p: PROVIDERS.get(p, p))))
    best16 = "" if fp16 is None else f"; in fp16 at best {fp16 * 1e12 / peak:.0%}"
    return best16 + (f"; {len(inside)} cases reach the band's {low:.0%}, all {dtypes} on {kernels}" if inside else
                     f"; no case reaches the band's {low:.0%}")


def fa3_utilization(results, datasheet="H200"):
    """Judged on the best kernel measured (FlashAttention-3 itself did not run here): its fp16/bf16 TFLOP/s
    against the datasheet's dense fp16 matmul peak."""
    rows = _bench(results)
    peak = gpusim.get_gpu(datasheet).fp16_matmul_flops_per_s
    best, hopper = best_rate(rows), best_rate(rows, "hopper")
    share = best["tflops"] * 1e12 / peak
    batch, heads = gpusim.fa2_shape(16384, 128)
    r = gpusim.simulate("hopper", seq=16384, head_dim=128, batch=batch, heads=heads, gpu=datasheet)
    predicted = gpusim.nominal_flops(batch, heads, 16384, 128) / r.predicted_time_s / peak
    at = f"{best['dtype']}, d={best['head_dim']}{', causal' if best['causal'] else ''}, N={best['seq']:,}"
    measured = (f"best kernel measured: {PROVIDERS.get(best['provider'], best['provider'])}, {best['tflops']:.0f} "
                f"TFLOP/s ({at}) = {share:.0%} of the datasheet's dense {peak / 1e12:.0f} TFLOP/s"
                + (f"; the project's Hopper kernel at best {hopper['tflops'] * 1e12 / peak:.0%} ({hopper['dtype']})"
                   if hopper else "")
                + _band_cases(rows, peak, about(0.75)[0]))
    judged = noting(interval([Obs(share, "best")], *about(0.75), "~75% (60-94%)", "{:.0%}"),
                    "FlashAttention-3 itself did not run here: the fastest attention kernel measured on the H200 "
                    "stands in for it, as the most a Hopper attention kernel reached here"
                    + ("" if best["provider"] == "hopper" else " (the speed-up rows' stand-in, the project's Hopper "
                       "kernel, reached less: its share is in the measured column)"))
    return Row("FA-3 utilization: up to 75% of theoretical peak FLOPS.", BLOG,
               f"hopper fp16 at N=16,384 on the {datasheet} (datasheet) preset: {predicted:.0%} of "
               f"{peak / 1e12:.0f} TFLOP/s", measured, judged,
               "up to x: the best kernel measured within 1.25x", "07_hopper_and_beyond.ipynb",
               "Measured: the project's Hopper kernel on the H200")


def _rank_correlation(xs, ys):
    return float(np.corrcoef(np.argsort(np.argsort(xs)), np.argsort(np.argsort(ys)))[0, 1])


TREND = 0.8  # a trend ("the longer, the bigger") holds in a group whose values' rank correlation with N reaches it


def longer_bigger(results):
    rows = _bench(results)
    obs, predicted = [], []
    for d, causal in GROUPS:
        pairs = [p for p in _pairs(rows, "torch_naive", "sdpa_flash") if p[:2] == (d, causal)]
        seqs = [n for _, _, n, _, _ in pairs]
        obs.append(Obs(_rank_correlation(seqs, [s["ms"] / f["ms"] for *_, s, f in pairs]), "", _group(d, causal)))
        predicted.append(_rank_correlation(seqs, _predicted_ratio(pairs, "naive", "flash2")))
    return Row("The longer the sequence, the bigger the speedup.", BLOG,
               f"rank correlation of flash2's speedup with N: {ratio_span(predicted, '{:+.2f}')}",
               "rank correlation of SDPA flash's speedup with N: " + ", ".join(f"{o.group} {o.value:+.2f}" for o in obs),
               interval(obs, TREND, 1.0, f"a rank correlation of {TREND} or more", "{:+.2f}"), "speedup rises with N",
               "05_flash1_vs_flash2.ipynb", "Predicted time and speedup against sequence length")


def _fastest_tiled(by_provider):
    """{length: the fastest row} over the providers of {provider: {length: row}} that do not write S and P (the
    FlashAttention kind: the project's kernels, SDPA's flash, efficient and cuDNN backends)."""
    return fastest({p: timed for p, timed in by_provider.items() if p not in WRITE_S_P})


def _benefits(by_provider):
    """{length: (PyTorch's standard attention's time over the fastest tiled kernel's, its row, that kernel's row)}."""
    fastest = _fastest_tiled(by_provider)
    return {n: (row["ms"] / fastest[n]["ms"], row, fastest[n]) for n, row in by_provider["torch_naive"].items()
            if n in fastest}


def _prefill_predicted(row):
    """gpusim's naive time / flash2's at a prefill row's shape (bench.json)."""
    shape = dict(seq=row["seq"], batch=row["batch"], heads=row["heads"], gpu=PREDICT_GPU, **inference.PREFILL)
    return gpusim.simulate("naive", **shape).predicted_time_s / gpusim.simulate("flash2", **shape).predicted_time_s


def _decode_predicted(decode, seq_kv, batch):
    """gpusim's naive time / the split-KV kernel's at decode.json's launch, as notebook 8's table prices it."""
    _, flash, naive = inference.decode_pair(decode, batch, seq_kv, gpusim.get_gpu(PREDICT_GPU))
    return naive.predicted_time_s / flash.predicted_time_s


def _where_gpusim_disagrees(obs, predicted):
    """Which side of 1 gpusim's prefill / decode ratio falls, where it is not the measurement's side."""
    sides = {}
    for o, p in zip(obs, predicted):
        if (o.value > 1) != (p > 1):
            sides.setdefault("prefill" if p > 1 else "decode", []).append((o.at, p))
    if not sides:
        return "the predicted column (gpusim's) agrees with the measurement at every N"
    return "the predicted column (gpusim's, not the verdict's evidence) disagrees: " + "; ".join(
        f"at {', '.join(at for at, _ in points)} it predicts {phase} gains more "
        f"({ratio_span([p for _, p in points], '{:.2f}')})" for phase, points in sides.items())


def _kernels(rows):
    return ", ".join(sorted({r["provider"] for r in rows}))


def prefill_decode(results, batch=1):
    """Judged on the best evidence measured: at each N, PyTorch's standard attention over the fastest tiled kernel
    measured, in prefill (bench.json's fp16, d=128, causal rows) and in decode (decode.json at `batch`); the claim
    holds where prefill's ratio is the larger."""
    bench, decode = _bench(results), read_results(Path(results) / "decode.json")
    prefill = _benefits({p: timed_by_seq(bench, p, **inference.PREFILL) for p in {r["provider"] for r in bench}})
    step = _benefits({p: inference.timed(decode["rows"], p, batch) for p in {r["provider"] for r in decode["rows"]}})
    seqs = sorted(prefill.keys() & step.keys())
    obs = [Obs(prefill[n][0] / step[n][0], f"N={n:,}") for n in seqs]
    pre, dec = [_prefill_predicted(prefill[n][1]) for n in seqs], [_decode_predicted(decode, n, batch) for n in seqs]
    predicted = [p / d for p, d in zip(pre, dec)]
    first, one = prefill[seqs[0]][1], step[seqs[0]][1]
    measured = (f"PyTorch's standard attention's time / the fastest FlashAttention-style kernel's, at each N "
                f"(prefill: bench.json, fp16, d=128, causal, {first['heads']} heads, fastest "
                f"{_kernels(prefill[n][2] for n in seqs)}; decode: decode.json, batch {batch}, {one['heads']} query "
                f"heads on {one['kv_heads']} K/V heads, d={one['head_dim']}, fastest "
                f"{_kernels(step[n][2] for n in seqs)}): prefill {ratio_span([prefill[n][0] for n in seqs])}, "
                f"decode {ratio_span([step[n][0] for n in seqs])}; prefill / decode "
                f"{ratio_span([o.value for o in obs], '{:.2f}')}")
    return Row("The prefill phase (processing your entire prompt) is where FlashAttention shines brightest.", BLOG,
               f"naive's time / FlashAttention's at the measured shapes, N = {seqs[0]:,} to {seqs[-1]:,}: prefill "
               f"(flash2) {ratio_span(pre)}, decode (the split-KV kernel, priced as notebook 8's table prices it) "
               f"{ratio_span(dec)}; prefill / decode {ratio_span(predicted, '{:.2f}')}", measured,
               noting(interval(obs, 1.0, float("inf"), "the claim's range, above 1,", "{:.2f}"),
                      _where_gpusim_disagrees(obs, predicted)),
               "prefill gains more than decode (the fastest kernels)", "08_inference.ipynb",
               "When FlashAttention Helps Most")


STANDARD = {"torch_naive": "PyTorch's standard attention", "sdpa_math": "SDPA's math backend"}  # they write S, P


def out_of_memory(rows):
    """At the shortest length where one of the attentions that write S and P ran out of memory on the H200
    (bench.json), at that head size: per attention and mask, the dtypes that ran out and those that ran, with their
    peak; "" where none ran out."""
    oom = [x for x in rows if x["provider"] in STANDARD and x.get("error") == "OOM"]
    if not oom:
        return ""
    first = min(oom, key=lambda x: x["seq"])
    parts = []
    for provider, name in STANDARD.items():
        for causal in (False, True):
            group = [x for x in rows if (x["provider"], x["seq"], x["head_dim"], x["causal"]) ==
                     (provider, first["seq"], first["head_dim"], causal)]
            mask = "with the causal mask" if causal else "without a mask"
            out = [x["dtype"] for x in group if x.get("error") == "OOM"]
            ran = [x for x in group if x.get("ms") is not None]
            parts += [f"{name} ran out of memory {mask} ({', '.join(out)})"] if out else []
            parts += [f"{name} ran {mask} ({', '.join(x['dtype'] for x in ran)}), peaking at "
                      f"{max(x['peak_bytes'] for x in ran) / 2**30:.1f} GiB"] if ran else []
    return (f"on the H200 at N={first['seq']:,} ({first['batch']} x {first['heads']} heads, d={first['head_dim']}): "
            + "; ".join(parts))


def long_context(results, seq=131072, head_dim=128):
    """The claim is about one attention layer, so it is judged on a layer's heads: the FlashAttention-2 benchmark's
    (gpusim.fa2_shape, a model width of 2,048) against every preset's HBM. The source's 32 GB is one head's S
    (N^2 x 2 bytes); the reason says on which GPUs one head alone would be more."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    layer, head = (gpusim.simulate("naive", seq=seq, head_dim=head_dim, batch=batch, heads=h, dtype="fp16")
                   for h in (heads, 1))
    gib = {"layer": layer.hbm_peak_bytes / 2**30, "head": head.hbm_peak_bytes / 2**30}
    checks = [(f"{g.name} ({g.hbm_bytes / 2**30:.0f} GiB): {'more' if layer.hbm_peak_bytes > g.hbm_bytes else 'less'}",
               layer.hbm_peak_bytes > g.hbm_bytes) for g in gpusim.PRESETS.values()]
    smaller = [g.name for g in gpusim.PRESETS.values() if head.hbm_peak_bytes > g.hbm_bytes]
    judged = noting(each(checks), f"judged for the layer the claim names ({batch} x {heads} heads of d={head_dim}, "
                                  f"{gib['layer']:,.1f} GiB); the source's 32 GB is one head's S, and one head alone "
                                  f"({gib['head']:.1f} GiB) would be more than the HBM of "
                                  f"{', '.join(smaller) or 'no preset'} only")
    return Row("128K tokens: S = P = 32 GB, 64 GB for one attention layer: more than the GPU's total HBM.", BLOG,
               f"one attention layer ({batch} x {heads} heads, d={head_dim}, the FlashAttention-2 benchmark's width) "
               f"at N={seq:,} needs {gib['layer']:,.1f} GiB at its peak; one head {gib['head']:.1f} GiB",
               out_of_memory(_bench(results)), judged, "more than the GPU's HBM, for one layer's heads",
               "02_standard_attention.ipynb", "Memory: when 128K tokens cannot work")


def fp8_rate(results):
    c = read_results(Path(results) / "ceilings.json")
    measured = c["matmul_fp8_e4m3_flops_per_s"] / c["matmul_float16_flops_per_s"]
    g = gpusim.get_gpu("H100-SXM")
    return Row("FP8 tensor cores: 2x the throughput of FP16.", BLOG,
               f"{g.name} datasheet: {g.fp8_matmul_flops_per_s / g.fp16_matmul_flops_per_s:.1f}x",
               f"torch matmul on the H200: {measured:.2f}x", interval([Obs(measured, "H200")], *about(2), "~2x"),
               "~x: within 1.25x", "01_memory_hierarchy.ipynb", "Check: datasheet peaks against measurements")


CLAIMS = (speedup, memory, fa2_over_fa1, matmul_share, linear_memory, waiting, block_rule, hbm_reads, model_table,
          kitchen, ten_x, bit_identical, differs, sdpa_conditions, mask_limits, warp_split, fa3_fp16, fa3_fp8,
          fa3_utilization, longer_bigger, kv_waste, kv_linear, prefill_decode, s_matrix, long_context, parallelism,
          fp8_rate)


def rows(results):
    """Every claim, evaluated: a list of scorecard.Row, each saying what was not measured."""
    return [with_evidence(claim(results)) for claim in CLAIMS]

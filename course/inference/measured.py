"""The decode notebook's measurements beside gpusim: results/h200/decode.json (the split-KV kernel, the same
with num_splits=1, SDPA's backends and torch naive at Llama-3-8B's attention shape) and results/h200/bench.json
(prefill). Every measured number is read from those files; gpusim's side is gpusim.simulate("split_kv", ...) of
each row's own launch (gpusim.decode.launch_options), on the preset benchmarks/agreement.py prices rows on.
"""
import gpusim
from gpusim import decode

from ..formatting import span
from ..measurements import WRITE_S_P, fastest

GPU = "H200-measured"  # the lent H200's measured rates (gpusim/hardware.py)
SDPA = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math")
PREFILL = dict(dtype="fp16", head_dim=128, causal=True)  # bench.json's group the prefill rows come from


def timed(rows, provider, batch):
    """{seq_kv: row} of one provider's decode.json rows at one batch that ran (a time, not an error)."""
    return {r["seq_kv"]: r for r in rows if r["provider"] == provider and r["batch"] == batch and r.get("ms")}


def fastest_sdpa(rows, batch):
    """{seq_kv: row} of the fastest SDPA backend at each cache length."""
    return fastest({name: timed(rows, name, batch) for name in SDPA})


def simulated(row, gpu=GPU):
    """gpusim's Result of the launch a split_kv / split_kv_1 row timed (its splits, pages and shape)."""
    return gpusim.simulate("split_kv", **decode.launch_options(row), gpu=gpu)


def predicted_ms(row, gpu=GPU):
    """gpusim's predicted time of a split_kv / split_kv_1 row's launch on `gpu`, in ms (the row's unit)."""
    return simulated(row, gpu).predicted_time_s * 1e3


def comparison_rows(data, batch, gpu=GPU):
    """Per cache length at one batch: the split-KV kernel and num_splits=1, measured and predicted (on `gpu`: the
    preset of the GPU that timed `data`), the slowdown of not splitting both ways, the fastest SDPA backend, and the
    split kernel's share of the measured copy bandwidth."""
    rows = data["rows"]
    split, unsplit, sdpa = timed(rows, "split_kv", batch), timed(rows, "split_kv_1", batch), fastest_sdpa(rows, batch)
    out = []
    for n in sorted(split.keys() & unsplit.keys()):
        s, u = split[n], unsplit[n]
        ps, pu = predicted_ms(s, gpu), predicted_ms(u, gpu)
        out.append({"cache tokens": n, "num_splits": s["num_splits"], "split ms": s["ms"], "split predicted ms": ps,
                    "num_splits=1 ms": u["ms"], "num_splits=1 predicted ms": pu,
                    "slowdown measured": u["ms"] / s["ms"], "slowdown predicted": pu / ps,
                    "fastest SDPA": sdpa[n]["provider"] if n in sdpa else None,
                    "fastest SDPA ms": sdpa[n]["ms"] if n in sdpa else None,
                    "split share of copy bandwidth": s["copy_fraction"]})
    return out


def series(data, batch, gpu=GPU):
    """The Flash-Decoding chart's curves at one batch: {name: (cache lengths, ms)}, measured and predicted (on
    `gpu`)."""
    rows = comparison_rows(data, batch, gpu)
    n = [r["cache tokens"] for r in rows]
    out = {name: (n, [r[key] for r in rows]) for name, key in (
        ("split KV, measured", "split ms"), ("split KV, gpusim", "split predicted ms"),
        ("num_splits=1, measured", "num_splits=1 ms"), ("num_splits=1, gpusim", "num_splits=1 predicted ms"))}
    sdpa = [r for r in rows if r["fastest SDPA ms"] is not None]
    return out | {"fastest SDPA, measured": ([r["cache tokens"] for r in sdpa], [r["fastest SDPA ms"] for r in sdpa])}


def unsplit_lesson(data, batch=1):
    """What num_splits=1 leaves idle at the longest cache measured at `batch`: programs, SMs, the share of
    the copy bandwidth each kernel reached, and the slowdown measured and predicted."""
    row = comparison_rows(data, batch)[-1]
    split = timed(data["rows"], "split_kv", batch)[row["cache tokens"]]
    unsplit = timed(data["rows"], "split_kv_1", batch)[row["cache tokens"]]
    one, many = (decode.make_launch(**decode.launch_options(r), gpu=GPU) for r in (unsplit, split))
    programs = decode.programs(one, "decode")
    return {"cache tokens": row["cache tokens"], "batch": batch, "num_splits=1 programs": programs,
            "SMs": one.gpu.sm_count, "idle SMs": 1 - min(1.0, programs / one.gpu.sm_count),
            "split programs": decode.programs(many, "split_kv"),
            "num_splits=1 share of copy bandwidth": unsplit["copy_fraction"],
            "split share of copy bandwidth": split["copy_fraction"],
            "slowdown measured": row["slowdown measured"], "slowdown predicted": row["slowdown predicted"]}


def copy_shares(data, min_cache=32768, gpu=GPU):
    """The split kernel's share of the measured copy bandwidth at caches of `min_cache` tokens or more, every batch
    (least, most), and the DRAM read rate gpusim's preset takes (bandwidth.json's loads) over the copy's: a copy
    reads and writes each byte, the decode kernel only reads, so its share can pass 1."""
    rows = [r for r in data["rows"] if r["provider"] == "split_kv" and r.get("ms") and r["seq_kv"] >= min_cache]
    shares = [r["copy_fraction"] for r in rows]
    return {"min cache": min_cache, "batches": sorted({r["batch"] for r in rows}), "least": min(shares),
            "most": max(shares), "read over copy": gpusim.get_gpu(gpu).hbm_read_bytes_per_s / data["copy_bytes_per_s"]}


def copy_share_sentence(shares):
    """copy_shares in words."""
    return (f"At caches of {shares['min cache']:,} tokens or more (batch {', '.join(map(str, shares['batches']))}) the "
            f"split kernel reaches {shares['least']:.0%} to {shares['most']:.0%} of the measured copy bandwidth. Above "
            f"100% is not a bug: a copy reads and writes every byte, the decode kernel only reads, and DRAM loads "
            f"alone ran at {shares['read over copy']:.2f}x the copy's rate (bandwidth.json's median with 64 KiB or "
            f"more in flight per SM, the rate gpusim's {GPU} preset reads at).")


def fixed_cost(data, batch=1, upto=4096):
    """At small caches the measured time stops following the bytes: {bytes growth, time growth, fastest ms,
    slowest ms} of the split kernel from the smallest cache to `upto` (a fixed per-call cost dominates)."""
    rows = [r for r in timed(data["rows"], "split_kv", batch).values() if r["seq_kv"] <= upto]
    rows.sort(key=lambda r: r["seq_kv"])
    ms = [r["ms"] for r in rows]
    return {"from": rows[0]["seq_kv"], "to": rows[-1]["seq_kv"], "bytes growth": rows[-1]["model_bytes"] /
            rows[0]["model_bytes"], "time growth": ms[-1] / ms[0], "fastest ms": min(ms), "slowest ms": max(ms)}


def _prefill_rows(bench, seq):
    group = [r for r in bench["rows"] if r["seq"] == seq and all(r[k] == v for k, v in PREFILL.items())]
    return {r["provider"]: r for r in group if r.get("ms")}


DECODES = ((1, 4096), (1, 131072), (64, 4096), (64, 32768))  # helps_most's decode rows: (batch, cache tokens)


def decode_pair(decode_data, batch, seq_kv, gpu):
    """decode.json's timed rows at (batch, seq_kv) by provider, and gpusim's Results of the split-KV row's launch and
    of its naive kernels (one query row, the same shape)."""
    cell = {r["provider"]: r for r in decode_data["rows"] if (r["batch"], r["seq_kv"]) == (batch, seq_kv)
            and r.get("ms")}
    split = cell["split_kv"]
    naive = gpusim.simulate("naive", batch=batch, seq=1, seq_kv=seq_kv, heads=split["heads"],
                            kv_heads=split["kv_heads"], head_dim=split["head_dim"], dtype=split["dtype"], gpu=gpu)
    return cell, simulated(split, gpu), naive


def helps_most(decode_data, bench, gpu=GPU, prefill_seqs=(4096, 16384), decodes=DECODES):
    """The source's table "When FlashAttention Helps Most" (Scenario, Memory-Bound?, FA Benefit) filled in:
    gpusim's FLOPs per DRAM byte against the ridge point, and standard attention's time over FlashAttention's,
    predicted by gpusim and measured on the H200. Prefill: bench.json's fp16, d=128, causal rows (the
    FlashAttention-2 benchmark shape: 16 heads, batch x seq = 16K), the project's naive kernels over its
    flash2. Decode: decode.json's rows (Llama-3-8B's attention shape: 32 query heads, 8 K/V heads, d=128; 1K to 128K
    tokens, past Llama-3-8B's own 8K context, as Llama-3.1-8B runs). The torch column has one
    basis in both phases: torch's matmul-softmax-matmul over the fastest kernel measured at that row that does
    not write S and P (the next column names it), as the scorecard's verdict on the phases judges."""
    g = gpusim.get_gpu(gpu)
    out = []
    for seq in prefill_seqs:
        measured = _prefill_rows(bench, seq)
        first = measured["flash2"]
        shape = dict(batch=first["batch"], heads=first["heads"], seq=seq, gpu=g, **PREFILL)
        naive, flash = (gpusim.simulate(algo, **shape) for algo in ("naive", "flash2"))
        out.append(_row(f"prefill, {seq // 1024}K prompt", first["batch"], _intensity(flash), g, PREFILL["dtype"],
                        naive.predicted_time_s / flash.predicted_time_s,
                        measured["naive"]["ms"] / measured["flash2"]["ms"], *_torch_over_fastest(measured)))
    for batch, seq_kv in decodes:
        cell, flash, naive = decode_pair(decode_data, batch, seq_kv, g)
        out.append(_row(f"decode, {seq_kv // 1024}K cache", batch, _intensity(flash), g, cell["split_kv"]["dtype"],
                        naive.predicted_time_s / flash.predicted_time_s, None, *_torch_over_fastest(cell)))
    return out


def _torch_over_fastest(cell):
    """torch_naive's time over the fastest timed kernel of {provider: row} that does not write S and P, and that
    kernel's name; (None, None) where torch_naive did not run."""
    best = min((r for p, r in cell.items() if p not in WRITE_S_P), key=lambda r: r["ms"])
    return (cell["torch_naive"]["ms"] / best["ms"], best["provider"]) if "torch_naive" in cell else (None, None)


def decode_benefit_parts(decode_data, gpu=GPU, decodes=DECODES):
    """helps_most's "FA benefit, gpusim" of each decode row (naive's time / split-KV's) as the product of its two
    causes: the DRAM bytes the naive kernels move over the split kernel's, and the split kernel's DRAM bytes per second
    over the naive kernels'; with the fewest programs a naive kernel launches (and the kernels that launch that few),
    and the SMs."""
    g = gpusim.get_gpu(gpu)
    out = []
    for batch, seq_kv in decodes:
        _, flash, naive = decode_pair(decode_data, batch, seq_kv, g)
        moved = [r.dram_read_bytes + r.dram_write_bytes for r in (naive, flash)]
        fewest = min(k.programs for k in naive.kernels)
        out.append({"scenario": f"decode, {seq_kv // 1024}K cache", "batch": batch,
                    "benefit": naive.predicted_time_s / flash.predicted_time_s, "bytes": moved[0] / moved[1],
                    "rate": (moved[1] / flash.predicted_time_s) / (moved[0] / naive.predicted_time_s),
                    "fewest programs": fewest, "SMs": g.sm_count,
                    "kernels": [k.name for k in naive.kernels if k.programs == fewest]})
    return out


def decode_benefit_lines(parts):
    """decode_benefit_parts in words: benefit = bytes x rate."""
    return [f"{p['scenario']}, batch {p['batch']}: {p['benefit']:.1f}x = {p['bytes']:.2f}x the DRAM bytes × "
            f"{p['rate']:.2f}x the bytes per second (naive {' and '.join(p['kernels'])}: {p['fewest programs']:,} "
            f"programs for {p['SMs']} SMs)" for p in parts]


def _intensity(result):
    """FLOPs per byte that reaches DRAM (after the L2), of a gpusim Result."""
    return (result.flops_matmul + result.flops_other) / (result.dram_read_bytes + result.dram_write_bytes)


def _row(scenario, batch, intensity, gpu, dtype, predicted, measured_project, measured_torch, fastest_kernel):
    ridge = gpu.matmul_flops_per_s(dtype) / gpu.hbm_bytes_per_s
    return {"scenario": scenario, "batch": batch, "FLOPs per DRAM byte (gpusim)": intensity, "ridge point": ridge,
            "memory-bound?": "yes" if intensity < ridge else "no",
            "FA benefit, gpusim": predicted, "FA benefit, H200: project's kernels": measured_project,
            "FA benefit, H200: torch's time / the fastest kernel's": measured_torch,
            "fastest kernel, H200": fastest_kernel}


def unsplit_sentence(lesson):
    """unsplit_lesson's numbers in words."""
    return (f"At batch {lesson['batch']} with {lesson['cache tokens']:,} cached tokens, num_splits=1 launches "
            f"{lesson['num_splits=1 programs']} programs (one per request and K/V head) on {lesson['SMs']} SMs: "
            f"{lesson['idle SMs']:.0%} of the SMs have no work, and the kernel reaches "
            f"{lesson['num_splits=1 share of copy bandwidth']:.1%} of the measured copy bandwidth. Split into "
            f"{lesson['split programs']} programs it reaches {lesson['split share of copy bandwidth']:.0%}. Not "
            f"splitting is {lesson['slowdown measured']:.1f}x slower as measured; gpusim predicts "
            f"{lesson['slowdown predicted']:.1f}x.")


def fixed_cost_sentence(cost):
    """fixed_cost's numbers in words."""
    return (f"From {cost['from']:,} to {cost['to']:,} cached tokens the split kernel's bytes grow "
            f"{cost['bytes growth']:.0f}x but its measured time only {cost['time growth']:.2f}x (it stays between "
            f"{cost['fastest ms'] * 1e3:.0f} and {cost['slowest ms'] * 1e3:.0f} µs): a cost per call that does not "
            f"grow with the cache dominates there.")


def agreement(data, within=0.2, min_cache=0):
    """How many of the split_kv and split_kv_1 rows (cache >= min_cache) gpusim predicts within `within`:
    {"rows", "within", "share"}."""
    rows = [r for name in ("split_kv", "split_kv_1") for r in data["rows"]
            if r["provider"] == name and r.get("ms") and r["seq_kv"] >= min_cache]
    close = [r for r in rows if abs(predicted_ms(r) / r["ms"] - 1) <= within]
    return {"rows": len(rows), "within": len(close), "share": len(close) / len(rows)}


def agreement_lines(data, within=0.2, min_caches=((0, "all cache lengths"), (32768, "caches of 32K tokens or more"))):
    """agreement per (min_cache, what it keeps) as sentences."""
    out = []
    for min_cache, which in min_caches:
        a = agreement(data, within=within, min_cache=min_cache)
        out.append(f"gpusim within {within:.0%} of the measured time: {a['within']} of {a['rows']} split-KV rows, "
                   f"{which}")
    return out


def gpu_pair_sentence(h200_data, h100_data, gpu="H100-measured"):
    """Two GPUs' decode.json rows of the same launches in words: the H100's split-KV time over the H200's where a
    step is a few launches (batch 1 up to 4K) and where the cache is read at DRAM's rate (from 16K), and how many of
    the H100's split-KV rows gpusim prices within 20% on `gpu` (blind: no constant was fitted to them)."""
    h200 = {(r["batch"], r["seq_kv"]): r["ms"] for r in h200_data["rows"]
            if r["provider"] == "split_kv" and r.get("ms")}
    ratios = {(r["batch"], r["seq_kv"]): r["ms"] / h200[(r["batch"], r["seq_kv"])] for r in h100_data["rows"]
              if r["provider"] == "split_kv" and r.get("ms") and (r["batch"], r["seq_kv"]) in h200}
    short = [x for (batch, n), x in ratios.items() if batch == 1 and n <= 4096]
    long = [x for (_, n), x in ratios.items() if n >= 16384]
    rows = [r for r in h100_data["rows"] if r["provider"] in ("split_kv", "split_kv_1") and r.get("ms")]
    within = sum(abs(predicted_ms(r, gpu) / r["ms"] - 1) <= 0.2 for r in rows)
    return (f"The H100's split-KV time over the H200's for the same launch: {span(short)}x at batch 1 up to 4,096 "
            f"tokens (a few launches), {span(long)}x from 16,384 (the cache read at DRAM's rate). gpusim on {gpu} "
            f"prices {within} of the H100's {len(rows)} split-KV rows within 20%.")


def split_rule_launch(batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=131072, page_size=16):
    """gpusim's split-KV decode at one shape (Llama-3-8B's attention shape over a 128K paged cache, Llama-3.1-8B's
    context) on the measured H200: the
    split count its rule picks and the predicted time."""
    return gpusim.simulate("split_kv", batch=batch, heads=heads, kv_heads=kv_heads, head_dim=head_dim, seq_kv=seq_kv,
                           page_size=page_size, gpu=GPU)


def split_rule_sentence(launch):
    """How gpusim.decode's rule chose a launch's split count: the split programs the GPU keeps resident, the slots
    the rule fills (split_slots: one program fewer per SM than it keeps resident, at least one per SM), the most
    splits whose programs fit them, the counts it passed over because they leave each split as many chunks as one
    fewer (their last splits would be empty: num_splits_rule), and the programs it launches."""
    per_split, chunks = launch.batch * launch.units, int(launch.chunks.max())
    sms, resident, slots = launch.gpu.sm_count, decode.resident_programs(launch), decode.split_slots(launch)
    top = max(1, min(decode.MAX_SPLITS, chunks, slots // per_split))
    passed = f"; {top} down to {launch.num_splits + 1} splits would leave empty ones ({chunks:,} chunks of " \
             f"{launch.block_kv} keys: {-(-chunks // top)} per split, as at {launch.num_splits})" \
        if top > launch.num_splits else ""
    return (f"{resident} resident split programs on {launch.gpu.name} ({resident // sms} per SM, {sms} SMs); the "
            f"rule fills up to {slots} slots ({slots // sms} of each SM's {resident // sms}), room for {top} split(s) "
            f"of {per_split} programs{passed}: num_splits = {launch.num_splits}, "
            f"{decode.programs(launch, 'split_kv')} programs.")


def split_counts(data, batch=1, sm_count=132, kv_heads=8, slots=5, flash_attn_slots=2):
    """decode_splits.json at one batch (the split kernel with PDL): per cache length, the split count that ran
    fastest; and how much slower than the rule's count (the file's `default` rows) ran the count that fills
    every resident slot (`slots` per SM) and 2 per SM (`flash_attn_slots`: the budget flash-attention's heuristic starts
    from)."""
    rows = [r for r in data["rows"] if r["batch"] == batch and r["provider"] == "split_kv" and r.get("pdl")]
    by_seq = {}
    for r in rows:
        by_seq.setdefault(r["seq_kv"], {})[r["num_splits"]] = r["ms"]
    rule = {r["seq_kv"]: r["num_splits"] for r in rows if r.get("default")}
    per = batch * kv_heads
    full, fa = sm_count * slots // per, sm_count * flash_attn_slots // per
    out = {"rule_programs": per * next(iter(rule.values())), "seqs": sorted(by_seq), "fastest": {},
           "full_splits": full, "fa_splits": fa, "full_slower": [], "fa_slower": []}
    for seq, times in sorted(by_seq.items()):
        best = min(times, key=times.get)
        out["fastest"][seq] = (best, times[best] / times[rule[seq]])
        for key, count in (("full_slower", full), ("fa_slower", fa)):
            if count in times:
                out[key].append(times[count] / times[rule[seq]])
    return out


def split_count_sentence(counts):
    """split_counts in words, every number computed from the file."""
    seqs = counts["seqs"]
    at_rule = sum(1 for best, ratio in counts["fastest"].values() if ratio >= 0.99)
    full, fa = counts["full_slower"], counts["fa_slower"]
    return (f"On the H200 (decode_splits.json, batch 1, {seqs[0] // 1024}K to {seqs[-1] // 1024}K tokens), the rule's "
            f"{counts['rule_programs']} programs ran fastest, or within 1% of the fastest, at {at_rule} of "
            f"{len(seqs)} cache lengths; filling every slot ({counts['full_splits']} splits) ran "
            f"{span([100 * (x - 1) for x in full], '{:.1f}')}% slower, and 2 programs per SM ({counts['fa_splits']} "
            f"splits, the budget flash-attention's split heuristic starts from: it then takes the fewest splits whose "
            f"waves are within 85% of the best's) {span(fa)}x the rule's time.")


def serving_splits(data):
    """serving_splits.json (the graphed serving loop at each split count): per (batch, cache tokens), the rule's
    count (the `default` row), the fastest count, and the rule's time over the fastest's."""
    rows = [r for r in data["rows"] if r["provider"] == "plan_graph" and r.get("ms_per_token")]
    out = {}
    for point in dict.fromkeys((r["batch"], r["seq_kv"]) for r in rows):
        here = [r for r in rows if (r["batch"], r["seq_kv"]) == point]
        rule, best = next(r for r in here if r["default"]), min(here, key=lambda r: r["ms_per_token"])
        out[point] = (rule["num_splits"], best["num_splits"], rule["ms_per_token"] / best["ms_per_token"])
    return out


def rule_splits(data, batch):
    """The split counts gpusim's rule gave the split kernel's decode.json rows at one batch (one count, 1: the
    split kernel and num_splits=1 are one launch there)."""
    return sorted({r["num_splits"] for r in data["rows"] if r["provider"] == "split_kv" and r["batch"] == batch})


def forced_splits(serving, batch):
    """serving_splits.json at one batch: the cache lengths, the split counts above 1 tried, and each one's time per
    token over num_splits=1's, at every length."""
    rows = [r for r in serving["rows"]
            if r["provider"] == "plan_graph" and r["batch"] == batch and r.get("ms_per_token")]
    one = {r["seq_kv"]: r["ms_per_token"] for r in rows if r["num_splits"] == 1}
    more = [r for r in rows if r["num_splits"] > 1 and r["seq_kv"] in one]
    return {"batch": batch, "seqs": sorted(one), "counts": sorted({r["num_splits"] for r in more}),
            "over one": [r["ms_per_token"] / one[r["seq_kv"]] for r in more]}


def forced_splits_sentence(rule, forced):
    """Why a batch's panel cannot show whether splitting pays (the rule's counts, rule_splits), and what the serving
    loop's forced counts (forced_splits) measured."""
    over = forced["over one"]
    kernels = "the panel's split and num_splits=1 curves are one launch" if rule == [1] else "the rule splits"
    verdict = "slower" if min(over) > 1 else "faster" if max(over) < 1 else "slower or faster"
    return (f"At batch {forced['batch']} the rule's split counts in decode.json are {', '.join(map(str, rule))}: "
            f"{kernels}. Forced to split in the graphed serving loop (serving_splits.json, "
            f"{', '.join(f'{n // 1024}K' for n in forced['seqs'])} tokens), every count tried "
            f"({', '.join(map(str, forced['counts']))}) ran {verdict} than one split "
            f"({span([100 * (x - 1) for x in over], '{:+.0f}')}% per token).")


def serving_splits_sentence(points):
    """serving_splits in words, every number computed from the file."""
    fastest = sum(1 for rule, best, _ in points.values() if rule == best)
    batches = sorted({b for b, _ in points})
    seqs = sorted({n for _, n in points})
    return (f"In a graphed serving loop (serving_splits.json: 32 layers a token, batch "
            f"{', '.join(map(str, batches))}, {seqs[0] // 1024}K to {seqs[-1] // 1024}K tokens), the rule's count ran "
            f"fastest of the counts tried (1, 2, 4, ...) at {fastest} of {len(points)} points.")


SERVING_SHAPE = dict(heads=32, kv_heads=8, head_dim=128, page_size=16, dtype="fp16")  # serving.json's cache


def plan_splits(batch, seq_kv, gpu=GPU):
    """The serving loop's plan's split count: gpusim's rule at the first timed step's length."""
    return gpusim.simulate("split_kv", batch=batch, seq_kv=seq_kv, gpu=gpu, **SERVING_SHAPE).config.num_splits


def token_s(batch, seq_kv, steps, layers, gpu=GPU):
    """gpusim's time per token of the graphed serving loop (benchmarks/serving.py's plan_graph): `layers` decode
    launches a step, at the plan's splits (plan_splits), over the cache as it grows a token a step from seq_kv,
    averaged over the `steps` timed steps. The step's in-place raise of the lengths (one tiny kernel between replays)
    is left out. Each launch is priced cold, its K and V read from DRAM, as a server's layers read their own caches;
    serving.json's layers read one cache, which the L2 holds where it fits (run 226, results/h100/short_cache.json)."""
    splits = plan_splits(batch, seq_kv, gpu)
    times = [gpusim.simulate("split_kv", batch=batch, seq_kv=n, num_splits=splits, gpu=gpu,
                             **SERVING_SHAPE).predicted_time_s for n in range(seq_kv, seq_kv + steps)]
    return layers * sum(times) / steps


def serving_tokens(data, gpu=GPU):
    """A serving.json's graphed plan (plan_graph) beside gpusim on `gpu`: per point {batch, cache tokens, splits,
    measured ms per token, gpusim ms per token, gpusim / measured}."""
    out = []
    for r in (r for r in data["rows"] if r["provider"] == "plan_graph" and r.get("ms_per_token")):
        ms = token_s(r["batch"], r["seq_kv"], r["steps"], r["layers"], gpu) * 1e3
        out.append({"batch": r["batch"], "cache tokens": r["seq_kv"],
                    "splits": plan_splits(r["batch"], r["seq_kv"], gpu),
                    "measured ms per token": r["ms_per_token"], "gpusim ms per token": ms,
                    "gpusim / measured": ms / r["ms_per_token"]})
    return out


def serving_tokens_sentence(tokens, gpu=GPU, within=0.2):
    """serving_tokens in words: how many points gpusim prices within `within` (its time over the measured), and the
    others, each with its ratio."""
    close = [t for t in tokens if abs(t["gpusim / measured"] - 1) <= within]
    missed = "; ".join(f"batch {t['batch']} at {t['cache tokens']:,} tokens {t['gpusim / measured']:.2f}x"
                       for t in tokens if t not in close)
    return (f"gpusim on {gpu} prices {len(close)} of the {len(tokens)} points within {within:.0%} "
            f"({span([t['gpusim / measured'] for t in close])}x its time over the measured)"
            + (f"; outside: {missed}." if missed else "."))


def warm_cold(data):
    """A short_cache.json (benchmarks/short_cache.py) per launch: {batch, cache tokens, splits, K and V MiB, cold µs
    (its inputs rotated past the L2), warm µs (one input set, read again), warm / cold}."""
    launches = {}
    for r in data["rows"]:
        key = (r["batch"], r["seq_kv"], r["num_splits"])
        launches.setdefault(key, {"batch": key[0], "cache tokens": key[1], "splits": key[2],
                                  "K and V MiB": r["cache_bytes"] / 2**20})["warm µs" if r["warm"] else "cold µs"] = (
            r["ms"] * 1e3)
    return [v | {"warm / cold": v["warm µs"] / v["cold µs"]} for v in launches.values()]


def warm_cold_sentence(rows, gpu):
    """warm_cold in words, against `gpu`'s L2: the warm launch over the cold where its K and V fit the L2 with room
    (at most two thirds of it) and where they do not fit."""
    l2_mib = gpusim.get_gpu(gpu).l2_bytes / 2**20
    fits = [r for r in rows if r["K and V MiB"] <= l2_mib * 2 / 3]
    past = [r for r in rows if r["K and V MiB"] > l2_mib]
    return (f"Read again from an L2 of {l2_mib:.0f} MiB, the launch took {span([r['warm / cold'] for r in fits])}x its "
            f"cold time where its K and V ({span([r['K and V MiB'] for r in fits], '{:.0f}')} MiB) fit, and "
            f"{span([r['warm / cold'] for r in past])}x where they ({span([r['K and V MiB'] for r in past], '{:.0f}')} "
            "MiB) do not.")

"""gpusim_course.inference.measured: the decode notebook's measured rows, read from results/h200/decode.json and
bench.json, set beside gpusim.simulate("split_kv", ...) of each row's launch."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim_course.inference import measured as dm

ROOT = Path(__file__).resolve().parents[1]


def read(name):
    return json.loads((ROOT / "results" / "h200" / name).read_text())


@pytest.fixture(scope="module")
def data():
    return read("decode.json")


def test_comparison_rows_are_the_file_s_numbers(data):
    rows = dm.comparison_rows(data, batch=1)
    split, unsplit = dm.timed(data["rows"], "split_kv", 1), dm.timed(data["rows"], "split_kv_1", 1)
    assert [r["cache tokens"] for r in rows] == sorted(split)
    for r in rows:
        n = r["cache tokens"]
        assert (r["split ms"], r["num_splits=1 ms"]) == (split[n]["ms"], unsplit[n]["ms"])
        assert r["slowdown measured"] == unsplit[n]["ms"] / split[n]["ms"]
        for key, row in (("split predicted ms", split[n]), ("num_splits=1 predicted ms", unsplit[n])):
            result = gpusim.simulate("split_kv", batch=1, heads=row["heads"], kv_heads=row["kv_heads"],
                                     head_dim=row["head_dim"], seq_kv=n, dtype=row["dtype"], page_size=row["page_size"],
                                     num_splits=row["num_splits"], gpu="H200-measured")
            assert r[key] == result.predicted_time_s * 1e3
        sdpa = [x for x in data["rows"] if x["seq_kv"] == n and x["batch"] == 1 and x["provider"] in dm.SDPA
                and x.get("ms")]
        assert r["fastest SDPA ms"] == min(x["ms"] for x in sdpa)


def test_series_and_lesson(data):
    curves = dm.series(data, batch=8)
    assert set(curves) == {"split KV, measured", "split KV, gpusim", "num_splits=1, measured", "num_splits=1, gpusim",
                           "fastest SDPA, measured"}
    lesson = dm.unsplit_lesson(data, batch=64)
    assert lesson["num_splits=1 programs"] == 64 * 8 and lesson["idle SMs"] == 0
    one = dm.unsplit_lesson(data, batch=1)
    assert one["num_splits=1 programs"] == 8 and one["idle SMs"] == 1 - 8 / 132  # one program per K/V head
    assert "132 SMs" in dm.unsplit_sentence(one)


def test_rows_relaunched_move_the_bytes_the_rows_record(data):
    """Each row records gpusim's byte count of the launch it timed: the course's launch is that launch."""
    rows = [r for r in data["rows"] if r["provider"].startswith("split_kv") and r.get("ms")]
    assert rows and all(dm.simulated(r).hbm_bytes == r["model_bytes"] for r in rows)


def test_not_splitting_costs_more_the_longer_the_cache_at_batch_one(data):
    rows = dm.comparison_rows(data, batch=1)
    measured = [r["slowdown measured"] for r in rows]
    assert len(rows) == 8 and measured[0] > 1 and all(a < b for a, b in zip(measured, measured[1:]))
    assert all(abs(r["slowdown predicted"] / r["slowdown measured"] - 1) <= 0.25 for r in rows)  # the target
    # 64 x 8 = 512 programs already fill the 528 slots the split rule places on the H200 (4 of its 5 resident
    # split blocks per SM): it does not split, and both providers are the same launch, measured within 2%
    full = dm.comparison_rows(data, batch=64)
    assert {r["num_splits"] for r in full} == {1}
    assert all(abs(r["slowdown measured"] - 1) < 0.02 and r["slowdown predicted"] == 1 for r in full)


def test_unsplit_batch_one_waits_on_latency_and_batch_64_streams(data):
    """What the notebook reads off the chart: at batch 1 num_splits=1's few programs are latency-bound; at
    batch 64 the kernel is not, and takes about its bytes at the DRAM bandwidth."""
    unsplit = dm.timed(data["rows"], "split_kv_1", 1)[131072]
    (one,) = dm.simulated(unsplit).kernels
    assert one.latency_bound and one.predicted_time_s > 10 * one.memory_time_s
    (full,) = dm.simulated(dm.timed(data["rows"], "split_kv_1", 64)[32768]).kernels
    assert not full.latency_bound and full.predicted_time_s == pytest.approx(full.memory_time_s, rel=0.1)


def test_unsplit_slowdown_at_128k_batch_one_within_a_quarter(data):
    """The lesson the notebook draws: the measured cost of not splitting, and gpusim's prediction of it."""
    lesson = dm.unsplit_lesson(data, batch=1)
    assert lesson["cache tokens"] == 131072 and lesson["slowdown measured"] > 10
    assert lesson["slowdown predicted"] == pytest.approx(lesson["slowdown measured"], rel=0.25)


def test_fixed_cost_at_small_caches(data):
    cost = dm.fixed_cost(data, batch=1, upto=4096)
    assert (cost["from"], cost["to"]) == (1024, 4096)
    assert cost["bytes growth"] > 3 > 2 > cost["time growth"]  # the bytes grow, the time hardly does
    assert "1,024" in dm.fixed_cost_sentence(cost)


def test_agreement_counts_rows(data):
    whole, long = dm.agreement(data), dm.agreement(data, min_cache=32768)
    assert whole["rows"] == 48 and long["rows"] == 18  # 3 batches x 8 lengths x 2 providers; 3 lengths >= 32K
    assert 0 <= whole["within"] <= whole["rows"] and whole["share"] == whole["within"] / whole["rows"]


def test_helps_most_table(data):
    bench = read("bench.json")
    rows = dm.helps_most(data, bench)
    assert [r["scenario"] for r in rows] == ["prefill, 4K prompt", "prefill, 16K prompt", "decode, 4K cache",
                                             "decode, 128K cache", "decode, 4K cache", "decode, 32K cache"]
    assert [r["memory-bound?"] for r in rows] == ["no", "no", "yes", "yes", "yes", "yes"]
    ridge = gpusim.get_gpu(dm.GPU)
    assert rows[0]["ridge point"] == ridge.matmul_flops_per_s("fp16") / ridge.hbm_bytes_per_s
    prefill = {r["provider"]: r for r in bench["rows"] if (r["seq"], r["dtype"], r["head_dim"], r["causal"]) ==
               (4096, "fp16", 128, True)}
    assert rows[0]["FA benefit, H200: torch's time / the fastest kernel's"] == prefill["torch_naive"]["ms"] / min(
        r["ms"] for p, r in prefill.items() if p not in STANDARD and r.get("ms"))
    assert all(r["FA benefit, H200: project's kernels"] is None for r in rows[2:])
    assert all(r["FA benefit, gpusim"] > 1 for r in rows)


def test_helps_most_divides_torch_by_one_basis_in_both_phases(data):
    """Notebook 8's table divided torch_naive by SDPA's FlashAttention-2 in prefill (1.6x slower there than cuDNN)
    and by the split-KV kernel in decode (about the fastest there): its rows compared two kernels, not two phases,
    and made decode look ahead of prefill at every row. Now every row divides by the fastest kernel measured at its
    shape that does not write S and P, the scorecard verdict's basis, and names it; the notebook says so."""
    from gpusim_course import prose
    bench = read("bench.json")
    rows = dm.helps_most(data, bench)
    shapes = [(r["seq"], r["batch"]) for r in bench["rows"] if r["provider"] == "torch_naive" and r.get("ms")
              and (r["dtype"], r["head_dim"], r["causal"]) == ("fp16", 128, True) and r["seq"] in (4096, 16384)]
    cells = [[r for r in bench["rows"] if (r["seq"], r["batch"], r["dtype"], r["head_dim"], r["causal"]) ==
              (n, b, "fp16", 128, True)] for n, b in sorted(shapes)]
    cells += [[r for r in data["rows"] if (r["batch"], r["seq_kv"]) == shape] for shape in dm.DECODES]
    assert len(cells) == len(rows)
    for row, cell in zip(rows, cells):
        timed = [r for r in cell if r.get("ms")]
        best = min((r for r in timed if r["provider"] not in STANDARD), key=lambda r: r["ms"])
        torch = next(r["ms"] for r in timed if r["provider"] == "torch_naive")
        assert row["FA benefit, H200: torch's time / the fastest kernel's"] == torch / best["ms"], row["scenario"]
        assert row["fastest kernel, H200"] == best["provider"]
    text = " ".join(prose.markdown(ROOT / "notebooks" / "08_inference.ipynb"))
    assert "The torch column has one basis in both phases" in text


STANDARD = ("naive", "torch_naive", "sdpa_math")  # the attentions that write S and P


def _over_fastest(rows):
    """torch_naive's time over the fastest kernel that does not write S and P, among rows of one shape."""
    timed = [r for r in rows if r.get("ms")]
    return next(r["ms"] for r in timed if r["provider"] == "torch_naive") / min(
        r["ms"] for r in timed if r["provider"] not in STANDARD)


def _prefill_over_decode(data):
    """{N: torch_naive over the fastest kernel in prefill (bench.json's fp16, d=128, causal rows) over the same in
    decode (decode.json, batch 1)}, and bench.json's torch_naive rows by N."""
    prefill = {n: [r for r in read("bench.json")["rows"] if (r["seq"], r["dtype"], r["head_dim"], r["causal"]) ==
                   (n, "fp16", 128, True)] for n in dm.timed(data["rows"], "torch_naive", 1)}
    prefill = {n: rows for n, rows in prefill.items() if any(r["provider"] == "torch_naive" for r in rows)}
    ratios = {n: _over_fastest(rows) / _over_fastest([r for r in data["rows"] if (r["seq_kv"], r["batch"]) == (n, 1)])
              for n, rows in sorted(prefill.items())}
    return ratios, {n: next(r for r in rows if r["provider"] == "torch_naive") for n, rows in prefill.items()}


def test_the_scorecard_judges_prefill_against_decode_on_the_fastest_kernels(data):
    """The verdict row below notebook 8's table divided decode's torch_naive by sdpa_flash, 1.2-1.7x slower at batch
    1 than the split-KV kernels and cuDNN, though notebook 11 judges on the best kernel measured; and its predicted
    column priced a shape (32/8 heads, a 16K decode) the table it claimed to follow does not have. Recomputed here: at
    each N, torch_naive over the fastest kernel that does not write S and P, prefill over decode; gpusim's decode side
    is the table's own number."""
    from gpusim_course.scorecard import claims
    from gpusim_course.scorecard.claims_model import ratio_span
    ratios, _ = _prefill_over_decode(data)
    row = claims.prefill_decode(ROOT / "results" / "h200")
    assert row.measured.endswith(f"prefill / decode {ratio_span(list(ratios.values()), '{:.2f}')}")
    assert "sdpa_flash" not in row.measured  # the fastest nowhere, in either phase
    held = [n for n, x in ratios.items() if x > 1]
    assert row.judged.verdict == "holds under conditions" and row.judged.reason.startswith(
        f"measured {min(ratios.values()):.2f} to {max(ratios.values()):.2f} over {len(ratios)} cases")
    assert f"({len(held)} of {len(ratios)} cases)" in row.judged.reason
    table = dm.helps_most(data, read("bench.json"))[2]
    assert table["scenario"] == "decode, 4K cache" and table["batch"] == 1
    assert claims._decode_predicted(data, 4096, 1) == table["FA benefit, gpusim"]
    assert "notebook 8's table:" not in row.predicted and f"N = {min(ratios):,} to {max(ratios):,}" in row.predicted


def test_notebook8_reads_the_prefill_decode_verdict_as_it_is(data):
    """Notebook 8 reads the verdict: prefill gains more at the shorter lengths, decode at the longest, and gpusim
    draws that line elsewhere (its reason says where)."""
    from gpusim_course.scorecard import claims
    ratios, prefill = _prefill_over_decode(data)
    held = [x > 1 for x in ratios.values()]
    assert held == sorted(held, reverse=True) and held[0] and not held[-1]  # the shorter lengths hold, the longest not
    predicted = [claims._prefill_predicted(prefill[n]) / claims._decode_predicted(data, n, 1) > 1 for n in ratios]
    assert predicted != held and "disagrees" in claims.prefill_decode(ROOT / "results" / "h200").judged.reason
    text = " ".join("".join(c["source"]) for c in json.loads((ROOT / "notebooks" / "08_inference.ipynb").read_text())[
        "cells"])
    assert "prefill gains more than decode at the shorter lengths and decode at the longest" in text
    assert "gpusim, which prices the project's kernels, draws that line elsewhere" in text


def test_split_rule_sentence_says_why_the_slots_and_the_programs_differ():
    """Notebook 8 printed "the rule places 528" and then "512 programs": 528 is the slot budget (room for 66
    splits of 8 programs); 66 and 65 splits would leave their last splits empty, so the rule takes 64. The slots
    are one fewer per SM than it keeps resident: notebook 8 said "every SM's resident split blocks but one"."""
    from gpusim import decode
    from gpusim_course import prose
    launch = gpusim.simulate("split_kv", batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=131072, page_size=16,
                             gpu=dm.GPU).config
    slots, chunks = decode.split_slots(launch), int(launch.chunks.max())
    top = slots // 8
    assert top > launch.num_splits and -(-chunks // top) == -(-chunks // launch.num_splits)  # the same chunks each
    text = dm.split_rule_sentence(launch)
    assert f"fills up to {slots} slots (4 of each SM's 5), room for {top} split(s) of 8 programs; {top} down to " \
           f"{launch.num_splits + 1} splits would leave empty ones" in text
    assert text.endswith(f"num_splits = {launch.num_splits}, {8 * launch.num_splits} programs.")
    per_sm = decode.resident_programs(launch) // launch.gpu.sm_count
    assert slots == (per_sm - 1) * launch.gpu.sm_count  # one fewer per SM, not "every SM's blocks but one"
    assert f"({per_sm} per SM, {launch.gpu.sm_count} SMs); the rule fills up to {slots} slots ({per_sm - 1} of each " \
           f"SM's {per_sm})" in text
    notebook = " ".join(prose.markdown(ROOT / "notebooks" / "08_inference.ipynb"))
    assert not any(old in notebook for old in ("resident split blocks but one", "resident split blocks, the split"))
    assert "per SM one fewer than the split programs an SM keeps in flight" in notebook
    assert "`gpusim.decode.split_slots`: per SM, one fewer than the split programs an SM keeps resident" in notebook
    wide = gpusim.simulate("split_kv", batch=64, heads=32, kv_heads=8, head_dim=128, seq_kv=4096, gpu=dm.GPU).config
    assert "empty" not in dm.split_rule_sentence(wide) and "num_splits = 1," in dm.split_rule_sentence(wide)


def test_serving_splits_sentence_counts_the_points_where_the_rule_ran_fastest():
    """serving_splits.json read as the notebook prints it: per point the rule's count, the fastest and their ratio;
    the sentence's count of points where they agree recomputed from the file's rows."""
    data = read("serving_splits.json")
    points = dm.serving_splits(data)
    plan = [r for r in data["rows"] if r["provider"] == "plan_graph"]
    assert set(points) == {(r["batch"], r["seq_kv"]) for r in plan}
    for (batch, n), (rule, best, ratio) in points.items():
        here = {r["num_splits"]: r["ms_per_token"] for r in plan if (r["batch"], r["seq_kv"]) == (batch, n)}
        assert here[best] == min(here.values()) and ratio == here[rule] / here[best] >= 1
    agree = sum(rule == best for rule, best, _ in points.values())
    assert f"at {agree} of {len(points)} points" in dm.serving_splits_sentence(points)


def test_agreement_lines_say_what_agreement_counts(data):
    """The counts by plain code: decode.json's split_kv and split_kv_1 rows that ran (3 batches x 8 cache lengths x 2
    providers = 48; 3 of the lengths are 32K or more: 18), each priced by gpusim.simulate on the launch its fields
    name, and counted where |predicted / measured - 1| <= 0.2."""
    fields = ("batch", "heads", "kv_heads", "head_dim", "seq_kv", "dtype", "page_size", "num_splits")
    timed = [r for r in data["rows"] if r["provider"] in ("split_kv", "split_kv_1") and r.get("ms")]
    close = [r for r in timed if abs(gpusim.simulate("split_kv", gpu="H200-measured", **{f: r[f] for f in fields})
                                     .predicted_time_s * 1e3 / r["ms"] - 1) <= 0.2]
    count = {n: sum(r["seq_kv"] >= n for r in close) for n in (0, 32768)}
    assert (len(timed), sum(r["seq_kv"] >= 32768 for r in timed)) == (48, 18)
    assert dm.agreement_lines(data) == [
        f"gpusim within 20% of the measured time: {count[0]} of 48 split-KV rows, all cache lengths",
        f"gpusim within 20% of the measured time: {count[32768]} of 18 split-KV rows, caches of 32K tokens or more"]


def test_split_rule_launch_is_gpusims_split_kv_on_the_measured_h200(data):
    """The split count gpusim's rule picks is the one the kernel's rule ran on the H200: decode.json's split_kv row
    of the same launch (batch 1, 32 / 8 heads, d = 128, pages of 16) records it."""
    for n in (4096, 131072):
        (row,) = [r for r in data["rows"] if (r["provider"], r["batch"], r["seq_kv"]) == ("split_kv", 1, n)]
        assert (row["heads"], row["kv_heads"], row["head_dim"], row["page_size"]) == (32, 8, 128, 16)
        r = dm.split_rule_launch(seq_kv=n)
        assert r.config.num_splits == row["num_splits"] and r.config.seq_kv == (n,)  # one request
        want = gpusim.simulate("split_kv", batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=n, page_size=16,
                               num_splits=row["num_splits"], gpu="H200-measured")
        assert r.predicted_time_s == want.predicted_time_s


def test_decode_benefit_parts_multiply_out_to_the_tables_gpusim_column(data):
    """Notebook 8's table gives gpusim's decode benefit as 26x at a 128K cache, batch 1, far above prefill's, and the
    prose explained only torch's measured factor. The parts split gpusim's into the DRAM bytes (naive reads K and V
    once per query head: the group's factor once the cache outgrows the L2) times the bytes per second (at batch 1
    the naive softmax and PV kernels launch one program per query row, fewer than the SMs)."""
    table = [r for r in dm.helps_most(data, read("bench.json")) if r["scenario"].startswith("decode")]
    parts = dm.decode_benefit_parts(data)
    g = gpusim.get_gpu(dm.GPU)
    assert [(p["scenario"], p["batch"]) for p in parts] == [(r["scenario"], r["batch"]) for r in table]
    for p, row in zip(parts, table):
        assert p["benefit"] == row["FA benefit, gpusim"]
        assert p["bytes"] * p["rate"] == pytest.approx(p["benefit"])
        naive = gpusim.simulate("naive", batch=p["batch"], seq=1, seq_kv=int(p["scenario"].split()[1][:-1]) * 1024,
                                heads=32, kv_heads=8, head_dim=128, dtype="fp16", gpu=dm.GPU)
        assert p["fewest programs"] == min(k.programs for k in naive.kernels) and p["SMs"] == g.sm_count
    short, long = parts[0], parts[1]  # batch 1: a 4K cache (in the L2) and a 128K one
    kv = {n: 2 * n * 8 * 128 * 2 for n in (4096, 131072)}  # K and V bytes of one request, fp16
    assert kv[4096] < g.l2_bytes < kv[131072]
    assert short["bytes"] < 1.1 and long["bytes"] == pytest.approx(32 / 8, rel=0.05)
    assert long["fewest programs"] == 32 < g.sm_count and long["rate"] > long["bytes"]
    line = dm.decode_benefit_lines([long])[0]
    assert line == (f"decode, 128K cache, batch 1: {long['benefit']:.1f}x = {long['bytes']:.2f}x the DRAM bytes × "
                    f"{long['rate']:.2f}x the bytes per second (naive softmax and pv: {long['fewest programs']} "
                    f"programs for {g.sm_count} SMs)")


def test_notebook8s_prediction_prompt_counts_the_multiply_adds_the_table_prints(data):
    """Notebook 8 said a decode step "does two multiply-adds with each" cached element, i.e. 2 FLOPs per fp16 byte;
    its table prints about 4: each element meets one multiply-add per query head of its group (32 / 8 here)."""
    from gpusim_course import prose
    decode_rows = [r for r in dm.helps_most(data, read("bench.json")) if r["scenario"].startswith("decode")]
    group, itemsize = 32 // 8, 2
    for r in decode_rows:
        assert r["FLOPs per DRAM byte (gpusim)"] == pytest.approx(2 * group / itemsize, rel=0.1)
    text = "".join(prose.markdown(ROOT / "notebooks" / "08_inference.ipynb"))
    assert "two multiply-adds" not in text and "one multiply-add with each element per query head" in text


def test_batch_64s_evidence_is_the_serving_loops_forced_splits(data):
    """Notebook 8 said "at batch 64 splitting does not pay" over a panel where the rule gives num_splits = 1 at every
    length (comparison_rows compared a launch with itself: slowdown 1.000). The evidence is serving_splits.json's
    forced split counts at batch 64, each slower than one split, recomputed here; the text says so."""
    assert dm.rule_splits(data, 64) == [1]
    assert all(abs(r["slowdown measured"] - 1) < 0.01 for r in dm.comparison_rows(data, batch=64))
    serving = read("serving_splits.json")
    plan = [r for r in serving["rows"] if r["provider"] == "plan_graph" and r["batch"] == 64]
    one = {r["seq_kv"]: r["ms_per_token"] for r in plan if r["num_splits"] == 1}
    over = [r["ms_per_token"] / one[r["seq_kv"]] for r in plan if r["num_splits"] > 1]
    assert len(over) >= 2 * len(one) and min(over) > 1
    text = dm.forced_splits_sentence(dm.rule_splits(data, 64), dm.forced_splits(serving, 64))
    counts = ", ".join(map(str, sorted({r["num_splits"] for r in plan if r["num_splits"] > 1})))
    assert (f"every count tried ({counts}) ran slower than one split (+{100 * (min(over) - 1):.0f} to "
            f"+{100 * (max(over) - 1):.0f}% per token)") in text
    assert "the panel's split and num_splits=1 curves are one launch" in text
    cells = json.loads((ROOT / "notebooks" / "08_inference.ipynb").read_text())["cells"]
    notebook = " ".join("".join(c["source"]) for c in cells)
    assert "At batch 64 splitting does not pay" not in notebook
    assert "the serving loop's forced split counts can (the last line under the table): each ran slower" in notebook
    assert "measured.forced_splits_sentence(measured.rule_splits(decode_data, 64), measured.forced_splits(" in notebook


def test_a_share_of_the_copy_bandwidth_above_1_is_explained_and_its_range_stated(data):
    """comparison_rows' "split share of copy bandwidth" is 1.03-1.07 at batch 8 and 64 for caches >= 32K, and
    notebook 8 printed "reaches 100%" and said "most of the copy bandwidth". A copy reads and writes; the decode kernel
    only reads, and DRAM reads alone ran faster than a copy (the preset's read rate, from bandwidth.json): the shares
    stay under that, and the printed sentence gives their range."""
    shares = [r["copy_fraction"] for r in data["rows"] if r["provider"] == "split_kv" and r.get("ms")
              and r["seq_kv"] >= 32768]
    read_over_copy = gpusim.get_gpu(dm.GPU).hbm_read_bytes_per_s / data["copy_bytes_per_s"]
    assert 1 < max(shares) < read_over_copy
    text = dm.copy_share_sentence(dm.copy_shares(data))
    assert (f"the split kernel reaches {min(shares):.0%} to {max(shares):.0%} of the measured copy bandwidth. Above "
            f"100% is not a bug") in text and f"DRAM loads alone ran at {read_over_copy:.2f}x the copy's rate" in text
    cells = json.loads((ROOT / "notebooks" / "08_inference.ipynb").read_text())["cells"]
    notebook = " ".join("".join(c["source"]) for c in cells)
    assert "most of the copy bandwidth" not in notebook and "measured.copy_share_sentence(" in notebook
    assert "the kernel reaches the copy bandwidth or a little more: the copy reads and writes every byte" in notebook


def test_gpu_pair_sentence_divides_each_launch_and_counts_gpusims_rows_within_20_percent():
    """Hand-made rows: split_kv at batch 1 with 1K and 4K tokens (the H100 1.05x and 1.1x the H200's time), at batch 8
    with 16K and 64K (1.3x and 1.4x), at batch 1 with 8K (in neither range), and split_kv_1 at batch 1 with 1K (priced,
    not divided); an SDPA row (neither). Each H100 split row is timed at gpusim's own price on H100-measured times a
    factor either side of 20%, so the count is known: 3 of the 6 within."""
    def row(provider, batch, seq_kv, factor):
        splits = None if provider == "split_kv" else 1
        r = dict(provider=provider, batch=batch, seq_kv=seq_kv, heads=32, kv_heads=8, head_dim=128, dtype="fp16",
                 page_size=16, num_splits=splits)
        r["num_splits"] = dm.simulated(r, "H100-measured").config.num_splits
        return dict(r, ms=dm.predicted_ms(r, "H100-measured") * factor)

    h100 = [row("split_kv", 1, 1024, 1.1), row("split_kv", 1, 4096, 1.5), row("split_kv", 8, 16384, 0.9),
            row("split_kv", 8, 65536, 0.7), row("split_kv", 1, 8192, 1.0), row("split_kv_1", 1, 1024, 1.3),
            dict(provider="sdpa_flash", batch=1, seq_kv=1024, ms=0.01)]
    factors = (1.05, 1.1, 1.3, 1.4, 2.0)
    h200 = [dict(r, ms=r["ms"] / f) for r, f in zip(h100, factors)] + [dict(h100[-1], ms=0.005)]
    assert dm.gpu_pair_sentence({"rows": h200}, {"rows": h100}) == (
        "The H100's split-KV time over the H200's for the same launch: 1.05 to 1.10x at batch 1 up to 4,096 tokens "
        "(a few launches), 1.30 to 1.40x from 16,384 (the cache read at DRAM's rate). gpusim on H100-measured prices 3 "
        "of the H100's 6 split-KV rows within 20%.")


def test_serving_tokens_price_a_token_as_its_layers_decode_launches_over_the_growing_cache():
    """Hand-made serving.json rows: the graphed plan at batch 1 with 1,000 tokens over 3 steps of 2 layers, timed at
    1.1x gpusim's own price (summed here launch by launch) and at batch 2 with 3,000 tokens at 0.5x; an eager row
    (not the graph) and a row that did not run are left out. The sentence counts one within 20% and names the other."""
    shape = dict(heads=32, kv_heads=8, head_dim=128, page_size=16, dtype="fp16")

    def price_ms(batch, seq_kv):
        splits = gpusim.simulate("split_kv", batch=batch, seq_kv=seq_kv, **shape, gpu="H200-measured").config.num_splits
        return 1e3 * 2 * sum(gpusim.simulate("split_kv", batch=batch, seq_kv=n, num_splits=splits, **shape,
                                             gpu="H200-measured").predicted_time_s for n in (seq_kv, seq_kv + 1,
                                                                                              seq_kv + 2)) / 3

    def row(provider, batch, seq_kv, ms):
        return dict(provider=provider, batch=batch, seq_kv=seq_kv, layers=2, steps=3, ms_per_token=ms)

    a, b = price_ms(1, 1000), price_ms(2, 3000)
    data = {"rows": [row("plan_graph", 1, 1000, a / 1.1), row("plan_graph", 2, 3000, b / 0.5),
                     row("plan_eager", 1, 1000, 9.0), row("plan_graph", 4, 1000, None)]}
    tokens = dm.serving_tokens(data)
    assert [(t["batch"], t["cache tokens"]) for t in tokens] == [(1, 1000), (2, 3000)]
    assert tokens[0]["gpusim ms per token"] == pytest.approx(a, rel=1e-12)
    assert [round(t["gpusim / measured"], 6) for t in tokens] == [1.1, 0.5]
    assert dm.serving_tokens_sentence(tokens) == (
        "gpusim on H200-measured prices 1 of the 2 points within 20% (1.10x its time over the measured); outside: "
        "batch 2 at 3,000 tokens 0.50x.")


def test_warm_cold_pairs_each_launchs_two_timings_and_the_sentence_splits_them_at_the_l2():
    """Hand-made short_cache.json rows: three launches, each cold and warm, of 4, 24 and 64 MiB of K and V. Against
    the H100's 50 MiB L2 the first two fit with room (at most two thirds of it) and the last does not; the sentence
    gives each group's warm over cold and sizes."""
    def row(batch, seq_kv, mib, warm, us):
        return dict(batch=batch, seq_kv=seq_kv, num_splits=16, cache_bytes=mib * 2**20, warm=warm, ms=us * 1e-3)

    data = {"rows": [row(1, 1024, 4, False, 10.0), row(1, 1024, 4, True, 7.0), row(1, 6144, 24, False, 20.0),
                     row(1, 6144, 24, True, 16.0), row(1, 16384, 64, True, 30.0), row(1, 16384, 64, False, 30.0)]}
    rows = dm.warm_cold(data)
    assert [(r["cache tokens"], r["K and V MiB"]) for r in rows] == [(1024, 4.0), (6144, 24.0), (16384, 64.0)]
    assert [round(r["warm / cold"], 9) for r in rows] == [0.7, 0.8, 1.0]
    assert rows[0]["cold µs"] == pytest.approx(10.0) and rows[0]["warm µs"] == pytest.approx(7.0)
    assert dm.warm_cold_sentence(rows, "H100-measured") == (
        "Read again from an L2 of 50 MiB, the launch took 0.70 to 0.80x its cold time where its K and V (4 to 24 MiB) "
        "fit, and 1.00x where they (64 MiB) do not.")

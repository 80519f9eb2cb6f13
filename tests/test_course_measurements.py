"""gpusim_course.measurements and the chapters' measured.py: the project's GPU results files, read and set beside
gpusim. Rows are made in the format of results/<gpu>/bench.json and tiles.json with times chosen so that
every ratio the tables print can be worked out by hand."""
import json
import re
from pathlib import Path

import pytest

import gpusim
from gpusim.units import fmt_bytes, fmt_time
from gpusim_course import measurements
from gpusim_course.formatting import span
from gpusim_course.hierarchy import measured as hierarchy_measured
from gpusim_course.practice import measured as practice_measured
from gpusim_course.tiling import measured as tiling_measured
from gpusim_course.provenance import measured as provenance_measured


def bench_row(provider, seq, ms, dtype="fp16", head_dim=128, causal=False, **extra):
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    return {"provider": provider, "dtype": dtype, "head_dim": head_dim, "causal": causal, "seq": seq, "batch": batch,
            "heads": heads, "ms": ms,
            "tflops": gpusim.nominal_flops(batch, heads, seq, head_dim, causal) / (ms * 1e-3) / 1e12,
            "peak_bytes": 2**30, "rel_err": 1e-3} | extra


def test_read_results_reads_the_json_or_says_where_it_should_be(tmp_path):
    with pytest.raises(FileNotFoundError, match="bench.json is not there: .* checkout of the repository"):
        measurements.read_results(tmp_path / "bench.json")
    (tmp_path / "bench.json").write_text('{"rows": [{"seq": 512}]}')
    assert measurements.read_results(tmp_path / "bench.json") == {"rows": [{"seq": 512}]}
    assert measurements.read_results(str(tmp_path / "bench.json"))["rows"][0]["seq"] == 512


def test_environment_line_names_gpu_versions_date_command_and_truncation():
    line = measurements.environment_line({"environment": {
        "gpu": "NVIDIA H200", "torch": "2.11", "date": "2026-11-29", "command": "python -m benchmarks.bench",
        "truncated": "stopped"}})
    assert line == ("Measured on NVIDIA H200: torch 2.11, date 2026-11-29; command: python -m benchmarks.bench; "
                    "note: stopped")
    assert measurements.environment_line({"gpu": "H", "command": "python -m benchmarks.ceilings"}) == (
        "Measured on H: ; command: python -m benchmarks.ceilings")  # ceilings.json: the fields at the top level


def test_a_command_run_before_the_benchmarks_moved_reads_as_it_runs_now():
    note = " (as it runs today; the run named the scripts where they were then)"
    assert measurements.command_now("python -m gpusim_kernels.bench --out x ; python -m gpusim_kernels.bench_bwd") == (
        "python -m benchmarks.bench --out x ; python -m benchmarks.bench_bwd" + note)
    assert measurements.command_now("python -m kernels.ncu metrics") == "python -m benchmarks.ncu metrics" + note
    assert measurements.command_now("python benchmarks/latency.py --out o") == "python -m benchmarks.latency --out o" + note
    assert measurements.command_now("python benchmarks/flash2_tiles.py --out o") == (
        "python benchmarks/flash2_tiles.py --out o (a script since replaced by python -m benchmarks.tiles, which writes "
        "tiles.json)")
    assert measurements.command_now("python -m benchmarks.ncu compare") == "python -m benchmarks.ncu compare"
    assert measurements.command_now("python -c 'import gpusim_kernels.decode'") == (
        "python -c 'import gpusim_kernels.decode'")  # a kernel module, not a moved benchmark


def test_ceilings_rows_divide_measured_by_datasheet():
    data = {"gpu": "NVIDIA H200", "date": "2026-11-29", "copy_bytes_per_s": 4.32e12,
            "matmul_float16_flops_per_s": 494.75e12, "matmul_fp8_e4m3_flops_per_s": 1979e12}
    rows = hierarchy_measured.ceilings_rows(data, gpu="H200")  # datasheet: 4.8 TB/s, 989.5 and 1,979 TFLOP/s
    assert [(r["quantity"], r["measured"], r["datasheet (preset)"], r["measured / datasheet"]) for r in rows] == [
        ("HBM bandwidth (copy)", "4.32 TB/s", "4.80 TB/s", "90%"),
        ("fp16 matmul", "494.75 TFLOP/s", "989.50 TFLOP/s", "50%"),
        ("fp8 matmul", "1,979.00 TFLOP/s", "1,979.00 TFLOP/s", "100%"),
        ("measured on", "NVIDIA H200, 2026-11-29", "H200", "")]


def test_bench_group_and_timed_by_seq_pick_rows():
    rows = [bench_row("naive", 1024, 2.0, head_dim=64), bench_row("naive", 2048, 3.0, head_dim=64),
            bench_row("naive", 1024, 5.0, head_dim=64, causal=True), bench_row("naive", 1024, 4.0, head_dim=128),
            {**bench_row("naive", 4096, 1.0, head_dim=64), "ms": None, "error": "OOM"},
            bench_row("flash2", 1024, 1.0, head_dim=64)]
    assert practice_measured.bench_group(rows, head_dim=64) == [rows[0], rows[1], rows[4], rows[5]]
    assert measurements.timed_by_seq(rows, "naive", head_dim=64) == {1024: rows[0], 2048: rows[1]}


def test_predictions_simulate_each_shape_of_a_group():
    rows = [bench_row(p, s, 1.0, head_dim=64) for s in (2048, 1024) for p in ("naive", "flash2")]
    got = practice_measured.predictions(rows, gpu="H200", algos=("naive", "flash2"))
    assert [r.config.seq for r in got["flash2"]] == [1024, 2048]
    r = got["naive"][0]
    assert (r.config.batch, r.config.heads, r.config.head_dim, r.config.dtype) == (16, 32, 64, "fp16")
    assert r.predicted_time_s == gpusim.simulate("naive", seq=1024, batch=16, heads=32, head_dim=64,
                                                 gpu="H200").predicted_time_s


def test_speedup_rows_divide_naive_by_flash2_and_say_when_pytorch_ran_out():
    rows = [bench_row(p, s, ms, head_dim=64) for s in (1024, 2048) for p, ms in
            (("naive", 3.0), ("flash2", 1.0), ("torch_naive", 4.0), ("sdpa_flash", 0.5))]
    rows[-2] = {k: v for k, v in rows[-2].items() if k != "ms"} | {"error": "OOM"}  # torch_naive at 2,048
    got = tiling_measured.speedup_rows(rows, head_dim=64)
    assert [r["measured: naive's time / flash2's"] for r in got] == ["3.0x", "3.0x"]
    last = got[-1]["measured: PyTorch's standard attention's time / SDPA flash's"]
    assert got[0]["measured: PyTorch's standard attention's time / SDPA flash's"] == "8.0x" and "out of memory" in last
    shape = dict(seq=1024, batch=16, heads=32, head_dim=64, gpu="H200-measured")
    predicted = gpusim.simulate("naive", **shape).predicted_time_s / gpusim.simulate("flash2", **shape).predicted_time_s
    assert got[0]["gpusim: naive's time / flash2's"] == f"{predicted:.1f}x"


def test_footprint_rows_set_measured_peaks_beside_gpusims_naive_footprint():
    seq, d = 32768, 64
    sim = gpusim.simulate("naive", seq=seq, batch=1, heads=32, head_dim=d, gpu="H200").hbm_peak_bytes
    rows = [bench_row("naive", seq, 1.0, head_dim=d, peak_bytes=sim),
            {**bench_row("torch_naive", seq, 1.0, head_dim=d), "error": "OOM"}]
    got = provenance_measured.footprint_rows(rows, gpu="H200", head_dims=(64,), providers=("naive", "torch_naive", "x"))
    assert [r["measured / gpusim"] for r in got] == ["1.000", "", ""]
    assert [r["measured peak"] for r in got] == [f"{sim / 2**30:.1f} GiB", "out of memory", "not run"]
    # At the peak, S and P in fp16 (2 x 32 heads x 32,768² x 2 B = 128 GiB) beside Q, K and V (3 x 128 MiB):
    # 128.375 GiB, 92% of the H200's 139.8 GiB.
    assert sim == 2 * 32 * seq * seq * 2 + 3 * 32 * seq * d * 2
    assert got[0]["gpusim (naive)"] == "128.4 GiB = 92% of H200"


def tile_row(algo, causal, ms, tile=(None, None), off_rule=False, seq=4096, head_dim=128):
    """A row in the format of results/h200/tiles.json; flash2 at the warps and stages its rule gives the tile, or
    (off_rule) at the sweep's other warp count, 12 minus the rule's."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    row = dict(algo=algo, dtype="fp16", head_dim=head_dim, causal=causal, seq=seq, batch=batch, heads=heads,
               block_q=tile[0], block_kv=tile[1], num_warps=None, num_stages=None, ms=ms)
    if algo == "flash2":
        cfg = gpusim.simulate("flash2", seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal,
                              block_q=tile[0], block_kv=tile[1], gpu="H200-measured").config
        warps, stages = cfg.pass_.launch(cfg, "flash2")
        row |= dict(num_warps=12 - warps if off_rule else warps, num_stages=stages)
    return row


def tile_fixture():
    """Two groups (d = 128, N = 4,096): without the mask 64 x 64 wins at 1.11x SDPA (an off-rule launch, left out,
    is faster still); with it 128 x 128 wins but loses to SDPA, 0.80x."""
    return [tile_row("sdpa_flash", False, 1.0), tile_row("flash2", False, 1.2, (128, 128)),
            tile_row("flash2", False, 0.9, (64, 64)), tile_row("flash2", False, 0.1, (64, 64), off_rule=True),
            tile_row("sdpa_flash", True, 0.4), tile_row("flash2", True, 0.5, (128, 128)),
            tile_row("flash2", True, 0.8, (64, 64)), {**tile_row("flash2", True, None, (32, 64)), "error": "x"}]


def test_tile_launches_keep_the_rule_launches_and_their_speed_against_sdpa():
    groups = practice_measured.tile_launches(tile_fixture())
    assert list(groups) == [(128, False, 4096), (128, True, 4096)]
    got = {key: [(r["block_q"], r["block_kv"], round(speed, 3)) for r, _, speed in g] for key, g in groups.items()}
    assert got == {(128, False, 4096): [(128, 128, 0.833), (64, 64, 1.111)],
                   (128, True, 4096): [(128, 128, 0.8), (64, 64, 0.5)]}


def test_tile_lesson_reports_every_group_losses_too():
    """The old lesson named the most common winner and quoted the speed of the groups it won only: with one group
    each, the 0.80x loss went unsaid."""
    assert practice_measured.tile_lesson(practice_measured.tile_launches(tile_fixture())) == [
        "d = 128: the fastest tile was 64 x 64 in 1, 128 x 128 in 1 of 2 groups; the fastest launch ran at 1.11x "
        "SDPA flash without the mask; 0.80x SDPA flash with the mask."]


def test_tile_rows_tick_the_measured_fastest_and_gpusims_pick():
    rows = tile_fixture()
    got = provenance_measured.tile_rows(rows)
    assert [(r["causal"], r["tile"], r["fastest measured"]) for r in got] == [
        (False, "128 x 128", ""), (False, "64 x 64", "✓"), (True, "128 x 128", "✓"), (True, "64 x 64", "")]
    assert got[1]["vs SDPA flash"] == "1.11x" and got[1]["warps"] == rows[2]["num_warps"]
    sims = [gpusim.simulate("flash2", seq=4096, head_dim=128, batch=4, heads=16, block_q=b, block_kv=b, causal=c,
                            gpu="H200-measured") for c in (False, True) for b in (128, 64)]
    picks = [gpusim.best_blocks("flash2", seq=4096, head_dim=128, batch=4, heads=16, causal=c, gpu="H200-measured")
             for c in (False, True)]
    assert [r["gpusim's pick"] == "✓" for r in got] == [picks[i // 2] == (b, b) for i, b in enumerate((128, 64) * 2)]
    assert [r["gpusim L2→SM"] for r in got] == [fmt_bytes(s.hbm_read_bytes) for s in sims]  # what ncu's l2_to_sm counts
    assert got[0]["gpusim predicted"] == fmt_time(sims[0].predicted_time_s)


def test_hopper_rows_and_summary_are_ratios_of_the_measured_times():
    rows = [bench_row("hopper", 4096, 1.0, rel_err=2e-4), bench_row("hopper", 4096, 0.75, dtype="fp8", rel_err=4e-2),
            bench_row("sdpa_cudnn", 4096, 0.9), bench_row("sdpa_flash", 4096, 1.5),
            bench_row("hopper", 8192, 2.0, rel_err=2e-4), bench_row("hopper", 8192, 1.6, dtype="fp8", rel_err=3e-2),
            bench_row("sdpa_cudnn", 8192, 1.9), bench_row("sdpa_flash", 8192, 3.2),
            bench_row("sdpa_cudnn", 16384, 9.0), {**bench_row("hopper", 16384, 0.1), "error": "OOM", "ms": None}]
    got = practice_measured.hopper_rows(rows, head_dim=128)
    assert [r["N"] for r in got] == [4096, 8192]  # 16,384: no Hopper time
    r = got[0]
    assert r["speed vs SDPA cuDNN"] == pytest.approx(0.9) and r["speed vs SDPA flash"] == pytest.approx(1.5)
    assert r["fp8 speed vs fp16"] == pytest.approx(1 / 0.75) and r["fp8 error / fp16 error"] == pytest.approx(200)
    # 4 x 16 heads x 4,096² x 128 x 4 FLOPs in 1 ms
    assert r["hopper fp16 TFLOP/s"] == pytest.approx(4 * 16 * 4096 * 4096 * 128 * 4 / 1e-3 / 1e12)
    batch, heads = gpusim.fa2_shape(4096, 128)
    p16, p8 = (gpusim.simulate("hopper", seq=4096, batch=batch, heads=heads, head_dim=128, dtype=dt,
                               gpu="H200-measured").predicted_time_s for dt in ("fp16", "fp8"))
    assert r["gpusim fp16 ms"] == pytest.approx(p16 * 1e3) and r["gpusim fp8 vs fp16"] == pytest.approx(p16 / p8)
    text = practice_measured.hopper_summary(rows, head_dim=128, min_seq=4096)
    assert "0.90 to 0.95x cuDNN's speed" in text and "1.50 to 1.60x SDPA's FlashAttention-2" in text
    assert "1.25 to 1.33x its fp16 speed" in text and "150 to 200x fp16's error" in text
    assert text.startswith("d = 128, N from 4,096 to 8,192:")


def test_the_shipped_results_name_their_run(tmp_path):
    """The course reads results/h200 as the notebooks do; each file names the GPU and the command."""
    results = Path(__file__).resolve().parents[1] / "results" / "h200"
    for name in ("bench.json", "ncu.json", "tiles.json", "ceilings.json"):
        line = measurements.environment_line(measurements.read_results(results / name))
        assert line.startswith("Measured on NVIDIA H200: ") and "command: " in line and "?" not in line
        assert "gpusim_kernels.bench" not in line  # the modules moved: a student copies what runs today
    assert json.loads((results / "ncu.json").read_text())["targets"]["time_s"] > 0


def test_tile_agreement_counts_gpusims_picks_and_the_fewest_bytes():
    """Without the mask gpusim's pick is the fastest; with it 3% slower than another tile, so within 5% only."""
    picks = {c: gpusim.best_blocks("flash2", seq=4096, head_dim=128, batch=4, heads=16, causal=c, gpu="H200-measured")
             for c in (False, True)}
    other = {c: (128, 64) if pick != (128, 64) else (64, 64) for c, pick in picks.items()}
    rows = [tile_row("sdpa_flash", c, 1.0) for c in (False, True)] + [
        tile_row("flash2", False, 0.9, picks[False]), tile_row("flash2", False, 1.2, other[False]),
        tile_row("flash2", True, 1.03, picks[True]), tile_row("flash2", True, 1.0, other[True])]
    fastest = {False: picks[False], True: other[True]}
    sims = {(c, t): gpusim.simulate("flash2", seq=4096, head_dim=128, batch=4, heads=16, block_q=t[0], block_kv=t[1],
                                    causal=c, gpu="H200-measured") for c in (False, True) for t in (picks[c], other[c])}
    hbm = {key: r.hbm_bytes for key, r in sims.items()}
    more = [hbm[c, fastest[c]] / min(hbm[c, picks[c]], hbm[c, other[c]]) for c in (False, True)]
    dram = max(sims[c, a].dram_read_bytes / sims[c, b].dram_read_bytes - 1 for c in (False, True)
               for a, b in ((picks[c], other[c]), (other[c], picks[c])))
    assert practice_measured.tile_agreement(practice_measured.tile_launches(rows)) == (
        f"The tile gpusim picks (flash2's default) was the measured fastest in 1 of 2 groups and within 5% of it in "
        f"2. The tile requesting the fewest bytes from L2 was the fastest in {sum(m == 1 for m in more)} of 2 groups; "
        f"the fastest requested {span(more, '{:.1f}')}x the fewest bytes of its group, while gpusim's L2 model "
        f"puts every tile's DRAM reads within {dram:.1%} of each other in each group.")


def test_tile_agreement_says_which_groups_the_time_model_was_fitted_on():
    """Notebook 6's "12 of 12" mixed the d = 64 groups, the rows ISSUE_HIDING and CONTENTION were fitted on, with the
    d = 128 groups they were not: the sentence now counts each half, recomputed here from tiles.json."""
    rows = measurements.read_results(Path(__file__).resolve().parents[1] / "results" / "h200" / "tiles.json")["rows"]
    groups = practice_measured.tile_launches(rows, gpu="H200-measured")
    won = {}
    for key, launches in groups.items():
        pick = gpusim.best_blocks("flash2", seq=key[2], head_dim=key[0], heads=launches[0][0]["heads"],
                                  batch=launches[0][0]["batch"], causal=key[1], dtype=launches[0][0]["dtype"],
                                  gpu="H200-measured")
        fastest = min(launches, key=lambda launch: launch[0]["ms"])[0]
        won.setdefault(key[0] == 64, []).append((fastest["block_q"], fastest["block_kv"]) == pick)
    text = practice_measured.tile_agreement(groups, gpu="H200-measured")
    assert len(won[True]) and len(won[False])
    assert (f"{sum(won[True])} of {len(won[True])} at d = 64, the rows the time model's two fitted constants were "
            f"fitted on, and {sum(won[False])} of {len(won[False])} at the other head dims, which they were not") in text


def test_padded_rows_read_both_runs_and_their_lesson_is_computed_from_them(tmp_path):
    """Notebook 6's padded rows: naive_gqa.json (rows N_kv apart) beside naive_rows.json (padded), and the sentence
    of ratios against the aligned neighbour, from a fixture whose numbers are known; nothing where a file is
    missing."""
    def write(name, us):
        rows = [dict(batch=1, heads=2, kv_heads=2, seq=n, head_dim=64, us=dict(zip(("qk", "softmax", "pv"), t)))
                for n, t in us.items()]
        (tmp_path / name).write_text(json.dumps({"rows": rows}))
    write("naive_gqa.json", {1000: (120, 110, 200), 1008: (100, 100, 100)})
    write("naive_rows.json", {1000: (100, 100, 101), 1008: (100, 100, 100)})
    rows = practice_measured.padded_rows(tmp_path)
    assert [(r["N"], r["N mod 16"], r["pv, µs: rows N_kv apart → padded"]) for r in rows] == [
        (1000, 8, "200 → 101"), (1008, 0, "100 → 100")]
    assert practice_measured.padded_rows_lesson(tmp_path) == (
        "At a length not a multiple of 16, against the aligned one 8 longer: rows N_kv apart, qk 1.20×, softmax "
        "1.10×, pv 2.00×; rows padded, qk 1.00×, softmax 1.00×, pv 1.01×. The aligned lengths, which the padding "
        "leaves as they were, took the same time in both runs.")
    write("naive_rows.json", {1000: (100, 100, 101), 1008: (100, 100, 100), 2048: (330, 300, 200)})
    write("naive_gqa.json", {1000: (120, 110, 200), 1008: (100, 100, 100), 2048: (300, 300, 202)})
    assert practice_measured.padded_rows_lesson(tmp_path).endswith(
        "moved too: qk at N = 2,048, d = 64 took 1.10× as long in the second run as in the first. Between the runs, "
        "qk's and pv's loads were also marked to skip L1, so each length is set against its aligned neighbour in its "
        "own run.")
    (tmp_path / "naive_rows.json").unlink()
    assert practice_measured.padded_rows(tmp_path) == [] and practice_measured.padded_rows_lesson(tmp_path) == ""


def test_l2_reuse_rows_set_the_measured_half_miss_point_beside_gpusims_rule():
    data = {"half_missed_at_bytes": {"every_sm": 32 * 2**20, "spread": 40 * 2**20, "own": 50 * 2**20}}
    rows = hierarchy_measured.l2_reuse_rows(data, gpu="H200")  # 60 MiB, two partitions: 30 and 40 MiB
    assert [(r["half the re-reads miss at"], r["gpusim's L2 for it"], r["gpusim / measured"]) for r in rows] == [
        ("32.0 MiB", "30 MiB of 60", "0.94"), ("40.0 MiB", "40 MiB of 60", "1.00"), ("50.0 MiB", "40 MiB of 60", "0.80")]


def test_l2_to_sm_sentence_sets_gpusims_bytes_beside_nsight_computes():
    """gpusim's side worked out by hand from FlashAttention-2's loop order, Nsight's read from ncu.json's row."""
    ncu = json.loads((Path(__file__).resolve().parents[1] / "results" / "h200" / "ncu.json").read_text())
    (row,) = [r for r in ncu["rows"] if (r["kernel"], r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
              ("flash2", "l2_to_sm_bytes", 4096, 64, False)]
    line = practice_measured.l2_to_sm_sentence(ncu["rows"], gpu=ncu["preset"], seq=4096, head_dim=64)
    blocks = tuple(map(int, re.match(r"gpusim \(blocks (\d+) x (\d+)\): ", line).groups()))  # the tile it names
    assert blocks == gpusim.best_blocks("flash2", seq=4096, head_dim=64, batch=4, heads=32, gpu=ncu["preset"])
    block_q = blocks[0]
    # The benchmark shape at N = 4,096, d = 64: 16K tokens / 4,096 = batch 4, 2048 / 64 = 32 heads. Q read once,
    # K and V once per Q block of block_q rows, fp16: 4 x 32 x 4,096 x 64 x 2 B x (1 + 2 x 4,096 / block_q);
    # at 128 rows, 8,388,608 B x 65 = 4,362,076,160 B.
    by_hand = 4 * 32 * 4096 * 64 * 2 * (1 + 2 * (4096 // block_q))
    assert f"{by_hand:,} B from L2 into the SMs" in line
    assert f"Nsight Compute: {row['measured']:,.0f} B" in line
    assert line.endswith(f"equal: {by_hand == row['measured']}")


def test_hopper_lines_pair_the_summary_and_the_model_sentence_per_mask():
    """The lines' measured spans worked out from bench.json with plain code, per mask: a line built from the other
    mask's rows, or a summary and a model sentence swapped, quotes other numbers."""
    rows = json.loads((Path(__file__).resolve().parents[1] / "results" / "h200" / "bench.json").read_text())["rows"]
    lines = practice_measured.hopper_lines(rows, head_dim=128, min_seq=4096)
    assert len(lines) == 6 and lines[2] == lines[5] == ""  # summary, model sentence, blank; per mask
    for causal, (summary, model) in ((False, lines[0:2]), (True, lines[3:5])):
        ms = {}
        for r in rows:  # the fp16 / fp8 rows of d = 128 from N = 4,096 on, by (provider, dtype, N)
            if r["head_dim"] == 128 and r["causal"] == causal and r["seq"] >= 4096 and r.get("ms"):
                ms[r["provider"], r["dtype"], r["seq"]] = r
        seqs = sorted(n for p, dt, n in ms if (p, dt) == ("hopper", "fp8"))
        assert seqs == [4096 << i for i in range(6)]  # 4,096 to 131,072, every length also timed in fp16

        def spread(values, fmt="{:.2f}"):
            return f"{fmt.format(min(values))} to {fmt.format(max(values))}"
        hop, fp8 = ([ms["hopper", dt, n] for n in seqs] for dt in ("fp16", "fp8"))
        cudnn, flash = ([ms[p, "fp16", n]["ms"] for n in seqs] for p in ("sdpa_cudnn", "sdpa_flash"))
        fp8_gain = [a["ms"] / b["ms"] for a, b in zip(hop, fp8)]  # speed ratios are time ratios, other over this
        mask = ", causal" if causal else ""
        assert summary.startswith(f"d = 128{mask}, N from 4,096 to 131,072: SDPA's cuDNN kernel ran at "
                                  f"{spread([ms['sdpa_cudnn', 'fp16', n]['tflops'] for n in seqs], '{:.0f}')} TFLOP/s")
        assert f"fp16 ran at {spread([c / h['ms'] for c, h in zip(cudnn, hop)])}x cuDNN's speed and " \
               f"{spread([f / h['ms'] for f, h in zip(flash, hop)])}x SDPA's FlashAttention-2" in summary
        assert f"in fp8 at {spread(fp8_gain)}x its fp16 speed" in summary
        assert f"with {spread([b['rel_err'] / a['rel_err'] for a, b in zip(hop, fp8)], '{:.0f}')}x fp16's error" \
               in summary
        best = max(h["tflops"] for h in hop)  # against the H200 datasheet's dense fp16 peak, 989.5 TFLOP/s
        assert f"best fp16 rate, {best:.0f} TFLOP/s, is {best / 989.5:.0%} of the datasheet's" in summary
        assert model.startswith(f"d = 128{mask}: gpusim predicts fp8 at ")
        assert f"the H200 measured {spread(fp8_gain)}x" in model
        times = {dt: [gpusim.simulate("hopper", seq=n, batch=h["batch"], heads=h["heads"], head_dim=128, causal=causal,
                                      dtype=dt, gpu="H200-measured").predicted_time_s for n, h in zip(seqs, hop)]
                 for dt in ("fp16", "fp8")}  # the model's own times, each shape as bench.json timed it
        predicted = [a / b for a, b in zip(times["fp16"], times["fp8"])]
        assert f"gpusim predicts fp8 at {spread(predicted)}x fp16, and fp16 times at " \
               f"{spread([t * 1e3 / h['ms'] for t, h in zip(times['fp16'], hop)])}x the measured" in summary
        assert f"gpusim predicts fp8 at {spread(predicted)}x fp16" in model
        gain = sum(m / p for m, p in zip(fp8_gain, predicted)) / len(seqs)  # measured over predicted, mean
        slower = sum(t * 1e3 / h["ms"] for t, h in zip(times["fp16"], hop)) / len(seqs)
        words = {True: ("more than", "slower than"), False: ("less than", "faster than")}
        gain_word = "about as much as" if abs(gain - 1) <= 0.05 else words[gain > 1][0]
        time_word = "about as fast as" if abs(slower - 1) <= 0.05 else words[slower > 1][1]
        assert f"the kernel gains {gain_word} the model says" in model
        assert f"gpusim's fp16 times are {spread([t * 1e3 / h['ms'] for t, h in zip(times['fp16'], hop)])}x the " \
               f"measured: {time_word} the kernel" in model


def test_the_provenance_table_prints_each_command_as_it_runs_today():
    """Notebook 12's table of results/h200: no command names a module that moved (gpusim_kernels.bench, kernels.ncu)
    or runs a benchmark as a file path, which the package benchmarks/ no longer supports."""
    from gpusim_course.provenance import measured
    rows = measured.provenance_rows(Path(__file__).resolve().parents[1] / "results" / "h200")
    commands = [r["command"] for r in rows]
    assert any("as it runs today" in c for c in commands)
    moved = r"(gpusim_kernels|kernels)\.(bench|ncu)|python benchmarks/(?!flash2_)"
    assert not [c for c in commands if re.search(moved, c)]


def test_an_nsight_folders_rows_hold_each_launch_once():
    """Notebook 12's H100 table: ncu.json's d = 64 rows and ncu_d128.json's d = 128 rows, every launch with its L2->SM
    bytes; the H200's folder, without an ncu_d128.json, as its ncu.json."""
    from gpusim_course.provenance import measured
    results = Path(__file__).resolve().parents[1] / "results"
    rows = measured.ncu_rows(results / "h100")
    l2 = [r for r in rows if r["quantity"] == "l2_to_sm_bytes"]
    launches = {(r["kernel"], r["seq"], r["head_dim"], r["causal"]) for r in rows if r["quantity"] == "dram_read_bytes"}
    assert len(l2) == len(launches) == len({(r["kernel"], r["seq"], r["head_dim"], r["causal"]) for r in l2})
    assert {r["head_dim"] for r in l2} == {64, 128}
    assert measured.ncu_rows(results / "h200") == json.loads((results / "h200" / "ncu.json").read_text())["rows"]


def test_notebook4s_nsight_table_counts_flash2s_bytes_by_hand_and_its_sentence_can_fail():
    """Notebook 4's check: per flash2 launch of ncu.json, the bytes requested worked out by hand from the loop order
    (Q read once, K and V once per Q block, O written, the LSE's fp32 row), Nsight's read from the file; a launch whose
    measured bytes are one sector off is no longer "equal", and the sentence's counts move with it."""
    results = Path(__file__).resolve().parents[1] / "results" / "h200"
    ncu = json.loads((results / "ncu.json").read_text())
    launches = tiling_measured.nsight_launches(ncu, json.loads((results / "manifest.json").read_text()))
    assert len(launches) == 16  # d 64 and 128, causal or not, N 1,024 to 32,768
    rows = tiling_measured.nsight_rows(launches)
    for x, row in zip(launches, rows):
        b, h, n, d, br = x["batch"], x["heads"], x["seq"], x["head_dim"], x["block_q"]
        assert b * n == max(n, 16384) and h * d == 2048  # the FlashAttention-2 benchmark's shape
        bc, tr, tc = x["block_kv"], -(-n // br), -(-n // x["block_kv"])
        # The (Q block, K/V block) tiles visited: all of them, or with the causal mask those whose first key is at
        # or before the Q block's last row; each reads a K and a V tile of bc x d, fp16.
        visits = sum(j * bc <= (i + 1) * br - 1 or not x["causal"] for i in range(tr) for j in range(tc))
        by_hand = b * h * (n * d * 2 + visits * bc * d * 2 * 2 + n * d * 2 + n * 4)  # Q; K and V; O; the LSE (fp32)
        assert by_hand == x["l2_to_sm_bytes"][0] + x["sm_to_l2_bytes"][0]
        assert row["K, V read (times)"] == visits / tc
        measured = {q: [r["measured"] for r in ncu["rows"] if (r["kernel"], r["quantity"], r["seq"], r["head_dim"],
                                                               r["causal"]) == ("flash2", q, n, d, x["causal"])]
                    for q in ("l2_to_sm_bytes", "sm_to_l2_bytes")}
        assert row["equal to the byte"] == ("yes" if sum(sum(v) for v in measured.values()) ==
                                            x["l2_to_sm_bytes"][0] + x["sm_to_l2_bytes"][0] else "no")
    sentence = tiling_measured.nsight_sentence(launches)
    equal = sum(r["equal to the byte"] == "yes" for r in rows)
    far = [x for x in launches if abs(x["dram_read_bytes"][1] / x["dram_read_bytes"][0] - 1) > 0.1]
    assert sentence.startswith(f"Nsight counted gpusim's requested bytes to the byte on {equal} of 16 launches.")
    assert f"on {16 - len(far)} of 16" in sentence
    counted, nsight = launches[0]["l2_to_sm_bytes"]
    launches[0]["l2_to_sm_bytes"] = (counted, nsight + 32)
    assert tiling_measured.nsight_rows(launches)[0]["equal to the byte"] == "no"
    assert f"on {equal - 1} of 16 launches" in tiling_measured.nsight_sentence(launches)


def test_split_count_sentence_is_decode_splits_json():
    """Notebook 8's split counts, recomputed from decode_splits.json at batch 1: the rule's count against filling every
    slot (5 an SM) and 2 programs an SM, the budget flash-attention's heuristic starts from (its pick is fewer)."""
    from gpusim_course.inference import measured as inference_measured
    data = measurements.read_results(Path(__file__).resolve().parents[1] / "results" / "h200" / "decode_splits.json")
    rows = [r for r in data["rows"] if r["batch"] == 1 and r["provider"] == "split_kv" and r.get("pdl")]
    times = {(r["seq_kv"], r["num_splits"]): r["ms"] for r in rows}
    rule = {r["seq_kv"]: r["num_splits"] for r in rows if r.get("default")}
    two = [times[seq, 132 * 2 // 8] / times[seq, rule[seq]] for seq in rule if (seq, 132 * 2 // 8) in times]
    sentence = inference_measured.split_count_sentence(inference_measured.split_counts(data))
    assert two and f"2 programs per SM (33 splits, the budget flash-attention's split heuristic starts from" in sentence
    assert f"{span(two)}x the rule's time" in sentence


def test_gpu_pair_sentence_divides_each_configuration_and_counts_gpusims_rows_within_20_percent():
    """Hand-made rows: flash2 timed at N = 1K and 4K on both GPUs (the H100 1.5x and 2x as long), naive at 1K on both
    (1.25x), a configuration the H200 lacks (not divided), SDPA's rows (not the project's: not priced). Each H100 row
    of the project's kernels is timed at gpusim's own price times a factor chosen either side of 20%, so the count is
    known: 2 of the 4 within."""
    def priced(algo, seq, factor):
        tiles = dict(block_q=64, block_kv=64)
        batch, heads = gpusim.fa2_shape(seq, 128)
        ms = gpusim.simulate(algo, seq=seq, batch=batch, heads=heads, head_dim=128, gpu="H100-measured",
                             **tiles).predicted_time_s * 1e3 * factor
        return bench_row(algo, seq, ms, **tiles)

    h100 = [priced("flash2", 1024, 1.1), priced("flash2", 4096, 1.3), priced("naive", 1024, 0.9),
            priced("flash2", 2048, 0.5), bench_row("sdpa_flash", 1024, 1.0)]
    h200 = [dict(h100[0], ms=h100[0]["ms"] / 1.5), dict(h100[1], ms=h100[1]["ms"] / 2),
            dict(h100[2], ms=h100[2]["ms"] / 1.25), bench_row("sdpa_flash", 1024, 0.5)]
    assert practice_measured.gpu_pair_sentence(h200, h100) == (
        "The H100's time over the H200's for the same configuration: flash2 1.50 to 2.00x, naive 1.25x. gpusim on "
        "H100-measured prices 2 of the H100's 4 rows of the project's kernels within 20%.")

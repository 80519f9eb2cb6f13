"""gpusim_course.training (model and measured): the numbers the training notebook shows, each checked by hand
or against the model, the Figure 2 table of docs/backward.md against what gpusim computes now, and the fwd + bwd
speedup's predicted side against gpusim.simulate(..., backward=True) (the measured side from results/h200/
bench_bwd.json, and from a CPU smoke run's file)."""
import json
import re
from pathlib import Path

import pytest

import gpusim
from gpusim import backward
from gpusim_course.training import measured as tm, model as training

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "tests" / "fixtures" / "bench_bwd_smoke.json"  # bench_bwd.py --smoke, interpreter


def test_saved_rows_grow_quadratically_for_naive_linearly_for_flash():
    small, big = training.saved_rows((1024, 8192), head_dim=64, heads=16)
    assert small["naive_P_bytes"] == 16 * 1024 * 1024 * 2
    assert (small["flash_O_bytes"], small["flash_LSE_bytes"]) == (16 * 1024 * 64 * 2, 16 * 1024 * 4)
    assert big["naive_P_bytes"] == 64 * small["naive_P_bytes"]  # 8x longer: 64x the bytes
    assert big["flash_O_bytes"] + big["flash_LSE_bytes"] == 8 * (small["flash_O_bytes"] + small["flash_LSE_bytes"])


def test_bytes_saved_per_layer_by_hand():
    n, d, h, e = 2048, 128, 32, 2
    assert training.bytes_saved_per_layer(n, d, h) == h * n * n * e - h * n * d * e - h * n * 4


def test_backward_steps_mark_the_recomputation():
    steps = training.backward_steps("flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True)
    kernels = [s["kernel"] for s in steps]
    assert kernels == sorted(kernels, key=["preprocess", "dkdv", "dq"].index)  # three launches in order
    tiles = [s for s in steps if s["recomputes"]]
    assert {s["kernel"] for s in tiles} == {"dkdv", "dq"} and all(s["tile"][1] is not None for s in tiles)
    assert all("P" not in s["loads"] for s in steps)  # P is never read: it is recomputed
    naive = training.backward_steps("naive", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True)
    assert not any(s["recomputes"] for s in naive) and any("P" in s["loads"] for s in naive)


def test_dq_updates_count_one_atomic_add_per_tile():
    rows = training.dq_updates(512, 64, block_q=128, block_kv=32, causal=True)
    cfg = backward.config("flash2", seq=512, head_dim=64, block_q=128, block_kv=32, causal=True)
    assert sum(r["atomic_adds"] for r in rows) == cfg.kv_tiling.tiles
    assert rows[0]["atomic_adds"] == 1 and rows[-1]["atomic_adds"] == 4  # the last rows see all 4 K/V blocks
    assert rows[-1]["atomic_bytes"] == 4 * 32 * 64 * 4  # 32 x 64 fp32 sent per add, reduced in L2 (no read back)
    assert {r["dq_kernel_write_bytes"] for r in rows} == {32 * 64 * 2}


def test_model_memory_rows_and_where_naive_runs_out():
    longest = training.longest_trainable(layers=24, heads=16, head_dim=64, batch=8, gpu="A100-40GB")
    rows = training.model_memory_rows((longest["naive"], longest["naive"] + 1), layers=24, heads=16, head_dim=64,
                                      batch=8, gpu="A100-40GB")
    assert rows[0]["naive_fits"] and not rows[1]["naive_fits"] and rows[1]["flash2_fits"]
    assert rows[0]["flash2_saved_bytes"] < rows[0]["naive_saved_bytes"] < rows[0]["naive_peak_bytes"]
    assert longest["flash2"] > 8 * longest["naive"]


def test_backward_flops_ratio():
    for causal in (False, True):
        ratios = training.backward_flops_ratio(seq=1024, head_dim=64, causal=causal)
        assert ratios["convention"] == 2.5
        assert ratios["naive"] == 2.0 and ratios["flash1"] == 2.5
        assert ratios["flash2"] == pytest.approx(3.5, rel=0.01)  # causal: its two kernels' partial tiles differ


def test_figure2_table_in_the_docs_is_what_gpusim_computes():
    doc = (ROOT / "docs" / "backward.md").read_text()
    for row in training.figure2_left():
        cells = " | ".join(f"{row[k]:.1f}" for k in ("fwd_GB", "bwd_GB", "total_GB", "dram_GB"))
        assert f"| {row['algo']} | {cells} |" in doc
    causal = {r["algo"]: f"{r['total_GB']:.1f}" for r in training.figure2_left(causal=True)}
    assert re.search(rf"naive {causal['naive']}, flash1 {causal['flash1']}, flash2 {causal['flash2']} GB", doc)


def test_backward_steps_give_each_tile_its_rows_and_keys():
    steps = training.backward_steps("flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True)
    dkdv = [s for s in steps if s["kernel"] == "dkdv" and s["recomputes"]]
    dq = [s for s in steps if s["kernel"] == "dq" and s["recomputes"]]
    assert all(s["rows"][1] - s["rows"][0] == 16 and s["keys"][1] - s["keys"][0] == 32 for s in dkdv)  # Bc x Br
    assert all(s["rows"][1] - s["rows"][0] == 32 and s["keys"][1] - s["keys"][0] == 16 for s in dq)  # Br x Bc
    assert all(s["keys"][0] <= s["rows"][1] - 1 for s in dkdv + dq)  # causal: no tile right of the diagonal
    naive = training.backward_steps("naive", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True)
    rows = [s for s in naive if s["kernel"] == "ds"]
    assert {s["rows"][1] - s["rows"][0] for s in rows} == {1} and rows[0]["keys"] == (0, 32)


def test_lse_recovers_p_to_roundoff():
    out = training.lse_recovers_p(seq=128, head_dim=32)
    assert out["P bytes per head"] == 128 * 128 * 2 and out["LSE bytes per head"] == 128 * 4
    assert out["max |P - exp(S - LSE)|"] < 64 * 2.0**-52  # a few float64 roundoffs of numbers <= 1


def test_dq_choice_rows_by_hand():
    n, d, br, bc = 512, 64, 128, 32
    rows = training.dq_choice_rows(n, d, block_q=br, block_kv=bc, causal=False, gpu="H200")
    separate, atomic = rows
    cfg = backward.config("flash2", seq=n, head_dim=d, block_q=br, block_kv=bc, gpu="H200")
    assert separate["bytes for dQ"] == sum(r + w for (k, _), (r, w) in backward.count(cfg).items() if k == "dq")
    assert separate["extra matmul FLOPs"] == 4 * d * n * n  # S and dP again, every score
    tiles = (n // bc) * (n // br)  # not causal: every dK/dV program meets every Q block
    assert atomic["bytes for dQ"] == tiles * bc * d * 4 + n * d * 4 + n * d * (4 + 2)
    assert separate["same result every run"] and not atomic["same result every run"]


def test_predicted_step_is_the_forward_and_backward_kernels_on_the_tiles_each_row_ran():
    data = tm.read_bench_bwd(ROOT / "results" / "h200" / "bench_bwd.json")
    rows = [r for r in data["rows"] if (r["provider"], r["pass"]) == ("flash2", "fwd+bwd") and r.get("ms")]
    assert len(rows) == 24  # d 64 and 128, causal or not, 6 lengths
    for r in rows:
        (shown,) = tm.speedup_rows(data, r["head_dim"], r["causal"], seqs=(r["seq"],))
        result = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"],
                                 causal=r["causal"], dtype="fp16", gpu="H200-measured", backward=True,
                                 backward_blocks=(r["block_q"], r["block_kv"]))
        assert {k.pass_ for k in result.kernels} == {"forward", "backward"}
        kernels_s = sum(k.predicted_time_s for k in result.kernels)  # a step costs at least the host's floor
        assert shown["flash2 predicted ms"] == max(kernels_s, result.config.gpu.train_step_host_s) * 1e3
        assert shown["predicted speedup"] > 1  # gpusim's naive kernels are slower at every length


def test_naive_step_runs_both_passes_on_the_backward_s_default_tiles():
    """As benchmarks/bench_bwd.py runs the project's naive attention: at d = 64, causal, N = 512 gpusim's forward
    alone would pick 64 x 64, but the trainable kernels share the backward's 128 x 128."""
    batch, heads = tm.shape(512, 64)
    call = dict(seq=512, head_dim=64, heads=heads, batch=batch, causal=True, gpu="H200-measured", backward=True)
    assert gpusim.best_blocks("naive", **{k: v for k, v in call.items() if k != "backward"}) == (64, 64)
    shared = gpusim.simulate("naive", **call, block_q=128, block_kv=128, backward_blocks=(128, 128))
    assert tm.step_s("naive", 512, 64, True) == shared.predicted_time_s
    assert tm.step_s("naive", 512, 64, True) != gpusim.simulate("naive", **call).predicted_time_s


def test_without_the_file_only_gpusim_s_side_on_its_default_tiles():
    missing = SMOKE.parent / "no_such_bench_bwd.json"
    assert tm.read_bench_bwd(missing) is None and tm.tiles(None, 64, False) is None
    assert "is not there yet" in tm.status_line(None, missing)
    rows = tm.speedup_rows(None, 64, False, seqs=(1024, 4096))
    assert [r["seq"] for r in rows] == [1024, 4096]
    assert all(r["measured, torch naive / flash2"] is None and r["flash2 measured ms"] is None for r in rows)
    naive, flash = (gpusim.simulate(algo, seq=4096, head_dim=64, heads=32, batch=4, gpu="H200-measured",
                                    backward=True).predicted_time_s for algo in ("naive", "flash2"))
    assert tm.shape(4096, 64) == (4, 32) and rows[1]["predicted speedup"] == naive / flash


def test_with_the_file_the_measured_ratios():
    data = tm.read_bench_bwd(SMOKE)
    assert "Measured on cpu" in tm.status_line(data, SMOKE)
    rows = tm.speedup_rows(data, 64, True, seqs=(64, 128))
    raw = {r["provider"]: r["ms"] for r in json.loads(SMOKE.read_text())["rows"] if
           (r["pass"], r["head_dim"], r["causal"], r["seq"]) == ("fwd+bwd", 64, True, 64) and r.get("ms")}
    assert rows[0]["measured, naive / flash2"] == raw["naive"] / raw["flash2"]  # the pair gpusim predicts
    assert rows[0]["measured, torch naive / flash2"] == raw["torch_naive"] / raw["flash2"]
    assert rows[0]["measured, torch naive / sdpa_flash"] == raw["torch_naive"] / raw["sdpa_flash"]
    assert rows[0]["flash2 measured ms"] == raw["flash2"]
    assert rows[1]["measured, torch naive / flash2"] is None  # N = 128 was not run


def test_comparison_sentence_with_and_without_measurements():
    rows = tm.speedup_rows(None, 64, False, seqs=(1024, 2048))
    assert tm.comparison_sentence({(64, False): rows}).endswith("nothing measured yet.")
    data = tm.read_bench_bwd(SMOKE)
    groups = {(64, causal): tm.speedup_rows(data, 64, causal, seqs=(64,)) for causal in (False, True)}
    sentence = tm.comparison_sentence(groups)
    over = sorted(g[0]["flash2 measured ms"] / g[0]["flash2 predicted ms"] for g in groups.values())
    assert f"takes {over[0]:.1f}x to {over[1]:.1f}x the time" in sentence and "(2 lengths and shapes)" in sentence
    mine = sorted(g[0]["measured, naive / flash2"] / g[0]["predicted speedup"] for g in groups.values())
    assert f"measure {mine[0]:.2f}x to {mine[1]:.2f}x the speedup gpusim predicts" in sentence


def test_speedup_groups_are_speedup_rows_per_head_dim_and_mask():
    """Each group's measured ratios read from bench_bwd.json with plain code at its own head_dim and mask, and
    its flash2 prediction on the tile the file's tuning chose for that group: a group built for the other mask
    or head dimension, or on another group's tile, shows other numbers."""
    path = ROOT / "results" / "h200" / "bench_bwd.json"
    raw = json.loads(path.read_text())
    groups = tm.speedup_groups(tm.read_bench_bwd(path), seqs=(1024,), gpu="H200-measured")
    assert list(groups) == [(64, False), (64, True), (128, False), (128, True)]
    for (d, causal), (row,) in groups.items():
        ms = {r["provider"]: r["ms"] for r in raw["rows"] if (r["pass"], r["head_dim"], r["causal"], r["seq"]) ==
              ("fwd+bwd", d, causal, 1024) and r.get("ms")}
        assert row["seq"] == 1024 and row["flash2 measured ms"] == ms["flash2"]
        assert row["measured, naive / flash2"] == ms["naive"] / ms["flash2"]
        assert row["measured, torch naive / flash2"] == ms["torch_naive"] / ms["flash2"]
        assert row["measured, torch naive / sdpa_flash"] == ms["torch_naive"] / ms["sdpa_flash"]
        (chosen,) = [t["chosen"] for t in raw["tuning"] if (t["head_dim"], t["causal"]) == (d, causal)]
        # 16K tokens / 1,024 = batch 16; 2048 / d heads
        flash2 = gpusim.simulate("flash2", seq=1024, head_dim=d, batch=16, heads=2048 // d, causal=causal,
                                 dtype="fp16", gpu="H200-measured", backward=True, backward_blocks=tuple(chosen))
        assert row["flash2 predicted ms"] == flash2.predicted_time_s * 1e3 and row["predicted speedup"] > 1


def test_comparison_sentence_without_torchs_rows_still_reports_flash2_and_naive():
    """A sweep that left torch's matmul-softmax-matmul out (the H100's) still has flash2 measured: the sentence says so,
    with no torch clause, where it once said nothing was measured."""
    data = tm.read_bench_bwd(SMOKE)
    data = dict(data, rows=[r for r in data["rows"] if r["provider"] != "torch_naive"])
    groups = {(64, causal): tm.speedup_rows(data, 64, causal, seqs=(64,)) for causal in (False, True)}
    sentence = tm.comparison_sentence(groups)
    over = sorted(g[0]["flash2 measured ms"] / g[0]["flash2 predicted ms"] for g in groups.values())
    assert f"; measured, flash2 takes {over[0]:.1f}x to {over[1]:.1f}x the time" in sentence
    assert "torch" not in sentence and "(2 lengths and shapes)" in sentence


def test_gpu_pair_sentence_divides_each_training_step_from_its_length_on():
    """Hand-made rows: flash2's step 1.5x and 0.9x as long on the H100 at N = 2,048 and 4,096, naive's 1.25x at 2,048;
    N = 1,024 (4x, before the length), a "bwd" row (3x, not a step), SDPA's row (2x, not the project's) and a shape
    only the H100 ran are left out."""
    def row(provider, seq, ms, pass_="fwd+bwd", head_dim=64):
        return dict(provider=provider, seq=seq, ms=ms, head_dim=head_dim, causal=False, **{"pass": pass_})

    h200 = [row("flash2", 2048, 2.0), row("flash2", 4096, 4.0), row("naive", 2048, 4.0), row("flash2", 1024, 1.0),
            row("flash2", 2048, 1.0, "bwd"), row("sdpa_flash", 2048, 1.0)]
    h100 = [row("flash2", 2048, 3.0), row("flash2", 4096, 3.6), row("naive", 2048, 5.0), row("flash2", 1024, 4.0),
            row("flash2", 2048, 3.0, "bwd"), row("sdpa_flash", 2048, 2.0), row("flash2", 2048, 9.0, head_dim=128)]
    assert tm.gpu_pair_sentence({"rows": h200}, {"rows": h100}) == (
        "The H100's training step (fwd + bwd) over the H200's for the same shape, N = 2,048 and longer: naive 1.25x, "
        "flash2 0.90x to 1.50x.")
    assert tm.gpu_pair_sentence(None, {"rows": h100}).startswith("The H200's bench_bwd.json is not there yet")

"""Notebook 13's course code (course/context*.py): the merge exercise's verdicts, the timeline widget's
numbers against gpusim, the zigzag picture's owners and balance, and the measured chart with and without
the two-GPU file."""
from pathlib import Path

import numpy as np

import gpusim
from gpusim_course.context import exercises as context_exercises, model as context, widgets as context_widgets

FIXTURE = Path(__file__).parent / "fixtures" / "cp_fixture.json"


def test_merge_exercise_accepts_the_solution_and_explains_the_usual_mistakes():
    assert context_exercises.check("merge_partials", context_exercises.merge_partials)
    assert context_exercises.check("merge_partials", lambda *a: None).status == "not yet"
    halves = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: ((o1 + o2) / 2, np.logaddexp(l1, l2)))
    assert halves.status == "wrong" and "Not halves" in halves.message
    maxed = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: (o1, np.maximum(l1, l2)))
    assert "only the larger part" in maxed.message


def test_timeline_widget_shows_gpusims_time_and_bytes():
    w = context_widgets.TimelineExplorer(gpus=4, seq=4096, link="pcie5", strategy="ring", causal=False)
    r = gpusim.simulate("flash2", seq=4096, gpus=4, strategy="ring", link="pcie5", **context.SHAPE)
    assert f"{r.predicted_time_s * 1e3:,.2f} ms" in w.readout.value
    assert f"{r.link_send_bytes / 1e6:,.1f} MB" in w.readout.value and "does <b>not</b> hide" in w.readout.value
    w.seq.value = 1048576
    assert "the transfer hides" in w.readout.value
    w.strategy.value = "ulysses"
    assert w.error is None and "no K/V moves under compute" in w.readout.value
    assert len(w.axes[0].patches) >= 4 * 3  # per GPU and step: the step, its compute, and any transfer


def test_zigzag_chunks_pair_an_early_with_a_late_one():
    assert context.chunk_owner(4, "zigzag") == [0, 1, 2, 3, 3, 2, 1, 0]
    assert context.chunk_owner(4, "ring") == [0, 0, 1, 1, 2, 2, 3, 3]
    ring, zig = (context.simulate(4, 16384, s, "nvlink4") for s in ("ring", "zigzag"))
    assert context.idle_share(zig) < 0.05 < 0.3 < context.idle_share(ring)
    assert len(context.zigzag_figure(4, 16384).axes) == 4


def test_measured_chart_with_and_without_the_file():
    assert context.read_measured(FIXTURE.parent / "absent.json") is None
    assert context.measured_status(None).startswith("Not measured yet")
    data = context.read_measured(FIXTURE)
    assert context.measured_status(data, FIXTURE).startswith("Measured on 2 x test fixture")
    lines = context.measured_figure(data).axes[0].get_lines()
    assert {line.get_label() for line in lines} >= {"ring", "zigzag", "single_flash2"}


def test_paper_rows_and_predictions_are_labelled():
    assert all(0.75 <= row["ours / paper"] <= 1.25 for row in context.paper_rows())
    rows = context.prediction_rows(contexts=(1 << 17,))
    assert {r["GPUs"] for r in rows} == {8, 64, 512}


def test_margin_lines_name_every_length_below_one():
    """Notebook 13 said USP's margin "stays above 1"; the table gives 0.77 at 512 GPUs, N = 131,072: the lines
    are computed from the rows, the prose no longer states it."""
    rows = [{"GPUs": 512, "strategy": "usp", "N": n, "overlap margin": m} for n, m in ((131072, 0.77), (524288, 1.9))]
    rows += [{"GPUs": 8, "strategy": "ulysses", "N": 131072, "overlap margin": "-"},
             {"GPUs": 8, "strategy": "ring", "N": 131072, "overlap margin": 3.0}]
    assert context.margin_lines(rows) == ["512 GPUs, usp: margin below 1 at N = 131,072 (0.77)",
                                          "8 GPUs, ring: margin 1 or more at every N"]
    real = context.prediction_rows(contexts=(1 << 17,))
    usp = next(r for r in real if (r["GPUs"], r["strategy"]) == (512, "usp"))
    assert (usp["overlap margin"] < 1) == any(line.startswith("512 GPUs, usp: margin below 1")
                                               for line in context.margin_lines(real))


def test_one_gpu_lines_set_one_layer_beside_every_layer_a_training_step_keeps():
    """One layer's attention fits one H200 at 1M tokens (notebook 13's max_context prints more than 7M); what a
    training step keeps for the backward, 32 layers of it, does not."""
    line = context.one_gpu_lines(seqs=(1 << 20,))[0]
    r = gpusim.simulate("flash2", seq=1 << 20, causal=True, **context.SHAPE)
    h200 = gpusim.get_gpu("H200").hbm_bytes
    assert r.hbm_peak_bytes < h200 < 32 * r.hbm_peak_bytes
    assert f"holds {r.hbm_peak_bytes / 2**30:.1f} GiB ({r.hbm_peak_bytes / h200:.0%} of one H200's HBM)" in line
    assert f"keep {32 * r.hbm_peak_bytes / 2**30:.0f} GiB for the backward ({32 * r.hbm_peak_bytes / h200:.1f}x" in line
    assert f"take {32 * r.predicted_time_s:.1f} s forward" in line


def test_send_lines_set_each_strategy_beside_the_rings_formula():
    """Notebook 13 wrote the ring's formula in a cell, 8 * 128 * 2 typed in: (P - 1) K and V shards of N / P tokens."""
    assert context.ring_send_bytes(4, 65536) == 3 * 2 * 16384 * 8 * 128 * 2
    ring = context.simulate(4, 65536, "ring", "nvlink4")
    assert context.send_lines(4, 65536, "nvlink4", ("ring",)) == [
        f"ring     : each GPU sends {ring.link_send_bytes:,} B "
        f"({ring.link_send_bytes / context.ring_send_bytes(4, 65536):.2f} x the ring's formula)"]


def test_max_context_lines_give_context_scalings_longest_sequence_per_gpu_count():
    """Notebook 13's motivation printed max_context from a loop in a cell, the layer's shape typed in."""
    lines = context.max_context_lines((1, 8))
    for p, line in zip((1, 8), lines):
        n = gpusim.context_scaling.max_context("zigzag", p, causal=True, heads=32, kv_heads=8, head_dim=128,
                                               dtype="bf16", gpu="H200")
        assert line == f"{p:3} x H200: one layer's attention fits up to N = {n:,} tokens"


def test_crossover_lines_give_the_closed_forms_shard_for_each_link():
    line, = context.crossover_lines(("pcie5",))
    mha, gqa = (context.crossover_tokens("pcie5", heads=32, kv_heads=kv) for kv in (32, 8))
    assert gqa == mha / 4  # the K/V heads a step receives: a quarter of multi-head attention's
    assert f"{mha:,.0f} tokens (MHA), {gqa:,.0f} (GQA 32/8)" in line and line.startswith("H200 over pcie5")


def test_shard_timeline_title_says_whether_the_transfer_hides():
    for seq in (16384, 262144):
        r = context.simulate(8, seq, "zigzag", "pcie5")
        title = context.shard_timeline_figure(8, seq, "pcie5").axes[0].get_title()
        assert f"shard {seq // 8:,} tokens" in title and f"(margin {r.overlap_margin:.2f})" in title
        assert ("transfer-bound" in title) == (r.overlap_margin < 1)
    assert context.simulate(8, 16384, "ulysses", "pcie5").overlap_margin is None  # all-to-alls overlap nothing
    assert context.shard_timeline_figure(8, 16384, "pcie5", "ulysses").axes[0].get_title().endswith(
        "no transfer overlaps compute")


def test_idle_lines_give_each_strategys_time_and_idle_share():
    lines = context.idle_lines(4, 16384, "nvlink4")
    for strategy, line in zip(("ring", "zigzag"), lines):
        r = gpusim.simulate("flash2", seq=16384, causal=True, gpus=4, strategy=strategy, link="nvlink4",
                            **context.SHAPE)
        assert line == f"{strategy:7}: {r.predicted_time_s * 1e3:7.2f} ms, GPUs idle {context.idle_share(r):.0%} " \
                       "of the time"


def test_strategy_rows_are_gpusims_time_bytes_and_peak_per_strategy():
    rows = context.strategy_rows(gpus=8, seq=16384, link="node8-nvlink4")
    assert [r["strategy"] for r in rows] == ["ring", "zigzag", "ulysses", "allgather"]
    for row in rows:
        r = gpusim.simulate("flash2", seq=16384, causal=True, gpus=8, strategy=row["strategy"], link="node8-nvlink4",
                            **context.SHAPE)
        assert row == {"strategy": row["strategy"], "ms (8 GPUs, N 16K, causal)": r.predicted_time_s * 1e3,
                       "MB sent per GPU": r.link_send_bytes / 1e6, "peak HBM per GPU (GB)": r.hbm_peak_bytes / 1e9}

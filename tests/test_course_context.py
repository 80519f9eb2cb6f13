"""Notebook 13's course code (course/context*.py): the merge exercise's verdicts, the timeline widget's
numbers against gpusim, the zigzag picture's owners and balance, and the measured chart with and without
the two-GPU file."""
import itertools
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim import links
from gpusim_course import prose
from gpusim_course.context import exercises as context_exercises, model as context, widgets as context_widgets

FIXTURE = Path(__file__).parent / "fixtures" / "cp_fixture.json"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _markdown(name):
    return prose.markdown(NOTEBOOKS / name)


def test_merge_exercise_accepts_the_solution_and_explains_the_usual_mistakes():
    assert context_exercises.check("merge_partials", context_exercises.merge_partials)
    assert context_exercises.check("merge_partials", lambda *a: None).status == "not yet"
    halves = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: ((o1 + o2) / 2, np.logaddexp(l1, l2)))
    assert halves.status == "wrong" and "Not halves" in halves.message
    maxed = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: (o1, np.maximum(l1, l2)))
    assert "only the larger part" in maxed.message
    assert context_exercises.check("merge_partials", lambda *a: list(context_exercises.merge_partials(*a)))
    words = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: ("o", l1))
    assert words.status == "wrong" and "returned o = 'o': return numbers" in words.message


def _at_tile(seq, causal=False, **cp):
    """gpusim's context-parallel pass at one GPU's best tile for all N, as the timeline explorer runs it."""
    one = gpusim.simulate("flash2", seq=seq, causal=causal, **context.SHAPE)
    return gpusim.simulate("flash2", seq=seq, causal=causal, block_q=one.config.block_q,
                           block_kv=one.config.block_kv, **cp, **context.SHAPE)


def test_timeline_widget_shows_gpusims_time_and_bytes():
    w = context_widgets.TimelineExplorer(gpus=4, seq=4096, link="pcie5", strategy="ring", causal=False)
    r = _at_tile(4096, gpus=4, strategy="ring", link="pcie5")
    assert f"{r.predicted_time_s * 1e3:,.2f} ms" in w.readout.value
    assert f"{r.link_send_bytes / 1e6:,.1f} MB" in w.readout.value and "does <b>not</b> hide" in w.readout.value
    w.seq.value = 1048576
    assert "the transfer hides" in w.readout.value
    w.strategy.value = "ulysses"
    assert w.error is None and "no K/V moves under compute" in w.readout.value
    r = _at_tile(1048576, gpus=4, strategy="ulysses", link="pcie5")
    drawn = {}  # kind: [(GPU lane, start ms, width ms)], one collection a GPU's lane
    for c in w.axes[0].collections:
        for path in c.get_paths():
            x, y = path.vertices[:, 0], path.vertices[:, 1]
            drawn.setdefault(c.get_label(), []).append((round(y.min() + 0.4), x.min(), x.max() - x.min()))
    for kind, field in (("_idle", "time_s"), ("_compute", "compute_s"), ("_transfer", "transfer_s")):
        steps = sorted((s.gpu, s.start_s * 1e3, getattr(s, field) * 1e3) for s in r.steps if getattr(s, field))
        assert len(drawn.get(kind, [])) == len(steps), kind  # each step's bar where gpusim puts it
        np.testing.assert_allclose(sorted(drawn.get(kind, [])), steps, rtol=1e-9, atol=1e-12)


def test_timeline_compares_p_gpus_with_one_at_one_tile():
    """8 GPUs at N = 1,048,576 (zigzag, causal) read 8.01x one GPU's speed: each shard's launches took their own best
    tile, one GPU another. At one GPU's tile for both the split is under 8x, and the readout names the tile."""
    w = context_widgets.TimelineExplorer(gpus=8, seq=131072, link="nvlink4", strategy="zigzag", causal=True)
    w.seq.value = 1048576
    one = gpusim.simulate("flash2", seq=1048576, causal=True, **context.SHAPE)
    r = _at_tile(1048576, causal=True, gpus=8, strategy="zigzag", link="nvlink4")
    assert w.result.predicted_time_s == r.predicted_time_s
    assert one.predicted_time_s / r.predicted_time_s <= 8
    assert f"({one.predicted_time_s / r.predicted_time_s:.3f}x), both at one tile, " \
           f"{one.config.block_q} × {one.config.block_kv}" in w.readout.value
    assert "More than" not in w.readout.value


def test_the_timeline_says_why_wherever_the_split_beats_p_times_one_gpu():
    """Over every setting of the explorer's controls: the readout explains a speedup above P exactly where there is one,
    and what it says holds: the GPUs' compute, for the same matmul FLOPs as one GPU's, adds up to less than its time."""
    for gpus, seq, link, strategy, causal in itertools.product(context_widgets.GPUS, context_widgets.SEQS, links.LINKS,
                                                               context_widgets.STRATEGIES, (False, True)):
        try:
            r, one = context.at_one_tile(gpus, seq, strategy, link, causal)
        except ValueError:  # ulysses with more GPUs than K/V heads: the explorer says so in its readout
            continue
        text = context.speedup_sentence(r, one)
        above = one.predicted_time_s / r.predicted_time_s > gpus
        assert ("More than" in text) == above, (gpus, seq, link, strategy, causal)
        if above:
            total = sum(r.gpu_compute_s)
            assert total < one.predicted_time_s and r.flops_matmul_by_step.sum() == one.flops_matmul
            assert f"compute adds up to {total * 1e3:,.2f} ms" in text


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
    assert (f"32 such layers (as many as Llama-3-8B has) keep {32 * r.hbm_peak_bytes / 2**30:.0f} GiB of attention "
            f"tensors alone for the backward ({32 * r.hbm_peak_bytes / h200:.1f}x") in line
    assert "weights, optimizer state and the MLP's activations come on top" in line  # what it leaves out, said
    assert f"take {32 * r.predicted_time_s:.1f} s forward in attention alone" in line


def test_one_gpu_lines_lend_the_model_its_layer_count_not_a_context_it_lacks():
    """Notebook 13's lines run at 128K and 1M tokens, past Llama-3-8B's longest context (8,192 tokens; Llama-3.1-8B,
    the same layers and heads, takes 131,072) and, at 1M, past every preset's. They said "Llama-3-8B's 32 layers keep
    ... GiB", the model at a context it does not have; only its layer count is meant."""
    from gpusim import kvcache
    lines = context.one_gpu_lines()
    assert len(lines) == 2 and kvcache.get_model("Llama-3-8B").max_tokens < 1 << 17
    for line in lines:
        assert "Llama-3-8B's" not in line and "32 such layers (as many as Llama-3-8B has) keep" in line


def test_send_lines_set_each_strategy_beside_the_rings_formula():
    """Notebook 13 wrote the ring's formula in a cell, 8 * 128 * 2 typed in: (P - 1) K and V shards of N / P tokens.
    Each strategy's bytes by hand (4 GPUs, N = 65,536: shards of 16,384 tokens; 8 K/V heads, 32 query heads,
    d = 128, bf16): the ring, zigzag and all-gather pass on 3 K and V shards; Ulysses' all-to-alls send 3/4 of
    each GPU's Q, K, V and O (32 + 8 + 8 + 32 heads)."""
    ring = 3 * 2 * 16384 * 8 * 128 * 2
    assert context.ring_send_bytes(4, 65536) == ring == 201_326_592
    ulysses = 3 * (16384 // 4) * (32 + 8 + 8 + 32) * 128 * 2
    assert ulysses == 251_658_240
    lines = context.send_lines(4, 65536, "nvlink4")
    assert lines == [f"ring     : each GPU sends {ring:,} B (1.00 x the ring's formula)",
                     f"zigzag   : each GPU sends {ring:,} B (1.00 x the ring's formula)",
                     f"ulysses  : each GPU sends {ulysses:,} B (1.25 x the ring's formula)",  # 80 / 64 heads
                     f"allgather: each GPU sends {ring:,} B (1.00 x the ring's formula)"]


def test_max_context_lines_give_context_scalings_longest_sequence_per_gpu_count():
    """Notebook 13's motivation printed max_context from a loop in a cell, the layer's shape typed in. The lengths by
    hand from the layer's bytes per token (32 query and 8 K/V heads, d = 128, bf16): one GPU keeps Q and O
    (2 x 32 x 128 x 2 B), K and V (2 x 8 x 128 x 2 B) and the fp32 LSE (32 x 4 B), 20,608 B; a GPU of a ring also
    its own K/V shard, kept while the others pass (4,096 B), a receive buffer (4,096 B) and the fp32 partial O and
    LSE (16,384 + 128 B), 45,312 B per token of its shard. The H200's HBM over that, down to a multiple of 2P
    tokens."""
    hbm = gpusim.get_gpu("H200").hbm_bytes
    one = 2 * 32 * 128 * 2 + 2 * 8 * 128 * 2 + 32 * 4
    ring = one + 2 * (2 * 8 * 128 * 2) + 32 * 128 * 4 + 32 * 4
    assert (one, ring) == (20_608, 45_312)
    n1, n8 = hbm // one // 2 * 2, hbm * 8 // ring // 16 * 16
    assert context.max_context_lines((1, 8)) == [
        f"  1 x H200: one layer's attention fits up to N = {n1:,} tokens",
        f"  8 x H200: one layer's attention fits up to N = {n8:,} tokens ({n8 / n1:.1f}x one GPU's)"]
    assert f"{n8 / n1:.1f}" == "3.6"  # 8 GPUs over 2.2 times the bytes per token


def test_for_one_layer_p_gpus_hold_well_under_p_times_one_gpus_context_and_the_prose_says_why():
    """Notebook 13 said "P GPUs hold a context about P times longer", then "about P/2", for one layer: each GPU of a
    ring also keeps its own K/V shard, a receive buffer and the fp32 partial O and LSE, which for this layer alone
    more than double its bytes per token (2.2x). A training step needs that workspace for one layer at a time beside
    every layer's kept tensors: there P GPUs come close to P times one GPU's context."""
    shape = dict(heads=32, kv_heads=8, head_dim=128, dtype="bf16", gpu="H200", link="nvlink4", causal=True)
    probe = 2 * 64 * 64  # a multiple of every GPU count's unit, 2P
    per_token = {p: gpusim.context_scaling.peak_bytes("zigzag", p, probe, **shape) * p / probe for p in (1, 8, 64)}
    assert per_token[8] == pytest.approx(45_312 / 20_608 * per_token[1])
    assert per_token[64] == pytest.approx(per_token[8])
    for line, p in zip(context.max_context_lines((8, 64)), (8, 64)):
        factor = float(line.split("(")[-1].split("x")[0])
        assert p / 2.5 < factor < p / 2
    layers = 32  # a training step keeps every layer's 20,608 B a token; the workspace is one layer's at a time
    kept = layers * per_token[1]
    assert 0.95 < kept / (kept + per_token[8] - per_token[1]) < 1
    text = " ".join("".join(_markdown("13_beyond_one_gpu.ipynb")).split())
    assert "for one layer on its own, P GPUs hold a context well short of P times one GPU's" in text
    assert "there P GPUs come close to P times one GPU's context" in text and "P/2" not in text


def test_crossover_lines_give_the_closed_forms_shard_for_each_link():
    line, = context.crossover_lines(("pcie5",))
    mha, gqa = (context.crossover_tokens("pcie5", heads=32, kv_heads=kv) for kv in (32, 8))
    assert gqa == mha / 4  # the K/V heads a step receives: a quarter of multi-head attention's
    assert f"{mha:,.0f} tokens (MHA), {gqa:,.0f} (GQA 32/8)" in line and line.startswith("H200 over pcie5")


def test_crossover_lines_give_each_links_factor_over_the_first():
    """Notebook 13's summary said "about six times more over PCIe or one InfiniBand NDR port", a figure no cell
    printed (5.6x and 7.2x): the lines print the factors, the prose says "several times"."""
    nv, pcie, ib = context.crossover_lines()
    first = context.crossover_tokens("nvlink4-h200-measured")
    assert "x nvlink4" not in nv
    for line, link in ((pcie, "pcie5"), (ib, "ib-ndr")):
        factor = context.crossover_tokens(link) / first
        assert factor > 2 and line.endswith(f"; {factor:.1f}x nvlink4-h200-measured's")
    assert "about six times" not in "".join(_markdown("13_beyond_one_gpu.ipynb"))


def test_step_line_shows_the_mask_halving_the_flops_and_the_rate_under_the_peak():
    """Notebook 13 explained gpusim's crossover below the closed form's by the rate alone; its zigzag steps under the
    mask also do half the closed form's FLOPs (which pushes the crossover up). The line prints both; the rate's
    shortfall must outweigh the halving, or the crossover would not sit below the closed form's."""
    peak = gpusim.get_gpu("H200").matmul_flops_per_s("bf16")
    for seq in (16384, 262144):
        r = context.simulate(8, seq, "zigzag", "pcie5")
        c, g = seq // 8, r.gpu_rank
        moving = [s for s, t in enumerate(r.step_transfer_s) if t]
        tight = min(moving, key=lambda s: r.compute_s[s, g] / r.step_transfer_s[s])
        flops, compute = r.flops_matmul_by_step[tight, g], r.compute_s[tight, g]
        share, rate = flops / (4 * c * c * 128 * 32), flops / compute
        assert share == pytest.approx(0.5, rel=0.05) and rate / peak < share  # compute longer than the closed form's
        line = context.step_line(8, seq, "pcie5")
        assert f"({share:.2f} of the closed form's 4c²dH) at {rate / 1e12:.0f} TFLOP/s ({rate / peak:.0%}" in line
        assert line.endswith(f"compute / transfer = {r.overlap_margin:.2f}")


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
    """The lines set each causal pass beside the unmasked one: notebook 13 said plain ring "takes about as long as
    with no mask" and printed no unmasked time to check it against."""
    lines = context.idle_lines(4, 65536, "nvlink4-h200-measured")
    share = {}
    for strategy, line in zip(("ring", "zigzag"), lines):
        r, full = (gpusim.simulate("flash2", seq=65536, causal=causal, gpus=4, strategy=strategy,
                                   link="nvlink4-h200-measured", **context.SHAPE, **one_gpus_tile(causal))
                   for causal in (True, False))
        share[strategy] = r.predicted_time_s / full.predicted_time_s
        assert line == f"{strategy:7}: {r.predicted_time_s * 1e3:7.2f} ms ({share[strategy]:.2f} x its " \
                       f"{full.predicted_time_s * 1e3:.2f} ms without the mask), GPUs idle " \
                       f"{context.idle_share(r):.0%} of the time"
    assert share["zigzag"] < 0.6 < 0.8 < share["ring"]  # ring saves little of the unmasked time, zigzag about half


def one_gpus_tile(causal):
    one = gpusim.simulate("flash2", seq=65536, causal=causal, **context.SHAPE)
    return dict(block_q=one.config.block_q, block_kv=one.config.block_kv)


def test_idle_lines_and_the_timeline_say_the_same_time_for_the_same_setting():
    """Notebook 13's timeline read 21.81 ms at 4 GPUs, N = 65,536, zigzag, causal, where the line below it said
    21.69 ms: the widget ran one GPU's tile, the lines each shard's own."""
    timeline = context_widgets.TimelineExplorer(gpus=4, seq=65536, strategy="zigzag", causal=True)
    zigzag = context.idle_lines(4, 65536, "nvlink4-h200-measured", strategies=("zigzag",))[0]
    assert f"{timeline.result.predicted_time_s * 1e3:7.2f} ms" in zigzag


def test_strategy_rows_are_gpusims_time_bytes_and_peak_per_strategy():
    """The bytes sent by hand (8 GPUs, N = 16,384: shards of 2,048 tokens, SHAPE's layer in bf16): the ring, zigzag
    and all-gather pass on 7 K and V shards of 8 heads; Ulysses sends 7/8 of a GPU's Q, K, V and O (80 heads). A
    ring GPU's peak: Q, O (32 heads), K, V (8) and the LSE, plus its own K/V shard (kept while the others pass), a
    receive buffer and the fp32 partial O and LSE, per token of its shard (45,312 B). The times are gpusim's
    (zigzag balances the mask: faster than ring)."""
    rows = context.strategy_rows(gpus=8, seq=16384, link="node8-nvlink4")
    assert [r["strategy"] for r in rows] == ["ring", "zigzag", "ulysses", "allgather"]
    ring_bytes, ulysses_bytes = 7 * 2 * 2048 * 8 * 128 * 2, 7 * (2048 // 8) * 80 * 128 * 2
    sent = {r["strategy"]: r["MB sent per GPU"] for r in rows}
    assert sent == {"ring": ring_bytes / 1e6, "zigzag": ring_bytes / 1e6, "ulysses": ulysses_bytes / 1e6,
                    "allgather": ring_bytes / 1e6}
    assert (ring_bytes, ulysses_bytes) == (58_720_256, 36_700_160)
    assert rows[0]["peak HBM per GPU (GiB)"] == 2048 * 45_312 / 2**30  # 92,798,976 B
    ms = {r["strategy"]: r["ms (8 GPUs, N 16K, causal)"] for r in rows}
    for strategy in ms:
        r = gpusim.simulate("flash2", seq=16384, causal=True, gpus=8, strategy=strategy, link="node8-nvlink4",
                            **context.SHAPE)
        assert ms[strategy] == r.predicted_time_s * 1e3
    assert ms["zigzag"] < ms["ring"]


def test_two_gpu_lines_read_the_model_chart_as_the_prose_does():
    """Notebook 13's two-GPU chart had no reading after it; the lines print gpusim's curves (the chart's MHA layer)
    and the prose after the chart says what they show: slower than one GPU at the shortest N, near twice one GPU's
    speed at the longest without the mask, and under it ring and all-gather well short of that."""
    speed = {}
    for causal in (False, True):
        ms = context.two_gpu_model(causal)
        for strategy in context.STRATEGIES:
            speed[causal, strategy] = [one / two for one, two in zip(ms[context.ONE_GPU], ms[strategy])]
    lines = context.two_gpu_lines()
    assert len(lines) == 8
    for line, key in zip(lines, speed):
        x = speed[key]
        assert f"{x[0]:.2f}x one GPU's speed at N = 1,024, {x[-1]:.2f}x at N = 262,144" in line
        faster = next(n for n, v in zip(context.TWO_GPU_SEQS, x) if v > 1)
        assert line.endswith(f"faster than one GPU from N = {faster:,}") and x[0] < 1
    assert all(speed[False, s][-1] > 1.9 for s in context.STRATEGIES)
    assert max(speed[True, "ring"][-1], speed[True, "allgather"][-1]) < 1.5
    assert min(speed[True, "zigzag"][-1], speed[True, "ulysses"][-1]) > 1.9
    labels = {line.get_label() for line in context.measured_figure(None).axes[0].get_lines()}
    assert labels == {f"{s} (model)" for s in context.STRATEGIES} | {"one GPU, flash2 (model)"}


def test_notebook13_defines_its_terms_before_the_cells_that_use_them():
    """"margin" titled notebook 13's timelines and "node8-nvlink4" headed its table before the prose said what they
    are; the overlap margin is defined with the overlap condition, the topologies with the table."""
    cells = _markdown("13_beyond_one_gpu.ipynb")
    at = {term: next(i for i, t in enumerate(cells) if term in t) for term in
          ("**overlap margin**", "`node8-nvlink4`", "Read the overlap margin column", "## Predictions past")}
    assert at["**overlap margin**"] < at["`node8-nvlink4`"] < at["## Predictions past"]


def float32_merge(o1, lse1, o2, lse2):
    """The reference formula in float32: the lse is a few 1e-7 off float64's."""
    return context_exercises.merge_partials(*(np.asarray(x, dtype=np.float32) for x in (o1, lse1, o2, lse2)))


def test_merge_exercise_accepts_float32_and_keeps_the_overflow_hint_for_overflow():
    """A 1e-9 tolerance refused float32's rounding of the exact formula, saying "np.logaddexp does it without
    overflow"; that hint is now for an lse that overflowed or is far off. log(exp(lse1) + exp(lse2)) passed every
    case, whose lse's were near 4: a fourth case's pass 709 (float64's exp overflows), as the puzzle's pass 88.7."""
    assert context_exercises.check("merge_partials", float32_merge).status == "right"

    def direct(o1, lse1, o2, lse2):  # log(exp + exp): right where it does not overflow
        lse = np.log(np.exp(lse1) + np.exp(lse2))
        return context_exercises.merge_partials(o1, lse1, o2, lse2)[0], lse

    with np.errstate(over="ignore"):  # the fourth case's lse's pass 709, where float64's exp overflows
        unstable = context_exercises.check("merge_partials", direct)
    assert unstable.status == "wrong" and "not finite" in unstable.message and "logaddexp" in unstable.message
    assert "709.8 in float64" in unstable.message
    with np.errstate(over="ignore"):
        overflowed = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: (
            o1, np.log(np.exp(np.float32(l1 * 100)) + np.exp(np.float32(l2 * 100))) / 100))
    assert overflowed.status == "wrong" and "not finite" in overflowed.message and "logaddexp" in overflowed.message
    far = context_exercises.check("merge_partials", lambda o1, l1, o2, l2: (o1, np.logaddexp(l1, l2) + 0.1))
    assert far.status == "wrong" and "np.logaddexp does it without overflow" in far.message
    # float16 is too coarse: close, and told so, without the overflow hint
    near = context_exercises.check("merge_partials", lambda *a: context_exercises.merge_partials(
        *(np.asarray(x, dtype=np.float16) for x in a)))
    assert near.status == "wrong" and "more than float32 rounding" in near.message and "overflow" not in near.message
    o_near = context_exercises.check("merge_partials", lambda *a: (
        context_exercises.merge_partials(*a)[0].astype(np.float16), context_exercises.merge_partials(*a)[1]))
    assert o_near.status == "wrong" and "the lse is right, O is off" in o_near.message
    assert "more than float32 rounding" in o_near.message

"""The training notebook's widget and figures: the stepper's readout and highlighted recomputation (its
question: tests/test_course_guess.py), and what each figure draws."""
import io
import math

import PIL.Image
import pytest

import gpusim
from gpusim import backward
from gpusim_course.training import measured as training_measured, model as training, plots as training_plots
from gpusim_course.training import widgets as training_widgets


def test_stepper_marks_recomputation():
    w = training_widgets.BackwardStepper(algo="flash2", causal=True)
    steps = training.backward_steps("flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True)
    first = next(i for i, s in enumerate(steps) if s["recomputes"])
    w.step.value = first + 1  # the slider counts steps from 1
    assert "recomputes S_ij, P_ij on chip" in w.readout.value and "Predict" not in w.readout.value
    alone = {(s["tile"][0] is None, s["tile"][1] is None): i for i, s in enumerate(steps)}
    for (no_q, no_kv), i in alone.items():  # the preprocess, dK_j and dV_j's stores, dQ_i's: None is not shown
        w.step.value = i + 1
        assert "None" not in w.readout.value and ("alone" in w.readout.value) == (no_q or no_kv)
    assert any(p.get_hatch() == "xx" for p in w.axes[0].patches)
    w.algo.value = "naive"
    w.step.value = w.step.max
    labels = [t.get_text() for t in w.axes[1].get_yticklabels()]
    assert {"P", "dP", "dS"} <= set(labels)
    width = PIL.Image.open(io.BytesIO(w.image.value)).size[0]
    assert width >= int(w.image.layout.width.removesuffix("px"))


def test_memory_figure_and_slopes():
    rows = training.model_memory_rows((2048, 4096, 8192), gpu="H200")
    slopes = training_plots.slopes(rows)
    assert slopes["flash2"] == pytest.approx(1.0, abs=1e-12)  # everything kept grows as N
    assert 1.9 < slopes["naive"] < 2.0  # P grows as N², Q, K and V as N
    longest = training.longest_trainable(gpu="H200")
    fig = training_plots.memory_figure(rows, gpusim.get_gpu("H200").hbm_bytes, "H200", longest)
    ax = fig.axes[0]
    assert len(ax.lines) == 5 and ax.get_legend() is not None
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.bbox.x1 - 1  # the legend sits right of the data


def test_dq_figure_counts_one_add_per_tile():
    fig = training_plots.dq_figure(seq=512, head_dim=64, block_q=128, block_kv=32, causal=True)
    adds = [t for t in fig.axes[0].texts if t.get_text() == "+="]
    cfg = backward.config("flash2", seq=512, head_dim=64, block_q=128, block_kv=32, causal=True)
    assert len(adds) == cfg.kv_tiling.tiles


def test_figure2_and_speedup_figures():
    rows = training.figure2_left()
    fig = training_plots.figure2_figure(rows, training.FIGURE2_PUBLISHED_GB)
    assert [line.get_ydata()[0] for line in fig.axes[0].lines] == [40.3, 35.3, 4.4]
    groups = {(64, False): training_measured.speedup_rows(None, 64, False, seqs=(1024, 2048))}
    fig = training_plots.speedup_figure(groups)
    assert fig.axes[0].lines[0].get_label() == "gpusim: naive's time / flash2's"
    assert len(fig.axes[0].lines) == 2  # the prediction and the line at 1x: nothing measured without the file


def test_figure2_legend_names_every_bar_color():
    """Issue 26: the legend missed the orange and blue bars (each algorithm's backward has its own color)."""
    fig = training_plots.figure2_figure(training.figure2_left(), training.FIGURE2_PUBLISHED_GB)
    legend = fig.axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    colors = {tuple(round(c, 3) for c in p.get_facecolor()) for p in fig.axes[0].patches if p.get_height() > 0
              and p.get_facecolor()[3] > 0 and p.get_facecolor()[:3] != (0.6, 0.6, 0.6)}
    shown = {tuple(round(c, 3) for c in h.get_facecolor()) for h in legend.legend_handles
             if hasattr(h, "get_facecolor")}
    assert colors <= shown, (colors, labels)
    assert {"backward, flash1 (SM side)", "backward, flash2 (SM side)"} <= set(labels)


def test_memory_sentence_gives_the_slopes_and_how_much_longer_flash_trains():
    """The slopes by hand from what each layer saves (24 layers, batch 8 x 16 heads, d = 64, fp16): naive Q, K, V
    (3 N d x 2 B) and P (N² x 2 B), FlashAttention-2 Q, K, V, O (4 N d x 2 B) and the fp32 LSE (4 N B); over
    N = 4,096 to 8,192 naive's slope is 1 + log2((3 x 64 + 8,192) / (3 x 64 + 4,096)) = 1.97, flash2's exactly 1.
    The longest lengths: the last at which gpusim.backward.model_memory says it fits, one token more does not."""
    rows = training.model_memory_rows((2048, 4096, 8192), gpu="H200")
    per_layer = {"naive": lambda n: 8 * 16 * (3 * n * 64 * 2 + n * n * 2),
                 "flash2": lambda n: 8 * 16 * (4 * n * 64 * 2 + 4 * n)}
    assert [(r["naive_saved_bytes"], r["flash2_saved_bytes"]) for r in rows] == [
        (24 * per_layer["naive"](n), 24 * per_layer["flash2"](n)) for n in (2048, 4096, 8192)]
    slope = {algo: math.log2(f(8192) / f(4096)) for algo, f in per_layer.items()}
    assert f"{slope['naive']:.2f}" == "1.97" and slope["flash2"] == 1.0
    longest = training.longest_trainable(gpu="H200")
    for algo, n in longest.items():
        fits = [backward.model_memory(algo, layers=24, heads=16, head_dim=64, batch=8, seq=s, gpu="H200")["fits"]
                for s in (n, n + 1)]
        assert fits == [True, False], algo
    line = training_plots.memory_sentence(rows, longest, "H200")
    assert line.startswith(f"log-log slopes: standard attention {slope['naive']:.2f}, FlashAttention-2 "
                           f"{slope['flash2']:.2f};")
    assert line.endswith(f"{longest['naive']:,} (standard) against {longest['flash2']:,} (FlashAttention-2), "
                         f"{longest['flash2'] / longest['naive']:.0f}x longer")

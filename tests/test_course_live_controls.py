"""The live controls issue 26 asked for in notebooks 2, 5 and 6: moving a control changes the number the
readout shows, and that number is gpusim's (or the H200's probe's)."""
import re
from pathlib import Path

import pytest

import gpusim
from gpusim_course import widget
from gpusim_course.practice import widgets as practice_widgets
from gpusim_course.standard import model as standard_model
from gpusim_course.standard import widgets as standard_widgets
from gpusim_course.tiling import widgets as tiling_widgets

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"


def _span(widget, cls):
    return re.search(rf"<span class='{cls}'>([^<]*)</span>", widget.readout.value).group(1)


def _naive_bytes(seq, head_dim, gpu="A100-40GB"):
    block_q, block_kv = standard_model.traffic_tile(gpu, head_dim)
    return gpusim.simulate("naive", seq=seq, head_dim=head_dim, gpu=gpu, block_q=block_q, block_kv=block_kv).hbm_bytes


def test_traffic_follows_n_and_d():
    w = standard_widgets.TrafficExplorer(seq=1024, head_dim=64)
    assert int(_span(w, "gpusim-traffic").replace(",", "")) == _naive_bytes(1024, 64)
    before = w.image.value
    w.seq.value = 4096
    assert int(_span(w, "gpusim-traffic").replace(",", "")) == _naive_bytes(4096, 64)
    assert w.image.value != before


def test_traffic_compares_at_one_stated_tile_so_the_ratio_grows_with_n():
    """The explorer priced each algorithm at gpusim.best_blocks' tile for its own N, d and GPU: its "x fewer" went 1.5,
    4.1, 3.2, 1.6, 1.6, 3.2, 4.1 as N grew, FlashAttention-2 moved more at d = 32 than at d = 64, and standard
    attention's bytes changed with the GPU at one SRAM rule's tile. At one tile for both, shown in the readout, the
    ratio never falls as N grows."""
    w = standard_widgets.TrafficExplorer(gpu="A100-40GB", seq=256, head_dim=64)
    ratios = []
    for seq in widget.SEQS:
        w.seq.value = seq
        c = w.naive.config
        assert (c.block_q, c.block_kv) == (w.flash.config.block_q, w.flash.config.block_kv)
        assert (c.block_q, c.block_kv) == standard_model.traffic_tile("A100-40GB", 64)
        assert f"<b>{c.block_q} × {c.block_kv}</b>" in w.readout.value
        ratios.append(w.naive.hbm_bytes / w.flash.hbm_bytes)
    assert ratios == sorted(ratios)


@pytest.mark.parametrize("gpu", list(gpusim.PRESETS))
def test_traffic_ratio_grows_with_n_and_flash2s_bytes_with_d(gpu):
    """Every GPU and head size the explorer offers: the ratio is non-decreasing in N; FlashAttention-2's bytes grow with
    d; and at one tile both algorithms read K and V alike (what FlashAttention-2 saves is S, P and Q's re-reads)."""
    for head_dim in widget.HEAD_DIMS:
        runs = [standard_model.traffic(seq, head_dim, gpu) for seq in widget.SEQS]
        ratios = [r["naive"].hbm_bytes / r["flash2"].hbm_bytes for r in runs]
        assert ratios == sorted(ratios), (head_dim, ratios)
        for r in runs:
            assert all(standard_model.moved(r["naive"], t) == standard_model.moved(r["flash2"], t) for t in "KV")
    flash = [standard_model.traffic(4096, d, gpu)["flash2"].hbm_bytes for d in widget.HEAD_DIMS]
    assert flash == sorted(flash)


def test_traffic_marks_a_tensor_never_moved_as_zero_not_as_a_byte():
    """FlashAttention-2 never moves S or P: no bar for them (a byte's bar had stretched the log axis down to 1e-6 MiB),
    a 0 at the axis' foot, a decade under the least tensor moved; every other bar reaches its tensor's MiB."""
    w = standard_widgets.TrafficExplorer(seq=1024, head_dim=64)
    ax = w.axes[0]
    flash = [_bytes(w.flash, t) / 2**20 for t in standard_widgets.TENSORS]
    naive = [_bytes(w.naive, t) / 2**20 for t in standard_widgets.TENSORS]
    floor = min(v for v in naive + flash if v) / 10
    assert flash[3] == flash[4] == 0 and ax.get_ylim()[0] == pytest.approx(floor)
    tops = sorted(round(p.get_y() + p.get_height(), 9) for p in ax.patches)
    assert tops == sorted(round(v, 9) for v in naive + flash if v)
    assert [t.get_text() for t in ax.texts] == ["0", "0"]


def _bytes(result, tensor):
    return sum(result.by_tensor[tensor].values()) if tensor in result.by_tensor else 0


def test_flash_compare_follows_the_tile_and_the_mask():
    w = tiling_widgets.FlashCompare(seq=2048)
    first = _span(w, "gpusim-ratio")
    w.block_kv.value = 128
    w.causal.value = True
    assert _span(w, "gpusim-ratio") != first and "causal" in w.readout.value


def test_sdpa_pick_reads_the_h200_probe(tmp_path):
    w = practice_widgets.SdpaPickExplorer(RESULTS)
    assert _span(w, "gpusim-sdpa-pick") == "CUDNN_ATTENTION"
    assert w.input.label == "fp16, d = 64, mask none"
    w.input.label = "fp16, d = 60, mask none"  # one list of the probe's inputs: no pick of three that it never ran
    assert _span(w, "gpusim-sdpa-pick") == "FLASH_ATTENTION" and len(w.input.options) == len(w.rows) == 11
    with pytest.raises(FileNotFoundError, match="not measured here"):
        practice_widgets.SdpaPickExplorer(tmp_path)


def test_notebook8_labels_whole_and_charts_within_the_page():
    """Issue 26: "block_kv (…" and "arrivals/st…" were cut, and a chart was wider than the page."""
    from gpusim_course.inference import plots as decode_plots, widgets as decode_widgets
    from gpusim_course.measurements import read_results

    stepper = decode_widgets.SplitKVStepper()
    paged = decode_widgets.PagedAllocation()
    assert stepper.block_kv.style.description_width == "initial"
    assert paged.per_step.style.description_width == "initial"
    assert paged.image.layout.max_width == "100%" and paged.image.layout.height == "auto"
    fig = decode_plots.flash_decoding_figure(read_results(RESULTS / "decode.json"))
    assert fig.get_size_inches()[0] <= 9
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    assert 0 <= legend.x0 and legend.x1 <= fig.bbox.x1  # the legend within the figure: no wider chart


def test_flash_compare_says_slower_where_flash2_is_predicted_slower():
    """On the T4 at 16 x 128 tiles flash2 is predicted slower than flash1: the readout said "0.52x faster"."""
    w = tiling_widgets.FlashCompare(gpu="T4", block_q=16, block_kv=128)
    f1, f2 = (w.results[a].predicted_time_s for a in ("flash1", "flash2"))
    assert f2 > f1 and "slower" in w.readout.value and "faster" not in w.readout.value
    assert float(_span(w, "gpusim-ratio")) == pytest.approx(f2 / f1, abs=0.005)
    w.gpu.value, w.block_q.value, w.block_kv.value = "A100-40GB", 64, 64
    assert "faster" in w.readout.value and float(_span(w, "gpusim-ratio")) > 1

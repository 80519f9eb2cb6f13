"""the chapters' explorers (gpusim_course.<chapter>.widgets), driven as a learner would: set a control's value, then
check the numbers and the plot data it produced against gpusim."""
import json
import math
import re

import pytest

import gpusim
from gpusim_course import block_sliders, tables, widget
from gpusim_course.hierarchy import widgets as hierarchy_widgets
from gpusim_course.practice import widgets as practice_widgets
from gpusim_course.standard import widgets as standard_widgets
from gpusim_course.tiling import block_sweep
from gpusim_course.tiling import widgets as tiling_widgets
from gpusim_course.block_sliders import BLOCK_LABELS, BLOCKS


def span(readout):
    """(bytes shown, config) of the one gpusim-hbm-bytes span in a readout."""
    found = re.findall(r"<span class=\"gpusim-hbm-bytes\" data-config='([^']*)'>([\d,]+)</span>", readout.value)
    assert len(found) == 1
    return int(found[0][1].replace(",", "")), json.loads(found[0][0])


def simulated_bytes(config):
    r = gpusim.simulate(**config)
    return r.hbm_read_bytes + r.hbm_write_bytes


@pytest.fixture(scope="module")
def explorer():
    return tiling_widgets.TilingExplorer(gpu="A100-40GB", seq=4096, head_dim=64, heads=16)


# ---------------------------------------------------------------------------------------------------
# TilingExplorer: the contract with the browser test, the SRAM limits, the plots


def test_explorer_offers_only_what_gpusim_runs_on_its_gpu():
    """The hopper pass needs a Hopper GPU and its kernel runs no fp32: the dropdowns offered both everywhere, and
    every such pick ended in gpusim's refusal."""
    ex = tiling_widgets.TilingExplorer(gpu="A100-40GB", seq=1024, head_dim=64, heads=1)
    assert "hopper" not in ex.algo.options and "fp32" in ex.dtype.options
    ex.gpu.value = "H200"
    ex.algo.value = "hopper"
    assert ex.result.config.algo == "hopper" and list(ex.dtype.options) == ["fp16", "bf16", "fp8"]
    assert (ex.head_dim.options, ex.head_dim.value) == ((64, 128), 64)  # its kernel runs two head dims
    ex.gpu.value = "A100-40GB"  # the pick goes back to flash2, fp32 and every head dim come back
    assert (ex.algo.value, ex.result.config.algo) == ("flash2", "flash2") and "fp32" in ex.dtype.options
    assert ex.head_dim.options == widget.HEAD_DIMS
    assert tables.runnable("H100-measured", "naive", (8, 64)) == (list(gpusim.ALGOS),
                                                                  tables.supported_dtypes("H100-measured"), [64])


def test_explorer_starts_at_gpusims_paper_blocks_and_shows_its_bytes(explorer):
    assert (explorer.block_q.value, explorer.block_kv.value) == gpusim.paper_blocks("flash2", "A100-40GB", 64, "fp16")
    assert (explorer.block_q.description, explorer.block_kv.description) == ("block_q (Br)", "block_kv (Bc)")
    shown, config = span(explorer.readout)
    assert config == explorer.config
    assert shown == simulated_bytes(config) == explorer.hbm_bytes
    assert f">{shown:,}</span>" in explorer.readout.value


@pytest.mark.parametrize("name, value", [("block_kv", 128), ("block_q", 64), ("block_kv", 32), ("block_q", 128)])
def test_a_block_slider_updates_the_bytes_and_the_plots(explorer, name, value):
    getattr(explorer, name).value = value
    shown, config = span(explorer.readout)
    assert config[name] == value and shown == simulated_bytes(config)
    r = gpusim.simulate(**config)
    tiling = r.config.tiling
    ax_grid, ax_thm, ax_heat = explorer.axes
    star = ax_thm.lines[-1]
    assert star.get_xdata()[0] == r.sram_bytes_per_block / 1024 and star.get_ydata()[0] == shown / 2**30
    cell = ax_heat.lines[-1]
    assert (cell.get_xdata()[0], cell.get_ydata()[0]) == (BLOCKS.index(config["block_kv"]),
                                                          BLOCKS.index(config["block_q"]))
    title = ax_grid.texts[-1].get_text()
    assert f"{tiling.n_q_blocks} x {tiling.n_kv_blocks} tiles of Br={config['block_q']} x Bc={config['block_kv']}" \
        in title


def test_block_q_sets_flash2s_k_and_v_traffic(explorer):
    for block_q in (32, 64, 128):
        explorer.block_q.value = block_q
        k = explorer.result.by_tensor["K"]["read_bytes"]
        assert k == math.ceil(4096 / block_q) * 4096 * 64 * 2 * 16  # K once per Q block, 16 heads, fp16


@pytest.mark.parametrize("old, new, snapped", [(64, 80, 128), (128, 112, 64), (32, 48, 64), (64, 48, 32)])
def test_a_slider_step_lands_on_the_next_power_of_two(explorer, old, new, snapped):
    explorer.block_kv.value = old
    explorer.block_kv.value = new
    assert explorer.block_kv.value == snapped
    assert span(explorer.readout)[1]["block_kv"] == snapped


def test_sliders_stop_where_sram_runs_out_and_say_why():
    ex = tiling_widgets.TilingExplorer(algo="flash1", gpu="T4", seq=1024, head_dim=256, heads=1)
    _, caps, limits = block_sliders.fit_blocks(ex.config)
    assert (ex.block_q.max, ex.block_kv.max) == (caps["block_q"], caps["block_kv"])
    assert ex.limits == limits and limits
    for name, (cap, message) in limits.items():
        assert f"{name} stops at {cap}: {message}" in ex.readout.value


def test_a_gpu_with_less_sram_resets_blocks_that_no_longer_fit():
    ex = tiling_widgets.TilingExplorer(gpu="H100-SXM", seq=2048, head_dim=128, heads=1)
    ex.block_q.value = 256
    ex.gpu.value = "T4"
    assert ex.error is None
    assert (ex.block_q.value, ex.block_kv.value) == gpusim.paper_blocks("flash2", "T4", 128, "fp16")
    assert span(ex.readout)[0] == simulated_bytes(ex.config)


def test_dtypes_follow_the_gpu():
    ex = tiling_widgets.TilingExplorer(gpu="H100-SXM", seq=1024, heads=1, dtype="fp8")
    assert "fp8" in ex.dtype.options
    ex.gpu.value = "A100-40GB"
    assert "fp8" not in ex.dtype.options and ex.dtype.value == "fp16" and ex.error is None


def test_the_panels_draw_the_sweeps(explorer):
    c = block_sweep.theorem2_curve(explorer.config)
    assert explorer.curve == c
    assert list(explorer.axes[1].lines[1].get_ydata()) == [b / 2**30 for b in c["flash"]]
    bq, bkv, seconds = explorer.best
    assert (bq, bkv, seconds) == block_sweep.best_blocks(block_sweep.block_grid(explorer.config))
    star = [line for line in explorer.axes[2].lines if line.get_marker() == "*"][0]
    assert (star.get_xdata()[0], star.get_ydata()[0]) == (BLOCKS.index(bkv), BLOCKS.index(bq))
    assert (explorer.axes[2].get_xlabel(), explorer.axes[2].get_ylabel()) == (BLOCK_LABELS["block_kv"],
                                                                              BLOCK_LABELS["block_q"])


def test_a_gpusim_error_is_a_line_in_the_readout_not_a_traceback():
    ex = tiling_widgets.TilingExplorer(seq=1024, heads=4)
    image = ex.image.value
    ex.heads = 0
    ex.refresh()
    assert ex.error == "heads=0 must be a positive integer"
    assert "gpusim:" in ex.readout.value and ex.image.value == image
    ex.heads = 4
    ex.refresh()
    assert ex.error is None and span(ex.readout)[0] == simulated_bytes(ex.config)


# ---------------------------------------------------------------------------------------------------
# The explorers of notebooks 1, 2, 5 and 7


def test_notebook1_gives_the_softmaxs_intensity_as_the_roofline_widget_computes_and_shows_it():
    """Notebook 1 called the softmax's intensity "a few FLOPs per byte" where the widget computes 1.25 at fp16 (and
    showed it rounded to 1.2): the text quotes the widget's value per dtype, and the widget's table shows it."""
    from pathlib import Path
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "01_memory_hierarchy.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in cells["cells"] if c["cell_type"] == "markdown")
    ex = hierarchy_widgets.RooflineExplorer(gpu="H100-SXM", seq=4096)
    shown = {}
    for dtype in ("fp16", "bf16", "fp32", "fp8"):
        ex.dtype.value = dtype
        (intensity,) = [i for name, i, _ in ex.points if name == "naive: softmax"]
        assert f">{intensity:g}<" in ex.readout.value  # the table shows 1.25, not 1.2
        shown[dtype] = f"{intensity:g}"
    assert shown["fp16"] == shown["bf16"] == "1.25"
    assert (f"at fp16 or bf16 that is {shown['fp16']} FLOPs per byte, the roofline widget's *FLOPs per byte "
            f"requested* for `naive: softmax` ({shown['fp32']} at fp32, {shown['fp8']} at fp8;") in text
    assert "a few FLOPs per byte" not in text


def test_roofline_ridge_point_follows_the_gpu_and_dtype():
    ex = hierarchy_widgets.RooflineExplorer(gpu="A100-40GB")
    assert ex.ridge == pytest.approx(312e12 / 1.555e12)  # the A100's fp16 tensor cores over its HBM
    for gpu, dtype in (("H100-SXM", "fp16"), ("H100-SXM", "fp8"), ("T4", "fp32")):
        ex.gpu.value = gpu
        ex.dtype.value = dtype
        g = gpusim.get_gpu(gpu)
        assert ex.ridge == g.matmul_flops_per_s(dtype) / g.hbm_bytes_per_s
        roof = ex.axes[0].lines[0]
        assert roof.get_ydata()[-1] == pytest.approx(g.matmul_flops_per_s(dtype) / 1e12)
        name, intensity, achieved = ex.points[-1]
        k = ex.results[1].kernels[0]
        assert name == "flash2" and intensity == (k.flops_matmul + k.flops_other) / (k.read_bytes + k.write_bytes)
        assert achieved == (k.flops_matmul + k.flops_other) / k.predicted_time_s


def test_footprint_explorer_finds_the_longest_sequence_that_fits():
    ex = standard_widgets.FootprintExplorer(gpu="A100-40GB", heads=1, head_dim=128)
    n = ex.limit["naive"]
    assert n == tables.largest_fitting_seq("naive", "A100-40GB", heads=1, batch=1, head_dim=128, dtype="fp16")
    ex.heads.value = 32
    assert ex.limit["naive"] < n
    line = ex.axes[0].lines[0]
    peaks = [gpusim.simulate("naive", seq=s, heads=32, head_dim=128, gpu="A100-40GB").hbm_peak_bytes
             for s in widget.LONG_SEQS]
    assert list(line.get_ydata()) == [p / 2**30 for p in peaks]


def test_footprint_explorer_finds_flash2s_limit_on_each_gpu():
    """FlashAttention-2's longest sequence read 16,777,216 (the old search's bound) on the A100-40GB and on the
    H200 alike: it is the GPU's own limit, more tokens on the larger HBM, and the readout says so."""
    ex = standard_widgets.FootprintExplorer(gpu="A100-40GB")
    a100 = ex.limit["flash2"]
    assert a100 == tables.largest_fitting_seq("flash2", "A100-40GB", heads=1, batch=1, head_dim=128, dtype="fp16")
    assert a100 > 1 << 24
    ex.gpu.value = "H200"
    assert ex.limit["flash2"] > a100
    assert f"FlashAttention-2: <b>{ex.limit['flash2']:,}</b>" in ex.readout.value


def test_waves_explorer_shows_gpusims_busy_fraction():
    ex = tiling_widgets.WavesExplorer(gpu="A100-40GB", batch=1, heads=8)
    for algo, rs in ex.curves.items():
        assert ex.busy[algo] == [r.kernels[0].busy_fraction for r in rs]
    assert ex.busy["flash1"] == pytest.approx([8 / 108] * len(ex.seqs))  # one thread block per head, 108 SMs
    assert "<td>8</td>" in ex.readout.value  # flash1's thread blocks
    ex.heads.value = 64
    assert ex.curves["flash1"][0].config.heads == 64
    assert list(ex.axes[0].lines[0].get_ydata()) == pytest.approx([64 / 108] * len(ex.seqs))


def test_overlap_explorer_draws_gpusims_per_tile_terms():
    ex = practice_widgets.OverlapExplorer(gpu="H100-SXM", seq=4096, head_dim=128)
    for ax, (algo, r) in zip(ex.axes, ex.results.items()):
        terms = ex.per_tile[algo]
        assert terms == tables.tile_terms(r)
        assert ax.get_title().endswith(f"one tile every {terms['period'] * 1e9:,.0f} ns"
                                       + (" if fully overlapped" if terms["overlapped"] else ""))
        assert [t.get_text() for t in ax.get_yticklabels()][0] == ("loads (TMA)" if algo == "hopper" else "loads")
        # loads, matmuls, softmax per tile
        assert len(ax.collections) == 3 * practice_widgets.OverlapExplorer.ITERATIONS
        # The first tile's softmax waits for S = QKᵀ (half the matmul time) or, overlapped, for both matmuls.
        first = ax.collections[2].get_paths()[0].vertices[:, 0].min()
        assert first == pytest.approx((terms["t_matmul"] if terms["overlapped"] else terms["t_matmul"] / 2) * 1e9)
    ex.dtype.value = "fp8"
    assert ex.results["hopper"].config.dtype == "fp8" and ex.results["flash2"].config.dtype == "fp16"


def test_overlap_explorer_says_its_compute_column_is_the_ideal_overlap_not_the_models():
    """The readout's t_compute for hopper is max(t_matmul, t_other), ideal ping-pong, beside a predicted time that holds
    a few percent of overlap: the readout said nothing, so the column read as the model's overlap."""
    ex = practice_widgets.OverlapExplorer(gpu="H100-SXM", seq=4096, head_dim=64)
    hopper, flash2 = (tables.time_terms(ex.results[a])[0] for a in ("hopper", "flash2"))
    assert hopper["t_compute"] == max(hopper["t_matmul"], hopper["t_other"])
    assert flash2["t_compute"] == pytest.approx(flash2["t_matmul"] + flash2["t_other"])
    assert hopper["predicted"] > 1.5 * hopper["t_compute"]  # far from the ideal, at this shape
    assert practice_widgets.T_COMPUTE in ex.readout.value and "ideal ping-pong" in practice_widgets.T_COMPUTE


def test_roofline_draws_each_kernel_at_its_requested_and_its_dram_intensity():
    ex = hierarchy_widgets.RooflineExplorer(gpu="H100-SXM", seq=4096, head_dim=64)
    for (name, intensity, achieved), dram, k in zip(ex.points, ex.dram_intensity,
                                                    [k for r in ex.results for k in r.kernels]):
        assert dram == (k.flops_matmul + k.flops_other) / (k.dram_read_bytes + k.dram_write_bytes)
        filled = [line for line in ex.axes[0].lines if line.get_label() == name][0]
        assert (filled.get_xdata()[0], filled.get_ydata()[0]) == (dram, achieved / 1e12)
        assert achieved <= dram * gpusim.get_gpu("H100-SXM").hbm_bytes_per_s * 1.001  # under the HBM roof
    assert "over L2's 8.1 TB/s" in ex.readout.value
    ex.dtype.value = "fp32"
    assert "(fp32 on the CUDA cores)" in ex.readout.value and "fp32 tensor cores" not in ex.readout.value


def test_the_overlap_explorer_says_whether_hopper_is_faster_or_slower():
    """Its readout said "flash2 …, hopper …: 0.67x", a ratio without a direction (flash2's time over hopper's, so
    below 1 meant hopper was slower, as at N = 512, d = 64). It now says how many times faster or slower hopper is."""
    ex = practice_widgets.OverlapExplorer(gpu="H100-SXM", seq=4096, head_dim=128)
    seen = set()
    for seq, head_dim in ((4096, 128), (512, 64), (512, 128), (1024, 64)):
        ex.seq.value, ex.head_dim.value = seq, head_dim
        f2, h = (ex.results[a].predicted_time_s for a in ("flash2", "hopper"))
        words = f"hopper is <b>{f2 / h:.2f}x faster</b>" if h < f2 else f"hopper is <b>{h / f2:.2f}x slower</b>"
        assert f"{words} than flash2." in ex.readout.value
        assert f"<b>{f2 / h:.2f}x</b>" not in ex.readout.value
        seen.add(h < f2)
    assert seen == {True, False}  # both cases shown (short sequences at d = 64 run slower on hopper)


def test_the_overlap_explorer_offers_hopper_gpus_only():
    ex = practice_widgets.OverlapExplorer(gpu="H100-SXM")
    assert list(ex.gpu.options) == tables.hopper_gpus() and "A100-40GB" not in ex.gpu.options


def test_the_waves_explorer_starts_at_the_benchmark_shape_and_says_it():
    ex = tiling_widgets.WavesExplorer(gpu="A100-40GB", seq=8192, head_dim=64)
    assert (ex.batch.value, ex.heads.value) == gpusim.fa2_shape(8192, 64)
    assert "batch 2 x 32 heads, N = 8,192, d = 64" in ex.readout.value


def test_the_overlap_explorer_offers_only_what_the_hopper_kernel_runs():
    """It offered fp32 (the kernel has none: kernels/hopper.py OUT_DTYPES) and d = 32 and 256 (refused, the previous
    figure left up); at fp8, d = 64 the launch table has no warp specialization, and the readout now says why the
    timeline is serial."""
    from gpusim.passes import hopper
    ex = practice_widgets.OverlapExplorer(gpu="H100-SXM", seq=4096, head_dim=128)
    assert list(ex.dtype.options) == ["fp16", "bf16", "fp8"] and tuple(ex.head_dim.options) == hopper.HEAD_DIMS
    assert "without warp specialization" not in ex.readout.value and ex.per_tile["hopper"]["overlapped"]
    ex.dtype.value, ex.head_dim.value = "fp8", 64
    assert not hopper.launch_options(ex.results["hopper"].config)["warp_specialize"]
    assert "fp8, d = 64 software-pipelined, without warp specialization" in ex.readout.value
    assert not ex.per_tile["hopper"]["overlapped"]

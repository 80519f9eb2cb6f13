"""the figures (gpusim_course.plots and the chapters' plots.py), checked by the data their artists hold (and the
charts' PNGs by their size), against gpusim and against tilings and rows worked out by hand."""
import json
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import PIL.Image
import pytest

import gpusim
from gpusim_course import plots, tables
from gpusim_course.practice import measured as practice_measured, plots as practice_plots
from gpusim_course.provenance import plots as provenance_plots
from gpusim_course.softmax import plots as softmax_plots
from gpusim_course.standard import plots as standard_plots
from gpusim_course.tiling import plots as tiling_plots

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def tiling(causal, seq=256, block=64, algo="flash2"):
    return gpusim.simulate(algo, seq=seq, head_dim=16, block_q=block, block_kv=block, causal=causal).config


def test_fa2_shape_text_is_gpusims_benchmark_shape():
    assert plots.fa2_shape_text() == "batch = max(1, 16k / N), heads x d = 2048"
    assert gpusim.fa2_shape(1024, 64) == (16, 32)  # 16 x 1,024 = 16k tokens, 32 x 64 = 2048


def test_first_block_tiles_follow_each_loop_order():
    """N = 256 in 4 x 4 tiles of 64: FlashAttention-2's first thread block walks Q block 0's row (one tile
    under the causal mask), FlashAttention-1's walks K/V block 0's column, naive's S = QKᵀ is one tile."""
    assert plots.first_block_tiles(tiling(False)).tolist() == [[1, 1, 1, 1]] + [[0] * 4] * 3
    assert plots.first_block_tiles(tiling(True)).tolist() == [[1, 0, 0, 0]] + [[0] * 4] * 3
    assert plots.first_block_tiles(tiling(True, algo="flash1")).tolist() == [[1, 0, 0, 0]] * 4
    assert plots.first_block_tiles(tiling(False, algo="naive")).sum() == 1
    assert plots.first_block_tiles(tiling(False), limit=15) is None


def test_score_grid_draws_the_causal_staircase_the_lines_and_the_tile():
    fig, ax = plt.subplots()
    plots.score_grid_axes(ax, 256, 256)
    assert ax.get_xlim() == (0, 256) and ax.get_ylim() == (256, 0)
    cfg = tiling(True)
    done = plots.first_block_tiles(cfg)
    image, stairs, lines, tile, title = plots.draw_score_grid(ax, cfg.tiling, tile=(1, 0), done=done)
    assert np.array_equal(image.get_array(), done)
    # Masked: right of the diagonal blocks, a staircase of 64-row steps.
    assert stairs.get_xy()[:10].tolist() == [[256, 0], [64, 0], [64, 64], [128, 64], [128, 128], [192, 128],
                                             [192, 192], [256, 192], [256, 256], [256, 256]]
    assert sorted(map(tuple, np.array(lines.get_segments())[:, 0])) == [(0, 64), (0, 128), (0, 192), (64, 0),
                                                                         (128, 0), (192, 0)]
    assert (tile.get_x(), tile.get_y(), tile.get_width(), tile.get_height()) == (0, 64, 64, 64)
    assert title.get_text() == "S in 4 x 4 tiles of Br=64 x Bc=64"
    row = plots.draw_score_grid(ax, cfg.tiling, tile=(2, None))[-2]
    assert (row.get_x(), row.get_y(), row.get_width(), row.get_height()) == (0, 128, 256, 64)


def test_dense_score_grids_draw_every_nth_line():
    fig, ax = plt.subplots()
    _, lines, title = plots.draw_score_grid(ax, tiling(False, seq=4096, block=16).tiling)
    every = 16  # 256 tiles per side over GRID_MAX_LINES = 16: 15 lines per side, each 256 keys apart
    assert len(lines.get_segments()) == 2 * (256 // every - 1) == 2 * (plots.GRID_MAX_LINES - 1)
    assert lines.get_segments()[0][0][0] == every * 16
    assert title.get_text().endswith(f"\n(a line every {every} tiles)")


def test_score_grid_figure_sets_grids_side_by_side():
    fig = tiling_plots.score_grid_figure([tiling(False).tiling, tiling(True).tiling], ["plain", "causal"])
    assert [ax.get_xlabel() for ax in fig.axes] == ["plain", "causal"]


def test_sweep_figure_plots_gpusims_predictions_and_speedups():
    results = gpusim.sweep(("naive", "flash2"), (1024, 32768), head_dim=64, gpu="A100-40GB")
    fig = tiling_plots.sweep_figure(results)
    ax_t, ax_s, ax_b, ax_m = fig.axes
    fitting = [r for r in results if r.config.algo == "naive" and r.fits_in_hbm]
    naive_time = ax_t.lines[0]
    assert list(naive_time.get_xdata()) == [r.config.seq for r in fitting]
    assert list(naive_time.get_ydata()) == [r.predicted_time_s * 1e3 for r in fitting]
    curve = gpusim.speedups(results)["flash2"]
    assert list(ax_s.lines[0].get_ydata()) == list(curve.values())
    assert ax_m.lines[-1].get_ydata()[0] == 40  # the A100-40GB's HBM in GiB
    assert fig._suptitle.get_text().endswith("batch = max(1, 16k / N), heads x d = 2048")


def test_sweep_figure_keeps_every_title_inside_the_saved_figure(tmp_path):
    """As provenance.plots saves it (the CLI's sweep.png): no panel's title cut at the figure's edge."""
    fig = tiling_plots.sweep_figure(gpusim.sweep(("naive", "flash2"), (1024, 4096), head_dim=64, gpu="A100-40GB"))
    fig.savefig(tmp_path / "sweep.png")  # lays the figure out as the saved file has it
    edge = fig.bbox
    for ax in fig.axes:
        box = ax.title.get_window_extent()
        assert edge.x0 <= box.x0 and box.x1 <= edge.x1, ax.get_title()


def test_time_terms_figure_bars_are_the_terms_in_microseconds():
    r = gpusim.simulate("naive", seq=4096, head_dim=64, gpu="A100-40GB")
    terms = tables.time_terms(r)
    ax = standard_plots.time_terms_figure([r], "naive").axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == [t[key] * 1e6 for key in ("t_memory", "t_matmul", "t_other", "predicted") for t in terms]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["naive: qk", "naive: softmax", "naive: pv"]


def test_ulp_figure_is_a_histogram_of_shares():
    ulps = np.array([0, 0, 0, 1, 3, 40, 16, 2])
    comparison = {"label": "x", "ulps": ulps, "equal_fraction": 3 / 8}
    ax = softmax_plots.ulp_figure([comparison]).axes[0]
    shares = [p.get_height() for p in ax.patches]
    assert len(shares) == softmax_plots.ULP_BINS + 1 and sum(shares) == pytest.approx(1)
    assert (shares[0], shares[1], shares[2], shares[3], shares[-1]) == (3 / 8, 1 / 8, 1 / 8, 1 / 8, 2 / 8)
    assert ax.get_title() == "x: 37.5% bit-identical"


def bench_rows():
    """bench.json rows at d = 64 in the FlashAttention-2 benchmark shape: naive 2 ms, flash2 0.5 ms."""
    rows = [{"provider": p, "dtype": "fp16", "head_dim": 64, "causal": False, "seq": s, "ms": ms, "tflops": 1.0,
             "peak_bytes": 2**30, "rel_err": 1e-3} | fa2(s) for p, ms in (("naive", 2.0), ("flash2", 0.5))
            for s in (1024, 2048)]
    return rows + [{"provider": "naive", "dtype": "fp16", "head_dim": 64, "causal": False, "seq": 4096, "error": "OOM"}
                   | fa2(4096)]


def fa2(seq):
    return dict(zip(("batch", "heads"), gpusim.fa2_shape(seq, 64)))


def test_bench_figure_measured_speedup_and_gpusims_beside():
    group = bench_rows()
    predicted = {algo: [gpusim.simulate(algo, seq=s, head_dim=64, gpu="H200", **fa2(s)) for s in (1024, 2048)]
                 for algo in ("naive", "flash2")}
    ax_t, ax_s, ax_m = practice_plots.bench_figure(group, predicted).axes
    speedup = {line.get_label(): list(line.get_ydata()) for line in ax_s.lines}
    assert speedup["flash2"] == [4.0, 4.0]  # 2 ms / 0.5 ms; the OOM row has no time
    predicted_speedup = gpusim.speedups(predicted["naive"] + predicted["flash2"])["flash2"]
    assert speedup["flash2 (gpusim)"] == list(predicted_speedup.values())
    assert [line.get_label() for line in ax_t.lines] == ["naive (measured)", "flash2 (measured)", "naive (gpusim)",
                                                          "flash2 (gpusim)"]


def test_bench_figure_has_one_legend_under_its_panels():
    """Notebook 6's figure names each line once, for the figure (it had the providers three times, a legend a panel)."""
    group = bench_rows()
    predicted = {"flash2": [gpusim.simulate("flash2", seq=s, head_dim=64, gpu="H200", **fa2(s)) for s in (1024, 2048)]}
    fig = practice_plots.bench_figure(group, predicted)
    assert not any(ax.get_legend() for ax in fig.axes) and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["naive (measured)", "flash2 (measured)",
                                                                   "flash2 (gpusim)"]
    fig.canvas.draw()
    legend, panels = fig.legends[0].get_window_extent(), [ax.get_window_extent() for ax in fig.axes]
    assert all(legend.y1 < box.y0 for box in panels)


def test_ncu_figure_plots_measured_against_simulated():
    rows = [{"kernel": k, "quantity": q, "measured": m, "simulated": s}
            for k, q, m, s in (("flash2", "time_s", 2e-3, 1e-3), ("qk", "time_s", 1e-3, 1e-3),
                               ("flash2", "l2_to_sm_bytes", 100, 100), ("qk", "l2_to_sm_bytes", 0, 5))]
    fig = provenance_plots.ncu_figure(rows)
    assert [ax.get_title() for ax in fig.axes] == ["time_s", "l2_to_sm_bytes"]
    points = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in fig.axes[0].lines[:2]}
    assert points == {"flash2": ([2e-3], [1e-3]), "qk": ([1e-3], [1e-3])}
    assert [line.get_label() for line in fig.axes[1].lines[:-1]] == ["flash2"]  # nothing measured: not drawn
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["flash2", "qk"]
    assert not any(ax.get_legend() for ax in fig.axes)  # one legend for the figure, not one a panel


def test_ncu_figure_wraps_its_panels_to_a_readable_width():
    """results/h200/ncu.json's seven quantities: two rows of at most four panels (not one row 25 inches wide, which
    the notebook shrinks past reading), every kernel once in the figure's legend."""
    rows = json.loads((RESULTS / "ncu.json").read_text())["rows"]
    fig = provenance_plots.ncu_figure(rows)
    quantities = list(dict.fromkeys(r["quantity"] for r in rows))
    assert len(quantities) == 7 and [ax.get_title() for ax in fig.axes] == quantities
    assert sorted({ax.get_subplotspec().rowspan.start for ax in fig.axes}) == [0, 1]
    assert fig.get_figwidth() <= 4 * 3.6
    fig.canvas.draw()
    assert not [t.get_text() for ax in fig.axes for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(dict.fromkeys(
        r["kernel"] for r in rows if r["measured"]))


def test_bench_chart_has_a_line_per_provider_and_panel():
    fig = provenance_plots.bench_chart(bench_rows(), "speedup", {"gpu": "G", "torch": "t", "triton": "3", "date": "d"})
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["flash2"] and list(ax.lines[0].get_ydata()) == [4.0, 4.0]
    assert [len(a.lines) for a in fig.axes] == [1, 0, 0, 0]
    assert fig._suptitle.get_text() == ("speedup over the project's naive kernels\nG, fp16, batch = max(1, 16k / N), "
                                        "heads x d = 2048; torch t, triton 3, d")


def test_bench_chart_names_each_provider_once_off_its_title():
    """Notebook 12's chart of results/h200/bench.json: one legend under the panels holding every provider of any panel
    (the fp8 Hopper kernel is in the TFLOP/s chart alone), clear of the two-line title it overlapped at the right, and N
    named under the bottom row only (the panels share it)."""
    rows = json.loads((RESULTS / "bench.json").read_text())["rows"]
    fig = provenance_plots.bench_chart(rows, "tflops", json.loads((RESULTS / "bench.json").read_text())["environment"])
    drawn = list(dict.fromkeys(line.get_label() for ax in fig.axes for line in ax.lines))
    assert "hopper fp8" in drawn and [t.get_text() for t in fig.legends[0].get_texts()] == drawn
    fig.canvas.draw()
    legend, title = fig.legends[0].get_window_extent(), fig._suptitle.get_window_extent()
    assert not legend.overlaps(title) and all(legend.y1 < ax.get_window_extent().y0 for ax in fig.axes)
    assert [ax.get_xlabel() for ax in fig.axes] == ["", "", "sequence length N", "sequence length N"]


def test_save_bench_figures_draws_the_three_charts_beside_the_json(tmp_path):
    shutil.copy(RESULTS / "bench.json", tmp_path / "bench.json")
    pngs = provenance_plots.save_bench_figures(tmp_path / "bench.json")
    assert [p.name for p in pngs] == ["bench_speedup.png", "bench_tflops.png", "bench_memory.png"]
    assert all(PIL.Image.open(p).size == (12 * 110, 8 * 110) for p in pngs)  # 12 x 8 inches at 110 dpi


def test_main_writes_the_figure_beside_the_json(tmp_path, capsys):
    (tmp_path / "s.json").write_text(json.dumps([r.to_dict() for r in gpusim.sweep(("naive",), (1024,))]))
    shutil.copy(RESULTS / "ncu.json", tmp_path / "ncu.json")
    assert provenance_plots.main(["sweep", str(tmp_path / "s.json")]) == 0
    assert provenance_plots.main(["ncu", str(tmp_path / "ncu.json")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 's.png'}\nwrote {tmp_path / 'ncu.png'}\n"
    assert PIL.Image.open(tmp_path / "s.png").size == (11 * 120, 8 * 120)


# make test's processes: tests/test_results.py's, so that the tests scoring the held-out sets price them once
@pytest.mark.xdist_group("perf_report")
def test_the_held_out_figure_holds_every_row_of_every_set_by_kind():
    from gpusim_course.provenance import heldout
    fig = provenance_plots.heldout_figure(RESULTS)
    ax = fig.axes[0]
    pairs = [p for path in heldout.files(RESULTS) for p in heldout.ratios(path)]
    points = [line.get_xdata() for line in ax.lines]
    assert sum(len(x) for x in points) == len(pairs) == 88 * len(heldout.files(RESULTS))
    for label, xs, tick in zip(heldout.KINDS.values(), points, ax.get_yticklabels()):
        mine = [x for kind, x in pairs if kind == label]
        assert list(xs) == mine
        assert tick.get_text() == f"{label}: {sum(abs(x - 1) <= 0.2 for x in mine) / len(mine):.0%} of {len(mine)}"


def test_bench_figures_draw_one_figure_per_head_dim_of_the_results():
    """Notebook 6 looped over d in a cell; bench_figures draws the fp16 groups of bench.json, gpusim's dashed."""
    rows = json.loads((RESULTS / "bench.json").read_text())["rows"]
    figures = practice_plots.bench_figures(rows, causal=False, head_dims=(64,), gpu="H200-measured")
    assert [f._suptitle.get_text() for f in figures] == ["d = 64: measured (solid) and gpusim (dashed)"]
    group = practice_measured.bench_group(rows, dtype="fp16", head_dim=64, causal=False)
    flash2 = practice_measured.predictions(group, gpu="H200-measured")["flash2"]
    ax_t = figures[0].axes[0]
    drawn = next(line for line in ax_t.lines if line.get_label() == "flash2 (gpusim)")
    assert list(drawn.get_ydata()) == [r.predicted_time_s * 1e3 for r in flash2]


def test_causal_grid_figure_sets_gpusims_plain_and_causal_tiles_side_by_side():
    fig = tiling_plots.causal_grid_figure(seq=256, head_dim=16, block=64)
    assert [ax.get_xlabel() for ax in fig.axes] == ["not causal", "causal: hatched tiles are skipped"]
    for ax, causal in zip(fig.axes, (False, True)):
        want = plt.figure().subplots()
        tiling_plots.score_grid_axes(want, 256, 256)
        tiling_plots.draw_score_grid(want, tiling(causal).tiling)
        assert len(ax.patches) == len(want.patches)


@pytest.mark.parametrize("kind, text, message", [
    ("sweep", None, "missing.json: No such file or directory"),  # was FileNotFoundError's traceback
    ("sweep", "nope", "x.json is not JSON (Expecting value, line 1)"),
    ("sweep", "{}", "x.json holds no sweep: expected a list of results, as `python -m gpusim sweep --out` writes"),
    ("bench", '[{"config": {}}]', 'x.json holds no bench rows: expected an object with "rows"'),  # was a TypeError
    ("ncu", '{"rows": []}', "x.json holds no ncu rows"),
])
def test_the_plots_command_refuses_a_file_it_cannot_draw_in_one_line(tmp_path, capsys, kind, text, message):
    path = tmp_path / ("missing.json" if text is None else "x.json")
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        provenance_plots.main([kind, str(path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err

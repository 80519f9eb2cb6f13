"""The FlashAttention paper's Figure 1 (hierarchy and tiling), drawn from gpusim's presets."""
import gpusim
from gpusim_course.hierarchy import model as hierarchy_model
from gpusim_course.hierarchy import plots as hierarchy_plots


def test_the_pyramid_reads_its_numbers_from_the_preset():
    rows = hierarchy_plots.hierarchy_rows("A100-40GB")
    g = gpusim.get_gpu("A100-40GB")
    assert rows[0][1] == f"{g.sram_bytes_per_s / 1e12:.0f} TB/s"
    assert rows[1][1] == "1.55 TB/s"  # the preset's 1,555 GB/s, as notebook 1's table gives it: not rounded to 1.6
    table = hierarchy_model.hierarchy_rows()
    for name in gpusim.PRESETS:  # every GPU the pyramid can draw: the same bandwidth as the table's row
        assert hierarchy_plots.hierarchy_rows(name)[1][1] == table[list(gpusim.PRESETS).index(name)]["HBM bandwidth"]
    assert rows[2] == hierarchy_plots.PAPER_CPU
    texts = [t.get_text() for t in hierarchy_plots.hierarchy_figure("H100-SXM").axes[0].texts]
    assert any("not published" in t for t in texts)  # the H100's SRAM bandwidth is not published


def test_the_tiling_picture_marks_one_block_of_each():
    fig = hierarchy_plots.tiling_figure(blocks=4)
    filled = [p for p in fig.axes[0].patches if p.get_facecolor()[:3] != (1, 1, 1)]
    assert len(filled) >= 5  # Q_i, K_j, V_j, O_i and the SRAM box
    assert any("outer loop" in t.get_text() for t in fig.axes[0].texts)


def test_the_l2_reuse_figure_draws_each_pattern_and_gpusims_two_capacities():
    rows = [{"pattern": p, "working_set_bytes": w * 2**20, "reread_miss": m}
            for p in ("every_sm", "spread", "own") for w, m in ((8, 0.0), (48, 1.0))]
    ax = hierarchy_plots.l2_reuse_figure(rows, gpu="A100-40GB").axes[0]
    curves = [line for line in ax.lines if len(line.get_xdata()) == 2 and line.get_xdata()[0] == 8]
    assert [list(line.get_ydata()) for line in curves] == [[0.0, 1.0]] * 3
    assert [line.get_label() for line in ax.lines[3:5]] == ["gpusim, read by every SM: 20 MiB",
                                                            "gpusim, read by one SM at a time: 27 MiB"]
    assert list(ax.lines[5].get_xdata()) == [40, 40]  # the A100's whole L2, unlabelled

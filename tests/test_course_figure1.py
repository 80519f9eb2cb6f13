"""The FlashAttention paper's Figure 1 (hierarchy and tiling), drawn from gpusim's presets."""
import gpusim
from gpusim_course.hierarchy import plots as hierarchy_plots


def test_the_pyramid_reads_its_numbers_from_the_preset():
    rows = hierarchy_plots.hierarchy_rows("A100-40GB")
    g = gpusim.get_gpu("A100-40GB")
    assert rows[0][1] == f"{g.sram_bytes_per_s / 1e12:.0f} TB/s"
    assert rows[1][1] == f"{g.hbm_bytes_per_s / 1e12:.1f} TB/s"
    assert rows[2] == hierarchy_plots.PAPER_CPU
    texts = [t.get_text() for t in hierarchy_plots.hierarchy_figure("H100-SXM").axes[0].texts]
    assert any("not published" in t for t in texts)  # the H100's SRAM bandwidth is not published


def test_the_tiling_picture_marks_one_block_of_each():
    fig = hierarchy_plots.tiling_figure(blocks=4)
    filled = [p for p in fig.axes[0].patches if p.get_facecolor()[:3] != (1, 1, 1)]
    assert len(filled) >= 5  # Q_i, K_j, V_j, O_i and the SRAM box
    assert any("outer loop" in t.get_text() for t in fig.axes[0].texts)

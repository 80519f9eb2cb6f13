"""gpusim_course.standard.breakdown: standard attention's time per operation (the FlashAttention paper's Figure 1)
from gpusim and from Nsight Compute's kernel times in results/h200/ncu.json."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim_course.standard import breakdown

NCU = json.loads((Path(__file__).resolve().parents[1] / "results" / "h200" / "ncu.json").read_text())["rows"]


def test_operation_times_are_gpusims_kernels_and_the_measured_ones():
    rows = breakdown.operation_times(1024, 64, ncu_rows=NCU)
    assert [r["kernel"] for r in rows] == ["qk", "softmax", "pv", "flash2"]
    batch, heads = gpusim.fa2_shape(1024, 64)
    naive = gpusim.simulate("naive", seq=1024, head_dim=64, batch=batch, heads=heads, gpu="H200-measured")
    assert [r["gpusim_s"] for r in rows[:3]] == [k.predicted_time_s for k in naive.kernels]
    measured = {r["kernel"]: r["measured"] for r in NCU if (r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
                ("time_s", 1024, 64, False)}
    assert all(r["measured_s"] == measured[r["kernel"]] for r in rows)
    assert sum(v for k, v in breakdown.shares(rows).items() if k != "flash2") == pytest.approx(1.0)


def test_a_shape_nsight_did_not_profile_has_no_measurement():
    rows = breakdown.operation_times(2000, 64, ncu_rows=NCU)
    assert all(r["measured_s"] is None for r in rows)
    fig = breakdown.figure1(rows, "N = 2,000")
    assert len(fig.axes[0].get_yticklabels()) == 2  # gpusim's bars only


def test_softmax_sentence_gives_the_softmaxs_share_predicted_and_measured():
    rows = breakdown.operation_times(1024, 64, ncu_rows=NCU)
    naive = [r for r in rows if r["algo"] == "naive"]
    softmax = next(r for r in naive if r["kernel"] == "softmax")
    predicted = softmax["gpusim_s"] / sum(r["gpusim_s"] for r in naive)
    measured = softmax["measured_s"] / sum(r["measured_s"] for r in naive)
    line = breakdown.softmax_sentence(rows)
    assert f"takes {predicted:.0%} of standard attention's time in gpusim and {measured:.0%} on the H200" in line

"""results/h200/tensor_pipe.json: each row's tensor_share is recomputed from the counters it holds, and agrees
with Nsight's own normalisation (pct_of_peak_sustained_active over the same active cycles)."""
import json
from pathlib import Path

import pytest

from benchmarks.tensor_pipe import share

ROWS = json.loads((Path(__file__).resolve().parents[1] / "results" / "h200" / "tensor_pipe.json").read_text())["rows"]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['kernel']}-d{r['head_dim']}-{'causal' if r['causal'] else 'full'}")
def test_share_recomputes_and_matches_nsight(row):
    assert row["tensor_share"] == share(row["tensor_cycles_active"], row["sm_cycles_active"])
    nsight = row["values"]["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] / 100
    assert row["tensor_share"] == pytest.approx(nsight, abs=5e-5)  # Nsight prints two decimals of a percent
    assert 0 < row["tensor_share"] < 1

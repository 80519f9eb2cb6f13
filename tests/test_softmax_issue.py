"""benchmarks/softmax_issue.py against results/h200/ncu_softmax.csv (Nsight, run 11): what docs/perf.md says of
the naive softmax's fitted issue rate, recomputed from the current model."""
from pathlib import Path

from benchmarks import softmax_issue

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "results" / "h200" / "ncu_softmax.csv"


def test_the_long_rows_are_priced_within_10_percent_and_causal_ones_issue_at_the_model_s_rate():
    rows = softmax_issue.compare(CSV)
    assert len(rows) == 8
    long = [r for r in rows if r[1] >= 16384]
    assert all(abs(predicted / ms - 1) <= 0.1 for *_, ms, predicted in long)
    assert all(abs(measured - model) <= 0.07 for causal, _, measured, model, _, _ in long if causal)
    assert all(model == 1.0 > measured for _, seq, measured, model, _, _ in rows if seq <= 8192)  # not issue-bound

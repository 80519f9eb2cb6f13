"""gpusim_course.practice.sdpa on this machine: PyTorch's own choice of backend, which backends run when forced, and
the math backend against the float64 reference. On a CPU the CUDA backends refuse every input."""
import pytest

torch = pytest.importorskip("torch")
from gpusim_course.practice import sdpa  # noqa: E402


def test_probe_asks_pytorch_for_each_case():
    rows = sdpa.probe("cpu", sdpa.CASES[:2])
    assert [(r["dtype"], r["head_dim"], r["mask"]) for r in rows] == [("fp16", 64, "none"), ("bf16", 64, "none")]
    (q, k, v), kwargs = sdpa.inputs("cpu", "fp16", 64, "none")
    assert rows[0]["picked"] == sdpa.picked(q, k, v, **kwargs)
    assert all(r["MATH"]["ran"] and not r["CUDNN_ATTENTION"]["ran"] for r in rows)  # no cuDNN on a CPU
    assert rows[0]["CUDNN_ATTENTION"]["error"] and rows[0]["CUDNN_ATTENTION"]["reasons"] == []
    table = sdpa.rows_table(rows)
    assert table[0]["math"] == "runs" and table[0]["cudnn"].startswith("no: ")


def test_inputs_make_each_mask():
    (q, _, _), causal = sdpa.inputs("cpu", mask="causal")
    assert causal == {"is_causal": True} and q.dtype == torch.float16
    _, boolean = sdpa.inputs("cpu", mask="boolean", seq=8)
    assert boolean["attn_mask"].dtype == torch.bool and boolean["attn_mask"].diagonal().all()


def test_the_sources_conditions():
    row = dict(device="cuda", sm="90", dtype="bf16", head_dim=128, mask="causal")
    assert sdpa.source_conditions(row)
    for change in (dict(device="cpu"), dict(sm="75"), dict(dtype="fp32"), dict(head_dim=512), dict(mask="boolean")):
        assert not sdpa.source_conditions(row | change), change
    assert sdpa.source_conditions(row | dict(head_dim=60))  # PyTorch pads it: the H200 ran and picked flash there


def test_the_math_backend_matches_float64_attention():
    assert sdpa.math_error() < 64 * 2.0**-24  # fp32: a few roundings per output, far below 64 u


def test_the_cpu_table_says_once_that_the_gpu_backends_need_a_gpu():
    rows = sdpa.probe("cpu", sdpa.CASES[:2])
    table, line = sdpa.cpu_rows_table(rows)
    assert "need a CUDA GPU" in line and len(table) == 2
    assert not any("no:" in str(v) for r in table for v in r.values())  # no repeated refusal text in the cells

"""gpusim_course.practice.sdpa on this machine: PyTorch's own choice of backend, which backends run when forced, and
the math backend against the float64 reference. On a CPU the CUDA backends refuse every input."""
import pytest

torch = pytest.importorskip("torch")
from gpusim_course.measurements import command_now  # noqa: E402
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


def test_max_error_is_the_math_backends_distance_from_float64_attention():
    import numpy as np

    import gpusim
    (q, k, v), _ = sdpa.inputs("cpu", "fp16", 32, "none", seq=64)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    exact = gpusim.reference_attention(*(x.double().numpy() for x in (q, k, v)), causal=True)
    assert sdpa.max_error(q, k, v, causal=True) == float(np.abs(out.double().numpy() - exact).max())
    line = sdpa.math_error_sentence(q, k, v, causal=True)
    assert line == (f"SDPA, math backend, fp16 on cpu: max |error| {sdpa.max_error(q, k, v, True):.1e}; "
                    f"in fp32: {sdpa.math_error():.1e}")


def test_table_here_is_the_cpu_table_and_its_line_on_a_cpu():
    """On the CPU: one row per case of sdpa.CASES in the CPU table's columns (no device, no GPU backend's refusal),
    the math backend running every input, and the one line naming cuDNN among the backends that refuse."""
    table, line = sdpa.table_here("cpu")
    assert [list(r) for r in table] == [["dtype", "head_dim", "mask", "PyTorch picks", "flash", "math"]] * 11
    assert [{k: r[k] for k in ("dtype", "head_dim", "mask")} for r in table] == sdpa.CASES
    assert all(r["math"] == "runs" and r["flash"] in ("runs", "no") for r in table)
    assert line.startswith("On the CPU, SDPA's GPU backends (") and "cudnn" in line and "need a CUDA GPU" in line


def test_gpu_table_reads_the_probe_or_says_what_to_run(tmp_path):
    """Each cell read from sdpa_backends.json with plain code: the input, PyTorch's pick, "runs" for a backend that
    ran when forced and "no: <its first reason or its error>" for one that did not; and the file's environment."""
    import json
    from pathlib import Path

    results = Path(__file__).resolve().parents[1] / "results" / "h200"
    probed = json.loads((results / "sdpa_backends.json").read_text())
    table, line = sdpa.gpu_table(results)
    assert len(table) == len(probed["rows"]) == 11
    for cells, r in zip(table, probed["rows"]):
        assert cells["device"] == f"cuda sm_{r['sm']}" == "cuda sm_90"
        assert (cells["dtype"], cells["head_dim"], cells["mask"], cells["PyTorch picks"]) == (
            r["dtype"], r["head_dim"], r["mask"], r["picked"])
        for column, key in (("flash", "FLASH_ATTENTION"), ("efficient", "EFFICIENT_ATTENTION"),
                            ("cudnn", "CUDNN_ATTENTION"), ("math", "MATH")):
            b = r[key]
            assert cells[column] == ("runs" if b["ran"] else f"no: {(b['reasons'] or [b['error']])[0][:90]}")
    assert sum(c["cudnn"] == "runs" for c in table) < len(table)  # a refusal among them: both kinds checked
    env = probed["environment"]
    assert line.startswith(f"Measured on {env['gpu']}: ") and line.endswith(f"command: {command_now(env['command'])}")
    assert sdpa.gpu_table(tmp_path) == ([], "Not measured on the GPU yet: python -m benchmarks.sdpa_backends --out "
                                            "$OUT/sdpa_backends.json")

"""gpusim_course.practice.live: measurements made on this machine with torch and Triton. The kernels run in Triton's
interpreter on the CPU (tests/conftest.py) and on the GPU where there is one."""
import math
import os
from types import SimpleNamespace

import numpy as np
import pytest

import gpusim
from gpusim_course.practice import live

torch = pytest.importorskip("torch")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # tests/conftest.py's choice, made before any kernel import
DEVICES = [pytest.param("cpu", marks=pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter")),
           pytest.param("cuda", marks=pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available(),
                                                         reason="no CUDA GPU, or the kernels interpreted"))]


@pytest.fixture(scope="module")
def kernels():
    pytest.importorskip("triton", reason="the kernels need Triton, which publishes Linux wheels only")
    import gpusim_kernels
    return gpusim_kernels


def inputs(device, batch=1, heads=2, seq=128, head_dim=32, dtype=torch.float16):
    gen = torch.Generator(device=device).manual_seed(0)
    return [torch.randn(batch, heads, seq, head_dim, device=device, generator=gen).to(dtype) for _ in range(3)]


def test_fp8_error_is_the_rounding_error_of_each_format():
    rows = live.fp8_error(seq=128, head_dim=32)
    assert [r["inputs rounded to"] for r in rows] == ["fp16", "fp8 e4m3"]
    fp16, fp8 = (float(r["max error / max |O|"]) for r in rows)
    # Rounding q, k, v moves the output by a few unit roundoffs of the format (fp16: 2^-11, e4m3: 2^-4),
    # scaled by the softmax's sensitivity; a factor of 16 either way bounds it for standard normal inputs.
    assert 2.0**-11 / 16 < fp16 < 2.0**-11 * 16
    assert 2.0**-4 / 16 < fp8 < 2.0**-4 * 16


def test_timed_fields_are_the_benchmark_conventions_tflops():
    row = {"batch": 4, "heads": 16, "seq": 4096, "head_dim": 128, "causal": False}
    # 4 B H N² d = 4 x 4 x 16 x 4,096² x 128 = 549.8 GFLOP in 2 ms: 274.9 TFLOP/s
    assert live.timed_fields(row, 2.0, 123) == {"ms": 2.0, "tflops": pytest.approx(274.877906944), "peak_bytes": 123}
    assert live.timed_fields(row | {"causal": True}, 2.0, 0)["tflops"] == pytest.approx(274.877906944 / 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="times kernels on a CUDA GPU")
def test_live_bench_rows_time_each_kernel_in_the_fa2_shape(kernels):
    rows = live.live_bench_rows(kernels, seqs=(1024,), head_dim=64)
    assert [r["provider"] for r in rows] == ["naive", "flash1", "flash2"]
    for r in rows:
        assert (r["batch"], r["heads"]) == gpusim.fa2_shape(1024, 64) and r["ms"] > 0
        assert r["tflops"] == pytest.approx(live.timed_fields(r, r["ms"], 0)["tflops"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True])
def test_kernel_error_rows_measure_each_kernel_against_float64(kernels, device, causal):
    q, k, v = inputs(device)
    rows = live.kernel_error_rows(kernels, q, k, v, causal=causal, block_q=32, block_kv=32)
    assert [(r["kernel"], r["dtype"]) for r in rows] == [("naive", "float16"), ("flash1", "float16"),
                                                         ("flash2", "float16")]
    # fp16 output (unit roundoff 2^-11) of values below 4 in magnitude, after fp32 accumulation: within 4 ULPs of 4.
    assert all(float(r["max |O - reference|"]) < 4 * 4 * 2.0**-11 for r in rows)


def test_kernel_error_rows_catch_a_wrong_kernel():
    q, k, v = inputs("cpu", seq=64, head_dim=16)
    exact = gpusim.reference_attention(*(x.double().numpy() for x in (q, k, v)))
    returns_v = SimpleNamespace(**{f"{a}_attention": lambda q, k, v, **kw: v for a in ("naive", "flash1", "flash2")})
    rows = live.kernel_error_rows(returns_v, q, k, v, block_q=16, block_kv=16)
    assert rows[0]["max |O - reference|"] == f"{np.abs(v.double().numpy() - exact).max():.2e}"


@pytest.mark.parametrize("algo", ["naive", "flash1", "flash2"])
def test_kernel_io_rows_set_the_kernels_bytes_beside_gpusims(kernels, algo):
    if torch.cuda.is_available():
        pytest.skip("trace_io counts loads and stores in Triton's interpreter (CPU)")
    q, k, v = inputs("cpu", batch=1, heads=2, seq=96, head_dim=16)
    rows = {r["tensor"]: r for r in live.kernel_io_rows(kernels, algo, q, k, v, block_q=32, block_kv=32)}
    assert all(r["equal"] for r in rows.values())
    if algo == "flash2":  # K read once per Q block: ceil(96 / 32) = 3 times 2 heads x 96 x 16 x 2 B
        assert rows["K"]["kernel read"] == rows["K"]["gpusim read"] == math.ceil(96 / 32) * 2 * 96 * 16 * 2


def test_kernel_io_rows_count_bf16_inputs(kernels):
    if torch.cuda.is_available():
        pytest.skip("trace_io counts loads and stores in Triton's interpreter (CPU)")
    q, k, v = inputs("cpu", seq=32, head_dim=16, dtype=torch.bfloat16)
    rows = live.kernel_io_rows(kernels, "flash2", q, k, v, block_q=16, block_kv=16)
    assert all(r["equal"] for r in rows)
    assert {r["tensor"]: r["gpusim read"] for r in rows}["Q"] == 2 * 32 * 16 * 2  # bf16: 2 bytes per element


def test_io_rows_count_every_kernel_and_the_summary_counts_the_equal_ones(kernels):
    if torch.cuda.is_available():
        pytest.skip("trace_io counts loads and stores in Triton's interpreter (CPU)")
    q, k, v = inputs("cpu", seq=64, head_dim=16)
    rows = live.io_rows(kernels, q, k, v, block_q=32, block_kv=32, algos=("naive", "flash2"))
    assert rows == (live.kernel_io_rows(kernels, "naive", q, k, v, block_q=32, block_kv=32)
                    + live.kernel_io_rows(kernels, "flash2", q, k, v, block_q=32, block_kv=32))
    assert live.io_summary(rows) == f"{sum(r['equal'] for r in rows)} of {len(rows)} tensor counts equal gpusim's"
    assert live.io_rows(None, q, k, v) == [] and "needs the interpreter" in live.io_summary([])

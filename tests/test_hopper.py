"""The Hopper kernel against the float64 reference and gpusim's byte counts.

On an sm_90 GPU (TRITON_INTERPRET unset) the kernel runs compiled: TMA, warp specialization, fp8 tensor
cores. On CPU it runs in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1), which executes
tensor descriptors too: their loads reach the interpreter's masked load with TMA's out-of-bounds rows
masked off, so trace_io counts exactly the bytes a TMA copy moves.

Tolerances, relative Frobenius error against float64: O is rounded to the output dtype and P to the input
dtype before the PV matmul, each a relative error of at most the unit roundoff u (2**-11 fp16, 2**-8
bf16), accumulations are fp32; measured errors are about u, the bound is 4u. fp8 (e4m3, u = 2**-4):
quantising q, k and v with one scale per tensor dominates (about 0.8u on normal inputs, against a
reference from the unquantised inputs), P's quantisation adds a tenth of that; the bound is 2u. The fp8
error is recorded against the fp16 kernel's error on the same inputs (fp8_over_fp16, about 100x). The
log-sum-exp's absolute error is bounded by 8u: the scores carry the rounding of q and k (2u relative to
|q||k|/sqrt(d)), a few times |s| itself.
"""
import pytest

pytest.importorskip("triton", reason="Triton publishes Linux wheels only")
import torch

import gpusim
import gpusim_kernels
from gpusim_kernels.hopper import FP8, hopper_attention, to_fp8
from gpusim_kernels.interpreter import INTERPRETED

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": FP8}
TOLERANCE = {"fp16": 4 * 2.0**-11, "bf16": 4 * 2.0**-8, "fp8": 2 * 2.0**-4}
SM90 = not INTERPRETED and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
CPU = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
GPU = pytest.mark.skipif(not SM90, reason="needs an sm_90 GPU, with TRITON_INTERPRET unset")
DEVICE = "cuda" if SM90 else "cpu"

# (batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv): ragged lengths (N_kv not a multiple
# of the block: the masked second loop), grouped-query heads, and on the GPU the table's launches.
CPU_SHAPES = [(1, 2, 1, 100, 150, 64, 64, 32), (2, 2, 2, 64, 64, 128, 32, 32), (1, 3, 1, 40, 90, 128, 32, 64)]
GPU_SHAPES = [(2, 4, 2, 1000, 1000, 64, None, None), (2, 4, 2, 1000, 1000, 128, None, None),
              (1, 8, 8, 2048, 2048, 64, None, None), (1, 8, 8, 2048, 2048, 128, None, None)]


def inputs(shape, seed=0):
    b, h, h_kv, n, n_kv, d = shape[:6]
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, heads, rows, d, generator=gen) for heads, rows in ((h, n), (h_kv, n_kv), (h_kv, n_kv)))
    return q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)


def run(dtype, q, k, v, **kwargs):
    """The kernel on q, k, v cast to dtype (fp8: quantised with per-tensor scales)."""
    if dtype != "fp8":
        return hopper_attention(q.to(DTYPES[dtype]), k.to(DTYPES[dtype]), v.to(DTYPES[dtype]), **kwargs)
    (q8, q_descale), (k8, k_descale), (v8, v_descale) = to_fp8(q), to_fp8(k), to_fp8(v, k_major=True)
    return hopper_attention(q8, k8, v8, fp8_scale=(q_descale, k_descale, v_descale), **kwargs)


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def check(shape, causal, record_property):
    """Every dtype on one shape: O and the log-sum-exp against float64, fp8 against fp16."""
    q, k, v = inputs(shape)
    blocks = dict(block_q=shape[6], block_kv=shape[7])
    ref = gpusim_kernels.reference_attention(q, k, v, causal=causal)
    s = q.double() @ k.double().repeat_interleave(q.shape[1] // k.shape[1], 1).transpose(-1, -2) * q.shape[3]**-0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    errors = {}
    for dtype in DTYPES:
        o, lse = run(dtype, q, k, v, causal=causal, return_lse=True, **blocks)
        assert o.dtype == (torch.bfloat16 if dtype == "bf16" else torch.float16)
        errors[dtype] = rel_err(o, ref)
        assert errors[dtype] < TOLERANCE[dtype], (dtype, errors[dtype])
        assert (lse.double() - s.logsumexp(-1)).abs().max().item() < 8 * TOLERANCE[dtype], dtype
    record_property("fp8_over_fp16", errors["fp8"] / errors["fp16"])
    assert errors["fp8"] > 4 * errors["fp16"]  # the fp8 path really ran in fp8


@CPU
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", CPU_SHAPES)
def test_interpreter_matches_float64(shape, causal, record_property):
    check(shape, causal, record_property)


@GPU
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", GPU_SHAPES)
def test_sm90_matches_float64(shape, causal, record_property):
    check(shape, causal, record_property)


@CPU
@pytest.mark.parametrize("dtype", ["fp16", "fp8"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", CPU_SHAPES)
def test_bytes_are_gpusims(shape, causal, dtype):
    """Every TMA copy and store, counted under the interpreter, is a byte gpusim counts for "hopper"."""
    b, h, h_kv, n, n_kv, d, block_q, block_kv = shape
    moved = gpusim_kernels.trace_io(run, dtype, *inputs(shape), causal=causal, block_q=block_q, block_kv=block_kv)
    counted = gpusim.simulate("hopper", batch=b, heads=h, kv_heads=h_kv, seq=n, seq_kv=n_kv, head_dim=d,
                              block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype, gpu="H200")
    assert moved == counted.by_tensor


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
def test_fp8_v_in_any_layout():
    """The fp8 matmul reads V transposed: a v in the ordinary layout is transposed first, to the same result."""
    q, k, v = (to_fp8(x)[0] for x in inputs(CPU_SHAPES[0]))
    transposed = to_fp8(inputs(CPU_SHAPES[0])[2], k_major=True)[0]
    assert transposed.stride(2) == 1 and torch.equal(transposed.float(), v.float())
    assert torch.equal(hopper_attention(q, k, v, fp8_scale=(1, 1, 1)),
                       hopper_attention(q, k, transposed, fp8_scale=(1, 1, 1)))


@CPU
def test_needs_sm90(monkeypatch):
    monkeypatch.setattr("gpusim_kernels.hopper.INTERPRETED", False)
    with pytest.raises(RuntimeError, match=r"needs an sm_90 \(Hopper\) GPU.*q is on cpu.*TRITON_INTERPRET=1"):
        hopper_attention(*(x.half() for x in inputs(CPU_SHAPES[0])))


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
@pytest.mark.parametrize("change, message", [
    (dict(head_dim=96), "head_dim=96: the Hopper kernel supports 64 and 128"),
    (dict(dtype=torch.float32), "they must all be one of torch.float16, torch.bfloat16, torch.float8_e4m3fn"),
    (dict(fp8_scale=(1.0, 1.0, 1.0)), "fp8_scale=(q_descale, k_descale, v_descale) goes with float8_e4m3fn"),
    (dict(block_kv=48), "block_kv=48 must be a power of two from 16 to 256"),
    (dict(block_kv=64, warp_specialize=True), "warp_specialize=True needs block_q=block_kv=128 and num_stages=2"),
])
def test_bad_input(change, message):
    d, dtype = change.pop("head_dim", 64), change.pop("dtype", torch.float16)
    q = torch.zeros(1, 1, 32, d, dtype=dtype, device=DEVICE)
    with pytest.raises(ValueError) as err:
        hopper_attention(q, q, q, **change)
    assert message in str(err.value)

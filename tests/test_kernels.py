"""The Triton kernels against gpusim and the float64 reference.

Without a GPU the kernels run in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1) on small
shapes, and trace_io checks that every byte they load and store is a byte gpusim counts. With a GPU (and
TRITON_INTERPRET unset) the same accuracy tests run compiled, plus larger ones up to N = 16,384; run the
suite once more with TRITON_INTERPRET=1 there for the byte counts.
"""
import dataclasses
import random

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import gpusim
import gpusim_kernels
from gpusim_kernels.interpreter import INTERPRETED

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}
# A GPU whose thread blocks have 1 KiB of SRAM: the 16 x 16 tiles of d = 16 fit, but a row of S longer than
# 512 fp16 values does not, so naive attention's softmax streams it in three passes.
TINY_SRAM = dataclasses.replace(gpusim.get_gpu("A100-40GB"), name="tiny-SRAM", sram_bytes_per_block=1024)
CPU = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
CUDA = pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available(),
                          reason="needs a GPU, with TRITON_INTERPRET unset (the kernels compiled)")


def case(algo, dtype, seq, seq_kv, head_dim, block_q, block_kv, causal=False, batch=1, heads=1, kv_heads=1,
         gpu="A100-40GB"):
    return dict(algo=algo, batch=batch, heads=heads, kv_heads=kv_heads, seq=seq, seq_kv=seq_kv, head_dim=head_dim,
                block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype, gpu=gpu)


def random_case(seed):
    """Every (algo, dtype) pair in each run of 9 seeds; ragged lengths, grouped-query heads, head_dims that
    are not powers of two, tiles larger and smaller than the sequences."""
    rng = random.Random(seed)
    kv_heads = rng.choice([1, 2])
    return case(["naive", "flash1", "flash2"][seed % 3], ["fp32", "fp16", "bf16"][seed // 3 % 3],
                seq=rng.randint(1, 64), seq_kv=rng.randint(1, 64), head_dim=rng.choice([16, 48, 64, 80]),
                block_q=rng.choice([16, 32, 64]), block_kv=rng.choice([16, 32, 64]), causal=rng.random() < 0.5,
                batch=rng.choice([1, 2]), heads=kv_heads * rng.choice([1, 2, 3]), kv_heads=kv_heads)


SMALL = [random_case(seed) for seed in range(45)] + [
    case("naive", "fp16", 5, 600, 16, 16, 16, gpu=TINY_SRAM),  # softmax in 3 passes
    case("naive", "fp16", 40, 530, 16, 16, 16, causal=True, gpu=TINY_SRAM),  # 3 passes over the longer rows
    case("flash2", "fp32", 24, 40, 256, 16, 16, causal=True),  # the largest head_dim
    case("flash2", "fp16", 100, 70, 128, 64, 32, causal=True),  # O's own row mask (64 rows, d >= 128): a partial block
    case("flash2", "bf16", 70, 100, 160, 64, 16),  # ... and its column mask (d = 160 in tiles 256 wide)
    case("flash1", "fp16", 1, 1, 16, 16, 16, causal=True),  # one query, one key
    *(case(algo, "fp16", 100, 70, 64, None, None, causal=True, heads=2) for algo in ("naive", "flash1", "flash2")),
]
LARGE = [case(algo, dtype, seq, seq_kv, head_dim, block_q, block_kv, causal, batch=1, heads=4, kv_heads=2,
              gpu=None)
         for algo in ("naive", "flash1", "flash2") for dtype in ("fp16", "bf16")
         for seq, seq_kv, head_dim, block_q, block_kv, causal in [
             (1000, 1500, 80, 64, 64, True), (4096, 4096, 128, None, None, True),
             (16384, 16384, 64, 128, 64, False), (16384, 16384, 128, None, None, True)]]


def case_id(c):
    gpu = c["gpu"].name if isinstance(c["gpu"], gpusim.GPU) else c["gpu"] or "detected"
    return (f"{c['algo']}-{c['dtype']}-B{c['batch']}H{c['heads']}kv{c['kv_heads']}-N{c['seq']}x{c['seq_kv']}"
            f"-d{c['head_dim']}-{c['block_q']}x{c['block_kv']}{'-causal' if c['causal'] else ''}-{gpu}")


def inputs(c, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(c["batch"], c["heads"], c["seq"], c["head_dim"])] + 2 * [(c["batch"], c["kv_heads"], c["seq_kv"],
                                                                          c["head_dim"])]
    return [torch.randn(s, generator=gen).to(DTYPES[c["dtype"]]).to(device) for s in shapes]


def run(c, q, k, v, **extra):
    fn = getattr(gpusim_kernels, f"{c['algo']}_attention")
    return fn(q, k, v, causal=c["causal"], block_q=c["block_q"], block_kv=c["block_kv"], gpu=c["gpu"], **extra)


def scores(q, k, causal):
    """q kᵀ / sqrt(d) in q's precision, masked keys at -inf."""
    s = q @ k.repeat_interleave(q.shape[1] // k.shape[1], dim=1).transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s


def torch_same_precision(c, q, k, v):
    """torch's own attention in the kernel's precision, the yardstick for its error. Naive attention rounds
    S and P to the input dtype, as the kernel's HBM copies are: plain softmax(q kᵀ · scale) v in that dtype.
    The fused kernels keep S and P in fp32 and round O once: torch's math SDPA, which computes fp16 and
    bf16 in fp32 (torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed() is False by default)."""
    if c["algo"] != "naive":
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=c["causal"], enable_gqa=True)
    return scores(q, k, c["causal"]).softmax(dim=-1) @ v.repeat_interleave(q.shape[1] // k.shape[1], dim=1)


def relative_error(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def device_cases(cases, device, mark):
    return [pytest.param(device, c, marks=[mark, one_run(c)], id=f"{device}-{case_id(c)}") for c in cases]


def one_run(c):
    """A case's tests in one pytest-xdist process (make test's --dist loadgroup), where its CPU tests share the case's
    one run in Triton's interpreter (traced)."""
    return pytest.mark.xdist_group(case_id(c))


def sharing_runs(cases):
    """The cases as parameters of a test that reads their traced runs, each in its case's process (one_run)."""
    return [pytest.param(c, marks=one_run(c), id=case_id(c)) for c in cases]


@pytest.mark.parametrize("device, c", device_cases(SMALL, "cpu", CPU) + device_cases(SMALL + LARGE, "cuda", CUDA))
def test_output_matches_reference(device, c):
    if device == "cpu":
        (q, k, v), out, _ = traced(c)
    else:
        q, k, v = inputs(c, device)
        out = run(c, q, k, v, **lse_keyword(c))
    out, lse = out if c["algo"] == "flash2" else (out, None)
    assert out.shape == q.shape and out.dtype == (torch.float32 if c["algo"] == "flash1" else q.dtype)
    ref = gpusim_kernels.reference_attention(q, k, v, causal=c["causal"])
    # At most twice the error of torch's attention in the same precision, both against float64, plus one
    # rounding of O to the dtype: on tiny shapes torch's error can by chance be below that one rounding.
    bound = 2 * relative_error(torch_same_precision(c, q, k, v), ref) + UNIT_ROUNDOFF[c["dtype"]]
    assert relative_error(out, ref) <= bound
    if lse is not None:  # fp32 statistics: a blocked fp32 sum over N_kv terms, far below 1e-4 here
        expected = scores(q.double(), k.double(), c["causal"]).logsumexp(dim=-1)
        torch.testing.assert_close(lse.double(), expected, rtol=1e-4, atol=1e-4)


@CPU
@pytest.mark.parametrize("c", sharing_runs(SMALL))
def test_bytes_moved_equal_gpusim_counts(c):
    assert traced(c)[2] == gpusim.simulate(**c).counts


def lse_keyword(c):
    return {"return_lse": True} if c["algo"] == "flash2" else {}


_TRACED = {}  # case_id -> traced(c)


def traced(c):
    """A case's CPU run, in Triton's interpreter under trace_io: ((q, k, v), what run returns, the bytes it moved
    by kernel). Its output test and its byte test share the one run (return_lse changes no launch)."""
    key = case_id(c)
    if key not in _TRACED:
        q, k, v = inputs(c, "cpu")
        outputs = []
        moved = gpusim_kernels.trace_io(lambda: outputs.append(run(c, q, k, v, **lse_keyword(c))), by_kernel=True)
        _TRACED[key] = (q, k, v), outputs[0], moved
    return _TRACED[key]


@CPU
def test_trace_io_by_tensor_sums_the_kernels():
    c = case("naive", "bf16", 40, 50, 48, 16, 32, causal=True, heads=2, kv_heads=1)
    assert gpusim_kernels.trace_io(run, c, *inputs(c, "cpu")) == gpusim.simulate(**c).by_tensor


@CPU
def test_trace_io_moves_the_tensors_bytes_where_the_compiled_kernel_spills():
    """flash1 causal at the H200's tiles spills (gpusim/compiled.py): the spills are the kernel's bytes, no
    tensor's, so what its loads and stores move is still the tensors' counts."""
    c = case("flash1", "fp16", 300, 300, 64, 64, 256, causal=True, heads=2, gpu="H200-measured")
    counted = gpusim.simulate(**c)
    assert counted.spills["flash1"][0] > 0
    assert gpusim_kernels.trace_io(run, c, *inputs(c, "cpu"), by_kernel=True) == counted.counts


DEVICE = "cpu" if INTERPRETED else "cuda"  # where the kernels run in this session
RUNS = pytest.mark.skipif(not (INTERPRETED or torch.cuda.is_available()), reason="neither a GPU nor the interpreter")
F16, QKV = torch.float16, [(1, 2, 32, 16), (1, 1, 32, 16), (1, 1, 32, 16)]
D128 = [(1, 1, 32, 128)] * 3


def tensors(shapes, dtypes=F16):
    dtypes = dtypes if isinstance(dtypes, tuple) else (dtypes,) * len(shapes)
    return [torch.randn(s, dtype=dtype, device=DEVICE) for s, dtype in zip(shapes, dtypes)]


@RUNS
@pytest.mark.parametrize("shapes, dtypes, kwargs, message", [
    ([(2, 32, 16), *QKV[1:]], F16, {}, "q is (2, 32, 16): expected a 4-d tensor (batch, heads, seq, head_dim)"),
    (QKV, torch.float64, {}, "q has dtype torch.float64: supported are torch.float16, torch.bfloat16, torch.float32"),
    (QKV, (F16, F16, torch.float32), {}, "q, k, v have dtypes torch.float16, torch.float16, torch.float32: they must"),
    ([*QKV[:2], (1, 1, 33, 16)], F16, {}, "k has shape (1, 1, 32, 16) but v has shape (1, 1, 33, 16)"),
    ([(2, 2, 32, 16), *QKV[1:]], F16, {}, "q (2, 2, 32, 16) and k (1, 1, 32, 16) must agree on batch"),
    ([(1, 1, 8, 8)] * 3, F16, {}, "head_dim=8 is outside the supported 16..256"),
    ([(1, 3, 32, 16), (1, 2, 32, 16), (1, 2, 32, 16)], F16, {}, "heads=3 is not a multiple of kv_heads=2"),
    ([QKV[0], (1, 1, 0, 16), (1, 1, 0, 16)], F16, {}, "k and v are (1, 1, 0, 16): no keys (dim 2), and each of q's"),
    (QKV, F16, {"block_q": 24}, "block_q=24 must be a power of two >= 16"),
    (QKV, F16, {"block_kv": 8}, "block_kv=8 must be a power of two >= 16"),
    (QKV, F16, {"block_q": True}, "block_q=True must be an integer, a power of two >= 16"),
    (QKV, F16, {"block_kv": 16.0}, "block_kv=16.0 must be an integer, a power of two >= 16"),
    (QKV, F16, {"block_q": np.int64(24)}, "block_q=24 must be a power of two >= 16"),
    (D128, F16, {"block_q": 256, "block_kv": 256, "gpu": "A100-40GB"},
     "block_q=256, block_kv=256, head_dim=128 (fp16) need 196,608 B of SRAM in the flash2 kernel; "
     "A100-40GB has 166,912 B per thread block"),
    (QKV, F16, {"gpu": "H100"}, "unknown gpu='H100'"),
    (QKV, F16, {"gpu": {}}, "unknown gpu={}: known GPUs are"),
    (QKV, F16, {"return_lse": "no"}, "return_lse='no' must be True or False"),  # was truthy: a tuple came back
])
def test_bad_input_raises_a_clear_error(shapes, dtypes, kwargs, message):
    with pytest.raises(ValueError) as err:
        gpusim_kernels.flash2_attention(*tensors(shapes, dtypes), **kwargs)
    assert message in str(err.value)


def test_the_reference_refuses_heads_that_do_not_group_in_one_line():
    q, k = torch.zeros(1, 3, 8, 16), torch.zeros(1, 2, 8, 16)
    with pytest.raises(ValueError, match=r"^q \(1, 3, 8, 16\), k \(1, 2, 8, 16\), v \(1, 2, 8, 16\): k and v must "
                                         "match, and their heads divide q's$"):  # was torch's broadcasting error
        gpusim_kernels.reference_attention(q, k, k)


@RUNS
@pytest.mark.parametrize("entry", ["naive", "flash1", "flash2"])
def test_numpy_integer_tiles_run_the_equal_ints_launch(entry):
    """block_q, block_kv as NumPy integers (as gpusim takes them): the launch of the equal Python ints, one entry
    of the launch cache, not a second."""
    q, k, v = tensors(QKV)
    gpusim_kernels.launch.cached_launch.cache_clear()
    outs = [getattr(gpusim_kernels, f"{entry}_attention")(q, k, v, block_q=block_q, block_kv=block_kv)
            for block_q, block_kv in [(np.int64(16), 32), (16, np.int32(32)), (16, 32)]]
    assert gpusim_kernels.launch.cached_launch.cache_info()[:2] == (2, 1)  # hits, misses
    assert torch.equal(outs[0], outs[2]) and torch.equal(outs[1], outs[2])


@RUNS
@pytest.mark.parametrize("entry", ["naive", "flash1", "flash2", "hopper"])
@pytest.mark.parametrize("grad", [True, False])
def test_arrays_that_are_not_tensors_are_named_in_one_line(entry, grad):
    q = np.zeros((1, 1, 32, 64), dtype=np.float16)
    with torch.set_grad_enabled(grad), pytest.raises(ValueError) as err:
        getattr(gpusim_kernels, f"{entry}_attention")(q, q, q)
    assert str(err.value) == "q is ndarray: expected a 4-d tensor (batch, heads, seq, head_dim)"


def test_cpu_tensors_without_the_interpreter(monkeypatch):
    monkeypatch.setattr(gpusim_kernels.launch, "INTERPRETED", False)
    with pytest.raises(ValueError, match="q is a CPU tensor but the kernels were compiled for the GPU: set "
                                         "TRITON_INTERPRET=1"):
        gpusim_kernels.naive_attention(*(torch.zeros(s) for s in QKV))


def test_trace_io_needs_the_interpreter(monkeypatch):
    monkeypatch.setattr(gpusim_kernels.trace, "INTERPRETED", False)
    with pytest.raises(RuntimeError, match="trace_io needs Triton's interpreter"):
        gpusim_kernels.trace_io(gpusim_kernels.flash2_attention, *(torch.zeros(s) for s in QKV))


@RUNS
def test_non_contiguous_inputs_are_copied():
    views = [x.transpose(1, 2) for x in tensors([(1, 32, 2, 16), (1, 32, 1, 16), (1, 32, 1, 16)])]
    # (B, N, H, d) memory seen as (B, H, N, d): the kernels get contiguous copies
    assert torch.equal(gpusim_kernels.flash2_attention(*views), gpusim_kernels.flash2_attention(*(x.contiguous() for x in views)))


@RUNS
@pytest.mark.filterwarnings("ignore:overflow encountered in cast", "ignore:invalid value encountered")  # numpy's, in
def test_fp16_scores_past_its_largest_are_naives_nan_and_flash2s_row():  # the interpreter: the overflow itself
    """Standard attention stores S in q's dtype: a scaled score of 128 * 128 * 16 / 4 = 65,536 is past fp16's
    65,504, stored as infinity, and the row's P and O are NaN (naive_attention's docstring says so); flash2 keeps S
    in fp32 and, every key alike, gives the mean of v's rows."""
    q = torch.full((1, 1, 32, 16), 128.0, dtype=torch.float16, device=DEVICE)
    v = torch.randn(1, 1, 32, 16, device=DEVICE).half()
    assert gpusim_kernels.naive_attention(q, q, v).isnan().all()
    out = gpusim_kernels.flash2_attention(q, q, v, block_q=16, block_kv=16)
    mean = v.float().mean(2, keepdim=True).expand_as(out)  # |mean| < 1: 2e-3 is four fp16 steps at 1
    torch.testing.assert_close(out.float(), mean, rtol=0, atol=2e-3)


@CPU
def test_trace_io_refuses_arguments_that_share_memory():
    q, kv = tensors(QKV[1:])
    with pytest.raises(ValueError, match="flash2: arguments K and V share memory"):
        gpusim_kernels.trace_io(gpusim_kernels.flash2_attention, q, kv, kv)


@CPU
def test_a_device_function_inside_a_launch_does_not_patch_triton_language_again(monkeypatch):
    """kernels/interpreter.py: Triton's interpreter patches triton.language again at every device-function call;
    inside a launch that patched the same modules that is skipped, so the patching does not grow with the
    programs (naive attention's softmax runs one per row: 16, then 64; without the skip, 257 and 1,388 modules
    walked, with it 27 and 30: a device function first called at the larger shape)."""
    from triton.runtime import interpreter
    patched, original = [], interpreter._patch_builtin
    monkeypatch.setattr(interpreter, "_patch_builtin", lambda *args: patched.append(args[0]) or original(*args))

    def patches(seq):
        patched.clear()
        c = case("naive", "fp32", seq, seq, 16, 16, 16)
        run(c, *inputs(c, "cpu"))
        return len(patched)
    few = patches(16)
    assert 0 < patches(64) < 2 * few

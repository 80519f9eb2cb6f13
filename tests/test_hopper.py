"""The Hopper kernel against the float64 reference and gpusim's byte counts.

On an sm_90 GPU (TRITON_INTERPRET unset) the kernel runs compiled: TMA, warp specialization, fp8 tensor
cores. On CPU it runs in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1), which executes
tensor descriptors too: their loads reach the interpreter's masked load with TMA's out-of-bounds rows
masked off, so trace_io counts exactly the bytes a TMA copy moves.

Accuracy: each dtype against float64 on the inputs the kernel sees (q, k, v rounded to fp16 or bf16; fp8: the
e4m3 values times their per-tensor descales), so the rounding of the inputs drops out and what is checked is
the kernel's own arithmetic. O's relative Frobenius error: fp16 and bf16 round P to the input dtype before the
PV matmul and O to the output dtype, each a relative error of at most the unit roundoff u (2**-11 fp16, 2**-8
bf16), accumulations fp32; measured about half u, the bound is 4u. fp8 rounds P to e4m3 (relative 2**-4 per
element of 256 P) and O to fp16. Its yardstick is that rounding of P alone, emulated in float64 (emulated_fp8:
the same P, each relative to the row's running max over the K/V blocks of the launch, as the online softmax
rounds it); the bound is 1.25 times the yardstick's error plus one fp16 rounding of O (2**-11). On CPU the
kernel's error is the yardstick's to 0.03%. The 1.25 leaves room, in quadrature (sqrt(1 + 0.75**2) = 1.25),
for other errors up to 0.75 of the yardstick's (about 2%), for sm_90: its fp8 tensor cores keep about 14 bits
of the accumulator, truncated (DeepSeek-V3 technical report, arXiv 2412.19437, Sec. 3.3.2; triton 3.6 never
promotes an fp8 dot there, max_num_imprecise_acc 2**30), once a wgmma of 32 keys: at most (N_kv / 32) *
2**-13 = 0.8% at N_kv = 2048; the scores' error (below) moves each P by about 1e-3 relative. On the CPU
shapes an O 2% too large (v's descale 2% off) is 1.4 to 1.8 times the yardstick. fp8's error must be more
than 4 times the fp16 kernel's (P really was rounded to e4m3), and their ratio is recorded (fp8_over_fp16).

The log-sum-exp is fp32 statistics of the scores: its error is at most the largest error of a visible score
(a log-sum-exp moves by at most the largest move of its terms) plus fp32's roundings (lse_bound). A score is a
sum of d products accumulated in the tensor cores; each wgmma (16 products fp16 and bf16, 32 fp8) rounds the
accumulator once, by at most u_acc relative to sum_i |q_i k_i| (u_acc 2**-23, fp32 truncated; fp8 on sm_90
2**-13, above; the interpreter's fp32 is within both). The bound is twice that: on the CPU shapes 4e-3 (d =
64) and 1e-2 (d = 128) nats for fp8, where a k descale 2% off moves the log-sum-exp by 4e-2 to 8e-2, and about
3e-5 for fp16 and bf16 (mostly the fp32 row sum of N_kv terms).
"""
import functools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
import triton
import triton.language as tl

import gpusim
import gpusim_kernels
from gpusim_kernels.hopper import (DESCRIPTOR_BYTES, FP8, _program, compiled_kernel, descriptor_scratch_bytes,
                                   hopper_attention, resolved_launch, to_fp8)
from gpusim_kernels.interpreter import INTERPRETED

ROOT = Path(__file__).resolve().parents[1]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": FP8}
TOLERANCE = {"fp16": 4 * 2.0**-11, "bf16": 4 * 2.0**-8}  # O's bound, 4u (the module docstring)
FP8_OVER_YARDSTICK = 1.25  # fp8 O's bound: times P's rounding to e4m3 alone (emulated_fp8), plus 2**-11
ACCUMULATOR = {"fp16": (16, 2.0**-23), "bf16": (16, 2.0**-23), "fp8": (32, 2.0**-13)}  # products a wgmma, u_acc
SM90 = not INTERPRETED and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
CPU = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
GPU = pytest.mark.skipif(not SM90, reason="needs an sm_90 GPU, with TRITON_INTERPRET unset")
DEVICE = "cuda" if SM90 else "cpu"

# (batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv): ragged lengths (N_kv not a multiple
# of the block: the masked second loop), grouped-query heads, and on the GPU the table's launches.
CPU_SHAPES = [(1, 2, 1, 100, 150, 64, 64, 32), (2, 2, 2, 64, 64, 128, 32, 32), (1, 3, 1, 40, 90, 128, 32, 64)]
GPU_SHAPES = [(2, 4, 2, 1000, 1000, 64, None, None), (2, 4, 2, 1000, 1000, 128, None, None),
              (1, 8, 8, 2048, 2048, 64, None, None), (1, 8, 8, 2048, 2048, 128, None, None)]
# Each FlashAttention-3 technique switched on alone, and together, software-pipelined (2 stages: with
# overlap and 3, 128 x 128 tiles at d = 128 need more shared memory than an SM has); the warp-specialized
# launch takes only lpt_heads of them
SWP = dict(warp_specialize=False, num_warps=8, num_stages=2)
SWP_TABLE = gpusim_kernels.hopper.SWP  # the software-pipelined launch, every option set
VARIANTS = [dict(SWP, mask="every"), dict(SWP, mask="branch"), dict(SWP, mask="split"), dict(SWP, overlap=True),
            dict(SWP, overlap=True, mask="split"), dict(SWP, overlap=True, mask="branch", lpt_heads=2),
            dict(warp_specialize=True, num_warps=4, num_stages=2, mask="every", lpt_heads=2)]


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


def seen(dtype, q, k, v):
    """q, k, v in float64 as the kernel sees them: rounded to dtype; fp8: e4m3 times to_fp8's descale."""
    if dtype != "fp8":
        return [x.to(DTYPES[dtype]).double() for x in (q, k, v)]
    return [x8.double() * descale for x8, descale in (to_fp8(q), to_fp8(k), to_fp8(v))]


def grouped(x, q):
    """k or v with each K/V head repeated for the query heads that share it."""
    return x.repeat_interleave(q.shape[1] // x.shape[1], 1)


def scores(q, k, causal):
    """q kᵀ / sqrt(d), hidden keys at -inf."""
    s = q @ grouped(k, q).transpose(-1, -2) * q.shape[3]**-0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s


def emulated_fp8(q, k, v, causal, block_kv):
    """The fp8 kernel's O in float64 with P rounded as it rounds it: P_j = exp(s - m_j), m_j the row's running max
    over K/V blocks 0..j, to the PV matmul as e4m3(256 P_j) (hopper_attention's docstring), rescaled by
    exp(m_j - m) as the kernel's alpha rescales it; the row sum l of P unrounded."""
    s = scores(q, k, causal)
    n_kv = s.shape[-1]
    blocks = torch.nn.functional.pad(s, (0, -n_kv % block_kv), value=float("-inf")).unflatten(-1, (-1, block_kv))
    running = blocks.amax(-1).cummax(-1).values.repeat_interleave(block_kv, -1)[..., :n_kv]
    m = s.amax(-1, keepdim=True)
    p = (256 * (s - running).exp()).float().to(FP8).double() / 256 * (running - m).exp()
    return p @ grouped(v, q) / (s - m).exp().sum(-1, keepdim=True)


def o_bound(dtype, q, k, v, ref, causal, launch):
    """The bound on O's relative error against ref, float64 on the inputs q, k, v the kernel sees (module docstring)."""
    if dtype != "fp8":
        return TOLERANCE[dtype]
    block_kv = resolved_launch(q.shape[3], "fp8", causal, k.shape[2], launch)["block_kv"]
    return FP8_OVER_YARDSTICK * rel_err(emulated_fp8(q, k, v, causal, block_kv), ref) + 2.0**-11


def lse_bound(dtype, q, k, lse):
    """The bound on the log-sum-exp's absolute error against lse, float64 on the inputs q, k the kernel sees: twice
    the scores' accumulator error (d / products roundings of u_acc times the largest sum_i |q_i k_i| / sqrt(d))
    plus fp32's, in units of 2**-24: N_kv for the row sum, 8 for exp2 and log2 (sm_90's approximations, 2**-22
    each), 8 |lse| for rounding the scaled score, the max, their sum and the product by ln 2 (log2 units)."""
    products, u_acc = ACCUMULATOR[dtype]
    d, n_kv = q.shape[3], k.shape[2]
    largest = (q.abs() @ grouped(k, q).abs().transpose(-1, -2)).amax().item() * d**-0.5
    return 2 * (d / products * u_acc * largest + (n_kv + 8 + 8 * lse.abs().max().item()) * 2.0**-24)


def check(shape, causal, record_property, **launch):
    """Every dtype on one shape: O and the log-sum-exp against float64 on the inputs it sees, fp8 against fp16."""
    q, k, v = inputs(shape)
    blocks = dict(block_q=shape[6], block_kv=shape[7], **launch)
    errors = {}
    for dtype in DTYPES:
        o, lse = run(dtype, q, k, v, causal=causal, return_lse=True, **blocks)
        assert o.dtype == (torch.bfloat16 if dtype == "bf16" else torch.float16)
        q_seen, k_seen, v_seen = seen(dtype, q, k, v)
        ref = gpusim_kernels.reference_attention(q_seen, k_seen, v_seen, causal=causal)
        errors[dtype] = rel_err(o, ref)
        assert errors[dtype] < o_bound(dtype, q_seen, k_seen, v_seen, ref, causal, blocks), ("O", dtype, errors[dtype])
        expected = scores(q_seen, k_seen, causal).logsumexp(-1)
        lse_error = (lse.double() - expected).abs().max().item()
        assert lse_error < lse_bound(dtype, q_seen, k_seen, expected), ("LSE", dtype, lse_error)
    record_property("fp8_over_fp16", errors["fp8"] / errors["fp16"])
    assert errors["fp8"] > 4 * errors["fp16"]  # the fp8 path really rounded P to e4m3


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


@CPU
@pytest.mark.parametrize("launch, dtype", [(launch, "fp16") for launch in VARIANTS] + [(VARIANTS[-2], "fp8")],
                         ids=str)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", CPU_SHAPES[::2])  # ragged; block_q above and below block_kv
def test_interpreter_variants(shape, causal, launch, dtype):
    """Every launch option gives the table launch's O and log-sum-exp to the bit (the same operations on the
    same tiles: in another order, in other programs, or with masks that hide nothing) and moves gpusim's bytes."""
    b, h, h_kv, n, n_kv, d, block_q, block_kv = shape
    blocks = dict(causal=causal, block_q=block_q, block_kv=block_kv)
    q, k, v = inputs(shape)
    expected = run(dtype, q, k, v, return_lse=True, **blocks)
    assert all(torch.equal(x, y) for x, y in zip(run(dtype, q, k, v, return_lse=True, **blocks, **launch), expected))
    moved = gpusim_kernels.trace_io(run, dtype, q, k, v, **blocks, **launch)
    counted = gpusim.simulate("hopper", batch=b, heads=h, kv_heads=h_kv, seq=n, seq_kv=n_kv, head_dim=d,
                              block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype, gpu="H200")
    assert moved == counted.by_tensor


@GPU
@pytest.mark.parametrize("launch", VARIANTS, ids=str)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", GPU_SHAPES)
def test_sm90_variants(shape, causal, launch, record_property):
    """Every launch option is right on the H200, or refused where triton 3.6 compiled it wrong there."""
    hopper = gpusim_kernels.hopper
    full = {**(hopper.WS if launch.get("warp_specialize") else hopper.LAUNCHES[shape[5], "fp16", causal]), **launch}
    if gpusim_kernels.hopper.wrong_on_h200(full, causal, shape[4] % full["block_kv"], shape[5]):
        with pytest.raises(ValueError, match="on the H200"):
            check(shape, causal, record_property, **launch)
    else:
        check(shape, causal, record_property, **launch)


@pytest.mark.parametrize("launch, causal, ragged, head_dim, wrong", [
    (dict(num_stages=2), True, 24, 128, True),  # run 3: NaN on ragged keys
    (dict(num_stages=2), True, 0, 128, False),
    (dict(num_stages=2, mask="every"), True, 0, 64, True),  # run 4: 0.1 error, NaN
    (dict(num_stages=2, mask="branch"), True, 0, 64, False),
    (dict(num_stages=2), False, 24, 64, False),
    (dict(block_q=256, block_kv=64, overlap=True), True, 0, 64, True),  # hopper_variants.json: 0.013 error
    (dict(block_q=256, block_kv=64, overlap=True, mask="branch"), True, 0, 64, False),
    (dict(num_stages=2, warp_specialize=True, num_warps=4, mask="every"), True, 24, 64, False),
])
def test_launches_wrong_on_h200_are_named(launch, causal, ragged, head_dim, wrong):
    """The launches triton 3.6 compiled wrong on the H200 are refused there with the evidence; the table's are not."""
    reason = gpusim_kernels.hopper.wrong_on_h200({**SWP_TABLE, **launch}, causal, ragged, head_dim)
    assert bool(reason) == wrong and (not reason or "H200" in reason)


def test_the_launch_table_is_not_refused():
    for (head_dim, _, causal), launch in gpusim_kernels.hopper.LAUNCHES.items():
        assert gpusim_kernels.hopper.wrong_on_h200(launch, causal, 1, head_dim) is None


@triton.jit
def _order_kernel(I, BH, N, lpt_heads, Br: tl.constexpr):
    i, bh = _program(N, Br, lpt_heads)
    tl.store(I + tl.program_id(0), i)
    tl.store(BH + tl.program_id(0), bh)


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
@pytest.mark.parametrize("lpt_heads", [0, 1, 3, 7, 10])
def test_program_order(lpt_heads):
    """Program pid runs (Q block i, head bh). In order: Q blocks of head 0, then head 1, ... Longest first: heads
    in groups of lpt_heads (7 heads in groups of 3 leave a short last one), each group's Q blocks last to first."""
    n_q, heads = 4, 7  # N = 100 rows in blocks of 32
    i = torch.empty(n_q * heads, dtype=torch.int32, device=DEVICE)
    bh = torch.empty_like(i)
    _order_kernel[(n_q * heads,)](i, bh, 100, lpt_heads, Br=32)
    if lpt_heads == 0:
        expected = [(q_block, head) for head in range(heads) for q_block in range(n_q)]
    else:
        groups = [range(first, min(first + lpt_heads, heads)) for first in range(0, heads, lpt_heads)]
        expected = [(q_block, head) for group in groups for q_block in reversed(range(n_q)) for head in group]
    assert list(zip(i.tolist(), bh.tolist())) == expected


SM90_COMPILE = """
import json
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import mangle_type
from triton.tools.tensor_descriptor import TensorDescriptor
from gpusim_kernels.hopper import hopper_kernel

def compile(mask, causal):
    signature = dict(Q="*fp16", K="*fp16", V="*fp16", O="*fp16", LSE="*fp32", N="i32", N_KV="i32", V_STRIDE="i32",
                     qk_scale="fp32", o_scale="fp32", lpt_heads="i32")
    constants = dict(GROUP=1, D=128, Br=128, Bc=128, CAUSAL=causal, RAGGED=False, FP8=False, STAGES=2,
                     WARP_SPECIALIZE=True, MASK=mask, OVERLAP=False)
    src = ASTSource(fn=hopper_kernel, signature={**signature, **dict.fromkeys(constants, "constexpr")},
                    constexprs=constants)
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))
    except RuntimeError:
        return "failed"
    return kernel.metadata.num_warps, kernel.metadata.global_scratch_size

def compile_swp(**changes):  # software-pipelined: Q, K, V the host's TMA descriptors, (B*H, N, d) in boxes of a head
    box = mangle_type(TensorDescriptor(torch.empty(1, 128, 128, dtype=torch.float16), [1, 128, 128],
                                       [128 * 128, 128, 1], [1, 128, 128]))
    signature = dict(Q=box, K=box, V=box, O="*fp16", LSE="*fp32", N="i32", N_KV="i32", V_STRIDE="i32",
                     qk_scale="fp32", o_scale="fp32", lpt_heads="i32")
    constants = dict(GROUP=1, D=128, Br=128, Bc=128, CAUSAL=True, RAGGED=False, FP8=False, STAGES=3,
                     WARP_SPECIALIZE=False, MASK="branch", OVERLAP=False) | changes
    src = ASTSource(fn=hopper_kernel, signature={**signature, **dict.fromkeys(constants, "constexpr")},
                    constexprs=constants)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=8))

def wgmmas(kernel):  # the TTGIR's loops, wgmmas, their waits and the softmax's exponentials, in order
    ops = []
    for line in kernel.asm["ttgir"].splitlines():
        if "scf.for" in line or "scf.yield" in line:
            ops.append("for" if "scf.for" in line else "yield")
        elif "ttng.warp_group_dot_wait" in line:
            ops.append("wait " + line.split("pendings = ")[1].split(" ")[0])
        elif "ttng.warp_group_dot " in line:
            ops.append("dot async" if "isAsync = true" in line else "dot")
        elif "math.exp2" in line and ops[-1:] != ["softmax"]:
            ops.append("softmax")
    return ops

swp = compile_swp()
rotated = compile_swp(CAUSAL=False, STAGES=2, MASK="every", OVERLAP=True)
print(json.dumps(dict(table=compile("every", False), branch=compile("branch", True), split=compile("split", True),
                      swp=[swp.metadata.num_warps, swp.metadata.global_scratch_size], rotated=wgmmas(rotated))))
"""


@functools.cache
def sm90_compiled_on_cpu():
    """SM90_COMPILE's kernels, compiled for sm_90 by Triton without a GPU (once for the tests that read them)."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", SM90_COMPILE], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@CPU
def test_sm90_compiler_on_cpu():
    """Triton compiles sm_90 code without a GPU (its own ptxas). The warp-specialized launch becomes 12 warps (a
    producer and two consumer warp groups) with three 128-byte TMA descriptors of global scratch per program; a
    branch in its loop leaves it unspecialized (4 warps), a second loop makes the specializer fail: the reasons
    hopper_attention refuses warp_specialize=True with mask='branch' or 'split'. A software-pipelined launch
    takes the host's descriptors and writes none."""
    compiled = sm90_compiled_on_cpu()
    assert compiled["table"] == [12, 3 * DESCRIPTOR_BYTES]
    assert compiled["branch"][0] == 4 and compiled["split"] == "failed"
    assert compiled["swp"] == [8, 0]  # descriptors made on the host: no global scratch


@CPU
def test_sm90_rotated_loop_keeps_pv_in_flight_through_the_next_softmax():
    """docs/hopper.md: in the rotated loop (overlap=True) S_{j+1}'s wgmma is waited on where it is issued
    (pendings = 0), which retires P_j V_j's too, while P_j V_j, issued last, stays in flight into the next
    iteration's softmax: one matmul overlaps the softmax, no more."""
    ops = sm90_compiled_on_cpu()["rotated"]
    loop = ["for", "softmax", "dot async", "wait 0", "dot async", "yield"]  # unrotated: its softmax after the wait
    assert any(ops[i:i + len(loop)] == loop for i in range(len(ops))), ops


@GPU
def test_sm90_descriptor_scratch():
    q = torch.zeros(2, 3, 1000, 128, dtype=torch.float16, device=DEVICE)
    kernel = compiled_kernel(q, q, q, block_q=128)
    programs = 2 * 3 * 8  # 1000 rows in Q blocks of 128
    assert kernel.metadata.global_scratch_size * programs == descriptor_scratch_bytes(batch=2, heads=3, seq=1000,
                                                                                      block_q=128)
    swp = compiled_kernel(q, q, q, block_q=128, warp_specialize=False, num_warps=8, num_stages=3)
    assert swp.metadata.global_scratch_size == descriptor_scratch_bytes(batch=2, heads=3, seq=1000, block_q=128,
                                                                        warp_specialize=False) == 0


@CPU
def test_sm90_descriptor_scratch_on_cpu():
    """test_sm90_descriptor_scratch's check on the d = 128, 128-row-tile kernels Triton compiles for sm_90 on CPU
    (compiled_kernel needs the GPU): the warp-specialized kernel's global scratch per program, over a (2, 3, 1000)
    launch's programs, is descriptor_scratch_bytes; the software-pipelined kernel's is none, as it says."""
    compiled = sm90_compiled_on_cpu()
    programs = 2 * 3 * 8  # 1000 rows in Q blocks of 128
    assert compiled["table"][1] * programs == descriptor_scratch_bytes(batch=2, heads=3, seq=1000, block_q=128)
    assert compiled["swp"][1] == descriptor_scratch_bytes(batch=2, heads=3, seq=1000, block_q=128,
                                                          warp_specialize=False) == 0


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
    (dict(fp8_scale=(1.0, 1.0, 1.0)), "fp8_scale=(q_descale, k_descale, v_descale) was given with fp16 inputs: "
                                      "it goes with float8_e4m3fn inputs"),
    (dict(dtype=FP8), "q, k, v are float8_e4m3fn but fp8_scale is missing: give fp8_scale=(q_descale, "),
    (dict(block_kv=48), "block_kv=48 must be a power of two from 16 to 256"),
    (dict(num_stages=3, warp_specialize=True), "warp_specialize=True needs num_stages=2, not 3"),
    (dict(num_warps=8, warp_specialize=True), "warp_specialize=True needs num_warps=4, not 8"),
    (dict(overlap=True, warp_specialize=True), "warp_specialize=True cannot take overlap=True"),
    (dict(causal=True, mask="split", warp_specialize=True, num_warps=4, num_stages=2),
     "warp_specialize=True needs mask='every', not 'split'"),
    (dict(mask="diagonal"), "mask='diagonal' must be one of 'every', 'branch', 'split'"),
    (dict(lpt_heads=-1), "lpt_heads=-1 must be an integer >= 0"),
    (dict(num_warps=6), "num_warps=6 must be 4, 8 or 16"),
    (dict(return_lse="no"), "return_lse='no' must be True or False"),
])
def test_bad_input(change, message):
    d, dtype = change.pop("head_dim", 64), change.pop("dtype", torch.float16)
    q = torch.zeros(1, 1, 32, d, dtype=dtype, device=DEVICE)
    with pytest.raises(ValueError) as err:
        hopper_attention(q, q, q, **change)
    assert message in str(err.value)


@pytest.mark.parametrize("x, message", [
    (lambda x: x.fill_(float("nan")), "x holds NaN or infinity (its largest |value| is nan): no scale maps it"),
    (lambda x: x.fill_(float("inf")), "x holds NaN or infinity (its largest |value| is inf)"),  # was descale=inf
    (lambda x: x[0], "x is (1, 32, 64) torch.float32: to_fp8 takes a non-empty floating-point (B, H, N, d)"),
    (lambda x: x[:, :, :0], "x is (1, 1, 0, 64) torch.float32"),  # torch's max() of nothing
    (lambda x: x.tolist(), "x is list: expected a 4-d tensor"),
])
def test_to_fp8_refuses_what_it_cannot_scale_in_one_line(x, message):
    """A NaN or infinity gave a NaN or infinite descale, which hopper_attention then refused naming fp8_scale."""
    with pytest.raises(ValueError) as err:
        to_fp8(x(torch.randn(1, 1, 32, 64)))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
@pytest.mark.parametrize("fp8_scale", [(math.nan, 1.0, 1.0), (0.0, 1.0, 1.0), (1.0, 1.0, -1.0), (1.0, math.inf, 1.0),
                                       (1.0, 1.0), (1.0, 1.0, 1.0, 1.0), "abc", 2.0, (True, 1.0, 1.0),
                                       ("1", "1", "1"), (1.0, "a", 1.0), {1: 2, 3: 4, 5: 6}], ids=repr)
def test_fp8_scales_that_are_not_three_positive_finite_numbers_are_refused(fp8_scale):
    """A NaN descale gave an all-NaN O, 0 identical rows, a negative one a wrong O, 2 or a string a deep error, a
    dict its keys as the descales: one line naming fp8_scale instead."""
    q = torch.zeros(1, 1, 32, 64, dtype=FP8, device=DEVICE)
    with pytest.raises(ValueError) as err:
        hopper_attention(q, q, q, fp8_scale=fp8_scale)
    assert str(err.value).startswith(f"fp8_scale={fp8_scale!r} must be 3 positive finite numbers (q_descale, ")


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
def test_fp8_scales_may_be_any_three_numbers():
    """Python or NumPy floats, ints, an array or a tensor of three: the same O."""
    q = to_fp8(inputs(CPU_SHAPES[0])[0][:, :1, :32])[0]
    outs = [hopper_attention(q, q, q, fp8_scale=scale) for scale in
            [(0.5, 0.25, 2.0), (np.float32(0.5), 0.25, 2), np.array([0.5, 0.25, 2.0]), torch.tensor([0.5, 0.25, 2.0])]]
    assert all(torch.equal(out, outs[0]) for out in outs)


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
def test_numpy_integer_knobs_run_the_equal_ints_launch():
    """block_q=np.int64(64) and lpt_heads=np.int64(1) are the launch of 64 and 1 (they were refused as not powers of
    two, not integers)."""
    q = inputs(CPU_SHAPES[0])[0][:, :1, :64].half()
    given = dict(block_q=np.int64(64), block_kv=np.int32(64), lpt_heads=np.int64(1), num_stages=np.int64(2))
    ints = {name: int(x) for name, x in given.items()}
    assert torch.equal(hopper_attention(q, q, q, **given), hopper_attention(q, q, q, **ints))
    resolved = gpusim_kernels.hopper.resolved_launch
    assert resolved(64, "fp16", False, 64, given) == resolved(64, "fp16", False, 64, ints)


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
def test_inputs_of_two_supported_dtypes_are_told_to_match():
    q = torch.zeros(1, 1, 32, 64, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match=r"^q, k, v have dtypes torch.float16, torch.float8_e4m3fn, "
                                         r"torch.float8_e4m3fn: they must match$"):
        hopper_attention(q, q.to(FP8), q.to(FP8))


def test_docs_variant_table_is_what_the_results_file_gives():
    """docs/hopper.md's table of the variants, recomputed from results/h200/hopper_variants.json."""
    from benchmarks import hopper_check
    rows = json.loads((ROOT / "results" / "h200" / "hopper_variants.json").read_text())["rows"]
    printed = [line.split() for line in hopper_check.summary(rows).splitlines()[1:]]
    expected = [[d, "yes" if causal == "1" else "no", f"{int(n):,}", cudnn, flash, f"{table} ({ratio[:-1]})",
                 *techniques] for d, causal, n, cudnn, flash, table, ratio, _, _, *techniques, _ in printed]
    text = (ROOT / "docs" / "hopper.md").read_text()
    documented = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
                  if re.match(r"\| (64|128) \| (yes|no) \| [\d,]+ \|", line)]
    assert documented == expected

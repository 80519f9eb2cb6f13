"""The entry points as torch custom ops: torch.compile(fullgraph=True) runs them without a graph break (under
fullgraph a break raises) and gets what the eager call gives; the trainable one differentiates through
register_autograd. On CPU in Triton's interpreter with the "eager" and "aot_eager" backends, and inductor where a C++
compiler is; with a GPU, compiled by inductor as well."""
import os
import shutil

import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch

import gpusim_kernels
from gpusim_kernels.interpreter import INTERPRETED

DEVICE = "cpu" if INTERPRETED else "cuda"
RUNS = pytest.mark.skipif(not (INTERPRETED or torch.cuda.is_available()), reason="neither a GPU nor the interpreter")
SM90 = not INTERPRETED and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
CPU = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
# inductor's CPU backend compiles C++ (torch._inductor.cpp_builder: $CXX, else g++), which pip cannot install
CXX = pytest.mark.skipif(not shutil.which(os.environ.get("CXX", "g++")), reason="inductor on CPU needs a C++ compiler")
# importing inductor imports torch.jit's deprecated script_method (torch's own, not ours): 28 lines of noise a run
JIT = pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
BACKENDS = ["eager", "aot_eager"] + ([] if INTERPRETED else ["inductor"])


def qkv(shape=(1, 2, 24, 16), kv_heads=1, dtype=torch.float16, grad=False):
    gen = torch.Generator().manual_seed(0)
    b, h, n, d = shape
    shapes = (shape, (b, kv_heads, n, d), (b, kv_heads, n, d))
    return [torch.randn(s, generator=gen).to(DEVICE, dtype).requires_grad_(grad) for s in shapes]


def compiled(fn, backend):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend=backend)


FORWARDS = {
    "flash2": lambda q, k, v: gpusim_kernels.flash2_attention(q, k, v, causal=True, block_q=16, block_kv=16,
                                                              return_lse=True),
    "flash1": lambda q, k, v: gpusim_kernels.flash1_attention(q, k, v, block_q=16, block_kv=16),
    "naive": lambda q, k, v: gpusim_kernels.naive_attention(q, k, v, causal=True),
}


@RUNS
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", FORWARDS)
def test_compiled_forward_equals_eager(name, backend):
    """The same kernels run in both (the op launches what the eager call launches): equal bit for bit."""
    q, k, v = qkv()
    fn = FORWARDS[name]
    eager, graph = fn(q, k, v), compiled(fn, backend)(q, k, v)
    for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (eager, graph))):
        assert a.dtype == b.dtype and torch.equal(a, b)


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_hopper_equals_eager(backend):
    q, k, v = qkv((1, 2, 64, 64))
    fn = lambda q, k, v: gpusim_kernels.hopper_attention(q, k, v, causal=True, return_lse=True)  # noqa: E731
    for a, b in zip(fn(q, k, v), compiled(fn, backend)(q, k, v)):
        assert torch.equal(a, b)


@RUNS
@pytest.mark.parametrize("backend", ["aot_eager"] + ([] if INTERPRETED else ["inductor"]))
def test_compiled_training_step_equals_eager(backend):
    """Forward and backward through gpusim::flash2_attention's register_autograd: the loss and q, k, v's
    gradients equal the eager step's (the same kernels on the same inputs)."""
    def step(q, k, v):
        return (gpusim_kernels.flash2_attention_trainable(q, k, v, causal=True, block_q=16, block_kv=16) ** 2).sum()

    results = []
    for fn in (step, compiled(step, backend)):
        q, k, v = qkv(kv_heads=2, dtype=torch.float32, grad=True)
        loss = fn(q, k, v)
        loss.backward()
        results.append([loss.detach(), q.grad, k.grad, v.grad])
    (loss, *grads), (compiled_loss, *compiled_grads) = results
    # inductor may sum the 768 fp32 squares in another order: within 768 unit roundoffs; the gradients come
    # from the same kernels on dO = 2 O (exact either way), bit for bit
    torch.testing.assert_close(compiled_loss, loss, rtol=768 * 2.0**-24, atol=0)
    assert all(torch.equal(a, b) for a, b in zip(grads, compiled_grads))


def quick_inductor():
    """Inductor's CPU backend compiling in this process with plain C++ loops: no pool of compile workers, no probe
    programs for the CPU's vector instructions (a cold training step compiles in 2.5 s rather than 10 s)."""
    from torch._inductor import config
    return config.patch({"compile_threads": 1, "cpp.vec_isa_ok": False})


# The inductor rows' CPU twins: inductor's CPU backend (C++ for the ops around ours, which stays an extern call
# sized by its register_fake) around the kernels in Triton's interpreter; the same checks at the same small shapes.
@CPU
@CXX
@JIT
@pytest.mark.parametrize("name", FORWARDS)
def test_inductor_forward_on_cpu_tensors_equals_eager(name):
    with quick_inductor():
        test_compiled_forward_equals_eager(name, "inductor")


@CPU
@CXX
@JIT
def test_inductor_training_step_on_cpu_tensors_equals_eager():
    with quick_inductor():
        test_compiled_training_step_equals_eager("inductor")


@RUNS
def test_ops_fake_shapes_are_the_real_ones():
    """torch.library.opcheck: schema, fake (register_fake) against the real outputs, and autograd registration."""
    q, k, v = qkv(kv_heads=2, dtype=torch.float32, grad=True)
    torch.library.opcheck(torch.ops.gpusim.flash2_attention.default, (q, k, v, False, 16, 16, None, None, 16, 16, None),
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


def transposed(x):
    """x's values in a non-contiguous view of the same shape, as a (B, N, H, d) layout's transpose(1, 2) gives."""
    return x.transpose(1, 2).contiguous().transpose(1, 2).requires_grad_(x.requires_grad)


@RUNS
@pytest.mark.parametrize("op, args", [
    ("flash2_attention", (False, 16, 16, None, None, 16, 16, None)),
    ("flash1_attention", (True, 16, 16, None, None, None)),
    ("naive_attention", (True, None, None, None, None, None)), ("flash2_attention_backward", (True, 16, 16, None))])
def test_ops_fakes_on_transposed_inputs_are_the_real_outputs(op, args):
    """Every op returns contiguous tensors whatever its inputs' strides: so must its fake, or torch.compile's
    inductor lays out what follows for strides the op never gives."""
    q, k, v = (transposed(x) for x in qkv(kv_heads=2, dtype=torch.float32))
    if op == "flash2_attention_backward":
        o, lse = gpusim_kernels.flash2_attention(q, k, v, causal=True, block_q=16, block_kv=16, return_lse=True)
        inputs = (q, k, v, o, lse, transposed(torch.randn_like(o)), None)
    else:
        inputs = (q, k, v)
    torch.library.opcheck(getattr(torch.ops.gpusim, op).default, (*inputs, *args), test_utils=("test_faketensor",))


@pytest.mark.skipif(not (INTERPRETED or SM90), reason="needs an sm_90 GPU or Triton's interpreter")
def test_hopper_ops_fake_on_transposed_inputs_is_the_real_output():
    q, k, v = (transposed(x) for x in qkv((1, 2, 64, 64)))
    torch.library.opcheck(torch.ops.gpusim.hopper_attention.default,
                          (q, k, v, False, None, None, None, None, None, None, None, None, None),
                          test_utils=("test_faketensor",))


@CPU
@CXX
@JIT
@pytest.mark.filterwarnings("ignore:dynamo_pgo force disabled:UserWarning")  # what force_disable_caches also turns off
def test_inductor_on_a_transposed_layout_equals_eager():
    """A (B, N, H, d) model's q.transpose(1, 2) into the op and its output flattened after: inductor compiles the
    flatten for the fake's strides."""
    from torch._inductor import config

    def fn(x, k, v):  # x: (B, N, H, d)
        return gpusim_kernels.flash2_attention(x.transpose(1, 2), k, v, block_q=16, block_kv=16).flatten(2)

    q, k, v = qkv(kv_heads=2)
    x = q.transpose(1, 2).contiguous()
    with quick_inductor(), config.patch({"force_disable_caches": True}):  # a graph cached before a fake's change
        assert torch.equal(fn(x, k, v), compiled(fn, "inductor")(x, k, v))  # would keep the strides it had


@RUNS
@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_a_loss_of_the_ops_lse_gets_its_gradient(backend):
    """gpusim::flash2_attention returns (O, LSE); a loss of both took the LSE's gradient as 0 (q.grad off by up to
    0.57, a review found). Its term, P ∘ dLSE in dS, now joins the backward (D - dLSE): the gradients equal
    float64's, eager and compiled (where the LSE's gradient is a tensor even when no loss used it)."""
    q, k, v = qkv(kv_heads=2, dtype=torch.float32, grad=True)
    w = torch.linspace(-1, 1, q.shape[2], device=DEVICE)

    def loss(q, k, v):
        o, lse = torch.ops.gpusim.flash2_attention(q, k, v, True, 16, 16, None, None, 16, 16, None)
        return (o * o).sum() + (lse * w).sum()

    fn = loss if backend is None else compiled(loss, backend)
    grads = torch.autograd.grad(fn(q, k, v), (q, k, v))
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    s = (q64 @ k64.repeat_interleave(group, 1).transpose(-1, -2)) * q.shape[-1] ** -0.5
    s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=DEVICE).triu(1), float("-inf"))
    o64, lse64 = s.softmax(-1) @ v64.repeat_interleave(group, 1), s.logsumexp(-1)
    want = torch.autograd.grad((o64 * o64).sum() + (lse64 * w.double()).sum(), (q64, k64, v64))
    for got, ref in zip(grads, want):  # fp32 kernels against float64: sums of 24 terms, 1e-4 is generous
        torch.testing.assert_close(got.double(), ref, rtol=1e-4, atol=1e-4)


@RUNS
def test_the_ops_knobs_without_tiles_are_refused_naming_them():
    """num_warps given to the op with block_q, block_kv None said "block_q=None must be a positive integer"."""
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"^num_warps=4, num_stages=None need block_q and block_kv too \(given None, "
                                         r"None\): a launch's knobs are set with its tiles$"):
        torch.ops.gpusim.flash2_attention(q, k, v, False, None, None, 4, None, None, None, None)

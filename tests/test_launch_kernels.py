"""kernels/launch.py's launch(): a compiled launch repeated with the same key calls Triton's CompiledKernel
directly. On CPU: the key's classes refine Triton's own specialisation, and the keep/hit/fallback logic on a
stub kernel; the interpreter always takes kernel[grid](...). On a GPU (compiled): the direct path's outputs
equal the ordinary launch's bit for bit, misaligned pointers and integers either side of 16 included."""
from types import SimpleNamespace

import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
import triton
from triton._C.libtriton import native_specialize_impl
from triton.backends.nvidia.driver import CudaLauncher
from triton.knobs import HookChain
from triton.backends.compiler import BaseBackend

import gpusim_kernels
from gpusim_kernels import launch as launching
from gpusim_kernels.interpreter import INTERPRETED

CUDA = pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available(),
                          reason="needs a GPU, with TRITON_INTERPRET unset (the kernels compiled)")
BUFFER = torch.zeros(256, dtype=torch.float16)
VALUES = [0, 1, 2, 15, 16, 17, 31, 32, 48, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16, 2**32, 2**63 - 16,
          2**63, 2**63 + 16, 0.5, 1.0, True, False, None, BUFFER, BUFFER[1:], BUFFER[8:], BUFFER[9:],
          BUFFER.float(), BUFFER.view(torch.int16), BUFFER[8:].view(torch.int16)]


def triton_class(x, specialize, align):
    return native_specialize_impl(BaseBackend, x, False, specialize, align)


@pytest.mark.parametrize("specialize, align", [(True, True), (False, True), (True, False)])
def test_arg_class_refines_tritons_specialisation(specialize, align):
    """Two arguments of one class get one Triton specialisation, whatever a parameter's do_not_specialize and
    do_not_specialize_on_alignment: a launch kept for one is right for the other."""
    for a in VALUES:
        for b in VALUES:
            if launching.arg_class(a) == launching.arg_class(b):
                assert triton_class(a, specialize, align) == triton_class(b, specialize, align), (a, b)


def test_arg_class_tells_apart_what_triton_specialises_on():
    c = launching.arg_class
    assert c(BUFFER) != c(BUFFER[1:]) and c(BUFFER) == c(BUFFER[8:]) and c(BUFFER) != c(BUFFER.float())
    assert c(16) != c(17) and c(16) == c(32) and c(1) != c(2) and c(2**31 - 16) != c(2**31)
    assert c(1) != c(True) and c(1) != c(1.0)
    with pytest.raises(TypeError):
        c("a string")


class StubKernel:
    """kernel[grid](*args, **kwargs) recorded; returns a stub CompiledKernel whose runners record too."""
    arg_names = ["X", "N", "scale", "A", "B"]
    pre_run_hooks = []

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        def ordinary(*args, **kwargs):
            self.calls.append(("ordinary", grid, args, kwargs))
            return StubCompiled(self.calls)
        return ordinary


class StubCompiled:
    run = None  # its launcher: not CUDA's, so launch() keeps the runner below

    def __init__(self, calls):
        self.calls = calls

    def __getitem__(self, grid):
        return lambda *args: self.calls.append(("direct", grid, args))


@pytest.fixture
def direct(monkeypatch):
    """launch() as compiled: DIRECT on, the stub as Triton's CompiledKernel, device 0, nothing kept."""
    monkeypatch.setattr(launching, "DIRECT", True)
    monkeypatch.setattr(launching, "CompiledKernel", StubCompiled)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(launching, "_DIRECT", {})


def test_a_repeated_launch_calls_the_compiled_kernel_with_every_parameter(direct):
    kernel, x = StubKernel(), torch.zeros(64)
    for _ in range(2):
        launching.launch(kernel, (4, 2), x, 64, 0.5, A=8, B=True, num_warps=4)
    assert kernel.calls == [("ordinary", (4, 2), (x, 64, 0.5), dict(A=8, B=True, num_warps=4)),
                            ("direct", (4, 2, 1), (x, 64, 0.5, 8, True))]  # constexprs in parameter order


def stub_cuda_launcher(calls, scratch=0, profile=0):
    """A CompiledKernel as Triton 3.6.0's CUDA launcher leaves it, its C launch recording its arguments: two CTAs a
    program, `scratch` and `profile` bytes of global and profile scratch a CTA, scratch aligned to 256 B."""
    launcher = object.__new__(CudaLauncher)
    launcher.launch = lambda *args: calls.append(("c", args))
    launcher.global_scratch_size, launcher.global_scratch_align, launcher.profile_scratch_size = scratch, 256, profile
    launcher.num_ctas = 2
    launcher.launch_cooperative_grid, launcher.launch_pdl = False, True
    compiled = StubCompiled(calls)
    compiled.run, compiled.function, compiled.packed_metadata = launcher, 1234, (4, 1, 0)
    return compiled


def chain(*calls):
    hooks = HookChain()
    for call in calls:
        hooks.add(call)
    return hooks


@pytest.mark.parametrize("scratch, profile, hook", [(0, 0, chain()), (0, 0, None), (64, 0, chain()), (0, 32, chain()),
                                                    (0, 0, print), (0, 0, chain(print))])
def test_a_cuda_launch_kept_calls_the_c_launcher_as_tritons_runner_would(direct, monkeypatch, scratch, profile, hook):
    """Kept, a launch calls the launcher's C function with the grid, the stream of the launch's device, the
    function, its options, the global scratch (None, or the grid's programs x CTAs x the launcher's bytes a CTA, at
    its alignment, from the allocator Triton holds at that launch, on that stream), the metadata and every
    parameter in order (hooks None: none set, or an empty chain, Triton's default); where the launcher has profile
    scratch or a hook to call, Triton's runner instead."""
    calls, streams, buffers = [], [], []
    compiled = stub_cuda_launcher(calls, scratch, profile)
    monkeypatch.setattr(launching, "driver", SimpleNamespace(active=SimpleNamespace(
        get_current_stream=lambda device: streams.append(device) or 77)))

    def allocator(name):
        return lambda size, align, stream: buffers.append((name, size, align, stream)) or name
    held = SimpleNamespace()
    monkeypatch.setattr(launching._allocation, "_allocator", held)
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", hook)
    kernel, x = StubKernel(), torch.zeros(64)
    ordinary = []
    monkeypatch.setattr(StubKernel, "__getitem__",
                        lambda self, grid: lambda *a, **kw: ordinary.append(grid) or compiled)
    for turn in range(3):
        held.get = lambda name=f"set before launch {turn}": allocator(name)  # a set_allocator before each launch
        launching.launch(kernel, (4, 2, 3), x, 64, 0.5, A=8, B=True, num_warps=4)
    assert ordinary == [(4, 2, 3)]
    if profile or launching.hooks()[0]:
        assert calls == [("direct", (4, 2, 3), (x, 64, 0.5, 8, True))] * 2
        return
    scratches = ["set before launch 1", "set before launch 2"] if scratch else [None, None]
    assert calls == [("c", (4, 2, 3, 77, 1234, False, True, buffer, None, (4, 1, 0), None, None, None,
                            x, 64, 0.5, 8, True)) for buffer in scratches] and streams == [0, 0]
    assert buffers == ([(name, 64 * 4 * 2 * 3 * 2, 256, 77) for name in scratches] if scratch else [])


def test_a_hook_added_after_a_launch_was_kept_makes_the_next_launch_ordinary(direct, monkeypatch):
    """A profiler adding a hook to Triton's chain (the same chain object) changes the key: the launch kept without
    hooks is not called again."""
    calls, hooks = [], chain()
    compiled = stub_cuda_launcher(calls)
    monkeypatch.setattr(launching, "driver", SimpleNamespace(active=SimpleNamespace(get_current_stream=lambda d: 77)))
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", hooks)
    ordinary = []
    monkeypatch.setattr(StubKernel, "__getitem__",
                        lambda self, grid: lambda *a, **kw: ordinary.append(grid) or compiled)
    kernel, x = StubKernel(), torch.zeros(64)
    for hook in (None, None, print, print):
        if hook:
            hooks.add(hook)
        launching.launch(kernel, (4, 2), x, 64, 0.5, A=8, B=True, num_warps=4)
    assert ordinary == [(4, 2), (4, 2)] and [c[0] for c in calls] == ["c", "direct"]


def recording_launch(through):
    """launching.launch, the kernels of each call it makes recorded in `through`."""
    def launch(kernel, grid, *args, **kwargs):
        through.append(grid)
        return launching.launch(kernel, grid, *args, **kwargs)
    return launch


def test_launches_kept_together_run_without_a_key_each_until_a_tensors_class_changes(direct):
    """launch_kept: the first call of a key launches each kernel through the given launch(); once all are kept,
    the next call with tensors of the same classes calls the kept launches (constexprs in parameter order) and
    nothing else, not the given launch(); a misaligned tensor is a new key, launched through the given launch()
    again (ordinarily where the kernel takes it)."""
    first, second, x, y = StubKernel(), StubKernel(), torch.zeros(64), torch.zeros(64)
    calls, through = [], []
    first.calls = second.calls = calls
    launched = launching.Launch(None, {"a": (4, 2), "b": (8,)}, {"a": dict(A=8, B=True), "b": dict(A=1, B=False)}, {})
    each = recording_launch(through)
    for x_now in (x, x, x[1:]):
        launching.launch_kept(launched, ((first, "a", (x_now, 64, 0.5)), (second, "b", (y, 64, 0.5))), each)
    assert through == [(4, 2), (8,), (4, 2), (8,)]  # the first and the third call's, not the second's
    assert [c[:2] for c in calls] == [("ordinary", (4, 2)), ("ordinary", (8,)), ("direct", (4, 2, 1)),
                                      ("direct", (8, 1, 1)), ("ordinary", (4, 2)), ("direct", (8, 1, 1))]
    assert calls[2][2] == (x, 64, 0.5, 8, True) and calls[3][2] == (y, 64, 0.5, 1, False)
    assert len(launched.kept) == 2


def test_one_tensor_given_as_two_arguments_is_keyed_by_position(direct):
    """A tensor passed twice (q is k) and two tensors of different alignment in the same places: the arguments'
    classes differ by position (the second argument aligned, then not), so the second call is not the first's
    kept launch, though the set of distinct tensors' classes is the same."""
    kernel, through = StubKernel(), []
    aligned, misaligned = torch.zeros(64), torch.zeros(64)[1:]
    launched = launching.Launch(None, {"a": (4,)}, {"a": dict(A=8, B=True)}, {})
    each = recording_launch(through)
    for args in ((aligned, aligned, misaligned), (aligned, aligned, misaligned), (aligned, misaligned, misaligned)):
        launching.launch_kept(launched, ((kernel, "a", args),), each)
    assert through == [(4,), (4,)] and [c[0] for c in kernel.calls] == ["ordinary", "direct", "ordinary"]


@pytest.mark.parametrize("hook", [print, chain(print)])
def test_with_a_launch_hook_set_every_call_goes_through_the_given_launch(direct, monkeypatch, hook):
    """A hook set (a function, or a chain holding one): nothing is kept, each call takes the given launch()."""
    monkeypatch.setattr(triton.knobs.runtime, "launch_exit_hook", hook)
    kernel, through = StubKernel(), []
    launched = launching.Launch(None, {"a": (4,)}, {"a": dict(A=8, B=True)}, {})
    each = recording_launch(through)
    for _ in range(3):
        launching.launch_kept(launched, ((kernel, "a", (torch.zeros(64), 64, 0.5)),), each)
    assert through == [(4,)] * 3 and not launched.kept


@pytest.mark.parametrize("change", [
    dict(x=lambda x: x[1:]),  # misaligned: 4 bytes past a multiple of 16
    dict(n=lambda n: n + 1),  # 65: not a multiple of 16
    dict(n=lambda n: 1),  # 1: a constexpr to Triton
    dict(n=lambda n: n + 2**31),  # i64
    dict(x=lambda x: x.double()),
    dict(grid=(4, 3)),
    dict(kwargs=dict(A=16, B=True, num_warps=4)),
    dict(kwargs=dict(A=8, B=True, num_warps=8)),
    dict(device=1),
])
def test_a_launch_differing_in_what_the_kernel_is_specialised_on_is_ordinary(direct, monkeypatch, change):
    kernel, x = StubKernel(), torch.zeros(64)
    launching.launch(kernel, (4, 2), x, 64, 0.5, A=8, B=True, num_warps=4)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: change.get("device", 0))
    args = (change.get("x", lambda x: x)(x), change.get("n", lambda n: n)(64), 0.5)
    launching.launch(kernel, change.get("grid", (4, 2)), *args, **change.get("kwargs", dict(A=8, B=True, num_warps=4)))
    assert [call[0] for call in kernel.calls] == ["ordinary", "ordinary"]


@pytest.mark.parametrize("how", ["object", "default", "hooks", "grid"])
def test_a_launch_in_doubt_is_never_kept(direct, how):
    """An argument launch_key cannot class, a parameter left to its default, pre-run hooks, a callable grid."""
    kernel, x = StubKernel(), torch.zeros(64)
    args, kwargs, grid = (x, 64, 0.5), dict(A=8, B=True), (4, 2)
    if how == "object":
        args = (x, 64, object())
    elif how == "default":
        kwargs = dict(A=8)
    elif how == "hooks":
        kernel.pre_run_hooks = [print]
    else:
        grid = lambda meta: (4, 2)  # noqa: E731
    for _ in range(2):
        launching.launch(kernel, grid, *args, **kwargs)
    assert [call[0] for call in kernel.calls] == ["ordinary", "ordinary"]


class TooBigKernel(StubKernel):
    """A kernel whose compile finds more of a resource than the device has, as Triton reports it."""
    __name__ = "flash2_kernel"

    def __init__(self, *resource):
        super().__init__()
        self.resource = resource

    def __getitem__(self, grid):
        def compile_and_run(*args, **kwargs):
            raise triton.runtime.OutOfResources(*self.resource)
        return compile_and_run


@pytest.mark.parametrize("resource, says", [
    ((1_245_184, 232_448, "shared memory"), "needs 1,245,184 B of shared memory per block; {} has 232,448 B of "
                                            "shared memory: give fewer num_stages or smaller tiles "
                                            "(gpusim.best_blocks picks tiles that fit)"),
    ((1_024, 512, "threads"), "needs 1,024 threads per block; {} has 512 threads: give fewer num_warps"),
])
def test_a_launch_the_gpu_cannot_hold_is_one_line_naming_the_tiles_and_the_limit(monkeypatch, resource, says):
    """Triton's OutOfResources (raised where a launch compiles; on the GPU only) becomes a ValueError naming the
    kernel, the tiles and options it had, what it needs of which resource and the device's limit, in the
    resource's unit, without Triton's traceback (on CPU tensors the device is "this device"; run by the GPU suite
    too, on the GPU's own tensors)."""
    import gpusim
    from gpusim_kernels import flash2
    monkeypatch.setattr(flash2, "flash2_kernel", TooBigKernel(*resource))
    device = "cpu" if INTERPRETED or not torch.cuda.is_available() else "cuda"
    q = torch.zeros(1, 2, 64, 64, dtype=torch.float16, device=device)
    says = says.format(torch.cuda.get_device_name() if device == "cuda" else "this device")
    with pytest.raises(ValueError) as err:
        gpusim_kernels.flash2_attention(q, q, q, tiles=gpusim.Tiles(64, 32, num_warps=4, num_stages=3))
    assert str(err.value) == ("flash2_kernel with block_q=64, block_kv=32, head_dim=64, num_warps=4, num_stages=3 "
                              + says)
    assert err.value.__cause__ is None and err.value.__suppress_context__


@CUDA
def test_too_many_stages_are_refused_where_the_kernel_compiles():
    """The GPU twin of the test above: eight stages of 128 x 128 K and V tiles at d = 128 (over 500 KiB of shared
    memory) compile past any GPU's limit; the kernels leave that check to the compile (gpusim's estimate could
    refuse stages that run), whose error comes back as one line."""
    import gpusim
    q = torch.zeros(1, 2, 256, 128, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match=r"^flash2_kernel with block_q=128, block_kv=128, head_dim=128, num_warps=8, "
                                         r"num_stages=8 needs [\d,]+ B of shared memory per block; .* has [\d,]+ B"):
        gpusim_kernels.flash2_attention(q, q, q, tiles=gpusim.Tiles(128, 128, num_warps=8, num_stages=8))


@pytest.mark.skipif(not INTERPRETED, reason="the interpreter")
def test_the_interpreter_always_launches_through_triton(monkeypatch):
    """Under TRITON_INTERPRET=1 nothing is kept: every launch is kernel[grid](...)."""
    assert not launching.DIRECT
    kernel, x = StubKernel(), torch.zeros(64)
    for _ in range(2):
        launching.launch(kernel, (4, 2), x, 64, 0.5, A=8, B=True)
    assert [call[0] for call in kernel.calls] == ["ordinary", "ordinary"] and not launching._DIRECT


def both_ways(monkeypatch, fn, kernels):
    """fn() launched ordinarily (DIRECT off), then twice with DIRECT on: the first run keeps one key for each of
    `kernels` kernels (None: any number), the second's launches all hit them (JITFunction.run made to fail, no
    key added). Returns the three results."""
    monkeypatch.setattr(launching, "_DIRECT", {})
    monkeypatch.setattr(launching, "DIRECT", False)
    ordinary = fn()
    monkeypatch.setattr(launching, "DIRECT", True)
    first = fn()
    kept = set(launching._DIRECT)
    assert kernels is None or len({key[0] for key in kept}) == len(kept) == kernels
    with monkeypatch.context() as m:
        for kernel in {key[0] for key in kept}:
            m.setattr(kernel, "run", lambda *a, **kw: pytest.fail("an ordinary launch on the direct path"))
        direct = fn()
    assert set(launching._DIRECT) == kept
    return ordinary, first, direct


def assert_same(results):
    ordinary, first, direct = ([x] if isinstance(x, torch.Tensor) else list(x) for x in results)
    for a, b, c in zip(ordinary, first, direct):
        assert torch.equal(a, b) and torch.equal(a, c)


def inputs(b, h, n, d, offset=0, dtype=torch.float16, seed=0):
    """q, k, v contiguous, each `offset` elements past a fresh buffer's start (misaligned unless 8 | offset)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    size = b * h * n * d
    return [torch.randn(size + offset, generator=gen, device="cuda", dtype=dtype)[offset:].view(b, h, n, d)
            for _ in range(3)]


@CUDA
@pytest.mark.parametrize("shape, offset", [((1, 4, 64, 64), 0), ((1, 4, 63, 64), 0), ((1, 4, 64, 64), 1),
                                           ((1, 2, 100, 128), 3)])
@pytest.mark.parametrize("entry", ["flash2", "flash1", "naive"])
def test_direct_launch_equals_ordinary_forward(monkeypatch, entry, shape, offset):
    """Each forward, ordinary and direct, bit for bit: N a multiple of 16 and either side of one at the same
    tiles and grid (64 x 64: one Q block at 63 and 64), and q, k, v at misaligned addresses."""
    q, k, v = inputs(*shape, offset=offset)
    if offset % 8:
        assert q.data_ptr() % 16 and q.is_contiguous()
    fn = getattr(gpusim_kernels, f"{entry}_attention")
    kernels = 3 if entry == "naive" else 1
    assert_same(both_ways(monkeypatch, lambda: fn(q, k, v, causal=True, block_q=64, block_kv=64), kernels))


@CUDA
def test_direct_launch_keeps_misaligned_and_aligned_apart(monkeypatch):
    """N = 64 and 63 at the same grid and constants, and q misaligned: each its own kept kernel."""
    monkeypatch.setattr(launching, "_DIRECT", {})
    for shape, offset in (((1, 4, 64, 64), 0), ((1, 4, 63, 64), 0), ((1, 4, 64, 64), 1)):
        gpusim_kernels.flash2_attention(*inputs(*shape, offset=offset), block_q=64, block_kv=64)
    kept = [key for key in launching._DIRECT if key[0] is gpusim_kernels.flash2.flash2_kernel]
    assert len(kept) == 3 and len({key[1] for key in kept}) == 1  # one grid


@CUDA
@pytest.mark.parametrize("entry, kernels, shape, offset", [
    ("flash2", 4, (1, 4, 128, 64), 0), ("flash2", 4, (1, 4, 127, 64), 0), ("flash2", 4, (2, 4, 80, 64), 1),
    ("naive", 8, (2, 4, 80, 64), 1)])
def test_direct_launch_equals_ordinary_training_step(monkeypatch, entry, kernels, shape, offset):
    """A training step, forward and backward (flash2: four launches; naive: three and five), ordinary and
    direct: the output and every gradient bit for bit; the leaves at q, k, v's (mis)aligned addresses."""
    q, k, v = inputs(*shape, offset=offset)
    trainable = getattr(gpusim_kernels, f"{entry}_attention_trainable")

    def step():
        leaves = [x.detach().requires_grad_() for x in (q, k, v)]  # views: the addresses kept
        o = trainable(*leaves, causal=True)
        o.backward(torch.ones_like(o))
        return [o.detach()] + [x.grad for x in leaves]
    assert_same(both_ways(monkeypatch, step, kernels))


@CUDA
@pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                    reason="needs an sm_90 GPU")
@pytest.mark.parametrize("shape, causal, launch, kernels", [
    ((1, 4, 256, 64), False, dict(warp_specialize=True, num_warps=4, num_stages=2, mask="every"), 1),
    ((2, 4, 256, 128), True, {}, None)])  # the table's launch; host TMA descriptors would take the ordinary path
def test_direct_launch_equals_ordinary_hopper(monkeypatch, shape, causal, launch, kernels):
    q, k, v = inputs(*shape)
    assert_same(both_ways(monkeypatch, lambda: gpusim_kernels.hopper_attention(q, k, v, causal=causal,
                                                                               return_lse=True, **launch), kernels))


@CUDA
@pytest.mark.parametrize("lengths, page_size, num_splits", [((40, 20), 16, None), ((700, 33), 16, 4),
                                                            ((64, 17), None, None), ((700, 640), None, 1)])
def test_direct_launch_equals_ordinary_decode_plan_run(monkeypatch, lengths, page_size, num_splits):
    """DecodePlan.run (split and reduce, or one kernel), ordinary and direct, bit for bit."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(2, 8, 1, 64, generator=gen, device="cuda", dtype=torch.float16)
    if page_size:  # 44 pages of 16 per request (704 tokens), shuffled over 90
        k, v = (torch.randn(90, page_size, 2, 64, generator=gen, device="cuda", dtype=torch.float16)
                for _ in range(2))
        table = torch.randperm(90, generator=gen, device="cuda")[:88].view(2, 44).int()
    else:
        k, v = (torch.randn(2, 2, 704, 64, generator=gen, device="cuda", dtype=torch.float16) for _ in range(2))
        table = None
    plan = gpusim_kernels.DecodePlan(list(lengths), heads=8, kv_heads=2, head_dim=64, dtype=torch.float16,
                                     device="cuda", page_size=page_size, max_cache_len=704, num_splits=num_splits)
    kernels = 1 if plan.num_splits == 1 else 2
    assert_same(both_ways(monkeypatch, lambda: plan.run(q, k, v, table, return_lse=True), kernels))

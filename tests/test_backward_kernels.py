"""The Triton backward kernels (kernels/backward.py, kernels/naive_backward.py) against autograd on the
float64 reference and against gpusim.backward's counts.

Without a GPU they run in Triton's interpreter (tests/conftest.py) and trace_io checks every byte the
backward's launches move; with a GPU (TRITON_INTERPRET unset) the gradient tests run compiled, plus
larger shapes.
"""
import json
import math
import random

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
from test_kernels import (CPU, CUDA, DTYPES, TINY_SRAM, UNIT_ROUNDOFF, case, case_id, device_cases, relative_error,
                          sharing_runs)

import gpusim
import gpusim_kernels
from gpusim import backward
from gpusim_kernels import launch as launching
from gpusim_kernels.interpreter import INTERPRETED

TRAINABLE = {"naive": gpusim_kernels.naive_attention_trainable, "flash2": gpusim_kernels.flash2_attention_trainable}


def random_case(seed):
    """Both algorithms in every dtype over 6 seeds; ragged lengths (at least 2 queries and keys, so that no
    gradient is zero), grouped-query heads, head_dims that are not powers of two."""
    rng = random.Random(seed)
    kv_heads = rng.choice([1, 2])
    return case(["naive", "flash2"][seed % 2], ["fp32", "fp16", "bf16"][seed // 2 % 3], seq=rng.randint(2, 64),
                seq_kv=rng.randint(2, 64), head_dim=rng.choice([16, 48, 64]), block_q=rng.choice([16, 32, 64]),
                block_kv=rng.choice([16, 32, 64]), causal=rng.random() < 0.5, batch=rng.choice([1, 2]),
                heads=kv_heads * rng.choice([1, 2]), kv_heads=kv_heads)


SMALL = [random_case(seed) for seed in range(12)] + [
    case("naive", "fp16", 20, 300, 16, 16, 16, causal=True, heads=2, gpu=TINY_SRAM),  # ds streams each row twice
    # ragged queries (36 = 32 + 4 for naive, whose interpreted run costs per query row; 100 = 3 x 32 + 4) and keys
    *(case(algo, "fp16", seq, 70, 64, 32, 16, causal=True, heads=4, kv_heads=2) for algo, seq in (("naive", 36),
                                                                                                  ("flash2", 100))),
    *(case(algo, "fp32", 20, 90, 16, 16, 32, causal=True) for algo in TRAINABLE),  # keys no query sees
    case("flash2", "bf16", 40, 40, 256, 16, 16, causal=True),  # the largest head_dim
]
LARGE = [case(algo, dtype, seq, seq_kv, head_dim, None, None, causal, heads=4, kv_heads=2, gpu=None)
         for algo in TRAINABLE for dtype in ("fp16", "bf16")
         for seq, seq_kv, head_dim, causal in [(1000, 1500, 80, True), (2048, 2048, 64, False),
                                               (4096, 4096, 128, True)]]


def inputs(c, device, seed=0):
    """q, k, v (leaves that require grad) and do, standard normal in the case's dtype."""
    gen = torch.Generator().manual_seed(seed)
    q_shape, kv_shape = (c["batch"], c["heads"], c["seq"], c["head_dim"]), (c["batch"], c["kv_heads"], c["seq_kv"],
                                                                              c["head_dim"])
    q, k, v, do = (torch.randn(s, generator=gen).to(DTYPES[c["dtype"]]).to(device)
                   for s in (q_shape, kv_shape, kv_shape, q_shape))
    return q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), do


def forward(c, q, k, v):
    return TRAINABLE[c["algo"]](q, k, v, causal=c["causal"], block_q=c["block_q"], block_kv=c["block_kv"],
                                gpu=c["gpu"])


def reference_grads(q, k, v, do, causal):
    """Autograd through the float64 reference (its repeat_interleave sums dK, dV over each group)."""
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    gpusim_kernels.reference_attention(q64, k64, v64, causal=causal).backward(do.double())
    return q64.grad, k64.grad, v64.grad


def bound(c):
    """Each gradient is a matmul with one operand rounded to the dtype (P or dS: relative error <= u), summed in
    fp32 and rounded once more (u / 2): about 1.5u normwise on random data (measured: at most 1.4u in fp16
    and bf16). fp32 sums over up to n = max(N, N_kv) terms add about sqrt(n) 2^-24 (measured: 5.3u at n = 82).
    The bound: 4u + 2 sqrt(n) 2^-24."""
    return 4 * UNIT_ROUNDOFF[c["dtype"]] + 2 * math.sqrt(max(c["seq"], c["seq_kv"])) * 2.0**-24


def same_precision_grads(q, k, v, do, causal):
    """Autograd through attention computed in the inputs' own dtype (matmuls, softmax and all), as PyTorch's
    math backend does: what an ordinary implementation in that precision achieves."""
    q1, k1, v1 = (x.detach().clone().requires_grad_() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    s = q1 @ k1.repeat_interleave(group, 1).transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    (s.softmax(-1) @ v1.repeat_interleave(group, 1)).backward(do)
    return q1.grad, k1.grad, v1.grad


@pytest.mark.parametrize("device, c", device_cases(SMALL, "cpu", CPU) + device_cases(SMALL + LARGE, "cuda", CUDA))
def test_loss_backward_matches_float64_autograd(device, c):
    # Bound: bound(c), or where attention in the dtype itself loses more (dS = P (dP - D) cancels, and D comes
    # from the rounded O: at N in the thousands dK's error passes 4u), twice that error plus one unit roundoff,
    # the forward's rule (docs/kernels.md).
    q, k, v, do = traced(c)[0] if device == "cpu" else inputs(c, device)
    if device == "cuda":
        (forward(c, q, k, v) * do).sum().backward()  # dLoss/dO = do
    ordinary = same_precision_grads(q, k, v, do, c["causal"]) if device == "cuda" else (None,) * 3
    for name, got, expected, plain in zip("qkv", (q.grad, k.grad, v.grad), reference_grads(q, k, v, do, c["causal"]),
                                          ordinary):
        assert got.dtype == q.dtype and got.shape == expected.shape
        limit = bound(c) if plain is None else max(bound(c), 2 * relative_error(plain, expected) +
                                                   UNIT_ROUNDOFF[c["dtype"]])
        assert relative_error(got, expected) <= limit, name


def backward_io(c, q, k, v, do):
    """trace_io of the backward's launches only: the forward runs outside the trace."""
    out = forward(c, q, k, v)
    return gpusim_kernels.trace_io(torch.autograd.grad, out, (q, k, v), do, by_kernel=True)


@CPU
@pytest.mark.parametrize("c", sharing_runs(SMALL))
def test_backward_bytes_equal_gpusim_counts(c):
    shape = {key: value for key, value in c.items() if key not in ("algo", "gpu")}
    assert traced(c)[1] == backward.count(backward.config(c["algo"], **shape, gpu=c["gpu"]))


_TRACED = {}  # case_id -> traced(c)


def traced(c):
    """A case's CPU run: the forward, then (O * do).sum().backward() (dLoss/dO = do) with the backward's launches
    in Triton's interpreter under trace_io: ((q, k, v, do), the backward's bytes by kernel), the gradients in
    q.grad, k.grad, v.grad. The case's gradient test and byte test share the one run."""
    key = case_id(c)
    if key not in _TRACED:
        q, k, v, do = inputs(c, "cpu")
        out = forward(c, q, k, v)
        _TRACED[key] = (q, k, v, do), gpusim_kernels.trace_io(lambda: (out * do).sum().backward(), by_kernel=True)
    return _TRACED[key]


@CPU
def test_default_tiles_are_gpusims():
    """No tiles given: the backward runs gpusim's choice (best_blocks(..., backward=True)), and moves what gpusim
    counts for it."""
    c = case("flash2", "fp16", 300, 200, 64, None, None, causal=True, heads=2)
    q, k, v, do = inputs(c, "cpu")
    shape = dict(seq=300, seq_kv=200, head_dim=64, heads=2, kv_heads=1, causal=True)
    chosen = gpusim_kernels.backward.default_backward_blocks(dict(shape, batch=1, dtype="fp16", gpu="A100-40GB"))
    assert chosen == gpusim.best_blocks("flash2", **shape, backward=True)
    cfg = backward.config("flash2", **shape, block_q=chosen[0], block_kv=chosen[1])
    assert backward_io(c, q, k, v, do) == backward.count(cfg)


@CPU
def test_backward_tiles_come_from_gpusims_backward_choice(monkeypatch):
    """gpusim's backward pick (a stand-in here) is the backward's default, asked once per shape."""
    asked = []
    monkeypatch.setattr(gpusim_kernels.backward, "best_blocks",
                        lambda algo, backward, **shape: asked.append((algo, backward)) or (32, 16))
    gpusim_kernels.backward._cached_backward.cache_clear()
    c = case("flash2", "fp16", 40, 40, 16, None, None, causal=True)
    q, k, v, do = inputs(c, "cpu")
    cfg = backward.config("flash2", seq=40, head_dim=16, causal=True, block_q=32, block_kv=16)
    try:
        assert backward_io(c, q, k, v, do) == backward.count(cfg)
        backward_io(c, q, k, v, do)
        assert asked == [("flash2", True)]
    finally:
        gpusim_kernels.backward._cached_backward.cache_clear()  # the stand-in's launches go with it


RUNS = pytest.mark.skipif(not (INTERPRETED or torch.cuda.is_available()), reason="neither a GPU nor the interpreter")
DEVICE = "cpu" if INTERPRETED else "cuda"


@RUNS
@pytest.mark.parametrize("algo", TRAINABLE)
def test_dk_dv_are_summed_over_the_group(algo):
    c = case(algo, "fp32", 24, 24, 16, 16, 16, causal=True, heads=4, kv_heads=2)  # two blocks, the second partial
    q, k, v, do = inputs(c, DEVICE)
    forward(c, q, k, v).backward(do)
    k4, v4 = (x.detach().repeat_interleave(2, dim=1).requires_grad_() for x in (k, v))
    forward(dict(c, kv_heads=4), q.detach(), k4, v4).backward(do)  # every query head with its own K/V copy
    for grouped, per_head in ((k.grad, k4.grad), (v.grad, v4.grad)):
        torch.testing.assert_close(grouped, per_head.view(1, 2, 2, 24, 16).sum(dim=2), rtol=1e-5, atol=1e-5)


@RUNS
def test_sum_backward_passes_an_expanded_gradient():
    c = case("flash2", "fp16", 33, 33, 16, 16, 16)
    q, k, v, _ = inputs(c, DEVICE)
    forward(c, q, k, v).sum().backward()  # dO is a stride-0 view of one 1.0: copied contiguous first
    expected = reference_grads(q, k, v, torch.ones_like(q), False)
    assert relative_error(q.grad, expected[0]) <= bound(c)


def sum_steps(steps, c=case("flash2", "fp16", 32, 32, 16, None, None)):
    """steps training steps o.sum().backward() of one shape, grads set to None before each."""
    q, k, v, _ = inputs(c, DEVICE)
    for _ in range(steps):
        q.grad = k.grad = v.grad = None
        forward(c, q, k, v).sum().backward()


@RUNS
def test_a_training_step_builds_its_backward_launch_once_per_shape():
    """The checks, gpusim's tile choice, the grids and constants of a step's backward: built on a shape's first
    step, a look-up on every later one."""
    gpusim_kernels.backward._cached_backward.cache_clear()
    sum_steps(3)
    assert gpusim_kernels.backward._cached_backward.cache_info()[:2] == (2, 1)  # hits, misses


@CPU
def test_the_forward_looks_up_the_backward_only_where_a_gradient_is_wanted():
    """flash2_attention_trainable's forward builds the backward's launch (its checks included) where autograd will
    call the backward: backward tiles no GPU of the preset holds (256 x 256 at d = 128 on the A100-40GB, 264,192 B)
    are refused at the call with grad enabled, in one line, and never looked at under torch.no_grad(), as before
    the forward looked the backward up (inference through a trainable entry point)."""
    q = torch.randn(1, 1, 256, 128, dtype=torch.float16, requires_grad=True)
    options = dict(block_q=64, block_kv=64, backward_blocks=(256, 256), gpu="A100-40GB")
    with torch.no_grad():
        assert gpusim_kernels.flash2_attention_trainable(q, q, q, **options).shape == q.shape
    with pytest.raises(ValueError, match=r"^block_q=256, block_kv=256, head_dim=128 \(fp16\) need 264,192 B of SRAM "
                                         r"in the backward's dkdv kernel; A100-40GB has 166,912 B per thread block"):
        gpusim_kernels.flash2_attention_trainable(q, q, q, **options)


@CPU
def test_a_training_steps_backward_launches_would_be_called_directly(monkeypatch):
    """Each of a .sum().backward() step's three backward launches is one launch() keeps when compiled (launch_key
    classes every argument; every constexpr given; no pre-run hook) under the same key on every step: from the
    second step on, compiled, each calls Triton's compiled kernel directly. .sum()'s gradient, a stride-0 view,
    reaches them copied: contiguous and 16-byte aligned, as every tensor they take."""
    calls, launch = [], gpusim_kernels.backward.launch
    monkeypatch.setattr(gpusim_kernels.backward, "launch",
                        lambda kernel, grid, *args, **kwargs: calls.append((kernel, grid, args, kwargs)) or launch(
                            kernel, grid, *args, **kwargs))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    sum_steps(2)
    keys = [launching.launch_key(*call) for call in calls]
    assert len(keys) == 6 and None not in keys and keys[:3] == keys[3:] and len(set(keys)) == 3
    for kernel, grid, args, kwargs in calls:
        assert set(kernel.arg_names[len(args):]) <= kwargs.keys() and not kernel.pre_run_hooks
        assert all(x.is_contiguous() and x.data_ptr() % 16 == 0 for x in args if isinstance(x, torch.Tensor))


@RUNS
@pytest.mark.parametrize("fn, args, message", [
    ("flash2", lambda q, k, v, o, lse: (q, k, v, o, lse, q[:, :, :8]),
     "do is ((1, 1, 8, 16), torch.float16, "),
    ("flash2", lambda q, k, v, o, lse: (q, k, v, o, lse, q.float()),
     "expected the output's gradient, shaped like q (1, 1, 32, 16), torch.float16"),
    ("flash2", lambda q, k, v, o, lse: (q, k, v, o, lse.half(), q), "o (1, 1, 32, 16) and lse (1, 1, 32) "
                                                                    "(torch.float16) must be the forward's"),
    ("naive", lambda q, k, v, o, lse: (q, k, v, q, q), "p is (1, 1, 32, 16) (torch.float16, on "),
    ("flash2", lambda q, k, v, o, lse: (q, k, v, o, lse, "grad"), "do is str: expected the output's gradient"),
    ("flash2", lambda q, k, v, o, lse: (q, k, v, o, lse.to("meta"), q),
     "lse on meta: the backward's tensors must be on one device"),
])
def test_bad_backward_input_raises_one_line(fn, args, message):
    q, k, v = (torch.randn(1, 1, 32, 16, dtype=torch.float16, device=DEVICE) for _ in range(3))
    o, lse = gpusim_kernels.flash2_attention(q, k, v, return_lse=True)
    launcher = {"flash2": gpusim_kernels.flash2_attention_backward,
                "naive": gpusim_kernels.naive_attention_backward}[fn]
    with pytest.raises(ValueError) as err:
        launcher(*args(q, k, v, o, lse))
    assert message in str(err.value) and "\n" not in str(err.value)


@RUNS
@pytest.mark.parametrize("blocks, message", [((24, 16), "backward_blocks[0]=24 must be a power of two >= 16"),
                                             (16, "backward_blocks=16 must be a pair (block_q, block_kv)"),
                                             ((16,), "backward_blocks=(16,) must be a pair"),
                                             ((16, 16, 16), "backward_blocks=(16, 16, 16) must be a pair")])
def test_backward_blocks_are_checked_when_the_step_is_called(blocks, message):
    q, k, v = (torch.randn(1, 1, 32, 16, device=DEVICE, requires_grad=True) for _ in range(3))
    with pytest.raises(ValueError) as err:
        gpusim_kernels.flash2_attention_trainable(q, k, v, backward_blocks=blocks)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@RUNS
@pytest.mark.parametrize("saved_o", [lambda o: o.int(), lambda o: o > 0, lambda o: o.float()], ids=["int", "bool",
                                                                                                     "fp32"])
@pytest.mark.parametrize("rows", [32, 0])
def test_an_o_not_in_qs_dtype_is_refused_in_one_line(saved_o, rows):
    """o in another dtype than q's (an int or bool o ran, and gave dq off by about 1): refused, as a q with no rows
    refuses it, in one line naming both dtypes."""
    q, k, v, do = (torch.randn(1, 1, rows, 16, dtype=torch.float16, device=DEVICE) for _ in range(4))
    o, lse = torch.zeros_like(q), torch.zeros(q.shape[:3], device=DEVICE)
    o = saved_o(o)
    with pytest.raises(ValueError) as err:
        gpusim_kernels.flash2_attention_backward(q, k, v, o, lse, do)
    assert str(err.value).startswith(f"o has dtype {o.dtype} but q has torch.float16") and "\n" not in str(err.value)


@RUNS
def test_numpy_integer_tiles_get_the_equal_ints_backward_launch():
    """backward_blocks and block_q, block_kv as NumPy integers: the launch (one cache entry) of the equal ints;
    bools and floats are still refused."""
    q, k, v = (torch.randn(1, 1, 32, 16, device=DEVICE, requires_grad=True) for _ in range(3))
    gpusim_kernels.backward._cached_backward.cache_clear()
    for blocks in [(np.int64(16), np.int32(32)), (16, 32)]:
        gpusim_kernels.flash2_attention_trainable(q, k, v, backward_blocks=blocks).sum().backward()
    o, lse = gpusim_kernels.flash2_attention(*(x.detach() for x in (q, k, v)), return_lse=True)
    grads = [gpusim_kernels.flash2_attention_backward(q.detach(), k.detach(), v.detach(), o, lse, torch.ones_like(o),
                                                      block_q=block_q, block_kv=16) for block_q in (np.int64(16), 16)]
    assert gpusim_kernels.backward._cached_backward.cache_info()[:2] == (2, 2)  # hits, misses
    assert all(torch.equal(a, b) for a, b in zip(*grads))
    for blocks in [(True, 16), (16.0, 16)]:
        with pytest.raises(ValueError, match=rf"^backward_blocks\[0\]={blocks[0]} must be a positive integer"):
            gpusim_kernels.flash2_attention_trainable(q, k, v, backward_blocks=blocks)
    with pytest.raises(ValueError, match=r"^backward_blocks\[1\]=24 must be a power of two >= 16 \(a tl.dot tile\)"):
        gpusim_kernels.flash2_attention_trainable(q, k, v, backward_blocks=(16, 24))


@RUNS
@pytest.mark.parametrize("algo", ["naive", "flash1", "flash2"])
def test_a_forward_only_entry_point_refuses_inputs_autograd_would_record(algo):
    """A forward-only output carries no gradient: asked under autograd, one line naming the trainable entry point
    (else torch's "element 0 of tensors does not require grad" at .backward()); under no_grad it runs."""
    q, k, v = (torch.randn(1, 1, 32, 16, device=DEVICE, requires_grad=True) for _ in range(3))
    entry = getattr(gpusim_kernels, f"{algo}_attention")
    with pytest.raises(ValueError, match=f"^q, k or v requires grad, but {algo}_attention is forward-only .*call "
                                         f"{'flash2' if algo == 'flash1' else algo}_attention_trainable"):
        entry(q, k, v)
    with torch.no_grad():
        assert not entry(q, k, v).requires_grad


@RUNS
@pytest.mark.parametrize("algo", TRAINABLE)
@pytest.mark.parametrize("loss", ["square", "sum"])
def test_a_second_derivative_raises_rather_than_comes_back_zero(algo, loss):
    """A gradient penalty: dV of L taken with create_graph, for a loss of it and o. dV came back as a constant and the
    loss's backward silently left out its share: once_differentiable refused it only for L = (o * o).sum(), whose
    gradient dO = 2 o requires grad, not for L = o.sum() (q.grad off by up to 10 against float64's, a review found);
    the backward now refuses any create_graph, in one line."""
    c = case(algo, "fp32", 32, 32, 16, 16, 16)
    q, k, v, _ = inputs(c, DEVICE)
    o = forward(c, q, k, v)
    with pytest.raises(RuntimeError, match=f"^create_graph=True asks for the derivative of {algo}_attention_"
                                           "trainable's gradients, .* have no double backward either\\)$"):
        torch.autograd.grad((o * o if loss == "square" else o).sum(), v, create_graph=True)
    (dv,) = torch.autograd.grad(o.sum(), v)  # without create_graph: the first derivative, as before
    assert dv.shape == v.shape and not dv.requires_grad


@RUNS
def test_naive_backward_reads_a_transposed_p_as_the_values_it_holds():
    """P given as a transposed view whose rows need no padding (N_kv a multiple of the row stride the kernels read):
    copied row-major before the kernels read it, so the gradients are P's, not its transpose's."""
    c = case("naive", "fp32", 32, 32, 16, 16, 16)  # not causal: every element of P written
    q, k, v, do = inputs(c, DEVICE)
    o, p = gpusim_kernels.naive_attention(*(x.detach() for x in (q, k, v)), block_q=16, block_kv=16, return_p=True)
    transposed = p.transpose(-1, -2).contiguous().transpose(-1, -2)
    assert torch.equal(transposed, p) and not transposed.is_contiguous()
    got = gpusim_kernels.naive_attention_backward(q.detach(), k.detach(), v.detach(), transposed, do, block_q=16,
                                                  block_kv=16)
    expected = reference_grads(q, k, v, do, False)
    assert all(relative_error(g, e) <= bound(c) for g, e in zip(got, expected))


@CPU
def test_bench_bwd_smoke(tmp_path):
    from benchmarks import bench_bwd
    out = tmp_path / "bench_bwd.json"
    assert bench_bwd.main(["--smoke", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {(r["provider"], r["pass"]) for r in rows} == {(p, s) for p in bench_bwd.ORDER for s in ("bwd", "fwd+bwd")}
    timed = [r for r in rows if "error" not in r]
    assert {"flash2", "torch_naive"} <= {r["provider"] for r in timed}  # the SDPA backends may refuse the CPU
    for r in timed:
        assert {"provider", "pass", "dtype", "head_dim", "causal", "seq", "batch", "heads", "ms", "tflops",
                "peak_bytes"} <= r.keys()
        flops = backward.nominal_flops(r["batch"], r["heads"], r["seq"], r["head_dim"], r["causal"])
        assert r["tflops"] * r["ms"] * 1e9 == pytest.approx(flops * (1.4 if r["pass"] == "fwd+bwd" else 1))


@CPU
def test_host_parts_train_smoke_times_every_part_of_a_step(tmp_path):
    from benchmarks import host_parts
    host_parts.main(["--train", "--smoke", "--calls", "1", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "host_parts_train.json").read_text())
    assert data["environment"]["command"] == "python -m benchmarks.host_parts --train --smoke --out $OUT"
    [row] = data["rows"]
    assert row["launches"] == "interpreted" and (row["batch"], row["heads"], row["seq"], row["head_dim"]) == (
        1, 2, 32, 64)
    parts = ["step", "sdpa_step", "nothing_step", "forward", "forward_no_grad", "sum", "backward", "backward_launch",
             "do_contiguous", "four_empties", "launch_preprocess", "launch_dkdv", "launch_dq"]
    assert all(row[part] > 0 for part in parts) and all(row[part + "_wall"] >= row[part] for part in parts[:4])
    assert not any(row[f"direct_{kernel}"] for kernel in ("preprocess", "dkdv", "dq"))  # the interpreter's
    assert row["backward_thread"] == "caller"  # autograd runs a CPU graph on the calling thread
    assert all(row[part] > 0 for part in ("handoff_to_backward", "backward_in_step", "handoff_to_caller"))
    host_parts.main(["--train", "--smoke", "--no-launch", "--calls", "1", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "host_parts_train.json").read_text())["rows"][0]["launches"] == "stubbed"
    assert gpusim_kernels.backward.launch is gpusim_kernels.flash2.launch is launching.launch  # put back


@CPU
def test_host_thread_smoke_times_every_part_on_both_threads(tmp_path):
    """benchmarks/host_thread.py in the interpreter: every part of the backward, and the pure-Python and allocating
    backwards, timed on both threads; the stamps and the Function's backward put back after."""
    from benchmarks import host_thread
    body = gpusim_kernels.backward.Flash2Attention.backward
    assert host_thread.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "host_thread.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.host_thread --out {tmp_path} --smoke"
    parts = {(r["thread"], r["part"]) for r in data["rows"] if r["us"] > 0}
    assert parts == {(t, p) for t in ("engine", "caller") for p in (
        "prepare", "launches", "after", "total", "python", "empties")}
    assert gpusim_kernels.backward.Flash2Attention.backward is body
    assert gpusim_kernels.backward.launch_kept is launching.launch_kept


def test_ncu_compares_backward_kernels_with_the_training_step_gpusim_prices():
    """A GPU that moved exactly what gpusim predicts for each backward launch, but 10% more DRAM reads and, in
    the DRAM run profiled alone, 5% fewer DRAM writes; the set-up launch profiled first is skipped."""
    import gpusim
    from benchmarks import ncu
    assert [ncu.kernel_of(n) for n in ("dkdv_kernel", "dk_kernel", "dq_kernel", "preprocess_kernel")] == [
        "dkdv", "dk", "dq", "preprocess"]
    entry = {"seq": 1024, "head_dim": 64, "causal": True, "dtype": "fp16", "batch": 16, "heads": 32, "algo": "flash2",
             "pass": "backward", "block_q": 128, "block_kv": 32, "kernels": ["preprocess", "dkdv", "dq"]}
    config = {k: entry[k] for k in ("seq", "head_dim", "causal", "dtype", "batch", "heads", "block_q", "block_kv")}
    launches, dram_launches = [{"kernel_name": "vectorized_elementwise_kernel"}], [{"kernel_name": "fill"}]
    simulated = ncu.simulated_launches("flash2", config, backward=True)
    for kernel in entry["kernels"]:
        sim = simulated[kernel]
        launches.append({"kernel_name": f"{kernel}_kernel", **sim, "dram_read_bytes": 1.1 * sim["dram_read_bytes"],
                         "dram_write_bytes": 2 * sim["dram_write_bytes"]})
        dram_launches.append({"kernel_name": f"{kernel}_kernel", "dram_read_bytes": 1.1 * sim["dram_read_bytes"],
                              "dram_write_bytes": sim["dram_write_bytes"] / 0.95})
    step = gpusim.simulate("flash2", **{k: v for k, v in config.items() if k not in ("block_q", "block_kv")},
                           backward=True, backward_blocks=(128, 32), gpu=ncu.PRESET)
    dkdv = next(k for k in step.kernels if k.name == "dkdv")
    assert dkdv.pass_ == "backward" and launches[2]["dram_write_bytes"] == 2 * dkdv.dram_write_bytes > 0
    setup = {"setup": True, "kernels": ["fill"]}
    rows = ncu.compare(launches, [setup, entry], dram_launches)
    assert {r["kernel"] for r in rows} == {"flash2 bwd preprocess", "flash2 bwd dkdv", "flash2 bwd dq"}
    assert {r["quantity"]: r["rel_err"] for r in rows if r["kernel"] == "flash2 bwd dkdv"} == pytest.approx(
        {"l2_to_sm_bytes": 0, "sm_to_l2_bytes": 0, "dram_read_bytes": 1 / 1.1 - 1, "dram_write_bytes": -0.05,
         "time_s": 0})
    assert "| flash2 bwd dq | l2_to_sm_bytes | 2% | 1 | 100% | 0.0% |" in ncu.format_summary(rows)
    with pytest.raises(ValueError, match="lists 4 launches but ncu profiled 4 \\(3 for DRAM\\)"):
        ncu.compare(launches, [setup, entry], dram_launches[1:])


@CPU
def test_bwd_kernels_times_the_launches_the_backward_makes(tmp_path, monkeypatch):
    """benchmarks/bwd_kernels.py: its three calls, run in order, give flash2_attention_backward's gradients (the same
    launches with the same arguments), and its smoke run writes one row per kernel with the compiled fields."""
    from benchmarks import bwd_kernels
    g = dict(bwd_kernels.groups(smoke=True)[0])
    q, k, v, do = bwd_kernels.inputs(g)
    calls, consts, grads = bwd_kernels.launches(q, k, v, do, g["causal"], (32, 16))
    for kernel in bwd_kernels.KERNELS:
        calls[kernel]()
    o, lse = gpusim_kernels.flash2_attention(q, k, v, causal=g["causal"], return_lse=True)
    expected = gpusim_kernels.flash2_attention_backward(q, k, v, o, lse, do, causal=g["causal"], block_q=32,
                                                        block_kv=16)
    assert all(torch.equal(got, want) for got, want in zip(grads, expected))
    assert (consts["dkdv"]["Br"], consts["dkdv"]["Bc"]) == (32, 16)
    monkeypatch.setattr(bwd_kernels, "TILES", bwd_kernels.TILES)  # restored after main() sets the smoke tiles
    bwd_kernels.main(["--out", str(tmp_path), "--smoke", "--workers", "1"])
    rows = json.loads((tmp_path / "bwd_kernels.json").read_text())["rows"]
    assert [(r["kernel"], r["block_q"], r["block_kv"]) for r in rows] == [(name, 32, 16)
                                                                           for name in bwd_kernels.KERNELS]
    assert all(r["ms"] > 0 and r["num_warps"] > 0 for r in rows)
    assert all(r["resident"] is None for r in rows)  # interpreted: nothing compiled


@CPU
@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's overflow: a kernel read unset memory
def test_bwd_warps_smoke_run_launches_each_kernel_with_the_options_it_names(tmp_path):
    """benchmarks/bwd_warps.py in the interpreter: a row per tile, launch variant and kernel, each launched with the
    num_warps and maxnreg its row names (bwd_kernels.launches' override; the preprocess keeps gpusim's) and the
    stages gpusim's rule gives that kernel."""
    from benchmarks import bwd_kernels, bwd_warps
    g = bwd_warps.groups(smoke=True)[0]
    _, rule, _ = bwd_kernels.launches(*bwd_kernels.inputs(g), g["causal"], (64, 32))
    _, consts, _ = bwd_kernels.launches(*bwd_kernels.inputs(g), g["causal"], (64, 32), num_warps=8, maxnreg=128)
    assert all(consts[k] == {**rule[k], "num_warps": 8, "maxnreg": 128} for k in ("dkdv", "dq"))
    assert consts["preprocess"] == rule["preprocess"] and "maxnreg" not in rule["dkdv"]
    bwd_warps.main(["--out", str(tmp_path), "--smoke"])
    rows = json.loads((tmp_path / "bwd_warps.json").read_text())["rows"]
    assert [(r["block_kv"], r["num_warps"], r["maxnreg"], r["kernel"]) for r in rows] == [
        (kv, w, regs, kernel) for kv in (64, 32) for w, regs in bwd_warps.VARIANTS for kernel in bwd_warps.KERNELS]
    assert all(r["ms"] > 0 and r["num_stages"] == rule[r["kernel"]]["num_stages"] for r in rows if r["block_kv"] == 32)


@RUNS
def test_naive_backward_without_tiles_reads_p_at_the_forwards_tiles():
    """naive_attention picks its tiles (best_blocks) and writes a causal P only in the tiles it visits; its backward,
    given none, took gpusim.backward's default tiles, larger, and read P's unwritten tiles above the diagonal: wrong
    gradients, or NaN where that memory held large values. Those tiles are filled with 100 here, so a backward that
    reads them cannot pass."""
    c = case("naive", "fp32", 20, 20, 80, 16, 16)
    q, k, v, do = inputs(c, DEVICE)
    o, p = gpusim_kernels.naive_attention(*(x.detach() for x in (q, k, v)), causal=True, return_p=True)
    gpu = launching.detect_gpu(torch.device(DEVICE))
    forward = gpusim.best_blocks("naive", seq=20, head_dim=80, causal=True, dtype="fp32", gpu=gpu)
    backward_default = backward.config("naive", seq=20, head_dim=80, causal=True, dtype="fp32", gpu=gpu)
    visited = torch.zeros(20, 20, dtype=torch.bool)
    for i in range(-(-20 // forward[0])):
        last_row = min((i + 1) * forward[0], 20) - 1
        visited[i * forward[0]:(i + 1) * forward[0], :(last_row // forward[1] + 1) * forward[1]] = True
    assert not visited.all()  # the forward skips some tiles
    p.masked_fill_(~visited.to(p.device), 100.0)
    got = gpusim_kernels.naive_attention_backward(q.detach(), k.detach(), v.detach(), p, do, causal=True)
    expected = reference_grads(q, k, v, do, True)
    assert all(relative_error(g, e) <= bound(c) for g, e in zip(got, expected))
    assert forward != (backward_default.block_q, backward_default.block_kv)  # what made the old default wrong

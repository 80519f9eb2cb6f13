"""Batches past a grid's y axis: the forward and backward kernels put batch x heads programs on their grid's y
axis, where CUDA launches at most 65,535 (gpusim.hardware GRID_YZ_MOST; x takes 2**31 - 1), so a batch of 2,048
requests of 32 heads would fail to launch ("invalid argument"). The entry points run such a batch in slices, a
call each, after their checks and at the whole batch's tiles (kernels/launch.py in_slices). Here the limit is
lowered to a few programs, so that the slicing runs in Triton's interpreter on CPU tensors (on a GPU, compiled):
the slices' outputs and gradients equal one launch's bit for bit at the same tiles (every (request, head) is its
own programs), their bytes equal gpusim's count of the whole batch, and no launch's y axis passes the limit."""
import re

import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch

import gpusim
import gpusim_kernels
from gpusim_kernels import backward, flash2, launch as launching, naive, naive_backward
from gpusim_kernels.interpreter import INTERPRETED

DEVICE = "cpu" if INTERPRETED else "cuda"
RUNS = pytest.mark.skipif(not (INTERPRETED or torch.cuda.is_available()), reason="neither a GPU nor the interpreter")
LIMIT = 5  # programs along y: (3 requests x 2 heads) = 6 runs as slices of 2 requests and 1
TILES = dict(block_q=16, block_kv=16)  # one tile for the whole batch and its slices (the default depends on batch)
FORWARDS = ["naive_attention", "flash2_attention"]  # flash1's and hopper's grids put batch x heads on x


def qkv(seed=0, grad=False):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(3, h, 40, 16, generator=g, dtype=torch.float16).to(DEVICE) for h in (2, 1, 1))
    return [x.requires_grad_(grad) for x in (q, k, v)]


@pytest.fixture
def grids(monkeypatch):
    """Every launch's grid, in order, with the y axis limited to LIMIT programs."""
    seen, launched = [], launching.launch

    def recording(kernel, grid, *args, **kwargs):
        seen.append(grid)
        return launched(kernel, grid, *args, **kwargs)
    for module in (flash2, naive, naive_backward, backward):
        monkeypatch.setattr(module, "launch", recording)
    monkeypatch.setattr(launching, "GRID_YZ_MOST", LIMIT)
    return seen


@RUNS
@pytest.mark.parametrize("entry", FORWARDS)
def test_a_forward_past_the_grid_runs_in_slices_equal_to_one_launch(entry, grids, monkeypatch):
    q, k, v = qkv()
    sliced = getattr(gpusim_kernels, entry)(q, k, v, causal=True, **TILES)
    assert len(grids) > 1 and max(g[1] for g in grids) <= LIMIT and sum(g[1] for g in grids) % (3 * 2) == 0
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 65_535)
    assert torch.equal(sliced, getattr(gpusim_kernels, entry)(q, k, v, causal=True, **TILES))


@pytest.mark.skipif(not INTERPRETED, reason="trace_io counts in Triton's interpreter")
@pytest.mark.parametrize("entry", FORWARDS)
@pytest.mark.parametrize("tiles", [TILES, {}], ids=["given", "default"])
def test_the_slices_move_the_bytes_gpusim_counts_for_the_whole_batch(entry, tiles, grids):
    """At the tiles given or at the default, which is the whole batch's (a slice's own default could differ: the
    pick depends on the batch)."""
    q, k, v = qkv()
    moved = gpusim_kernels.trace_io(getattr(gpusim_kernels, entry), q, k, v, causal=True, **tiles)
    counted = gpusim.simulate(entry.removesuffix("_attention"), q=q.numpy(), k=k.numpy(), v=v.numpy(), causal=True,
                              **tiles).by_tensor
    assert moved == counted and max(g[1] for g in grids) <= LIMIT


@RUNS
def test_a_slice_runs_at_the_whole_batchs_default_tiles(grids, monkeypatch):
    """Nine requests of 2 heads, N = 128, d = 64: on the A100-40GB (given, so that the GPU run asks the same of
    gpusim) gpusim picks (16, 64) for the batch of 9 and another tile for the last slice's one request alone;
    every slice runs the batch's. (On H100-measured the two picks are one tile.)"""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(9, 2, 128, 64, generator=g, dtype=torch.float16).to(DEVICE) for _ in range(3))
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 4)
    shape = dict(seq=128, head_dim=64, heads=2, causal=True, gpu="A100-40GB")
    whole, alone = (gpusim.best_blocks("flash2", batch=b, **shape) for b in (9, 1))
    assert whole != alone
    seen = []
    def constants(cfg, kernel):
        seen.append((cfg.block_q, cfg.block_kv))
        return launching.constants(cfg, kernel)
    monkeypatch.setattr(flash2, "constants", constants)
    sliced = gpusim_kernels.flash2_attention(q, k, v, causal=True, gpu="A100-40GB")
    assert set(seen) == {whole} and len(grids) == 5
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 65_535)
    assert torch.equal(sliced, gpusim_kernels.flash2_attention(q, k, v, causal=True, block_q=whole[0],
                                                               block_kv=whole[1], gpu="A100-40GB"))


@RUNS
@pytest.mark.parametrize("entry", ["naive_attention_trainable", "flash2_attention_trainable"])
def test_a_training_step_past_the_grid_gives_one_launchs_gradients(entry, grids, monkeypatch):
    """The trainables slice the batch before autograd records: each slice is a node of its own, and torch.cat's
    backward hands each its rows of dO."""
    q, k, v = qkv(grad=True)
    o = getattr(gpusim_kernels, entry)(q, k, v, causal=True, **TILES)
    o.float().square().sum().backward()
    assert max(g[1] for g in grids) <= LIMIT
    sliced = [o.detach(), q.grad, k.grad, v.grad]
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 65_535)
    q, k, v = qkv(grad=True)
    o = getattr(gpusim_kernels, entry)(q, k, v, causal=True, **TILES)
    o.float().square().sum().backward()
    assert all(torch.equal(a, b) for a, b in zip(sliced, [o.detach(), q.grad, k.grad, v.grad]))


@RUNS
def test_flash2s_backward_past_the_grid_gives_one_launchs_gradients(grids, monkeypatch):
    q, k, v = qkv()
    do = torch.randn_like(q)
    o, lse = gpusim_kernels.flash2_attention(q, k, v, return_lse=True, **TILES)
    sliced = gpusim_kernels.flash2_attention_backward(q, k, v, o, lse, do, **TILES)
    assert max(g[1] for g in grids) <= LIMIT
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 65_535)
    whole = gpusim_kernels.flash2_attention_backward(q, k, v, o, lse, do, **TILES)
    assert all(torch.equal(a, b) for a, b in zip(sliced, whole))


@RUNS
def test_tensors_given_by_name_are_sliced_and_checked_as_one_launchs(grids):
    """The slicing comes after the entry's checks, on the tensors however they were passed: by name too, and a
    k of another batch is refused as one launch refuses it, not sliced to q's."""
    q, k, v = qkv()
    gpusim_kernels.flash2_attention(q=q, k=k, v=v, **TILES)
    assert len(grids) == 2 and max(g[1] for g in grids) <= LIMIT
    more = torch.cat([k, k])
    with pytest.raises(ValueError, match=r"^q \(3, 2, 40, 16\) and k \(6, 1, 40, 16\) must agree on batch"):
        gpusim_kernels.flash2_attention(q, more, more, **TILES)


@RUNS
def test_naives_p_from_slices_is_a_view_of_one_padded_buffer_as_one_launchs(grids, monkeypatch):
    """return_p's P joined as the slices' padded buffers, rows LD apart, so the backward reads it without a copy."""
    q, k, v = qkv()
    o, p = gpusim_kernels.naive_attention(q, k, v, return_p=True, **TILES)
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 65_535)
    o1, p1 = gpusim_kernels.naive_attention(q, k, v, return_p=True, **TILES)
    assert p.stride() == p1.stride() and p.stride(2) > p.shape[3] and torch.equal(p, p1) and torch.equal(o, o1)
    assert naive_backward.rows_apart(p, p.stride(2)).data_ptr() == p.data_ptr()  # no copy


def test_more_heads_than_a_grid_holds_is_one_line(monkeypatch):
    monkeypatch.setattr(launching, "GRID_YZ_MOST", 1)
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"^heads=2: a launch's grid holds at most 1 \(batch x heads\) along its y"):
        gpusim_kernels.flash2_attention(q, k, v)


def test_the_limit_is_cudas():
    """CUDA's maxGridSize is (2**31 - 1, 65,535, 65,535) on every GPU since compute capability 3.0."""
    assert launching.GRID_YZ_MOST == 2**16 - 1


@pytest.mark.parametrize("field, value", [("batch", 65_536), ("num_splits", 70_000)])
def test_a_decode_plan_past_the_grid_is_one_line(field, value, monkeypatch):
    """Decoding's grids put the batch on y and the splits on z: a plan past them is refused (a serving batch of
    65,536 requests in one call is not one a server makes; no slicing)."""
    lengths = [4096] * value if field == "batch" else [2**21]  # 2M keys: 131,072 chunks of 16 to split
    splits = dict(num_splits=value, block_kv=16) if field == "num_splits" else {}
    with pytest.raises(ValueError, match=rf"^{field}={value:,}: the decode kernels' grids hold at most 65,535 along"):
        gpusim_kernels.DecodePlan(lengths, heads=8, kv_heads=8, head_dim=64, dtype=torch.float16, device=DEVICE,
                                  max_cache_len=max(lengths), **splits)


@pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available(), reason="needs a GPU, with TRITON_INTERPRET unset")
@pytest.mark.parametrize("entry", FORWARDS)
def test_a_batch_of_65536_heads_runs_on_the_gpu(entry):
    """The GPU twin at CUDA's own limit: 2,048 requests of 32 heads (65,536 programs along y in one launch, which
    CUDA refuses with "invalid argument"). Against float64, at most twice the error of SDPA in fp16 plus one
    rounding of O (tests/test_kernels.py's bound)."""
    q, k, v = (torch.randn(2048, 32, 64, 64, dtype=torch.float16, device="cuda") for _ in range(3))
    ref = gpusim_kernels.reference_attention(q, k, v)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    error = ((getattr(gpusim_kernels, entry)(q, k, v).double() - ref).norm() / ref.norm()).item()
    assert error <= 2 * ((sdpa.double() - ref).norm() / ref.norm()).item() + 2**-11


EMPTY = [((0, 4, 16, 32), (0, 2, 24, 32)), ((2, 0, 16, 32), (2, 0, 24, 32)), ((2, 4, 0, 32), (2, 2, 24, 32))]


def sdpa_step(q, k, v):
    """SDPA's output and gradients (float32 on the CPU, its math backend) for q, k, v: what an empty batch, head or
    query gives. (torch 2.11 dies of a floating point exception given enable_gqa with no heads: 0 // 0.)"""
    q, k, v = (x.detach().cpu().float().requires_grad_() for x in (q, k, v))
    gqa = q.shape[1] != k.shape[1]
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    o.sum().backward()
    return o, q.grad, k.grad, v.grad


@pytest.mark.parametrize("q_shape, kv_shape", EMPTY)
@pytest.mark.parametrize("entry", ["naive", "flash2"])
def test_no_rows_give_sdpas_empty_output_and_gradients_without_a_launch(entry, q_shape, kv_shape, grids):
    """batch, heads or N = 0: O (and flash2's LSE, naive's P) come back empty in SDPA's shapes, and a training
    step's gradients are SDPA's: dq empty, dk and dv zeros where keys exist (no query reads them); no launch."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(*s, generator=g, dtype=torch.float16).to(DEVICE) for s in (q_shape, kv_shape, kv_shape))
    o_ref, *grads_ref = sdpa_step(q, k, v)
    forward = dict(naive=lambda: naive.naive_attention(q, k, v, causal=True, return_p=True),
                   flash2=lambda: flash2.flash2_attention(q, k, v, causal=True, return_lse=True))[entry]
    o, extra = forward()
    assert o.shape == o_ref.shape and o.dtype == q.dtype and o.device == q.device
    assert extra.shape == ((*q_shape[:3], kv_shape[2]) if entry == "naive" else q_shape[:3])
    trainable = getattr(gpusim_kernels, f"{entry}_attention_trainable")
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    trainable(*leaves, causal=True).sum().backward()
    for x, ref in zip(leaves, grads_ref):
        assert x.grad.shape == ref.shape and x.grad.dtype == q.dtype and not x.grad.count_nonzero()
        assert not ref.count_nonzero()
    assert grids == []


@pytest.mark.parametrize("entry, args, message", [
    ("flash2", lambda q, k, o, lse: (q, k, k, o, lse.half(), o), "o (0, 4, 16, 32) and lse (0, 4, 16) (torch.float16)"),
    ("flash2", lambda q, k, o, lse: (q, k, k, o[:, :, :3], lse, o), "o (0, 4, 3, 32) and lse (0, 4, 16)"),
    ("flash2", lambda q, k, o, lse: (q, k, k, o, lse, o.float()), "do is ((0, 4, 16, 32), torch.float32"),
    ("naive", lambda q, k, o, lse: (q, k, k, lse, o), "p is (0, 4, 16) (torch.float32, on "),
])
def test_an_empty_backwards_saved_tensors_are_checked(entry, args, message):
    """o and lse (flash2's), P (naive's) and do are checked on their own shapes where q has no rows."""
    q, k = torch.zeros(0, 4, 16, 32, dtype=torch.float16), torch.zeros(0, 2, 24, 32, dtype=torch.float16)
    o, lse = torch.zeros_like(q), torch.zeros(0, 4, 16)
    backward_entry = dict(flash2=backward.flash2_attention_backward, naive=naive_backward.naive_attention_backward)
    with pytest.raises(ValueError, match=re.escape(message)):
        backward_entry[entry](*(x.to(DEVICE) for x in args(q, k, o, lse)))


@pytest.mark.parametrize("change, message", [
    (dict(q=torch.zeros(0, 4, 16, 32, dtype=torch.float64)), "q has dtype torch.float64: supported are"),
    (dict(k=torch.zeros(1, 2, 24, 32, dtype=torch.float16)), "must agree on batch (dim 0) and head_dim (dim 3)"),
    (dict(k=torch.zeros(0, 3, 24, 32, dtype=torch.float16)), "heads=4 is not a multiple of kv_heads=3"),
    (dict(causal="yes"), "causal='yes' must be True or False"),
    (dict(block_q=48), "block_q=48 must be a power of two"),
    (dict(gpu="H999"), "unknown gpu='H999'"),
    (dict(q=torch.zeros(0, 4, 16, 32, dtype=torch.bfloat16), k=torch.zeros(0, 2, 24, 32, dtype=torch.bfloat16),
          gpu="T4"), "dtype='bf16': T4 has no bf16 tensor cores"),
    (dict(tiles=gpusim.Tiles(16, 16, warp_specialize=True)), "warp_specialize=True: the "),
])
@pytest.mark.parametrize("entry", ["naive_attention", "flash1_attention", "flash2_attention",
                                   "flash2_attention_trainable", "naive_attention_trainable"])
def test_no_rows_are_still_checked(entry, change, message):
    """An empty batch skips the launch, not the checks of the tensors and options (gpusim's, made on one row)."""
    tensors = dict(q=torch.zeros(0, 4, 16, 32, dtype=torch.float16), k=torch.zeros(0, 2, 24, 32, dtype=torch.float16))
    tensors |= {name: x for name, x in change.items() if name in tensors}
    options = {name: x for name, x in change.items() if name not in tensors}
    q, k = (tensors[name].to(DEVICE) for name in ("q", "k"))
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(gpusim_kernels, entry)(q, k, k, **options)

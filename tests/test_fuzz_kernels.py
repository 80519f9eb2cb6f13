"""The kernels' entry points under drawn arguments, up to the launch: each call reaches its first kernel launch
or raises one ValueError of one line (or, where q has no rows, returns empty outputs without a launch, as SDPA
does); never another exception (this fuzz found a list given as block_q hashed
into the launch caches, a TypeError; and None, a string or ragged rows as cache_seqlens or a block table, and a
3-d q beside a device block table, each a TypeError, RuntimeError or IndexError from torch).

The launches are replaced by one that raises Launched, so no kernel runs: the draws cost the checks and gpusim's
tile search only. Derandomized: CI draws the same cases every run. On a GPU the tensors are CUDA ones."""
import math
import re

import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
pytest.importorskip("hypothesis", reason="the test extra (a GPU machine may lack it)")
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusim
from gpusim_kernels import backward, decode, flash1, flash2, hopper, naive, naive_backward
from gpusim_kernels.interpreter import INTERPRETED

DEVICE = "cpu" if INTERPRETED else "cuda"
FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
FLOATS = st.sampled_from([torch.float16, torch.bfloat16, torch.float32])
DTYPES = st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32,
                          torch.float8_e4m3fn])
DIMS = st.sampled_from([0, 1, 2, 3, 7, 16, 64, 100, 128, 256, 300, 65536])
SHAPES = st.lists(DIMS, max_size=5).map(tuple).filter(lambda s: math.prod(max(d, 1) for d in s) < 2**26)
NOT_TENSORS = st.sampled_from([None, 3, [1, 2], "q"])
BLOCKS = st.sampled_from([None, 16, 32, 64, 128])
BAD_BLOCKS = st.sampled_from([0, -1, 2.5, "64", True, 48, 512, (64, 64), [64], float("nan")])
OPTIONS = st.fixed_dictionaries({}, optional=dict(causal=st.booleans(), block_q=BLOCKS, block_kv=BLOCKS,
                                                  gpu=st.sampled_from([None, "H200", "A100-40GB", "T4"])))
BAD_OPTIONS = dict(causal=st.sampled_from([None, "yes", 1]), block_q=BAD_BLOCKS, block_kv=BAD_BLOCKS,
                   gpu=st.sampled_from(["bogus", 3, ["H200"]]),
                   tiles=st.sampled_from([gpusim.Tiles(64, 64), gpusim.Tiles(512, 512), 3, (64, 64)]))
FAULTS = st.sampled_from([None, None, None, "shape", "dtype", "not a tensor", "option"])  # at most one a call


class Launched(Exception):
    """What the replaced launch raises: the call passed every check."""


@pytest.fixture(autouse=True)
def no_kernels(monkeypatch):
    def launched(*args, **kwargs):
        raise Launched
    for module in (flash1, flash2, naive, backward, naive_backward, decode):
        monkeypatch.setattr(module, "launch", launched)
    monkeypatch.setattr(hopper, "launch_kernel", launched)


def tensor(shape, dtype, contiguous=True):
    """Zeros of shape and dtype on DEVICE; past 4M elements one element expanded (the checks read shapes only);
    not contiguous: the last two dims' strides swapped, as x.transpose(-1, -2).contiguous().transpose(-1, -2) swaps
    them (x itself where the transposed view is contiguous already), made as zeros in that order: no copy."""
    if math.prod(max(d, 1) for d in shape) > 1 << 22:
        return torch.zeros((1,) * len(shape), dtype=dtype, device=DEVICE).expand(*shape)
    x = torch.zeros(shape, dtype=dtype, device=DEVICE)
    if contiguous or len(shape) < 2 or x.transpose(-1, -2).is_contiguous():
        return x
    return torch.zeros(x.transpose(-1, -2).shape, dtype=dtype, device=DEVICE).transpose(-1, -2)


def reaches_launch(call, q):
    """True where call() reached a launch; False where it raised one line of ValueError, or returned without a
    launch, which it may only where q has no rows (batch, heads or N 0): then each output is empty or zeros."""
    try:
        out = call()
    except Launched:
        return True
    except ValueError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
        assert ours(err), f"raised inside a library, not by a check: {err}"
        return False
    assert isinstance(q, torch.Tensor) and not q.numel(), "returned without a launch, but q has rows"
    for x in out if isinstance(out, tuple) else (out,):
        assert isinstance(x, torch.Tensor) and not x.count_nonzero(), "returned without a launch: not empty"
    return False


def ours(err):
    """Whether err was raised by the project's code (a check that names the value), not inside NumPy or torch
    (whose words name neither the argument nor its limit: "zero-size array to reduction operation maximum")."""
    tb = err.__traceback__
    while tb.tb_next:
        tb = tb.tb_next
    return "site-packages" not in tb.tb_frame.f_code.co_filename


@st.composite
def attention(draw, options=OPTIONS, bad_options=BAD_OPTIONS, head_dims=(16, 64, 100, 128, 256), dtypes=FLOATS):
    """(shapes {q, k, v}, dtypes, options, fault, the tensor it is in): a valid call's shapes and dtypes, and at
    most one fault, an option's already in the options (tensors applies the others)."""
    b, (h, h_kv), n, n_kv = (draw(st.sampled_from(v)) for v in ([1, 2, 3], [(1, 1), (4, 4), (4, 2), (8, 1)],
                                                                [1, 16, 100, 257], [1, 16, 100, 257]))
    d, dtype = draw(st.sampled_from(head_dims)), draw(dtypes)
    shapes = dict(q=(b, h, n, d), k=(b, h_kv, n_kv, d), v=(b, h_kv, n_kv, d))
    dtypes = dict.fromkeys(shapes, dtype)
    fault, name = draw(FAULTS), draw(st.sampled_from(sorted(shapes)))
    options = draw(options)
    if fault == "option":
        name = draw(st.sampled_from(sorted(bad_options)))
        options[name] = draw(bad_options[name])
    return shapes, dtypes, options, fault, name


def tensors(draw, shapes, dtypes, fault, name):
    """{name: the tensor of its shape and dtype, contiguous or not}, name's with the fault: its shape or dtype
    redrawn, or not a tensor."""
    if fault == "shape":
        shapes = shapes | {name: draw(SHAPES)}
    if fault == "dtype":
        dtypes = dtypes | {name: draw(DTYPES)}
    made = {x: tensor(shape, dtypes[x], draw(st.booleans())) for x, shape in shapes.items()}
    if fault == "not a tensor":
        made[name] = draw(NOT_TENSORS)
    return made


@st.composite
def qkv(draw, **attention_options):
    """([q, k, v], options)."""
    shapes, dtypes, options, fault, name = draw(attention(**attention_options))
    return list(tensors(draw, shapes, dtypes, fault, name).values()), options


FORWARDS = {"naive": naive.naive_attention, "flash1": flash1.flash1_attention, "flash2": flash2.flash2_attention}
TRAINABLES = {"flash2": backward.flash2_attention_trainable, "naive": naive_backward.naive_attention_trainable}


@FUZZ
@given(st.sampled_from(sorted(FORWARDS)), qkv())
def test_a_forward_reaches_its_launch_or_is_refused_in_one_line(algo, call):
    tensors, options = call
    reaches_launch(lambda: FORWARDS[algo](*tensors, **options), tensors[0])


@st.composite
def backward_call(draw, saved):
    """({q, k, v, *saved, do}, options): what a backward takes, valid or with one fault (saved "lse": fp32 rows;
    "o" or "p": like q or like the scores)."""
    shapes, dtypes, options, fault, name = draw(attention())
    (b, h, n, _), n_kv = shapes["q"], shapes["k"][2]
    own = dict(o=shapes["q"], p=(b, h, n, n_kv), lse=(b, h, n), do=shapes["q"])
    shapes |= {x: own[x] for x in (*saved, "do")}
    dtypes |= {x: torch.float32 if x == "lse" else dtypes["q"] for x in (*saved, "do")}
    if fault != "option" and draw(st.booleans()):  # the fault in a saved tensor or do
        name = draw(st.sampled_from([*saved, "do"]))
    return tensors(draw, shapes, dtypes, fault, name), options


@FUZZ
@given(backward_call(("o", "lse")))
def test_a_backward_reaches_its_launch_or_is_refused_in_one_line(call):
    tensors, options = call
    reaches_launch(lambda: backward.flash2_attention_backward(*tensors.values(), **options), tensors["q"])


@FUZZ
@given(backward_call(("p",)))
def test_naives_backward_reaches_its_launch_or_is_refused_in_one_line(call):
    tensors, options = call
    reaches_launch(lambda: naive_backward.naive_attention_backward(*tensors.values(), **options), tensors["q"])


@FUZZ
@given(st.sampled_from(sorted(TRAINABLES)), qkv(), st.booleans(),
       st.sampled_from([None, None, (64, 64), (16, 16), 64, "x", (64, 3), [32, 32]]))
def test_a_training_step_reaches_its_launch_or_is_refused_in_one_line(algo, call, grad, blocks):
    tensors, options = call
    if grad:
        tensors = [x.detach().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                   for x in tensors]
    if algo == "flash2" and blocks is not None:
        options = options | dict(backward_blocks=blocks)
    reaches_launch(lambda: TRAINABLES[algo](*tensors, **options), tensors[0])


HOPPER_OPTIONS = st.fixed_dictionaries({}, optional=dict(
    causal=st.booleans(), block_q=st.sampled_from([None, 64, 128]), num_warps=st.sampled_from([None, 4, 8]),
    num_stages=st.sampled_from([None, 2, 3]), warp_specialize=st.sampled_from([None, True, False]),
    mask=st.sampled_from([None, "every", "branch", "split"]), lpt_heads=st.sampled_from([None, 0, 2])))
HOPPER_BAD = dict(causal=st.just("x"), block_q=BAD_BLOCKS, num_warps=st.sampled_from([0, 3, "8"]),
                  num_stages=st.sampled_from([0, 9]), warp_specialize=st.just(1), mask=st.just("x"),
                  fp8_scale=st.sampled_from([(1.0, 1.0, 1.0), (1.0,), "a"]), lpt_heads=st.sampled_from([-1, 2.5]),
                  tiles=st.sampled_from([gpusim.Tiles(64, 64), 3]))


@FUZZ
@given(qkv(options=HOPPER_OPTIONS, bad_options=HOPPER_BAD, head_dims=(64, 128),
           dtypes=st.sampled_from([torch.float16, torch.bfloat16])))
def test_a_hopper_call_reaches_its_launch_or_is_refused_in_one_line(call):
    tensors, options = call
    reaches_launch(lambda: hopper.hopper_attention(*tensors, **options), tensors[0])


BAD_LENGTHS = st.one_of(st.lists(st.integers(-2, 3000), max_size=4), st.sampled_from([None, 5, "a", [1.5], [[1]]]))
BAD_TABLES = st.one_of(st.lists(st.lists(st.integers(-1, 70), max_size=5), max_size=3),
                       st.sampled_from([None, "t", [1, 2], 3.0]))
DECODE_OPTIONS = st.fixed_dictionaries({}, optional=dict(
    num_splits=st.sampled_from([None, 1, 4]), block_kv=st.sampled_from([None, 32, 64]),
    causal_align=st.sampled_from(["bottom_right", "top_left"]), grouped=st.booleans(),
    gpu=st.sampled_from([None, "H200"])))
DECODE_BAD = dict(page_size=st.sampled_from([0, 17, -1, "16", 2.0]), num_splits=st.sampled_from([0, -2, 2.5, 10**6]),
                  block_kv=BAD_BLOCKS, causal_align=st.sampled_from(["x", None]), grouped=st.sampled_from([None, "y"]),
                  gpu=st.sampled_from(["bogus", 1]))
PAGE, PAGES, CONTIGUOUS = 16, 64, 1024  # tokens a page, pages in a paged cache, positions in a contiguous one


def as_given(draw, values, dtypes=(torch.int32, torch.int64)):
    """values as Python lists or a CPU tensor of a drawn integer dtype."""
    return torch.tensor(values, dtype=draw(st.sampled_from(dtypes))) if draw(st.booleans()) else values


@st.composite
def decoding(draw):
    """([q, k_cache, v_cache], the lengths, the block table (None: a contiguous cache), decode_attention's options,
    the fault): a paged or contiguous cache, valid or with one fault (a tensor's shape or dtype, a tensor that is
    not one, bad lengths or a bad block table, an option)."""
    b, (h, h_kv), d, seq = (draw(st.sampled_from(v)) for v in ([1, 2, 3], [(8, 1), (4, 4), (8, 2), (1, 1)],
                                                               [64, 128], [1, 2, 4]))
    paged, dtype = draw(st.booleans()), draw(FLOATS)
    lengths = draw(st.lists(st.integers(seq, 500 if paged else CONTIGUOUS), min_size=b, max_size=b))
    cache = (PAGES, PAGE, h_kv, d) if paged else (b, h_kv, CONTIGUOUS, d)
    shapes, dtypes = dict(q=(b, h, seq, d), k_cache=cache, v_cache=cache), dict.fromkeys(("q", "k_cache", "v_cache"),
                                                                                          dtype)
    fault, name = draw(st.sampled_from([None, None, None, "shape", "dtype", "not a tensor", "lengths", "table",
                                        "option"])), draw(st.sampled_from(sorted(shapes)))
    width = -(-max(lengths) // PAGE) + draw(st.integers(0, 2))
    table = as_given(draw, draw(st.lists(st.lists(st.integers(0, PAGES - 1), min_size=width, max_size=width),
                                         min_size=b, max_size=b))) if paged else None
    if fault == "table":
        table = draw(BAD_TABLES)
    lengths = draw(BAD_LENGTHS) if fault == "lengths" else as_given(draw, lengths)
    options = draw(DECODE_OPTIONS) | (dict(page_size=PAGE) if paged and draw(st.booleans()) else {})
    if fault == "option":
        bad = draw(st.sampled_from(sorted(DECODE_BAD)))
        options[bad] = draw(DECODE_BAD[bad])
    return list(tensors(draw, shapes, dtypes, fault, name).values()), lengths, table, options, fault


@FUZZ
@given(decoding(), st.booleans())
def test_a_decode_call_reaches_its_launch_or_is_refused_in_one_line(case, on_device):
    """decode_attention: the lengths on the host (a plan for them), or on the tensors' device (a kept plan)."""
    tensors, lengths, table, options, _ = case
    if on_device and isinstance(lengths, torch.Tensor):
        lengths = lengths.to(DEVICE)
    reaches_launch(lambda: decode.decode_attention(*tensors, cache_seqlens=lengths, block_table=table, **options),
                   tensors[0])


@FUZZ
@given(decoding(), st.one_of(st.none(), st.none(), st.none(), st.sampled_from([0, -1, 2.5, 100, 2**31, 10**12])))
def test_a_decode_plan_runs_or_is_refused_in_one_line(case, bad_capacity):
    """A DecodePlan made for the drawn shapes (where the fault left them tensors), its capacity the cache's (the
    block table's width in pages, or the contiguous cache's positions) or a bad one, then run on the tensors
    (contiguous, as run takes them, unless the fault is there)."""
    tensors, lengths, table, options, fault = case
    (q, k_cache, _), paged = tensors, table is not None
    shape = dict(heads=8, kv_heads=2, head_dim=64, dtype=torch.float16)  # a plan the tensors may not match
    if fault not in ("shape", "not a tensor"):
        shape = dict(heads=q.shape[1], kv_heads=k_cache.shape[2 if paged else 1], head_dim=q.shape[3], seq=q.shape[2],
                     dtype=q.dtype)
        tensors = [x.contiguous() for x in tensors]
    capacity = PAGE * len(table[0]) if paged and fault != "table" else CONTIGUOUS
    cache = dict(page_size=PAGE, num_pages=PAGES, block_table=table) if paged else {}
    capacity = capacity if bad_capacity is None else bad_capacity
    reaches_launch(lambda: decode.DecodePlan(lengths, device=DEVICE, max_cache_len=capacity,
                                             **shape | cache | options).run(*tensors), tensors[0])


@pytest.mark.parametrize("algo", ["naive", "flash1", "flash2", "flash2_trainable", "naive_trainable", "hopper"])
@pytest.mark.parametrize("heads, seq, seq_kv, head_dim, dtype", [
    ((1, 1), 1, 1, 16, torch.float16), ((4, 2), 257, 100, 100, torch.bfloat16), ((8, 1), 16, 257, 256, torch.float32),
    ((4, 4), 100, 1, 64, torch.float16)])
def test_valid_calls_reach_their_launch(algo, heads, seq, seq_kv, head_dim, dtype):
    """The fuzz passes a check that refuses too much (a one-line ValueError is an allowed outcome): these valid
    corners of its draws must reach the launch (the Hopper kernel runs d 64 and 128 in fp16 or bf16 only)."""
    q = tensor((2, heads[0], seq, head_dim), dtype, contiguous=False)
    k = tensor((2, heads[1], seq_kv, head_dim), dtype)
    calls = dict(FORWARDS, hopper=hopper.hopper_attention, flash2_trainable=TRAINABLES["flash2"],
                 naive_trainable=TRAINABLES["naive"])
    hopper_runs = head_dim in (64, 128) and dtype != torch.float32
    assert reaches_launch(lambda: calls[algo](q, k, k, causal=True), q) or (algo == "hopper" and not hopper_runs)


def _found():
    """The calls this fuzz found raising something other than one line of ValueError, and what the line now says."""
    q, k = tensor((1, 4, 1, 64), torch.float16), tensor((1, 2, 16, 64), torch.float16)
    cache, lse = tensor((8, 16, 2, 64), torch.float16), tensor((1, 4, 1), torch.float32)
    plan = dict(heads=4, kv_heads=2, head_dim=64, dtype=torch.float16, device=DEVICE, page_size=16, num_pages=8)
    lengths = torch.tensor([16], device=DEVICE)
    return [
        (lambda: flash2.flash2_attention(q, k, k, block_q=[64]), "block_q=[64] must be an integer, a power of two"),
        (lambda: backward.flash2_attention_backward(q, k, k, q, lse, q, block_kv=[64]), "block_kv=[64] must be"),
        (lambda: hopper.hopper_attention(q, k, k, num_warps=[8]), "num_warps=[8]"),
        (lambda: naive_backward.naive_attention_backward(q, k, k, None, q), "p is NoneType: expected the forward's P"),
        (lambda: decode.decode_attention(q, cache, cache, cache_seqlens=None, block_table=[[0]]),
         "cache_seqlens is NoneType: expected 1-d integers"),
        (lambda: decode.decode_attention(q, cache, cache, cache_seqlens=[16], block_table=[[0], [1, 2]]),
         "block_table is list: expected 2-d integers"),
        (lambda: decode.decode_attention(q[0], cache, cache, cache_seqlens=lengths, block_table=[[0]]),
         "q is (4, 1, 64): expected a 4-d tensor"),
        (lambda: decode.DecodePlan([16], max_cache_len=16, block_table="t", **plan), "block_table is str"),
        (lambda: decode.DecodePlan([16], max_cache_len=16, block_kv=[64], **plan), "block_kv=[64]"),
        (lambda: decode.DecodePlan([16], max_cache_len=2**31, **plan), "max_cache_len=2,147,483,648 is more than"),
        (lambda: decode.decode_attention(q[:0], cache, cache, cache_seqlens=[], block_table=[]),
         "batch=0 must be a positive integer"),  # was NumPy's "zero-size array to reduction operation maximum"
    ]


@pytest.mark.parametrize("case", range(len(_found())))
def test_what_the_fuzz_found_is_one_line(case):
    call, message = _found()[case]
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        call()

"""The model's public functions under drawn arguments: each call returns a result whose bytes are non-negative
integers and whose time is finite and positive, or raises one ValueError of one line; never another exception
(a TypeError, ZeroDivisionError, OverflowError or MemoryError deep inside: a fuzz like this one found
thirteen).
The draws are mostly valid shapes near the limits (N up to gpusim's MAX_SEQ, batch x heads past a grid's
65,535, GQA, ragged decode batches, several GPUs) with at times one field made bad; derandomized, so CI draws the
same cases every run."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusim
from gpusim import context_scaling, kvcache, theorems
from gpusim.shape import MAX_SEQ

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
BAD = st.sampled_from([0, -1, 2.5, "8", None, True, [1, 2], float("nan"), 10**13])
SEQS = st.sampled_from([1, 3, 100, 1000, 4096, 65536, 2**20, MAX_SEQ])
HEADS = st.sampled_from([(1, 1), (8, 8), (8, 2), (32, 8), (64, 1), (65536, 1)])
GPUS = st.sampled_from(["A100-40GB", "a100-80gb", "H200", "H200", "H200-measured", "H100-SXM", "T4", "RTX-4090"])
COMMON = dict(head_dim=st.sampled_from([16, 64, 96, 128, 256]), batch=st.sampled_from([1, 2, 3, 2048]),
              dtype=st.sampled_from(["fp16", "BF16", "fp32", "fp8"]), gpu=GPUS)
BLOCKS = st.sampled_from([None, 16, 32, 64, 128, 256])


def mode(algos, required, **optional):
    """(algo, keyword arguments) of one mode of simulate, with at times (one draw in four) one field replaced by a
    bad value."""
    others = {name: values for name, values in (COMMON | optional).items() if name not in required}
    shape = st.fixed_dictionaries(required, optional=others)
    fields = sorted(COMMON | optional | required)
    return st.tuples(st.sampled_from(algos), shape, HEADS, st.one_of(st.none(), st.none(), st.none(), st.tuples(
        st.sampled_from(fields), BAD)))


FORWARD = mode(["naive", "flash1", "flash2", "hopper"], dict(seq=SEQS, head_dim=COMMON["head_dim"]), seq_kv=SEQS,
               block_q=BLOCKS, block_kv=BLOCKS, causal=st.booleans(),
               causal_align=st.sampled_from(["top_left", "bottom_right"]))
TRAIN = mode(["naive", "flash1", "flash2"], dict(seq=SEQS, head_dim=COMMON["head_dim"]), block_q=BLOCKS,
             block_kv=BLOCKS, causal=st.booleans(), backward_blocks=st.sampled_from([None, (16, 16), (64, 64),
                                                                                      (128, 32)]))
DECODE = mode(["split_kv"], dict(seq_kv=st.one_of(SEQS, st.lists(st.integers(1, 200_000), min_size=1, max_size=4)),
                                 head_dim=COMMON["head_dim"]),
              num_splits=st.sampled_from([None, 1, 2, 7, 64]), page_size=st.sampled_from([None, 1, 16, 256]),
              grouped=st.booleans(), block_kv=BLOCKS)
CONTEXT = mode(["flash2", "hopper"], dict(seq=SEQS, head_dim=COMMON["head_dim"], gpus=st.sampled_from([2, 4, 8, 3])),
               causal=st.booleans(), strategy=st.sampled_from(["ring", "zigzag", "ulysses", "allgather"]))


def outcome(call):
    """call()'s result, or None where it raised one line of ValueError, raised by gpusim's own checks (not inside
    NumPy, whose words name neither the argument nor its limit)."""
    try:
        return call()
    except ValueError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
        tb = err.__traceback__
        while tb.tb_next:
            tb = tb.tb_next
        assert "site-packages" not in tb.tb_frame.f_code.co_filename, f"raised inside a library: {err}"
        return None


def priced(algo, shape, heads, bad, **extra):
    shape = shape | dict(zip(("heads", "kv_heads"), heads)) | extra
    if bad:
        shape[bad[0]] = bad[1]
    r = outcome(lambda: gpusim.simulate(algo, **shape))
    if r is not None:
        assert 0 < r.predicted_time_s < math.inf, (algo, shape)
        assert all(type(b) is int and b >= 0 for b in (r.hbm_read_bytes, r.hbm_write_bytes, r.dram_read_bytes,
                                                         r.dram_write_bytes, r.hbm_peak_bytes)), (algo, shape)


@FUZZ
@given(FORWARD)
def test_a_forward_is_priced_or_refused_in_one_line(case):
    priced(*case)


@FUZZ
@given(TRAIN)
def test_a_training_step_is_priced_or_refused_in_one_line(case):
    priced(*case, backward=True)


@FUZZ
@given(DECODE)
def test_a_decoding_step_is_priced_or_refused_in_one_line(case):
    algo, shape, heads, bad = case
    if isinstance(shape.get("seq_kv"), list) and not bad:
        shape = shape | dict(batch=len(shape["seq_kv"]))
    priced(algo, shape, heads, bad, seq=1)


@FUZZ
@given(CONTEXT)
def test_several_gpus_are_priced_or_refused_in_one_line(case):
    priced(*case)


ANY = st.one_of(st.sampled_from([1, 2, 16, 64, 4096, 2**20, 2**40]), BAD)


@FUZZ
@given(st.sampled_from(["best_blocks", "theorem2", "minimal_shard_tokens", "max_batch", "arrivals", "max_context",
                        "fa2_shape", "sweep"]), st.lists(ANY, min_size=4, max_size=4))
def test_the_models_other_functions_return_or_refuse_in_one_line(name, v):
    calls = {
        "best_blocks": lambda: gpusim.best_blocks("flash2", seq=v[0], head_dim=v[1], heads=v[2], block_q=v[3]),
        "theorem2": lambda: theorems.theorem2(*v[:3]),
        "minimal_shard_tokens": lambda: context_scaling.minimal_shard_tokens(*v),
        "max_batch": lambda: kvcache.max_batch("llama-3-8b", "H200", v[0]),
        "arrivals": lambda: kvcache.arrivals(v[0], v[1], v[2], seed=0),
        "max_context": lambda: context_scaling.max_context("ring", v[0], heads=32, kv_heads=8, head_dim=128),
        "fa2_shape": lambda: gpusim.fa2_shape(v[0], v[1]),
        "sweep": lambda: gpusim.sweep(["flash2"], seqs=[v[0]], head_dim=v[1]),
    }
    if name == "arrivals" and all(isinstance(x, int) and x > 0 for x in v[:2]) and v[0] * v[1] > 10**6:
        return  # valid, and as slow as the draws it asks for
    outcome(calls[name])


@pytest.mark.parametrize("algo, shape", [
    ("flash2", dict(seq=MAX_SEQ, head_dim=256, heads=65536, kv_heads=1, batch=2048, gpu="H200", causal=True)),
    ("naive", dict(seq=3, seq_kv=MAX_SEQ, head_dim=16, dtype="fp32", gpu="T4", causal_align="bottom_right",
                   causal=True)),
    ("hopper", dict(seq=100, head_dim=128, heads=32, kv_heads=8, dtype="fp8", gpu="h100-sxm")),
    ("flash1", dict(seq=2**20, head_dim=96, batch=3, backward=True, backward_blocks=(16, 16), gpu="a100-80gb")),
    ("split_kv", dict(seq=1, seq_kv=[1, 200_000, 77], batch=3, head_dim=128, heads=64, kv_heads=8, page_size=1,
                      num_splits=64, gpu="H200-measured")),
    ("flash2", dict(seq=65536 * 3, head_dim=64, heads=24, kv_heads=24, gpus=3, strategy="ulysses", gpu="H200")),
])
def test_valid_draws_at_the_limits_are_priced_not_refused(algo, shape):
    """The fuzz above passes a check that refuses too much (a one-line ValueError is an allowed outcome): these
    valid corners of its draws must be priced."""
    r = gpusim.simulate(algo, **shape)
    assert 0 < r.predicted_time_s < math.inf


def test_the_fuzz_reaches_the_limits_it_is_for():
    """The draws above include what found the bugs: N = MAX_SEQ at 16-row tiles, 65,536 heads, a list of lengths."""
    r = gpusim.simulate("naive", seq=MAX_SEQ, head_dim=64, block_q=16, block_kv=16, backward=True,
                        backward_blocks=(16, 16))
    assert r.predicted_time_s > 0 and np.isfinite(r.predicted_time_s)

"""Milakov & Gimelshein's three softmax algorithms, with memory accesses counted, not asserted."""
import numpy as np
import pytest

import gpusim


@pytest.mark.parametrize("variant, accesses", [("naive", 3), ("safe", 4), ("online", 3)])
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_accesses_per_element_and_result(variant, accesses, chunk):
    x = np.random.default_rng(0).standard_normal(300)
    r = gpusim.softmax(x, variant, chunk=chunk)
    assert r.accesses_per_element == accesses
    assert (r.loads, r.stores) == ((accesses - 1) * 300, 300)
    np.testing.assert_allclose(r.y, np.exp(x - x.max()) / np.exp(x - x.max()).sum(), rtol=1e-13)


def test_naive_overflows_where_safe_and_online_do_not():
    x = np.array([1000.0, 999.0, 0.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = gpusim.softmax(x, "naive")
    assert np.isnan(naive.y).any() and naive.out_of_range
    for variant in ("safe", "online"):
        r = gpusim.softmax(x, variant)
        assert np.isfinite(r.y).all() and not r.out_of_range


@pytest.mark.parametrize("x", [np.array([88.5, 88.5], np.float32),  # each exp finite, their sum not: y = 0, 0
                               np.array([10.5] * 4, np.float16),
                               np.array([-1000.0, -1000.0])])  # every exp 0: 0 / 0
def test_naive_out_of_range_is_said_where_y_is_no_distribution(x):
    with np.errstate(over="ignore", invalid="ignore"):
        assert gpusim.softmax(x, "naive").out_of_range
    assert not gpusim.softmax(x, "online").out_of_range


def test_online_steps_track_max_and_rescale():
    x = np.array([0.0, 2.0, 1.0, 5.0])
    steps = gpusim.softmax(x, "online", chunk=1).steps
    assert [s[1] for s in steps] == [0.0, 2.0, 2.0, 5.0]
    assert steps[1][3] == pytest.approx(np.exp(-2.0)) and steps[2][3] == 1.0
    assert steps[-1][2] == pytest.approx(np.exp(x - 5).sum())


def test_runs_in_the_precision_given():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float16)
    assert gpusim.softmax(x, "online").y.dtype == np.float16


@pytest.mark.parametrize("x, kwargs, message", [
    (np.zeros((2, 2)), {}, "x must be a non-empty 1-D floating-point array"),
    (np.arange(4), {}, "x must be a non-empty 1-D floating-point array"),
    (np.zeros(4), {"variant": "fast"}, "variant='fast' is not one of naive, safe, online"),
    (np.zeros(4), {"chunk": 0}, "chunk=0 must be a positive integer"),
    (np.array([np.nan, 1.0]), {}, "x[0]=nan: a softmax takes finite scores"),  # was [nan, nan] and a warning
    (np.array([1.0, np.inf]), {"variant": "safe"}, "x[1]=inf: a softmax takes finite scores"),
    (np.full(3, -np.inf), {}, "every element of x is -inf"),
])
def test_bad_input(x, kwargs, message):
    with pytest.raises(ValueError) as err:
        gpusim.softmax(x, **kwargs)
    assert message in str(err.value)


@pytest.mark.parametrize("variant", ["naive", "safe", "online"])
@pytest.mark.parametrize("chunk", [1, 2])
def test_masked_scores_weigh_nothing(variant, chunk):
    """-inf is a masked score (a causal mask's): weight 0, in every variant, even in a chunk of masked scores alone,
    whose online rescale exp(-inf - (-inf)) was NaN."""
    x = np.array([-np.inf, -np.inf, 2.0, 1.0])
    with np.errstate(all="raise"):
        y = gpusim.softmax(x, variant, chunk=chunk).y
    np.testing.assert_allclose(y, [0, 0, np.e / (np.e + 1), 1 / (np.e + 1)], rtol=1e-15)

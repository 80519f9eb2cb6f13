"""gpusim_course.softmax.bits: ULP distances and the bit-for-bit comparisons of notebook 3."""
import numpy as np
import pytest

import gpusim
from gpusim_course.softmax import bits


def test_ulp_distance_counts_representable_floats_between():
    x = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    up = np.nextafter(x, np.float32(np.inf))
    assert list(bits.ulp_distance(x, x)) == [0, 0, 0]
    assert list(bits.ulp_distance(x, up)) == [1, 1, 1]
    assert bits.ulp_distance(np.float16([-0.0]), np.float16([0.0]))[0] == 0
    assert bits.ulp_distance(np.float32([1.0]), np.float32([2.0]))[0] == 2**23  # the mantissa's 23 bits
    assert bits.ulp_distance(np.float16([1.0]), np.float16([2.0]))[0] == 2**10
    tiny = np.float64(5e-324)  # the smallest subnormal: -tiny, -0 = +0, +tiny are adjacent
    assert bits.ulp_distance(np.array([-tiny]), np.array([tiny]))[0] == 2


def test_compare_summarises_the_distances():
    a = np.ones(4, np.float32)
    b = a.copy()
    b[2] = np.nextafter(b[2], np.float32(2))
    c = bits.compare("one element off", a, b)
    assert (c["label"], c["elements"], c["equal_fraction"], c["max_ulp"]) == ("one element off", 4, 0.75, 1)
    assert c["max_difference"] == 2.0**-23  # one ULP of 1.0 in float32, relative to max |a| = 1
    assert list(c["ulps"]) == [0, 0, 1, 0]


def test_bit_comparison_is_safe_against_online_softmax_from_gpusim():
    x = (np.random.default_rng(0).standard_normal((20, 256)) * 3).astype(np.float32)
    safe = np.stack([gpusim.softmax(row, "safe", 32).y for row in x])
    online = np.stack([gpusim.softmax(row, "online", 32).y for row in x])
    got = bits.bit_comparison(np.float32, rows=20, n=256, chunk=32)
    assert got["label"] == "softmax, float32" and got["elements"] == 20 * 256
    assert np.array_equal(got["ulps"], bits.ulp_distance(safe, online))
    assert got["equal_fraction"] == float((bits.ulp_distance(safe, online) == 0).mean())


def test_attention_bits_compare_naive_and_flash2_outputs():
    c = bits.attention_bits(seq=128, head_dim=32)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 128, 32)).astype(np.float32) for _ in range(3))
    naive = gpusim.simulate("naive", q=q, k=k, v=v).output
    flash = gpusim.simulate("flash2", q=q, k=k, v=v, block_q=64, block_kv=64).output
    assert np.array_equal(c["ulps"], bits.ulp_distance(naive, flash))
    # Same algebra, float32 arithmetic (unit roundoff 2^-24) in a different order over 128 keys: the outputs
    # differ by far less than 128 roundings.
    assert c["max_difference"] < 128 * 2.0**-24


def test_bits_rows_and_verdict_say_what_was_measured():
    same = bits.compare("same", np.ones(4, np.float32), np.ones(4, np.float32))
    off = bits.compare("off", np.ones(4, np.float32), np.float32([1, 1, 1, np.nextafter(np.float32(1), 2)]))
    assert bits.bits_rows([off]) == [{"comparison": "off", "elements": 4, "bit-identical": "75.00%",
                                      "max ULP distance": 1, "max |difference| / max |value|": "1.2e-07",
                                      "in u": "2.0"}]  # one float32 ULP at 1 is 2^-23, 2 u
    assert bits.bits_verdict([same]) == "Measured: bit-for-bit identical in every comparison (same)."
    assert bits.bits_verdict([same, off]).startswith(
        "Measured: not bit-for-bit identical. off: 25.0% of elements differ, by at most 1 ULP, 2.0 u of the largest "
        "value (u = 2^-24).")


def test_a_ulp_count_and_u_differ_near_zero():
    """Notebook 3 printed "at most 148,076 ULP" where the scorecard said "at most 12 u" of the same outputs: near
    zero a ULP is tiny. An element of 2^-20 off by 2^-40 against a largest value of 1 is 2^-40 / 2^-43 = 8 ULP
    (float32's gap at 2^-20 is 2^-43) but 2^-40 / 2^-24 = 2^-16 u."""
    a = np.float32([1, 2.0**-20])
    c = bits.compare("near zero", a, np.float32([1, 2.0**-20 + 2.0**-40]))
    assert (c["max_ulp"], c["u"], c["max_u"]) == (8, 2.0**-24, 2.0**-16)
    assert bits.compare("half", np.float16([1, 1]), np.float16([1, 1 + 2.0**-10]))["max_u"] == 2.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_online_softmax_rounds_differently_from_safe_softmax(dtype):
    """Notebook 3's claim, measured: the two orders of operations do not give the same bits everywhere."""
    c = bits.bit_comparison(dtype, rows=50, n=1024, chunk=128)
    assert c["equal_fraction"] < 1 and c["max_ulp"] >= 1

"""The decode and training notebooks' exercise checks: each accepts its reference solution, says "not yet" to
a stub, and rejects at least two distinct wrong answers, each with the hint aimed at that mistake."""
import math

import pytest

from gpusim_course.inference import exercises as decode_exercises
from gpusim_course.training import exercises as training_exercises

WRONG = {
    "kv_bytes_per_token": [
        (lambda layers, heads, kv_heads, d, e: layers * kv_heads * d * e, "key and its value"),
        (lambda layers, heads, kv_heads, d, e: 2 * layers * heads * d * e, "use kv_heads"),
        (lambda layers, heads, kv_heads, d, e: 2 * kv_heads * d * e, "multiply by layers"),
        (lambda layers, heads, kv_heads, d, e: 2 * layers * kv_heads * d, "multiply by itemsize"),
    ],
    "largest_batch": [
        (lambda hbm, weights, context, per_token: hbm // (context * per_token), "weights sit in HBM"),
        (lambda hbm, weights, context, per_token: math.ceil((hbm - weights) / (context * per_token)), "round down"),
        (lambda hbm, weights, context, per_token: max(0, (hbm - weights) / (context * per_token)), "round down"),
        (lambda hbm, weights, context, per_token: float("nan"), "largest batch = "),  # its hints raised on NaN
        (lambda hbm, weights, context, per_token: (hbm - weights) // (context * per_token), "not negative"),
        (lambda hbm, weights, context, per_token: int((hbm - weights) / (context * per_token)), "not negative"),
    ],
    "splits_to_fill": [
        (lambda batch, heads, kv_heads, sms: math.ceil(sms / (batch * heads)), "not batch x heads"),
        (lambda batch, heads, kv_heads, sms: sms // (batch * kv_heads), "Round up"),
        (lambda batch, heads, kv_heads, sms: math.ceil(sms / kv_heads), "divide by batch x kv_heads"),
        (lambda batch, heads, kv_heads, sms: sms // (batch * kv_heads) + 1, "divides sm_count evenly"),
    ],
    "kv_read_bytes": [
        (lambda b, h, kv, n, d, e, grouped: b * (kv if grouped else h) * n * d * e, "Count both tensors"),
        (lambda b, h, kv, n, d, e, grouped: 2 * b * kv * n * d * e, "reads its K/V head again"),
        (lambda b, h, kv, n, d, e, grouped: 2 * b * h * n * d * e, "read once for its whole group"),
        (lambda b, h, kv, n, d, e, grouped: 2 * (kv if grouped else h) * n * d * e, "multiply by batch"),
    ],
    "bytes_saved_per_layer": [
        (lambda b, h, n, d, e: b * h * n * n * e - b * h * n * d * e, "keeps the LSE as well as O"),
        (lambda b, h, n, d, e: b * h * n * n * e - b * h * n * (d + 1) * e, "stored in fp32"),
        (lambda b, h, n, d, e: b * h * n * n * e, "That is P alone"),
        (lambda b, h, n, d, e: n * n * e - n * (d * e + 4), "multiply by batch x heads"),
    ],
    "backward_flops": [
        (lambda b, h, n, d, causal: 4 * b * h * n * n * d / (2 if causal else 1), "forward's two matmuls"),
        (lambda b, h, n, d, causal: 8 * b * h * n * n * d / (2 if causal else 1), "forget S"),
        (lambda b, h, n, d, causal: 14 * b * h * n * n * d / (2 if causal else 1), "3.5x is what gpusim's flash2"),
        (lambda b, h, n, d, causal: 10 * b * h * n * n * d, "halve it"),
    ],
}
MODULES = {name: module for module in (decode_exercises, training_exercises) for name in module.EXERCISES}


@pytest.mark.parametrize("name", list(MODULES))
def test_reference_is_right_and_a_stub_is_not_yet(name):
    ex = MODULES[name]
    assert ex.check(name, ex.EXERCISES[name][1]).status == "right"
    assert ex.check(name, lambda *args: None).status == "not yet"

    def unfinished(*args):
        raise NotImplementedError

    assert ex.check(name, unfinished).status == "not yet"


@pytest.mark.parametrize("name", list(MODULES))
def test_distinct_wrong_answers_are_rejected_with_their_hint(name):
    assert len(WRONG[name]) >= 2
    for fn, hint in WRONG[name]:
        verdict = MODULES[name].check(name, fn)
        assert verdict.status == "wrong" and hint in verdict.message, verdict.message


def test_a_crash_or_a_string_is_wrong_and_the_solution_prints(capsys):
    ex = decode_exercises
    assert ex.check("kv_bytes_per_token", lambda *a: 1 / 0).status == "wrong"
    assert ex.check("kv_bytes_per_token", lambda *a: "131072").status == "wrong"
    verdict = training_exercises.check("backward_flops", lambda *a: 0)
    assert not verdict and "wrong" in verdict._repr_html_()
    ex.solution("splits_to_fill")
    training_exercises.solution("bytes_saved_per_layer")
    printed = capsys.readouterr().out
    assert "def splits_to_fill" in printed and "def bytes_saved_per_layer" in printed
    with pytest.raises(ValueError, match="no exercise 'nope'"):
        ex.check("nope", print)


def test_an_array_answer_is_wrong_with_a_hint_not_a_crash():
    """A one-element array (a common NumPy slip) raised TypeError out of math.isclose, though checks promises never
    to raise for the learner's code; a 0-d array or NumPy scalar is a number and is compared."""
    import numpy as np
    ex = decode_exercises
    right = ex.EXERCISES["kv_bytes_per_token"][1]
    verdict = ex.check("kv_bytes_per_token", lambda *a: np.array([right(*a)]))
    assert verdict.status == "wrong" and "not a number" in verdict.message and ".item()" in verdict.message
    assert ex.check("kv_bytes_per_token", lambda *a: np.array(right(*a))).status == "right"
    assert ex.check("kv_bytes_per_token", lambda *a: np.int64(right(*a))).status == "right"
    assert ex.check("kv_bytes_per_token", lambda *a: [right(*a)]).status == "wrong"
    assert ex.check("kv_bytes_per_token", lambda *a: [[1], [1, 2]]).status == "wrong"  # np.ndim raised on it
    assert ex.check("kv_bytes_per_token", lambda *a: 10**400).status == "wrong"  # math.isclose raised OverflowError

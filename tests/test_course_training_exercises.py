"""The training notebook's exercise checks: each accepts its reference solution, says "not yet" to a stub,
and rejects at least two distinct wrong answers, each with the hint aimed at that mistake."""
import pytest

from gpusim_course import training_exercises as ex

WRONG = {
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


@pytest.mark.parametrize("name", list(ex.EXERCISES))
def test_reference_is_right_and_a_stub_is_not_yet(name):
    assert ex.check(name, ex.EXERCISES[name][1]).status == "right"
    assert ex.check(name, lambda *args: None).status == "not yet"


@pytest.mark.parametrize("name", list(ex.EXERCISES))
def test_distinct_wrong_answers_are_rejected_with_their_hint(name):
    assert len(WRONG[name]) >= 2
    for fn, hint in WRONG[name]:
        verdict = ex.check(name, fn)
        assert verdict.status == "wrong" and hint in verdict.message, verdict.message


def test_verdict_html_and_solution(capsys):
    verdict = ex.check("backward_flops", lambda *a: 0)
    assert not verdict and "wrong" in verdict._repr_html_()
    ex.solution("bytes_saved_per_layer")
    assert "def bytes_saved_per_layer" in capsys.readouterr().out

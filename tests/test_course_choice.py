"""The second kind of guess (gpusim_course.choice): a multiple choice whose answer is computed, revealed only
on request; each notebook's question answers from gpusim or the results file it names."""
from pathlib import Path

import pytest

from gpusim_course import choice
from gpusim_course.scorecard import claims
from gpusim_course.inference import measured as decode_measured
from gpusim_course.training import model as training, plots as training_plots
from gpusim_course.measurements import read_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "h200"


def test_reveal_judges_the_pick():
    c = choice.Choice("Which?", ("a", "b"), "b", "because")
    assert "Pick one" in c.feedback.value
    c.pick("a")
    assert c.reveal() is False and "not a" in c.feedback.value and "because" in c.feedback.value
    c.pick("b")
    assert "Pick one" in c.feedback.value  # a new pick hides the verdict again
    assert c.reveal() is True and "right" in c.feedback.value
    with pytest.raises(ValueError, match="not one of the options"):
        choice.Choice("?", ("a",), "z")


def test_bits_question_measures_in_the_unit_it_names(monkeypatch):
    """The options and the answer both measure against the output's largest magnitude, in u = 2^-24; the ULP count,
    which the old options named while the answer used the scale, is quoted beside as a separate number."""
    from gpusim_course.softmax import bits
    measured = {"label": "attention output, float32", "equal_fraction": 0.1, "max_ulp": 148076}
    for scale, option in ((12, 1), (65, 2)):
        monkeypatch.setattr(bits, "attention_bits", lambda: measured | {"max_difference": scale * 2.0**-24})
        c = choice.bits_question()
        assert c.answer == c.options.options[option] and "largest magnitude" in c.answer
        assert all("last place" not in o for o in c.options.options)
        assert f"{scale:.1f} u of the output's largest magnitude" in c.why and "148,076 ULPs" in c.why


def test_the_notebooks_questions_answer_from_their_sources(tmp_path):
    assert choice.bits_question().answer.startswith("no, but every difference is within")
    # notebook 10's launch: 3 Q blocks of 32 rows over 6 K/V blocks of 16; block i reads 2 (i + 1) of them
    assert sum(min(6, 2 * (i + 1)) for i in range(3)) / (3 * 6) == 2 / 3
    assert choice.causal_share_question().answer == "about two thirds"
    assert choice.sdpa_question(RESULTS).answer == "cudnn"
    assert choice.sdpa_question(tmp_path) is None  # not measured: the notebook says so
    helps = decode_measured.helps_most(read_results(RESULTS / "decode.json"), read_results(RESULTS / "bench.json"))
    decode = choice.decode_question(helps)
    assert decode.answer == "memory-bound" and "One decode step, 128K cache, batch 1:" in decode.prompt.value
    rows = training.model_memory_rows((1024, 4096, 16384), layers=2, heads=4, head_dim=64, batch=1, gpu="H200")
    assert choice.slope_question(training_plots.slopes(rows)).answer.startswith("2")
    scored = claims.rows(RESULTS)
    wrong = sum(r.judged.verdict == "wrong" for r in scored)
    assert str(wrong) in choice.wrong_question(scored).why
    ncu = read_results(RESULTS / "ncu.json")["rows"]
    below = sum(r["simulated"] < r["measured"] for r in ncu if r["quantity"] == "time_s")  # 31 of 80 launches
    assert 0.1 < below / sum(r["quantity"] == "time_s" for r in ncu) < 0.9
    assert choice.time_miss_question(ncu).answer == "below in some launches, above in others: an estimate"
    ones = [{"quantity": "time_s", "simulated": 1.0, "measured": m} for m in (2.0,) * 9 + (0.5,)]
    assert choice.time_miss_question(ones).answer.endswith("a floor")
    assert choice.time_miss_question(ones[:8] + ones[9:] * 2).answer.endswith("an estimate")
    assert choice.time_miss_question(ones[:1] + ones[9:] * 9).answer.endswith("a ceiling")

"""gpusim_course.guess and the guess box of the widgets: a guess is read in bytes or seconds, judged against
gpusim's answer, and the answer stays hidden until the learner has guessed (while "predict first" is on)."""
import pytest

import gpusim
from gpusim_course import guess
from gpusim_course.hierarchy import widgets as hierarchy_widgets
from gpusim_course.practice import widgets as practice_widgets
from gpusim_course.standard import widgets as standard_widgets
from gpusim_course.tiling import widgets as tiling_widgets


@pytest.mark.parametrize("text, kind, value", [("64 MiB", "bytes", 64 * 2**20), ("2.1 GB", "bytes", 2.1e9),
                                               ("1.5e9", "bytes", 1.5e9), ("1,024 B", "bytes", 1024),
                                               ("12 ms", "time", 0.012), ("80us", "time", 80e-6),
                                               ("80 µs", "time", 80e-6), ("0.003", "time", 0.003),
                                               ("80 \u03bcs", "time", 80e-6),  # Greek mu, beside the micro sign
                                               ("1,000.5 ms", "time", 1.0005), ("12,345,678 B", "bytes", 12345678)])
def test_parse_reads_numbers_with_units(text, kind, value):
    assert guess.parse(text, kind) == pytest.approx(value)


@pytest.mark.parametrize("text, kind, message", [("lots", "bytes", "cannot read 'lots' as bytes"),
                                                 ("12 ms", "bytes", "cannot read '12 ms' as bytes"),
                                                 ("-3 GB", "bytes", "must be a positive number"),
                                                 ("", "time", "cannot read '' as time"),
                                                 ("1,5 ms", "time", "a decimal takes a point, as in 1.5"),
                                                 ("1,0000 B", "bytes", "a comma separates thousands")])
def test_parse_refuses_in_one_line(text, kind, message):
    with pytest.raises(ValueError, match=message) as err:
        guess.parse(text, kind)
    assert "\n" not in str(err.value)


def test_judge_says_how_far_off():
    assert guess.judge(105, 100)["verdict"] == "spot on"
    assert guess.judge(50, 100) == {"factor": 2.0, "high": False, "verdict": "close"}
    assert guess.judge(1000, 100)["verdict"] == "off"
    assert guess.sentence(" 1 KiB ", 1024, 4096, "4.00 KiB") == ("Your guess 1 KiB against gpusim's 4.00 KiB: off "
                                                                 "(4.0x too low).")


def test_the_answer_waits_for_a_guess_and_hides_again_when_the_question_changes():
    ex = tiling_widgets.TilingExplorer(seq=1024, heads=4)
    assert ex.prediction.hiding and ex.readout.layout.display == ex.image.layout.display == "none"
    assert str(ex.config["block_q"]) in ex.prediction.prompt.value
    ex.prediction.submit("not a number")
    assert ex.prediction.hiding and "cannot read" in ex.prediction.feedback.value
    ex.prediction.text.value = f"{ex.hbm_bytes / 2**20:.3f} MiB"  # typing and pressing Enter submits
    assert not ex.prediction.hiding and ex.readout.layout.display is None and "spot on" in ex.prediction.feedback.value
    ex.block_kv.value = 32 if ex.block_kv.value != 32 else 64  # a new question
    assert ex.prediction.hiding and ex.prediction.feedback.value == "" and ex.prediction.text.value == ""
    ex.prediction.predict.value = False  # explore freely
    assert ex.readout.layout.display is None and ex.image.layout.display is None


def test_each_main_widget_asks_for_the_number_it_shows():
    roofline = hierarchy_widgets.RooflineExplorer(gpu="A100-40GB")
    assert roofline.question().answer == roofline.results[0].predicted_time_s
    footprint = standard_widgets.FootprintExplorer(gpu="A100-40GB")
    assert footprint.question().kind == "bytes" and footprint.question().answer == footprint.at_128k.hbm_peak_bytes
    naive = standard_widgets.NaiveStepper(seq=1024, head_dim=64)
    r = gpusim.simulate("naive", seq=1024, head_dim=64)
    assert naive.question().answer == sum(sum(rw) for (k, _), rw in r.counts.items() if k == "qk")
    waves = tiling_widgets.WavesExplorer(gpu="A100-40GB", seq=8192)
    assert waves.question().answer == waves.now["flash1"].predicted_time_s
    overlap = practice_widgets.OverlapExplorer(gpu="H100-SXM", seq=4096)
    assert overlap.question().answer == overlap.results["hopper"].predicted_time_s

"""gpusim_course.guess and the guess box of the widgets: a guess is read in bytes, seconds, requests or percent,
judged against gpusim's answer, and the answer stays hidden until the learner has guessed (while "predict first"
is on)."""
from html import escape

import pytest

import gpusim
from gpusim import kvcache
from gpusim_course import guess
from gpusim_course.hierarchy import widgets as hierarchy_widgets
from gpusim_course.inference import model as inference, widgets as inference_widgets
from gpusim_course.practice import widgets as practice_widgets
from gpusim_course.standard import widgets as standard_widgets
from gpusim_course.tiling import widgets as tiling_widgets
from gpusim_course.training import model as training, widgets as training_widgets


@pytest.mark.parametrize("text, kind, value", [("64 MiB", "bytes", 64 * 2**20), ("2.1 GB", "bytes", 2.1e9),
                                               ("1.5e9", "bytes", 1.5e9), ("1,024 B", "bytes", 1024),
                                               ("12 ms", "time", 0.012), ("80us", "time", 80e-6),
                                               ("80 µs", "time", 80e-6), ("0.003", "time", 0.003),
                                               ("80 \u03bcs", "time", 80e-6),  # Greek mu, beside the micro sign
                                               ("1,000.5 ms", "time", 1.0005), ("12,345,678 B", "bytes", 12345678),
                                               ("24", "requests", 24), ("24 requests", "requests", 24),
                                               ("1 request", "requests", 1), ("0", "requests", 0),
                                               ("12.5", "percent", 12.5), ("12.5%", "percent", 12.5),
                                               ("90 %", "percent", 90)])
def test_parse_reads_numbers_with_units(text, kind, value):
    assert guess.parse(text, kind) == pytest.approx(value)


@pytest.mark.parametrize("text, kind, message", [("lots", "bytes", "cannot read 'lots' as bytes"),
                                                 ("12 ms", "bytes", "cannot read '12 ms' as bytes"),
                                                 ("-3 GB", "bytes", "must be a positive number"),
                                                 ("", "time", "cannot read '' as time"),
                                                 ("1,5 ms", "time", "a decimal takes a point, as in 1.5"),
                                                 ("1,0000 B", "bytes", "a comma separates thousands"),
                                                 ("abc", "percent", "cannot read 'abc' as percent: write a number, "
                                                                    "e.g. 12.5 or 12.5%"),
                                                 ("12 GB", "requests", "cannot read '12 GB' as requests"),
                                                 ("5%", "requests", "cannot read '5%' as requests"),
                                                 ("3 requests", "percent", "cannot read '3 requests' as percent"),
                                                 ("-1", "requests", "must be a number of requests, 0 or more"),
                                                 ("0%", "percent", "must be a positive number of percent")])
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


def test_a_count_of_none_is_judged_without_dividing_by_it():
    assert guess.judge(0, 0)["verdict"] == "spot on"
    assert guess.judge(3, 0) == {"factor": float("inf"), "high": True, "verdict": "off"}
    assert guess.sentence("3", 3, 0, "0 requests") == "Your guess 3 against gpusim's 0 requests: off (too high)."
    assert guess.sentence("0", 0, 7, "7 requests") == "Your guess 0 against gpusim's 7 requests: off (too low)."


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


def moved_bytes(steps):
    return sum(sum(s["loads"].values()) + sum(s["stores"].values()) for s in steps)


def backward_total():
    return moved_bytes(training.backward_steps("flash2", seq=64, head_dim=16, block_q=32, block_kv=16, causal=True))


def paged_share():
    runs = inference.allocation(steps=inference_widgets.PagedAllocation.STEPS, per_step=1.0, max_tokens=2048,
                                page_size=16, slots=8)
    return 100 * runs["contiguous"].wasted_fraction


def flip(control):
    """A new value for a slider or checkbox of the question's shape."""
    options = [o[1] if isinstance(o, tuple) else o for o in getattr(control, "options", ())]
    return (not control.value if isinstance(control.value, bool) else options[options.index(control.value) + 1]
            if options else control.value + control.step)


# widget, kind, gpusim's answer, a right guess of it, a guess of another kind, the control that changes the question
DECODE_AND_TRAINING = {
    "BackwardStepper": (training_widgets.BackwardStepper, "bytes", backward_total, lambda a: f"{a:,} B", "12 ms",
                        "causal"),
    "KVCalculator": (inference_widgets.KVCalculator, "requests", lambda: kvcache.max_batch("Llama-3-8B", "H200", 8192),
                     lambda a: f"{a} requests", "2 GB", "context"),
    "SplitKVStepper": (inference_widgets.SplitKVStepper, "bytes", lambda: moved_bytes(inference.split_kv_steps()),
                       lambda a: f"{a / 1024:.2f} KiB", "lots", "seq_kv"),
    "PagedAllocation": (inference_widgets.PagedAllocation, "percent", paged_share, lambda a: f"{a:.1f}%", "30 ms",
                        "slots"),
}


@pytest.mark.parametrize("name", sorted(DECODE_AND_TRAINING))
def test_decode_and_training_widgets_ask_judge_and_hide_again(name):
    """Notebooks 8 and 9's widgets ask through the same guess box: the question is the number they compute, a
    right guess reveals it, a guess of another unit is refused in one line, and a new shape asks again."""
    make, kind, answer, right, wrong, control = DECODE_AND_TRAINING[name]
    w = make()
    q = w.question()
    assert q.kind == kind and q.answer == answer() and w.prediction.question == q
    assert w.prediction.hiding and w.readout.layout.display == w.image.layout.display == "none"
    w.prediction.submit(wrong)
    feedback = w.prediction.feedback.value
    assert escape(f"cannot read {wrong!r} as {kind}: write a number, {guess.EXAMPLES[kind]}") in feedback
    assert "\n" not in feedback and "<br" not in feedback
    assert w.prediction.hiding
    w.prediction.text.value = right(q.answer)  # typed, then Enter
    assert "spot on" in w.prediction.feedback.value and not w.prediction.hiding
    assert w.readout.layout.display is None and w.image.layout.display is None
    getattr(w, control).value = flip(getattr(w, control))
    assert w.question() != q and w.prediction.hiding and w.prediction.feedback.value == ""
    assert w.readout.layout.display == w.image.layout.display == "none"


@pytest.mark.parametrize("make", [training_widgets.BackwardStepper, inference_widgets.SplitKVStepper,
                                  inference_widgets.PagedAllocation])
def test_stepping_keeps_the_revealed_answer(make):
    """The step slider moves through one schedule: the question stays and so does the answer."""
    w = make()
    w.prediction.submit(f"{w.question().answer}")
    w.step.value = w.step.max
    assert not w.prediction.hiding and w.readout.layout.display is None

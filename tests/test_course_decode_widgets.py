"""The decode notebook's widgets: controls change the numbers gpusim computes, the answer stays hidden until
guessed (their questions: tests/test_course_guess.py), and the image is rendered at twice the pixels it is shown
at."""
import io

import PIL.Image
import pytest

from gpusim import kvcache
from gpusim.units import fmt_bytes
from gpusim_course.inference import model as course, widgets as dw
from gpusim_course.widget import CSS_PX_PER_INCH, PIXEL_RATIO


def natural_width(widget):
    return PIL.Image.open(io.BytesIO(widget.image.value)).size[0]


@pytest.fixture(scope="module")
def calculator():
    return dw.KVCalculator(model="Llama-3-8B", context=8192, batch=16)


def test_calculator_hides_the_answer_until_guessed(calculator):
    c = calculator
    answer = kvcache.max_batch("Llama-3-8B", "H200", 8192)
    assert "131,072 B per token" in c.readout.value and "Predict" not in c.readout.value  # the guess box asks
    assert c.prediction.hiding and c.readout.layout.display == c.image.layout.display == "none"
    assert f"largest batch: {answer:,}" in c.axes[0].get_legend_handles_labels()[1]  # drawn, shown once guessed
    c.prediction.submit("-5")
    assert "must be a number of requests, 0 or more" in c.prediction.feedback.value and c.prediction.hiding
    c.prediction.submit("100")
    assert f"gpusim&#x27;s {answer:,} requests: close (1.2x too low)" in c.prediction.feedback.value
    assert c.readout.layout.display is None
    c.context.value = 16384  # a new question hides the answer again
    assert c.prediction.hiding and c.image.layout.display == "none"


def test_calculator_takes_a_guess_of_none_where_the_weights_fill_the_gpu():
    """Llama-3-70B's fp16 weights (140 GB) leave an H100 no room: no request fits, and a guess of 0 is right."""
    w = dw.KVCalculator(model="Llama-3-70B", gpu="H100-SXM")
    assert w.question().answer == 0
    w.prediction.submit("2 requests")
    assert "gpusim&#x27;s 0 requests: off (too high)" in w.prediction.feedback.value
    w.prediction.submit("0")
    assert "spot on (within 10%)" in w.prediction.feedback.value and not w.prediction.hiding


def test_calculator_follows_model_and_dtype(calculator):
    calculator.model.value, calculator.dtype.value = "Llama-3-70B", "fp8"
    per_token = kvcache.bytes_per_token("Llama-3-70B", "fp8")
    assert f"{per_token:,} B per token" in calculator.readout.value


def test_calculator_says_when_the_context_passes_the_models_longest():
    """Notebook 8 sends the calculator to 128K: Llama-3-8B (max_position_embeddings 8192) showed 7 requests of
    128K fitting on the H200 without a word; the readout names the presets that take that context."""
    w = dw.KVCalculator(model="Llama-3-8B", context=8192)
    assert "longest context" not in w.readout.value
    w.context.value = 131072
    assert "131,072 tokens pass Llama-3-8B's longest context, 8,192 tokens" in w.readout.value
    assert "Presets that do: Llama-3.1-8B, Llama-3.1-70B." in w.readout.value
    w.model.value = "Llama-3.1-8B"
    assert "longest context" not in w.readout.value


def test_notebook8_sends_the_context_to_128k_on_a_model_that_takes_it():
    import json
    from pathlib import Path
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "08_inference.ipynb").read_text())["cells"]
    text = next("".join(c["source"]) for c in cells if "move the context to 128K" in "".join(c["source"]))
    model = text.split("Switch to ", 1)[1].split(" ", 1)[0]
    assert kvcache.get_model(model).max_tokens >= max(dw.CONTEXTS) == 131072


def test_image_is_rendered_at_twice_its_displayed_size(calculator):
    shown = int(calculator.image.layout.width.removesuffix("px"))
    assert shown == round(9 * CSS_PX_PER_INCH)
    assert natural_width(calculator) == PIXEL_RATIO * shown


def test_stepper_walks_the_schedule():
    w = dw.SplitKVStepper(seq_kv=300, num_splits=3, block_kv=64, page_size=16)
    steps = course.split_kv_steps(300, 3, 64, 16)
    assert w.step.max == len(steps) and "split 0" in w.readout.value  # steps counted from 1
    w.step.value = len(steps)
    assert "reduce program" in w.readout.value and w.axes[1].get_ylabel() == "exp(LSE_s - max LSE)"
    w.num_splits.value = 8  # 5 chunks of 64 keys: gpusim refuses, in one line
    assert w.error and "num_splits=8" in w.error and "gpusim" in w.readout.value


def test_paged_allocation_maps_and_waste():
    w = dw.PagedAllocation(page_size=16, slots=4, max_tokens=1024)
    w.step.value = 101  # the 101st decode step, counted from 1
    runs = course.allocation(steps=w.STEPS, per_step=1.0, max_tokens=1024, page_size=16, slots=4)
    now = course.allocation(steps=w.STEPS, per_step=1.0, max_tokens=1024, page_size=16, slots=4, until=101)
    assert f"{now['paged'].snapshots[-1].running} running" in w.readout.value
    snap = now["contiguous"].snapshots[-1]
    assert f"{fmt_bytes(snap.wasted_bytes)} reserved but empty" in w.readout.value
    assert w.question().answer == 100 * runs["contiguous"].wasted_fraction
    assert [line.get_label() for line in w.axes[2].lines][:2] == ["contiguous", "paged"]  # and the step marker
    image = w.axes[1].images[0].get_array()
    assert image.shape[0] * image.shape[1] >= 4 * 1024 // 16  # one cell per page

"""gpusim_course.widget: the Live base class (recompute on every control change, gpusim's errors in one
line, redraw only the moving artists while the rest stays) and the shared controls."""
import io

import ipywidgets as W
import numpy as np
import PIL.Image
import gpusim
from gpusim_course import widget
from gpusim_course.block_sliders import BLOCKS


class Counter(widget.Live):
    """A Live whose update and drawing count their calls; `n` below 0 raises as gpusim does."""

    def __init__(self):
        self.n = W.IntSlider(value=1, min=-5, max=5)
        self.mode = W.Dropdown(options=["a", "b"], value="a")
        self.calls = {"update": 0, "draw": 0, "draw_dynamic": 0}
        super().__init__([[self.n, self.mode]], figsize=(2, 1))

    def update(self):
        self.calls["update"] += 1
        if self.n.value < 0:
            raise ValueError(f"n={self.n.value} must be >= 0")
        self.readout.value = f"<p>n = {self.n.value}</p>"

    def static_key(self):
        return self.mode.value

    def draw(self):
        self.calls["draw"] += 1
        self.axes[0].plot([0, 1], [0, 1])

    def draw_dynamic(self):
        self.calls["draw_dynamic"] += 1
        return self.axes[0].plot([self.n.value], [0.5], "o")


def test_live_recomputes_on_every_change_and_redraws_the_rest_only_when_its_key_changes():
    live = Counter()
    assert live.calls == {"update": 1, "draw": 1, "draw_dynamic": 1}
    live.n.value = 2
    live.n.value = 3
    assert live.calls == {"update": 3, "draw": 1, "draw_dynamic": 3} and live.readout.value == "<p>n = 3</p>"
    live.mode.value = "b"
    assert live.calls == {"update": 4, "draw": 2, "draw_dynamic": 4}
    assert PIL.Image.open(io.BytesIO(live.image.value)).size == (2 * widget.DPI, 1 * widget.DPI)


def test_the_image_holds_the_canvas_pixels_as_pil_reads_them():
    """widget.png, the Up-filtered PNG the image shows: PIL (and so a browser) decodes it to the canvas's own RGBA
    pixels, every byte, also where a row differs from the one above by a wrap past 255."""
    live = Counter()
    canvas = np.asarray(live.figure.canvas.buffer_rgba())
    assert np.array_equal(np.asarray(PIL.Image.open(io.BytesIO(live.image.value))), canvas)
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, (7, 5, 4), dtype=np.uint8)
    assert np.array_equal(np.asarray(PIL.Image.open(io.BytesIO(widget.png(noise)))), noise)


def test_live_shows_a_valueerror_in_one_line_and_keeps_the_last_figure():
    live = Counter()
    image = live.image.value
    live.n.value = -1
    assert live.error == "n=-1 must be >= 0"
    assert live.readout.value == "<p style='color:#b00'><b>gpusim:</b> n=-1 must be &gt;= 0</p>"
    assert live.image.value == image and live.calls["draw_dynamic"] == 1
    live.n.value = 1
    assert live.error is None and live.readout.value == "<p>n = 1</p>"


def test_live_shows_its_controls_readout_and_image():
    live = Counter()
    assert live.ui.children[-2:] == (live.readout, live.image)
    assert "application/vnd.jupyter.widget-view+json" in live._repr_mimebundle_()


def test_controls():
    gpu = widget.gpu_dropdown(gpusim.get_gpu("T4"))
    assert list(gpu.options) == list(gpusim.PRESETS) and gpu.value == "T4"
    seq = widget.seq_slider(1024)
    assert seq.options[0] == ("256", 256) and seq.label == "1,024" and not seq.continuous_update
    block = widget.block_slider("block_kv", 64, BLOCKS)
    assert (block.description, block.min, block.max, block.step, block.value) == ("block_kv (Bc)", 16, 512, 16, 64)
    choice = widget.block_dropdown("block_q", BLOCKS[:-1], 32)
    assert (choice.description, choice.value, choice.options) == ("block_q (Br)", 32, BLOCKS[:-1])
    assert widget.dropdown("d", (32, 64), 64).value == 64


def test_step_controls_run_over_the_range():
    step, play = widget.step_controls()
    assert (step.min, play.min, step.value) == (1, 1, 1)  # counted from 1, as "Step 1 of 9"
    widget.set_step_range(step, play, 9)
    step.value = 7
    widget.set_step_range(step, play, 4)
    assert (step.max, play.max, step.value) == (4, 4, 4)
    widget.set_step_range(step, play, 10)
    assert step.value == 4


def test_sync_dtypes_offers_what_the_gpu_supports():
    gpu, dtype = widget.gpu_dropdown("H100-SXM"), widget.dropdown("dtype", ["fp32", "fp16", "bf16", "fp8"], "fp8")
    gpu.value = "A100-40GB"
    widget.sync_dtypes(gpu, dtype)
    assert list(dtype.options) == ["fp32", "fp16", "bf16"] and dtype.value == "fp16"  # no fp8 on Ampere
    dtype.value = "bf16"
    gpu.value = "A100-80GB"
    widget.sync_dtypes(gpu, dtype)
    assert dtype.value == "bf16"
    gpu.value = "T4"
    widget.sync_dtypes(gpu, dtype)
    assert list(dtype.options) == ["fp32", "fp16"] and dtype.value == "fp16"



def test_the_image_is_rendered_at_its_css_width_times_the_pixel_ratio():
    live = Counter()
    width = PIL.Image.open(io.BytesIO(live.image.value)).size[0]
    shown = int(live.image.layout.width.removesuffix("px"))
    assert shown == 2 * widget.CSS_PX_PER_INCH and width == shown * widget.PIXEL_RATIO >= 2 * shown
    assert live.image.layout.max_width == "100%"  # never wider than the page, so never stretched up
    assert live.prediction is None  # no question(): no guess box

"""The base of the course's widgets and the controls they share.

Every widget is a `Live` subclass with its controls as attributes (ipywidgets sliders, dropdowns,
checkboxes), a `readout` (ipywidgets.HTML with the numbers) and a `figure` (a matplotlib Figure). Setting a
control's value, from the browser or from Python, runs `update()` synchronously: it recomputes with gpusim,
rewrites the readout, redraws the figure and swaps the PNG in an ipywidgets.Image. Swapping one image is
atomic, so the plot changes in place without flicker or stale copies, and it needs no front-end extension:
it works in JupyterLab and with no front end at all (nbclient, tests). Tests set values and read the
numbers and the figure's artists.

Crisp figures: the image is shown at a fixed CSS width (the figure's inches at CSS_PX_PER_INCH, never wider
than the page) and rendered at PIXEL_RATIO times that many pixels, so it stays sharp on screens of up to
that device pixel ratio. Fonts are 10 pt or more at that scale.

Predict, then reveal: a widget whose `question()` returns a `Question` gets a guess box (`Guess`, its
attribute `prediction`). While
"predict first" is ticked, every change of a control hides the readout and the figure until the learner
types a guess (bytes, time, a count of requests or a percentage: guess.EXAMPLES) and reveals gpusim's answer
beside it. A different Question (its text names what the answer depends on) hides the answer again.

Display a widget by ending a cell with it. Errors from gpusim (a block that overflows SRAM, a dtype the
GPU lacks) are shown in the readout in one line, never as a traceback.
"""
import struct
import zlib
from dataclasses import dataclass
from html import escape

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import gpusim

from . import guess
from .block_sliders import BLOCK_LABELS
from .tables import supported_dtypes

SEQS = tuple(2**p for p in range(8, 18))  # 256 .. 131,072
LONG_SEQS = tuple(2**p for p in range(9, 21))  # 512 .. 1,048,576
HEAD_DIMS = (32, 64, 128, 256)
CSS_PX_PER_INCH = 96  # how wide a figure inch is shown in the page
PIXEL_RATIO = 2  # rendered pixels per CSS pixel: sharp up to this device pixel ratio
DPI = CSS_PX_PER_INCH * PIXEL_RATIO


@dataclass(frozen=True)
class Question:
    """What the learner predicts before the answer shows: the question, its kind (a key of guess.UNITS: "bytes",
    "time", "requests" or "percent"), the answer in bytes, seconds, requests or percent, and the answer as the
    readout writes it."""
    text: str
    kind: str
    answer: float
    answer_text: str


class Guess:
    """The guess box: a question, a text field, a reveal button and the "predict first" checkbox. `ask` poses
    a new question (hiding the answer while predict first is on); `submit` (or Enter, or the button) reveals it."""

    def __init__(self, on_reveal):
        self.on_reveal = on_reveal
        self.question = None
        self.revealed = False
        self.prompt = W.HTML()
        self.text = W.Text(description="your guess", continuous_update=False, style={"description_width": "initial"})
        self.button = W.Button(description="reveal", button_style="info")
        self.predict = W.Checkbox(value=True, description="predict first")
        self.feedback = W.HTML()
        self.ui = W.VBox([self.prompt, W.HBox([self.text, self.button, self.predict]), self.feedback])
        self.text.observe(lambda change: change["new"].strip() and self.submit(change["new"]), "value")
        self.button.on_click(lambda _: self.submit(self.text.value))
        self.predict.observe(lambda _: self.on_reveal(), "value")

    @property
    def hiding(self):
        """True while the answer waits for a guess."""
        return self.predict.value and not self.revealed

    def ask(self, question):
        """Pose `question`; a different question than the last hides the answer again."""
        if question != self.question:
            self.question, self.revealed = question, False
            self.feedback.value = self.text.value = ""
        self.prompt.value = (f"<p><b>Predict:</b> {escape(question.text)} "
                             f"<small>({guess.EXAMPLES[question.kind]})</small></p>")

    def submit(self, text):
        """Reveal the answer beside the guess `text`; a guess that cannot be read says why and reveals nothing."""
        q = self.question
        try:
            value = guess.parse(text, q.kind)
        except ValueError as err:
            self.feedback.value = f"<p style='color:#b00'>{escape(str(err))}</p>"
            return
        self.feedback.value = f"<p><b>{escape(guess.sentence(text, value, q.answer, q.answer_text))}</b></p>"
        self.revealed = True
        self.on_reveal()


class Live:
    """Rows of controls, an HTML readout and a figure image; refresh() runs on every control change.

    Subclasses implement update() (compute with gpusim, set the readout) and draw() (the figure). Those
    whose figure mostly stays put while a slider moves also return a key from static_key(): while it is
    unchanged only draw_dynamic()'s artists are redrawn over the cached rest (Agg blitting), which keeps
    a step or block-size change at a few tens of milliseconds."""

    def __init__(self, rows, figsize, ncols=1, nrows=1):
        self.readout = W.HTML()
        self.image = W.Image(format="png", layout=W.Layout(width=f"{round(figsize[0] * CSS_PX_PER_INCH)}px",
                                                           max_width="100%", height="auto"))
        self.figure = Figure(figsize=figsize, dpi=DPI, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.subplots(nrows, ncols, squeeze=False).ravel()
        self.error = None
        self._busy = False
        self._static = self._background = None
        self._dynamic = []
        self.prediction = Guess(self._show) if type(self).question is not Live.question else None
        asks = [self.prediction.ui] if self.prediction else []
        self.ui = W.VBox([W.HBox(row) for row in rows] + asks + [self.readout, self.image])
        for row in rows:
            for control in row:
                if isinstance(control, W.ValueWidget) and not isinstance(control, W.Play):
                    control.observe(self._on_change, "value")
        self.refresh()

    def _on_change(self, change):
        if not self._busy:
            self.refresh()

    def refresh(self):
        """Recompute and redraw; a ValueError from gpusim goes to the readout and keeps the last figure."""
        self._busy = True
        try:
            self.update()
            self.error = None
        except ValueError as err:
            self.error = str(err)
            self.readout.value = f"<p style='color:#b00'><b>gpusim:</b> {escape(str(err))}</p>"
            self.readout.layout.display = None
            return
        finally:
            self._busy = False
        if self.prediction:
            self.prediction.ask(self.question())
        self._show()
        self._render()

    def _show(self):
        """Hide the readout and the figure while the guess box waits for a guess."""
        display = "none" if self.prediction and self.prediction.hiding else None
        self.readout.layout.display = self.image.layout.display = display

    def _render(self):
        canvas, key = self.figure.canvas, self.static_key()
        if key is None or key != self._static:
            self._dynamic = []
            for ax in [ax for ax in self.figure.axes if ax not in self.axes]:  # colorbars
                ax.remove()
            for ax in self.axes:
                ax.clear()
            self.draw()
            canvas.draw()
            self._background, self._static = canvas.copy_from_bbox(self.figure.bbox), key
        else:
            for artist in self._dynamic:
                artist.remove()
            canvas.restore_region(self._background)
        self._dynamic = self.draw_dynamic()
        for artist in self._dynamic:
            artist.set_animated(True)
            self.figure.draw_artist(artist)
        self.image.value = png(np.asarray(canvas.buffer_rgba()))

    def update(self):
        raise NotImplementedError

    def draw(self):
        raise NotImplementedError

    def static_key(self):
        """None: redraw everything on every change."""
        return None

    def question(self):
        """The Question the learner answers before the readout shows; widgets without one have no guess box."""
        raise NotImplementedError

    def draw_dynamic(self):
        """The artists that change while static_key() stays the same."""
        return []

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def png(rgba):
    """An (height, width, 4) uint8 RGBA image as PNG bytes: each row stored as its difference from the row above (PNG's
    "Up" filter), deflated at level 1. The same pixels as PIL's PNG at compress_level=1, about a third of its time
    (PIL tries every filter on every row) and no larger: figures are mostly rows that repeat the one above."""
    height, width, _ = rgba.shape
    rows = rgba.reshape(height, width * 4)
    data = np.empty((height, width * 4 + 1), np.uint8)
    data[:, 0] = 2  # the Up filter; the first row's "above" is zeros
    data[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=data[1:, 1:])  # modulo 256, as PNG's filters are

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits a channel, RGBA, not interlaced
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(data.tobytes(), 1))
            + chunk(b"IEND", b""))


def gpu_dropdown(value, options=None):
    """The GPU presets (or the preset names in `options`), starting at `value` (a preset name or a gpusim.GPU)."""
    return W.Dropdown(options=list(options or gpusim.PRESETS), value=gpusim.get_gpu(value).name, description="GPU")


def seq_slider(value, seqs=SEQS, description="seq (N)"):
    """A slider over the sequence lengths `seqs`, updated when released."""
    return W.SelectionSlider(options=[(f"{n:,}", n) for n in seqs], value=value, description=description,
                             continuous_update=False)


LABEL_CHARS = 8  # longer labels get the width they need: the default width cuts them ("block_kv (…")


def dropdown(description, options, value):
    """A labelled dropdown, its label never cut."""
    style = {"description_width": "initial"} if len(description) > LABEL_CHARS else {}
    return W.Dropdown(options=options, value=value, description=description, style=style)


def block_dropdown(name, options, value):
    """A dropdown for block_q or block_kv, labelled with both names (BLOCK_LABELS)."""
    return W.Dropdown(options=options, value=value, description=BLOCK_LABELS[name],
                      style={"description_width": "initial"})


def block_slider(name, value, blocks):
    """A slider for block_q or block_kv over blocks[0] .. blocks[-1], updated when released, labelled with both
    names (BLOCK_LABELS). Powers of two only: see gpusim_course.block_sliders.snap."""
    return W.IntSlider(value=value, min=blocks[0], max=blocks[-1], step=blocks[0],
                       description=BLOCK_LABELS[name], style={"description_width": "initial"},
                       continuous_update=False)


def step_controls():
    """An IntSlider for the step, counted from 1 as the readouts count, and a Play button that advances it in
    the browser. A widget's step index is step.value - 1."""
    step = W.IntSlider(value=1, min=1, max=1, description="step")
    play = W.Play(interval=500, min=1, max=1)
    W.jslink((play, "value"), (step, "value"))
    return step, play


def set_step_range(step, play, count):
    """Let the step controls run 1 .. count, keeping the step where it is when it is still in range."""
    play.max = step.max = count
    step.value = min(step.value, count)


def sync_dtypes(gpu_control, dtype_control, dtypes=supported_dtypes):
    """Offer only the dtypes the chosen GPU supports (dtypes(gpu): tables.supported_dtypes, or a kernel's own); keep
    the choice when it still exists."""
    sync_options(dtype_control, dtypes(gpu_control.value), "fp16")


def sync_options(control, options, fallback):
    """Offer only `options` in the dropdown; keep its choice when it is one of them, else take `fallback`."""
    if list(control.options) != options:
        keep = control.value if control.value in options else fallback
        control.options = options
        control.value = keep

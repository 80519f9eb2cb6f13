"""The base of the course's widgets and the controls they share.

Every widget is a `Live` subclass with its controls as attributes (ipywidgets sliders, dropdowns,
checkboxes), a `readout` (ipywidgets.HTML with the numbers) and a `figure` (a matplotlib Figure). Setting a
control's value, from the browser or from Python, runs `update()` synchronously: it recomputes with gpusim,
rewrites the readout, redraws the figure and swaps the PNG in an ipywidgets.Image. Swapping one image is
atomic, so the plot changes in place without flicker or stale copies, and it needs no front-end extension:
it works in JupyterLab and with no front end at all (nbclient, tests). Tests set values and read the
numbers and the figure's artists.

Display a widget by ending a cell with it. Errors from gpusim (a block that overflows SRAM, a dtype the
GPU lacks) are shown in the readout in one line, never as a traceback.
"""
import io
from html import escape

import ipywidgets as W
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import gpusim

from .block_sliders import BLOCK_LABELS
from .tables import supported_dtypes

SEQS = tuple(2**p for p in range(8, 18))  # 256 .. 131,072
LONG_SEQS = tuple(2**p for p in range(9, 21))  # 512 .. 1,048,576
HEAD_DIMS = (32, 64, 128, 256)
DPI = 72


class Live:
    """Rows of controls, an HTML readout and a figure image; refresh() runs on every control change.

    Subclasses implement update() (compute with gpusim, set the readout) and draw() (the figure). Those
    whose figure mostly stays put while a slider moves also return a key from static_key(): while it is
    unchanged only draw_dynamic()'s artists are redrawn over the cached rest (Agg blitting), which keeps
    a step or block-size change at a few tens of milliseconds."""

    def __init__(self, rows, figsize, ncols=1, nrows=1):
        self.readout = W.HTML()
        self.image = W.Image(format="png")
        self.figure = Figure(figsize=figsize, dpi=DPI, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.subplots(nrows, ncols, squeeze=False).ravel()
        self.error = None
        self._busy = False
        self._static = self._background = None
        self._dynamic = []
        self.ui = W.VBox([W.HBox(row) for row in rows] + [self.readout, self.image])
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
            return
        finally:
            self._busy = False
        self._render()

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
        width, height = canvas.get_width_height(physical=True)
        buf = io.BytesIO()
        PIL.Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buf, format="png", compress_level=1)
        self.image.value = buf.getvalue()

    def update(self):
        raise NotImplementedError

    def draw(self):
        raise NotImplementedError

    def static_key(self):
        """None: redraw everything on every change."""
        return None

    def draw_dynamic(self):
        """The artists that change while static_key() stays the same."""
        return []

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def gpu_dropdown(value):
    """The GPU presets, starting at `value` (a preset name or a gpusim.GPU)."""
    return W.Dropdown(options=list(gpusim.PRESETS), value=gpusim.get_gpu(value).name, description="GPU")


def seq_slider(value, seqs=SEQS, description="seq (N)"):
    """A slider over the sequence lengths `seqs`, updated when released."""
    return W.SelectionSlider(options=[(f"{n:,}", n) for n in seqs], value=value, description=description,
                             continuous_update=False)


def dropdown(description, options, value):
    """A labelled dropdown."""
    return W.Dropdown(options=options, value=value, description=description)


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
    """An IntSlider for the step and a Play button that advances it in the browser."""
    step = W.IntSlider(value=0, min=0, max=0, description="step")
    play = W.Play(interval=500, min=0, max=0)
    W.jslink((play, "value"), (step, "value"))
    return step, play


def set_step_range(step, play, last):
    """Let the step controls run 0 .. last, keeping the step where it is when it is still in range."""
    play.max = step.max = last
    step.value = min(step.value, last)


def sync_dtypes(gpu_control, dtype_control):
    """Offer only the dtypes the chosen GPU supports; keep the choice when it still exists."""
    options = supported_dtypes(gpu_control.value)
    if list(dtype_control.options) != options:
        keep = dtype_control.value if dtype_control.value in options else "fp16"
        dtype_control.options = options
        dtype_control.value = keep

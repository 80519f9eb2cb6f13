"""What the decode and training widgets use beside the Live base (course/widget.py, which renders crisp figures
and has its own guess box for a widget with a question()):

- crisp images: the figure is rendered at PIXEL_RATIO times the pixels it is shown at, and the image is
  shown at the figure's size in CSS pixels (96 per inch), so matplotlib's points are the page's points and
  the browser never stretches a small bitmap;
- predict, then reveal: a box for the learner's guess and a toggle that shows the answer; the answer stays
  hidden until the toggle is pressed, and hides again when the question changes.
"""
from html import escape

import ipywidgets as W

from .widget import CSS_PX_PER_INCH, PIXEL_RATIO


def sharpen(live):
    """Render `live`'s figure at PIXEL_RATIO x its displayed size and show it at its size in CSS pixels."""
    width_in, height_in = live.figure.get_size_inches()
    live.figure.set_dpi(CSS_PX_PER_INCH * PIXEL_RATIO)
    live.image.layout.width = f"{round(width_in * CSS_PX_PER_INCH)}px"
    live.image.layout.max_width = "100%"  # never wider than the page: the height follows the width
    live.image.layout.height = "auto"
    live._static = None  # the cached background was drawn at the old resolution
    live.refresh()


class Guess:
    """The learner's guess of one number, and a toggle that reveals the answer."""

    def __init__(self, question, unit=""):
        self.question, self.unit = question, unit
        self.box = W.FloatText(value=0.0, description="your guess", style={"description_width": "initial"})
        self.reveal = W.ToggleButton(value=False, description="reveal", tooltip="show gpusim's answer")
        self._key = None

    @property
    def controls(self):
        return [self.box, self.reveal]

    def revealed(self, key):
        """True once the toggle is pressed for this question (`key`: what the answer depends on); a new key
        hides the answer again."""
        if key != self._key:
            self._key = key
            self.reveal.value = False
        return self.reveal.value

    def html(self, answer, shown):
        """The readout's guess line: the question until revealed, then the answer (`shown`: it formatted)
        and how far the guess was from it."""
        if not self.reveal.value:
            return (f"<p><b>Predict:</b> {escape(self.question)} Type your guess{self.unit and f' ({self.unit})'}, "
                    f"then press <i>reveal</i>.</p>")
        guess = self.box.value
        verdict = ("no guess entered" if guess == 0 else "a guess here is a positive number: type one" if guess < 0
                   else f"your guess is {guess / answer:.2g}x the answer" if answer
                   else f"your guess is off by {guess:g}")
        return f"<p><b>Answer:</b> {escape(self.question)} {escape(shown)} ({verdict}).</p>"

"""Every value of every control of every live widget, as a learner drags and picks them: each change redraws, or
puts one line of gpusim's in the readout; never a traceback. Each value is set with every other control where
the notebook starts it (notebook 4's explorer raised an IndexError at d = 256, where the curve its panel draws
came back empty: a walk like this found it)."""
from pathlib import Path

import ipywidgets as W
import pytest

from gpusim_course.context.widgets import TimelineExplorer
from gpusim_course.hierarchy.widgets import RooflineExplorer
from gpusim_course.inference.widgets import KVCalculator, PagedAllocation, SplitKVStepper
from gpusim_course.practice.widgets import OverlapExplorer, SdpaPickExplorer
from gpusim_course.softmax.widgets import OnlineSoftmaxStepper
from gpusim_course.standard.widgets import FootprintExplorer, NaiveStepper, TrafficExplorer
from gpusim_course.tiling.widgets import (FlashCompare, LoopOrderComparison, TileStepper, TilingExplorer,
                                          WavesExplorer)
from gpusim_course.training.widgets import BackwardStepper

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"
WIDGETS = {cls.__name__: cls for cls in (
    RooflineExplorer, BackwardStepper, TilingExplorer, WavesExplorer, TileStepper, LoopOrderComparison, FlashCompare,
    OnlineSoftmaxStepper, KVCalculator, SplitKVStepper, PagedAllocation, FootprintExplorer, TrafficExplorer,
    NaiveStepper, OverlapExplorer, TimelineExplorer)} | {"SdpaPickExplorer": lambda: SdpaPickExplorer(RESULTS)}
ASKS = (W.Text,)  # the guess box: typed answers, tested in test_course_guess.py


def controls(box):
    """The value controls under box, in reading order (a step's Play button left out: it moves the slider)."""
    if isinstance(box, W.Box):
        return [c for child in box.children for c in controls(child)]
    live = isinstance(box, W.ValueWidget) and not isinstance(box, (W.Play, W.HTML, W.Image, W.Label, *ASKS))
    return [box] if live else []


def values(control):
    """What a learner can set: each option of a list, a slider's two ends, a checkbox's other state."""
    if isinstance(control, (W.IntSlider, W.FloatSlider)):
        return [control.min, control.max]
    if isinstance(control, W.Checkbox):
        return [not control.value]
    return [o[1] if isinstance(o, tuple) else o for o in control.options]


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_every_value_of_every_control_redraws_or_says_why_in_one_line(name):
    widget = WIDGETS[name]()
    asks = controls(widget.prediction.ui) if widget.prediction else []  # the guess box does not refresh
    walk = [c for c in controls(widget.ui) if c not in asks]
    assert walk and widget.error is None, name
    for control in walk:
        start = control.value
        for value in values(control) + [start]:
            if value == control.value:
                continue
            widget.image.value = b""
            control.value = value  # an exception other than gpusim's ValueError comes up through here
            where = (name, control.description, value)
            if widget.error:
                assert "\n" not in widget.error and "gpusim:" in widget.readout.value, where
            else:
                assert widget.image.value, where  # redrawn
        assert widget.error is None, (name, control.description, "back at the start")

"""The kernel cells' guard: silent where torch and Triton import, one line naming what is missing and why the
cell needs Linux elsewhere (macOS, where the project installs neither)."""
import importlib.util

import pytest

from gpusim_course import linux


def test_silent_where_the_kernels_can_run():
    assert linux.require_kernels() is None


def test_one_line_where_triton_is_missing(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "triton" else real(name, *a))
    monkeypatch.setattr(linux.platform, "system", lambda: "Darwin")
    with pytest.raises(ModuleNotFoundError, match=r"need Linux: triton is not installed on Darwin") as err:
        linux.require_kernels()
    assert "\n" not in str(err.value)

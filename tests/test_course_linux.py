"""The kernel cells' guard: a cell marked %%needs_kernels runs as any other where torch and Triton import, and prints
one line naming what is missing and why the cell needs Linux elsewhere (macOS, where the project installs neither),
so that Run All goes on to the model's cells after it."""
import importlib.util
import json
from pathlib import Path

import pytest

from gpusim_course import linux

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def without(monkeypatch, *names):
    real = importlib.util.find_spec  # torch and triton found but for `names`, installed or not

    def find_spec(name, *a):
        return None if name in names else object() if name in ("torch", "triton") else real(name, *a)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(linux.platform, "system", lambda: "Darwin")


def test_silent_where_the_kernels_can_run():
    pytest.importorskip("triton", reason="the kernels need Triton, which publishes Linux wheels only")
    pytest.importorskip("torch")
    assert linux.missing() == []
    assert linux.needs_kernels(["%%needs_kernels\n", "x = 1\n"]) == ["\n", "x = 1\n"]  # numbered as written


def test_one_line_where_triton_is_missing(monkeypatch):
    without(monkeypatch, "triton")
    assert "need Linux: triton is not installed on Darwin" in linux.why(linux.missing())
    assert "\n" not in linux.why(linux.missing())
    printed, = linux.needs_kernels(["%%needs_kernels\n", "import triton\n", "x = 1\n"])
    namespace = {}
    exec(printed, namespace)  # a print of the one line, nothing of the cell
    assert "x" not in namespace and printed.startswith("print(") and "Skipped: this cell runs Triton kernels" in printed


def test_without_the_kernels_on_linux_the_line_says_how_to_add_them(monkeypatch):
    """On Linux the kernels do not need another system, only the extra: "need Linux ... not installed on Linux"
    said otherwise."""
    without(monkeypatch, "torch", "triton")
    monkeypatch.setattr(linux.platform, "system", lambda: "Linux")
    printed, = linux.needs_kernels(["%%needs_kernels\n", "x = 1\n"])
    assert "torch and triton are not installed here (pip install -e '.[kernels]' adds them)" in printed
    assert "need Linux" not in printed


def test_the_mark_takes_a_comment_and_another_cell_magic_after_it(monkeypatch):
    monkeypatch.setattr(linux, "missing", lambda: [])
    assert linux.needs_kernels(["%%needs_kernels  # the kernels\n", "x = 1\n"]) == ["\n", "x = 1\n"]
    assert linux.needs_kernels(["%%needs_kernels\n", "%%time\n", "x = 1\n"]) == ["%%time\n", "x = 1\n"]
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpusim_course.linux")
    assert shell.run_cell("%%needs_kernels\n%%capture out\nprint('caught')\n").success
    assert shell.user_ns["out"].stdout == "caught\n"


def test_a_cell_without_the_mark_is_left_as_it_is(monkeypatch):
    without(monkeypatch, "torch", "triton")
    for lines in ([], ["x = 1\n"], ["# %%needs_kernels\n", "x = 1\n"]):
        assert linux.needs_kernels(lines) is lines


def test_a_marked_cell_skipped_lets_run_all_go_on_and_one_that_runs_raises_as_any(monkeypatch, capsys):
    """In an IPython shell with the extension loaded: where the kernels are missing, the cell prints its line and
    succeeds (the next cells run); where they are present, its error is the cell's error, as without the mark."""
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpusim_course.linux")
    linux.load_ipython_extension(shell)  # loaded twice: transformed once
    assert shell.input_transformers_cleanup.count(linux.needs_kernels) == 1
    without(monkeypatch, "torch", "triton")
    result = shell.run_cell("%%needs_kernels\nimport not_a_module_at_all\n")
    assert result.success and "Skipped: this cell runs Triton kernels, which need Linux: torch and triton are" in (
        capsys.readouterr().out)
    monkeypatch.undo()
    monkeypatch.setattr(linux, "missing", lambda: [])
    result = shell.run_cell("%%needs_kernels\nraise ValueError('in the cell')\n")
    assert not result.success and isinstance(result.error_in_exec, ValueError)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_cell_that_imports_torch_or_triton_is_marked_and_the_first_cell_loads_the_mark(path):
    code = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    kernel_cells = [s for s in code if any(f"import {m}" in s for m in ("torch", "triton"))]
    assert all(s.startswith(linux.MARK + "\n") for s in kernel_cells), [s[:80] for s in kernel_cells]
    marked = [i for i, s in enumerate(code) if s.startswith(linux.MARK)]
    assert not marked or code[0].startswith("%load_ext gpusim_course.linux") and 0 not in marked

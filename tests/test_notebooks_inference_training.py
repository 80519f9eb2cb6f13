"""The decode and training notebooks (08, 09) run headless (nbclient, CPU) without an error in under 60 s,
as tests/test_notebooks.py runs the others, and are committed without outputs. The training notebook runs
both before and after the GPU's backward benchmark exists: with no results file (gpusim's side only) and
with one (a CPU smoke run's, in the same format)."""
import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / "notebooks" / "08_inference.ipynb", ROOT / "notebooks" / "09_training.ipynb"]
SMOKE = ROOT / "tests" / "fixtures" / "bench_bwd_smoke.json"
LIMIT_S = 60


@pytest.fixture(scope="module", autouse=True)
def working_tree_first():
    """The kernel imports gpusim and the course from this working tree, whatever the installed copy holds."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), before]))
    yield
    if before is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = before


def execute(path, after_parameters=None):
    """Run a notebook as "Run All" would, a cell inserted after its parameters cell; (notebook, seconds)."""
    nb = nbformat.read(path, as_version=4)
    if after_parameters:
        at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(after_parameters))
    start = time.perf_counter()
    NotebookClient(nb, timeout=LIMIT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb, time.perf_counter() - start


def outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def text(nb):
    return "".join(o.get("text", "") for o in outputs(nb) if o.output_type == "stream")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless_in_under_a_minute(path):
    nb, seconds = execute(path)
    assert not [o for o in outputs(nb) if o.output_type == "error"]
    assert seconds < LIMIT_S, f"{path.name} took {seconds:.1f} s"


@pytest.mark.parametrize("bench_bwd, says", [(SMOKE, "Measured on cpu"), (SMOKE.with_name("absent.json"),
                                                                            "is not there yet")])
def test_training_notebook_with_and_without_the_backward_benchmark(bench_bwd, says):
    nb, _ = execute(NOTEBOOKS[1], f"BENCH_BWD = {str(bench_bwd)!r}")
    assert not [o for o in outputs(nb) if o.output_type == "error"]
    assert says in text(nb)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), "strip the outputs before committing"
    assert "Learning goals" in nb.cells[0].source
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
    assert "shared/" not in path.read_text() and "baselines" not in path.read_text()

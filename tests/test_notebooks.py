"""The course runs: every notebook executes top to bottom headless (nbclient, CPU) without an error in under
60 s, is committed without outputs, and starts with its learning goals and a parameters cell; the numbering
runs 01 to 13 without gaps. Notebook 4's control panel keeps the contract the browser test relies on, and
notebook 10's puzzles accept the reference solutions typed into their cells."""
import atexit
import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest

import gpusim
from gpusim_course.block_sliders import BLOCK_LABELS

# make test's processes: one runs them all, so the tests that read a notebook's headless run share it (executed).
pytestmark = pytest.mark.xdist_group("notebooks")
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
COURSE = ("01_memory_hierarchy", "02_standard_attention", "03_online_softmax", "04_tiling", "05_flash1_vs_flash2",
          "06_real_kernels", "07_hopper_and_beyond", "08_inference", "09_training", "10_write_the_kernels",
          "11_claims_scorecard", "12_appendix_provenance", "13_beyond_one_gpu")
LIMIT_S = 60
# Appended after a notebook's parameters cell under test: smaller problems, the same code paths.
SMALLER = {"03_online_softmax.ipynb": "ROWS = 200"}


def read(path):
    """The notebook at `path`, as nbformat reads it. Jupyter's modules are imported where they are used: a process
    that runs none of these tests does not pay their 1.3 s (nbformat's schemas' grammars, most of it) to collect
    them."""
    import nbformat
    return nbformat.read(path, as_version=4)


def code_cell(source):
    import nbformat
    return nbformat.v4.new_code_cell(source)


def execute(path, nb=None):
    """Run a notebook as JupyterLab's "Run All" would; returns it with outputs and widget state, and the time."""
    nb = nb or read(path)
    if path.name in SMALLER:
        at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        nb.cells.insert(at + 1, code_cell(SMALLER[path.name]))
    start = time.perf_counter()
    run_in_kernel(nb, path.parent, LIMIT_S)
    return nb, time.perf_counter() - start


def run_in_kernel(nb, folder, timeout_s, km=None):
    """Run a notebook headless in this test process's kernel, working in `folder`, as "Run All" runs it after a
    kernel restart: a first cell (taken out again afterwards) empties the namespace with `%reset -f` and changes
    to `folder`, so that a name another notebook defined or imported is a NameError here as in a fresh kernel.
    One kernel serves every run of the process: its start and the imports every notebook repeats (torch,
    matplotlib) are paid once: the 13 notebooks ran in 43 s one kernel each, 29 s in one. A run that fails shuts
    the kernel down, so that whatever it left does not reach the next run. (What a namespace reset cannot undo,
    an environment variable or a setting an earlier notebook changed, is caught by tests/test_browser.py, which
    runs every notebook, up to the control it moves, in a kernel of its own.)"""
    from nbclient import NotebookClient
    nb.cells.insert(0, code_cell(f"%reset -f\nimport os\nos.chdir({str(folder)!r})\ndel os"))
    client = NotebookClient(nb, km=km or kernel(), timeout=timeout_s, resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env=os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                                      os.environ.get("PYTHONPATH")]))})
    except BaseException:
        shut_down_the_kernel()
        raise
    finally:
        nb.cells.pop(0)
        if client.kc is not None:
            client.kc.stop_channels()


# The kernel talks over Unix sockets in a folder of its own: TCP ports picked by one test process can be taken by
# another's kernel before its own binds them (make test runs two processes), which failed a kernel's start with
# "Address already in use". It works in the working tree first, whatever the installed copy holds.
SOCKETS = tempfile.TemporaryDirectory()
_KERNEL = {}  # "km": this process's kernel manager (a manager shut down cannot start another kernel)


def kernel():
    if "km" not in _KERNEL:
        from jupyter_client.manager import AsyncKernelManager
        _KERNEL["km"] = AsyncKernelManager(kernel_name="python3", transport="ipc",
                                           ip=str(Path(SOCKETS.name) / "kernel"))
    return _KERNEL["km"]


@atexit.register
def shut_down_the_kernel():
    km = _KERNEL.pop("km", None)
    if km is not None and km.has_kernel:
        from jupyter_core.utils import run_sync
        run_sync(km.shutdown_kernel)(now=True)


def test_a_headless_run_finds_nothing_an_earlier_run_left_and_works_in_its_folder(tmp_path):
    """The shared kernel is as good as a fresh one: an earlier run's names and imports are gone, each run works in
    its own folder, and after a failed run the next one gets a new kernel."""
    import nbformat
    from nbclient.exceptions import CellExecutionError
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    def notebook(code):
        return nbformat.v4.new_notebook(cells=[code_cell(code)])
    run_in_kernel(notebook("import numpy as np\nleft = 1"), first, 30)
    for name in ("left", "np"):
        with pytest.raises(CellExecutionError, match="NameError"):
            run_in_kernel(notebook(name), first, 30)
    nb = notebook("import os\nprint(os.getcwd())")
    run_in_kernel(nb, second, 30)
    assert nb.cells[0].outputs[0]["text"].strip() == str(second)


def test_the_notebooks_are_the_course_numbered_without_gaps():
    present = [p.stem for p in NOTEBOOKS]
    assert present == list(COURSE), f"missing: {set(COURSE) - set(present)}, extra: {set(present) - set(COURSE)}"
    assert [int(name[:2]) for name in present] == list(range(1, len(COURSE) + 1))


def test_notebook1s_course_map_names_every_notebook():
    """Notebook 1's map of the course stopped at 12 when 13 was added."""
    first = "".join(json.loads(NOTEBOOKS[0].read_text())["cells"][0]["source"])
    course = next(line for line in first.splitlines() if line.startswith("*The course:*"))
    assert [int(n) for n in re.findall(r"(?:\*\*|→ )(\d+) ", course)] == list(range(1, len(COURSE) + 1))


@functools.lru_cache(maxsize=None)
def executed(path):
    """execute(path), once per run of the suite: the tests that read a notebook's own run share it."""
    return execute(path)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless_in_under_a_minute(path):
    nb, seconds = executed(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert seconds < LIMIT_S, f"{path.name} took {seconds:.1f} s"
    print(f"{path.name}: {seconds:.1f} s")


def test_the_notebooks_with_kernel_cells_run_to_the_end_without_torch_and_triton():
    """As on macOS, where the project installs neither: in a kernel of its own where torch and triton cannot be
    imported (None in sys.modules, which importlib.util.find_spec reads as missing), each notebook with kernel cells
    runs to its last cell, every cell marked %%needs_kernels printing its line in place of running, and so does each
    notebook that calls torch outside such cells. Before the mark, require_kernels raised, and Run All stopped there
    (notebook 6 had 16 cells after it, most of them the model's)."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(Path(SOCKETS.name) / "no_torch"))
    marked = [p for p in NOTEBOOKS if "%%needs_kernels" in p.read_text()]
    torch = [p for p in NOTEBOOKS if "torch" in p.read_text() and p not in marked]  # notebook 7's fp8 table
    try:
        for path in marked + torch:
            nb = read(path)
            nb.cells.insert(0, code_cell("import sys\nsys.modules['torch'] = sys.modules['triton'] = None"))
            run_in_kernel(nb, path.parent, LIMIT_S, km)
            cells = [c for c in nb.cells if c.cell_type == "code"]
            assert not [o for c in cells for o in c.outputs if o.output_type == "error"], path.name
            skipped = [c for c in cells if c.source.startswith("%%needs_kernels")]
            assert (skipped or path in torch) and all(any("Skipped: this cell runs Triton kernels" in o.get("text", "")
                                       for o in c.outputs) for c in skipped), path.name
    finally:
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    assert len(marked) == 8 and len(torch) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_clean(path):
    import nbformat
    nb = read(path)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), "strip the outputs before committing"
    assert "Learning goals" in nb.cells[0].source
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cites_only_the_projects_own_results(path):
    """Every GPU number comes from a results file in this repository that names its run."""
    text = path.read_text()
    assert "shared/" not in text and "baselines" not in text
    for cited in set(re.findall(r"results/[\w/.-]+\.(?:json|png|txt)", text)):
        assert (ROOT / cited).exists(), f"{path.name} cites {cited}, which is not in the repository"


def run_with_fixture(notebook, name, fixture):
    """What a notebook printed (no cell may raise) with its parameter `name` set, after its parameters cell, to
    tests/fixtures/fixture; fixture None: the notebook as committed, whose headless run it shares."""
    path = ROOT / "notebooks" / notebook
    if fixture is None:
        return printed(executed(path)[0])
    nb = read(path)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, code_cell(f"{name} = {str(ROOT / 'tests' / 'fixtures' / fixture)!r}"))
    return printed(execute(path, nb)[0])


def printed(nb):
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


# Notebooks 9 and 13 run with their measurement and without; the committed tree is one of the two cases, and that
# case is the notebook's own headless run (fixture None), shared.
BENCH_BWD_COMMITTED = (ROOT / "results" / "h200" / "bench_bwd.json").exists()
CP_COMMITTED = (ROOT / "results" / "h200x2" / "cp.json").exists()


@pytest.mark.parametrize("bench_bwd, says", [(None if BENCH_BWD_COMMITTED else "bench_bwd_smoke.json", "Measured on "),
                                              ("absent.json", "is not there yet")])
def test_training_notebook_with_and_without_the_backward_benchmark(bench_bwd, says):
    """Notebook 9 runs before the GPU's backward benchmark exists (gpusim's side only) and with one (the committed
    one, or where there is none a CPU smoke run's, in the same format)."""
    printed = run_with_fixture("09_training.ipynb", "BENCH_BWD", bench_bwd)
    assert says in printed


def widget_states(nb):
    return [m["state"] for m in nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()]


def test_notebook4_panel_shows_the_hbm_bytes_gpusim_computes():
    nb, _ = executed(ROOT / "notebooks" / "04_tiling.ipynb")
    states = widget_states(nb)
    sliders = {s["description"] for s in states if s.get("_model_name") == "IntSliderModel"}
    assert set(BLOCK_LABELS.values()) <= sliders
    pattern = r"<span class=\"gpusim-hbm-bytes\" data-config='([^']*)'>([\d,]+)</span>"
    spans = [m for s in states if s.get("_model_name") == "HTMLModel" for m in re.finditer(pattern, s["value"])]
    assert len(spans) == 1
    config, shown = json.loads(spans[0].group(1)), int(spans[0].group(2).replace(",", ""))
    r = gpusim.simulate(**config)
    assert shown == r.hbm_read_bytes + r.hbm_write_bytes


def test_notebook10_accepts_the_reference_solutions_typed_into_its_puzzles():
    """Each puzzle's template cell replaced by its reference solution, as a learner would type it: every check
    cell then says right (and the untouched notebook says not yet, in the run above)."""
    pytest.importorskip("triton", reason="the puzzles' checks run Triton's interpreter: Linux only")
    from gpusim_course import puzzles
    from gpusim_course.puzzles.catalog import NOTEBOOKS

    path = ROOT / "notebooks" / "10_write_the_kernels.ipynb"
    nb = read(path)
    for name in (n for n, stem in NOTEBOOKS.items() if stem == path.stem):
        template = next(c for c in nb.cells if c.cell_type == "code" and f"def {name}(" in c.source)
        assert "..." in template.source
        template.source = puzzles.solution_source(name)
    nb, _ = execute(path, nb)
    verdicts = [o for c in nb.cells if c.cell_type == "code" and "puzzles.check(" in c.source for o in c.outputs]
    texts = [o["data"]["text/html"] for o in verdicts]
    assert len(texts) == 3 and all(">right</b>" in t and "to the byte" in t for t in texts)


@pytest.mark.parametrize("cp_json, says", [("cp_fixture.json", "Measured on 2 x test fixture"),
                                           ("absent.json" if CP_COMMITTED else None, "Not measured yet")])
def test_beyond_one_gpu_with_and_without_the_two_gpu_measurement(cp_json, says):
    """Notebook 13 runs before the two-GPU measurement exists (the model alone) and with one (a fixture in its
    format: benchmarks/cp.py's merge of made-up rows)."""
    printed = run_with_fixture("13_beyond_one_gpu.ipynb", "CP_JSON", cp_json)
    assert says in printed

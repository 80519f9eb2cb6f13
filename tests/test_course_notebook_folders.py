"""A notebook run from another folder than notebooks/ does not find ../results: each cell that reads a results file
stops at read_results's one-line message, and no later cell fails on a name that cell did not define."""
import pytest

from test_notebooks import NOTEBOOKS, read, run_in_kernel

# make test's processes: the one that runs the headless notebooks runs this too, in the same kernel
pytestmark = pytest.mark.xdist_group("notebooks")


def test_notebook1_run_elsewhere_stops_only_at_the_missing_files(tmp_path):
    """Notebook 1 loaded l2_reuse.json in one cell and tabled it in the next: run elsewhere, the first said the file
    is not there and the second raised NameError: name 'l2' is not defined. One cell reads and shows it now."""
    path = next(p for p in NOTEBOOKS if p.name == "01_memory_hierarchy.ipynb")
    nb = read(path)
    for cell in nb.cells:  # go on past errors, as running the cells one by one does
        cell.metadata.setdefault("tags", []).append("raises-exception")
    run_in_kernel(nb, tmp_path, 60)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors, "the results were found from another folder: nothing to check"
    assert {e.ename for e in errors} == {"FileNotFoundError"}, [(e.ename, e.evalue) for e in errors]
    assert all("is not there: run the notebook from notebooks/" in e.evalue for e in errors)

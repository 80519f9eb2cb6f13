"""The course's layout (docs/course.md): each notebook imports from gpusim_course its own chapter's package and
the course-wide toolkit only, and the course's imports have no circle."""
import ast
import json
import re
from pathlib import Path

import pytest

from test_structure import assert_no_circle

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHAPTERS = {"01": "hierarchy", "02": "standard", "03": "softmax", "04": "tiling", "05": "tiling", "06": "practice",
            "07": "practice", "08": "inference", "09": "training", "10": "puzzles", "11": "scorecard",
            "12": "provenance", "13": "context"}
# What any notebook may import besides its chapter: showing rows, the Linux check, the multiple choice, reading a
# results file, the puzzle at a chapter's end and the scorecard's verdict on a chapter's claim.
TOOLKIT = {"formatting", "linux", "choice", "measurements", "puzzles", "scorecard"}


def _code(notebook):
    """A notebook's code cells as one module's source, its magics (% and ! lines) left out."""
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))


def course_imports(notebook):
    """The gpusim_course modules a notebook's code cells import: the package under gpusim_course each names."""
    found = set()
    for node in ast.walk(ast.parse(_code(notebook))):
        if isinstance(node, ast.ImportFrom) and node.module == "gpusim_course":
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpusim_course."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("gpusim_course.")}
    return found


def test_every_notebook_has_a_chapter():
    assert sorted(CHAPTERS) == [n.name[:2] for n in NOTEBOOKS]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_notebook_imports_its_chapter_and_the_toolkit_only(notebook):
    chapter = CHAPTERS[notebook.name[:2]]
    assert chapter in course_imports(notebook)
    assert course_imports(notebook) <= TOOLKIT | {chapter}
    assert chapter_import_lines(notebook, chapter) == 1  # docs/course.md: its chapter's package in one line


def chapter_import_lines(notebook, chapter):
    """The import statements of a notebook's code cells that name its chapter's package, in any form."""
    count = 0
    for node in ast.walk(ast.parse(_code(notebook))):
        if isinstance(node, ast.ImportFrom) and node.module == "gpusim_course":
            count += any(a.name == chapter for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            count += (node.module or "").startswith(f"gpusim_course.{chapter}")
        elif isinstance(node, ast.Import):
            count += any(a.name.startswith(f"gpusim_course.{chapter}") for a in node.names)
    return count


def test_a_second_import_of_the_chapter_in_any_form_is_counted(tmp_path):
    cells = [{"cell_type": "code", "source": source} for source in (
        "from gpusim_course.tiling import model\n", "from gpusim_course.tiling.measured import x\n",
        "import gpusim_course.tiling\n", "from gpusim_course import tiling, formatting\n")]
    path = tmp_path / "05_x.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert chapter_import_lines(path, "tiling") == 4


def _module(path):
    parts = path.relative_to(ROOT / "course").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def course_graph():
    """{module: the course modules it imports, anywhere in it}, relative imports resolved."""
    graph = {}
    for path in sorted((ROOT / "course").rglob("*.py")):
        name = _module(path)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                found |= {module} | {f"{module}.{a.name}".strip(".") for a in node.names}
        graph[name] = found
    return {m: {n for n in found if n in graph and n != m} for m, found in graph.items()}


def test_the_course_imports_have_no_circle():
    assert_no_circle(course_graph())


def test_each_heading_opens_a_cell_and_every_link_to_a_cell_finds_its_heading():
    """A link to `notebook.ipynb#cell-id=...` scrolls JupyterLab to that cell, also when it opens the notebook (a
    heading's anchor does not): so each heading opens a markdown cell of its own, and every such link in a
    notebook names a cell of its target that opens with a heading."""
    opening = {}
    for notebook in NOTEBOOKS:
        for cell in json.loads(notebook.read_text())["cells"]:
            lines = "".join(cell["source"]).splitlines() if cell["cell_type"] == "markdown" else []
            fence = False
            for i, line in enumerate(lines):
                fence ^= line.startswith("```")
                assert fence or i == 0 or not line.startswith("#"), (notebook.name, line)
            if lines and lines[0].startswith("#"):
                opening[notebook.name, cell["id"]] = lines[0]
    links = {(m[0], m[1]) for notebook in NOTEBOOKS
             for m in re.findall(r"(\d\d_\w+\.ipynb)#cell-id=([0-9a-f-]+)", notebook.read_text())}
    assert links and all(link in opening for link in links), links - set(opening)


@pytest.mark.parametrize("package", ["puzzles", "scorecard"])
def test_course_md_names_the_notebooks_that_borrow_the_puzzles_and_the_verdicts(package):
    """docs/course.md's package table: the other notebooks that import the puzzles or the scorecard, as they do."""
    borrowers = [n.name[:2].lstrip("0") for n in NOTEBOOKS
                 if package in course_imports(n) and CHAPTERS[n.name[:2]] != package]
    row = next(line for line in (ROOT / "docs" / "course.md").read_text().splitlines()
               if line.startswith(f"| `{package}/` |"))
    assert row.split(" | ")[1].endswith(" " + ", ".join(borrowers)), (row, borrowers)

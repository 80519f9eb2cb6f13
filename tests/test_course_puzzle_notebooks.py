"""Each puzzle sits in the last section of the notebook that teaches it (puzzles/catalog.py: NOTEBOOKS): a template cell
with blanks, and a check cell. Run as committed, the templates are "not yet" (tests/test_notebooks.py runs every
notebook whole); typed in as the reference solutions, every check says right. Only the puzzle sections run here,
as "Run All" would run them: all of them in one Jupyter kernel (one kernel and one checker process to start),
each after `%reset -f`, so that a section finds nothing another defined or imported."""
import functools
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="the puzzles' checks run Triton's interpreter: Linux only")
from gpusim_course import puzzles  # noqa: E402
from gpusim_course.puzzles.catalog import NOTEBOOKS  # noqa: E402
from test_notebooks import code_cell, read, run_in_kernel  # noqa: E402

# make test's processes: the one that runs the headless notebooks runs these too, in the same kernel (and the same
# checker process in it), started once.
pytestmark = pytest.mark.xdist_group("notebooks")
ROOT = Path(__file__).resolve().parents[1]
SECTIONED = sorted(set(NOTEBOOKS.values()) - {"10_write_the_kernels"})  # notebook 10 is all puzzles: test_notebooks


def template(nb, name):
    """The cell that defines puzzle `name`'s kernel (or launcher, which is in the same cell)."""
    return next(c for c in nb.cells if c.cell_type == "code" and (f"def {name}(" in c.source))


def section(stem):
    """The notebook's cells from its first "## Puzzle" heading on."""
    nb = read(ROOT / "notebooks" / f"{stem}.ipynb")
    start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Puzzle"))
    nb.cells = nb.cells[start:]
    return nb


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_each_puzzle_is_at_the_end_of_its_notebook_with_blanks_and_a_check(name):
    stem = NOTEBOOKS[name]
    nb = section(stem) if stem in SECTIONED else read(ROOT / "notebooks" / f"{stem}.ipynb")
    cell = template(nb, name)
    assert "..." in cell.source and "TODO" in cell.source or stem == "10_write_the_kernels"
    assert any(c.source.removeprefix("%%needs_kernels\n").startswith(f'puzzles.check("{name}"') for c in nb.cells
               if c.cell_type == "code")


@functools.lru_cache(maxsize=None)
def solved_sections():
    """{stem: its section's check cells' HTML outputs}, every section run with its reference solutions typed in."""
    sections = {stem: section(stem) for stem in SECTIONED}
    for stem, nb in sections.items():
        for name in (n for n, s in NOTEBOOKS.items() if s == stem):
            template(nb, name).source = puzzles.solution_source(name)
        for cell in nb.cells:  # unique in the notebook they are run in
            cell.id = f"{stem[:2]}-{cell.id}"
    import nbformat
    cells = [code_cell("%load_ext gpusim_course.linux")] + [  # the notebooks' first cells load it: %%needs_kernels
        cell for nb in sections.values() for cell in [code_cell("%reset -f"), *nb.cells]]
    run_in_kernel(nbformat.v4.new_notebook(cells=cells, metadata=sections[SECTIONED[0]].metadata), ROOT, 180)
    return {stem: [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" and "puzzles.check(" in c.source
                   for o in c.outputs if "data" in o] for stem, nb in sections.items()}


@pytest.mark.parametrize("stem", SECTIONED)
def test_the_reference_solutions_typed_into_a_section_are_right(stem):
    verdicts = solved_sections()[stem]
    names = [n for n, s in NOTEBOOKS.items() if s == stem]
    assert len(verdicts) == len(names) and all(">right</b>" in v and "to the byte" in v for v in verdicts), verdicts


def stated(name):
    """The sizes the notebook's text gives for puzzle `name`, from the puzzle the check runs."""
    p = puzzles.PUZZLES[name]
    return {"masked_tile": lambda: f"Copy a {p.shape[0]} × {p.shape[1]} fp16 matrix in {p.block} × {p.block} tiles",
            "dot_tile": lambda: f"A {p.shape[0]} × {p.shape[1]} and B {p.shape[1]} × {p.shape[2]}",
            "row_softmax": lambda: f"{p.shape[0]} rows of {p.shape[1]} fp16 values",
            "online_row_softmax": lambda: f"chunks of `BLOCK` = {p.block}",
            "flash2_forward": lambda: f"{p.batch} batches × {p.heads} heads, N = {p.seq}",
            "dkdv": lambda: f"{p.batch} batches × {p.heads} heads, N = {p.seq}, d = {p.head_dim}",
            "split_kv_merge": lambda: f"{', '.join(map(str, p.lengths[:-1]))} and {p.lengths[-1]} cached keys, chunks "
                                      f"of {p.block_kv} keys over {p.splits} splits",
            "paged_decode": lambda: f"`page_size={p.page_size}`"}.get(name, lambda: "")()


@pytest.mark.parametrize("stem", SECTIONED)
def test_the_sizes_a_section_states_are_the_checks(stem):
    text = "\n".join(c.source for c in section(stem).cells if c.cell_type == "markdown")
    for name in (n for n, s in NOTEBOOKS.items() if s == stem):
        assert stated(name) in text, stated(name)


def test_notebook10_states_every_shape_the_causal_check_runs():
    """The check ran one tile shape, where Bc divides Br, and n_blocks = (i + 1) * Br // Bc passed it; it runs a
    second, with K/V blocks longer than the Q blocks, and the text names both."""
    p = puzzles.PUZZLES["causal_skip"]
    text = "\n".join(c.source for c in read(ROOT / "notebooks" / "10_write_the_kernels.ipynb").cells
                     if c.cell_type == "markdown")
    shapes = (p, *p.variants())
    assert any(q.block_kv > q.block_q for q in shapes) and any(q.seq % q.block_q for q in shapes)
    for q in shapes:
        assert f"N = {q.seq}, {q.block_q}-row Q blocks and {q.block_kv}-key K/V blocks" in text


def test_the_split_kv_merge_section_says_how_a_requests_chunks_are_dealt_to_the_splits():
    """The template asked for cdiv(n_chunks, chunks per split), a name neither the kernel nor the text defined;
    `active = s < n_chunks`, the natural reading, then failed the byte check, whose hint gave the whole line. The
    text states the rule (and its example, as gpusim.decode splits), the hint says it without the line."""
    nb = section("08_inference")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "`cdiv(n_chunks, SPLITS)` to a split" in text
    p = puzzles.PUZZLES["split_kv_merge"]
    launch = p.launch()
    dealt = [[end - first for first, end in (launch.split_chunks(b, s) for s in range(p.splits))]
             for b in range(p.batch)]
    assert dealt == [[2, 2, 2, 1], [3, 3, 3, 0], [1, 0, 0, 0]]
    assert (f"The {p.lengths[0]} keys' 7 chunks go 2, 2, 2 and 1 to the four splits, the {p.lengths[1]} keys' 9 "
            f"chunks 3, 3 and 3 to the first three, the {p.lengths[2]} keys' one chunk to split 0") in text
    assert "of the 4 splits" not in text  # the requests fill different numbers of splits: the text names no constant
    cell = template(nb, "split_kv_merge")
    assert "chunks per split" not in cell.source and "cdiv(n_chunks, SPLITS)" in cell.source
    hint = p.hint("more_bytes")
    assert "takes cdiv(n_chunks, SPLITS) chunks" in hint and "cdiv(n_chunks, cdiv(" not in hint

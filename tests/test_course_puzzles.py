"""gpusim_course.puzzles: the kernels the learner writes (notebook 10). The reference solutions pass both
checks; wrong answers, made as a learner would make them (the solution with one mistake: a mutant), are
rejected by the check that can see the mistake, which names the first wrong tile or program."""
import importlib.util

import pytest

pytest.importorskip("triton", reason="Triton publishes Linux wheels only")
from gpusim_kernels.interpreter import INTERPRETED  # noqa: E402

from gpusim_course import puzzle_solutions, puzzles  # noqa: E402

pytestmark = pytest.mark.skipif(not INTERPRETED, reason="the byte check counts loads in Triton's interpreter")

Q_LOAD = ("    q_i = tl.load(Q + bh * N * D + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)"
          "  # read Br*d\n")
KEYS = "        keys = j * Bc + tl.arange(0, Bc)\n"


def mutant(tmp_path, name, old, new):
    """The reference solution of `name` with `old` replaced by `new`, as a learner's kernel in a file of its own."""
    source = puzzles.solution_source(name)
    assert old in source, old
    path = tmp_path / f"mutant_{name}.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n" + source.replace(old, new, 1))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_the_reference_solution_passes_both_checks(name):
    verdict = puzzles.check(name, getattr(puzzle_solutions, name))
    assert verdict.status == "right", verdict.message
    assert "equal gpusim's count to the byte" in verdict.message


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_a_template_with_blanks_is_not_yet(tmp_path, name):
    kernel = mutant(tmp_path, name, "m_new = tl.maximum(", "m_new = ...  # tl.maximum(")
    verdict = puzzles.check(name, kernel)
    assert verdict.status == "not yet" and "1 blank(s)" in verdict.message


WRONG = [  # (puzzle, mistake, replaced, replacement, the check that sees it, what the verdict names)
    ("online_softmax", "acc not rescaled", "acc = acc * alpha[:, None] + tl.dot", "acc = acc + tl.dot",
     "Correctness", ["Q block 0 (rows 0..15) is wrong", "tile (i, j) = (0, 1)", "multiply them by alpha"]),
    ("online_softmax", "l_i not rescaled", "l_i = alpha * l_i + tl.sum", "l_i = l_i + tl.sum",
     "Correctness", ["Q block 0 (rows 0..15) is wrong", "tile (i, j) = (0, 1)"]),
    ("online_softmax", "Q_i reloaded every step", KEYS, KEYS + Q_LOAD.replace("    q_i", "        q_i"),
     "Bytes", ["Q block 0 (rows 0..15)", "Q 5,120 B (gpusim: 1,024 B)", "Q_i is loaded once"]),  # 1 + 4 loads
    ("causal_skip", "every K/V block visited", "n_blocks = tl.minimum(last_row // Bc + 1, tl.cdiv(N_KV, Bc))",
     "n_blocks = tl.cdiv(N_KV, Bc)", "Bytes", ["Q block 0 (rows 0..31)", "K 6 tiles (gpusim: 2)",
                                                "entirely right of the diagonal"]),
    ("causal_skip", "diagonal blocks unmasked", "if j >= n_whole:", "if j >= n_blocks:",
     "Correctness", ["Q block 0 (rows 0..31) is wrong", "tile (i, j) = (0, 0)", "masked"]),
    ("causal_skip", "diagonal blocks not visited", "n_blocks = tl.minimum(last_row // Bc + 1",
     "n_blocks = tl.minimum(i * Br // Bc", "Correctness", ["Q block 0 (rows 0..31) is wrong", "NaN"]),
    ("gqa_decode", "interleaved heads", "heads = kv_head * GROUP + tl.arange(0, BLOCK_R)",
     "heads = kv_head + H_KV * tl.arange(0, BLOCK_R)", "Correctness",
     ["program 0 (request 0, K/V head 0: query heads 0..3) is wrong", "K/V block 0 of program 0", "h // GROUP"]),
    ("gqa_decode", "V loaded twice", "tl.dot(p.to(v_j.dtype), v_j)",
     "tl.dot(p.to(v_j.dtype), tl.load(V + kv, mask=keys[:, None] < n_keys, other=0.0))", "Bytes",
     ["program 0", "V 10 tiles (gpusim: 5)", "load K_j, V_j once"]),
    ("gqa_decode", "padding rows loaded", "q = tl.load(Q + q_rows, mask=in_group[:, None], other=0.0)",
     "q = tl.load(Q + q_rows, mask=(heads < H)[:, None], other=0.0)", "Bytes",
     ["program 0", "Q 256 B (gpusim: 128 B)", "padding rows must be masked"]),
]


@pytest.mark.parametrize("name, mistake, old, new, which, names", WRONG, ids=[w[1] for w in WRONG])
def test_a_wrong_kernel_is_rejected_by_the_check_that_sees_its_mistake(tmp_path, name, mistake, old, new, which,
                                                                       names):
    verdict = puzzles.check(name, mutant(tmp_path, name, old, new))
    assert verdict.status == "wrong" and verdict.message.startswith(f"{which}:"), verdict.message
    for text in names:
        assert text in verdict.message, (text, verdict.message)


def test_each_puzzle_rejects_mistakes_of_both_kinds():
    kinds = {name: {w[4] for w in WRONG if w[0] == name} for name in puzzles.PUZZLES}
    assert all(kinds[name] == {"Correctness", "Bytes"} for name in puzzles.PUZZLES), kinds


def test_a_kernel_that_raises_is_wrong_in_one_line(tmp_path):
    kernel = mutant(tmp_path, "online_softmax", "p_ij = tl.exp(s_ij - m_new[:, None])", "p_ij = tl.exp(s_ij - m_nw)")
    verdict = puzzles.check("online_softmax", kernel)
    assert verdict.status == "wrong" and verdict.message.startswith("the kernel raised")
    assert "\n" not in verdict.message and "m_nw" in verdict.message


def test_solution_prints_the_hidden_reference(capsys):
    puzzles.solution("gqa_decode")
    printed = capsys.readouterr().out
    assert printed.startswith("@triton.jit\ndef gqa_decode(") and printed == puzzles.solution_source("gqa_decode") + "\n"


def test_blanks_counts_the_ellipses_outside_the_docstring(tmp_path):
    assert puzzles.blanks(puzzle_solutions.online_softmax) == 0
    two = mutant(tmp_path, "online_softmax", "alpha = tl.exp(m_i - m_new)", "alpha = ...\n        beta = ...")
    assert puzzles.blanks(two) == 2

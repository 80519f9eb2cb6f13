"""Every ```python block in README.md and docs/*.md runs, so an example cannot go stale. A block whose
first line is `# needs a GPU` runs only where CUDA is (the GPU suite); every other block runs here."""
import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
GPU_MARK = "# needs a GPU"
INTERPRETER_ONLY = 'os.environ["TRITON_INTERPRET"] = "1"'  # a block that runs the kernels interpreted on any machine


def blocks():
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, match in enumerate(FENCE.finditer(path.read_text())):
            found.append(pytest.param(match.group(1), id=f"{path.relative_to(ROOT)}#{i}"))
    return found


def test_the_docs_have_examples():
    assert len(blocks()) >= 4


@pytest.mark.parametrize("code", blocks())
def test_example_runs(code):
    """Each example runs; a bare expression whose comment says `# True` (`moved == ...by_tensor  # True`) is
    asserted, so that the comment cannot go stale either."""
    skip_unless_runnable(code)
    module = types.ModuleType("gpusim_doc_example")  # a real module: torch.compile looks its globals up by name
    sys.modules[module.__name__] = module
    exec(compile(asserting_true(code), "<doc example>", "exec"), module.__dict__)


def asserting_true(code):
    """The example's module, each expression statement commented `# True` (at any depth) made an assert."""
    lines = code.splitlines()

    class Asserting(ast.NodeTransformer):
        def visit_Expr(self, node):
            line = lines[node.end_lineno - 1]
            if not re.search(r"\s# True\b", line):
                return node
            return ast.copy_location(ast.Assert(test=node.value, msg=ast.Constant(line.strip())), node)
    return ast.fix_missing_locations(Asserting().visit(ast.parse(code)))


def test_an_example_commented_true_is_asserted():
    example = "x = 1\nx == 1  # True: one\nx == 2  # not claimed\nif x:\n    x == 1  # True\n"
    source = ast.unparse(asserting_true(example))
    assert source.count("assert") == 2 and "\nx == 2\n" in source
    with pytest.raises(AssertionError, match="x == 2  # True"):
        exec(compile(asserting_true("x = 1\nx == 2  # True\n"), "<t>", "exec"), {})


def skip_unless_runnable(code):
    """Skips the test where the example cannot run: on CPU, one that needs a GPU or the kernels' extra."""
    if code.startswith(GPU_MARK) and os.environ.get("TRITON_INTERPRET"):  # conftest: no CUDA GPU
        pytest.skip("the example needs a CUDA GPU: it runs in the GPU suite")
    if "gpusim_kernels" in code:
        for module in ("torch", "triton"):
            pytest.importorskip(module, reason="the example needs the `kernels` extra (Linux)")
    if INTERPRETER_ONLY in code and not os.environ.get("TRITON_INTERPRET"):
        pytest.skip("the example runs the kernels in Triton's interpreter on CPU; the GPU suite runs them compiled")


# Each `# needs a GPU` block's CPU twin: the block's text with these (old, new) replaced, so that it runs on CPU tensors
# at small shapes in Triton's interpreter; every old must be in the block (an example changed, its twin follows).
CPU_TWINS = {
    "docs/hopper.md#0": [('device="cuda"', 'device="cpu"'),
                         ("torch.randn(2, 8, 1024, 128,", "torch.randn(1, 2, 64, 64,")],
}


def gpu_blocks():
    return [pytest.param(*block.values, CPU_TWINS.get(block.id), id=block.id) for block in blocks()
            if block.values[0].startswith(GPU_MARK)]


def test_every_gpu_example_has_a_cpu_twin():
    assert sorted(block.id for block in gpu_blocks()) == sorted(CPU_TWINS)


@pytest.mark.skipif(not os.environ.get("TRITON_INTERPRET"), reason="the twin runs the kernels in Triton's interpreter")
@pytest.mark.parametrize("code, swaps", gpu_blocks())
def test_gpu_example_runs_on_cpu_tensors(code, swaps):
    """test_example_runs for a block that needs a GPU, rewritten by its CPU_TWINS entry."""
    assert swaps, "add the block's CPU twin to CPU_TWINS"
    for module in ("torch", "triton"):
        pytest.importorskip(module, reason="the example needs the `kernels` extra (Linux)")
    for old, new in swaps:
        assert old in code, old
        code = code.replace(old, new)
    assert '"cuda"' not in code  # nothing left on the GPU
    module = types.ModuleType("gpusim_doc_example")
    sys.modules[module.__name__] = module
    exec(compile(code, "<doc example, on CPU>", "exec"), module.__dict__)


def either_device_blocks():
    """The blocks written to run as they are on a GPU or a CPU: the kernels' examples that neither need a GPU nor set
    TRITON_INTERPRET whatever the machine."""
    return [block for block in blocks() if "gpusim_kernels" in block.values[0] and not block.values[0].startswith(
        GPU_MARK) and INTERPRETER_ONLY not in block.values[0]]


@pytest.mark.parametrize("code", either_device_blocks())
def test_an_example_for_either_device_runs_as_copied_on_a_cpu(code):
    """Copied into a file and run by a user with no TRITON_INTERPRET set (conftest sets it for the tests): on a machine
    without CUDA the block must choose Triton's interpreter itself, or its first kernel call refuses the CPU tensors."""
    torch = pytest.importorskip("torch", reason="the example needs the `kernels` extra (Linux)")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU: test_example_runs runs the block compiled")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def claims(code):
    """{line of a print call: [(index of an argument, the value its comment states, the comment's text of it)]}: each
    line of a print(...) call whose trailing comment begins with Python literals (up to a ':' after one, or a word)
    states the values of the arguments on that line, in order, as printed (a float to the comment's decimals; a dict
    ending in `...` the keys it lists)."""
    comments = {tok.start[0]: tok.string[1:].strip() for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                if tok.type == tokenize.COMMENT}
    found = {}
    for call in ast.walk(ast.parse(code)):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"):
            continue
        for line in sorted({arg.lineno for arg in call.args}):
            text = comments.get(max(a.end_lineno for a in call.args if a.lineno == line), "")  # the line's comment
            args = [i for i, a in enumerate(call.args) if a.lineno == line]
            for i, (value, claim) in zip(args, literals(text)):
                found.setdefault(call.lineno, []).append((i, value, claim))
    return found


def literals(text):
    """The Python literals a comment begins with, each the longest that parses, separated by spaces, up to a ':' after
    one or the first word that is none: [(value, its text)]."""
    out, pos = [], 0
    while pos < len(text) and (not out or text[pos] == " "):
        pos = len(text) - len(text[pos:].lstrip())
        ends = [end for end in range(len(text), pos, -1) if end == len(text) or text[end] in " :"]
        parsed = next(((parse(text[pos:end]), end) for end in ends if parse(text[pos:end]) is not None), None)
        if parsed is None:
            break
        out.append((parsed[0], text[pos:parsed[1]]))
        pos = parsed[1]
    return out


def parse(claim):
    """A literal's value, None where it is none; a dict ending in `, ...}` parses as the dict of the keys it lists."""
    try:
        return ast.literal_eval(claim.replace(", ...}", "}"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def same(value, printed, claim):
    if isinstance(value, float):
        decimals = len(claim.split(".")[1]) if "." in claim else 0
        return round(printed, decimals) == value
    if isinstance(value, dict) and claim.endswith(", ...}"):
        return {key: printed[key] for key in value if key in printed} == value
    return printed == value


@pytest.mark.parametrize("code", [c for c in blocks() if claims(c.values[0])])
def test_example_comments_state_what_it_prints(code):
    """A print's trailing comment that begins with a value (`# (64, 64): ...`, `# 128.2: ...`) is what the example
    prints there, so that a comment cannot go stale when the model changes what it returns."""
    skip_unless_runnable(code)
    printed = {}
    module = types.ModuleType("gpusim_doc_example")
    module.print = lambda *args, **kwargs: printed.setdefault(sys._getframe(1).f_lineno, args)
    sys.modules[module.__name__] = module
    exec(compile(code, "<doc example>", "exec"), module.__dict__)
    stale = [(line, claim, printed[line][i]) for line, found in claims(code).items() for i, value, claim in found
             if not same(value, printed[line][i], claim)]
    assert not stale, stale


PACKAGES = {"benchmarks": "benchmarks", "gpusim": "gpusim", "gpusim_kernels": "kernels", "gpusim_course": "course"}


def test_every_python_m_the_docs_name_runs_a_module_of_the_project():
    """Each `python -m MODULE` of the project's packages that README.md, docs/*.md and results/h200/README.md give
    names a module that runs as a script (a package's __main__.py, or a module with a __main__ block)."""
    missing = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "results" / "h200" / "README.md"]:
        for name in set(re.findall(r"python -m ([A-Za-z_][\w.]*\w)", path.read_text())):
            top, *rest = name.split(".")
            if top not in PACKAGES or any(part.isupper() for part in rest):  # benchmarks.NAME: a placeholder
                continue
            base = ROOT / PACKAGES[top] / Path(*rest) if rest else ROOT / PACKAGES[top]
            script = base.with_suffix(".py") if rest and base.with_suffix(".py").exists() else base / "__main__.py"
            if not script.exists() or (script.name != "__main__.py" and "__main__" not in script.read_text()):
                missing.append((path.relative_to(ROOT).as_posix(), name))
    assert not missing, missing


def test_the_docs_run_the_projects_modules_with_python_m_not_by_path():
    """`python benchmarks/flash1_steps.py`, as docs/perf.md gave it, fails: the script imports `benchmarks`, which
    a path run does not put on sys.path. Every module of the project is given as `python -m` (or with PYTHONPATH
    set before it, as results/h200/README.md's record of a script since replaced)."""
    by_path = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "results" / "h200" / "README.md"]:
        text = " ".join(path.read_text().split())  # a command broken over two lines of prose
        by_path += [(path.name, m.group(0)) for m in re.finditer(
            r"(?<!PYTHONPATH=\. )python3? (?:benchmarks|gpusim|kernels|course)/[\w/]+\.py", text)]
    assert not by_path, by_path


def test_every_h200_session_job_the_docs_name_is_one_it_runs():
    """Each job of `h200_session.sh JOB` or `h200_session.sh "JOB JOB ..."` that a doc names is a case of the script."""
    script = (ROOT / "benchmarks" / "h200_session.sh").read_text()
    jobs = set(re.findall(r"^    ([a-z0-9_]+)\) ", script, flags=re.M))
    named = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "results" / "h200" / "README.md"]:
        for quoted, bare in re.findall(r'h200_session\.sh\s+(?:"([a-z0-9_ ,]+)"|([a-z0-9_]+))', path.read_text()):
            named |= set(re.split(r"[ ,]+", quoted or bare))
    assert named and named <= jobs, named - jobs


def test_perf_md_quotes_host_jsons_span_of_a_calls_time():
    rows = json.loads((ROOT / "results" / "h200" / "host.json").read_text())["rows"]
    us = [r["us"] for r in rows if r.get("us")]
    assert f"against {min(us):.0f}–{max(us):.0f} µs a call in `host.json`" in " ".join(
        (ROOT / "docs" / "perf.md").read_text().split())


README = ROOT / "README.md"


def test_readme_says_which_notebook_to_open_first():
    """`make course` opens JupyterLab on notebooks/; the README names the notebook to start with, the first one."""
    first = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))[0]
    assert f"start with\n`{first}`" in README.read_text()


def test_readme_counts_the_browser_tests_as_they_are():
    """The README said "The one real-browser test" long after tests/test_browser.py had several."""
    tests = re.findall(r"^def test_", (ROOT / "tests" / "test_browser.py").read_text(), flags=re.M)
    noun = "tests" if len(tests) > 1 else "test"
    assert f"real-browser {noun} (`tests/test_browser.py`)" in README.read_text()


def test_readme_says_what_sdpa_is_before_using_the_name():
    text = README.read_text()
    assert text.index("SDPA") == text.index("SDPA is PyTorch's `torch.nn.functional.scaled_dot_product_attention`")


def test_readme_layout_names_every_module_of_gpusim_and_every_one_call_gpu_run():
    layout = README.read_text().split("## Layout", 1)[1]
    words = set(re.findall(r"[\w.]+", layout))
    modules = {p.stem for p in (ROOT / "gpusim").glob("*.py") if not p.stem.startswith("__")}
    scripts = {p.name for p in (ROOT / "benchmarks").glob("run_*.sh")} | {"h200_session.sh"}
    assert modules | scripts <= words, (modules | scripts) - words


@pytest.mark.parametrize("algo", ["naive", "flash1", "flash2", "hopper"])
def test_every_forward_algorithm_takes_what_the_readme_says(algo):
    """"All take batch, heads, grouped-query attention, causal masking, any length, seq_kv != seq and four dtypes"
    (hopper three, its kernel's): one length per call (N not a multiple of the tile), not a ragged batch of lengths,
    which only split_kv takes."""
    import gpusim
    text = " ".join(README.read_text().split())
    assert ("All take batch, heads, grouped-query attention (`kv_heads`), causal masking (torch's `is_causal`, "
            "top-left aligned; fully masked tiles are skipped), any length (N need not be a multiple of the tile: "
            "the last tile is masked), `seq_kv != seq`, and dtypes `fp32`, `fp16`, `bf16`, `fp8` (`hopper` all but "
            "`fp32`, as its kernel: wgmma takes 16- and 8-bit inputs).") in text
    for dtype in ("fp32", "fp16", "bf16", "fp8")[algo == "hopper":]:
        r = gpusim.simulate(algo, batch=2, heads=4, kv_heads=2, seq=1000, seq_kv=777, head_dim=64, causal=True,
                            dtype=dtype, gpu="H100-SXM")
        assert r.config.seq % r.config.block_q and r.hbm_read_bytes > 0
    with pytest.raises(ValueError, match="must be a positive integer"):
        gpusim.simulate(algo, seq=[100, 300], head_dim=64, gpu="H100-SXM")
    if algo == "hopper":
        with pytest.raises(ValueError, match="dtype='fp32': the hopper kernel runs fp16, bf16, fp8"):
            gpusim.simulate(algo, seq=1000, head_dim=64, dtype="fp32", gpu="H100-SXM")


def test_readme_speaks_of_dates_and_targets_not_of_sessions_or_bare_issue_numbers():
    """The README's hand-written text said "the forty-sixth session's last fresh clone" and "issue 23's 4 minutes",
    which a new user cannot place: it gives dates and says what each target is. The generated headline (perf_report)
    may name "issue N's target"; the hand-written text then says what that target is."""
    text = README.read_text()
    generated = "".join(m.group(0) for m in re.finditer(r"<!-- (\w+):begin -->.*?<!-- \1:end -->", text, re.S))
    hand = " ".join(re.sub(r"<!-- (\w+):begin -->.*?<!-- \1:end -->", "", text, flags=re.S).split())
    ordinal = r"\b(?:[a-z]+-)?(?:first|second|third|[a-z]+th)\b"
    assert not re.findall(rf"{ordinal}(?:'s)? sessions?\b|\bsessions\b|{ordinal} to {ordinal}|\b[a-z]+-[a-z]+th's",
                          hand, flags=re.I)
    assert not re.findall(rf"{ordinal}(?:'s)? sessions?\b", generated, flags=re.I)  # the generated lines too
    named = set(re.findall(r"\bissue (\d+)", generated, flags=re.I))
    assert set(re.findall(r"\bissue (\d+)", hand, flags=re.I)) <= named
    for n in named:
        assert f"\"issue {n}'s target\" is the project's" in hand
    assert "The project's target for it is 4 minutes of pytest" in hand


def test_readme_says_exactly_how_split_kv_takes_ragged_lengths_and_a_batch():
    """The README said a ragged `seq_kv`'s count "is the batch unless `batch` is given", as if the two could differ:
    the batch is the number of lengths, and a `batch` given beside them must equal it (one length: every request)."""
    import gpusim
    text = " ".join(README.read_text().split())
    assert ("`seq_kv` is one cache length for every request, or a ragged batch of one length per request: their count "
            "is the batch, and a `batch` given beside them must equal it") in text
    shape = dict(heads=32, kv_heads=8, head_dim=128, gpu="H200")
    assert gpusim.simulate("split_kv", seq_kv=[1000, 7000, 4096], **shape).config.batch == 3
    assert gpusim.simulate("split_kv", seq_kv=[1000, 7000, 4096], batch=3, **shape).config.batch == 3
    assert gpusim.simulate("split_kv", seq_kv=4096, batch=3, **shape).config.seq_kv == (4096,) * 3
    for batch in (2, 4):
        with pytest.raises(ValueError, match=f"seq_kv has 3 cache lengths but batch={batch}"):
            gpusim.simulate("split_kv", seq_kv=[1000, 7000, 4096], batch=batch, **shape)


NUMBER_WORDS = dict(enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                              "fifteen sixteen".split()))


def test_readme_layout_lists_the_course_subpackages_with_their_notebooks():
    """The Layout said course/ has "one subpackage per chapter": it has fewer subpackages than notebooks (tiling
    serves notebooks 4 and 5, practice 6 and 7). Each subpackage is named with the notebooks its docstring opens with."""
    layout = " ".join(README.read_text().split("## Layout", 1)[1].split())
    packages = sorted(p.parent for p in (ROOT / "course").glob("*/__init__.py"))
    notebooks = list((ROOT / "notebooks").glob("*.ipynb"))
    assert (f"in {NUMBER_WORDS[len(packages)]} subpackages for the {NUMBER_WORDS[len(notebooks)]} notebooks:"
            in layout), layout
    assert "one subpackage per chapter" not in layout
    served = set()
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        first = re.match(r"Notebooks? (\d+)(?: \([^)]*\))?(?: and (\d+))?", doc)
        assert first, (package.name, doc[:60])
        numbers = [n for n in first.groups() if n]
        served |= {int(n) for n in numbers}
        assert re.search(rf"\b{package.name} \({', '.join(numbers)}[,)]", layout), package.name
    assert served == set(range(1, len(notebooks) + 1))


def test_readme_says_the_bench_plot_command_regenerates_the_committed_charts(tmp_path):
    """`python -m gpusim_course.provenance.plots bench results/h200/bench.json` writes its charts beside the JSON,
    over the committed results/h200/bench_*.png: the README says so where it gives the command."""
    import shutil
    from gpusim_course.provenance import plots
    text = README.read_text()
    command = "python -m gpusim_course.provenance.plots bench results/h200/bench.json"
    after = " ".join(text[text.index(command):].split("```", 2)[1].split())
    assert after.startswith("The last command writes its charts beside the JSON: given `results/h200/bench.json`, "
                            "it regenerates the committed figures `results/h200/bench_*.png` in place")
    shutil.copy(ROOT / "results" / "h200" / "bench.json", tmp_path / "bench.json")
    written = {p.name for p in plots.save_bench_figures(tmp_path / "bench.json")}  # a copy elsewhere: drawn there
    assert written == {p.name for p in (tmp_path).glob("*.png")}
    assert written == {p.name for p in (ROOT / "results" / "h200").glob("bench_*.png")}


def test_the_loops_usual_speed_is_the_median_of_its_timings_in_docs_testing_md():
    """docs/testing.md and the README called 0.5 s the loop's usual speed, where the table's timings (207 of them by
    the sixty-fourth session) had a median of 0.70 s and none at or under 0.55 s."""
    text = (ROOT / "docs" / "testing.md").read_text()
    cells = re.findall(r"^\| \d+(?:st|nd|rd|th) \|[^|]*\|([^|]*)\|", text, flags=re.M)
    timings = sorted(float(x) for cell in cells for x in re.findall(r"\d+\.\d+", cell))
    usual = f"{timings[len(timings) // 2]:.1f}"
    assert len(timings) > 200 and f"Python additions, about {usual} s at its usual speed (the median" in " ".join(
        text.split())
    assert f"about {usual} s as usual)" in " ".join((ROOT / "README.md").read_text().split())


def test_readme_counts_the_fresh_clones_runs_as_docs_testing_md_lists_them():
    """The README's "met in 16 of the 22 fresh clones' runs just before the N most recent, and in none of those N"
    said 59 where docs/testing.md's rows held 60: both counts now come from the table (the most recent sessions'
    runs while none met 4 minutes, then the sessions before them while some did)."""
    rows = re.findall(r"^\| \d+(?:st|nd|rd|th) \|.*\| (\d+) of (\d+) \|$", (ROOT / "docs" / "testing.md").read_text(),
                      flags=re.M)
    rows = [(int(met), int(runs)) for met, runs in rows]
    recent = next(i for i, (met, _) in enumerate(rows) if met)
    before = next(i for i in range(recent, len(rows)) if not rows[i][0])
    streak = sum(runs for _, runs in rows[:recent])
    met, runs = (sum(x) for x in zip(*rows[recent:before]))
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert (f"met in {met} of the {runs} fresh clones' runs just before the {streak} most recent, and in none of "
            f"those {streak}") in readme

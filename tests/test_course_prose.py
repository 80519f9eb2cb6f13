"""One fact, one home (issue 26): every number the notebooks' own prose states about gpusim or the H200 is
registered in gpusim_course.prose with the function that computes it, and the sentence says what that function
returns now; a number the prose adds without registering it fails here, naming it."""
import re
from pathlib import Path

import pytest

from gpusim_course import prose

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_in_the_prose_is_registered(path):
    missing = prose.uncovered(path)
    assert not missing, ("numbers in the prose without a computation or a source in gpusim_course.prose (print "
                         "them from a cell, or register them): " + "; ".join(f"{n!r} in …{c}…" for n, c in missing))


def _notebook(number):
    """The notebook of that number; a phrase of a notebook this tree does not have yet is skipped."""
    path = next((p for p in NOTEBOOKS if p.name.startswith(number)), None)
    if path is None:
        pytest.skip(f"no notebook {number} in this tree")
    return path


# make test's processes: tests/test_results.py's, so that the tests scoring the held-out sets price them once
@pytest.mark.xdist_group("perf_report")
@pytest.mark.parametrize("fact", prose.FACTS, ids=lambda f: f"{f.notebook}: {f.text}")
def test_each_fact_is_what_its_function_computes_and_is_in_its_notebook(fact):
    assert fact.compute() == fact.text
    path = _notebook(fact.notebook)
    assert any(fact.text in text for text in prose.markdown(path)), f"{fact.text!r} is no longer in {path.name}"


@pytest.mark.xdist_group("perf_report")
def test_notebook12s_blind_range_is_what_the_blind_scorings_compute():
    """Notebook 12 called the pooled, in-sample row "the one to trust"; it now quotes the once-only blind scorings,
    which benchmarks/report_heldout.py computes (the course does not import benchmarks/: the quote is checked here)."""
    from benchmarks import report_heldout
    assert prose.BLIND_SCORINGS == report_heldout.blind_range()
    text = " ".join(prose.markdown(_notebook("12")))
    assert prose.BLIND_SCORINGS in text and "The pooled row is the one to trust" not in text
    assert "its rows and its pooled row are in-sample" in text


@pytest.mark.parametrize("quote", prose.QUOTES, ids=lambda q: f"{q.notebook}: {q.text}")
def test_each_quote_says_whose_number_it_is_and_is_in_its_notebook(quote):
    assert quote.why and quote.compute is None
    path = _notebook(quote.notebook)
    assert any(quote.text in text for text in prose.markdown(path))


def test_the_scan_skips_quotations_code_and_formulas_and_finds_the_rest():
    text = 'The post says *"wastes 90% of its time"*; `x = 5 GB`; $N = 8 GB$.\n> 3 TB/s quoted\nBut 7 ms here.'
    assert [n for _, _, n in prose.scan(text)] == ["7 ms"]
    assert re.fullmatch(r"\d+ on an H200", [n for _, _, n in prose.scan("SMs: 132 on an H200")][0])
    ranges = "once per configuration, N = 1,024 to 32,768, d = 64; flash1 to 16,384; run up to N = 32,768: x"
    assert [n for _, _, n in prose.scan(ranges)] == ["N = 1,024 to 32,768", "to 16,384", "up to N = 32,768"]


LLAMA_3_8B = re.compile(r"Llama-3-8B(?!'s attention shape|'s shape|-shaped)")
PAST_8K = re.compile(r"(?<![\w.])(?:(\d+)K|(\d+)M|(\d{1,3}(?:,\d{3})+|\d{5,}) tokens)\b")


def _past_8k(text):
    """The token counts past 8,192 a cell names: 16K, 128K, 1M, 131,072 tokens."""
    found = []
    for m in PAST_8K.finditer(text):
        k, mega, n = m.groups()
        if (k and int(k) > 8) or mega or (n and int(n.replace(",", "")) > 8192):
            found.append(m.group())
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_llama_3_8b_is_named_at_its_own_context_or_for_its_shape(path):
    """Llama-3-8B's context stops at 8,192 tokens (its config's max_position_embeddings); Llama-3.1-8B, the same
    layers and heads, takes 131,072. A cell whose prose goes past 8K names Llama-3-8B only for its attention shape
    (notebook 8 said "Llama-3-8B's attention" of decode.json's 128K rows, notebook 13 "Llama-3-8B-like" at 128K to
    1M tokens)."""
    for text in prose.markdown(path):
        if LLAMA_3_8B.search(text):
            assert not _past_8k(text), (LLAMA_3_8B.search(text).group(), _past_8k(text), text[:200])


def test_the_context_check_finds_lengths_past_8k_and_only_those():
    assert _past_8k("from 1K to 128K tokens, 8K, 8,192 tokens, 32,768 tokens, 1M tokens") == \
        ["128K", "32,768 tokens", "1M"]
    assert not LLAMA_3_8B.search("Llama-3-8B's attention shape; Llama-3-8B's shape; Llama-3-8B-shaped")
    assert LLAMA_3_8B.search("Llama-3-8B's attention, pages of 16")

"""gpusim_course.scorecard (verdicts and claims): the verdict rules on numbers worked out by hand, and the claims of
the two source documents evaluated from gpusim and the results files, never typed in: change a results
file and the measurement and the verdict follow."""
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gpusim_course.scorecard import claims, verdicts
from gpusim_course.softmax import bits
from gpusim_course.scorecard.verdicts import Obs

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "h200"


@pytest.fixture(scope="module")
def rows():
    return claims.rows(RESULTS)


def test_interval_verdicts_follow_the_share_of_observations_inside():
    inside, above = Obs(3.0, "N=1", "d=64"), Obs(9.0, "N=2", "d=128")
    assert verdicts.interval([inside, Obs(2.0, "N=2", "d=64")], 2, 4, "2-4x").verdict == "holds"  # ends included
    partly = verdicts.interval([inside, above], 2, 4, "2-4x")
    assert partly.verdict == "holds under conditions" and "for d=64 (1 of 2 cases)" in partly.reason
    wrong = verdicts.interval([above], 2, 4, "2-4x")
    assert wrong.verdict == "wrong" and wrong.reason == "measured 9.0x: every one above 2-4x."
    assert verdicts.about(2) == (1.6, 2.5)


def test_each_and_slope():
    assert verdicts.each([("a", True), ("b", True)]).verdict == "holds"
    assert verdicts.each([("a", True), ("b", False)]) == verdicts.Judged("holds under conditions", "a; but b.")
    assert verdicts.each([("b", False)]).verdict == "wrong"
    assert verdicts.slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)  # 3 N^2


def test_anchor_is_jupyterlabs_heading_id():
    assert verdicts.anchor("Is it bit-for-bit identical?") == "Is-it-bit-for-bit-identical?"


def test_the_scorecard_has_every_claim_the_issue_names(rows):
    assert len(rows) >= 15
    text = " | ".join(r.claim for r in rows)
    for needle in ("2-4x faster", "5-20x less memory", "~2x faster than FlashAttention-1", "~70% matmul",
                   "O(n^2) to O(n)", "wastes 90%", "SRAM_SIZE // (3 * d)", "O(N²d / SRAM_SIZE)", "BERT (seq 512)",
                   "~20 MB, ~19 TB/s", "bit-for-bit identical", "fp16/bf16", "mask patterns", "warps",
                   "~1.5x faster than FA-2", "~2x faster than FA-2", "75%", "The longer the sequence",
                   "70% of that memory", "prefill"):
        assert needle in text, needle
    assert all(r.judged.verdict in verdicts.VERDICTS and r.judged.reason.endswith(".") for r in rows)
    assert set(verdicts.VERDICTS[:3]) <= {r.judged.verdict for r in rows}  # the rules discriminate


def test_every_link_names_a_notebook_section(rows):
    """Links into notebooks of this tree must name one of their headings; 08 and 09 are written beside this one."""
    for r in rows:
        path = ROOT / "notebooks" / r.notebook
        if not path.exists():
            assert r.notebook in ("08_inference.ipynb", "09_training.ipynb"), r.notebook
            continue
        cells = json.loads(path.read_text())["cells"]  # (no nbformat: tests/test_notebooks.py's read says why)
        headings = {line.lstrip("#").strip() for c in cells if c["cell_type"] == "markdown"
                    for line in "".join(c["source"]).splitlines() if line.startswith("#")}
        assert not r.section or r.section in headings, (r.notebook, r.section)


def test_measurements_are_read_from_the_results_files(tmp_path, rows):
    """Divide SDPA flash's times by 8 in a copy of bench.json: the measured speedups grow 8x and the verdict
    moves; gpusim's prediction does not."""
    copy = tmp_path / "h200"
    shutil.copytree(RESULTS, copy)
    bench = json.loads((copy / "bench.json").read_text())
    for r in bench["rows"]:
        if r["provider"] == "sdpa_flash" and r.get("ms"):
            r["ms"] /= 8
    (copy / "bench.json").write_text(json.dumps(bench))
    before, after = claims.speedup(RESULTS), claims.speedup(copy)
    low = [float(x) for x in re.findall(r"([\d.]+)x", before.measured)]
    high = [float(x) for x in re.findall(r"([\d.]+)x", after.measured)]
    assert high == pytest.approx([8 * x for x in low], rel=0.03)  # the text rounds to 0.1x: 2.3x is 2.25 to 2.35
    assert after.judged.verdict == "wrong" and before.predicted == after.predicted  # gpusim's side is unchanged


def test_a_missing_results_file_says_where_it_should_be(tmp_path):
    with pytest.raises(FileNotFoundError, match="bench.json is not there"):
        claims.speedup(tmp_path)


def test_verdicts_hand_checked_against_the_numbers(rows):
    by_claim = {r.claim: r for r in rows}
    s = by_claim["At N=4096, d=128: S = 4096×4096 = 64 MB in FP16."]
    assert "33,554,432 B" in s.predicted and s.judged.verdict == "wrong"  # 4096² x 2 B = 32 MiB: half the claim
    bits = by_claim["The final result is bit-for-bit identical to standard attention."]
    assert bits.judged.verdict == "wrong"
    parallel = next(r for r in rows if r.claim.startswith("FlashAttention-1 parallelized"))
    assert parallel.judged.verdict == "holds" and "64 thread blocks = batch x heads" in parallel.judged.reason


def test_table_and_html(rows):
    table = verdicts.rows_table(rows)
    assert len(table) == len(rows) and set(table[0]) == {"claim", "source", "gpusim predicts", "H200 measured",
                                                         "verdict", "reason", "rule", "experiment"}
    html = verdicts.html(rows)._repr_html_()
    assert html.count("<tr>") == len(rows) + 1 and "href='05_flash1_vs_flash2.ipynb#" in html
    assert sum(verdicts.counts(rows).values()) == len(rows)


def test_the_gpu_probe_decides_the_sdpa_rows_once_it_exists(tmp_path):
    """A results folder with sdpa_backends.json (rows as benchmarks/sdpa_backends.py writes them on a GPU):
    the conditions row is judged on what PyTorch picks, the mask row on what runs when forced."""
    copy = tmp_path / "h200"
    shutil.copytree(RESULTS, copy)

    def row(dtype, head_dim, mask, flash, picked="FLASH_ATTENTION"):
        ran = {"ran": flash, "error": "" if flash else "No available kernel", "reasons": [] if flash else ["why"]}
        other = {"ran": True, "error": "", "reasons": []}
        return dict(dtype=dtype, head_dim=head_dim, mask=mask, device="cuda", sm="90", picked=picked,
                    FLASH_ATTENTION=ran, EFFICIENT_ATTENTION=other, CUDNN_ATTENTION=other, MATH=other)

    (copy / "sdpa_pick.json").unlink(missing_ok=True)  # the unforced pick's own file would decide instead
    rows = [row("fp16", 64, "none", True), row("fp32", 64, "none", False), row("fp16", 64, "boolean", False)]
    (copy / "sdpa_backends.json").write_text(json.dumps({"environment": {"gpu": "test"}, "rows": rows}))
    assert claims.sdpa_conditions(copy).judged.verdict == "holds"
    assert claims.mask_limits(copy).judged.verdict == "holds"
    rows.append(row("fp16", 128, "none", True, "CUDNN_ATTENTION"))  # flash runs, but PyTorch picks cuDNN
    (copy / "sdpa_backends.json").write_text(json.dumps({"environment": {"gpu": "test"}, "rows": rows}))
    judged = claims.sdpa_conditions(copy).judged
    assert judged.verdict == "holds under conditions" and "cudnn picked for 1 of 2 inputs" in judged.reason
    assert judged.reason.startswith("not on Hopper") and "check_prefer_cudnn_attention" in judged.reason
    rows.append(dict(row("fp16", 128, "none", True, "CUDNN_ATTENTION"), sm="80"))  # cuDNN first on Ampere: no rule
    (copy / "sdpa_backends.json").write_text(json.dumps({"environment": {"gpu": "test"}, "rows": rows}))
    assert claims.sdpa_conditions(copy).judged.verdict == "wrong"
    rows[-1] = row("bf16", 64, "none", True, "EFFICIENT_ATTENTION")  # another backend, where flash could run
    (copy / "sdpa_backends.json").write_text(json.dumps({"environment": {"gpu": "test"}, "rows": rows}))
    judged = claims.sdpa_conditions(copy).judged
    assert judged.verdict == "wrong" and judged.reason.startswith("wrong as written") and "efficient" in judged.reason


def test_a_row_shown_anywhere_says_what_was_not_measured():
    """verdicts.html and rows_table note it for rows taken one at a time (notebooks 2 to 8), as claims.rows does."""
    row = verdicts.Row("c", "s", "p", "", verdicts.Judged("holds", "x."), "r", "n.ipynb", "")
    assert "Not measured here: gpusim&#x27;s model decides." in verdicts.html([row])._repr_html_()
    measured = verdicts.Row("c", "s", "p", "m", verdicts.Judged("holds", "x."), "r", "n.ipynb", "")
    assert verdicts.rows_table([measured])[0]["reason"].endswith("other GPUs not measured here.")
    assert verdicts.with_evidence(verdicts.with_evidence(measured)) == verdicts.with_evidence(measured)


def test_out_of_memory_names_the_mask_and_what_ran():
    """The 128K row said PyTorch's standard attention ran out of memory at N = 32,768; only its causal launches did
    (the non-causal ones ran) and SDPA's math backend ran out without a mask."""
    def row(provider, causal, dtype, peak=None):
        timed = {"ms": 1.0, "peak_bytes": peak} if peak else {"error": "OOM"}
        return dict(provider=provider, seq=32768, batch=1, heads=32, head_dim=64, causal=causal, dtype=dtype) | timed
    rows = [row("torch_naive", False, "fp16", 3 * 2**30), row("torch_naive", False, "bf16", 2**30),
            row("torch_naive", True, "fp16"), row("sdpa_math", False, "fp16"),
            {**row("torch_naive", True, "fp16"), "seq": 65536}]
    assert claims.out_of_memory(rows) == (
        "on the H200 at N=32,768 (1 x 32 heads, d=64): PyTorch's standard attention ran without a mask (fp16, bf16), "
        "peaking at 3.0 GiB; PyTorch's standard attention ran out of memory with the causal mask (fp16); SDPA's math "
        "backend ran out of memory without a mask (fp16)")
    assert claims.out_of_memory(rows[:2]) == ""
    assert claims.long_context(RESULTS).measured == claims.out_of_memory(
        json.loads((RESULTS / "bench.json").read_text())["rows"])


def test_rows_table_keeps_the_columns_asked_for(rows):
    """Notebook 11 picked the claim, verdict and rule columns in a cell's dict comprehension."""
    full = verdicts.rows_table(rows)
    picked = verdicts.rows_table(rows, columns=("claim", "verdict", "rule"))
    assert picked == [{"claim": r["claim"], "verdict": r["verdict"], "rule": r["rule"]} for r in full]
    assert list(picked[0]) == ["claim", "verdict", "rule"]


def test_rules_line_states_the_tolerances_the_verdicts_use():
    lo, hi = verdicts.about(2)
    assert verdicts.rules_line(2) == (f"~x: within a factor of {verdicts.ABOUT} either way, e.g. ~2x holds from "
                                      f"{lo:.1f}x to {hi:.1f}x; O(n^k): a fitted exponent within {verdicts.SLOPE} of k")


def _notebook_text(name):
    return " ".join("".join(c["source"]) for c in json.loads((ROOT / "notebooks" / name).read_text())["cells"]
                    if c["cell_type"] == "markdown")


def test_notebook11s_reading_of_the_directions_is_what_the_rows_compute(rows):
    """Notebook 11 said the direction is right "almost everywhere", FlashAttention "helps prefill more than decode"
    among it, on a prefill/decode row judged against sdpa_flash rather than the fastest decode kernel. What it says
    now: faster, less memory and FlashAttention-2 over -1 at every length measured, memory linear; prefill against
    decode only up to some length, with gpusim on the other side of the line somewhere."""
    for measured, modelled, field in ((("torch_naive", "sdpa_flash"), ("naive", "flash2"), "ms"),
                                      (("torch_naive", "sdpa_flash"), ("naive", "flash2"), "peak_bytes"),
                                      (("flash1", "flash2"), ("flash1", "flash2"), "ms")):
        obs, _ = claims._ratios(RESULTS, measured, modelled, field)
        assert obs and min(o.value for o in obs) > 1, (measured, field)
    by_claim = {r.claim: r for r in rows}
    assert by_claim["Reduces memory complexity from O(n^2) to O(n)."].judged.verdict == "holds"
    prefill = next(r for r in rows if r.claim.startswith("The prefill phase"))
    assert prefill.judged.verdict == "holds under conditions" and "disagrees" in prefill.judged.reason
    text = _notebook_text("11_claims_scorecard.ipynb")
    assert "almost everywhere" not in text and "helps prefill more than decode" not in text
    assert ("FlashAttention is faster and needs less memory at every length measured here, and its memory grows "
            "linearly; FlashAttention-2 is faster than FlashAttention-1 at every length measured") in text
    assert "prefill gains more than decode only up to some length" in text


def test_the_128k_claim_is_judged_for_the_layer_it_names():
    """"64 GB for one attention layer: more than the GPU's total HBM" was judged on one head (64.1 GiB: "less" than
    an A100-80GB, H100 or H200), while its own measured column showed a 32-head layer out of memory on the H200 at
    N = 32,768. A layer's heads (the FlashAttention-2 benchmark's) outgrow every preset; the one-head condition is
    stated in the reason."""
    import gpusim
    row = claims.long_context(RESULTS)
    batch, heads = gpusim.fa2_shape(131072, 128)
    layer = gpusim.simulate("naive", seq=131072, head_dim=128, batch=batch, heads=heads, dtype="fp16").hbm_peak_bytes
    head = gpusim.simulate("naive", seq=131072, head_dim=128, dtype="fp16").hbm_peak_bytes
    assert heads > 1 and layer > max(g.hbm_bytes for g in gpusim.PRESETS.values())
    assert row.judged.verdict == "holds" and f"{layer / 2**30:,.1f} GiB" in row.predicted
    smaller = ", ".join(g.name for g in gpusim.PRESETS.values() if head > g.hbm_bytes)
    assert f"one head alone ({head / 2**30:.1f} GiB) would be more than the HBM of {smaller} only" in row.judged.reason
    assert "ran out of memory" in row.measured


def test_notebook11_promises_untested_claims_only_where_there_are_some(rows):
    """Notebook 11 headed a section "Wrong as written, and not testable here" and said some claims "cannot be
    tested", over a summary counting none (the whole-model claim is tested from end_to_end.json). Its prose names
    a verdict outside the rules only where some claim has it, and an empty list says none."""
    count = verdicts.counts(rows)
    cells = [c for c in json.loads((ROOT / "notebooks" / "11_claims_scorecard.ipynb").read_text())["cells"]
             if c["cell_type"] == "markdown" and not "".join(c["source"]).startswith("## The rules")]
    text = " ".join("".join(c["source"]) for c in cells)
    for verdict, n in count.items():
        assert n or verdict not in text, verdict
    assert ("cannot be tested" in text) == (count["not testable here"] > 0)
    assert count["wrong"] and "**Some statements are wrong as written**" in text
    empty = verdicts.verdict_list([r for r in rows if r.judged.verdict == "holds"], "wrong")._repr_html_()
    assert empty == "<p><b>wrong</b> (0): none.</p>"
    listed = verdicts.verdict_list(rows, "wrong")._repr_html_()
    assert listed.count("<li>") == count["wrong"] and "none" not in listed.split("<ul>")[0]


def test_the_bit_for_bit_rows_quote_notebook_3s_own_measurement(rows):
    """The scorecard's two rows on notebook 3's bit-for-bit section show the share that section measures (one
    sample, bits.ROWS x bits.ROW_LEN, which notebook 3 takes), not a smaller sample's."""
    fp32 = bits.bit_comparison(np.float32, bits.ROWS, bits.ROW_LEN)
    shown = {r.claim: r.predicted for r in rows}
    identical = shown["The final result is bit-for-bit identical to standard attention."]
    assert f"softmax, float32: {fp32['equal_fraction']:.1%} of elements bit-identical" in identical
    notebook = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "03_online_softmax.ipynb").read_text())
    setup = "".join(next(c["source"] for c in notebook["cells"] if "ROW_LEN" in "".join(c["source"])))
    assert "ROWS, ROW_LEN = bits.ROWS, bits.ROW_LEN" in setup


def test_the_bit_rows_say_their_verdict_was_judged_here_not_on_the_h200(rows):
    """Both are judged on gpusim's float32 runs (notebook 3); their H200 column holds the kernels' errors against
    float64, context only: the reason said "Measured on the lent H200 alone" when it was not."""
    table = [r for r in verdicts.rows_table(rows) if r["experiment"].startswith("03_online_softmax.ipynb")]
    assert len(table) == 2 and all(r["H200 measured"] != "not measured" for r in table)
    for r in table:
        assert "bits on a GPU not measured" in r["reason"] and "Measured on the lent H200" not in r["reason"]

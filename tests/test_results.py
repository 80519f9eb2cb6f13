"""The shipped GPU results: the charts redraw from the JSON on CPU, and the Nsight Compute parsing and
comparison work on a stored fixture of the real CSV."""
import contextlib
import functools
import json
import math
import re
import shutil
import statistics
import tarfile
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim import cost
from gpusim.passes.flash1 import Flash1
from gpusim.passes.flash2_backward import Flash2Backward
from gpusim_course.provenance import heldout
from gpusim_course.provenance.plots import _series, save_bench_figures

pytest.importorskip("triton", reason="the kernels package needs Triton, which publishes Linux wheels only")
from benchmarks import (  # noqa: E402
    agreement, golden, h200_constants, ncu, perf_report, report_gpus, report_heldout, report_history, report_kernels,
    report_launches, report_steps)

# The whole file in one test process (make test's --dist loadgroup, which starts the largest group first): its tests
# price the same states of the model, which benchmarks/agreement.py and the report modules (benchmarks/report_*.py)
# keep per process (split over two processes, the file took 398 s of CPU where one process took 278 s).
pytestmark = pytest.mark.xdist_group("perf_report")
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "h200"
FIXTURES = Path(__file__).parent / "fixtures"
TIME_NS, QK_READ_BYTES = 513_408, 1_072_855_296  # the first launch of the fixture, as ncu printed it
# The eleven held-out sets up to heldout_2036.json (runs 102 and 105 measured their rows again), and the ten
# of them measured before heldout_2036.json (what the sixteenth and seventeenth sessions' trials were scored on).
ELEVEN = [name for name in report_heldout.HELD_OUT if name == "heldout.json" or int(name[8:12]) <= 2036]
# The sixteen sets through run 111, what the twentieth session's prose pooled (run 112's two were scored after it).
SIXTEEN = [name for name in report_heldout.EIGHTEEN if name not in report_heldout.BLIND_TWO_WARP]
TEN_OLDER = [name for name in ELEVEN if name != "heldout_2036.json"]


def under(model):
    """A decorator: the test runs under `model` (a context manager of the model as it was: report_history's, or
    report_heldout.before_retimed), before the thirty-ninth session's naive launches (report_history.naive_before) and
    the fifty-first session's ragged decode wave (report_history.before_ragged) as every such model was."""
    def decorate(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            with report_history.naive_before(), report_history.before_ragged(), model():
                return test(*args, **kwargs)
        return run
    return decorate


# docs/perf.md's prose written before the nineteenth session's cost.full_issue, tested under the model as it was, as
# the tables of those sections are (perf_report.BEFORE_FULL_ISSUE); and written between it and the twenty-first
# session's (two warps per scheduler, 64 rows or more), likewise (perf_report.BEFORE_TWO_WARP_ISSUE), and between that and
# the twenty-second session's cost.lone_pipeline (perf_report.BEFORE_LONE_PIPELINE).
before_full_issue = under(report_history.line_issue)
before_two_warp_issue = under(report_history.one_warp_issue)
before_lone_pipeline = under(report_history.no_lone_pipeline)
before_list_schedule = under(report_history.no_list_schedule)  # the sections written before the 31st session's change
before_retimed = under(report_heldout.before_retimed)  # those written before run 135's training steps
before_dkdv_list = under(report_history.dkdv_by_waves)  # those written before the 33rd session's list-scheduled dK/dV
before_lone_setup = under(report_history.lone_by_port)  # those written before the 35th session's lone Hopper set-up
before_graph_launch = under(report_history.events_launch)  # and before its Hopper launch as a graph replays it
before_naive_launches = under(contextlib.nullcontext)  # and before the 39th session's naive launches


def held_out_file(name):
    """A held-out set's file as its run wrote it: before run 135 timed its training steps again (that run's logs hold
    it), or as results/h200/ holds it."""
    return report_heldout.files_before_retimed().get(name) or json.loads((RESULTS / name).read_text())


ROW_FIELDS = {"provider", "dtype", "head_dim", "causal", "seq", "batch", "heads"}


@pytest.mark.parametrize("document", ["docs/perf.md", "README.md"])
def test_generated_tables_are_what_the_current_code_computes(document):
    """Every generated table of docs/perf.md and the README, each computed under its section's model. In this file, so
    that the model states it prices, which the prose tests below recompute, are kept once in one test process
    (benchmarks/agreement.py keeps them per process)."""
    text = (ROOT / document).read_text()
    assert perf_report.render(text) == text, "run python -m benchmarks.perf_report --write and review the change"


def test_make_tests_processes_run_this_file_whole_in_one(request):
    """make test's --dist loadgroup hands this file to one process (its pytestmark group), so its model states are
    priced once: pytest-xdist marks the group in each test's node id. With pytest 9.2 it silently stopped doing so
    (pytest-xdist issue 1386), which pyproject.toml's test extra keeps out."""
    if not request.config.getoption("loadgroup", False):  # set in pytest-xdist's processes under loadgroup
        pytest.skip("not run by a pytest-xdist process under --dist loadgroup (make test runs it so)")
    assert request.node.nodeid.endswith("@perf_report"), request.node.nodeid


def test_bench_json_names_its_run_and_has_every_field():
    data = json.loads((RESULTS / "bench.json").read_text())
    assert {"gpu", "driver", "torch", "triton", "date", "command"} <= set(data["environment"])
    runs = data["environment"]["runs"]  # the merged file's command: each run's, in order
    assert data["environment"]["command"] == " ; ".join(r["command"] for r in runs)
    assert {r["provider"] for r in data["rows"]} >= {"naive", "flash1", "flash2", "hopper", "torch_naive", "sdpa_math",
                                                      "sdpa_flash", "sdpa_efficient", "sdpa_cudnn"}
    for row in data["rows"]:
        assert ROW_FIELDS <= set(row)
        assert "error" in row or {"ms", "tflops", "peak_bytes", "rel_err"} <= set(row)


@pytest.mark.parametrize("path", sorted([*RESULTS.glob("*.json"), *(RESULTS.parent / "h100").glob("*.json")]),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_results_file_names_its_gpu_date_and_command_and_the_readme_lists_it(path):
    """results/h200/'s files and the H100's in results/h100/, which results/h200/README.md lists too."""
    data = json.loads(path.read_text())
    environment = data.get("environment", data)  # ceilings.json (run 1) keeps them at the top level
    h100 = path.stem.endswith("_h100") or path.parent.name == "h100"  # an H100's run says so by name or folder
    gpu = "NVIDIA H100 80GB HBM3" if h100 else "NVIDIA H200"
    assert environment.get("gpu") == gpu and environment.get("date", "").startswith("2026-")
    assert environment.get("command") and environment.get("torch", "").startswith("2.11")
    assert f"`{'../h100/' if path.parent.name == 'h100' else ''}{path.name}`" in (RESULTS / "README.md").read_text()


def test_charts_redraw_from_the_json(tmp_path):
    shutil.copy(RESULTS / "bench.json", tmp_path / "bench.json")
    pngs = save_bench_figures(tmp_path / "bench.json")
    assert [p.name for p in pngs] == ["bench_speedup.png", "bench_tflops.png", "bench_memory.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_speedup_series_divides_by_the_naive_kernels_time():
    rows = [dict(provider=p, dtype="fp16", head_dim=64, causal=False, seq=1024, ms=ms, tflops=1.0, peak_bytes=1)
            for p, ms in (("naive", 6.0), ("flash2", 2.0))]
    assert _series(rows, 64, False, "speedup") == {"flash2": [(1024, 3.0)]}


def test_ncu_csv_parses_units_and_thousands_separators():
    launches = ncu.parse_csv((FIXTURES / "ncu_raw_head.csv").read_text())
    assert [ncu.kernel_of(launch["kernel_name"]) for launch in launches] == ["qk", "softmax", "pv", "flash1",
                                                                             "flash2", "hopper"]
    assert launches[0]["time_s"] == pytest.approx(TIME_NS * 1e-9, rel=1e-12)  # "ns" with separators in the CSV
    assert launches[0]["l2_to_sm_bytes"] == QK_READ_BYTES


def test_ncu_comparison_on_the_fixture():
    launches = ncu.parse_csv((FIXTURES / "ncu_raw_head.csv").read_text())
    manifest = json.loads((FIXTURES / "ncu_manifest_head.json").read_text())["launches"]
    rows = ncu.compare(launches, manifest)
    assert len(rows) == 6 * 5
    flash2 = {r["quantity"]: r for r in rows if r["kernel"] == "flash2"}
    entry = manifest[2]
    r = gpusim.simulate("flash2", **{k: entry[k] for k in ("seq", "head_dim", "causal", "dtype", "batch", "heads",
                                                          "block_q", "block_kv")}, gpu=ncu.PRESET)
    assert flash2["l2_to_sm_bytes"]["simulated"] == r.hbm_read_bytes == flash2["l2_to_sm_bytes"]["measured"]
    hopper = {r["quantity"]: r for r in rows if r["kernel"] == "hopper"}
    assert hopper["l2_to_sm_bytes"]["rel_err"] == 0  # TMA loads, read from their own counter
    assert "| flash2 | l2_to_sm_bytes | 2% | 1 | 100% | 0.0% |" in ncu.format_summary(rows)


def test_ncu_comparison_refuses_a_manifest_that_does_not_match():
    launches = ncu.parse_csv((FIXTURES / "ncu_raw_head.csv").read_text())
    manifest = json.loads((FIXTURES / "ncu_manifest_head.json").read_text())["launches"]
    with pytest.raises(ValueError, match="lists 3 launches but ncu profiled 6"):
        ncu.compare(launches, manifest[1:])
    with pytest.raises(ValueError, match="'flash1_kernel' is not the expected flash2 kernel"):
        ncu.compare(launches, [manifest[0], manifest[2], manifest[1], manifest[3]])


def test_ncu_compares_the_spill_entry_with_local_memorys_sectors():
    entry = {"seq": 1024, "head_dim": 64, "causal": True, "dtype": "fp16", "batch": 16, "heads": 32,
             "algo": "flash1", "block_q": 64, "block_kv": 256, "kernels": ["flash1"]}
    sim = ncu.simulated_launches("flash1", {k: v for k, v in entry.items() if k not in ("algo", "kernels")})["flash1"]
    launch = {"kernel_name": "flash1_kernel", "l2_to_sm_bytes": sim["l2_to_sm_bytes"],
              "sm_to_l2_bytes": sim["sm_to_l2_bytes"], "dram_read_bytes": 1.0, "dram_write_bytes": 1.0,
              "time_s": 1e-3, "spill_l2_to_sm_bytes": sim["spill_l2_to_sm_bytes"], "spill_sm_to_l2_bytes": None}
    rows = {r["quantity"]: r for r in ncu.compare([launch], [entry])}
    assert sim["spill_l2_to_sm_bytes"] > 0 and rows["spill_l2_to_sm_bytes"]["rel_err"] == 0
    assert "spill_sm_to_l2_bytes" not in rows  # a counter not profiled: no row
    assert rows["l2_to_sm_bytes"]["rel_err"] == 0  # the kernel's total: tensors and spills


@pytest.mark.parametrize("name, results", [("ncu", RESULTS), ("ncu_edges", RESULTS), ("ncu_edges2", RESULTS),
                                           ("ncu", report_gpus.H100)])
def test_the_hopper_kernels_extra_sm_to_l2_bytes_are_its_tma_descriptors(name, results):
    """docs/perf.md: each Hopper launch writes what gpusim counts plus, warp-specialized, its programs' TMA
    descriptors (descriptor_scratch_bytes, from the compiled kernel's scratch), to the byte, in runs 52, 66, 68 on
    the H200 and run 180 on the H100."""
    from gpusim.passes.hopper import LAUNCHES
    from gpusim_kernels.hopper import descriptor_scratch_bytes
    entries = json.loads((results / f"manifest{name[3:]}.json").read_text())["launches"]
    rows = [r for r in ncu.compare_run(name, results) if r["kernel"] == "hopper" and r["quantity"] == "sm_to_l2_bytes"]
    hopper = [e for e in entries if e.get("algo") == "hopper"]
    assert len(rows) == len(hopper) >= 8
    for row, e in zip(rows, hopper):
        assert (row["seq"], row["head_dim"], row["causal"]) == (e["seq"], e["head_dim"], e["causal"])
        ws = LAUNCHES[e["head_dim"], e["dtype"], e["causal"]]["warp_specialize"]
        assert ws == (not e["causal"])
        scratch = descriptor_scratch_bytes(batch=e["batch"], heads=e["heads"], seq=e["seq"], block_q=e["block_q"],
                                           warp_specialize=ws)
        assert row["measured"] - row["simulated"] == scratch and (scratch > 0) == ws
    assert f"{max(-r['rel_err'] for r in rows):.1%} more than counted at d = 64" in " ".join(
        (ROOT / "docs" / "perf.md").read_text().split())


def test_an_ncu_profile_cut_short_is_compared_on_its_part_and_the_rest_on_dram():
    """Run 180's forward on the H100: the profile with every metric stopped at its time limit; its launches are
    compared on every quantity, the DRAM profile's others on DRAM bytes and time, all priced on the manifest's
    preset; a DRAM profile of another workload is refused."""
    h100 = report_gpus.H100
    raw = json.loads((h100 / "manifest.json").read_text())
    dram = json.loads((h100 / "manifest_dram.json").read_text())
    assert raw["preset"] == dram["preset"] == "H100-measured" and len(raw["launches"]) < len(dram["launches"])
    rows = ncu.compare_run("ncu", h100)
    kernels = [(e, k) for e in dram["launches"] if not e.get("setup") for k in e["kernels"]]
    profiled = sum(len(e["kernels"]) for e in raw["launches"] if not e.get("setup"))
    by_quantity = {q: [r for r in rows if r["quantity"] == q] for q in ("l2_to_sm_bytes", "dram_read_bytes", "time_s")}
    assert len(by_quantity["l2_to_sm_bytes"]) == profiled < len(by_quantity["dram_read_bytes"]) == len(kernels)
    assert len(by_quantity["time_s"]) == len(kernels)
    last_entry, last_kernel = kernels[-1]
    sim = ncu.simulated_launches(last_entry["algo"], {k: last_entry[k] for k in (
        "seq", "head_dim", "causal", "dtype", "batch", "heads", "block_q", "block_kv")}, preset="H100-measured")
    assert by_quantity["dram_read_bytes"][-1]["simulated"] == sim[last_kernel]["dram_read_bytes"]
    launches = ncu.parse_csv((h100 / "ncu_raw.csv").read_text())
    dram_launches = ncu.parse_csv((h100 / "ncu_dram_raw.csv").read_text())
    with pytest.raises(ValueError, match="do not begin with the other run's"):
        ncu.cut_short(launches, raw["launches"], dram_launches, dram["launches"][:1] + dram["launches"][2:],
                      "H100-measured")


def test_ncu_workload_takes_the_head_dims_asked_for():
    """h200_session.sh's ncu_d128 job profiles the forward's d = 128 configurations alone (a profile of every metric
    that stopped at its time limit before them, run 180, can be finished so)."""
    assert {c["head_dim"] for c in ncu.workload_configs((1024, 4096), (128,))} == {128}
    assert len(list(ncu.workload_configs((1024,), (64, 128)))) == 2 * len(list(ncu.workload_configs((1024,), (128,))))


def test_ncu_asks_only_for_the_optional_counters_it_lists():
    listed = "\n".join(m.split(".")[0] + "   some description" for q, m in ncu.METRICS.items()
                       if q not in ncu.OPTIONAL)
    assert ncu.available_metrics(listed) == sorted({m for q, m in ncu.METRICS.items() if q not in ncu.OPTIONAL})
    assert ncu.available_metrics(None) == sorted(set(ncu.METRICS.values()))


def test_ncu_parses_a_csv_without_the_local_counters():
    header = ['"Kernel Name"'] + [f'"{m}"' for q, m in ncu.METRICS.items() if q not in ncu.OPTIONAL]
    units = ['""'] + ['"ns"' if q == "time_s" else '"byte"' for q in ncu.METRICS if q not in ncu.OPTIONAL]
    row = ['"flash1_kernel"'] + ['"1,000"'] * (len(header) - 1)
    launch, = ncu.parse_csv("\n".join(",".join(line) for line in (header, units, row)))
    assert launch["spill_l2_to_sm_bytes"] is None and launch["l2_to_sm_bytes"] == 1000


def parts_rows(path):
    """host_parts_train.json's rows at path and (span, each): a quantity's min–max over them as perf.md prints it
    (µs to the unit, or a ratio to digits), and a key's values."""
    rows = json.loads(path.read_text())["rows"]

    def span(values, digits=0):
        return f"{min(values):.{digits}f}–{max(values):.{digits}f}"
    return rows, span, lambda key: [r[key] for r in rows]


def test_perf_md_quotes_the_training_steps_parts_as_host_parts_train_json_has_them():
    """docs/perf.md's paragraph on the training step's parts, recomputed from results/h200/host_parts_train.json:
    each range (min–max over the three shapes, µs or a ratio) as the text prints it."""
    rows, span, each = parts_rows(RESULTS / "host_parts_train.json")
    launches = [r["launch_preprocess"] + r["launch_dkdv"] + r["launch_dq"] for r in rows]
    parts = [r["nothing_step"] + r["forward"] + r["backward"] for r in rows]
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "perf.md").read_text().split())
    quoted = [f"our step costs {span(each('step'))} µs against SDPA flash's {span(each('sdpa_step'))}",
              f"({span([r['step'] / r['sdpa_step'] for r in rows], 2)}×).",
              f"launches nothing costs {span(each('nothing_step'))} µs", f"Our forward is {span(each('forward'))} µs",
              f"our backward alone {span(each('backward'))} µs",
              f"three launches of {span([r[k] for r in rows for k in ('launch_preprocess', 'launch_dkdv', 'launch_dq')])}",
              f"contiguous ({span(each('do_contiguous'))} µs)", f"allocations ({span(each('four_empties'))} µs)",
              f"look-up ({span(each('backward_launch'))} µs)", f"add to {span(parts)} µs",
              f"the step costs {span(each('step_one_thread'))} µs against SDPA's {span(each('sdpa_step_one_thread'))}",
              f"({span([r['step_one_thread'] / r['sdpa_step_one_thread'] for r in rows], 2)}×)",
              f"three launches from Python ({span(launches)} µs)",
              f"starts {span(each('handoff_to_backward'))} µs after",
              f"runs {span(each('backward_in_step'))} µs there",
              f"({span([r['backward_in_step'] / r['backward'] for r in rows], 2)}× its time on the calling thread)",
              f"returns {span(each('handoff_to_caller'))} µs after it ends",
              f"The rest of the step ({span([r['step'] - p for r, p in zip(rows, parts)])} µs)"]
    assert [q for q in quoted if q not in text] == []



def test_perf_md_quotes_the_h100_hosts_training_step_parts_as_its_file_has_them():
    """docs/perf.md's paragraph on run 198's parts (results/h100/host_parts_train.json), recomputed, with the H200's
    hand-off beside it; and the file is an H100's."""
    rows, span, each = parts_rows(RESULTS.parent / "h100" / "host_parts_train.json")
    h200, _, _ = parts_rows(RESULTS / "host_parts_train.json")
    assert json.loads((RESULTS.parent / "h100" / "host_parts_train.json").read_text())["environment"]["gpu"] == \
        "NVIDIA H100 80GB HBM3"
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "perf.md").read_text().split())
    sdpa = each("sdpa_step")
    quoted = [f"our step costs {span(each('step'))} µs against SDPA flash's {span(sdpa)} "
              f"({span([r['step'] / r['sdpa_step'] for r in rows], 2)}×)",
              f"launches nothing {span(each('nothing_step'))} µs, and {span(each('nothing_step_one_thread'))} µs with",
              f"our step costs {span(each('step_one_thread'))} µs against SDPA's {span(each('sdpa_step_one_thread'))} "
              f"({span([r['step_one_thread'] / r['sdpa_step_one_thread'] for r in rows], 2)}×)",
              f"Our forward is {span(each('forward'))} µs and our backward alone {span(each('backward'))} µs",
              f"three launches {span([r['launch_preprocess'] + r['launch_dkdv'] + r['launch_dq'] for r in rows])} µs",
              f"{span([r['nothing_step'] - r['nothing_step_one_thread'] for r in rows])} µs a step for the Function",
              f"(the H200's host: {span([r['nothing_step'] - r['nothing_step_one_thread'] for r in h200])} µs)",
              f"SDPA's step ran {max(sdpa) / min(sdpa):.2f}× longer"]
    assert [q for q in quoted if q not in text] == []

def test_the_backwards_launches_read_and_write_what_gpusim_counts():
    """docs/perf.md's claims on results/h200/ncu_bwd.json (run 87), recomputed from its raw CSVs and manifest with
    the current model: L2 -> SM and SM -> L2 within 0.05% (0.0% as printed) on every backward launch, DRAM reads
    within 10%, DRAM writes within 13% but the preprocess's, whose share of D reaching DRAM is quoted."""
    rows = ncu.compare_run("ncu_bwd", RESULTS)
    assert {r["kernel"] for r in rows} == {"flash2 bwd preprocess", "flash2 bwd dkdv", "flash2 bwd dq", "naive bwd dv",
                                           "naive bwd dp", "naive bwd ds", "naive bwd dk", "naive bwd dq"}
    worst = {q: max(abs(r["rel_err"]) for r in rows if r["quantity"] == q)
             for q in ("l2_to_sm_bytes", "sm_to_l2_bytes", "dram_read_bytes")}
    assert worst["l2_to_sm_bytes"] < 5e-4 and worst["sm_to_l2_bytes"] < 5e-4 and worst["dram_read_bytes"] <= 0.10, worst
    writes = [r for r in rows if r["quantity"] == "dram_write_bytes"]
    assert max(abs(r["rel_err"]) for r in writes) < 0.16
    d = [r for r in writes if r["kernel"] == "flash2 bwd preprocess"]  # D: B·H·N fp32, one per query row
    d_bytes = [2**21 if r["head_dim"] == 64 else 2**20 for r in d]  # 16,384 rows of 2048 / d heads, 4 B each
    assert len(d) == 8 and len({round(r["simulated"] / b, 2) for r, b in zip(d, d_bytes)}) == 1
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"the model now has {round(100 * d[0]['simulated'] / d_bytes[0])}% of D reaching DRAM, within "
              f"{math.ceil(100 * max(abs(r['rel_err']) for r in d))}%",
              f"every launch's DRAM writes are within {math.ceil(100 * max(abs(r['rel_err']) for r in writes))}%",
              f"where {_percent([r['measured'] / b for r, b in zip(d, d_bytes)])} did"]
    assert [q for q in quoted if q not in text] == []


def _percent(values):
    return f"{round(100 * min(values))}–{round(100 * max(values))}%"


def _dram_writes_mb(text):
    return [launch["dram_write_bytes"] / 1e6 for launch in ncu.parse_csv(text)]


def test_perf_md_quotes_the_dram_writes_nsights_replay_adds_as_runs_85_to_87_measured_them():
    """docs/perf.md's paragraph on Nsight's replay, recomputed from run 87's two CSVs (every launch profiled with
    benchmarks.ncu's metrics and with the DRAM counters alone), run 51's and the probes of runs 85 and 86."""
    both = [_dram_writes_mb((RESULTS / f).read_text())[1:] for f in ("ncu_bwd_raw.csv", "ncu_bwd_dram_raw.csv")]
    excess = sorted(replayed - alone for replayed, alone in zip(*both))
    launches = json.loads((RESULTS / "manifest_bwd.json").read_text())["launches"]
    kernels = [(e, k) for e in launches[1:] for k in e["kernels"]]
    d_mb = {64: 2**21 / 1e6, 128: 2**20 / 1e6}  # D at 16,384 rows of 2048 / d heads
    alone_preprocess = [mb for (e, k), mb in zip(kernels, both[1]) if k == "preprocess" and e["head_dim"] == 64]
    with tarfile.open(RESULTS / "logs" / "run50_51_ncu_bwd.tar.gz") as tar:  # run 51: no fill first
        run51 = _dram_writes_mb(tar.extractfile("6/raw_bwd.csv").read().decode())
        run51_kernels = [(e, k) for e in json.load(tar.extractfile("6/manifest_bwd.json"))["launches"]
                         for k in e["kernels"]]
    run51_d = [mb / d_mb[e["head_dim"]] for (e, k), mb in zip(run51_kernels, run51) if k == "preprocess"]
    with tarfile.open(RESULTS / "logs" / "run85_86_ncu_dram_probes.tar.gz") as tar:
        probe = {name: _dram_writes_mb(tar.extractfile(f"./{name}.csv").read().decode())
                 for name in ("run85/dram_only", "run85/full_app", "run85/dram_noflush", "run86/dram_only2")}
    alone_preprocess += probe["run86/dram_only2"][1:13:3]  # run 86: a fill first, then d = 64's four preprocesses
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"a launch writes {excess[0]:.1f}–{excess[-1]:.1f} MB more to DRAM",
              f"every one of run 87's {len(excess)} launches, median {excess[len(excess) // 2]:.1f} MB",
              f"(run 85: flash2's preprocess {probe['run85/dram_only'][0]:.2f} MB first, "
              f"{min(alone_preprocess):.2f}–{max(alone_preprocess):.2f} MB after another launch in runs 86 and 87)",
              f"did not remove the excess of the first launch ({probe['run85/full_app'][0]:.2f} MB)",
              f"the preprocess wrote {min(probe['run85/dram_noflush'][0::3][:2]):.1f}–"
              f"{max(probe['run85/dram_noflush'][0::3][:2]):.1f} MB",
              f"Run 51's preprocess, {min(run51_d):.1f}–{max(run51_d):.1f}× D, was this"]
    assert len(excess) == 64 and [q for q in quoted if q not in text] == []


def test_perf_md_quotes_the_overlap_of_resident_programs_as_overlap_json_has_it():
    """docs/perf.md's run 57 paragraph, recomputed from results/h200/overlap.json: per tile, TFLOP/s at as many
    programs per SM as fit (up to 4) over TFLOP/s at one, the range over the four tiles, per variant."""
    rows = json.loads((RESULTS / "overlap.json").read_text())["rows"]
    tiles = [(64, 32), (64, 64), (128, 32), (128, 64)]
    at = {(r["variant"], r["br"], r["bc"], r["programs_per_sm"]): r for r in rows}
    resident = [at["softmax", br, bc, 1]["resident"] for br, bc in tiles]
    most = [min(4, b) for b in resident]

    def gains(variant):
        ratios = [at[variant, br, bc, b]["tflops"] / at[variant, br, bc, 1]["tflops"] for (br, bc), b in zip(tiles, most)]
        return f"{min(ratios):.2f}–{max(ratios):.2f}×"
    best = {tile: at["softmax", *tile, b]["tflops"] for tile, b in zip(tiles, most)}
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "perf.md").read_text().split())
    quoted = [f"{resident[0]}, {resident[1]}, {resident[2]} and {resident[3]} for 64 × 32",
              f"the softmax loop runs at {gains('softmax')} its TFLOP/s", f"the matmuls alone at {gains('mma')}",
              f"({best[64, 64]:.0f} against {best[64, 32]:.0f} TFLOP/s)"]
    assert [q for q in quoted if q not in text] == []


def test_bwd_kernels_json_has_the_blocks_the_model_prices():
    """docs/perf.md's run 58 paragraph: every compiled backward kernel of bwd_kernels.json holds as many blocks per SM
    as the kernel gpusim prices for that row, the two quoted have the registers and blocks it names, and the model
    has d = 64's dK/dV at 64 x 64 bound by its units, not latency."""
    rows = report_kernels.bwd_kernel_rows()
    assert len(rows) == 16 * 4 * 3
    quoted = {}
    for r in rows:
        assert r["resident"] == r["model_blocks"], r
        if (r["head_dim"], r["kernel"], r["block_q"], r["block_kv"]) == (64, "dkdv", 64, 64):
            assert not r["latency_bound"]
        if r["head_dim"] == 64 and (r["kernel"], r["block_q"], r["block_kv"]) in {("dkdv", 64, 64), ("dq", 64, 32)}:
            quoted.setdefault(r["kernel"], set()).add((r["n_regs"], r["resident"]))
    def described(kernel):
        registers, [blocks] = sorted({n for n, _ in quoted[kernel]}), {b for _, b in quoted[kernel]}
        return f"{registers[0]}–{registers[-1]} registers, {blocks} blocks"
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert f"(dK/dV at 64 × 64: {described('dkdv')}; dQ at 64 × 32: {described('dq')})" in text


def test_perf_md_quotes_the_backwards_stalls_as_bwd_stalls_json_has_them():
    """docs/perf.md's run 60 paragraphs, recomputed: bwd_stalls.json equals what bwd_stalls.parse reads from Nsight's
    raw CSV beside it, and every figure quoted comes from it."""
    from benchmarks import bwd_stalls
    rows = json.loads((RESULTS / "bwd_stalls.json").read_text())["rows"]
    assert rows == bwd_stalls.parse(RESULTS / "bwd_stalls_raw.csv")
    at = {(r["kernel"], r["block_q"], r["block_kv"]): r for r in rows}
    backward = [r for r in rows if r["kernel"] != "flash2"]
    forward = [r for r in rows if r["kernel"] == "flash2"]

    def state(kernel, tiles):
        r = at[(kernel, *tiles)]
        return r["warps_per_scheduler"], r["issue_per_cycle"], r["tensor_pct"]
    (w1, i1, t1), (w2, i2, t2), (w3, i3, t3), (w4, i4, t4) = (state(k, t) for k in ("dkdv", "dq")
                                                              for t in ((64, 64), (64, 32)))
    dkdv = [at["dkdv", 64, 64], at["dkdv", 64, 32]]

    def span(values, digits, unit=""):
        low, high = min(values), max(values)
        low, high = f"{low:.{digits}f}", f"{high:.{digits}f}"
        return f"{low}{unit}" if low == high else f"{low}–{high}{unit}"

    def per_warp(group):
        return [r["issue_per_cycle"] / r["warps_per_scheduler"] for r in group]

    def busy(group):  # the tensor pipe's share of the active cycles plus the issue rate
        return [r["tensor_pct"] / 100 + r["issue_per_cycle"] for r in group]
    idle = [1 - b for b in busy(dkdv)]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"dK/dV at 64 × 64 has {w1:.1f} warps per scheduler and issues on {i1:.2f} of its cycles (tensor pipe "
              f"{t1:.0f}% active); at 64 × 32, {w2:.1f} warps and {i2:.2f} ({t2:.0f}%)",
              f"dQ: {w3:.1f} and {i3:.2f} ({t3:.0f}%) at 64 × 64, {w4:.1f} and {i4:.2f} ({t4:.0f}%) at 64 × 32",
              f"{span([r['stall_wait'] for r in dkdv], 1)} warps on fixed-latency dependencies",
              f"{span([r['stall_short_scoreboard'] for r in dkdv], 2)} on shared-memory results",
              f"{span([r['stall_barrier'] for r in dkdv], 1)} at barriers, at most "
              f"{max(r['stall_long_scoreboard'] for r in dkdv):.1f} on global loads",
              f"issues {span(per_warp(backward), 2)} instructions a cycle in the backward and "
              f"{span(per_warp(forward), 2)} in the forward",
              f"add up to {span(busy(forward), 2)} of its cycles, dQ's to "
              f"{span(busy([r for r in backward if r['kernel'] == 'dq']), 2)}",
              f"dK/dV's add up to {busy(dkdv)[0]:.2f} at 64 × 64 and {busy(dkdv)[1]:.2f} at 64 × 32: for "
              f"{idle[0]:.0%} and {idle[1]:.0%} of its cycles neither is busy"]
    assert [q for q in quoted if q not in text] == []


def before_measured_issue(test):
    """A test of a section written before the twenty-ninth session's cost.measured, run under the model it quotes."""
    return under(report_history.no_measured_issue)(test)


@before_measured_issue
def test_perf_md_quotes_where_the_backwards_time_goes_as_bwd_rates_json_has_it():
    """Run 128: bwd_rates.json equals what bwd_rates.parse reads from Nsight's raw CSV beside it, and docs/perf.md's
    figures of it (a warp's rate, the busy shares, gpusim's matmul time and instructions against Nsight's) recomputed."""
    from benchmarks import bwd_rates
    assert json.loads((RESULTS / "bwd_rates.json").read_text())["rows"] == bwd_rates.parse(RESULTS / "bwd_rates_raw.csv")
    rows = report_steps.bwd_rates_rows()
    assert len(rows) == 12
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}"  # noqa: E731
    of = lambda kernel, field, pick=lambda r: True: [r[field] for r in rows if r["kernel"] == kernel and pick(r)]  # noqa: E731
    both = lambda field, pick=lambda r: True: [r[field] for r in rows if pick(r)]  # noqa: E731
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"A dK/dV warp issues {span(of('dkdv', 'idle_rate'))} instructions a cycle when the tensor pipe is idle, "
              f"at every tile, 4 warps or 8, d = 64 or 128; dQ's {span(of('dq', 'idle_rate'))}",
              f"add up to {span(of('dkdv', 'busy'))} of dK/dV's cycles (idle the rest) and to {span(of('dq', 'busy'))} "
              f"of dQ's ({span(of('dq', 'busy', lambda r: r['head_dim'] == 64))} at d = 64: overlapped)",
              f"its matmul time is {span(both('mma'))}× the tensor pipe's active time "
              f"({span(both('mma', lambda r: r['block_kv'] == 32))}× at block_kv = 32, "
              f"{span(both('mma', lambda r: r['block_kv'] == 64))}× at 64",
              f"its instructions are {span(both('issued'))}× those issued",
              f"where dK/dV's warps sustain {sum(of('dkdv', 'idle_rate')) / 6:.2f}",
              f"the three errors cancel in dK/dV (priced {span(of('dkdv', 'ratio'))}× here) and add up in dQ",
              f"take turns ({span(of('dq', 'ratio'))}×)"]
    assert [q for q in quoted if q not in text] == []
    assert min(of("dkdv", "busy")) < max(of("dkdv", "busy")) < 1 < min(of("dq", "busy", lambda r: r["head_dim"] == 64))
    forward = report_steps.forward_nsight_rows()
    assert len(forward) == 5 and {r["kernel"] for r in forward} == {"flash2"}
    assert (f"instructions {span([r['issued'] for r in forward])}× those issued, and a warp issuing "
            f"{span([r['idle_rate'] for r in forward])}") in text
    assert f"gpusim's matmul time {span([r['mma'] for r in forward])}× the tensor pipe's active time and its" in text
    from benchmarks import fwd_rates
    assert json.loads((RESULTS / "fwd_rates.json").read_text())["rows"] == fwd_rates.parse(RESULTS / "fwd_rates_raw.csv")
    fwd = report_steps.forward_nsight_rows("fwd_rates.json")
    at = lambda field, kv=None: [r[field] for r in fwd if kv in (None, r["block_kv"])]  # noqa: E731
    alone = [r["busy"] for r in fwd if r["head_dim"] == 128 and r["b"] == 1]
    assert len(fwd) == 10 and len(alone) == 2 and max(alone) < min(r["busy"] for r in fwd if r["b"] > 1)
    assert (f"gpusim's matmul time is {span(at('mma'))}× the tensor pipe's active time ({span(at('mma', 32))}× at "
            f"block_kv = 32, {span(at('mma', 64))}× at 64, {span(at('mma', 128))}× at 128), its instructions "
            f"{span(at('issued'))}× those issued, and a warp issues {span(at('idle_rate'))} a cycle while the tensor "
            f"pipe is idle") in text
    assert f"the tensor pipe and the issue fill {span(alone)} of the cycles" in text


def test_perf_md_quotes_the_per_warp_issue_rate_as_bwd_stalls_json_has_it():
    """docs/perf.md's run 60 rate: a warp's issue over the cycles the tensor pipe is idle, and the busy share the
    model's form gives each launch with one rate (tensor share + issue rate / min(1, rate x warps per scheduler))."""
    rows = json.loads((RESULTS / "bwd_stalls.json").read_text())["rows"]

    def idle_rate(r):
        return r["issue_per_cycle"] / (1 - r["tensor_pct"] / 100) / r["warps_per_scheduler"]

    def busy(r, rate):
        return r["tensor_pct"] / 100 + r["issue_per_cycle"] / min(1, rate * r["warps_per_scheduler"])

    def span(values, digits=2):
        low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
        return low if low == high else f"{low}–{high}"
    kind = {name: [r for r in rows if r["kernel"] == name] for name in ("flash2", "dkdv", "dq")}
    common = [r for r in rows if r["kernel"] == "dkdv" or (r["kernel"] == "flash2" and r["block_kv"] == 64)]
    narrow = [r for r in kind["flash2"] if (r["block_q"], r["block_kv"]) == (64, 32)]
    dkdv_64 = next(r for r in kind["dkdv"] if r["block_kv"] == 64)
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"a resident warp issues {span([idle_rate(r) for r in common])} instructions a cycle in dK/dV",
              f"({span([idle_rate(r) for r in narrow])} in the forward at 64 × 32; dQ "
              f"{span([idle_rate(r) for r in kind['dq']])}",
              f"{span([busy(r, 0.28) for r in kind['flash2']])} for the forward, "
              f"{span([busy(r, 0.28) for r in kind['dkdv']])} for dK/dV, {span([busy(r, 0.28) for r in kind['dq']])} "
              "for dQ", f"it gives dK/dV at 64 × 64 {busy(dkdv_64, 0.45):.2f}"]
    assert [q for q in quoted if q not in text] == []


def test_perf_md_quotes_the_32x32_tile_as_matmul_tiles_more_json_has_it():
    """Run 62: the 32 x 32 tile's fraction of the fp16 peak on 4 warps, its rate over the peak shape's timed again
    in the same run (matmul_tiles.json's fastest shape, at 1.0 of its own peak), and the instruction it compiles to."""
    rows = [r for r in json.loads((RESULTS / "matmul_tiles_more.json").read_text())["rows"] if r["variant"] == "mma"]
    first = [r for r in json.loads((RESULTS / "matmul_tiles.json").read_text())["rows"]
             if r["variant"] == "mma" and r["dtype"] == "fp16"]
    fastest = max(first, key=lambda r: r["tflops"])
    key = ("br", "bc", "d", "num_warps")
    peak = next(r["tflops"] for r in rows if all(r[k] == fastest[k] for k in key))
    fraction = {r["d"]: r["tflops"] / peak for r in rows if (r["br"], r["bc"], r["num_warps"]) == (32, 32, 4)}
    assert {d: f"{f:.2f}" for d, f in fraction.items()} == {64: "0.25", 128: "0.30"}
    assert all(r["mma_instruction"].startswith("mma.sync") for r in rows if r["br"] == 32)
    text = (ROOT / "docs" / "perf.md").read_text()
    assert "(mma.sync, not wgmma:\n0.25 and 0.30 of the peak on 4 warps" in text


def test_naive_rows_json_shows_unaligned_lengths_at_their_aligned_neighbours_cost():
    """Run 63 (S's and P's rows padded to 16 elements): each length not a multiple of 16 costs, kernel by kernel,
    within 5% of its aligned neighbour in the same run (run 42, rows unpadded: pv took twice as long)."""
    rows = {(r["seq"], r["head_dim"]): r["us"] for r in json.loads((RESULTS / "naive_rows.json").read_text())["rows"]}
    for unaligned, aligned in ((1000, 1008), (1016, 1024), (2040, 2048)):
        d = 128 if unaligned > 2000 else 64
        for kernel, us in rows[unaligned, d].items():
            assert abs(us / rows[aligned, d][kernel] - 1) < 0.05, (unaligned, kernel)
    assert "Unaligned lengths now cost what their aligned neighbours cost in the same run" in (
        ROOT / "docs" / "perf.md").read_text()


def _quoted_shares(name):
    """A held-out set's share within 20%, all and per kind, as docs/perf.md's prose quotes it."""
    from benchmarks import agreement
    pairs = agreement.heldout_rows(name)
    share = {kind: agreement.summary([p for p in pairs if p[0]["kind"] + " " + p[0]["algo"] == kind])["within 20%"]
             for kind in ("forward naive", "forward flash2", "forward hopper", "train flash2", "decode split_kv")}
    return pairs, (f"{agreement.summary(pairs)['within 20%']:.0%}; naive {share['forward naive']:.0%}, flash2 "
                   f"{share['forward flash2']:.0%}, Hopper {share['forward hopper']:.0%}, training "
                   f"{share['train flash2']:.0%}, decode")


@before_full_issue
@before_retimed
def test_perf_md_quotes_the_held_out_sets_as_the_current_model_scores_them():
    """With run 102's flash2 rows and run 105's training steps: heldout_2033.json (with no Hopper miss),
    heldout_2031.json, heldout_2029.json and heldout.json meet issue 24's target; heldout_2030.json and
    heldout_2032.json miss it, 2032's Hopper misses as quoted; the training misses over every set, fast, at the host
    floor and the rest; heldout_2034.json's share, its tiny launches and its worst training step: as docs/perf.md's
    prose quotes them, recomputed."""
    from benchmarks import agreement
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())

    def quoted(name):
        pairs, shares = _quoted_shares(name)
        decode = agreement.summary([p for p in pairs if p[0]["kind"] == "decode"])["within 20%"]
        assert f"{shares} {decode:.0%}" in text, name
        return pairs
    met = [name for name in ELEVEN if report_heldout.meets_target(agreement.heldout_rows(name))]
    assert sorted(met) == sorted(["heldout_2033.json", "heldout_2031.json", "heldout_2029.json", "heldout.json"])
    assert not [x for r, x in quoted("heldout_2033.json") if r["algo"] == "hopper" and not 0.8 <= x <= 1.2]
    for name in ("heldout_2031.json", "heldout_2029.json", "heldout.json", "heldout_2030.json", "heldout_2032.json"):
        quoted(name)
    others = [agreement.summary(agreement.heldout_rows(n))["within 20%"] for n in ELEVEN
              if n not in met + ["heldout_2030.json", "heldout_2032.json"]]
    assert len(others) == 5 and f"by the other five ({min(others) * 100:.0f}–{max(others):.0%})" in text
    fast = sorted((r["ms"], x) for r, x in agreement.heldout_rows("heldout_2032.json")
                  if r["algo"] == "hopper" and r["kind"] == "forward" and x < 0.8)
    assert (f"short launches priced fast ({fast[0][1]:.2f}× and {fast[1][1]:.2f}×, {fast[0][0]:.2f} and "
            f"{fast[1][0]:.2f} ms)") in text and len(fast) == 2
    floor_s = gpusim.get_gpu(agreement.PRESET).train_step_host_s
    misses = [(r["ms"], x) for name in ELEVEN for r, x in agreement.heldout_rows(name)
              if r["kind"] == "train" and not 0.8 <= x <= 1.2]
    quick = [x for _, x in misses if x < 0.8]
    floor = [(m, x) for m, x in misses if m * 1e-3 < floor_s and x > 1.2]
    rest = [x for m, x in misses if m * 1e-3 >= floor_s and x > 1.2]
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}"  # noqa: E731
    assert (f"Of the eleven sets' {len(misses)} training misses, {len(quick)} are steps priced fast ({span(quick)}×) and "
            f"{len(floor)} are short steps ({span([m for m, _ in floor])} ms in run 105) priced "
            f"{span([x for _, x in floor])}× slow at the host floor `train_step_host_s` ({floor_s * 1e6:.0f} µs, run "
            f"105's `host.json`, now `host_run105.json`); the other {len(rest)} are longer steps priced {span(rest)}× slow") in text
    assert len(quick) + len(floor) + len(rest) == len(misses)
    pairs, _ = _quoted_shares("heldout_2034.json")
    within = sum(0.8 <= x <= 1.2 for _, x in pairs)
    tiny = [x for r, x in pairs if r["kind"] == "forward" and r["seq"] == 256]
    step = max(x for r, x in pairs if r["kind"] == "train")
    assert (not report_heldout.meets_target(pairs)
            and f"{within / len(pairs):.1%} ({within} of {len(pairs)}) under the model before the nineteenth session's `cost.full_issue`" in text)
    assert f"causal launch priced {max(x for r, x in pairs if r['algo'] == 'hopper'):.2f}× slow" in text
    assert len(tiny) == 3 and f"priced {min(tiny):.2f}–{max(tiny):.2f}× slow" in text and f"priced {step:.2f}× slow" in text


def _dram_reads(name):
    """An Nsight run's DRAM-read rows against the current model (benchmarks.ncu.compare_run)."""
    return [r for r in ncu.compare_run(name, RESULTS) if r["quantity"] == "dram_read_bytes"]


def test_perf_md_quotes_nsights_dram_reads_at_the_new_lengths_as_the_current_model_prices_them():
    """Run 90 (ncu_edges_raw.csv, ncu_edges_dram_raw.csv, manifest_edges.json: run 66's lengths profiled again, twice):
    the DRAM-read errors docs/perf.md quotes, recomputed."""
    rows = _dram_reads("ncu_edges")
    err = {(r["kernel"], r["seq"], r["head_dim"], r["causal"]): r["rel_err"] for r in rows}
    assert round(err["hopper", 65536, 128, True], 2) == 0.04 and round(err["hopper", 65536, 128, False], 2) == -0.11
    assert round(err["flash2", 65536, 128, True], 2) == -0.05 and round(err["flash2", 65536, 128, False], 2) == -0.16
    kv = 2 * 16 * 65536 * 128 * 2  # K and V of 16 heads, fp16; Q is as large as one of them
    times = {k: (next(r["measured"] for r in rows if (r["kernel"], r["seq"], r["head_dim"], r["causal"]) == (k, 65536, 128, False))
                 - kv / 2) / kv for k in ("flash2", "hopper")}
    assert (round(times["flash2"], 1), round(times["hopper"], 1)) == (4.8, 4.6)
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert "within 4% (Hopper causal 65,536) to 16%" in text and "read 4.8 (flash2) and 4.6 (Hopper) times" in text
    assert "once (5% short there)" in text


def test_perf_md_quotes_the_blind_run_after_the_last_l2_change_as_the_current_model_prices_it():
    """Run 90 (ncu_edges2_raw.csv, ncu_edges2_dram_raw.csv, manifest_edges2.json: run 68's lengths profiled again,
    twice): the DRAM-read errors and K/V re-reads docs/perf.md quotes."""
    rows = {(r["kernel"], r["seq"], r["head_dim"], r["causal"]): r
            for r in _dram_reads("ncu_edges2")}
    short = {key: f"{-rows[key]['rel_err']:.0%}" for key in rows}
    assert [short["flash2", 40960, 128, False], short["flash2", 98304, 64, False]] == ["50%", "52%"]
    assert [short["hopper", 40960, 128, False], short["hopper", 98304, 64, False], short["hopper", 98304, 64, True],
            short["hopper", 98304, 128, False]] == ["46%", "21%", "12%", "11%"]
    assert [f"{rows['hopper', n, 128, True]['rel_err']:+.0%}" for n in (40960, 98304)] == ["+7%", "+4%"]
    q = 16 * 98304 * 128 * 2  # Q, and K or V, of 16 heads at d = 128, fp16
    reads = {k: (rows[k, 98304, 128, c]["measured"] - q) / (2 * q) for k, c in (("flash2", True), ("hopper", False))}
    assert (round(reads["flash2"], 1), round(reads["hopper"], 1)) == (10.0, 6.8)
    assert round((rows["hopper", 98304, 128, False]["simulated"] - q) / (2 * q), 6) == 6
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert ("50% and 52% short; the Hopper kernel at the same two, 46% and 21%" in text
            and "read K and V 10.0 times" in text and "read them 6.8 times" in text)


def test_perf_md_shows_two_launches_alike_to_a_fits_rule_that_no_one_count_of_kv_reads_prices_within_10_percent():
    """flash2 non-causal at N = 32,768, d = 128 (run 153) and N = 65,536, d = 64 (run 90): the same head size, share
    of a head in flight and straddle, K and V read 1.69 and 1.07 times; the bounds on one count for both."""
    measured, geometry = {}, {}
    for name, n, d, heads, tile in (("ncu", 32768, 128, 16, 128), ("ncu_edges", 65536, 64, 32, 64)):  # as profiled
        row = next(r for r in _dram_reads(name) if (r["kernel"], r["seq"], r["head_dim"], r["causal"]) == (
            "flash2", n, d, False))
        cfg = gpusim.simulate("flash2", seq=n, head_dim=d, heads=heads, block_q=128, block_kv=tile, gpu="H200").config
        q = cfg.bh * n * d * 2  # Q, and K or V, fp16
        measured[n] = (row["measured"] - q) / (2 * q), row["measured"] / q
        geometry[n] = (2 * n * d * 2 // 2**20, gpusim.l2.in_flight(cfg, "flash2"), cfg.tiling.n_q_blocks,
                       cfg.tiling.n_kv_blocks, 2 * tile * d * 2 // 1024)  # MiB a head, programs, steps of KiB
    assert geometry == {32768: (16, 132, 256, 256, 64), 65536: (16, 264, 512, 1024, 16)}
    assert 2 * 16 * 2**20 > gpusim.get_gpu("H200").l2_reuse_bytes(every_sm=True) >= 16 * 2**20
    (a, a_total), (b, b_total) = measured.values()
    target = ncu.TARGETS["dram_read_bytes"]  # |model - measured| / measured, as the table's
    low, high = (a_total * (1 - target) - 1) / 2, (b_total * (1 + target) - 1) / 2  # Q + 2x K: within it of each
    assert (round(a, 2), round(b, 2), round(low, 2), round(high, 2)) == (1.69, 1.07, 1.47, 1.23) and low > high
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert ("measured K and V read 1.69 and 1.07 times" in text
            and "the first needs at least 1.47, the second at most 1.23" in text)


def test_perf_md_quotes_what_the_forwards_replayed_profiles_wrote_more_than_their_one_pass():
    """Runs 90-91: each forward launch profiled replayed (NAME_raw.csv) and in one pass (NAME_dram_raw.csv)."""
    more = []  # (MB written replayed less in one pass, kernel, GB in one pass)
    for name in ("ncu", "ncu_edges", "ncu_edges2"):
        replayed, one_pass = (ncu.parse_csv((RESULTS / f).read_text())[1:] for f in (f"{name}_raw.csv", f"{name}_dram_raw.csv"))
        more += [((a["dram_write_bytes"] - b["dram_write_bytes"]) / 1e6, ncu.kernel_of(a["kernel_name"]),
                  b["dram_write_bytes"] / 1e9) for a, b in zip(replayed, one_pass)]
    flash2_hopper = sorted(m for m, kernel, _ in more if kernel in ("flash2", "hopper"))
    flash1 = max((m, gb) for m, kernel, gb in more if kernel == "flash1")
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert (f"replayed, {sum(m > 0 for m, _, _ in more)} of {len(more)} launches wrote more than in one pass, a median "
            f"{statistics.median(m for m, _, _ in more):.1f} MB; flash2's and the Hopper kernel's "
            f"{flash2_hopper[1]:.1f}–{flash2_hopper[-1]:.1f} MB") in text
    assert f"with {-flash2_hopper[0]:.1f} MB less; flash1's up to {flash1[0]:.0f} MB (of {flash1[1]:.1f} GB)" in text


def test_perf_md_quotes_the_graphed_serving_gap_as_serving_splits_json_has_it():
    """docs/perf.md's figures for batch 8 at 1,024 cached tokens with the reduce on 2 warps (run 75): cuDNN's graph
    and the rule's pick, µs a layer (ms per token over its 32 layers); and the rule's pick the fastest split count at
    every point."""
    data = json.loads((RESULTS / "serving_splits.json").read_text())
    rows = [r for r in data["rows"] if r.get("ms_per_token")]
    here = [r for r in rows if (r["batch"], r["seq_kv"]) == (8, 1024)]
    cudnn = next(r for r in here if r["provider"] == "sdpa_cudnn_graph")
    pick = next(r for r in here if r["provider"] == "plan_graph" and r["default"])
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert (f"cuDNN's read takes {cudnn['ms_per_token'] * 1e3 / cudnn['layers']:.1f} µs a layer there and the split "
            f"kernel and its reduce {pick['ms_per_token'] * 1e3 / pick['layers']:.1f} µs") in text
    for point in {(r["batch"], r["seq_kv"]) for r in rows}:
        plan = [r for r in rows if (r["batch"], r["seq_kv"]) == point and r["provider"] == "plan_graph"]
        assert min(plan, key=lambda r: r["ms_per_token"])["default"], point


def test_perf_md_quotes_the_threads_parts_as_host_thread_json_has_them():
    """docs/perf.md's paragraph on what runs slower on autograd's thread: each part's engine ÷ caller ratio (the
    range over the shapes) as the text prints it, recomputed from results/h200/host_thread.json."""
    rows = json.loads((RESULTS / "host_thread.json").read_text())["rows"]
    us = {(tuple(r["shape"]), r["part"], r["thread"]): r["us"] for r in rows}
    shapes = {tuple(r["shape"]) for r in rows}

    def span(part):
        ratios = [us[s, part, "engine"] / us[s, part, "caller"] for s in shapes]
        return f"{min(ratios):.2f}–{max(ratios):.2f}×"
    launches = [us[s, p, "engine"] / us[s, p, "caller"] for s in shapes for p in ("preprocess", "dkdv", "dq")]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"takes {span('python')} its calling-thread time", f"`torch.empty_like` take {span('empties')}",
              f"devices) {span('lookup')}", f"the first allocation {span('prepare')}",
              f"each launch {min(launches):.2f}–{max(launches):.2f}×", f"body took {span('total')}"]
    assert [q for q in quoted if q not in text] == []


def test_the_reduces_warps_are_the_ones_reduce_warps_json_ran_fastest():
    """results/h200/reduce_warps.json: 2 warps with PDL within the quoted share of the fastest variant at every
    point, and 4 warps (with PDL) slower by the quoted range, as docs/perf.md and gpusim/passes/split_kv.py's
    REDUCE_WARPS comment say; gpusim's rule gives 2 at d = 128, the shape measured."""
    from gpusim.passes import split_kv
    rows = json.loads((RESULTS / "reduce_warps.json").read_text())["rows"]
    ms = {}
    for r in rows:
        if r["provider"] == "plan_graph":
            ms.setdefault((r["batch"], r["seq_kv"]), {})[r["reduce_warps"], r["pdl"]] = r["ms_per_token"]
    within = max(v[2, True] / min(v.values()) - 1 for v in ms.values())
    slower = [v[4, True] / v[2, True] - 1 for v in ms.values()]
    doc = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    source = " ".join(line.strip("# ") for line in Path(split_kv.__file__).read_text().splitlines())
    low, high = f"{100 * min(slower):.1f}", f"{100 * max(slower):.0f}%"
    assert f"or within {within:.1%} of it" in doc and f"{low}–{high} slower" in doc
    assert f"within {within:.1%} of the fastest" in source and f"{low}-{high} faster" in source
    assert split_kv.reduce_warps(128) == split_kv.REDUCE_WARPS == 2
    pairs = _pdl_pairs()
    saved = [1e3 * (v[False] - v[True]) for (batch, _, splits), v in pairs.items() if (batch, splits) == (1, 64)]
    assert f"saves {min(saved):.1f}-{max(saved):.1f} us per call at batch 1" in source
    assert f"reduce on 2 warps, run 76, {min(saved):.1f}–{max(saved):.1f} µs at batch 1" in doc
    eight = {n: v for (batch, n, splits), v in pairs.items() if (batch, splits) == (8, 8)}
    assert (f"at batch 8, {1e3 * (eight[16384][False] - eight[16384][True]):.1f} µs at 16K and "
            f"{1e3 * (eight[131072][True] - eight[131072][False]):.1f} µs lost at 128K") in doc


def _pdl_pairs():
    """results/h200/decode_splits.json's split launches timed with PDL on and off: {(batch, seq_kv, num_splits):
    {pdl: ms}}."""
    pairs = {}
    for r in json.loads((RESULTS / "decode_splits.json").read_text())["rows"]:
        if r["provider"] == "split_kv" and r.get("ms"):
            pairs.setdefault((r["batch"], r["seq_kv"], r["num_splits"]), {})[r["pdl"]] = r["ms"]
    return {key: v for key, v in pairs.items() if len(v) == 2}


def test_pdl_hidden_s_is_the_median_saving_of_decode_splits_json_pdl_pairs():
    """gpusim/passes/split_kv.py's PDL_HIDDEN_S: the median over results/h200/decode_splits.json's split launches
    timed with PDL on and off of what PDL saved, to the µs it is quoted at; the reduce's launch pays the rest of an
    empty kernel's on a GPU with PDL, all of it on one without."""

    import gpusim
    from gpusim.passes import split_kv
    saved = [1e-3 * (v[False] - v[True]) for v in _pdl_pairs().values()]
    assert len(saved) == 8 and round(statistics.median(saved), 8) == split_kv.PDL_HIDDEN_S
    for gpu, hidden in (("H200-measured", split_kv.PDL_HIDDEN_S), ("A100-40GB", 0.0)):
        launch = gpusim.simulate("split_kv", batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=4096,
                                 page_size=16, gpu=gpu).config
        g = gpusim.get_gpu(gpu)
        assert split_kv.SPLIT_KV.launch_s(launch, "reduce") == g.launch_overhead_s - hidden
        assert split_kv.SPLIT_KV.launch_s(launch, "split_kv") == g.launch_overhead_s


def test_perf_md_quotes_the_backward_on_more_warps_as_bwd_warps_json_has_it():
    """docs/perf.md's runs 79–80 and 83 paragraph: each kernel's 8-warp ÷ 4-warp time, dK/dV's under a register cap, and
    64 × 32 ÷ 64 × 64 on 4 warps (ranges over the eight d = 64 groups), with the caps' blocks and spills, as the text
    prints them, recomputed from results/h200/bwd_warps.json; and the rule the paragraph keeps, 4 warps for a
    64-row tile."""
    from gpusim.passes.common import warps

    def key(r):
        return r["dtype"], r["causal"], r["seq"], r["block_kv"], r["kernel"], r["num_warps"], r["maxnreg"]
    rows = {key(r): r for r in json.loads((RESULTS / "bwd_warps.json").read_text())["rows"]}
    groups = {k[:3] for k in rows}

    def ratio(kv, kernel, variant, base=(4, None), base_kv=None):
        return [rows[g + (kv, kernel, *variant)]["ms"] / rows[g + (base_kv or kv, kernel, *base)]["ms"] for g in groups]

    span = report_kernels._span

    def spills(kv, regs):
        got = sorted({rows[g + (kv, "dkdv", 4, regs)]["n_spills"] for g in groups})
        return f"{got[0]}–{got[-1]} B"
    eight = [r for kv in (32, 64) for kernel in ("dkdv", "dq") for r in ratio(kv, kernel, (8, None))]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"Every kernel ran {span(eight)} slower on 8 warps",
              f"(dK/dV at 64 × 64 {span(ratio(64, 'dkdv', (8, None)))}:",
              f"dQ {span(ratio(32, 'dq', (8, None)) + ratio(64, 'dq', (8, None)))})",
              f"spills {spills(64, 168)} a thread, and ran {span(ratio(64, 'dkdv', (4, 168)))} its uncapped time",
              f"still {span(ratio(64, 'dkdv', (4, 168), base_kv=32))} 64 × 32's",
              f"at 128 ({spills(64, 128)} spilled) {span(ratio(64, 'dkdv', (4, 128)))}",
              f"(128 registers, {spills(32, 128)} spilled) ran {span(ratio(32, 'dkdv', (4, 128)))}",
              f"64 × 32's dK/dV ran {span(ratio(32, 'dkdv', (4, None), base_kv=64))} 64 × 64's",
              f"its dQ {span(ratio(32, 'dq', (4, None), base_kv=64))}"]
    with tarfile.open(RESULTS / "logs" / "run83_bwd_warps_with_d.tar.gz") as tar:  # run 80's file, D unset
        before = {key(r): r["ms"] for r in json.load(tar.extractfile("run80_bwd_warps.json"))["rows"]}
    quoted.append(f"each time within {span([r['ms'] / before[key(r)] for r in rows.values()])} of run 80's")
    assert len(groups) == 8 and [q for q in quoted if q not in text] == []
    assert {rows[g + (64, "dkdv", 4, 168)]["resident"] for g in groups} == {3}
    assert {rows[g + (32, "dkdv", 4, 128)]["resident"] for g in groups} == {4}
    assert warps(64) == 4


def test_perf_md_quotes_the_writes_of_freed_memory_as_runs_90_and_92_measured_them():
    """Run 90's one-pass profile of the forward (flash2 at 32,768 right after the naive kernels' buffers were freed)
    and run 92's probe (a fill after 16 GB kept, freed, or freed 2 s before), from their log tarballs."""
    def launches(tarball, member):
        with tarfile.open(RESULTS / "logs" / tarball) as tar:
            return ncu.raw_table(tar.extractfile(member).read().decode())[0]
    mb = lambda row, metric="dram__bytes_write.sum": float(row[metric].replace(",", "")) / 1e6
    one_pass = launches("run90_ncu_forward_edges.tar.gz", "./run90_logs/dram_ncu.csv")
    replayed = launches("run90_ncu_forward_edges.tar.gz", "./run90_logs/raw_ncu.csv")
    at_32k = [i for i, row in enumerate(one_pass) if row["Kernel Name"].startswith("flash2") and row["Grid Size"].startswith("(256,")]
    assert len(at_32k) == 4
    scrubbed = sorted(mb(one_pass[i]) / 1e3 for i in at_32k if mb(one_pass[i]) > 2 * mb(replayed[i]))
    clean = {round(mb(replayed[i]) / 1e3, 2) for i in at_32k}
    probe_rows = launches("run91_92_ncu_forward_scrub_probe.tar.gz", "./run92_probe/scrub.csv")
    probe = [mb(row) for row in probe_rows]
    kept, freed, waited = [probe[1], probe[4]], [probe[2], probe[5]], probe[3]
    excess = sorted(f - k for f, k in zip(freed, kept))
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert (f"{len(scrubbed)} of flash2's {len(at_32k)} launches at N = 32,768 write {scrubbed[0]:.2f}–{scrubbed[-1]:.1f} GB "
            f"where they write {clean.pop():.2f} GB") in text and not clean
    us = sorted(float(row["gpu__time_duration.sum"].replace(",", "")) / 1e3 for row in probe_rows[2::3])  # the freed
    biggest = max(at_32k, key=lambda i: mb(one_pass[i]))
    ms = float(one_pass[biggest]["gpu__time_duration.sum"].replace(",", "")) / 1e6
    assert f"in {us[0]:.1f}–{us[-1]:.1f} µs" in text and f"{mb(one_pass[biggest]) / 1e3:.1f} GB in its launch's {ms:.1f} ms" in text
    tb_per_s = mb(one_pass[biggest]) / ms / 1e3  # the clearing's rate, from run 90's largest excess; the probe's agrees
    assert f"at about {tb_per_s:.2f} TB/s" in text and abs(excess[-1] / us[-1] - tb_per_s) < 0.02
    assert (f"wrote {excess[0]:.1f}–{excess[-1]:.1f} MB more ({min(freed):.1f}–{max(freed):.1f} MB) than after the same "
            f"16 GB were kept in torch's cache or freed 2 s before ({min(*kept, waited):.1f}–{max(*kept, waited):.1f} MB)") in text


def test_notebook12_explains_the_l2_to_sm_bytes_as_ncu_json_has_them():
    """Notebook 12's and the README's account of results/h200/ncu.json: the naive kernels' .cg loads match to the byte,
    flash1 (its spills counted, its loads marked evict_last) within a quarter of a percent, d = 128 under the causal
    mask included, which read 6-8% more before the hint (flash1_l1.json's loads without it)."""
    rows = [r for r in json.loads((RESULTS / "ncu.json").read_text())["rows"] if r["quantity"] == "l2_to_sm_bytes"]
    assert all(r["simulated"] == r["measured"] for r in rows if r["kernel"] in ("qk", "pv"))
    flash1 = [r for r in rows if r["kernel"] == "flash1"]
    worst = max(abs(r["rel_err"]) for r in flash1)
    assert len(flash1) == 12 and worst <= 0.0025
    spills = [r for r in json.loads((RESULTS / "ncu.json").read_text())["rows"]
              if r["kernel"] == "flash1" and r["quantity"] == "spill_l2_to_sm_bytes"]
    assert spills and all(r["simulated"] > 0 for r in spills)
    unhinted = [(r["plain"]["l2_to_sm_bytes"] - r["plain"]["spill_l2_to_sm_bytes"]) / r["tensors"]
                for r in report_kernels.flash1_l1_rows() if r["head_dim"] == 128 and r["causal"]]
    notebook = json.loads((ROOT / "notebooks" / "12_appendix_provenance.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert "so flash1 matches within a quarter of a percent" in text
    assert f"its loads read {100 * (min(unhinted) - 1):.0f}–{100 * (max(unhinted) - 1):.0f}% more than counted" in text
    assert "gpusim has no registers, so no spills" not in text
    bound = f"{math.ceil(worst * 1e4) / 100:.2f}%"  # rounded up: 0.213% is not within 0.2%
    assert f"and flash1's, with its register spills\ncounted, within {bound}" in (ROOT / "README.md").read_text()


def test_the_course_calls_the_time_model_what_ncu_json_shows():
    """Notebooks 1, 6 and 12 describe gpusim's time against Nsight Compute's: below the measured time in some of
    ncu.json's launches and above in others (neither in 9 of 10: choice.BOUND_SHARE), it is an estimate missing both
    ways, and the course does not call it a floor; every kernel's long launches within about a quarter, some short
    and some long, the Hopper kernel's furthest and priced long, as notebook 12 says."""
    rows = [r for r in json.loads((RESULTS / "ncu.json").read_text())["rows"] if r["quantity"] == "time_s"]
    assert 0.1 < sum(r["simulated"] < r["measured"] for r in rows) / len(rows) < 0.9
    long_ = [r for r in rows if r["measured"] >= ncu.MIN_TIME_S]
    worst = {k: max((abs(r["rel_err"]), r["rel_err"] > 0) for r in long_ if r["kernel"] == k) for k in ncu.KERNELS
             if any(r["kernel"] == k for r in long_)}
    assert max(worst, key=lambda k: worst[k][0]) == "hopper" and worst["hopper"][1]
    assert all(w < 0.3 for w, _ in worst.values()) and {long for _, long in worst.values()} == {True, False}
    notebook = json.loads((ROOT / "notebooks" / "12_appendix_provenance.ipynb").read_text())["cells"]
    assert ("every kernel's long launches within about a quarter of the measured time, some short and some long; "
            "furthest on the Hopper kernel's, priced long") in " ".join("".join(c["source"]) for c in notebook)
    for name in ("01_memory_hierarchy.ipynb", "06_real_kernels.ipynb", "12_appendix_provenance.ipynb"):
        cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
        text = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        assert "an estimate" in text and "a floor" not in text.replace("not a floor", "")


@before_retimed
@before_full_issue
def test_perf_md_quotes_the_lone_program_and_the_newest_held_out_sets_as_computed():
    """lone_program.json (run 95): the empty kernel's four times; the cold lone step priced right at 2 stages and slow
    at 3-4; the cold launch's extra first loads; the trial rule (report_steps.pipelined_chain) on the lone steps and on
    the fitted and older held-out sets, as docs/perf.md quotes them, recomputed from the files and the current model;
    heldout_2035.json and heldout_2036.json (each measured after every model change, scored once) miss issue 24's
    target with the shares quoted."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = json.loads((RESULTS / "lone_program.json").read_text())["rows"]
    empty = {(r["programs"], r["timing"]): r["ms"] * 1e3 for r in rows if r["kind"] == "empty"}
    assert (f"{empty[1, 'events']:.2f} µs (one program) and {empty[132, 'events']:.2f} µs (132) timed with CUDA events"
            in text and f"but {empty[1, 'cuda_graph']:.2f} µs and {empty[132, 'cuda_graph']:.2f} µs replayed" in text)
    assert empty[132, "cuda_graph"] < gpusim.hardware.GPU.launch_overhead_s * 1e6 / 4 < empty[1, "events"]
    cold, warm = report_steps.lone_program_rows("cold"), report_steps.lone_program_rows("warm")
    with report_steps.pipelined():
        trial = report_steps.lone_program_rows("cold")

    def span(values, count):
        assert len(values) == count
        return f"{min(values):.2f}–{max(values):.2f}×"
    big = {key for key in cold if key[0] == 128 and key[1] == 128}  # d = 128's 128-row tiles
    at = lambda two, keys: [k for k in keys if (k[3] == 2) == two]  # noqa: E731
    assert (f"right at 2 stages: {span([cold[k][1] / cold[k][0] for k in at(True, cold.keys() - big)], 6)} the measured "
            f"step at every tile but d = 128's 128-row ones ({span([cold[k][1] / cold[k][0] for k in at(True, big)], 2)})"
            f". At 3 and 4 stages it is {span([cold[k][1] / cold[k][0] for k in at(False, cold)], 15)} slow") in text
    gap = [cold[k][2] - warm[k][2] for k in cold]
    assert f"{min(gap):.2f}–{max(gap):.2f} µs longer than the warm one" in text and min(gap) > 0
    assert f"the one-step launch is priced {span([cold[k][3] / cold[k][2] for k in at(True, cold)], 8)[:-1]}×" in text
    assert (f"within {span([trial[k][1] / cold[k][0] for k in at(False, cold.keys() - big)], 12)} except d = 128's "
            f"128-row tiles ({span([trial[k][1] / cold[k][0] for k in at(False, big)], 3)})") in text

    def scores():
        older = [p for name in TEN_OLDER for p in agreement.heldout_rows(name)]
        flash2 = [p for p in older if p[0]["kind"] == "forward" and p[0]["algo"] == "flash2"]
        return [f"{agreement.summary(p)['within 20%']:.1%}" for p in (older, flash2, agreement.rows("tiles.json"))]
    before = scores()
    with report_steps.pipelined():
        after = scores()
    assert len(TEN_OLDER) == 10 and (
        f"the held-out sets go from {before[0]} to {after[0]} within 20% (their flash2 forwards {before[1]} → "
        f"{after[1]}) and `tiles.json` from {before[2]} to {after[2]}") in text
    share, trains = _missed_target("heldout_2036.json")
    assert f"{share} under the model before the nineteenth session's `cost.full_issue`, its training steps {trains}" in text
    share, trains = _missed_target("heldout_2035.json")
    assert f"{share}, training steps {trains}" in text


@before_full_issue
def test_perf_md_quotes_run_102s_remeasured_held_out_rows():
    """Run 102 measured every held-out set's flash2 rows again: how far each group moved, the rows within 20% before and
    after over the eleven sets, the sets meeting issue 24's target, and the 64 x 128 tile at d = 128 over the sets and
    on tiles.json's long groups, as docs/perf.md quotes them, recomputed from the run's logs and the files."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    sets = report_heldout.remeasured_rows()
    moved = {"changed": [], "other": [], "host": [], "gpu": []}
    for a, b in (pair for pairs in sets.values() for pair in pairs if pair[0]["algo"] == "flash2"):
        if a["kind"] == "train":
            sim = agreement.heldout_simulated(a)
            host = sum(k.predicted_time_s for k in sim.kernels) < sim.config.gpu.train_step_host_s
            moved["host" if host else "gpu"].append(b["ms"] / a["ms"])
        else:
            moved["changed" if a["head_dim"] >= 128 and a["block_q"] == 64 and a["seq"] % 16 else "other"].append(
                b["ms"] / a["ms"])
    span = report_kernels._span
    gpu = sorted(moved["gpu"])
    assert (f"take {span(moved['changed'])} their earlier time and every other forward {span(moved['other'])}" in text
            and f"took {span(moved['host'])} what they took before, while the GPU-bound ones moved "
                    f"{span(gpu[:-1])} (one {gpu[-1]:.2f}×)" in text and gpu[-2] < 1.1 < gpu[-1])
    before, after = (sum(report_heldout._within([pair[i] for pair in pairs])[0] for pairs in sets.values())
                     for i in (0, 1))
    total = sum(report_heldout._within([b for _, b in pairs])[1] for pairs in sets.values())
    assert f"{before} of {total} rows were within 20% before and {after} after" in text
    def met(i):  # the sets meeting issue 24's target with the rows before (0) or after (1) run 102
        return sorted("2026" if name == "heldout.json" else name[8:12] for name, pairs in sets.items()
                      if report_heldout.meets_target([(p[i], agreement.heldout_simulated(p[i]).predicted_time_s
                                                       / (p[i]["ms"] * 1e-3)) for p in pairs if p[i].get("ms")]))
    met_before, met_after = met(0), met(1)  # each a re-simulation of every remeasured row: once
    assert f"went from two ({', '.join(met_before)}) to three ({', '.join(met_after)})" in text
    assert len(met_before) == 2 and len(met_after) == 3
    wide = [x for name in ELEVEN for r, x in agreement.heldout_rows(name)
            if (r["kind"], r["algo"], r["head_dim"], r["block_q"], r["block_kv"]) == ("forward", "flash2", 128, 64, 128)]
    assert (f"the model is {span(wide)} (median {statistics.median(wide):.2f}×, {sum(0.8 <= x <= 1.2 for x in wide)} of "
            f"{len(wide)} rows within 20%)") in text
    long = [x for r, x in agreement.rows("tiles.json") if (r["algo"], r["head_dim"], r["block_q"], r["block_kv"]) == (
        "flash2", 128, 64, 128) and r["seq"] > 2048]
    assert len(long) == 4 and f"{span(long)} on `tiles.json`'s four long groups" in text
    shape = dict(batch=1, heads=16, seq=32768, head_dim=128, dtype="fp16", gpu=agreement.PRESET, block_q=64, block_kv=128)
    grid, step = cost.schedule(gpusim.simulate("flash2", **shape))
    ms = next(r["ms"] for r in json.loads((RESULTS / "tiles.json").read_text())["rows"] if (
        r["algo"], r["head_dim"], r["causal"], r["seq"], r["block_q"], r["block_kv"], r["num_warps"]) == (
        "flash2", 128, False, 32768, 64, 128, 4))
    waves, steps = grid.programs / grid.slots, grid.steps // grid.programs
    assert (f"gpusim's step is {step.serial_s * 1e6:.2f} µs of compute and {cost.wait(grid.cfg.gpu, step.step_bytes) * 1e6:.2f}"
            f" µs of loads, against {ms * 1e3 / waves / steps:.2f} µs measured ({ms:.1f} ms over {waves:.0f} waves of "
            f"{steps} steps). Run 103 measured that compute alone (section \"A lone program\", below): "
            f"{report_steps.compute_alone_rows()[64, 128][1]:.2f} µs") in text


def test_perf_md_quotes_host_json_as_run_105_measured_it():
    """host_run105.json (run 105, host.json until run 156): the entries meeting issue 24's per-call targets, the training
    step's shapes that meet it, and SDPA's own call cost over the shapes, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = [r for r in json.loads((RESULTS / "host_run105.json").read_text())["rows"] if r.get("us") and "seq_kv" not in r]
    met = lambda entry: [r["us"] / r["sdpa_us"] <= report_kernels.HOST_TARGETS[entry]  # noqa: E731
                         for r in rows if r["entry"] == entry]
    assert all(all(met(e)) for e in ("flash2_attention", "hopper_attention", "naive_attention"))
    words = {1: "one shape", 2: "two shapes", 3: "three shapes"}
    assert f"and the training step meets it on {words[sum(met('flash2_train_step'))]} of three" in text
    sdpa = [r["sdpa_us"] for r in rows if r["entry"] != "flash2_train_step"]  # a forward call's
    assert f"{min(sdpa):.0f}–{max(sdpa):.0f} µs in run 105's" in text


def test_perf_md_quotes_host_json_as_run_156_measured_it():
    """host.json (run 156): the forward entries meet issue 24's per-call targets, the training step's ratios over SDPA's
    and SDPA's own forward call cost, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = [r for r in json.loads((RESULTS / "host.json").read_text())["rows"] if r.get("us") and "seq_kv" not in r]
    assert all(r["us"] / r["sdpa_us"] <= report_kernels.HOST_TARGETS[r["entry"]] for r in rows
               if r["entry"] in ("flash2_attention", "hopper_attention", "naive_attention"))
    steps = [r["us"] / r["sdpa_us"] for r in rows if r["entry"] == "flash2_train_step"]
    assert len(steps) == 3 and min(steps) > report_kernels.HOST_TARGETS["flash2_train_step"]
    assert f"misses it on all three shapes ({min(steps):.2f}–{max(steps):.2f}×)" in text
    sdpa = [r["sdpa_us"] for r in rows if r["entry"] != "flash2_train_step"]
    assert f"and {min(sdpa):.0f}–{max(sdpa):.0f} µs in run 156's" in text
    before = [r["us"] for r in json.loads((RESULTS / "host_run105.json").read_text())["rows"]
              if r["entry"] == "flash2_train_step"]
    now = [r["us"] for r in rows if r["entry"] == "flash2_train_step"]
    assert f"({statistics.median(now) / statistics.median(before):.2f}× run 105's training-step median" in text
    share = {k: [r["tensor_share"] for r in json.loads((RESULTS / "tensor_pipe.json").read_text())["rows"]
                 if r["kernel"] == k] for k in ("flash1", "flash2")}
    assert (f"its tensor-pipe share is {min(share['flash1']):.2f}–{max(share['flash1']):.2f} of its cycles (0.11–0.18 "
            f"before), flash2's {min(share['flash2']):.2f}–{max(share['flash2']):.2f}") in text


@before_retimed
@before_full_issue
def test_perf_md_quotes_run_105s_training_steps_timed_per_call():
    """Run 105: the training steps timed per call against run 102's events (GPU-bound and host-bound), the rows within
    20% before and after over the eleven sets, the training steps within 20%, and host.json's per-step cost (the
    floor it derives and its spread), as docs/perf.md quotes them, recomputed from the files and the run's logs."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    sets = report_heldout.remeasured_rows(105)
    moved = {True: [], False: []}
    for a, b in (p for pairs in sets.values() for p in pairs if p[0]["kind"] == "train"):
        assert a["timing"] == "events" and b["timing"] == "wall_per_call"
        sim = agreement.heldout_simulated(a)
        moved[sum(k.predicted_time_s for k in sim.kernels) < sim.config.gpu.train_step_host_s].append(b["ms"] / a["ms"])
    span = report_kernels._span
    assert f"The GPU-bound steps reproduce ({span(moved[False])} the events' time); the host-bound ones took {span(moved[True])}" in text
    before, after = (sum(report_heldout._within([pair[i] for pair in pairs])[0] for pairs in sets.values())
                     for i in (0, 1))
    total = sum(report_heldout._within([b for _, b in pairs])[1] for pairs in sets.values())
    train = [x for name in ELEVEN for r, x in agreement.heldout_rows(name) if r["kind"] == "train"]
    assert (f"{before} of {total} rows within 20% before and {after} after, and {sum(0.8 <= x <= 1.2 for x in train)} "
            f"of the {len(train)} training steps") in text
    steps = lambda rows: [r["us"] for r in rows if r["entry"] == "flash2_train_step"]  # noqa: E731
    now = steps(json.loads((RESULTS / "host_run105.json").read_text())["rows"])
    with tarfile.open(report_heldout.TRAIN_TIMED) as tar:
        other = steps(json.load(tar.extractfile("run105/host_run105a.json"))["rows"])
    floor = gpusim.get_gpu(agreement.PRESET).train_step_host_s
    assert abs(statistics.median(now) * 1e-6 / floor - 1) < 1e-3
    assert (f"went from run 44's 711 µs to {floor * 1e6:.0f} µs (its three shapes {min(now):.0f}–{max(now):.0f} µs; on "
            f"another lent machine the same day, {min(other):.0f}–{max(other):.0f} µs") in text
    assert f"took {now[1]:.0f} µs on one shape in this call and {other[1]:.0f} µs on the same shape" in text


@before_full_issue
def test_perf_md_quotes_the_compute_alone_as_run_103_measured_it():
    """overlap_d128.json (run 103): gpusim's compute of a lone flash2 step over the measured loop without loads, on 4
    and 8 warps, and with the issue at the full rate; the lone 64 x 64 step's share left for the loads
    (lone_program.json, cold, 2 stages); the 64 x 128 step of tiles.json's longest non-causal group, as docs/perf.md
    quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_steps.compute_alone_rows()
    span = lambda values: f"{min(values):.2f}–{max(values):.2f}×"  # noqa: E731
    by_warps = {w: [r for r in rows.values() if r[0] == w] for w in (4, 8)}
    assert len(by_warps[4]) == 3 and len(by_warps[8]) == 2
    serial = {w: span([r[6] / r[1] for r in v]) for w, v in by_warps.items()}
    full = {w: span([(r[2] + max(r[4], r[5])) / r[1] for r in v]) for w, v in by_warps.items()}
    assert f"{serial[4]} slow on the 4-warp tiles and {serial[8]}" in text and min(r[6] / r[1] for r in rows.values()) > 1.2
    assert f"the full rate, one a clock per scheduler ({full[4][:-1]}×)" in text
    assert f"less than even that sum ({full[8][:-1]}×)" in text and all(r[2] + max(r[4], r[5]) > r[1] for r in by_warps[8])
    lone = report_steps.lone_program_rows("cold")[128, 64, 64, 2][0]
    alone, wait = rows[64, 64][1], rows[64, 64][7]
    assert (f"at 64 × 64, {lone:.2f} µs measured, of which {alone:.2f} µs is compute, leaves {lone - alone:.2f} µs for "
            f"the loads, which gpusim's wait puts at {wait:.2f} µs") in text and lone - alone > wait
    shape = dict(batch=1, heads=16, seq=32768, head_dim=128, dtype="fp16", gpu=agreement.PRESET, block_q=64, block_kv=128)
    grid, step = cost.schedule(gpusim.simulate("flash2", **shape))
    measured = next(r["ms"] for r in json.loads((RESULTS / "tiles.json").read_text())["rows"] if (
        r["algo"], r["head_dim"], r["causal"], r["seq"], r["block_q"], r["block_kv"], r["num_warps"]) == (
        "flash2", 128, False, 32768, 64, 128, 4))
    per_step = measured * 1e3 / (grid.programs / grid.slots) / (grid.steps / grid.programs)
    assert (f"({rows[64, 128][1]:.2f} + {1e6 * cost.wait(grid.cfg.gpu, step.step_bytes):.2f} µs against the "
            f"{per_step:.2f} µs measured)") in text


def test_perf_md_quotes_what_the_loads_add_to_a_lone_step():
    """The lone step less its compute alone over gpusim's wait for its loads (report_steps.exposed_loads_table's last
    column), at 2 stages and at 3-4, and the 8-warp tiles hiding the least at each, as docs/perf.md quotes them."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = [line.strip("|").split("|") for line in report_steps.exposed_loads_table().splitlines()[2:]]
    ratio = {(int(warps), int(stages)): [] for _, warps, stages, *_ in rows}
    for _, warps, stages, *_, last in rows:
        ratio[int(warps), int(stages)].append(float(last))
    two = ratio[4, 2] + ratio[8, 2]
    deep = [x for (w, s), v in ratio.items() if s > 2 for x in v]
    assert (f"At 2 stages a step's loads add {min(two):.2f}–{max(two):.2f}× gpusim's whole wait for them, more than the "
            f"wait itself, and at 3 and 4 stages {min(deep):.2f}–{max(deep):.2f}× of it") in text and min(two) > 1
    assert min(ratio[8, 2]) > max(ratio[4, 2]) and min(ratio[8, 3] + ratio[8, 4]) > max(ratio[4, 3] + ratio[4, 4])


def test_perf_md_quotes_the_issue_trial_as_computed():
    """report_steps.measured_issue (not adopted): the picks it moves past 5% of the fastest tile, and the d = 64 loop of
    overlap.json (run 57) it prices, one program per SM against two or three (those an SM holds at once), as
    docs/perf.md quotes them, recomputed; the model as it was once the block ends."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    before = (cost.ISSUE_HIDING, agreement.tile_choice())
    ratio = {}
    with report_history.full_last_wave(), report_steps.measured_issue():  # on the model before cost.last_per_sm
        off = {key: pick for key, pick in agreement.tile_choice().items() if pick[1] is not None and pick[1] > 1.05}
        for r in json.loads((RESULTS / "overlap.json").read_text())["rows"]:
            b = r["programs_per_sm"]
            if r["variant"] != "softmax" or b > min(3, r["resident"]):
                continue
            grid, step = cost.schedule(gpusim.simulate(
                "flash2", batch=1, heads=132 * b, seq=r["br"], seq_kv=16 * r["bc"], head_dim=64, dtype="fp16",
                gpu=agreement.PRESET, tiles=gpusim.Tiles(r["br"], r["bc"], num_warps=r["num_warps"])))
            assert grid.resident == b
            ratio.setdefault(b == 1, []).append(b * step.serial_s * 1e6 / (r["ms"] * 1e3 / r["repeats"]))
    assert (cost.ISSUE_HIDING, agreement.tile_choice()) == before and "flash1" not in Flash1.ISSUE_HIDING
    span = report_kernels._span
    assert len(off) == 6 and {key[:2] for key in off} == {("flash2", 64), ("hopper", 64)}
    assert sum(key[2] for key in off) > len(off) / 2 and {pick for pick, _ in off.values()} == {(64, 128), (128, 128)}
    assert (f"in six of the sweep's 24 groups (flash2 and Hopper at d = 64, most of them causal: 64 × 128 or 128 × 128 "
            f"picked at {span([r for _, r in off.values()])})") in text
    assert (f"the model is {span(ratio[True])} the measured loop at one program per SM, but {span(ratio[False])} at two "
            f"and three") in text and max(ratio[True]) < 1 < min(ratio[False])


@before_full_issue
def test_the_pipelined_trial_changes_only_deeper_flash2_pipelines_and_is_undone():
    """report_steps.pipelined(): a flash2 launch at 3 stages priced faster, at 2 stages and a split-KV decode (another
    kernel) unchanged, and the model as it was once the block ends."""
    def times():
        one = dict(batch=1, heads=132, seq=64, seq_kv=1024, head_dim=64, dtype="fp16", gpu="H200-measured")
        return [gpusim.simulate("flash2", **one, tiles=gpusim.Tiles(64, 64, num_stages=s)).predicted_time_s
                for s in (2, 3)] + [gpusim.simulate("split_kv", batch=4, heads=32, kv_heads=8, head_dim=128,
                                                    seq_kv=8192, gpu="H200-measured").predicted_time_s]
    before = times()
    with report_steps.pipelined():
        during = times()
    assert times() == before and during[0] == before[0] and during[2] == before[2] and during[1] < 0.7 * before[1]


@before_full_issue
def test_perf_md_quotes_the_unaligned_lengths_as_measured():
    """unaligned.json (run 96) and unaligned_ncu_stalls.csv (run 98): the slowdowns of an N not a multiple of 16 per
    tile, Nsight's ratios, and the held-out sets' d = 128 flash2 rows split by N % 16, as docs/perf.md quotes them,
    recomputed from the files and the current model."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_kernels.unaligned_rows()
    span = lambda xs: f"{min(xs):.2f}–{max(xs):.2f}×"  # noqa: E731
    over = lambda d, tile, lengths: [rows[(d, *tile)][0][n] / rows[(d, *tile)][0][4096, 4096] for n in lengths]  # noqa: E731
    n_off = ((4095, 4095), (4095, 4096))
    assert (f"1.06–1.11× (64 × 32), {span(over(128, (64, 64), n_off))} (64 × 64) and {span(over(128, (64, 128), n_off))}"
            f" (64 × 128) slower; N_kv alone {span([x for t in ((64, 32), (64, 64), (64, 128)) for x in over(128, t, [(4096, 4095)])])}"
            ) in text and span(over(128, (64, 32), n_off)) == "1.06–1.11×"
    calm = [x for (d, bq, bk) in rows if d == 64 or bq == 128 for x in over(d, (bq, bk), report_kernels.UNALIGNED[1:])]
    steady = [x for (d, bq, bk) in rows for x in over(d, (bq, bk), [(4080, 4080)])]
    assert f"on 128-row tiles (8 warps), {span(calm)}" in text and max(steady) < 1.02 and min(steady) > 0.98
    ncu = report_kernels.unaligned_ncu()
    ratio = lambda key, i: ncu[key][i + 1] / ncu[key][i]  # noqa: E731  (launches: 64x64 aligned, unaligned, 64x128 ...)
    assert (f"the same instructions ({ncu['instructions'][0] / 1e6:.1f} and {ncu['instructions'][1] / 1e6:.1f} million "
            f"at 64 × 64) and the same global-load sectors requested by the SMs, but the L2 serves "
            f"{ratio('l2_read_sectors', 0) - 1:.0%} and {ratio('l2_read_sectors', 2) - 1:.0%} more read sectors, and a "
            f"warp waits per instruction issued {ratio('short_scoreboard', 0):.1f}× and {ratio('short_scoreboard', 2):.1f}× "
            f"longer on the short scoreboard and {ratio('wait', 0):.1f}× and {ratio('wait', 2):.1f}× longer") in text
    assert ncu["l1_global_load_sectors"][0] == ncu["l1_global_load_sectors"][2] and all(
        abs(ratio("l1_global_load_sectors", i) - 1) < 1e-5 and abs(ratio("instructions", i) - 1) < 0.01 for i in (0, 2))
    for before in (True, False):  # the sets' flash2 rows as first measured (run 102's logs), then run 102's
        held = {}
        for r in (pair[not before] for pairs in report_heldout.remeasured_rows().values() for pair in pairs):
            if r.get("ms") and r["kind"] == "forward" and r["algo"] == "flash2" and r["head_dim"] == 128:
                x = agreement.heldout_simulated(r).predicted_time_s / (r["ms"] * 1e-3)
                held.setdefault((r["block_q"], r["block_kv"], r["seq"] % 16 == 0), []).append(x)
        med = lambda key: f"{statistics.median(held[key]):.2f} over {len(held[key])}"  # noqa: E731
        assert (f"64 × 64, {med((64, 64, False))} rows with N % 16 ≠ 0 against {med((64, 64, True))} with N % 16 = 0; "
                f"64 × 128, {med((64, 128, False))} against {med((64, 128, True))}"
                + (f"; 128 × 64 (8 warps), {statistics.median(held[128, 64, False]):.2f} against "
                   f"{statistics.median(held[128, 64, True]):.2f}" if before else ": the gap closed")) in text
    layouts = {(r["block_kv"], r["seq"], str(r["padded"])): r["ms"] for r in json.loads(
        (RESULTS / "unaligned_layouts.json").read_text())["rows"]}
    padded = [ms for (bk, n, how), ms in layouts.items() if bk == 64 and n == 4095 and how != "flash2_attention"]
    assert (f"padded to 4,096 rows a head in {min(padded):.2f}–{max(padded):.2f} ms at 64 × 64 and "
            f"{layouts[128, 4095, '[]']:.2f} ms at 64 × 128, as contiguous (4,096: {layouts[64, 4096, 'flash2_attention']:.2f}"
            f" and {layouts[128, 4096, 'flash2_attention']:.2f} ms)") in text
    fixed = report_kernels.o_mask_rows()
    after = lambda key, n: fixed[key]["late_o_mask", n, 4096] / fixed[key]["q_mask", n, 4096]  # noqa: E731
    rows64 = [key for key in fixed if key[0] == 128 and key[1] == 64]
    assert len(rows64) == 3 and all(abs(fixed[k]["late_o_mask", 4095, 4096] / fixed[k]["late_o_mask", 4096, 4096] - 1) < 0.01
                                    for k in rows64)
    assert (f"4,096 itself {span([after(k, 4096) for k in rows64])} the time before; at 4,095 it takes "
            f"{span([after(k, 4095) for k in rows64])} of it: gpusim's default tile there (64 × 64) "
            f"{1 / after((128, 64, 64), 4095):.2f}× faster") in text
    assert f"also ran {span([after(k, n) for k in fixed if k[:2] == (128, 128) for n in (4096, 4095)])} of the time" in text
    assert f"moved nothing much here ({span([after(k, n) for k in fixed if k[0] == 64 for n in (4096, 4095)])})" in text


def test_perf_md_quotes_the_backward_at_unaligned_lengths_as_run_104_measured_it():
    """unaligned_backward.json (the committed kernels) and the late-mask variant in run 104's logs: the cost of an N
    not a multiple of 16, of an N_kv alone, and the variant's time over the committed kernel's, as docs/perf.md quotes
    them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = report_kernels._span
    now = report_kernels.unaligned_rows(report_kernels.backward_rows())
    late = report_kernels.unaligned_rows(report_kernels.backward_rows(late_mask=True))
    assert len(now) == len(late) == 8
    both = [t[4095, 4095] / t[4096, 4096] for t, _ in now.values()]
    kv = [t[4096, 4095] / t[4096, 4096] for t, _ in now.values()]
    assert f"costs the backward {span(both)} at N = N_kv = 4,095, and an N_kv alone up to {max(kv):.2f}×" in text
    ratio = report_kernels.late_mask_ratios()
    at = lambda d, lengths=None: [x for (h, _, _), r in ratio.items() if h == d  # noqa: E731
                                  for n, x in r.items() if lengths in (None, n)]
    assert (f"it took {span(at(128))[:-1]}× at d = 128 ({span(at(128, (4096, 4096)))[:-1]}× at N = 4,096) and "
            f"{span(at(64))} at d = 64") in text and max(at(128, (4096, 4096))) < 1
    own = [t[4095, 4095] / t[4096, 4096] for t, _ in late.values()]
    assert f"(the variant at 4,095 over itself at 4,096: {span(own)})" in text and min(own) > 1.05


def test_perf_md_quotes_the_o_mask_fix_at_d_64_as_run_101_measured_it():
    """Run 101 made O's own mask at every tile; its d = 64 groups (in its logs) ran gpusim's default causal tile there,
    128 x 64 on 8 warps, slower than tiles.json's rows of the kernel that ships at d = 64, as docs/perf.md says."""
    with tarfile.open(RESULTS / "logs" / "run100-101_flash2_o_mask.tar.gz") as tar:
        fixed = json.load(tar.extractfile("logs/run101_tiles.json"))["rows"]
    key = lambda r: (r["algo"], r["head_dim"], r["causal"], r["seq"], r["block_q"], r["block_kv"], r["num_warps"])  # noqa: E731
    shipped = {key(r): r["ms"] for r in json.loads((RESULTS / "tiles.json").read_text())["rows"] if "ms" in r}
    slower = [r["ms"] / shipped[key(r)] for r in fixed if key(r)[:3] == ("flash2", 64, True) and key(r)[4:] == (128, 64, 8)]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert len(slower) == 2 and f"one resident block instead of two, and {min(slower):.2f}–{max(slower):.2f}× longer" in text


def _missed_target(name):
    """A held-out set that misses issue 24's target: its share of rows within 20% and its training steps', as
    docs/perf.md words them ("87.5% (77 of 88)", "67% (8 of 12)")."""
    pairs, _ = _quoted_shares(name)
    assert not report_heldout.meets_target(pairs)
    within, train = (sum(0.8 <= x <= 1.2 for r, x in pairs if kind in (None, r["kind"])) for kind in (None, "train"))
    trains = sum(r["kind"] == "train" for r, _ in pairs)
    return f"{within / len(pairs):.1%} ({within} of {len(pairs)})", f"{train / trains:.0%} ({train} of {trains})"


def test_mva_is_the_exact_recursion_of_a_closed_network():
    """report_steps.mva against values worked by hand: one program takes the sum of its demands; two programs of demands
    (1, 1) take 3 (each station's queue half a program at n = 1, so each residence 1.5), of (1, 2) take 14/3
    (queues 1/3 and 2/3: residences 4/3 and 10/3); many tend to b x the larger demand."""
    assert report_steps.mva(1, [0.3, 0.5]) == 0.8
    assert report_steps.mva(2, [1.0, 1.0]) == 3.0
    assert abs(report_steps.mva(2, [1.0, 2.0]) - 14 / 3) < 1e-12
    assert report_steps.mva(2, [1.0, 2.0]) > 2 * 2 and abs(report_steps.mva(200, [1.0, 2.0]) / 400 - 1) < 1e-9


@before_full_issue
def test_perf_md_quotes_the_shared_sm_rule_and_its_trial_as_computed():
    """report_steps.sharing_rows (overlap.json, overlap_d128.json): each rule over the measured loop, by tile and warps,
    as docs/perf.md quotes them; the trial (its generated table, which test_agreement checks is current) losing ground
    on every set but decode.json, the held-out flash2 forwards most; and report_steps.shared_sm undone once the block
    ends, while within it a launch of two resident programs is priced faster than their turns."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_steps.sharing_rows()
    span = lambda values: f"{min(values):.2f}–{max(values):.2f}×"  # noqa: E731
    four = [v for (d, bq, bk, warps, b), v in rows.items() if bq == 64 and warps == 4]
    wide = [v for (d, bq, bk, warps, b), v in rows.items() if bq == 128 and warps == 4]
    eight = [v for (d, bq, bk, warps, b), v in rows.items() if warps == 8]
    assert len(four) == 13 and {b for (_, bq, _, _, b) in rows if bq == 64} == {1, 2, 3, 4}
    assert (f"the shared rule is {span([v[3] / v[0] for v in four])} the measured loop at every b, where the model's "
            f"turns are {span([v[1] / v[0] for v in four])} and turns at the full issue rate "
            f"{span([v[2] / v[0] for v in four])}") in text
    assert f"(flash2 gives them 8) come out {span([v[3] / v[0] for v in wide])}" in text
    assert f"the 8-warp ones at one program {span([v[3] / v[0] for v in eight])}" in text
    two = [float(last) for _, _, stages, *_, last in (line.strip("|").split("|") for line in
                                                      report_steps.exposed_loads_table().splitlines()[2:])
           if int(stages) == 2]
    assert f"at one program and 2 stages they add {min(two):.2f}–{max(two):.2f}× gpusim's wait" in text
    table = text.split("<!-- sharing_trial:begin -->")[1].split("<!-- sharing_trial:end -->")[0]
    shares = {}
    for name in ("bench.json", "tiles.json", "decode.json", "bench_bwd.json", "program_setup.json", "held-out, all",
                 "held-out, flash2 forwards", "held-out, training steps"):
        now, trial = table.split(f"| {name} | ")[1].split(" |")[:2]
        shares[name] = float(now.rstrip("%")) - float(trial.strip().rstrip("%"))
    assert shares.pop("decode.json") == 0 and min(shares.values()) > 0
    assert max(shares, key=shares.get) == "held-out, flash2 forwards"
    one = dict(batch=1, heads=264, seq=64, seq_kv=1024, head_dim=64, dtype="fp16", gpu="H200-measured",
               tiles=gpusim.Tiles(64, 64, num_warps=4))
    before = (cost.sm_compute, cost.CONTENTION, gpusim.simulate("flash2", **one).predicted_time_s)
    with report_steps.shared_sm(1.0):
        grid, step = cost.schedule(gpusim.simulate("flash2", **one))
        assert grid.resident == 2 and cost.sm_compute(step, 16, 2) < 2 * (step.fixed_compute_s + 16 * step.overlapped_s)
    assert (cost.sm_compute, cost.CONTENTION, gpusim.simulate("flash2", **one).predicted_time_s) == before


@before_full_issue
def test_perf_md_quotes_the_shared_steps_as_computed():
    """shared_steps.json (run 107): what each added program costs an SM's 2-stage step, the lone step, and gpusim's and
    the trial's step over the measured one, lone and shared, at 2 and 3 stages, as docs/perf.md quotes them."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_steps.shared_steps_rows()
    span = lambda values: f"{min(values):.2f}–{max(values):.2f}"  # noqa: E731
    added = [us - rows[key[:4] + (key[4] - 1,)][0] for key, (us, *_) in rows.items() if key[3] == 2 and key[4] > 1]
    lone = [rows[key][0] for key in rows if key[3] == 2 and key[4] == 1]
    assert (f"at 2 stages each added program costs the SM {span(added)} µs a step, where one program's step alone "
            f"takes {span(lone)} µs") in text and max(added) < min(lone)
    def pick(column, stages, shared):
        return [v[column] for k, v in rows.items() if k[3] == stages and (k[4] > 1) == shared]
    assert (f"gpusim prices the lone step at 2 stages {span(pick(1, 2, False))}× and the shared ones "
            f"{span(pick(1, 2, True))}× (fast); at 3 stages the lone step {span(pick(1, 3, False))}× (slow) and the "
            f"shared ones {span(pick(1, 3, True))}×") in text
    assert (f"The trial gives the lone steps {span(pick(2, 2, False))}× and {span(pick(2, 3, False))}×, the shared "
            f"ones {span(pick(2, 2, True))}× and {span(pick(2, 3, True))}×") in text
    assert max(pick(1, 2, True)) < 1 < min(pick(1, 3, False)) and 1 < min(pick(2, 3, False))
    assert statistics.median(pick(2, 2, True)) < 0.9  # the trial leaves the shared 2-stage steps fast


@before_retimed
@before_full_issue
def test_perf_md_quotes_the_exposed_wait_rule_as_fitted_and_scored(tmp_path):
    """report_steps.fitted_wait on run 107's shared_steps.json (its generated table, checked current by test_agreement)
    and on run 106's (in its logs): the constants and the held-out share docs/perf.md quotes for run 106's, and run
    107's gaining nothing on the held-out sets (within half a point) and losing the tile picks; the trial undone once
    the block ends."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    with tarfile.open(RESULTS / "logs" / "run106_shared_steps.tar.gz") as logs:
        logs.extractall(tmp_path, filter="data")
    run106 = str(tmp_path / "shared_steps_run106.json")
    first = report_steps.fitted_wait(run106)[0]
    again = report_steps.shared_step_slopes(run106)
    moved = [abs(report_steps.shared_step_slopes()[key] / us - 1) for key, us in again.items()]
    assert len(again) == 30
    assert f"run 106 timed three of its tiles, within {100 * min(moved):.1f}–{100 * max(moved):.1f}% of it" in text
    before = gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="H200-measured").predicted_time_s
    with report_steps.exposed_wait(first):
        held = report_heldout.trial_scores()["held-out, all"]
    assert gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="H200-measured").predicted_time_s == before
    assert (f"with run 106's three tiles alone the same fit ({', '.join(map(str, first))}) put the held-out sets at "
            f"{held} within 20%") in text
    table = text.split("<!-- exposed_wait:begin -->")[1].split("<!-- exposed_wait:end -->")[0]
    now, trial = table.split("| held-out, all | ")[1].split(" |")[:2]
    picks = table.split("| tile picks within 5% | ")[1].split(" |")[:2]
    assert abs(float(trial.strip().rstrip("%")) - float(now.rstrip("%"))) < 0.5 < float(held.rstrip("%")) - float(
        now.rstrip("%"))
    assert int(picks[1].split(" of ")[0]) < int(picks[0].split(" of ")[0])
    assert f"exposed wait (trial: e2 {report_steps.fitted_wait()[0][0]}," in table


def test_perf_md_quotes_run_108s_bench_rows_as_they_reproduce():
    """Run 108 timed bench.json's fp16 rows of flash2, the Hopper kernel, SDPA flash and cuDNN again: every row over its
    time in bench.json, and each provider's median, as docs/perf.md quotes them, recomputed from the run's log."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    with tarfile.open(RESULTS / "logs" / "run108_gpu_tests_bench.tar.gz") as logs:
        again = json.load(logs.extractfile("run108/bench.json"))["rows"]
    key = lambda r: tuple(r[k] for k in sorted(ROW_FIELDS))  # noqa: E731
    before = {key(r): r["ms"] for r in json.loads((RESULTS / "bench.json").read_text())["rows"] if r.get("ms")}
    ratios = {}
    for r in again:
        if r.get("ms") and key(r) in before:
            ratios.setdefault(r["provider"], []).append(r["ms"] / before[key(r)])
    assert sorted(ratios) == ["flash2", "hopper", "sdpa_cudnn", "sdpa_flash"]
    every = [x for xs in ratios.values() for x in xs]
    medians = [statistics.median(xs) for xs in ratios.values()]
    assert (f"`bench.json`'s {len(every)} rows of flash2, the Hopper kernel (fp16 and fp8), SDPA flash "
            f"and cuDNN timed again") in text
    assert (f"each row {min(every):.2f}–{max(every):.2f}× its time in `bench.json` (each provider's median "
            f"{min(medians):.2f}–{max(medians):.2f}×)") in text


@before_two_warp_issue
def test_perf_md_quotes_the_lone_issue_rule_as_it_moved_the_sets():
    """cost.full_issue (nineteenth session): the halves' d = 128 rows before (line_issue) and after, the d = 64 half it
    leaves, tiles.json's 64 x 128 tile at d = 128 and run 103's lone loop as the model priced them before, as
    docs/perf.md quotes them; the held-out sets pooled at issue 24's 90% after it, the tile picks kept."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    def halves():
        return [line.split(" | ")[2] for line in report_kernels.halves_table().splitlines()[2:]]
    with report_history.line_issue():
        (fitted, held), before = halves(), report_heldout.model_scores()
        alone = report_steps.compute_alone_rows()
        slow = [x for r, x in agreement.rows("tiles.json") if (r["algo"], r["head_dim"], r["block_q"], r["block_kv"])
                == ("flash2", 128, 64, 128)]
    (fitted_now, held_now), now = halves(), report_heldout.model_scores()
    assert fitted_now == fitted and (f"went from {held} to {held_now} within 20% with it (the fitted d = 64 half "
                                     f"stayed at {fitted}; the halves table above is the model as it stands)") in text
    lone = [serial / us for (bq, bk), (warps, us, *_, serial, _) in alone.items() if warps == 4]
    assert f"priced the loop {min(lone):.2f}–{max(lone):.2f}× slow" in text
    assert f"which the model had priced {min(slow):.2f}–{max(slow):.2f}× slow on `tiles.json`" in text
    assert float(now["held-out, all"].rstrip("%")) >= 90 > float(before["held-out, all"].rstrip("%"))
    assert now["tile picks within 5%"] == before["tile picks within 5%"] == "24 of 24"


def close(x):
    """A predicted / measured ratio within 20%."""
    return 0.8 <= x <= 1.2


def within(pairs):
    """How many (row, predicted / measured) pairs are within 20%."""
    return sum(close(x) for _, x in pairs)


@before_retimed
@before_two_warp_issue
def test_perf_md_quotes_the_blind_sets_of_the_lone_issue_rule():
    """heldout_2038.json and heldout_2039.json (run 110, unscored until cost.full_issue was final): their rows within
    20% now and under the model before it, which of them meets issue 24's target, and the fourteen sets pooled, as
    docs/perf.md quotes them, recomputed; the files' rows are the run's, kept in its log."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    blind = report_heldout.BLIND
    with tarfile.open(RESULTS / "logs" / "run110_heldout_2038_2039.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run110/{n}")) == held_out_file(n) for n in blind)
    def pairs(names):
        return [p for n in names for p in agreement.heldout_rows(n)]
    with report_history.line_issue():
        before = within(pairs(blind))
    now, pooled = pairs(blind), pairs(report_heldout.TRIALED)
    assert (f"the two sets put {within(now)} of their {len(now)} rows ({within(now) / len(now):.1%}) within 20% under "
            f"the model as it then stood and {before} ({before / len(now):.1%}) under the model before "
            f"`cost.full_issue`: the change lifts them by four rows") in text and within(now) - before == 4
    assert [report_heldout.meets_target(agreement.heldout_rows(n)) for n in blind] == [False, True]
    assert len(report_heldout.TRIALED) == 14 and (f"hold {within(pooled):,} of their {len(pooled):,} rows "
                                                f"({within(pooled) / len(pooled):.1%}) within 20%") in text


@before_retimed
@before_two_warp_issue
def test_perf_md_quotes_the_newest_sets_scored_once():
    """heldout_2040.json and heldout_2041.json (run 111, measured after every model change, scored once): their rows
    within 20%, that neither meets issue 24's target, the flash2 forwards priced slow among the misses, and the sixteen
    sets pooled, as docs/perf.md quotes them, recomputed; the files' rows are the run's, kept in its log."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    with tarfile.open(RESULTS / "logs" / "run111_heldout_2040_2041.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run111/{n}")) == held_out_file(n)
                   for n in report_heldout.NEWEST)
    pairs = [p for n in report_heldout.NEWEST for p in agreement.heldout_rows(n)]
    pooled = [p for n in SIXTEEN for p in agreement.heldout_rows(n)]
    misses = [(r, x) for r, x in pairs if not 0.8 <= x <= 1.2]
    slow = [(r, x) for r, x in misses if r["kind"] == "forward" and r["algo"] == "flash2" and x > 1.2]
    assert not any(report_heldout.meets_target(agreement.heldout_rows(n)) for n in report_heldout.NEWEST)
    assert (f"puts {within(pairs)} of their {len(pairs)} rows ({within(pairs) / len(pairs):.1%}) within 20%") in text
    assert (f"{len(slow)} of the {len(misses)} misses are flash2 forwards priced "
            f"{report_kernels._span([x for _, x in slow])} slow, "
            f"{sum(r['head_dim'] == 64 for r, _ in slow)} of them at "
            f"d = 64 and {sum(r['causal'] for r, _ in slow)} causal") in text
    assert len(SIXTEEN) == 16 and (f"the sixteen sets hold {within(pooled):,} of their {len(pooled):,} "
                                                f"rows ({within(pooled) / len(pooled):.1%}) within 20%") in text


@before_retimed
@before_two_warp_issue
def test_perf_md_quotes_the_lone_pipeline_trial_as_computed():
    """report_steps.lone_pipelined (a trial): the cold lone steps it moves before and after, the held-out rows it moves
    in and out of 20%, none of the fitted sets' rows, and best_blocks' tile for notebook 5's shape, as docs/perf.md
    quotes them, recomputed. The trial is undone after its block."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    def state():
        b, h = gpusim.fa2_shape(8192, 64)
        tile = gpusim.simulate("flash2", seq=8192, head_dim=64, batch=b, heads=h, gpu="A100-40GB").config.tiles.blocks
        return (report_steps.lone_program_rows("cold"), {n: agreement.heldout_rows(n) for n in SIXTEEN},
                {n: agreement.rows(n) for n in agreement.FILES}, tile)
    before = state()
    with report_steps.lone_pipelined():
        after = state()
    assert state() == before
    moved = [key for key in before[0] if before[0][key][1] != after[0][key][1]]
    assert {(stages, report_steps.lone_launch(d, gpusim.Tiles(bq, bk, num_stages=stages), 1).config.tiles.num_warps)
            for d, bq, bk, stages in moved} == {(3, 4), (4, 4)}
    ratio = lambda rows: report_kernels._span([rows[k][1] / rows[k][0] for k in moved])  # noqa: E731
    assert f"it takes gpusim from {ratio(before[0])} the measured step to {ratio(after[0])};" in text
    pairs = [(x, y) for n in SIXTEEN for (_, x), (_, y) in zip(before[1][n], after[1][n]) if x != y]
    into, out = sum(close(y) and not close(x) for x, y in pairs), sum(close(x) and not close(y) for x, y in pairs)
    assert f"it moves {len(pairs)} rows, {into} of them into 20% and none out" in text and out == 0
    (bq, bk), (bq_now, bk_now) = before[3], after[3]
    assert before[2] == after[2] and f"d = 64, the course's notebook 5 shape: {bq} × {bk} → {bq_now} × {bk_now})" in text


@before_retimed
@before_lone_pipeline
def test_perf_md_quotes_two_warps_per_scheduler_as_measured_and_scored():
    """Run 113's loops (overlap_d64.json) against gpusim at full issue and under the line, the overlap trial's compute,
    the golden configurations the change moved, and run 112's sets scored once (the files are the run's, kept in its
    log) before and after it, as docs/perf.md quotes them, recomputed."""
    from benchmarks import golden
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = report_kernels._span
    def lone(names, keep):  # {gpusim's column: ratios} at one program per SM, the tiles keep() takes
        rows = report_steps.sharing_rows(names)
        return [(model / us, turns / us) for (d, bq, bk, warps, b), (us, model, turns, _) in rows.items()
                if b == 1 and keep(bq, warps)]
    d64, d128 = (lone((name,), lambda bq, warps: warps == 8) for name in ("overlap_d64.json", "overlap_d128.json"))
    rows32 = lone(("overlap_d64.json",), lambda bq, warps: bq == 32)
    assert (f"that sum is {span([t for _, t in d64])} the measured step at d = 64 and {span([t for _, t in d128])} at "
            f"d = 128") in text and min(t for _, t in d64 + d128) > 1
    assert (f"they take {span([1 / t for _, t in rows32])} that sum (the model, which had `cost.full_issue` give them "
            f"the full rate too, priced them {span([t for _, t in rows32])}), and the line prices them "
            f"{span([m for m, _ in rows32])}") in text and [m for m, _ in rows32] != [t for _, t in rows32]
    with report_steps.two_warp_overlap():
        overlap = lone(("overlap_d64.json", "overlap_d128.json"), lambda bq, warps: warps == 8)
    assert f"The overlap prices the 8-warp loops alone at {span([m for m, _ in overlap])} the measured" in text
    configs = golden.configs()
    now = [golden.record(kw) for kw in configs]
    with report_history.one_warp_issue():
        before = [golden.record(kw) for kw in configs]
        blind_before = [p for n in report_heldout.BLIND_TWO_WARP for p in agreement.heldout_rows(n)]
    moved = [(a, b) for a, b in zip(now, before) if a != b]
    assert (f"{len(moved)} of the golden file's {sum('error' not in r for r in now)} simulated configurations moved, "
            f"all flash2's: their times, and {sum(a['blocks'] != b['blocks'] for a, b in moved)} tiny ones") in text
    assert all(a["counts"] == b["counts"] for a, b in moved) and all(kw["algo"] == "flash2" for kw, r, b in zip(
        configs, now, before) if r != b)
    with tarfile.open(RESULTS / "logs" / "run112_heldout_2042_2043.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run112/{n}")) == held_out_file(n)
                   for n in report_heldout.BLIND_TWO_WARP)
    pairs = [p for n in report_heldout.BLIND_TWO_WARP for p in agreement.heldout_rows(n)]
    eighteen = report_heldout.EIGHTEEN
    pooled = [p for n in eighteen for p in agreement.heldout_rows(n)]
    assert (f"Blind, the model puts {within(pairs)} of their {len(pairs)} rows ({within(pairs) / len(pairs):.1%}) "
            f"within 20%, one more than the model before the change ({within(blind_before)})") in text
    assert within(pairs) - within(blind_before) == 1
    assert not any(report_heldout.meets_target(agreement.heldout_rows(n)) for n in report_heldout.BLIND_TWO_WARP)
    misses = [(r, x) for r, x in pairs if not close(x)]
    forwards = [x for r, x in misses if (r["kind"], r["algo"]) == ("forward", "flash2")]
    assert (f"Of the {len(misses)} misses, {len(forwards)} are flash2 forwards, {sum(x > 1 for x in forwards)} priced "
            f"slow ({span([x for x in forwards if x > 1])}) and {sum(x < 1 for x in forwards)} fast "
            f"({span([x for x in forwards if x < 1])})") in text
    assert len(eighteen) == 18 and (f"the eighteen sets hold {within(pooled):,} of their {len(pooled):,} "
                                                f"rows ({within(pooled) / len(pooled):.1%}) within 20%") in text
    groups = report_steps.lone_eight_warp_rows()
    mended, cost = groups[64, 128, 128], groups[128, 128, 128]
    assert (f"35 → {sum(close(y) for _, y in mended)} of its {len(mended)} rows within 20%), and d = 128's 128 × 128 "
            f"loses {sum(close(x) for x, _ in cost) - sum(close(y) for _, y in cost)} rows, priced fast already") in text
    assert sum(close(x) for x, _ in mended) == 35 and all(y < 0.8 for x, y in cost if close(x) and not close(y))
    short = [row["seq_kv"] for name in eighteen for row, x in agreement.heldout_rows(name) if x < 0.8 and (
        row["kind"], row["algo"], row["head_dim"], row["block_q"], row["block_kv"]) == ("forward", "flash2", 128, 128, 128)]
    assert (f"the {len(short)} it prices under 0.8× all loop over short K/V lengths (N_kv {min(short)}–{max(short):,}, at "
            f"most {-(-max(short) // 128)} blocks of 128)") in text


@before_retimed
def test_perf_md_quotes_the_adopted_pipeline_as_computed_and_scored():
    """cost.lone_pipeline (twenty-second session): the cold lone steps and held-out rows it moves, no fitted row,
    notebook 5's tile and split-K multiple, the golden configurations it moved, and run 114's sets (the files are the
    run's, kept in its log) scored once before and after it, as docs/perf.md quotes them, recomputed."""
    from benchmarks import golden
    from gpusim_course.tiling import warps
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = report_kernels._span
    configs = golden.configs()
    def state():
        b, h = gpusim.fa2_shape(8192, 64)
        tile = gpusim.simulate("flash2", seq=8192, head_dim=64, batch=b, heads=h, gpu="A100-40GB").config.tiles.blocks
        rows = {r["scheme"].split()[0]: r for r in warps.partition_rows("A100-40GB", 8192, 64)}
        extra = rows["split-K"]["shared memory, whole kernel"] - rows["split-Q"]["shared memory, whole kernel"]
        return dict(lone=report_steps.lone_program_rows("cold"), held={n: agreement.heldout_rows(n) for n in
                    report_heldout.TWENTY}, fitted={n: agreement.rows(n) for n in agreement.FILES}, tile=tile,
                    multiple=extra / rows["split-K"]["bytes the SMs request (gpusim)"],
                    golden=[golden.record(kw) for kw in configs])
    with report_history.no_lone_copy():  # the model as it then stood, before the twenty-fourth session's change
        now = state()
    with report_history.no_lone_pipeline():
        before = state()
    moved = [k for k in now["lone"] if now["lone"][k][1] != before["lone"][k][1]]
    ratio = lambda rows: span([rows[k][1] / rows[k][0] for k in moved])  # noqa: E731
    assert f"from {ratio(before['lone'])} the measured step to {ratio(now['lone'])};" in text
    pairs = [(x, y) for n in report_heldout.TWENTY for (_, x), (_, y) in zip(before["held"][n], now["held"][n])
             if x != y]
    into, out = sum(close(y) and not close(x) for x, y in pairs), sum(close(x) and not close(y) for x, y in pairs)
    assert f"it moves {len(pairs)} rows, {into} of them into 20% and none out, and no fitted row" in text and out == 0
    assert before["fitted"] == now["fitted"]
    (bq, bk), (bq_now, bk_now) = before["tile"], now["tile"]
    assert (f"(A100-40GB, N = 8,192, d = 64) from {bq} × {bk} to {bq_now} × {bk_now}" in text
            and f"went from {before['multiple']:.0f}× to {now['multiple']:.1f}×" in text and now["multiple"] > 1)
    changed = [(kw, a, b) for kw, a, b in zip(configs, now["golden"], before["golden"]) if a != b]
    tiles = [(kw, a, b) for kw, a, b in changed if a["blocks"] != b["blocks"]]
    counted = [kw for kw, a, b in tiles if a["counts"] != b["counts"]]
    assert (f"{len(changed)} of the golden file's {sum('error' not in r for r in now['golden'])} simulated configurations "
            f"moved, all flash2's: their times, and {len(tiles)} their default tiles ({len(counted)} tiny ones from 16 "
            f"query rows to 64, their bytes with them)") in text
    assert all(kw["algo"] == "flash2" for kw, _, _ in changed)
    assert all(a["counts"] == b["counts"] for kw, a, b in changed if a["blocks"] == b["blocks"])
    assert all(b["blocks"][0] == 16 and a["blocks"][0] == 64 and kw["seq"] <= 100 for kw, a, b in tiles if kw in counted)
    with tarfile.open(RESULTS / "logs" / "run114_heldout_2044_2045.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run114/{n}")) == held_out_file(n)
                   for n in report_heldout.BLIND_LONE_PIPELINE)
    blind = [p for n in report_heldout.BLIND_LONE_PIPELINE for p in now["held"][n]]
    blind_before = [p for n in report_heldout.BLIND_LONE_PIPELINE for p in before["held"][n]]
    assert (f"Blind, the model puts {within(blind)} of their {len(blind)} rows ({within(blind) / len(blind):.1%}) within "
            f"20%, as many as the model before the change: it moves none of their rows") in text
    assert [x for _, x in blind] == [x for _, x in blind_before]
    met, missed = (report_heldout.meets_target(now["held"][n]) for n in ("heldout_2045.json", "heldout_2044.json"))
    share = lambda n: f"{within(now['held'][n]) / len(now['held'][n]):.1%}"  # noqa: E731
    assert met and not missed and (f"`heldout_2045.json` meets issue 24's target ({share('heldout_2045.json')}" in text
                                   and f"`heldout_2044.json` does not ({share('heldout_2044.json')})" in text)
    misses = [(r, x) for r, x in blind if not close(x)]
    flash2 = [(r, x) for r, x in misses if (r["kind"], r["algo"]) == ("forward", "flash2")]
    slow, fast = [(r, x) for r, x in flash2 if x > 1], [(r, x) for r, x in flash2 if x < 1]
    naive = [(r, x) for r, x in misses if (r["kind"], r["algo"]) == ("forward", "naive")]
    assert {r["head_dim"] for r, _ in slow} == {64} and {(r["head_dim"], r["seq_kv"]) for r, _ in fast} == {(128, 368)}
    assert {(r["head_dim"], r["causal"]) for r, _ in naive} == {(128, True)}
    assert (f"Of the {len(misses)} misses, {len(flash2)} are flash2 forwards, {len(slow)} priced slow "
            f"({span([x for _, x in slow])}, all at d = 64, {sum(r['block_q'] <= 64 for r, _ in slow)} of them on tiles "
            f"of 32 or 64 rows) and {len(fast)} fast ({span([x for _, x in fast])}, d = 128 over a K/V length of 368); "
            f"{len(naive)} are naive attention's causal forwards at d = 128, N {min(r['seq'] for r, _ in naive)}–"
            f"{max(r['seq'] for r, _ in naive)}, priced {span([x for _, x in naive])} slow") in text
    pooled = [p for n in report_heldout.TWENTY for p in now["held"][n]]
    assert (f"Pooled, the twenty sets hold {within(pooled):,} of their {len(pooled):,} rows "
            f"({within(pooled) / len(pooled):.1%}) within 20%") in text and len(report_heldout.TWENTY) == 20


@before_retimed
def test_perf_md_quotes_run_115s_sets_as_scored_with_the_model_unchanged():
    """Run 115's sets (seeds 2046 and 2047, kept in its log until the twenty-third session) scored once with the model
    unchanged since they were measured, their misses by kind, the lone 8-warp forwards at d = 64 of every set, and the
    twenty-two sets pooled, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = report_kernels._span
    with tarfile.open(RESULTS / "logs" / "run115_heldout_2046_2047.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run115/{n}")) == held_out_file(n)
                   for n in report_heldout.UNCHANGED)
    with report_history.no_lone_copy():  # as scored then, before the twenty-fourth session's change
        held = {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_TWO}
        pairs = [p for n in report_heldout.UNCHANGED for p in held[n]]
        assert (f"scored once as the model stands, blind: {within(pairs)} of their {len(pairs)} rows "
                f"({within(pairs) / len(pairs):.1%}) within 20%. Neither meets issue 24's target") in text
        assert not any(report_heldout.meets_target(held[n]) for n in report_heldout.UNCHANGED)
        share = lambda rows: f"{within(rows) / len(rows):.1%}"  # noqa: E731
        steps = [(r, x) for r, x in held["heldout_2046.json"] if r["kind"] == "train"]
        assert (f"`heldout_2046.json` {share(held['heldout_2046.json'])} (its training steps {within(steps) / len(steps):.0%}), "
                f"`heldout_2047.json` {share(held['heldout_2047.json'])}.") in text
        def lone_eight_warps(row):  # one 8-warp program of 128 rows per SM, in one wave or less
            grid, _ = cost.schedule(agreement.heldout_simulated(row))
            return (grid.res.num_warps, grid.resident, grid.cfg.block_q) == (8, 1, 128) and grid.programs <= grid.slots
        misses = [(r, x) for r, x in pairs if not close(x)]
        kind = lambda k: [(r, x) for r, x in misses if (r["kind"], r["algo"]) == k]  # noqa: E731
        flash2 = kind(("forward", "flash2"))
        slow, fast = [(r, x) for r, x in flash2 if x > 1], [(r, x) for r, x in flash2 if x < 1]
        slow64 = [r for r, _ in slow if r["head_dim"] == 64]
        assert {r["head_dim"] for r, _ in fast} == {128}
        steps = kind(("train", "flash2"))
        assert (f"Of the {len(misses)} misses, {len(flash2)} are flash2 forwards, {len(slow)} priced slow "
                f"({span([x for _, x in slow])}, {len(slow64)} of them at d = 64, {sum(map(lone_eight_warps, slow64))} of "
                f"those lone 8-warp programs of 128 rows in a launch of one wave or less) and {len(fast)} fast "
                f"({span([x for _, x in fast])}, all at d = 128); {len(steps)} are training steps "
                f"({span([x for _, x in steps])}); the rest {len(kind(('forward', 'naive')))} naive forwards, "
                f"{len(kind(('forward', 'hopper')))} Hopper forward and {len(kind(('decode', 'split_kv')))} decode batch") in text
        assert len(misses) == len(flash2) + len(steps) + sum(len(kind(k)) for k in (("forward", "naive"), ("forward", "hopper"),
                                                                                     ("decode", "split_kv")))
        before = [x for n in report_heldout.TWENTY for r, x in held[n]
                  if (r["kind"], r["algo"], r["head_dim"]) == ("forward", "flash2", 64) and lone_eight_warps(r)]
        assert (f"The twenty sets before held {len(before)} such lone 8-warp forwards at d = 64, priced {span(before)}, "
                f"{sum(not close(x) for x in before)} of them outside 20%") in text and min(before) > 1
        pooled = [p for pairs in held.values() for p in pairs]
        assert (f"Pooled, the twenty-two sets hold {within(pooled):,} of their {len(pooled):,} rows "
                f"({within(pooled) / len(pooled):.1%}) within 20%, under issue 24's 90%") in text
        assert len(held) == 22 and within(pooled) / len(pooled) < 0.9


@before_retimed
def test_perf_md_quotes_the_lone_copy_rate_as_measured_and_scored():
    """cost.lone_copy (twenty-fourth session): the lone 8-warp steps' rates and how the model priced them before, the
    4-warp steps' rate, the fitted and held-out sets before and after, run 116's sets (the files are the run's, kept
    in its log) scored once after it, all the sets pooled, and the golden configurations it moved, as docs/perf.md
    quotes them, recomputed."""
    from benchmarks import golden
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = report_kernels._span
    configs = golden.configs()

    def state():
        return dict(lone=report_steps.lone_program_rows("cold"), scores=report_heldout.model_scores(),
                    held={n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_FOUR},
                    golden=[golden.record(kw) for kw in configs])
    # the model as this section was written, before the twenty-fifth session's change
    with report_history.no_own_copy():
        now = state()
    with report_history.no_lone_copy():
        before = state()
    rate = lambda d, bk, slope: 2 * bk * d * 2 / slope / 1e3  # noqa: E731  (GB/s: bytes over µs)
    eight = {k: v for k, v in now["lone"].items() if k[1] == 128 and k[3] > 2}
    rates = [rate(d, bk, v[0]) for (d, _, bk, _), v in eight.items()]
    assert f"each step moves its bytes at {min(rates):.1f}–{max(rates):.1f} GB/s" in text
    assert f"where the whole wait prices them {span([before['lone'][k][1] / v[0] for k, v in eight.items()])}." in text
    gpu = gpusim.get_gpu("H200-measured")
    assert f"the median of those seven rates, {gpu.lone_copy_bytes_per_s / 1e9:.2f} GB/s" in text and len(eight) == 7
    four = [rate(128, 64, v[0]) for (d, bq, bk, s), v in now["lone"].items() if (d, bq, bk) == (128, 64, 64) and s > 2]
    assert f"moves 32 KiB steps faster ({min(four):.1f}–{max(four):.1f} GB/s, d = 128, 64 × 64)" in text
    assert all(x > gpu.lone_copy_bytes_per_s / 1e9 * 1.5 for x in four)
    b, n = before["scores"], now["scores"]
    assert f"moves the tile sweep (`tiles.json`) from {b['tiles.json']} to {n['tiles.json']} within 20%" in text
    assert all(b[k] == n[k] for k in ("bench.json", "decode.json", "bench_bwd.json", "held-out, training steps"))
    assert (f"(all rows {b['held-out, all']} → {n['held-out, all']}, flash2's forwards "
            f"{b['held-out, flash2 forwards']} → {n['held-out, flash2 forwards']}:") in text
    old = [p for name in report_heldout.TWENTY_TWO for p in before["held"][name]]
    new = [p for name in report_heldout.TWENTY_TWO for p in now["held"][name]]
    assert (f"on all twenty-two sets scored before it gains ({within(old):,} → {within(new):,} of {len(new):,} rows, "
            f"{within(old) / len(old):.1%} → {within(new) / len(new):.1%})") in text
    with tarfile.open(RESULTS / "logs" / "run116_heldout_2048_2049.tar.gz") as logs:
        assert all(json.load(logs.extractfile(f"run116/{name}")) == held_out_file(name)
                   for name in report_heldout.BLIND_LONE_COPY)
    blind = [p for name in report_heldout.BLIND_LONE_COPY for p in now["held"][name]]
    blind_before = [p for name in report_heldout.BLIND_LONE_COPY for p in before["held"][name]]
    moved = [(x, y) for (_, x), (_, y) in zip(blind_before, blind) if x != y]
    assert (f"{within(blind)} of {len(blind)} rows ({within(blind) / len(blind):.1%}) within 20%, the same count as "
            f"without it ({len(moved)} of their rows moved, none across the 20% line)") in text
    assert within(blind_before) == within(blind) and all(close(x) == close(y) for x, y in moved)
    held = now["held"]
    hopper = [(r, x) for r, x in held["heldout_2048.json"] if (r["kind"], r["algo"]) == ("forward", "hopper")]
    share = lambda name: f"{within(held[name]) / len(held[name]):.1%}"  # noqa: E731
    assert (f"`heldout_2048.json` {share('heldout_2048.json')} (its Hopper forwards {within(hopper)} of {len(hopper)}), "
            f"`heldout_2049.json` {share('heldout_2049.json')}, which meets issue 24's target") in text
    assert (report_heldout.meets_target(held["heldout_2049.json"])
            and not report_heldout.meets_target(held["heldout_2048.json"]))
    pooled = [p for pairs in held.values() for p in pairs]
    assert (f"All twenty-four sets pooled: {within(pooled):,} of {len(pooled):,} rows "
            f"({within(pooled) / len(pooled):.1%})") in text and len(held) == 24
    changed = [(a, c) for a, c in zip(now["golden"], before["golden"]) if a != c]
    assert (f"{['None', 'One', 'Two', 'Three'][len(changed)]} of the golden file's "
            f"{sum('error' not in r for r in now['golden'])} simulated configurations moved (its time; no count)") in text
    assert all(a["counts"] == c["counts"] for a, c in changed)



@before_retimed
def test_perf_md_quotes_a_programs_own_tiles_as_measured_and_scored():
    """cost.own_copy (twenty-fifth session): program_start.json's waves, priced before and after it, the one-wave
    launches, the launch's extrapolation, the fitted and held-out sets before and after, runs 117 and 118's four sets
    (the files are the runs', kept in their logs) scored once after it, and all the sets pooled, as docs/perf.md quotes
    them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span, per_wave = report_kernels._span, report_launches.per_wave
    # the model as this section was written, before the twenty-sixth session's change
    with report_history.full_last_wave():
        now, start_now = report_launches.program_start_rows(), report_launches.program_start_share()
        scores, held = report_heldout.model_scores(), {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_FIVE}
    with report_history.no_own_copy():
        before, scores_before = report_launches.program_start_rows(), report_heldout.model_scores()
        held_before = {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_FIVE}
    lone = [k for k, waves in now.items() if all(b == 1 for *_, b in waves.values())]
    assert sorted({k[:3] for k in lone}) == [(64, 128, 128), (128, 128, 64), (128, 128, 128)]
    gap = [per_wave(now[k], 0) - per_wave(before[k], 1) for k in lone]
    assert f"a wave cost {min(gap):.1f}–{max(gap):.1f} µs more than the program's chain" in text
    assert (f"The lone programs' waves are now priced {span([per_wave(now[k], 1) / per_wave(now[k], 0) for k in lone])}"
            f" at J = 1 and 4 ({span([per_wave(before[k], 1) / per_wave(before[k], 0) for k in lone])} before)") in text
    shared = [k for k in now if k not in lone and k[3] == 1]
    assert (f"(b = 2–5) at J = 1 are still priced fast "
            f"({span([per_wave(now[k], 1) / per_wave(now[k], 0) for k in shared])} of the measured wave)") in text
    assert {now[k][16][2] for k in shared} == {2, 3, 4, 5}
    one = {k: now[k][1][1] / now[k][1][0] for k in now if k[3] == 1}
    assert (f"one-wave launches are priced {span(list(one.values()))} slow at J = 1 "
            f"({span([v for k, v in one.items() if k[1] == 64])} on the 64-row tiles)") in text
    intercepts = [np.polyfit(list(now[k]), [m for m, *_ in now[k].values()], 1)[1] for k in lone]
    assert f"extrapolates to {min(intercepts):.1f}–{max(intercepts):.1f} µs at zero waves" in text
    assert gpusim.get_gpu("H200-measured").launch_overhead_s == 3.2e-6
    with report_history.no_own_copy():
        start_before = report_launches.program_start_share().split(" of")[0]
    assert (f"moves the tile sweep (`tiles.json`) from {scores_before['tiles.json']} to 100% within 20% and "
            f"`program_start.json` from {start_before} to {start_now.split(' of')[0]}") in text
    assert scores["tiles.json"] == "100.0%"
    assert all(scores_before[k] == scores[k] for k in ("bench.json", "decode.json", "bench_bwd.json",
                                                           "program_setup.json"))
    assert (f"(all rows {scores_before['held-out, all']} → {scores['held-out, all']}, flash2's forwards "
            f"{scores_before['held-out, flash2 forwards']} → {scores['held-out, flash2 forwards']})") in text
    old = [p for n in report_heldout.TWENTY_FOUR for p in held_before[n]]
    new = [p for n in report_heldout.TWENTY_FOUR for p in held[n]]
    assert (f"on all twenty-four sets scored before it ({within(old):,} → {within(new):,} of {len(new):,} rows, "
            f"{within(old) / len(old):.1%} → {within(new) / len(new):.1%})") in text
    for log, names in (("run117_heldout_2050_2051.tar.gz", ("heldout_2050.json", "heldout_2051.json")),
                       ("run118_program_start_heldout_2052_2053.tar.gz", ("heldout_2052.json", "heldout_2053.json"))):
        with tarfile.open(RESULTS / "logs" / log) as logs:
            assert all(json.load(logs.extractfile(f"{log.split('_')[0]}/{name}")) == held_out_file(name)
                       for name in names)
    blind = [p for n in report_heldout.BLIND_OWN_COPY for p in held[n]]
    blind_before = [p for n in report_heldout.BLIND_OWN_COPY for p in held_before[n]]
    moved = [(x, y) for (_, x), (_, y) in zip(blind_before, blind) if x != y]
    crossed = [(x, y) for x, y in moved if close(x) != close(y)]
    assert (f"{within(blind)} of {len(blind)} rows ({within(blind) / len(blind):.1%}) within 20%, {within(blind_before)} "
            f"({within(blind_before) / len(blind_before):.1%}) without it ({len(moved)} of their rows moved, "
            f"{len(crossed)} across the 20% line, {sum(close(y) for _, y in crossed)} of them into it)") in text
    share = lambda n: f"{within(held[n]) / len(held[n]):.1%}"  # noqa: E731
    kind = lambda n, k, a: [p for p in held[n] if (p[0]["kind"], p[0]["algo"]) == (k, a)]  # noqa: E731
    train = [kind(n, "train", "flash2") for n in ("heldout_2050.json", "heldout_2051.json")]
    hopper = kind("heldout_2052.json", "forward", "hopper")
    assert (f"`heldout_2050.json` {share('heldout_2050.json')} and `heldout_2051.json` {share('heldout_2051.json')} "
            f"(each with {within(train[0])} of {len(train[0])} training steps") in text and within(train[1]) == within(train[0])
    assert (f"`heldout_2052.json` {share('heldout_2052.json')} (Hopper forwards {within(hopper)} of {len(hopper)}: "
            f"misses it), `heldout_2053.json` {share('heldout_2053.json')} (meets it)") in text
    assert [report_heldout.meets_target(held[n]) for n in report_heldout.BLIND_OWN_COPY] == [False, False, False, True]
    pooled = [p for pairs in held.values() for p in pairs]
    met = sum(report_heldout.meets_target(pairs) for pairs in held.values())
    assert (f"All twenty-eight sets pooled: {within(pooled):,} of {len(pooled):,} rows "
            f"({within(pooled) / len(pooled):.1%}); {met} of the 28 meet the target") in text and len(held) == 28


@before_retimed
@before_measured_issue
def test_perf_md_quotes_the_backward_with_several_query_heads_per_kv_head_as_measured():
    """bwd_gqa.json (run 127, cold): the dK/dV kernel's slowdown from 16 to 2 K/V heads, measured and in gpusim, dQ's
    none, gpusim's time over the measured one per kernel and head dim, and run 127's times over run 119's (warm), as
    docs/perf.md quotes them, recomputed; the two held-out sets of run 119, kept in its log unscored, are in
    results/h200 as the log has them."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_steps.bwd_gqa_rows()
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}"  # noqa: E731
    with tarfile.open(RESULTS / "logs" / "run119_bwd_gqa_warm.tar.gz") as tar:
        warm = json.load(tar.extractfile("run119/bwd_gqa.json"))["rows"]
    cold = json.loads((RESULTS / "bwd_gqa.json").read_text())["rows"]
    key = lambda r: (r["kernel"], r["head_dim"], r["causal"], r["seq"], r["kv_heads"])  # noqa: E731
    before = {key(r): r for r in warm}
    moved = {key(r)[1:4] for r in cold if (r["block_q"], r["block_kv"]) != (before[key(r)]["block_q"],
                                                                             before[key(r)]["block_kv"])}
    assert moved == {(64, False, 2048)} and {r["l2"] for r in cold} == {"cold"} and len(cold) == len(warm) == 64
    same = [r["ms"] / before[key(r)]["ms"] for r in cold if key(r)[1:4] not in moved]
    assert (f"Cold, the same launches took {span(same)}× its times, but for d = 64 non-causal at 2K, where `best_blocks` "
            f"now picks 64 × 64 (run 119 ran 128 × 64)") in text
    assert {(r["block_q"], r["block_kv"]) for r in cold if key(r)[1:4] in moved} == {(64, 64)}
    slow = lambda pick, i: span([kv[2][i] / kv[16][i] for k, kv in rows.items() if k[0] == "dkdv" and pick(k)])  # noqa: E731
    short, ramp, full = (lambda k: k[3] == 2048), (lambda k: k[3] == 8192 and k[2]), (lambda k: k[3] == 8192 and not k[2])
    assert (f"takes {slow(short, 0)}× as long at N = 2K (too few programs to fill the SMs: 32 to 64 of them at 2 K/V "
            f"heads) and {slow(ramp, 0)}× causal at 8K") in text
    assert f"{slow(full, 0)}× non-causal at 8K; gpusim gives {slow(short, 1)}×, {slow(ramp, 1)}× and 1.00×" in text
    assert slow(full, 1) == "1.00–1.00"
    assert all(abs(kv[2][i] / kv[16][i] - 1) < 0.06 for k, kv in rows.items() if k[0] == "dq" for i in (0, 1))
    ratio = lambda kernel, d: span([p / m for k, kv in rows.items() if k[:2] == (kernel, d) for m, p in kv.values()])  # noqa: E731
    assert (f"at d = 64 dK/dV priced fast ({ratio('dkdv', 64)}×) and dQ slow ({ratio('dq', 64)}×, most at 2K non-causal, "
            f"64 × 64), at d = 128 within {ratio('dkdv', 128)}× (dK/dV) and {ratio('dq', 128)}× (dQ)") in text
    with tarfile.open(RESULTS / "logs" / "run119_bwd_gqa_heldout_2054_2055.tar.gz") as logs:  # kept there unscored
        assert all(json.load(logs.extractfile(f"run119/{name}")) == held_out_file(name)
                   for name in report_heldout.BLIND_LAST_WAVE)  # until the next change (the twenty-sixth session's)


def test_perf_md_quotes_what_a_launch_is_made_of_as_measured():
    """launch_parts.json (run 120): the one-wave copies' times, what the smallest copy adds to the empty kernel, the
    marginal rates from 16 to 32 KiB, as docs/perf.md quotes them, recomputed; the cold copy at 132 programs is bound
    by the DRAM's copy rate (reads and writes of all SMs at about GPU.hbm_bytes_per_s)."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    us, rates = report_launches.launch_parts_ms(), report_launches.launch_parts_rates()
    one = report_launches.launch_parts_rates(1)
    empty = [v for (kind, *_), v in us.items() if kind == "empty"]
    assert f"an empty kernel takes {min(empty):.1f}–{max(empty):.2f} µs" in text
    assert (f"takes {us['copy', 132, 128, 'cold']:.2f} µs at 128 B, cold, and {us['copy', 132, 32768, 'cold']:.2f} µs at "
            f"32 KiB: the smallest cold copy adds {rates['first_cold']:.2f} µs to the empty kernel "
            f"({rates['first_warm']:.2f} µs warm, and {one['first_cold']:.2f} µs cold for a single program)") in text
    assert (f"its bytes read at {rates['copy_cold']:.1f} GB/s cold") in text
    assert (f"and {rates['copy_warm']:.1f} GB/s warm, a store alone {rates['store']:.1f} GB/s") in text
    gpu = gpusim.get_gpu("H200-measured")
    assert 0.9 < 132 * 2 * rates["copy_cold"] * 1e9 / gpu.hbm_bytes_per_s < 1.25
    kinds = [v for (kind, programs, _, l2), v in us.items() if kind in ("load", "copy") and programs == 132 and l2 == "cold"]
    assert f"costs {min(kinds):.1f}–{max(kinds):.1f} µs in all, where gpusim adds 3.2 µs" in text



@report_history.waves_at_share()  # the model the section was written with (the last wave counted once after)
def test_perf_md_quotes_naives_launches_as_measured():
    """naive_launches.json (run 148) and qk_parts.json (run 149): the empty kernels in a row, the call against its
    kernels alone, pv's and qk's misses before the thirty-ninth session's change, qk's store rate and its halves in
    series, the store constant, and what the change moves: the held-out sets' naive rows, bench.json's, Nsight's
    launches and the golden file, as docs/perf.md quotes them, recomputed from the files and the model."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    empty = report_launches.naive_empty_us()
    assert (f"take {empty[1, 1]:.2f}, {empty[1, 2]:.2f} and {empty[1, 3]:.2f} µs (one program each) and "
            f"{empty[132, 1]:.2f}, {empty[132, 2]:.2f} and {empty[132, 3]:.2f} µs (132 each)") in text
    added = [empty[p, n] - empty[p, n - 1] for p in (1, 132) for n in (2, 3)]
    assert f"each launch after the first adds {min(added):.2f}–{max(added):.2f} µs" in text
    shapes = {}
    for r in json.loads((RESULTS / "naive_launches.json").read_text())["rows"]:
        if r["kernel"] != "empty":
            shapes.setdefault((r["heads"], r["seq"], r["head_dim"], r["causal"]), {})[r["kernel"]] = r["ms"]
    whole = [s["all"] / (s["qk"] + s["softmax"] + s["pv"]) for s in shapes.values()]
    assert f"The call takes {min(whole):.2f}–{max(whole):.2f}× the sum of its three kernels" in text
    gpu = gpusim.get_gpu(agreement.PRESET)
    assert f"about {3 * (gpu.launch_overhead_s - gpu.graph_launch_s) * 1e6:.1f} µs slow" in text
    figures = report_launches.naive_launch_figures()
    assert f"priced pv's launches up to {figures['pv']['before'][4]:.1f}× slow" in text
    parts = {k: v for k, v in report_launches.qk_parts_us().items() if k[1] == 2048}
    rate = [k[0] * k[1] ** 2 * 2 / (v["store_only"] * 1e-6) / 1e12 for k, v in parts.items()]
    series = [v["full"] / (v["no_store"] + v["store_only"] - v["empty"]) for v in parts.values()]
    assert f"store rows ({min(rate):.2f}–{max(rate):.2f} TB/s at N = 2,048)" in text
    assert f"the whole program takes {min(series):.2f}–{max(series):.2f} of its two halves in series" in text
    with report_history.naive_before():
        ratio = [report_launches.qk_us(*key) / v["full"] for key, v in parts.items() if key[3] == 128]
        naive = [(r["ms"], x) for name in report_heldout.THIRTY_EIGHT for r, x in agreement.heldout_rows(name)
                 if r["algo"] == "naive"]
    assert f"its qk at 128 × 128 was {min(ratio):.2f}–{max(ratio):.2f}× the measured time" in text
    wave = [report_launches.qk_us(*key) / v["full"] for key, v in report_launches.qk_parts_us().items()
            if key[:2] == (64, 256)]
    assert f"qk's one-wave launches (64 × 256 above) are still priced {min(wave):.2f}–{max(wave):.2f}×" in text
    alone = [(report_launches.qk_us(*key) - key[0] * key[1] ** 2 * 2 / gpu.store_bytes_per_s * 1e6) / v["no_store"]
             for key, v in report_launches.qk_parts_us().items() if key[:2] == (64, 256)]
    assert max(alone) < 0.8 and "(its loads and dot alone already are)" in text  # priced without the store
    assert gpu.store_bytes_per_s == pytest.approx(h200_constants.store_bytes_per_s(), rel=1e-3)
    assert f"`GPU.store_bytes_per_s`, {gpu.store_bytes_per_s / 1e12:.3f} TB/s" in text
    store = gpu.store_bytes_per_s / 1e12
    assert f"| HBM stores of 4–64 KiB tiles, a program each, 2 GiB in all | {store:.2f} TB/s |" in text
    assert f"the rate a stream of stores reaches ({gpu.store_bytes_per_s / 1e12:.2f} TB/s;" in text
    short = [x for ms, x in naive if ms < 0.03]
    assert (f"of the {len(short)} measured under 30 µs, {sum(x > 1.2 for x in short)} were priced more than 1.2× slow "
            f"(all {len(short)}: {min(short):.2f}–{max(short):.2f}×)") in text
    bands = ((0.15, 0.5), (0.5, 2), (2, math.inf))
    medians = [statistics.median(x for ms, x in naive if lo <= ms < hi) for lo, hi in bands]
    assert f"from 150 µs up the median was {min(medians):.2f}–{max(medians):.2f}×" in text
    held = report_launches.naive_heldout_figures(report_heldout.THIRTY_EIGHT)
    before, after = held["before"], held["model"]
    assert f"takes the naive rows from {before[0]} to {after[0]} of {after[1]} within 20%" in text
    bench = [x for r, x in agreement.rows("bench.json") if r["provider"] == "naive"]
    with report_history.naive_before():
        bench_before = [x for r, x in agreement.rows("bench.json") if r["provider"] == "naive"]
    both = all(abs(x - 1) <= 0.2 for x in bench + bench_before)
    assert both and (f"the median goes from {statistics.median(bench_before):.2f} to {statistics.median(bench):.2f} "
                     f"(all {len(bench)} within 20% before and after)") in text
    def qk_errors():
        rows = ncu.compare_run("ncu", RESULTS)
        return [r["rel_err"] for r in rows if r["kernel"] == "qk" and r["quantity"] == "time_s"]
    now = qk_errors()
    with report_history.naive_before():
        before = qk_errors()
    assert (f"qk from {1 + min(before):.2f}–{1 + max(before):.2f} of the measured time to "
            f"{1 + min(now):.2f}–{1 + max(now):.2f}") in text
    moved, picked = [], 0
    for args in golden.configs():
        record = golden.record(args)
        with report_history.naive_before():
            was = golden.record(args)
        if record != was:
            moved.append(args["algo"])
            picked += record["blocks"] != was["blocks"]
    assert set(moved) == {"naive"} and (f"The golden file's times moved in {len(moved)} of its 394 simulated "
                                        f"configurations, all naive") in text and f": {picked} of them at tiles" in text


def test_perf_md_quotes_nsights_launch_times_as_the_model_prices_them():
    """ncu.json's launches of 100 µs or more against the model as it stands and before the thirty-ninth session's
    naive launches: the share of each kernel's launches within 25%, and the naive kernels' errors, as docs/perf.md
    quotes them."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    def times():
        rows = [r for r in ncu.compare_run("ncu", RESULTS) if r["quantity"] == "time_s"]
        return {k: [r for r in rows if r["kernel"] == k] for k in dict.fromkeys(r["kernel"] for r in rows)}
    def pct(x):
        return f"{abs(x):.0%}"
    now = times()
    with report_history.naive_before():
        before = times()
    assert all(abs(r["rel_err"]) <= ncu.TARGETS["time_s"] for rows in now.values() for r in rows)
    (was,) = [r for r in now["hopper"] if (r["seq"], r["head_dim"], r["causal"]) == (16384, 64, True)]
    with report_history.one_slot_listed():
        (one_slot,) = [r for r in times()["hopper"] if (r["seq"], r["head_dim"], r["causal"]) == (16384, 64, True)]
    assert one_slot["rel_err"] > ncu.TARGETS["time_s"] and (
        "every kernel within 25% on every launch; the Hopper kernel's at N = 16,384, d = 64, causal, two programs an "
        f"SM, was {pct(one_slot['rel_err'])} long until the sixty-sixth session list-scheduled such launches "
        f"({pct(was['rel_err'])} now;") in text
    qk, pv = ([r["rel_err"] for r in now[k]] for k in ("qk", "pv"))
    assert (f"naive's qk from {pct(min(qk))} short to {pct(max(qk))} long, pv from {pct(min(pv))} short to "
            f"{pct(max(pv))} long") in text
    share = {k: f"{sum(abs(r['rel_err']) <= ncu.TARGETS['time_s'] for r in before[k]) / len(before[k]):.0%}"
             for k in ("qk", "pv")}
    qk, long_pv = [r["rel_err"] for r in before["qk"]], [r["rel_err"] for r in before["pv"] if r["rel_err"] > 0.25]
    assert {r["head_dim"] for r in before["pv"] if r["rel_err"] > 0.25} == {64}
    assert (f"pv was within 25% on {share['pv']} of its launches and qk on {share['qk']}, missing in both directions "
            f"(qk "
            f"predicted {-100 * max(qk):.0f}–{pct(min(qk))} short at d = 64 and 128, pv {100 * min(long_pv):.0f}–"
            f"{pct(max(long_pv))} long at d = 64)") in text


def scored_blind(text, held, held_before, names, run, meets):
    """A change's blind scoring as docs/perf.md quotes it: the two held-out sets kept in run `run`'s log, within 20%
    with the change (held) and without it (held_before), and whether each meets issue 24's target (`meets`); returns
    each set's share with it, as text."""
    blind, before = ([p for n in names for p in h[n]] for h in (held, held_before))
    assert (f"The two sets of run {run}, scored once after it: {within(blind)} of {len(blind)} rows "
            f"({within(blind) / len(blind):.1%}) within 20%, {within(before)} without it") in text
    assert [report_heldout.meets_target(held[n]) for n in names] == meets
    return lambda n: f"{within(held[n]) / len(held[n]):.1%}"


@before_retimed
def test_perf_md_quotes_a_launchs_last_wave_as_measured_and_scored():
    """cost.last_per_sm (twenty-sixth session): last_wave.json's leftover waves as shares of a full wave, measured and
    priced before and after it, the fitted and held-out sets before and after, run 119's two sets (the files are the
    run's, kept in its log) scored once after it, and all the sets pooled, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}"  # noqa: E731
    with report_history.counted_dots():  # the model as this section was written, before the twenty-seventh session's
        now = report_launches.last_wave_rows()
        scores, held = report_heldout.model_scores(), {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_SIX}
    with report_history.full_last_wave():
        before, scores_before = report_launches.last_wave_rows(), report_heldout.model_scores()
        held_before = {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_SIX}
    shares = lambda rows, keys, field, ks=None: [x for k in keys for i, x in enumerate(  # noqa: E731
        report_launches.leftover_shares(rows[k], field)) if ks is None or i + 1 in ks]
    b = {k: v[max(v)][2] for k, v in now.items()}
    many, few = [k for k in now if b[k] >= 4], [k for k in now if b[k] < 4]
    assert {b[k] for k in many} == {4, 5} and {b[k] for k in few} == {2, 3}
    assert (f"A last wave of one program per SM costs {span(shares(now, many, 0, {1}))} of a full wave at b = 4 and 5"
            in text)
    assert f"where the model priced {span(shares(before, many, 1, {1}))}" in text
    assert f"It prices those leftovers at {span(shares(now, many, 1))} of a full wave" in text
    assert (f"the leftover measured {span(shares(now, few, 0))} and is still priced {span(shares(now, few, 1))}" in text
            and span(shares(before, few, 1)) == span(shares(now, few, 1)))
    assert all(scores_before[k] == scores[k] for k in ("bench.json", "tiles.json", "decode.json", "bench_bwd.json",
                                                           "program_setup.json"))
    assert (f"(all rows {scores_before['held-out, all']} → {scores['held-out, all']}, flash2's forwards "
            f"{scores_before['held-out, flash2 forwards']} → {scores['held-out, flash2 forwards']}, training steps "
            f"{scores_before['held-out, training steps']} → {scores['held-out, training steps']})") in text
    with report_history.full_last_wave():
        step_before = {(r["provider"], r["pass"], r["causal"], r["seq"], r["head_dim"]): x
                       for r, x in agreement.rows("bench_bwd.json")}
    with report_history.counted_dots():
        step = {(r["provider"], r["pass"], r["causal"], r["seq"], r["head_dim"]): (r, x)
                for r, x in agreement.rows("bench_bwd.json")}
    key, bwd = ("flash2", "fwd+bwd", True, 512, 64), ("flash2", "bwd", True, 512, 64)
    crossed = [k for k, (_, x) in step.items() if (abs(x - 1) <= 0.4) != (abs(step_before[k] - 1) <= 0.4)]
    assert crossed == [key]
    assert (f"priced {step_before[key]:.3f} → {step[key][1]:.3f} of its measured {step[key][0]['ms']:.3f} ms (its "
            f"backward alone measured {step[bwd][0]['ms']:.3f} ms and is priced {step[bwd][1]:.2f}×") in text
    wide = sum(abs(x - 1) <= 0.4 for _, x in step.values()) / len(step)
    assert f"so that file's rows within 40% go from 100% to {wide:.0%} (the bound now stated: 98%)" in text
    assert agreement.BOUNDS["bench_bwd.json", "all"] == (0.9, 0.98)
    old = [p for n in report_heldout.TWENTY_FIVE for p in held_before[n]]
    new = [p for n in report_heldout.TWENTY_FIVE for p in held[n]]
    met = lambda h: sum(report_heldout.meets_target(h[n]) for n in report_heldout.TWENTY_FIVE)  # noqa: E731
    assert (f"so do all twenty-eight sets scored before it ({within(old):,} → {within(new):,} of {len(new):,} rows, "
            f"{within(old) / len(old):.1%} → {within(new) / len(new):.1%}; {met(held_before)} → {met(held)} sets meet "
            f"issue 24's target)") in text and len(report_heldout.TWENTY_FIVE) == 28
    share = scored_blind(text, held, held_before, report_heldout.BLIND_LAST_WAVE, 119, [True, False])
    hopper = [p for p in held["heldout_2055.json"] if (p[0]["kind"], p[0]["algo"]) == ("forward", "hopper")]
    assert (f"`heldout_2054.json` {share('heldout_2054.json')} (meets the target), `heldout_2055.json` "
            f"{share('heldout_2055.json')} (Hopper forwards {within(hopper)} of {len(hopper)}: misses it") in text
    pooled = [p for pairs in held.values() for p in pairs]
    assert (f"All thirty sets pooled: {within(pooled):,} of {len(pooled):,} rows ({within(pooled) / len(pooled):.1%}); "
            f"{sum(report_heldout.meets_target(h) for h in held.values())} of the 30 meet the target") in text
    with report_history.counted_dots():
        gqa = {k: v for k, v in report_steps.bwd_gqa_rows().items() if k[:2] == ("dq", 64)}
    with report_history.full_last_wave():
        gqa_before = {k: v for k, v in report_steps.bwd_gqa_rows().items() if k[:2] == ("dq", 64)}
    ratios = lambda rows: [p / m for kv in rows.values() for m, p in kv.values()]  # noqa: E731
    assert (f"dQ alone at d = 64 (`bwd_gqa.json`, as run 127 measured it again, cold) is now priced {span(ratios(gqa))}× "
            f"({span(ratios(gqa_before))}× before: its GQA launches of few programs end in a partial wave)") in text
    with report_history.counted_dots(), report_launches.lone_last_wave():
        trial, picks = report_launches.last_wave_rows(), agreement.tile_choice()
    assert (f"It prices the leftovers of one program per SM at {span(shares(trial, many, 1, {1}))} of a full wave at "
            f"b = 4 and 5, and those at b = 2 and 3 at {span(shares(trial, few, 1))}") in text
    moved = {k: v for k, v in picks.items() if v[1] is not None and v[1] > 1.05}
    assert list(moved) == [("flash2", 64, True, 8192)]
    assert f"to {moved['flash2', 64, True, 8192][0][0]} × {moved['flash2', 64, True, 8192][0][1]}, " \
           f"{moved['flash2', 64, True, 8192][1]:.2f}× the fastest tile" in text
    with tarfile.open(RESULTS / "logs" / "run121_last_wave_heldout_2056_2057.tar.gz") as logs:
        kept = {seed: json.load(logs.extractfile(f"run121/heldout_{seed}.json")) for seed in (2056, 2057)}
    assert all(kept[seed] == held_out_file(f"heldout_{seed}.json") for seed in kept)


@before_retimed
@before_measured_issue
def test_perf_md_quotes_whole_tiles_in_the_dots_as_measured_and_scored():
    """cost.dot_padding (twenty-seventh session): ragged_tiles.json's level times and steps, its launches priced
    before and after, the sets scored before it, run 121's two sets (kept in its log until now) scored once after it,
    and best_blocks' picks in the golden file that move, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_steps.ragged_tiles_rows()
    level = {k: [v[n][0] for n in v if 384 < n <= (448 if k[0] == "flash2_64x64" else 512)] for k, v in rows.items()}
    spread = {k: max(v) / min(v) - 1 for k, v in level.items()}
    step = [v[513][0] / v[512][0] for k, v in rows.items() if k[0] != "flash2_64x64"]
    assert (512 / 385) ** 2 == pytest.approx(1.77, abs=0.005)
    assert max(x for k, x in spread.items() if k != ("hopper", 64)) < 0.04
    hopper_385 = rows["hopper", 64][385][0] / rows["hopper", 64][512][0] - 1
    assert hopper_385 == spread["hopper", 64] and f"whose 385 takes {hopper_385:.0%} longer than its 512" in text
    assert f"takes {min(step):.2f}–{max(step):.2f}× as long at 513" in text
    assert all(v[480][0] / v[448][0] > 1.2 and v[513][0] / v[512][0] > 1.2 for k, v in rows.items()
               if k[0] == "flash2_64x64")
    assert (f"it prices {report_steps.ragged_tiles_share(2).replace(' of ', ' of the ')} launches within 20% "
            f"({report_steps.ragged_tiles_share(1).split()[0]} before)") in text
    hopper = [t[2] / t[0] for t in rows["hopper", 64].values()]
    assert f"the Hopper kernel at d = 64 is priced {min(hopper):.2f}–{max(hopper):.2f}× at every N" in text
    with report_history.counted_dots():
        scores_before = report_heldout.model_scores()
        held_before = {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_EIGHT}
    scores, held = report_heldout.model_scores(), {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_EIGHT}
    assert all(scores_before[k] == scores[k] for k in ("bench.json", "tiles.json", "decode.json", "bench_bwd.json",
                                                           "program_setup.json", "tile picks within 5%"))
    old = [p for n in report_heldout.TWENTY_SIX for p in held_before[n]]
    new = [p for n in report_heldout.TWENTY_SIX for p in held[n]]
    met = lambda h: sum(report_heldout.meets_target(h[n]) for n in report_heldout.TWENTY_SIX)  # noqa: E731
    assert len(report_heldout.TWENTY_SIX) == 30
    assert (f"go from {within(old):,} to {within(new):,} of {len(new):,} rows within 20% "
            f"({within(old) / len(old):.1%} → {within(new) / len(new):.1%})") in text
    kind = lambda pairs: heldout.share(report_heldout.labelled(pairs), "Hopper")  # noqa: E731
    assert f"the Hopper forwards most ({kind(old)} → {kind(new)}" in text
    assert f"and {met(held_before)} → {met(held)} of the 30 meet issue 24's target" in text
    share = scored_blind(text, held, held_before, report_heldout.BLIND_WHOLE_DOTS, 121, [False, True])
    train = [p for p in held["heldout_2056.json"] if p[0]["kind"] == "train"]
    assert (f"`heldout_2056.json` {share('heldout_2056.json')} (its training steps {within(train)} of {len(train)}: "
            f"misses the target), `heldout_2057.json` {share('heldout_2057.json')} (meets it)") in text
    pooled = [p for pairs in held.values() for p in pairs]
    assert (f"All thirty-two sets pooled: {within(pooled) / len(pooled):.1%} of {len(pooled):,} rows; "
            f"{sum(report_heldout.meets_target(h) for h in held.values())} of the 32 meet the target") in text
    golden = [r for r in json.loads((ROOT / "tests" / "golden" / "counts.json").read_text())
              if "blocks" in r["result"] and "block_q" not in r["args"]]
    def picks():  # the golden file's configurations' tiles as the model picks them (the section's: naive_before)
        return [((c := gpusim.simulate(**r["args"]).config).block_q, c.block_kv) for r in golden]
    now = picks()
    with report_history.counted_dots():
        moved = [r["args"] for r, pick, was in zip(golden, now, picks()) if pick != was]
    simulated = sum("error" not in r["result"] for r in json.loads((ROOT / "tests" / "golden" / "counts.json").read_text()))
    assert f"changes its pick for {len(moved)} of the golden file's {simulated} configurations" in text
    assert all(min(a["seq"], a.get("seq_kv", a["seq"])) <= 100 for a in moved)
    with tarfile.open(RESULTS / "logs" / "run122_ragged_tiles_heldout_2058_2059.tar.gz") as logs:
        kept = {seed: json.load(logs.extractfile(f"run122/heldout_{seed}.json")) for seed in (2058, 2059)}
    assert all(held_out_file(f"heldout_{seed}.json") == kept[seed] for seed in kept)
    for log, seeds in (("run130_heldout_2060_2061", (2060, 2061)), ("run132_heldout_2062_2065", range(2062, 2066))):
        with tarfile.open(RESULTS / "logs" / f"{log}.tar.gz") as logs:  # kept unscored there, then copied unchanged
            kept = {seed: json.load(logs.extractfile(f"{log[:6]}/heldout_{seed}.json")) for seed in seeds}
        assert all(held_out_file(f"heldout_{seed}.json") == kept[seed] for seed in kept)


def test_perf_md_quotes_the_backward_tiles_remeasured():
    """Run 123 timed tiles_bwd.json's steps and bwd_kernels.json's launches again (kept in its log): each row's time
    over the file's, the registers unchanged, and the d = 64 picks against the fastest tile in that run, as docs/perf.md
    quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    with tarfile.open(RESULTS / "logs" / "run123_tiles_bwd_bwd_kernels_recheck.tar.gz") as logs:
        again = {name: json.load(logs.extractfile(f"run123/{name}"))["rows"] for name in ("tiles_bwd.json",
                                                                                          "bwd_kernels.json")}
    keys = ("provider", "kernel", "dtype", "head_dim", "causal", "seq", "batch", "heads", "block_q", "block_kv")
    spans = []
    for name, rows in again.items():
        then = {tuple(r.get(k) for k in keys): r for r in json.loads((RESULTS / name).read_text())["rows"]}
        ratios = [r["ms"] / then[tuple(r.get(k) for k in keys)]["ms"] for r in rows]
        assert all(r.get("n_regs") == then[tuple(r.get(k) for k in keys)].get("n_regs") for r in rows)
        spans.append(f"{len(ratios)} {min(ratios):.2f}–{max(ratios):.2f}× (median {statistics.median(ratios):.2f})")
    assert spans[0].replace(" ", " training steps ran ", 1) in text
    assert spans[1].replace(" ", " kernel launches ", 1) in text
    groups = {}
    for r in again["tiles_bwd.json"]:
        if r["provider"] == "flash2" and r["head_dim"] == 64:
            groups.setdefault((r["dtype"], r["causal"], r["seq"]), []).append(r)
    gaps = [next(r["ms"] for r in rows if r["pick"]) / min(r["ms"] for r in rows) for rows in groups.values()]
    picks = {(r["block_q"], r["block_kv"]) for rows in groups.values() for r in rows if r["pick"]}
    fastest = {min(rows, key=lambda r: r["ms"])[k] for rows in groups.values() for k in ("block_q", "block_kv")}
    assert picks == {(64, 64)} and fastest == {64, 32}
    assert (f"ran {min(gaps):.2f}–{max(gaps):.2f}× the fastest tile (64 × 32), past 5% in "
            f"{sum(g > 1.05 for g in gaps)} of the {len(gaps)} groups") in text


def _sharing_ms(rows):
    return {(r["kernel"], r["head_dim"], r["block_q"], r["block_kv"], r["per_sm"], r["steps"]): r["ms"] for r in rows}


def test_bwd_sharing_runs_124_to_126_as_docs_perf_md_compares_them():
    """Run 124 mis-shaped dK/dV where block_q != block_kv and read warm inputs; run 125 fixed the shapes, run 126 (the
    file) reads cold ones: the ratios docs/perf.md quotes, recomputed from the two logs and bwd_sharing.json."""
    with tarfile.open(RESULTS / "logs" / "run124_bwd_sharing.tar.gz") as tar:
        log = tar.extractfile("run124/bwd_sharing.log").read().decode()
    with tarfile.open(RESULTS / "logs" / "run125_bwd_sharing.tar.gz") as tar:
        warm = _sharing_ms(json.load(tar.extractfile("run125/bwd_sharing.json"))["rows"])
    old = {(k, int(d), int(q), int(kv), int(m), int(j)): float(ms) for d, q, kv, k, m, j, ms in
           re.findall(r"d=(\d+) \((\d+), (\d+)\) (\w+) m=(\d+) J=(\d+): ([\d.e-]+)", log)}
    rows = json.loads((RESULTS / "bwd_sharing.json").read_text())["rows"]
    cold = _sharing_ms(rows)
    assert set(old) == set(warm) == set(cold) and len(cold) == 50 and {r["l2"] for r in rows} == {"cold"}
    same = [warm[k] / old[k] for k in old if k[0] == "dq" or k[2] == k[3]]
    slope = lambda ms, k: ms[(*k, 16)] - ms[(*k, 4)]  # noqa: E731
    ratio = {k[:5]: slope(cold, k[:5]) / slope(warm, k[:5]) for k in cold}
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}×"  # noqa: E731
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert f"its dQ rows and its square tiles' rows take {span(same)} run 124's times" in text
    assert (f"dQ's lone steps take {span([x for k, x in ratio.items() if k[0] == 'dq' and k[4] == 1])} run 125's, "
            f"dK/dV's {span([x for k, x in ratio.items() if k[0] == 'dkdv' and k[4] == 1])}, the steps of two or "
            f"more programs per SM {span([x for k, x in ratio.items() if k[4] > 1])}") in text


@before_retimed
@before_measured_issue
def test_perf_md_quotes_the_trial_of_dkdvs_measured_warp_rate():
    """report_steps.dkdv_measured_rate (not adopted): the rate from bwd_stalls.json, the picks it makes in
    tiles_bwd.json, dK/dV's prices in bwd_kernels.json and the held-out training steps, now and under it, as
    docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}×"  # noqa: E731

    def state():
        rows = [r for r in report_kernels.bwd_kernel_rows() if r["kernel"] != "preprocess"]
        four = [r["ratio"] for r in rows if r["kernel"] == "dkdv" and r["head_dim"] == 64 and r["block_q"] == 64]
        rest = [r["ratio"] for r in rows if r["kernel"] == "dkdv" and (r["head_dim"], r["block_q"]) != (64, 64)]
        held = [p for n in report_heldout.TWENTY_EIGHT for p in agreement.heldout_rows(n)]
        train = [p for p in held if p[0]["kind"] == "train"]
        picks = [line.split(" | ") for line in report_kernels.tiles_bwd_table().splitlines()[2:]]
        return (four, rest, sum(abs(r["ratio"] - 1) <= 0.2 for r in rows), within(train) / len(train),
                within(held) / len(held), {(c[1], c[2], c[3], c[0][2:]): c[7] for c in picks})
    now = state()
    with report_steps.dkdv_measured_rate():
        trial = state()
    assert (f"{report_steps.dkdv_warp_rate():.2f}" == "0.27"
            and "Run 60's rate for a dK/dV warp, 0.27 instructions" in text)
    assert [v for k, v in trial[5].items() if k[0] == "64"] == ["1.00"] * 8
    assert {k: v for k, v in trial[5].items() if k[0] == "128"} == {k: v for k, v in now[5].items() if k[0] == "128"}
    assert f"({span([float(v) for k, v in now[5].items() if k[0] == '64'])} the fastest now)" in text
    assert (f"is priced {span(trial[0])} ({span(now[0])} now), but on 8 warps (128-row tiles) and at d = 128 "
            f"{span(trial[1])} ({span(now[1])} now), so `bwd_kernels.json` holds {trial[2]} of its 128 dK/dV and dQ "
            f"launches within 20% ({now[2]} now) and the held-out training steps {trial[3]:.0%} ({now[3]:.0%} now; all "
            f"rows pooled {trial[4]:.1%}, {now[4]:.1%} now)") in text


@before_retimed
@before_measured_issue
def test_perf_md_quotes_the_trial_of_the_tensor_pipes_rate():
    """report_steps.nsight_pipe (not adopted): the pipe's ratios and the instruction offset from runs 128 and 129, the
    refit on the fitted half, the backward's and the forward's picks under it, and the trial with the instructions as
    issued, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    pipe = report_steps.pipe_ratios()
    assert sorted(pipe) == [32, 64, 128] and f"{report_steps.issued_ratio():.2f}" == "0.84"
    assert f"1.27 at 32, 1.11 at 64, 1.12 at 128" in text and [f"{pipe[k]:.2f}" for k in pipe] == ["1.27", "1.11", "1.12"]
    scores, point = report_steps.pipe_fit()
    share, error = scores[point]
    now = report_steps.fitted_half_error()
    alike = sum(f"{s:.1%}" == f"{share:.1%}" for s, _ in scores.values())
    assert point == (0.4, 0.1) and "The fit lands on 0.4 and 0.1" in text
    assert (f"holds {share:.1%} of its rows within 20% there, as at {alike} of the grid's {len(scores)} points "
            f"({now[0]:.1%} now), and its mean error falls to {error:.3f} ({now[1]:.3f} now)") in text
    before = report_steps.backward_picks()
    assert f"({min(v for k, v in before.items() if k[1] == 64):.2f}–{max(v for k, v in before.items() if k[1] == 64):.2f}× the fastest now)" in text
    held = lambda: {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_EIGHT}  # noqa: E731
    meeting = lambda: sum(report_heldout.meets_target(p) for p in held().values())  # noqa: E731
    count, picks_now = meeting(), agreement.tile_choice()
    with report_steps.nsight_pipe(*point):
        picks, fitted, forward = report_steps.backward_picks(), meeting(), agreement.tile_choice()
    assert [v for k, v in picks.items() if k[1] == 64] == [1.0] * 8 and all(v <= 1.05 for v in picks.values())
    assert {k: v for k, v in picks.items() if k[1] == 128} == {k: v for k, v in before.items() if k[1] == 128}
    assert f"so all 16 groups meet issue 24's 5%; {fitted} of the 32 held-out sets meet issue 24's target ({count} now)" in text
    moved = {k: v for k, v in forward.items() if v[1] > 1.05}
    assert {(k[0], k[1], k[2], v[0]) for k, v in moved.items()} == {("flash2", 128, False, (128, 32))}
    assert (f"picks 128 × 32 for flash2, {min(v[1] for v in moved.values()):.2f}–{max(v[1] for v in moved.values()):.2f}× "
            "the fastest (64 × 64)") in text and all(picks_now[k] == ((64, 64), 1.0) for k in moved)
    pooled = lambda: [p for pairs in held().values() for p in pairs]  # noqa: E731
    with report_steps.nsight_pipe(point[0] + 0.05, point[1]):
        step = (sum(v <= 1.05 for v in report_steps.backward_picks().values()), meeting(),
                within(pooled()) / len(pooled()))
    assert (f"one grid step up `ISSUE_HIDING` (0.45) keeps {step[0]} of the 16 backward picks but not the held-out gains "
            f"({step[1]} sets meet the target, {step[2]:.1%} of all rows pooled within 20%, "
            f"{within(pooled()) / len(pooled()):.1%} now)") in text and step[1] <= count < fitted
    rates = {(r["head_dim"], r["block_q"], r["block_kv"]): r["idle_rate"]
             for r in report_steps.forward_nsight_rows("fwd_rates.json")}
    assert f"(0.49 against 0.23 a cycle)" in text and (f"{rates[128, 64, 64]:.2f}", f"{rates[128, 128, 32]:.2f}") == ("0.49", "0.23")
    flash2 = lambda: [p for n in report_heldout.TRIALED for p in agreement.heldout_rows(n)  # noqa: E731
                      if (p[0]["kind"], p[0]["algo"]) == ("forward", "flash2")]
    base = within(flash2()) / len(flash2())
    with report_steps.nsight_pipe(*report_steps.pipe_fit(True)[1], issued=True):
        issued_picks, issued_flash2 = report_steps.backward_picks(), within(flash2()) / len(flash2())
        issued_forward = agreement.tile_choice()
    assert report_steps.pipe_fit(True)[1] == (0.45, 0.0)
    lost = sum(v[1] > 1.05 for v in issued_forward.values())
    assert (f"loses {lost} of the forward's picks, held-out flash2 forwards ({issued_flash2:.1%} within 20%, {base:.1%} now) and "
            f"{sum(v <= 1.05 for v in picks.values()) - sum(v <= 1.05 for v in issued_picks.values())} of the backward's picks") in text


@before_measured_issue
def test_perf_md_compares_the_full_sm_from_l2_and_from_dram():
    """bwd_kernels.json's fp16 d = 64 non-causal 8K launch per step of its b programs against bwd_sharing.json's
    probe at m = b, and gpusim's over each, as docs/perf.md quotes them, recomputed (report_steps.full_sm_steps)."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    steps, probe = report_steps.full_sm_steps(), report_steps.bwd_sharing_rows()
    assert len(steps) == 8 and {k[1:] for k in steps} == {(64, 32), (64, 64), (128, 32), (128, 64)}
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}×"  # noqa: E731
    ratio = lambda kernel: span([t / p for k, (t, p) in steps.items() if k[0] == kernel])  # noqa: E731
    us = lambda kernel, tile: f"{steps[kernel, *tile][0]:.2f} against {steps[kernel, *tile][1]:.2f}"  # noqa: E731
    assert (f"{ratio('dkdv')} the probe's time at m = b for dK/dV (64 × 64: {us('dkdv', (64, 64))} µs; 64 × 32: "
            f"{us('dkdv', (64, 32))}) and {ratio('dq')} for dQ (64 × 32: {us('dq', (64, 32))}; 64 × 64: "
            f"{us('dq', (64, 64))})") in text
    full = lambda kernel: [v[max(v)][1] / v[max(v)][0] for k, v in probe.items() if k[:2] == (kernel, 64)]  # noqa: E731
    launch = {(r["kernel"], r["block_q"], r["block_kv"]): r["ratio"] for r in report_kernels.bwd_kernel_rows()
              if (r["dtype"], r["head_dim"], r["causal"], r["seq"], r["batch"]) == ("fp16", 64, False, 8192, 2)}
    kv64 = sorted([probe["dkdv", 64, 64, 64][2][1] / probe["dkdv", 64, 64, 64][2][0], launch["dkdv", 64, 64]])
    assert "0.78–0.81× for dK/dV at 64 × 64" in text and [f"{x:.2f}" for x in kv64] == ["0.78", "0.81"]
    assert (f"prices dQ {span(full('dq'))} in the probe and {span([v for k, v in launch.items() if k[0] == 'dq'])} "
            "in this launch") in text


@before_retimed
@before_measured_issue
def test_perf_md_quotes_the_backwards_programs_sharing_an_sm():
    """bwd_sharing.json (run 126): a lone backward program's step and a full SM's, priced over measured, and the trial
    of the forward's full-issue rule for lone backward programs, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}"  # noqa: E731
    rows = report_steps.bwd_sharing_rows()
    lone = {k: v[1][1] / v[1][0] for k, v in rows.items()}
    full = [v[max(v)][1] / v[max(v)][0] for v in rows.values() if max(v) > 1]
    assert all(max(v) == v[max(v)][2] or v[max(v)][2] > 5 for v in rows.values())
    assert f"A lone program's step (m = 1) is priced {span(lone.values())}× what it takes" in text
    assert (f"dQ {span([x for k, x in lone.items() if k[0] == 'dq'])}×, dK/dV "
            f"{span([x for k, x in lone.items() if k[0] == 'dkdv'])}×") in text
    dq64 = [v[1][0] for k, v in rows.items() if k[:2] == ("dq", 64)]
    assert f"dQ's lone step at d = 64 runs {span(dq64)} µs" in text
    two = rows["dq", 64, 64, 32]
    assert f"(dQ at 64 × 32: {two[1][0]:.2f} µs for one, {two[2][0]:.2f} µs for two)" in text
    assert f"Where the SM holds all b, the step is priced {span(full)}×" in text
    full_kv = [v[max(v)][1] / v[max(v)][0] for k, v in rows.items() if max(v) > 1 and k[0] == "dkdv"]
    assert f"{span(full)}×: dK/dV {span(full_kv)}×, the GPU slower" in text
    us = lambda tile, i: ", ".join(f"{v[i]:.2f}" for v in rows["dkdv", 64, *tile].values())  # noqa: E731
    assert (f"(64 × 32 at d = 64: {us((64, 32), 0)} µs for one, two, three; 64 × 64: {us((64, 64), 0)}), where the "
            f"model's max(chain, m × busy) does not grow until m × busy passes the chain (64 × 32: {us((64, 32), 1)} µs)"
            in text)
    with report_steps.backward_full_issue():
        trial = {k: v[1][1] / v[1][0] for k, v in report_steps.bwd_sharing_rows().items()}
        trial_kv = [x for k, x in trial.items() if k[0] == "dkdv"]
        train = [p for n in report_heldout.TWENTY_EIGHT for p in agreement.heldout_rows(n) if p[0]["kind"] == "train"]
    now = [p for n in report_heldout.TWENTY_EIGHT for p in agreement.heldout_rows(n) if p[0]["kind"] == "train"]
    assert f"it prices the lone steps {span(trial.values())}× (dK/dV {span(trial_kv)}×, too fast" in text
    assert (f"takes the held-out training steps from {within(now) / len(now):.0%} to {within(train) / len(train):.0%} "
            f"within 20%") in text
    held = lambda: [p for n in report_heldout.TWENTY_EIGHT for p in agreement.heldout_rows(n)]  # noqa: E731
    kernels = lambda: sum(abs(r["ratio"] - 1) <= 0.2 for r in report_kernels.bwd_kernel_rows()  # noqa: E731
                          if r["kernel"] != "preprocess")
    held_now, kernels_now = held(), kernels()
    with report_steps.backward_full_issue(("dq",)):
        dq = [v[1][1] / v[1][0] for k, v in report_steps.bwd_sharing_rows().items() if k[0] == "dq"]
        held_dq, kernels_dq, picks = held(), kernels(), report_kernels.tiles_bwd_table()
    assert (f"Given to dQ alone, it prices dQ's lone steps {span(dq)}× (too fast as well, cold: run 124's warm steps had "
            f"suggested the full rate) and `bwd_kernels.json`'s launches {kernels_dq} of 128 within 20% ({kernels_now} "
            "now") in text
    assert max(dq) < 1
    assert (f"takes {within(held_now) - within(held_dq)} of the held-out sets' {len(held_dq):,} rows out of the 20% "
            f"({within(held_dq) / len(held_dq):.1%} pooled either way)") in text
    assert f"{within(held_now) / len(held_now):.1%}" == f"{within(held_dq) / len(held_dq):.1%}"
    moved = [line for line in picks.splitlines() if line.startswith("| fp16 | 128 | yes | 4,096 |")]
    assert moved[0].split(" | ")[6:8] == ["128 × 64", "1.06"]


@before_retimed
@before_list_schedule
def test_perf_md_quotes_dkdv_as_nsight_measures_it():
    """cost.measured (adopted in the twenty-ninth session): its four measured parts recomputed from runs 128 and 129,
    what it moves, and run 122's two sets scored once after it, as docs/perf.md quotes them."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    gpu = gpusim.get_gpu("H200-measured")
    assert gpu.tensor_pipe_ratio == tuple((kv, round(r, 3)) for kv, r in report_steps.pipe_ratios().items())
    assert cost.ISSUED_PER_COUNTED == round(1 / report_steps.issued_ratio(), 3) and "1.18 per counted one" in text
    assert Flash2Backward.MEASURED_ISSUE == {"dkdv": round(report_steps.measured_warp_rate(), 3)}
    rates = [r["idle_rate"] for r in report_steps.bwd_rates_rows() if r["kernel"] == "dkdv"]
    assert (f"0.26 a cycle while the pipe is idle (`report_steps.measured_warp_rate`: the median of its six launches, "
            f"{min(rates):.2f}–{max(rates):.2f} each)") in text
    (loads, rest) = report_steps.stall_spans()
    assert (f"stalls {loads[0]:.2f}–{loads[1]:.2f} cycles per instruction issued on its loads (long scoreboard) and "
            f"{rest[0]:.2f}–{rest[1]:.2f} on fixed-latency waits") in text
    span = lambda v: f"{min(v):.2f}–{max(v):.2f}×"  # noqa: E731
    dkdv = lambda: [r["ratio"] for r in report_steps.bwd_rates_rows() if r["kernel"] == "dkdv"]  # noqa: E731
    dq = lambda: [r["ratio"] for r in report_steps.bwd_rates_rows() if r["kernel"] == "dq"]  # noqa: E731
    train = lambda: [p for n in report_heldout.TWENTY_EIGHT for p in agreement.heldout_rows(n)  # noqa: E731
                     if p[0]["kind"] == "train"]
    sets = lambda: {n: agreement.heldout_rows(n) for n in report_heldout.TWENTY_EIGHT}  # noqa: E731
    blind = lambda: {n: agreement.heldout_rows(n) for n in report_heldout.BLIND_MEASURED_ISSUE}  # noqa: E731
    with report_history.no_measured_issue():
        before = (dkdv(), dq(), train(), sum(report_heldout.meets_target(p) for p in sets().values()),
                  report_steps.backward_picks(), blind())
    picks = report_steps.backward_picks()
    assert [v for k, v in picks.items() if k[1] == 64] == [1.0] * 8 and all(v <= 1.05 for v in picks.values())
    assert f"({span([v for k, v in before[4].items() if k[1] == 64])[:-1]}× the fastest before)" in text
    assert (f"the held-out training steps gain ({within(train()) / len(train()):.1%} of all sets' within 20%, "
            f"{within(before[2]) / len(before[2]):.1%} before) and "
            f"{sum(report_heldout.meets_target(p) for p in sets().values())} "
            f"of the 32 sets scored before meet issue 24's target ({before[3]} before)") in text
    assert f"are priced {span(dkdv())} ({span(before[0])} before)" in text and dq() == before[1]
    assert f"is still {span(dq())} slow" in text
    now = blind()
    flags = lambda held: [abs(r - 1) <= 0.2 for p in held.values() for _, r in p]  # noqa: E731
    assert flags(now) == flags(before[5])
    share = lambda n: f"{within(now[n]) / len(now[n]):.1%}"  # noqa: E731
    pooled = [p for pairs in now.values() for p in pairs]
    assert (f"`heldout_2058.json` {share('heldout_2058.json')} within 20% and `heldout_2059.json` "
            f"{share('heldout_2059.json')}, {within(pooled) / len(pooled):.1%} of their {len(pooled)} rows pooled") in text
    assert not any(report_heldout.meets_target(p) for p in now.values())
    misses = [(row, r) for p in now.values() for row, r in p if row["kind"] == "train" and abs(r - 1) > 0.2]
    assert all(sum(row["kind"] == "train" and abs(r - 1) <= 0.2 for row, r in p) == 9 for p in now.values())
    hopper = [sum(abs(r - 1) <= 0.2 for row, r in p if row["algo"] == "hopper") for p in now.values()]
    assert hopper == [11, 9] and "`heldout_2059.json` on its Hopper forwards too, 9 of 12" in text
    floor = gpu.train_step_host_s
    host = [row["ms"] for row, _ in misses if sum(k.predicted_time_s for k in agreement.heldout_simulated(row).kernels) < floor]
    assert (f"{len(host)} of those {len(misses)} training misses are steps whose predicted GPU time is under the host's floor "
            f"(`GPU.train_step_host_s`, {floor * 1e3:.3f} ms), measured {min(host):.2f}–{max(host):.2f} ms") in text


def test_perf_md_says_the_backward_tile_targets_are_met():
    """tiles_bwd.json under cost.measured: issue 24's two targets (the pick within 5% of the fastest tile, the step at
    least 0.9x SDPA's) in every group, and the picks before it, as docs/perf.md states them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    cells = [line.split(" | ") for line in report_kernels.tiles_bwd_table().splitlines()[2:]]
    picks, sdpa = [float(c[7]) for c in cells], [float(c[8]) for c in cells]
    assert len(cells) == 16 and max(picks) <= 1.05 and min(sdpa) >= 0.9
    assert (f"the pick is the fastest tile measured, or within 0.5% of it, in {picks.count(1.0)} of the 16 groups and at most "
            f"{max(picks):.2f}× the fastest in the rest, and SDPA's flash step takes {min(sdpa):.2f}–{max(sdpa):.2f}× "
            "as long as ours at the pick in every group") in text
    with report_history.no_measured_issue():
        before = report_steps.backward_picks()
    d64 = [v for k, v in before.items() if k[1] == 64]
    assert (f"(1.02–1.11× the fastest, past 5% in {sum(v > 1.05 for v in d64)} of the 8 groups)" in text
            and f"{min(d64):.2f}–{max(d64):.2f}" == "1.02–1.11")
    moved = [c for c in cells if c[1] == "128" and c[6] == "128 × 32"]
    d128 = lambda picks: f"{min(picks):.2f}–{max(picks):.2f}×"  # noqa: E731
    assert (f"at d = 128 it now picks 128 × 32 in {len(moved)} groups where it picked 64 × 32 (the d = 128 picks "
            f"{d128([float(c[7]) for c in cells if c[1] == '128'])} the fastest, "
            f"{d128([v for k, v in before.items() if k[1] == 128])} before)") in text
    with tarfile.open(RESULTS / "logs" / "run131_tiles_bwd_measured_issue.tar.gz") as logs:
        rows = json.load(logs.extractfile("run131/tiles_bwd.json"))["rows"]
    groups = {}
    for r in rows:
        groups.setdefault((r["dtype"], r["head_dim"], r["causal"], r["seq"], r["batch"]), []).append(r)
    picked = {k: next(r for r in g if r.get("pick")) for k, g in groups.items()}
    assert all((p["block_q"], p["block_kv"]) == tuple(gpusim.best_blocks(
        "flash2", seq=k[3], head_dim=k[1], heads=16, batch=k[4], causal=k[2], dtype=k[0], gpu="H200-measured",
        backward=True)) for k, p in picked.items())
    gaps = {k: picked[k]["ms"] / min(r["ms"] for r in g if r["provider"] == "flash2") for k, g in groups.items()}
    sdpa = [next(r["ms"] for r in g if r["provider"] == "sdpa_flash") / picked[k]["ms"] for k, g in groups.items()]
    past = [k for k, v in gaps.items() if v > 1.05]
    assert past == [("fp16", 128, True, 4096, 4)] and len(gaps) == 16
    assert (f"the pick ran {min(gaps.values()):.2f}–{max(gaps.values()):.2f}× the fastest tile of its group in that "
            f"run, past 5% in {len(past)} of the 16 (fp16, d = 128, causal, N = 4K: 128 × 32 at {gaps[past[0]]:.2f}× "
            f"64 × 32's time, {[float(c[7]) for c in cells if c[:5] == ['| fp16', '128', 'yes', '4,096', '4 × 16']][0]:.2f}× "
            f"in the file), and SDPA's step took {min(sdpa):.2f}–{max(sdpa):.2f}× as long as ours") in text


@before_retimed
@before_list_schedule
def test_perf_md_quotes_the_host_probe_as_measured_and_scored():
    """The host probe beside each training step (thirtieth session): the host-bound steps of the sets before it, run
    132's probes, and its four sets and run 130's two scored once with the preset's floor and with the probe's, as
    docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    floor = gpusim.get_gpu("H200-measured").train_step_host_s
    bound = [row for n in report_heldout.TWENTY_NINE for row, _ in agreement.heldout_rows(n) if row["kind"] == "train"
             and sum(k.predicted_time_s for k in agreement.heldout_simulated(row).kernels) < floor]
    measured = [r["ms"] for r in bound]
    assert f"measured them at {min(measured):.2f}–{max(measured):.2f} ms, in no order of shape" in text
    features = (lambda r: r["heads"] != r["kv_heads"], lambda r: r["causal"], lambda r: r["block_q"] is None,
                lambda r: r["dtype"] == "bf16", lambda r: r["seq"] != r["seq_kv"])
    for feature in features:
        medians = [float(np.median([r["ms"] for r in bound if feature(r) == side])) for side in (True, False)]
        assert max(medians) / min(medians) < 1.10
    from benchmarks.heldout import PROBE
    from benchmarks.host import SHAPES
    assert PROBE == SHAPES[0] == (1, 4, 256, 64) and "batch 1, 4 heads, N = 256, d = 64" in text
    rows = report_heldout.probe_rows(report_heldout.BLIND_HOST_PROBE)
    probes = [p for _, p, _ in rows]
    spans = {seed: [r["host_probe_us"] * 1e-3 for r in json.loads((RESULTS / f"heldout_{seed}.json").read_text())["rows"]
                    if r.get("host_probe_us")] for seed in range(2062, 2066)}
    widest = max(spans, key=lambda s: max(spans[s]) - min(spans[s]))
    assert (f"The probe moved {min(probes):.2f}–{max(probes):.2f} ms over run 132 ({min(spans[widest]):.2f}–"
            f"{max(spans[widest]):.2f} ms within the set of seed {widest} alone)") in text
    ratio = [m / p for m, p, g in rows if g < p]
    assert f"of the {len(ratio)} steps whose predicted GPU time is under their probe, the measured step is " \
           f"{min(ratio):.2f}–{max(ratio):.2f}× the probe" in text
    trains = lambda: {n: sum(abs(r - 1) <= 0.2 for row, r in agreement.heldout_rows(n) if row["kind"] == "train")  # noqa: E731
                      for n in report_heldout.BLIND_HOST_PROBE}
    with report_history.preset_host_floor():
        before = trains()
    after = trains()
    assert sorted(set(before.values())) == [8, 10] and set(after.values()) == {11}
    assert "go from 8 or 10 of 12 within 20% to 11 of 12" in text
    score = {n: heldout.score(n, report_heldout.labelled(agreement.heldout_rows(n)))
             for n in report_heldout.BLIND_HOST_PROBE + report_heldout.UNCHANGED_MEASURED}
    missed = lambda n: ", ".join(f"{k} {score[n][k]}" for k in ("naive", "flash2", "Hopper", "training step", "decode")  # noqa: E731
                                 if int(score[n][k][:-1]) < 80)
    assert [n for n in score if score[n]["target met"] == "no"] == ["heldout_2062.json", "heldout_2064.json",
                                                                    "heldout_2061.json"]
    assert (f"(seed 2062: {missed('heldout_2062.json')}, and {score['heldout_2062.json']['within 20%']} of all its rows; "
            f"seed 2064: {missed('heldout_2064.json')})") in text
    assert float(score["heldout_2064.json"]["within 20%"][:-1]) >= 90
    assert f"seed 2061 misses it on its training steps ({missed('heldout_2061.json').split()[-1]})" in text
    assert missed("heldout_2061.json").startswith("training step")
    with tarfile.open(RESULTS / "logs" / "run133_heldout_2066_2069.tar.gz") as logs:  # kept unscored for the next change
        kept = [json.load(logs.extractfile(f"run133/heldout_{seed}.json")) for seed in range(2066, 2070)]
    assert all(sum("host_probe_us" in r for r in k["rows"]) == 12 for k in kept)
    assert kept == [json.loads((RESULTS / f"heldout_{seed}.json").read_text()) for seed in range(2066, 2070)]
    assert "seeds 2066–2069, run 133" in text and "were kept unscored" in text


def test_perf_md_quotes_the_interleaved_probe_as_predicted_and_measured():
    """The host probe interleaved with each training row's steps (fortieth session, run 151): the host-bound steps of
    the sets before, which motivated it, and run 151's four sets under both probes, as docs/perf.md quotes them,
    recomputed; the files hold both probes from seed 2092 on, and only there."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    before = report_heldout.probe_figures(report_heldout.probe_rows(report_heldout.THIRTY_NINE))
    host, every = before["host"], before["all"]
    close = lambda ratios: sum(abs(r - 1) <= 0.2 for r in ratios)  # noqa: E731
    gpu_bound = len(every) - len(host), close(every) - close([1 / r for r in host])
    assert (f"{close([1 / r for r in host])} of the {len(host)} such steps with a probe (seeds 2062 on, and the sets "
            f"run 135 timed again) are within 20% ({close([1 / r for r in host]) / len(host):.0%}), against "
            f"{gpu_bound[1] / gpu_bound[0]:.0%} of the {gpu_bound[0]} GPU-bound steps") in text
    assert f"The measured step is {min(host):.2f}–{max(host):.2f}× its probe, in no order of shape" in text
    steps = [dict(row, set=n) for n in report_heldout.THIRTY_NINE for row, _ in agreement.heldout_rows(n)
             if row["kind"] == "train" and sum(k.predicted_time_s for k in agreement.heldout_simulated(row).kernels)
             < row["host_probe_us"] * 1e-6]
    assert len(steps) == len(host)
    features = (lambda r: r["heads"] != r["kv_heads"], lambda r: r["causal"], lambda r: r["dtype"] == "bf16",
                lambda r: r["head_dim"] == 64, lambda r: r["block_q"] is None, lambda r: r["seq"] != r["seq_kv"])
    medians = [float(np.median([r["ms"] * 1e3 / r["host_probe_us"] for r in steps if feature(r) == side]))
               for feature in features for side in (True, False)]
    assert f"the medians by GQA, mask, dtype, d, explicit tiles and seq_kv ≠ seq are {min(medians):.2f}–" \
           f"{max(medians):.2f}" in text
    fast = min(steps, key=lambda r: r["ms"] * 1e3 / r["host_probe_us"])
    assert (f"Seed {fast['set'][8:12]}'s step of {fast['batch']} × {fast['heads']} heads at N = {fast['seq']} took "
            f"{fast['ms'] * 1e3:.0f} µs a call beside a probe that read {fast['host_probe_us']:.0f} µs") in text
    from benchmarks import heldout as measured
    assert measured.PROBE_ROUNDS == 4 and "times a training row's steps in four chunks" in text
    for name in report_heldout.FIFTY:  # the sets scored when the section was written
        train = [r for r in json.loads((RESULTS / name).read_text())["rows"] if r["kind"] == "train"]
        assert all(("host_probe_before_us" in r) == (name in report_heldout.INTERLEAVED) for r in train), name
    now = report_heldout.probe_figures(report_heldout.probe_rows(report_heldout.INTERLEAVED))
    was = report_heldout.probe_figures(report_heldout.probe_rows(report_heldout.INTERLEAVED, "host_probe_before_us"))
    assert all(close([1 / r for r in f["host"]]) == len(f["host"]) for f in (now, was))
    assert (f"the measured step {min(now['host']):.2f}–{max(now['host']):.2f}× the probe where the sets before ran "
            f"{min(host):.2f}–{max(host):.2f}×, and {close(now['all'])} of the {len(now['all'])} training "
            "steps") in text
    assert f"(the measured step {min(was['host']):.2f}–{max(was['host']):.2f}× that probe)" in text
    assert (f"from {min(was['host']):.2f}–{max(was['host']):.2f} ({len(was['host'])} steps) to {min(now['host']):.2f}–"
            f"{max(now['host']):.2f} ({len(now['host'])})") in text
    assert f"({np.median(now['host']):.2f}× the median; the least, {min(now['host']):.2f}×)" in text
    rows = [r for n in report_heldout.INTERLEAVED for r in json.loads((RESULTS / n).read_text())["rows"]
            if r["kind"] == "train"]
    gap = [r["host_probe_us"] / r["host_probe_before_us"] for r in rows]
    assert f"still differed by {min(gap):.2f}–{max(gap):.2f}× (median {np.median(gap):.2f})" in text
    pairs = [p for n in report_heldout.INTERLEAVED for p in agreement.heldout_rows(n)]
    (miss, ratio), = [p for p in pairs if p[0]["kind"] == "train" and abs(p[1] - 1) > 0.2]
    assert miss["host_probe_us"] * 1e-6 < sum(k.predicted_time_s for k in agreement.heldout_simulated(miss).kernels)
    assert (f"batch {miss['batch']}, {miss['heads']} heads over {miss['kv_heads']}, N = {miss['seq']:,} against N_kv = "
            f"{miss['seq_kv']:,}, d = {miss['head_dim']}, priced {ratio:.2f}× slow") in text
    assert all(report_heldout.meets_target(agreement.heldout_rows(n)) for n in report_heldout.INTERLEAVED)
    share = report_heldout.sets_share(report_heldout.INTERLEAVED)
    assert f"All four sets meet issue 24's target ({share} rows within 20%)" in text


@before_lone_setup
def test_perf_md_quotes_the_list_schedule_as_measured_and_scored():
    """The thirty-first session's cost.list_schedule: lpt_order.json (run 134) and the held-out sets, as docs/perf.md
    quotes them, recomputed; the two sets of run 134 kept unscored."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = {(r["head_dim"], r["lpt_heads"], r["heads"], r["seq"]): r["ms"]
            for r, *_ in report_launches.lpt_order_rows()}
    gain, key = max((rows[k[0], 0, *k[2:]] / v, k) for k, v in rows.items() if k[1])
    assert key[:2] == (128, 4) and (f"up to {gain:.2f}× (d = 128, {key[2]} heads, N = {key[3]:,}: "
                                    f"{rows[128, 0, *key[2:]]:.3f} ms in order, {rows[key]:.3f} ms in groups of four "
                                    "longest first)") in text
    d64 = [(n / r["ms"], r["heads"], r["seq"]) for r, b, n, _ in report_launches.lpt_order_rows()
           if (r["head_dim"], r["lpt_heads"]) == (64, 1)]
    worst = max(d64)
    assert worst[1:] == (4, 16384) and f"(up to {worst[0]:.2f}× slow at 4 heads, N = 16K)" in text
    row = {"batch": 1, "heads": 8, "kv_heads": 1, "seq": 3618, "head_dim": 128, "causal": True}
    held = [(r, x) for r, x in agreement.heldout_rows("heldout_2041.json")
            if r["algo"] == "hopper" and all(r[k] == v for k, v in row.items())]
    assert len(held) == 1
    with report_history.no_list_schedule():
        before = [x for r, x in agreement.heldout_rows("heldout_2041.json") if r == held[0][0]]
    assert f"N = 3,618 (232 programs on 132 SMs, one each) was priced {before[0]:.2f}× slow" in text
    assert abs(held[0][1] - 1) <= 0.2
    assert report_heldout.THIRTY == tuple(n for n in report_heldout.THIRTY_FOUR
                                       if n not in report_heldout.BLIND_LIST_SCHEDULE + report_heldout.BLIND_DKDV_LIST)
    assert len(report_heldout.THIRTY) == 40
    with tarfile.open(RESULTS / "logs" / "run134_lpt_order_heldout_2070_2071.tar.gz") as logs:
        kept = [json.load(logs.extractfile(f"run134/heldout_{seed}.json")) for seed in (2070, 2071)]
    assert all(sum(r.get("ms") is not None for r in k["rows"]) == 88 for k in kept)
    # kept unscored until the thirty-third session's change, then copied from the log as they are
    assert [json.loads((RESULTS / f"heldout_{seed}.json").read_text()) for seed in (2070, 2071)] == kept
    assert "seeds 2070 and 2071, after this change), kept unscored" in text


@before_dkdv_list
def test_perf_md_quotes_run_135s_training_steps_timed_again_with_the_probe():
    """Run 135: the sets before seed 2062 hold their training steps timed again with the host probe beside each and
    every other row as before (its logs hold the rows before), and docs/perf.md's figures of it, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    before = report_heldout.rows_before_retimed()
    assert sorted(before) == sorted(n for n in report_heldout.HELD_OUT if n == "heldout.json" or int(n[8:12]) < 2062)
    for name, rows in before.items():
        now = agreement.read_heldout(name)
        assert [r for r in now if r["kind"] != "train"] == [r for r in rows if r["kind"] != "train"]
        assert all(r["host_probe_us"] > 0 and r["timing"] == "wall_per_call" for r in now if r["kind"] == "train")
        assert not any("host_probe_us" in r for r in rows)
    for figure in report_heldout.retimed_summary().values():
        assert figure in text, figure

    def train_share(pairs):
        return agreement.summary([p for p in pairs if p[0]["kind"] == "train"])["within 20%"]
    with report_heldout.before_retimed():
        was = {n: agreement.heldout_rows(n) for n in report_heldout.THIRTY_TWO}
    missed = [n for n, pairs in was.items() if not report_heldout.meets_target(pairs)]
    on_training = [n for n in missed if train_share(was[n]) < 0.8]
    assert (f"{len(on_training)} of the {len(missed)} sets that missed issue 24's target missed it on their "
            "training") in text
    lost = [n for n in was if report_heldout.meets_target(was[n])
            and not report_heldout.meets_target(agreement.heldout_rows(n))]
    assert [n[8:12] for n in sorted(lost)] == ["2034", "2049", "2060"] and "(seeds 2034, 2049 and 2060)" in text
    assert all(train_share(agreement.heldout_rows(n)) < 0.8 for n in lost)


@before_lone_setup
def test_perf_md_quotes_run_136s_dkdv_launches_list_scheduled_and_the_blind_sets():
    """Run 136: the causal dK/dV launches by the last-wave rule and list-scheduled, against the prediction committed
    before the run; the blind scoring of seeds 2070 and 2071; the backward's picks unchanged."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    for figure in report_launches.dkdv_ramp_summary().values():
        assert figure in text, figure
    rows = report_launches.dkdv_ramp_rows()
    moved = [now / waved for r, _, waved, now in rows if r["causal"] and (r["kv_heads"], r["seq"]) in
             ((2, 12288), (2, 16384), (2, 24576), (4, 12288))]
    assert f"by {min(moved):.3f}–{max(moved):.3f}×" in text
    one = {round(now / waved, 2) for r, _, waved, now in rows if r["causal"] and (r["kv_heads"], r["seq"]) == (1, 24576)}
    assert one == {1.03} and "192 programs at one K/V head by 1.03×" in text
    assert {round(now / waved, 12) for r, _, waved, now in rows if not r["causal"]} == {1.0}
    assert "88e0b5d" in text and (ROOT / "benchmarks" / "dkdv_ramp.py").exists()

    with report_history.dkdv_by_waves():
        before = {n: agreement.heldout_rows(n) for n in report_heldout.BLIND_DKDV_LIST}
        picks = report_steps.backward_picks()
        share = report_heldout.sets_share(report_heldout.BLIND_DKDV_LIST)
    now = {n: agreement.heldout_rows(n) for n in report_heldout.BLIND_DKDV_LIST}
    steps = [(b, x) for n in now for (r, b), (_, x) in zip(before[n], now[n]) if r["kind"] == "train" and b != x]
    assert all(r["kind"] == "train" for n in now for (r, b), (_, x) in zip(before[n], now[n]) if b != x)
    assert len(steps) == 9 and not any((abs(b - 1) <= 0.2) != (abs(x - 1) <= 0.2) for b, x in steps)
    assert share == report_heldout.sets_share(report_heldout.BLIND_DKDV_LIST) == "94.9% of 176"
    assert f"{len(steps)} training steps moved, none across 20%, and the two sets held {share} rows either way" in text
    assert [report_heldout.meets_target(now[n]) for n in report_heldout.BLIND_DKDV_LIST] == [False, True]
    naive = [x for r, x in now["heldout_2070.json"] if r["algo"] == "naive"]
    assert f"naive forwards ({sum(abs(x - 1) <= 0.2 for x in naive)} of {len(naive)})" in text
    assert report_steps.backward_picks() == picks and "no backward pick of `tiles_bwd.json` changed" in text


@before_lone_setup
def test_perf_md_quotes_run_137s_short_hopper_programs_wave_after_wave():
    """Run 137: a wave's steady-state cost of the Hopper kernel's short programs, measured and in gpusim, against the
    prediction committed before the run; the gap at d = 64 per program."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    summary = report_launches.hopper_waves_summary()
    for figure in summary.values():
        assert figure in text, figure
    slopes = {key: report_launches.wave_slopes(w) for key, w in report_launches.hopper_waves_rows().items()}
    above = [m / p - 1 for (d, causal, _), (m, p) in slopes.items() if d == 64 and causal]
    assert max(above) > 0.55 and f"({min(above) * 100:.0f}–{max(above) * 100:.0f}% above the model's, not 25–55%)" in text
    for causal in (False, True):  # the gap shrinks with J at both masks
        gaps = [m - p for (d, c, steps), (m, p) in sorted(slopes.items()) if d == 64 and c == causal]
        assert gaps[0] > gaps[-1] > 0
    assert all(abs(p / m - 1) <= 0.1 for (d, _, _), (m, p) in slopes.items() if d == 128)
    assert "558d330" in text and "seeds 2072 to 2075" in text


@before_lone_setup
def test_perf_md_quotes_run_138s_hopper_launches_at_other_knobs():
    """Run 138: a wave's cost at d = 64 and 128 over every launch the kernel ran, run 137's own launches repeated,
    the refused two stages at d = 64, and the gap a program rotated and not."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    summary = report_launches.hopper_starts_summary()
    assert f"priced {summary[64]} over every launch, and {summary[128]}" in text
    assert (f"{summary['causal, not rotated']} µs at J = 1 and 4 against {summary['causal, own launch']} rotated"
            in text)
    starts, waves = report_launches.hopper_starts_rows(), report_launches.hopper_waves_rows()
    own = {(64, True): "causal, own launch", (128, True): "causal, own launch", (64, False): "full, own launch",
           (128, False): "full, own launch"}
    repeat = [abs(starts[own[d, c], d, j][1] / starts[own[d, c], d, j][0]
                  - report_launches.wave_slopes(waves[d, c, j])[1] / report_launches.wave_slopes(waves[d, c, j])[0])
              for (d, c) in own for j in (1, 4)]
    assert max(repeat) < 0.025 and "repeat within 0.02 of their ratios" in text
    refused = [r for r in json.loads((RESULTS / "hopper_starts.json").read_text())["rows"] if "error" in r]
    assert {(r["variant"], r["head_dim"]) for r in refused} == {("causal, 2 stages", 64)}
    assert "57cc2c3" in text


@before_lone_setup
def test_perf_md_quotes_run_139s_short_hopper_programs_under_nsight():
    """Run 139: hopper_stalls.json is what hopper_stalls.parse reads from Nsight's raw CSV; the sampled instructions'
    shares, the issue and tensor pipe figures, and the part of a wave gpusim's busy time, set-up and latencies leave,
    as docs/perf.md quotes them, against the prediction committed before the run."""
    from benchmarks import hopper_stalls
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert json.loads((RESULTS / "hopper_stalls.json").read_text())["rows"] == hopper_stalls.parse(
        RESULTS / "hopper_stalls_raw.csv")
    for figure in report_launches.hopper_stalls_summary().values():
        assert figure in text, figure
    rows, shares = report_launches.hopper_stalls_rows(), report_launches.hopper_source_shares()
    unpriced = report_launches.hopper_unpriced()
    assert all(rows[64, c, 1][16]["tensor_pct"] < 25 for c in (False, True))  # held: the tensor pipe idle
    assert all(s["barrier waits"] > 5 * s["matmul waits"] for (d, _), s in shares.items() if d == 64)  # held
    assert all(s["stores"] < 0.05 for s in shares.values()) and "stores hold under 5% at either" in text
    assert rows[64, False, 1][16]["issue_per_cycle"] < 1 / 3 < rows[64, True, 1][16]["issue_per_cycle"]  # in part
    cycles = {d: report_launches.program_cycles(rows[d, False, 1][16]) for d in (64, 128)}
    assert cycles[64] < cycles[128] and "it takes fewer" in text  # did not hold
    mean = {d: np.mean([v for (dd, _, _), v in unpriced.items() if dd == d]) for d in (64, 128)}
    assert mean[64] - mean[128] > 0.5 and "a cost per program the same at both head dims would not close it" in text
    assert "6c6f100" in text and "run 136's four sets" in text


@before_lone_setup
def test_perf_md_quotes_run_140s_short_hopper_programs_with_one_kv_head():
    """Run 140: a wave's cost with a K/V head per query head and one for all, measured and in gpusim, against the
    prediction committed before the run; the line in J with one K/V head; gpusim's fixed part of a lone program."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    for figures in report_launches.hopper_kv_summary().values():
        for figure in figures:
            assert figure in text, figure
    rows = report_launches.hopper_kv_rows()
    cut = {d: (rows[d, False, 1][None][0] - rows[d, False, 1][1][0], rows[d, False, 1][None][1] - rows[d, False, 1][1][1])
           for d in (64, 128)}
    assert 0.2 <= cut[64][0] <= 0.8 and 0.5 <= cut[128][0] <= 1.5 and all(m < p for m, p in cut.values())  # held
    assert rows[64, False, 1][1][1] / rows[64, False, 1][1][0] < 0.75 and rows[128, False, 1][1][1] / rows[128, False, 1][1][0] < 0.9
    assert all(rows[64, True, j][None][0] - rows[64, True, j][1][0] > rows[64, True, j][None][1] - rows[64, True, j][1][1]
               for j in (1, 4)) and "the cut is larger than gpusim's at both J" in text
    alone = []
    for d in (64, 128):
        r = next(r for r in json.loads((RESULTS / "hopper_kv.json").read_text())["rows"]
                 if (r["head_dim"], r["causal"], r["steps"], r["waves"], r.get("kv_heads")) == (d, False, 1, 16, None))
        _, step = cost.schedule(gpusim.simulate("hopper", seq=r["seq"], seq_kv=r["seq_kv"], heads=r["heads"], head_dim=d,
                                                causal=False, dtype="fp16", gpu=agreement.PRESET))
        alone.append(f"{cost.first_loads(step, 1) * 1e6:.1f}")
    assert f"its first loads at the port's rate ({alone[0]} and {alone[1]} µs)" in text and "b9f82a0" in text


@before_lone_setup
def test_perf_md_quotes_the_trial_of_a_short_hopper_programs_own_cost():
    """The thirty-fourth session's program_cost trial (not adopted): its one number fitted on the named half, its
    misses (launches of two programs an SM), and the held-out sets that meet the target under it."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    program_s = report_launches.program_cost_s()
    assert 1e-6 < program_s < 4e-6 and f"{program_s * 1e6:.3f} µs (`report_launches.program_cost_s`" in text
    with report_launches.program_cost(program_s):
        fitted = [p / m for key, (m, p) in report_launches.hopper_launch_slopes().items()
                  if report_launches.fitted_half(key)]
        assert np.mean(fitted) == pytest.approx(1, abs=1e-3)
        misses = [key for key, (m, p) in report_launches.hopper_launch_slopes().items() if abs(p / m - 1) > 0.2]
        bench = [r for r, x in agreement.rows("bench.json") if r["provider"] == "hopper" and abs(x - 1) > 0.2]
        two = [cost.schedule(gpusim.simulate("hopper", seq=r["seq"], head_dim=r["head_dim"], causal=r["causal"],
                                             dtype=r["dtype"], heads=r["heads"], batch=r["batch"],
                                             gpu=agreement.PRESET))[0].resident == 2 for r in bench]
        meeting = {n for n in report_heldout.THIRTY_FOUR if report_heldout.meets_target(agreement.heldout_rows(n))}
    assert all(two) and len(misses) == 5 and "four of its five on the microbenchmarks" in text
    resident = {key: r["per_sm"] for name in ("hopper_waves", "hopper_starts", "hopper_kv")
                for r in json.loads((RESULTS / f"{name}.json").read_text())["rows"] if "ms" in r
                for key in [(name, r.get("variant"), r["head_dim"], r["causal"], r["steps"], r.get("kv_heads"))]}
    assert sum(resident[key] == 2 for key in misses) == 4
    now = {n for n in report_heldout.THIRTY_FOUR if report_heldout.meets_target(agreement.heldout_rows(n))}
    assert sorted(n[8:12] for n in meeting - now) == ["2034", "2038", "2064"] and sorted(
        n[8:12] for n in now - meeting) == ["2046", "2047", "2052"]
    assert "(2034, 2038 and 2064 then meet, 2046, 2047 and 2052 no longer)" in text


@before_lone_setup
def test_perf_md_quotes_runs_141_and_142s_causal_hopper_launch_at_more_stages():
    """Runs 141 and 142: the compiled kernel's residency at 3 to 6 stages against gpusim's, gpusim's estimates beside
    the compiled kernel's, the cost of more stages, run 141 repeated, and a lone program against two on one SM."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_launches.hopper_pairs_rows()
    assert [r[2] for r in rows.values()] == [2, 2, 2, 1] and [r[3] for r in rows.values()] == [2, 1, 1, 1]
    more = [rows[s][4][j] / rows[3][4][j] - 1 for s in (4, 5) for j in (1, 4)]
    assert f"costs {min(more) * 100:.0f}–{max(more) * 100:.0f}% more than at 3" in text
    with tarfile.open(RESULTS / "logs" / "run141_hopper_pairs.tar.gz") as tar:
        first = json.load(tar.extractfile("run141/hopper_pairs.json"))["rows"]
    again = {(r["num_stages"], r["steps"], r["waves"]): r["ms"] for r in
             json.loads((RESULTS / "hopper_pairs.json").read_text())["rows"]}
    assert all(abs(again[r["num_stages"], r["steps"], r["waves"]] / r["ms"] - 1) < 0.01 for r in first)
    from benchmarks.hopper_waves import own_tiles
    gpu = gpusim.get_gpu(agreement.PRESET)
    def schedule(stages):
        return cost.schedule(gpusim.simulate("hopper", seq=128, heads=264, head_dim=64, causal=True, dtype="fp16",
                                             gpu=agreement.PRESET, tiles=own_tiles(64, True, num_stages=stages)))
    assert [schedule(s)[0].res.registers_per_thread for s in (4, 5)] == [136, 136] and [rows[s][0] for s in (4, 5)] == [126, 126]
    cfg = schedule(4)[0].cfg
    first_k = cfg.pass_.stage_bytes(cfg, "hopper") // 2  # counted since the thirty-seventh session
    assert [rows[s][1] - schedule(s)[0].res.shared_bytes for s in (4, 5, 6)] == [1024] * 3 and first_k == 8192
    assert 2 * rows[6][1] > gpu.sram_bytes_per_sm >= 2 * rows[5][1]
    lone = rows[6][4][1] / 2
    pair = [rows[3][4][j] / (rows[6][4][j] / 2) for j in (1, 4)]
    assert not 9.2 <= rows[6][4][1] <= 12.2 and max(pair) < 1.2  # the figure predicted did not hold
    assert (f"a lone program costs {lone:.2f} µs a wave and two on one SM take {pair[0]:.2f}× that at N = 1, "
            f"{pair[1]:.2f}× at N = 4") in text
    assert f"(gpusim's, at N = 1: {cost.chain(schedule(3)[1], 1) * 1e6:.2f} µs, where the lone program takes {lone:.2f})" in text
    assert "1dfbbf0" in text and "0d9b43e" in text and (f"{1024 + first_k:,} B short of the compiled kernel's at each "
                                                        f"stage count ({first_k:,} B of it the rotated loop's first K tile"
                                                        in text)


@before_lone_setup
def test_perf_md_quotes_the_trial_of_a_lone_hopper_programs_latency():
    """The thirty-fourth session's second trial (not adopted): each launch kind's latency from its lone launch (one
    program an SM), the tests it moves, and the ratio of the causal launches' latencies docs/perf.md names."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    latency = report_launches.lone_latency_s()
    assert len(latency) == 6 and all(0 < v < 6e-6 for v in latency.values())
    for kind, (result, measured) in report_launches.lone_launches().items():
        grid, step = cost.schedule(result)
        assert grid.resident == 1 and latency[kind] == pytest.approx(measured * 1e-6 - cost.chain(step, 1) + step.setup_s,
                                                                     abs=1e-9)
    L = {k: f"{v * 1e6:.2f}" for k, v in latency.items()}
    assert (f"warp-specialized {L['warp-specialized', 64]} and {L['warp-specialized', 128]} µs (d = 64, 128), "
            f"software-pipelined {L['software-pipelined', 64]} and {L['software-pipelined', 128]}, software-pipelined and "
            f"causal {L['software-pipelined, causal', 64]} and {L['software-pipelined, causal', 128]}") in text
    causal = latency["software-pipelined, causal", 64] / latency["software-pipelined, causal", 128]
    assert 2.5 < causal < 3.5 and "waits three times what the causal d = 128 one does" in text
    now, trial = report_launches.lone_latency_figures()
    moved = {name: trial[name][0] - now[name][0] for name in now}
    assert [name for name, gain in moved.items() if gain < 0] == ["held-out sets: the Hopper kernel's rows, d 128"]
    assert "Every test moves the right way but one" in text and "run 136's four, kept unscored, are its blind test" in text


def test_perf_md_quotes_runs_143_and_144s_lone_causal_hopper_launch_knob_by_knob():
    """Runs 143 and 144: the lone causal d = 64 launch with one knob changed at a time, against run 142's own launch,
    run 143 repeated, and the two predictions committed before the runs; the unrotated launch's residency."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_launches.hopper_lone_rows()
    own = rows["own launch"][4]
    assert abs(own[1] / (report_launches.hopper_pairs_rows()[6][4][1] / 2) - 1) < 0.01
    with tarfile.open(RESULTS / "logs" / "run143_hopper_lone.tar.gz") as tar:
        first = json.load(tar.extractfile("run143/hopper_lone.json"))["rows"]
    again = {(r["variant"], r["steps"], r["waves"]): r["ms"] for r in
             json.loads((RESULTS / "hopper_lone.json").read_text())["rows"]}
    assert all(abs(again[r["variant"], r["steps"], r["waves"]] / r["ms"] - 1) < 0.02 for r in first)
    moves = {v: {j: own[j] - rows[v][4][j] for j in (1, 4)} for v in ("mask behind a branch", "mask on every block", "in order")}
    assert max(abs(m[1]) for m in moves.values()) < 0.5 < max(abs(m[4]) for m in moves.values())  # held at N = 1 only
    assert (f"saves {moves['mask behind a branch'][4]:.2f} µs and the mask on every block "
            f"{moves['mask on every block'][4]:.2f}") in text
    assert [r[2] for r in rows.values()] == [1, 2, 1, 1, 1, 1]  # unrotated at 6 stages: two an SM; at 7, one
    gpu = gpusim.get_gpu(agreement.PRESET)
    unrotated, seventh = rows["not rotated"][1], rows["not rotated, 7 stages"][1]
    assert 2 * unrotated <= gpu.sram_bytes_per_sm < 2 * seventh and seventh - unrotated == 64 * 64 * 2 * 2
    lone = rows["not rotated, 7 stages"][4][1]
    assert lone > own[1] - 1.5  # run 144's prediction failed
    assert f"its lone program costs {lone:.2f} µs a wave at N = 1, not 1.5–3 µs less than the rotated one's {own[1]:.2f}" in text
    assert "9dd8f6d" in text and "f04015c" in text


def golden_times_moved(before, configs, after):
    """[(time after ÷ time under the model `before` a change, configuration)] of the golden file's configurations whose
    records the change moves; asserting that it moves none of their counts (a time model's change moves no byte).
    after: the model after it (for the thirty-fifth session's changes, report_history.lone_split_before: events_launch
    and the states older than it revert the forty-seventh session's lone split programs too)."""
    moved = []
    for args in configs:
        with after():
            now = golden.record(args)
        with before():
            was = golden.record(args)
        if now != was:
            assert {k: now[k] for k in ("counts", "dram", "hbm_peak_bytes", "blocks")} == {
                k: was[k] for k in ("counts", "dram", "hbm_peak_bytes", "blocks")}, args
            moved.append((now["predicted_time_s"] / was["predicted_time_s"], args))
    return moved


@before_graph_launch
def test_perf_md_quotes_the_lone_hopper_set_up_adopted_and_scored_blind():
    """The thirty-fifth session's set-up of a lone Hopper program: the golden file's counts unmoved by it and only
    Hopper times moved, the most on the shortest launches; the blind scoring of seeds 2072 to 2075, copied from run
    136's log as they were, as docs/perf.md quotes it, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    moved = golden_times_moved(report_history.lone_by_port, golden.configs(), report_history.lone_split_before)
    assert {args["algo"] for _, args in moved} == {"hopper"}
    assert all(args["seq"] <= 100 for _, args in sorted(moved, key=lambda m: m[0])[-5:])
    assert "only Hopper records' times moved, the most on launches of 1 to 100 rows" in text
    for figure in report_heldout.blind_summary(report_history.lone_by_port, report_heldout.BLIND_LONE_SETUP).values():
        assert figure in text, figure
    rows = 0
    for name in report_heldout.BLIND_LONE_SETUP:
        with report_history.lone_by_port():
            was = agreement.heldout_rows(name)
        now = agreement.heldout_rows(name)
        assert all((a != b) == (r["algo"] == "hopper") for (r, a), (_, b) in zip(was, now))
        rows += sum(r["algo"] == "hopper" for r, _ in now)
        assert report_heldout.meets_target(was) == report_heldout.meets_target(now) == (name != "heldout_2075.json")
    assert f"every one of their {rows} Hopper rows moved" in text and "three of the four meeting" in text
    one_wave = report_launches.setup_rows_figures()[1]["program_setup.json: one wave"]
    assert f"one wave's rows run up to {one_wave[3]:.2f}× slow" in text
    with tarfile.open(RESULTS / "logs" / "run136_dkdv_ramp_heldout_2072_2075.tar.gz") as logs:
        for seed in (2072, 2073, 2074, 2075):
            kept = json.load(logs.extractfile(f"run136/heldout_{seed}.json"))
            assert json.loads((RESULTS / f"heldout_{seed}.json").read_text()) == kept


@before_naive_launches
def test_perf_md_quotes_the_hopper_launch_as_a_graph_replays_it_and_its_blind_sets():
    """The thirty-fifth session's second change: the launch it takes is the graph-replayed empty kernel's, the golden
    file's counts unmoved and only Hopper times moved; run 137's one-wave launches and the blind scoring of seeds 2076
    to 2079, copied from run 145's log as they were, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    gpu = gpusim.get_gpu("H200-measured")
    r = gpusim.simulate("hopper", seq=4096, head_dim=128, gpu="H200-measured")
    assert r.config.pass_.launch_s(r.config, "hopper") == gpu.graph_launch_s
    assert f"{gpu.graph_launch_s * 1e6:.3f} µs" in text
    moved = golden_times_moved(report_history.events_launch, golden.configs(),
                               report_history.lone_split_before)
    assert {args["algo"] for _, args in moved} == {"hopper"}
    before, after = report_launches.graph_launch_figures()
    d64, d128 = (f"held-out sets: the Hopper kernel's rows, d {d}" for d in (64, 128))
    assert after[d128][0] == after[d128][1] > before[d128][0] and after[d64][0] - before[d64][0] == 6
    assert "comes within 20% at d = 128 and six more at d = 64" in text
    met = "held-out sets meeting issue 24's target"
    assert after[met][0] == before[met][0] + 1 and f"({after[met][0]} of {after[met][1]})" in text
    one_wave = "program_setup.json: one wave"
    assert f"one-wave rows {before[one_wave][0]} → {after[one_wave][0]} of {after[one_wave][1]}" in text
    waves = report_launches.hopper_waves_rows()
    one = {key: w[1][1] / w[1][0] for key, w in waves.items()}
    with report_history.events_launch():
        before = {key: w[1][1] / w[1][0] for key, w in report_launches.hopper_waves_rows().items()}
    within = lambda xs: sum(abs(x - 1) <= 0.2 for x in xs)  # noqa: E731
    assert "11 → 10 of 12" in text and (within(before.values()), within(one.values())) == (11, 10)
    assert f"priced {one[64, True, 2]:.2f} and {one[64, True, 4]:.2f}×" in text
    first = {key: w[1][0] - report_launches.wave_slopes(w)[0] for key, w in waves.items()}
    others = [first[d, causal, 1] for d, causal in ((64, True), (128, False), (128, True))]
    assert f"({first[64, False, 1]:.2f} µs) for the warp-specialized d = 64 launch but {min(others):.1f}–" \
           f"{max(others):.1f} µs" in text and f"up to {max(first.values()):.1f} µs" in text
    blind = report_heldout.blind_summary(report_history.events_launch, report_heldout.BLIND_GRAPH_LAUNCH)
    for figure in blind.values():
        assert figure in text, figure
    with report_history.lone_by_port():
        share = report_heldout.sets_share(report_heldout.BLIND_GRAPH_LAUNCH)
        assert f"({share[:5]} under the model before both" in text
    assert all(report_heldout.meets_target(agreement.heldout_rows(n)) for n in report_heldout.BLIND_GRAPH_LAUNCH)
    with tarfile.open(RESULTS / "logs" / "run145_heldout_2076_2079.tar.gz") as logs:
        for seed in (2076, 2077, 2078, 2079):
            kept = json.load(logs.extractfile(f"run145/heldout_{seed}.json"))
            assert json.loads((RESULTS / f"heldout_{seed}.json").read_text()) == kept


def test_perf_md_quotes_flash1s_evict_last_as_predicted_and_measured():
    """flash1's loads marked evict_last (forty-first session, runs 152-153): the probe's figures (flash1_l1.json) with
    and without the hint, the hinted compile's loops (gpusim/compiled.py), and bench.json's flash1 rows against the
    rows they replaced (kept in its environment) and against the model, as docs/perf.md quotes them, recomputed."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    span = lambda xs, f: f"{min(xs):{f}}–{max(xs):{f}}"  # noqa: E731
    rows = report_kernels.flash1_l1_rows()
    tensors = lambda r, count: (r["l2_to_sm_bytes"] - r["spill_l2_to_sm_bytes"]) / count  # noqa: E731
    hits = lambda r: r["l1_hit_bytes"] / r["l1_requested_bytes"]  # noqa: E731
    asked = [v["l1_requested_bytes"] / (v["l2_to_sm_bytes"] - v["spill_l2_to_sm_bytes"])
             for r in rows for v in (r["evict_last"], r["plain"], r["evict_last_o"])]
    assert f"A launch asks L1 for {span(asked, '.1f')}× the bytes of its tensors that L2 sends it" in text
    causal128 = [r for r in rows if r["head_dim"] == 128 and r["causal"]]
    others = [r for r in rows if r not in causal128]
    unhinted = [tensors(r["plain"], r["tensors"]) for r in causal128]
    assert (f"Without the hint the d = 128 causal launches read {span(unhinted, '.3f')}× gpusim's count of their "
            f"tensors (every other launch "
            f"{span([tensors(r['plain'], r['tensors']) for r in others], '.3f')}×), with it "
            f"{span([tensors(r['evict_last'], r['tensors']) for r in rows], '.3f')}×") in text
    open128 = [hits(r[v]) for r in rows if r["head_dim"] == 128 and not r["causal"] for v in ("plain", "evict_last")]
    assert (f"hit share rises from {span([hits(r['plain']) for r in causal128], '.2f')} to "
            f"{span([hits(r['evict_last']) for r in causal128], '.2f')}, the non-causal ones' ({span(open128, '.2f')} "
            f"either way)") in text
    faster = lambda rs: span([r["evict_last"]["ms"] / r["plain"]["ms"] for r in rs], ".3f")  # noqa: E731
    assert (f"ran in {faster([r for r in rows if r['head_dim'] == 128])}× the time at d = 128, and in "
            f"{faster([r for r in rows if r['head_dim'] == 64 and r['causal']])}× at d = 64 causal") in text
    from gpusim.compiled import COMPILED
    causal64 = COMPILED["sm_90", "flash1", 64, "fp16", True, 64, 256, 4, 1][3][-1]  # the inner loop
    open64 = COMPILED["sm_90", "flash1", 64, "fp16", False, 64, 256, 4, 1][3][-1]
    assert f"issues {causal64[0]:,} instructions a warp and reloads {causal64[3]} B a thread of spills" in text
    assert f"inner loop issues {open64[0]:,} instructions a warp (1,948 in the compile it replaced)" in text
    assert (ROOT / "kernels" / "flash1.py").read_text().count('eviction_policy="evict_last"') == 4
    bench = json.loads((RESULTS / "bench.json").read_text())
    replaced = {tuple(r[k] for k in ("dtype", "head_dim", "causal", "seq", "batch", "heads")): r["ms"]
                for r in bench["environment"]["runs"][-1]["replaced"]}
    ratios = {}
    for r in bench["rows"]:
        key = (r["dtype"], r["head_dim"], r["causal"], r["seq"], r["batch"], r["heads"])
        if r["provider"] == "flash1":
            ratios.setdefault((r["head_dim"], r["causal"]), []).append(r["ms"] / replaced.pop(key))
    assert not replaced
    assert (f"d = 64 causal {span(ratios[64, True], '.2f')}× their time before, d = 128 "
            f"{span(ratios[128, False] + ratios[128, True], '.2f')}×, d = 64 non-causal "
            f"{span(ratios[64, False], '.2f')}×") in text
    priced = [(r, x) for r, x in agreement.rows("bench.json") if r["provider"] == "flash1"]
    misses = [(r, x) for r, x in priced if abs(x - 1) > 0.2]
    assert f"The model is within 20% on {len(priced) - len(misses)} of them" in text and len(priced) == 56
    assert {(r["head_dim"], r["causal"], r["seq"], r["dtype"]) for r, _ in misses} == {(64, False, 2048, "fp16"),
                                                                                        (64, False, 2048, "bf16")}
    assert f"are priced {span([x for _, x in misses], '.2f')}× slow" in text
    worst = max(abs(r["rel_err"]) for r in json.loads((RESULTS / "ncu.json").read_text())["rows"]
                if r["kernel"] == "flash1" and r["quantity"] == "l2_to_sm_bytes")
    assert f"flash1's L2→SM within {math.ceil(worst * 1e4) / 100:.2f}% on all 12 launches" in text  # rounded up


@pytest.mark.parametrize("name", ["ncu", "ncu_bwd"])
def test_the_stored_nsight_comparisons_are_the_current_models(name):
    """results/h200/NAME.json, which the course and the tests read as stored, is its raw CSVs compared with gpusim as
    it stands (python -m benchmarks.ncu compare): written again after a change to the model, never left as the model
    was (ncu_bwd.json was, from run 87 until the forty-first session: its DRAM writes priced before rule 4's change)."""
    stored = json.loads((RESULTS / f"{name}.json").read_text())["rows"]
    now = ncu.compare_run(name, RESULTS)
    assert [{k: r[k] for k in r if k not in ("simulated", "rel_err")} for r in stored] == \
           [{k: r[k] for k in r if k not in ("simulated", "rel_err")} for r in now]
    for a, b in zip(stored, now):
        if a["quantity"] == "time_s":
            assert a["simulated"] == pytest.approx(b["simulated"], rel=1e-9), (name, a)
        else:
            assert a["simulated"] == b["simulated"], (name, a)


def test_perf_md_quotes_the_dram_reads_misses_at_the_edges_as_run_153_measured_them():
    """ncu.json's DRAM-read misses of the 10% target (run 153, the current model), as docs/perf.md's bullet names them:
    which launches, which way, by how much: rel_err is (gpusim - measured) / measured (benchmarks.ncu.compare), so
    the bullet gives it as the model short of (or over) the measured, and the measured over the model beside it."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = [r for r in _dram_reads("ncu") if abs(r["rel_err"]) > ncu.TARGETS["dram_read_bytes"]]
    assert all(r["rel_err"] == pytest.approx((r["simulated"] - r["measured"]) / r["measured"]) for r in rows)
    err = {(r["kernel"], r["seq"], r["head_dim"], r["causal"]): r["rel_err"] for r in rows}
    pct = lambda keys: f"{100 * min(abs(err[k]) for k in keys):.0f}–{max(abs(err[k]) for k in keys):.0%}"  # noqa: E731
    times = lambda keys: [1 / (1 + err[k]) for k in keys]  # noqa: E731  (measured over gpusim's)
    span = lambda keys: f"{min(times(keys)):.2f}–{max(times(keys)):.2f}×"  # noqa: E731
    qk = [("qk", 16384, 64, False), ("qk", 16384, 128, False)]
    wide = [("flash2", 32768, 128, False), ("hopper", 32768, 128, False)]
    hopper, flash1 = ("hopper", 16384, 128, True), ("flash1", 1024, 128, True)
    assert set(err) == {*qk, *wide, hopper, flash1}
    assert all(err[k] < 0 for k in qk + wide) and err[hopper] > 0 < err[flash1]
    assert (f"qk at N = 16,384 non-causal (the model {pct(qk)} short of the measured; the measured {span(qk)} "
            f"the model's), flash2 and Hopper at N = 32,768, d = 128 non-causal (one head's K and V of 16 MiB: the "
            f"model {pct(wide)} short; the measured {span(wide)}), Hopper at d = 128 causal, N = 16,384 (the model "
            f"{err[hopper]:.0%} over; the measured {times([hopper])[0]:.2f}×), and flash1 at d = 128 causal, "
            f"N = 1,024 (the model {err[flash1]:.0%} over; the measured {times([flash1])[0]:.2f}×)") in text


def test_each_blind_scoring_is_as_its_perf_md_section_scored_it_and_the_readme_gives_their_range():
    """docs/perf.md's blind_scorings table gives each once-only scoring of held-out sets under the model, and on the
    rows, its section of docs/perf.md scored it with (report_heldout.blind_state: the sections' tests price the same
    states), and that section quotes the same figure; every set from seed 2038 on is in one scoring; the README's
    headline gives the least and the most of them."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    scored = [n for names, _, _ in report_heldout.BLIND_SCORINGS for n in names]
    assert sorted(scored) == sorted(n for n in report_heldout.HELD_OUT if n != "heldout.json" and int(n[8:12]) >= 2038)
    shares = []
    for (names, label, _), (seeds, how, rows, share) in zip(report_heldout.BLIND_SCORINGS,
                                                             report_heldout.blind_scorings()):
        with report_heldout.blind_state(names):
            pairs = [p for n in names for p in agreement.heldout_rows(n)]
        assert (rows, share) == (len(pairs), within(pairs) / len(pairs)) and f"{seeds}, {how}" == label
        assert f"| {seeds[6:]} | {how} | {rows} | {share:.1%} |" in text
        quotes = (f"{share:.1%} of {rows}", f"{within(pairs)} of {rows} rows ({share:.1%})",
                  f"{within(pairs)} of their {rows} rows ({share:.1%})")
        assert any(q in text for q in quotes), (label, share)
        shares.append(share)
    assert report_heldout.blind_range() == (f"the {len(shares)} groups of sets from seed 2038 on had {min(shares):.1%} "
                                            f"to {max(shares):.1%} of their rows within 20%")
    assert report_heldout.blind_range() in readme


def test_perf_md_quotes_the_kernels_against_sdpa_as_bench_json_has_them():
    """The bullets under docs/perf.md's sdpa table: flash2 over SDPA flash (N >= 2K), the Hopper kernel over cuDNN
    (N >= 4K) and its fp8 over its fp16 (N >= 4K, by d and at 4K), recomputed from bench.json."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    rows = report_kernels.bench_rows()
    groups = [(dt, d, c) for dt in ("fp16", "bf16") for d in (64, 128) for c in (False, True)]

    def ratios(num, den, least, where=groups, num_dtype=None):  # {(dtype, d, causal, N): den's time over num's}
        return {(dt, d, c, n): b["ms"] / a["ms"] for dt, d, c in where for n in (*report_kernels.SEQS, 65536, 131072)
                if n >= least for a, b in [(report_kernels.measured(rows, num, d, c, n, num_dtype or dt),
                                            report_kernels.measured(rows, den, d, c, n, dt))] if a and b}
    span = lambda xs: f"{min(xs):.2f}–{max(xs):.2f}×"  # noqa: E731
    flash2 = list(ratios("flash2", "sdpa_flash", 2048).values())
    assert min(flash2) > 1 and f"and bf16 ({span(flash2)} over the table's {len(flash2)} points, none below 1)" in text
    hopper = list(ratios("hopper", "sdpa_cudnn", 4096).values())
    assert f"{span(hopper)} cuDNN at N ≥ 4K (the table's {len(hopper)} points, fp16 and bf16)" in text
    fp8 = {d: ratios("hopper", "hopper", 4096, [("fp16", d, c) for c in (False, True)], "fp8") for d in (64, 128)}
    wide = {k: x for k, x in fp8[128].items() if k[3] >= 8192}
    exception = [k for k, x in wide.items() if x < 1.35]
    assert exception == [("fp16", 128, False, 16384)]
    assert (f"{span(fp8[128].values())} at d = 128 (≥ 1.35 at N ≥ 8K but non-causal 16K, {wide[exception[0]]:.3f}; "
            f"at 4K {fp8[128]['fp16', 128, False, 4096]:.3f} non-causal and {fp8[128]['fp16', 128, True, 4096]:.3f} "
            f"causal), {span(fp8[64].values())} at d = 64") in text


def test_perf_md_quotes_the_floors_as_benchmarks_floors_computes_them():
    """docs/perf.md's reading of its floors table (benchmarks.floors at the table's N, d 64 and 128): flash's matmul
    floor over its bytes floor, non-causal and causal, and naive's bytes floor over its matmul floor."""
    from benchmarks.floors import floors
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    seqs = (512, 2048, 8192, 32768)
    table = {(d, c, n): floors(n, d, c) for d in (64, 128) for c in (False, True) for n in seqs}
    flash = {k: f["compute_ms"] / f["flash_bytes_ms"] for k, f in table.items()}
    naive = {k: f["naive_bytes_ms"] / f["compute_ms"] for k, f in table.items()}
    def span(pick):
        xs = [x for k, x in naive.items() if pick(k)]
        return f"{min(xs):.1f}–{max(xs):.1f}×"
    assert all(flash[64, c, n] == pytest.approx(flash[128, c, n]) for c in (False, True) for n in seqs)
    assert (f"flash attention's matmul floor is {flash[64, False, 512]:.1f}× its bytes floor at N = 512 and grows with "
            f"N, to {flash[64, False, 32768]:.0f}× at 32K") in text
    assert (f"(causal halves the matmul floor: {flash[64, True, 512]:.1f}× at N = 512, bytes-bound there, "
            f"{flash[64, True, 32768]:.0f}× at 32K)") in text and flash[64, True, 512] < 1 < flash[64, False, 512]
    assert (f"its bytes floor is {span(lambda k: not k[1])} its matmul floor ({span(lambda k: k[:2] == (64, False))} "
            f"at d = 64, {span(lambda k: k[:2] == (128, False))} at d = 128; {span(lambda k: k[1])} causal)") in text


def test_perf_md_quotes_the_agreement_targets_as_the_model_stands():
    """The targets under docs/perf.md's agreement table: bench.json's rows within 20%, the worst and the others outside
    20%, recomputed; and the Hopper d = 64 causal N = 512 rows that were the worst once, as they are priced now."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    pairs = agreement.rows("bench.json")
    out = sorted((p for p in pairs if not close(p[1])), key=lambda p: -abs(p[1] - 1))
    desc = lambda r: (r["provider"], r["head_dim"], r["causal"], r["seq"], r["dtype"])  # noqa: E731
    assert [desc(r) for r, _ in out] == [("flash1", 64, False, 2048, "bf16"), ("flash1", 64, False, 2048, "fp16")]
    hopper = lambda: next(x for r, x in agreement.rows("bench.json")  # noqa: E731
                          if desc(r) == ("hopper", 64, True, 16384, "bf16"))
    with report_history.one_slot_listed():
        before = hopper()
    assert (f"20% on {within(pairs)} of the {len(pairs)} rows ({within(pairs) / len(pairs):.0%}): met**; **within 40% "
            f"on the worst: met** (worst {out[0][1]:.2f}, flash1 at d = 64 non-causal, N = 2,048, bf16; the other "
            f"outside 20% is its fp16 twin, {out[1][1]:.2f}; the Hopper kernel at d = 64 causal, N = 16,384, bf16, was "
            f"{before:.2f} until the sixty-sixth session list-scheduled its launch of two programs an SM, "
            f"{hopper():.2f} now)") in text
    once = [x for r, x in pairs if desc(r)[:4] == ("hopper", 64, True, 512) and r["dtype"] in ("fp16", "bf16")]
    assert f"(now {min(once):.2f}–{max(once):.2f})" in text


def test_perf_md_quotes_the_speedup_charts_worst_point():
    """The target under docs/perf.md's speedup table: the worst predicted / measured ratio of naive's time over
    flash2's, and where, recomputed (report_kernels.speedup_pairs, the table's own figures)."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    pairs = report_kernels.speedup_pairs()
    worst = max(pairs, key=lambda k: abs(pairs[k][1] / pairs[k][0] - 1))
    assert worst == (64, True, 8192) and all(abs(p / m - 1) <= 0.15 for m, p in pairs.values())
    assert (f"(worst: d = 64 causal at 8K, predicted {pairs[worst][1] / pairs[worst][0]:.2f}× the measured "
            "ratio;") in text


def test_perf_md_quotes_decoding_against_cudnn_and_the_models_median():
    """docs/perf.md's decode figures: the paged kernel behind cuDNN at 32K-128K in decode_layout.json and decode.json,
    the scattered pages against the same in order, and decode.json's median gpusim / measured now."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    layout = {(r["seq_kv"], r["variant"]): r for r in json.loads((RESULTS / "decode_layout.json").read_text())["rows"]}
    seqs = (32768, 65536, 131072)
    here = [layout[n, "cudnn"]["ms"] / layout[n, "paged16"]["ms"] for n in seqs]
    scatter = [layout[n, "paged16"]["ms"] / layout[n, "paged16_in_order"]["ms"] - 1 for n in seqs]
    rows = json.loads((RESULTS / "decode.json").read_text())["rows"]
    paged = {r["seq_kv"]: r["ms"] for r in rows if (r["provider"], r["batch"]) == ("split_kv", 1) and "ms" in r}
    cudnn = {r["seq_kv"]: r["ms"] for r in rows if (r["provider"], r["batch"]) == ("sdpa_cudnn", 1) and "ms" in r}
    decode = [cudnn[n] / paged[n] for n in seqs]
    behind = lambda xs: f"{1 - max(xs):.1%}–{1 - min(xs):.1%}".replace("%–", "–")  # noqa: E731
    assert f"Scattering the pages costs {min(scatter):.1%}–{max(scatter):.1%}".replace("%–", "–") in text
    assert (f"behind cuDNN at 32K–128K: {behind(here)} here (×{min(here):.3f}–{max(here):.3f}) and {behind(decode)} in "
            f"`decode.json` ({min(decode):.3f}–{max(decode):.3f}×)") in text
    summary = agreement.summary(agreement.rows("decode.json"))
    m = summary["median"]
    said = "within 1%" if abs(m - 1) < 0.005 else f"{m - 1:.0%}" if m > 1 else f"{1 - m:.0%} fast"
    assert f"{said} as the model stands (median gpusim ÷ measured {m:.2f} over its {summary['rows']} rows)" in text


def test_perf_md_quotes_hopper_attentions_host_time_per_call():
    """docs/perf.md's opening: hopper_attention's time a call from Python on host_before.json's small shapes and on
    host.json's (after the launch cache)."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    us = {name: [r["us"] for r in json.loads((RESULTS / name).read_text())["rows"]
                 if r["entry"] == "hopper_attention" and r.get("us")] for name in ("host_before.json", "host.json")}
    assert (f"({min(us['host_before.json']):.0f}–{max(us['host_before.json']):.0f} µs a call for `hopper_attention` on "
            f"the small shapes of `host_before.json`, {min(us['host.json']):.0f}–{max(us['host.json']):.0f} µs on "
            "`host.json`'s, after the launch cache)") in text


def test_the_stated_date_spans_are_the_results_files():
    """The dates docs/perf.md, the README and results/h200/README.md give for the runs: the first and last
    `environment.date` of results/h200/'s files, results/h200/README.md's run ranges per day from the first and
    through the last (a run whose output is a log alone, as run 210's, may come on a later day), and those ranges
    hold every run its table dates, up to the last run of the table."""
    dates = sorted(json.loads(p.read_text()).get("environment", json.loads(p.read_text()))["date"][:10]
                   for p in RESULTS.glob("*.json"))
    first, last = dates[0], dates[-1]
    perf = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert f"Runs of {first} to {last} (each file's `environment.date`" in perf
    on = lambda day: {p.name for p in RESULTS.glob("*.json") if json.loads(p.read_text()).get(  # noqa: E731
        "environment", json.loads(p.read_text()))["date"].startswith(day)}
    assert on(first) == {"ceilings.json", "flash2_tiles.json", "hopper_check.json"}
    assert on(last) == {"drift.json"}
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"{first} to {last[5:]})" in readme
    index = (RESULTS / "README.md").read_text()
    header = " ".join(index.split("\n\n")[1].split())
    days = {d: (int(a), int(b or a)) for a, b, d in re.findall(r"[Rr]uns? (\d+)(?:–(\d+))? on (\d{4}-\d\d-\d\d)",
                                                             header)}  # "runs 3–20 on ...", "run 172 on ..."
    assert min(days) == first and last in days
    table = {int(m.group(1)): set(re.findall(r"2026-\d\d-\d\d", m.group(0)))
             for m in re.finditer(r"^\| (\d+) \|.*$", index, re.M)}
    assert max(b for _, b in days.values()) == max(table)
    for run, stated in table.items():
        assert stated <= days.keys(), (run, stated - days.keys())  # a day the header leaves out
        assert all(days[d][0] <= run <= days[d][1] for d in stated), run
    assert sum(bool(stated) for stated in table.values()) >= 140  # most rows date themselves: the check has rows


def test_perf_md_says_what_prices_a_hopper_programs_set_up():
    """docs/perf.md's ceilings: the Hopper set-up row of program_setup.json is no longer priced; LONE_SETUP_S, which
    h200_constants does not derive, is, with its range as gpusim holds it."""
    from gpusim.passes import hopper
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    setup = [s * 1e6 for s in hopper.LONE_SETUP_S.values()]
    assert not any("setup" in name for name in h200_constants.constants())
    assert not hasattr(hopper, "WS_SETUP_S") and not hasattr(hopper, "HOST_SETUP_S")
    assert (f"replaced it by `LONE_SETUP_S` in `gpusim/passes/hopper.py` (a lone program's wait per launch kind and d, "
            f"{min(setup):.1f}–{max(setup):.1f} µs") in text


def test_perf_md_says_run_119s_sets_were_scored_after_the_last_wave_rule():
    """Run 119's two held-out sets: docs/perf.md's backward GQA section says they were scored once after
    cost.last_per_sm (BLIND_LAST_WAVE) and are in results/h200/."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert report_heldout.BLIND_LAST_WAVE == ("heldout_2054.json", "heldout_2055.json")
    assert all((RESULTS / n).exists() and n in report_heldout.HELD_OUT for n in report_heldout.BLIND_LAST_WAVE)
    assert "until the twenty-sixth session's `cost.last_per_sm`, which they were scored once after" in text
    assert "are kept unscored in its log (`results/h200/logs/run119" not in text


def test_readme_names_the_backward_against_sdpas_run_and_the_fitted_constants():
    """The README's backward line names bench_bwd.json's run as results/h200/README.md does, and the constants the
    README says are fitted are docs/perf.md's, at the values gpusim holds."""
    from gpusim.passes import naive
    index = (RESULTS / "README.md").read_text()
    assert f"(flash2, torch naive: run {perf_report.BENCH_BWD_RUN};" in index
    readme = " ".join((ROOT / "README.md").read_text().split())
    perf = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert perf_report.backward_line(perf_report.backward_against_sdpa()) in (ROOT / "README.md").read_text()
    assert ("Four constants are fitted to timings" in readme and "`ISSUE_HIDING` and `CONTENTION`" in readme
            and '`ISSUE_HIDING["softmax"]`' in readme and "and `RAGGED_OVERLAP` (`gpusim/cost.py`)" in readme)
    assert (f"`ISSUE_HIDING` ({cost.ISSUE_HIDING}) and `CONTENTION` ({cost.CONTENTION}) in `gpusim/cost.py`, fitted"
            in perf and f'`ISSUE_HIDING["softmax"]` ({naive.Naive.ISSUE_HIDING["softmax"]}) in' in perf)
    assert f"`RAGGED_OVERLAP` ({cost.RAGGED_OVERLAP}) in `gpusim/cost.py`: fitted on timings" in perf
    named = re.findall(r"^# ([\w ,]+?): fitted on", (ROOT / "gpusim" / "cost.py").read_text(), flags=re.M)
    fitted = [n for names in named for n in re.findall(r"[A-Z][A-Z_]+", names)]
    assert fitted == ["ISSUE_HIDING", "CONTENTION", "RAGGED_OVERLAP"]  # cost.py's own: each in both documents
    assert all(f"`{n}`" in readme and f"`{n}` (" in perf for n in fitted)


def test_results_readme_gives_the_gpus_memory_as_each_source_reports_it():
    """results/h200/README.md's opening: the H200's memory as nvidia-smi printed it (run 153's log) and as torch's
    total_memory (ceilings.json's hbm_bytes), in MiB."""
    index = " ".join((RESULTS / "README.md").read_text().split())
    with tarfile.open(RESULTS / "logs" / "run153_ncu_flash1.tar.gz") as logs:
        smi = logs.extractfile("run153/logs/nvidia-smi.txt").read().decode()
    total = int(re.search(r"/\s*(\d+)MiB", smi).group(1))
    hbm = json.loads((RESULTS / "ceilings.json").read_text())["hbm_bytes"] / 2**20
    assert (f"{total:,} MiB as `nvidia-smi` reports its memory, e.g. in `logs/run153_ncu_flash1.tar.gz`; "
            f"{hbm:,.0f} MiB as torch's `total_memory`, `ceilings.json`'s `hbm_bytes`") in index


def test_perf_md_reads_run_199s_host_rows_and_the_h200_predictions_as_the_files_give_them():
    """The words around the generated blocks of runs 199 and 201: the step within 1.5x on all but one of this tree's
    rows and on none of the tree before's; the ragged wave within 20% on all but one row, its median under 1."""
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    step = {tree: report_gpus.entry_ratios(names, folder=report_gpus.H200)["flash2_train_step"]
            for tree, names in report_gpus.RUN_199.items()}
    assert sum(x > 1.5 for x in step["after"]) == 1 and not any(x <= 1.5 for x in step["before"])
    assert "meets issue 24's 1.5× on all but one row, where the tree before the kept launches met it on none" in text
    wave = report_gpus.ragged_wave_ratios(folder=report_gpus.H200, preset=report_gpus.H200_PRESET)
    assert sum(abs(x - 1) > 0.2 for x in wave) == 1 and statistics.median(wave) < 1
    assert "within 20% on all but one row, as predicted, its median a little under 1" in text


def test_perf_md_contents_link_every_section_by_githubs_anchor():
    """docs/perf.md's contents (perf_report.contents): one entry per ## and ### heading outside code fences, in order,
    each link GitHub's anchor (a repeated title numbered -1, -2, ...); worked out by hand on a small text."""
    text = ("# T\n\n## One `a.json`, run 7\n```\n## not a heading\n```\n### Two: x / y (fp16)\n#### One `a.json`, run 7\n"
            "## One `a.json`, run 7\n")
    assert perf_report.contents(text) == ("- [One `a.json`, run 7](#one-ajson-run-7)\n"
                                          "  - [Two: x / y (fp16)](#two-x--y-fp16)\n"
                                          "- [One `a.json`, run 7](#one-ajson-run-7-2)")  # the #### one is -1
    perf = (ROOT / "docs" / "perf.md").read_text()
    headings = [line for line in perf.split("<!-- contents:end -->")[1].splitlines()
                if line.startswith(("## ", "### "))]
    listed = perf.split("<!-- contents:begin -->")[1].split("<!-- contents:end -->")[0].strip().splitlines()
    assert len(listed) == len(headings) > 40


def test_naive_meets_its_floor_target_where_perf_md_says():
    """perf.md: bench.json's naive rows meet 1.5x their floor at d = 64 non-causal from 2K to 32K, and in no other
    group; the table beside it is generated, this checks the sentence."""
    ratios = report_kernels.naive_floor_ratios()
    met = {(d, c): [n for (d_, c_, n), x in ratios.items() if (d_, c_) == (d, c) and x <= 1.5]
           for d in (64, 128) for c in (False, True)}
    assert met == {(64, False): [2048, 4096, 8192, 16384, 32768], (64, True): [], (128, False): [], (128, True): []}
    at_32k = {c: f"{ratios[64, c, 32768]:.2f}" for c in (False, True)}
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert "Met for d = 64 non-causal from 2K to 32K" in text
    assert f"2.11 at 32K, is {at_32k[False]} in `bench.json`" in text and f"(2.65 to {at_32k[True]} at d = 64)" in text


def test_run_1s_flash2_against_sdpa_is_what_perf_md_says():
    """perf.md's flash2 before the diagonal-only mask: run 1's speed over SDPA flash's, fp16 and bf16, at d = 128 over
    every N and from 2K, and at d = 64 causal from 2K."""
    rows = json.loads((RESULTS / "run1" / "bench.json").read_text())["rows"]
    ms = {(r["provider"], r["dtype"], r["head_dim"], r["causal"], r["seq"]): r["ms"] for r in rows if "ms" in r}
    speed = {k[1:]: ms[("sdpa_flash",) + k[1:]] / t for k, t in ms.items() if k[0] == "flash2"}
    def span(keep):
        kept = [v for k, v in speed.items() if keep(*k)]
        return f"{min(kept):.2f}–{max(kept):.2f}"
    text = (ROOT / "docs" / "perf.md").read_text()
    assert f"Before: {span(lambda t, d, c, n: d == 128 and n >= 2048)}× at d = 128 and " \
           f"{span(lambda t, d, c, n: d == 64 and c and n >= 2048)}× at d = 64 causal, N ≥ 2K (run 1" in text
    assert f"{span(lambda t, d, c, n: d == 128)}× SDPA flash at d = 128 (run 1, every N)" in text


def test_perf_mds_tile_and_decode_rate_figures_are_the_files():
    """perf.md: flash2 at 64 x 64 against 128 x 128 (tiles.json, d = 128, N = 8,192, non-causal, fp16), and the paged
    decode's rate at batch 64 from 32K to 128K cached tokens (decode.json)."""
    tiles = json.loads((RESULTS / "tiles.json").read_text())["rows"]
    ms = {(r["block_q"], r["block_kv"]): r["ms"] for r in tiles if r["algo"] == "flash2" and r["head_dim"] == 128
          and not r["causal"] and r["seq"] == 8192 and r["dtype"] == "fp16" and r.get("num_warps") in (4, 8)
          and (r["block_q"], r["block_kv"], r["num_warps"]) in ((64, 64, 4), (128, 128, 8))}
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert f"1.21× faster than the old default 128 × 128 (N = 8,192, non-causal: {ms[64, 64]:.2f} against " \
           f"{ms[128, 128]:.2f} ms)" in text and f"{ms[128, 128] / ms[64, 64]:.2f}" == "1.21"
    rates = [r["bytes_per_s"] / 1e12 for r in json.loads((RESULTS / "decode.json").read_text())["rows"]
             if r["batch"] == 64 and r["seq_kv"] >= 32768 and r["provider"] == "split_kv"]
    assert f"the bytes gpusim counts at {min(rates):.2f}–{max(rates):.2f} TB/s" in text


def test_perf_md_bounds_the_h100s_l2_to_sm_bytes_by_their_worst_launch():
    """perf.md's words on the H100's Nsight runs: L2→SM within the worst launch's error, rounded up (0.216%)."""
    rows = [r for r in report_gpus.forward_rows() + ncu.compare_run("ncu_bwd", report_gpus.H100)
            if r["rel_err"] is not None and r["quantity"] == "l2_to_sm_bytes"]
    worst = report_kernels.up_percent(max(abs(r["rel_err"]) for r in rows))
    assert f"L2→SM equals gpusim's within {worst} on every launch the H100" in " ".join(
        (ROOT / "docs" / "perf.md").read_text().split())


def test_perf_md_says_what_the_drift_probe_found_as_drift_json_has_it():
    """Run 211 (drift.json, analysed): the stamps' cost, the replay's two misses and where each falls, and the two
    capacities' counts close to each other, as perf.md's "The probe, run" says them."""
    rows = {(r["seq"], r["head_dim"]): r for r in report_kernels.drift_rows()}
    slower = [r["stamped_ms_0"] / r["plain_ms"] - 1 for r in rows.values()]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert f"the stamped kernel {min(slower):.0%}–{max(slower):.0%} slower than the plain one".replace("%–", "–") in text
    misses = {key for key, r in rows.items() if any(abs(e) > ncu.TARGETS["dram_read_bytes"] for e in r["replay_err"])}
    assert misses == {(32768, 128), (98304, 64)} and "It misses twice" in text
    assert min(rows[32768, 128]["gpusim"]) > rows[32768, 128]["measured"]  # the replay reads more than measured
    low, high = sorted(rows[98304, 64]["gpusim"])
    assert low < rows[98304, 64]["measured"] < high  # the two repeats either side
    assert max(abs(a - b) for r in rows.values() for a, b in zip(r["gpusim"], r["half_missed"])) < 0.15
    spread = [rows[n, 128]["start_spread_us_0"] for n in (16384, 24576, 32768, 40960, 65536, 98304)]
    assert spread == sorted(spread)  # "grows with N"

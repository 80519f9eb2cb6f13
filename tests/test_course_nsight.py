"""gpusim_course.nsight and the chapters' measured.py: Nsight Compute's rows (results/<gpu>/ncu.json) summed,
grouped and told as sentences. The rows here are made so that each number the functions print can be worked out
by hand."""
import pytest

import gpusim
from gpusim.units import fmt_bytes, fmt_time
from gpusim_course import nsight
from gpusim_course.practice import measured as practice_measured
from gpusim_course.provenance import measured as provenance_measured
from gpusim_course.standard import measured as standard_measured

TARGETS = {"l2_to_sm_bytes": 0.02, "sm_to_l2_bytes": 0.02, "dram_read_bytes": 0.1, "dram_write_bytes": 0.2,
           "time_s": 0.25}


def ncu_rows():
    """ncu.json-shaped rows: flash2 exact, flash1 causal reading 25% more than counted, two naive kernels."""
    rows = []
    for kernel, causal, l2_measured, time_measured in (("flash2", False, 1000, 2e-3), ("flash1", True, 1250, 4e-3),
                                                      ("qk", False, 990, 1e-3), ("softmax", False, 1000, 50e-6)):
        for quantity, sim, meas in (("l2_to_sm_bytes", 1000, l2_measured), ("dram_read_bytes", 500, 520),
                                    ("dram_write_bytes", 100, 101), ("time_s", 1e-3, time_measured)):
            rows.append({"kernel": kernel, "seq": 4096, "head_dim": 64, "causal": causal, "dtype": "fp16",
                         "quantity": quantity, "simulated": sim, "measured": meas, "rel_err": (sim - meas) / meas})
    return rows


def test_kernel_names_are_gpusims_launches():
    assert nsight.kernel_names("naive") == ("qk", "softmax", "pv")
    assert nsight.kernel_names("flash2") == ("flash2",)


def test_ncu_measured_sums_an_algorithms_kernels():
    rows = ncu_rows()
    got = standard_measured.ncu_measured(rows, seq=4096, head_dim=64, algos=("naive", "flash2"))
    assert got["naive"] == (2 * (520 + 101), 1e-3 + 50e-6, "the project's Triton kernels qk, softmax, pv")
    assert got["flash2"] == (520 + 101, 2e-3, "the project's Triton kernel flash2")
    with pytest.raises(ValueError, match="no naive launch at N=8192"):
        standard_measured.ncu_measured(rows, seq=8192, head_dim=64)
    assert practice_measured.ncu_row(rows, "flash1", "l2_to_sm_bytes", 4096, 64, causal=True)["measured"] == 1250


def test_ncu_error_rows_group_per_kernel():
    rows = ncu_rows()
    l2 = {r["kernel"]: r for r in provenance_measured.ncu_error_rows(rows, "l2_to_sm_bytes")}
    assert l2["flash2"]["equal to the byte"] == 1 and l2["flash1"]["equal to the byte"] == 0
    assert l2["flash1"]["(gpusim - measured) / measured"] == "-20.0%"  # 1000 / 1250 - 1
    assert l2["qk"]["at the longest N"] == "+1.0%" and l2["qk"]["N"] == "4,096 to 4,096"
    times = {r["kernel"] for r in provenance_measured.ncu_error_rows(rows, "time_s")}
    assert times == {"flash2", "flash1", "qk"}  # softmax's 50 us launch is under the 100 us cut
    assert "equal to the byte" not in provenance_measured.ncu_error_rows(rows, "time_s")[0]


def test_ncu_findings_are_computed_from_the_rows():
    findings = practice_measured.ncu_findings(ncu_rows(), TARGETS)
    assert findings[0] == ("Bytes from L2 into the SMs: equal to gpusim's count to the byte in every launch of "
                           "flash2, softmax (2 launches).")
    assert findings[1] == "The naive kernels (qk, softmax, pv): within 1% of gpusim's count."
    assert not any("flash1: within" in f for f in findings)  # no flash1 launch without the mask to compare
    assert findings[2] == "DRAM writes: within 1% of gpusim's L2 model in all 4 launches."
    assert findings[3] == "DRAM reads: within 10% in 4 of 4 launches."  # 500 / 520 - 1 = -3.8%
    assert findings[-1] == ("Time: gpusim's prediction is below the measured time in 2 of 3 launches (of 100 us or "
                            "more), by up to 75%; within 25% at the longest N for: qk d=64.")


def test_ncu_findings_give_flash1s_small_errors_enough_digits():
    """flash1 read 0.029% and 0.21% off gpusim's count: the sentence said "within 0.0% ... up to 0% more"."""
    rows = [r for r in ncu_rows() if r["kernel"] != "flash1"]
    for causal, measured in ((False, 999_710), (True, 997_875)):
        rows.append({"kernel": "flash1", "seq": 4096, "head_dim": 64, "causal": causal, "dtype": "fp16",
                     "quantity": "l2_to_sm_bytes", "simulated": 1_000_000, "measured": measured,
                     "rel_err": 1_000_000 / measured - 1})
    assert ("flash1: the SMs read within 0.029% of gpusim's count without the mask and within 0.21% with the "
            "causal mask.") in practice_measured.ncu_findings(rows, TARGETS)


def test_ncu_findings_quote_the_targets_of_the_file():
    findings = practice_measured.ncu_findings(ncu_rows(), TARGETS | {"time_s": 0.5, "dram_read_bytes": 0.02})
    assert findings[3] == ("DRAM reads: within 2% in 0 of 4 launches; the others, as (gpusim - measured) / measured, "
                           "below 0 where gpusim counts fewer bytes than reached DRAM: flash2 N=4,096 d=64 (-4%), "
                           "flash1 N=4,096 d=64 causal (-4%), qk N=4,096 d=64 (-4%), softmax N=4,096 d=64 (-4%).")
    assert all(r["rel_err"] < 0 for r in ncu_rows() if r["quantity"] == "dram_read_bytes")  # 500 counted, 520 read
    assert findings[-1].endswith("within 50% at the longest N for: flash2 d=64, qk d=64.")  # flash2: -50%


def test_measured_rows_put_gpusims_dram_bytes_and_time_beside_the_measurement():
    shape = dict(seq=4096, head_dim=64, batch=4, heads=32)
    got = standard_measured.measured_rows({"flash2": (3 * 2**30, 2e-3, "a kernel")}, "H200-measured", **shape)
    r = gpusim.simulate("flash2", gpu="H200-measured", **shape)
    assert got == [{"algo": "flash2", "measured": "a kernel", "measured DRAM traffic": "3.00 GiB",
                    "gpusim DRAM traffic": fmt_bytes(r.dram_read_bytes + r.dram_write_bytes),
                    "measured time": "2.000 ms", "gpusim predicted": fmt_time(r.predicted_time_s)}]


def test_measured_rows_take_the_fa2_benchmark_shape_unless_told():
    """Notebook 2 computed the benchmark's batch and heads in a cell; measured_rows takes them from gpusim.fa2_shape.
    By hand: 16K tokens / 4,096 = batch 4, 2048 / 64 = 32 heads; flash2 reads Q, K and V from DRAM once each (the
    L2 keeps a head's K and V between Q blocks), 3 x 4 x 32 x 4,096 x 64 x 2 B = 192 MiB; one batch would read 48."""
    measured = {"flash2": (3 * 2**30, 2e-3, "a kernel")}
    (row,) = standard_measured.measured_rows(measured, "H200-measured", seq=4096, head_dim=64)
    r = gpusim.simulate("flash2", gpu="H200-measured", seq=4096, head_dim=64, batch=4, heads=32)
    assert r.dram_read_bytes == 3 * 4 * 32 * 4096 * 64 * 2 == 192 * 2**20
    assert row["gpusim DRAM traffic"] == fmt_bytes(r.dram_read_bytes + r.dram_write_bytes)
    assert row["gpusim predicted"] == fmt_time(r.predicted_time_s)


def test_copy_time_sentence_divides_the_measured_bytes_by_the_measured_bandwidth():
    """The bytes and seconds summed from ncu.json's rows with plain code (naive's three kernels, N = 4,096, d = 64,
    no mask), divided by ceilings.json's copy bandwidth: time = bytes / bandwidth."""
    import json
    from pathlib import Path
    results = Path(__file__).resolve().parents[1] / "results" / "h200"
    ncu, ceilings = (json.loads((results / f"{name}.json").read_text()) for name in ("ncu", "ceilings"))

    def total(kernels, quantities):
        return sum(r["measured"] for r in ncu["rows"] if r["kernel"] in kernels and r["quantity"] in quantities
                   and (r["seq"], r["head_dim"], r["causal"]) == (4096, 64, False))
    dram = ("dram_read_bytes", "dram_write_bytes")
    nbytes, seconds = total(("qk", "softmax", "pv"), dram), total(("qk", "softmax", "pv"), ("time_s",))
    rate = ceilings["copy_bytes_per_s"]
    assert 4e12 < rate < 4.8e12  # a copy's share of the H200's 4.8 TB/s datasheet bandwidth
    line = standard_measured.copy_time_sentence(standard_measured.ncu_measured(ncu["rows"], seq=4096, head_dim=64),
                                                ceilings)
    assert f"({rate / 1e12:.2f} TB/s) takes {nbytes / rate * 1e3:.2f} ms of its measured {seconds * 1e3:.2f} ms" in line
    assert line.endswith(f"moved {nbytes / total(('flash2',), dram):.0f}x fewer bytes.")

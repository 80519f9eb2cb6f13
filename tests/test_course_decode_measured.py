"""gpusim_course.decode_measured: the decode notebook's measured rows, read from results/h200/decode.json and
bench.json, set beside gpusim."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim_course import decode_measured as dm
from gpusim_course import decode_time

ROOT = Path(__file__).resolve().parents[1]


def read(name):
    return json.loads((ROOT / "results" / "h200" / name).read_text())


@pytest.fixture(scope="module")
def data():
    return read("decode.json")


def test_comparison_rows_are_the_file_s_numbers(data):
    rows = dm.comparison_rows(data, batch=1)
    split, unsplit = dm.timed(data["rows"], "split_kv", 1), dm.timed(data["rows"], "split_kv_1", 1)
    assert [r["cache tokens"] for r in rows] == sorted(split)
    for r in rows:
        n = r["cache tokens"]
        assert (r["split ms"], r["num_splits=1 ms"]) == (split[n]["ms"], unsplit[n]["ms"])
        assert r["slowdown measured"] == unsplit[n]["ms"] / split[n]["ms"]
        assert r["split predicted ms"] == decode_time.predict(dm.launch_of(split[n]))["total_s"] * 1e3
        sdpa = [x for x in data["rows"] if x["seq_kv"] == n and x["batch"] == 1 and x["provider"] in dm.SDPA
                and x.get("ms")]
        assert r["fastest SDPA ms"] == min(x["ms"] for x in sdpa)


def test_series_and_lesson(data):
    curves = dm.series(data, batch=8)
    assert set(curves) == {"split KV, measured", "split KV, gpusim", "num_splits=1, measured", "num_splits=1, gpusim",
                           "fastest SDPA, measured"}
    lesson = dm.unsplit_lesson(data, batch=64)
    assert lesson["num_splits=1 programs"] == 64 * 8 and lesson["idle SMs"] == 0
    assert "132 SMs" in dm.unsplit_sentence(dm.unsplit_lesson(data, batch=1))


def test_fixed_cost_at_small_caches(data):
    cost = dm.fixed_cost(data, batch=1, upto=4096)
    assert (cost["from"], cost["to"]) == (1024, 4096)
    assert cost["bytes growth"] > 3 > 2 > cost["time growth"]  # the bytes grow, the time hardly does
    assert "1,024" in dm.fixed_cost_sentence(cost)


def test_agreement_counts_rows(data):
    whole, long = dm.agreement(data), dm.agreement(data, min_cache=32768)
    # 2 providers x (8 lengths at batch 1 and 8, 6 at batch 64: the run stopped there); >= 32K: 3 + 3 + 1 lengths
    assert whole["rows"] == 44 and long["rows"] == 14
    assert 0 <= whole["within"] <= whole["rows"] and whole["share"] == whole["within"] / whole["rows"]


def test_helps_most_table(data):
    bench = read("bench.json")
    rows = dm.helps_most(data, bench)
    assert [r["scenario"] for r in rows] == ["prefill, 4K prompt", "prefill, 16K prompt", "decode, 4K cache",
                                             "decode, 128K cache", "decode, 4K cache", "decode, 32K cache"]
    assert [r["memory-bound?"] for r in rows] == ["no", "no", "yes", "yes", "yes", "yes"]
    ridge = gpusim.get_gpu(decode_time.GPU)
    assert rows[0]["ridge point"] == ridge.matmul_flops_per_s("fp16") / ridge.hbm_bytes_per_s
    prefill = {r["provider"]: r for r in bench["rows"] if (r["seq"], r["dtype"], r["head_dim"], r["causal"]) ==
               (4096, "fp16", 128, True)}
    assert rows[0]["FA benefit, H200: torch over FlashAttention"] == prefill["torch_naive"]["ms"] / \
        prefill["sdpa_flash"]["ms"]
    assert all(r["FA benefit, H200: project's kernels"] is None for r in rows[2:])
    assert all(r["FA benefit, gpusim"] > 1 for r in rows)

"""gpusim_course.decode_time, the decode notebook's interim time model: each term by hand from the GPU
preset's numbers, and its agreement with the H200's decode.json where the notebook relies on it."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim import decode
from gpusim_course import decode_measured, decode_time

ROOT = Path(__file__).resolve().parents[1]
LLAMA = dict(heads=32, kv_heads=8, head_dim=128)


@pytest.fixture(scope="module")
def measured():
    return json.loads((ROOT / "results" / "h200" / "decode.json").read_text())


def test_unsplit_batch_one_is_a_chain_of_latencies():
    """8 programs, one per K/V head, each walking 2,048 chunks of 64 keys: every chunk waits for its
    block-table entry and its K and V rows (two DRAM latencies) and moves 2 x 64 x 128 x 2 B alone on its SM."""
    launch = decode.make_launch(batch=1, seq_kv=131072, num_splits=1, page_size=16, gpu=decode_time.GPU, **LLAMA)
    g = gpusim.get_gpu(decode_time.GPU)
    t = decode_time.predict(launch)["decode"]
    assert (t["programs"], t["busy_sms"], t["steps"]) == (8, 8, 2048)
    step = 2 * g.hbm_latency_s + 2 * 64 * 128 * 2 / g.port_bytes_per_s("hbm")
    assert t["latency_s"] == pytest.approx(2 * g.hbm_latency_s + 2048 * step, rel=1e-12)
    assert t["predicted_s"] == pytest.approx(t["latency_s"] + g.launch_overhead_s, rel=1e-12)
    assert t["latency_s"] > 10 * t["bandwidth_s"]
    assert decode_time.idle_share(launch) == pytest.approx(1 - 8 / 132)


def test_large_batch_is_bandwidth_bound():
    launch = decode.make_launch(batch=64, seq_kv=131072, page_size=16, gpu=decode_time.GPU, **LLAMA)
    g = gpusim.get_gpu(decode_time.GPU)
    t = decode_time.predict(launch)
    assert launch.kernels == ("decode",)  # the heuristic does not split a full grid
    moved = decode_time.bytes_moved(launch)
    assert t["decode"]["bandwidth_s"] == moved / g.hbm_bytes_per_s
    assert t["total_s"] == pytest.approx(t["decode"]["bandwidth_s"] + g.launch_overhead_s, rel=1e-12)


def test_split_launch_adds_the_reduce_and_relaunch_keeps_the_splits():
    launch = decode.make_launch(batch=1, seq_kv=65536, page_size=16, gpu="H200", **LLAMA)
    t = decode_time.predict(launch)
    assert set(t) == {"split_kv", "reduce", "total_s"}
    assert t["total_s"] == t["split_kv"]["predicted_s"] + t["reduce"]["predicted_s"]
    assert decode_time.relaunch(launch).num_splits == launch.num_splits
    assert decode_time.predicted_s(batch=1, seq_kv=65536, page_size=16, **LLAMA) > 0


def test_launches_rebuilt_from_rows_move_the_bytes_the_rows_record(measured):
    rows = [r for r in measured["rows"] if r["provider"].startswith("split_kv") and r.get("ms")]
    assert rows and all(decode_time.bytes_moved(decode_measured.launch_of(r)) == r["model_bytes"] for r in rows)


def test_unsplit_slowdown_at_128k_batch_one_within_a_quarter(measured):
    """The lesson the notebook draws: the measured cost of not splitting, and gpusim's prediction of it."""
    lesson = decode_measured.unsplit_lesson(measured, batch=1)
    assert lesson["cache tokens"] == 131072 and lesson["num_splits=1 programs"] == 8
    assert lesson["slowdown measured"] > 10
    assert lesson["slowdown predicted"] == pytest.approx(lesson["slowdown measured"], rel=0.25)

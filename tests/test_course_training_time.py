"""gpusim_course.training_time (the training notebook's interim step time) and training_measured (the
backward benchmark, read when results/h200/bench_bwd.json exists; tests use a CPU smoke run's file)."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim import backward
from gpusim_course import training_measured as tm
from gpusim_course import training_time as tt

SMOKE = Path(__file__).resolve().parent / "fixtures" / "bench_bwd_smoke.json"  # bench_bwd.py --smoke, interpreter


def test_backward_roofline_by_hand():
    cfg = backward.config("flash2", seq=4096, head_dim=64, heads=16, gpu=tt.GPU)
    g = gpusim.get_gpu(tt.GPU)
    times = tt.backward_kernel_times(cfg)
    assert list(times) == ["preprocess", "dkdv", "dq"]
    mm, other, exps = backward.flops(cfg)["dkdv"]
    compute = mm / g.matmul_flops_per_s("fp16") + (other - exps) / g.fp32_flops_per_s + exps / g.sfu_ops_per_s
    assert times["dkdv"]["compute_s"] == pytest.approx(compute, rel=1e-12)
    pre = sum(r + w for (k, _), (r, w) in backward.count(cfg).items() if k == "preprocess")
    assert times["preprocess"]["memory_s"] == pytest.approx(max(pre / g.l2_bytes_per_s, pre / g.hbm_bytes_per_s))
    for t in times.values():
        assert t["predicted_s"] == pytest.approx(max(t["memory_s"], t["compute_s"]) + g.launch_overhead_s)


def test_step_is_forward_plus_backward():
    t = tt.step_times("flash2", seq=2048, head_dim=128, heads=16, batch=8, causal=True)
    forward = gpusim.simulate("flash2", seq=2048, head_dim=128, heads=16, batch=8, causal=True, gpu=tt.GPU)
    assert t["forward_s"] == forward.predicted_time_s and t["step_s"] == t["forward_s"] + t["backward_s"]
    naive = tt.step_times("naive", seq=2048, head_dim=128, heads=16, batch=8, causal=True)
    assert naive["step_s"] > t["step_s"]


def test_without_the_file_only_gpusim_s_side():
    missing = SMOKE.parent / "no_such_bench_bwd.json"
    assert tm.read_bench_bwd(missing) is None
    assert "is not there yet" in tm.status_line(None, missing)
    rows = tm.speedup_rows(None, 64, False, seqs=(1024, 4096))
    assert [r["seq"] for r in rows] == [1024, 4096]
    assert all(r["measured speedup, flash2"] is None and r["flash2 measured ms"] is None for r in rows)
    batch, heads = tm.shape(4096, 64)
    naive = tt.step_times("naive", seq=4096, head_dim=64, heads=heads, batch=batch)["step_s"]
    flash = tt.step_times("flash2", seq=4096, head_dim=64, heads=heads, batch=batch)["step_s"]
    assert (batch, heads) == (4, 32) and rows[1]["predicted speedup"] == naive / flash


def test_with_the_file_the_measured_ratios():
    data = tm.read_bench_bwd(SMOKE)
    assert "Measured on cpu" in tm.status_line(data, SMOKE)
    rows = tm.speedup_rows(data, 64, True, seqs=(64, 128))
    raw = {r["provider"]: r["ms"] for r in json.loads(SMOKE.read_text())["rows"] if
           (r["pass"], r["head_dim"], r["causal"], r["seq"]) == ("fwd+bwd", 64, True, 64) and r.get("ms")}
    assert rows[0]["measured speedup, flash2"] == raw["torch_naive"] / raw["flash2"]
    assert rows[0]["measured speedup, sdpa_flash"] == raw["torch_naive"] / raw["sdpa_flash"]
    assert rows[0]["flash2 measured ms"] == raw["flash2"]
    assert rows[1]["measured speedup, flash2"] is None  # N = 128 was not run


def test_comparison_sentence_with_and_without_measurements():
    rows = tm.speedup_rows(None, 64, False, seqs=(1024, 2048))
    assert tm.comparison_sentence({(64, False): rows}).endswith("nothing measured yet.")
    data = tm.read_bench_bwd(SMOKE)
    groups = {(64, causal): tm.speedup_rows(data, 64, causal, seqs=(64,)) for causal in (False, True)}
    sentence = tm.comparison_sentence(groups)
    over = sorted(g[0]["flash2 measured ms"] / g[0]["flash2 predicted ms"] for g in groups.values())
    assert f"takes {over[0]:.1f}x to {over[1]:.1f}x the time" in sentence and "(2 lengths and shapes)" in sentence

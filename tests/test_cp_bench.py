"""benchmarks/cp.py without GPUs: the sweep, the planned rows (--dry-run), and the merge that puts the model,
on the link the same run measured, beside each measured row."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpusim
from benchmarks import cp, cp_plan

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {"provider", "strategy", "gpus", "link", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "dtype",
          "ms", "link_send_bytes"}


def test_the_sweep_crosses_the_overlap_point_and_reaches_the_targets():
    seqs = {s.seq for s in cp_plan.shapes() if (s.heads, s.head_dim, s.dtype) == (32, 128, "bf16")}
    assert min(seqs) == 1024 and max(seqs) == 256 * 1024  # shards of 512 tokens .. 128K on two GPUs
    assert {(s.heads, s.kv_heads) for s in cp_plan.shapes()} == {(32, 32), (32, 8)}
    assert {s.head_dim for s in cp_plan.shapes()} == {64, 128} and {s.dtype for s in cp_plan.shapes()} == {"bf16", "fp16"}
    assert cp_plan.shapes()[0].seq >= 65536  # the targets first: a time budget cuts from the end


def test_dry_run_writes_every_planned_row(tmp_path):
    plan = cp.main(["--out", str(tmp_path), "--dry-run", "--part", "project,torch_cp,single"])
    rows = json.loads((tmp_path / "cp_plan.json").read_text())["rows"]
    assert rows == plan["rows"] and all(FIELDS <= set(r) for r in rows)
    providers = {r["provider"] for r in rows}
    assert {"ring", "zigzag", "ulysses", "allgather", "single_flash2", "sdpa_flash", "sdpa_cudnn"} <= providers
    assert {p for p in providers if p.startswith("torch_cp")} == {
        "torch_cp_allgather_flash", "torch_cp_allgather_cudnn", "torch_cp_alltoall_flash", "torch_cp_alltoall_cudnn"}
    assert not [r for r in rows if r["provider"] == "ulysses" and r["kv_heads"] % 2]


def test_merge_prices_each_row_on_the_measured_link(tmp_path):
    link = [{"kind": kind, "bytes": b, "ms": ms, "bytes_per_s": b / ms * 1e3}
            for kind in ("sendrecv", "alltoall") for b, ms in ((8192, 0.02), (1 << 30, 3.0))]
    shape = cp_plan.Shape(1, 32, 8, 65536, 128, True, "bf16")
    rows = [cp_plan.row("zigzag", shape, 2, ms=10.0, link_send_bytes=1, strategy="zigzag", link="nvlink"),
            cp_plan.row("single_flash2", shape, 1, ms=20.0), cp_plan.row("sdpa_flash", shape, 1, error="x")]
    for part, data in (("link", link), ("project", rows[:1]), ("single", rows[1:])):
        (tmp_path / f"cp_{part}.json").write_text(json.dumps({"environment": {"part": part}, "rows": data}))
    merged = cp.main(["--out", str(tmp_path), "--part", "merge"])
    assert json.loads((tmp_path / "cp.json").read_text()) == json.loads(json.dumps(merged))
    model = merged["model_link"]
    assert model["send_bytes_per_s"] == pytest.approx((1 << 30) / 3e-3) and model["step_latency_s"] == 2e-5
    zig, single, sdpa = merged["rows"]
    expected = gpusim.simulate("flash2", seq=65536, head_dim=128, heads=32, kv_heads=8, causal=True, dtype="bf16",
                               gpu=cp_plan.MODEL_GPU, gpus=2, strategy="zigzag", link=cp_plan.measured_link(link))
    assert zig["model_ms"] == pytest.approx(expected.predicted_time_s * 1e3)
    assert single["model_ms"] > zig["model_ms"] and "model_ms" not in sdpa


def test_the_measured_links_all_to_all_rate_is_what_left_a_rank():
    """An all-to-all row's rate is a rank's buffer over the time; (P-1)/P of it left the rank: half over 2 ranks
    (rows without `ranks`, as cp_run wrote them before), three quarters over 4."""
    rows = [{"kind": "sendrecv", "bytes": 1 << 30, "ms": 3.0, "bytes_per_s": (1 << 30) / 3e-3},
            {"kind": "alltoall", "bytes": 1 << 30, "ms": 2.0, "bytes_per_s": (1 << 30) / 2e-3}]
    assert cp_plan.measured_link(rows).alltoall_bytes_per_s == pytest.approx((1 << 30) / 2e-3 / 2)
    rows[1]["ranks"] = 4
    assert cp_plan.measured_link(rows).alltoall_bytes_per_s == pytest.approx((1 << 30) / 2e-3 * 3 / 4)


def test_merge_prices_a_pair_of_h100s_as_h100s_and_survives_a_link_part_without_rows(tmp_path):
    """The model's GPU is the one the run recorded (gpusim.hardware.device_preset); a link part that NCCL left
    without rows of a kind gives no model link and no model times, but cp.json is written."""
    link = [{"kind": kind, "bytes": b, "ms": ms, "bytes_per_s": b / ms * 1e3}
            for kind in ("sendrecv", "alltoall") for b, ms in ((8192, 0.02), (1 << 30, 3.0))]
    shape = cp_plan.Shape(1, 32, 8, 65536, 128, True, "bf16")
    row = cp_plan.row("zigzag", shape, 2, ms=10.0, link_send_bytes=1, strategy="zigzag", link="nvlink")
    for gpu, rows, preset in (("NVIDIA H100 80GB HBM3", link, "H100-measured"), ("NVIDIA H200", link[:2], None)):
        (tmp_path / "cp_link.json").write_text(json.dumps({"environment": {"gpu": gpu}, "rows": rows}))
        (tmp_path / "cp_project.json").write_text(json.dumps({"environment": {"gpu": gpu}, "rows": [row]}))
        merged = cp.main(["--out", str(tmp_path), "--part", "merge"])
        assert merged["model_gpu"] == preset and (tmp_path / "cp.json").exists()
        if preset:
            expected = gpusim.simulate("flash2", seq=65536, head_dim=128, heads=32, kv_heads=8, causal=True,
                                       dtype="bf16", gpu=preset, gpus=2, strategy="zigzag",
                                       link=cp_plan.measured_link(rows))
            assert merged["rows"][0]["model_ms"] == pytest.approx(expected.predicted_time_s * 1e3)
        else:
            assert merged["model_link"] is None and "model_ms" not in merged["rows"][0]


def test_device_presets_by_cudas_names():
    names = {"NVIDIA H200": "H200-measured", "NVIDIA H100 80GB HBM3": "H100-measured", "NVIDIA H100 PCIe": "H100-SXM",
             "NVIDIA GeForce RTX 4090": "RTX-4090", "Tesla T4": "T4", "NVIDIA L40S": None,
             "NVIDIA A100-SXM4-80GB": None,
             # a measured preset only on the device it was measured on; a substring took these before
             "NVIDIA GH200 480GB": "H100-SXM", "NVIDIA H200 NVL": "H200", "NVIDIA H100 NVL": "H100-SXM",
             "NVIDIA T400 4GB": None, "NVIDIA GeForce RTX 4090 Laptop GPU": None}
    assert {name: gpusim.hardware.device_preset(name) for name in names} == names
    assert gpusim.hardware.device_preset("NVIDIA A100-SXM4-80GB", 80 * 1024**3) == "A100-80GB"
    assert gpusim.hardware.device_preset("NVIDIA A100-SXM4-40GB", 40 * 1024**3) == "A100-40GB"
    assert [cp_plan.model_gpu({"gpu": name}) for name in ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB",
                                                          "NVIDIA A100", "cpu (gloo)")] == [
        "A100-80GB", "A100-40GB", None, cp_plan.MODEL_GPU]  # the run's name tells an A100's memory, where it does


def test_the_script_keeps_multicast_off():
    assert {k: os.environ[k] for k in cp_plan.MULTICAST_OFF} == {"NCCL_NVLS_ENABLE": "0",
                                                             "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                                             "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the smoke run is the CPU path")
def test_smoke_run_on_cpu_writes_every_row_and_the_bytes_gpusim_counts(tmp_path):
    """The measurement's own code, under torchrun with gloo (two processes) and then in this one, at the smoke
    shapes: every project row and the single GPU's flash2, each with its model time, and the bytes each strategy
    sent equal to gpusim's count."""
    pytest.importorskip("torch", reason="the smoke run is torch.distributed's (Linux)")
    from benchmarks import cp
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = ["--out", str(tmp_path), "--smoke"]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    subprocess.run(torchrun + ["-m", "benchmarks.cp", "--part", "link,check,project"] + out, check=True, cwd=ROOT,
                   env=env, capture_output=True, timeout=240)
    cp.main(["--part", "single"] + out)
    data = json.loads((tmp_path / "cp.json").read_text())
    flash2 = [r for r in cp_plan.planned(["check"], smoke=True) if not r["provider"].endswith("_hopper")]
    assert [(r["provider"], r["causal"]) for r in data["checks"]] == [(r["provider"], r["causal"]) for r in flash2]
    assert data["targets"]["outputs_within_bound"] == data["targets"]["bytes_equal_gpusim"] == "8 of 8 checked"
    assert all(0 < r["relative_error"] <= r["bound"] < 0.01 for r in data["checks"])
    assert {r["kind"] for r in data["link"]} == {"sendrecv", "alltoall"}
    rows = data["rows"]
    assert {r["provider"] for r in rows} == {"ring", "zigzag", "ulysses", "allgather", "single_flash2"}
    assert all(r["ms"] > 0 and r["model_ms"] > 0 and "error" not in r for r in rows)
    for r in rows:
        if r["gpus"] == 2:
            counted = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"],
                                      kv_heads=r["kv_heads"], causal=r["causal"], dtype=r["dtype"], gpus=2,
                                      strategy=r["strategy"]).link_send_bytes
            assert r["link_send_bytes"] == counted


def test_checked_counts_an_output_past_its_bound_a_rank_off_gpusims_bytes_and_a_check_that_raised_as_failed():
    shape = cp_plan.Shape(1, 8, 8, 4096, 128, True, "bf16")
    good = cp_plan.row("ring", shape, 2, relative_error=0.002, bound=0.004, link_send_bytes=8, every_rank_sent=[8, 8],
                       gpusim_link_send_bytes=8)
    checks = [good, good | {"relative_error": 0.005}, good | {"every_rank_sent": [8, 16]},
              cp_plan.row("zigzag", shape, 2, error="RuntimeError: NCCL")]
    assert cp_plan.checked(checks, 4) == {"outputs_within_bound": "2 of 4 checked",
                                          "bytes_equal_gpusim": "2 of 4 checked"}
    # a time budget that stopped the part after its first check: the rest count as failed
    assert cp_plan.checked(checks[:1], 12) == {"outputs_within_bound": "1 of 12 checked",
                                               "bytes_equal_gpusim": "1 of 12 checked"}


def test_the_check_shapes_fit_a_float64_reference_and_cover_the_mask_gqa_and_d64():
    shapes = cp_plan.check_shapes()
    assert {s.causal for s in shapes} == {False, True} and {s.head_dim for s in shapes} == {64, 128}
    assert any(s.kv_heads < s.heads for s in shapes) and {s.dtype for s in shapes} == {"bf16", "fp16"}
    assert all(s.batch * s.heads * s.seq**2 * 8 <= 1 << 30 for s in shapes)  # the scores in float64: at most 1 GiB


def test_targets_read_the_speedups_and_the_models_share_off_the_rows():
    shape = cp_plan.Shape(1, 32, 32, 65536, 128, True, "bf16")
    rows = [cp_plan.row("zigzag", shape, 2, ms=10.0, model_ms=11.0), cp_plan.row("ring", shape, 2, ms=16.0, model_ms=10.0),
            cp_plan.row("single_flash2", shape, 1, ms=18.0), cp_plan.row("torch_cp_alltoall_flash", shape, 2, ms=12.0),
            cp_plan.row("torch_cp_allgather_cudnn", shape, 2, ms=8.0), cp_plan.row("sdpa_flash", shape, 1, error="x")]
    t = cp_plan.targets(rows)
    (entry,) = t["by_shape"]
    assert entry["zigzag_over_single_flash2"] == 1.8 and "ring_over_single_flash2" not in entry
    assert entry["ours_over_torch_cp_flash"] == 1.2 and entry["ours_over_torch_cp_cudnn"] == 0.8
    assert t["model_within_20_percent"] == "1 of 2 project rows"

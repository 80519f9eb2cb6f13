"""python -m gpusim: the JSON a script reads, the table a person reads, and one-line errors."""
import json
import subprocess
import sys

import pytest

import gpusim

FIELDS = {"hbm_read_bytes", "hbm_write_bytes", "by_tensor", "by_kernel", "flops_matmul", "flops_other",
          "sram_bytes_per_block", "hbm_peak_bytes", "predicted_time_s", "config", "dram_read_bytes",
          "dram_write_bytes"}


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, cwd=cwd)


def test_count_json_equals_simulate():
    p = run("count", "--algo", "flash2", "--seq", "4096", "--head-dim", "64", "--heads", "16", "--block-q", "128",
            "--block-kv", "64", "--gpu", "H100-SXM", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert FIELDS <= set(out)
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, heads=16, block_q=128, block_kv=64, gpu="H100-SXM")
    assert out == json.loads(json.dumps(r.to_dict()))
    assert out["config"]["gpu"] == "H100-SXM" and out["hbm_read_bytes"] == 545_259_520
    assert set(out["by_kernel"][0]) >= {"name", "read_bytes", "write_bytes", "flops_matmul", "flops_other",
                                         "predicted_time_s"}


def test_count_table_is_readable():
    p = run("count", "--algo", "naive", "--seq", "131072", "--head-dim", "64", "--heads", "2", "--gpu", "H100-SXM")
    assert p.returncode == 0, p.stderr
    assert "softmax" in p.stdout and "OUT OF MEMORY" in p.stdout and "128.09 GiB" in p.stdout


def test_gpus_lists_the_presets():
    p = run("gpus")
    assert p.returncode == 0 and all(name in p.stdout for name in gpusim.PRESETS)
    assert json.loads(run("gpus", "--json").stdout)["H200"]["sm_count"] == 132


def test_sweep_writes_json_and_the_course_draws_it(tmp_path):
    p = run("sweep", "--seqs", "512,1024,2048", "--head-dim", "128", "--gpu", "A100-40GB", "--out",
            str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr
    assert "3/9" in p.stderr and "9/9" in p.stderr  # the progress bar
    rows = json.loads((tmp_path / "s.json").read_text())
    assert [(r["config"]["algo"], r["config"]["seq"]) for r in rows[:3]] == [("naive", 512), ("flash1", 512),
                                                                             ("flash2", 512)]
    pytest.importorskip("matplotlib", reason="the figure is the course's (pip install -e '.[course]')")
    p = subprocess.run([sys.executable, "-m", "gpusim_course.plots", "sweep", str(tmp_path / "s.json")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["count", "--algo", "flash2", "--seq", "0", "--head-dim", "64"], "seq=0 must be a positive integer"),
    (["count", "--algo", "flash2", "--seq", "64", "--head-dim", "64", "--gpu", "B200"], "unknown gpu='B200'"),
    (["count", "--algo", "flash2", "--seq", "64", "--head-dim", "128", "--block-q", "512", "--gpu", "T4"],
     "need 163,840 B of SRAM in the flash2 kernel; T4 has 65,536 B per thread block"),
    (["sweep", "--seqs", "512,lots"], "--seqs: 'lots' is not an integer"),
])
def test_errors_are_one_line_with_exit_code_2(args, message):
    p = run(*args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and message in p.stderr and "Traceback" not in p.stderr

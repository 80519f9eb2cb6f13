"""The golden file (tests/golden/counts.json, written by `python -m benchmarks.golden --write`): every
configuration re-simulated gives the same integers (bytes per kernel and tensor, DRAM bytes, FLOPs, grids,
occupancy, peak memory) and the same times to 1e-12 relative, and refuses with the same message."""
import json
import math

import numpy as np
import pytest

import gpusim
from benchmarks import golden

ROWS = json.loads(golden.PATH.read_text())


def same(expected, got, where):
    if isinstance(expected, float) or isinstance(got, float):
        assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=0.0), where
    elif isinstance(expected, dict):
        assert sorted(got) == sorted(expected), where
        for key in expected:
            same(expected[key], got[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(expected, got)):
            same(a, b, f"{where}[{i}]")
    else:
        assert got == expected, where


def test_the_file_holds_the_configurations_the_script_draws():
    assert [row["args"] for row in ROWS] == json.loads(json.dumps(golden.configs()))
    assert sum("error" not in row["result"] for row in ROWS) >= 300


@pytest.mark.parametrize("chunk", range(4))
def test_every_configuration_counts_as_the_golden_file_says(chunk):
    for i, row in enumerate(ROWS[chunk::4]):
        same(row["result"], json.loads(json.dumps(golden.record(row["args"]))), f"{row['args']}")


EXECUTED = [  # small arrays: execute mode's counts equal count mode's
    dict(algo="naive", seq=40, head_dim=16, heads=2, kv_heads=1, causal=True),
    dict(algo="flash1", seq=33, seq_kv=50, head_dim=16, heads=2, block_q=16, block_kv=16, dtype="fp32"),
    dict(algo="flash2", seq=48, head_dim=32, heads=4, kv_heads=2, causal=True, causal_align="bottom_right",
         seq_kv=64, block_q=16, block_kv=32),
    dict(algo="hopper", seq=64, head_dim=64, heads=2, gpu="H200", causal=True),
    dict(algo="flash2", seq=40, head_dim=16, heads=2, kv_heads=1, causal=True, backward=True, block_q=16,
         block_kv=16),
    dict(algo="naive", seq=24, head_dim=16, heads=2, backward=True, block_q=16, block_kv=16),
    dict(algo="flash1", seq=24, seq_kv=40, head_dim=16, heads=2, backward=True, block_q=16, block_kv=16),
]


@pytest.mark.parametrize("kw", EXECUTED, ids=lambda kw: kw["algo"] + ("_bwd" if kw.get("backward") else ""))
def test_execute_mode_counts_what_count_mode_counts(kw):
    rng = np.random.default_rng(0)
    heads, kv_heads = kw["heads"], kw.get("kv_heads", kw["heads"])
    q = rng.standard_normal((1, heads, kw["seq"], kw["head_dim"]))
    k, v = (rng.standard_normal((1, kv_heads, kw.get("seq_kv", kw["seq"]), kw["head_dim"])) for _ in range(2))
    extra = dict(do=rng.standard_normal(q.shape)) if kw.get("backward") else {}
    counted = gpusim.simulate(**kw)
    executed = gpusim.simulate(**(kw | dict(dtype=counted.config.dtype)), q=q, k=k, v=v, **extra)
    assert executed.counts == counted.counts
    assert executed.dram == counted.dram
    assert executed.predicted_time_s == counted.predicted_time_s


def test_execute_mode_decodes_with_the_counts_of_count_mode():
    rng = np.random.default_rng(1)
    lengths, page = [37, 100], 16
    q = rng.standard_normal((2, 4, 3, 32))
    k, v = (rng.standard_normal((16, page, 2, 32)) for _ in range(2))
    table = np.arange(16).reshape(2, 8)
    kw = dict(seq_kv=lengths, page_size=page, num_splits=2, dtype="fp32")
    executed = gpusim.simulate("split_kv", q=q, k=k, v=v, block_table=table, **kw)
    counted = gpusim.simulate("split_kv", batch=2, heads=4, kv_heads=2, seq=3, head_dim=32, **kw)
    assert executed.counts == counted.counts
    assert executed.predicted_time_s == counted.predicted_time_s

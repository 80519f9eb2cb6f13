"""Issue 26's contradictions, each fixed where its number is computed: the fp32 exp overflow from numpy.finfo,
notebook 7's sentences comparing gpusim with the Hopper kernel, notebook 4's fastest tile beside the tile the
kernels launch, and the "90% waiting" computed once for notebook 2 and the scorecard."""
import re
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim_course import measurements
from gpusim_course.practice import measured as practice_measured
from gpusim_course.scorecard import claims
from gpusim_course.scorecard import claims_model
from gpusim_course.softmax import bits
from gpusim_course.tiling import block_sweep

ROOT = Path(__file__).resolve().parents[1]
BENCH = measurements.read_results(ROOT / "results" / "h200" / "bench.json")["rows"]


def test_exp_overflows_where_finfo_says():
    assert bits.exp_overflow(np.float32) == pytest.approx(88.72, abs=0.01)
    assert bits.exp_overflow(np.float64) == pytest.approx(709.78, abs=0.01)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(bits.exp_overflow(np.float32) + 0.01)))
        assert np.isfinite(np.exp(np.float32(bits.exp_overflow(np.float32) - 0.01)))
    assert "float32 88.7" in bits.exp_overflow_line()


def test_notebook7_words_follow_the_ratios():
    rows = practice_measured.hopper_rows(BENCH, head_dim=128, causal=False)
    rows = [r for r in rows if r["N"] >= 4096]
    text = practice_measured.hopper_model_sentence(BENCH, head_dim=128, causal=False)
    times = np.mean([r["gpusim fp16 ms"] / r["hopper fp16 ms"] for r in rows])
    assert ("slower than the kernel" in text) == (times > 1.05) and ("faster than the kernel" in text) == (times < 0.95)
    assert "nearly 2" not in text
    u = practice_measured.utilization_sentence(BENCH, gpu="H100-SXM", seq=8192, head_dim=128)
    assert "sdpa_cudnn" in u and u.endswith(("above it.", "below it.", "about at it."))


def test_notebook4_names_the_tile_the_kernels_launch():
    config = dict(algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                  gpu="A100-40GB", block_q=64, block_kv=64)
    best = (32, 256, 1e-3)
    lines = block_sweep.tile_choice(best, config)
    kernel = gpusim.best_blocks("flash2", seq=4096, head_dim=64, heads=16, gpu="H200-measured")
    assert f"that is {kernel[0]} x {kernel[1]}" in lines[2]
    assert ("the same tile as" in lines[2]) == ((32, 256) == tuple(kernel))


def test_waiting_is_one_computation():
    batch, heads = gpusim.fa2_shape(4096, 64)
    r = gpusim.simulate("naive", seq=4096, head_dim=64, batch=batch, heads=heads, gpu="H200-measured")
    share = claims_model.waiting_share(r)
    assert 0 < share <= 1
    lo, hi = (int(x) / 100 for x in re.findall(r"(\d+)%", claims.waiting(ROOT / "results" / "h200").predicted))
    assert lo - 0.005 <= share <= hi + 0.005  # N = 4,096 is one of the scorecard's shapes
    nb = (ROOT / "notebooks" / "02_standard_attention.ipynb").read_text()
    assert "claims.waiting_share(naive)" in nb and "memory_bound_share" not in nb

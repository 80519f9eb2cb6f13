"""benchmarks/flash1_steps.py: the per-step view of flash1's bench rows. NumPy only."""
import math

import pytest

from benchmarks import agreement, flash1_steps


def test_steps_and_waves_of_a_non_causal_row():
    """Steps per program are T_r x T_c (every Q block meets every K/V block), and the predicted time per step
    times the waves and steps, plus the launch, is the model's time again."""
    row = next(r for r, _ in agreement.rows("bench.json") if agreement.name(r) == "flash1" and not r["causal"]
               and r["seq"] == 512 and r["dtype"] == "fp16")
    b, busy, steps, _, predicted = flash1_steps.per_step(row)
    assert steps == math.ceil(512 / row["block_q"]) * math.ceil(512 / row["block_kv"])
    programs = row["batch"] * row["heads"]
    waves = math.ceil(programs / (132 * b))
    result = agreement.simulated(row)
    total = predicted * waves * steps + result.config.gpu.launch_overhead_s
    assert total == pytest.approx(result.kernels[0].predicted_time_s, rel=1e-12)
    assert busy == min(132, -(-programs // b))

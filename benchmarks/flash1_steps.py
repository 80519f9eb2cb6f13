"""FlashAttention-1's measured time per step against gpusim's, row by row of results/h200/bench.json: where the
model's flash1 time misses (docs/perf.md, "Predicted against measured").

    python -m benchmarks.flash1_steps

A flash1 program is one (batch, head) walking every (K/V block, Q block) step (gpusim/passes/flash1.py), so
a launch is ceil(programs / slots) waves of equal programs: per step, a program takes (time - launch overhead)
/ (waves x steps per program), measured or predicted. Columns: the shape, blocks per SM b, the SMs the grid
keeps busy, steps per program, microseconds per step measured and predicted, and their ratio.
"""
import math
import sys

from benchmarks import agreement
from gpusim.occupancy import occupancy, resources


def per_step(row):
    """(b, busy SMs, steps per program, measured s per step, predicted s per step) of a flash1 bench row."""
    result = agreement.simulated(row)
    cfg, gpu = result.config, result.config.gpu
    programs = cfg.bh
    work = cfg.pass_.work(cfg, "flash1")  # every program does the same steps
    steps = work.steps // programs
    b = min(occupancy(gpu, resources(cfg, "flash1")).blocks_per_sm, -(-programs // gpu.sm_count))
    waves = math.ceil(programs / (gpu.sm_count * b))
    busy = min(gpu.sm_count, -(-programs // b))
    step = lambda seconds: (seconds - gpu.launch_overhead_s) / (waves * steps)  # noqa: E731
    return b, busy, steps, step(row["ms"] * 1e-3), step(result.kernels[0].predicted_time_s)


def main():
    print("dtype d   causal      N    b  SMs   steps  us/step measured  predicted  ratio")
    for row, _ in sorted(agreement.rows("bench.json"), key=lambda p: (p[0]["head_dim"], p[0]["causal"], p[0]["dtype"],
                                                                       p[0]["seq"])):
        if agreement.name(row) != "flash1":
            continue
        b, busy, steps, measured, predicted = per_step(row)
        print(f"{row['dtype']:5s} {row['head_dim']:<3d} {row['causal']!s:6s} {row['seq']:6d} {b:4d} {busy:4d} "
              f"{steps:7d} {measured * 1e6:16.2f} {predicted * 1e6:10.2f} {predicted / measured:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

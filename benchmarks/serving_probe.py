"""Where an eager serving step's time goes: DecodePlan made, then run per layer (benchmarks/serving.py's
plan_eager), split into its parts with the GPU synchronised around each, and torch.profiler's table of one step.

    python -m benchmarks.serving_probe --out DIR       # on the GPU: DIR/serving_probe.json, DIR/serving_probe.txt
"""
import argparse
import json
import os
import time

import torch

from benchmarks.run_env import environment
from benchmarks.serving import LAYERS, SHAPE, Cache

POINTS = ((1, 1024), (1, 4096), (1, 16384), (8, 1024))
REPS = 64


def wall_us(fn, reps=REPS):
    """Wall µs per call of fn over reps calls, synchronised once at the end, after 8 untimed calls."""
    for _ in range(8):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e6 / reps


def probe(batch, length):
    cache = Cache(batch, length + 64, SHAPE, torch.device("cuda"))
    plan = cache.plan(length)

    def step():
        p = cache.plan(length)
        for _ in range(LAYERS):
            p.run(cache.q, cache.k, cache.v, cache.table)
    row = {"batch": batch, "seq_kv": length, "num_splits": plan.num_splits,
           "plan_us": wall_us(lambda: cache.plan(length)),
           "run_us": wall_us(lambda: plan.run(cache.q, cache.k, cache.v, cache.table)),
           "step_us": wall_us(step, 16)}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=25)
    return row, table


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    rows, text = [], []
    for batch, length in POINTS:
        row, table = probe(batch, length)
        print(row, flush=True)
        rows.append(row)
        text.append(f"== batch {batch}, seq_kv {length}: {row}\n{table}")
    with open(os.path.join(args.out, "serving_probe.json"), "w") as f:
        json.dump({"environment": environment("python -m benchmarks.serving_probe --out $OUT"), "rows": rows}, f,
                  indent=1)
    with open(os.path.join(args.out, "serving_probe.txt"), "w") as f:
        f.write("\n".join(text))


if __name__ == "__main__":
    main()

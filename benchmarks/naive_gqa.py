"""Standard attention's three kernels with grouped-query K/V against their multi-head twins (does sharing a K/V
head between query heads change a kernel's time, and which kernel's?), and at sequence lengths a multiple of 16
against their neighbours that are not (Triton specialises an integer argument divisible by 16; S's and P's rows
are N_kv long). Each kernel's GPU time (torch.profiler, the mean of REPS calls) beside gpusim's prediction.

    python -m benchmarks.naive_gqa --out DIR           # on the GPU: DIR/naive_gqa.json
    python -m benchmarks.naive_gqa --rows --out DIR    # the lengths only (ROWS): DIR/naive_rows.json

Since the kernels pad S's and P's rows to a multiple of 16 elements (kernels/naive.py), --rows measures whether
the lengths that are not still cost more than their neighbours' rows do.
"""
import argparse
import json
import os
from collections import defaultdict

import torch

import gpusim
from benchmarks.run_env import environment
from gpusim_kernels import naive_attention

SHAPES = [dict(batch=2, heads=32, seq=2048, head_dim=128), dict(batch=2, heads=32, seq=2000, head_dim=128),
          dict(batch=1, heads=16, seq=4096, head_dim=64), dict(batch=4, heads=32, seq=1000, head_dim=64)]
GROUPS = (1, 4, 8)
ROWS = [dict(batch=4, heads=32, seq=n, head_dim=64) for n in (1000, 1008, 1016, 1024)] + \
    [dict(batch=2, heads=32, seq=n, head_dim=128) for n in (2040, 2048)]
REPS = 10


def kernel_us(shape, kv_heads):
    """{kernel name: mean µs per call} of naive_attention on fp16 inputs of shape, K/V with kv_heads heads."""
    gen = torch.Generator("cuda").manual_seed(0)
    b, h, n, d = shape["batch"], shape["heads"], shape["seq"], shape["head_dim"]
    q = torch.randn(b, h, n, d, device="cuda", generator=gen, dtype=torch.float16)
    k, v = (torch.randn(b, kv_heads, n, d, device="cuda", generator=gen, dtype=torch.float16) for _ in range(2))
    naive_attention(q, k, v)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            naive_attention(q, k, v)
        torch.cuda.synchronize()
    total = defaultdict(float)
    for event in prof.key_averages():
        if event.key.endswith("_kernel"):
            total[event.key.removesuffix("_kernel")] += event.device_time_total / REPS
    return dict(total)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", action="store_true", help="only the lengths (ROWS), into naive_rows.json")
    args = ap.parse_args(argv)
    rows = []
    todo = [(s, 1) for s in ROWS] if args.rows else [(s, g) for s in SHAPES for g in GROUPS] + [(s, 1) for s in ROWS]
    for shape, group in todo:
        kv_heads = shape["heads"] // group
        measured = kernel_us(shape, kv_heads)
        predicted = {kr.name: kr.predicted_time_s * 1e6 for kr in gpusim.simulate(
            "naive", **shape, kv_heads=kv_heads, dtype="fp16", gpu="H200-measured").kernels}
        rows.append(dict(shape, kv_heads=kv_heads, us=measured, predicted_us=predicted))
        print(rows[-1], flush=True)
    name, command = ("naive_rows.json", "--rows --out $OUT") if args.rows else ("naive_gqa.json", "--out $OUT")
    with open(os.path.join(args.out, name), "w") as f:
        json.dump({"environment": environment(f"python -m benchmarks.naive_gqa {command}"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

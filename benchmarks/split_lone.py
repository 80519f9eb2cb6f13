"""A split-KV program's step when it is alone on its SM: the split kernel at one program an SM (and two), timed at
several cache lengths, so that the slope of its time over the steps a program takes is one step, at the tiles of 1,
8 and 16 query rows, each beside gpusim's step for the same launch.

    python -m benchmarks.split_lone --out $OUT --max-minutes 3
    python -m benchmarks.split_lone --out $OUT --others         # split_lone_others.json: a contiguous cache too,
                                                                  # 4 splits (32 programs, all alone) besides,
                                                                  # and the unsplit decode kernel (one split)
    python -m benchmarks.split_lone --out $OUT --d64            # split_lone_d64.json: the held-out sets' d = 64
                                                                  # decode shape, 64 query heads over 8 K/V heads
    TRITON_INTERPRET=1 python -m benchmarks.split_lone --out /tmp --smoke      # CPU: the code paths

Why: decode_rows.json (runs 165 and 167) priced the split kernel's few splits of a 64-row tile 1.12-1.44x slow on
the H200, where each SM holds one program. gpusim's step for a lone 4-warp split program is its compute with its
instructions issued at ISSUE_HIDING's rate (0.45 of the full rate, one warp per scheduler), then its whole load's wait
(cost.step_chain): nothing measured a split program alone. Llama-3-8B's attention (32 query heads over 8 K/V heads,
d = 128, fp16, pages of 16; benchmarks/decode_rows.py's inputs, rows and timing), batch 1: 16 splits make 128
programs (one an SM of the H200's 132), 32 make 256 (two). A split of L / splits keys takes L / splits / block_kv
steps; the lengths give each count 2 to 64 of them.

Writes split_lone.json: {environment, rows: [{batch, seq, seq_kv, heads, kv_heads, head_dim, dtype, page_size (None:
contiguous), num_splits, block_kv, steps, ms, timing, rel_err, preset, predicted_ms, resident, chain_us}]}: resident,
the programs an SM holds in gpusim, and chain_us, its step on one program's critical path, as the model stood at the
run (tests price them again).
"""
import argparse
import itertools
import math
import sys

import gpusim
from benchmarks import bench_decode as bd
from benchmarks import decode_rows
from gpusim import cost

LENGTHS = (4096, 8192, 16384, 32768, 65536)
ROWS = (1, 8, 16)  # Llama-3-8B's group of 4: tiles of 16, 32 and 64 padded rows
SPLITS = (16, 32)  # 128 and 256 programs at batch 1: one and two an SM
SMOKE = dict(cases=((1, 256), (1, 512)), rows=(1, 3), splits=(2,))
OTHERS = argparse.ArgumentParser(add_help=False)  # --others: split_lone_others.json, what run 170 did not measure
OTHERS.add_argument("--others", action="store_true")
OTHERS.add_argument("--d64", action="store_true")
D64 = dict(heads=64, kv_heads=8, head_dim=64)  # 16 KiB of K/V a step (64 keys), where run 170 measured 32 KiB (d = 128)


def model_step(launch):
    """(programs an SM holds, a step on one program's critical path in s, the launch's programs): gpusim's split kernel
    (the unsplit decode kernel at one split) for the launch, on the preset decode_rows prices it on."""
    result = gpusim.simulate("split_kv", batch=launch.batch, heads=launch.heads, kv_heads=launch.kv_heads,
                             head_dim=launch.head_dim, seq=launch.seq, seq_kv=list(launch.seq_kv), dtype=launch.dtype,
                             page_size=launch.page_size, num_splits=launch.num_splits, block_kv=launch.block_kv,
                             gpu=decode_rows.preset(launch))
    grid, step = cost.schedule(result)  # the split (or decode) kernel, the launch's first
    return grid.resident, step.chain_s, grid.programs


def case_rows(batch, seq_kv, sets, row_counts, split_counts, shape, layouts=(True,)):
    """One cache length's rows: each query-row count timed, checked and priced at each split count, over each layout
    (True: paged, False: contiguous)."""
    out = []
    for rows, paged in itertools.product(row_counts, layouts):
        qs = decode_rows.queries(sets, rows, shape, seed=rows)
        for splits in split_counts:
            launch, got = decode_rows.timed_row(sets, qs, splits, paged)
            resident, chain_s, _ = model_step(launch)
            out.append({"batch": batch, "seq": rows, "seq_kv": seq_kv, **shape, "dtype": "fp16",
                        "page_size": launch.page_size, "num_splits": launch.num_splits, "block_kv": launch.block_kv,
                        "steps": math.ceil(seq_kv / launch.num_splits / launch.block_kv), **got,
                        "preset": decode_rows.preset(launch), "predicted_ms": decode_rows.predicted_ms(launch),
                        "resident": resident, "chain_us": chain_s * 1e6})
            print(out[-1], flush=True)
    return out


def main(argv=None):
    others, rest = OTHERS.parse_known_args(argv)
    full = dict(cases=tuple((1, length) for length in LENGTHS), rows=ROWS, splits=SPLITS)
    args, grid, shape = bd.sweep_setup(__doc__, rest, SMOKE, full)
    shape = {**shape, **(dict(head_dim=64) if args.smoke else D64)} if others.d64 else shape
    splits, layouts = ((1, 4, *grid["splits"]), (True, False)) if others.others else (grid["splits"], (True,))
    name = "split_lone_others" if others.others else "split_lone_d64" if others.d64 else "split_lone"
    bd.sweep_cases(args, name, argv, grid["cases"], shape,
                   lambda batch, seq_kv, sets: case_rows(batch, seq_kv, sets, grid["rows"], splits, shape, layouts),
                   module="split_lone")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A lone program's step, and a launch inside a CUDA graph: what a one-wave launch is made of.

    python -m benchmarks.lone_program --out $OUT          # GPU: $OUT/lone_program.json, about 2 min
    python -m benchmarks.lone_program --out $OUT --shared # GPU: $OUT/shared_steps.json, under a minute
    TRITON_INTERPRET=1 python -m benchmarks.lone_program --out /tmp/p --smoke [--shared]

flash2 with one program per SM (heads = 132, one Q block each, batch 1), each looping over J K/V blocks,
J = 1, 2, 4, 8, 16, at four tiles per head dim and Triton's software pipeline 2, 3 and 4 stages deep (the
launch rule's warps): the median GPU time per launch, replayed from a CUDA graph, as the fitted sets and the
held-out sets are timed. Each launch twice (the row's "l2"): "warm", one input set replayed, so that every load
after the first replay hits in L2; and "cold", as the fitted and held-out sets rotate their inputs
(benchmarks.bench.cycling), among enough copies to exceed twice the L2, so that each launch reads from DRAM as
gpusim prices it (gpusim/l2.py, rule 1). Per tile, depth and L2 the time is a line in J whose slope is one step
of a program that shares its SM with nobody (gpusim.cost.step_chain's lone wait), and whose intercept is the
launch and the program's fixed work. Then an empty kernel, one program and one per SM: timed with CUDA events around
each call (benchmarks/ceilings.py's launch_overhead_s) and replayed from a CUDA graph, which is what a
launch adds to a graph-replayed time.

--shared: the same steps with b programs per SM (heads = 132 b), b = 1 up to the blocks gpusim has an SM hold of
flash2 at the tile (at most 4), cold, J = 4 and 16, at five tiles per head dim (six at d = 128), 2 and 3 stages, into
shared_steps.json: the slope is one step
of each of b programs sharing an SM, their loads with it (docs/perf.md, "Programs sharing an SM").
"""
from itertools import product

import torch

import gpusim
from gpusim import cost
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.report_steps import lone_launch
from gpusim_kernels import flash2_attention

STEPS = (1, 2, 4, 8, 16)
HEADS = 132  # one program per SM of the H200
TILES = {64: ((64, 32), (64, 64), (128, 64), (128, 128)), 128: ((64, 32), (64, 64), (128, 64), (128, 128))}
STAGES = (2, 3, 4)
SMOKE = dict(STEPS=(1, 2), HEADS=2, TILES={16: ((16, 16),)}, STAGES=(2,), L2_BYTES=0, MOST_SHARED=2)
SHARED = dict(STEPS=(4, 16), TILES={64: ((64, 32), (64, 64), (64, 128), (128, 64), (128, 128)),
                                    128: ((64, 32), (64, 64), (64, 128), (128, 64), (128, 128), (256, 64))},
              STAGES=(2, 3))
MOST_SHARED = 4  # programs per SM --shared goes up to


def shared_programs(head_dim, tiles):
    """1 .. the flash2 blocks gpusim has an SM of the H200 hold at this tile (at most MOST_SHARED); none where gpusim
    refuses the launch (256 x 64 at d = 128 and 2 stages: more registers than a thread has)."""
    try:
        grid, _ = cost.schedule(lone_launch(head_dim, tiles, 1, MOST_SHARED))
    except ValueError:
        return range(0)
    return range(1, min(MOST_SHARED, grid.occ.blocks_per_sm) + 1)


def measure_steps(results, shared=False):
    for head_dim, stages in product(TILES, STAGES):
        for (block_q, block_kv), steps in product(TILES[head_dim], STEPS):
            tiles = gpusim.Tiles(block_q, block_kv, num_stages=stages)
            for b in shared_programs(head_dim, tiles) if shared else (1,):
                heads = HEADS * b
                sets = probe.input_sets(((1, heads, block_q, head_dim), *((1, heads, steps * block_kv, head_dim),) * 2),
                                        L2_BYTES)
                for l2, used in (("cold", sets),) if shared else (("warm", sets[:1]), ("cold", sets)):
                    call = cycling([lambda s=s: flash2_attention(*s, tiles=tiles) for s in used])
                    row = dict(kind="step", head_dim=head_dim, block_q=block_q, block_kv=block_kv, num_stages=stages,
                               steps=steps, heads=heads, seq=block_q, seq_kv=steps * block_kv, l2=l2, copies=len(used))
                    row |= dict(programs_per_sm=b) if shared else {}
                    results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
                    print(f"d={head_dim} {block_q}x{block_kv} stages={stages} J={steps:2d} b={b} {l2}: "
                          f"{row.get('ms', row.get('error'))}", flush=True)
                del sets


def measure_launch(results):
    y = torch.empty(1, device=probe.DEVICE)
    for programs in (1, HEADS):
        call = lambda: probe.empty_kernel[(programs,)](y)  # noqa: E731
        for timing in ("events", "cuda_graph"):
            row = dict(kind="empty", programs=programs, timing=timing)
            timer = probe.median_ms if timing == "events" else probe.graph_ms
            results.add(probe.attempt(row, lambda: {"ms": timer(call)}))
            print(f"empty kernel, {programs} programs, {timing}: {row.get('ms', row.get('error'))}", flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "lone_program.json", pool=False)
    ap.add_argument("--shared", action="store_true", help="b programs per SM: shared_steps.json")
    args = ap.parse_args(argv)
    if args.shared:
        globals().update(SHARED)
    if args.smoke:
        globals().update(SMOKE)
    results = probe.open_results("shared_steps.json" if args.shared else "lone_program.json", args, argv,
                                 module="lone_program")
    if not args.shared:
        measure_launch(results)
    measure_steps(results, args.shared)


if __name__ == "__main__":
    main()

"""How much the work of programs resident on one SM overlaps: flash2's inner loop without its loads (matmul_tiles'
mma_kernel, its `mma` and `softmax` variants) at 1, 2, 3, 4 and 6 programs per SM, each a single full wave.

    python -m benchmarks.overlap --out $OUT                                  # GPU: $OUT/overlap.json
    python -m benchmarks.overlap --out $OUT --d128                           # GPU: $OUT/overlap_d128.json
    python -m benchmarks.overlap --out $OUT --d64                            # GPU: $OUT/overlap_d64.json
    TRITON_INTERPRET=1 python -m benchmarks.overlap --out /tmp/probe --smoke  # CPU: every code path, tiny

The grid is b x num_SMs programs of R iterations each, R the same at every b, so each SM holds b programs at once
where the kernel's registers and shared memory allow b (`resident`: gpusim.occupancy of the compiled kernel's
resources; a row with b above it runs in more than one wave). If resident programs took turns on an SM's units,
each at its one-program speed, the time would grow b-fold and TFLOP/s stay flat; if their units overlapped fully,
TFLOP/s would grow until a unit saturates. gpusim's cost.busy takes turns, b x (matmuls + issue), but prices the
issue at the hiding of b programs' warps (cost.ISSUE_HIDING), so its TFLOP/s for the softmax loop rises with b
too: this measures how far the SM is from both (docs/perf.md, the backward's tiles). Timing:
triton.testing.do_bench's median (probe.median_ms).

Expected wall time on the H200, about 30 s: imports 5 s; 8 kernels compiled, ~10 s; 40 timings x ~0.3 s.

--d128: the softmax loop alone at d = 128 on flash2's forward tiles and their launch rule's warps (8 for 128 rows), at
1 and 2 programs per SM: what a lone step's compute takes, against gpusim's (docs/perf.md, "That compute alone,
measured").

--d64: the softmax loop alone at d = 64 on the forward tiles overlap.json lacks (its 128-row tiles ran on 4 warps,
flash2's rule gives them 8), at 1 to 4 programs per SM: the d = 64 forward's compute, against gpusim's.
"""
import torch

from benchmarks import matmul_tiles, probe

TILES = [(64, 32, 4), (64, 64, 4), (128, 32, 4), (128, 64, 4)]  # (Br, Bc, warps): the d = 64 backward's candidates
HEAD_DIM, VARIANTS = 64, ("mma", "softmax")
PROGRAMS_PER_SM = (1, 2, 3, 4, 6)
REPEATS = 20_000  # iterations per program: a wave of one program per SM at 64 x 64 takes about 4 ms
SMOKE = dict(TILES=[(32, 32, 4)], PROGRAMS_PER_SM=(1, 2), REPEATS=2)
D128 = dict(TILES=[(64, 32, 4), (64, 64, 4), (64, 128, 4), (128, 64, 8), (128, 128, 8)], HEAD_DIM=128,
            VARIANTS=("softmax",), PROGRAMS_PER_SM=(1, 2))  # flash2's forward tiles on its rule's warps
D64 = dict(TILES=[(32, 32, 4), (32, 64, 4), (128, 32, 8), (128, 64, 8), (128, 128, 8)], HEAD_DIM=64,
           VARIANTS=("softmax",), PROGRAMS_PER_SM=(1, 2, 3, 4))  # the same at d = 64, but overlap.json's 64-row tiles


def configs():
    """matmul_tiles' (variant, dtype, Br, Bc, d, num_warps) of every tile and variant measured."""
    return [(variant, "fp16", br, bc, HEAD_DIM, warps) for variant in VARIANTS for br, bc, warps in TILES]


def resident(compiled, num_warps):
    """Programs of the compiled kernel one H200 SM holds at once (gpusim.occupancy); None in the interpreter."""
    return probe.h200_blocks(probe.kernel_resources(compiled), num_warps)


def measure(config, per_sm):
    variant, dtype, br, bc, d, num_warps = config
    programs = per_sm * probe.sm_count()
    inputs, out = matmul_tiles.tiles(dtype, br, bc, d), torch.empty(programs, device=probe.DEVICE)
    compiled = matmul_tiles.launch(config, programs, REPEATS, inputs, out)
    ms = probe.median_ms(lambda: matmul_tiles.launch(config, programs, REPEATS, inputs, out))
    flops = programs * matmul_tiles.flops_per_program(br, bc, d, REPEATS)
    return {"programs": programs, "repeats": REPEATS, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12,
            "resident": resident(compiled, num_warps), **probe.kernel_resources(compiled)}


def run(results, workers):
    todo = configs()
    probe.compile_all(matmul_tiles.warm, todo, workers, 60)
    for config in todo:
        variant, _, br, bc, d, num_warps = config
        one = None  # TFLOP/s at one program per SM
        for per_sm in PROGRAMS_PER_SM:
            row = dict(variant=variant, br=br, bc=bc, d=d, num_warps=num_warps, programs_per_sm=per_sm)
            results.add(probe.attempt(row, lambda: measure(config, per_sm)))
            one = row.get("tflops") if per_sm == 1 else one
            gain = f"{row['tflops'] / one:5.2f}x one's" if row.get("tflops") and one else row.get("error", "")
            print(f"{variant:8s} {br}x{bc} d={d} b={per_sm} (resident {row.get('resident')}): "
                  f"{row.get('tflops') or 0:6.1f} TFLOP/s {gain}", flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "overlap.json")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--d128", action="store_true", help="the softmax loop at d = 128 on flash2's tiles: overlap_d128.json")
    group.add_argument("--d64", action="store_true", help="the softmax loop at d = 64 on flash2's tiles: overlap_d64.json")
    args = ap.parse_args(argv)
    forward = "d128" if args.d128 else "d64" if args.d64 else None
    globals().update({"d128": D128, "d64": D64}.get(forward, {}), **(SMOKE if args.smoke else {}))
    run(probe.open_results(f"overlap_{forward}.json" if forward else "overlap.json", args, argv, module="overlap"),
        args.workers)


if __name__ == "__main__":
    main()

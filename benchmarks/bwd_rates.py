"""The issue rate of flash2's backward warps at every tile bwd_sharing.py measures: Nsight Compute's issue, tensor pipe
and warps per scheduler of one dK/dV and one dQ launch at d = 64 (64 x 32, 64 x 64 on 4 warps; 128 x 32, 128 x 64 on
8) and d = 128 (64 x 32, 128 x 64), fp16, N = 8,192, batch 2 x 16 heads, non-causal (the tiles_bwd.json groups of
that shape). bwd_stalls.py has the d = 64 group's 4-warp launches alone, whose dK/dV rate report_steps.dkdv_warp_rate
reads; this gives every kernel's, so that a rate can be checked on launches it was not measured on.

    ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section Occupancy -k regex:"dkdv_kernel|dq_kernel" --csv --page raw \\
        --print-units base --log-file $OUT/bwd_rates_raw.csv python -m benchmarks.bwd_rates workload
    python -m benchmarks.bwd_rates parse --csv $OUT/bwd_rates_raw.csv --out $OUT/bwd_rates.json

The workload runs, per head dim and tile, the backward's three kernels once each after one forward, as
benchmarks.bwd_kernels times them; Nsight profiles the dK/dV and dQ launches (in that order). parse keeps
bwd_stalls.METRICS of each, per launch, with the run's environment.
"""
from benchmarks.bwd_sharing import TILES
from benchmarks.bwd_stalls import parse_launches, run_script

GROUP = dict(dtype="fp16", causal=False, seq=8192, batch=2, heads=16)
KERNELS = ("dkdv", "dq")


def workload():
    import torch
    from benchmarks import bwd_kernels
    for head_dim, tiles in TILES.items():
        q, k, v, do = bwd_kernels.inputs(dict(GROUP, head_dim=head_dim))
        for tile in tiles:
            calls, _, _ = bwd_kernels.launches(q, k, v, do, GROUP["causal"], tile)
            for name in bwd_kernels.KERNELS:  # the preprocess first: it writes the D that dK/dV and dQ read
                calls[name]()
            torch.cuda.synchronize()


def labels():
    """(head_dim, tile, kernel) of each profiled launch, in launch order."""
    return [(head_dim, tile, kernel) for head_dim, tiles in TILES.items() for tile in tiles for kernel in KERNELS]


def parse(path):
    """The METRICS of each launch, labelled with its head dim, tile and kernel."""
    return parse_launches(path, [(kernel, dict(GROUP, head_dim=head_dim, block_q=block_q, block_kv=block_kv))
                                 for head_dim, (block_q, block_kv), kernel in labels()])


def main(argv=None):
    run_script(__doc__, "benchmarks.bwd_rates", workload, parse, argv)


if __name__ == "__main__":
    main()

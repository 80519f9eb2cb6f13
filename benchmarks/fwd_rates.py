"""The forward's issue rate and pipes beside the backward's: Nsight Compute's issue, tensor pipe and warps per
scheduler of one flash2 forward launch at each tile of TILES, d = 64 and 128, fp16, N = 8,192, batch 2 x 16 heads,
non-causal (bwd_rates.py's shape). bwd_stalls.py has the forward at d = 64 and three tiles; this adds d = 128 and the
128-row tiles, so that gpusim's parts (report_steps.nsight_parts) can be set beside Nsight's for the forward as for
the backward.

    ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section Occupancy -k regex:"flash2_kernel" --csv --page raw \\
        --print-units base --log-file $OUT/fwd_rates_raw.csv python -m benchmarks.fwd_rates workload
    python -m benchmarks.fwd_rates parse --csv $OUT/fwd_rates_raw.csv --out $OUT/fwd_rates.json

The workload launches flash2_attention once per head dim and tile, in that order, at the kernel's own launch rule
(num_warps, num_stages); parse keeps bwd_stalls.METRICS of each launch, with the run's environment.
"""
from benchmarks.bwd_rates import GROUP
from benchmarks.bwd_stalls import parse_launches, run_script

TILES = {64: ((64, 32), (64, 64), (128, 32), (128, 64), (128, 128)),
         128: ((64, 32), (64, 64), (128, 32), (128, 64), (128, 128))}


def workload():
    import torch
    from benchmarks import bwd_kernels
    from gpusim_kernels import flash2_attention
    for head_dim, tiles in TILES.items():
        q, k, v, _ = bwd_kernels.inputs(dict(GROUP, head_dim=head_dim))
        for block_q, block_kv in tiles:
            flash2_attention(q, k, v, causal=GROUP["causal"], block_q=block_q, block_kv=block_kv)
        torch.cuda.synchronize()


def labels():
    """(head_dim, tile) of each profiled launch, in launch order."""
    return [(head_dim, tile) for head_dim, tiles in TILES.items() for tile in tiles]


def parse(path):
    """The METRICS of each launch, labelled with its head dim and tile."""
    return parse_launches(path, [("flash2", dict(GROUP, head_dim=head_dim, block_q=block_q, block_kv=block_kv))
                                 for head_dim, (block_q, block_kv) in labels()])


def main(argv=None):
    run_script(__doc__, "benchmarks.fwd_rates", workload, parse, argv)


if __name__ == "__main__":
    main()

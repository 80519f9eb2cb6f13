"""Where the Hopper kernel's short d = 64 programs spend the 1.0-1.7 us that gpusim does not price: Nsight Compute's
cycles, issue, tensor pipe and warp stalls of run 137's launches (benchmarks/hopper_waves.py), d = 64 and 128.

    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \\
        --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \\
        -k regex:hopper_kernel --csv --page raw --print-units base --log-file $OUT/hopper_stalls_raw.csv \\
        python -m benchmarks.hopper_stalls workload
    python -m benchmarks.hopper_stalls parse --csv $OUT/hopper_stalls_raw.csv --out $OUT/hopper_stalls.json

The workload: the kernel's own launch (kernels/hopper.py's table) at d = 64 and 128, causal and not, J = 1 and 4
(causal: N = 1 or 4 Q blocks), 2 and 16 waves of 132 x b programs (hopper_waves.wave_launch), each called once to
compile and once inside the profiler's range; Nsight flushes the caches before each pass (cold, as run 137 timed
them). parse keeps METRICS of each launch, and every warp stall reason per issued instruction (stall_*).

Prediction (committed before the run): the d = 64 launches issue for under a third of their active cycles and keep
the tensor pipe busy under a quarter of them at J = 1; their warps wait mostly on the TMA copies' barriers and loads
(long scoreboard, barrier, or the mbarrier wait loop's branch resolving and sleeping), not on the warpgroup matmuls
(gmma); per program, the d = 64 launches' active cycles between 2 and 16 waves exceed d = 128's share of them, by
the 1.0-1.7 us a program that run 137 timed beyond gpusim.
"""
import re

from benchmarks.bwd_stalls import number, run_script
from benchmarks import ncu

HEAD_DIMS = (64, 128)
STEPS = (1, 4)
WAVES = (2, 16)
SMS = 132  # the H200's
METRICS = {  # name in the JSON: Nsight's metric
    "us": "gpu__time_duration.sum",  # ns in Nsight's base units: divided by 1e3
    "registers": "launch__registers_per_thread",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
    "cycles_active": "sm__cycles_active.avg",  # an SM's cycles with at least one warp resident
    "inst_per_cycle": "sm__inst_executed.avg.per_cycle_active",  # an SM's instructions a cycle
    "warps_per_scheduler": "smsp__warps_active.avg.per_cycle_active",
    "issue_per_cycle": "smsp__issue_active.avg.per_cycle_active",  # of a scheduler's one instruction a cycle
    "tensor_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "gmma_pct": "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
}
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")


def launches():
    """(head_dim, causal, steps, waves) of each profiled launch, in launch order."""
    return [(d, causal, steps, waves) for d in HEAD_DIMS for causal in (False, True) for steps in STEPS
            for waves in WAVES]


def workload():
    import torch
    from benchmarks import probe
    from benchmarks.hopper_waves import own_tiles, wave_launch
    from gpusim_kernels import hopper_attention
    for head_dim, causal, steps, waves in launches():
        tiles = own_tiles(head_dim, causal)
        heads, seq, seq_kv, _ = wave_launch(head_dim, causal, steps, waves, tiles, SMS)
        q, k, v = (torch.randn(1, heads, n, head_dim, device="cuda", dtype=torch.float16) for n in (seq, seq_kv, seq_kv))
        hopper_attention(q, k, v, causal=causal, tiles=tiles)
        probe.profiled(lambda: hopper_attention(q, k, v, causal=causal, tiles=tiles))


def parse(path):
    """The METRICS and stall reasons of each launch, labelled with its head_dim, mask, J, waves and the programs an SM
    holds at its launch (as gpusim prices it)."""
    from benchmarks.hopper_waves import own_tiles, wave_launch
    with open(path) as f:
        profiled, _ = ncu.raw_table(f.read())
    order = launches()
    if [r["Kernel Name"] for r in profiled] != ["hopper_kernel"] * len(order):
        raise SystemExit(f"expected {len(order)} hopper_kernel launches; got {[r['Kernel Name'] for r in profiled]}")
    rows = []
    for (head_dim, causal, steps, waves), raw in zip(order, profiled):
        tiles = own_tiles(head_dim, causal)
        heads, seq, seq_kv, k = wave_launch(head_dim, causal, steps, waves, tiles, SMS)
        row = dict(head_dim=head_dim, causal=causal, steps=steps, waves=waves, heads=heads, seq=seq, seq_kv=seq_kv,
                   block_q=tiles.block_q, block_kv=tiles.block_kv, per_sm=k.blocks_per_sm)
        row.update({name: number(raw[metric]) for name, metric in METRICS.items()})
        row.update({f"stall_{m.group(1)}": number(raw[column]) for column in raw if (m := STALL.fullmatch(column))})
        row["us"] /= 1e3
        rows.append(row)
    return rows


def main(argv=None):
    run_script(__doc__, "benchmarks.hopper_stalls", workload, parse, argv)


if __name__ == "__main__":
    main()

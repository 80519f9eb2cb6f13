"""Why flash2's d = 64 backward runs faster at 64 x 32 than at 64 x 64: Nsight Compute's pipes, issue and warp
stalls of one dK/dV and one dQ launch at each tile, and of the forward at three tiles beside them (fp16, N = 8,192,
batch 2 x 16 heads, non-causal: a tiles_bwd.json group).

    ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section Occupancy -k regex:"flash2_kernel|dkdv_kernel|dq_kernel" --csv --page raw \\
        --print-units base --log-file $OUT/bwd_stalls_raw.csv python -m benchmarks.bwd_stalls workload
    python -m benchmarks.bwd_stalls parse --csv $OUT/bwd_stalls_raw.csv --out $OUT/bwd_stalls.json

The workload launches the forward once at each tile of FORWARD, then, per tile of TILES, the forward at its
default tile and the backward's three kernels once each, as benchmarks.bwd_kernels times them; Nsight profiles the
forward, dK/dV and dQ launches (in that order). parse keeps METRICS of each, per launch, with the run's
environment.
"""
import argparse
import json
import subprocess
import sys

from benchmarks import ncu

TILES = ((64, 64), (64, 32))
FORWARD = ((64, 32), (64, 64), (128, 64))  # tiles.json's d = 64 tiles: 4, 4 and 8 warps
GROUP = dict(dtype="fp16", head_dim=64, causal=False, seq=8192, batch=2, heads=16)
METRICS = {  # name in the JSON: Nsight's metric
    "us": "gpu__time_duration.sum",  # ns in Nsight's base units: divided by 1e3
    "registers": "launch__registers_per_thread",
    "warps_per_scheduler": "smsp__warps_active.avg.per_cycle_active",
    "issue_per_cycle": "smsp__issue_active.avg.per_cycle_active",  # of a scheduler's one instruction a cycle
    "tensor_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "lsu_pct": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    **{f"stall_{reason}": f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
       for reason in ("wait", "short_scoreboard", "barrier", "long_scoreboard", "not_selected", "dispatch_stall",
                      "math_pipe_throttle", "mio_throttle", "gmma")},
}


def workload():
    import torch
    from benchmarks import bwd_kernels
    from gpusim_kernels import flash2_attention
    q, k, v, do = bwd_kernels.inputs(GROUP)
    for block_q, block_kv in FORWARD:
        flash2_attention(q, k, v, causal=GROUP["causal"], block_q=block_q, block_kv=block_kv)
    for tiles in TILES:
        calls, _, _ = bwd_kernels.launches(q, k, v, do, GROUP["causal"], tiles)
        for name in bwd_kernels.KERNELS:
            calls[name]()
        torch.cuda.synchronize()


def number(text):
    return float(text.replace(",", ""))


def labels():
    """(tiles, kernel) of each profiled launch, in launch order: the forward ("flash2") at FORWARD's tiles, then per
    backward tile the forward at its default tile ((None, None): the kernels' own choice), dK/dV and dQ."""
    return ([(tiles, "flash2") for tiles in FORWARD] +
            [step for tiles in TILES for step in (((None, None), "flash2"), (tiles, "dkdv"), (tiles, "dq"))])


def parse(path):
    """The METRICS of each launch, labelled with its kernel and tiles."""
    return parse_launches(path, [(kernel, dict(GROUP, block_q=block_q, block_kv=block_kv))
                                 for (block_q, block_kv), kernel in labels()])


def parse_launches(path, order):
    """Nsight's raw CSV of an Nsight script's launches, order [(kernel, its row's fields)] as the workload runs them:
    the METRICS of each launch with its fields (us in microseconds)."""
    with open(path) as f:
        profiled, _ = ncu.raw_table(f.read())
    if [r["Kernel Name"] for r in profiled] != [f"{kernel}_kernel" for kernel, _ in order]:
        raise SystemExit(f"expected the launches {order}; got {[r['Kernel Name'] for r in profiled]}")
    rows = []
    for (kernel, fields), raw in zip(order, profiled):
        row = dict(fields, kernel=kernel)
        row.update({name: number(raw[metric]) for name, metric in METRICS.items()})
        row["us"] /= 1e3
        rows.append(row)
    return rows


def ncu_version():
    """Nsight Compute's version line, or None where it is not installed (parse run off the GPU machine)."""
    try:
        done = subprocess.run(["/usr/local/cuda/bin/ncu", "--version"], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 else None


def run_script(doc, module, workload, parse, argv):
    """An Nsight script's two modes (its docstring's two commands): `workload` runs the launches ncu profiles, `parse`
    writes the rows parse reads from ncu's raw CSV, with the run's environment."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("mode", choices=("workload", "parse"))
    ap.add_argument("--csv", help="parse: Nsight's raw CSV")
    ap.add_argument("--out", help="parse: the JSON to write")
    args = ap.parse_args(argv)
    if args.mode == "workload":
        return workload()
    from benchmarks.run_env import environment
    env = dict(environment(f"ncu ... python -m {module} workload; python -m {module} "
                           + " ".join(sys.argv[1:] if argv is None else argv)), ncu=ncu_version())
    with open(args.out, "w") as f:
        json.dump({"environment": env, "rows": parse(args.csv)}, f, indent=1)


def main(argv=None):
    run_script(__doc__, "benchmarks.bwd_stalls", workload, parse, argv)


if __name__ == "__main__":
    main()

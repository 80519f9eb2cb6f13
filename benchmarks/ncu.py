"""gpusim against Nsight Compute: the project's kernels profiled on the GPU, beside what gpusim predicts.

On the GPU, `NCU_S=240 OUT=$OUT bash benchmarks/h200_session.sh ncu` (ncu_bwd, ncu_edges, ncu_edges2: the same
for the backward and for flash2 and the Hopper kernel at long sequences) runs the workload under Nsight Compute
twice and compares:

    ncu --clock-control none --profile-from-start off --cache-control all --print-units base --csv \\
        --page raw --metrics $(python -m benchmarks.ncu metrics --available query.txt) --log-file raw.csv \\
        python -m benchmarks.ncu workload --manifest manifest.json
    ncu ... --metrics $(python -m benchmarks.ncu metrics --dram) --log-file dram_raw.csv \\
        python -m benchmarks.ncu workload --manifest manifest_dram.json
    python -m benchmarks.ncu compare --csv raw.csv --dram-csv dram_raw.csv --manifest manifest.json \\
        --out $OUT/ncu.json

The job leaves $OUT/NAME.json and .md; its CSVs and manifests (logs/raw_NAME.csv, logs/dram_NAME.csv,
logs/manifest_raw_NAME.json) go into $OUT/logs.tar.gz, and are kept in results/h200 as NAME_raw.csv,
NAME_dram_raw.csv and manifest.json (ncu) or manifest_SUFFIX.json (ncu_SUFFIX): what compare_run reads.

The workload runs each kernel once inside cudaProfilerStart/Stop after a warm-up (compilation) launch,
so ncu sees exactly one launch per kernel and configuration, with caches flushed before each. With
`workload --passes backward` it runs the backward launches of naive attention and flash2 instead (their
forward outside the profiled range), compared with the training step gpusim prices at the backward's tiles.

The second ncu asks for the two DRAM counters alone, which Nsight Compute collects in one pass: with more
metrics it replays each launch several times, restoring memory between passes, and the launch then writes
1.2-3.2 MB more to DRAM than it does alone (runs 85-87, docs/perf.md). --dram-csv takes DRAM bytes from
that run. The workload's first profiled launch is a small fill that takes Nsight Compute's own set-up writes
(run 85: 2.4 MB more in the first launch of a process); its manifest entry says `setup` and compare skips it.
It keeps the memory it frees in torch's cache: memory freed to the driver is cleared in the background, and a
profiled launch then counts the clearing as its own DRAM writes (runs 90 and 92).

L2 -> SM and SM -> L2 are the kernel's totals, its tensors' and its spills'; the spills alone are compared
too (spill_l2_to_sm_bytes, spill_sm_to_l2_bytes: local memory's sectors past L1, against KernelResult's
spill bytes), where Nsight Compute has the counters (`metrics --available` drops them if `ncu
--query-metrics` does not list them) and either side is not zero. workload --algos and --max-seconds run part
of the workload; compare takes several --csv and --manifest (and --dram-csv), leaving out a run cut short.
"""
import argparse
import csv
import json
import re
import sys
from functools import partial
from pathlib import Path

# Counters that match a tile schedule (../shared/reference/h200-baselines.md). TMA loads and stores
# bypass L1's LSU path, so the Hopper kernel's traffic is read from the TMA-specific counters.
METRICS = {
    "l2_to_sm_bytes": "l1tex__m_xbar2l1tex_read_bytes.sum",
    "sm_to_l2_bytes": "l1tex__m_l1tex2xbar_write_bytes.sum",
    "l2_to_sm_tma_bytes": "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "sm_to_l2_tma_bytes": "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "time_s": "gpu__time_duration.sum",
    # Local memory (spills) alone, in 32-byte sectors at L1 (Nsight Compute's memory tables, row "Local"): the
    # reloads' sectors that miss L1 go to L2; stores write through to L2, every sector
    "spill_l2_to_sm_bytes": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum",
    "spill_sm_to_l2_bytes": "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
}
# Metrics the comparison does without: an Nsight Compute that does not list them (ncu --query-metrics) is not
# asked for them (metrics --available), and their rows are left out of the comparison
OPTIONAL = ("spill_l2_to_sm_bytes", "spill_sm_to_l2_bytes")
DRAM = ("dram_read_bytes", "dram_write_bytes")  # collected in one pass when asked for alone (metrics --dram)
UNITS = {"sector": 32, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1,
         "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1}
KERNELS = ("qk", "softmax", "pv", "flash1", "flash2", "hopper", "preprocess", "dkdv", "dv", "dp", "ds", "dq", "dk")
SEQS = (1024, 2048, 4096, 8192, 16384, 32768)
PRESET = "H200-measured"  # the calibrated preset: measured copy bandwidth and matmul rates; a run on another GPU
# prices its launches on that GPU's preset (gpusim.hardware.device_preset), named in its manifest


def workload_configs(seqs=SEQS, head_dims=(64, 128)):
    for head_dim in head_dims:
        for causal in (False, True):
            for seq in seqs:
                yield dict(seq=seq, head_dim=head_dim, causal=causal, dtype="fp16", batch=max(1, 16384 // seq),
                           heads=2048 // head_dim)


def launch_blocks(algo, cfg, preset=PRESET):
    """The tiles a kernel runs with here: the Hopper kernel's own table; for the others gpusim.paper_blocks' tile on
    preset (the papers' SRAM rule), not best_blocks' (the time model's pick, which the kernels take by default)."""
    import gpusim
    if algo == "hopper":
        from gpusim_kernels.hopper import LAUNCHES
        table = LAUNCHES[(cfg["head_dim"], cfg["dtype"], cfg["causal"])]
        return table["block_q"], table["block_kv"]
    return gpusim.paper_blocks(algo, preset, cfg["head_dim"], cfg["dtype"])


LONGEST = {"naive": 16384, "flash1": 16384}  # their N x N buffers (naive) or seconds per launch (flash1)


def workload(manifest_path, seqs=SEQS, passes=("forward",), algos=None, max_seconds=None,
             command="python -m benchmarks.ncu workload under ncu", head_dims=(64, 128)):
    """Run every kernel once per configuration inside the profiler range; write what ran, in order. algos:
    the forward's algorithms to run (None: all); max_seconds: launch nothing more once this long has passed
    (ncu then ends as usual, its report holding every launch the manifest lists); command: what made the run,
    recorded in the manifest."""
    import time

    import torch

    import gpusim
    import gpusim_kernels
    from benchmarks import probe
    from gpusim import backward
    from gpusim.hardware import device_preset

    preset = device_preset(torch.cuda.get_device_name())
    if preset is None:
        raise SystemExit(f"workload: {torch.cuda.get_device_name()} has no gpusim preset to compare with")
    fns = {"naive": gpusim_kernels.naive_attention, "flash1": gpusim_kernels.flash1_attention, "flash2": gpusim_kernels.flash2_attention}
    if torch.cuda.get_device_capability()[0] == 9:
        fns["hopper"] = gpusim_kernels.hopper_attention
    start = time.monotonic()
    runs = [(algo, "forward") for algo in fns if "forward" in passes and (algos is None or algo in algos)]
    runs += [(algo, "backward") for algo in ("naive", "flash2") if "backward" in passes]
    manifest = {"environment": environment(command), "preset": preset,
                "launches": [profiled_setup()]}
    for cfg in workload_configs(seqs, head_dims):
        shape = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["head_dim"])
        q, k, v, do = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(4))
        for algo, pass_ in runs:
            if cfg["seq"] > LONGEST.get(algo, cfg["seq"]):
                continue
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                print(f"workload: stopped after {max_seconds} s", file=sys.stderr)
                return
            if pass_ == "forward":
                block_q, block_kv = launch_blocks(algo, cfg, preset)
                kernels = [k.name for k in gpusim.simulate(algo, **cfg, block_q=block_q, block_kv=block_kv,
                                                           gpu=preset).kernels]
                fn = partial(fns[algo], q, k, v, causal=cfg["causal"], block_q=block_q, block_kv=block_kv)
            else:
                block_q, block_kv = backward.default_blocks(algo, preset, cfg["head_dim"], cfg["dtype"])
                kernels = list(backward.KERNELS[algo])
                fn = backward_call(algo, q, k, v, do, cfg["causal"], block_q, block_kv)
            fn()  # compile, warm up
            probe.profiled(fn)
            manifest["launches"].append({**cfg, "algo": algo, "pass": pass_, "block_q": block_q, "block_kv": block_kv,
                                         "kernels": kernels})
            with open(manifest_path, "w") as f:  # after every launch: a crash keeps what was profiled
                json.dump(manifest, f, indent=1)
            print(f"{algo:7s} N={cfg['seq']:6d} d={cfg['head_dim']:3d} causal={cfg['causal']}", file=sys.stderr)
        del q, k, v, do, fn  # kept in torch's cache: memory freed to the driver is cleared in DRAM writes (runs 90, 92)


def profiled_setup():
    """Profile a small fill first: the first launch Nsight Compute profiles in a process also writes Nsight's own
    set-up to DRAM (run 85: 2.4 MB). Its manifest entry, which compare skips."""
    import torch

    from benchmarks import probe
    x = torch.empty(1 << 20, device="cuda")
    probe.profiled(lambda: x.fill_(1.0))
    return {"setup": True, "kernels": ["fill"]}


def backward_call(algo, q, k, v, do, causal, block_q, block_kv):
    """The backward's launches for algo as one call, its forward run now (outside the profiled range)."""
    import gpusim_kernels
    kw = dict(causal=causal, block_q=block_q, block_kv=block_kv)
    if algo == "flash2":
        o, lse = gpusim_kernels.flash2_attention(q, k, v, causal=causal, return_lse=True)
        return partial(gpusim_kernels.flash2_attention_backward, q, k, v, o, lse, do, **kw)
    _, p = gpusim_kernels.naive_attention(q, k, v, **kw, return_p=True)
    return partial(gpusim_kernels.naive_attention_backward, q, k, v, p, do, **kw)


def raw_table(text):
    """Nsight Compute's `--csv --page raw` output -> ({column: text} per profiled launch, {column: its unit}).
    Lines ncu prints before the table (==PROF== ...) are skipped."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    header, units, *rows = list(csv.reader(lines))
    return [dict(zip(header, row)) for row in rows], dict(zip(header, units))


def parse_csv(text):
    """Nsight Compute's `--csv --page raw` output -> one dict per profiled launch: kernel name and each
    METRICS quantity in bytes or seconds."""
    launches, units = raw_table(text)
    out = []
    for row in launches:
        launch = {"kernel_name": row["Kernel Name"]}
        for quantity, metric in METRICS.items():
            value = row.get(metric, "").replace(",", "")  # a metric not asked for: None
            launch[quantity] = float(value) * UNITS[units[metric]] if value not in ("", "n/a") else None
        out.append(launch)
    return out


def available_metrics(query, metrics=METRICS, optional=OPTIONAL):
    """The --metrics list: every counter of `metrics`, less the `optional` ones that `ncu --query-metrics`'s text
    (query; None: not checked) does not list by their base name (the name before .sum)."""
    names = set(re.findall(r"[a-z0-9_]+__[a-z0-9_]+", query)) if query is not None else None
    return sorted({metric for quantity, metric in metrics.items()
                   if names is None or quantity not in optional or metric.split(".")[0] in names})


def kernel_of(name):
    """The gpusim kernel a launch belongs to, from the Triton function name (the longest that begins it:
    dkdv_kernel is dkdv, not dk)."""
    return max((k for k in KERNELS if name.startswith(k) or name.startswith("_" + k)), key=len)


def compare(launches, manifest, dram_launches=None, preset=PRESET):
    """Rows of simulated against measured, one per (launch, quantity), priced on preset. gpu__time_duration
    excludes the gap between launches, so the launch overhead is taken off the prediction. dram_launches: the same
    workload profiled with the DRAM counters alone (one pass), whose DRAM bytes replace those of `launches`."""
    expected = [(entry, kernel) for entry in manifest for kernel in entry["kernels"]]
    dram_launches = launches if dram_launches is None else dram_launches
    if not len(expected) == len(launches) == len(dram_launches):
        raise ValueError(f"the manifest lists {len(expected)} launches but ncu profiled {len(launches)} "
                         f"({len(dram_launches)} for DRAM)")
    rows, simulated = [], {}
    for (entry, kernel), launch, dram_launch in zip(expected, launches, dram_launches):
        if entry.get("setup"):
            continue
        if not kernel_of(launch["kernel_name"]) == kernel_of(dram_launch["kernel_name"]) == kernel:
            raise ValueError(f"launch {launch['kernel_name']!r} is not the expected {kernel} kernel")
        config = {k: entry[k] for k in ("seq", "head_dim", "causal", "dtype", "batch", "heads", "block_q", "block_kv")}
        backward = entry.get("pass") == "backward"
        if id(entry) not in simulated:  # one simulation per configuration, however many kernels it launches
            simulated[id(entry)] = simulated_launches(entry["algo"], config, backward, preset)
        tma = kernel == "hopper"
        measured = {
            "l2_to_sm_bytes": launch["l2_to_sm_tma_bytes" if tma else "l2_to_sm_bytes"],
            "sm_to_l2_bytes": launch["sm_to_l2_bytes"],
            "dram_read_bytes": dram_launch["dram_read_bytes"],
            "dram_write_bytes": dram_launch["dram_write_bytes"],
            "time_s": launch["time_s"],
            "spill_l2_to_sm_bytes": launch.get("spill_l2_to_sm_bytes"),
            "spill_sm_to_l2_bytes": launch.get("spill_sm_to_l2_bytes"),
        }
        label = f"{entry['algo']} bwd {kernel}" if backward else kernel
        for quantity, sim in simulated[id(entry)][kernel].items():
            meas = measured[quantity]
            if meas is None or (quantity in OPTIONAL and not (meas or sim)):  # a counter not profiled, or no spills
                continue
            rows.append({"kernel": label, **{c: entry[c] for c in ("seq", "head_dim", "causal", "dtype")},
                         "quantity": quantity, "simulated": sim, "measured": meas,
                         "rel_err": None if not meas else (sim - meas) / meas})
    return rows


def simulated_launches(algo, config, backward=False, preset=PRESET):
    """gpusim's figures on preset for each kernel of one launch configuration, by kernel name: the kernel's totals
    (its tensors' and its spills'), its spills (local memory) alone, DRAM bytes and time; a
    backward's kernels from a training step at the backward's tiles (its forward at the default tile)."""
    import gpusim
    if backward:
        shape = {k: v for k, v in config.items() if k not in ("block_q", "block_kv")}
        r = gpusim.simulate(algo, **shape, backward=True, backward_blocks=(config["block_q"], config["block_kv"]),
                            gpu=preset)
    else:
        r = gpusim.simulate(algo, **config, gpu=preset)
    return {k.name: {"l2_to_sm_bytes": k.read_bytes, "sm_to_l2_bytes": k.write_bytes,
                     "dram_read_bytes": k.dram_read_bytes, "dram_write_bytes": k.dram_write_bytes,
                     "time_s": k.predicted_time_s - r.config.gpu.launch_overhead_s,
                     "spill_l2_to_sm_bytes": k.spill_read_bytes, "spill_sm_to_l2_bytes": k.spill_write_bytes}
            for k in r.kernels if k.pass_ == ("backward" if backward else "forward")}


def compare_files(csv_path, manifest_path, dram_csv_path=None, dram_manifest_path=None):
    """compare() on an Nsight Compute run's files: its raw CSV, its manifest and (where DRAM was profiled alone)
    the DRAM run's raw CSV, and that run's manifest where it was kept; priced on the manifest's preset (the H200's
    runs before it named one: PRESET)."""
    manifest = json.loads(Path(manifest_path).read_text())
    launches, preset = parse_csv(Path(csv_path).read_text()), manifest.get("preset", PRESET)
    dram = parse_csv(Path(dram_csv_path).read_text()) if dram_csv_path else None
    if dram_manifest_path is None:
        return compare(launches, manifest["launches"], dram, preset)
    return cut_short(launches, manifest["launches"], dram, json.loads(Path(dram_manifest_path).read_text())["launches"],
                     preset)


def cut_short(launches, entries, dram, dram_entries, preset):
    """compare() where the profile with every metric stopped at its time limit before the DRAM run did (the
    workload is the same, in the same order): the launches both profiled, every quantity; the rest, DRAM alone."""
    if dram_entries[:len(entries)] != entries:
        raise ValueError(f"the DRAM run's {len(dram_entries)} configurations do not begin with the other run's "
                         f"{len(entries)}: not the same workload")
    n = len(launches)
    return compare(launches, entries, dram[:n], preset) + compare(dram[n:], dram_entries[len(entries):], None, preset)


def compare_run(name, results):
    """compare_files on an Nsight Compute run kept in the folder results, by its name (ncu, ncu_edges, ncu_edges2,
    ncu_bwd): NAME_raw.csv, its DRAM run NAME_dram_raw.csv, and manifest.json (ncu) or manifest_SUFFIX.json, with
    the DRAM run's manifest_dram.json or manifest_SUFFIX_dram.json where it was kept."""
    results = Path(results)
    dram_manifest = results / f"manifest{name[3:]}_dram.json"
    return compare_files(results / f"{name}_raw.csv", results / f"manifest{name[3:]}.json",
                         results / f"{name}_dram_raw.csv", dram_manifest if dram_manifest.exists() else None)


TARGETS = {"l2_to_sm_bytes": 0.02, "sm_to_l2_bytes": 0.02, "dram_read_bytes": 0.10, "dram_write_bytes": 0.20,
           "time_s": 0.25, "spill_l2_to_sm_bytes": 0.02, "spill_sm_to_l2_bytes": 0.02}
MIN_TIME_S = 100e-6  # the time target holds for kernels of 100 us or more


def summary(rows):
    """{(kernel, quantity): (n, max |rel_err|, share within target)} for the table in the notes."""
    out = {}
    for row in rows:
        if row["rel_err"] is None or (row["quantity"] == "time_s" and row["measured"] < MIN_TIME_S):
            continue
        n, worst, ok = out.get((row["kernel"], row["quantity"]), (0, 0.0, 0))
        err = abs(row["rel_err"])
        out[(row["kernel"], row["quantity"])] = (n + 1, max(worst, err), ok + (err <= TARGETS[row["quantity"]]))
    return {key: (n, worst, ok / n) for key, (n, worst, ok) in out.items()}


def format_summary(rows):
    lines = ["| kernel | quantity | target | launches | within target | worst error |", "|---|---|---|---|---|---|"]
    for (kernel, quantity), (n, worst, share) in sorted(summary(rows).items(), key=lambda kv: (
            KERNELS.index(kv[0][0]) if kv[0][0] in KERNELS else len(KERNELS), kv[0][0], list(TARGETS).index(kv[0][1]))):
        lines.append(f"| {kernel} | {quantity} | {TARGETS[quantity]:.0%} | {n} | {share:.0%} | {worst:.1%} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ncu", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("metrics", help="print the --metrics list for ncu")
    m.add_argument("--available", help="ncu --query-metrics's output: leave out the optional metrics it lacks")
    m.add_argument("--dram", action="store_true", help="the two DRAM counters alone (one pass)")
    w = sub.add_parser("workload", help="run the kernels to be profiled (under ncu)")
    w.add_argument("--manifest", required=True)
    w.add_argument("--seqs", default=",".join(map(str, SEQS)))
    w.add_argument("--passes", default="forward", help="forward, backward, or forward,backward")
    w.add_argument("--algos", help="the forward's algorithms, comma-separated (default: all)")
    w.add_argument("--head-dims", default="64,128", help="d of the configurations, comma-separated")
    w.add_argument("--max-seconds", type=float, help="launch nothing more after this long")
    w.add_argument("--command", default="python -m benchmarks.ncu workload under ncu",
                   help="the command that made the run, for its manifest")
    c = sub.add_parser("compare", help="ncu CSV + manifest -> results JSON, table and chart")
    c.add_argument("--csv", required=True, nargs="+", help="ncu's CSVs, one per manifest")
    c.add_argument("--manifest", required=True, nargs="+")
    c.add_argument("--dram-csv", nargs="+", help="the same workloads profiled with the DRAM counters alone")
    c.add_argument("--dram-manifest", nargs="+", help="their manifests (a profile cut short is compared on its part)")
    c.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "metrics":
        query = Path(args.available).read_text() if args.available else None
        print(",".join(METRICS[q] for q in DRAM) if args.dram else ",".join(available_metrics(query)))
    elif args.cmd == "workload":
        workload(args.manifest, tuple(int(s) for s in args.seqs.split(",")), tuple(args.passes.split(",")),
                 tuple(args.algos.split(",")) if args.algos else None, args.max_seconds, args.command,
                 tuple(int(d) for d in args.head_dims.split(",")))
    else:
        rows, manifests = [], []
        nones = [None] * len(args.csv)
        for csv_path, manifest_path, dram_path, dram_manifest in zip(args.csv, args.manifest, args.dram_csv or nones,
                                                                     args.dram_manifest or nones, strict=True):
            if not all(Path(p).exists() for p in (csv_path, manifest_path, dram_path or csv_path)):
                print(f"compare: {csv_path}, {manifest_path} or {dram_path} missing: left out", file=sys.stderr)
                continue
            try:  # a run cut short (a CSV without a table, or fewer launches than its manifest) is left out
                rows += compare_files(csv_path, manifest_path, dram_path, dram_manifest)
            except ValueError as err:
                print(f"compare: {csv_path} left out: {err}", file=sys.stderr)
                continue
            manifests.append(json.loads(Path(manifest_path).read_text()))
        if not manifests:
            print("compare: nothing profiled to compare", file=sys.stderr)
            return 1
        write(rows, manifests[0]["environment"], args.out, manifests[0].get("preset", PRESET))
        print(format_summary(rows))
    return 0


def write(rows, environment, out, preset=PRESET):
    """The comparison as JSON and its summary table beside it (.md). The chart is the course's:
    python -m gpusim_course.provenance.plots ncu OUT."""
    out = Path(out)
    out.write_text(json.dumps({"environment": environment, "preset": preset, "targets": TARGETS, "rows": rows},
                              indent=1))
    out.with_suffix(".md").write_text(f"Nsight Compute against gpusim ({preset} preset): {environment['gpu']}, "
                                      f"torch {environment['torch']}, triton {environment['triton']}, "
                                      f"{environment['date']}\n\n{format_summary(rows)}\n")


def environment(command):
    import datetime
    import subprocess

    import torch
    import triton
    ncu = subprocess.run(["/usr/local/cuda/bin/ncu", "--version"], capture_output=True, text=True).stdout
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "ncu": ncu.strip().splitlines()[-1] if ncu else None, "date": datetime.date.today().isoformat(),
            "command": command}


if __name__ == "__main__":
    raise SystemExit(main())

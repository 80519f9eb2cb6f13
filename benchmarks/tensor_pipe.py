"""The share of kernel time in matmuls, measured: Nsight Compute's tensor-pipe active cycles against the SM's
active cycles, for the project's flash1 and flash2 forward kernels (the claim "FA-1 ~50% matmul, FA-2 ~70%").

    python -m benchmarks.tensor_pipe --out DIR          # on the GPU: DIR/tensor_pipe.json (about a minute)
    python -m benchmarks.tensor_pipe workload --manifest M   # what ncu runs: one profiled launch per kernel

Workload: gpusim_kernels.flash1_attention and flash2_attention (their default tiles), fp16, batch 1, 16 heads,
N 4096, d 64 and 128, causal or not; each compiled and warmed outside the profiled range, then launched once
between cudaProfilerStart/Stop (ncu --profile-from-start off --clock-control none --csv --page raw).
Hopper's tl.dot may compile to wgmma (GMMA) or mma.sync (HMMA): both pipes' counters are asked for. Metric
names ncu does not list for the chip (ncu --query-metrics --chip gh100) are left out first; if the profile
still fails, it is retried with the tensor metrics one at a time, then with --section ComputeWorkloadAnalysis
(its raw columns that name the tensor pipe are kept). Rows {kernel, head_dim, seq, heads, causal, block_q,
block_kv, tensor_cycles_active, sm_cycles_active, tensor_share, metric, time_ns, values (every column read)}.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

NCU = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
BASE = ["sm__cycles_active.avg", "gpu__time_duration.sum"]
TENSOR = ["sm__pipe_tensor_op_hmma_cycles_active.avg", "sm__pipe_tensor_op_gmma_cycles_active.avg",
          "sm__pipe_tensor_cycles_active.avg",
          "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
          "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
          "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum"]
# An SM is four processing blocks, each with its own tensor cores (Hopper whitepaper): the pipe counters sum the
# four, so a pipe busy every cycle counts 4 per SM cycle (Nsight's pct_of_peak_sustained_active divides by 4 too).
SUBPARTITIONS = 4
CONFIGS = [dict(head_dim=d, causal=c, seq=4096, heads=16, batch=1) for d in (64, 128) for c in (False, True)]


def workload(manifest_path):
    import torch
    import gpusim
    import gpusim_kernels as K
    fns = {"flash1": K.flash1_attention, "flash2": K.flash2_attention}
    launches = []
    for cfg in CONFIGS:
        shape = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["head_dim"])
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
        for name, fn in fns.items():
            blocks = gpusim.best_blocks(name, seq=cfg["seq"], head_dim=cfg["head_dim"], heads=cfg["heads"],
                                        batch=cfg["batch"], causal=cfg["causal"], dtype="fp16", gpu="H200-measured")
            try:
                fn(q, k, v, causal=cfg["causal"])  # compile, warm up
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                fn(q, k, v, causal=cfg["causal"])
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
                launches.append(dict(kernel=name, **cfg, block_q=blocks[0], block_kv=blocks[1]))
            except Exception as err:  # noqa: BLE001
                print(f"{name} {cfg}: {type(err).__name__}: {err}", file=sys.stderr)
            with open(manifest_path, "w") as f:
                json.dump(launches, f, indent=1)
        del q, k, v


def parse_csv(text):
    """ncu --csv --page raw -> [{column: value}] (numbers as floats where they parse) and the units row."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if len(lines) < 3:
        return [], {}
    header, units, *rows = list(csv.reader(lines))
    out = []
    for row in rows:
        d = {}
        for name, value in zip(header, row):
            try:
                d[name] = float(value.replace(",", ""))
            except ValueError:
                d[name] = value
        out.append(d)
    return out, dict(zip(header, units))


def available(log):
    """Base metric names ncu lists for the H200's chip, or None if it cannot say."""
    try:
        p = subprocess.run([NCU, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True, timeout=60)
    except Exception as err:  # noqa: BLE001
        log.append(f"query-metrics: {err}")
        return None
    names = {line.split()[0] for line in p.stdout.splitlines() if line.strip() and "__" in line.split()[0]}
    log.append(f"query-metrics: rc {p.returncode}, {len(names)} names")
    return names or None


def profile(args_, out_dir, tag, log, timeout):
    """Run the workload under ncu with args_; return (launch rows, manifest, units)."""
    manifest = os.path.join(out_dir, f"manifest_{tag}.json")
    csv_path = os.path.join(out_dir, f"ncu_{tag}.csv")
    cmd = [NCU, "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base", "--csv",
           "--page", "raw", *args_, "--log-file", csv_path, sys.executable, "-m", "benchmarks.tensor_pipe",
           "workload", "--manifest", manifest]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, err = p.returncode, (p.stdout + p.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        rc, err = "timeout", str(e)[-1000:]
    except Exception as e:  # noqa: BLE001 - no ncu: record it
        rc, err = "failed", f"{type(e).__name__}: {e}"[-1000:]
    log.append(f"[{tag}] {' '.join(cmd)}\n rc {rc} in {time.monotonic() - t0:.0f} s\n{err}")
    rows, units = [], {}
    if os.path.exists(csv_path):
        with open(csv_path) as f:
            rows, units = parse_csv(f.read())
    launches = json.load(open(manifest)) if os.path.exists(manifest) else []
    return rows, launches, units


def share(tensor_cycles, sm_cycles):
    """The share of an SM's active cycles its tensor pipes were busy (None where a counter is missing)."""
    if not isinstance(tensor_cycles, float) or not isinstance(sm_cycles, float) or not sm_cycles:
        return None
    return tensor_cycles / (SUBPARTITIONS * sm_cycles)


def combine(rows, launches, metrics):
    out = []
    for launch, r in zip(launches, rows):
        values = {m: r.get(m) for m in r if isinstance(r.get(m), float) and ("tensor" in m or m in BASE)}
        hmma = r.get("sm__pipe_tensor_op_hmma_cycles_active.avg")
        gmma = r.get("sm__pipe_tensor_op_gmma_cycles_active.avg")
        generic = r.get("sm__pipe_tensor_cycles_active.avg")
        parts = [x for x in (hmma, gmma) if isinstance(x, float)]
        tensor = sum(parts) if parts else (generic if isinstance(generic, float) else None)
        used = "+".join(m for m, x in (("hmma", hmma), ("gmma", gmma)) if isinstance(x, float)) or \
            ("tensor" if isinstance(generic, float) else None)
        sm = r.get("sm__cycles_active.avg")
        out.append(dict(launch, kernel_name=r.get("Kernel Name"), tensor_cycles_active=tensor,
                        sm_cycles_active=sm if isinstance(sm, float) else None,
                        tensor_share=share(tensor, sm),
                        hmma_cycles_active=hmma, gmma_cycles_active=gmma,
                        metric=f"sm__pipe_tensor_op_{used}_cycles_active.avg / ({SUBPARTITIONS} sm__cycles_active.avg)"
                        if used else None,
                        time_ns=r.get("gpu__time_duration.sum"), values=values))
    return out


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "workload":
        ap = argparse.ArgumentParser(prog="python -m benchmarks.tensor_pipe workload")
        ap.add_argument("--manifest", required=True)
        workload(ap.parse_args(argv[1:]).manifest)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes tensor_pipe.json")
    ap.add_argument("--logs", default=None, help="folder for ncu's CSVs and manifests (default: OUT/tensor_pipe_logs)")
    ap.add_argument("--max-seconds", type=float, default=85)
    args = ap.parse_args(argv)
    deadline = time.monotonic() + args.max_seconds
    logs = args.logs or os.path.join(args.out, "tensor_pipe_logs")
    os.makedirs(logs, exist_ok=True)
    log = []
    command = "python -m benchmarks.tensor_pipe " + " ".join(argv)
    try:
        from benchmarks.run_env import environment
        env = environment(command)
    except Exception as err:  # noqa: BLE001
        env = {"command": command, "error": str(err)[:300]}
    try:
        env["ncu"] = subprocess.run([NCU, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    except Exception as err:  # noqa: BLE001
        env["ncu"] = f"unavailable: {err}"
    result = {"environment": env, "rows": [], "attempts": []}
    path = os.path.join(args.out, "tensor_pipe.json")

    def left():
        return max(5.0, deadline - time.monotonic())

    names = available(log)
    wanted = TENSOR if names is None else [m for m in TENSOR if m.split(".")[0] in names]
    base = BASE if names is None else [m for m in BASE if m.split(".")[0] in names] or BASE
    result["environment"]["metrics_dropped"] = sorted(set(TENSOR) - set(wanted))
    attempts = [("all", wanted)] + [(m.split("__")[1].split(".")[0] + ("_pct" if "pct" in m else ""), [m])
                                    for m in wanted if "cycles_active.avg" in m and "pct" not in m]
    rows = []
    for tag, metrics in attempts:
        if not metrics or time.monotonic() > deadline - 10:
            continue
        got, launches, units = profile(["--metrics", ",".join(base + metrics)], logs, tag, log, left())
        result["attempts"].append(dict(tag=tag, metrics=base + metrics, launches=len(launches), rows=len(got)))
        if got and launches:
            rows = combine(got, launches, metrics)
            if any(r["tensor_share"] is not None for r in rows):
                break
    if not any(r.get("tensor_share") is not None for r in rows) and time.monotonic() < deadline - 10:
        got, launches, units = profile(["--section", "ComputeWorkloadAnalysis"], logs, "section", log, left())
        result["attempts"].append(dict(tag="section ComputeWorkloadAnalysis", launches=len(launches), rows=len(got)))
        if got:
            rows = combine(got, launches, [])
            for r, g in zip(rows, got):  # what the section has on the tensor pipes
                r["values"] = {m: v for m, v in g.items() if ("tensor" in m.lower() or "pipe" in m.lower())}
    result["rows"] = rows
    for r in rows:
        share = r["tensor_share"]
        print(f"{r['kernel']} d{r['head_dim']} {'causal' if r['causal'] else '-'} N{r['seq']}: "
              f"tensor share {share if share is None else round(share, 3)} ({r['metric']}), {r.get('time_ns')} ns",
              flush=True)
    with open(os.path.join(logs, "tensor_pipe.log"), "w") as f:
        f.write("\n\n".join(log))
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"tensor_pipe: {sum(r.get('tensor_share') is not None for r in rows)} of {len(rows)} rows with a share "
          f"-> {path}")


if __name__ == "__main__":
    main()

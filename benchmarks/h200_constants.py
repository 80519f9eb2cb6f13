"""The H200-measured preset's constants, derived from the microbenchmarks' results files (never from
attention timings): run it to print them, tests/test_presets.py checks gpusim/hardware.py still holds them.

    python -m benchmarks.h200_constants        # reads results/h200/{latency,bandwidth,matmul_tiles*,l2_dirty,...}.json
    python -m benchmarks.h200_constants --results results/h100   # another GPU's run of the same microbenchmarks

- Loaded latency and one SM's port bandwidth, per level (HBM, L2): benchmarks/bandwidth.py's load kernel
  with one program per SM and no prefetch (num_stages=1) waits a latency and a transfer per tile, so the
  time per tile against the tile's bytes (2 to 16 KiB) is a line: intercept = the latency a block sees while
  every SM loads (more than the idle pointer chase of benchmarks/latency.py), slope = 1 / the port bandwidth.
- Idle L2 hit latency: the median of benchmarks/latency.py's pointer chases through L2 (one load waited for at a
  time, nothing else loading).
- L2 bandwidth, and DRAM's for reads alone: the median of the L2 (HBM) load rows that keep at least 64 KiB in
  flight per SM (the plateau).
- Exponentials and fp32 FMAs per second: matmul_tiles.py's exp2_rate and fma_rate rows.
- The Hopper kernel's warp-specialized step against its software-pipelined one's: program_setup.py (ws_step_ratio).
  Its per-program set-up per launch kind is measured on lone launches of the kernel, less gpusim's chain of them
  (benchmarks/report_launches.py's lone_latency_s, checked by tests/test_presets.py).
- The L2's dirty lines at a launch's end (gpusim/l2.py's rule 4): l2_dirty.py's rows, a launch streaming R bytes
  once and writing W. Where W <= R / 16 (and R >= 128 MiB, so that the L2 cannot hold all of it), the writes of
  the last l2_recent_fraction of an L2 of traffic are still dirty: the median of still_dirty x (W + DRAM reads) / (W x L2);
  where W >= 4 R, l2_dirty_fraction of the L2 is, the median of still_dirty / L2.
- A lone 8-warp flash2 program's copy rate (gpusim.cost.lone_copy): lone_program.py's cold steps of 128 rows (8 warps,
  16 rows each) at 3 and 4 stages, both head dims, each the slope of its launch's time over J = 1-16 K/V blocks
  (least squares): the median of the K/V bytes a step loads over that step.
- An empty kernel's launch replayed from a CUDA graph, one program per SM: lone_program.py's empty rows.
- A stream of stores alone (gpusim.cost.stored_after): the median of bandwidth.py's store rows of tiles from 4 KiB (a
  program per tile; smaller tiles are bound by how fast the programs start).
- A training step's host cost per call (the floor of a short step timed from Python): host.py's
  flash2_train_step rows (median).
- Tensor cores: matmul_tiles.py's mma rows (no memory traffic, loop-carried accumulators): the peak is the
  fastest shape per dtype, and each (block_q, block_kv, head_dim, num_warps) its fraction of the fp16 peak;
  matmul_tiles_more.json's (the held-out sets' 32 x 32) against matmul_tiles.PEAK, which both runs measure.
"""
import argparse
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"
PLATEAU_BYTES = 64 * 1024
STORE_TILE_BYTES = 4 * 1024  # the store rows' plateau: tiles from 4 KiB


def rows(name, results=RESULTS):
    return json.loads((Path(results) / f"{name}.json").read_text())["rows"]


def latency_and_port(level, results=RESULTS):
    """(latency_s, port_bytes_per_s) of one level, from the no-prefetch, one-program-per-SM load rows (as many programs
    as the GPU has SMs: ceilings.json's sm_count)."""
    sms = json.loads((Path(results) / "ceilings.json").read_text())["sm_count"]
    fit = [r for r in rows("bandwidth", results) if r["kind"] == "load" and r["level"] == level
           and r["programs_per_sm"] == 1 and r["num_stages"] == 1 and 2048 <= r["tile_bytes"] <= 16384]
    size = np.array([r["tile_bytes"] for r in fit], float)
    per_tile = size * sms / np.array([r["bytes_per_s"] for r in fit])
    slope, intercept = np.polyfit(size, per_tile, 1)
    return float(intercept), float(1 / slope)


def l2_idle_latency_s(results=RESULTS):
    return float(np.median([r["ns_per_hop"] for r in rows("latency", results) if r["level"] == "l2"])) * 1e-9


def load_bytes_per_s(level, results=RESULTS):
    plateau = [r["bytes_per_s"] for r in rows("bandwidth", results) if r["kind"] == "load" and r["level"] == level
               and r["bytes_in_flight_per_sm"] >= PLATEAU_BYTES]
    return float(np.median(plateau))


def store_bytes_per_s(results=RESULTS):
    return float(np.median([r["bytes_per_s"] for r in rows("bandwidth", results) if r["kind"] == "store"
                            and r["tile_bytes"] >= STORE_TILE_BYTES]))


def rate(variant, results=RESULTS):
    return next(r["ops_per_s"] for r in rows("matmul_tiles", results) if r["variant"] == variant)


def matmul_peaks(results=RESULTS):
    mma = [r for r in rows("matmul_tiles", results) if r["variant"] == "mma"]
    return {dtype: max(r["tflops"] for r in mma if r["dtype"] == dtype) * 1e12 for dtype in ("fp16", "bf16", "fp8")}


def mma_efficiency(results=RESULTS):
    """((block_q, block_kv, head_dim, num_warps), fraction of the fp16 peak), fp16 rows, sorted: matmul_tiles.json's
    against its fastest; matmul_tiles_more.json's (tiles the first run left out) against its own row at the shape both
    runs measured (matmul_tiles.PEAK, the H200's fastest), scaled by that shape's fraction in the first run."""
    peak = matmul_peaks(results)["fp16"]
    first = {_key(r): r["tflops"] * 1e12 / peak for r in _fp16_mma("matmul_tiles", results)}
    more = {_key(r): r["tflops"] for r in _fp16_mma("matmul_tiles_more", results)}
    (both,) = set(first) & set(more)
    first |= {key: tflops / more[both] * first[both] for key, tflops in more.items() if key != both}
    return tuple(sorted((key, round(fraction, 3)) for key, fraction in first.items()))


def _fp16_mma(name, results):
    return [r for r in rows(name, results) if r["variant"] == "mma" and r["dtype"] == "fp16"]


def _key(r):
    return r["br"], r["bc"], r["d"], r["num_warps"]


def ws_step_ratio():
    """{head_dim: the warp-specialized Hopper launch's time per K/V step over the software-pipelined one's}, same
    tiles (128 x 128), one block per SM: the slopes of their time against the steps per program at 16 waves
    (benchmarks/program_setup.py, steady state). How much of the softmax its two consumer warp groups hide
    under each other's matmuls, as triton 3.6 schedules them (no ping-pong)."""
    slopes = {}
    for algo, d in {(r["algo"], r["head_dim"]) for r in rows("program_setup") if r["waves"] == 16}:
        points = [(r["steps"], r["ms"]) for r in rows("program_setup") if (r["algo"], r["head_dim"], r["waves"]) ==
                  (algo, d, 16) and "ms" in r]
        slopes[algo, d] = float(np.polyfit(*zip(*points), 1)[0])
    return {d: round(slopes["hopper", d] / slopes["hopper_swp", d], 3) for _, d in sorted(slopes) if _ == "hopper"}


def graph_launch_s(results=RESULTS):
    """An empty kernel of one program per SM (132), replayed from a CUDA graph: lone_program.py's empty row."""
    return float(np.median([r["ms"] * 1e-3 for r in rows("lone_program", results)
                            if (r["kind"], r.get("programs"), r.get("timing")) == ("empty", 132, "cuda_graph")]))


def train_step_host_s(results=RESULTS, host="host_run105"):
    """A training step's per-call host cost: the median of the flash2_train_step rows of `host` (benchmarks/host.py's
    wall time per call of flash2_attention_trainable forward + .sum().backward() on shapes whose GPU work is tens of
    us). The H200's: host_run105.json (run 105, on the machine that timed the held-out sets' training steps: host.json
    is a later run's, the held-out sets' scores rest on this one)."""
    return float(np.median([r["us"] for r in rows(host, results) if r["entry"] == "flash2_train_step"])) * 1e-6


def copy_bytes_per_s(results=RESULTS):
    """A device-to-device copy's bytes read + written per second: benchmarks/ceilings.py's, read as it is."""
    return float(json.loads((Path(results) / "ceilings.json").read_text())["copy_bytes_per_s"])


def lone_steps(l2="cold", results=RESULTS):
    """lone_program.json's step launches with their inputs `l2` ("cold" or "warm"): {(head_dim, block_q, block_kv,
    num_stages): {J: µs}}."""
    groups = {}
    for r in rows("lone_program", results):
        if r["kind"] == "step" and "ms" in r and r["l2"] == l2:
            groups.setdefault((r["head_dim"], r["block_q"], r["block_kv"], r["num_stages"]), {})[r["steps"]] = r["ms"] * 1e3
    return groups


def slope(us):
    """One step: the least-squares slope of a launch's time over its J K/V blocks ({J: µs})."""
    return float(np.polyfit(list(us), list(us.values()), 1)[0])


def copy_bound(key):
    """The lone_steps() key of a step the copy rate is measured on: 128 rows (8 warps), 3 or 4 stages."""
    _, block_q, _, stages = key
    return block_q == 128 and stages > 2


def lone_copy_bytes_per_s(results=RESULTS):
    return float(np.median([2 * bk * d * 2 / (slope(us) * 1e-6)  # K and V tiles, fp16, over the step
                            for (d, bq, bk, stages), us in lone_steps(results=results).items()
                            if copy_bound((d, bq, bk, stages))]))


def l2_recent_fraction():
    rows_ = rows("l2_dirty")
    l2 = json.loads((RESULTS / "l2_dirty.json").read_text())["environment"]["l2_bytes"]
    return float(np.median([r["still_dirty_bytes"] * (r["write_bytes"] + r["dram_read_bytes"]) / (r["write_bytes"] * l2)
                            for r in rows_ if 16 * r["write_bytes"] <= r["read_bytes"] and r["read_bytes"] >= 128 * 2**20]))


def l2_dirty_fraction():
    l2 = json.loads((RESULTS / "l2_dirty.json").read_text())["environment"]["l2_bytes"]
    return float(np.median([r["still_dirty_bytes"] / l2 for r in rows("l2_dirty") if r["write_bytes"] >= 4 * r["read_bytes"]]))


def gpu_constants(results=RESULTS, host="host_run105"):
    """The GPU fields of a measured preset (gpusim.GPU's names), from the microbenchmarks' files in `results` (the
    H200's by default; `benchmarks/h200_session.sh preset` runs them on any GPU). The copy rate is ceilings.json's."""
    hbm, l2 = latency_and_port("hbm", results=results), latency_and_port("l2", results=results)
    peaks = matmul_peaks(results)
    return {"hbm_bytes_per_s": copy_bytes_per_s(results), "hbm_latency_s": hbm[0], "hbm_port_bytes_per_s": hbm[1],
            "l2_latency_s": l2[0], "l2_idle_latency_s": l2_idle_latency_s(results), "l2_port_bytes_per_s": l2[1],
            "l2_bytes_per_s": load_bytes_per_s("l2", results), "hbm_read_bytes_per_s": load_bytes_per_s("hbm", results),
            "sfu_ops_per_s": rate("exp2_rate", results), "fp32_flops_per_s": 2 * rate("fma_rate", results),
            "fp16_matmul_flops_per_s": peaks["fp16"], "bf16_matmul_flops_per_s": peaks["bf16"],
            "fp8_matmul_flops_per_s": peaks["fp8"], "mma_efficiency": mma_efficiency(results),
            "train_step_host_s": train_step_host_s(results, host),
            "lone_copy_bytes_per_s": lone_copy_bytes_per_s(results), "graph_launch_s": graph_launch_s(results),
            "store_bytes_per_s": store_bytes_per_s(results)}


def constants():
    """The H200-measured preset's GPU fields, and the constants the H200's runs set elsewhere (the Hopper kernel's
    step ratio, gpusim/l2.py's dirty-line rule)."""
    return gpu_constants() | {"hopper_ws_step_ratio": ws_step_ratio(), "l2_recent_fraction": l2_recent_fraction(),
                              "l2_dirty_fraction": l2_dirty_fraction()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", help="a folder of another GPU's microbenchmark files: its preset's GPU fields")
    ap.add_argument("--host", default="host", help="with --results: the host.py file (stem) of that GPU's run")
    args = ap.parse_args(argv)
    values = gpu_constants(args.results, args.host) if args.results else constants()
    for name, value in values.items():
        print(f"{name} = {value!r}" if isinstance(value, (tuple, dict)) else f"{name} = {value:.4g}")


if __name__ == "__main__":
    main()

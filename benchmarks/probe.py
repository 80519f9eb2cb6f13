"""What the GPU probe scripts share (latency.py, bandwidth.py, matmul_tiles.py, tiles.py; gpu_probe.sh runs
them): the JSON each writes, {"environment": {...}, "rows": [...]}, rewritten after every row; a failing
configuration recorded as an error row while the run goes on; the timing convention; and compiling every
configuration first in a pool of worker processes, so that the timed process finds each kernel in
Triton's on-disk cache.

On CPU, with TRITON_INTERPRET=1 set before the scripts import triton, the same code runs in Triton's
interpreter at tiny sizes (--smoke): the times are then wall-clock times of single calls, proof only that
every code path runs. On the GPU gpusim_kernels must be importable (gpu_probe.sh arranges it).
"""
import argparse
import datetime
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

import torch
import triton

import gpusim
from gpusim.occupancy import Resources, occupancy
import gpusim_kernels.interpreter  # noqa: F401 - its fixes to triton 3.6's interpreter, applied when interpreting

INTERPRETED = triton.knobs.runtime.interpret
DEVICE = "cpu" if INTERPRETED else "cuda"
WORKERS = min(16, os.cpu_count())  # compiling processes: the GPU machine has 16 cores
WARMUP_MS, REP_MS = 10, 40  # do_bench's warm-up and measurement windows: >= 10 calls of a kernel over 100 us


def parser(doc, name, pool=True):
    """The arguments of a probe script: --out, --smoke and (for those compiling in a pool) --workers."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True, help=f"the folder for {name}, or a .json file")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (CPU, TRITON_INTERPRET=1)")
    if pool:
        ap.add_argument("--workers", type=int, default=WORKERS, help="processes compiling the kernels before timing")
    return ap


def script(doc, name, measure, namespace, argv=None):
    """A probe script's entry point without a compile pool: --out and --smoke (the script's SMOKE sizes set into its
    namespace, its globals()), then measure(results) into `name`."""
    args = parser(doc, name, pool=False).parse_args(argv)
    if args.smoke:
        namespace.update(namespace["SMOKE"])
    measure(open_results(name, args, argv))


def nsight_parser(name, doc):
    """The sub-commands of a microbenchmark profiled under Nsight Compute: metrics (ncu's --metrics list), workload
    (its launches, under ncu) and compare (ncu's CSV and the manifest -> the results JSON). Returns the parser and
    the metrics and workload sub-parsers, for the script's own options."""
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=doc.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    metrics = sub.add_parser("metrics", help="print the --metrics list for ncu")
    workload = sub.add_parser("workload", help="the launches to profile (under ncu)")
    workload.add_argument("--manifest", required=True)
    workload.add_argument("--command", default=f"python -m benchmarks.{name} workload", help="the command to record")
    workload.add_argument("--smoke", action="store_true", help="tiny sizes (CPU, TRITON_INTERPRET=1)")
    compare = sub.add_parser("compare", help="ncu's CSV and the manifest -> the results JSON")
    for flag in ("--csv", "--manifest", "--out"):
        compare.add_argument(flag, required=True)
    return ap, metrics, workload


def open_results(name, args, argv, module=None):
    """The results file of a run: in args.out, its environment naming the command (argv None: sys.argv's) of
    benchmarks.<module> (default: the file's name)."""
    if not INTERPRETED and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU here: run on the GPU, or on CPU as TRITON_INTERPRET=1 python ... --smoke")
    command = f"python -m benchmarks.{module or Path(name).stem} " + " ".join(sys.argv[1:] if argv is None else argv)
    return Results(out_file(args.out, name), environment(command))


def out_file(out, name):
    """--out is the JSON file itself (ends in .json) or the folder to write `name` into."""
    path = Path(out) if str(out).endswith(".json") else Path(out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def environment(command):
    """GPU, driver, versions, date and command, as benchmarks.bench writes them; on CPU the interpreter."""
    if DEVICE == "cuda":
        from benchmarks.bench import environment as gpu_environment
        props = torch.cuda.get_device_properties(0)
        return gpu_environment(command) | {"sm_count": props.multi_processor_count, "l2_bytes": props.L2_cache_size}
    return {"gpu": "cpu (Triton interpreter)", "driver": None, "torch": torch.__version__,
            "triton": triton.__version__, "cuda": None, "date": datetime.date.today().isoformat(),
            "command": command}


class Results:
    """A results file: its environment and rows, written whole (to a temporary file, then renamed) after every
    row, so a run stopped at any moment leaves valid JSON with every row measured so far."""

    def __init__(self, path, environment):
        self.path, self.data = Path(path), {"environment": environment, "rows": []}
        self.save()

    def add(self, row):
        self.data["rows"].append(row)
        self.save()
        return row

    def save(self):
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)


def one_line(err):
    """An exception as one line: its type and the first line of its message, at most 200 characters."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0][:200] if lines else ''}"


def attempt(row, measure):
    """row updated with measure()'s dict; an exception (out of memory or shared memory, a compile error, a
    backend that refuses the shape) becomes row["error"] instead, and the caller goes on."""
    try:
        row.update(measure())
    except Exception as err:  # noqa: BLE001 - one configuration failing is a result, not the end of the run
        row["error"] = one_line(err)
    return row


def median_ms(fn, warmup=WARMUP_MS, rep=REP_MS):
    """triton.testing.do_bench's median (CUDA events around each call, L2 flushed between calls); in the
    interpreter one call's wall-clock time."""
    if INTERPRETED:
        return launch_ms(fn)
    return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def launch_ms(fn):
    """The time of one call: CUDA events around it (the GPU's clock), wall clock in the interpreter."""
    if INTERPRETED:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def graph_ms(fn):
    """The call's GPU time, replayed from a CUDA graph (benchmarks.bench.gpu_time); its wall clock in the
    interpreter."""
    if INTERPRETED:
        return launch_ms(fn)
    from benchmarks.bench import gpu_time
    return gpu_time(fn)["ms"]



@triton.jit
def empty_kernel(x_ptr):
    """A kernel that does nothing: what a launch alone costs."""
    pass

def input_sets(shapes, l2_bytes):
    """Sets of fp16 tensors of `shapes` (randn on DEVICE), as many as exceed twice l2_bytes (one set where that is 0):
    a CUDA graph cycling through them (benchmarks.bench.cycling) reads each set from DRAM, as gpusim prices a
    launch's first touch; its first set alone, replayed, is read from L2."""
    one = sum(2 * math.prod(shape) for shape in shapes)
    return [[torch.randn(shape, device=DEVICE, dtype=torch.float16) for shape in shapes]
            for _ in range(max(1, -(-2 * l2_bytes // one)))]


def profiled(fn):
    """fn() inside the CUDA profiler's range (cudaProfilerStart/Stop, synchronized either side: under `ncu
    --profile-from-start off` exactly its launches are profiled); on the CPU, plainly. Returns what fn returns."""
    if DEVICE != "cuda":
        return fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    out = fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return out


def sm_count():
    return torch.cuda.get_device_properties(0).multi_processor_count if DEVICE == "cuda" else 2


def h200_blocks(res, num_warps):
    """Blocks of a kernel with these resources (kernel_resources') on num_warps an H200 SM holds at once
    (gpusim.occupancy); None in the interpreter."""
    if res["n_regs"] is None:
        return None
    kernel = Resources(num_warps, 1, res["n_regs"], res["shared_bytes"], 0, True)
    return occupancy(gpusim.get_gpu("H200-measured"), kernel).blocks_per_sm


def kernel_resources(compiled):
    """Registers per thread, spilled registers and shared memory bytes per block of a compiled kernel (what
    kernel[grid](...) or a warm-up returns); None in the interpreter, which compiles nothing. Triton loads a kernel
    onto the GPU, and so learns its registers, at its first launch: a kernel compiled and not yet run is loaded here
    (runs 141 and 142's first rows, compiled by compiled_kernel and not run, read back no registers)."""
    if compiled is None or not hasattr(compiled, "_init_handles"):
        return {"n_regs": None, "n_spills": None, "shared_bytes": None}
    compiled._init_handles()  # a no-op once loaded
    return {"n_regs": compiled.n_regs, "n_spills": compiled.n_spills, "shared_bytes": compiled.metadata.shared}


def compiled_by(jit_fn, call):
    """Run call(); return (its result, the kernel of jit_fn it compiled or loaded from the disk cache into this
    process, or None: already loaded, or the interpreter)."""
    caches = getattr(jit_fn, "device_caches", {})
    before = {id(k) for cache in caches.values() for k in cache[0].values()}
    result = call()
    new = [k for cache in caches.values() for k in cache[0].values() if id(k) not in before]
    return result, (new[-1] if new else None)


def compile_all(warm, items, workers, seconds):
    """warm(item) for every item in `workers` fresh processes (spawned: a process that has used CUDA cannot
    fork), so that Triton's on-disk cache holds every kernel before timing starts. Returns {item: error line}
    for the items that failed; items not done within `seconds` compile later, in the timed process."""
    start, errors = time.monotonic(), {}
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    futures = {pool.submit(_warm_one, warm, item): item for item in items}
    done, pending = wait(futures, timeout=seconds)
    pool.shutdown(wait=False, cancel_futures=True)
    for future in done:
        error = future.exception() or future.result()
        if error:
            errors[futures[future]] = error if isinstance(error, str) else one_line(error)
    print(f"compiled {len(done) - len(errors)} of {len(items)} configurations in {time.monotonic() - start:.0f} s "
          f"on {workers} processes ({len(errors)} failed, {len(pending)} left for the timed process)", flush=True)
    return errors


def _warm_one(warm, item):
    try:
        warm(item)
    except Exception as err:  # noqa: BLE001 - reported with its configuration; the timed run records it again
        return one_line(err)
    return None

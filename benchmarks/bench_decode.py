"""Time Flash-Decoding on the GPU against what users would otherwise pick, in one run (about 2 minutes).

    python -m benchmarks.bench_decode --out $OUT/decode.json --max-minutes 2     # from the repository root
    TRITON_INTERPRET=1 python -m benchmarks.bench_decode --out /tmp/decode.json --smoke   # CPU: the code paths

Llama-3-8B's attention shape (32 query heads, 8 K/V heads, d = 128, fp16; gpusim/kvcache.py), one new token per
request (seq = 1), batch 1, 8 and 64, caches of 1K to 128K tokens. Providers:
- split_kv: the project's split-KV kernel over a paged cache (gpusim_kernels.decode), num_splits chosen by
  gpusim.decode's rule (the most splits whose programs fill every SM's resident split blocks less one,
  split_slots), the reduce a programmatic dependent launch on Hopper;
  split_kv_1: the same with num_splits = 1 (FlashAttention-2's unsplit decode);
  split_kv_contiguous: the same kernel over the contiguous cache the SDPA backends read (no block table,
  num_splits by the same rule for that cache): SDPA's layout, so the difference to split_kv is what the
  pages cost;
- sdpa_flash, sdpa_efficient, sdpa_cudnn, sdpa_math: torch's scaled_dot_product_attention forced to one
  backend, on a contiguous (B, 8, L, 128) cache with enable_gqa=True; a backend that refuses is a row
  with its error;
- torch_naive: matmul, softmax, matmul, with K/V expanded to 32 heads (repeat_interleave) on every call,
  as Hugging Face's repeat_kv does.
Pages of 16 tokens: vLLM's default block size. A chunk of 64 keys then spans 4 whole pages (one 16-byte
block-table read per chunk), and a request wastes at most 15 token slots; the K/V rows are gathered one
256-byte row at a time whatever the page size, so larger pages would save only block-table reads.

Each row: {provider, batch, seq_kv, heads, kv_heads, head_dim, dtype, page_size, num_splits, ms, model_bytes,
bytes_per_s, copy_fraction, rel_err, timing} or an error. ms: the median time of the GPU work replayed from
a CUDA graph (benchmarks.bench.gpu_time; timing "cuda_graph", or "events" where a call cannot be
captured), so that Python's launch time, longer than the kernels at batch 1, is not in it; the calls rotate
among enough copies of the inputs to exceed twice the L2, so the cache comes from DRAM. model_bytes:
gpusim.decode's count for the row's configuration: the launch itself for split_kv rows, the contiguous
grouped num_splits = 1 count (Q, K, V, O, LSE once: what any exact kernel must move) for SDPA, and the
ungrouped one (each query head reads its K/V) for torch_naive. copy_fraction: bytes_per_s over the
device-to-device copy bandwidth measured at the start of the run (bytes read + written over the time of a
4 GiB copy). rel_err: against float64, request 0, all heads.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpusim import decode
from benchmarks.bench import cycling, error_line, gpu_time  # cycling: the first call runs input set 0, which measure() checks
from gpusim_kernels.decode import plan_for_cache

SHAPE = dict(heads=32, kv_heads=8, head_dim=128)  # Llama-3-8B (gpusim/kvcache.py)
BATCHES, SEQ_KVS = (1, 8, 64), tuple(1024 << i for i in range(8))
PAGE_SIZE = 16
SMOKE = dict(shape=dict(heads=4, kv_heads=2, head_dim=16), batches=(1, 2), seq_kvs=(64, 200))
L2_BYTES = 60 * 1024**2  # the H200's (gpusim's preset)
COPY_BYTES = 4 * 1024**3
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_math": SDPBackend.MATH}
PROVIDERS = ("split_kv", "split_kv_1", "split_kv_contiguous", *SDPA, "torch_naive")
PAGED = ("split_kv", "split_kv_1")  # the providers that read the paged cache
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def median_ms(fn):
    if DEVICE == "cpu":  # smoke run in the interpreter: one call, wall clock
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy_bytes_per_s(nbytes):
    """Device-to-device copy bandwidth: bytes read + written over the median time of one copy."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (ms * 1e-3)


def _compile(num_splits):
    """One small launch with the sweep's compile-time constants (in a worker process: it fills Triton's
    cache). The reduce is specialised on num_splits rounded up to a power of two."""
    inputs = cache_inputs(1, 64 * num_splits, SHAPE, copies=1, seed=0)[0]
    plan_for_cache(*inputs["paged"], cache_seqlens=inputs["lengths"], block_table=inputs["table"],
                   page_size=PAGE_SIZE, num_splits=num_splits, block_kv=64).run(*inputs["paged"])
    torch.cuda.synchronize()


def warm_triton_cache(batches, seq_kvs):
    """Compile every kernel the sweep launches (num_splits = 1, and each split count flash-attention's
    rule picks for it) in parallel processes (spawned: CUDA does not survive fork), so that the timed
    process loads them from Triton's cache."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    splits = {1} | {decode.make_launch(batch=b, seq_kv=n, page_size=PAGE_SIZE, gpu="H200", **SHAPE).num_splits
                    for b in batches for n in seq_kvs}
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        list(pool.map(_compile, sorted(splits)))


def rotated_inputs(batch, seq_kv, shape, seed):
    """cache_inputs with enough copies that the replayed sets exceed twice the L2 (one on CPU)."""
    kv_bytes = 2 * batch * seq_kv * shape["kv_heads"] * shape["head_dim"] * 2
    copies = max(1, math.ceil(2 * L2_BYTES / kv_bytes)) if DEVICE == "cuda" else 1
    return cache_inputs(batch, seq_kv, shape, copies, seed)


def sweep_args(doc, argv):
    """The launch sweeps' arguments (benchmarks/decode_tiles.py, decode_splits.py): --out, --max-minutes, --smoke."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-minutes", type=float, default=math.inf)
    ap.add_argument("--smoke", action="store_true")
    return ap.parse_args(argv)


def sweep_setup(doc, argv, smoke, full):
    """A launch sweep's (args, grid, shape): sweep_args's arguments, its grid (`smoke` with --smoke, else `full`) and
    the attention shape (SMOKE's with --smoke, else SHAPE)."""
    args = sweep_args(doc, argv)
    return args, smoke if args.smoke else full, SMOKE["shape"] if args.smoke else SHAPE


def sweep_cases(args, name, argv, cases, shape, rows_of, module=None, **extra):
    """The launch sweeps' loop (benchmarks/decode_splits.py, decode_rows.py): for each (batch, cache length) of cases,
    rotated inputs and rows_of(batch, seq_kv, sets)'s rows, NAME.json in --out rewritten after each, until
    --max-minutes; module: the benchmark's module where it is not NAME; extra: more top-level fields."""
    deadline = time.monotonic() + args.max_minutes * 60
    env = environment() | {"command": f"python -m benchmarks.{module or name} " + " ".join(argv or sys.argv[1:])}
    result, out = {"environment": env, **extra, "rows": []}, Path(args.out) / f"{name}.json"
    for batch, seq_kv in cases:
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes at batch {batch}, {seq_kv} tokens"
            break
        sets = rotated_inputs(batch, seq_kv, shape, seed=seq_kv)
        result["rows"] += rows_of(batch, seq_kv, sets)
        out.write_text(json.dumps(result, indent=1))
        del sets
    out.write_text(json.dumps(result, indent=1))


def cache_inputs(batch, seq_kv, shape, copies, seed):
    """`copies` independent input sets: q (B, H, 1, d); the paged cache (pages of PAGE_SIZE, each request's
    pages a random permutation) with its block table; and the same tokens laid out contiguously."""
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    pages = -(-seq_kv // PAGE_SIZE)
    out = []
    for _ in range(copies):
        q = torch.randn(batch, shape["heads"], 1, shape["head_dim"], generator=gen, device=DEVICE).half()
        table = torch.randperm(batch * pages, generator=gen, device=DEVICE).int().view(batch, pages)
        paged = [torch.randn(batch * pages, PAGE_SIZE, shape["kv_heads"], shape["head_dim"], generator=gen,
                             device=DEVICE).half() for _ in range(2)]
        # (B, pages, P, kv_heads, d) -> (B, kv_heads, L, d)
        flat = [x[table.long()].flatten(1, 2)[:, :seq_kv].transpose(1, 2).contiguous() for x in paged]
        lengths = torch.full((batch,), seq_kv, dtype=torch.int32, device=DEVICE)
        out.append(dict(q=q, paged=(q, *paged), contiguous=(q, *flat), table=table, lengths=lengths))
    return out


def providers(sets, shape):
    """name -> (fn() cycling through the input sets, num_splits or None, model_bytes)."""
    batch, seq_kv = sets[0]["q"].shape[0], int(sets[0]["lengths"][0])
    group = shape["heads"] // shape["kv_heads"]

    def ours(num_splits, paged=True):
        tensors = [s["paged"] if paged else s["contiguous"] for s in sets]
        plans = [plan_for_cache(*s["paged"], cache_seqlens=s["lengths"], block_table=s["table"], page_size=PAGE_SIZE,
                                num_splits=num_splits) if paged else
                 plan_for_cache(*s["contiguous"], cache_seqlens=s["lengths"], num_splits=num_splits) for s in sets]
        launch = plans[0].launch
        return (cycling([lambda p=p, t=t: p.run(*t) for p, t in zip(plans, tensors)]), launch.num_splits,
                _total(launch))

    def sdpa(backend):
        def call(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return cycling([lambda s=s: call(*s["contiguous"]) for s in sets]), None, model_bytes(batch, seq_kv, shape)

    def naive(q, k, v):
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, dim=-1) @ v

    out = {"split_kv": ours(None), "split_kv_1": ours(1), "split_kv_contiguous": ours(None, paged=False)}
    out |= {name: sdpa(backend) for name, backend in SDPA.items()}
    out["torch_naive"] = (cycling([lambda s=s: naive(*s["contiguous"]) for s in sets]), None,
                          model_bytes(batch, seq_kv, shape, grouped=False))
    return out


def model_bytes(batch, seq_kv, shape, grouped=True):
    return _total(decode.make_launch(batch=batch, seq_kv=seq_kv, num_splits=1, grouped=grouped, gpu="H200", **shape))


def _total(launch):
    return sum(r + w for r, w in decode.count(launch).values())


def reference(inputs):
    """float64 attention of request 0, every head, from the contiguous cache: (H, 1, d)."""
    q, k, v = (x[0].double() for x in inputs["contiguous"])
    group = q.shape[0] // k.shape[0]
    s = q.view(k.shape[0], group, -1) @ k.transpose(-1, -2) * q.shape[-1] ** -0.5  # (kv_heads, group, L)
    return (torch.softmax(s, dim=-1) @ v).view(q.shape)


def measure(fn, ref):
    """rel_err of the first call (input set 0) against its float64 reference; the GPU work's median time,
    replayed from a CUDA graph (benchmarks.bench.gpu_time: no Python launch time between the kernels,
    which at batch 1 is longer than the kernels), or wall-clock on CPU."""
    out = fn()
    got = out[0].double()
    rel_err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    timing = gpu_time(fn) if DEVICE == "cuda" else {"ms": median_ms(fn), "timing": "wall_clock"}
    return timing | {"rel_err": rel_err}


def run(out, deadline, shape, batches, seq_kvs):
    copy = copy_bytes_per_s(COPY_BYTES if DEVICE == "cuda" else 1 << 20)
    result = {"environment": environment(), "copy_bytes_per_s": copy, "page_size": PAGE_SIZE, "rows": []}
    todo = [(b, n) for b in batches for n in seq_kvs]
    for done, (batch, seq_kv) in enumerate(todo):
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes after {done} of {len(todo)} configurations"
            break
        result["rows"] += configuration(batch, seq_kv, shape, copy)
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    return result


def configuration(batch, seq_kv, shape, copy):
    """Every provider's row at one (batch, cache length)."""
    base = dict(batch=batch, seq_kv=seq_kv, **shape, dtype="fp16")
    kv_bytes = 2 * batch * seq_kv * shape["kv_heads"] * shape["head_dim"] * 2
    free = torch.cuda.mem_get_info()[0] if DEVICE == "cuda" else math.inf
    if 2.5 * kv_bytes > free:  # the paged and the contiguous copy, with room to spare
        return [base | {"provider": p, "error": f"skipped: the caches need {2 * kv_bytes:,} B, {free:,} B free"}
                for p in PROVIDERS]
    sets = rotated_inputs(batch, seq_kv, shape, seed=batch * seq_kv)
    ref = reference(sets[0])
    rows = []
    for name, (fn, num_splits, nbytes) in providers(sets, shape).items():
        row = base | {"provider": name, "page_size": PAGE_SIZE if name in PAGED else None,
                      "num_splits": num_splits, "model_bytes": nbytes}
        try:
            row |= measure(fn, ref)
            row["bytes_per_s"] = nbytes / (row["ms"] * 1e-3)
            row["copy_fraction"] = row["bytes_per_s"] / copy
        except torch.cuda.OutOfMemoryError:
            row["error"] = "OOM"
        except Exception as err:  # a backend that refuses the shape: record why, go on
            row["error"] = error_line(err, 200)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
        rows.append(row)
    return rows


def environment():
    on_gpu = DEVICE == "cuda"
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if on_gpu else None
    return dict(gpu=torch.cuda.get_device_name() if on_gpu else "cpu (interpreter)", driver=smi,
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda,
                date=datetime.date.today().isoformat(), command="python -m benchmarks.bench_decode " + " ".join(sys.argv[1:]))


def summary(rows):
    """The targets' ratios at batch 1, measured in this run: split_kv's copy fraction, its speed against the
    fastest SDPA backend (and split_kv_contiguous's, on SDPA's layout), and how much slower num_splits = 1 is."""
    out = []
    for seq_kv in sorted({r["seq_kv"] for r in rows if r["batch"] == 1}):
        cell = {r["provider"]: r for r in rows if r["batch"] == 1 and r["seq_kv"] == seq_kv and "ms" in r}
        if "split_kv" not in cell:
            continue
        sdpa = [cell[n]["ms"] for n in SDPA if n in cell]
        out.append(dict(seq_kv=seq_kv, copy_fraction=cell["split_kv"]["copy_fraction"],
                        vs_fastest_sdpa=min(sdpa) / cell["split_kv"]["ms"] if sdpa else None,
                        contiguous_vs_fastest_sdpa=min(sdpa) / cell["split_kv_contiguous"]["ms"]
                        if sdpa and "split_kv_contiguous" in cell else None,
                        unsplit_slowdown=cell["split_kv_1"]["ms"] / cell["split_kv"]["ms"] if "split_kv_1" in cell
                        else None))
    return out


def print_table(result):
    rows = result["rows"]
    print(f"copy bandwidth {result['copy_bytes_per_s'] / 1e12:.3f} TB/s; ms per call (error: first letters)")
    print(f"{'batch':>5} {'seq_kv':>7} " + " ".join(f"{p:>14s}" for p in PROVIDERS))
    for batch, seq_kv in sorted({(r["batch"], r["seq_kv"]) for r in rows}):
        cell = {r["provider"]: r for r in rows if (r["batch"], r["seq_kv"]) == (batch, seq_kv)}
        print(f"{batch:5d} {seq_kv:7d} " + " ".join(
            f"{cell[p]['ms']:14.4f}" if "ms" in cell.get(p, {}) else f"{cell.get(p, {}).get('error', '-')[:14]:>14s}"
            for p in PROVIDERS))
    print(f"\nbatch 1 {'seq_kv':>7} {'split_kv copy fraction':>22} {'x fastest SDPA':>14} {'contiguous x SDPA':>17} "
          f"{'num_splits=1 slowdown':>21}")
    for s in result["summary"]:
        cells = [s["copy_fraction"], s["vs_fastest_sdpa"], s["contiguous_vs_fastest_sdpa"], s["unsplit_slowdown"]]
        print(f"        {s['seq_kv']:7d} " + " ".join(f"{x:{w}.3f}" if x is not None else f"{'-':>{w}s}"
                                                   for x, w in zip(cells, (22, 14, 17, 21))))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_decode", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where the JSON goes (rewritten after every configuration)")
    ap.add_argument("--max-minutes", type=float, default=math.inf,
                    help="start no configuration after this many minutes (the run then ends within seconds)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU (TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    deadline = time.monotonic() + args.max_minutes * 60  # the compile warm-up included
    if args.smoke:
        shape, batches, seq_kvs = SMOKE["shape"], SMOKE["batches"], SMOKE["seq_kvs"]
    else:
        shape, batches, seq_kvs = SHAPE, BATCHES, SEQ_KVS
        warm_triton_cache(batches, seq_kvs)
    if os.environ.get("TRITON_INTERPRET") != "1" and DEVICE == "cpu":
        raise SystemExit("no GPU: run the smoke test with TRITON_INTERPRET=1 and --smoke")
    result = run(args.out, deadline, shape, batches, seq_kvs)
    result["summary"] = summary(result["rows"])
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

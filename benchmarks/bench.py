"""Time the project's kernels against what users would otherwise pick, on the GPU, in one run.

    python -m benchmarks.bench --out results/h200/bench.json          # the FlashAttention-2 sweep
    python -m benchmarks.bench --out x.json --shape 2,16,8192,128     # plus/only given shapes (B,H,N,d)

The charts: python -m gpusim_course.provenance.plots bench results/h200/bench.json (the course package draws them).

Every provider gets: the median time of its GPU work replayed from a CUDA graph (triton.testing.
do_bench_cudagraph; do_bench's CUDA events where a call cannot be captured, as the row's "timing" says), TFLOP/s
(4·B·H·N²·d, halved when causal), peak memory (torch.cuda.max_memory_allocated, inputs included), and
the relative error against float64 on the first and last query rows of one head. Out-of-memory is
recorded as such and the sweep goes on. Rows are written after every measurement.
"""
import argparse
import datetime
import json
import math
import subprocess
import sys
import time

SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
LONG_SEQS = (65536, 131072)  # flash-style providers only: the others need N x N matrices
# Beyond 32,768 tokens only the flash-style providers run: the others need N x N matrices, and flash1
# (one thread block per batch and head: 32 or 16 here) would take seconds per call.
FLASH_ONLY = ("flash2", "hopper", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn")
TOKENS, MODEL_DIM = 16384, 2048  # batch x seq and heads x head_dim, as in the FlashAttention-2 paper
ERROR_ROWS = 128  # reference rows at each end of the sequence, for the relative error


def error_line(err, width=300):
    """A caught error as a results row records it: its type and the first line of its message, cut at width
    characters (None: whole)."""
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0][:width] if text else ''}"


def tflops(batch, heads, seq, head_dim, causal, ms):
    return 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1) / (ms * 1e-3) / 1e12


def providers():
    """name -> fn(q, k, v, causal) for every provider this machine can run."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import gpusim_kernels

    def sdpa(backend):
        def run(q, k, v, causal):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    def torch_naive(q, k, v, causal):  # matmul, softmax, matmul: S and P in HBM
        s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    def ours(fn, algo):
        def run(q, k, v, causal):
            block_q, block_kv = blocks(algo, q, causal)
            return fn(q, k, v, causal=causal, block_q=block_q, block_kv=block_kv)
        return run

    out = {"naive": ours(gpusim_kernels.naive_attention, "naive"), "flash1": ours(gpusim_kernels.flash1_attention, "flash1"),
           "flash2": ours(gpusim_kernels.flash2_attention, "flash2"), "torch_naive": torch_naive,
           "sdpa_math": sdpa(SDPBackend.MATH), "sdpa_flash": sdpa(SDPBackend.FLASH_ATTENTION),
           "sdpa_efficient": sdpa(SDPBackend.EFFICIENT_ATTENTION), "sdpa_cudnn": sdpa(SDPBackend.CUDNN_ATTENTION)}
    if torch.cuda.get_device_capability()[0] == 9:
        out["hopper"] = lambda q, k, v, causal: gpusim_kernels.hopper_attention(q, k, v, causal=causal)
    return out


def fp8_inputs(q, k, v):
    """The Hopper kernel's fp8 inputs (e4m3, one scale per tensor, V stored K-major) and its fp8 call."""
    from gpusim_kernels.hopper import hopper_attention, to_fp8
    (q8, qs), (k8, ks), (v8, vs) = to_fp8(q), to_fp8(k), to_fp8(v, k_major=True)
    return (q8, k8, v8), lambda q, k, v, causal: hopper_attention(q, k, v, causal=causal, fp8_scale=(qs, ks, vs))


def blocks(algo, q, causal):
    """The tiles the project's teaching kernels run with by default: the fastest gpusim predicts for this
    shape on this GPU (gpusim.best_blocks, as the kernels pick them themselves)."""
    import gpusim
    from gpusim_kernels.launch import DTYPES, detect_gpu
    batch, heads, seq, head_dim = q.shape
    return gpusim.best_blocks(algo, seq=seq, head_dim=head_dim, heads=heads, batch=batch, causal=causal,
                              dtype=DTYPES[q.dtype], gpu=detect_gpu(q.device))


def reference_rows(q, k, v, causal):
    """float64 attention for the first and last ERROR_ROWS query rows of batch 0, head 0."""
    import torch
    n = q.shape[2]
    rows = torch.arange(n, device=q.device)
    rows = rows if n <= 2 * ERROR_ROWS else torch.cat([rows[:ERROR_ROWS], rows[-ERROR_ROWS:]])
    q64, k64, v64 = q[0, 0, rows].double(), k[0, 0].double(), v[0, 0].double()
    s = q64 @ k64.T * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.arange(k.shape[2], device=q.device)[None, :] > rows[:, None], float("-inf"))
    return rows, torch.softmax(s, dim=-1) @ v64


def measure(fn, inputs, causal, ref):
    """Time, peak memory (the inputs plus everything the call allocates) and error of fn(*inputs, causal)."""
    import torch
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn(*inputs, causal)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before + sum(x.nbytes for x in inputs)
    rows, expected = ref
    got = out[0, 0, rows].double()
    rel_err = float(torch.linalg.norm(got - expected) / torch.linalg.norm(expected))
    del out
    return {**gpu_time(lambda: fn(*inputs, causal)), "peak_bytes": peak, "rel_err": rel_err}


def cycling(calls):
    """fn() running the next of calls each time, in turn (the first call runs calls[0]): inputs copied enough
    times to exceed the L2, so that each timed call reads its operands from DRAM."""
    state = {"i": len(calls) - 1}

    def fn():
        state["i"] = (state["i"] + 1) % len(calls)
        return calls[state["i"]]()
    return fn


def gpu_time(call, rep=100, warmup=25):
    """{"ms", "timing"}: the median time of the call's GPU work, replayed from a CUDA graph (no Python between
    launches: what gpusim predicts, whatever the host's speed), or timed with events around each call when
    the call cannot be captured. rep, warmup: do_bench's milliseconds (warmup only for the events)."""
    from triton.testing import do_bench, do_bench_cudagraph
    try:
        return {"ms": do_bench_cudagraph(call, rep=rep, return_mode="median"), "timing": "cuda_graph"}
    except Exception:  # noqa: BLE001 - a provider that cannot be captured is timed call by call
        return {"ms": do_bench(call, warmup=warmup, rep=rep, return_mode="median"), "timing": "events"}


def configs(shapes, dtypes, sweep=True, head_dims=(64, 128), causals=(False, True)):
    """(batch, heads, seq, head_dim, causal, dtype, flash_only) in the order they are measured."""
    for dtype in dtypes if sweep else ():
        for head_dim in head_dims:
            for causal in causals:
                for seq in SEQS + LONG_SEQS:
                    batch, heads = max(1, TOKENS // seq), MODEL_DIM // head_dim
                    yield batch, heads, seq, head_dim, causal, dtype, seq in LONG_SEQS
    for batch, heads, seq, head_dim in shapes:
        for causal in (False, True):
            yield batch, heads, seq, head_dim, causal, dtypes[0], False


def environment(command):
    import torch
    import triton
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return {"gpu": torch.cuda.get_device_name(), "driver": smi.split(", ")[-1], "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda, "date": datetime.date.today().isoformat(),
            "command": command}


def run(args):
    import torch

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape]
    causals = {"both": (False, True), "no": (False,), "yes": (True,)}[args.causal]
    todo = list(configs(shapes, args.dtypes.split(","), sweep=not args.only_shapes,
                        head_dims=tuple(int(d) for d in args.head_dims.split(",")), causals=causals))
    table = {name: fn for name, fn in providers().items() if name not in args.without.split(",")}
    result = {"environment": environment("python -m benchmarks.bench " + " ".join(sys.argv[1:])), "rows": []}
    deadline = time.monotonic() + args.max_minutes * 60
    for done, (batch, heads, seq, head_dim, causal, dtype, long_only) in enumerate(todo):
        print(f"configuration {done + 1} of {len(todo)}", file=sys.stderr, flush=True)  # progress, no dependency
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes {args.max_minutes} after {done} of " \
                                                 f"{len(todo)} configurations"
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
            break
        gen = torch.Generator(device="cuda").manual_seed(seq + head_dim)
        q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", generator=gen).to(dtypes[dtype])
                   for _ in range(3))
        ref = reference_rows(q, k, v, causal)
        calls = [(name, dtype, fn, (q, k, v)) for name, fn in table.items() if not long_only or name in FLASH_ONLY]
        if "hopper" in table and dtype == "fp16":
            fp8, fn = fp8_inputs(q, k, v)
            calls.append(("hopper", "fp8", fn, fp8))
        for name, row_dtype, fn, inputs in calls:
            row = {"provider": name, "dtype": row_dtype, "head_dim": head_dim, "causal": causal, "seq": seq,
                   "batch": batch, "heads": heads}
            if name in ("naive", "flash1", "flash2"):
                row["block_q"], row["block_kv"] = blocks(name, inputs[0], causal)
            if name == "hopper":  # its launch table's tiles, not best_blocks
                from gpusim.passes.hopper import HOPPER
                row["block_q"], row["block_kv"] = HOPPER.kernel_blocks(head_dim, row_dtype, causal)
            try:
                row |= measure(fn, inputs, causal, ref)
                row["tflops"] = tflops(batch, heads, seq, head_dim, causal, row["ms"])
            except torch.cuda.OutOfMemoryError:
                row["error"] = "OOM"
            except Exception as err:  # a backend that refuses a shape: record why, go on
                row["error"] = error_line(err, 200)
            torch.cuda.empty_cache()
            result["rows"].append(row)
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
        del q, k, v, ref, calls
    print_table(result["rows"])


ORDER = ("naive", "torch_naive", "sdpa_math", "flash1", "flash2", "hopper", "sdpa_flash", "sdpa_efficient",
         "sdpa_cudnn")


def print_table(rows):
    """TFLOP/s per provider, one line per (dtype, head_dim, causal, seq); an error where there is one."""
    names = [n for n in ORDER if any(r["provider"] == n for r in rows)]
    print("dtype d causal seq " + " ".join(f"{n:>14s}" for n in names))
    keys = sorted({(r["dtype"], r["head_dim"], r["causal"], r["seq"]) for r in rows})
    for dtype, d, causal, seq in keys:
        cells = {r["provider"]: r for r in rows if (r["dtype"], r["head_dim"], r["causal"], r["seq"]) ==
                 (dtype, d, causal, seq)}
        line = " ".join(f"{cells[n].get('tflops', 0):14.1f}" if "tflops" in cells.get(n, {}) else
                        f"{cells[n]['error'][:14] if n in cells else '-':>14s}" for n in names)
        print(f"{dtype} {d:3d} {int(causal)} {seq:6d} {line}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where the JSON goes (rewritten after every row)")
    ap.add_argument("--shape", action="append", default=[], help="B,H,N,d to measure too (repeatable)")
    ap.add_argument("--only-shapes", action="store_true", help="measure only the --shape shapes")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--head-dims", default="64,128", help="the sweep's head dims (comma-separated)")
    ap.add_argument("--without", default="", help="providers not to measure (comma-separated)")
    ap.add_argument("--causal", choices=("both", "no", "yes"), default="both", help="the sweep's masks")
    ap.add_argument("--max-minutes", type=float, default=math.inf, help="stop starting new configurations after")
    args = ap.parse_args(argv)
    run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

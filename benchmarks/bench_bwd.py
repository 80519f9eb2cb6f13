"""Time attention's backward pass against what users would otherwise pick, on the GPU, in one run.

    python -m benchmarks.bench_bwd --out $OUT/bench_bwd.json --max-minutes 3      # from the repository root
    TRITON_INTERPRET=1 python -m benchmarks.bench_bwd --smoke --out /tmp/bench_bwd.json   # CPU, one tiny size
    python -m benchmarks.bench_bwd --out $OUT/bench_bwd_naive.json --providers naive     # some providers only

The FlashAttention-2 paper's sweep (16K tokens: batch = 16384 // N; hidden 2048: heads = 2048 // d; d 64
and 128; causal or not; N 512 to 16K), fp16. Providers: the project's flash2 backward (its tiles picked
first by timing a few at N = 4096), the project's naive attention (three kernels each way, P saved; both
passes on gpusim.backward's default tiles), SDPA's flash, efficient and cuDNN backends, and torch naive
(matmul, softmax, matmul under autograd). Passes: "bwd" runs the forward once, then times
torch.autograd.grad(out, (q, k, v), do, retain_graph=True) alone; "fwd+bwd" times the forward and that
grad together. Every row: the median of CUDA-event timings (triton.testing.do_bench, modest warm-up and
repetition), TFLOP/s under the FlashAttention-2 convention (backward 2.5 times the forward's
4·B·H·N²·d, fwd+bwd 3.5 times; halved when causal), and peak_bytes: torch.cuda.max_memory_allocated
during the pass over what was allocated before the inputs (inputs, do, the forward's saved tensors and
the gradients included). The project's kernels' rows also carry their tiles and gpusim.backward's predicted
peak. Triton's cache is warmed first in a process pool; rows are written after every configuration; a short
table comes last.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from benchmarks.bench import error_line

SEQS = (512, 1024, 2048, 4096, 8192, 16384)
TOKENS, MODEL_DIM = 16384, 2048  # batch x seq and heads x head_dim, as in the FlashAttention-2 paper
SMOKE = dict(seqs=(32,), tokens=64, model_dim=32, head_dims=(16,))  # CPU: the interpreter, one tiny size
CANDIDATES = ((128, 32), (64, 32), (128, 64), (64, 64))  # flash2's backward tiles (Br held, Bc streamed)
TUNE_SEQ = 4096
WARMUP_MS, REP_MS = 10, 40


def providers():
    """name -> fn(q, k, v, causal, blocks) returning the attention output, differentiable."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from gpusim_kernels import flash2_attention_trainable, naive_attention_trainable

    def sdpa(backend):
        def run(q, k, v, causal, blocks):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    def torch_naive(q, k, v, causal, blocks):
        s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    def flash2(q, k, v, causal, blocks):
        return flash2_attention_trainable(q, k, v, causal=causal, backward_blocks=blocks)

    def naive(q, k, v, causal, blocks):
        return naive_attention_trainable(q, k, v, causal=causal, block_q=blocks[0], block_kv=blocks[1])

    return {"flash2": flash2, "naive": naive, "sdpa_flash": sdpa(SDPBackend.FLASH_ATTENTION),
            "sdpa_efficient": sdpa(SDPBackend.EFFICIENT_ATTENTION), "sdpa_cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
            "torch_naive": torch_naive}


def tflops(batch, heads, seq, head_dim, causal, ms, pass_):
    from gpusim.backward import nominal_flops
    flops = nominal_flops(batch, heads, seq, head_dim, causal) * (3.5 / 2.5 if pass_ == "fwd+bwd" else 1)
    return flops / (ms * 1e-3) / 1e12


def tensors(shape, device, seed):
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    q, k, v, do = (torch.randn(shape, device=device, generator=gen).half() for _ in range(4))
    return q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), do


def timer(fn, device):
    """Median milliseconds: CUDA events (do_bench) on the GPU; on CPU (a smoke run of the interpreter) the wall
    clock of one call."""
    if device == "cuda":
        from triton.testing import do_bench
        return do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def measure(fn, shape, causal, blocks, pass_, device):
    """ms and peak_bytes of one pass on fresh inputs of `shape`: the allocator's peak during the pass over
    what was allocated before the inputs were made."""
    import torch
    base = torch.cuda.memory_allocated() if device == "cuda" else 0
    q, k, v, do = tensors(shape, device, shape[2])
    if pass_ == "bwd":
        out = fn(q, k, v, causal, blocks)
        call = lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)  # noqa: E731
    else:
        call = lambda: torch.autograd.grad(fn(q, k, v, causal, blocks), (q, k, v), do)  # noqa: E731
    peak = None
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        call()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    return {"ms": timer(call, device), "peak_bytes": peak}


def warm(task):
    """Compile flash2's forward and backward for one (head_dim, causal, tiles) in a worker process."""
    head_dim, causal, blocks = task
    from gpusim_kernels import flash2_attention_trainable
    q, k, v, do = tensors((1, 1, 256, head_dim), "cuda", 0)
    flash2_attention_trainable(q, k, v, causal=causal, backward_blocks=blocks).backward(do)
    return task


def warm_cache(head_dims, candidates):
    tasks = [(d, causal, blocks) for d in head_dims for causal in (False, True) for blocks in candidates]
    with ProcessPoolExecutor(min(len(tasks), os.cpu_count() or 1), mp_context=get_context("spawn")) as pool:
        list(pool.map(warm, tasks))


def pick_blocks(fn, head_dim, causal, device, seq, tokens, model_dim, candidates):
    """flash2's backward tiles: the fastest "bwd" of the candidates at one sequence length."""
    import torch
    shape = (max(1, tokens // seq), model_dim // head_dim, seq, head_dim)
    timings = {}
    for blocks in candidates:
        try:
            timings[blocks] = measure(fn, shape, causal, blocks, "bwd", device)["ms"]
        except Exception as err:  # a tile that does not fit this GPU: skip it
            print(f"tiles {blocks}: {error_line(err, 120)}", file=sys.stderr)
        if device == "cuda":
            torch.cuda.empty_cache()
    return min(timings, key=timings.get), {f"{bq}x{bk}": ms for (bq, bk), ms in timings.items()}


def configs(seqs, tokens, model_dim, head_dims=(64, 128)):
    for head_dim in head_dims:
        for causal in (False, True):
            for seq in seqs:
                yield max(1, tokens // seq), model_dim // head_dim, seq, head_dim, causal


def backward_config(algo, batch, heads, seq, head_dim, causal, blocks, device):
    """gpusim.backward's configuration of a row, on the preset the kernels pick on this device (detect_gpu's: the
    H200's or the H100's measured one on those GPUs; the runs before the sixty-ninth session took H200-measured on
    any GPU, and all of them ran on the H200)."""
    import torch
    from gpusim import backward
    from gpusim_kernels.launch import detect_gpu
    return backward.config(algo, batch=batch, heads=heads, seq=seq, head_dim=head_dim, causal=causal,
                           block_q=blocks and blocks[0], block_kv=blocks and blocks[1],
                           gpu=detect_gpu(torch.device(device)))


def environment(command, device):
    import torch
    import triton
    env = {"torch": torch.__version__, "triton": triton.__version__, "date": datetime.date.today().isoformat(),
           "command": command, "device": device}
    if device == "cuda":
        env |= {"gpu": torch.cuda.get_device_name(), "cuda": torch.version.cuda}
    return env


def run(args):
    import torch

    from gpusim import backward
    device = "cpu" if args.smoke else "cuda"
    sizes = SMOKE if args.smoke else dict(seqs=SEQS, tokens=TOKENS, model_dim=MODEL_DIM, head_dims=(64, 128))
    deadline = time.monotonic() + args.max_minutes * 60
    candidates = CANDIDATES[:1] if args.smoke else CANDIDATES
    if device == "cuda":
        warm_cache(sizes["head_dims"], candidates)
    table = {name: fn for name, fn in providers().items() if args.providers is None or name in args.providers}
    result = {"environment": environment("python -m benchmarks.bench_bwd " + " ".join(sys.argv[1:]), device),
              "tuning": [], "rows": []}
    chosen = {}
    for head_dim in sizes["head_dims"] if "flash2" in table else ():
        for causal in (False, True):
            seq = min(TUNE_SEQ, max(sizes["seqs"]))
            chosen[head_dim, causal], timings = pick_blocks(table["flash2"], head_dim, causal, device, seq,
                                                            sizes["tokens"], sizes["model_dim"], candidates)
            result["tuning"].append({"head_dim": head_dim, "causal": causal, "seq": seq, "ms": timings,
                                     "chosen": list(chosen[head_dim, causal])})
    todo = list(configs(**sizes))
    for done, (batch, heads, seq, head_dim, causal) in enumerate(todo):
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes {args.max_minutes} after {done} of " \
                                                 f"{len(todo)} configurations"
            break
        for name, fn in table.items():
            blocks = chosen.get((head_dim, causal)) if name == "flash2" else None
            if name in ("flash2", "naive"):
                cfg = backward_config(name, batch, heads, seq, head_dim, causal, blocks, device)
                blocks = cfg.block_q, cfg.block_kv
            for pass_ in ("bwd", "fwd+bwd"):
                row = {"provider": name, "pass": pass_, "dtype": "fp16", "head_dim": head_dim, "causal": causal,
                       "seq": seq, "batch": batch, "heads": heads}
                if name in ("flash2", "naive"):
                    row |= {"block_q": blocks[0], "block_kv": blocks[1], "predicted_peak_bytes": backward.peak_bytes(cfg)}
                try:
                    row |= measure(fn, (batch, heads, seq, head_dim), causal, blocks, pass_, device)
                    row["tflops"] = tflops(batch, heads, seq, head_dim, causal, row["ms"], pass_)
                except torch.cuda.OutOfMemoryError:
                    row["error"] = "OOM"
                except Exception as err:  # a backend that refuses a shape: record why, go on
                    row["error"] = error_line(err, 200)
                if device == "cuda":
                    torch.cuda.empty_cache()
                result["rows"].append(row)
        Path(args.out).write_text(json.dumps(result, indent=1))
    Path(args.out).write_text(json.dumps(result, indent=1))
    print_table(result["rows"])
    return result


ORDER = ("torch_naive", "naive", "flash2", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn")


def print_table(rows):
    """TFLOP/s per provider, one line per (pass, head_dim, causal, seq), and flash2 over sdpa_flash."""
    print("pass    d causal   seq " + " ".join(f"{n:>14s}" for n in ORDER) + "  flash2/sdpa_flash")
    keys = sorted({(r["pass"], r["head_dim"], r["causal"], r["seq"]) for r in rows})
    for key in keys:
        cells = {r["provider"]: r for r in rows if (r["pass"], r["head_dim"], r["causal"], r["seq"]) == key}
        line = " ".join(f"{cells[n]['tflops']:14.1f}" if "tflops" in cells.get(n, {}) else
                        f"{cells[n]['error'][:14] if n in cells else '-':>14s}" for n in ORDER)
        ratio = (cells["sdpa_flash"]["ms"] / cells["flash2"]["ms"]
                 if all("ms" in cells.get(n, {}) for n in ("flash2", "sdpa_flash")) else math.nan)
        print(f"{key[0]:7s} {key[1]:3d} {int(key[2]):6d} {key[3]:5d} {line}  {ratio:17.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_bwd", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where the JSON goes (rewritten after every configuration)")
    ap.add_argument("--max-minutes", type=float, default=math.inf, help="stop starting new configurations after")
    ap.add_argument("--smoke", action="store_true", help="CPU, Triton's interpreter, one tiny size")
    ap.add_argument("--providers", type=lambda s: s.split(","), help="comma-separated providers to time (all if "
                    "left out): " + ", ".join(ORDER))
    run(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

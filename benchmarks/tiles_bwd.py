"""flash2's training step at four backward tiles, against SDPA's flash backend, on 16 groups of shapes.

    python -m benchmarks.tiles_bwd --out DIR [--max-minutes 2]     # on the GPU: DIR/tiles_bwd.json
    TRITON_INTERPRET=1 python -m benchmarks.tiles_bwd --out DIR --smoke   # CPU: one tiny group

Groups: d 64 and 128 x causal or not x fp16 and bf16, each at two (N, batch x heads) of N 1K-16K and
batch x heads 16-512 (16 heads). Rows: provider "flash2" (gpusim_kernels.flash2_attention_trainable, the
forward at its default tiles, the backward at block_q x block_kv: (64, 64), (128, 64), (128, 32), (64, 32), and the
group's pick where it is none of them; "pick": true on gpusim.best_blocks(..., backward=True)'s tiles, the ones
the trainable kernels run by default) and "sdpa_flash" (SDPA forced to
its flash backend; block_q, block_kv None). ms: one training step, forward + o.backward(do), the median of
triton.testing.do_bench (CUDA events) with the grads set to None before each call. Triton's cache is warmed
first in a process pool (one task per dtype, d, causal and tile), so compiling is not timed.
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait
from multiprocessing import get_context

from benchmarks.bench import error_line

TILES = ((64, 64), (128, 64), (128, 32), (64, 32))
HEADS = 16
# (seq, batch x heads): two per (d, causal, dtype), spanning N 1K-16K and batch x heads 16-512
SIZES = {0: ((1024, 512), (8192, 32)), 1: ((2048, 128), (16384, 16)), 2: ((4096, 64), (1024, 256)),
         3: ((16384, 16), (2048, 256))}
SMOKE_GROUPS = [dict(dtype="fp16", head_dim=64, causal=True, seq=48, batch=1, heads=2)]


def groups():
    out, i = [], 0
    for head_dim in (64, 128):
        for causal in (False, True):
            for dtype in ("fp16", "bf16"):
                for seq, bh in SIZES[i % 4]:
                    out.append(dict(dtype=dtype, head_dim=head_dim, causal=causal, seq=seq, batch=bh // HEADS,
                                    heads=HEADS))
                i += 1
    return out


def preset(device):
    """The preset whose best_blocks the trainable kernels take on this device (its own where gpusim has one; the
    H200's runs before this named none and took H200-measured); A100-40GB on CPU, as the kernels do."""
    if device != "cuda":
        return "A100-40GB"
    import torch

    from gpusim.hardware import device_preset
    return device_preset(torch.cuda.get_device_name()) or "H200-measured"


def picked(g, gpu):
    """gpusim.best_blocks(..., backward=True) for group g: the backward tiles the trainable kernels run."""
    import gpusim
    return tuple(gpusim.best_blocks("flash2", seq=g["seq"], head_dim=g["head_dim"], heads=g["heads"], batch=g["batch"],
                                    causal=g["causal"], dtype=g["dtype"], gpu=gpu, backward=True))


def tiles_of(g, gpu, pick=None):
    """TILES, and the group's pick (picked(g, gpu) unless given) after them where it is none of them."""
    pick = pick or picked(g, gpu)
    return TILES + ((pick,) if pick not in TILES else ())


def _tensors(g, device):
    import torch
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[g["dtype"]]
    gen = torch.Generator(device=device).manual_seed(g["seq"])
    shape = (g["batch"], g["heads"], g["seq"], g["head_dim"])
    q, k, v, do = (torch.randn(shape, device=device, generator=gen).to(dt) for _ in range(4))
    return q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), do


def _step(provider, tiles, q, k, v, do, causal):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from gpusim_kernels import flash2_attention_trainable
    if provider == "sdpa_flash":
        def step():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(do)
    else:
        def step():
            flash2_attention_trainable(q, k, v, causal=causal, backward_blocks=tiles).backward(do)
    return step


def warm(task):
    """Compile the forward and one backward tile for (dtype, d, causal) in a worker (N = 256: the same
    divisibility specialisation as every N here)."""
    dtype, head_dim, causal, tiles = task
    q, k, v, do = _tensors(dict(dtype=dtype, head_dim=head_dim, causal=causal, seq=256, batch=1, heads=2), "cuda")
    _step("flash2", tiles, q, k, v, do, causal)()
    return task


def warm_cache(todo, limit_s, gpu):
    tasks = sorted({(g["dtype"], g["head_dim"], g["causal"], t) for g in todo for t in tiles_of(g, gpu)})
    pool = ProcessPoolExecutor(min(len(tasks), os.cpu_count() or 1), mp_context=get_context("spawn"))
    futures = [pool.submit(warm, t) for t in tasks]
    done, _ = wait(futures, timeout=limit_s)
    failed = [str(f.exception())[:200] for f in done if f.exception()]
    pool.shutdown(wait=False, cancel_futures=True)
    return {"tasks": len(tasks), "done": len(done), "failed": failed}


def environment(command, device):
    if device == "cuda":
        from benchmarks.run_env import environment as env
        return env(command)
    return {"gpu": None, "command": command, "smoke": True}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes tiles_bwd.json")
    ap.add_argument("--max-minutes", type=float, default=2.0)
    ap.add_argument("--smoke", action="store_true", help="CPU (TRITON_INTERPRET=1): one tiny group")
    args = ap.parse_args(argv)
    import torch
    import triton
    device = "cpu" if args.smoke else "cuda"
    deadline = time.monotonic() + args.max_minutes * 60
    todo = SMOKE_GROUPS if args.smoke else groups()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tiles_bwd.json")
    result = {"environment": environment("python -m benchmarks.tiles_bwd " + " ".join(sys.argv[1:]), device),
              "tiles": [list(t) for t in TILES], "rows": []}
    result["environment"]["preset"] = preset(device)  # the picks' preset: the one the device's kernels take
    if device == "cuda":
        t0 = time.monotonic()
        result["environment"]["warm"] = warm_cache(todo, max(10.0, args.max_minutes * 60 * 0.35),
                                                   result["environment"]["preset"])
        result["environment"]["warm"]["s"] = round(time.monotonic() - t0, 1)
        print("warm:", result["environment"]["warm"], flush=True)
    for gi, g in enumerate(todo):
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes after {gi} of {len(todo)} groups"
            break
        gpu = result["environment"]["preset"]
        try:
            q, k, v, do = _tensors(g, device)
        except Exception as err:  # noqa: BLE001
            result["rows"].append(dict(g, provider="flash2", error=f"{type(err).__name__}: {err}"[:300]))
            continue
        pick = picked(g, gpu)
        for provider, tiles in [("flash2", t) for t in tiles_of(g, gpu, pick)] + [("sdpa_flash", None)]:
            row = dict(provider=provider, **g, block_q=tiles and tiles[0], block_kv=tiles and tiles[1])
            if tiles:
                row["pick"] = tiles == pick
            try:
                step = _step(provider, tiles, q, k, v, do, g["causal"])
                step()
                if device == "cuda":
                    row["ms"] = triton.testing.do_bench(step, warmup=10, rep=40, grad_to_none=[q, k, v],
                                                        return_mode="median")
                else:
                    t1 = time.perf_counter()
                    step()
                    row["ms"] = (time.perf_counter() - t1) * 1e3
            except torch.cuda.OutOfMemoryError:
                row["error"] = "OOM"
            except Exception as err:  # noqa: BLE001 - record it, go on
                row["error"] = error_line(err)
            q.grad = k.grad = v.grad = None
            result["rows"].append(row)
            print(f"{g['dtype']} d{g['head_dim']} {'c' if g['causal'] else '-'} N{g['seq']} b{g['batch']}x{g['heads']} "
                  f"{provider} {tiles}: {row.get('ms', row.get('error'))}", flush=True)
        del q, k, v, do
        if device == "cuda":
            torch.cuda.empty_cache()
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"tiles_bwd: {sum('ms' in r for r in result['rows'])} of {len(result['rows'])} rows timed -> {path}")


if __name__ == "__main__":
    main()

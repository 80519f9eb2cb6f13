"""Where the host's time goes, part by part, beside SDPA's per-call cost: a DecodePlan.run's on the Llama-3-8B
decode shape (32 query heads, 8 K/V heads, d 128, pages of 16), batch 1 at 1K and 4K cached tokens; with
--train, a training step's (benchmarks/host.py's flash2_train_step: flash2_attention_trainable, .sum(),
.backward(), grads set to None) on host.py's shapes, fp16.

    python -m benchmarks.host_parts --out DIR                  # on the GPU: DIR/host_parts.json
    python -m benchmarks.host_parts --train --out DIR          # on the GPU: DIR/host_parts_train.json
    python -m benchmarks.host_parts --train --no-launch --out DIR    # the same, every kernel launch a no-op
    TRITON_INTERPRET=1 python -m benchmarks.host_parts --train --smoke --out DIR    # CPU: the code paths

Each part is called CALLS times in a loop and timed on the host (time.perf_counter), the GPU synchronised
only before and after: µs per call of the host's work (the GPU's kernels run behind it). The training step's
parts give both the host's µs and the wall µs (the GPU's work waited for at the end); --no-launch (CPU or GPU)
leaves only the Python, allocations and autograd around the kernels.
"""
import argparse
import gc
import json
import os
import statistics
import threading
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks.run_env import environment
from benchmarks.serving import SHAPE, Cache
import gpusim_kernels
from gpusim_kernels import backward, decode, flash2
from gpusim_kernels.launch import launch_key

CALLS = 2000
TRAIN_SHAPES = ((1, 4, 256, 64), (1, 8, 128, 64), (2, 4, 512, 128))  # benchmarks/host.py's, fp16
SMOKE_SHAPE = (1, 2, 32, 64)


def per_call_us(fn):
    """A decode part's host µs per call: timed()'s host time over CALLS calls after 20 warm-up ones."""
    return timed(fn, CALLS, torch.cuda.synchronize, warmup=20)[0]


def parts(batch, length):
    cache = Cache(batch, length + 64, SHAPE, torch.device("cuda"))
    plan = cache.plan(length)
    q, k, v, table, lengths = cache.q, cache.k, cache.v, cache.table, plan.cache_seqlens
    L = plan._launch
    args = (table, lengths, L.head_dim**-0.5, table.shape[-1], 0, L.num_splits)
    split_args = (q, k, v, plan.o_partial, plan.lse_partial, *args)
    consts = plan._constants("split_kv", plan.pdl, {})
    kernel = decode.split_kv_kernel if L.num_splits > 1 else decode.decode_kernel
    grid = plan.grids[0]
    decode.launch(kernel, grid, *split_args, **consts)
    runner, constexprs, _ = next(v for k_, v in decode_direct().items() if k_[0] is kernel)
    k_flat = cache.k_flat[:, :, :length]
    v_flat = cache.v_flat[:, :, :length]

    def sdpa():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k_flat, v_flat, enable_gqa=True)
    return {"batch": batch, "seq_kv": length, "num_splits": L.num_splits,
            "run": per_call_us(lambda: plan.run(q, k, v, table)),
            "check": per_call_us(lambda: plan._check(q, k, v, table, lengths)),
            "two_empties": per_call_us(lambda: (torch.empty_like(q), torch.empty(plan.q_shape[:3], dtype=torch.float32,
                                                                                    device=plan.device))),
            "launch_key": per_call_us(lambda: launch_key(kernel, grid, split_args, consts)),
            "runner": per_call_us(lambda: runner(*split_args, *constexprs)),
            "launch": per_call_us(lambda: decode.launch(kernel, grid, *split_args, **consts)),
            "jit_launch": per_call_us(lambda: kernel[grid](*split_args, **consts)),
            "sdpa_flash": per_call_us(sdpa),
            "sdpa_flash_synced": per_call_us(lambda: (sdpa(), torch.cuda.synchronize())),
            "run_synced": per_call_us(lambda: (plan.run(q, k, v, table), torch.cuda.synchronize()))}




def timed(fn, calls, sync, warmup=None):
    """(host µs, wall µs) per call of fn over calls calls after warmup warm-up ones (calls // 10 + 1 if None):
    the host's time to issue them, and with the GPU's work waited for."""
    for _ in range(calls // 10 + 1 if warmup is None else warmup):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - start
    sync()
    wall = time.perf_counter() - start
    return round(host * 1e6 / calls, 2), round(wall * 1e6 / calls, 2)


class Nothing(torch.autograd.Function):
    """An autograd.Function with attention's signature that launches nothing: the Python Function, autograd's
    engine and the four outputs' allocations alone."""

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return torch.empty_like(q)

    @staticmethod
    def backward(ctx, do):
        return tuple(torch.empty_like(x) for x in ctx.saved_tensors)


def recorded_launches(q, k, v, o, lse, do):
    """{kernel name: (kernel, grid, args, kwargs)} of one flash2_attention_backward's three launches (as
    launch_kept is given them: kept launches no longer pass through backward.launch)."""
    calls = {}
    original = backward.launch_kept

    def record(launched, group, launch_each):
        for kernel, name, args in group:
            calls[name] = (kernel, launched.grids[name], args, launched.constants[name])
        return original(launched, group, launch_each)
    backward.launch_kept = record
    try:
        backward.flash2_attention_backward(q, k, v, o, lse, do)
    finally:
        backward.launch_kept = original
    return calls


def train_parts(shape, device, calls, sync, launches):
    """One training step's host time on q, k, v of shape (fp16), part by part: the step, SDPA's and a Function
    that launches nothing; the forward; the backward alone on the gradient .sum() passes (a stride-0 view)
    and its pieces (the cached launch's look-up, the gradient's copy, the four allocations, each launch)."""
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(shape, device=device, generator=gen).half().requires_grad_() for _ in range(3))
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    o, lse = gpusim_kernels.flash2_attention(qd, kd, vd, return_lse=True)
    do = torch.ones((), dtype=o.dtype, device=device).expand(o.shape)  # .sum()'s gradient
    tensors = dict(q=qd, k=kd, v=vd, do=do, o=o, lse=lse)
    row = dict(batch=shape[0], heads=shape[1], seq=shape[2], head_dim=shape[3], launches=launches)
    steps = step_parts(q, k, v, device)
    for name, fn in steps.items():
        row[name], row[name + "_wall"] = timed(fn, calls, sync)
    row["gc_collections"] = gc_collections_per_call(steps["step"], calls)
    row.update(handoffs(q, k, v, calls))
    parts = {"forward_no_grad": lambda: gpusim_kernels.flash2_attention(qd, kd, vd, return_lse=True),
             "sum": lambda: o.sum(),
             "backward": lambda: backward.flash2_attention_backward(qd, kd, vd, o, lse, do),
             "backward_launch": lambda: backward.backward_launch("flash2", tensors, False, None, None, None, None,
                                                                  backward._parts),
             "do_contiguous": lambda: do.contiguous(),
             "four_empties": lambda: (torch.empty_like(lse), torch.empty_like(kd), torch.empty_like(vd),
                                      torch.empty_like(qd))}
    for name, (kernel, grid, args, kwargs) in recorded_launches(qd, kd, vd, o, lse, do).items():
        parts[f"launch_{name}"] = lambda f=kernel, g=grid, a=args, kw=kwargs: backward.launch(f, g, *a, **kw)
        row[f"direct_{name}"] = launches == "compiled" and launch_key(kernel, grid, args, kwargs) in decode_direct()
    for name, fn in parts.items():
        row[name] = timed(fn, calls, sync)[0]
    return row


def step_parts(q, k, v, device):
    """{name: fn}: the training step, SDPA's (its flash backend on a GPU), Nothing's, each also with autograd's
    backward run on the calling thread (_one_thread), and the forward alone."""
    def step(attention):
        def fn():
            q.grad = k.grad = v.grad = None
            attention(q, k, v).sum().backward()
        return fn

    def sdpa(q, k, v):
        if device != "cuda":  # the CPU has no flash backend
            return F.scaled_dot_product_attention(q, k, v)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)
    def one_thread(fn):  # autograd's backward on the calling thread, not the engine's thread for the device
        def run():
            with torch.autograd.set_multithreading_enabled(False):
                fn()
        return run
    steps = {"step": step(gpusim_kernels.flash2_attention_trainable), "sdpa_step": step(sdpa),
             "nothing_step": step(Nothing.apply)}
    return {**steps, **{f"{name}_one_thread": one_thread(fn) for name, fn in steps.items()},
            "forward": lambda: gpusim_kernels.flash2_attention_trainable(q, k, v)}


def handoffs(q, k, v, calls):
    """Where the step's backward goes, medians in µs over calls steps (after calls // 10 + 1): from the caller's
    .backward() to our Function's backward starting (handoff_to_backward), its body (backward_in_step: the part
    `backward` times on the calling thread), and from its end to .backward() returning (handoff_to_caller);
    backward_thread: "engine" where autograd ran it on its own thread for the device, else "caller"."""
    stamps, original = [], backward.Flash2Attention.backward

    def stamped(ctx, do):
        start = time.perf_counter()
        grads = original(ctx, do)
        stamps.append((start, time.perf_counter(), threading.get_ident()))
        return grads
    backward.Flash2Attention.backward = staticmethod(stamped)
    spans = []
    try:
        for _ in range(calls // 10 + 1 + calls):
            q.grad = k.grad = v.grad = None
            loss = gpusim_kernels.flash2_attention_trainable(q, k, v).sum()
            called = time.perf_counter()
            loss.backward()
            returned = time.perf_counter()
            start, end, thread = stamps[-1]
            spans.append((start - called, end - start, returned - end))
    finally:
        backward.Flash2Attention.backward = original
    spans = spans[calls // 10 + 1:]
    medians = {name: round(statistics.median(s[i] for s in spans) * 1e6, 2)
               for i, name in enumerate(("handoff_to_backward", "backward_in_step", "handoff_to_caller"))}
    return medians | {"backward_thread": "caller" if thread == threading.get_ident() else "engine"}


def gc_collections_per_call(fn, calls):
    """Python's garbage collections (all generations) per call of fn."""
    before = sum(s["collections"] for s in gc.get_stats())
    for _ in range(calls):
        fn()
    return (sum(s["collections"] for s in gc.get_stats()) - before) / calls


def no_launch(kernel, grid, *args, **kwargs):
    """--no-launch's stand-in for every kernel launch."""


def train_main(args):
    """--train: host_parts_train.json, one row per shape."""
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    launches = "stubbed" if args.no_launch else "interpreted" if device == "cpu" else "compiled"
    calls = args.calls or (2 if args.smoke and not args.no_launch else CALLS)
    originals = backward.launch, flash2.launch
    if args.no_launch:
        backward.launch = flash2.launch = no_launch
    try:
        rows = [train_parts(shape, device, calls, sync, launches) for shape in
                ((SMOKE_SHAPE,) if args.smoke else TRAIN_SHAPES)]
    finally:
        backward.launch, flash2.launch = originals
    for row in rows:
        print(row)
    command = "python -m benchmarks.host_parts --train" + " --smoke" * args.smoke + " --no-launch" * args.no_launch
    env = environment(command + " --out $OUT") | {"device": device, "calls": calls}
    with open(os.path.join(args.out, "host_parts_train.json"), "w") as f:
        json.dump({"environment": env, "rows": rows}, f, indent=1)


def decode_direct():
    from gpusim_kernels import launch as launch_module
    return launch_module._DIRECT


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--train", action="store_true", help="a training step's parts: host_parts_train.json")
    ap.add_argument("--smoke", action="store_true", help="--train on CPU (TRITON_INTERPRET=1): one tiny shape")
    ap.add_argument("--no-launch", action="store_true", help="--train with every kernel launch a no-op")
    ap.add_argument("--calls", type=int, help=f"calls per part (default {CALLS}; 2 with --smoke)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.train:
        return train_main(args)
    rows = []
    for batch, length in ((1, 1024), (1, 4096)):
        rows.append(parts(batch, length))
        print(rows[-1], flush=True)
    with open(os.path.join(args.out, "host_parts.json"), "w") as f:
        json.dump({"environment": environment("python -m benchmarks.host_parts --out $OUT"), "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    main()

"""Why a training step's Python backward runs slower on autograd's thread for the device than on the calling
thread (host_parts_train.json: 1.56-2.06x): each part of flash2_attention_trainable's backward timed inside
the step, on the engine's thread and, with torch.autograd.set_multithreading_enabled(False), on the calling one;
beside a backward of pure Python (a fixed loop, no torch call) and one of four torch.empty_like calls.

    python -m benchmarks.host_thread --out DIR             # on the GPU: DIR/host_thread.json
    TRITON_INTERPRET=1 python -m benchmarks.host_thread --out DIR --smoke    # CPU: the code paths

Rows {shape, thread ("engine" or "caller"), part, us}: the median over CALLS steps (after CALLS // 10 + 1) of
each part's host µs: for flash2 "prepare" (the saved tensors unpacked, the inputs made contiguous, the
allocations), "launches" (the three, launch_kept), "after", "total" (the backward's body); for the pure-Python
backward "python"; for the allocating one "empties". (Run 71's file timed the backward before the fifty-third
session: a look-up, then each launch apart, "preprocess", "dkdv", "dq", and the allocations "between" them.)
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

from benchmarks.host_parts import Nothing
from benchmarks.run_env import environment
import gpusim_kernels
from gpusim_kernels import backward

CALLS = 1000
SHAPES = ((1, 8, 128, 64), (2, 4, 512, 128))  # benchmarks/host.py's (fp16)
SMOKE_SHAPE = (1, 2, 32, 64)
LOOP = 2000  # the pure-Python backward's iterations (about 50 µs on the calling thread)


def python_work():
    total = 0
    for i in range(LOOP):
        total += i * i % 7
    return total


class Timed(Nothing):
    """host_parts' Nothing with a backward whose body is `work` (timed into `Timed.spans`), outputs allocated."""
    work, spans = None, []

    @staticmethod
    def backward(ctx, do):
        start = time.perf_counter()
        Timed.work()
        Timed.spans.append(time.perf_counter() - start)
        return tuple(torch.empty_like(x) for x in ctx.saved_tensors)


def four_empties():
    x = torch.empty(1)
    return [torch.empty_like(x) for _ in range(4)]


class Stamps:
    """perf_counter stamps around the backward's launches (launch_kept: the three together), per step."""

    def __init__(self):
        self.steps, self.now = [], None

    def mark(self, name):
        self.now.append((name, time.perf_counter()))

    def install(self):
        launches, body = backward.launch_kept, backward.Flash2Attention.backward

        def stamped_launches(*args):
            self.mark("prepare")
            launches(*args)
            self.mark("launches")

        def stamped_body(ctx, do):
            self.now = [("start", time.perf_counter())]
            out = body(ctx, do)
            self.mark("after")
            self.steps.append(self.now)
            return out
        backward.launch_kept, backward.Flash2Attention.backward = stamped_launches, staticmethod(stamped_body)
        return launches, body

    @staticmethod
    def uninstall(saved):
        backward.launch_kept, backward.Flash2Attention.backward = saved[0], staticmethod(saved[1])


def parts(stamps):
    """One step's stamps as {part: µs}: each stamp's time since the one before, and the total."""
    out = {name: at - before for (_, before), (name, at) in zip(stamps, stamps[1:])}
    out["total"] = stamps[-1][1] - stamps[0][1]
    return {k: v * 1e6 for k, v in out.items()}


def steps(fn, calls, one_thread):
    for _ in range(calls // 10 + 1 + calls):
        if one_thread:
            with torch.autograd.set_multithreading_enabled(False):
                fn()
        else:
            fn()


def median_rows(shape, thread, samples):
    keys = dict.fromkeys(k for s in samples for k in s)
    return [{"shape": list(shape), "thread": thread, "part": k, "us": round(statistics.median(s[k] for s in samples
                                                                                          if k in s), 2)}
            for k in keys]


def shape_rows(shape, device, calls):
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(shape, device=device, generator=gen).half().requires_grad_() for _ in range(3))

    def flash2_step():
        q.grad = k.grad = v.grad = None
        gpusim_kernels.flash2_attention_trainable(q, k, v).sum().backward()

    def timed_step():
        q.grad = k.grad = v.grad = None
        Timed.apply(q, k, v).sum().backward()
    rows = []
    for thread, one in (("engine", False), ("caller", True)):
        stamps = Stamps()
        saved = stamps.install()
        try:
            steps(flash2_step, calls, one)
        finally:
            Stamps.uninstall(saved)
        rows += median_rows(shape, thread, [parts(s) for s in stamps.steps[calls // 10 + 1:]])
        for name, work in (("python", python_work), ("empties", four_empties)):
            Timed.work, Timed.spans = work, []
            steps(timed_step, calls, one)
            rows += median_rows(shape, thread, [{name: s * 1e6} for s in Timed.spans[calls // 10 + 1:]])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="CPU (TRITON_INTERPRET=1): one tiny shape, 2 calls")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    device = "cpu" if args.smoke else "cuda"
    calls = 2 if args.smoke else CALLS
    rows = [r for shape in ((SMOKE_SHAPE,) if args.smoke else SHAPES) for r in shape_rows(shape, device, calls)]
    for r in rows:
        print(r)
    command = " ".join(["python -m benchmarks.host_thread", *(sys.argv[1:] if argv is None else argv)])
    with open(os.path.join(args.out, "host_thread.json"), "w") as f:
        json.dump({"environment": environment(command) | {"calls": calls}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

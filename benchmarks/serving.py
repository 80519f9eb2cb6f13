"""Decoding as a server calls it: Llama-3-8B's attention shape (32 query heads, 8 K/V heads, d 128, fp16), 32 calls
per token (one per layer, all over one layer-sized cache: every layer costs the same), each cache growing one
token per step. Writes OUT/serving.json, rows {provider, batch, seq_kv, layers, steps, ms_per_token} (and
capture_ms for the graphed SDPA providers, rel_err for ours against SDPA flash at the first step).

    python -m benchmarks.serving --out DIR          # on the GPU
    python -m benchmarks.serving --out DIR --smoke  # tiny, on CPU in Triton's interpreter (TRITON_INTERPRET=1)

Providers, per step (the cache one token longer than the step before):
- plan_eager: a DecodePlan from the host lengths, then its run per layer over the paged cache (pages of 16,
  shuffled), eager;
- plan_graph: one plan for the whole run (capacity: the last step's length), 32 runs captured once in a CUDA
  graph; per step the plan's device lengths are raised by one in place, then the graph replays;
- sdpa_flash, sdpa_cudnn: SDPA's backend over the contiguous cache's first seq_kv positions, eager;
- sdpa_flash_graph, sdpa_cudnn_graph: the same 32 calls captured at each step's length, every step's graph
  captured before timing (each after one eager call at its length; capture_ms: the capture time per step,
  not counted), then replayed step by step.
ms_per_token: wall time of the timed steps (host and GPU overlapping as in a server; one synchronisation
after the last) over their number, after every provider ran once untimed at the first point (warm_up). seq_kv is the cache length at the first timed step.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks.bench import cycling, error_line
from benchmarks.run_env import environment
from gpusim_kernels import DecodePlan
from gpusim_kernels.interpreter import INTERPRETED

SHAPE = dict(heads=32, kv_heads=8, head_dim=128)  # Llama-3-8B
LAYERS, STEPS, WARMUP_STEPS, PAGE_SIZE = 32, 64, 2, 16
K = 1024
POINTS = ([(1, n * K) for n in (1, 4, 16, 32, 64, 128)] + [(8, n * K) for n in (1, 4, 16, 32)]
          + [(64, n * K) for n in (1, 4, 8)])
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}
SMOKE = dict(shape=dict(heads=4, kv_heads=2, head_dim=16), layers=2, steps=2, points=[(1, 40), (2, 70)],
             sdpa={"sdpa_math": SDPBackend.MATH})
EAGER_TARGET, GRAPH_TARGET, GRAPH_TARGET_LONG = 1.1, 1.0, 0.97  # docs/issue 24's targets


class Cache:
    """One layer's cache for `batch` requests up to `capacity` tokens: paged (shuffled pages of PAGE_SIZE,
    a block table per request) and the same tokens contiguous (batch, kv_heads, capacity, d) for SDPA."""

    def __init__(self, batch, capacity, shape, device):
        kvh, d = shape["kv_heads"], shape["head_dim"]
        pages = -(-capacity // PAGE_SIZE)
        gen = torch.Generator(device).manual_seed(batch * 7919 + capacity)  # on the device: GBs at batch 64
        self.q = torch.randn(batch, shape["heads"], 1, d, generator=gen, device=device, dtype=torch.float16)
        self.table = torch.randperm(batch * pages, generator=gen, device=device).view(batch, pages).int()
        self.k, self.v = (torch.randn(batch * pages, PAGE_SIZE, kvh, d, generator=gen, device=device,
                                      dtype=torch.float16) for _ in range(2))
        self.k_flat, self.v_flat = (self.contiguous(x, batch, pages, capacity) for x in (self.k, self.v))
        self.batch, self.capacity, self.shape, self.device = batch, capacity, shape, device

    def contiguous(self, paged, batch, pages, capacity):
        flat = paged[self.table.long()].reshape(batch, pages * PAGE_SIZE, *paged.shape[2:])
        return flat[:, :capacity].transpose(1, 2).contiguous()

    num_splits = None  # the plans' (None: gpusim's rule); benchmarks/serving_splits.py sets it

    def plan(self, length):
        return DecodePlan([length] * self.batch, dtype=torch.float16, device=self.device, page_size=PAGE_SIZE,
                          max_cache_len=self.capacity, num_splits=self.num_splits, **self.shape)


def sdpa(cache, backend, length):
    """SDPA over the contiguous cache's first `length` positions, every query head over its K/V head."""
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(cache.q, cache.k_flat[:, :, :length], cache.v_flat[:, :, :length],
                                              enable_gqa=True)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step, first, steps, device):
    """Wall ms per step of step(length) over `steps` growing lengths after WARMUP_STEPS untimed ones."""
    for length in range(first - WARMUP_STEPS, first):
        step(length)
    synchronize(device)
    start = time.perf_counter()
    for length in range(first, first + steps):
        step(length)
    synchronize(device)
    return (time.perf_counter() - start) * 1e3 / steps


def plan_eager(caches, first, steps):
    """Per step a plan from the host lengths, then its run over each layer's cache (caches: one per layer; the same
    Cache repeated for serving.json's one layer-sized cache)."""
    def step(length):
        plan = caches[0].plan(length)
        for cache in caches:
            plan.run(cache.q, cache.k, cache.v, cache.table)
    return {"ms_per_token": timed(step, first, steps, caches[0].device)}


def plan_graph(caches, first, steps):
    """One plan for the run, layer i its run over caches[i], the runs captured once (graph_step)."""
    plan = caches[0].plan(first - WARMUP_STEPS)
    layer = cycling([lambda c=c: plan.run(c.q, c.k, c.v, c.table) for c in caches])
    layer()  # compiled before the capture
    return {"ms_per_token": timed(graph_step(layer, len(caches), plan), first, steps, plan.device)}


def graph_step(layer, layers, plan, graphed=True):
    """step(length) for timed(): `layers` calls of layer(), captured once in a CUDA graph and replayed (graphed;
    else called eagerly, as in the interpreter, which has no graphs), after the plan's device lengths rise by one
    (lowered by one here: the first step raises them back)."""
    def run():
        for _ in range(layers):
            layer()
    if graphed:
        synchronize(plan.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        run = graph.replay
    plan.cache_seqlens.sub_(1)

    def step(length):
        plan.cache_seqlens.add_(1)
        run()
    return step


def sdpa_eager(backend):
    def provider(caches, first, steps):
        def step(length):
            for cache in caches:
                sdpa(cache, backend, length)
        return {"ms_per_token": timed(step, first, steps, caches[0].device)}
    return provider


def sdpa_graph(backend):
    def provider(caches, first, steps):
        graphs, pool, capture_s, device = {}, torch.cuda.graph_pool_handle(), 0.0, caches[0].device
        for length in range(first - WARMUP_STEPS, first + steps):
            sdpa(caches[0], backend, length)  # outside the capture: cuDNN builds its plan for a new length here
            synchronize(device)
            start = time.perf_counter()
            graphs[length] = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graphs[length], pool=pool):
                for cache in caches:
                    sdpa(cache, backend, length)
            synchronize(device)
            capture_s += time.perf_counter() - start
        capture_ms = capture_s * 1e3 / len(graphs)
        row = {"ms_per_token": timed(lambda length: graphs[length].replay(), first, steps, device),
               "capture_ms": capture_ms}
        del graphs
        return row
    return provider


def providers(device, backends):
    out = {"plan_eager": plan_eager, **{name: sdpa_eager(b) for name, b in backends.items()}}
    if device.type == "cuda":
        out |= {"plan_graph": plan_graph, **{f"{name}_graph": sdpa_graph(b) for name, b in backends.items()}}
    return out


def rel_err(cache, first, backends):
    """Ours against the first SDPA backend at the first timed length: relative error in norm."""
    ours = cache.plan(first).run(cache.q, cache.k, cache.v, cache.table).double()
    ref = sdpa(cache, next(iter(backends.values())), first).double()
    return float((ours - ref).norm() / ref.norm())


def summary(rows):
    """Per point: ours over the fastest SDPA eager (target <= 1.1), the fastest SDPA graphed over ours (target
    >= 1.0 at 4K-16K, >= 0.97 beyond)."""
    lines = [f"{'batch':>5} {'seq_kv':>7} {'eager ratio':>12} {'graph ratio':>12}"]
    for batch, seq_kv in dict.fromkeys((r["batch"], r["seq_kv"]) for r in rows):
        ms = {r["provider"]: r["ms_per_token"] for r in rows
              if (r["batch"], r["seq_kv"]) == (batch, seq_kv) and "ms_per_token" in r}
        sdpa_eager_ms = [t for p, t in ms.items() if p.startswith("sdpa") and not p.endswith("graph")]
        sdpa_graph_ms = [t for p, t in ms.items() if p.startswith("sdpa") and p.endswith("graph")]
        eager = ms["plan_eager"] / min(sdpa_eager_ms) if "plan_eager" in ms and sdpa_eager_ms else math.nan
        graph = min(sdpa_graph_ms) / ms["plan_graph"] if "plan_graph" in ms and sdpa_graph_ms else math.nan
        target = GRAPH_TARGET if seq_kv <= 16 * K else GRAPH_TARGET_LONG
        lines.append(f"{batch:>5} {seq_kv:>7} {eager:>12.3f} {graph:>12.3f}   (targets <= {EAGER_TARGET}, "
                     f">= {target})")
    return "\n".join(lines)


def warm_up(point, shape, layers, device, backends):
    """Every provider once at the first point, untimed: a fresh machine's first seconds (CUDA's lazy module
    loading, the first launches of each kernel, clocks rising from idle) are not any provider's cost."""
    batch, seq_kv = point
    cache = Cache(batch, seq_kv + WARMUP_STEPS + 2, shape, device)
    for provider in providers(device, backends).values():
        provider([cache] * layers, seq_kv, 2)


def settings(doc, name, minutes, argv, points=POINTS, steps=STEPS):
    """A serving script's command line (--out, --max-minutes, --smoke) and what it runs: (args, device, shape,
    layers, steps, points, SDPA backends), the smoke run's tiny ones on CPU."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True, help=f"directory for {name} (rewritten after every point)")
    ap.add_argument("--max-minutes", type=float, default=minutes, help="stop before starting a point after this")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU (TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    device = torch.device("cpu" if INTERPRETED else "cuda")
    if args.smoke:
        return args, device, SMOKE["shape"], SMOKE["layers"], SMOKE["steps"], SMOKE["points"], SMOKE["sdpa"]
    return args, device, SHAPE, LAYERS, steps, points, SDPA


def sweep(doc, name, minutes, argv, points, steps, point_rows):
    """A serving sweep (this script's, serving_splits.py's, reduce_warps.py's) run from its command line (settings):
    OUT/{name}.json, its environment and the rows point_rows(batch, seq_kv, shape, layers, steps, device, backends)
    yields at each point, rewritten after every point; every provider warmed up first on the GPU (warm_up); no
    point started once --max-minutes have passed. Returns what it wrote."""
    args, device, shape, layers, steps, points, backends = settings(doc, f"{name}.json", minutes, argv, points, steps)
    out = Path(args.out) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join([f"python -m benchmarks.{name}", *(sys.argv[1:] if argv is None else argv)])
    result = {"environment": environment(command), "rows": []}
    deadline = time.monotonic() + args.max_minutes * 60
    if device.type == "cuda":
        warm_up(points[0], shape, layers, device, backends)
    for batch, seq_kv in points:
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes before batch {batch}, {seq_kv} tokens"
            break
        for row in point_rows(batch, seq_kv, shape, layers, steps, device, backends):
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
        out.write_text(json.dumps(result, indent=1))
    out.write_text(json.dumps(result, indent=1))
    return result


def point_rows(batch, seq_kv, shape, layers, steps, device, backends):
    """serving.json's rows at one point: every provider (providers), ours with its error against SDPA (rel_err)."""
    cache = Cache(batch, seq_kv + steps, shape, device)
    err = rel_err(cache, seq_kv, backends)
    for name, provider in providers(device, backends).items():
        row = {"provider": name, "batch": batch, "seq_kv": seq_kv, "layers": layers, "steps": steps}
        row |= timed_or_error(provider, [cache] * layers, seq_kv, steps)
        yield row | ({"rel_err": err} if name.startswith("plan") else {})
    del cache  # before the next point's


def timed_or_error(provider, caches, first, steps):
    """provider's row over `caches` (one per layer), or the error of a backend that refuses the shape (say why, go
    on)."""
    try:
        return provider(caches, first, steps)
    except Exception as error:  # noqa: BLE001
        return {"error": error_line(error, 200)}


def main(argv=None):
    print(summary(sweep(__doc__, "serving", 3.5, argv, POINTS, STEPS, point_rows)["rows"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

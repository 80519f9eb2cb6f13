"""The serving loop as a real server reads its caches: benchmarks/serving.py's loop (Llama-3-8B's attention shape,
32 layers a token, each cache growing a token a step), but each layer over a cache of its own, so that no layer finds
its K and V in the L2 the layer before filled. Writes OUT/serving_layers.json, rows {provider, batch, seq_kv, layers,
steps, caches, ms_per_token} (rel_err for ours against SDPA's first backend at the first step).

    python -m benchmarks.serving_layers --out DIR          # on the GPU
    python -m benchmarks.serving_layers --out DIR --smoke  # tiny, on CPU in Triton's interpreter (TRITON_INTERPRET=1)

Why: serving.json's 32 layers read one layer-sized cache (issue 24's loop: every layer costs the same), which the
L2 holds from layer to layer where it is a few MiB to a few tens of MiB; run 226 (results/h100/short_cache.json) timed
the decode launch warm at 0.65-0.78x its cold time there. A server's layers each have their own cache, 32 times the
bytes, read once a token. The points: the short caches where the L2 held serving.json's cache (batch 1 at 1K and 4K,
batch 8 at 1K) and three past it (batch 1 at 16K, batch 8 at 4K, batch 64 at 1K), where one cache or 32 should not
matter. Providers on the GPU, as serving.py's graphed ones over `layers` caches: plan_graph (one plan, its run over
cache i at layer i, captured once), sdpa_flash_graph and sdpa_cudnn_graph (captured at each step's length); on CPU,
plan_eager and sdpa_math eager, the code paths only.
"""
import sys

import torch

from benchmarks import serving
from benchmarks.bench import cycling
from benchmarks.serving import K, WARMUP_STEPS, Cache, graph_step, sdpa, synchronize, timed

POINTS = ((1, K), (1, 4 * K), (1, 16 * K), (8, K), (8, 4 * K), (64, K))


def plan_graph(caches, first, steps):
    """One plan for the run, layer i its run over cache i, the `layers` runs captured once (serving.plan_graph's)."""
    plan = caches[0].plan(first - WARMUP_STEPS)
    layer = cycling([lambda c=c: plan.run(c.q, c.k, c.v, c.table) for c in caches])
    layer()  # compiled before the capture
    return {"ms_per_token": timed(graph_step(layer, len(caches), plan), first, steps, plan.device)}


def sdpa_graph(backend):
    def provider(caches, first, steps):
        graphs, pool = {}, torch.cuda.graph_pool_handle()
        for length in range(first - WARMUP_STEPS, first + steps):
            sdpa(caches[0], backend, length)  # outside the capture: cuDNN builds its plan for a new length here
            synchronize(caches[0].device)
            graphs[length] = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graphs[length], pool=pool):
                for cache in caches:
                    sdpa(cache, backend, length)
        row = {"ms_per_token": timed(lambda length: graphs[length].replay(), first, steps, caches[0].device)}
        del graphs
        return row
    return provider


def plan_eager(caches, first, steps):
    def step(length):
        plan = caches[0].plan(length)
        for cache in caches:
            plan.run(cache.q, cache.k, cache.v, cache.table)
    return {"ms_per_token": timed(step, first, steps, caches[0].device)}


def sdpa_eager(backend):
    def provider(caches, first, steps):
        def step(length):
            for cache in caches:
                sdpa(cache, backend, length)
        return {"ms_per_token": timed(step, first, steps, caches[0].device)}
    return provider


def providers(device, backends):
    if device.type == "cuda":
        return {"plan_graph": plan_graph, **{f"{name}_graph": sdpa_graph(b) for name, b in backends.items()}}
    return {"plan_eager": plan_eager, **{name: sdpa_eager(b) for name, b in backends.items()}}


def point_rows(batch, seq_kv, shape, layers, steps, device, backends):
    """One point's rows: `layers` caches, each provider over all of them."""
    caches = [Cache(batch, seq_kv + steps, shape, device) for _ in range(layers)]
    err = serving.rel_err(caches[0], seq_kv, backends)
    for name, provider in providers(device, backends).items():
        row = {"provider": name, "batch": batch, "seq_kv": seq_kv, "layers": layers, "steps": steps,
               "caches": len(caches)}
        try:
            row |= provider(caches, seq_kv, steps)
        except Exception as error:  # noqa: BLE001 - a backend that refuses the shape: say why, go on
            row |= {"error": serving.error_line(error, 200)}
        yield row | ({"rel_err": err} if name.startswith("plan") else {})
    del caches


def main(argv=None):
    serving.sweep(__doc__, "serving_layers", 8.0, argv, POINTS, serving.STEPS, point_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

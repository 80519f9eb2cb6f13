"""The decode reduce's warps, with programmatic dependent launch (PDL) on and off, in the graphed serving loop
(benchmarks/serving.py's plan_graph: 32 layers a token over a cache growing a token a step), beside cuDNN's graph.
gpusim/passes/split_kv.py's REDUCE_WARPS comes from it.

    python -m benchmarks.reduce_warps --out DIR            # on the GPU: DIR/reduce_warps.json
    python -m benchmarks.reduce_warps --out DIR --smoke    # tiny, on CPU in Triton's interpreter, eager

Rows {provider, batch, seq_kv, num_splits, reduce_warps, pdl, layers, steps, ms_per_token}: provider "plan_graph"
at each (reduce_warps, pdl), the split kernel as the plan launches it, then "sdpa_cudnn_graph"; rel_err: the
variant's O against the plan's run, in norm. Timed as benchmarks/serving.py times its providers.
"""
import sys

import torch

from benchmarks.serving import PAGE_SIZE, WARMUP_STEPS, Cache, graph_step, sdpa_eager, sdpa_graph, sweep, timed
from gpusim import decode
from gpusim_kernels import decode as decode_kernels

K = 1024
POINTS = ((8, 1 * K), (8, 4 * K), (8, 16 * K), (4, 8 * K), (1, 1 * K), (1, 4 * K), (1, 16 * K), (1, 64 * K))
STEPS = 32
WARPS = (1, 2, 4)


def variant(warps, pdl, graphed):
    """A provider: the plan's split kernel, then the reduce on `warps` warps, PDL as given (off where the
    device has none), every layer; captured in a CUDA graph on the GPU, eager in the interpreter."""
    def provider(cache, first, steps, layers):
        plan = cache.plan(first - WARMUP_STEPS)
        L, (q, k, v, table) = plan._launch, (cache.q, cache.k, cache.v, cache.table)
        dependent = pdl and plan.pdl
        args = (table, plan.cache_seqlens, L.head_dim**-0.5, table.shape[-1], 0, L.num_splits)
        split, reduce = plan._constants("split_kv", dependent), plan._constants("reduce", dependent)
        o, lse = torch.empty_like(q), torch.empty(plan.q_shape[:3], dtype=torch.float32, device=q.device)

        def layer():
            decode_kernels.launch(decode_kernels.split_kv_kernel, plan.grids[0], q, k, v, plan.o_partial,
                                  plan.lse_partial, *args, **split)
            decode_kernels.launch(decode_kernels.reduce_kernel, plan.grids[1], plan.o_partial, plan.lse_partial, o,
                                  lse, plan.cache_seqlens, L.num_splits, **reduce | dict(num_warps=warps),
                                  launch_pdl=dependent)
        layer()
        ref = plan.run(q, k, v, table).double()
        rel_err = float((o.double() - ref).norm() / ref.norm())
        step = graph_step(layer, layers, plan, graphed)
        row = {"num_splits": L.num_splits, "reduce_warps": warps, "pdl": dependent, "rel_err": rel_err}
        return row | {"ms_per_token": timed(step, first, steps, cache.device)}
    return provider


def point_rows(batch, seq_kv, shape, layers, steps, device, backends):
    """Every (warps, PDL) variant at one point, then cuDNN's graph (SDPA math eager in the interpreter); nothing
    where the plan does not split (no reduce)."""
    if decode.make_launch(batch=batch, seq_kv=seq_kv - WARMUP_STEPS, page_size=PAGE_SIZE, **shape).num_splits == 1:
        return
    graphed = device.type == "cuda"
    cache = Cache(batch, seq_kv + steps, shape, device)
    base = {"batch": batch, "seq_kv": seq_kv, "layers": layers, "steps": steps}
    for w in WARPS:
        for pdl in (True, False):
            yield base | {"provider": "plan_graph" if graphed else "plan_eager"} | variant(w, pdl, graphed)(
                cache, seq_kv, steps, layers)
    name, sdpa = ("sdpa_cudnn_graph", sdpa_graph(backends["sdpa_cudnn"])) if graphed else (
        "sdpa_math", sdpa_eager(backends["sdpa_math"]))
    yield base | {"provider": name} | sdpa([cache] * layers, seq_kv, steps)


def main(argv=None):
    sweep(__doc__, "reduce_warps", 3.0, argv, POINTS, STEPS, point_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The graphed serving loop (benchmarks/serving.py's plan_graph) at every split count, beside SDPA's graphed
backends: which num_splits runs fastest where the rule's pick is within a few percent of cuDNN's contiguous
read (batch 8 at 1K-16K cached tokens, batch 64 at 8K) and where it is well ahead (batch 1).

    python -m benchmarks.serving_splits --out DIR          # on the GPU: DIR/serving_splits.json
    python -m benchmarks.serving_splits --out DIR --smoke  # tiny, on CPU in Triton's interpreter, eager

Rows {provider, batch, seq_kv, num_splits, default, layers, steps, ms_per_token}: provider "plan_graph" at
each num_splits from 1 up by powers of two (split_counts; default: the one
gpusim.decode's rule picks), "sdpa_flash_graph" and "sdpa_cudnn_graph" (num_splits None), timed as
benchmarks/serving.py times them.
"""
import sys

from benchmarks.serving import (PAGE_SIZE, Cache, plan_eager, plan_graph, sdpa_eager, sdpa_graph, sweep,
                               timed_or_error)
from gpusim import decode

K = 1024
POINTS = ((8, 1 * K), (8, 4 * K), (8, 16 * K), (64, 8 * K), (64, 1 * K), (1, 1 * K), (1, 4 * K))
STEPS = 32


def split_counts(batch, seq_kv, shape):
    """1, 2, 4, ... up to the chunks of the longest request or 4 times the rule's pick (at least 16), and the
    rule's pick (the default)."""
    launch = decode.make_launch(batch=batch, seq_kv=seq_kv, page_size=PAGE_SIZE, **shape)
    most = min(int(launch.chunks.max()), max(16, 4 * launch.num_splits))
    counts = {1 << i for i in range(most.bit_length()) if 1 << i <= most} | {launch.num_splits}
    return sorted(counts), launch.num_splits


def point_rows(batch, seq_kv, shape, layers, steps, device, backends):
    """The plan at every split count, then SDPA's backends: graphed on the GPU; eager in the interpreter (no CUDA
    graph there: the smoke run's proof that every code path runs)."""
    cache = Cache(batch, seq_kv + steps, shape, device)
    base = {"batch": batch, "seq_kv": seq_kv, "layers": layers, "steps": steps}
    graphed = device.type == "cuda"
    plan, sdpa, suffix = (plan_graph, sdpa_graph, "_graph") if graphed else (plan_eager, sdpa_eager, "")
    plan_name = "plan_graph" if graphed else "plan_eager"
    counts, default = split_counts(batch, seq_kv, shape)
    for s in counts:
        cache.num_splits = s
        yield base | {"provider": plan_name, "num_splits": s, "default": s == default} | timed_or_error(
            plan, [cache] * layers, seq_kv, steps)
    for name, backend in backends.items():
        yield base | {"provider": f"{name}{suffix}", "num_splits": None, "default": False} | timed_or_error(
            sdpa(backend), [cache] * layers, seq_kv, steps)


def main(argv=None):
    sweep(__doc__, "serving_splits", 3.0, argv, POINTS, STEPS, point_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

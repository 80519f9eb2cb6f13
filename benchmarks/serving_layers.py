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
matter. Providers: serving.py's graphed ones, each layer over its own cache: plan_graph (one plan, its run over
cache i at layer i, captured once), sdpa_flash_graph and sdpa_cudnn_graph (captured at each step's length, capture_ms
as serving.json's); on CPU, plan_eager and sdpa_math eager, the code paths only.
"""
import sys

from benchmarks import serving
from benchmarks.serving import K, Cache

POINTS = ((1, K), (1, 4 * K), (1, 16 * K), (8, K), (8, 4 * K), (64, K))


def point_rows(batch, seq_kv, shape, layers, steps, device, backends):
    """One point's rows: `layers` caches, each of serving.py's providers over all of them, its graphed ones alone on
    the GPU."""
    caches = [Cache(batch, seq_kv + steps, shape, device) for _ in range(layers)]
    err = serving.rel_err(caches[0], seq_kv, backends)
    for name, provider in serving.providers(device, backends).items():
        if device.type == "cuda" and not name.endswith("graph"):
            continue
        row = {"provider": name, "batch": batch, "seq_kv": seq_kv, "layers": layers, "steps": steps,
               "caches": len(caches)}
        yield row | serving.timed_or_error(provider, caches, seq_kv, steps) | (
            {"rel_err": err} if name.startswith("plan") else {})
    del caches


def main(argv=None):
    serving.sweep(__doc__, "serving_layers", 8.0, argv, POINTS, serving.STEPS, point_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Why gpusim prices the serving loop's short caches slow: the decode launch (split kernel and reduce) at short
caches, a few steps a program, each read cold (input copies rotated past the L2, as decode.json is timed) and warm
(one input set read again, as serving.json's layers read one layer-sized cache), each beside gpusim's price.

    python -m benchmarks.short_cache --out $OUT                   # on the GPU: DIR/short_cache.json
    TRITON_INTERPRET=1 python -m benchmarks.short_cache --out /tmp --smoke      # CPU: the code paths

gpusim priced serving.json's graphed token 1.22-1.82x slow at batch 1 with 1K and 4K cached tokens and batch 8 with
1K, and 0.92-1.05x everywhere else (docs/perf.md, "A token of the serving loop, priced"). Two things differ there
from the rows the model was checked on. The loop's caches grow past a power of two (1,025 tokens and on), so at 16
splits of 64-key chunks each program takes two steps, not one, and gpusim adds a whole step's wait (1.8 us) for the
second. And its 32 layers read one cache of 4-32 MiB there, which the H200's 60 MiB L2 holds from one layer to the
next, where decode.json read each launch's operands from DRAM. This times both apart: Llama-3-8B's attention (32
query heads over 8 K/V heads, d = 128, fp16, pages of 16), one query row, batch 1 at 16 splits (128 programs, one an
SM) over caches of 1 to 8 steps a program, and the three serving points at the plan's splits, one token past the
power of two too; and 16,384 tokens (64 MiB: past the L2), where warm and cold should agree.

Writes short_cache.json: {environment, rows: [{batch, seq_kv, heads, kv_heads, head_dim, dtype, page_size, num_splits,
block_kv, steps, warm, cache_bytes, ms, timing, rel_err, preset, predicted_ms}]}: steps, a program's chunks (the
longest split's: the launch's chunks_per_split); cache_bytes, the K and V one launch reads; predicted_ms, gpusim's
for the launch as the model stood at the run (tests price it again).
"""
import sys

from benchmarks import bench_decode as bd
from benchmarks import decode_rows

LONE = tuple((1, 1024 * k, 16) for k in (1, 2, 3, 4, 6, 8)) + ((1, 1025, 16),)  # (batch, seq_kv, num_splits)
# The serving points the lone cases leave out (batch 1 at 1K takes 16 splits by the rule too), at the plan's rule (None)
SERVING = ((1, 4096, None), (1, 4097, None), (8, 1024, None), (8, 1025, None), (1, 16384, None), (1, 16385, None))
SMOKE = dict(cases=((1, 128, 2), (1, 129, 2), (1, 200, None)))


def case_rows(batch, seq_kv, sets, num_splits, shape):
    """One cache's rows: the launch timed cold (cycling through `sets`) and warm (the first set alone), each priced."""
    qs = decode_rows.queries(sets, 1, shape, seed=1)
    out = []
    for warm in (False, True):
        launch, got = decode_rows.timed_row(sets[:1] if warm else sets, qs[:1] if warm else qs, num_splits)
        out.append({"batch": batch, "seq_kv": seq_kv, **shape, "dtype": "fp16", "page_size": launch.page_size,
                    "num_splits": launch.num_splits, "block_kv": launch.block_kv,
                    "steps": int(launch.chunks_per_split.max()),
                    "warm": warm, "cache_bytes": 2 * batch * seq_kv * shape["kv_heads"] * shape["head_dim"] * 2,
                    **got, "preset": decode_rows.preset(launch), "predicted_ms": decode_rows.predicted_ms(launch)})
        print(out[-1], flush=True)
    return out


def main(argv=None):
    args, grid, shape = bd.sweep_setup(__doc__, argv, SMOKE, dict(cases=LONE + SERVING))
    splits = iter(s for _, _, s in grid["cases"])  # sweep_cases takes the cases in order, one call each
    bd.sweep_cases(args, "short_cache", argv, [(b, n) for b, n, _ in grid["cases"]], shape,
                   lambda batch, seq_kv, sets: case_rows(batch, seq_kv, sets, next(splits), shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())

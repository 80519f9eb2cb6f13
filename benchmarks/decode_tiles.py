"""Flash-Decoding's launch choices on the GPU: the chunk (block_kv), the split count, warps and stages of the
split kernel, timed at batch 1 and 8 over a paged cache at Llama-3-8B's attention shape (benchmarks/bench_decode.py's
inputs and timing: CUDA-graph replay, input copies rotated past the L2). What it measures decides the kernel's launch
and the model's (gpusim/passes/split_kv.py); it is not fitted into the time model.

    python -m benchmarks.decode_tiles --out $OUT --max-minutes 3
    TRITON_INTERPRET=1 python -m benchmarks.decode_tiles --out /tmp --smoke        # CPU: the code paths

Writes decode_tiles.json: {environment, copy_bytes_per_s, rows: [{batch, seq_kv, block_kv, num_splits,
num_warps, num_stages, ms, model_bytes, copy_fraction, default}]}, default marking the launch the kernel
picks by itself.
"""
import itertools
import json
import sys
import time
from pathlib import Path

from benchmarks import bench_decode as bd  # inputs, timing, environment
from benchmarks.bench import error_line

from gpusim_kernels.decode import plan_for_cache

CASES = ((1, 131072), (1, 16384), (8, 16384), (1, 4096))  # (batch, cached tokens)
BLOCK_KV = (32, 64, 128, 256)
SPLITS = (None, 16, 64, 128)  # None: flash-attention's heuristic, the kernel's default
LAUNCHES = tuple(itertools.product((2, 4, 8), (1, 2, 3)))  # (num_warps, num_stages)
SMOKE = dict(cases=((1, 200),), block_kv=(32, 64), splits=(None, 2), launches=((4, 1), (4, 3)))


def row(sets, batch, seq_kv, block_kv, splits, warps, stages, copy_bps):
    plans = [plan_for_cache(*s["paged"], cache_seqlens=s["lengths"], block_table=s["table"], page_size=bd.PAGE_SIZE,
                            num_splits=splits, block_kv=block_kv) for s in sets]
    launch = plans[0].launch
    state = {"i": 0}

    def fn():
        state["i"] = (state["i"] + 1) % len(plans)
        return plans[state["i"]].run(*sets[state["i"]]["paged"], num_warps=warps, num_stages=stages)

    ms = bd.measure(fn, bd.reference(sets[0]))["ms"] if bd.DEVICE == "cuda" else bd.median_ms(fn)
    nbytes = bd._total(launch)
    default = splits is None and block_kv == 64 and (warps, stages) == launch.pass_.launch(launch, "split_kv")
    return {"batch": batch, "seq_kv": seq_kv, "block_kv": block_kv, "num_splits": launch.num_splits,
            "num_warps": warps, "num_stages": stages, "ms": ms, "model_bytes": nbytes,
            "copy_fraction": nbytes / (ms * 1e-3) / copy_bps, "default": default}


def main(argv=None):
    args, grid, shape = bd.sweep_setup(__doc__, argv, SMOKE, dict(cases=CASES, block_kv=BLOCK_KV, splits=SPLITS,
                                                                   launches=LAUNCHES))
    deadline = time.monotonic() + args.max_minutes * 60
    copy_bps = bd.copy_bytes_per_s(bd.COPY_BYTES if bd.DEVICE == "cuda" else 1 << 20)
    env = bd.environment() | {"command": "python -m benchmarks.decode_tiles " + " ".join(argv or sys.argv[1:])}
    result = {"environment": env, "copy_bytes_per_s": copy_bps, "rows": []}
    out = Path(args.out) / "decode_tiles.json"
    for batch, seq_kv in grid["cases"]:
        sets = bd.rotated_inputs(batch, seq_kv, shape, seed=seq_kv)
        # the chunk and split count at the kernel's own launch, then every launch at the default chunk
        todo = [(bkv, s, None) for bkv in grid["block_kv"] for s in grid["splits"]]
        todo += [(64, None, launch) for launch in grid["launches"]]
        for block_kv, splits, launch in todo:
            if time.monotonic() > deadline:
                result["environment"]["truncated"] = f"stopped by --max-minutes at batch {batch}, {seq_kv} tokens"
                out.write_text(json.dumps(result, indent=1))
                return 0
            warps, stages = launch or (None, None)
            try:
                if launch is None:
                    probe = plan_for_cache(*sets[0]["paged"], cache_seqlens=sets[0]["lengths"],
                                           block_table=sets[0]["table"], page_size=bd.PAGE_SIZE, num_splits=splits,
                                           block_kv=block_kv).launch
                    warps, stages = probe.pass_.launch(probe, "split_kv")
                result["rows"].append(row(sets, batch, seq_kv, block_kv, splits, warps, stages, copy_bps))
            except Exception as err:  # a launch that does not fit or compile: record why, go on
                result["rows"].append({"batch": batch, "seq_kv": seq_kv, "block_kv": block_kv, "num_splits": splits,
                                       "num_warps": warps, "num_stages": stages,
                                       "error": error_line(err, 160)})
            out.write_text(json.dumps(result, indent=1))
        del sets
    best = {}
    for r in result["rows"]:
        key = (r["batch"], r["seq_kv"])
        if "ms" in r and (key not in best or r["ms"] < best[key]["ms"]):
            best[key] = r
    for (batch, seq_kv), r in best.items():
        own = next((x for x in result["rows"] if x.get("default") and (x["batch"], x["seq_kv"]) == (batch, seq_kv)), None)
        print(f"batch {batch} {seq_kv:7d}: best {r['block_kv']} keys x {r['num_splits']} splits, {r['num_warps']} warps "
              f"{r['num_stages']} stages {r['ms']:.4f} ms ({r['copy_fraction']:.2f} of copy); default "
              f"{own['ms'] if own else float('nan'):.4f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

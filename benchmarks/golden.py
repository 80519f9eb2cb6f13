"""The golden file of counts: what every pass moves, computes and holds, for a fixed set of configurations,
so that moving the model's code around cannot move a byte (tests/test_golden.py compares with ==).

    python -m benchmarks.golden --write    # re-simulate every configuration into tests/golden/counts.json

Each configuration is simulate()'s keywords; each record holds, per kernel, the L2->SM and SM->L2 bytes of
every tensor (Result.counts), the DRAM bytes (Result.dram), the FLOPs and every KernelResult field, the
peak HBM footprint, and the predicted times (floats, compared to 1e-12 relative). A configuration the
model refuses records its error message instead.
"""
import json
import random
import sys
from pathlib import Path

import gpusim

PATH = Path(__file__).resolve().parents[1] / "tests" / "golden" / "counts.json"
SEED = 23  # the draw of configurations below; changing it changes the file
FLASH_HEAD_DIMS = (16, 32, 64, 80, 96, 128, 256)  # the flash kernels run 16..256 (kernels/launch.py HEAD_DIMS)
HOPPER_HEAD_DIMS = (64, 128)  # kernels/hopper.py HEAD_DIMS
GPUS = ("A100-40GB", "A100-80GB", "H100-SXM", "H200", "H200-measured", "RTX-4090", "T4")
HOPPER_GPUS = ("H100-SXM", "H200", "H200-measured")
FP8_GPUS = ("H100-SXM", "H200", "H200-measured", "RTX-4090")
SEQS = (1, 17, 64, 100, 128, 300, 1000, 1024, 2048, 4096, 5000, 16384)
BLOCKS = (None, 16, 32, 64, 128)


def _shape(rng, algo, gpu):
    seq = rng.choice(SEQS)
    kv_heads = rng.choice((1, 2, 4, 8))
    shape = dict(seq=seq, head_dim=rng.choice(HOPPER_HEAD_DIMS if algo == "hopper" else FLASH_HEAD_DIMS),
                 heads=kv_heads * rng.choice((1, 2, 4, 8)), kv_heads=kv_heads, batch=rng.choice((1, 2, 3, 8)),
                 causal=rng.random() < 0.5, gpu=gpu)
    if rng.random() < 0.3:
        shape["seq_kv"] = rng.choice(SEQS)
    if shape["causal"] and rng.random() < 0.4:
        shape["causal_align"] = "bottom_right"
    return shape


def _dtype(rng, gpu, fp8=True):
    dtypes = ("fp16", "bf16", "fp32") + (("fp8",) if fp8 and gpu in FP8_GPUS else ())
    return rng.choice(dtypes)


def forward_configs(rng, n):
    out = []
    for i in range(n):
        algo = ("naive", "flash1", "flash2", "hopper")[i % 4]
        gpu = rng.choice(HOPPER_GPUS if algo == "hopper" else GPUS)
        kw = dict(_shape(rng, algo, gpu), dtype=_dtype(rng, gpu, fp8=algo in ("flash2", "hopper")))
        if algo == "hopper" and kw["dtype"] == "fp32":
            kw["dtype"] = "fp16"
        block = rng.choice(BLOCKS)
        if block is not None:
            kw |= dict(block_q=block, block_kv=rng.choice(BLOCKS[1:]))
        out.append(dict(algo=algo, **kw))
    return out


def backward_configs(rng, n):
    out = []
    for i in range(n):
        algo = ("naive", "flash1", "flash2")[i % 3]
        gpu = rng.choice(GPUS)
        kw = dict(_shape(rng, algo, gpu), dtype=_dtype(rng, gpu, fp8=False), backward=True)
        kw.pop("causal_align", None)  # the backward models top-left masks only
        kw["seq"] = min(kw["seq"], 4096)  # naive's P per head
        kw.pop("seq_kv", None) if algo == "naive" and rng.random() < 0.5 else None
        if rng.random() < 0.5:
            kw |= dict(block_q=rng.choice(BLOCKS[1:]), block_kv=rng.choice(BLOCKS[1:]))
        if rng.random() < 0.4:
            kw["backward_blocks"] = (rng.choice(BLOCKS[1:]), rng.choice(BLOCKS[1:]))
        out.append(dict(algo=algo, **kw))
    return out


def decode_configs(rng, n):
    out = []
    for _ in range(n):
        gpu = rng.choice(GPUS)
        kv_heads = rng.choice((1, 2, 8))
        batch = rng.choice((1, 2, 4, 16))
        ragged = rng.random() < 0.5
        lengths = [rng.choice((1, 15, 16, 17, 100, 1000, 4096, 8191, 32768, 131072)) for _ in range(batch)]
        kw = dict(algo="split_kv", batch=batch, heads=kv_heads * rng.choice((1, 4, 8)), kv_heads=kv_heads,
                  head_dim=rng.choice(FLASH_HEAD_DIMS), seq_kv=lengths if ragged else lengths[0], gpu=gpu,
                  dtype=_dtype(rng, gpu, fp8=False))
        if rng.random() < 0.3:
            kw["seq"] = rng.choice((2, 4, 7))
            kw["seq_kv"] = [max(length, kw["seq"]) for length in lengths] if ragged else max(lengths[0], kw["seq"])
        if rng.random() < 0.5:
            kw["page_size"] = rng.choice((1, 16, 64, 256))
        if rng.random() < 0.4:
            kw["grouped"] = rng.random() < 0.5
        if rng.random() < 0.4:
            kw["num_splits"] = rng.choice((1, 2, 3, 8, 64))
        if rng.random() < 0.2:
            kw["block_kv"] = rng.choice((16, 32, 128))
        out.append(kw)
    return out


def configs():
    """The configurations, drawn once from SEED: forwards of every algorithm, training steps, decode steps."""
    rng = random.Random(SEED)
    return forward_configs(rng, 240) + backward_configs(rng, 110) + decode_configs(rng, 110)


def record(kw):
    """What simulate(**kw) counts and predicts; {"error": message} where it refuses."""
    try:
        r = gpusim.simulate(**kw)
    except ValueError as error:
        return {"error": str(error)}
    join = "/".join
    return {"counts": {join(key): list(rw) for key, rw in r.counts.items()},
            "dram": {join(key): list(rw) for key, rw in r.dram.items()},
            "kernels": [k.to_dict() for k in r.kernels],
            "hbm_peak_bytes": r.hbm_peak_bytes, "predicted_time_s": r.predicted_time_s,
            "blocks": [r.config.block_q, r.config.block_kv]}


def main(argv):
    if "--write" not in argv:  # --help, or nothing: the docstring says how
        print(__doc__)
        return 0 if set(argv) & {"--help", "-h"} else 1
    rows = [{"args": kw, "result": record(kw)} for kw in configs()]
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(json.dumps(rows, sort_keys=True, separators=(",", ":")) + "\n")
    errors = sum("error" in row["result"] for row in rows)
    print(f"{PATH}: {len(rows)} configurations, {len(rows) - errors} simulated, {errors} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

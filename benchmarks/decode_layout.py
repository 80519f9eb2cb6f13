"""What the pages cost the split-KV kernel, in one run: decoding at Llama-3-8B's attention shape, batch 1
(benchmarks/bench_decode.py's shape and timing) over one cache of random tokens, paged ((num_pages, P, kv_heads, d),
each page's place drawn at random, or in order) at several page sizes, or contiguous ((1, kv_heads, L, d), SDPA's
layout), every launch at the kernel's own split count (gpusim.decode's rule), beside SDPA's cuDNN backend on the
contiguous cache; interleaved in rounds, the least of each launch's medians kept.

    python -m benchmarks.decode_layout --out $OUT           # about 70 s: $OUT/decode_layout.json
    TRITON_INTERPRET=1 python -m benchmarks.decode_layout --out /tmp --smoke      # CPU: the code paths

Each row: {seq_kv, variant, page_size, num_splits, ms, all_ms (each round's median), rel_err (against float64),
vs_cudnn (cuDNN's ms over the row's)}.
"""
import json
import sys
from pathlib import Path

from benchmarks import bench_decode as bd

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpusim_kernels.decode import plan_for_cache

SEQ_KVS = (32768, 65536, 131072)
ROUNDS = 3
SMOKE = dict(seq_kvs=(512,), rounds=1)
# (name, page size or None (contiguous), pages in random order)
VARIANTS = [("paged16", 16, True), ("paged16_in_order", 16, False), ("paged64", 64, True), ("paged256", 256, True),
            ("contiguous", None, False)]


def inputs(seq_kv, shape, seed):
    gen = torch.Generator(device=bd.DEVICE).manual_seed(seed)
    h, kvh, d = shape["heads"], shape["kv_heads"], shape["head_dim"]
    q = torch.randn(1, h, 1, d, generator=gen, device=bd.DEVICE).half()
    k, v = (torch.randn(1, kvh, seq_kv, d, generator=gen, device=bd.DEVICE).half() for _ in range(2))
    return dict(q=q, k=k, v=v, lengths=torch.full((1,), seq_kv, dtype=torch.int32, device=bd.DEVICE), gen=gen)


def paged(x, page_size, shuffled):
    """(k pages, v pages, block table): the contiguous cache in pages of page_size, placed at random or in order."""
    kvh, n_keys, d = x["k"].shape[1:]
    n = n_keys // page_size
    table = (torch.randperm(n, generator=x["gen"], device=bd.DEVICE) if shuffled else
             torch.arange(n, device=bd.DEVICE)).int().view(1, n)
    inverse = torch.argsort(table[0].long())
    pages = [t[0].view(kvh, n, page_size, d).permute(1, 2, 0, 3)[inverse].contiguous() for t in (x["k"], x["v"])]
    return (*pages, table)


def calls(x):
    """name -> a no-argument call returning O."""
    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(x["q"], x["k"], x["v"], enable_gqa=True)
    out = {"cudnn": cudnn} if bd.DEVICE == "cuda" else {}  # the interpreter: the project's kernel alone
    for name, page_size, shuffled in VARIANTS:
        if page_size is None:
            k, v = x["k"], x["v"]
            plan = plan_for_cache(x["q"], k, v, cache_seqlens=x["lengths"])
        else:
            k, v, table = paged(x, page_size, shuffled)
            plan = plan_for_cache(x["q"], k, v, cache_seqlens=x["lengths"], block_table=table, page_size=page_size)
        out[name] = lambda p=plan, k=k, v=v: p.run(x["q"], k, v)
        out[name].launch = plan.launch
    return out


def time_ms(fn):
    return bd.gpu_time(fn)["ms"] if bd.DEVICE == "cuda" else bd.median_ms(fn)


def main(argv=None):
    args = bd.sweep_args(__doc__, argv)
    seq_kvs, rounds = (SMOKE["seq_kvs"], SMOKE["rounds"]) if args.smoke else (SEQ_KVS, ROUNDS)
    shape = bd.SMOKE["shape"] if args.smoke else bd.SHAPE
    env = bd.environment() | {"command": "python -m benchmarks.decode_layout " + " ".join(argv or sys.argv[1:])}
    result = {"environment": env, "rows": []}
    out = Path(args.out) / "decode_layout.json"
    for seq_kv in seq_kvs:
        x = inputs(seq_kv, shape, seed=seq_kv)
        ref = bd.reference(dict(contiguous=(x["q"], x["k"], x["v"])))
        fns = calls(x)
        errs = {name: float(torch.linalg.norm(fn()[0].double() - ref) / torch.linalg.norm(ref)) for name, fn in fns.items()}
        times = {name: [] for name in fns}
        for _ in range(rounds):  # interleaved: each round times every launch once
            for name, fn in fns.items():
                times[name].append(time_ms(fn))
        cudnn = min(times["cudnn"]) if "cudnn" in times else None
        for name, fn in fns.items():
            launch = getattr(fn, "launch", None)
            row = dict(seq_kv=seq_kv, variant=name, page_size=launch and launch.page_size,
                       num_splits=launch and launch.num_splits, ms=min(times[name]), all_ms=times[name],
                       rel_err=errs[name], vs_cudnn=cudnn / min(times[name]) if cudnn else None)
            result["rows"].append(row)
            print(row, flush=True)
        out.write_text(json.dumps(result, indent=1))
        del x, fns
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

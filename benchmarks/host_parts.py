"""Where a DecodePlan.run's host time goes, part by part, beside SDPA's per-call cost, on the Llama-3-8B
decode shape (32 query heads, 8 K/V heads, d 128, pages of 16), batch 1 at 1K and 4K cached tokens.

    python -m benchmarks.host_parts --out DIR      # on the GPU: DIR/host_parts.json

Each part is called CALLS times in a loop and timed on the host (time.perf_counter), the GPU synchronised
only before and after: µs per call of the host's work (the GPU's kernels run behind it).
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks.run_env import environment
from benchmarks.serving import SHAPE, Cache
from gpusim_kernels import decode
from gpusim_kernels.launch import launch_key

CALLS = 2000


def per_call_us(fn):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    host = (time.perf_counter() - start) * 1e6 / CALLS
    torch.cuda.synchronize()
    return round(host, 2)


def parts(batch, length):
    cache = Cache(batch, length + 64, SHAPE, torch.device("cuda"))
    plan = cache.plan(length)
    q, k, v, table, lengths = cache.q, cache.k, cache.v, cache.table, plan.cache_seqlens
    L = plan._launch
    args = (table, lengths, L.head_dim**-0.5, table.shape[-1], 0, L.num_splits)
    split_args = (q, k, v, plan.o_partial, plan.lse_partial, *args)
    consts = plan._constants("split_kv", plan.pdl, {})
    kernel = decode.split_kv_kernel if L.num_splits > 1 else decode.decode_kernel
    grid = plan.grids[0]
    decode.launch(kernel, grid, *split_args, **consts)
    runner, constexprs, _ = next(v for k_, v in decode_direct().items() if k_[0] is kernel)
    k_flat = cache.k_flat[:, :, :length]
    v_flat = cache.v_flat[:, :, :length]

    def sdpa():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k_flat, v_flat, enable_gqa=True)
    return {"batch": batch, "seq_kv": length, "num_splits": L.num_splits,
            "run": per_call_us(lambda: plan.run(q, k, v, table)),
            "check": per_call_us(lambda: plan._check(q, k, v, table, lengths)),
            "two_empties": per_call_us(lambda: (torch.empty_like(q), torch.empty(plan.q_shape[:3], dtype=torch.float32,
                                                                                    device=plan.device))),
            "launch_key": per_call_us(lambda: launch_key(kernel, grid, split_args, consts)),
            "runner": per_call_us(lambda: runner(*split_args, *constexprs)),
            "launch": per_call_us(lambda: decode.launch(kernel, grid, *split_args, **consts)),
            "jit_launch": per_call_us(lambda: kernel[grid](*split_args, **consts)),
            "sdpa_flash": per_call_us(sdpa),
            "sdpa_flash_synced": per_call_us(lambda: (sdpa(), torch.cuda.synchronize())),
            "run_synced": per_call_us(lambda: (plan.run(q, k, v, table), torch.cuda.synchronize()))}


def decode_direct():
    from gpusim_kernels import launch as launch_module
    return launch_module._DIRECT


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    rows = []
    for batch, length in ((1, 1024), (1, 4096)):
        rows.append(parts(batch, length))
        print(rows[-1], flush=True)
    with open(os.path.join(args.out, "host_parts.json"), "w") as f:
        json.dump({"environment": environment("python -m benchmarks.host_parts --out $OUT"), "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    main()

"""flash2's backward kernels with several query heads per K/V head: a few long dK/dV programs against many short ones.

    python -m benchmarks.bwd_gqa --out $OUT                                  # GPU: $OUT/bwd_gqa.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.bwd_gqa --out /tmp/probe --smoke  # CPU: every code path, tiny

The dK/dV kernel holds one K/V block per program and loops over every query head of its group: at batch 1 and 16
query heads, 16, 8, 4 and 2 K/V heads give the same work in 8 times fewer, 8 times longer programs, causal (a ramp:
the first K/V blocks see every Q block) or not, d = 64 and 128, N = 2K and 8K, fp16, at the backward's tiles
(gpusim.best_blocks(backward=True), which the trainable runs). Each kernel (dK/dV, then dQ, whose programs stay one
per Q block and head) timed alone, replayed from a CUDA graph (probe.graph_ms, as the held-out sets' rows are), with
the compiled kernel's resources (benchmarks/bwd_kernels.py's launches).
"""
from itertools import product

import torch

import gpusim
from benchmarks import probe
from benchmarks.bwd_kernels import launches

KV_HEADS = (16, 8, 4, 2)
HEADS = 16
SHAPES = tuple(product((64, 128), (False, True), (2048, 8192)))  # (head_dim, causal, seq)
SMOKE = dict(KV_HEADS=(2, 1), HEADS=2, SHAPES=((16, True, 64),))


def tiles(head_dim, causal, seq):
    return gpusim.best_blocks("flash2", seq=seq, head_dim=head_dim, heads=HEADS, batch=1, causal=causal,
                              dtype="fp16", gpu="H200-measured", backward=True)


def measure(results):
    for (head_dim, causal, seq), kv_heads in product(SHAPES, KV_HEADS):
        q, do = (torch.randn(1, HEADS, seq, head_dim, device=probe.DEVICE, dtype=torch.float16) for _ in range(2))
        k, v = (torch.randn(1, kv_heads, seq, head_dim, device=probe.DEVICE, dtype=torch.float16) for _ in range(2))
        block_q, block_kv = tiles(head_dim, causal, seq)
        calls, consts, _ = launches(q, k, v, do, causal, (block_q, block_kv))
        for kernel in ("dkdv", "dq"):
            row = dict(kernel=kernel, head_dim=head_dim, causal=causal, seq=seq, batch=1, heads=HEADS,
                       kv_heads=kv_heads, dtype="fp16", block_q=block_q, block_kv=block_kv,
                       num_warps=consts[kernel]["num_warps"])
            results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(calls[kernel])}))
            print(f"d={head_dim} {'causal' if causal else 'full'} N={seq} H_kv={kv_heads} {kernel}: "
                  f"{row.get('ms', row.get('error'))}", flush=True)


def main(argv=None):
    probe.script(__doc__, "bwd_gqa.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

"""flash2's backward kernels with several query heads per K/V head: a few long dK/dV programs against many short ones.

    python -m benchmarks.bwd_gqa --out $OUT                                  # GPU: $OUT/bwd_gqa.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.bwd_gqa --out /tmp/probe --smoke  # CPU: every code path, tiny

The dK/dV kernel holds one K/V block per program and loops over every query head of its group: at batch 1 and 16
query heads, 16, 8, 4 and 2 K/V heads give the same work in 8 times fewer, 8 times longer programs, causal (a ramp:
the first K/V blocks see every Q block) or not, d = 64 and 128, N = 2K and 8K, fp16, at the backward's tiles
(gpusim.best_blocks(backward=True), which the trainable runs). Each kernel (dK/dV, then dQ, whose programs stay one
per Q block and head) timed alone, replayed from a CUDA graph (probe.graph_ms, as the held-out sets' rows are), with
the compiled kernel's resources (benchmarks/bwd_kernels.py's launches), cold: the inputs copied past twice the L2 and
rotated, so that each timed launch reads them from DRAM, as gpusim prices a launch's first touch (run 119 replayed one
set, which stayed in L2 where it fit; run 127 measures as here).
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bwd_kernels import cold_launches
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)

KV_HEADS = (16, 8, 4, 2)
HEADS = 16
SHAPES = tuple(product((64, 128), (False, True), (2048, 8192)))  # (head_dim, causal, seq)
SMOKE = dict(KV_HEADS=(2, 1), HEADS=2, SHAPES=((16, True, 64),), L2_BYTES=0)


def tiles(head_dim, causal, seq):
    return gpusim.best_blocks("flash2", seq=seq, head_dim=head_dim, heads=HEADS, batch=1, causal=causal,
                              dtype="fp16", gpu="H200-measured", backward=True)


def time_alone(results, kernels, head_dim, causal, seq, heads, kv_heads, tiles, l2_bytes):
    """Each of the backward's `kernels` alone at batch 1, `heads` query heads over `kv_heads` K/V heads, at `tiles`,
    cold (inputs rotated past l2_bytes), replayed from a CUDA graph: a row each, with its ms."""
    calls, consts, copies = cold_launches((1, heads, seq, head_dim), (1, kv_heads, seq, head_dim), causal, tiles,
                                          l2_bytes)
    for kernel in kernels:
        row = dict(kernel=kernel, head_dim=head_dim, causal=causal, seq=seq, batch=1, heads=heads, kv_heads=kv_heads,
                   dtype="fp16", block_q=tiles[0], block_kv=tiles[1], num_warps=consts[kernel]["num_warps"],
                   l2="cold", copies=copies)
        results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(calls[kernel])}))
        print(f"d={head_dim} {'causal' if causal else 'full'} {tiles} N={seq} H_kv={kv_heads} {kernel}: "
              f"{row.get('ms', row.get('error'))}", flush=True)


def measure(results):
    for (head_dim, causal, seq), kv_heads in product(SHAPES, KV_HEADS):
        time_alone(results, ("dkdv", "dq"), head_dim, causal, seq, HEADS, kv_heads, tiles(head_dim, causal, seq),
                   L2_BYTES)


def main(argv=None):
    probe.script(__doc__, "bwd_gqa.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

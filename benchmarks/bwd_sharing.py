"""flash2's backward kernels with m programs on each SM: what a step costs when resident programs share an SM.

    python -m benchmarks.bwd_sharing --out $OUT                                  # GPU: $OUT/bwd_sharing.json, ~1 min
    TRITON_INTERPRET=1 python -m benchmarks.bwd_sharing --out /tmp/probe --smoke  # CPU: every code path, tiny

The d = 64 backward is priced with opposite-sign errors per kernel (bwd_kernels.json, bwd_gqa.json: dQ slow at every
tile, dK/dV at 64 x 64 fast), and its kernels hold 1 to 5 programs per SM, which the model lets take turns on the
SM's units. Here each kernel runs alone in one wave of 132 x m programs (m = 1 up to the programs gpusim has an SM hold
of it, at most 5), each program J = 4 or 16 steps, non-causal, fp16, batch 1: dQ with one Q block per head (it holds
Br = block_q rows, N = block_q, and streams K/V blocks of Bc = block_kv rows, N_kv = J x block_kv), dK/dV with one K/V
block per head (it holds Br = block_q rows of K and V, N_kv = block_q, and streams Q blocks of Bc = block_kv rows, N =
J x block_kv), heads = 132 x m, as many K/V heads, cold: the inputs copied past twice the L2 and rotated, so that
each timed launch reads its tiles from DRAM, as gpusim prices a launch's first touch. Run 124 gave dK/dV N_kv =
block_kv and N = J x block_q (a K/V block partly masked, J x block_q / block_kv steps, where the tiles differ), and
replayed one input set, whose tiles stayed in L2 where they fit; run 126 measures as above. The slope from J = 4 to
16 is one step of each of the m programs on its SM, the prologue and the launch taken out. Each launch replayed from
a CUDA graph (probe.graph_ms), at gpusim's launch rule for the tile (benchmarks.bwd_kernels.launches).
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bwd_kernels import cold_launches
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)

STEPS = (4, 16)
MOST = 5  # programs per SM at most
HEADS = 132  # one program per SM of the H200 for each m
TILES = {64: ((64, 32), (64, 64), (128, 32), (128, 64)), 128: ((64, 32), (128, 64))}
SMOKE = dict(STEPS=(1, 2), MOST=2, HEADS=1, TILES={16: ((16, 16),)}, L2_BYTES=0)


def shape(kernel, tiles, steps):
    """(N, N_kv) that give each program of `kernel` one whole block of Br = block_q rows and `steps` steps of Bc =
    block_kv rows: dQ holds Q's rows and streams K/V's, dK/dV holds K/V's and streams Q's."""
    block_q, block_kv = tiles
    return (block_q, steps * block_kv) if kernel == "dq" else (steps * block_kv, block_q)


def resident(kernel, head_dim, tiles):
    """The programs gpusim has an SM hold of the kernel at these tiles, at most MOST."""
    seq, seq_kv = shape(kernel, tiles, STEPS[-1])
    result = gpusim.simulate("flash2", seq=seq, seq_kv=seq_kv, head_dim=head_dim, heads=HEADS, dtype="fp16",
                             gpu="H200-measured", backward=True, backward_blocks=tiles)
    return min(MOST, next(k.blocks_per_sm for k in result.kernels if k.name == kernel))


def measure(results):
    for head_dim in TILES:
        for tiles, kernel in product(TILES[head_dim], ("dkdv", "dq")):
            for per_sm, steps in product(range(1, resident(kernel, head_dim, tiles) + 1), STEPS):
                seq, seq_kv = shape(kernel, tiles, steps)
                heads = HEADS * per_sm
                calls, consts, copies = cold_launches((1, heads, seq, head_dim), (1, heads, seq_kv, head_dim), False,
                                                      tiles, L2_BYTES)
                row = dict(kernel=kernel, head_dim=head_dim, block_q=tiles[0], block_kv=tiles[1], per_sm=per_sm,
                           steps=steps, seq=seq, seq_kv=seq_kv, batch=1, heads=heads, dtype="fp16",
                           num_warps=consts[kernel]["num_warps"], l2="cold", copies=copies)
                results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(calls[kernel])}))
                print(f"d={head_dim} {tiles} {kernel} m={per_sm} J={steps}: {row.get('ms', row.get('error'))}",
                      flush=True)


def main(argv=None):
    probe.script(__doc__, "bwd_sharing.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

"""A ragged edge: what the last Q and K/V blocks cost when the sequence stops inside them.

    python -m benchmarks.ragged_tiles --out $OUT          # GPU: $OUT/ragged_tiles.json, about 1 min
    TRITON_INTERPRET=1 python -m benchmarks.ragged_tiles --out /tmp/p --smoke

flash2 (at 64 x 64 and 128 x 128) and the Hopper kernel (its own tiles, 128 x 128 at these shapes), non-causal, fp16,
N = N_kv from 385 to 512 (four blocks of 128 rows, the last one 1 to 128 rows full) and 513 (a fifth block of one
row), batch 1 and 132 x 8 heads (eight waves of programs at one program per SM), d 64 and 128: the median GPU time per
launch, replayed from a CUDA graph cycling through enough input copies to read them from DRAM ("cold", as the fitted
and held-out sets are timed). A kernel's dots multiply whole tiles (tl.dot on block_q x block_kv, the rows and keys
past the edge masked, not skipped): if that is what its time follows, the time steps up at 513 and stays level from
385 to 512, where the counted FLOPs (the valid rows times the valid keys) grow by 1.8x.
"""
from itertools import product

import torch

from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import flash2_attention, hopper_attention

SEQS = (385, 416, 448, 480, 512, 513)
HEADS = 132 * 8
HEAD_DIMS = (64, 128)
KERNELS = {"flash2_64x64": dict(block_q=64, block_kv=64), "flash2_128x128": dict(block_q=128, block_kv=128),
           "hopper": {}}
SMOKE = dict(SEQS=(17, 32), HEADS=2, HEAD_DIMS=(16,), L2_BYTES=0,
             KERNELS={"flash2_16x16": dict(block_q=16, block_kv=16)})


def call(name, tiles):
    if name.startswith("hopper"):
        return lambda q, k, v: hopper_attention(q, k, v, **tiles)
    return lambda q, k, v: flash2_attention(q, k, v, **tiles)


def measure(results):
    for head_dim, (name, tiles), seq in product(HEAD_DIMS, KERNELS.items(), SEQS):
        if name.startswith("hopper") and not torch.cuda.is_available():
            continue  # the Hopper kernel needs an sm_90 GPU (its smoke run has none)
        sets = probe.input_sets(((1, HEADS, seq, head_dim),) * 3, L2_BYTES)
        fn = call(name, tiles)
        timed = cycling([lambda s=s: fn(*s) for s in sets])
        row = dict(kernel=name, head_dim=head_dim, seq=seq, seq_kv=seq, batch=1, heads=HEADS, causal=False,
                   dtype="fp16", **tiles, l2="cold", copies=len(sets))
        results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(timed)}))
        print(f"d={head_dim} {name} N={seq}: {row.get('ms', row.get('error'))}", flush=True)
        del sets


def main(argv=None):
    probe.script(__doc__, "ragged_tiles.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

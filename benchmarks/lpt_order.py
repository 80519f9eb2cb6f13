"""The Hopper kernel's causal launches in two orders: its longest programs first, and in order.

    python -m benchmarks.lpt_order --out $OUT          # GPU: $OUT/lpt_order.json, about 2 min
    TRITON_INTERPRET=1 python -m benchmarks.lpt_order --out /tmp/p --smoke

hopper_attention, causal, fp16, batch 1, at its own launch for the head dim (d = 128: 128 x 128, one program per SM;
d = 64: 128 x 64, two), with lpt_heads = 0 (each head's Q blocks in order, head after head), 1 (each head's last Q
block first) and, at d = 128, 4 (the launch table's: groups of four heads, their last Q blocks first), at 2-32 heads
and N = 2K-16K: the median GPU time per launch, replayed from a CUDA graph cycling through enough input copies to read
them from DRAM ("cold", as benchmarks/last_wave.py times its launches). The same programs in another order: what the
order alone changes, where a last wave holds a causal launch's longest programs (in order) or its shortest (longest
first), which cost.list_schedule prices for one program per SM (gpusim's prediction was committed before this ran).
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import hopper_attention

ORDERS = {128: (0, 1, 4), 64: (0, 1)}  # lpt_heads at each head dim
TILES = {128: (128, 128), 64: (128, 64)}
HEADS = (2, 4, 8, 16, 32)
SEQS = (2048, 4096, 8192, 16384)
SMOKE = dict(ORDERS={64: (0, 1)}, TILES={64: (64, 64)}, HEADS=(2,), SEQS=(128,), L2_BYTES=0)


def time_order(results, head_dim, lpt_heads, heads, seq, l2_bytes):
    """One causal launch, cold, replayed from a CUDA graph: its row and ms."""
    tiles = gpusim.Tiles(*TILES[head_dim], lpt_heads=lpt_heads)
    sets = probe.input_sets(((1, heads, seq, head_dim),) * 3, l2_bytes)
    call = cycling([lambda s=s: hopper_attention(*s, causal=True, tiles=tiles) for s in sets])
    row = dict(head_dim=head_dim, dtype="fp16", causal=True, batch=1, heads=heads, seq=seq, block_q=tiles.block_q,
               block_kv=tiles.block_kv, lpt_heads=lpt_heads, l2="cold", copies=len(sets))
    results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
    print(f"d={head_dim} lpt_heads={lpt_heads} H={heads} N={seq}: {row.get('ms', row.get('error'))}", flush=True)


def measure(results):
    for head_dim in ORDERS:
        for lpt_heads, heads, seq in product(ORDERS[head_dim], HEADS, SEQS):
            time_order(results, head_dim, lpt_heads, heads, seq, L2_BYTES)


def main(argv=None):
    probe.script(__doc__, "lpt_order.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

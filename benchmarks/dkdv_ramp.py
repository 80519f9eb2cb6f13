"""flash2's dK/dV kernel alone on launches of a few problems and more programs than SMs: the order its programs run in.

    python -m benchmarks.dkdv_ramp --out $OUT                                  # GPU: $OUT/dkdv_ramp.json, about 2 min
    TRITON_INTERPRET=1 python -m benchmarks.dkdv_ramp --out /tmp/probe --smoke  # CPU: every code path, tiny

dK/dV's grid is (K/V blocks, batch x K/V heads): each problem's K/V blocks launch in order j = 0, 1, ..., and in a
causal launch block j = 0 sees every Q block, so each problem launches its longest program first and its shortest
last. With one program per SM and more programs than SMs, the SMs that took a problem's last (shortest) blocks free
first and take the next programs, so the launch ends near its longest program's end, whatever came after it. At batch
1, 16 query heads over 1, 2 or 4 K/V heads and N = 8K to 24K, the tiles (128, 32) and (128, 64) (one program per SM at
d = 64 and 128), causal or not (the control: every program alike): 64 to 384 programs on the H200's 132 SMs. Each
launch timed alone, replayed from a CUDA graph, cold (the inputs copied past twice the L2 and rotated, as
benchmarks/bwd_gqa.py times them); gpusim prices each at its tiles.
"""
from itertools import product

from benchmarks import probe
from benchmarks.bwd_gqa import time_alone
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)

HEADS = 16
HEAD_DIMS = (64, 128)
TILES = ((128, 32), (128, 64))
SHAPES = ((1, 8192), (1, 12288), (1, 16384), (1, 24576), (2, 8192), (2, 12288), (2, 16384), (2, 24576),
          (4, 8192), (4, 12288))  # (kv_heads, seq): 64 to 384 programs of 128 K/V rows
SMOKE = dict(HEADS=2, HEAD_DIMS=(16,), TILES=((16, 16),), SHAPES=((1, 64), (2, 48)), L2_BYTES=0)


def measure(results):
    for head_dim, causal, tiles, (kv_heads, seq) in product(HEAD_DIMS, (True, False), TILES, SHAPES):
        time_alone(results, ("dkdv",), head_dim, causal, seq, HEADS, kv_heads, tiles, L2_BYTES)


def main(argv=None):
    probe.script(__doc__, "dkdv_ramp.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

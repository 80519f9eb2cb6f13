"""Which launch option carries the Hopper kernel's cost per program at d = 64: run 137's waves at other knobs.

    python -m benchmarks.hopper_starts --out $OUT                                  # GPU: $OUT/hopper_starts.json, 2 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_starts --out /tmp/p --smoke      # CPU: the launches, tiny

Run 137 (benchmarks/hopper_waves.py) found a wave of short Hopper programs at d = 64 costing 1.0-1.7 us a program more
than gpusim prices, at d = 128 none. Here the same launches (one Q block and J = 1 or 4 K/V blocks; causal, N = 1 or 4
Q blocks) at 2 and 16 waves, at the kernel's own launch and with one knob changed at a time (VARIANTS: the causal
launch's stages, its rotated loop and a 128 x 128 tile; the full launch software-pipelined), d = 64 and 128,
cold, replayed from a CUDA graph. The slope from 2 to 16 waves is a wave's steady-state cost; gpusim prices each row at
the knobs it ran.
"""
from itertools import product

from benchmarks import probe
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.hopper_waves import own_tiles, time_waves

VARIANTS = {"causal, own launch": (True, dict()), "causal, 2 stages": (True, dict(num_stages=2)),
            "causal, not rotated": (True, dict(overlap=False)), "causal, 128 x 128": (True, dict(block_kv=128)),
            "full, own launch": (False, dict()),
            "full, software-pipelined": (False, dict(warp_specialize=False, num_warps=8))}
STEPS = (1, 4)
WAVES = (2, 16)
HEAD_DIMS = (64, 128)
SMS = 132  # the H200's
SMOKE = dict(VARIANTS={"causal, own launch": (True, dict())}, STEPS=(1,), WAVES=(1,), HEAD_DIMS=(64,), SMS=1,
             L2_BYTES=0)


def measure(results):
    for (name, (causal, knobs)), head_dim, steps, waves in product(VARIANTS.items(), HEAD_DIMS, STEPS, WAVES):
        tiles = own_tiles(head_dim, causal, **knobs)
        time_waves(results, head_dim, causal, steps, waves, tiles, SMS, L2_BYTES, variant=name,
                   **{key: value for key, value in tiles.knobs.items() if key != "lpt_heads"})


def main(argv=None):
    probe.script(__doc__, "hopper_starts.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

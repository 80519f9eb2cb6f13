"""How much of a short Hopper program's cost is its bytes: run 137's waves with K and V shared by every query head.

    python -m benchmarks.hopper_kv --out $OUT                                  # GPU: $OUT/hopper_kv.json, 1 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_kv --out /tmp/p --smoke      # CPU: the launches, tiny

Run 139 found the d = 64 and d = 128 programs stalling in the same places, and run 137's wave, less gpusim's busy time
(bytes at their bandwidth share, compute), set-up and two DRAM latencies, leaving 1.7-2.4 us at d = 64 and 0.9-1.8 us
at d = 128: the model splits a program's time between what it costs whatever its size and what its bytes cost
otherwise than the GPU does. Here run 137's launches (the kernel's own launch, one Q block and J = 1 or 4 K/V blocks;
causal, N = 1 or 4 Q blocks; 2 and 16 waves; d = 64 and 128; cold, replayed from a CUDA graph) run twice: with a K/V
head per query head (as run 137), and with one K/V head for all (GQA: K and V read from DRAM once a launch, then from
L2). Q, O and the programs stay the same; only where K and V come from changes.

Prediction (committed before the run, with gpusim's figures from the code as it stands): one K/V head cuts a wave's
steady-state cost (the slope from 2 to 16 waves) by less than gpusim's price of it falls: not causal, at J = 1, by
0.2-0.8 us at d = 64 and 0.5-1.5 us at d = 128, where gpusim's falls by 0.90 and 2.44 us (causal, J = 1: gpusim 0.26
and 1.93 us; at J = 4 the causal launches barely move in gpusim, 0.03 and 0.36 us), so that with one K/V head gpusim /
measured falls below 0.75 at d = 64 and below 0.9 at d = 128, not causal.
"""
from itertools import product

from benchmarks import probe
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.hopper_waves import own_tiles, time_waves

KV_HEADS = (None, 1)  # a K/V head per query head, or one for all
STEPS = (1, 4)
WAVES = (2, 16)
HEAD_DIMS = (64, 128)
SMS = 132  # the H200's
SMOKE = dict(KV_HEADS=(1,), STEPS=(1,), WAVES=(1,), HEAD_DIMS=(64,), SMS=1, L2_BYTES=0)


def measure(results):
    for head_dim, causal, kv_heads, steps, waves in product(HEAD_DIMS, (False, True), KV_HEADS, STEPS, WAVES):
        time_waves(results, head_dim, causal, steps, waves, own_tiles(head_dim, causal), SMS, L2_BYTES, kv_heads)


def main(argv=None):
    probe.script(__doc__, "hopper_kv.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

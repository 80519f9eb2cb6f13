"""Which knob of the causal d = 64 Hopper launch makes its lone program wait: run 142's launch held to one program an
SM by its 6 stages, with its loop rotated or not, its mask split, behind a branch or on every block, and its longest
programs first or in order.

    python -m benchmarks.hopper_lone --out $OUT                                  # GPU: $OUT/hopper_lone.json, 1 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_lone --out /tmp/p --smoke      # CPU: the launches, tiny

The second trial of docs/perf.md (report_launches.lone_latency) measures what a lone program of each launch kind waits
besides gpusim's chain of it: 4.43 us for the causal d = 64 launch (128 x 64, rotated, mask split, longest first),
1.44 us for the causal d = 128 one (128 x 128, not rotated, mask behind a branch). Here the d = 64 launch at 6 stages
(one program an SM: runs 141-142) with one knob changed at a time (VARIANTS), N = 1 and 4 Q blocks, 2 and 16 waves of
132 programs, cold, replayed from a CUDA graph; gpusim prices each at the knobs it ran, so that what a lone program
waits besides gpusim's chain can be read per knob.

Prediction (committed before the run): the rotated loop carries most of it: not rotated, a lone program at N = 1 costs
1.5-3 us less a wave (run 138 found the unrotated launch 0.3-0.5 us a program cheaper with two an SM, which overlap
most of it); the mask's form and the launch order move it by under 0.5 us.

Run 143 found the unrotated launch holding two programs an SM at 6 stages (115,712 B of shared memory); run 144 adds it
at 7 stages. Its prediction (committed before it): at 7 stages the unrotated launch holds one program an SM, and its
lone program at N = 1 costs 1.5-3 us less a wave than the rotated one (6.85 us in run 143).
"""
from itertools import product

from benchmarks import probe
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.hopper_pairs import resident
from benchmarks.hopper_waves import own_tiles, time_waves

VARIANTS = {"own launch": {}, "not rotated": dict(overlap=False), "mask behind a branch": dict(mask="branch"),
            "mask on every block": dict(mask="every"), "in order": dict(lpt_heads=0),
            "not rotated, 7 stages": dict(overlap=False, num_stages=7)}
STAGES = 6  # one program an SM (runs 141-142)
STEPS = (1, 4)
WAVES = (2, 16)
SMS = 132  # the H200's
SMOKE = dict(VARIANTS={"not rotated": dict(overlap=False)}, STEPS=(1,), WAVES=(1,), SMS=1, L2_BYTES=0)


def measure(results):
    for (name, knobs), steps, waves in product(VARIANTS.items(), STEPS, WAVES):
        tiles = own_tiles(64, True, **{"num_stages": STAGES, **knobs})
        registers, shared, held = resident(tiles)
        time_waves(results, 64, True, steps, waves, tiles, SMS, L2_BYTES, variant=name, registers=registers,
                   shared_bytes=shared, resident=held, **tiles.knobs)


def main(argv=None):
    probe.script(__doc__, "hopper_lone.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

"""flash2's causal dK/dV kernel alone, at tiles whose SMs hold two or more programs, as its launch grows past one wave.

    python -m benchmarks.dkdv_edge --out $OUT                                  # GPU: $OUT/dkdv_edge.json, about 2 min
    TRITON_INTERPRET=1 python -m benchmarks.dkdv_edge --out /tmp/probe --smoke  # CPU: every code path, tiny

A causal dK/dV launch runs each problem's longest program first (K/V block j = 0 sees every Q block) and its shortest
last (benchmarks/dkdv_ramp.py measured it at one program per SM). With b programs per SM the launch fills
SMs x b slots; one problem more than that puts its programs, the longest first, on the slots the short ones free.
Batch 1, as many K/V heads as query heads, fp16, d = 64 at 64 x 64 (b = 2), 32 x 32 (b = 5) and 16 x 32 (b = 7), d =
128 at 64 x 32 (b = 2), the head count stepped so the programs cross the H100's and H200's 132 x b slots and one
more wave. Each launch timed alone, replayed from a CUDA graph, cold (the inputs copied past twice the L2 and rotated,
as benchmarks/bwd_gqa.py times them); gpusim prices each at its tiles.

The prediction, committed before the run: the measured time never falls by more than 3% from one launch to the next
larger one, where gpusim's last-wave rule (a longest-first launch past one wave priced as the rest spread evenly
over the slots plus its last, shortest, programs) falls 7-35% one problem past the slots (H100-measured preset: 64 x
64, 256 -> 288 programs, 71 -> 66 us; 32 x 32, 640 -> 704, 54 -> 41 us).
"""
from benchmarks import probe
from benchmarks.bwd_gqa import time_alone
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)

CASES = ((64, (64, 64), 2048, range(4, 25)), (128, (64, 32), 1024, range(4, 37, 2)),
         (64, (32, 32), 1024, range(12, 46, 2)), (64, (16, 32), 512, range(20, 66, 2)))  # (d, tiles, seq, heads)
SMOKE = dict(CASES=((16, (16, 16), 64, range(1, 3)),), L2_BYTES=0)


def measure(results):
    for head_dim, tiles, seq, heads in CASES:
        for h in heads:
            time_alone(results, ("dkdv",), head_dim, True, seq, h, h, tiles, L2_BYTES)


def main(argv=None):
    probe.script(__doc__, "dkdv_edge.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

"""flash2's forward from one program an SM to two on every SM: where the second program's cost comes from.

    python -m benchmarks.pair_edge --out $OUT          # GPU: $OUT/pair_edge.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.pair_edge --out /tmp/p --smoke

flash2 with one Q block per program and J = 16 K/V blocks each (batch 1, heads = programs: 132, one an SM on the
H100's and H200's 132 SMs; 136, four SMs holding two; 166, 198 and 232; 264, every SM two), at the kernel's own
launch, cold, replayed from a CUDA graph (benchmarks/program_start.py's time_q_blocks), at tiles whose SMs hold two
or more: d = 64 at 32 x 32, 64 x 32, 64 x 64 and 128 x 64, d = 128 at 32 x 32, 64 x 32 and 64 x 64.
Run 217 (results/h100/sm_edge.json) measured 136 programs 8-19% over 132 at every tile it timed, where gpusim's
Schedule at two programs an SM prices a program's step from faster than alone (32 x 32) to twice as slow (64 x 32,
64 x 64: a lone program's pipeline, cost.lone_pipeline, is not credited beside another). Between 136 and 264 the
SMs holding two grow from 4 to 132, and with them the bytes the whole GPU moves at once.

The prediction, committed before the run: the measured time rises from each count to the next at every tile (none
falls by more than 2%); at 136 it is 5-20% over 132, and at 264 over 136 rises further at every tile, the most at
the widest tiles (the L2 and DRAM shared by twice the programs). gpusim as it stands (H100-measured) prices 136 at
1.00-1.05x 132 at 32 x 32 and 1.46-1.58x at the other tiles, 264 at 0.89-1.20x 136, and 264 below 232 at 32 x 32 (d
= 64: 23.3 -> 20.7 us; d = 128: 32.1 -> 29.5 us).
"""
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.program_start import programs_script

STEPS = (16,)
PROGRAMS = (132, 136, 166, 198, 232, 264)
TILES = {64: ((32, 32), (64, 32), (64, 64), (128, 64)), 128: ((32, 32), (64, 32), (64, 64))}
SMOKE = dict(STEPS=(1,), PROGRAMS=(1, 2), TILES={16: ((16, 16),)}, L2_BYTES=0)


def main(argv=None):
    programs_script(__doc__, "pair_edge.json", globals(), argv)


if __name__ == "__main__":
    main()

"""flash2's forward as its launch passes one program per SM: every SM alone, then a few holding two.

    python -m benchmarks.sm_edge --out $OUT          # GPU: $OUT/sm_edge.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.sm_edge --out /tmp/p --smoke

flash2 with one Q block per program and J = 4 or 16 K/V blocks each (batch 1, heads = 116 to 152 in fours: the
H100's and H200's 132 SMs each hold one program, then 4 to 20 of them two), at the kernel's own launch, cold,
replayed from a CUDA graph (benchmarks/program_start.py's time_q_blocks). At 32 x 32 gpusim priced a program beside
another on its SM faster than one alone (another's steps fill its first loads), so its launches got faster past 132
programs, where 128 SMs still hold one each; 64 x 32 and 64 x 64 are the controls (benchmarks/last_wave.py measured
one against two per SM at those).

The prediction, committed before the run: at 32 x 32 the measured time does not fall past 132 programs, where gpusim
falls 6-11% (H100-measured preset, d = 64, J = 16: 23.3 -> 20.7 us); at the controls both rise.
"""
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.program_start import programs_script

STEPS = (4, 16)
PROGRAMS = tuple(range(116, 153, 4))
TILES = {64: ((32, 32), (64, 32), (64, 64)), 128: ((32, 32), (64, 32))}
SMOKE = dict(STEPS=(1,), PROGRAMS=(1, 2), TILES={16: ((16, 16),)}, L2_BYTES=0)


def main(argv=None):
    programs_script(__doc__, "sm_edge.json", globals(), argv)


if __name__ == "__main__":
    main()

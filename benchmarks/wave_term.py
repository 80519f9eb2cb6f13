"""flash2's forward in waves that do not fill the GPU's slots: is a launch of one wave its longest program's time?

    python -m benchmarks.wave_term --out $OUT          # GPU: $OUT/wave_term.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.wave_term --out /tmp/p --smoke

flash2 with one Q block per program and J = 8 or 32 K/V blocks each (batch 1, heads = programs: 132 to 792 in steps
of 66, so every other count leaves half the SMs a program fewer), at the kernel's own launch, cold, replayed from a
CUDA graph (benchmarks/program_start.py's time_q_blocks), at tiles no probe has timed: 32 x 64 and 16 x 64 at d =
64, 32 x 64 and 16 x 32 at d = 128 (two to five programs an SM). gpusim prices a launch's waves before its last as
every program's tau at b programs an SM, less the last wave's programs' taus at the wave's share of the bandwidth
(cost.before_last), which leaves a term in a launch of one wave that does not fill its slots: (each program's tau at
b an SM less its tau at the wave's share) / slots. Run 219 (results/h100/pipeline_beside.json) measured launches of
198 programs that the model prices 1.08-1.39x. The trial (then benchmarks/report_launches.last_wave_once; adopted on
this run as cost.before_last) subtracts the last wave's programs at b an SM, as total counted them, so a launch of
one wave costs its longest program's time. Before this run it moves the H200's held-out sets 6,468 -> 6,474 of 6,688
rows within 20%, the H100's 828 -> 836 of 880, bench.json (288 of 290), tiles.json (132 of 132) and decode.json (69
of 72) not at all, and bench_bwd.json 91 -> 90 of 96.

The prediction, committed before the run: of the 88 launches, those the two price more than 10% apart (24 on
H100-measured, 14 on H200-measured, at counts that leave some SMs a program fewer) come within 20% under the trial at
more launches than under the model as it stands, and no launch of the probe within 20% now leaves the band under the
trial. The measured time never falls by more than 2% from one count to the next larger, where the model prices 32 x 64
at d = 64 falling from 198 to 264 programs (H100-measured: 9% at J = 8 and 32; the trial 5% and none) from the
SMs holding one program, whose 32-row chain is priced too slow (lone launches of 32 x 32 at 1.46-1.55x, run 218). The
trial is adopted if the count holds.
"""
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.program_start import programs_script

STEPS = (8, 32)
PROGRAMS = tuple(range(132, 793, 66))
TILES = {64: ((32, 64), (16, 64)), 128: ((32, 64), (16, 32))}
SMOKE = dict(STEPS=(1,), PROGRAMS=(1, 2), TILES={16: ((16, 16),)}, L2_BYTES=0)


def main(argv=None):
    programs_script(__doc__, "wave_term.json", globals(), argv)


if __name__ == "__main__":
    main()

"""flash2's forward at one to four programs an SM on the H200: does a program's software pipeline still hide its
loads beside another program on its SM?

    python -m benchmarks.pipeline_beside --out $OUT          # GPU: $OUT/pipeline_beside.json, about a minute
    TRITON_INTERPRET=1 python -m benchmarks.pipeline_beside --out /tmp/p --smoke

flash2 with one Q block per program and J = 4, 16 or 32 K/V blocks each (batch 1, heads = programs: 132, one an SM
on the H200's 132 SMs; 198, 264, 396 and 528), at the kernel's own launch, cold, replayed from a CUDA graph
(benchmarks/program_start.py's time_q_blocks): the 4-warp tiles of 64 rows (d = 64: 64 x 32, 64 x 64, 64 x 128; d =
128: 64 x 32, 64 x 64), and 128 x 64 at d = 64 (8 warps) as the control. A lone 4-warp program of 64 rows or more is
priced with its loads pipelined S - 1 tiles deep (cost.lone_pipeline, Little's law, measured on lone programs by run
95); beside another program on its SM it waits for every step's loads whole. Run 218 (results/h100/pair_edge.json)
measured the second program costing far less than that where few SMs hold two, and the cost growing with the SMs
that do. The trial (then benchmarks/report_launches.pipelined_beside; adopted on this run as cost.pipelined_beside):
the pipeline's credit at any programs an SM (Triton's pipeline is in the program's code, not the SM's), the
bandwidth the programs share left to the SM's busy time. Before this run it moves the H200's held-out sets 6,457 ->
6,468 of 6,688 rows within 20% and the H100's 821 -> 828 of 880, the fitted files not at all.

The prediction, committed before the run: of the 90 launches, the 20 the two price more than 10% apart (most of
them the 4-warp tiles at 198 and 264 programs; 64 x 128 at 396; d = 128, 64 x 32 at 528) come within 20% under the
trial at more launches than under the model as it stands; the control's 15 launches are priced the same by both.
The measured time at 264 programs over the same tile's at 132: at 64 x 32 (d = 64, J = 4, 16, 32) gpusim now says
1.27, 1.60, 1.76, the trial 1.00, 1.12, 1.21; at 64 x 64 now 1.33, 1.68, 1.82, the trial 1.12, 1.50, 1.67. The
trial is adopted if the count holds and the probe's other launches lose none within 20%.
"""
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.program_start import programs_script

STEPS = (4, 16, 32)
PROGRAMS = (132, 198, 264, 396, 528)
TILES = {64: ((64, 32), (64, 64), (64, 128), (128, 64)), 128: ((64, 32), (64, 64))}
SMOKE = dict(STEPS=(1,), PROGRAMS=(1, 2), TILES={16: ((16, 16),)}, L2_BYTES=0)


def main(argv=None):
    programs_script(__doc__, "pipeline_beside.json", globals(), argv)


if __name__ == "__main__":
    main()

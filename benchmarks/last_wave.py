"""A launch's last wave: what the programs left over after the full waves cost, by how many share each SM.

    python -m benchmarks.last_wave --out $OUT          # GPU: $OUT/last_wave.json, about 2 min
    TRITON_INTERPRET=1 python -m benchmarks.last_wave --out /tmp/p --smoke

flash2 with one Q block per program and J K/V blocks each (batch 1, heads = 132 x m, so m programs per SM of the H200
for m = 1 .. 12), at tiles whose SMs hold b = 2 to 5 programs at once, at the kernel's own launch (its rule's warps
and stages): the median GPU time per launch, replayed from a CUDA graph cycling through enough input copies to read
them from DRAM ("cold", as benchmarks/program_start.py times its waves). Past m = b a launch has a last wave of m mod b
programs per SM (none where b divides m): where they run with fewer programs beside them than b, each runs faster
than a program of a full wave, and the step in time from m = b to b + 1 is less than a full wave's.
"""
from benchmarks import probe
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.program_start import sweep

STEPS = (4, 16)
PER_SM = tuple(range(1, 13))
HEADS = 132  # one program per SM of the H200 for each m
TILES = {64: ((64, 32), (64, 64), (128, 64)), 128: ((64, 32), (64, 64))}  # b = 5, 4, 2; 3, 2 (gpusim's occupancy)
SMOKE = dict(STEPS=(1,), PER_SM=(1, 2), HEADS=2, TILES={16: ((16, 16),)}, L2_BYTES=0)


def measure(results):
    sweep(results, TILES, STEPS, PER_SM, "per_sm", L2_BYTES, HEADS)


def main(argv=None):
    probe.script(__doc__, "last_wave.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

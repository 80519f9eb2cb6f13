"""How much of their own cost two short Hopper programs on one SM overlap: run 137's causal d = 64 launch, which holds
two programs an SM, against the same launch held to one by its stages' shared memory.

    python -m benchmarks.hopper_pairs --out $OUT                                  # GPU: $OUT/hopper_pairs.json, 1 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_pairs --out /tmp/p --smoke      # CPU: the launches, tiny

The trial of a short Hopper program's own cost (docs/perf.md, report_launches.program_cost) overpriced the launches of
two programs an SM when the two take turns at it, and the model underprices them when they overlap it whole. Here the
causal d = 64 launch (128 x 64, software-pipelined, rotated, 8 warps) at its own 3 stages and at 4 and 5 (whose shared
memory gpusim says holds it to one program an SM; the compiled kernel's registers and shared memory say how many an
H200 SM really holds: resident), N = 1 or 4 Q blocks, 2 and 16 waves of 132 x b programs, cold, replayed from a CUDA
graph: a wave's steady-state cost a program, one an SM against two.

Prediction (committed before the run): at 4 and 5 stages the compiled kernel holds one program an SM; a wave of lone
programs costs 0.6-0.8 of a wave of two at N = 1 Q block (two programs on one SM overlap most of what each costs, not
all of it), and closer to 0.5 at N = 4, where the steps' own work, which two programs share the SM's units for,
weighs more.

Run 141 found the compiled kernel holding two programs an SM at 4 and 5 stages (gpusim's estimates of its registers
and shared memory, outside the compiled table, said one); run 142 adds 6 stages. Its prediction (committed before it):
at 6 stages the compiled kernel holds one program an SM, and 264 programs, two waves of 132 lone ones, cost 9.2-12.2 us
at N = 1 Q block (a lone program 0.6-0.8 of the 7.63 us that two sharing an SM took at 3 stages): two programs on one
SM overlap part of their own cost, not all of it.
"""
from itertools import product

from benchmarks import probe
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from benchmarks.hopper_waves import own_tiles, time_waves

STAGES = (3, 4, 5, 6)
STEPS = (1, 4)
WAVES = (2, 16)
SMS = 132  # the H200's
SMOKE = dict(STAGES=(4,), STEPS=(1,), WAVES=(1,), SMS=1, L2_BYTES=0)


def resident(tiles):
    """(registers, shared bytes, programs an H200 SM holds) of the compiled kernel at `tiles`; Nones in the interpreter."""
    import torch
    from gpusim_kernels.hopper import compiled_kernel
    if probe.INTERPRETED:
        return None, None, None
    q = torch.randn(1, 1, 128, 64, device="cuda", dtype=torch.float16)
    compiled = compiled_kernel(q, q, q, causal=True, **{"block_q": tiles.block_q, "block_kv": tiles.block_kv,
                                                         **tiles.knobs})
    res = probe.kernel_resources(compiled)
    return res["n_regs"], res["shared_bytes"], probe.h200_blocks(res, tiles.knobs["num_warps"])


def measure(results):
    for stages, steps, waves in product(STAGES, STEPS, WAVES):
        tiles = own_tiles(64, True, num_stages=stages)
        registers, shared, held = resident(tiles)
        time_waves(results, 64, True, steps, waves, tiles, SMS, L2_BYTES, num_stages=stages, registers=registers,
                   shared_bytes=shared, resident=held)


def main(argv=None):
    probe.script(__doc__, "hopper_pairs.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

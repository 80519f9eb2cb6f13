"""What a program costs when it follows another on its SM: flash2's short programs, wave after wave.

    python -m benchmarks.program_start --out $OUT          # GPU: $OUT/program_start.json, about 2 min
    TRITON_INTERPRET=1 python -m benchmarks.program_start --out /tmp/p --smoke

flash2 with one Q block per program (batch 1, heads = 132 x waves, waves = 1, 2, 4, 16) and J = 1 or 4 K/V blocks
each, at four tiles per head dim and the kernel's own launch (its rule's warps and stages): the median GPU time per
launch, replayed from a CUDA graph cycling through enough input copies to read them from DRAM ("cold", as the fitted
and held-out sets are timed: benchmarks/lone_program.py). Per tile and J the time is a line in the waves: its slope is
what a wave of programs costs in steady state (each program following another on its SM, its start and its end
included), its intercept what the launch adds once. results/h200/program_setup.json measured the same at one tile
(128 x 128) and warm; lone_program.json and shared_steps.json measured one wave only.
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import flash2_attention

STEPS = (1, 4)
WAVES = (1, 2, 4, 16)
HEADS = 132  # one program per SM of the H200 per wave
TILES = {64: ((64, 32), (64, 64), (128, 64), (128, 128)), 128: ((64, 32), (64, 64), (128, 64), (128, 128))}
SMOKE = dict(STEPS=(1,), WAVES=(1, 2), HEADS=2, TILES={16: ((16, 16),)}, L2_BYTES=0)


def time_q_blocks(results, head_dim, block_q, block_kv, steps, heads, l2_bytes, num_stages=None, **label):
    """flash2 at its own launch (or num_stages' software pipeline, a row field then) over `heads` heads of one Q block
    each (one program per head), J = steps K/V blocks, cold (inputs rotated past l2_bytes), replayed from a CUDA graph:
    a row (with the label's fields) and its ms."""
    tiles = gpusim.Tiles(block_q, block_kv, num_stages=num_stages)
    if num_stages is not None:
        label = dict(label, num_stages=num_stages)
    sets = probe.input_sets(((1, heads, block_q, head_dim), *((1, heads, steps * block_kv, head_dim),) * 2), l2_bytes)
    call = cycling([lambda s=s: flash2_attention(*s, tiles=tiles) for s in sets])
    row = dict(head_dim=head_dim, block_q=block_q, block_kv=block_kv, steps=steps, **label, heads=heads, seq=block_q,
               seq_kv=steps * block_kv, l2="cold", copies=len(sets))
    results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
    print(f"d={head_dim} {block_q}x{block_kv} J={steps} {label}: {row.get('ms', row.get('error'))}", flush=True)


def sweep(results, tiles, steps, counts, label, l2_bytes, heads=HEADS, stages=(None,)):
    """time_q_blocks at every head dim and tile of `tiles`, software-pipeline depth in `stages` (None: the kernel's
    own), J in `steps` and `heads` x m heads for m in `counts` (the row's field `label`: its waves, or its programs per
    SM)."""
    for head_dim in tiles:
        for (block_q, block_kv), s, j, m in product(tiles[head_dim], stages, steps, counts):
            time_q_blocks(results, head_dim, block_q, block_kv, j, heads * m, l2_bytes, s, **{label: m})


def programs_script(doc, name, namespace, argv=None):
    """The entry point of a probe of flash2 at one Q block per program and a count of programs a launch (sm_edge,
    pair_edge, pipeline_beside, wave_term, lone_stages): sweep over its namespace's TILES, STEPS, PROGRAMS and STAGES
    if it has them (read when it runs, after --smoke has set its SMOKE sizes) at L2_BYTES, into `name`."""
    def measure(results):
        sweep(results, namespace["TILES"], namespace["STEPS"], namespace["PROGRAMS"], "programs",
              namespace["L2_BYTES"], 1, namespace.get("STAGES", (None,)))
    probe.script(doc, name, measure, namespace, argv)


def measure(results):
    sweep(results, TILES, STEPS, WAVES, "waves", L2_BYTES, HEADS)


def main(argv=None):
    probe.script(__doc__, "program_start.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

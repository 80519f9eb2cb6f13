"""What a launch costs in a CUDA graph beside an empty kernel's: one wave of programs that load, store or copy a tile.

    python -m benchmarks.launch_parts --out $OUT          # GPU: $OUT/launch_parts.json, under a minute
    TRITON_INTERPRET=1 python -m benchmarks.launch_parts --out /tmp/p --smoke

132 programs (one per SM of the H200) or one, each doing nothing, loading a tile of fp16 elements (summed into one
value it stores), storing a tile of zeros, or copying a tile (load, then store), at 128 B, 16 KiB and 32 KiB a
program, on 4 and 8 warps: the median GPU time per launch replayed from a CUDA graph, the loads cold (inputs rotated
past twice the L2, benchmarks/bench.cycling) and warm (one input set replayed). An empty kernel of the same grid is
what launching alone costs (results/h200/lone_program.json: 0.74 us); the rest is a lone program's first load (the
level's latency and its bytes), its stores, and what the launch's end waits for them.
"""
from itertools import product

import torch
import triton
import triton.language as tl

from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)

HEADS = 132  # one program per SM of the H200
ELEMENTS = (64, 8192, 16384)  # fp16 elements a program: 128 B, 16 KiB, 32 KiB
WARPS = (4, 8)
KINDS = ("empty", "load", "store", "copy")
SMOKE = dict(HEADS=2, ELEMENTS=(64,), WARPS=(4,), L2_BYTES=0)


@triton.jit
def _tile(x_ptr, y_ptr, N: tl.constexpr, LOAD: tl.constexpr, STORE: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * N + tl.arange(0, N)
    if LOAD:
        tile = tl.load(x_ptr + offs)  # read N * 2 B
        if STORE:
            tl.store(y_ptr + offs, tile)  # write N * 2 B
        else:
            tl.store(y_ptr + tl.program_id(0), tl.sum(tile.to(tl.float32), axis=0).to(tl.float16))  # write 2 B
    elif STORE:
        tl.store(y_ptr + offs, tl.zeros([N], tl.float16))  # write N * 2 B


def measure(results):
    for programs, elements, warps, kind in product((1, HEADS), ELEMENTS, WARPS, KINDS):
        load, store = kind in ("load", "copy"), kind in ("store", "copy")
        y = torch.empty(programs * elements, device=probe.DEVICE, dtype=torch.float16)
        sets = probe.input_sets(((programs * elements,),), L2_BYTES if load else 0)
        for l2, used in (("warm", sets[:1]), ("cold", sets)) if load else (("warm", sets),):
            call = cycling([lambda x=x: _tile[(programs,)](x[0], y, elements, load, store, num_warps=warps)
                            for x in used])
            row = dict(kind=kind, programs=programs, tile_bytes=2 * elements, num_warps=warps, l2=l2,
                       copies=len(used))
            results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
            print(f"{kind:5s} programs={programs:3d} {2 * elements:6d} B warps={warps} {l2}: "
                  f"{row.get('ms', row.get('error'))}", flush=True)
        del sets


def main(argv=None):
    probe.script(__doc__, "launch_parts.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

"""Which launch option carries the Hopper kernel's cost per program at d = 64: run 137's waves at other knobs.

    python -m benchmarks.hopper_starts --out $OUT                                  # GPU: $OUT/hopper_starts.json, 2 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_starts --out /tmp/p --smoke      # CPU: the launches, tiny

Run 137 (benchmarks/hopper_waves.py) found a wave of short Hopper programs at d = 64 costing 1.0-1.7 us a program more
than gpusim prices, at d = 128 none. Here the same launches (one Q block and J = 1 or 4 K/V blocks; causal, N = 1 or 4
Q blocks) at 2 and 16 waves, at the kernel's own launch and with one knob changed at a time (VARIANTS: the causal
launch's stages, its rotated loop and a 128 x 128 tile; the full launch software-pipelined), d = 64 and 128,
cold, replayed from a CUDA graph. The slope from 2 to 16 waves is a wave's steady-state cost; gpusim prices each row at
the knobs it ran.
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import hopper_attention

VARIANTS = {"causal, own launch": (True, dict()), "causal, 2 stages": (True, dict(num_stages=2)),
            "causal, not rotated": (True, dict(overlap=False)), "causal, 128 x 128": (True, dict(block_kv=128)),
            "full, own launch": (False, dict()),
            "full, software-pipelined": (False, dict(warp_specialize=False, num_warps=8))}
STEPS = (1, 4)
WAVES = (2, 16)
HEAD_DIMS = (64, 128)
SMS = 132  # the H200's
SMOKE = dict(VARIANTS={"causal, own launch": (True, dict())}, STEPS=(1,), WAVES=(1,), HEAD_DIMS=(64,), SMS=1,
             L2_BYTES=0)


def tiles(head_dim, causal, knobs):
    """The kernel's own launch for the head dim and mask (gpusim's Config of it) with `knobs` changed."""
    own = gpusim.simulate("hopper", seq=128, head_dim=head_dim, causal=causal, dtype="fp16", gpu="H200-measured").config
    return gpusim.Tiles(**{"block_q": own.block_q, "block_kv": own.block_kv, **own.tiles.knobs, **knobs})


def measure(results):
    for (name, (causal, knobs)), head_dim, steps, waves in product(VARIANTS.items(), HEAD_DIMS, STEPS, WAVES):
        t = tiles(head_dim, causal, knobs)
        seq, seq_kv = (steps * t.block_q,) * 2 if causal else (t.block_q, steps * t.block_kv)
        k = gpusim.simulate("hopper", seq=seq, seq_kv=seq_kv, heads=SMS * 16, head_dim=head_dim, causal=causal,
                            dtype="fp16", gpu="H200-measured", tiles=t).kernels[0]
        per_head = k.programs // (SMS * 16)
        heads = max(1, SMS * k.blocks_per_sm * waves // per_head)
        sets = probe.input_sets(((1, heads, seq, head_dim), *((1, heads, seq_kv, head_dim),) * 2), L2_BYTES)
        call = cycling([lambda s=s: hopper_attention(*s, causal=causal, tiles=t) for s in sets])
        row = dict(variant=name, head_dim=head_dim, causal=causal, block_q=t.block_q, block_kv=t.block_kv,
                   **{key: value for key, value in t.knobs.items() if key != "lpt_heads"}, steps=steps, waves=waves,
                   per_sm=k.blocks_per_sm, heads=heads, seq=seq, seq_kv=seq_kv, dtype="fp16", l2="cold",
                   copies=len(sets))
        results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
        print(f"{name} d={head_dim} J={steps} waves={waves} b={k.blocks_per_sm}: {row.get('ms', row.get('error'))}",
              flush=True)


def main(argv=None):
    probe.script(__doc__, "hopper_starts.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

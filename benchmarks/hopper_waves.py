"""What a program costs when it follows another on its SM: the Hopper kernel's short programs, wave after wave.

    python -m benchmarks.hopper_waves --out $OUT                                  # GPU: $OUT/hopper_waves.json, 1 min
    TRITON_INTERPRET=1 python -m benchmarks.hopper_waves --out /tmp/p --smoke      # CPU: the launches, tiny

benchmarks/program_start.py's sweep for the Hopper kernel: one Q block per program (batch 1, heads = 132 x b x waves,
b the programs an SM holds at the kernel's own launch), J = 1, 2 or 4 K/V blocks each, d = 64 and 128; and causal, N =
1, 2 or 4 Q blocks (a short ramp); at the launch the kernel picks itself (kernels/hopper.py's table), cold (inputs
rotated past twice the L2), replayed from a CUDA graph. Per J the time is a line in the waves: its slope is a wave's
steady-state cost, its intercept what the launch adds once. The held-out sets' Hopper rows of short programs in many
waves are priced 0.64-0.80x (docs/perf.md, "Short Hopper programs, wave after wave").
"""
from itertools import product

import gpusim
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import hopper_attention

STEPS = (1, 2, 4)
WAVES = (1, 2, 4, 16)
HEAD_DIMS = (64, 128)
SMS = 132  # the H200's
SMOKE = dict(STEPS=(1,), WAVES=(1,), HEAD_DIMS=(64,), SMS=1, L2_BYTES=0)


def own_tiles(head_dim, causal, **knobs):
    """The kernel's own launch for the head dim and mask (gpusim's Config of it), with `knobs` changed."""
    own = gpusim.simulate("hopper", seq=128, head_dim=head_dim, causal=causal, dtype="fp16", gpu="H200-measured").config
    return gpusim.Tiles(**{"block_q": own.block_q, "block_kv": own.block_kv, **own.tiles.knobs, **knobs})


def wave_launch(head_dim, causal, steps, waves, tiles, sms):
    """(heads, seq, seq_kv, gpusim's Kernel) of `waves` waves of sms x b short programs at `tiles`, as time_waves
    launches them (batch 1)."""
    seq, seq_kv = (steps * tiles.block_q,) * 2 if causal else (tiles.block_q, steps * tiles.block_kv)
    k = gpusim.simulate("hopper", seq=seq, seq_kv=seq_kv, heads=sms * 16, head_dim=head_dim, causal=causal,
                        dtype="fp16", gpu="H200-measured", tiles=tiles).kernels[0]
    return max(1, sms * k.blocks_per_sm * waves // (k.programs // (sms * 16))), seq, seq_kv, k


def time_waves(results, head_dim, causal, steps, waves, tiles, sms, l2_bytes, kv_heads=None, **label):
    """`waves` waves of sms x b short programs at `tiles` (b: the programs an SM holds, as gpusim prices them): not
    causal, one Q block of J = steps K/V blocks each; causal, N = steps Q blocks (a short ramp, as the held-out sets'
    causal rows of N 300-600); K and V with kv_heads heads (None: one a query head). Cold (inputs rotated past
    l2_bytes), replayed from a CUDA graph: a row (after the label's fields) and its ms."""
    heads, seq, seq_kv, k = wave_launch(head_dim, causal, steps, waves, tiles, sms)
    kv = {} if kv_heads is None else {"kv_heads": kv_heads}
    sets = probe.input_sets(((1, heads, seq, head_dim), *((1, kv_heads or heads, seq_kv, head_dim),) * 2), l2_bytes)
    call = cycling([lambda s=s: hopper_attention(*s, causal=causal, tiles=tiles) for s in sets])
    row = dict(**label, head_dim=head_dim, causal=causal, block_q=tiles.block_q, block_kv=tiles.block_kv, steps=steps,
               waves=waves, per_sm=k.blocks_per_sm, heads=heads, **kv, seq=seq, seq_kv=seq_kv, dtype="fp16",
               l2="cold", copies=len(sets))
    results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
    print(f"{' '.join(map(str, label.values()))} d={head_dim} {'causal' if causal else 'full'} "
          f"{tiles.block_q}x{tiles.block_kv} steps={steps} waves={waves} b={k.blocks_per_sm}: "
          f"{row.get('ms', row.get('error'))}", flush=True)


def measure(results):
    for head_dim, causal, steps, waves in product(HEAD_DIMS, (False, True), STEPS, WAVES):
        time_waves(results, head_dim, causal, steps, waves, own_tiles(head_dim, causal), SMS, L2_BYTES)


def main(argv=None):
    probe.script(__doc__, "hopper_waves.json", measure, globals(), argv)


if __name__ == "__main__":
    main()

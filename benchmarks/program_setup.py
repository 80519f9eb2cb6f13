"""What one program costs before and after its K/V loop: the Hopper kernel against flash2, a program per SM.

    python -m benchmarks.program_setup --out $OUT          # GPU: $OUT/program_setup.json, about 65 s
    TRITON_INTERPRET=1 python -m benchmarks.program_setup --out /tmp/p --smoke

One wave of 132 programs (one per SM: heads = 132, one Q block each, batch 1), each looping over J K/V
blocks, J = 1, 2, 4, 8, 16; the median GPU time per launch (a CUDA graph's replays). Then the same with 4
and 16 times the programs (waves = 4, 16): what a program costs when it follows another on its SM. The
Hopper kernel twice: its table launch (warp-specialized, its three TMA descriptors written and fenced in global
memory by each program) and software-pipelined on 8 warps (hopper_swp, its descriptors made on the host), both
one block per SM at these tiles. Per kernel and wave count the time is a line in J: the intercept is the launch
and one program's fixed work (its first loads, its epilogue, its descriptors), the slope one step. The Hopper
kernel's one-wave intercept less flash2's (same tiles, same Q and O bytes, same launch) is what its set-up adds
per program (the model's set-up until the thirty-fifth session, 1.421 us warp-specialized and none software-pipelined;
since, each launch kind's lone program measured: gpusim/passes/hopper.py's LONE_SETUP_S). benchmarks/h200_constants.py
derives the warp-specialized step's ratio to the software-pipelined one (WS_STEP_RATIO) from the 16-wave slopes.
"""
from itertools import product

import torch

from benchmarks import probe
from gpusim_kernels import flash2_attention, hopper_attention

STEPS = (1, 2, 4, 8, 16)
HEADS = 132  # one program per SM of the H200
WAVES = (1, 4, 16)  # heads = HEADS x waves
SHAPES = ((64, 128, 128), (128, 128, 128))  # (head_dim, block_q, block_kv): the Hopper kernel's table tiles
SMOKE = dict(STEPS=(1, 2), HEADS=2, SHAPES=((64, 16, 16),), WAVES=(1, 2))


def launches(head_dim, block_q, block_kv):
    flash2 = lambda q, k, v: flash2_attention(q, k, v, block_q=block_q, block_kv=block_kv)  # noqa: E731
    hopper = lambda q, k, v: hopper_attention(q, k, v, block_q=block_q, block_kv=block_kv)  # noqa: E731
    swp = lambda q, k, v: hopper_attention(q, k, v, block_q=block_q, block_kv=block_kv,  # noqa: E731
                                           warp_specialize=False, num_warps=8, num_stages=3)
    return {"flash2": flash2, "hopper": hopper, "hopper_swp": swp}


def measure(results):
    for head_dim, block_q, block_kv in SHAPES:
        for algo, fn in launches(head_dim, block_q, block_kv).items():
            for waves, steps in product(WAVES, STEPS):
                heads = HEADS * waves
                q = torch.randn(1, heads, block_q, head_dim, device=probe.DEVICE, dtype=torch.float16)
                k, v = (torch.randn(1, heads, steps * block_kv, head_dim, device=probe.DEVICE, dtype=torch.float16)
                        for _ in range(2))
                row = dict(algo=algo, head_dim=head_dim, block_q=block_q, block_kv=block_kv, steps=steps,
                           heads=heads, waves=waves, seq=block_q, seq_kv=steps * block_kv)
                results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(lambda: fn(q, k, v))}))
                print(f"{algo:6s} d={head_dim} {block_q}x{block_kv} waves={waves:2d} J={steps:2d}: "
                      f"{results.data['rows'][-1].get('ms')}", flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "program_setup.json")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    measure(probe.open_results("program_setup.json", args, argv))


if __name__ == "__main__":
    main()

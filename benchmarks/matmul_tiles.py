"""Tensor-core efficiency per tile shape and warp count, as the attention kernels use tl.dot, with no memory
traffic in the loop; and the rates of the two other units the softmax runs on.

    python -m benchmarks.matmul_tiles --out $OUT                                    # GPU: $OUT/matmul_tiles.json
    python -m benchmarks.matmul_tiles --more --out $OUT                             # GPU: $OUT/matmul_tiles_more.json
    TRITON_INTERPRET=1 python -m benchmarks.matmul_tiles --out /tmp/probe --smoke   # CPU: every code path, tiny

Each program loads Q_i (Br x d), K_j and V_j (Bc x d) once (the same tiles for every program, so from L2),
then loops R times over flash2's two matmuls, S = Q_i K_jᵀ and acc = P V_j, with S and acc carried from one
iteration to the next so that nothing can be hoisted out of the loop, and stores one number. Variants:
- mma: s = dot(q, kᵀ, s); acc = dot(s, v, acc): the tensor cores alone.
- exp2: also the running row max m_i and p = exp2(s - m_i) on every element of S (the SFU).
- softmax: flash2's whole inner loop without its loads: also alpha = exp2(m_old - m_new), l_i = alpha l_i +
  rowsum(p) and acc scaled by alpha (the CUDA cores).
- exp2_rate, fma_rate: register tiles of fp32 put through x = -exp2(x) or x = 0.5 x + 0.25 (one FFMA), R x
  UNROLL times: exp2 per second and fp32 FLOP/s (2 per FMA).
FLOPs = R x 4 x Br x Bc x d per program (2 x Br x Bc x d per matmul). The grid is PROGRAMS_PER_SM x num_SMs
programs, full waves at 1, 2, 3, 4, 6, 8, 12 or 24 resident programs per SM; R makes each launch about
TARGET_FLOPS. Each row records the compiled kernel's registers, spills and shared memory, and the MMA
instructions in its PTX (wgmma.mma_async: Hopper's warp-group MMA, HGMMA in SASS; mma.sync: the older
per-warp MMA). Timing: triton.testing.do_bench's median (probe.median_ms).

--more measures MORE_SHAPES, tiles the kernels run that the first run (SHAPES) left out (32 x 32, one of the
held-out sets' tiles: benchmarks/heldout.py), the same way, beside PEAK, the fp16 peak's shape in the first run:
benchmarks/h200_constants.py takes their rates against PEAK's in the same run.

Expected wall time on the H200, about 35 s: imports 5 s; 70 kernels compiled by 16 processes, ~12 s with
their start; 70 timings x ~70 ms (about 1.5 ms per launch at 650 TFLOP/s: do_bench's 5-call estimate and
10 + 40 ms windows) 5 s; up to 1 s more for each of the ~10 configurations whose registers spill or whose
wgmma ptxas serializes (results/sm90_resources.json: 128 x 128 and 256 x 64 tiles on 4 warps), which run at
tens of TFLOP/s: 8 launches of up to 100 ms.
"""
import re

import torch
import triton
import triton.language as tl

from benchmarks import probe
from benchmarks.heldout import TILES as HELDOUT_TILES

SHAPES = [(64, 32), (64, 64), (64, 128), (128, 32), (128, 64), (128, 128), (256, 64), (32, 64)]  # (Br, Bc)
HEAD_DIMS, WARPS = (64, 128), (4, 8)
DTYPE_CHECKS = [(128, 128, 128), (128, 64, 128)]  # (Br, Bc, d) also in bf16 and fp8 e4m3
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}
PROGRAMS_PER_SM, TARGET_FLOPS = 24, 1e12
RATE_BLOCK, RATE_WARPS, RATE_UNROLL, RATE_OPS = 1024, 4, 8, 2e10  # 8 fp32 values per thread, ~2e10 operations
MORE_SHAPES = [tile for tile in HELDOUT_TILES if tile not in SHAPES]  # (32, 32)
PEAK = (64, 128, 128, 4)  # (Br, Bc, d, num_warps) of the fastest fp16 mma row of matmul_tiles.json
SMOKE = dict(SHAPES=[(32, 64), (64, 32)], HEAD_DIMS=(64,), WARPS=(4,), DTYPE_CHECKS=[(32, 64, 64)], PROGRAMS_PER_SM=1,
             TARGET_FLOPS=1e6, RATE_OPS=1e4)


@triton.jit
def mma_kernel(Q, K, V, OUT, R, Br: tl.constexpr, Bc: tl.constexpr, D: tl.constexpr, VARIANT: tl.constexpr):
    rows, keys, cols = tl.arange(0, Br), tl.arange(0, Bc), tl.arange(0, D)
    q_i = tl.load(Q + rows[:, None] * D + cols[None, :])  # read Br*d, the same tile in every program: from L2
    k_j = tl.load(K + keys[:, None] * D + cols[None, :])  # read Bc*d
    v_j = tl.load(V + keys[:, None] * D + cols[None, :])  # read Bc*d
    s = tl.zeros([Br, Bc], tl.float32)
    acc = tl.zeros([Br, D], tl.float32)
    m_i = tl.full([Br], -1e30, tl.float32)
    l_i = tl.zeros([Br], tl.float32)
    for _ in range(R):
        s = tl.dot(q_i, tl.trans(k_j), s)  # Br*Bc*d multiply-adds; s carried: the loop cannot be hoisted
        p = s
        if VARIANT != "mma":
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])  # Br*Bc exponentials
            if VARIANT == "softmax":
                alpha = tl.math.exp2(m_i - m_new)
                l_i = l_i * alpha + tl.sum(p, 1)
                acc = acc * alpha[:, None]
            m_i = m_new
        acc = tl.dot(p.to(v_j.dtype), v_j, acc)  # Br*d*Bc multiply-adds
    tl.store(OUT + tl.program_id(0), tl.sum(tl.sum(acc, 1) + l_i + m_i, 0))  # write 4 B


@triton.jit
def rate_kernel(X, R, BLOCK: tl.constexpr, UNROLL: tl.constexpr, OP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)  # read BLOCK fp32
    for _ in range(R):
        for _ in tl.static_range(UNROLL):
            if OP == "exp2":
                x = -tl.math.exp2(x)  # one MUFU.EX2 (the minus is free): x stays in [-1, -0.5]
            else:
                x = x * 0.5 + 0.25  # one FFMA: x tends to 0.5
    tl.store(X + offs, x)  # write BLOCK fp32


def configs():
    """(variant, dtype, Br, Bc, d, num_warps) in the order measured: every shape on 4 and 8 warps; the dtype
    checks; exp2 and softmax on the warps the attention kernels' rule gives (8 for Br >= 128); the two rates."""
    mma = [("mma", "fp16", br, bc, d, w) for d in HEAD_DIMS for br, bc in SHAPES for w in WARPS]
    checks = [("mma", dtype, br, bc, d, 8) for dtype in ("bf16", "fp8") for br, bc, d in DTYPE_CHECKS]
    softmax = [(variant, "fp16", br, bc, d, 8 if br >= 128 else 4) for variant in ("exp2", "softmax")
               for d in HEAD_DIMS for br, bc in SHAPES]
    return mma + checks + softmax + [("exp2_rate", "fp32", None, None, None, RATE_WARPS),
                                     ("fma_rate", "fp32", None, None, None, RATE_WARPS)]


def more_configs():
    """--more: mma at MORE_SHAPES on both warp counts, exp2 and softmax on the rule's warps, and PEAK's mma."""
    mma = [("mma", "fp16", br, bc, d, w) for d in HEAD_DIMS for br, bc in MORE_SHAPES for w in WARPS]
    softmax = [(variant, "fp16", br, bc, d, 8 if br >= 128 else 4) for variant in ("exp2", "softmax")
               for d in HEAD_DIMS for br, bc in MORE_SHAPES]
    br, bc, d, num_warps = PEAK
    return mma + softmax + [("mma", "fp16", br, bc, d, num_warps)]


def flops_per_program(br, bc, d, repeats):
    return repeats * 4 * br * bc * d


def repeats(br, bc, d, programs):
    """R: iterations that make one launch about TARGET_FLOPS."""
    return max(1, round(TARGET_FLOPS / (programs * 4 * br * bc * d)))


def tiles(dtype, br, bc, d):
    """Q_i, K_j, V_j in dtype, small values (fp8 from fp32, which torch.randn cannot make directly)."""
    gen = torch.Generator(device=probe.DEVICE).manual_seed(br * bc * d)
    return [(0.1 * torch.randn(n, d, generator=gen, device=probe.DEVICE)).to(DTYPES[dtype]) for n in (br, bc, bc)]


def launch(config, programs, r, inputs, out):
    variant, dtype, br, bc, d, num_warps = config
    if variant.endswith("_rate"):
        return rate_kernel[(programs,)](inputs, r, BLOCK=RATE_BLOCK, UNROLL=RATE_UNROLL, OP=variant[:-5],
                                        num_warps=num_warps)
    return mma_kernel[(programs,)](*inputs, out, r, Br=br, Bc=bc, D=d, VARIANT=variant, num_warps=num_warps)


def warm(config):
    """Compile one configuration (in a pool worker): a launch of one program, one iteration."""
    variant, dtype, br, bc, d, num_warps = config
    inputs = torch.zeros(RATE_BLOCK, device=probe.DEVICE) if variant.endswith("_rate") else tiles(dtype, br, bc, d)
    launch(config, 1, 1, inputs, torch.empty(1, device=probe.DEVICE))


def mma_instructions(compiled):
    """The distinct MMA instructions in a compiled kernel's PTX, e.g. 'wgmma.mma_async.sync.aligned.m64n64k16.
    f32.f16.f16'; None in the interpreter."""
    ptx = getattr(compiled, "asm", {}).get("ptx")
    if ptx is None:
        return None
    return " ".join(sorted(set(re.findall(r"\b(wgmma\.mma_async[\w.]*|mma\.sync[\w.]*)", ptx)))) or "none"


def measure(config):
    variant, dtype, br, bc, d, num_warps = config
    programs = PROGRAMS_PER_SM * probe.sm_count()
    out = torch.empty(programs, device=probe.DEVICE)
    if variant.endswith("_rate"):
        inputs = -torch.rand(programs * RATE_BLOCK, device=probe.DEVICE)
        r = max(1, round(RATE_OPS / (programs * RATE_BLOCK * RATE_UNROLL)))
        ops = programs * RATE_BLOCK * RATE_UNROLL * r
        flops = 2 * ops if variant == "fma_rate" else None
    else:
        inputs = tiles(dtype, br, bc, d)
        r = repeats(br, bc, d, programs)
        ops = None
        flops = programs * flops_per_program(br, bc, d, r)
    compiled = launch(config, programs, r, inputs, out)
    ms = probe.median_ms(lambda: launch(config, programs, r, inputs, out))
    return {"flops": flops, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12 if flops else None, "repeats": r,
            "programs": programs, "ops": ops, "ops_per_s": ops / (ms * 1e-3) if ops else None,
            "mma_instruction": mma_instructions(compiled), **probe.kernel_resources(compiled)}


def run(results, workers, todo):
    probe.compile_all(warm, todo, workers, 60)
    for config in todo:
        variant, dtype, br, bc, d, num_warps = config
        row = dict(br=br, bc=bc, d=d, num_warps=num_warps, dtype=dtype, variant=variant)
        results.add(probe.attempt(row, lambda: measure(config)))
        rate = f"{row['ops_per_s'] / 1e12:7.2f} Tops/s" if row.get("ops_per_s") else f"{row.get('tflops') or 0:6.1f} TFLOP/s"
        print(f"{variant:9s} {dtype} {br}x{bc} d={d} warps={num_warps}: {rate} regs={row.get('n_regs')} "
              f"spills={row.get('n_spills')} {row.get('mma_instruction') or ''} {row.get('error', '')}", flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "matmul_tiles.json")
    ap.add_argument("--more", action="store_true", help="MORE_SHAPES and PEAK only: matmul_tiles_more.json")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    name = "matmul_tiles_more.json" if args.more else "matmul_tiles.json"
    run(probe.open_results(name, args, argv, "matmul_tiles"), args.workers, more_configs() if args.more else configs())


if __name__ == "__main__":
    main()

"""Standard attention's three launches replayed from a CUDA graph, each kernel alone and the three together, from
shapes of one wave to several: what each launch adds to a graph-replayed call, and which kernel the model prices
wrong where the held-out sets' naive rows of 12-40 µs are priced 1.2-1.7x slow.

    python -m benchmarks.naive_launches --out $OUT                                 # GPU: $OUT/naive_launches.json
    python -m benchmarks.naive_launches --out $OUT --qk-parts                      # GPU: $OUT/qk_parts.json
    TRITON_INTERPRET=1 python -m benchmarks.naive_launches --out /tmp/p --smoke [--qk-parts]   # CPU, tiny

Per shape (fp16, batch 1, the kernel's default tiles): qk, softmax and pv each launched alone on the inputs the call
would give it, and naive_attention whole ("all"), the median GPU time replayed from a CUDA graph with the inputs
rotated among as many copies as benchmarks.heldout makes (at most 4: a small shape's inputs stay in L2), as the
held-out sets time a forward. Then one, two and three empty kernels in a row, one program each and 132 each,
replayed: what a launch adds inside a graph. Rows: {kernel, batch, heads, seq, head_dim, causal, block_q, block_kv,
copies, ms}; the empty kernels' {kernel: "empty", launches, programs, ms}.

--qk-parts: what a qk program's time is made of. qk's program (kernels/naive.py tile_product, one tile per program)
with parts taken out: "full" (load Q_i and K_j, dot, store the Br x Bc tile), "no_store" (the dot's row sums stored,
Br values), "no_dot" (the loads' row sums broadcast into the tile, stored), "store_only" (a constant tile stored),
and "empty" (the grid alone), at qk's default tiles and at 64 x 64, with its launch options, d = 64 and 128, one
wave to many, replayed from a graph with the inputs rotated as above. Rows: {part, heads, seq, head_dim, block_q,
block_kv, num_warps, num_stages, programs, ms}.
"""
import math
from itertools import product

import torch
import triton
import triton.language as tl

from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import input_copies
from gpusim_kernels.launch import forward_launch, launch
from gpusim_kernels.naive import _parts, naive_attention, pv_kernel, qk_kernel, softmax_kernel
from gpusim.passes.naive import score_row

HEADS, SEQS, HEAD_DIMS, CAUSAL = (4, 16, 64), (256, 512, 1024, 2048), (64, 128), (False, True)
LARGE = ((256, 2048, 64),)  # (heads, seq, head_dim): a shape of many waves beside them
PROGRAMS = (1, 132)
PARTS = ("full", "no_store", "no_dot", "store_only", "empty")
QK_SHAPES = ((4, 256), (64, 256), (64, 2048), (256, 2048))  # (heads, seq): one wave to hundreds
TILES = ((None, None), (64, 64))  # qk's tiles: the default, and 64 x 64
SMOKE = dict(HEADS=(2,), SEQS=(32,), HEAD_DIMS=(16,), CAUSAL=(True,), LARGE=(), PROGRAMS=(1,), QK_SHAPES=((2, 32),),
             TILES=((None, None), (16, 16)))


@triton.jit
def qk_part(Q, K, S, N, LD, D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, LOAD: tl.constexpr,
            DOT: tl.constexpr, STORE: tl.constexpr):
    """tile_product's program (non-causal, N = N_kv a multiple of the tiles, d = D) with parts taken out."""
    T_c = N // Bc
    i, j = tl.program_id(0) // T_c, tl.program_id(0) % T_c
    bh = tl.program_id(1).to(tl.int64)
    rows, keys, cols = i * Br + tl.arange(0, Br), j * Bc + tl.arange(0, Bc), tl.arange(0, D)
    c_offs = rows.to(tl.int64)[:, None] * LD + keys[None, :]
    if LOAD:
        a = tl.load(Q + bh * N * D + rows[:, None] * D + cols[None, :], cache_modifier=".cg")  # read Br*d
        b = tl.load(K + bh * N * D + keys[:, None] * D + cols[None, :], cache_modifier=".cg")  # read Bc*d
        if DOT:
            c = tl.dot(a, tl.trans(b), input_precision="ieee")
        else:
            c = tl.sum(a.to(tl.float32), 1)[:, None] + tl.sum(b.to(tl.float32), 1)[None, :]
        if STORE:
            tl.store(S + bh * N * LD + c_offs, c.to(S.dtype.element_ty))  # write Br*Bc
        else:
            tl.store(S + bh * N * LD + rows * LD + j, tl.sum(c, 1).to(S.dtype.element_ty))  # write Br
    elif STORE:
        tl.store(S + bh * N * LD + c_offs, tl.full([Br, Bc], 1.0, S.dtype.element_ty))  # write Br*Bc


def part_call(part, q, k, s, consts):
    """fn() launching qk_part's `part` on one input set, at qk's grid and launch options."""
    b, h, n, d = q.shape
    flags = dict(full=(1, 1, 1), no_store=(1, 1, 0), no_dot=(1, 0, 1), store_only=(0, 0, 1), empty=(0, 0, 0))[part]
    grid = ((n // consts["Br"]) * (n // consts["Bc"]), b * h)
    return lambda: qk_part[grid](q, k, s, n, n, D=d, Br=consts["Br"], Bc=consts["Bc"], LOAD=flags[0], DOT=flags[1],
                                 STORE=flags[2], num_warps=consts["num_warps"], num_stages=consts["num_stages"])


def rotated_inputs(shape):
    """Copies of (q, k, v), fp16, of shape (B, H, N, d): as many as benchmarks.heldout rotates a forward's inputs
    among."""
    return [[torch.randn(shape, device=probe.DEVICE, dtype=torch.float16) for _ in range(3)]
            for _ in range(input_copies(3 * 2 * math.prod(shape)))]


def measure_parts(results):
    for (heads, seq), head_dim in product(QK_SHAPES, HEAD_DIMS):
        shape = (1, heads, seq, head_dim)
        sets = rotated_inputs(shape)
        buffers = [(q, k, torch.empty((1, heads, seq, seq), dtype=q.dtype, device=q.device)) for q, k, _ in sets]
        launches = {}  # {qk's tile: (grids, qk's constants)}, the default's and 64 x 64
        for block_q, block_kv in TILES:
            _, grids, consts, _ = forward_launch("naive", *sets[0], False, None, block_q, block_kv, None, _parts)
            launches.setdefault((consts["qk"]["Br"], consts["qk"]["Bc"]), (grids, consts["qk"]))
        for (grids, qk), part in product(launches.values(), PARTS):
            call = cycling([part_call(part, *buf, qk) for buf in buffers])
            row = dict(part=part, heads=heads, seq=seq, head_dim=head_dim, block_q=qk["Br"], block_kv=qk["Bc"],
                       num_warps=qk["num_warps"], num_stages=qk["num_stages"], programs=grids["qk"][0] * heads,
                       copies=len(sets))
            results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
            print(f"h={heads} N={seq} d={head_dim} {part}: {row.get('ms', row.get('error'))}", flush=True)
        del sets, buffers


def kernel_calls(q, k, v, causal):
    """{kernel: fn()} launching each of naive_attention's kernels alone, as the call launches it, and the call."""
    cfg, grids, consts, _ = forward_launch("naive", q, k, v, causal, None, None, None, None, _parts)
    ld = score_row(cfg)
    s = torch.randn((*q.shape[:3], ld), dtype=q.dtype, device=q.device)
    p, o = torch.rand_like(s), torch.empty_like(q)
    args = {"qk": (q, k, s, cfg.seq, cfg.seq_kv, ld, cfg.head_dim**-0.5), "softmax": (s, p, cfg.seq, cfg.seq_kv, ld),
            "pv": (p, v, o, cfg.seq, cfg.seq_kv, ld)}
    kernels = {"qk": qk_kernel, "softmax": softmax_kernel, "pv": pv_kernel}
    calls = {name: lambda name=name: launch(kernels[name], grids[name], *args[name], **consts[name])
             for name in kernels}
    return cfg, calls | {"all": lambda: naive_attention(q, k, v, causal=causal)}


def measure_shapes(results):
    shapes = [(h, n, d, c) for h, n, d, c in product(HEADS, SEQS, HEAD_DIMS, CAUSAL)]
    for heads, seq, head_dim, causal in shapes + [(h, n, d, c) for h, n, d in LARGE for c in CAUSAL]:
        shape = (1, heads, seq, head_dim)
        sets = rotated_inputs(shape)
        made = [kernel_calls(*s, causal) for s in sets]
        cfg = made[0][0]
        for kernel in ("qk", "softmax", "pv", "all"):
            call = cycling([calls[kernel] for _, calls in made])
            row = dict(kernel=kernel, batch=1, heads=heads, seq=seq, head_dim=head_dim, causal=causal,
                       block_q=cfg.block_q, block_kv=cfg.block_kv, copies=len(sets))
            results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
            print(f"h={heads} N={seq} d={head_dim} causal={causal} {kernel}: {row.get('ms', row.get('error'))}",
                  flush=True)
        del sets, made


def measure_empty(results):
    y = torch.empty(1, device=probe.DEVICE)
    for programs, launches in product(PROGRAMS, (1, 2, 3)):
        def call():
            for _ in range(launches):
                probe.empty_kernel[(programs,)](y)
        row = dict(kernel="empty", launches=launches, programs=programs)
        results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
        print(f"{launches} empty kernels of {programs} programs: {row.get('ms', row.get('error'))}", flush=True)


def measure(results):
    measure_empty(results)
    measure_shapes(results)


def main(argv=None):
    ap = probe.parser(__doc__, "naive_launches.json", pool=False)
    ap.add_argument("--qk-parts", action="store_true", help="qk's program with parts taken out: qk_parts.json")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    name = "qk_parts.json" if args.qk_parts else "naive_launches.json"
    (measure_parts if args.qk_parts else measure)(probe.open_results(name, args, argv, module="naive_launches"))


if __name__ == "__main__":
    main()

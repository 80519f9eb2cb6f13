"""A sequence length not a multiple of 16 in flash2's forward: which length (N or N_kv) slows which tiles.

    python -m benchmarks.unaligned --out $OUT          # GPU: $OUT/unaligned.json, about 110 s
    TRITON_INTERPRET=1 python -m benchmarks.unaligned --out /tmp/p --smoke
    python -m benchmarks.unaligned --out $OUT --layouts  # GPU: $OUT/unaligned_layouts.json, about 35 s
    python -m benchmarks.unaligned --out $OUT --backward # GPU: $OUT/unaligned_backward.json
    ncu --clock-control none --profile-from-start off --cache-control all --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
        --csv --page details --log-file $OUT/unaligned_ncu.csv python -m benchmarks.unaligned --out $OUT --profile
    ncu --clock-control none --profile-from-start off --cache-control all --csv --page raw \
        --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,\
smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,\
dram__bytes_write.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__sass_inst_executed_op_shared_ld.sum,\
smsp__sass_inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
        --log-file $OUT/unaligned_ncu_stalls.csv python -m benchmarks.unaligned --out $OUT --profile

The held-out sets' flash2 launches at d = 128 on 64-row tiles were priced about 0.8x where N was not a multiple
of 16 and 1.0-1.3x where it was (docs/perf.md, "Lengths not a multiple of 16"), at the same model per FLOP.
This times one shape at lengths around 4096: (N, N_kv) = (4096, 4096), (4080, 4080) (a multiple of 16, not
of 64), (4095, 4095), (4095, 4096) (N alone unaligned) and (4096, 4095) (N_kv alone); fp16, non-causal,
batch x heads = 2 x 16, d = 64 and 128, flash2 at five tiles on its launch rule's warps and stages. Each
launch replayed from a CUDA graph, its inputs rotated past twice the L2 as the held-out sets time them;
gpusim's time beside it, and the compiled kernel's registers (Triton compiles one kernel for lengths
divisible by 16 and another for the rest). Rows {head_dim, block_q, block_kv, seq, seq_kv, ms, model_ms,
n_regs, n_spills, shared_bytes}.

--layouts: which tensor's layout matters, at N = 4,095 (N_kv = 4,096), d = 128, on 64 x 64 and 64 x 128. A copy of
flash2's kernel that takes each head's offset of Q, O and the LSE as arguments (`strided_flash2`: flash2_kernel
with q_head, o_head and the LSE's row given) runs with Q, O and the LSE each either contiguous (a head's rows
4,095 apart) or padded (each head's rows in a buffer of 4,096, the 4,096th unused), and the contiguous kernel at
4,095 and 4,096 beside them; writes $OUT/unaligned_layouts.json, rows {head_dim, block_q, block_kv, seq, seq_kv,
padded (the tensors padded), ms}. --profile: instead, one launch of each of PROFILED, warmed up first, inside the
profiler's range, for Nsight Compute (its launches in that order; nothing written but ncu's file).

--backward: the same lengths through flash2's backward (flash2_attention_backward: preprocess, dK/dV and dQ, whose
dQ kernel keeps Q's row mask through its K/V loop for dQ's store, and dK/dV K's through its Q loop, as the forward
did), d = 64 and 128, at BACKWARD_TILES, o and the LSE from flash2_attention; writes
$OUT/unaligned_backward.json, rows {head_dim, block_q, block_kv, seq, seq_kv, ms, model_ms}.
"""
import torch
import triton
import triton.language as tl

import gpusim
from gpusim.config import make_config
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import flash2_attention, flash2_attention_backward
from gpusim_kernels.flash2 import _attend, flash2_kernel
from gpusim_kernels.launch import constants
from gpusim_kernels.tiles import kv_blocks_visited, row_offsets, unmasked_blocks

BATCH, HEADS = 2, 16
LENGTHS = ((4096, 4096), (4080, 4080), (4095, 4095), (4095, 4096), (4096, 4095))  # (N, N_kv)
TILES = ((64, 32), (64, 64), (64, 128), (128, 64), (128, 128))
HEAD_DIMS = (64, 128)
PRESET = "H200-measured"
PROFILED = ((128, 64, 64, 4096, 4096), (128, 64, 64, 4095, 4096), (128, 64, 128, 4096, 4096),
            (128, 64, 128, 4095, 4096))  # (head_dim, block_q, block_kv, N, N_kv)
LAYOUTS = ((), ("Q", "O", "LSE"), ("Q",), ("O",), ("LSE",))  # the tensors given padded rows
LAYOUT_TILES = ((128, 64, 64), (128, 64, 128))
LAYOUT_LENGTHS = (4096, 4095, 4096)  # N aligned, N unaligned, N_kv
BACKWARD_TILES = ((64, 32), (64, 64), (128, 32), (128, 64))  # tiles_bwd.json's at d = 128 (Br held, Bc streamed)
BACKWARD_KERNELS = ("preprocess", "dkdv", "dq")
SMOKE = dict(BATCH=1, HEADS=2, LENGTHS=((32, 32), (31, 32)), TILES=((16, 16),), HEAD_DIMS=(16,), L2_BYTES=0,
             PROFILED=((16, 16, 16, 32, 32), (16, 16, 16, 31, 32)), LAYOUT_TILES=((16, 16, 16),),
             LAYOUT_LENGTHS=(32, 31, 32), BACKWARD_TILES=((16, 16),))


def shapes(seq, seq_kv, head_dim):
    """q (B, H, N, d), k and v (B, H, N_kv, d)."""
    return (BATCH, HEADS, seq, head_dim), *((BATCH, HEADS, seq_kv, head_dim),) * 2


def measure(results):
    compiled_kernels = {}  # (head_dim, tile, N % 16 == 0, N_kv % 16 == 0): the kernel Triton compiled for it
    for head_dim, (block_q, block_kv), (seq, seq_kv) in ((d, t, n) for d in HEAD_DIMS for t in TILES for n in LENGTHS):
        row = dict(head_dim=head_dim, block_q=block_q, block_kv=block_kv, seq=seq, seq_kv=seq_kv, batch=BATCH,
                   heads=HEADS)

        def timed():
            sets = probe.input_sets(shapes(seq, seq_kv, head_dim), L2_BYTES)
            _, compiled = probe.compiled_by(flash2_kernel, lambda: flash2_attention(
                *sets[0], block_q=block_q, block_kv=block_kv))
            key = (head_dim, block_q, block_kv, seq % 16 == 0, seq_kv % 16 == 0)
            compiled = compiled_kernels.setdefault(key, compiled)  # None where this process had it loaded
            call = cycling([lambda s=s: flash2_attention(*s, block_q=block_q, block_kv=block_kv) for s in sets])
            model = gpusim.simulate("flash2", batch=BATCH, heads=HEADS, seq=seq, seq_kv=seq_kv, head_dim=head_dim,
                                    dtype="fp16", gpu=PRESET, block_q=block_q, block_kv=block_kv)
            return {"ms": probe.graph_ms(call), "model_ms": model.predicted_time_s * 1e3,
                    **probe.kernel_resources(compiled)}
        results.add(probe.attempt(row, timed))
        print(f"d={head_dim} {block_q}x{block_kv} N={seq} N_kv={seq_kv}: {row.get('ms', row.get('error'))} "
              f"model {row.get('model_ms')} regs {row.get('n_regs')}", flush=True)


@triton.jit
def strided_flash2(Q, K, V, O, LSE, N, N_KV, scale, Q_HEAD, O_HEAD, LSE_HEAD, GROUP: tl.constexpr, D: tl.constexpr,
                   BLOCK_D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """flash2_kernel as it was before its O store's fix (O stored under Q's mask), but a head's Q, O and LSE start
    Q_HEAD, O_HEAD and LSE_HEAD elements apart (N * D, N * D and N when contiguous)."""
    i = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    kv_head = (bh // GROUP) * N_KV * D
    rows = i * Br + tl.arange(0, Br)
    q_offs, q_mask = row_offsets(rows, N, D, BLOCK_D)
    q_i = tl.load(Q + bh * Q_HEAD + q_offs, mask=q_mask, other=0.0)
    m_i = tl.full([Br], float("-inf"), tl.float32)
    l_i = tl.zeros([Br], tl.float32)
    acc = tl.zeros([Br, BLOCK_D], tl.float32)
    n_blocks = kv_blocks_visited(i, N, N_KV, Br, Bc, CAUSAL)
    n_whole = unmasked_blocks(i, N_KV, Br, Bc, CAUSAL)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q_i, K, V, kv_head, rows, 0, n_whole, N_KV, scale, D, BLOCK_D, Bc,
                            CAUSAL, False)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q_i, K, V, kv_head, rows, n_whole, n_blocks, N_KV, scale, D, BLOCK_D,
                            Bc, CAUSAL, True)
    tl.store(O + bh * O_HEAD + q_offs, (acc / l_i[:, None]).to(O.dtype.element_ty), mask=q_mask)
    tl.store(LSE + bh * LSE_HEAD + rows, m_i + tl.log(l_i), mask=rows < N)


def strided_call(q, k, v, padded, block_q, block_kv):
    """strided_flash2 on q (B, H, N, d) as given, K, V contiguous; the tensors named in `padded` in buffers of
    N rounded up to 16 rows a head (Q copied there once, here). Returns the launch, and O, LSE as (B, H, N, ...)."""
    batch, heads, seq, head_dim = q.shape
    rows = {name: -(-seq // 16) * 16 if name in padded else seq for name in ("Q", "O", "LSE")}
    q_buf = torch.zeros(batch, heads, rows["Q"], head_dim, device=q.device, dtype=q.dtype)
    q_buf[:, :, :seq] = q
    o_buf = torch.empty(batch, heads, rows["O"], head_dim, device=q.device, dtype=q.dtype)
    lse_buf = torch.empty(batch, heads, rows["LSE"], device=q.device, dtype=torch.float32)
    cfg = make_config("flash2", batch=batch, heads=heads, kv_heads=k.shape[1], seq=seq, seq_kv=k.shape[2],
                      head_dim=head_dim, dtype="fp16", gpu=PRESET, block_q=block_q, block_kv=block_kv)
    grid = (cfg.tiling.n_q_blocks, batch * heads)
    args = (q_buf, k, v, o_buf, lse_buf, seq, k.shape[2], head_dim**-0.5, rows["Q"] * head_dim, rows["O"] * head_dim,
            rows["LSE"])
    consts = constants(cfg, "flash2")
    return (lambda: strided_flash2[grid](*args, **consts)), o_buf[:, :, :seq], lse_buf[:, :, :seq]


def measure_layouts(results):
    """Each of LAYOUTS at N = 4,095 on LAYOUT_TILES, its output checked against flash2_attention's, and the
    contiguous kernel at 4,095 and 4,096."""
    aligned, unaligned, seq_kv = LAYOUT_LENGTHS
    for head_dim, block_q, block_kv in LAYOUT_TILES:
        for seq, padded in [(aligned, None), (unaligned, None)] + [(unaligned, p) for p in LAYOUTS]:
            row = dict(head_dim=head_dim, block_q=block_q, block_kv=block_kv, seq=seq, seq_kv=seq_kv,
                       padded="flash2_attention" if padded is None else list(padded))

            def timed():
                sets = probe.input_sets(shapes(seq, seq_kv, head_dim), L2_BYTES)
                if padded is None:
                    calls = [lambda s=s: flash2_attention(*s, block_q=block_q, block_kv=block_kv) for s in sets]
                    return {"ms": probe.graph_ms(cycling(calls))}
                launches = [strided_call(*s, padded, block_q, block_kv) for s in sets]
                launches[0][0]()
                o, lse = flash2_attention(*sets[0], block_q=block_q, block_kv=block_kv, return_lse=True)
                if not (torch.allclose(launches[0][1], o, rtol=1e-3, atol=1e-3)  # fp16 O: a rounding apart at most
                        and torch.allclose(launches[0][2], lse, rtol=1e-5, atol=1e-5)):
                    raise AssertionError("strided_flash2 differs from flash2_attention")
                return {"ms": probe.graph_ms(cycling([call for call, _, _ in launches]))}
            results.add(probe.attempt(row, timed))
            print(f"d={head_dim} {block_q}x{block_kv} N={seq} padded={row['padded']}: {row.get('ms', row.get('error'))}",
                  flush=True)


def measure_backward(results):
    """flash2_attention_backward at every length, head dim and BACKWARD_TILES tile, each replayed from a CUDA graph
    cycling through input sets (q, k, v, do, and each set's o and LSE) past twice the L2, beside gpusim's backward."""
    for head_dim, (block_q, block_kv), (seq, seq_kv) in ((d, t, n) for d in HEAD_DIMS for t in BACKWARD_TILES
                                                         for n in LENGTHS):
        row = dict(head_dim=head_dim, block_q=block_q, block_kv=block_kv, seq=seq, seq_kv=seq_kv, batch=BATCH,
                   heads=HEADS)

        def timed():
            q, k, v = shapes(seq, seq_kv, head_dim)
            sets = probe.input_sets((q, k, v, q), L2_BYTES)  # do shaped like q
            saved = [flash2_attention(q, k, v, return_lse=True) for q, k, v, _ in sets]
            calls = [lambda s=s, o=o: flash2_attention_backward(*s[:3], *o, s[3], block_q=block_q, block_kv=block_kv)
                     for s, o in zip(sets, saved)]
            model = gpusim.simulate("flash2", batch=BATCH, heads=HEADS, seq=seq, seq_kv=seq_kv, head_dim=head_dim,
                                    dtype="fp16", gpu=PRESET, backward=True, backward_blocks=(block_q, block_kv))
            return {"ms": probe.graph_ms(cycling(calls)),
                    "model_ms": sum(k.predicted_time_s for k in model.kernels if k.name in BACKWARD_KERNELS) * 1e3}
        results.add(probe.attempt(row, timed))
        print(f"backward d={head_dim} {block_q}x{block_kv} N={seq} N_kv={seq_kv}: {row.get('ms', row.get('error'))} "
              f"model {row.get('model_ms')}", flush=True)


def profile():
    """One launch of each of PROFILED inside the profiler's range, each run once before it."""
    calls = []
    for head_dim, block_q, block_kv, seq, seq_kv in PROFILED:
        (q, k, v), = probe.input_sets(shapes(seq, seq_kv, head_dim), 0)  # one set: each launch profiled once
        calls.append(lambda q=q, k=k, v=v, bq=block_q, bk=block_kv: flash2_attention(q, k, v, block_q=bq, block_kv=bk))
        calls[-1]()
    probe.profiled(lambda: [call() for call in calls])
    print("profiled", PROFILED, flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "unaligned.json", pool=False)
    ap.add_argument("--profile", action="store_true", help="one launch of each of PROFILED, for Nsight Compute")
    ap.add_argument("--layouts", action="store_true", help="Q, O and the LSE padded or not: unaligned_layouts.json")
    ap.add_argument("--backward", action="store_true", help="flash2's backward at the lengths: unaligned_backward.json")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    if args.profile:
        return profile()
    if args.backward:
        return measure_backward(probe.open_results("unaligned_backward.json", args, argv, module="unaligned"))
    if args.layouts:
        return measure_layouts(probe.open_results("unaligned_layouts.json", args, argv, module="unaligned"))
    measure(probe.open_results("unaligned.json", args, argv))


if __name__ == "__main__":
    main()

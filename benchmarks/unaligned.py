"""A sequence length not a multiple of 16 in flash2's forward: which length (N or N_kv) slows which tiles.

    python -m benchmarks.unaligned --out $OUT          # GPU: $OUT/unaligned.json, about 110 s
    TRITON_INTERPRET=1 python -m benchmarks.unaligned --out /tmp/p --smoke
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
n_regs, n_spills, shared_bytes}. --profile: instead, one launch of each of PROFILED, warmed up first, inside the
profiler's range, for Nsight Compute (its launches in that order; nothing written but ncu's file).
"""
import torch

import gpusim
from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import L2_BYTES  # the H200's; --smoke sets it to 0 (one input set)
from gpusim_kernels import flash2_attention
from gpusim_kernels.flash2 import flash2_kernel

BATCH, HEADS = 2, 16
LENGTHS = ((4096, 4096), (4080, 4080), (4095, 4095), (4095, 4096), (4096, 4095))  # (N, N_kv)
TILES = ((64, 32), (64, 64), (64, 128), (128, 64), (128, 128))
HEAD_DIMS = (64, 128)
PRESET = "H200-measured"
PROFILED = ((128, 64, 64, 4096, 4096), (128, 64, 64, 4095, 4096), (128, 64, 128, 4096, 4096),
            (128, 64, 128, 4095, 4096))  # (head_dim, block_q, block_kv, N, N_kv)
SMOKE = dict(PROFILED=((16, 16, 16, 32, 32), (16, 16, 16, 31, 32)), BATCH=1, HEADS=2, LENGTHS=((32, 32), (31, 32)), TILES=((16, 16),), HEAD_DIMS=(16,), L2_BYTES=0)


def inputs(seq, seq_kv, head_dim):
    """Enough (q, k, v) sets, fp16, to exceed twice the L2."""
    shapes = ((BATCH, HEADS, seq, head_dim), *((BATCH, HEADS, seq_kv, head_dim),) * 2)
    one = sum(2 * BATCH * HEADS * s[2] * head_dim for s in shapes)
    return [[torch.randn(s, device=probe.DEVICE, dtype=torch.float16) for s in shapes]
            for _ in range(max(1, -(-2 * L2_BYTES // one)))]


def measure(results):
    compiled_kernels = {}  # (head_dim, tile, N % 16 == 0, N_kv % 16 == 0): the kernel Triton compiled for it
    for head_dim, (block_q, block_kv), (seq, seq_kv) in ((d, t, n) for d in HEAD_DIMS for t in TILES for n in LENGTHS):
        row = dict(head_dim=head_dim, block_q=block_q, block_kv=block_kv, seq=seq, seq_kv=seq_kv, batch=BATCH,
                   heads=HEADS)

        def timed():
            sets = inputs(seq, seq_kv, head_dim)
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


def profile():
    """One launch of each of PROFILED inside the profiler's range, each run once before it."""
    calls = []
    for head_dim, block_q, block_kv, seq, seq_kv in PROFILED:
        q, k, v = inputs(seq, seq_kv, head_dim)[0]
        calls.append(lambda q=q, k=k, v=v, bq=block_q, bk=block_kv: flash2_attention(q, k, v, block_q=bq, block_kv=bk))
        calls[-1]()
    probe.profiled(lambda: [call() for call in calls])
    print("profiled", PROFILED, flush=True)


def main(argv=None):
    ap = probe.parser(__doc__, "unaligned.json", pool=False)
    ap.add_argument("--profile", action="store_true", help="one launch of each of PROFILED, for Nsight Compute")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    if args.profile:
        return profile()
    measure(probe.open_results("unaligned.json", args, argv))


if __name__ == "__main__":
    main()

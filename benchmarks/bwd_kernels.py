"""flash2's backward kernel by kernel (preprocess, dK/dV, dQ) at tiles_bwd's 16 groups and four tiles, each kernel
timed alone: where the training step's time goes at each tile, against gpusim's time for that kernel.

    python -m benchmarks.bwd_kernels --out $OUT                                  # GPU: $OUT/bwd_kernels.json
    TRITON_INTERPRET=1 python -m benchmarks.bwd_kernels --out /tmp/probe --smoke  # CPU: every code path, tiny

tiles_bwd.json times the whole step, so a tile the model misranks there could be any of the three launches (or
the forward, which runs at its default tile in every row). Here each launch of flash2_attention_backward is timed
on its own (probe.median_ms: do_bench's median, L2 flushed between calls), with the arguments the backward passes
it, and the compiled kernel's registers, spills and shared memory are recorded, with the blocks gpusim.occupancy
lets an H200 SM hold of it (`resident`). benchmarks.perf_report's bwd_kernels table puts gpusim's time for each
kernel beside the measurement (docs/perf.md, the backward's tiles).

Wall time on the H200 under a minute (run 58: 46 s): 32 (dtype, causal, tile) compiles of two kernels in a
pool, then 192 timings.
"""
import torch

from gpusim_kernels import flash2_attention
from gpusim_kernels.backward import _parts, backward_launch, dkdv_kernel, dq_kernel, preprocess_kernel
from gpusim_kernels.launch import launch

from benchmarks import probe, tiles_bwd
from benchmarks.bench import cycling

KERNELS = ("preprocess", "dkdv", "dq")
TILES = tiles_bwd.TILES
SMOKE = dict(TILES=((32, 16),))


def groups(smoke=False):
    return tiles_bwd.SMOKE_GROUPS if smoke else tiles_bwd.groups()


def launches(q, k, v, do, causal, tiles, num_warps=None, maxnreg=None):
    """{kernel: a call that launches it alone, as flash2_attention_backward does}, the kernels' constants, and
    (dq, dk, dv) the calls fill, for the backward at the given tiles after one forward that gives o and the LSE.
    num_warps, maxnreg: dK/dV and dQ on that many warps instead of gpusim's rule, with at most maxnreg registers a
    thread (benchmarks.bwd_warps)."""
    o, lse = flash2_attention(q, k, v, causal=causal, return_lse=True)
    cfg, grids, consts, _ = backward_launch("flash2", dict(q=q, k=k, v=v, do=do, o=o, lse=lse), causal, None, *tiles,
                                         None, _parts)
    given = {name: value for name, value in (("num_warps", num_warps), ("maxnreg", maxnreg)) if value is not None}
    consts = {**consts, **{kernel: {**consts[kernel], **given} for kernel in ("dkdv", "dq")}}
    d, dk, dv, dq = torch.empty_like(lse), torch.empty_like(k), torch.empty_like(v), torch.empty_like(q)
    scale = cfg.head_dim**-0.5
    return {"preprocess": lambda: launch(preprocess_kernel, grids["preprocess"], o, do, d, cfg.seq,
                                         **consts["preprocess"]),
            "dkdv": lambda: launch(dkdv_kernel, grids["dkdv"], q, k, v, do, lse, d, dk, dv, cfg.seq, cfg.seq_kv,
                                   scale, **consts["dkdv"]),
            "dq": lambda: launch(dq_kernel, grids["dq"], q, k, v, do, lse, d, dq, cfg.seq, cfg.seq_kv, scale,
                                 **consts["dq"])}, consts, (dq, dk, dv)


def cold_launches(q_shape, kv_shape, causal, tiles, l2_bytes):
    """launches() over input sets of these shapes (q and do of q_shape, k and v of kv_shape) copied past l2_bytes:
    {kernel: a call that launches it on the next set in turn (benchmarks.bench.cycling), so that each timed launch
    reads its inputs from DRAM, as gpusim prices a launch's first touch}, the kernels' constants, and the sets made.
    Each set's D is filled once (its preprocess launch), so dK/dV and dQ timed alone read the backward's values."""
    made = [launches(*tensors, causal, tiles) for tensors in probe.input_sets((q_shape, kv_shape, kv_shape, q_shape),
                                                                              l2_bytes)]
    for launched, _, _ in made:
        launched["preprocess"]()  # D = rowsum(dO * O), which dK/dV and dQ read: not left as torch.empty's bytes
    calls = {kernel: cycling([launched[kernel] for launched, _, _ in made]) for kernel in KERNELS}
    return calls, made[0][1], len(made)


def inputs(g):
    """q, k, v, do of group g (tiles_bwd's), without autograd."""
    return [x.detach() for x in tiles_bwd._tensors(g, probe.DEVICE)]


def measure(g, tiles):
    """One row per kernel of group g at the backward's tiles."""
    calls, consts, _ = launches(*inputs(g), g["causal"], tiles)
    rows = []
    for kernel in KERNELS:
        res = probe.kernel_resources(calls[kernel]())  # compiled (or found in the cache) and run once
        rows.append(dict(**g, block_q=tiles[0], block_kv=tiles[1], kernel=kernel, ms=probe.median_ms(calls[kernel]),
                         num_warps=consts[kernel]["num_warps"], **res,
                         resident=probe.h200_blocks(res, consts[kernel]["num_warps"])))
    return rows


def warm(task):
    """Compile the forward and one tile's backward kernels for (dtype, d, causal) in a pool worker."""
    dtype, head_dim, causal, tiles = task
    g = dict(dtype=dtype, head_dim=head_dim, causal=causal, seq=256, batch=1, heads=2)
    calls, _, _ = launches(*inputs(g), causal, tiles)
    for call in calls.values():
        call()


def run(results, workers, smoke):
    todo = groups(smoke)
    tasks = sorted({(g["dtype"], g["head_dim"], g["causal"], t) for g in todo for t in TILES})
    if not probe.INTERPRETED:  # the interpreter compiles nothing
        probe.compile_all(warm, tasks, workers, 240)
    for g in todo:
        for tiles in TILES:
            label = dict(**g, block_q=tiles[0], block_kv=tiles[1])
            try:
                rows = measure(g, tiles)
            except Exception as err:  # noqa: BLE001 - one tile failing is a result, not the end of the run
                results.add(dict(label, error=probe.one_line(err)))
                continue
            for row in rows:
                results.add(row)
            times = " ".join(f"{r['kernel']} {r['ms']:.3f}" for r in rows)
            print(f"{g['dtype']} d{g['head_dim']} {'c' if g['causal'] else '-'} N{g['seq']} "
                  f"b{g['batch']}x{g['heads']} {tiles}: {times}", flush=True)
        if probe.DEVICE == "cuda":
            torch.cuda.empty_cache()


def main(argv=None):
    args = probe.parser(__doc__, "bwd_kernels.json").parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    run(probe.open_results("bwd_kernels.json", args, argv), args.workers, args.smoke)


if __name__ == "__main__":
    main()

"""flash2's backward kernels at d = 64 with more warps per scheduler: on 8 warps, or on 4 with fewer registers a
thread (Triton's `maxnreg`) so that more blocks fit an SM. Does dK/dV at 64 x 64 run faster so, where run 60
(bwd_stalls.json) found 29% of its cycles with no unit busy at 2 warps a scheduler?

    python -m benchmarks.bwd_warps --out $OUT                                  # GPU: $OUT/bwd_warps.json
    TRITON_INTERPRET=1 python -m benchmarks.bwd_warps --out /tmp/probe --smoke  # CPU: every code path, tiny

tiles_bwd's eight d = 64 groups; tiles 64 x 64 and 64 x 32 (the model's pick and the fastest measured, run 34);
dK/dV and dQ each launched alone as flash2_attention_backward launches them (bwd_kernels.launches), but for the
launch options of VARIANTS: num_warps 4 (gpusim's rule for a 64-row tile, passes.common.warps) or 8, and maxnreg
(None: the compiler's choice; 168 and 128 registers let 3 and 4 blocks of 4 warps share an SM's 65,536). Rows as
bwd_kernels.json's with the `num_warps` and `maxnreg` launched. Wall time on the H200 under a minute (run 83: 53 s).
"""
from benchmarks import bwd_kernels, probe, tiles_bwd

TILES = ((64, 64), (64, 32))
VARIANTS = ((4, None), (8, None), (4, 168), (4, 128))  # (num_warps, maxnreg)
KERNELS = ("dkdv", "dq")


def groups(smoke=False):
    return tiles_bwd.SMOKE_GROUPS if smoke else [g for g in tiles_bwd.groups() if g["head_dim"] == 64]


def measure(g, tiles, num_warps, maxnreg):
    """One row per kernel of group g at the tiles, every kernel on num_warps with at most maxnreg registers."""
    calls, consts, _ = bwd_kernels.launches(*bwd_kernels.inputs(g), g["causal"], tiles, num_warps=num_warps,
                                            maxnreg=maxnreg)
    calls["preprocess"]()  # D = rowsum(dO * O), which dK/dV and dQ read: not left as torch.empty's bytes
    rows = []
    for kernel in KERNELS:
        res = probe.kernel_resources(calls[kernel]())
        rows.append(dict(**g, block_q=tiles[0], block_kv=tiles[1], kernel=kernel, ms=probe.median_ms(calls[kernel]),
                         num_warps=num_warps, maxnreg=maxnreg, num_stages=consts[kernel]["num_stages"], **res,
                         resident=probe.h200_blocks(res, num_warps)))
    return rows


def run(results, smoke):
    for g in groups(smoke):
        for tiles in TILES:
            for num_warps, maxnreg in VARIANTS:
                try:
                    rows = measure(g, tiles, num_warps, maxnreg)
                except Exception as err:  # noqa: BLE001 - one launch failing is a result, not the end of the run
                    results.add(dict(**g, block_q=tiles[0], block_kv=tiles[1], num_warps=num_warps,
                                     maxnreg=maxnreg, error=probe.one_line(err)))
                    continue
                for row in rows:
                    results.add(row)
                times = " ".join(f"{r['kernel']} {r['ms']:.3f} ({r['n_regs']} regs, {r['n_spills']} spilled, "
                                 f"{r['resident']} blocks)" for r in rows)
                print(f"{g['dtype']} d64 {'c' if g['causal'] else '-'} N{g['seq']} b{g['batch']}x{g['heads']} "
                      f"{tiles} w{num_warps} r{maxnreg}: {times}", flush=True)


def main(argv=None):
    args = probe.parser(__doc__, "bwd_warps.json", pool=False).parse_args(argv)
    run(probe.open_results("bwd_warps.json", args, argv), args.smoke)


if __name__ == "__main__":
    main()

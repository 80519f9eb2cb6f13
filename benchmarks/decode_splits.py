"""Flash-Decoding's split count and the reduce's launch against cuDNN, in one run: at batch 1 and 8 over a paged cache
at Llama-3-8B's attention shape (benchmarks/bench_decode.py's inputs and timing: CUDA-graph replay, input copies
rotated past the L2), the split kernel at several split counts, each with the reduce as a programmatic dependent
launch (pdl) and, at the kernel's own split count, without; SDPA's cuDNN and FlashAttention backends on the
contiguous cache in the same process. What it measures decides the kernel's split rule (gpusim/decode.py); it is not
fitted into the time model.

    python -m benchmarks.decode_splits --out $OUT --max-minutes 3
    TRITON_INTERPRET=1 python -m benchmarks.decode_splits --out /tmp --smoke      # CPU: the code paths

Writes decode_splits.json: {environment, copy_bytes_per_s, rows: [{batch, seq_kv, provider, num_splits,
pdl, default, ms, rel_err, copy_fraction}]}; provider split_kv (default: the kernel's own split count) or an
SDPA backend.
"""

from benchmarks import bench_decode as bd  # inputs, timing, environment
from benchmarks.bench import cycling, error_line

from gpusim_kernels.decode import plan_for_cache

CASES = tuple((1, n) for n in (4096, 8192, 16384, 32768, 65536, 131072)) + ((8, 16384), (8, 131072))
SPLITS = (8, 16, 32, 33, 48, 64, 82, 96, 128)
SDPA = ("sdpa_cudnn", "sdpa_flash")
SMOKE = dict(cases=((1, 200),), splits=(2, 3))


def ours(sets, splits, pdl):
    """(fn cycling through the input sets, the launch) of the split kernel at `splits` (None: its own)."""
    plans = [plan_for_cache(*s["paged"], cache_seqlens=s["lengths"], block_table=s["table"], page_size=bd.PAGE_SIZE,
                            num_splits=splits) for s in sets]
    return cycling([lambda p=p, s=s: p.run(*s["paged"], pdl=pdl) for p, s in zip(plans, sets)]), plans[0].launch


def timed(fn, sets, nbytes, copy_bps):
    got = bd.measure(fn, bd.reference(sets[0]))
    return {"ms": got["ms"], "rel_err": got["rel_err"], "copy_fraction": nbytes / (got["ms"] * 1e-3) / copy_bps}


def case_rows(batch, seq_kv, sets, splits, copy_bps, cuda):
    """The rows of one (batch, cache length)."""
    base = {"batch": batch, "seq_kv": seq_kv}
    _, own = ours(sets, None, False)
    todo = [(None, True), (None, False)] + [(s, True) for s in splits if s != own.num_splits]
    rows = []
    for s, pdl in todo:
        if s is not None and s > int(own.chunks.max()):
            continue
        fn, launch = ours(sets, s, pdl and cuda)
        rows.append(base | {"provider": "split_kv", "num_splits": launch.num_splits, "pdl": pdl and cuda,
                            "default": s is None} | timed(fn, sets, bd._total(launch), copy_bps))
        print(rows[-1], flush=True)
    if cuda:
        providers = bd.providers(sets, bd.SHAPE)
        for name in SDPA:
            fn, _, nbytes = providers[name]
            try:
                rows.append(base | {"provider": name} | timed(fn, sets, nbytes, copy_bps))
            except Exception as err:  # a backend that refuses this shape: its error
                error = error_line(err, 160)
                rows.append(base | {"provider": name, "error": error})
            print(rows[-1], flush=True)
    return rows


def main(argv=None):
    args, grid, shape = bd.sweep_setup(__doc__, argv, SMOKE, dict(cases=CASES, splits=SPLITS))
    cuda = bd.DEVICE == "cuda"
    copy_bps = bd.copy_bytes_per_s(bd.COPY_BYTES if cuda else 1 << 20)
    bd.sweep_cases(args, "decode_splits", argv, grid["cases"], shape,
                   lambda batch, seq_kv, sets: case_rows(batch, seq_kv, sets, grid["splits"], copy_bps, cuda),
                   copy_bytes_per_s=copy_bps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""python -m gpusim gpus | count | sweep. Errors are one line on stderr and exit code 2."""
import argparse
import json
import sys

from .hardware import DTYPE_BYTES, PRESETS
from .algorithms import ALGOS
from .simulate import simulate
from .units import fmt_bytes, fmt_time
from .sweep import SEQS, sweep


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as err:
        print(f"gpusim: error: {err}", file=sys.stderr)
        return 2


def _parser():
    p = argparse.ArgumentParser(prog="python -m gpusim", description=__doc__.split(".")[0])
    sub = p.add_subparsers(required=True, metavar="{gpus,count,sweep}")

    gpus = sub.add_parser("gpus", help="list the GPU presets")
    gpus.add_argument("--json", action="store_true", help="print JSON instead of a table")
    gpus.set_defaults(run=_gpus)

    count = sub.add_parser("count", help="bytes, FLOPs, footprint and predicted time of one configuration")
    count.add_argument("--algo", choices=ALGOS, required=True)
    count.add_argument("--seq", type=int, required=True, help="query length N")
    count.add_argument("--head-dim", type=int, required=True, help="d")
    count.add_argument("--seq-kv", type=int, help="key/value length (default: --seq)")
    count.add_argument("--kv-heads", type=int, help="K/V heads for grouped-query attention (default: --heads)")
    _common(count, seq=False)
    count.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    count.set_defaults(run=_count)

    sw = sub.add_parser("sweep", help="predicted time, speedup, bytes and memory against sequence length")
    sw.add_argument("--algos", default=",".join(ALGOS[:3]), help="comma-separated (default: %(default)s)")
    sw.add_argument("--seqs", default=",".join(map(str, SEQS)), help="comma-separated (default: 512..131072)")
    sw.add_argument("--head-dim", type=int, default=64)
    _common(sw, seq=True)
    sw.add_argument("--out", default="sweep", help="writes OUT.json (default: %(default)s)")
    sw.set_defaults(run=_sweep)
    return p


def _common(p, seq):
    if not seq:
        p.add_argument("--heads", type=int, default=1)
        p.add_argument("--batch", type=int, default=1)
    p.add_argument("--block-q", type=int, help="Br (default: the paper's rule for the GPU)")
    p.add_argument("--block-kv", type=int, help="Bc (default: the paper's rule for the GPU)")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", default="fp16", choices=list(DTYPE_BYTES))
    p.add_argument("--gpu", default="A100-40GB", help="a preset name (see `gpus`)")


def _gpus(args):
    if args.json:
        print(json.dumps({name: gpu.__dict__ for name, gpu in PRESETS.items()}, indent=2))
    else:
        print(format_gpus())
    return 0


def _count(args):
    r = simulate(args.algo, seq=args.seq, head_dim=args.head_dim, heads=args.heads, batch=args.batch,
                 kv_heads=args.kv_heads, seq_kv=args.seq_kv, block_q=args.block_q, block_kv=args.block_kv,
                 causal=args.causal, dtype=args.dtype, gpu=args.gpu)
    print(json.dumps(r.to_dict(), indent=2) if args.json else format_result(r))
    return 0


def _sweep(args):
    algos, seqs = args.algos.split(","), [_int_arg("--seqs", s) for s in args.seqs.split(",")]
    results = sweep(algos, seqs, head_dim=args.head_dim, causal=args.causal, dtype=args.dtype, gpu=args.gpu,
                    block_q=args.block_q, block_kv=args.block_kv, progress=_progress)
    with open(f"{args.out}.json", "w") as f:
        json.dump([r.to_dict() for r in results], f, indent=1)
    print(f"wrote {args.out}.json; draw it with: python -m gpusim_course.plots sweep {args.out}.json")
    return 0


def _int_arg(name, text):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not an integer") from None


def _progress(done, total, width=30):
    filled = width * done // total
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end="\n" if done == total else "",
          file=sys.stderr, flush=True)


def format_gpus():
    rows = [("GPU", "SMs", "SRAM/SM", "SRAM/block", "L2", "HBM", "HBM B/W", "fp16 matmul", "fp32")]
    for g in PRESETS.values():
        rows.append((g.name, str(g.sm_count), fmt_bytes(g.sram_bytes_per_sm), fmt_bytes(g.sram_bytes_per_block),
                     fmt_bytes(g.l2_bytes), fmt_bytes(g.hbm_bytes), f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s",
                     f"{g.fp16_matmul_flops_per_s / 1e12:,.0f} TFLOP/s", f"{g.fp32_flops_per_s / 1e12:.1f} TFLOP/s"))
    return _table(rows)


def format_result(r):
    c = r.config
    head = (f"{c.algo} on {c.gpu.name}: batch {c.batch} x heads {c.heads} (kv heads {c.kv_heads}), seq {c.seq:,} "
            f"(kv {c.seq_kv:,}), head_dim {c.head_dim}, block_q {c.block_q}, block_kv {c.block_kv}, {c.dtype}"
            f"{', causal' if c.causal else ''}")
    tensors = [("tensor", "HBM read", "HBM write")] + [
        (name, f"{t['read_bytes']:,}", f"{t['write_bytes']:,}") for name, t in r.by_tensor.items()]
    kernels = [("kernel", "blocks", "SRAM/block", "HBM read", "HBM write", "matmul FLOP", "other FLOP", "time")] + [
        (k.name, f"{k.programs:,}", f"{k.sram_bytes_per_block:,}", f"{k.read_bytes:,}", f"{k.write_bytes:,}",
         f"{k.flops_matmul:,}", f"{k.flops_other:,}", fmt_time(k.predicted_time_s)) for k in r.kernels]
    fits = "fits in" if r.fits_in_hbm else "OUT OF MEMORY: more than"
    foot = (f"HBM read {fmt_bytes(r.hbm_read_bytes)}, write {fmt_bytes(r.hbm_write_bytes)}; "
            f"peak footprint {fmt_bytes(r.hbm_peak_bytes)} ({fits} {c.gpu.name}'s {fmt_bytes(c.gpu.hbm_bytes)}); "
            f"predicted time {fmt_time(r.predicted_time_s)}")
    return "\n\n".join([head, _table(tensors), _table(kernels), foot])


def _table(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))) for row in rows)

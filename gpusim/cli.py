"""python -m gpusim gpus | count | decode | sweep. Errors are one line on stderr, with a hint, and exit code 2."""
import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from . import ALGOS, DTYPE_BYTES, PRESETS, simulate, sweep
from .context import STRATEGIES, ContextResult, pick_link
from .hardware import get_gpu
from .links import LINKS, TOPOLOGIES
from .shape import DecodeLaunch, positive_int
from .sweep import MODEL_DIM, SEQS, TOKENS
from .units import fmt_bytes, fmt_flops, fmt_time

PROG = "python -m gpusim"
SWEEP_NAME = "gpusim-sweep"  # the sweep's JSON without --out (in the temporary folder), or in the folder --out names


class Parser(argparse.ArgumentParser):
    """argparse's errors in one line, with the hint, instead of the usage block."""

    def error(self, message):
        self.exit(2, f"gpusim: error: {message} (try `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):
        """argparse's, but an option the subcommand does not take points to that subcommand's --help (argparse
        reports it from the top parser, whose help lists no subcommand's options)."""
        args, extras = self.parse_known_args(args, namespace)
        if extras:
            self.exit(2, f"gpusim: error: unrecognized arguments: {' '.join(extras)} "
                         f"(try `{PROG} {args.command} --help`)\n")
        return args


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, OSError) as err:
        print(f"gpusim: error: {err} (try `{PROG} {args.command} --help`)", file=sys.stderr)
        return 2


def _parser():
    p = Parser(prog=PROG, description=__doc__.split(".")[0])
    sub = p.add_subparsers(required=True, metavar="{gpus,count,decode,sweep}")

    gpus = sub.add_parser("gpus", help="list the GPU presets")
    gpus.add_argument("--json", action="store_true", help="print JSON instead of a table")
    gpus.set_defaults(run=_gpus, command="gpus")

    count = sub.add_parser("count", help="bytes, FLOPs, footprint and predicted time of one configuration")
    count.add_argument("--algo", type=str.lower, choices=ALGOS, required=True)
    count.add_argument("--seq", type=int, required=True, help="query length N")
    count.add_argument("--head-dim", type=int, required=True, help="d")
    count.add_argument("--seq-kv", type=int, help="key/value length (default: --seq)")
    count.add_argument("--kv-heads", type=int, help="K/V heads for grouped-query attention (default: --heads)")
    count.add_argument("--heads", type=int, default=1)
    count.add_argument("--batch", type=int, default=1)
    _common(count)
    count.add_argument("--causal-align", choices=("top_left", "bottom_right"), help="the causal mask's corner")
    _training(count)
    _over_gpus(count)
    count.add_argument("--json", action="store_true", help="print one JSON object (exact integers) instead of a table")
    count.set_defaults(run=_count, command="count")

    dec = sub.add_parser("decode", help="one decoding step from a KV cache (Flash-Decoding: algo='split_kv')")
    dec.add_argument("--seq-kv", type=_ints, required=True,
                     help="cached tokens: one length, or one per request, comma-separated (the batch)")
    dec.add_argument("--head-dim", type=int, required=True, help="d")
    dec.add_argument("--heads", type=int, default=1)
    dec.add_argument("--kv-heads", type=int, help="K/V heads (default: --heads)")
    dec.add_argument("--batch", type=int, help="requests, each --seq-kv long (default: one per length given)")
    dec.add_argument("--seq", type=int, default=1, help="query rows per request (default: 1)")
    dec.add_argument("--page-size", type=int, help="a paged cache's tokens per page (default: contiguous)")
    dec.add_argument("--num-splits", type=int, help="splits of each request's cache (default: gpusim's rule)")
    dec.add_argument("--block-kv", type=int,
                     help="the chunk a split program steps by (default: 64, or the largest halving that fits the GPU)")
    dec.add_argument("--dtype", type=str.lower, default="fp16", choices=list(DTYPE_BYTES))
    dec.add_argument("--gpu", default="A100-40GB", help="a preset name, any case (see `gpus`)")
    dec.add_argument("--json", action="store_true", help="print one JSON object (exact integers) instead of a table")
    dec.set_defaults(run=_decode, command="decode")

    sw = sub.add_parser("sweep", help="predicted time, speedup, bytes and memory against sequence length")
    sw.add_argument("--algos", type=_algos, default=ALGOS[:3], help=f"comma-separated (default: {','.join(ALGOS[:3])})")
    sw.add_argument("--seqs", type=_ints, default=SEQS, help="comma-separated (default: 512..131072)")
    sw.add_argument("--head-dim", type=_positive, default=64)
    _common(sw)
    sw.add_argument("--out", type=_out_path, default=os.path.join(tempfile.gettempdir(), SWEEP_NAME),
                    help=f"writes OUT.json (OUT itself if it ends .json, any case; OUT/{SWEEP_NAME}.json if a folder); "
                         "its folder must exist and take a new file, checked before the sweep (default: %(default)s)")
    sw.set_defaults(run=_sweep, command="sweep")
    return p


def _common(p):
    p.add_argument("--block-q", type=int, help="Br (default: the kernel's own: best_blocks, or hopper's table)")
    p.add_argument("--block-kv", type=int, help="Bc (default: the kernel's own: best_blocks, or hopper's table)")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", type=str.lower, default="fp16", choices=list(DTYPE_BYTES))
    p.add_argument("--gpu", default="A100-40GB", help="a preset name, any case (see `gpus`)")


def _training(p):
    """count's options of a training step."""
    p.add_argument("--backward", action="store_true", help="a training step: the forward, then the backward")
    p.add_argument("--backward-blocks", type=_ints, metavar="BQ,BKV",
                   help="the backward's tiles (default: the rule's, halved until every kernel's block fits an SM)")


def _over_gpus(p):
    """count's options of context parallelism."""
    p.add_argument("--gpus", type=int, help="context parallelism over this many GPUs (flash2, hopper)")
    p.add_argument("--strategy", type=str.lower, choices=STRATEGIES, help="with --gpus (default: ring; any case)")
    p.add_argument("--link", help=f"with --gpus: a link ({', '.join(LINKS)}) or a topology ({', '.join(TOPOLOGIES)}), "
                                  "any case (default: the GPU's NVLink)")


def _algos(text):
    algos = [a.strip().lower() for a in text.split(",")]
    unknown = [a for a in algos if a not in ALGOS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{unknown[0]!r} is not one of {', '.join(ALGOS)}")
    return algos


def _ints(text):
    """Positive integers, comma-separated (the sweep's shape rule divides by them)."""
    return [_positive(item) for item in text.split(",")]


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def _out_path(text):
    """--out as the file the sweep writes (OUT.json), checked before any work: an existing folder takes
    SWEEP_NAME.json inside it, a name ending .json (any case) is the file itself; the file must be one that can be
    written (its folder exists and takes a new file: tried, and removed again). An empty name, and a name ending
    in a slash that is no folder, are refused."""
    if not text:
        raise argparse.ArgumentTypeError("'' names no file: give a file, or a folder that exists")
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / f"{SWEEP_NAME}.json"
    elif text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text}: folder {path} does not exist")
    elif path.suffix.lower() != ".json":
        path = Path(f"{path}.json")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: folder {folder} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {path} is a folder")
    try:
        if path.exists():
            open(path, "a").close()  # writable, left as it is until the sweep replaces it
        else:
            open(path, "x").close()
            path.unlink()
    except OSError as err:
        raise argparse.ArgumentTypeError(f"{text}: cannot write {path} ({err.strerror})") from None
    return str(path)


def _gpus(args):
    if args.json:
        print(json.dumps({name: gpu.__dict__ for name, gpu in PRESETS.items()}, indent=2))
    else:
        print(format_gpus())
    return 0


def _count(args):
    if args.gpus is None and (args.strategy is not None or args.link is not None):
        given = " ".join(_flag(n, v) for n, v in (("strategy", args.strategy), ("link", args.link)) if v is not None)
        raise ValueError(f"{given} without --gpus: give the GPUs the sequence is split over (--gpus 1 for one)")
    if args.gpus is not None:  # the link's refusals in the command line's words, before simulate's in Python's
        pick_link(get_gpu(args.gpu), positive_int("gpus", args.gpus), args.strategy, args.link, spell=_flag)
    r = simulate(args.algo, seq=args.seq, head_dim=args.head_dim, heads=args.heads, batch=args.batch,
                 kv_heads=args.kv_heads, seq_kv=args.seq_kv, block_q=args.block_q, block_kv=args.block_kv,
                 causal=args.causal, causal_align=args.causal_align, dtype=args.dtype, gpu=args.gpu,
                 backward=args.backward, gpus=args.gpus, strategy=args.strategy, link=args.link,
                 backward_blocks=None if args.backward_blocks is None else tuple(args.backward_blocks))
    print(json.dumps(r.to_dict(), indent=2) if args.json else format_result(r))
    return 0


def _flag(name, value=None):
    """An argument as the command line names it: --name value, or --name (value None: the option to give)."""
    return f"--{name.replace('_', '-')}" + ("" if value is None else f" {shlex.quote(str(value))}")


def _decode(args):
    lengths = args.seq_kv[0] if len(args.seq_kv) == 1 else args.seq_kv
    r = simulate("split_kv", seq=args.seq, head_dim=args.head_dim, heads=args.heads, batch=args.batch, seq_kv=lengths,
                 page_size=args.page_size, num_splits=args.num_splits, block_kv=args.block_kv, dtype=args.dtype,
                 gpu=args.gpu, kv_heads=args.kv_heads)
    print(json.dumps(r.to_dict(), indent=2) if args.json else format_result(r))
    return 0


def _sweep(args):
    results = sweep(args.algos, args.seqs, head_dim=args.head_dim, causal=args.causal, dtype=args.dtype,
                    gpu=args.gpu, block_q=args.block_q, block_kv=args.block_kv,
                    progress=_progress if sys.stderr.isatty() else None)
    path = args.out
    with open(path, "w") as f:
        json.dump([r.to_dict() for r in results], f, indent=1)
    print(format_sweep(results))
    note = flash1_note(results)
    if note:
        print(note)
    print(f"wrote {path}; draw it with: python -m gpusim_course.provenance.plots sweep {path}")
    return 0


def _progress(done, total, width=30):
    """A progress bar redrawn in place; the sweep passes it only when stderr is a terminal."""
    filled = width * done // total
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end="\n" if done == total else "",
          file=sys.stderr, flush=True)


def format_gpus():
    rows = [("GPU", "SMs", "SRAM/SM", "SRAM/block", "L2", "L2 every SM re-reads", "HBM", "HBM B/W", "fp16 matmul",
             "fp32")]
    for g in PRESETS.values():
        rows.append((g.name, str(g.sm_count), fmt_bytes(g.sram_bytes_per_sm), fmt_bytes(g.sram_bytes_per_block),
                     fmt_bytes(g.l2_bytes), fmt_bytes(g.l2_reuse_bytes(every_sm=True)), fmt_bytes(g.hbm_bytes), f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s",
                     f"{g.fp16_matmul_flops_per_s / 1e12:,.0f} TFLOP/s", f"{g.fp32_flops_per_s / 1e12:.1f} TFLOP/s"))
    return _table(rows)


def format_result(r):
    c = r.config
    head = _decode_head(c) if isinstance(c, DecodeLaunch) else (
        f"{c.algo} on {c.gpu.name}: batch {c.batch} x heads {c.heads} (kv heads {c.kv_heads}), seq {c.seq:,} "
        f"(kv {c.seq_kv:,}), head_dim {c.head_dim}, {_tiles(r)}, {c.dtype}{', causal' if c.causal else ''}")
    b = r.backward_config
    head += f"; the backward at {b.block_q} x {b.block_kv}" if b else ""
    dram = r.dram_by_tensor
    tensors = [("tensor", "HBM read", "HBM write", "DRAM read", "DRAM write")] + [
        (name, fmt_bytes(t["read_bytes"]), fmt_bytes(t["write_bytes"]), fmt_bytes(dram[name]["dram_read_bytes"]),
         fmt_bytes(dram[name]["dram_write_bytes"])) for name, t in r.by_tensor.items()]
    kernels = [("kernel", "blocks", "SMs busy", "SRAM/block", "HBM read", "HBM write", "matmul", "other", "time")] + [
        (k.name, f"{k.programs:,}", f"{k.busy_fraction:.0%}", f"{k.sram_bytes_per_block:,} B", fmt_bytes(k.read_bytes),
         fmt_bytes(k.write_bytes), fmt_flops(k.flops_matmul), fmt_flops(k.flops_other), fmt_time(k.predicted_time_s))
        for k in r.kernels]
    fits = "fits in" if r.fits_in_hbm else "OUT OF MEMORY: more than"
    foot = (f"HBM read {fmt_bytes(r.hbm_read_bytes)}, write {fmt_bytes(r.hbm_write_bytes)} (the paper's count: what "
            f"the SMs ask of HBM, Nsight's L2<->SM bytes); of it DRAM read {fmt_bytes(r.dram_read_bytes)}, write "
            f"{fmt_bytes(r.dram_write_bytes)} (what gets past the L2); "
            f"peak footprint {fmt_bytes(r.hbm_peak_bytes)} ({fits} {c.gpu.name}'s {fmt_bytes(c.gpu.hbm_bytes)}); "
            f"predicted time {fmt_time(r.predicted_time_s)}{_host_floor(r)}.{_spills(r)} Exact integers: --json")
    return "\n\n".join([head, *_parallel(r), _table(tensors), _table(kernels), foot])


def _host_floor(r):
    """Where a training step's time is its host cost per call, not its kernels' (Result.host_s)."""
    kernels_s = sum(k.predicted_time_s for k in r.kernels)
    if r.host_s <= kernels_s:
        return ""
    return (f", the host's cost of a training step on {r.config.gpu.name} (train_step_host_s: Python, autograd and "
            f"the launches), which the kernels' {fmt_time(kernels_s)} cannot beat")


def _spills(r):
    """The kernels' rows hold their register spills (Result.spills), which no tensor and no total above does."""
    read, write = (sum(k.spill_read_bytes for k in r.kernels), sum(k.spill_write_bytes for k in r.kernels))
    if not (read or write):
        return ""
    return (f" The kernels' HBM read and write include their register spills, {fmt_bytes(read)} and "
            f"{fmt_bytes(write)}, which the totals (the tensors') do not.")


def _decode_head(c):
    lengths = sorted(set(c.seq_kv))
    cached = f"{lengths[0]:,}" if len(lengths) == 1 else f"{lengths[0]:,} to {lengths[-1]:,} (ragged)"
    return (f"split_kv on {c.gpu.name}: batch {c.batch} x heads {c.heads} (kv heads {c.kv_heads}), {c.seq} query "
            f"row(s) a request over {cached} cached tokens, head_dim {c.head_dim}, block_kv {c.block_kv}, "
            f"{c.num_splits} split(s), {f'pages of {c.page_size}' if c.page_size else 'contiguous'}, {c.dtype}")


def _tiles(r):
    """The launch's tiles; a context-parallel pass's local calls each run their own shape's (the config holds the
    largest call's, which the steps after the first may not run)."""
    if not isinstance(r, ContextResult):
        return f"block_q {r.config.block_q}, block_kv {r.config.block_kv}"
    given = {name: value for name, value in zip(("block_q", "block_kv"), r.given_blocks) if value}
    if len(given) == 2:
        return f"block_q {given['block_q']} and block_kv {given['block_kv']} in every local call"
    if given:
        (name, value), = given.items()
        return f"{name} {value} in every local call, its other tile its shape's"
    return "each local call at its own shape's tiles"


def _parallel(r):
    """The lines a context-parallel Result adds: which GPU the tables describe, and its link."""
    if not isinstance(r, ContextResult):
        return []
    margin = "no step overlaps a transfer" if r.overlap_margin is None else \
        f"overlap margin {r.overlap_margin:.2f} (compute / transfer, >= 1: the transfer hides)"
    link = "no link (one GPU sends nothing)" if r.link is None else r.link.name
    return [f"{r.strategy} over {r.gpus} GPUs on {link}: the tables are GPU {r.gpu_rank}'s (the busiest); it "
            f"sends {fmt_bytes(r.link_send_bytes)} over its link in {len(r.phases)} steps; {margin}"]


def format_sweep(results):
    """Predicted time per sequence length (rows) and algorithm (columns), each with its tiles; "out of memory"
    where it does not fit. The shape of each row (sweep.fa2_shape) heads the table."""
    algos = list(dict.fromkeys(r.config.algo for r in results))
    by = {(r.config.seq, r.config.algo): r for r in results}
    c = results[0].config
    head = (f"batch = {TOKENS:,} tokens / N (at least 1), heads = {MODEL_DIM:,} / head_dim (the FlashAttention-2 "
            f"paper's benchmarks), head_dim {c.head_dim}, {c.dtype}{', causal' if c.causal else ''}, on "
            f"{c.gpu.name}; time (block_q x block_kv)")
    rows = [("N", "batch x heads", *algos)] + [
        (f"{seq:,}", f"{by[seq, algos[0]].config.batch} x {by[seq, algos[0]].config.heads}",
         *(_swept(by[seq, a]) for a in algos)) for seq in dict.fromkeys(r.config.seq for r in results)]
    return head + "\n\n" + _table(rows)


def _swept(r):
    time = fmt_time(r.predicted_time_s) if r.fits_in_hbm else "out of memory"
    return f"{time} ({r.config.block_q} x {r.config.block_kv})"


def flash1_note(results):
    """One line, from the results' own numbers, on why flash1 is slower than naive where it is; None elsewhere."""
    naive = {r.config.seq: r for r in results if r.config.algo == "naive" and r.fits_in_hbm}
    slow = [(naive[r.config.seq], r) for r in results if r.config.algo == "flash1" and r.config.seq in naive
            and r.predicted_time_s > naive[r.config.seq].predicted_time_s]
    if not slow:
        return None
    seqs = [f"{f.config.seq:,}" for _, f in slow]
    blocks = [f"{f.kernels[0].programs:,}" for _, f in slow]
    busy = [f"{f.kernels[0].busy_fraction:.0%}" for _, f in slow]
    naive_busy = [f"{min(k.busy_fraction for k in n.kernels):.0%}" for n, _ in slow]
    ratios = [f.kernels[0].memory_time_s / sum(k.memory_time_s for k in n.kernels) for n, f in slow]
    why = (", as it reads and writes O, l and m once per K/V block" if min(ratios) >= 0.95 else
           ": its idle SMs, not its bytes, make it slower")
    return (f"flash1 is slower than naive at N = {_span(seqs)}: it runs one thread block per (batch, head), "
            f"{_span(blocks)} blocks for {slow[0][1].config.gpu.sm_count} SMs, keeping {_span(busy)} of them busy "
            f"(naive: {_span(naive_busy)}); its memory time is {_span(f'{x:.1f}x' for x in ratios)} naive's{why}")


def _span(values):
    values = list(values)
    return values[0] if values[0] == values[-1] else f"{values[0]} to {values[-1]}"


def _table(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))) for row in rows)

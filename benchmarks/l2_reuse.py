"""How much of the L2 a re-read finds: DRAM bytes read when a buffer of W bytes is read PASSES times, for W from
4 to 96 MiB, in three patterns of the attention kernels' re-reads.

    OUT=$OUT bash benchmarks/run_l2_reuse.sh        # GPU, under Nsight Compute: $OUT/l2_reuse.json (run 65)
    PATTERNS=spread_writing NAME=l2_reuse_writing OUT=$OUT bash benchmarks/run_l2_reuse.sh     # run 67
    TRITON_INTERPRET=1 python -m benchmarks.l2_reuse workload --manifest /tmp/m.json --smoke   # CPU: the launches

- every_sm: every program (one per SM) reads the whole buffer, tile after tile, PASSES times, as every Q block
  of a head reads its K and V (flash2, hopper, pv). The programs march together, so within a pass a tile comes
  from DRAM at most once; a later pass finds it in L2 only if the W bytes read since stayed there.
- spread: the grid sweeps the buffer PASSES times, each tile read by one program a sweep, a different one the
  next (benchmarks.bandwidth's load kernel, as its L2 rows): re-reads between programs, as qk's Q and K rows.
- own: each program re-reads its own slice of W / SMs bytes PASSES times, as a flash1 block its head's O, l, m.
- spread_writing: spread, each program also writing every tile it reads to a stream of fresh tiles (as many
  bytes written as read, never read again), as naive attention's qk writes an S tile for its Q and K rows.
Re-reads that miss, of those after the first pass: (DRAM read - W) / ((PASSES - 1) W); 0 while W fits, 1 when
nothing re-read is found. Nsight Compute (`--cache-control all`: L2 flushed before each launch) counts DRAM
reads, L2 read sectors and their hits, and the sectors an L2 partition takes from the other across the L2
fabric (the H100's and H200's L2 is two partitions, each caching what the SMs beside it read: the whitepaper's
"Each L2 partition localizes and caches data for memory accesses from SMs in the GPCs directly connected to
the partition"); `--metrics` is the list in METRICS.
"""
import json
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from benchmarks import bandwidth, probe
from benchmarks.ncu import UNITS, available_metrics, raw_table

MiB = 2**20
SIZES_MIB = (4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 96)
PASSES, ROWS, WARPS, STAGES = 3, 128, 8, 3  # tiles of (128, 64) fp16 = 16 KiB, 3-stage cp.async pipeline
TILE_BYTES = ROWS * bandwidth.COLS * bandwidth.ITEMSIZE
PATTERNS = ("every_sm", "spread", "own", "spread_writing")
METRICS = {
    "dram_read_bytes": "dram__bytes_read.sum",
    "l2_read_bytes": "lts__t_sectors_srcunit_tex_op_read.sum",
    "l2_read_hit_bytes": "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "l2_fabric_bytes": "lts__t_sectors_srcunit_ltcfabric.sum",
    "time_s": "gpu__time_duration.sum",
}


@triton.jit(do_not_specialize=["span", "steps"])
def reread_kernel(X, out, span, steps, OWN: tl.constexpr, ROWS: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    base = pid * span if OWN else 0  # own: this program's slice of span tiles; every_sm: the whole buffer
    offs = tl.arange(0, ROWS)[:, None] * 64 + tl.arange(0, 64)[None, :]
    acc = tl.zeros([ROWS], tl.float32)
    for t in tl.range(0, steps, num_stages=STAGES):
        tile = (base + t % span).to(tl.int64)
        x = tl.load(X + tile * ROWS * 64 + offs)  # read ROWS*64 fp16 = TILE_BYTES
        acc += tl.sum(x.to(tl.float32), axis=1)
    tl.store(out + pid, tl.sum(acc, axis=0))  # write 4 B


@triton.jit(do_not_specialize=["n_tiles", "tiles_per_program"])
def reread_write_kernel(X, Y, n_tiles, tiles_per_program, ROWS: tl.constexpr, STAGES: tl.constexpr):
    pid, grid = tl.program_id(0), tl.num_programs(0)
    offs = tl.arange(0, ROWS)[:, None] * 64 + tl.arange(0, 64)[None, :]
    for t in tl.range(0, tiles_per_program, num_stages=STAGES):
        step = pid + t * grid
        x = tl.load(X + (step % n_tiles).to(tl.int64) * ROWS * 64 + offs)  # read ROWS*64 fp16 = TILE_BYTES
        tl.store(Y + step.to(tl.int64) * ROWS * 64 + offs, x)  # write TILE_BYTES, a tile of its own


def launch(pattern, size_bytes, buf, out, programs, stream=None):
    """One launch reading `size_bytes` (rounded down to whole tiles; own: to whole slices) PASSES times (and
    spread_writing writing as much into `stream`); returns the bytes of the working set."""
    n_tiles = size_bytes // TILE_BYTES
    if pattern == "spread_writing":
        reread_write_kernel[(programs,)](buf, stream, n_tiles, PASSES * n_tiles // programs, ROWS=ROWS, STAGES=STAGES,
                                         num_warps=WARPS, num_stages=STAGES)
        return n_tiles * TILE_BYTES
    if pattern == "spread":
        bandwidth.load_kernel[(programs,)](buf, out, n_tiles, PASSES * n_tiles // programs, ROWS=ROWS, STAGES=STAGES,
                                           num_warps=WARPS, num_stages=STAGES)
        return n_tiles * TILE_BYTES
    span = n_tiles // programs if pattern == "own" else n_tiles
    reread_kernel[(programs,)](buf, out, span, PASSES * span, OWN=pattern == "own", ROWS=ROWS, STAGES=STAGES,
                               num_warps=WARPS, num_stages=STAGES)
    return span * TILE_BYTES * (programs if pattern == "own" else 1)


def workload(manifest_path, command, sizes_mib=SIZES_MIB, max_seconds=None, patterns=PATTERNS):
    """Every pattern at every size, one launch each inside the profiler range (a first launch compiles)."""
    start, programs = time.monotonic(), probe.sm_count()
    buf = torch.randn(max(sizes_mib) * MiB // bandwidth.ITEMSIZE, device=probe.DEVICE, dtype=torch.float16)
    out = torch.empty(programs, device=probe.DEVICE, dtype=torch.float32)
    stream = torch.empty(PASSES * buf.numel(), device=probe.DEVICE, dtype=torch.float16) \
        if "spread_writing" in patterns else None
    manifest = {"environment": probe.environment(command), "passes": PASSES, "tile_bytes": TILE_BYTES,
                "programs": programs, "launches": []}
    for pattern in patterns:
        launch(pattern, sizes_mib[0] * MiB, buf, out, programs, stream)
        for size in sizes_mib:
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                print(f"workload: stopped after {max_seconds} s", file=sys.stderr)
                return manifest
            working_set = probe.profiled(lambda: launch(pattern, size * MiB, buf, out, programs, stream))
            manifest["launches"].append({"pattern": pattern, "working_set_bytes": working_set})
            Path(manifest_path).write_text(json.dumps(manifest, indent=1))
    return manifest


def rows(csv_text, manifest):
    """Nsight's launches beside the manifest's, in order: one row each, with the re-reads' miss share."""
    launches, units = raw_table(csv_text)
    if len(launches) != len(manifest["launches"]):
        raise ValueError(f"{len(launches)} launches profiled, {len(manifest['launches'])} in the manifest")
    out = []
    for measured, planned in zip(launches, manifest["launches"]):
        row = dict(planned, passes=manifest["passes"])
        for quantity, metric in METRICS.items():
            value = measured.get(metric, "").replace(",", "")  # a metric this ncu lacks: None
            row[quantity] = float(value) * UNITS[units[metric]] if value not in ("", "n/a") else None
        w = row["working_set_bytes"]
        row["reread_miss"] = (row["dram_read_bytes"] - w) / ((row["passes"] - 1) * w)
        out.append(row)
    return out


def capacity(rows_, pattern, threshold=0.5):
    """The working set at which half the re-reads miss: interpolated between the measured sizes either side
    (None if every size stays below or above the threshold)."""
    points = sorted((r["working_set_bytes"], r["reread_miss"]) for r in rows_ if r["pattern"] == pattern)
    for (w0, m0), (w1, m1) in zip(points, points[1:]):
        if m0 < threshold <= m1:
            return round(w0 + (w1 - w0) * (threshold - m0) / (m1 - m0))
    return None


def main(argv=None):
    ap, m, w = probe.nsight_parser("l2_reuse", __doc__)
    m.add_argument("--available", help="ncu --query-metrics's output: leave out the metrics it does not list")
    w.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated, of " + ", ".join(PATTERNS))
    w.add_argument("--max-seconds", type=float, help="launch nothing more after this long")
    args = ap.parse_args(argv)
    if args.cmd == "metrics":
        query = Path(args.available).read_text() if args.available else None
        print(",".join(available_metrics(query, METRICS, optional=tuple(METRICS))))
    elif args.cmd == "workload":
        workload(args.manifest, args.command, (1, 2) if args.smoke else SIZES_MIB, args.max_seconds,
                 args.patterns.split(","))
    else:
        manifest = json.loads(Path(args.manifest).read_text())
        measured = rows(Path(args.csv).read_text(), manifest)
        summary = {p: capacity(measured, p) for p in dict.fromkeys(r["pattern"] for r in measured)}
        Path(args.out).write_text(json.dumps({"environment": manifest["environment"], "half_missed_at_bytes": summary,
                                              "rows": measured}, indent=1))
        for r in measured:
            print(f"{r['pattern']:8s} {r['working_set_bytes'] / MiB:6.1f} MiB  re-reads missing {r['reread_miss']:6.3f}"
                  f"  L2 hits {r['l2_read_hit_bytes'] / r['l2_read_bytes']:.3f}"
                  f"  fabric {(r['l2_fabric_bytes'] or 0) / r['l2_read_bytes']:.3f}  {r['time_s'] * 1e3:.3f} ms")
        print("half the re-reads miss at:", {p: v and f"{v / MiB:.1f} MiB" for p, v in summary.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())

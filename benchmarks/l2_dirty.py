"""What a launch leaves dirty in the L2: the DRAM bytes written by a kernel that streams once through R bytes and
writes W = R x ratio bytes as it goes (as flash2's preprocess writes D, B·H·N fp32, while it reads O and dO: W / R
= 1/64 at d = 64), for R of 32, 128 and 512 MiB and W / R from 1/64 to 4. Whatever it wrote that is not yet in
DRAM when it ends is still dirty in the L2.

gpusim's rule 4 (gpusim/l2.py) had one constant: the L2 ends holding the launch's most recent DRAM traffic, 0.44
of its capacity (fitted to one qk launch, whose traffic is nearly all writes), the written share of it still
dirty. Nsight Compute run 87 measured the preprocess keeping about twice that share of D. Runs 88-89 measured
this, and rule 4's two constants now come from it (benchmarks/h200_constants.py): L2_RECENT_FRACTION from the
rows writing little, L2_DIRTY_FRACTION from those writing most.

    NCU_S=200 OUT=$OUT bash benchmarks/h200_session.sh l2_dirty     # GPU: $OUT/l2_dirty.json; raw CSV, manifest in $OUT/logs.tar.gz
    TRITON_INTERPRET=1 python -m benchmarks.l2_dirty workload --manifest /tmp/m.json --smoke   # CPU: the launches

The workload runs under ncu with the two DRAM counters alone (one pass: replayed, a launch writes 1.2-3.2 MB
more, docs/perf.md), a fill profiled first (Nsight's own set-up writes; benchmarks.ncu.profiled_setup).
"""
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

import gpusim
from benchmarks import probe
from benchmarks.ncu import DRAM, METRICS, parse_csv, profiled_setup

MiB = 2**20
ROWS, COLS, ITEMSIZE = 128, 64, 2  # (128, 64) fp16 tiles of 16 KiB, read once each
TILE_BYTES = ROWS * COLS * ITEMSIZE
TILES_PER_PROGRAM, WARPS, STAGES = 2, 4, 3  # a program reads 32 KiB, as the preprocess's (O and dO rows at d = 64)
READ_MIB = (32, 128, 512)
WRITES = (64, 128, 256, 1024, 4096, 16384)  # fp32 written per tile read: W / R = 1/64, 1/32, 1/16, 1/4, 1, 4
PRESET = "H200-measured"


@triton.jit
def stream_kernel(X, Y, WRITE: tl.constexpr, TILES: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr,
                  STAGES: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    for t in tl.range(0, TILES, num_stages=STAGES):
        tile = (pid * TILES + t).to(tl.int64)
        x = tl.load(X + tile * ROWS * COLS + offs)  # read ROWS*COLS fp16
        total = tl.sum(tl.sum(x.to(tl.float32), axis=1), axis=0)
        tl.store(Y + tile * WRITE + tl.arange(0, WRITE), total + tl.zeros([WRITE], tl.float32))  # write WRITE fp32


def launch(read_bytes, write, x, y):
    """One launch reading `read_bytes` of x once, writing `write` fp32 of y per tile; returns (R, W) in bytes."""
    n_tiles = read_bytes // TILE_BYTES
    stream_kernel[(n_tiles // TILES_PER_PROGRAM,)](x, y, WRITE=write, TILES=TILES_PER_PROGRAM, ROWS=ROWS, COLS=COLS,
                                                  STAGES=STAGES, num_warps=WARPS, num_stages=STAGES)
    return n_tiles * TILE_BYTES, n_tiles * write * 4


def workload(manifest_path, command, read_mib=READ_MIB, writes=WRITES):
    """Every size and ratio, one launch each inside the profiler range (each compiled first, outside it)."""
    x = torch.randn(max(read_mib) * MiB // ITEMSIZE, device=probe.DEVICE, dtype=torch.float16)
    y = torch.empty(max(read_mib) * MiB // TILE_BYTES * max(writes), device=probe.DEVICE, dtype=torch.float32)
    manifest = {"environment": probe.environment(command), "launches": [profiled_setup()] if probe.DEVICE == "cuda" else []}
    for write in writes:
        launch(min(read_mib) * MiB, write, x, y)
    for read in read_mib:
        for write in writes:
            read_bytes, write_bytes = probe.profiled(lambda: launch(read * MiB, write, x, y))
            manifest["launches"].append({"read_bytes": read_bytes, "write_bytes": write_bytes})
            Path(manifest_path).write_text(json.dumps(manifest, indent=1))
    return manifest


def rows(csv_text, manifest):
    """Nsight's launches beside the manifest's (the set-up fill left out): one row each, what stayed dirty."""
    launches = parse_csv(csv_text)
    if len(launches) != len(manifest["launches"]):
        raise ValueError(f"{len(launches)} launches profiled, {len(manifest['launches'])} in the manifest")
    out = []
    for measured, planned in zip(launches, manifest["launches"]):
        if planned.get("setup"):
            continue
        row = {**planned, **{q: measured[q] for q in DRAM}}
        row["still_dirty_bytes"] = row["write_bytes"] - row["dram_write_bytes"]
        out.append(row)
    return out


def main(argv=None):
    ap, _, _ = probe.nsight_parser("l2_dirty", __doc__)  # metrics: the DRAM counters alone
    args = ap.parse_args(argv)
    if args.cmd == "metrics":
        print(",".join(METRICS[q] for q in DRAM))
    elif args.cmd == "workload":
        workload(args.manifest, args.command, *(((1,), (64, 4096)) if args.smoke else ()))
    else:
        manifest = json.loads(Path(args.manifest).read_text())
        measured = rows(Path(args.csv).read_text(), manifest)
        Path(args.out).write_text(json.dumps({"environment": manifest["environment"], "preset": PRESET,
                                              "rows": measured}, indent=1))
        l2 = gpusim.get_gpu(PRESET).l2_bytes
        for r in measured:  # against rule 4 as gpusim has it now
            rule = r["write_bytes"] - gpusim.l2.still_dirty(l2, r["write_bytes"], r["dram_read_bytes"])
            print(f"R {r['read_bytes'] / MiB:6.0f} MiB  W {r['write_bytes'] / MiB:8.3f} MiB  to DRAM "
                  f"{r['dram_write_bytes'] / MiB:8.3f} MiB  still dirty {r['still_dirty_bytes'] / MiB:7.3f} MiB  "
                  f"rule 4 {rule / MiB:8.3f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

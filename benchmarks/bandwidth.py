"""Little's law on this GPU: the bandwidth programs reach against the bytes each SM keeps in flight, for the
loads and stores the attention kernels make.

    python -m benchmarks.bandwidth --out $OUT                                    # GPU: $OUT/bandwidth.json
    TRITON_INTERPRET=1 python -m benchmarks.bandwidth --out /tmp/probe --smoke   # CPU: every code path, tiny

- load: a grid of num_SMs x k programs (k = programs_per_sm, 1 to 8) sweeps a buffer, each program loading
  (rows, 64) fp16 tiles of T = tile_bytes (1 to 64 KiB, the shape of a K_j or V_j tile) one after another
  and summing them into registers. num_stages 1: ld.global, each tile summed once it has arrived, nothing
  loaded ahead. num_stages S >= 2: tl.range's software pipeline copies tiles into S - 1 shared-memory
  buffers with cp.async and waits with S - 2 copies still outstanding (triton 3.6's PTX for sm_90: shared
  bytes = (S - 1) x T), so S - 1 tiles are in flight when a program waits, and the summing of one tile
  overlaps the next tile's copy. Bytes in flight per SM = T x k x max(1, S - 1), when all k programs are
  resident (n_regs and shared_bytes say whether they can be). level hbm: a 4 GiB buffer read once; l2: a
  16 MiB buffer read PASSES = 64 times (do_bench flushes L2 before each call: the first pass misses).
- store: each program of a grid covering 2 GiB writes one tile of T bytes from registers, no loads, and
  exits, as naive attention's qk kernel writes its S tile; the grid size is the buffer over T.
- copy: torch's device-to-device copy of 4 GiB, bytes read plus written, the reference.
Timing: triton.testing.do_bench's median (probe.median_ms). Each row: {kind, level, tile_bytes,
programs_per_sm, num_warps, num_stages, bytes, ms, bytes_per_s, bytes_in_flight_per_sm, programs, n_regs,
n_spills, shared_bytes}.

Expected wall time on the H200, about 45 s: imports 5 s; 49 kernels (28 load, 21 store) compiled by 16
processes, 10 s; 112 HBM loads x ~70 ms (do_bench's 5-call estimate and 10 + 40 ms windows; the slowest,
1 KiB x 1 program per SM, reads 4 GiB at ~0.2 TB/s in 25 ms, 9 calls) 9 s; 112 L2 loads x ~100 ms (calls of
0.1-2 ms, each after do_bench's 256 MB L2 flush) 11 s; 21 store bursts and the copy 2 s.
"""

import torch
import triton
import triton.language as tl

from benchmarks import probe

KiB, MiB, GiB = 2**10, 2**20, 2**30
COLS, ITEMSIZE = 64, 2  # (rows, 64) fp16 tiles: a head_dim of 64
TILE_BYTES = [2**i * KiB for i in range(7)]  # 1 KiB .. 64 KiB
PROGRAMS_PER_SM = (1, 2, 4, 8)
STAGES = (1, 2, 3, 4)
STORE_WARPS = (2, 4, 8)
HBM_BYTES, L2_BYTES, PASSES, STORE_BYTES, COPY_BYTES = 4 * GiB, 16 * MiB, 64, 2 * GiB, 4 * GiB
SMOKE = dict(TILE_BYTES=[KiB, 4 * KiB], PROGRAMS_PER_SM=(1, 2), STAGES=(1, 2), STORE_WARPS=(4,), HBM_BYTES=64 * KiB,
             L2_BYTES=16 * KiB, PASSES=2, STORE_BYTES=16 * KiB, COPY_BYTES=64 * KiB)


@triton.jit(do_not_specialize=["n_tiles", "tiles_per_program"])
def load_kernel(X, out, n_tiles, tiles_per_program, ROWS: tl.constexpr, STAGES: tl.constexpr):
    pid, grid = tl.program_id(0), tl.num_programs(0)
    offs = tl.arange(0, ROWS)[:, None] * 64 + tl.arange(0, 64)[None, :]
    acc = tl.zeros([ROWS], tl.float32)
    for t in tl.range(0, tiles_per_program, num_stages=STAGES):
        tile = ((pid + t * grid) % n_tiles).to(tl.int64)  # neighbouring programs read neighbouring tiles
        x = tl.load(X + tile * ROWS * 64 + offs)  # read ROWS*64 fp16 = tile_bytes
        acc += tl.sum(x.to(tl.float32), axis=1)  # within each warp: no shared memory, no barrier
    tl.store(out + pid, tl.sum(acc, axis=0))  # write 4 B


@triton.jit
def store_kernel(Y, ROWS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, ROWS)[:, None] * 64 + tl.arange(0, 64)[None, :]
    tl.store(Y + pid * ROWS * 64 + offs, tl.full([ROWS, 64], 1.0, tl.float16))  # write ROWS*64 fp16 = tile_bytes


def load_warps(tile_bytes):
    """The attention kernels' rule (gpusim_kernels.launch.options): 8 warps for tiles of 128 rows or more."""
    return 8 if tile_bytes // (COLS * ITEMSIZE) >= 128 else 4


def load_configs():
    """(kind, level, tile_bytes, programs_per_sm, num_warps, num_stages) in the order measured."""
    return [("load", level, t, k, load_warps(t), s) for level in ("hbm", "l2") for t in TILE_BYTES
            for k in PROGRAMS_PER_SM for s in STAGES]


def store_configs():
    return [("store", "hbm", t, None, w, 1) for t in TILE_BYTES for w in STORE_WARPS]


def bytes_in_flight_per_sm(kind, tile_bytes, programs_per_sm, num_stages):
    """What each SM has asked for and not yet received when its programs wait, if all of them are resident:
    one tile per program without pipelining, num_stages - 1 with it (see the docstring at the top)."""
    return tile_bytes * programs_per_sm * max(1, num_stages - 1) if kind == "load" else None


def launch(config, buf, out):
    """One launch of a configuration over buf (the whole buffer for hbm; L2_BYTES of it, PASSES times, for l2);
    returns (compiled kernel, bytes moved, programs)."""
    kind, level, tile_bytes, programs_per_sm, num_warps, num_stages = config
    rows = tile_bytes // (COLS * ITEMSIZE)
    if kind == "store":
        programs = STORE_BYTES // tile_bytes
        return store_kernel[(programs,)](buf, ROWS=rows, num_warps=num_warps), programs * tile_bytes, programs
    region = HBM_BYTES if level == "hbm" else L2_BYTES
    n_tiles, programs = region // tile_bytes, probe.sm_count() * programs_per_sm
    tiles_per_program = n_tiles * (PASSES if level == "l2" else 1) // programs
    compiled = load_kernel[(programs,)](buf, out, n_tiles, tiles_per_program, ROWS=rows, STAGES=num_stages,
                                        num_warps=num_warps, num_stages=num_stages)
    return compiled, tiles_per_program * programs * tile_bytes, programs


def buffers(kind):
    """The buffer a kind reads or writes (fp16) and 8 programs per SM of partial sums."""
    n = (HBM_BYTES if kind == "load" else STORE_BYTES) // ITEMSIZE
    buf = torch.randn(n, device=probe.DEVICE, dtype=torch.float16) if kind == "load" else \
        torch.empty(n, device=probe.DEVICE, dtype=torch.float16)
    return buf, torch.empty(max(PROGRAMS_PER_SM) * probe.sm_count(), device=probe.DEVICE, dtype=torch.float32)


def warm(config):
    """Compile one configuration (in a pool worker): a launch over a small buffer of the same kind."""
    small = torch.zeros(max(TILE_BYTES) // ITEMSIZE * 16, device=probe.DEVICE, dtype=torch.float16)
    kind, level, tile_bytes, programs_per_sm, num_warps, num_stages = config
    rows = tile_bytes // (COLS * ITEMSIZE)
    out = torch.empty(max(PROGRAMS_PER_SM) * probe.sm_count(), device=probe.DEVICE, dtype=torch.float32)
    if kind == "store":
        store_kernel[(1,)](small, ROWS=rows, num_warps=num_warps)
    else:
        load_kernel[(1,)](small, out, 16, 16, ROWS=rows, STAGES=num_stages, num_warps=num_warps,
                          num_stages=num_stages)


def measure(config, buf, out):
    compiled, moved, programs = launch(config, buf, out)
    ms = probe.median_ms(lambda: launch(config, buf, out))
    return {"bytes": moved, "ms": ms, "bytes_per_s": moved / (ms * 1e-3), "programs": programs,
            **probe.kernel_resources(compiled)}


def copy_row():
    src = torch.randn(COPY_BYTES // ITEMSIZE, device=probe.DEVICE, dtype=torch.float16)
    dst = torch.empty_like(src)
    ms = probe.median_ms(lambda: dst.copy_(src))
    return {"bytes": 2 * COPY_BYTES, "ms": ms, "bytes_per_s": 2 * COPY_BYTES / (ms * 1e-3)}


def run(results, workers):
    configs = load_configs() + store_configs()
    probe.compile_all(warm, sorted(set((k, "hbm", t, None, w, s) for k, _, t, _, w, s in configs)), workers, 40)
    for kind in ("load", "store"):
        buf, out = buffers(kind)
        for config in (c for c in configs if c[0] == kind):
            _, level, tile_bytes, programs_per_sm, num_warps, num_stages = config
            row = dict(kind=kind, level=level, tile_bytes=tile_bytes, programs_per_sm=programs_per_sm,
                       num_warps=num_warps, num_stages=num_stages,
                       bytes_in_flight_per_sm=bytes_in_flight_per_sm(kind, tile_bytes, programs_per_sm, num_stages))
            results.add(probe.attempt(row, lambda: measure(config, buf, out)))
            print(f"{kind:5s} {level:3s} T={tile_bytes // KiB:2d} KiB k={programs_per_sm} warps={num_warps} "
                  f"stages={num_stages}: {row.get('bytes_per_s', 0) / 1e12:5.2f} TB/s {row.get('error', '')}",
                  flush=True)
        del buf, out
    row = results.add(probe.attempt(dict(kind="copy", level="hbm"), copy_row))
    print(f"copy: {row.get('bytes_per_s', 0) / 1e12:5.2f} TB/s {row.get('error', '')}")


def main(argv=None):
    args = probe.parser(__doc__, "bandwidth.json").parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    run(probe.open_results("bandwidth.json", args, argv), args.workers)


if __name__ == "__main__":
    main()

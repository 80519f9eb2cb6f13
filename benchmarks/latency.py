"""The latency of one load from L2 and from HBM on this GPU, by pointer chase: the denominator of Little's law
(bandwidth = bytes in flight / latency) in gpusim's time model.

    python -m benchmarks.latency --out $OUT                                    # GPU: $OUT/latency.json
    TRITON_INTERPRET=1 python -m benchmarks.latency --out /tmp/probe --smoke   # CPU: every code path, tiny

One program of one warp follows a chain of dependent loads, p = buf[p]: each an ld.global.cg (cached in L2,
not in L1), each at the start of its own 128-byte line, the lines in the order of one random cycle, so no
prefetcher guesses the next address and no two hops share a line.
- Working sets up to the L2's size (60 MiB on the H200) are chased once around the whole cycle first, so
  every line is in L2: 8 MiB gives the L2 latency.
- Larger ones (to 4 GiB) are never revisited within a run, so every hop misses L2: the HBM latency. At 4 GiB
  the cycle either visits all lines of one 2 MiB page before the next page ("local": one TLB miss per
  16,384 hops) or jumps anywhere ("spread": most hops miss the TLB too).
ns per hop = (t(2h) - t(h)) / h, medians of REPEATS launches of h and of 2h hops, so the launch cancels.
cycles per hop = ns per hop x the SM clock that nvidia-smi reports (clocks.sm) while a chase runs.

Expected wall time on the H200, about 15 s: imports and CUDA start 5 s; building the 4 GiB cycles 2 s; per
working set REPEATS x 3h hops (h = 2**15 to 2**16) at 0.3-0.9 us, 0.2-0.5 s, 7 of them, plus warming the
L2-sized cycles (up to 393,216 hops) and one 1 s chase for the clock.
"""
import subprocess

import torch
import triton
import triton.language as tl

from benchmarks import probe

MiB, GiB = 2**20, 2**30
LINE_BYTES, INT_BYTES = 128, 4
PAGE_BYTES = 2 * MiB  # the GPU's large page: cudaMalloc maps big buffers with 2 MiB pages
UNROLL = 8  # hops per loop iteration: the loop's own instructions stay a few percent of an L2 hit
REPEATS = 5
# (working set bytes, pages): "spread" is one random cycle over all lines, "local" page by page
CHASES = [(2 * MiB, "spread"), (8 * MiB, "spread"), (32 * MiB, "spread"), (48 * MiB, "spread"),
          (128 * MiB, "spread"), (4 * GiB, "local"), (4 * GiB, "spread")]
HOPS_L2, HOPS_HBM = 2**16, 2**15  # h: about 20 ms of chasing either way
CLOCK_HOPS = 2**22  # a chase of about 1 s in L2, while nvidia-smi reads the SM clock
L2_BYTES = None  # the device's L2 (60 MiB on the H200), read when the run starts
SMOKE = dict(CHASES=[(16 * 1024, "spread"), (64 * 1024, "local"), (64 * 1024, "spread")], HOPS_L2=64, HOPS_HBM=32,
             CLOCK_HOPS=64, PAGE_BYTES=16 * 1024, L2_BYTES=32 * 1024)


@triton.jit(do_not_specialize=["start", "hops"])
def chase_kernel(buf, out, start, hops, UNROLL: tl.constexpr):
    p = start  # an element index; every element the chain visits holds the index of the next
    for _ in range(hops // UNROLL):
        for _ in tl.static_range(UNROLL):
            p = tl.load(buf + p, cache_modifier=".cg")  # read 4 B: one sector of a line not visited before
    tl.store(out, p)  # write 4 B: where the chain stopped, so no hop is dead code


def cycle(n_lines, lines_per_page=None, generator=None):
    """next_line[i]: the line after line i in one random cycle through all n_lines lines; with lines_per_page,
    the cycle visits every line of a page (in random order) before moving to the next page (in random order)."""
    if lines_per_page is None:
        order = torch.randperm(n_lines, generator=generator, device=generator.device)
    else:
        pages = torch.randperm(n_lines // lines_per_page, generator=generator, device=generator.device)
        within = torch.rand(len(pages), lines_per_page, generator=generator, device=generator.device).argsort(dim=1)
        order = (pages[:, None] * lines_per_page + within).flatten()
    next_line = torch.empty_like(order)
    next_line[order] = order.roll(-1)
    return next_line


def chain_buffer(working_set_bytes, pages, page_bytes, device):
    """An int32 buffer of working_set_bytes whose first element of each 128-byte line holds the element index
    of the next line's first element."""
    ints_per_line, n_lines = LINE_BYTES // INT_BYTES, working_set_bytes // LINE_BYTES
    generator = torch.Generator(device=device).manual_seed(working_set_bytes)
    next_line = cycle(n_lines, page_bytes // LINE_BYTES if pages == "local" else None, generator)
    buf = torch.zeros(working_set_bytes // INT_BYTES, dtype=torch.int32, device=device)
    buf[::ints_per_line] = (next_line * ints_per_line).to(torch.int32)
    return buf


def chase(buf, out, start, hops):
    """One launch of `hops` hops from element `start`: (ms, the element it stopped on)."""
    ms = probe.launch_ms(lambda: chase_kernel[(1,)](buf, out, start, hops, UNROLL=UNROLL, num_warps=1))
    return ms, int(out.item())


def ns_per_hop(buf, out, hops, start=0):
    """(t(2h) - t(h)) / h from medians of REPEATS launches each; every launch continues where the last stopped."""
    times = {hops: [], 2 * hops: []}
    for _ in range(REPEATS):
        for h in times:
            ms, start = chase(buf, out, start, h)
            times[h].append(ms)
    median = {h: sorted(t)[len(t) // 2] for h, t in times.items()}
    return (median[2 * hops] - median[hops]) * 1e6 / hops


def sm_clocks_hz(buf, out):
    """The SM clock and its maximum as nvidia-smi reports them (clocks.sm, clocks.max.sm) while a long chase
    runs; None where there is no nvidia-smi."""
    chase_kernel[(1,)](buf, out, 0, CLOCK_HOPS, UNROLL=UNROLL, num_warps=1)  # asynchronous: still running below
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        smi = ""
    out.item()  # waits for the chase
    return parse_clocks(smi)


def parse_clocks(smi):
    """(clock, max clock) in Hz from nvidia-smi's 'MHz, MHz' line (the first GPU's); (None, None) otherwise."""
    fields = smi.strip().splitlines()[0].split(",") if smi.strip() else []
    try:
        return tuple(float(f) * 1e6 for f in fields[:2]) if len(fields) >= 2 else (None, None)
    except ValueError:
        return None, None


def level(working_set_bytes, l2_bytes):
    if working_set_bytes <= l2_bytes // 2:
        return "l2"
    return "hbm" if working_set_bytes >= 2 * l2_bytes else "l2+hbm"


def measure(working_set_bytes, pages, clock_hz):
    """One row: the chase over working_set_bytes, warmed into L2 first when it fits there."""
    buf = chain_buffer(working_set_bytes, pages, PAGE_BYTES, probe.DEVICE)
    out = torch.zeros(1, dtype=torch.int32, device=probe.DEVICE)
    warm = working_set_bytes <= L2_BYTES
    hops = HOPS_L2 if warm else HOPS_HBM
    n_lines = working_set_bytes // LINE_BYTES
    chase(buf, out, 0, -(-n_lines // UNROLL) * UNROLL if warm else UNROLL)  # every line into L2, or just compile
    ns = ns_per_hop(buf, out, hops)
    return {"ns_per_hop": ns, "cycles_per_hop": ns * 1e-9 * clock_hz if clock_hz else None, "warmed_in_l2": warm,
            "hops": hops}


def main(argv=None):
    global L2_BYTES
    args = probe.parser(__doc__, "latency.json", pool=False).parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    results = probe.open_results("latency.json", args, argv)
    L2_BYTES = L2_BYTES or (torch.cuda.get_device_properties(0).L2_cache_size if probe.DEVICE == "cuda" else 60 * MiB)
    clock_buf = chain_buffer(min(CHASES)[0], "spread", PAGE_BYTES, probe.DEVICE)
    clock_hz, max_clock_hz = sm_clocks_hz(clock_buf, torch.zeros(1, dtype=torch.int32, device=probe.DEVICE))
    results.data["environment"] |= {"sm_clock_hz": clock_hz, "sm_max_clock_hz": max_clock_hz,
                                    "sm_clock_source": "nvidia-smi clocks.sm, read while a chase runs"}
    for working_set_bytes, pages in CHASES:
        row = {"level": level(working_set_bytes, L2_BYTES), "pages": pages, "working_set_bytes": working_set_bytes}
        results.add(probe.attempt(row, lambda: measure(working_set_bytes, pages, clock_hz)))
        print(f"{row['level']:6s} {working_set_bytes / MiB:8.2f} MiB {pages:6s}: "
              f"{row.get('ns_per_hop', float('nan')):7.1f} ns/hop {row.get('error', '')}", flush=True)
        if probe.DEVICE == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

"""Figures that docs/perf.md, docs/hopper.md and docs/backward.md quote from results/h200/ and that no other test
recomputed: each is recomputed here from the results file it comes from (with this file's own arithmetic, not
benchmarks/perf_report.py's or benchmarks/h200_constants.py's), formatted as the doc prints it and looked up in the
doc's text, so that neither the prose nor the file can change without the other."""
import csv
import json
import math
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "h200"
KIB, MIB, GIB = 2**10, 2**20, 2**30


def doc(name):
    """A doc's text with its line breaks and runs of spaces made one space (prose and table rows wrap anywhere)."""
    return " ".join((ROOT / "docs" / name).read_text().split())


def results(name):
    return json.loads((RESULTS / name).read_text())


def rows(name):
    return results(f"{name}.json")["rows"]


def by_key(items, key):
    """{key(item): item}, refusing two items of one key (a figure must come from one row, not whichever came last)."""
    out = {}
    for item in items:
        k = key(item)
        assert k not in out, f"two rows for {k}"
        out[k] = item
    return out


def per_s(row, count="bytes"):
    """A row's rate recomputed from its count and its time (ms)."""
    return row[count] / (row["ms"] * 1e-3)


def least_squares_slope(points):
    xs, ys = zip(*points)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)


def span(xs, digits=2):
    return f"{min(xs):.{digits}f}–{max(xs):.{digits}f}"


# docs/perf.md


def test_perf_md_ceilings_table_is_the_microbenchmarks_files():
    """docs/perf.md's "Ceilings" table (lines ~71-84): the HBM copy (ceilings.json), the HBM and L2 read plateaus and
    the store rows (bandwidth.json, medians), the idle pointer chases (latency.json), the tensor-core peaks, exp2 and
    FMA rates (matmul_tiles.json), cuBLAS's fp16 matmul (ceilings.json) and the L2's dirty share at a launch's end
    (l2_dirty.json)."""
    text = doc("perf.md")
    ceilings = results("ceilings.json")
    assert (f"| HBM, device-to-device copy (read + written) | {ceilings['copy_bytes_per_s'] / 1e12:.2f} TB/s | "
            "`benchmarks/ceilings.py` |") in text

    bandwidth = rows("bandwidth")
    plateau = {level: [per_s(r) for r in bandwidth if (r["kind"], r["level"]) == ("load", level)
                       and r["bytes_in_flight_per_sm"] >= 64 * KIB] for level in ("hbm", "l2")}
    assert len(plateau["hbm"]) == len(plateau["l2"]) == 48
    assert (f"| HBM reads with ≥ 64 KiB in flight per SM | {statistics.median(plateau['hbm']) / 1e12:.1f} TB/s | "
            "`benchmarks/bandwidth.py` |") in text
    assert (f"| L2 reads, plateau | {statistics.median(plateau['l2']) / 1e12:.2f} TB/s | `benchmarks/bandwidth.py`, "
            "median of the rows with ≥ 64 KiB in flight per SM |") in text
    # The store rows the table means: tiles from 4 KiB (the smaller tiles are bound by how fast programs start).
    stores = [r for r in bandwidth if r["kind"] == "store" and r["tile_bytes"] >= 4 * KIB]
    assert len(stores) == 15 and {r["bytes"] for r in stores} == {2 * GIB}
    tiles = sorted({r["tile_bytes"] // KIB for r in stores})
    assert (f"| HBM stores of {tiles[0]}–{tiles[-1]} KiB tiles, a program each, 2 GiB in all | "
            f"{statistics.median(per_s(r) for r in stores) / 1e12:.2f} TB/s | `benchmarks/bandwidth.py`, median of the "
            "store rows |") in text

    chase = rows("latency")
    l2_ns = statistics.median(r["ns_per_hop"] for r in chase if r["level"] == "l2")
    dram_ns = [r["ns_per_hop"] for r in chase if r["level"] == "hbm"]  # 346-354 ns: the table rounds to 10 ns
    assert all(round(ns, -1) == 350 for ns in dram_ns)
    assert (f"| L2 hit / DRAM latency, idle (pointer chase) | {l2_ns:.0f} ns / "
            f"{round(statistics.median(dram_ns), -1):.0f} ns | `benchmarks/latency.py` |") in text

    matmul = rows("matmul_tiles")
    peak = {dtype: max(r["flops"] / (r["ms"] * 1e-3) for r in matmul if (r["variant"], r["dtype"]) == ("mma", dtype))
            for dtype in ("fp16", "bf16", "fp8")}
    assert (f"| fp16 / bf16 / fp8 tensor cores, a `tl.dot` loop | {peak['fp16'] / 1e12:,.0f} / "
            f"{peak['bf16'] / 1e12:,.0f} / {peak['fp8'] / 1e12:,.0f} TFLOP/s | `benchmarks/matmul_tiles.py`, "
            "fastest shape |") in text
    assert (f"| fp16 matmul, cuBLAS 8192³ | {ceilings['matmul_float16_flops_per_s'] / 1e12:.0f} TFLOP/s | "
            "`benchmarks/ceilings.py` |") in text
    exp2, = (per_s(r, "ops") for r in matmul if r["variant"] == "exp2_rate")
    fma, = (per_s(r, "flops") for r in matmul if r["variant"] == "fma_rate")
    assert (f"| exp2 (special function units) / fp32 FMA | {exp2 / 1e12:.2f} T/s / {fma / 1e12:.1f} TFLOP/s | "
            "`benchmarks/matmul_tiles.py` |") in text

    dirty = results("l2_dirty.json")
    l2 = dirty["environment"]["l2_bytes"]
    # Writing little (W <= R/16, R >= 128 MiB): if the launch's writes are spread evenly over its traffic (W + DRAM
    # reads), the still-dirty bytes are the writes of its last f x L2 of traffic: f = dirty x (W + reads) / (W x L2).
    little = [r["still_dirty_bytes"] * (r["write_bytes"] + r["dram_read_bytes"]) / (r["write_bytes"] * l2)
              for r in dirty["rows"] if 16 * r["write_bytes"] <= r["read_bytes"] and r["read_bytes"] >= 128 * MIB]
    most = [r["still_dirty_bytes"] / l2 for r in dirty["rows"] if r["write_bytes"] >= 4 * r["read_bytes"]]
    assert little and most
    assert (f"| {statistics.median(little):.2f} / {statistics.median(most):.2f} of {l2 // MIB} MiB | "
            "`benchmarks/l2_dirty.py` (`l2_dirty.json`), medians of the rows with W ≤ R/16 (R ≥ 128 MiB) / "
            "W ≥ 4R |") in text


def test_perf_md_littles_law_figures_are_bandwidth_json():
    """docs/perf.md below the ceilings table (lines ~91-93): with one program per SM and no prefetch (num_stages=1),
    4 KiB and 16 KiB HBM tiles, bandwidth.json."""
    one = by_key((r for r in rows("bandwidth") if (r["kind"], r["level"]) == ("load", "hbm")
                  and r.get("programs_per_sm") == 1 and r.get("num_stages") == 1), lambda r: r["tile_bytes"])
    text = doc("perf.md")
    assert (f"with one program per SM and no prefetch, 4 KiB tiles reach {per_s(one[4 * KIB]) / 1e12:.2f} TB/s and "
            f"16 KiB {per_s(one[16 * KIB]) / 1e12:.2f} TB/s, the bytes in flight over a loaded latency") in text


def test_perf_md_plateau_from_64_kib_in_flight_is_bandwidth_json():
    """docs/perf.md's plateau sentence under the Little's law figures: the HBM load rows from 64 KiB in flight per SM,
    those with two or more stages or four or more programs an SM (their range), and the one-stage rows of one 64 KiB
    tile and of two 32 KiB tiles an SM (it said every row from 64 KiB stayed at the plateau)."""
    loads = [r for r in rows("bandwidth") if (r["kind"], r["level"]) == ("load", "hbm")
             and r["bytes_in_flight_per_sm"] >= 64 * KIB]
    queued = [per_s(r) / 1e12 for r in loads if r["num_stages"] >= 2 or r["programs_per_sm"] >= 4]
    alone = {(r["tile_bytes"], r["programs_per_sm"]): per_s(r) / 1e12 for r in loads if r["num_stages"] == 1}
    assert (f"From 64 KiB in flight per SM the bandwidth is at its plateau, {min(queued):.2f}–{max(queued):.2f} TB/s, "
            f"wherever two or more stages or four or more programs an SM keep requests queued; with one stage, a "
            f"64 KiB tile alone reaches {alone[64 * KIB, 1]:.2f} TB/s, and two 32 KiB tiles an SM "
            f"{alone[32 * KIB, 2]:.2f} TB/s.") in doc("perf.md")


def test_perf_md_hopper_tile_miss_is_tiles_and_program_setup_json():
    """docs/perf.md's tile target paragraph (lines ~1893-1900): the Hopper group d = 64, non-causal, N = 2,048 of
    tiles.json (the table's warp-specialized 128 x 128 launch against the fastest software-pipelined 128 x 64), and
    program_setup.json's time per K/V step at 16 waves (the least-squares slope of a launch's time over its steps per
    program, over the 16 programs each SM runs in turn), warp-specialized against software-pipelined."""
    group = [r for r in rows("tiles") if (r["algo"], r["dtype"], r["head_dim"], r["causal"], r["seq"])
             == ("hopper", "fp16", 64, False, 2048) and "ms" in r]
    table, = (r for r in group if r["default"])
    assert (table["block_q"], table["block_kv"], table["warp_specialize"]) == (128, 128, True)
    swp = min((r for r in group if (r["block_q"], r["block_kv"], r["warp_specialize"]) == (128, 64, False)),
              key=lambda r: r["ms"])
    assert swp["ms"] == min(r["ms"] for r in group) and table["ms"] > 1.05 * swp["ms"]  # the group the 5% target missed
    text = doc("perf.md")
    assert (f"128 × 128 (the table's warp-specialized launch, {table['ms']:.3f} ms) over the software-pipelined "
            f"128 × 64 ({swp['ms']:.3f} ms)") in text

    setup = rows("program_setup")
    step_us = {}
    for algo, d in {(r["algo"], r["head_dim"]) for r in setup}:
        points = [(r["steps"], r["ms"]) for r in setup if (r["algo"], r["head_dim"], r["waves"]) == (algo, d, 16)]
        step_us[algo, d] = least_squares_slope(points) * 1e3 / 16
    ratio = {d: step_us["hopper", d] / step_us["hopper_swp", d] for d in (64, 128)}
    assert (f"`program_setup.json`, a microbenchmark, measured {step_us['hopper', 64]:.2f} µs, only "
            f"{100 * (1 - ratio[64]):.0f}–{100 * (1 - ratio[128]):.0f}% under the same step run software-pipelined "
            f"({step_us['hopper_swp', 64]:.2f} µs, which the model prices") in text
    assert f"(`hopper.WS_STEP_RATIO`: {ratio[64]:.3f} at d = 64, {ratio[128]:.3f} at d = 128;" in text


def test_perf_md_quotes_bench_json_times():
    """docs/perf.md: flash2's rows at d = 64, non-causal, 32K-128K on its 128 x 64 tiles (line ~1913), and naive
    attention at d = 64, N = 32K (line ~1975), fp16, bench.json."""
    bench = by_key((r for r in rows("bench") if "ms" in r),
                   lambda r: (r["provider"], r["dtype"], r["head_dim"], r["causal"], r["seq"]))
    flash2 = [bench["flash2", "fp16", 64, False, n] for n in (32768, 65536, 131072)]
    assert {(r["block_q"], r["block_kv"]) for r in flash2} == {(128, 64)}
    text = doc("perf.md")
    ms = [f"{r['ms']:.2f}" for r in flash2]
    assert f"Run 25 re-measured those rows: {ms[0]}, {ms[1]} and {ms[2]} ms, against" in text
    naive = bench["naive", "fp16", 64, False, 32768]
    assert f"Measured (the new bench): naive d = 64 at 32K, {naive['ms']:.1f} ms against" in text


def test_perf_md_decode_error_bound_is_decode_json():
    """docs/perf.md's "Timing" bullet of the decode section (line ~2395): the largest relative error of the project's
    split-KV kernel (paged, unsplit and contiguous rows) against float64, decode.json."""
    errors = [r["rel_err"] for r in rows("decode") if r["provider"].startswith("split_kv") and "rel_err" in r]
    assert len(errors) == 72
    worst = max(errors)
    exponent = math.floor(math.log10(worst))
    bound = math.ceil(worst / 10**exponent * 10) / 10  # rounded up: 3.33e-4 is within 3.4e-4, not 3.3e-4
    assert (f"kernel is within {bound:.1f}e{exponent} of float64 (relative, request 0; the worst "
            f"{worst / 10**exponent:.2f}e{exponent})") in doc("perf.md")


def test_docs_quote_nsights_replay_excess_as_ncu_bwd_csvs():
    """docs/backward.md (line ~135) and docs/perf.md's "Nsight's replay adds DRAM writes" (line ~4752): each backward
    launch of run 87 profiled with every metric (ncu_bwd_raw.csv, replayed) against the same launch with the two DRAM
    counters alone (ncu_bwd_dram_raw.csv, one pass), the fill the workload profiles first (manifest_bwd.json's setup)
    left out."""
    def launches(name):
        lines = [line for line in (RESULTS / name).read_text().splitlines() if not line.startswith("==")]
        header, units, *data = csv.reader(lines)
        assert units[header.index("dram__bytes_write.sum")] == "byte"
        return [(int(r[header.index("ID")]), r[header.index("Kernel Name")],
                 float(r[header.index("dram__bytes_write.sum")].replace(",", ""))) for r in data]

    replayed, one_pass = launches("ncu_bwd_raw.csv"), launches("ncu_bwd_dram_raw.csv")
    assert [r[:2] for r in replayed] == [r[:2] for r in one_pass]
    setup = sum(len(launch["kernels"]) for launch in results("manifest_bwd.json")["launches"] if launch.get("setup"))
    excess = [(a[2] - b[2]) / 1e6 for a, b in zip(replayed[setup:], one_pass[setup:])]
    assert setup == 1 and len(excess) == 64 and min(excess) > 0
    assert f"(replayed, a launch writes {span(excess, 1)} MB more to DRAM;" in doc("backward.md")
    assert (f"a launch writes {span(excess, 1)} MB more to DRAM than the same launch profiled with the two DRAM "
            f"counters alone, which take one pass: every one of run 87's {len(excess)} launches, median "
            f"{statistics.median(excess):.1f} MB.") in doc("perf.md")


# docs/hopper.md


def hopper_check():
    """hopper_check.json's timed rows {(provider, dtype, d, causal, N): row} and its TFLOP/s recomputed from the time:
    4 B H N² d (halved when causal) over the time."""
    def tflops(r):
        return 4 * r["batch"] * r["heads"] * r["seq"] ** 2 * r["head_dim"] / (2 if r["causal"] else 1) / r["ms"] / 1e9
    table = by_key(rows("hopper_check"), lambda r: (r["provider"], r["dtype"], r["head_dim"], r["causal"], r["seq"]))
    return table, tflops


def test_hopper_md_first_kernels_targets_are_hopper_check_json():
    """docs/hopper.md's targets paragraph under the first kernel's table (lines ~155-158), its "fp16 against cuDNN"
    bullet (line ~197) and the K-major fp8 kernel's speed (line ~211), from hopper_check.json's timed rows: the
    Hopper kernel's fp16 time against SDPA flash's and cuDNN's in fp16, its fp8 against its fp16."""
    table, tflops = hopper_check()

    def over(num, den, d, causal, n, num_dtype="fp16"):  # den's time over num's
        return table[den, "fp16", d, causal, n]["ms"] / table[num, num_dtype, d, causal, n]["ms"]

    flash = [over("hopper", "sdpa_flash", 128, False, n) for n in (4096, 8192)]
    cudnn = {n: over("hopper", "sdpa_cudnn", 128, False, n) for n in (4096, 8192)}
    fp8 = {(d, c, n): over("hopper", "hopper", d, c, n, "fp8") for d in (64, 128) for c in (False, True)
           for n in (4096, 8192)}
    wide = [fp8[128, False, n] for n in (4096, 8192)]
    causal = [fp8[128, True, n] for n in (4096, 8192)]
    narrow = [x for (d, _, _), x in fp8.items() if d == 64]
    # met and missed as the paragraph says, on the unrounded ratios
    assert min(flash) >= 1.3 and cudnn[8192] >= 0.9 > cudnn[4096] and min(wide) >= 1.3 > max(causal + narrow)
    text = doc("hopper.md")
    assert (f"The first kernel's targets (fp16, d = 128, N ≥ 4096, not causal): ≥ 1.3× SDPA flash: met "
            f"({flash[0]:.2f}, {flash[1]:.2f}). ≥ 0.9× SDPA cuDNN: met at N = 8192 ({cudnn[8192]:.2f}), missed at "
            f"N = 4096 ({cudnn[4096]:.2f}).") in text
    assert (f"FP8 ≥ 1.3× fp16: met at d = 128 not causal ({wide[0]:.2f}, {wide[1]:.2f}), missed for causal "
            f"({span(causal)}) and at d = 64 ({span(narrow)}).") in text
    assert f"- fp16 against cuDNN ({span(cudnn.values())}×): the kernel has FlashAttention-3's" in text
    kmajor = [tflops(table["hopper", "fp8", 128, False, n]) for n in (4096, 8192)]
    assert f"Storing V transposed in HBM (K-major) removed the transpose: {span(kmajor, 0)} TFLOP/s." in text


def test_hopper_md_nsight_table_rows_are_hopper_ncu_txt():
    """docs/hopper.md's "Where the time goes" table (lines ~187-189), results/h200/hopper_ncu.txt's two launches
    (fp16, then fp8): SM busy and issue slots busy, warp cycles per issued instruction with the share ncu's stall
    rule gives its largest stall, registers per thread and dynamic shared memory per block."""
    report = (RESULTS / "hopper_ncu.txt").read_text()
    launches = re.split(r"^\s+hopper_kernel \(", report, flags=re.M)[1:]
    assert len(launches) == 2

    def metric(launch, name, unit=None):
        found = re.findall(rf"^\s+{re.escape(name)}\s+(\S+\s+)?([\d.,]+)\s*$", launch, re.M)
        assert len(found) == 1, name
        (got_unit, value), = found
        assert unit is None or got_unit.strip() == unit, (name, got_unit)
        return float(value.replace(",", ""))

    def stall(launch):  # ncu's rule text, which wraps: "... represents about 31.6% of the total average of 8.7 cycles"
        text = " ".join(launch.split())
        (share, total), = re.findall(r"represents about ([\d.]+)% of the total average of ([\d.]+) cycles", text)
        assert "a scoreboard dependency on a L1TEX (local, global, surface, texture) operation" in text  # its kind
        return float(share), float(total)

    fp16, fp8 = launches
    tma = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
    assert metric(fp16, tma, "Gbyte") == 2 * metric(fp8, tma, "Gbyte")  # fp16's operands are twice fp8's bytes
    busy = [(metric(x, "SM Busy", "%"), metric(x, "Issue Slots Busy", "%")) for x in launches]
    cycles = [metric(x, "Warp Cycles Per Issued Instruction", "cycle") for x in launches]
    stalls = [stall(x) for x in launches]
    assert all(f"{c:.1f}" == f"{total:.1f}" for c, (_, total) in zip(cycles, stalls))
    regs = [metric(x, "Registers Per Thread", "register/thread") for x in launches]
    smem = [metric(x, "Dynamic Shared Memory Per Block", "Kbyte/block") for x in launches]
    text = doc("hopper.md")
    assert (f"| SM busy / issue slots busy | {busy[0][0]:.0f}% / {busy[0][1]:.0f}% | {busy[1][0]:.0f}% / "
            f"{busy[1][1]:.0f}% |") in text
    assert (f"| warp cycles per issued instruction | {cycles[0]:.1f} ({stalls[0][0]:.0f}% waiting on an L1TEX "
            f"operation) | {cycles[1]:.1f} ({stalls[1][0]:.0f}% L1TEX) |") in text
    assert (f"| registers / shared memory | {regs[0]:.0f} / {smem[0]:.1f} KB | {regs[1]:.0f} / {smem[1]:.1f} KB "
            "|") in text


def test_hopper_md_shared_memory_figures_are_the_compilers():
    """docs/hopper.md's shared memory of the rotated (overlap) launch at d = 128, fp16, 128 x 128, non-causal, 3
    stages against 2 (line ~94), hopper_variants.json (the compiler's OutOfResources message, and the compiled
    launch's shared_bytes); and of the warp-specialized 128 x 128 launch with 3 stages (line ~207), hopper_check.json's
    variants, where the other warp-specialized 3-stage variants computed NaN."""
    shape = (128, "fp16", False, 4096, "hopper")  # d, dtype, causal, N, provider
    variants = by_key((r for r in rows("hopper_variants")
                       if (r["head_dim"], r["dtype"], r["causal"], r["seq"], r.get("provider")) == shape),
                      lambda r: r["variant"])
    message = r"out of resource: shared memory, Required: (\d+), Hardware limit: (\d+)\."
    (need, limit), = re.findall(message, variants["swp-128x128-w8-s3-overlap"]["error"])
    two = variants["swp-128x128-w8-s2-overlap"]
    assert (two["num_stages"], two["overlap"], "error" in two) == (2, True, False)
    text = doc("hopper.md")
    assert (f"at d = 128 in fp16 128 × 128 tiles with 3 stages need {int(need):,} B of the {int(limit):,} B per "
            f"block; 2 stages need {two['shared_bytes']:,} B.") in text

    tried = [r for r in results("hopper_check.json")["variants"] if r["warp_specialize"] and r["num_stages"] == 3]
    refused = {re.search(message, r["error"]).group(1) for r in tried if "error" in r
               and (r["head_dim"], r["dtype"], r["block_q"], r["block_kv"]) == (128, "fp16", 128, 128)}
    assert len(refused) == 1
    assert all("error" in r or math.isnan(r["rel_diff"]) for r in tried)  # "the other ws variants ... computed wrong"
    assert (f"ws 128×128 with 3 stages needs {int(refused.pop()) / 1e3:.0f} KB at d = 128 in fp16, and the other ws "
            "variants timed then (3 stages) computed wrong results.") in text


def test_hopper_md_quotes_bench_json_against_cudnn():
    """docs/hopper.md's variants summary (line ~266): the Hopper kernel's time against SDPA cuDNN's in bench.json,
    fp16 and bf16, every N from 4K (CUDA-graph timing)."""
    bench = by_key((r for r in rows("bench") if "ms" in r and r["dtype"] in ("fp16", "bf16") and r["seq"] >= 4096),
                   lambda r: (r["provider"], r["dtype"], r["head_dim"], r["causal"], r["seq"]))
    ratios = [bench[("sdpa_cudnn", *key[1:])]["ms"] / row["ms"] for key, row in bench.items()
              if key[0] == "hopper" and ("sdpa_cudnn", *key[1:]) in bench]
    assert len(ratios) == 47 and {r["timing"] for k, r in bench.items() if k[0] in ("hopper", "sdpa_cudnn")} == \
        {"cuda_graph"}
    assert f"in `bench.json` (CUDA-graph timing, every N from 4K) {span(ratios)}× (`docs/perf.md`;" in doc("hopper.md")


def test_hopper_md_table_launch_timed_twice_within_tiles_json():
    """docs/hopper.md's "What gpusim should know" (line ~305): in each of tiles.json's 12 Hopper groups the table's
    own launch (the row marked default) was timed twice, as the default and as a variant; the larger of the two
    times over the smaller, worst group, rounded up."""
    groups = {}
    for r in rows("tiles"):
        if r["algo"] == "hopper" and "ms" in r:
            groups.setdefault((r["dtype"], r["head_dim"], r["causal"], r["seq"]), []).append(r)

    def launch(r):
        return r["block_q"], r["block_kv"], r["num_warps"], r["num_stages"], r["warp_specialize"]

    apart = []
    for group in groups.values():
        table, = (r for r in group if r["default"])
        times = [r["ms"] for r in group if launch(r) == launch(table)]
        assert len(times) == 2
        apart.append(max(times) / min(times) - 1)
    assert len(groups) == 12
    assert (f"timed twice in each of `tiles.json`'s {len(groups)} groups (within "
            f"{math.ceil(max(apart) * 1e3) / 10:.1f}%)") in doc("hopper.md")


def test_hopper_md_longest_first_grids_are_fifteen_and_a_half_waves():
    """The causal launches the order was timed on, as gpusim's occupancy has them at the launch table's tiles."""
    import gpusim
    waves = set()
    for d, programs, per_sm in ((128, 2048, "one"), (64, 4096, "two")):
        k = gpusim.simulate("hopper", batch=4, heads=2048 // d, seq=4096, head_dim=d, causal=True, gpu="H200").kernels[0]
        assert k.programs == programs and k.blocks_per_sm == {"one": 1, "two": 2}[per_sm]
        waves.add(k.programs / (132 * k.blocks_per_sm))
    assert {round(w, 1) for w in waves} == {15.5}
    assert ("these causal grids are 2,048 (d = 128, one an SM) or 4,096 (d = 64, two an SM) programs, 15.5 waves over "
            "132 SMs") in doc("hopper.md")


def test_hopper_md_setup_intercepts_per_head_dim_are_program_setups():
    import numpy as np
    lines = {}
    for algo, d in {(r["algo"], r["head_dim"]) for r in rows("program_setup")}:
        one = sorted((r["steps"], r["ms"] * 1e3) for r in rows("program_setup")
                     if (r["algo"], r["head_dim"], r["waves"]) == (algo, d, 1))
        lines[algo, d] = np.polyfit(*zip(*one), 1)[1]  # µs: the one-wave intercept
    swp, ws = ([lines[kind, d] - lines["flash2", d] for d in (64, 128)] for kind in ("hopper_swp", "hopper"))
    us = lambda x: f"{x + 0.0:.1f}".replace("-", "−") if round(x, 1) else "0.0"  # noqa: E731  (the doc's minus sign)
    assert (f"(intercept difference {us(statistics.mean(swp))} µs: {us(swp[0])} at d = 64, {us(swp[1])} at d = 128), "
            f"a warp-specialized one {us(statistics.mean(ws))} µs more ({us(ws[0])} and {us(ws[1])}), each the mean of "
            "the two head dims' one-wave intercepts") in doc("hopper.md")


def test_hopper_md_variant_run_time_is_the_files_own():
    env = results("hopper_variants.json")["environment"]
    assert (f"{env['seconds']:.0f} s by its own clock, `seconds`, {env['compile_s']:.0f} of them compiling, "
            "`compile_s`") in doc("hopper.md")


def test_hopper_md_fp8_p_scale_threshold_is_e4m3s():
    """e4m3's smallest step is 2^-9, so round-to-nearest-even sends what is at or below half of it to 0: 2^-10
    unscaled, 2^-18 once P is multiplied by 256."""
    torch = __import__("pytest").importorskip("torch")
    e4m3 = lambda x: float(torch.tensor([x]).to(torch.float8_e4m3fn).float())  # noqa: E731
    assert e4m3(2.0**-10 * 1.01) > 0 and e4m3(2.0**-10) == 0
    assert e4m3(256 * 2.0**-18 * 1.01) > 0 and e4m3(256 * 2.0**-18) == 0
    assert "(without it everything below 2⁻¹⁰, half e4m3's smallest step 2⁻⁹, becomes 0; with it, below 2⁻¹⁸)" in doc(
        "hopper.md")

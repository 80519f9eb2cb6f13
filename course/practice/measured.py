"""Notebooks 6 and 7's measurements beside gpusim: bench.json's groups and gpusim's predictions, the tiles
the kernels run, the Hopper rows, Nsight Compute's findings, and which kernel SDPA picks unforced.
"""
import gpusim

from ..evidence import backend, mask_name, rows_of
from ..formatting import span
from ..measurements import timed_by_seq
from ..nsight import MIN_TIME_S, _ncu_groups, kernel_names


def bench_group(rows, dtype="fp16", head_dim=64, causal=False):
    """The benchmark rows of one (dtype, head_dim, causal) group."""
    return [r for r in rows if (r["dtype"], r["head_dim"], r["causal"]) == (dtype, head_dim, causal)]


def predictions(rows, gpu="H200", algos=("naive", "flash1", "flash2")):
    """gpusim's predictions for the shapes of one group of benchmark rows: {algo: [Result, ...]} by seq."""
    first = rows[0]
    shapes = sorted({(r["seq"], r["batch"], r["heads"]) for r in rows})
    return {algo: [gpusim.simulate(algo, seq=s, batch=b, heads=h, head_dim=first["head_dim"], dtype=first["dtype"],
                                   causal=first["causal"], gpu=gpu) for s, b, h in shapes]
            for algo in algos}


def tile_agreement(rows, gpu="H200-measured"):
    """One sentence: in how many (d, causal, N) groups of flash2_tiles.json gpusim's fastest tile was the
    measured fastest, and in how many the fastest requested the most bytes from L2."""
    groups = {}
    for r in rows:
        batch, heads = gpusim.fa2_shape(r["seq"], r["head_dim"])
        sim = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], batch=batch, heads=heads,
                              causal=r["causal"], block_q=r["block_q"], block_kv=r["block_kv"], gpu=gpu)
        groups.setdefault((r["head_dim"], r["causal"], r["seq"]), []).append((r["ms"], sim))
    fastest = {key: min(range(len(g)), key=lambda i: g[i][0]) for key, g in groups.items()}
    same = sum(fastest[k] == min(range(len(g)), key=lambda i: g[i][1].predicted_time_s) for k, g in groups.items())
    most = sum(fastest[k] == max(range(len(g)), key=lambda i: g[i][1].hbm_bytes) for k, g in groups.items())
    return (f"gpusim's time model picked the measured fastest tile in {same} of {len(groups)} groups; the tile "
            f"requesting the most bytes from L2 was the fastest in {most} of them.")


def tile_lesson(rows):
    """Per head dimension: which tile was fastest most often (flash2_tiles.json), and its speed against
    SDPA's FlashAttention-2 with and without the mask, as a sentence each."""
    out = []
    for d in sorted({r["head_dim"] for r in rows}):
        groups = {}
        for r in rows:
            if r["head_dim"] == d:
                groups.setdefault((r["causal"], r["seq"]), []).append(r)
        winners = [min(rs, key=lambda r: r["ms"]) for rs in groups.values()]
        tiles = [(r["block_q"], r["block_kv"]) for r in winners]
        tile = max(dict.fromkeys(tiles), key=tiles.count)
        won = [r for r in winners if (r["block_q"], r["block_kv"]) == tile]
        speeds = "; ".join(f"{span([r['vs_sdpa_flash'] for r in won if r['causal'] == c])}x SDPA flash "
                           f"{'with' if c else 'without'} the mask" for c in (False, True)
                           if any(r["causal"] == c for r in won))
        out.append(f"d = {d}: {tile[0]} x {tile[1]} was the fastest tile in {len(won)} of {len(groups)} "
                   f"measurements ({speeds}).")
    return out


def hopper_rows(rows, head_dim=128, causal=False, gpu="H200-measured"):
    """The Hopper kernel as measured (bench.json) against SDPA's cuDNN and FlashAttention-2 backends, and
    in fp8 against itself in fp16, beside gpusim's hopper prediction for the same shapes. Ratios of speed
    are ratios of time (other / this); errors are relative to float64 attention on the fp16 inputs."""
    h16, h8, cudnn, flash = (timed_by_seq(rows, p, dt, head_dim, causal) for p, dt in (
        ("hopper", "fp16"), ("hopper", "fp8"), ("sdpa_cudnn", "fp16"), ("sdpa_flash", "fp16")))
    out = []
    for seq in sorted(h16.keys() & h8.keys() & cudnn.keys() & flash.keys()):
        a, b = h16[seq], h8[seq]
        shape = dict(seq=seq, batch=a["batch"], heads=a["heads"], head_dim=head_dim, causal=causal, gpu=gpu)
        p16, p8 = (gpusim.simulate("hopper", dtype=dt, **shape).predicted_time_s for dt in ("fp16", "fp8"))
        out.append({"N": seq, "hopper fp16 TFLOP/s": a["tflops"], "SDPA cuDNN TFLOP/s": cudnn[seq]["tflops"],
                    "speed vs SDPA cuDNN": cudnn[seq]["ms"] / a["ms"],
                    "speed vs SDPA flash": flash[seq]["ms"] / a["ms"],
                    "fp8 speed vs fp16": a["ms"] / b["ms"], "fp8 error / fp16 error": b["rel_err"] / a["rel_err"],
                    "hopper fp16 ms": a["ms"], "gpusim fp16 ms": p16 * 1e3, "gpusim fp8 vs fp16": p16 / p8})
    return out


def hopper_summary(rows, head_dim=128, causal=False, min_seq=4096, gpu="H200-measured", datasheet="H200"):
    """hopper_rows from min_seq on, in one paragraph, with the FlashAttention-3 claims of the blog post
    "FlashAttention: The GPU Memory Hack That Changed Everything" beside."""
    hr = [r for r in hopper_rows(rows, head_dim, causal, gpu) if r["N"] >= min_seq]

    def col(key):
        return [r[key] for r in hr]

    best = max(col("hopper fp16 TFLOP/s")) * 1e12
    fp8_vs_fa2 = [r["speed vs SDPA flash"] * r["fp8 speed vs fp16"] for r in hr]
    measured_peak, sheet_peak = (gpusim.get_gpu(g).fp16_matmul_flops_per_s for g in (gpu, datasheet))
    return (f"d = {head_dim}{', causal' if causal else ''}, N from {min_seq:,} to {max(col('N')):,}: SDPA's cuDNN "
            f"kernel ran at {span(col('SDPA cuDNN TFLOP/s'), '{:.0f}')} TFLOP/s. The project's Hopper kernel in "
            f"fp16 ran at {span(col('speed vs SDPA cuDNN'))}x cuDNN's speed and "
            f"{span(col('speed vs SDPA flash'))}x SDPA's FlashAttention-2 (the blog post: ~1.5x); in fp8 at "
            f"{span(col('fp8 speed vs fp16'))}x its fp16 speed, {span(fp8_vs_fa2)}x SDPA's FlashAttention-2 "
            f"(the blog post: ~2x), with {span(col('fp8 error / fp16 error'), '{:.0f}')}x fp16's error. Its best "
            f"fp16 rate, {best / 1e12:.0f} TFLOP/s, is {best / sheet_peak:.0%} of the datasheet's fp16 matmul peak "
            f"and {best / measured_peak:.0%} of the measured matmul ceiling (the blog post: up to 75% utilization). "
            f"gpusim predicts fp8 at {span(col('gpusim fp8 vs fp16'))}x fp16, and fp16 times at "
            f"{span([p / m for p, m in zip(col('gpusim fp16 ms'), col('hopper fp16 ms'))])}x the measured.")


def _compared(ratio, more, less, close=0.05):
    """A word for a ratio: `more` above 1 + close, `less` below 1 - close, "about as much as" between."""
    return more if ratio > 1 + close else less if ratio < 1 - close else "about as much as"


def hopper_model_sentence(rows, head_dim=128, causal=False, min_seq=4096, gpu="H200-measured"):
    """gpusim's hopper model against the measured Hopper kernel, in words computed from the ratios: its fp8 gain
    over fp16 against the measured gain, and its fp16 times against the measured times."""
    hr = [r for r in hopper_rows(rows, head_dim, causal, gpu) if r["N"] >= min_seq]
    model, measured = [r["gpusim fp8 vs fp16"] for r in hr], [r["fp8 speed vs fp16"] for r in hr]
    times = [r["gpusim fp16 ms"] / r["hopper fp16 ms"] for r in hr]
    gain = sum(m / x for m, x in zip(measured, model)) / len(hr)
    slower = sum(times) / len(times)
    return (f"d = {head_dim}{', causal' if causal else ''}: gpusim predicts fp8 at {span(model)}x fp16, the H200 "
            f"measured {span(measured)}x: the kernel gains {_compared(gain, 'more than', 'less than')} the model "
            f"says. gpusim's fp16 times are {span(times)}x the measured: "
            f"{_compared(slower, 'slower than', 'faster than').replace('much', 'fast')} the kernel.")


def utilization_sentence(rows, gpu="H100-SXM", seq=8192, head_dim=128, datasheet="H200"):
    """gpusim's hopper fp16 utilization on `gpu` against the best kernel measured on the H200 (bench.json),
    each against its own datasheet's dense fp16 peak, with the word that compares them."""
    g, sheet = gpusim.get_gpu(gpu), gpusim.get_gpu(datasheet)
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    r = gpusim.simulate("hopper", seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=g)
    model = gpusim.nominal_flops(batch, heads, seq, head_dim) / r.predicted_time_s / g.fp16_matmul_flops_per_s
    timed = [x for x in rows if x.get("tflops") and x["dtype"] in ("fp16", "bf16")]
    best = max(timed, key=lambda x: x["tflops"])
    real = best["tflops"] * 1e12 / sheet.fp16_matmul_flops_per_s
    word = _compared(model / real, "above", "below").replace("about as much as", "about at")
    return (f"gpusim's hopper fp16 on the {g.name} (N = {seq:,}, d = {head_dim}): {model:.0%} of its datasheet "
            f"peak; the best kernel measured on the H200 ({best['provider']}, {best['dtype']}, d = "
            f"{best['head_dim']}, N = {best['seq']:,}): {real:.0%} of its datasheet peak. The model is "
            f"{word} it.")


def ncu_row(rows, kernel, quantity, seq, head_dim, causal=False):
    """The one ncu.json row of a kernel, quantity and size."""
    return next(r for r in rows if (r["kernel"], r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
                (kernel, quantity, seq, head_dim, causal))


def ncu_findings(rows, targets, min_time_s=MIN_TIME_S):
    """What Nsight Compute found against gpusim (rows of ncu.json), as sentences computed from the rows;
    `targets` is ncu.json's {quantity: largest |rel_err| aimed for}: the DRAM reads' and the time's are quoted."""
    target_time, target_reads = targets["time_s"], targets["dram_read_bytes"]

    def errs(quantity, kernels=None, causal=None):
        return [r for (k, _, c), rs in _ncu_groups(rows, quantity, min_time_s).items() for r in rs
                if (kernels is None or k in kernels) and (causal is None or c == causal)]

    l2 = _ncu_groups(rows, "l2_to_sm_bytes")
    kernels = list(dict.fromkeys(k for k, _, _ in l2))
    exact = [k for k in kernels if all(r["simulated"] == r["measured"] for r in errs("l2_to_sm_bytes", {k}))]
    out = [f"Bytes from L2 into the SMs: equal to gpusim's count to the byte in every launch of "
           f"{', '.join(exact)} ({len(errs('l2_to_sm_bytes', exact))} launches)."]
    naive_kernels = kernel_names("naive")
    naive = errs("l2_to_sm_bytes", naive_kernels)
    if naive and any(r["simulated"] != r["measured"] for r in naive):  # exact ones are in the sentence above
        out.append(f"The naive kernels ({', '.join(naive_kernels)}): within "
                   f"{max(abs(r['rel_err']) for r in naive):.0%} of gpusim's count.")
    plain, masked = errs("l2_to_sm_bytes", {"flash1"}, False), errs("l2_to_sm_bytes", {"flash1"}, True)
    if plain and masked:
        more = [r["measured"] / r["simulated"] - 1 for r in masked]
        out.append(f"flash1: within {max(abs(r['rel_err']) for r in plain):.1%} without the mask; with the causal "
                   f"mask the SMs read up to {max(more):.0%} more than gpusim counts.")
    writes = errs("dram_write_bytes")
    out.append(f"DRAM writes: within {max(abs(r['rel_err']) for r in writes):.0%} of gpusim's L2 model in all "
               f"{len(writes)} launches.")
    reads = errs("dram_read_bytes")
    far = sorted((r for r in reads if abs(r["rel_err"]) > target_reads), key=lambda r: r["rel_err"])
    out.append(f"DRAM reads: within {target_reads:.0%} in {len(reads) - len(far)} of {len(reads)} launches"
               + ("; the others: " + ", ".join(f"{r['kernel']} N={r['seq']:,} d={r['head_dim']}"
                                               f"{' causal' if r['causal'] else ''} ({r['rel_err']:+.0%})"
                                               for r in far) if far else "") + ".")
    times = errs("time_s")
    below = sum(r["simulated"] < r["measured"] for r in times)
    close = [f"{k} d={d}{' causal' if c else ''}" for (k, d, c), rs in _ncu_groups(rows, "time_s", min_time_s).items()
             if abs(max(rs, key=lambda r: r["seq"])["rel_err"]) <= target_time]
    out.append(f"Time: gpusim's prediction is below the measured time in {below} of {len(times)} launches (of "
               f"{min_time_s * 1e6:.0f} us or more), by up to {-min(r['rel_err'] for r in times):.0%}; within "
               f"{target_time:.0%} at the longest N for: {', '.join(close)}.")
    return out


def pick_table(results):
    """sdpa_pick.json as a table: each input and the backend SDPA ran unforced, found from its kernels' names
    (the first kernel that names a backend, cut short); [] where it was not measured."""
    rows, _ = rows_of(results, "sdpa_pick.json", ("dtype", "head_dim", "picked"))
    out = []
    for r in rows:
        kernel = next((k for k in r.get("kernels") or [] if any(b in k.lower() for b in ("flash", "cudnn", "fmha"))),
                      "")
        out.append({"dtype": r["dtype"], "head_dim": r["head_dim"], "causal": bool(r.get("causal")),
                    "mask": mask_name(r.get("mask")), "N": r.get("seq"),
                    "SDPA ran": backend(r["picked"]) or r["picked"],
                    "kernel": kernel[:60] + ("…" if len(kernel) > 60 else "")})
    return out


def _naive_runs(results):
    """{file: {(N, d): {kernel: µs}}} of the MHA rows of naive_gqa.json (rows N_kv apart, run 42) and naive_rows.json
    (rows padded to a multiple of 16, run 63)."""
    keys = ("batch", "heads", "kv_heads", "seq", "head_dim", "us")
    return {name: {(r["seq"], r["head_dim"]): r["us"] for r in rows_of(results, name, keys)[0]
                   if r["kv_heads"] == r["heads"]} for name in ("naive_gqa.json", "naive_rows.json")}


def padded_rows(results):
    """Naive attention's three kernels at lengths not a multiple of 16 and their aligned neighbours, fp16: µs per call
    with S's and P's rows N_kv elements apart (naive_gqa.json, run 42) and padded to a multiple of 16 (naive_rows.json,
    run 63); [] where either was not measured."""
    before, after = _naive_runs(results).values()
    return [{"N": n, "d": d, "N mod 16": n % 16,
             **{f"{k}, µs: rows N_kv apart → padded": f"{before[n, d][k]:.0f} → {us[k]:.0f}"
                for k in ("qk", "softmax", "pv")}}
            for (n, d), us in after.items() if (n, d) in before]


def padded_rows_lesson(results):
    """One sentence from padded_rows' files: each kernel's time at a length not a multiple of 16 over its aligned
    neighbour's in the same run (N + 8), with rows N_kv apart and padded; "" where either file is missing."""
    runs = _naive_runs(results)
    pairs = [(n, d) for n, d in runs["naive_rows.json"] if n % 16 and (n + 8, d) in runs["naive_rows.json"]]
    if not pairs or not all(p in runs["naive_gqa.json"] for p in pairs):
        return ""

    def span_of(name, kernel):
        low, high = (f"{f(runs[name][n, d][kernel] / runs[name][n + 8, d][kernel] for n, d in pairs):.2f}"
                     for f in (min, max))
        return f"{low}×" if low == high else f"{low}–{high}×"
    return ("At a length not a multiple of 16, against the aligned one 8 longer: rows N_kv apart, " +
            ", ".join(f"{k} {span_of('naive_gqa.json', k)}" for k in ("qk", "softmax", "pv")) +
            "; rows padded, " + ", ".join(f"{k} {span_of('naive_rows.json', k)}" for k in ("qk", "softmax", "pv")) +
            ".")

"""Notebooks 6 and 7's measurements beside gpusim: bench.json's groups and gpusim's predictions, the tiles
the kernels run, the Hopper rows, Nsight Compute's findings, and which kernel SDPA picks unforced.
"""
import gpusim
from gpusim.cost import FITTED_HEAD_DIM

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


def _configuration(row):
    return tuple(row[k] for k in ("provider", "dtype", "head_dim", "causal", "seq", "batch", "heads"))


def _same_configuration(rows, other):
    """{_configuration: (row, other's row)} for the timed rows both files hold."""
    theirs = {_configuration(r): r for r in other if r.get("ms") is not None}
    return {_configuration(r): (r, theirs[_configuration(r)]) for r in rows
            if r.get("ms") is not None and _configuration(r) in theirs}


def gpu_pair_sentence(h200_rows, h100_rows, gpu="H100-measured"):
    """Two GPUs' bench.json rows of the same configurations in words: the H100's time over the H200's for each of the
    project's kernels, and how many of the H100's rows gpusim prices within 20% on `gpu` (blind: no constant was
    fitted to them)."""
    pairs = _same_configuration(h100_rows, h200_rows)
    parts = [f"{algo} {span([a['ms'] / b['ms'] for k, (a, b) in pairs.items() if k[0] == algo])}x"
             for algo in ("flash2", "hopper", "naive") if any(k[0] == algo for k in pairs)]
    ours = [r for r in h100_rows if r.get("ms") is not None and r["provider"] in ("naive", "flash2", "hopper")]
    within = sum(abs(gpusim.simulate(r["provider"], seq=r["seq"], batch=r["batch"], heads=r["heads"],
                                     head_dim=r["head_dim"], causal=r["causal"], dtype=r["dtype"], gpu=gpu,
                                     block_q=r["block_q"], block_kv=r["block_kv"]).predicted_time_s
                     / (r["ms"] * 1e-3) - 1) <= 0.2 for r in ours)
    return (f"The H100's time over the H200's for the same configuration: {', '.join(parts)}. gpusim on {gpu} "
            f"prices {within} of the H100's {len(ours)} rows of the project's kernels within 20%.")


def tile_launches(rows, gpu="H200-measured"):
    """tiles.json's timed flash2 launches by (d, causal, N) group: those at the warps and stages flash2's rule gives
    their tile (the launch gpusim prices; the file's other warp count is left out), each as (row, gpusim's Result,
    its speed against SDPA's FlashAttention-2 in the same group: SDPA's time over its own)."""
    timed = [r for r in rows if r.get("ms") is not None]
    sdpa = {(r["head_dim"], r["causal"], r["seq"]): r["ms"] for r in timed if r["algo"] == "sdpa_flash"}
    groups = {}
    for r in timed:
        if r["algo"] != "flash2":
            continue
        sim = gpusim.simulate("flash2", seq=r["seq"], head_dim=r["head_dim"], batch=r["batch"], heads=r["heads"],
                              causal=r["causal"], dtype=r["dtype"], block_q=r["block_q"], block_kv=r["block_kv"],
                              gpu=gpu)
        if sim.config.pass_.launch(sim.config, "flash2") == (r["num_warps"], r["num_stages"]):
            key = (r["head_dim"], r["causal"], r["seq"])
            groups.setdefault(key, []).append((r, sim, sdpa[key] / r["ms"]))
    return groups


def _tile(row):
    return (row["block_q"], row["block_kv"])


def _fastest(launches):
    return min(launches, key=lambda launch: launch[0]["ms"])


def gpusim_pick(launches, gpu="H200-measured"):
    """The tile gpusim picks for a group's shape (best_blocks: the tile flash2 launches by default)."""
    r = launches[0][0]
    return gpusim.best_blocks("flash2", seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], batch=r["batch"],
                              causal=r["causal"], dtype=r["dtype"], gpu=gpu)


def fewest_phrase(groups):
    """In how many of tile_launches' groups the tile requesting the fewest bytes was the measured fastest, and how many
    times the fewest the fastest tile requested."""
    more = [_fastest(g)[1].hbm_bytes / min(s.hbm_bytes for _, s, _ in g) for g in groups.values()]
    return (f"the fastest in {sum(m == 1 for m in more)} of {len(groups)} groups; the fastest requested "
            f"{span(more, '{:.1f}')}x the fewest bytes")


def baseline_tile_sentence(tiles, gpu="H100-SXM", seq=8192, head_dim=128, measured="H200-measured"):
    """The tiles fa3_rows runs at its shape (the FlashAttention-2 benchmark's, not causal): flash2's, the one gpusim's
    time model picks on `gpu` (a datasheet preset), and the Hopper kernel's, its launch table's per dtype (the
    table's tile column); then flash2 as tiles.json measured it on the H200 at that shape (each tile at the warps
    its launch rule gives: tile_launches), at that pick and at the fastest tile, and the tile gpusim picks on the
    `measured` preset."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    shape = dict(seq=seq, head_dim=head_dim, batch=batch, heads=heads)
    flash2 = gpusim.simulate("flash2", gpu=gpu, **shape)
    pick = (flash2.config.block_q, flash2.config.block_kv)
    launches = tile_launches(tiles, gpu=measured)[head_dim, False, seq]
    ms = {_tile(row): row["ms"] for row, _, _ in launches}
    best, on_measured = _tile(_fastest(launches)[0]), gpusim_pick(launches, measured)
    registers = flash2.kernels[0].registers_per_thread
    return (f"The flash2 row runs {pick[0]} x {pick[1]}: the tile gpusim's time model picks on the {gpu} preset "
            f"(datasheet rates; {registers} registers per thread); the hopper rows run the tile of the Hopper kernel's "
            f"launch table for their dtype (gpusim/passes/hopper.py). On the H200 at this shape (tiles.json) "
            f"flash2 ran {pick[0]} x {pick[1]} in {ms[pick]:.2f} ms and its fastest tile, {best[0]} x {best[1]}, in "
            f"{ms[best]:.2f} ms; on the measured rates ({measured}) gpusim picks {on_measured[0]} x {on_measured[1]}.")


def tile_agreement(groups, gpu="H200-measured"):
    """One sentence on tile_launches' groups: in how many the tile gpusim picks was the measured fastest and within
    5% of it (at the head dim the time model's two fitted constants were fitted on, and at the others), in how many
    the tile requesting the fewest bytes from L2 was the fastest, how many times the fewest the fastest tile
    requested, and how far apart gpusim's L2 model puts the tiles' DRAM reads."""
    picked = {key: next((row["ms"] for row, _, _ in g if _tile(row) == gpusim_pick(g, gpu)), None)
              for key, g in groups.items()}
    best = {key: _fastest(g)[0]["ms"] for key, g in groups.items()}
    dram = max(max(s.dram_read_bytes for _, s, _ in g) / min(s.dram_read_bytes for _, s, _ in g) - 1
               for g in groups.values())
    return (f"The tile gpusim picks (flash2's default) was the measured fastest {_picks(picked, best)}. The tile "
            f"requesting the fewest bytes from L2 was {fewest_phrase(groups)} of its group, while gpusim's L2 model "
            f"puts every tile's DRAM reads within {dram:.1%} of each other in each group.")


def _picks(picked, best):
    """How often the pick was the fastest and within 5% of it, over every group; then how often the fastest at the
    head dim the time model's ISSUE_HIDING and CONTENTION were fitted on, and at the others, which they were not."""
    fitted = [k for k in picked if k[0] == FITTED_HEAD_DIM]
    held = [k for k in picked if k[0] != FITTED_HEAD_DIM]
    close = sum(picked[k] is not None and picked[k] <= 1.05 * best[k] for k in picked)
    line = f"in {_fastest_in(picked, best, picked)} groups and within 5% of it in {close}"
    if not (fitted and held):
        return line
    return (f"{line} ({_fastest_in(picked, best, fitted)} at d = {FITTED_HEAD_DIM}, the rows the time model's two "
            f"fitted constants were fitted on, and {_fastest_in(picked, best, held)} at the other head dims, which "
            f"they were not)")


def _fastest_in(picked, best, keys):
    return f"{sum(picked[k] == best[k] for k in keys)} of {len(keys)}"


def tile_lesson(groups):
    """Per head dimension, over every group of tile_launches: which tile was fastest in how many groups, and the
    fastest launch's speed against SDPA's FlashAttention-2 with and without the mask, as a sentence each."""
    out = []
    for d in sorted({d for d, _, _ in groups}):
        mine = {key: _fastest(g) for key, g in groups.items() if key[0] == d}
        tiles = [_tile(row) for row, _, _ in mine.values()]
        won = ", ".join(f"{t[0]} x {t[1]} in {tiles.count(t)}"
                        for t in sorted(set(tiles), key=lambda t: (-tiles.count(t), t)))
        speeds = "; ".join(f"{span([x for (_, c, _), (_, _, x) in mine.items() if c == causal])}x SDPA flash "
                           f"{'with' if causal else 'without'} the mask" for causal in (False, True)
                           if any(c == causal for _, c, _ in mine))
        out.append(f"d = {d}: the fastest tile was {won} of {len(mine)} groups; the fastest launch ran at {speeds}.")
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
    "FlashAttention: The GPU Memory Hack That Changed Everything" beside. Its measured ceiling is `gpu`'s fp16 matmul
    rate (H200-measured's: the fastest tl.dot loop), which the sentence names: notebook 1's ceilings table shows a
    slower one, torch's 8192³ matmul."""
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
            f"and {best / measured_peak:.0%} of the fastest tl.dot loop measured ({measured_peak / 1e12:.0f} TFLOP/s: "
            f"the {gpu} preset's matmul rate, used for its ridge points in notebook 1, not the slower 8192³ matmul of "
            f"notebook 1's ceilings table); the blog post: up to 75% utilization. "
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


def hopper_lines(rows, head_dim=128, min_seq=4096):
    """hopper_summary and hopper_model_sentence without and with the causal mask, a blank line after each pair."""
    out = []
    for causal in (False, True):
        out += [hopper_summary(rows, head_dim=head_dim, causal=causal, min_seq=min_seq),
                hopper_model_sentence(rows, head_dim=head_dim, causal=causal, min_seq=min_seq), ""]
    return out


def utilization_sentence(rows, seq=8192, head_dim=128, dtype="fp16", gpu="H200-measured", datasheet="H200"):
    """The project's Hopper kernel as measured on the H200 (bench.json, not causal) against gpusim's hopper for the
    same shape and dtype on `gpu`, both as a share of the H200's datasheet peak for the dtype, with the word that
    compares them; the fastest kernel measured at that shape beside them."""
    here = [x for x in rows if (x["dtype"], x["head_dim"], x["causal"], x["seq"]) == (dtype, head_dim, False, seq)
            and x.get("tflops")]
    kernel = next(x for x in here if x["provider"] == "hopper")
    best = max(here, key=lambda x: x["tflops"])
    peak = gpusim.get_gpu(datasheet).matmul_flops_per_s(dtype)
    r = gpusim.simulate("hopper", seq=seq, head_dim=head_dim, batch=kernel["batch"], heads=kernel["heads"], gpu=gpu,
                        dtype=dtype)
    model = gpusim.nominal_flops(kernel["batch"], kernel["heads"], seq, head_dim) / r.predicted_time_s / peak
    real = kernel["tflops"] * 1e12 / peak
    word = _compared(model / real, "above", "below").replace("about as much as", "about at")
    return (f"The project's Hopper kernel on the H200 ({dtype}, batch {kernel['batch']} x {kernel['heads']} heads, "
            f"N = {seq:,}, d = {head_dim}, not causal): measured {real:.0%} of the H200's datasheet {dtype} peak; "
            f"gpusim's hopper for the same launch on the {r.config.gpu.name} preset: {model:.0%}. The model is {word} "
            f"it. The fastest kernel measured at that shape, {best['provider']}: {best['tflops'] * 1e12 / peak:.0%}.")


def ncu_row(rows, kernel, quantity, seq, head_dim, causal=False):
    """The one ncu.json row of a kernel, quantity and size."""
    return next(r for r in rows if (r["kernel"], r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
                (kernel, quantity, seq, head_dim, causal))


def l2_to_sm_sentence(rows, gpu, seq=4096, head_dim=64):
    """flash2's bytes from L2 into the SMs, gpusim's (FlashAttention-2's benchmark shape on `gpu`, its default
    tile) beside Nsight Compute's row of ncu.json."""
    row = ncu_row(rows, "flash2", "l2_to_sm_bytes", seq=seq, head_dim=head_dim)
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    r = gpusim.simulate("flash2", seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=gpu)
    return (f"gpusim (blocks {r.config.block_q} x {r.config.block_kv}): {r.hbm_read_bytes:,} B from L2 into the "
            f"SMs; Nsight Compute: {row['measured']:,.0f} B; equal: {r.hbm_read_bytes == row['measured']}")


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
        off = [f"{max(abs(r['measured'] / r['simulated'] - 1) for r in rs) * 100:.2g}%" for rs in (plain, masked)]
        out.append(f"flash1: the SMs read within {off[0]} of gpusim's count without the mask and within {off[1]} "
                   f"with the causal mask.")
    writes = errs("dram_write_bytes")
    out.append(f"DRAM writes: within {max(abs(r['rel_err']) for r in writes):.0%} of gpusim's L2 model in all "
               f"{len(writes)} launches.")
    reads = errs("dram_read_bytes")
    far = sorted((r for r in reads if abs(r["rel_err"]) > target_reads), key=lambda r: r["rel_err"])
    out.append(f"DRAM reads: within {target_reads:.0%} in {len(reads) - len(far)} of {len(reads)} launches"
               + ("; the others, as (gpusim - measured) / measured, below 0 where gpusim counts fewer bytes than "
                  "reached DRAM: " + ", ".join(f"{r['kernel']} N={r['seq']:,} d={r['head_dim']}"
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
            ". " + _aligned_drift(runs))


def _aligned_drift(runs):
    """The sentence on the aligned lengths, which padding leaves as they were, from one run to the other."""
    before, after = runs["naive_gqa.json"], runs["naive_rows.json"]
    moved = max(((after[key][k] / before[key][k], k, *key) for key in after if key in before and not key[0] % 16
                 for k in ("qk", "softmax", "pv")), key=lambda m: abs(m[0] - 1))
    if abs(moved[0] - 1) < 0.01:
        return "The aligned lengths, which the padding leaves as they were, took the same time in both runs."
    ratio, kernel, n, d = moved
    return (f"The aligned lengths, which the padding leaves as they were, moved too: {kernel} at N = {n:,}, d = {d} "
            f"took {ratio:.2f}× as long in the second run as in the first. Between the runs, qk's and pv's loads were "
            f"also marked to skip L1, so each length is set against its aligned neighbour in its own run.")

"""The project's GPU measurements (results/<gpu>/*.json: bench.json, flash2_tiles.json, ceilings.json), read
and set beside gpusim's predictions for the same shapes. Every measured number the course quotes is computed
here (or in gpusim_course.nsight, for ncu.json) from a results file that names the GPU, the versions, the
date and the command of its run; nothing is typed in by hand.
"""
import json
from pathlib import Path

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from .formatting import span

GiB = 2**30


def read_results(path):
    """A results JSON file the course needs; says where it should be when it is missing."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is not there: run the notebook from notebooks/ in a checkout of the "
                                f"repository, whose results/ holds the project's measurements")
    return json.loads(path.read_text())


def read_optional(path):
    """A results JSON file, or None when it has not been written yet (the course then shows gpusim alone)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def environment_line(data):
    """Where a results file's numbers come from (GPU, versions, date, command), in one line."""
    env = data.get("environment", data)
    keys = ("driver", "cuda", "torch", "triton", "ncu", "date")
    line = f"Measured on {env.get('gpu', '?')}: " + ", ".join(f"{k} {env[k]}" for k in keys if env.get(k))
    line += f"; command: {env.get('command', '?')}"
    return line + (f"; note: {env['truncated']}" if env.get("truncated") else "")


def ceilings_rows(data, gpu="H200"):
    """Measured ceilings (the JSON of results/<gpu>/ceilings.json) beside the preset's datasheet numbers."""
    g = gpusim.get_gpu(gpu)
    pairs = [("HBM bandwidth (copy)", data["copy_bytes_per_s"], g.hbm_bytes_per_s, "TB/s", 1e12),
             ("fp16 matmul", data["matmul_float16_flops_per_s"], g.fp16_matmul_flops_per_s, "TFLOP/s", 1e12),
             ("fp8 matmul", data["matmul_fp8_e4m3_flops_per_s"], g.fp8_matmul_flops_per_s, "TFLOP/s", 1e12)]
    return [{"quantity": name, "measured": f"{m / scale:,.2f} {unit}", "datasheet (preset)": f"{d / scale:,.2f} {unit}",
             "measured / datasheet": f"{m / d:.0%}"} for name, m, d, unit, scale in pairs] + [
        {"quantity": "measured on", "measured": f"{data['gpu']}, {data['date']}", "datasheet (preset)": g.name,
         "measured / datasheet": ""}]


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


def timed_by_seq(rows, provider, dtype="fp16", head_dim=64, causal=False):
    """{seq: row} of one provider's benchmark rows (bench.json) that ran: a time, not an error."""
    return {r["seq"]: r for r in rows if (r["provider"], r["dtype"], r["head_dim"], r["causal"]) ==
            (provider, dtype, head_dim, causal) and r.get("ms") is not None}


def _outcome(rows, provider, seq, **group):
    """A provider's benchmark row at one length: the row, its error ('out of memory' for OOM) or None if not run."""
    row = next((r for r in rows if r["provider"] == provider and r["seq"] == seq and
                all(r[k] == v for k, v in group.items())), None)
    if row is None or "error" not in row:
        return row
    return "out of memory" if row["error"] == "OOM" else row["error"]


def footprint_rows(rows, gpu="H200", head_dims=(64, 128), causal=False, dtype="fp16",
                   providers=("naive", "torch_naive", "sdpa_math"), last=2):
    """Measured peak memory (bench.json) of the attentions that write S and P, at the `last` longest lengths
    they were run at, beside gpusim's peak footprint for naive attention and the GPU's capacity."""
    g = gpusim.get_gpu(gpu)
    out = []
    for d in head_dims:
        group = [r for r in rows if r["provider"] in providers and (r["head_dim"], r["causal"], r["dtype"]) ==
                 (d, causal, dtype)]
        for seq in sorted({r["seq"] for r in group})[-last:]:
            shape = next(r for r in group if r["seq"] == seq)
            sim = gpusim.simulate("naive", seq=seq, batch=shape["batch"], heads=shape["heads"], head_dim=d,
                                  causal=causal, dtype=dtype, gpu=g).hbm_peak_bytes
            for p in providers:
                got = _outcome(group, p, seq)
                peak = got["peak_bytes"] if isinstance(got, dict) else None
                out.append({"d": d, "N": seq, "batch x heads": f"{shape['batch']} x {shape['heads']}", "provider": p,
                            "measured peak": f"{peak / GiB:.1f} GiB" if peak else str(got or "not run"),
                            "gpusim (naive)": f"{sim / GiB:.1f} GiB = {sim / g.hbm_bytes:.0%} of {g.name}",
                            "measured / gpusim": f"{peak / sim:.3f}" if peak else ""})
    return out


def speedup_rows(rows, gpu="H200-measured", head_dim=64, causal=False, dtype="fp16"):
    """Per length (bench.json): the measured speedup of the project's flash2 kernel over its naive kernels
    beside gpusim's predicted one, and of SDPA's FlashAttention-2 over PyTorch's standard attention."""
    naive, flash2 = (timed_by_seq(rows, p, dtype, head_dim, causal) for p in ("naive", "flash2"))
    group = dict(dtype=dtype, head_dim=head_dim, causal=causal)
    out = []
    for seq in sorted(naive.keys() & flash2.keys()):
        r = flash2[seq]
        shape = dict(seq=seq, batch=r["batch"], heads=r["heads"], head_dim=head_dim, causal=causal, dtype=dtype,
                     gpu=gpu)
        t_naive, t_flash2 = (gpusim.simulate(algo, **shape).predicted_time_s for algo in ("naive", "flash2"))
        predicted = t_naive / t_flash2
        torch_naive, sdpa = (_outcome(rows, p, seq, **group) for p in ("torch_naive", "sdpa_flash"))
        out.append({"N": seq, "batch x heads": f"{r['batch']} x {r['heads']}",
                    "measured: flash2 over naive": f"{naive[seq]['ms'] / r['ms']:.1f}x",
                    "gpusim: flash2 over naive": f"{predicted:.1f}x",
                    "measured: SDPA flash over PyTorch's standard attention":
                        f"{torch_naive['ms'] / sdpa['ms']:.1f}x" if isinstance(torch_naive, dict) and isinstance(
                            sdpa, dict) else f"PyTorch's: {torch_naive or 'not run'}"})
    return out


def tile_rows(rows, gpu="H200-measured"):
    """flash2 with several tile shapes against SDPA's FlashAttention-2 (rows of flash2_tiles.json), beside
    gpusim's L2-to-SM bytes and predicted time for each; ticks mark the measured and the predicted fastest."""
    groups = {}
    for r in rows:
        groups.setdefault((r["head_dim"], r["causal"], r["seq"]), []).append(r)
    out = []
    for (d, causal, seq), rs in groups.items():
        batch, heads = gpusim.fa2_shape(seq, d)
        sims = [gpusim.simulate("flash2", seq=seq, head_dim=d, batch=batch, heads=heads, causal=causal,
                                block_q=r["block_q"], block_kv=r["block_kv"], gpu=gpu) for r in rs]
        fastest = min(range(len(rs)), key=lambda i: rs[i]["ms"])
        predicted = min(range(len(rs)), key=lambda i: sims[i].predicted_time_s)
        for i, (r, s) in enumerate(zip(rs, sims)):
            out.append({"d": d, "causal": causal, "N": seq, "tile": f"{r['block_q']} x {r['block_kv']}",
                        "measured": fmt_time(r["ms"] * 1e-3), "vs SDPA flash": f"{r['vs_sdpa_flash']:.2f}x",
                        "fastest measured": "✓" if i == fastest else "",
                        "gpusim L2→SM": fmt_bytes(s.hbm_bytes), "gpusim predicted": fmt_time(s.predicted_time_s),
                        "gpusim's fastest": "✓" if i == predicted else ""})
    return out


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


def provenance_rows(folder):
    """One row per file of a results folder (subfolders too): for a JSON file the GPU, date and command its
    environment records and how many rows it holds; for any other file the JSON of the same run it belongs
    to (bench_speedup.png and bench.json; ncu_raw.csv and ncu.json), or the folder's README.md."""
    folder = Path(folder)
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            env = data.get("environment", data) if isinstance(data, dict) else {}
            rows = data.get("rows") if isinstance(data, dict) else data
            out.append({"file": name, "GPU": env.get("gpu", ""), "date": env.get("date", ""),
                        "command": env.get("command", ""), "rows": len(rows) if isinstance(rows, list) else ""})
        else:
            sibling = next((j for j in sorted(path.parent.glob("*.json")) if path.stem.startswith(j.stem)), None)
            where = (f"from the run of {sibling.relative_to(folder)}" if sibling else "the folder's index"
                     if path.name == "README.md" else "described in README.md")
            out.append({"file": name, "GPU": "", "date": "", "command": where, "rows": ""})
    return out


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

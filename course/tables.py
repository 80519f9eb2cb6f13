"""The numbers the course's notebooks show: small functions over gpusim, and over the project's own GPU
measurements (results/<gpu>/*.json), that return table rows (a list of dicts with the same keys, shown by
html_table) or a sentence. No widgets here: the interactive classes are in gpusim_course.widgets.

Every measured number the course quotes is computed here from a results file that names the GPU, the
versions, the date and the command of its run; nothing is typed in by hand.
"""
import json
from html import escape
from pathlib import Path

import numpy as np
from IPython.display import HTML

import gpusim
from gpusim.units import fmt_bytes, fmt_time


def html_table(rows):
    """An HTML table (IPython display object) of a list of dicts with the same keys."""
    head = "".join(f"<th>{escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(_cell(v))}</td>" for v in r.values()) + "</tr>" for r in rows)
    return HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _cell(value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    return f"{value:,.3g}" if abs(value) < 1e4 else f"{value:,.0f}"


def supported_dtypes(gpu):
    """The dtypes the GPU has tensor cores for (gpusim raises for the others)."""
    gpu = gpusim.get_gpu(gpu)
    out = []
    for dtype in gpusim.DTYPE_BYTES:
        try:
            gpu.matmul_flops_per_s(dtype)
            out.append(dtype)
        except ValueError:
            pass
    return out


# ---------------------------------------------------------------------------------------------------
# Numbers from gpusim


def hierarchy_rows():
    """One row per preset: the kitchen counter (SRAM, all SMs together) against the fridge (HBM)."""
    rows = []
    for g in gpusim.PRESETS.values():
        rows.append({
            "GPU": g.name, "SMs": g.sm_count, "SRAM per SM": fmt_bytes(g.sram_bytes_per_sm),
            "SRAM, all SMs": fmt_bytes(g.sm_count * g.sram_bytes_per_sm),
            "SRAM bandwidth": f"{g.sram_bytes_per_s / 1e12:.0f} TB/s" if g.sram_bytes_per_s else "not published",
            "HBM": fmt_bytes(g.hbm_bytes), "HBM bandwidth": f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s",
            "HBM / SRAM capacity": f"{g.hbm_bytes / (g.sm_count * g.sram_bytes_per_sm):,.0f}x",
            "SRAM / HBM bandwidth": (f"{g.sram_bytes_per_s / g.hbm_bytes_per_s:.0f}x" if g.sram_bytes_per_s
                                     else "not published"),
        })
    return rows


def kitchen_numbers(gpu):
    """The kitchen analogy in one GPU's numbers: one thread block's counter, all counters, the fridge."""
    g = gpusim.get_gpu(gpu)
    return (f"{g.name}: one thread block's counter (SRAM) holds {fmt_bytes(g.sram_bytes_per_block)}; all "
            f"{g.sm_count} SMs' counters together {fmt_bytes(g.sm_count * g.sram_bytes_per_sm)}; the fridge (HBM) "
            f"{fmt_bytes(g.hbm_bytes)}, {g.hbm_bytes / g.sram_bytes_per_block:,.0f} times one counter, reached at "
            f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s shared by all SMs.")


def ridge_rows(dtypes=("fp16", "fp8", "fp32")):
    """The ridge point (FLOPs per byte of HBM traffic) of every preset and dtype it supports."""
    return [{"GPU": g.name} | {f"ridge point {d} (FLOP/B)": (round(g.matmul_flops_per_s(d) / g.hbm_bytes_per_s)
                                                             if d in supported_dtypes(g) else "no tensor cores")
                               for d in dtypes} for g in gpusim.PRESETS.values()]


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


def time_terms(result):
    """Per kernel, the roofline terms of gpusim's time model (gpusim/cost.py): memory time, matmul time on
    the tensor cores, non-matmul time on the CUDA cores, and the predicted time (waves and launch overhead
    included)."""
    c = result.config
    return [{"label": f"{c.algo}: {k.name}" if c.algo == "naive" else k.name, "t_memory": k.memory_time_s,
             "t_matmul": k.matmul_time_s, "t_other": k.other_time_s, "t_compute": k.compute_time_s,
             "busy": k.busy_fraction,
             "predicted": k.predicted_time_s, "bound": k.bound} for k in result.kernels]


def time_rows(result):
    """time_terms formatted for a table."""
    return [{"kernel": r["label"], "memory": fmt_time(r["t_memory"]), "matmul": fmt_time(r["t_matmul"]),
             "non-matmul": fmt_time(r["t_other"]), "SMs busy": f"{r['busy']:.0%}",
             "predicted": fmt_time(r["predicted"]), "bound by": r["bound"]} for r in time_terms(result)]


def memory_bound_share(result):
    """Share of the predicted time spent in kernels whose memory time exceeds their compute time."""
    terms = time_terms(result)
    return sum(t["predicted"] for t in terms if t["bound"] == "memory") / sum(t["predicted"] for t in terms)


def tensor_rows(results):
    """HBM bytes read and written per tensor, one column pair per result."""
    tensors = dict.fromkeys(t for r in results for t in r.by_tensor)
    rows = []
    for t in tensors:
        row = {"tensor": t}
        for r in results:
            v = r.by_tensor.get(t, {"read_bytes": 0, "write_bytes": 0})
            row |= {f"{r.config.algo} read": fmt_bytes(v["read_bytes"]),
                    f"{r.config.algo} written": fmt_bytes(v["write_bytes"])}
        rows.append(row)
    return rows + [{"tensor": "total"} | {f"{r.config.algo} {k}": fmt_bytes(n) for r in results
                                         for k, n in (("read", r.hbm_read_bytes), ("written", r.hbm_write_bytes))}]


def causal_rows(**shape):
    """FlashAttention-2 with and without the causal mask: tiles computed, HBM traffic, predicted time."""
    rows = []
    for causal in (False, True):
        r = gpusim.simulate("flash2", causal=causal, **shape)
        t = r.config.tiling
        rows.append({"causal": causal, "tiles computed": f"{t.tiles:,} of {t.n_q_blocks * t.n_kv_blocks:,}",
                     "S elements kept": t.kept_elements, "HBM traffic": fmt_bytes(r.hbm_bytes),
                     "predicted": fmt_time(r.predicted_time_s)})
    return rows


def measured_rows(measured, gpu, **shape):
    """Measured DRAM traffic and time ({algo: (bytes, seconds, what was measured)}) beside gpusim's DRAM
    bytes and predicted time for the same shape."""
    rows = []
    for algo, (nbytes, seconds, what) in measured.items():
        r = gpusim.simulate(algo, gpu=gpu, **shape)
        rows.append({"algo": algo, "measured": what, "measured HBM traffic": fmt_bytes(nbytes),
                     "gpusim DRAM traffic": fmt_bytes(r.dram_read_bytes + r.dram_write_bytes),
                     "measured time": fmt_time(seconds), "gpusim predicted": fmt_time(r.predicted_time_s)})
    return rows


def softmax_accesses(n=4096, seed=0):
    """Loads and stores per element of the three softmax variants, counted by gpusim.softmax."""
    x = np.random.default_rng(seed).standard_normal(n)
    rows = []
    for variant in ("naive", "safe", "online"):
        r = gpusim.softmax(x, variant, chunk=256)
        rows.append({"variant": variant, "loads": r.loads, "stores": r.stores,
                     "accesses per element": r.accesses_per_element})
    return rows


def ulp_distance(a, b):
    """How many representable floats lie between a and b, elementwise (0 means the same bits)."""
    a, b = np.asarray(a), np.asarray(b)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = (x.view(bits).astype(np.int64) for x in (a, b))
    sign = np.int64(1) << (8 * a.dtype.itemsize - 1)
    oa, ob = (np.where(i < 0, -(i & (sign - 1)), i) for i in (ia, ib))  # ordered: adjacent floats differ by 1
    return np.abs(oa - ob)


def bit_comparison(dtype, rows=1000, n=1024, chunk=128, seed=0):
    """Safe softmax against online softmax (gpusim.softmax, arithmetic in `dtype`) on random rows."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * 3).astype(dtype)
    safe = np.stack([gpusim.softmax(row, "safe", chunk).y for row in x])
    online = np.stack([gpusim.softmax(row, "online", chunk).y for row in x])
    return _bits(f"softmax, {np.dtype(dtype).name}", safe, online)


def attention_bits(seq=256, head_dim=64, seed=0):
    """FlashAttention-2's output against standard attention's, both run by gpusim in float32."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 1, seq, head_dim)).astype(np.float32) for _ in range(3))
    naive = gpusim.simulate("naive", q=q, k=k, v=v).output
    flash = gpusim.simulate("flash2", q=q, k=k, v=v, block_q=64, block_kv=64).output
    return _bits("attention output, float32", naive, flash)


def _bits(label, a, b):
    ulps = ulp_distance(a, b)
    return {"label": label, "elements": ulps.size, "equal_fraction": float((ulps == 0).mean()),
            "max_ulp": int(ulps.max()), "ulps": ulps,
            "max_difference": float(np.abs(a.astype(np.float64) - b).max() / np.abs(a).max())}


def bits_rows(comparisons):
    return [{"comparison": c["label"], "elements": c["elements"], "bit-identical": f"{c['equal_fraction']:.2%}",
             "max ULP distance": c["max_ulp"], "max |difference| / max |value|": f"{c['max_difference']:.1e}"}
            for c in comparisons]


def bits_verdict(comparisons):
    """One sentence on whether the comparisons were bit-for-bit identical, from the measurement."""
    identical = [c["label"] for c in comparisons if c["equal_fraction"] == 1]
    differ = [f"{c['label']}: {1 - c['equal_fraction']:.1%} of elements differ, by at most {c['max_ulp']} ULP"
              for c in comparisons if c["equal_fraction"] < 1]
    if not differ:
        return "Measured: bit-for-bit identical in every comparison (" + ", ".join(identical) + ")."
    return ("Measured: not bit-for-bit identical. " + "; ".join(differ) + ". The algebra is exact; floating-point "
            "addition is not associative, and the two orders of operations round differently.")


def largest_fitting_seq(algo, gpu, **shape):
    """The longest sequence whose peak HBM footprint fits the GPU (bisection over gpusim.simulate)."""
    lo, hi = 1, 1 << 24
    if gpusim.simulate(algo, seq=hi, gpu=gpu, **shape).fits_in_hbm:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if gpusim.simulate(algo, seq=mid, gpu=gpu, **shape).fits_in_hbm else (lo, mid)
    return lo


def nonmatmul_rows(gpu="A100-40GB", seq=4096, head_dims=(64, 128), block=64):
    """The non-matmul share of FLOPs and of compute time, flash1 against flash2 on the same block x block
    tiles (FA2 benchmark shape)."""
    rows = []
    for d in head_dims:
        batch, heads = gpusim.fa2_shape(seq, d)
        for algo in ("flash1", "flash2"):
            r = gpusim.simulate(algo, seq=seq, head_dim=d, batch=batch, heads=heads, gpu=gpu, block_q=block,
                                block_kv=block)
            t = time_terms(r)[0]
            rows.append({"head_dim": d, "algo": algo,
                         "non-matmul FLOPs": f"{r.flops_other / (r.flops_matmul + r.flops_other):.1%}",
                         "non-matmul compute time": f"{t['t_other'] / (t['t_matmul'] + t['t_other']):.1%}",
                         "predicted": fmt_time(r.predicted_time_s)})
    return rows


def decode_shape(seq_kv, heads=32, kv_heads=32, head_dim=128, batch=1):
    """One new token's query against a KV cache of seq_kv tokens: gpusim's seq=1, seq_kv=N."""
    return dict(seq=1, seq_kv=seq_kv, heads=heads, kv_heads=kv_heads, head_dim=head_dim, batch=batch)


def when_flash_helps(gpu="H100-SXM", heads=32, kv_heads=32, head_dim=128):
    """The source material's empty table "when does FlashAttention help most", filled in by gpusim for one
    attention layer (32 heads of 128, as in Llama-2-7B): prefill and decode, short and long."""
    prefill = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    scenarios = [("prefill, short prompt", dict(seq=512, **prefill)),
                 ("prefill, long prompt", dict(seq=8192, **prefill)),
                 ("prefill, 128K context", dict(seq=131072, **prefill)),
                 ("decode, 2K cache, batch 64", decode_shape(2048, heads, kv_heads, head_dim, batch=64)),
                 ("decode, 128K cache", decode_shape(131072, heads, kv_heads, head_dim))]
    rows = []
    for label, shape in scenarios:
        naive, flash = (gpusim.simulate(algo, gpu=gpu, **shape) for algo in ("naive", "flash2"))
        bound = time_terms(naive)
        rows.append({
            "scenario": label, "queries x keys": f"{shape['seq']:,} x {shape.get('seq_kv', shape['seq']):,}",
            "naive: memory-bound kernels": f"{sum(t['bound'] == 'memory' for t in bound)} of {len(bound)}",
            "flash2 bound by": time_terms(flash)[0]["bound"],
            "naive HBM traffic": fmt_bytes(naive.hbm_bytes), "flash2 HBM traffic": fmt_bytes(flash.hbm_bytes),
            "naive peak memory": fmt_bytes(naive.hbm_peak_bytes) + ("" if naive.fits_in_hbm else " (does not fit)"),
            "flash2 peak memory": fmt_bytes(flash.hbm_peak_bytes),
            "predicted speedup": f"{naive.predicted_time_s / flash.predicted_time_s:.1f}x" if naive.fits_in_hbm
            else "naive cannot run",
            "flash2 thread blocks": f"{flash.kernels[0].programs:,} on {flash.config.gpu.sm_count} SMs",
        })
    return rows


def fa3_rows(gpu="H100-SXM", seq=8192, head_dim=128, causal=False):
    """The source's FlashAttention-3 claims beside gpusim's predictions (FA2 benchmark shape)."""
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    shape = dict(seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal, gpu=gpu)
    base = gpusim.simulate("flash2", **shape)
    rows = []
    for algo, dtype, claim in (("flash2", "fp16", "baseline"), ("hopper", "fp16", "~1.5x faster than FA-2"),
                               ("hopper", "fp8", "~2x faster than FA-2")):
        r = gpusim.simulate(algo, dtype=dtype, **shape)
        peak = r.config.gpu.matmul_flops_per_s(dtype)
        rows.append({"kernel": f"{algo} {dtype}", "source claims": claim,
                     "predicted time": fmt_time(r.predicted_time_s),
                     "predicted speedup over flash2 fp16": f"{base.predicted_time_s / r.predicted_time_s:.2f}x",
                     "matmul utilization": (f"{r.flops_matmul / r.predicted_time_s / peak:.0%} of "
                                            f"{peak / 1e12:,.0f} TFLOP/s"),
                     "HBM traffic": fmt_bytes(r.hbm_bytes)})
    return rows


def fp8_error(seq=256, head_dim=64, seed=0):
    """Relative error of attention whose inputs were rounded to fp8 (e4m3, with torch) or fp16, against
    float64 attention on the unrounded inputs."""
    import torch

    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 1, seq, head_dim)) for _ in range(3))
    exact = gpusim.reference_attention(q, k, v)
    rows = []
    for name, dtype in (("fp16", torch.float16), ("fp8 e4m3", torch.float8_e4m3fn)):
        rounded = [torch.from_numpy(x).to(dtype).to(torch.float64).numpy() for x in (q, k, v)]
        err = np.abs(gpusim.reference_attention(*rounded) - exact).max() / np.abs(exact).max()
        rows.append({"inputs rounded to": name, "max error / max |O|": f"{err:.2e}"})
    return rows


# ---------------------------------------------------------------------------------------------------
# The project's kernels, and its measurements (results/<gpu>/*.json)


def load_results(path):
    """A results JSON file (results/<gpu>/*.json), or None when it is not there (yet)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def read_results(path):
    """A results JSON file the course needs; says where it should be when it is missing."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is not there: run the notebook from notebooks/ in a checkout of the "
                                f"repository, whose results/ holds the project's measurements")
    return json.loads(path.read_text())


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


def live_bench_rows(kernels, seqs=(1024, 2048, 4096), head_dim=64, causal=False):
    """Time the project's kernels on this machine's GPU, in the rows format of results/*/bench.json."""
    import torch
    from triton.testing import do_bench

    rows = []
    for seq in seqs:
        batch, heads = gpusim.fa2_shape(seq, head_dim)
        q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.float16) for _ in range(3))
        for algo in ("naive", "flash1", "flash2"):
            fn = getattr(kernels, f"{algo}_attention")
            row = {"provider": algo, "dtype": "fp16", "head_dim": head_dim, "causal": causal, "seq": seq,
                   "batch": batch, "heads": heads}
            torch.cuda.reset_peak_memory_stats()
            try:
                row["ms"] = do_bench(lambda: fn(q, k, v, causal=causal), return_mode="median")
                row["peak_bytes"] = torch.cuda.max_memory_allocated()
            except torch.cuda.OutOfMemoryError:
                row["error"] = "OOM"
            rows.append(row)
    return rows


def kernel_error_rows(kernels, q, k, v, causal=False, block_q=64, block_kv=64):
    """Each Triton kernel's largest error against the float64 reference (gpusim_kernels.reference_attention)."""
    exact = kernels.reference_attention(q, k, v, causal=causal)
    rows = []
    for algo in ("naive", "flash1", "flash2"):
        out = getattr(kernels, f"{algo}_attention")(q, k, v, causal=causal, block_q=block_q, block_kv=block_kv)
        rows.append({"kernel": algo, "max |O - reference|": f"{(out.double() - exact).abs().max().item():.2e}",
                     "dtype": str(q.dtype).removeprefix("torch.")})
    return rows


def kernel_io_rows(kernels, algo, q, k, v, causal=False, block_q=64, block_kv=64):
    """Bytes a Triton kernel loads and stores (gpusim_kernels.trace_io, under the interpreter) beside gpusim's
    count for the same configuration."""
    fn = getattr(kernels, f"{algo}_attention")
    measured = kernels.trace_io(fn, q, k, v, causal=causal, block_q=block_q, block_kv=block_kv)
    b, h, n, d = q.shape
    sim = gpusim.simulate(algo, batch=b, heads=h, kv_heads=k.shape[1], seq=n, seq_kv=k.shape[2], head_dim=d,
                          causal=causal, block_q=block_q, block_kv=block_kv,
                          dtype={2: "fp16", 4: "fp32"}[q.element_size()]).by_tensor
    rows = []
    for tensor in dict.fromkeys([*sim, *measured]):
        got, want = measured.get(tensor, {}), sim.get(tensor, {})
        pair = [(got.get(key, 0), want.get(key, 0)) for key in ("read_bytes", "write_bytes")]
        rows.append({"algo": algo, "tensor": tensor, "kernel read": pair[0][0], "gpusim read": pair[0][1],
                     "kernel write": pair[1][0], "gpusim write": pair[1][1],
                     "equal": all(g == w for g, w in pair)})
    return rows


# ---------------------------------------------------------------------------------------------------
# What the project measured (results/<gpu>/bench.json, ncu.json, flash2_tiles.json), beside gpusim

GiB = 2**30
NCU_KERNELS = {"naive": ("qk", "softmax", "pv")}  # an algorithm's kernels in ncu.json, where not just its name
MIN_TIME_S = 100e-6  # as gpusim_kernels.ncu: times are compared for launches of 100 us or more


def environment_line(data):
    """Where a results file's numbers come from (GPU, versions, date, command), in one line."""
    env = data.get("environment", data)
    keys = ("driver", "cuda", "torch", "triton", "ncu", "date")
    line = f"Measured on {env.get('gpu', '?')}: " + ", ".join(f"{k} {env[k]}" for k in keys if env.get(k))
    line += f"; command: {env.get('command', '?')}"
    return line + (f"; note: {env['truncated']}" if env.get("truncated") else "")


def _span(values, fmt="{:.2f}"):
    """'lo to hi' (or one value when they print the same)."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo} to {hi}"


def measured(rows, provider, dtype="fp16", head_dim=64, causal=False):
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


def ncu_measured(rows, seq, head_dim, causal=False, algos=("naive", "flash2")):
    """Nsight Compute's DRAM bytes (read + written) and kernel time of each algorithm at one size (rows of
    ncu.json), summed over its kernels: {algo: (bytes, seconds, what)}, the format measured_rows takes."""
    out = {}
    for algo in algos:
        names = NCU_KERNELS.get(algo, (algo,))
        picked = [r for r in rows if r["kernel"] in names and (r["seq"], r["head_dim"], r["causal"]) ==
                  (seq, head_dim, causal)]
        if not picked:
            raise ValueError(f"ncu.json has no {algo} launch at N={seq}, d={head_dim}, causal={causal}")
        total = {q: sum(r["measured"] for r in picked if r["quantity"] == q) for q in ("dram_read_bytes",
                                                                                     "dram_write_bytes", "time_s")}
        out[algo] = (total["dram_read_bytes"] + total["dram_write_bytes"], total["time_s"],
                     f"the project's Triton kernel{'s' if len(names) > 1 else ''} {', '.join(names)}")
    return out


def ncu_row(rows, kernel, quantity, seq, head_dim, causal=False):
    """The one ncu.json row of a kernel, quantity and size."""
    return next(r for r in rows if (r["kernel"], r["quantity"], r["seq"], r["head_dim"], r["causal"]) ==
                (kernel, quantity, seq, head_dim, causal))


def _ncu_groups(rows, quantity, min_time_s=MIN_TIME_S):
    groups = {}
    for r in rows:
        if r["quantity"] == quantity and r["rel_err"] is not None and not (
                quantity == "time_s" and r["measured"] < min_time_s):
            groups.setdefault((r["kernel"], r["head_dim"], r["causal"]), []).append(r)
    return groups


def ncu_error_rows(rows, quantity, min_time_s=MIN_TIME_S):
    """Per kernel, head dimension and mask: how far gpusim is from Nsight Compute for one quantity of
    ncu.json, (gpusim - measured) / measured, over all lengths and at the longest; byte counts also say in
    how many launches they were equal to the byte. Times of launches under min_time_s are left out."""
    out = []
    for (kernel, d, causal), rs in _ncu_groups(rows, quantity, min_time_s).items():
        rs = sorted(rs, key=lambda r: r["seq"])
        row = {"kernel": kernel, "d": d, "causal": causal, "launches": len(rs),
               "N": f"{rs[0]['seq']:,} to {rs[-1]['seq']:,}"}
        if quantity != "time_s":
            row["equal to the byte"] = sum(r["simulated"] == r["measured"] for r in rs)
        row |= {"(gpusim - measured) / measured": _span([r["rel_err"] for r in rs], "{:+.1%}"),
                "at the longest N": f"{rs[-1]['rel_err']:+.1%}"}
        out.append(row)
    return out


def ncu_findings(rows, target_time=0.25, min_time_s=MIN_TIME_S):
    """What Nsight Compute found against gpusim (rows of ncu.json), as sentences computed from the rows."""
    def errs(quantity, kernels=None, causal=None):
        return [r for (k, _, c), rs in _ncu_groups(rows, quantity, min_time_s).items() for r in rs
                if (kernels is None or k in kernels) and (causal is None or c == causal)]

    l2 = _ncu_groups(rows, "l2_to_sm_bytes")
    kernels = list(dict.fromkeys(k for k, _, _ in l2))
    exact = [k for k in kernels if all(r["simulated"] == r["measured"] for r in errs("l2_to_sm_bytes", {k}))]
    out = [f"Bytes from L2 into the SMs: equal to gpusim's count to the byte in every launch of "
           f"{', '.join(exact)} ({len(errs('l2_to_sm_bytes', exact))} launches)."]
    naive = errs("l2_to_sm_bytes", NCU_KERNELS["naive"])
    if naive:
        out.append(f"The naive kernels ({', '.join(NCU_KERNELS['naive'])}): within "
                   f"{max(abs(r['rel_err']) for r in naive):.0%} of gpusim's count.")
    plain, masked = errs("l2_to_sm_bytes", {"flash1"}, False), errs("l2_to_sm_bytes", {"flash1"}, True)
    if plain and masked:
        more = [r["measured"] / r["simulated"] - 1 for r in masked]
        out.append(f"flash1: within {max(abs(r['rel_err']) for r in plain):.1%} without the mask; with the causal "
                   f"mask the SMs read {_span(more, '{:.0%}')} more than gpusim counts.")
    writes = errs("dram_write_bytes")
    out.append(f"DRAM writes: within {max(abs(r['rel_err']) for r in writes):.0%} of gpusim's L2 model in all "
               f"{len(writes)} launches.")
    reads = errs("dram_read_bytes")
    far = sorted((r for r in reads if abs(r["rel_err"]) > 0.1), key=lambda r: r["rel_err"])
    out.append(f"DRAM reads: within 10% in {len(reads) - len(far)} of {len(reads)} launches"
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
    naive, flash2 = (measured(rows, p, dtype, head_dim, causal) for p in ("naive", "flash2"))
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
        speeds = "; ".join(f"{_span([r['vs_sdpa_flash'] for r in won if r['causal'] == c])}x SDPA flash "
                           f"{'with' if c else 'without'} the mask" for c in (False, True)
                           if any(r["causal"] == c for r in won))
        out.append(f"d = {d}: {tile[0]} x {tile[1]} was the fastest tile in {len(won)} of {len(groups)} "
                   f"measurements ({speeds}).")
    return out


def hopper_rows(rows, head_dim=128, causal=False, gpu="H200-measured"):
    """The Hopper kernel as measured (bench.json) against SDPA's cuDNN and FlashAttention-2 backends, and
    in fp8 against itself in fp16, beside gpusim's hopper prediction for the same shapes. Ratios of speed
    are ratios of time (other / this); errors are relative to float64 attention on the fp16 inputs."""
    h16, h8, cudnn, flash = (measured(rows, p, dt, head_dim, causal) for p, dt in (
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
    """hopper_rows from min_seq on, in one paragraph, with the source's FlashAttention-3 claims beside."""
    hr = [r for r in hopper_rows(rows, head_dim, causal, gpu) if r["N"] >= min_seq]

    def col(key):
        return [r[key] for r in hr]

    best = max(col("hopper fp16 TFLOP/s")) * 1e12
    fp8_vs_fa2 = [r["speed vs SDPA flash"] * r["fp8 speed vs fp16"] for r in hr]
    measured_peak, sheet_peak = (gpusim.get_gpu(g).fp16_matmul_flops_per_s for g in (gpu, datasheet))
    return (f"d = {head_dim}{', causal' if causal else ''}, N from {min_seq:,} to {max(col('N')):,}: SDPA's cuDNN "
            f"kernel ran at {_span(col('SDPA cuDNN TFLOP/s'), '{:.0f}')} TFLOP/s. The project's Hopper kernel in "
            f"fp16 ran at {_span(col('speed vs SDPA cuDNN'))}x cuDNN's speed and "
            f"{_span(col('speed vs SDPA flash'))}x SDPA's FlashAttention-2 (the source: ~1.5x); in fp8 at "
            f"{_span(col('fp8 speed vs fp16'))}x its fp16 speed, {_span(fp8_vs_fa2)}x SDPA's FlashAttention-2 "
            f"(the source: ~2x), with {_span(col('fp8 error / fp16 error'), '{:.0f}')}x fp16's error. Its best "
            f"fp16 rate, {best / 1e12:.0f} TFLOP/s, is {best / sheet_peak:.0%} of the datasheet's fp16 matmul peak "
            f"and {best / measured_peak:.0%} of the measured matmul ceiling (the source: up to 75% utilization). "
            f"gpusim predicts fp8 at {_span(col('gpusim fp8 vs fp16'))}x fp16, and fp16 times at "
            f"{_span([p / m for p, m in zip(col('gpusim fp16 ms'), col('hopper fp16 ms'))])}x the measured.")

"""The Hopper kernel's launch variants (FlashAttention-3's techniques, docs/hopper.md) against SDPA's cuDNN and
flash backends on an sm_90 GPU, in one run, and the launch table LAUNCHES of gpusim/passes/hopper.py (which
kernels/hopper.py runs and the time model prices) picked from the result.

    python -m benchmarks.hopper_check --out $OUT/hopper_variants.json --max-seconds 170
    python -m benchmarks.hopper_check --pick results/h200/hopper_variants.json    # prints LAUNCHES for gpusim/passes/hopper.py
    python -m benchmarks.hopper_check --out /tmp/smoke.json --smoke               # CPU: interpreter, tiny N

1. A pool of worker processes compiles every variant into Triton's cache (and reports its registers,
   spills, shared memory and descriptor scratch); nothing is timed while they compile.
2. Groups (d, causal, N), d = 128 and 64, N = 4096 and 16384, batch = 16384 / N, heads = 2048 / d, fp16:
   SDPA cuDNN and flash, every variant of variants(), the 4 fastest causal ones again with the longest programs
   first (lpt_heads 1 and 4), and at d = 128 the 3 fastest in fp8. do_bench's median (warmup 10 ms, rep
   40 ms); TFLOP/s = 4·B·H·N²·d, halved when causal; rel_err against float64 on the first and last 128 query
   rows of batch 0, head 0 (benchmarks.bench.reference_rows); sdpa_diff against SDPA's whole output.
   --max-seconds: no group starts that would end after it (taking as long as the longest so far); the JSON
   is rewritten after every group.
3. A short table, and LAUNCHES picked from the rows (pick), printed last.
"""
import argparse
import datetime
import json
import math
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

if "--smoke" in sys.argv:  # before Triton is imported: the kernels run in its interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from benchmarks.bench import error_line, reference_rows, tflops  # noqa: E402
from gpusim_kernels.hopper import (LAUNCHES, compiled_kernel, descriptor_scratch_bytes, hopper_attention,  # noqa: E402
                                   to_fp8)
from gpusim_kernels.interpreter import INTERPRETED  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TOKENS, MODEL_DIM, SEQS = 16384, 2048, (4096, 16384)
SMOKE = dict(TOKENS=128, MODEL_DIM=128, SEQS=(64, 128))
LPT_HEADS, LPT_TOP, FP8_TOP = (1, 4), 4, 3
# Relative Frobenius error against float64 of the unquantised inputs a correct variant stays under: 4u for fp16
# (u = 2**-11; P and O rounded once each, fp32 accumulation, as tests/test_hopper.py justifies), 2u for fp8
# (e4m3, u = 2**-4: the per-tensor quantisation of q, k, v, docs/hopper.md). Against SDPA's fp16 output,
# itself about u off, twice that.
TOLERANCE = {"fp16": 4 * 2.0**-11, "fp8": 2 * 2.0**-4}
SDPA = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
# head_dim -> the launches the techniques are switched on: (block_q, block_kv, num_warps, num_stages,
# warp_specialize). d = 64 adds FlashAttention-3's taller Q tiles where Triton can (powers of two only: 256
# rows for its 192), as 2 consumer warp groups of 128 rows or 4 warp groups of 64.
BASES = {128: [(128, 128, 4, 2, True), (128, 64, 4, 2, True), (128, 128, 8, 3, False), (128, 128, 8, 2, False),
               (128, 64, 8, 3, False)],
         64: [(128, 128, 4, 2, True), (128, 64, 4, 2, True), (256, 64, 4, 2, True), (128, 128, 8, 3, False),
              (128, 64, 8, 3, False), (256, 64, 8, 3, False), (256, 128, 16, 3, False)]}


def variants(d, causal):
    """name -> launch. Warp-specialized bases as they are (triton 3.6's specializer takes no other technique);
    software-pipelined ones without and with overlap, under causal with each mask ("every" without overlap
    only: the reference for what masking the diagonal alone buys)."""
    out = {}
    for block_q, block_kv, num_warps, num_stages, ws in BASES[d]:
        name = f"{'ws' if ws else 'swp'}-{block_q}x{block_kv}-w{num_warps}-s{num_stages}"
        base = dict(block_q=block_q, block_kv=block_kv, num_warps=num_warps, num_stages=num_stages,
                    warp_specialize=ws, mask="every", overlap=False, lpt_heads=0)
        if ws:
            out[name] = base
            continue
        for overlap in (False, True):
            if not causal:  # nothing to mask: the mask option changes nothing
                out[name + "-overlap" * overlap] = dict(base, mask="split", overlap=overlap)
                continue
            for mask in ("split", "branch") if overlap else ("split", "branch", "every"):
                out[f"{name}{'-overlap' * overlap}-{mask}"] = dict(base, mask=mask, overlap=overlap)
    return out


def compile_keys():
    """(head_dim, dtype, causal, variant) for every kernel the run may launch."""
    keys = [(d, "fp16", causal, name) for d in (128, 64) for causal in (False, True) for name in variants(d, causal)]
    return keys + [(128, "fp8", causal, name) for causal in (False, True) for name in variants(128, causal)]


def compile_task(key):
    """In a worker process: compile one kernel into Triton's cache; its registers, spills and memory."""
    d, dtype, causal, name = key
    start = time.perf_counter()
    x = [randn(1, 1, 256, d, seed) for seed in range(3)]  # the divisibility of the timed shapes
    call = fp8_call(*x) if dtype == "fp8" else (lambda **kw: (*(t.half() for t in x), kw))
    try:
        q, k, v, kwargs = call(causal=causal, **variants(d, causal)[name])
        if INTERPRETED:  # the smoke run: the kernel runs once, nothing is compiled
            hopper_attention(q, k, v, **kwargs)
            return dict(compile_s=time.perf_counter() - start)
        kernel = compiled_kernel(q, k, v, **kwargs)
        kernel._init_handles()  # loads it: registers and spills become known; too much shared memory raises
        return dict(n_regs=kernel.n_regs, n_spills=kernel.n_spills, shared_bytes=kernel.metadata.shared,
                    scratch_bytes_per_program=kernel.metadata.global_scratch_size,
                    compile_s=time.perf_counter() - start)
    except Exception as err:  # noqa: BLE001 - a variant that does not build is a result
        return dict(error=error_line(err, 160), compile_s=time.perf_counter() - start)


def warm(keys, workers, seconds):
    """Compile keys in a pool of workers; {key: report}. Whatever is not done after seconds is reported so."""
    pool = multiprocessing.get_context("spawn").Pool(workers)
    pending = {key: pool.apply_async(compile_task, (key,)) for key in keys}
    deadline = time.monotonic() + seconds
    done = {}
    for key, task in pending.items():
        try:
            done[key] = task.get(timeout=max(0.0, deadline - time.monotonic()))
        except multiprocessing.TimeoutError:
            done[key] = dict(error=f"not compiled within {seconds:.0f} s")
    pool.terminate()
    return done


def randn(b, h, n, d, seed):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(b, h, n, d, device=DEVICE, generator=gen)


def fp8_call(q, k, v):
    """A function giving the fp8 inputs and keyword arguments of hopper_attention for launch options."""
    (q8, q_descale), (k8, k_descale), (v8, v_descale) = to_fp8(q), to_fp8(k), to_fp8(v, k_major=True)
    return lambda **kw: (q8, k8, v8, dict(kw, fp8_scale=(q_descale, k_descale, v_descale)))


def median_ms(fn):
    if DEVICE == "cpu":  # the smoke run: one call, wall clock
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    return triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median")


def host_us(fn, calls=5):
    """CPU time to launch fn, the GPU still busy: do_bench's timing includes the part of it beyond the time
    the GPU takes to clear the L2 before each call (256 MB of writes, about 70 µs on an H200)."""
    if DEVICE == "cpu":
        return None
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def rel(out, ref):
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def measure(row, fn, check):
    """Time fn into row, with its accuracy (check) and speed; a launch that fails records its error."""
    try:
        start = time.perf_counter()
        out = fn()
        row["first_call_s"] = time.perf_counter() - start  # a cache hit loads in milliseconds
        row.update(check(out))
        row["host_us"] = host_us(fn)
        row["ms"] = median_ms(fn)
        row["tflops"] = tflops(row["batch"], row["heads"], row["seq"], row["head_dim"], row["causal"], row["ms"])
    except Exception as err:  # noqa: BLE001 - a launch that fails (shared memory, a backend's limits) is a result
        row["error"] = error_line(err, 160)
    return row


def measure_group(d, causal, n, compiled, deadline):
    """Every row of one group: SDPA, the variants, the fastest again longest-first and in fp8."""
    b, h = TOKENS // n, MODEL_DIM // d
    q, k, v = (randn(b, h, n, d, seed).half() for seed in (1, 2, 3))
    ref_rows, expected = reference_rows(q, k, v, causal)
    shape = dict(head_dim=d, causal=causal, seq=n, batch=b, heads=h)
    rows, outputs = [], []
    for provider, backend in SDPA.items():
        def sdpa(backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        rows.append(measure(dict(shape, provider=provider, dtype="fp16"), sdpa,
                            lambda out: outputs.append(out) or dict(rel_err=rel(out[0, 0, ref_rows], expected))))
    sdpa_out = outputs[0] if outputs else None  # cuDNN's, or flash's where cuDNN failed
    cudnn_ms = rows[0].get("ms")

    def accuracy(out, dtype):
        got = dict(rel_err=rel(out[0, 0, ref_rows], expected),
                   sdpa_diff=None if sdpa_out is None else rel(out, sdpa_out))
        got["correct"] = got["rel_err"] < TOLERANCE[dtype] and (got["sdpa_diff"] or 0) < 2 * TOLERANCE[dtype]
        return got

    def hopper(name, dtype, call, lpt_heads=0):
        launch = dict(variants(d, causal)[name], lpt_heads=lpt_heads)
        row = dict(shape, provider="hopper", dtype=dtype, variant=name + (f"-lpt{lpt_heads}" if lpt_heads else ""),
                   base=name, **launch, **compiled[d, dtype, causal, name])
        row["descriptor_scratch_bytes"] = descriptor_scratch_bytes(batch=b, heads=h, seq=n, block_q=launch["block_q"],
                                                                 warp_specialize=launch["warp_specialize"])
        if "scratch_bytes_per_program" in row:
            programs = b * h * -(-n // launch["block_q"])
            row["scratch_ok"] = row["scratch_bytes_per_program"] * programs == row["descriptor_scratch_bytes"]
        if "error" not in row:
            q_, k_, v_, kwargs = call(causal=causal, **launch)
            measure(row, lambda: hopper_attention(q_, k_, v_, **kwargs), lambda out: accuracy(out, dtype))
        row["ratio_vs_cudnn"] = cudnn_ms / row["ms"] if cudnn_ms and "ms" in row else None
        rows.append(row)

    def fastest_bases(count):
        """The fastest correct fp16 rows, one per variant name."""
        best = {}
        for r in sorted((r for r in rows if r.get("correct") and r["dtype"] == "fp16"), key=lambda r: r["ms"]):
            best.setdefault(r["base"], r)
        return list(best.values())[:count]

    fp16 = lambda **kwargs: (q, k, v, kwargs)  # noqa: E731
    for name in variants(d, causal):
        hopper(name, "fp16", fp16)
    if causal and time.monotonic() < deadline:
        for r in fastest_bases(LPT_TOP):
            for lpt_heads in LPT_HEADS:
                hopper(r["base"], "fp16", fp16, lpt_heads)
    if d == 128 and time.monotonic() < deadline:
        fp8 = fp8_call(q.float(), k.float(), v.float())
        for r in fastest_bases(FP8_TOP):
            hopper(r["base"], "fp8", fp8, r["lpt_heads"])
    return rows


def pick(rows):
    """(head_dim, dtype, causal) -> the launch correct in every group it ran in, measured at every N its key
    was, with the best geometric mean of its speed against cuDNN; and those ratios by N."""
    runs = {}
    for r in rows:
        if r["provider"] == "hopper" and "ms" in r and r.get("ratio_vs_cudnn"):
            launch = json.dumps({name: r[name] for name in LAUNCHES[128, "fp16", False]})
            runs.setdefault((r["head_dim"], r["dtype"], r["causal"]), {}).setdefault(launch, []).append(r)
    table = {}
    for key, by_launch in runs.items():
        seqs = {r["seq"] for launch_rows in by_launch.values() for r in launch_rows}
        scored = [(math.exp(sum(math.log(r["ratio_vs_cudnn"]) for r in launch_rows) / len(launch_rows)), launch,
                   launch_rows) for launch, launch_rows in by_launch.items()
                  if all(r["correct"] for r in launch_rows) and {r["seq"] for r in launch_rows} == seqs]
        if scored:
            score, launch, launch_rows = max(scored, key=lambda s: s[0])
            table[key] = dict(launch=json.loads(launch), geomean=score,
                              by_seq={r["seq"]: r["ratio_vs_cudnn"] for r in launch_rows})
    return table


def format_configs(table):
    """LAUNCHES as Python, to replace the table in gpusim/passes/hopper.py; keys without a measurement keep
    their entry."""
    lines = ["LAUNCHES = {"]
    for d in (64, 128):
        for dtype in ("fp16", "fp8"):
            for causal in (False, True):
                chosen = table.get((d, dtype, causal))
                launch = chosen["launch"] if chosen else LAUNCHES[d, dtype, causal]
                head = f'    ({d}, "{dtype}", {causal}): dict('
                fields = [f"{name}={json.dumps(x) if isinstance(x, str) else repr(x)}" for name, x in launch.items()]
                comment = "    # not measured in this run: unchanged"
                if chosen:
                    comment = f"    # {chosen['geomean']:.2f}x SDPA cuDNN fp16 (" + ", ".join(
                        f"N={n}: {x:.2f}" for n, x in sorted(chosen["by_seq"].items())) + ")"
                lines += [comment, head + ", ".join(fields[:5]) + ",", " " * len(head) + ", ".join(fields[5:]) + "),"]
    lines += ["}", 'LAUNCHES |= {(d, "bf16", causal): LAUNCHES[d, "fp16", causal] for d in HEAD_DIMS '
                   "for causal in (False, True)}"]
    return "\n".join(lines)


def fastest(rows, dtype="fp16", **where):
    """The fastest correct hopper row whose launch has these values (a tuple: any of them), or None."""
    match = lambda r: all(r[key] in (x if isinstance(x, tuple) else (x,)) for key, x in where.items())  # noqa: E731
    return min((r for r in rows if r["provider"] == "hopper" and r["dtype"] == dtype and r.get("correct")
                and match(r)), key=lambda r: r["ms"], default=None)


def speedup(without, with_):
    return f"{without['ms'] / with_['ms']:5.2f}" if without and with_ else "    -"


def summary(rows):
    """One line per group: TFLOP/s of SDPA, of the table's launch and of the fastest correct variant (with
    its speed against cuDNN), and what each technique bought there: the best time without it over the best
    time with it (overlap, diag: among software-pipelined launches, diag = mask "every" against the diagonal
    only; ws: warp-specialized against not; fp8: fp16 over fp8)."""
    cell = lambda r: f"{r['tflops']:6.0f} {r['ratio_vs_cudnn'] or 0:4.2f}x" if r else f"{'-':>12}"  # noqa: E731
    lines = [f"{'d':>3} {'causal':>6} {'N':>5} {'cuDNN':>6} {'flash':>6} {'table':>12} {'best':>12} {'overlap':>7} "
             f"{'diag':>5} {'lpt':>5} {'ws':>5} {'fp8':>5}  best variant"]
    for d, causal, n in dict.fromkeys((r["head_dim"], r["causal"], r["seq"]) for r in rows):
        g = [r for r in rows if (r["head_dim"], r["causal"], r["seq"]) == (d, causal, n)]
        sdpa = {r["provider"]: r.get("tflops", 0) for r in g if r["provider"] != "hopper"}
        best = fastest(g)
        swp = lambda **where: fastest(g, warp_specialize=False, **where)  # noqa: E731 - the options apply to it
        diagonal = ("split", "branch")
        diag = speedup(swp(mask="every"), swp(mask=diagonal, overlap=False)) if causal else "    -"
        lpt = speedup(fastest(g, lpt_heads=0), best) if causal else "    -"
        lines.append(f"{d:3d} {causal:6d} {n:5d} {sdpa.get('sdpa_cudnn', 0):6.0f} {sdpa.get('sdpa_flash', 0):6.0f} "
                     f"{cell(fastest(g, **LAUNCHES[d, 'fp16', causal]))} {cell(best)} "
                     f"{speedup(swp(overlap=False, mask=diagonal), swp(overlap=True)):>7} {diag} {lpt} "
                     f"{speedup(fastest(g, warp_specialize=False), fastest(g, warp_specialize=True))} "
                     f"{speedup(best, fastest(g, 'fp8'))}  {best['variant'] if best else '-'}")
    return "\n".join(lines)


def environment(argv, workers):
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if DEVICE == "cuda" else None
    return dict(gpu=torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (interpreter)", driver=smi,
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), date=datetime.date.today().isoformat(), workers=workers,
                command="python -m benchmarks.hopper_check " + " ".join(argv),
                table={",".join(map(str, key)): launch for key, launch in LAUNCHES.items()})


def run(args, argv):
    start = time.monotonic()
    workers = args.workers or min(16, os.cpu_count())
    result = dict(environment=environment(argv, workers), rows=[], skipped_groups=[])
    compiled = warm(compile_keys(), workers, args.max_seconds / 2)
    result["compiled"] = [dict(head_dim=d, dtype=dtype, causal=causal, variant=name, **report)
                          for (d, dtype, causal, name), report in compiled.items()]
    result["environment"]["compile_s"] = time.monotonic() - start
    print(f"compiled {sum('error' not in c for c in compiled.values())} of {len(compiled)} kernels in "
          f"{result['environment']['compile_s']:.0f} s", flush=True)
    deadline, longest = start + args.max_seconds, 0.0
    for n in SEQS:
        for d in (128, 64):
            for causal in (False, True):
                if time.monotonic() + longest > deadline:  # it would not end in time, as long as the longest so far
                    result["skipped_groups"].append(dict(head_dim=d, causal=causal, seq=n))
                    continue
                group_start = time.monotonic()
                result["rows"] += measure_group(d, causal, n, compiled, deadline)
                longest = max(longest, time.monotonic() - group_start)
                result["environment"]["seconds"] = time.monotonic() - start
                Path(args.out).write_text(json.dumps(result, indent=1))
                print(f"group d={d} causal={causal:d} N={n} done at {time.monotonic() - start:.0f} s", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    failed = {f"{r['dtype']} {r.get('variant', r['provider'])}" for r in result["rows"]
              if "error" in r or r.get("correct") is False}
    print(f"\nfailed or wrong somewhere: {', '.join(sorted(failed)) or 'none'}")
    print(summary(result["rows"]))
    print(format_configs(pick(result["rows"])))


def main(argv):
    global TOKENS, MODEL_DIM, SEQS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the JSON to write")
    ap.add_argument("--pick", help="a JSON this script wrote: print the LAUNCHES it picks")
    ap.add_argument("--max-seconds", type=float, default=170, help="end the run by then (compiling: half of it)")
    ap.add_argument("--workers", type=int, help="compile processes (default: the cores, at most 16)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes in Triton's interpreter (CPU)")
    args = ap.parse_args(argv)
    if args.pick:
        rows = json.loads(Path(args.pick).read_text())["rows"]
        print(summary(rows))
        return print(format_configs(pick(rows)))
    if args.smoke:
        TOKENS, MODEL_DIM, SEQS = SMOKE.values()
    run(args, argv)


if __name__ == "__main__":
    main(sys.argv[1:])

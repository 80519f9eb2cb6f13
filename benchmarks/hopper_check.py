"""Check and time the Hopper kernel on an sm_90 GPU, beside SDPA's flash and cuDNN backends, in one run.

    python benchmarks/hopper_check.py --out $OUT/hopper_check.json
    ncu --profile-from-start off ... python benchmarks/hopper_check.py --profile $OUT/hopper_check.json
    TRITON_INTERPRET=1 python benchmarks/hopper_check.py --out /tmp/smoke.json --smoke   # CPU: the code paths

1. Accuracy: relative error (Frobenius) against float64 for fp16, bf16 and fp8 (fp8 against the fp16
   kernel's error on the same inputs), ragged grouped-query shapes and the table's launches.
2. Launch variants (block_kv, warps, stages, warp specialization) at N = 4096 for each (d, dtype, causal);
   the fastest whose output is within CORRECT of SDPA's is "chosen" (gpusim_kernels.hopper.CONFIGS copies it)
   and used in 3.
3. TFLOP/s (4·B·H·N²·d, halved when causal; batch = 16384/N, heads = 2048/d) at d = 128 and 64,
   N = 4096 and 8192, causal and not: hopper in fp16 and fp8, SDPA flash and cuDNN in fp16, and bf16 at
   one shape; median of triton.testing.do_bench, everything in the same run. Ratios at the end.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpusim_kernels.hopper import CONFIGS, hopper_attention, to_fp8  # noqa: E402
from gpusim_kernels.reference import reference_attention  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TOKENS, MODEL_DIM, SEQS, SWEEP_SEQ = 16384, 2048, (4096, 8192), 4096
# (batch, heads, kv_heads, seq, head_dim): ragged and grouped-query (masked loop), and the table's launches
ACCURACY_SHAPES = [(2, 4, 2, 1000, 64), (2, 4, 2, 1000, 128), (1, 8, 8, 2048, 64), (1, 8, 8, 2048, 128)]
SMOKE = dict(TOKENS=256, MODEL_DIM=256, SEQS=(128, 256), SWEEP_SEQ=128,
             ACCURACY_SHAPES=[(1, 2, 1, 100, 64), (1, 2, 2, 128, 128)])  # tiny shapes for the interpreter
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}
# name -> launch: warp-specialized (ws: 4 warps per warp group) or software-pipelined on 8 warps (swp);
# block_q x block_kv, num_stages. ws-128x128-s3 needs more than 227 KiB of shared memory at d = 128 in fp16.
VARIANTS = {f"{'ws' if ws else 'swp'}-128x{bkv}-s{stages}": dict(
    block_q=128, block_kv=bkv, num_stages=stages, num_warps=4 if ws else 8, warp_specialize=ws)
    for ws, bkv, stages in [(True, 128, 2), (True, 128, 3), (True, 64, 3), (False, 128, 3), (False, 64, 3)]}
CORRECT = {"fp16": 1e-2, "fp8": 0.1}  # largest relative difference from SDPA's fp16 output a variant may have


def median_ms(fn):
    if DEVICE == "cpu":  # smoke run in the interpreter: one call, wall clock
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def tflops(b, h, n, d, causal, ms):
    return 4 * b * h * n * n * d / (2 if causal else 1) / (ms * 1e-3) / 1e12


def rel_err(out, ref):
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def randn(b, h, n, d, seed):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(b, h, n, d, device=DEVICE, generator=gen)


def hopper(dtype, q, k, v, causal, launch=None):
    """A call of the kernel on float32 q, k, v cast (fp8: quantised, per-tensor scales) outside the call."""
    if dtype == "fp8":
        (q8, q_descale), (k8, k_descale), (v8, v_descale) = to_fp8(q), to_fp8(k), to_fp8(v, k_major=True)
        scale = (q_descale, k_descale, v_descale)
        return lambda: hopper_attention(q8, k8, v8, causal=causal, fp8_scale=scale, **(launch or {}))
    q, k, v = (x.to(DTYPES[dtype]) for x in (q, k, v))
    return lambda: hopper_attention(q, k, v, causal=causal, **(launch or {}))


def sdpa(backend, dtype, q, k, v, causal):
    q, k, v = (x.to(DTYPES[dtype]) for x in (q, k, v))

    def run():
        with sdpa_kernel(SDPA[backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def attempt(row, fn, ref=None):
    """Time fn into row (ms, tflops, rel_diff against ref); a launch that fails records its error."""
    try:
        out = fn()
        if ref is not None:
            row["rel_diff"] = rel_err(out, ref)
        row["ms"] = median_ms(fn)
        row["tflops"] = tflops(row["batch"], row["heads"], row["seq"], row["head_dim"], row["causal"], row["ms"])
    except Exception as err:  # noqa: BLE001 - a launch that does not fit (shared memory) is a result too
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return row


def accuracy():
    rows = []
    for b, h, h_kv, n, d in ACCURACY_SHAPES:
        q, k, v = randn(b, h, n, d, 1), randn(b, h_kv, n, d, 2), randn(b, h_kv, n, d, 3)
        for causal in (False, True):
            ref = reference_attention(q, k, v, causal=causal)
            errors = {dtype: rel_err(hopper(dtype, q, k, v, causal)(), ref) for dtype in ("fp16", "bf16", "fp8")}
            rows.append(dict(batch=b, heads=h, kv_heads=h_kv, seq=n, head_dim=d, causal=causal, rel_err=errors,
                             fp8_over_fp16=errors["fp8"] / errors["fp16"]))
            print(f"accuracy B={b} H={h}/{h_kv} N={n} d={d} causal={causal:d}: "
                  + " ".join(f"{k} {e:.1e}" for k, e in errors.items()), flush=True)
    return rows


def sweep(deadline):
    """Every variant at N = SWEEP_SEQ; returns the rows and the fastest correct one per (d, dtype, causal)."""
    rows, chosen = [], {}
    for d in (128, 64):
        b, h, n = TOKENS // SWEEP_SEQ, MODEL_DIM // d, SWEEP_SEQ
        q, k, v = randn(b, h, n, d, 4), randn(b, h, n, d, 5), randn(b, h, n, d, 6)
        for causal in (False, True):
            ref = sdpa("sdpa_flash", "fp16", q, k, v, causal)() if DEVICE == "cuda" else None
            for dtype in ("fp16", "fp8"):
                for name, launch in VARIANTS.items():
                    if time.monotonic() > deadline:
                        continue
                    row = attempt(dict(head_dim=d, dtype=dtype, causal=causal, seq=n, batch=b, heads=h, variant=name,
                                       **launch), hopper(dtype, q, k, v, causal, launch), ref)
                    rows.append(row)
                    print(f"variant d={d} {dtype} causal={causal:d} {name}: {row.get('tflops', 0):6.1f} TFLOP/s "
                          f"rel_diff {row.get('rel_diff', 0):.1e} {row.get('error', '')}", flush=True)
                best = min((r for r in rows if (r["head_dim"], r["dtype"], r["causal"]) == (d, dtype, causal)
                            and "ms" in r and r.get("rel_diff", 0) < CORRECT[dtype]), key=lambda r: r["ms"],
                           default=None)
                if best:
                    chosen[f"{d},{dtype},{causal}"] = {key: best[key] for key in VARIANTS[best["variant"]]}
    return rows, chosen


def timings(chosen, deadline):
    rows = []
    for d in (128, 64):
        for n in SEQS:
            b, h = TOKENS // n, MODEL_DIM // d
            q, k, v = randn(b, h, n, d, 7), randn(b, h, n, d, 8), randn(b, h, n, d, 9)
            for causal in (False, True):
                shape = dict(head_dim=d, causal=causal, seq=n, batch=b, heads=h)
                runs = [("sdpa_flash", "fp16"), ("sdpa_cudnn", "fp16"), ("hopper", "fp16"), ("hopper", "fp8")]
                if (d, n, causal) == (128, SEQS[0], False):
                    runs += [("sdpa_flash", "bf16"), ("sdpa_cudnn", "bf16"), ("hopper", "bf16")]
                ref = None
                for provider, dtype in runs:
                    if time.monotonic() > deadline:
                        break
                    launch = chosen.get(f"{d},{'fp16' if dtype == 'bf16' else dtype},{causal}")
                    fn = (hopper(dtype, q, k, v, causal, launch) if provider == "hopper"
                          else sdpa(provider, dtype, q, k, v, causal))
                    row = attempt(dict(provider=provider, dtype=dtype, **shape, launch=launch if provider == "hopper"
                                       else None), fn, ref)
                    if provider == "sdpa_flash" and "error" not in row:
                        ref = fn()  # the hopper rows after it are compared with it
                    rows.append(row)
                    print(f"{provider:10s} {dtype} d={d} N={n} causal={causal:d}: {row.get('tflops', 0):6.1f} "
                          f"TFLOP/s rel_diff {row.get('rel_diff', 0):.1e} {row.get('error', '')}", flush=True)
    return rows


def ratios(rows):
    """Per shape: speedups of hopper fp16 over SDPA cuDNN and flash (time ratios), of fp8 over fp16, and the
    relative differences of hopper's fp16 and fp8 outputs from SDPA flash's."""
    done = {(r["provider"], r["dtype"], r["head_dim"], r["seq"], r["causal"]): r for r in rows if "ms" in r}
    out = []
    for (provider, dtype, d, n, causal), fp16 in done.items():
        if (provider, dtype) != ("hopper", "fp16"):
            continue
        cudnn, flash, fp8 = (done.get((*key, d, n, causal), {}) for key in (("sdpa_cudnn", "fp16"),
                                                                             ("sdpa_flash", "fp16"), ("hopper", "fp8")))
        t = fp16["ms"]
        out.append({"head_dim": d, "seq": n, "causal": causal, "hopper_fp16_tflops": fp16["tflops"],
                    "hopper/sdpa_cudnn": cudnn and cudnn["ms"] / t, "hopper/sdpa_flash": flash and flash["ms"] / t,
                    "fp8/fp16": fp8 and t / fp8["ms"], "fp16_rel_diff": fp16.get("rel_diff"),
                    "fp8_rel_diff": fp8.get("rel_diff")})
    return out


def environment(argv):
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if DEVICE == "cuda" else None
    return dict(gpu=torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (interpreter)", driver=smi,
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), date=datetime.date.today().isoformat(),
                command="python benchmarks/hopper_check.py " + " ".join(argv),
                table={",".join(map(str, key)): launch for key, launch in CONFIGS.items()})


def profile(path):
    """One launch of each chosen fp16 and fp8 kernel at d = 128, N = 4096, not causal, inside the profiler range."""
    with open(path) as f:
        chosen = json.load(f)["chosen"]
    n, d = SEQS[0], 128
    q, k, v = (randn(TOKENS // n, MODEL_DIM // d, n, d, seed) for seed in (7, 8, 9))
    for dtype in ("fp16", "fp8"):
        fn = hopper(dtype, q, k, v, False, chosen.get(f"{d},{dtype},False"))
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def main(argv):
    global TOKENS, MODEL_DIM, SEQS, SWEEP_SEQ, ACCURACY_SHAPES
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="the JSON to write")
    ap.add_argument("--profile", help="a JSON this script wrote: launch its chosen kernels once each, for ncu")
    ap.add_argument("--max-seconds", type=float, default=150, help="stop sweeping and timing after this")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes (CPU, TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.smoke:
        TOKENS, MODEL_DIM, SEQS, SWEEP_SEQ, ACCURACY_SHAPES = SMOKE.values()
    if args.profile:
        return profile(args.profile)
    start = time.monotonic()
    result = dict(environment=environment(argv), accuracy=accuracy())
    result["variants"], result["chosen"] = sweep(start + args.max_seconds * 0.6)
    result["rows"] = timings(result["chosen"], start + args.max_seconds)
    result["ratios"] = ratios(result["rows"])
    result["environment"]["seconds"] = time.monotonic() - start
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\n{'d':>4} {'N':>5} {'causal':>6} {'hopper TFLOP/s':>14} {'/cudnn':>7} {'/flash':>7} {'fp8/fp16':>8} "
          f"{'diff fp16':>9} {'diff fp8':>9}")
    for r in result["ratios"]:
        print(f"{r['head_dim']:4d} {r['seq']:5d} {r['causal']:6d} {r['hopper_fp16_tflops']:14.1f} "
              + " ".join(f"{x:7.2f}" if x else "      -" for x in (r["hopper/sdpa_cudnn"], r["hopper/sdpa_flash"],
                                                              r["fp8/fp16"]))
              + " ".join(f"{x:10.1e}" if x is not None else "         -" for x in (r["fp16_rel_diff"],
                                                                               r["fp8_rel_diff"])))
    print("chosen:", json.dumps(result["chosen"]))


if __name__ == "__main__":
    main(sys.argv[1:])

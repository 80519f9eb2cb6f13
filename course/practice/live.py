"""Live measurement with torch and Triton, on this machine: fp8 rounding error, the project's kernels
timed on the GPU, their error against the float64 reference, and the bytes they load and store (counted
under Triton's interpreter) beside gpusim's count. torch is imported by the functions that need it, so
the rest of the course runs without it.
"""
import numpy as np

import gpusim


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


def timed_fields(row, ms, peak_bytes):
    """The measured fields of a results/<gpu>/bench.json row of row's shape: ms, TFLOP/s (gpusim.nominal_flops
    over the time) and peak bytes."""
    flops = gpusim.nominal_flops(row["batch"], row["heads"], row["seq"], row["head_dim"], row["causal"])
    return {"ms": ms, "tflops": flops / (ms * 1e-3) / 1e12, "peak_bytes": peak_bytes}


def live_bench_rows(kernels, seqs=(1024, 2048, 4096), head_dim=64, causal=False):
    """Time the project's kernels (the gpusim_kernels module) on this machine's GPU in fp16, in the
    FlashAttention-2 benchmark shape (gpusim.fa2_shape), as rows of results/<gpu>/bench.json; a launch that
    runs out of memory gets {"error": "OOM"} instead of a time."""
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
                ms = do_bench(lambda: fn(q, k, v, causal=causal), return_mode="median")
                row |= timed_fields(row, ms, torch.cuda.max_memory_allocated())
            except torch.cuda.OutOfMemoryError:
                row["error"] = "OOM"
            rows.append(row)
    return rows


def kernel_error_rows(kernels, q, k, v, causal=False, block_q=64, block_kv=64):
    """Each Triton kernel's largest error against the float64 reference, gpusim.reference_attention on the
    same (rounded) inputs. q, k, v: torch tensors (B, H, N, d)."""
    exact = gpusim.reference_attention(*(x.double().cpu().numpy() for x in (q, k, v)), causal=causal)
    rows = []
    for algo in ("naive", "flash1", "flash2"):
        out = getattr(kernels, f"{algo}_attention")(q, k, v, causal=causal, block_q=block_q, block_kv=block_kv)
        rows.append({"kernel": algo, "max |O - reference|": f"{np.abs(out.double().cpu().numpy() - exact).max():.2e}",
                     "dtype": str(q.dtype).removeprefix("torch.")})
    return rows


def kernel_io_rows(kernels, algo, q, k, v, causal=False, block_q=64, block_kv=64):
    """Bytes a Triton kernel loads and stores, per tensor (gpusim_kernels.trace_io, under the interpreter),
    beside gpusim's count for the same configuration; `equal` when both directions agree to the byte."""
    fn = getattr(kernels, f"{algo}_attention")
    measured = kernels.trace_io(fn, q, k, v, causal=causal, block_q=block_q, block_kv=block_kv)
    b, h, n, d = q.shape
    sim = gpusim.simulate(algo, batch=b, heads=h, kv_heads=k.shape[1], seq=n, seq_kv=k.shape[2], head_dim=d,
                          causal=causal, block_q=block_q, block_kv=block_kv,
                          dtype=kernels.launch.DTYPES[q.dtype]).by_tensor
    rows = []
    for tensor in dict.fromkeys([*sim, *measured]):
        got, want = measured.get(tensor, {}), sim.get(tensor, {})
        pair = [(got.get(key, 0), want.get(key, 0)) for key in ("read_bytes", "write_bytes")]
        rows.append({"algo": algo, "tensor": tensor, "kernel read": pair[0][0], "gpusim read": pair[0][1],
                     "kernel write": pair[1][0], "gpusim write": pair[1][1],
                     "equal": all(g == w for g, w in pair)})
    return rows


def io_rows(kernels, q, k, v, causal=False, block_q=64, block_kv=64, algos=("naive", "flash1", "flash2")):
    """kernel_io_rows of every kernel in `algos`; none where trace_io cannot count (no kernels, or q on a GPU:
    it counts under Triton's interpreter)."""
    if kernels is None or q.device.type != "cpu":
        return []
    return [row for algo in algos for row in kernel_io_rows(kernels, algo, q, k, v, causal, block_q, block_kv)]


def io_summary(rows):
    """How many of io_rows' tensor counts equal gpusim's, or why there are none."""
    if not rows:
        return "trace_io needs the interpreter (no GPU) and the kernels"
    return f"{sum(r['equal'] for r in rows)} of {len(rows)} tensor counts equal gpusim's"

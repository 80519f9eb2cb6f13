"""Measure the ceilings of the GPU this runs on: HBM copy bandwidth, L2 read bandwidth, matmul rates,
launch overhead, and what the device reports. Writes JSON (the calibrated preset's source).

    python -m benchmarks.ceilings --out results/h200/ceilings.json
"""
import argparse
import datetime
import json
import subprocess

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def _l2_read(x_ptr, out_ptr, n, passes, BLOCK: tl.constexpr):
    # every program sweeps the whole (L2-resident) buffer `passes` times, starting at a different block
    pid, grid = tl.program_id(0), tl.num_programs(0)
    acc = tl.zeros([BLOCK], tl.float32)
    blocks = tl.cdiv(n, BLOCK)
    for i in range(passes * blocks // grid):
        offs = ((pid + i * grid) % blocks) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))


@triton.jit
def _empty(x_ptr):
    pass


def median_ms(fn):
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    out = {
        "gpu": props.name, "sm_count": props.multi_processor_count, "l2_bytes": props.L2_cache_size,
        "hbm_bytes": props.total_memory,
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip(),
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
        "command": "python -m benchmarks.ceilings --out " + args.out,
    }
    src = torch.randn(2**30, device="cuda", dtype=torch.float16)  # 2 GiB, far larger than L2
    dst = torch.empty_like(src)
    out["copy_bytes_per_s"] = 2 * src.numel() * 2 / (median_ms(lambda: dst.copy_(src)) * 1e-3)
    del src, dst

    n = props.L2_cache_size // 4 // 2  # half the L2, fp16
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    grid = 8 * props.multi_processor_count
    part = torch.empty(grid, device="cuda", dtype=torch.float32)
    passes = 64
    ms = median_ms(lambda: _l2_read[(grid,)](x, part, n, passes, BLOCK=2048, num_warps=8))
    out["l2_read_bytes_per_s"] = (passes * n // 2048 // grid) * grid * 2048 * 2 / (ms * 1e-3)

    m = 8192
    for dtype in (torch.float16, torch.bfloat16):
        a, b = torch.randn(m, m, device="cuda", dtype=dtype), torch.randn(m, m, device="cuda", dtype=dtype)
        out[f"matmul_{str(dtype)[6:]}_flops_per_s"] = 2 * m**3 / (median_ms(lambda: a @ b) * 1e-3)
    a = torch.randn(m, m, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(m, m, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    out["matmul_fp8_e4m3_flops_per_s"] = 2 * m**3 / (
        median_ms(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)) * 1e-3)

    y = torch.empty(1, device="cuda")
    out["launch_overhead_s"] = median_ms(lambda: _empty[(1,)](y)) * 1e-3
    for key, value in out.items():
        print(f"{key:32s} {value}")
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

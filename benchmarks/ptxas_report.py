"""Compile the teaching kernels for sm_90 on this machine (no GPU needed: Triton's compiler and the ptxas
it ships) and report what the hardware would run: registers, spills, and how wide the global loads and
stores are. Writes JSON.

    python -m benchmarks.ptxas_report --out results/sm90_ptxas.json
"""
import argparse
import datetime
import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from gpusim_kernels import flash1, flash2, naive

PTXAS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
F16, F32, I32, C = "*fp16", "*fp32", "i32", "constexpr"
TILED = dict(GROUP=C, D=C, BLOCK_D=C, Br=C, Bc=C, CAUSAL=C)
KERNELS = {  # name -> (kernel, signature, constants, num_warps, num_stages)
    "qk d=64 128x128": (naive.qk_kernel, dict(Q=F16, K=F16, S=F16, N=I32, N_KV=I32, LD=I32, scale="fp32", **TILED),
                        dict(GROUP=1, D=64, BLOCK_D=64, Br=128, Bc=128), 8, 1),
    "softmax row 4096": (naive.softmax_kernel, dict(S=F16, P=F16, N=I32, N_KV=I32, LD=I32, CAUSAL=C, PADDED=C,
                                                    ONE_PASS=C, BLOCK_N=C, Br=C, Bc=C),
                         dict(PADDED=False, ONE_PASS=True, BLOCK_N=4096, Br=128, Bc=128), 8, 1),
    "pv d=128 128x128": (naive.pv_kernel, dict(P=F16, V=F16, O=F16, N=I32, N_KV=I32, LD=I32, **TILED),
                         dict(GROUP=1, D=128, BLOCK_D=128, Br=128, Bc=128), 8, 2),
    "flash1 d=64 64x256": (flash1.flash1_kernel, dict(Q=F16, K=F16, V=F16, O=F32, l=F32, m=F32, N=I32, N_KV=I32,
                                                      scale="fp32", **TILED),
                           dict(GROUP=1, D=64, BLOCK_D=64, Br=64, Bc=256), 4, 1),
    "flash1 d=128 128x128": (flash1.flash1_kernel, dict(Q=F16, K=F16, V=F16, O=F32, l=F32, m=F32, N=I32, N_KV=I32,
                                                        scale="fp32", **TILED),
                             dict(GROUP=1, D=128, BLOCK_D=128, Br=128, Bc=128), 8, 1),
    "flash2 d=128 128x128": (flash2.flash2_kernel, dict(Q=F16, K=F16, V=F16, O=F16, LSE=F32, N=I32, N_KV=I32,
                                                        scale="fp32", **TILED),
                             dict(GROUP=1, D=128, BLOCK_D=128, Br=128, Bc=128), 8, 2),
}


def compile_sm90(fn, signature, constants, num_warps, num_stages):
    """PTX and ptxas's report for sm_90a. Integer and pointer arguments are marked divisible by 16, as
    Triton specialises them at launch for the shapes the benchmarks use."""
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t in (F16, F32, I32)}
    src = ASTSource(fn=fn, signature=signature, constexprs=constants, attrs=attrs)
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=num_warps,
                                                                              num_stages=num_stages)).asm["ptx"]
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"], capture_output=True, text=True)
    return ptx, out.stdout + out.stderr


def report(fn, signature, constants, num_warps, num_stages):
    ptx, info = compile_sm90(fn, signature, constants, num_warps, num_stages)
    number = lambda pattern: int(re.search(pattern, info).group(1))  # noqa: E731
    return {"registers": number(r"Used (\d+) registers"), "spill_store_bytes": number(r"(\d+) bytes spill stores"),
            "spill_load_bytes": number(r"(\d+) bytes spill loads"),
            "global_stores": dict(Counter(re.findall(r"st\.global[.\w]*", ptx))),
            "global_loads": dict(Counter(re.findall(r"ld\.global[.\w]*", ptx))), "num_warps": num_warps,
            "num_stages": num_stages}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for name, (fn, signature, constants, num_warps, num_stages) in KERNELS.items():
        for causal in (False, True):
            rows.append({"kernel": name, "causal": causal, **report(fn, signature, {**constants, "CAUSAL": causal},
                                                                     num_warps, num_stages)})
            r = rows[-1]
            print(f"{name:22s} causal={causal:d}: {r['registers']:3d} registers, spills {r['spill_store_bytes']:3d} B "
                  f"stored / {r['spill_load_bytes']:3d} B loaded per thread, stores {r['global_stores']}")
    environment = {"target": "sm_90a", "triton": triton.__version__, "ptxas": str(PTXAS.relative_to(
        Path(triton.__file__).parent)), "date": datetime.date.today().isoformat(),
        "command": "python -m benchmarks.ptxas_report --out " + args.out}
    Path(args.out).write_text(json.dumps({"environment": environment, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

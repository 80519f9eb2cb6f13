"""flash2's tile shape against SDPA's FlashAttention-2 backend, side by side in one run (fp16, the
FlashAttention-2 benchmark shapes). Prints TFLOP/s and the ratio to SDPA flash; writes JSON.

    python benchmarks/flash2_tiles.py --out results/h200/flash2_tiles.json
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from gpusim_kernels import flash2_attention
from gpusim_kernels.bench import environment, tflops

TILES = ((128, 64), (128, 128), (64, 64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for head_dim in (64, 128):
        for causal in (False, True):
            for seq in (4096, 16384):
                batch, heads = 16384 // seq, 2048 // head_dim
                q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.float16) for _ in range(3))
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    sdpa_ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                       return_mode="median")
                for block_q, block_kv in TILES:
                    ms = do_bench(lambda: flash2_attention(q, k, v, causal=causal, block_q=block_q, block_kv=block_kv),
                                  return_mode="median")
                    rows.append(dict(head_dim=head_dim, causal=causal, seq=seq, block_q=block_q, block_kv=block_kv,
                                     ms=ms, sdpa_flash_ms=sdpa_ms, tflops=tflops(batch, heads, seq, head_dim, causal, ms),
                                     vs_sdpa_flash=sdpa_ms / ms))
                    print(f"d={head_dim} causal={causal:d} N={seq:5d} {block_q}x{block_kv}: "
                          f"{rows[-1]['tflops']:6.1f} TFLOP/s, {rows[-1]['vs_sdpa_flash']:.2f}x sdpa_flash")
    with open(args.out, "w") as f:
        json.dump({"environment": environment("python benchmarks/flash2_tiles.py --out " + args.out), "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()

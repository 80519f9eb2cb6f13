"""The floors of the benchmark sweep on the measured H200 (results/h200/ceilings.json): matmul FLOPs over
the measured matmul rate, and the bytes each algorithm cannot avoid over the measured copy bandwidth.

    python -m benchmarks.floors        # a markdown table for docs/perf.md
"""
import json
from pathlib import Path

CEILINGS = json.loads((Path(__file__).parents[1] / "results" / "h200" / "ceilings.json").read_text())


def floors(seq, head_dim, causal, itemsize=2):
    batch, heads = max(1, 16384 // seq), 2048 // head_dim
    bh = batch * heads
    flops = 4 * bh * seq * seq * head_dim / (2 if causal else 1)
    compulsory = 4 * bh * seq * head_dim * itemsize  # read Q, K, V, write O
    kept = seq * (seq + 1) // 2 if causal else seq * seq
    nxn = 4 * bh * kept * itemsize  # naive: write S, read S, write P, read P
    return {"compute_ms": flops / CEILINGS["matmul_float16_flops_per_s"] * 1e3,
            "flash_bytes_ms": compulsory / CEILINGS["copy_bytes_per_s"] * 1e3,
            "naive_bytes_ms": (nxn + compulsory) / CEILINGS["copy_bytes_per_s"] * 1e3}


def main():
    print("| d | causal | N | batch x heads | matmul floor (ms) | flash bytes floor (ms) | naive bytes floor (ms) |")
    print("|---|---|---|---|---|---|---|")
    for head_dim in (64, 128):
        for causal in (False, True):
            for seq in (512, 2048, 8192, 32768):
                f = floors(seq, head_dim, causal)
                print(f"| {head_dim} | {'yes' if causal else 'no'} | {seq:,} | {max(1, 16384 // seq)} x "
                      f"{2048 // head_dim} | {f['compute_ms']:.3f} | {f['flash_bytes_ms']:.4f} | {f['naive_bytes_ms']:.3f} |")


if __name__ == "__main__":
    main()

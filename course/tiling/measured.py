"""Notebook 5's measurements beside gpusim: the measured speedups of results/<gpu>/bench.json against
gpusim's prediction for each shape.
"""
import gpusim

from ..measurements import _outcome, timed_by_seq


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

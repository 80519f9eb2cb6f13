"""Notebook 5's measurements beside gpusim: the measured speedups of results/<gpu>/bench.json against
gpusim's prediction for each shape.
"""
import gpusim

from ..formatting import span
from ..measurements import _outcome, timed_by_seq
from ..scorecard.verdicts import about


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


def flash1_fill(rows, gpu="H200-measured", dtype="fp16"):
    """Per measured shape of bench.json where both the project's flash1 and flash2 ran: (group, N, flash1 over flash2
    measured, the share of SM time flash1's thread blocks keep busy at that shape in gpusim)."""
    out = []
    for head_dim in (64, 128):
        for causal in (False, True):
            f1, f2 = (timed_by_seq(rows, p, dtype, head_dim, causal) for p in ("flash1", "flash2"))
            for seq in sorted(f1.keys() & f2.keys()):
                r = gpusim.simulate("flash1", seq=seq, head_dim=head_dim, batch=f1[seq]["batch"],
                                    heads=f1[seq]["heads"], causal=causal, dtype=dtype, gpu=gpu)
                group = f"d={head_dim}{' causal' if causal else ''}"
                out.append((group, seq, f1[seq]["ms"] / f2[seq]["ms"], r.kernels[0].busy_fraction))
    return out


def fill_sentence(rows, gpu="H200-measured", full=0.9):
    """The measured flash1 / flash2 ratios split by whether flash1 fills the GPU (gpusim's busy share >= full), with
    how many lie within ~2x (the scorecard's 1.6-2.5x) and the ranges per group where it fills."""
    cases = flash1_fill(rows, gpu)
    filled = [c for c in cases if c[3] >= full]
    idle = [c for c in cases if c[3] < full]
    lo, hi = about(2)
    inside = sum(lo <= c[2] <= hi for c in filled)
    groups = dict.fromkeys(c[0] for c in filled)
    per_group = "; ".join(f"{g} {span([c[2] for c in filled if c[0] == g], '{:.2f}x')}" for g in groups)
    return (f"Where flash1's thread blocks keep at least {full:.0%} of the SMs busy (gpusim, {len(filled)} of "
            f"{len(cases)} measured shapes), flash1 over flash2 is {per_group}: within ~2x ({lo:.1f}-{hi:.1f}x) in "
            f"{inside} of {len(filled)}. Where they keep {span([c[3] for c in idle], '{:.0%}')} busy "
            f"({len(idle)} shapes), it is {span([c[2] for c in idle], '{:.1f}x')}.")

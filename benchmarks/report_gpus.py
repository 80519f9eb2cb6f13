"""docs/perf.md's "Another GPU, measured the same way": an H100's microbenchmarks read by the H200's rules
(benchmarks/h200_constants.gpu_constants) beside H200-measured and the datasheet preset H100-SXM, the H100's held-out
sets scored on both presets, and seed 2095's rows as the two GPUs timed them.

    python -m benchmarks.report_gpus        # the three tables
"""
import json
import statistics
from pathlib import Path

import gpusim
from benchmarks import h200_constants
from gpusim_course.provenance import heldout

H100 = Path(__file__).resolve().parents[1] / "results" / "h100"
H200 = h200_constants.RESULTS
PRESETS = ("H100-measured", "H100-SXM")  # the H100's own constants, and its datasheet's
SAME_SEED = 2095  # a set both GPUs timed
KEYS = ("kind", "algo", "batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal", "dtype", "block_q",
        "block_kv", "page_size", "tiles_used")


def _value(value):
    if isinstance(value, tuple):
        return f"{len(value)} tiles"
    return f"{value:.4g}"


def constants_table():
    """Each GPU field the microbenchmarks set: H200-measured's, the H100's by the same rules, H100-SXM's (its
    datasheet's, the rest the H200's), and the H100's over the H200's."""
    h200, h100, sxm = gpusim.get_gpu("H200-measured"), h200_constants.gpu_constants(H100, "host"), \
        gpusim.get_gpu("H100-SXM")
    lines = ["| field | H200-measured | the H100's, measured | H100-SXM | H100 ÷ H200 |", "|---|---|---|---|---|"]
    for name, value in h100.items():
        ours = getattr(h200, name)
        if name == "mma_efficiency":
            shift = max(abs(a - b) for (_, a), (_, b) in zip(value, ours))
            lines.append(f"| {name} (each tile's share of the fp16 peak) | {len(ours)} tiles | {len(value)} tiles, "
                         f"within {shift:.2f} of the H200's | none | - |")
            continue
        lines.append(f"| {name} | {_value(ours)} | {_value(value)} | {_value(getattr(sxm, name)) if getattr(sxm, name) else '-'}"
                     f" | {value / ours:.2f} |")
    return "\n".join(lines)


def sets_table():
    """The H100's held-out sets, each scored on both presets (heldout.score)."""
    rows = [heldout.score(f"{path.name} on {preset}", heldout.ratios(path, preset))
            for path in heldout.files(H100) for preset in PRESETS]
    return "\n".join(["| " + " | ".join(rows[0]) + " |", "|---" * len(rows[0]) + "|"]
                     + ["| " + " | ".join(f"{v:,}" if isinstance(v, int) else v for v in r.values()) + " |" for r in rows])


def same_rows():
    """{kind label: [(H100 ms / H200 ms, H100-measured's price / H200-measured's)]} for seed 2095's rows that both GPUs
    timed at the same configuration (tiles included)."""
    def timed(results):
        return json.loads((results / f"heldout_{SAME_SEED}.json").read_text())["rows"]
    out = {}
    for a, b in zip(timed(H100), timed(H200)):
        if not (a.get("ms") and b.get("ms")) or any(a.get(k) != b.get(k) for k in KEYS):
            continue
        model = (heldout.simulated(a, PRESETS[0]).predicted_time_s / heldout.simulated(b).predicted_time_s)
        out.setdefault(heldout.kind(a), []).append((a["ms"] / b["ms"], model))
    return out


def _span(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def same_rows_table():
    """Seed 2095's rows by kind: the H100's time over the H200's, measured and as gpusim prices the two GPUs."""
    lines = ["| kind | rows | H100 ÷ H200, measured: median (range) | gpusim's H100-measured ÷ H200-measured |",
             "|---|---|---|---|"]
    for kind, pairs in same_rows().items():
        lines.append(f"| {kind} | {len(pairs)} | {_span([m for m, _ in pairs])} | {_span([p for _, p in pairs])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(constants_table(), sets_table(), same_rows_table(), sep="\n\n")

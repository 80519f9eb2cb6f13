"""gpusim's time model against the H200's measurements: every row of the project's kernels in the results
files (bench.json, tiles.json) re-simulated from its own configuration on the H200-measured preset, with the
ratio predicted / measured. tests/test_results.py checks the bounds docs/perf.md states.

    python benchmarks/agreement.py                   # summary per file and kernel, worst rows
"""
import json
import statistics
import sys
from pathlib import Path

import gpusim
import gpusim.algorithms

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"
PRESET = "H200-measured"
KERNELS = ("naive", "flash1", "flash2", "hopper")


def predicted_s(row):
    """gpusim's time for a results row of one of the project's kernels, from the row's own configuration."""
    algo = row.get("algo", row.get("provider"))
    blocks = {key: row[key] for key in ("block_q", "block_kv") if row.get(key) is not None}
    if algo == "hopper":  # the Hopper kernel's launch comes from its table, unless the row names its tiles
        blocks = blocks if blocks else {}
    return gpusim.simulate(algo, seq=row["seq"], head_dim=row["head_dim"], heads=row["heads"], batch=row["batch"],
                           causal=row["causal"], dtype=row["dtype"], gpu=PRESET, **blocks).predicted_time_s


def rule_launch(row):
    """Whether a tile-sweep row ran the launch the kernel's rule gives its tiles (the one gpusim prices)."""
    algo = row["algo"]
    cfg = gpusim.simulate(algo, seq=row["seq"], head_dim=row["head_dim"], heads=row["heads"], batch=row["batch"],
                          causal=row["causal"], dtype=row["dtype"], gpu=PRESET, block_q=row["block_q"],
                          block_kv=row["block_kv"]).config
    if algo == "hopper":
        own = gpusim.algorithms.hopper.launch_options(cfg)
        return all(row.get(key) == own[key] for key in ("num_warps", "num_stages", "warp_specialize"))
    return gpusim.algorithms.get(algo).launch(cfg, algo) == (row["num_warps"], row["num_stages"])


def rows(name, default_only=False):
    """(row, predicted / measured) for every timed row of the project's kernels in results/h200/NAME."""
    data = json.loads((RESULTS / name).read_text())["rows"]
    out = []
    for row in data:
        algo = row.get("algo", row.get("provider"))
        if algo not in KERNELS or "ms" not in row or row.get("error") or (default_only and not row.get("default")):
            continue
        if name == "tiles.json" and not rule_launch(row):
            continue  # launches overridden away from the kernel's rule: the model prices the rule's launch
        out.append((row, predicted_s(row) / (row["ms"] * 1e-3)))
    return out


def summary(pairs, within=0.2):
    ratios = [r for _, r in pairs]
    close = sum(abs(r - 1) <= within for r in ratios)
    return {"rows": len(ratios), f"within {within:.0%}": close / len(ratios) if ratios else None,
            "median": statistics.median(ratios) if ratios else None, "worst": max(ratios, key=lambda r: abs(r - 1),
                                                                                  default=None)}


def main():
    for name in ("bench.json", "tiles.json"):
        pairs = rows(name)
        print(name, summary(pairs))
        for algo in KERNELS:
            mine = [p for p in pairs if p[0].get("algo", p[0].get("provider")) == algo]
            if mine:
                print(f"  {algo:7s}", summary(mine))
        for row, ratio in sorted(pairs, key=lambda p: -abs(p[1] - 1))[:12]:
            print(f"    {ratio:5.2f}  {row.get('algo', row.get('provider'))} {row['dtype']} d={row['head_dim']} "
                  f"causal={row['causal']} N={row['seq']} {row.get('block_q')}x{row.get('block_kv')} "
                  f"w{row.get('num_warps')} {row['ms']:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def tile_choice(name="tiles.json"):
    """Per tile-sweep group and kernel: the tile best_blocks picks, its measured time over the fastest
    measured rule launch in the group (1.0: it picked the fastest), or None where its pick was not measured."""
    data = json.loads((RESULTS / name).read_text())["rows"]
    out = {}
    for row in data:
        if row.get("algo") not in ("flash2", "hopper") or "ms" not in row or not rule_launch(row):
            continue
        key = (row["algo"], row["head_dim"], row["causal"], row["seq"])
        out.setdefault(key, {})[(row["block_q"], row["block_kv"])] = row["ms"]
    picks = {}
    for (algo, d, causal, seq), times in out.items():
        batch, heads = gpusim.fa2_shape(seq, d)
        pick = gpusim.best_blocks(algo, seq=seq, head_dim=d, heads=heads, batch=batch, causal=causal,
                                  dtype="fp16", gpu=PRESET)
        picks[(algo, d, causal, seq)] = (pick, times[pick] / min(times.values()) if pick in times else None)
    return picks

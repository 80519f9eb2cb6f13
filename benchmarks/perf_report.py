"""docs/perf.md's generated tables, recomputed from results/h200/ and the current model: the time model against
every row of the project's kernels, the speedup chart, the tile choice, and the kernels against SDPA.

    python benchmarks/perf_report.py            # prints the tables
    python benchmarks/perf_report.py --write    # rewrites them between docs/perf.md's markers

tests/test_results.py checks docs/perf.md holds exactly what this prints, so a model change that moves a
number fails CI until the document says so.
"""
import json
import re
import sys
from pathlib import Path

import agreement
import gpusim

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "docs" / "perf.md"
SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768)


def bench_rows():
    return json.loads((agreement.RESULTS / "bench.json").read_text())["rows"]


def measured(rows, provider, head_dim, causal, seq, dtype="fp16"):
    return next((r for r in rows if r["provider"] == provider and r["head_dim"] == head_dim and r["causal"] == causal
                 and r["seq"] == seq and r["dtype"] == dtype and "ms" in r), None)


def agreement_table():
    lines = ["| file | kernel | rows | within 20% | within 40% | median predicted / measured | worst |",
             "|---|---|---|---|---|---|---|"]
    for name in ("bench.json", "tiles.json"):
        pairs = agreement.rows(name)
        groups = [("all", pairs)] + [(k, [p for p in pairs if p[0].get("algo", p[0].get("provider")) == k])
                                     for k in agreement.KERNELS]
        for kernel, mine in groups:
            if not mine:
                continue
            ratios = sorted(r for _, r in mine)
            near = lambda x: sum(abs(r - 1) <= x for r in ratios) / len(ratios)  # noqa: E731
            worst = max(ratios, key=lambda r: abs(r - 1))
            lines.append(f"| {name} | {kernel} | {len(ratios)} | {near(0.2):.0%} | {near(0.4):.0%} | "
                         f"{ratios[len(ratios) // 2]:.2f} | {worst:.2f} |")
    return "\n".join(lines)


def speedup_table():
    rows = bench_rows()
    lines = ["| d | causal | " + " | ".join(f"{n:,}" for n in SEQS) + " |", "|---|---|" + "---|" * len(SEQS)]
    for d in (64, 128):
        for causal in (False, True):
            cells = []
            for n in SEQS:
                a, b = measured(rows, "naive", d, causal, n), measured(rows, "flash2", d, causal, n)
                if not a or not b:
                    cells.append("-")
                    continue
                batch, heads = gpusim.fa2_shape(n, d)
                shape = dict(seq=n, head_dim=d, batch=batch, heads=heads, causal=causal, gpu=agreement.PRESET)
                predicted = (gpusim.simulate("naive", block_q=a["block_q"], block_kv=a["block_kv"], **shape)
                             .predicted_time_s / gpusim.simulate("flash2", block_q=b["block_q"],
                                                                 block_kv=b["block_kv"], **shape).predicted_time_s)
                cells.append(f"{a['ms'] / b['ms']:.2f} / {predicted:.2f}")
            lines.append(f"| {d} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tile_table():
    lines = ["| kernel | d | causal | N | best_blocks | its time / the fastest measured |", "|---|---|---|---|---|---|"]
    for (algo, d, causal, seq), (pick, ratio) in sorted(agreement.tile_choice().items()):
        shown = "not measured" if ratio is None else f"{ratio:.3f}"
        lines.append(f"| {algo} | {d} | {'yes' if causal else 'no'} | {seq:,} | {pick[0]} x {pick[1]} | {shown} |")
    return "\n".join(lines)


def against_sdpa_table():
    rows = bench_rows()
    lines = ["| dtype | d | causal | flash2 / SDPA flash, N >= 2K | hopper / SDPA cuDNN, N >= 4K | "
             "hopper fp8 / its fp16, N >= 4K |", "|---|---|---|---|---|---|"]
    for dtype in ("fp16", "bf16"):
        for d in (64, 128):
            for causal in (False, True):
                def span(num, den, least, num_dtype=dtype):
                    ratios = [m_den["ms"] / m_num["ms"] for n in (*SEQS, 65536, 131072) if n >= least
                              for m_num, m_den in [(measured(rows, num, d, causal, n, num_dtype),
                                                    measured(rows, den, d, causal, n, dtype))] if m_num and m_den]
                    return f"{min(ratios):.2f}-{max(ratios):.2f} ({len(ratios)})" if ratios else "-"
                fp8 = span("hopper", "hopper", 4096, "fp8") if dtype == "fp16" else "-"
                lines.append(f"| {dtype} | {d} | {'yes' if causal else 'no'} | {span('flash2', 'sdpa_flash', 2048)} | "
                             f"{span('hopper', 'sdpa_cudnn', 4096)} | {fp8} |")
    return "\n".join(lines)


def halves_table():
    """The fitted constants' halves: d = 64 rows (CONTENTION and ISSUE_HIDING were fitted on them) and d = 128
    rows (reported, not fitted), bench.json and tiles.json together."""
    lines = ["| rows | kernels | within 20% | within 40% | median |", "|---|---|---|---|---|"]
    pairs = agreement.rows("bench.json") + agreement.rows("tiles.json")
    for d, role in ((64, "d = 64 (fitted)"), (128, "d = 128 (held out)")):
        ratios = sorted(r for row, r in pairs if row["head_dim"] == d)
        near = lambda x: sum(abs(r - 1) <= x for r in ratios) / len(ratios)  # noqa: E731
        lines.append(f"| {role} | {len(ratios)} | {near(0.2):.0%} | {near(0.4):.0%} | {ratios[len(ratios) // 2]:.2f} |")
    return "\n".join(lines)


TABLES = {"halves": halves_table, "agreement": agreement_table, "speedup": speedup_table, "tiles": tile_table, "sdpa": against_sdpa_table}


def render(text):
    """docs/perf.md's text with every generated table replaced by what the current code computes."""
    for name, table in TABLES.items():
        text = re.sub(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", lambda m: m.group(1) + table() + "\n" +
                      m.group(2), text, flags=re.S)
    return text


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--write" in argv:
        PERF.write_text(render(PERF.read_text()))
    else:
        for name, table in TABLES.items():
            print(f"## {name}\n{table()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

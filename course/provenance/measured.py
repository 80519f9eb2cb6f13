"""Notebook 12's tables: every file of a results folder with the GPU, date and command of its run, the
measured footprints and tiles beside gpusim, and gpusim's error per kernel against Nsight Compute.
"""
import json
from pathlib import Path

import gpusim
from gpusim.units import fmt_bytes, fmt_time

from ..formatting import span
from ..measurements import WRITE_S_P, GiB, _outcome, command_now
from ..nsight import MIN_TIME_S, _ncu_groups
from ..practice.measured import gpusim_pick, tile_launches


def footprint_rows(rows, gpu="H200", head_dims=(64, 128), causal=False, dtype="fp16",
                   providers=WRITE_S_P, last=2):
    """Measured peak memory (bench.json) of the attentions that write S and P, at the `last` longest lengths
    they were run at, beside gpusim's peak footprint for naive attention and the GPU's capacity."""
    g = gpusim.get_gpu(gpu)
    out = []
    for d in head_dims:
        group = [r for r in rows if r["provider"] in providers and (r["head_dim"], r["causal"], r["dtype"]) ==
                 (d, causal, dtype)]
        for seq in sorted({r["seq"] for r in group})[-last:]:
            shape = next(r for r in group if r["seq"] == seq)
            sim = gpusim.simulate("naive", seq=seq, batch=shape["batch"], heads=shape["heads"], head_dim=d,
                                  causal=causal, dtype=dtype, gpu=g).hbm_peak_bytes
            for p in providers:
                got = _outcome(group, p, seq)
                peak = got["peak_bytes"] if isinstance(got, dict) else None
                out.append({"d": d, "N": seq, "batch x heads": f"{shape['batch']} x {shape['heads']}", "provider": p,
                            "measured peak": f"{peak / GiB:.1f} GiB" if peak else str(got or "not run"),
                            "gpusim (naive)": f"{sim / GiB:.1f} GiB = {sim / g.hbm_bytes:.0%} of {g.name}",
                            "measured / gpusim": f"{peak / sim:.3f}" if peak else ""})
    return out


def tile_rows(rows, gpu="H200-measured"):
    """tiles.json's flash2 launches at their rule's warps (tile_launches), row by row: the measured time and speed
    against SDPA's FlashAttention-2 beside gpusim's L2-to-SM bytes and predicted time on `gpu`; ticks mark the
    measured fastest of each group and the tile gpusim picks (best_blocks)."""
    out = []
    for (d, causal, seq), launches in tile_launches(rows, gpu).items():
        fastest = min(r["ms"] for r, _, _ in launches)
        pick = gpusim_pick(launches, gpu)
        for r, s, speed in launches:
            out.append({"d": d, "causal": causal, "N": seq, "tile": f"{r['block_q']} x {r['block_kv']}",
                        "warps": r["num_warps"], "measured": fmt_time(r["ms"] * 1e-3), "vs SDPA flash": f"{speed:.2f}x",
                        "fastest measured": "✓" if r["ms"] == fastest else "",
                        "gpusim L2→SM": fmt_bytes(s.hbm_read_bytes), "gpusim predicted": fmt_time(s.predicted_time_s),
                        "gpusim's pick": "✓" if (r["block_q"], r["block_kv"]) == pick else ""})
    return out


def provenance_rows(folder):
    """One row per file of a results folder (subfolders too): for a JSON file the GPU, date and command its
    environment records and how many rows it holds; for any other file the JSON of the same run it belongs
    to (bench_speedup.png and bench.json; ncu_raw.csv and ncu.json), or the folder's README.md."""
    folder = Path(folder)
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            env = data.get("environment", data) if isinstance(data, dict) else {}
            rows = data.get("rows") if isinstance(data, dict) else data
            out.append({"file": name, "GPU": env.get("gpu", ""), "date": env.get("date", ""),
                        "command": command_now(env.get("command", "")),
                        "rows": len(rows) if isinstance(rows, list) else ""})
        else:
            sibling = next((j for j in sorted(path.parent.glob("*.json")) if path.stem.startswith(j.stem)), None)
            where = (f"from the run of {sibling.relative_to(folder)}" if sibling else "the folder's index"
                     if path.name == "README.md" else "described in README.md")
            out.append({"file": name, "GPU": "", "date": "", "command": where, "rows": ""})
    return out


def ncu_rows(folder):
    """A results folder's forward rows under Nsight Compute, each launch once: ncu.json's, with those at d = 128
    taken from ncu_d128.json where that run exists (the H100's, whose first profile of every counter stopped at its
    time limit soon after d = 64)."""
    folder = Path(folder)
    rows = json.loads((folder / "ncu.json").read_text())["rows"]
    if not (folder / "ncu_d128.json").exists():
        return rows
    return [r for r in rows if r["head_dim"] != 128] + json.loads((folder / "ncu_d128.json").read_text())["rows"]


def ncu_error_rows(rows, quantity, min_time_s=MIN_TIME_S):
    """Per kernel, head dimension and mask: how far gpusim is from Nsight Compute for one quantity of
    ncu.json, (gpusim - measured) / measured, over all lengths and at the longest; byte counts also say in
    how many launches they were equal to the byte. Times of launches under min_time_s are left out."""
    out = []
    for (kernel, d, causal), rs in _ncu_groups(rows, quantity, min_time_s).items():
        rs = sorted(rs, key=lambda r: r["seq"])
        row = {"kernel": kernel, "d": d, "causal": causal, "launches": len(rs),
               "N": f"{rs[0]['seq']:,} to {rs[-1]['seq']:,}"}
        if quantity != "time_s":
            row["equal to the byte"] = sum(r["simulated"] == r["measured"] for r in rs)
        row |= {"(gpusim - measured) / measured": span([r["rel_err"] for r in rs], "{:+.1%}"),
                "at the longest N": f"{rs[-1]['rel_err']:+.1%}"}
        out.append(row)
    return out

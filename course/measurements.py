"""Reading the project's GPU measurements (results/<gpu>/*.json): one reader for every file, one for a file
that may not be there yet, the line that names a run's GPU, versions and date, and bench.json's times per
sequence length. Each chapter's measured.py sets them beside gpusim; every measured number the course quotes
is computed from a results file that names the GPU, the versions, the date and the command of its run.
"""
import json
import re
from pathlib import Path

GiB = 2**30


WRITE_S_P = ("naive", "torch_naive", "sdpa_math")  # standard attention: the providers whose kernels write S and P


def fastest(by_provider):
    """{length: the fastest row} over {provider: {length: row}}."""
    best = {}
    for timed in by_provider.values():
        for n, row in timed.items():
            if n not in best or row["ms"] < best[n]["ms"]:
                best[n] = row
    return best


def read_results(path):
    """A results JSON file the course needs; says where it should be when it is missing."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is not there: run the notebook from notebooks/ in a checkout of the "
                                f"repository, whose results/ holds the project's measurements")
    return json.loads(path.read_text())


def read_optional(path):
    """A results JSON file, or None when it has not been written yet (the course then shows gpusim alone)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def environment_line(data):
    """Where a results file's numbers come from (GPU, versions, date, command), in one line."""
    env = data.get("environment", data)
    keys = ("driver", "cuda", "torch", "triton", "ncu", "date")
    line = f"Measured on {env.get('gpu', env.get('device', '?'))}: " + ", ".join(
        f"{k} {env[k]}" for k in keys if env.get(k))
    line += f"; command: {command_now(env.get('command', '?'))}"
    return line + (f"; note: {env['truncated']}" if env.get("truncated") else "")


def command_now(command):
    """A results file's command as it runs today. The benchmark scripts ran as gpusim_kernels.bench (bench_bwd, ncu),
    kernels.bench or `python benchmarks/X.py` until they became the package benchmarks/ (the redesign, issue 23),
    run as `python -m benchmarks.X`; flash2_tiles.py was replaced by benchmarks/tiles.py (tiles.json)."""
    now = re.sub(r"\bpython -m (?:gpusim_kernels|kernels)\.(bench\w*|ncu)\b", r"python -m benchmarks.\1", command)
    now = re.sub(r"\bpython benchmarks/(?!flash2_tiles\.py)(\w+)\.py\b", r"python -m benchmarks.\1", now)
    if "benchmarks/flash2_tiles.py" in now:
        return f"{now} (a script since replaced by python -m benchmarks.tiles, which writes tiles.json)"
    return now if now == command else f"{now} (as it runs today; the run named the scripts where they were then)"


def timed_by_seq(rows, provider, dtype="fp16", head_dim=64, causal=False):
    """{seq: row} of one provider's benchmark rows (bench.json) that ran: a time, not an error."""
    return {r["seq"]: r for r in rows if (r["provider"], r["dtype"], r["head_dim"], r["causal"]) ==
            (provider, dtype, head_dim, causal) and r.get("ms") is not None}


def _outcome(rows, provider, seq, **group):
    """A provider's benchmark row at one length: the row, its error ('out of memory' for OOM) or None if not run."""
    row = next((r for r in rows if r["provider"] == provider and r["seq"] == seq and
                all(r[k] == v for k, v in group.items())), None)
    if row is None or "error" not in row:
        return row
    return "out of memory" if row["error"] == "OOM" else row["error"]

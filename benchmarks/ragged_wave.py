"""Ragged decode waves: one long request beside shorter ones, the split kernel over pages of 16, timed as the held-out
sets time a decode batch (benchmarks/heldout.py's measure_row), on a grid designed to part the two things such a
launch waits for: its longest program's steps and the whole batch's bytes.

    python -m benchmarks.ragged_wave --out $OUT --max-minutes 4               # GPU: $OUT/ragged_wave.json
    TRITON_INTERPRET=1 python -m benchmarks.ragged_wave --out /tmp --smoke    # CPU: the code paths, tiny

Why: gpusim prices a ragged one-wave decode launch by its longest program plus cost.waves' one-wave term, which the
H200's held-out batches agree with and the H100's do not (docs/perf.md, "What a decode rule for both GPUs must
hold"). A rule that takes the longest program's steps and the batch's bytes apart needs launches where each dominates
in turn, measured outside the held-out sets: the held-out sets' two decode shapes (Llama-3-8B's 32 query heads over 8
at d = 128, and 64 over 8 at d = 64), batch 2 to 16, the longest request 16K to 128K tokens, the others a quarter or a
sixteenth of it.

Writes ragged_wave.json: {environment, rows: [{kind, algo, batch, heads, kv_heads, seq, seq_kv (a list), head_dim,
causal, dtype, block_q, block_kv, page_size, ms, timing, rel_err, num_splits}]}, rows as the held-out files hold them
(gpusim_course.provenance.heldout.simulated prices one).
"""
import itertools
import json
import sys
import time
from pathlib import Path

from benchmarks import bench_decode, heldout

SHAPES = ((32, 8, 128), (64, 8, 64))  # (heads, kv_heads, head_dim): the held-out sets' decode shapes
BATCHES = (2, 4, 8, 16)
LONGEST = (16384, 65536, 131072)
SHORTER = (4, 16)  # the other requests hold the longest's length over this
SMOKE = dict(shapes=((4, 1, 64),), batches=(2,), longest=(70,), shorter=(2,))


def rows(shapes=SHAPES, batches=BATCHES, longest=LONGEST, shorter=SHORTER):
    """The grid's decode rows, as benchmarks/heldout.py draws a decode row (its block_kv and splits the plan's)."""
    return [dict(kind="decode", algo="split_kv", batch=batch, heads=heads, kv_heads=kv_heads, seq=1,
                 seq_kv=[length] + [length // ratio] * (batch - 1), head_dim=d, causal=False, dtype="fp16",
                 block_q=None, block_kv=None, page_size=16)
            for (heads, kv_heads, d), batch, length, ratio in itertools.product(shapes, batches, longest, shorter)]


def run(out_dir, max_minutes, smoke=False):
    """Each row measured once (heldout.measure_row) into out_dir/ragged_wave.json, rewritten after each row."""
    import torch
    command = "python -m benchmarks.ragged_wave " + " ".join(sys.argv[1:])
    if smoke:
        env = {"gpu": None, "command": command, "smoke": True}
    else:
        from benchmarks.run_env import environment
        env = environment(command)
    result, path = {"environment": env, "rows": []}, Path(out_dir) / "ragged_wave.json"
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + max_minutes * 60
    todo = rows(**SMOKE) if smoke else rows()
    for i, row in enumerate(todo):
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes {max_minutes} after {i} of {len(todo)}"
            break
        result["rows"].append(row | heldout.measure_row(row, "cpu" if smoke else "cuda"))
        if not smoke:
            torch.cuda.empty_cache()
        print(result["rows"][-1], flush=True)
        path.write_text(json.dumps(result, indent=1))
    path.write_text(json.dumps(result, indent=1))
    return result


def main(argv=None):
    args = bench_decode.sweep_args(__doc__, argv)  # --out (a folder), --max-minutes, --smoke (one tiny row, on CPU)
    run(args.out, args.max_minutes, args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Context parallelism on two GPUs (issue 25): the link, the project's ring, zigzag, Ulysses and all-gather
attention, PyTorch's context_parallel and one GPU's attention, into one JSON with the model beside it.

    torchrun --nproc-per-node 2 -m benchmarks.cp --out results/h200x2            # link, project, torch_cp
    torchrun --nproc-per-node 2 -m benchmarks.cp --part check --out results/h200x2   # outputs and bytes checked
    python -m benchmarks.cp --part single --out results/h200x2                    # one GPU: flash2 and SDPA
    python -m benchmarks.cp --part merge --out results/h200x2                     # -> cp.json, with the model
    bash benchmarks/run_cp.sh                                                      # all of it, <= 9 minutes

The plan, the rows and the merge are benchmarks/cp_plan.py's (no torch); the measurements benchmarks/cp_run.py's.
"""
import argparse
import datetime
import json
import sys
from pathlib import Path

from benchmarks.cp_plan import PARTS, merge, planned  # sets MULTICAST_OFF in the environment first


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the folder for cp_<part>.json and cp.json")
    ap.add_argument("--part", default="link,project,torch_cp", help=f"comma-separated: {', '.join(PARTS)}, merge")
    ap.add_argument("--max-seconds", type=float, default=240, help="per part: later shapes are skipped after it")
    ap.add_argument("--dry-run", action="store_true", help="write the planned rows (no GPU, no process group)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU over gloo (TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.part.split(",")
    if args.dry_run:
        plan = {"environment": {"dry_run": True, "date": datetime.date.today().isoformat()},
                "rows": planned(parts)}
        (out / "cp_plan.json").write_text(json.dumps(plan, indent=1))
        return plan
    command = "torchrun -m benchmarks.cp " + " ".join(sys.argv[1:] if argv is None else argv)
    measure = [p for p in parts if p != "merge"]
    if measure:
        from benchmarks import cp_run  # torch, CUDA and the kernels: only for a measurement
        if cp_run.run_parts(measure, out, args.max_seconds, command, args.smoke) != 0:
            return None  # rank 0 merges
    return merge(out)

if __name__ == "__main__":
    main()

"""Which backend PyTorch's scaled_dot_product_attention picks on this GPU, and why: for each input of
gpusim_course.practice.sdpa.CASES (dtype, head_dim, mask), the dispatcher's pick, whether each backend runs when
forced alone, and PyTorch's own reasons when it refuses. Seconds on a GPU; --device cpu smoke-tests it.

    PYTHONPATH=/path/to/a/gpusim_course python -m benchmarks.sdpa_backends --out results/h200/sdpa_backends.json
"""
import argparse
import datetime
import json
import sys

import torch

from gpusim_course.practice import sdpa


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    environment = {"gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
                   "date": datetime.date.today().isoformat(),
                   "command": "python -m benchmarks.sdpa_backends " + " ".join(argv or sys.argv[1:])}
    rows = sdpa.probe(args.device)
    with open(args.out, "w") as f:
        json.dump({"environment": environment, "rows": rows}, f, indent=1)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()

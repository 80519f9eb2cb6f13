"""Is the naive softmax issue-bound at N >= 16K, as gpusim's fitted ISSUE_HIDING["softmax"] (0.14,
gpusim/passes/naive.py) says? Nsight Compute's scheduler statistics of the softmax kernel alone, against
the issue rate the model gives it.

    ncu --clock-control none --cache-control all --print-units base -k regex:softmax --section SchedulerStats \
        --section WarpStateStats --section Occupancy --csv --page details --log-file $OUT/ncu_softmax.csv \
        python -m benchmarks.softmax_issue workload             # on the GPU
    python -m benchmarks.softmax_issue compare results/h200/ncu_softmax.csv        # on the CPU

The workload runs naive attention once per configuration (fp16, d = 64, 8 heads, one request; causal and
not; N = 4K to 32K): one softmax launch each, rows of N elements, the one-pass row held in registers. The
comparison prints, per launch, the warps one scheduler issued per cycle (Nsight) beside the model's rate,
min(1, resident warps per scheduler x 0.14), and the time against the model's.
"""
import csv
import sys

SEQS = (4096, 8192, 16384, 32768)
SHAPE = dict(batch=1, heads=8, head_dim=64, dtype="fp16")
ISSUED = "Issued Warp Per Scheduler"


def workload():
    import torch

    from gpusim_kernels import naive_attention
    for causal in (False, True):
        for seq in SEQS:
            q, k, v = (torch.randn(1, SHAPE["heads"], seq, SHAPE["head_dim"], device="cuda", dtype=torch.float16)
                       for _ in range(3))
            naive_attention(q, k, v, causal=causal)
            torch.cuda.synchronize()
            del q, k, v
            torch.cuda.empty_cache()


def launches(path):
    """[{metric name: value}] per profiled launch, in launch order (ncu --csv --page details)."""
    by_id = {}
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # skip ncu's own log lines
    for row in csv.DictReader(lines):
        by_id.setdefault(int(row["ID"]), {})[row["Metric Name"]] = row["Metric Value"].replace(",", "")
    return [by_id[i] for i in sorted(by_id)]


def compare(path):
    """(causal, seq, measured issue rate, model's rate, measured ms, predicted ms) per launch."""
    import gpusim
    from gpusim import cost
    from gpusim.passes.naive import NAIVE as naive
    from gpusim.occupancy import resources
    out = []
    configs = [(causal, seq) for causal in (False, True) for seq in SEQS]
    for (causal, seq), m in zip(configs, launches(path)):
        result = gpusim.simulate("naive", seq=seq, causal=causal, gpu="H200-measured", **SHAPE)
        k = next(k for k in result.kernels if k.name == "softmax")
        warps = resources(result.config, "softmax").num_warps * min(k.blocks_per_sm, -(-k.programs // 132))
        model = min(1.0, warps / cost.ISSUE_PER_CLOCK * naive.ISSUE_HIDING["softmax"])
        out.append((causal, seq, float(m[ISSUED]), model, float(m["Duration"]) / 1e6 if "Duration" in m else None,
                    k.predicted_time_s * 1e3))
    return out


def main(argv):
    if argv[:1] == ["workload"]:
        return workload()
    if argv[:1] != ["compare"] or len(argv) != 2:  # --help, or nothing: the docstring says how
        print(__doc__)
        return 0 if argv[:1] in (["--help"], ["-h"]) else 2
    print("causal      N  issued/scheduler measured  model   ms measured  predicted")
    for causal, seq, measured, model, ms, predicted in compare(argv[1]):
        print(f"{causal!s:6s} {seq:6d}  {measured:25.2f}  {model:5.2f}  {ms if ms else float('nan'):11.3f}  "
              f"{predicted:9.3f}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

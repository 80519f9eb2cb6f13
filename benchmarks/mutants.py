"""Deliberate bugs, and the test that catches each: docs/testing.md's table, checked.

    python benchmarks/mutants.py          # copies gpusim/ and tests/ aside, plants each bug, runs its test

Each bug is one text replacement in one file; the named test must fail with it and pass without it.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (bug, file, text, replacement, test that must catch it)
MUTANTS = [
    ("drop the LSE writes", "gpusim/passes/flash2.py",
     '(kernel, "LSE"): (0, cfg.seq * STATS_BYTES),', '(kernel, "LSE"): (0, 0),',
     "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    ("skip one causal tile too many (round the diagonal's last block down)", "gpusim/tiling.py",
     "c = br + self.offset + bc - 1", "c = br + self.offset - 1",
     "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    ("read K/V once per GQA group in flash2, whose programs re-read them per query head",
     "gpusim/passes/flash2.py", "(kernel, \"K\"): (t.keys_read * d * e, 0),",
     "(kernel, \"K\"): (t.keys_read * d * e // cfg.group, 0),",
     "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    ("count flash1's O in the dtype instead of its fp32 accumulator", "gpusim/passes/flash1.py",
     'TENSOR_BYTES = {"O": STATS_BYTES}', "TENSOR_BYTES = {}",
     "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    ("make the L2 model ignore its capacity", "gpusim/l2.py",
     "fits = math.ceil(heads * cfg.kv_heads / cfg.heads) * len(reread) * kv_head <= l2", "fits = True",
     "tests/test_l2.py::test_one_heads_kv_larger_than_l2_is_streamed_once_per_wave"),
    ("allocate registers per SM, not per sub-partition", "gpusim/occupancy.py",
     "warps_by_registers = (gpu.registers_per_sm // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS",
     "warps_by_registers = gpu.registers_per_sm // per_warp",
     "tests/test_occupancy.py::test_the_best_practices_guide_example"),
    ("let one block hide its own loads (no latency on the chain)", "gpusim/cost.py",
     "if step.prefetched else step.serial_s + loads", "if step.prefetched else step.serial_s",
     "tests/test_cost.py::test_a_latency_bound_kernel_gains_from_a_second_resident_block"),
]


def caught(file, text, replacement, test):
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("gpusim", "tests", "results", "benchmarks", "pyproject.toml"):
            source = ROOT / part
            (shutil.copytree if source.is_dir() else shutil.copy)(source, Path(tmp) / part)
        path = Path(tmp) / file
        original = path.read_text()
        if text not in original:
            raise ValueError(f"{file}: the text to replace is gone: {text!r}")
        path.write_text(original.replace(text, replacement))
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test], cwd=tmp,
                             capture_output=True, text=True, env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"})
        return run.returncode != 0


def main():
    missed = 0
    for bug, file, text, replacement, test in MUTANTS:
        ok = caught(file, text, replacement, test)
        missed += not ok
        print(f"{'caught' if ok else 'MISSED'}: {bug} ({file}) by {test}")
    return missed


if __name__ == "__main__":
    sys.exit(main())

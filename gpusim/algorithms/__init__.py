"""One module per algorithm, each the one home of its rules: its kernels and their grids, what each
thread block stages in SRAM, the bytes each kernel moves (closed form), its FLOPs, its tile walk on real
arrays (execute mode), how it launches, and which L2 reuse pattern its re-reads follow.

Every module has: KERNELS (launch order), TENSOR_BYTES (element widths that differ from the dtype's),
default_blocks(gpu, head_dim, dtype), sram_bytes(cfg, kernel, rows, keys), programs(cfg, kernel),
count(cfg), flops(cfg), execute(mem, cfg), launch(cfg, kernel) and L2_REUSE.

Beside the four forward passes (ALGOS), the time model prices decoding (split_kv: Flash-Decoding over a
KV cache, configured by gpusim/decode.py's DecodeLaunch) and the backward passes of naive, flash1 and
flash2 (named "<algo>_backward", configured by gpusim/backward.py's Backward, seen through
backward_common.BackwardPass); those modules have what gpusim/cost.py, occupancy.py and l2.py read.
"""
from . import flash1, flash1_backward, flash2, flash2_backward, hopper, naive, naive_backward, split_kv

ALGORITHMS = {"naive": naive, "flash1": flash1, "flash2": flash2, "hopper": hopper}
ALGOS = tuple(ALGORITHMS)  # the forward (prefill) passes
DECODE = ("split_kv",)
BACKWARD = {"naive": naive_backward, "flash1": flash1_backward, "flash2": flash2_backward}
MODULES = ALGORITHMS | {"split_kv": split_kv} | {f"{algo}_backward": m for algo, m in BACKWARD.items()}


def get(algo):
    """The module of an algorithm (or of a backward pass), by name (case-insensitive); an unknown name raises."""
    module = MODULES.get(str(algo).lower())
    if module is None:
        raise ValueError(f"algo={algo!r} is not one of {', '.join(ALGOS + DECODE)}")
    return module

"""One module per algorithm, each the one home of its rules: its kernels and their grids, what each
thread block stages in SRAM, the bytes each kernel moves (closed form), its FLOPs, its tile walk on real
arrays (execute mode), how it launches, and which L2 reuse pattern its re-reads follow.

Every module has: KERNELS (launch order), TENSOR_BYTES (element widths that differ from the dtype's),
default_blocks(gpu, head_dim, dtype), sram_bytes(cfg, kernel, rows, keys), programs(cfg, kernel),
count(cfg), flops(cfg), execute(mem, cfg), launch(cfg, kernel) and L2_REUSE.
"""
from . import flash1, flash2, hopper, naive

ALGORITHMS = {"naive": naive, "flash1": flash1, "flash2": flash2, "hopper": hopper}
ALGOS = tuple(ALGORITHMS)


def get(algo):
    """The module of an algorithm, by name (case-insensitive); an unknown name raises."""
    module = ALGORITHMS.get(str(algo).lower())
    if module is None:
        raise ValueError(f"algo={algo!r} is not one of {', '.join(ALGOS)}")
    return module

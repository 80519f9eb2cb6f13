"""gpusim: a counted model of one GPU's memory hierarchy running naive attention and FlashAttention.

    >>> import gpusim
    >>> r = gpusim.simulate("flash2", seq=4096, head_dim=64, heads=16, gpu="H100-SXM")
    >>> r.hbm_read_bytes, r.predicted_time_s
    >>> gpusim.Tiles(128, 64, num_warps=8).blocks  # a launch's knobs, shared with gpusim_kernels (tiles=)
    (128, 64)

It imports NumPy only. gpusim_kernels (Triton) moves the bytes it counts; gpusim_course (the course's plots,
tables and widgets) builds on both, never the reverse.
"""
from .passes import ALGOS
from .config import paper_blocks
from .execute import reference_attention
from .hardware import DTYPE_BYTES, GPU, PRESETS, get_gpu
from .memory import Step
from .run import best_blocks, decode_step, forward, train
from .shape import Tiles
from .simulate import Result, simulate
from .softmax import softmax
from .sweep import fa2_shape, nominal_flops, speedups, sweep
from .theorems import theorem2

__all__ = ["ALGOS", "DTYPE_BYTES", "GPU", "PRESETS", "Result", "Step", "Tiles", "best_blocks", "decode_step",
           "fa2_shape", "forward", "get_gpu", "nominal_flops", "paper_blocks", "reference_attention", "simulate",
           "softmax", "speedups", "sweep", "theorem2", "train"]

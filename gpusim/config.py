"""One attention launch as the model sees it (Config), validated once: every error is one line naming
the value and the limit."""
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import algorithms
from .hardware import GPU, STATS_BYTES, check_dtype, get_gpu
from .tiling import Tiling

MAX_SEQ = 1 << 40  # the longest sequence counted: closed forms are exact integers at any N, but a limit says so
MIN_BLOCK = 16  # the smallest tile a tensor-core matmul (and Triton's tl.dot) takes
ALIGNS = ("top_left", "bottom_right")


@dataclass(frozen=True)
class Shape:
    """What every counted pass of attention is: the forward's Config, the backward's
    gpusim.backward.Backward."""
    algo: str
    batch: int
    heads: int
    kv_heads: int
    seq: int  # query length N
    seq_kv: int
    head_dim: int  # d
    block_q: int  # Br
    block_kv: int  # Bc
    causal: bool
    dtype: str
    gpu: GPU

    @property
    def itemsize(self):
        return check_dtype(self.dtype)

    @property
    def bh(self):  # independent (batch, head) problems
        return self.batch * self.heads

    @property
    def group(self):  # query heads per K/V head (grouped-query attention)
        return self.heads // self.kv_heads


@dataclass(frozen=True)
class Config(Shape):
    causal_align: str = "top_left"  # top_left: row r sees keys 0..r; bottom_right: 0..r + seq_kv - seq

    @cached_property
    def tiling(self):
        offset = self.seq_kv - self.seq if self.causal_align == "bottom_right" else 0
        return Tiling(self.seq, self.seq_kv, self.block_q, self.block_kv, self.causal, offset)

    def kv_head(self, h):
        """Grouped-query attention: q heads h share K/V head h // (heads / kv_heads)."""
        return h // self.group

    def tensor_bytes(self, tensor):
        """Bytes per element of each tensor as stored in HBM: statistics (l, m, LSE) in fp32; fp8 kernels
        write O in fp16, as FlashAttention-3 does; an algorithm may keep O in fp32 (flash1)."""
        if tensor in ("l", "m", "LSE"):
            return STATS_BYTES
        own = algorithms.get(self.algo).TENSOR_BYTES.get(tensor)  # the algorithm's own rule, if it has one
        if own is not None:
            return own
        if tensor == "O" and self.dtype == "fp8":
            return check_dtype("fp16")
        return self.itemsize

    @property
    def softmax_fits(self):
        """Naive attention's softmax reads a whole row of S once, or streams it in passes (naive.softmax_fits)."""
        return algorithms.naive.softmax_fits(self)

    def sram_bytes(self, kernel, rows=None, keys=None):
        """Shared memory one thread block of `kernel` stages for a tile of `rows` queries and `keys` keys."""
        return algorithms.get(self.algo).sram_bytes(self, kernel, self.block_q if rows is None else rows,
                                         self.block_kv if keys is None else keys)

    @property
    def kernels(self):
        return algorithms.get(self.algo).KERNELS

    @property
    def sram_bytes_per_block(self):
        return max(self.sram_bytes(k) for k in self.kernels)


def positive_int(name, value, limit=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    if limit is not None and value > limit:
        raise ValueError(f"{name}={value:,} is more than the {limit:,} ({limit.bit_length() - 1} bits) gpusim "
                         f"counts")
    return int(value)


def make_config(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, block_q=None,
                block_kv=None, causal=False, dtype="fp16", gpu="A100-40GB", causal_align="top_left"):
    """Validate everything once; every error names the value and the limit. block_q, block_kv None: the
    algorithm's default for the GPU."""
    module = algorithms.get(algo)
    gpu = get_gpu(gpu)
    gpu.matmul_flops_per_s(dtype)  # raises for a dtype the GPU's tensor cores lack
    seq, seq_kv = positive_int("seq", seq, MAX_SEQ), positive_int("seq_kv", seq if seq_kv is None else seq_kv, MAX_SEQ)
    head_dim, heads, batch = positive_int("head_dim", head_dim), positive_int("heads", heads), positive_int("batch", batch)
    kv_heads = heads if kv_heads is None else positive_int("kv_heads", kv_heads)
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal={causal!r} must be True or False")
    if causal_align not in ALIGNS:
        raise ValueError(f"causal_align={causal_align!r} is not one of {', '.join(ALIGNS)}")
    if causal and causal_align == "bottom_right" and seq > seq_kv:
        raise ValueError(f"causal_align='bottom_right' with seq={seq} > seq_kv={seq_kv} leaves the first "
                         f"{seq - seq_kv} query rows without keys")
    if block_q is None or block_kv is None:
        br, bc = module.default_blocks(gpu, head_dim, dtype)
        block_q, block_kv = br if block_q is None else block_q, bc if block_kv is None else block_kv
    block_q, block_kv = positive_int("block_q", block_q), positive_int("block_kv", block_kv)
    cfg = Config(algo, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv, bool(causal), dtype, gpu,
                 causal_align)
    for kernel in module.KERNELS:
        need = cfg.sram_bytes(kernel)
        if need > gpu.sram_bytes_per_block:
            raise ValueError(
                f"block_q={block_q}, block_kv={block_kv}, head_dim={head_dim} ({dtype}) need {need:,} B of "
                f"SRAM in the {kernel} kernel; {gpu.name} has {gpu.sram_bytes_per_block:,} B per thread block")
    return cfg


def default_blocks(algo, gpu, head_dim, dtype="fp16"):
    """(block_q, block_kv): the algorithm's paper rule for the GPU's shared memory, as simulate() picks them."""
    return algorithms.get(algo).default_blocks(get_gpu(gpu), head_dim, dtype)

"""The tile schedule shared by count mode and execute mode: which tiles exist, which are skipped, what
each kernel holds in SRAM.

Names follow the FlashAttention papers: Br == block_q rows of Q per tile, Bc == block_kv rows of K/V,
Tr = ceil(N / Br) query blocks, Tc = ceil(N_kv / Bc) key/value blocks.

Causal masking is PyTorch's `is_causal=True`: query row r sees keys 0..r (top-left aligned, also when
the query and key lengths differ), so no row is ever fully masked. A tile whose keys all lie right of
its last row is skipped: never loaded, never computed, never counted.
"""
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .hardware import DTYPE_BYTES, GPU, STATS_BYTES, check_dtype, get_gpu

ALGOS = ("naive", "flash1", "flash2", "hopper")
KERNELS = {"naive": ("qk", "softmax", "pv"), "flash1": ("flash1",), "flash2": ("flash2",), "hopper": ("hopper",)}
HOPPER_STAGES = 2  # K/V buffers the Hopper kernel keeps in flight
MIN_BLOCK = 16  # the smallest tile a tensor-core matmul (and Triton's tl.dot) takes


@dataclass(frozen=True)
class Tiling:
    seq_q: int
    seq_kv: int
    block_q: int
    block_kv: int
    causal: bool

    @property
    def n_q_blocks(self):  # Tr
        return -(-self.seq_q // self.block_q)

    @property
    def n_kv_blocks(self):  # Tc
        return -(-self.seq_kv // self.block_kv)

    def q_rows(self, i):
        return i * self.block_q, min((i + 1) * self.block_q, self.seq_q)

    def kv_rows(self, j):
        return j * self.block_kv, min((j + 1) * self.block_kv, self.seq_kv)

    @cached_property
    def rows_per_q_block(self):  # n_i, shape (Tr,)
        starts = np.arange(self.n_q_blocks, dtype=np.int64) * self.block_q
        return np.minimum(starts + self.block_q, self.seq_q) - starts

    @cached_property
    def kv_blocks_per_q_block(self):  # how many K/V blocks Q block i visits: blocks 0 .. J_i
        if not self.causal:
            return np.full(self.n_q_blocks, self.n_kv_blocks, dtype=np.int64)
        last_row = np.arange(self.n_q_blocks, dtype=np.int64) * self.block_q + self.rows_per_q_block - 1
        return np.minimum(last_row // self.block_kv + 1, self.n_kv_blocks)

    @cached_property
    def keys_per_q_block(self):  # K/V rows loaded for Q block i (its visited blocks, clipped at N_kv)
        return np.minimum(self.kv_blocks_per_q_block * self.block_kv, self.seq_kv)

    def kv_blocks(self, i):
        return range(int(self.kv_blocks_per_q_block[i]))

    def q_blocks(self, j):
        """The Q blocks that visit K/V block j (FlashAttention-1's inner loop)."""
        return [int(i) for i in np.flatnonzero(self.kv_blocks_per_q_block > j)]

    @property
    def tiles(self):  # (i, j) tiles computed
        return int(self.kv_blocks_per_q_block.sum())

    @property
    def tile_elements(self):  # S elements computed, whole tiles (masked elements of a partial tile included)
        return int((self.rows_per_q_block * self.keys_per_q_block).sum())

    @property
    def kept_elements(self):
        """S elements the causal mask keeps: sum over rows r of min(r + 1, N_kv)."""
        n, nk = self.seq_q, self.seq_kv
        if not self.causal:
            return n * nk
        ramp = min(n, nk)  # rows 0 .. ramp-1 see r + 1 keys, the rest see all N_kv
        return ramp * (ramp + 1) // 2 + (n - ramp) * nk

    def keep(self, rows, cols):
        """Mask of S[rows, cols] that survives causal masking, or None when nothing is masked."""
        if not self.causal or cols.stop - 1 <= rows.start:
            return None
        return np.arange(cols.start, cols.stop)[None, :] <= np.arange(rows.start, rows.stop)[:, None]


@dataclass(frozen=True)
class Config:
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

    @cached_property
    def tiling(self):
        return Tiling(self.seq, self.seq_kv, self.block_q, self.block_kv, self.causal)

    @property
    def itemsize(self):
        return check_dtype(self.dtype)

    @property
    def bh(self):  # independent (batch, head) problems
        return self.batch * self.heads

    def kv_head(self, h):
        """Grouped-query attention: q heads h share K/V head h // (heads / kv_heads)."""
        return h // (self.heads // self.kv_heads)

    def tensor_bytes(self, tensor):
        """Bytes per element of each tensor as stored in HBM."""
        if tensor in ("l", "m", "LSE"):
            return STATS_BYTES
        if tensor == "O" and self.algo == "flash1":
            return STATS_BYTES  # flash1's O is read-modify-written Tc times: an fp32 accumulator in HBM
        if tensor == "O" and self.dtype == "fp8":
            return DTYPE_BYTES["fp16"]  # fp8 kernels write their output in fp16, as FlashAttention-3 does
        return self.itemsize

    @property
    def softmax_fits(self):
        """Naive attention's softmax stages a whole row of S in SRAM, or streams it in passes."""
        return self.seq_kv * self.itemsize <= self.gpu.sram_bytes_per_block

    def sram_bytes(self, kernel, rows=None, keys=None):
        """Shared memory one thread block stages for a tile of `rows` queries and `keys` keys: the tiles it
        loads from HBM. The fp32 scores S_ij and accumulators live in registers, so they are not counted
        (the paper's Bc = ceil(M / 4d) is this budget for flash1: K_j, V_j, Q_i and O_i, 4 tiles of d)."""
        rows = self.block_q if rows is None else rows
        keys = self.block_kv if keys is None else keys
        d, e, f = self.head_dim, self.itemsize, STATS_BYTES
        if kernel == "qk":  # Q_i, K_j
            return rows * d * e + keys * d * e
        if kernel == "softmax":  # one row of S, or one block_kv chunk of it per pass
            return (self.seq_kv if self.softmax_fits else self.block_kv) * e
        if kernel == "pv":  # P_ij, V_j
            return rows * keys * e + keys * d * e
        if kernel == "flash1":  # Q_i, K_j, V_j, and O_i, l_i, m_i read back from HBM
            return rows * d * e + 2 * keys * d * e + rows * d * f + 2 * rows * f
        if kernel == "hopper":  # Q_i, and K_j, V_j in HOPPER_STAGES buffers (TMA loads ahead of use)
            return rows * d * e + HOPPER_STAGES * 2 * keys * d * e
        return rows * d * e + 2 * keys * d * e  # flash2: Q_i, K_j, V_j

    @property
    def sram_bytes_per_block(self):
        return max(self.sram_bytes(k) for k in KERNELS[self.algo])


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return int(value)


def _pow2_floor(x):
    return 1 << (int(x).bit_length() - 1)


def default_blocks(algo, gpu, head_dim, dtype):
    """Blocks that fit the GPU, as (block_q, block_kv).

    flash1: the paper's Bc = ceil(M / 4d), Br = min(Bc, d) for an SRAM of M elements. flash2 and hopper
    loop over K/V inside, so the roles swap: Br = ceil(M / 4d), Bc = min(Br, d), with Br at most 128
    because its fp32 S_ij and O_i live in registers. naive: 128 x 128 matmul tiles. All rounded down to
    powers of two (tensor-core tiles), then the larger halved until every kernel's tiles fit.
    """
    gpu = get_gpu(gpu)
    big = _pow2_floor(math.ceil(gpu.sram_bytes_per_block // check_dtype(dtype) / (4 * head_dim)))
    small = _pow2_floor(min(big, head_dim))
    br, bc = {"flash1": (small, big), "naive": (128, 128)}.get(algo, (min(big, 128), min(small, 128)))
    br, bc = max(MIN_BLOCK, br), max(MIN_BLOCK, bc)

    def fits(br, bc):
        probe = Config(algo, 1, 1, 1, 1, 1, head_dim, br, bc, False, dtype, gpu)
        return probe.sram_bytes_per_block <= gpu.sram_bytes_per_block

    while not fits(br, bc) and max(br, bc) > MIN_BLOCK:
        br, bc = (br // 2, bc) if br > bc else (br, bc // 2)
    return br, bc


def make_config(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, block_q=None,
                block_kv=None, causal=False, dtype="fp16", gpu="A100-40GB"):
    """Validate everything once; every error names the value and the limit."""
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not one of {', '.join(ALGOS)}")
    gpu = get_gpu(gpu)
    gpu.matmul_flops_per_s(dtype)  # raises for a dtype the GPU's tensor cores lack
    seq, head_dim = _positive_int("seq", seq), _positive_int("head_dim", head_dim)
    heads, batch = _positive_int("heads", heads), _positive_int("batch", batch)
    kv_heads = heads if kv_heads is None else _positive_int("kv_heads", kv_heads)
    seq_kv = seq if seq_kv is None else _positive_int("seq_kv", seq_kv)
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    br, bc = default_blocks(algo, gpu, head_dim, dtype)
    block_q = br if block_q is None else _positive_int("block_q", block_q)
    block_kv = bc if block_kv is None else _positive_int("block_kv", block_kv)
    cfg = Config(algo, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv, bool(causal), dtype, gpu)
    for kernel in KERNELS[algo]:
        need = cfg.sram_bytes(kernel)
        if need > gpu.sram_bytes_per_block:
            raise ValueError(
                f"block_q={block_q}, block_kv={block_kv}, head_dim={head_dim} ({dtype}) need {need:,} B of "
                f"SRAM in the {kernel} kernel; {gpu.name} has {gpu.sram_bytes_per_block:,} B per thread block")
    return cfg

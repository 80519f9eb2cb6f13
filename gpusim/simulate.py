"""The entry point: simulate(algo, ...) counts (and optionally executes) one attention forward pass."""
from dataclasses import dataclass

import functools
import itertools

import numpy as np

from . import algorithms, cost, l2
from .config import make_config
from .execute import execute
from .compiled import COMPILED
from .hardware import get_gpu

EXECUTE_STEP_LIMIT = 2_000_000  # tiles (and softmax rows) execute mode walks in Python
EXECUTE_ELEMENT_LIMIT = 1 << 27  # elements of naive attention's S and P held in NumPy
TRACE_SEED = 0  # trace=True without arrays draws standard normal q, k, v from this seed


@dataclass(frozen=True)
class KernelResult:
    name: str
    programs: int  # thread blocks in the grid
    sram_bytes_per_block: int
    read_bytes: int  # HBM -> SRAM (the paper's HBM accesses: what the SMs ask the memory system for)
    write_bytes: int  # SRAM -> HBM
    dram_read_bytes: int  # the part of read_bytes that misses in L2
    dram_write_bytes: int  # the part of write_bytes written back to DRAM before the kernel ends
    flops_matmul: int
    flops_other: int  # everything else, exponentials included
    exps: int  # exponentials (and logarithms), which run on the special function units
    predicted_time_s: float
    memory_time_s: float  # roofline terms at the whole GPU's rates (cost.py): bytes over bandwidth,
    matmul_time_s: float  # matmul FLOPs over the tensor-core peak,
    other_time_s: float  # the rest over the CUDA cores, exponentials over the special function units
    busy_fraction: float  # the share of the SMs' slot time the grid's programs fill
    blocks_per_sm: int  # occupancy: thread blocks an SM keeps resident (gpusim/occupancy.py)
    registers_per_thread: int
    limited_by: str  # registers, shared memory, warps or blocks: what caps blocks_per_sm
    latency_bound: bool  # a program's critical path, not a unit, sets its time (Little's law)
    overlap: bool  # the kernel overlaps its softmax with its matmuls (warp specialization)

    @property
    def compute_time_s(self):
        """Matmul and non-matmul time, added, or overlapped where the kernel overlaps them."""
        return (max if self.overlap else sum)((self.matmul_time_s, self.other_time_s))

    @property
    def bound(self):
        return "memory" if self.memory_time_s >= self.compute_time_s else "compute"

    def to_dict(self):
        return dict(self.__dict__)


@dataclass(frozen=True)
class Result:
    config: object  # config.Config
    counts: dict  # {(kernel, tensor): (read_bytes, write_bytes)}, SM <-> memory
    dram: dict  # {(kernel, tensor): (dram_read_bytes, dram_write_bytes)}, L2 <-> DRAM (l2.py)
    kernels: tuple  # KernelResult per launch, in launch order
    hbm_peak_bytes: int
    output: np.ndarray | None = None  # (B, H, N, d) when q, k, v were given
    trace: tuple | None = None  # memory.Step, in schedule order

    @property
    def by_tensor(self):
        """{tensor: {"read_bytes", "write_bytes"}} summed over kernels, in the order Q K V S P O l m LSE."""
        return by_tensor(self.counts)

    @property
    def dram_by_tensor(self):
        return by_tensor(self.dram, "dram_read_bytes", "dram_write_bytes")

    @property
    def hbm_read_bytes(self):
        return sum(r for r, _ in self.counts.values())

    @property
    def hbm_write_bytes(self):
        return sum(w for _, w in self.counts.values())

    @property
    def dram_read_bytes(self):
        return sum(r for r, _ in self.dram.values())

    @property
    def dram_write_bytes(self):
        return sum(w for _, w in self.dram.values())

    @property
    def hbm_bytes(self):
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def flops_matmul(self):
        return sum(k.flops_matmul for k in self.kernels)

    @property
    def flops_other(self):
        return sum(k.flops_other for k in self.kernels)

    @property
    def sram_bytes_per_block(self):
        return max(k.sram_bytes_per_block for k in self.kernels)

    @property
    def predicted_time_s(self):
        return sum(k.predicted_time_s for k in self.kernels)

    @property
    def fits_in_hbm(self):
        return self.hbm_peak_bytes <= self.config.gpu.hbm_bytes

    def to_dict(self):
        c = self.config
        return {
            "config": {"algo": c.algo, "batch": c.batch, "heads": c.heads, "kv_heads": c.kv_heads, "seq": c.seq,
                       "seq_kv": c.seq_kv, "head_dim": c.head_dim, "block_q": c.block_q, "block_kv": c.block_kv,
                       "causal": c.causal, "dtype": c.dtype, "gpu": c.gpu.name},
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            "by_tensor": self.by_tensor,
            "by_kernel": [k.to_dict() for k in self.kernels],
            "dram_read_bytes": self.dram_read_bytes,
            "dram_write_bytes": self.dram_write_bytes,
            "dram_by_tensor": self.dram_by_tensor,
            "flops_matmul": self.flops_matmul,
            "flops_other": self.flops_other,
            "sram_bytes_per_block": self.sram_bytes_per_block,
            "hbm_peak_bytes": self.hbm_peak_bytes,
            "hbm_bytes_available": c.gpu.hbm_bytes,
            "fits_in_hbm": self.fits_in_hbm,
            "predicted_time_s": self.predicted_time_s,
        }


def simulate(algo, *, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_q=None,
             block_kv=None, causal=False, dtype=None, gpu="A100-40GB", causal_align="top_left", q=None, k=None,
             v=None, trace=False):
    """Count the HBM traffic, FLOPs, footprint and predicted time of one attention forward pass.

    algo: "naive" (standard attention, 3 kernels), "flash1", "flash2" or "hopper" (FlashAttention-3 style:
    flash2's tiles, loads overlapped with compute). Shapes are (batch, heads, seq, head_dim) for Q and
    (batch, kv_heads, seq_kv, head_dim) for K and V. block_q, block_kv: the tiles (Br, Bc); None: the
    fastest predicted (best_blocks). dtype: the storage dtype whose bytes are counted (fp32, fp16, bf16,
    fp8); None: the arrays' own (float16 -> fp16, float32 -> fp32), fp16 for float64 arrays (exact arithmetic
    on a model of half-precision storage) and in count mode. causal_align: "top_left" (torch's is_causal:
    row r sees keys 0..r) or "bottom_right" (row r sees keys 0..r + seq_kv - seq).

    Without arrays only the schedule is counted (count mode: closed forms, any N up to 2**40). With q, k, v
    (NumPy, any float dtype) the schedule runs on them tile by tile (execute mode) and `output` holds the
    result; the counts are the same. trace=True records every step (without arrays, q, k, v are drawn
    from a seeded standard normal).
    """
    arrays = _arrays(q, k, v)
    if arrays:
        batch, heads, seq, head_dim, kv_heads, seq_kv = _shape_from(arrays, batch, heads, seq, head_dim,
                                                                    kv_heads, seq_kv)
        dtype = dtype or ARRAY_DTYPES.get(np.result_type(*arrays).name, "fp16")
    if seq is None or head_dim is None:
        raise ValueError("seq and head_dim are required unless q, k, v are given")
    shape = dict(seq=seq, head_dim=head_dim, heads=1 if heads is None else heads, batch=1 if batch is None else batch,
                 kv_heads=kv_heads, seq_kv=seq_kv, causal=causal, dtype=dtype or "fp16", gpu=gpu,
                 causal_align=causal_align)
    if block_q is None or block_kv is None:
        best = best_blocks(algo, **shape)
        block_q, block_kv = block_q or best[0], block_kv or best[1]
    cfg = make_config(algo, block_q=block_q, block_kv=block_kv, **shape)
    output = steps = None
    if arrays or trace:
        _check_executable(cfg)
        if not arrays:
            rng = np.random.default_rng(TRACE_SEED)
            arrays = [rng.standard_normal((cfg.batch, h, n, cfg.head_dim))
                      for h, n in [(cfg.heads, cfg.seq), (cfg.kv_heads, cfg.seq_kv), (cfg.kv_heads, cfg.seq_kv)]]
        output, mem = execute(cfg, *arrays, trace=trace)
        counts = {key: tuple(rw) for key, rw in mem.counts.items()}
        steps = tuple(mem.steps) if trace else None
        output = output if q is not None else None
    else:
        counts = algorithms.get(cfg.algo).count(cfg)
    dram = l2.dram(cfg, counts)
    return Result(cfg, counts, dram, _kernels(cfg, counts, dram), algorithms.get(cfg.algo).peak_bytes(cfg), output,
                  steps)


ARRAY_DTYPES = {"float16": "fp16", "float32": "fp32"}


def candidates(algo, gpu, head_dim, dtype, causal):
    """The tiles best_blocks weighs: where the project's kernels were compiled for the GPU's architecture
    (gpusim/compiled.py), the tiles compiled for this head_dim, dtype and causality (their resources are
    known, not estimated); elsewhere every pair from BLOCKS."""
    kernel = algorithms.get(algo).KERNELS[0]
    known = {(k[5], k[6]) for k in COMPILED if k[:5] == (gpu.arch, kernel, head_dim, dtype, bool(causal))}
    return sorted(known) or list(itertools.product(BLOCKS, BLOCKS))
BLOCKS = (16, 32, 64, 128, 256)  # the tiles best_blocks tries: powers of two, as tl.dot takes them


@functools.lru_cache(maxsize=4096)
def best_blocks(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, causal=False, dtype="fp16",
                gpu="A100-40GB", causal_align="top_left"):
    """(block_q, block_kv): of the tiles in BLOCKS x BLOCKS that fit the GPU (SRAM, registers, a resident
    block), the one with the lowest predicted time. The project's kernels take it as their default."""
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv,
                 causal=causal, dtype=dtype, gpu=gpu, causal_align=causal_align)
    make_config(algo, block_q=BLOCKS[0], block_kv=BLOCKS[0], **{**shape, "causal": bool(causal)} if isinstance(
        causal, (bool, np.bool_)) else shape)  # the shape's own errors, before any tile is tried
    times = {}
    for blocks in candidates(algo, get_gpu(gpu), head_dim, dtype, causal):
        try:
            times[blocks] = simulate(algo, block_q=blocks[0], block_kv=blocks[1], **shape).predicted_time_s
        except ValueError:  # the tile does not fit: SRAM, registers or no resident block
            continue
    if not times:
        raise ValueError(f"no tile of {BLOCKS[0]}..{BLOCKS[-1]} rows fits {algo} at head_dim={head_dim} "
                         f"({dtype}) on {get_gpu(gpu).name}")
    return min(times, key=times.get)


TENSOR_ORDER = ("Q", "K", "V", "S", "P", "O", "l", "m", "LSE")


def by_tensor(table, read_key="read_bytes", write_key="write_bytes"):
    """{(kernel, tensor): (read, write)} summed over kernels into {tensor: {read_key, write_key}}."""
    out = {}
    for (_, tensor), (r, w) in sorted(table.items(), key=lambda item: TENSOR_ORDER.index(item[0][1])):
        entry = out.setdefault(tensor, {read_key: 0, write_key: 0})
        entry[read_key] += r
        entry[write_key] += w
    return out


def _of(table, name):
    return {tensor: rw for (kernel, tensor), rw in table.items() if kernel == name}


def _kernels(cfg, counts, dram):
    module = algorithms.get(cfg.algo)
    out = []
    for name, (mm, other, exps) in module.flops(cfg).items():
        mine, to_dram = _of(counts, name), _of(dram, name)
        (read, write), (dram_read, dram_write) = ([sum(rw[i] for rw in table.values()) for i in (0, 1)]
                                                  for table in (mine, to_dram))
        t = cost.kernel_time(cfg, name, mine, to_dram, mm, other, exps)
        out.append(KernelResult(name, module.programs(cfg, name), cfg.sram_bytes(name), read, write, dram_read,
                                dram_write, mm, other, exps, overlap=module.streams(cfg, name) > 1, **t.__dict__))
    return tuple(out)


def _arrays(q, k, v):
    given = [x is not None for x in (q, k, v)]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("execute mode needs all of q, k and v")
    arrays = [np.asarray(x) for x in (q, k, v)]
    for name, x in zip("qkv", arrays):
        if x.ndim != 4:
            raise ValueError(f"{name} has shape {x.shape}: expected 4 dimensions (batch, heads, seq, head_dim)")
        if not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"{name} has dtype {x.dtype}: expected a floating-point array")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or infinity")
    return arrays


def _shape_from(arrays, batch, heads, seq, head_dim, kv_heads, seq_kv):
    q, k, v = arrays
    if k.shape != v.shape:
        raise ValueError(f"k has shape {k.shape} but v has shape {v.shape}: they must match")
    if k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError(f"q {q.shape} and k {k.shape} must agree on batch (dim 0) and head_dim (dim 3)")
    inferred = dict(zip(("batch", "heads", "seq", "head_dim"), q.shape)) | dict(kv_heads=k.shape[1],
                                                                                seq_kv=k.shape[2])
    given = dict(batch=batch, heads=heads, seq=seq, head_dim=head_dim, kv_heads=kv_heads, seq_kv=seq_kv)
    for name, value in given.items():
        if value is not None and value != inferred[name]:
            raise ValueError(f"{name}={value} does not match the arrays, which have {name}={inferred[name]}")
    return tuple(inferred[name] for name in ("batch", "heads", "seq", "head_dim", "kv_heads", "seq_kv"))


def _check_executable(cfg):
    t = cfg.tiling
    steps = cfg.bh * (t.tiles + (cfg.seq if cfg.algo == "naive" else t.n_q_blocks))
    if steps > EXECUTE_STEP_LIMIT:
        raise ValueError(f"execute mode would walk {steps:,} steps in Python (limit {EXECUTE_STEP_LIMIT:,}): "
                         f"use fewer heads or a shorter sequence, or count mode (no arrays, no trace)")
    if cfg.algo == "naive" and cfg.bh * cfg.seq * cfg.seq_kv > EXECUTE_ELEMENT_LIMIT:
        raise ValueError(f"execute mode holds naive attention's S and P in NumPy: {cfg.bh * cfg.seq * cfg.seq_kv:,} "
                         f"elements each (limit {EXECUTE_ELEMENT_LIMIT:,}): use count mode (no arrays)")

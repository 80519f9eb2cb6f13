"""What simulate() returns: a Result per call, a KernelResult per launch, each launch timed by gpusim/cost.py."""
from dataclasses import dataclass

import numpy as np

from . import cost
from .shape import DecodeLaunch


@dataclass(frozen=True)
class KernelResult:
    name: str
    programs: int  # thread blocks in the grid
    sram_bytes_per_block: int
    read_bytes: int  # HBM -> SRAM (the paper's HBM accesses: what the SMs ask the memory system for): the
    #                  tensors' (Result.counts) and the spills' (spill_read_bytes)
    write_bytes: int  # SRAM -> HBM: the tensors' and the spills' (spill_write_bytes)
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
    pass_: str = "forward"  # "forward" or "backward" (a training step's); "pass" in to_dict
    spill_read_bytes: int = 0  # L2 -> SM of local memory (spill reloads): part of read_bytes, no tensor's
    spill_write_bytes: int = 0  # SM -> L2 of local memory (spill stores): part of write_bytes

    @property
    def compute_time_s(self):
        """Matmul and non-matmul time, added, or overlapped where the kernel overlaps them."""
        return (max if self.overlap else sum)((self.matmul_time_s, self.other_time_s))

    @property
    def bound(self):
        return "memory" if self.memory_time_s >= self.compute_time_s else "compute"

    def to_dict(self):
        out = dict(self.__dict__)
        out["pass"] = out.pop("pass_")
        return out


@dataclass(frozen=True)
class Result:
    config: object  # config.Config
    counts: dict  # {(kernel, tensor): (read_bytes, write_bytes)}, SM <-> memory
    dram: dict  # {(kernel, tensor): (dram_read_bytes, dram_write_bytes)}, L2 <-> DRAM (l2.py)
    kernels: tuple  # KernelResult per launch, in launch order
    hbm_peak_bytes: int
    output: np.ndarray | None = None  # (B, H, N, d) when q, k, v were given
    trace: tuple | None = None  # memory.Step, in schedule order
    grads: tuple | None = None  # (dq, dk, dv) when backward=True was given q, k, v and do
    backward_config: object | None = None  # backward.Backward, when backward=True

    @property
    def by_tensor(self):
        """{tensor: {"read_bytes", "write_bytes"}} summed over kernels (and passes), in TENSOR_ORDER."""
        return by_tensor(self.counts)

    @property
    def spills(self):
        """{kernel: (read_bytes, write_bytes)}: the compiled kernels' spill traffic between the SMs and L2
        (local memory: no tensor's, so not in counts or by_tensor; in each KernelResult's read and write
        bytes); kernels that spill nothing, or were not compiled, are absent."""
        return {k.name: (k.spill_read_bytes, k.spill_write_bytes) for k in self.kernels
                if k.spill_read_bytes or k.spill_write_bytes}

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
    def host_s(self):
        """The host's cost per call the kernels cannot beat: a training step's (forward and backward kernels),
        GPU.train_step_host_s (Python, autograd and the launches issue no faster); 0 for anything else."""
        return self.config.gpu.train_step_host_s if {k.pass_ for k in self.kernels} == {"forward", "backward"} else 0.0

    @property
    def predicted_time_s(self):
        """The kernels' times added, at least the host's cost per call (host_s)."""
        return max(sum(k.predicted_time_s for k in self.kernels), self.host_s)

    @property
    def fits_in_hbm(self):
        return self.hbm_peak_bytes <= self.config.gpu.hbm_bytes

    def to_dict(self):
        c, b = self.config, self.backward_config
        decoding = ({"num_splits": c.num_splits, "page_size": c.page_size, "grouped": c.grouped}
                    if isinstance(c, DecodeLaunch) else {})
        training = {"backward_block_q": b.block_q, "backward_block_kv": b.block_kv} if b else {}
        return {
            "config": {"algo": c.algo, "batch": c.batch, "heads": c.heads, "kv_heads": c.kv_heads, "seq": c.seq,
                       "seq_kv": c.seq_kv, "head_dim": c.head_dim, "block_q": c.block_q, "block_kv": c.block_kv,
                       "causal": c.causal, "causal_align": c.causal_align, "dtype": c.dtype, "gpu": c.gpu.name}
            | decoding | training,
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            "by_tensor": self.by_tensor,
            "kernels": [k.to_dict() for k in self.kernels],
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


TENSOR_ORDER = ("Q", "K", "V", "cache_seqlens", "block_table", "S", "P", "O_partial", "LSE_partial", "O", "l", "m",
                "LSE", "dO", "D", "dP", "dS", "dQ", "dK", "dV")  # inputs, forward, decoding's partials, backward


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


def time_kernels(cfg, counts, dram, direction="forward"):
    """A KernelResult per launch of cfg (a Config, Backward or DecodeLaunch), timed by gpusim/cost.py;
    direction: "forward" or "backward" (KernelResult.pass_)."""
    rules, out = cfg.pass_, []
    for name, (mm, other, exps) in rules.flops(cfg).items():
        mine, to_dram = _of(counts, name), _of(dram, name)
        (read, write), (dram_read, dram_write) = ([sum(rw[i] for rw in table.values()) for i in (0, 1)]
                                                  for table in (mine, to_dram))
        t = cost.kernel_time(cfg, name, mine, to_dram, mm, other, exps)  # its spills: t.spill_*_bytes
        read, write = read + t.spill_read_bytes, write + t.spill_write_bytes
        out.append(KernelResult(name, rules.programs(cfg, name), cfg.sram_bytes(name), read, write, dram_read,
                                dram_write, mm, other, exps, overlap=rules.streams(cfg, name) > 1, pass_=direction,
                                **t.__dict__))
    return tuple(out)


def predicted_times(cfg, counts, dram):
    """Each launch's KernelResult.predicted_time_s, in launch order, as time_kernels times it (cost.predicted_time: the
    same steps, without the rest of its record), for a tile search, which reads nothing else (gpusim/run.py)."""
    return [cost.predicted_time(cfg, name, _of(counts, name), _of(dram, name), flops)
            for name, flops in cfg.pass_.flops(cfg).items()]

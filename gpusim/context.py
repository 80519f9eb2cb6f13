"""Context parallelism: one attention forward split by sequence over P GPUs, counted per GPU.

    >>> r = gpusim.simulate("flash2", seq=131072, head_dim=128, heads=32, kv_heads=8, causal=True,
    ...                     dtype="bf16", gpu="H200", gpus=8, strategy="zigzag", link="nvlink4")
    >>> r.predicted_time_s, r.link_send_bytes, r.steps[0]

Strategies (each GPU starts with its N/P tokens of Q, K and V and ends with its N/P rows of O):
- "ring" (Ring Attention, Liu, Zaharia, Abbeel 2023): P steps; in step s GPU r attends its Q shard to the
  K/V shard of GPU (r - s) mod P while it passes that shard on to GPU r + 1 (P - 1 transfers, each one K and
  one V shard: 2 (N/P) kv_heads d itemsize batch bytes), and merges the partial result with the LSE. Causal:
  the step on its own shard is causal, earlier shards are seen whole, later ones skipped (the GPU idles).
- "zigzag" (ring-flash-attention's zigzag ring; Striped Attention balances the mask another way, round-robin by
  token): 2P chunks of N/2P; GPU r holds chunks r and 2P-1-r, so every GPU does the same causal work in every
  step: earlier shards are attended by both chunks of Q against chunk j, later shards by the late chunk of Q
  against both chunks of K/V.
- "ulysses" (DeepSpeed-Ulysses, Jacobs et al. 2023): all-to-all from sequence-split to head-split (Q, K, V;
  K and V in kv_heads), attention over the whole sequence on H/P heads, all-to-all of O back. Each GPU
  sends (P-1)/P of each shard. P must divide heads and kv_heads.
- "allgather" (PyTorch context_parallel's default rotate method): K and V gathered whole, then one local
  attention (causal: the keys before the shard whole, its own diagonal causal, merged with the LSE). Over
  contiguous shards: causal, as unbalanced as plain ring (PyTorch balances it by default with head-and-tail
  chunks, as zigzag's; this does not).
- "usp" (Unified Sequence Parallelism, Fang and Zhao 2024), on a Topology: Ulysses inside a node (degree =
  GPUs per node), ring (zigzag when causal) across nodes (degree P / GPUs per node).

Time: the passes's steps run in lockstep; a step lasts max over GPUs of max(compute, transfer) (the transfer
of the next K/V shard hides under the attention on the one in hand when the compute is longer), compute
being the local kernels' predicted time (gpusim's single-GPU model on the shard's shapes) and the merge's.
Transfers: bytes over the link's rate plus a per-message latency (gpusim/links.py).

Result: every single-GPU field of gpusim.simulate's Result (hbm_read_bytes, kernels, ...) for one GPU, the
busiest (`gpu_rank`); config is the whole problem's (its block_q and block_kv the largest local call's: each call
runs its own shape's tiles); plus `link_send_bytes` and the per-step records.
"""
import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from .config import make_config
from .hardware import DTYPE_BYTES, STATS_BYTES, dtype_name, get_gpu
from .links import LINKS, TOPOLOGIES, Topology, get_link
from .result import KernelResult, Result
from .passes import algo_name, named
from .run import forward
from .shape import check_groups, counts, flag, positive_int, shown

STRATEGIES = ("ring", "zigzag", "ulysses", "allgather", "usp")
ALGOS = ("flash2", "hopper")  # the local kernels
MAX_GPUS = 1024  # past any context-parallel group in use (Llama 3's long-context training: 16); ring's tables are P x P
MERGE_OTHER_PER_ELEMENT = 3  # O = exp(lse1 - lse) O1 + exp(lse2 - lse) O2: 2 multiplies, 1 add
MERGE_EXPS_PER_ROW = 3  # lse = logaddexp(lse1, lse2): one exp and one log; and the second weight's exp


@dataclass(frozen=True)
class Block:
    """One local attention call: `seq` queries against `seq_kv` keys, top-left causal or not."""
    seq: int
    seq_kv: int
    causal: bool


@dataclass(frozen=True)
class Work:
    """What one GPU does in one step: its local calls, and the query rows it merges into its partial O."""
    blocks: tuple = ()
    merge_rows: int = 0


@dataclass(frozen=True)
class Step:
    """One GPU's share of one step of the pass (the notebook's timeline draws these)."""
    gpu: int
    step: int
    phase: str  # "attention", "all-to-all QKV", "all-to-all O", "all-gather KV", "all-to-all QKV (node)"
    start_s: float  # when the step begins, on every GPU
    compute_s: float  # this GPU's local attention and merge in this step
    transfer_s: float  # the step's transfer over the link (the same on every GPU)
    time_s: float  # the step's length: the slowest GPU's max(compute, transfer)
    send_bytes: int  # bytes this GPU sends in this step (and receives as many)
    merge_bytes: int  # HBM bytes of the merge (partial O and LSE read and written)
    flops_matmul: int  # of this GPU's local attention in this step

    @property
    def idle_s(self):
        return self.time_s - self.compute_s


@dataclass(frozen=True)
class _Phase:
    name: str
    work: tuple  # Work per GPU
    send_bytes: int  # per GPU
    transfer_s: float


@dataclass(frozen=True)
class ContextResult(Result):
    """gpusim.simulate's Result for one GPU of a context-parallel pass (gpu_rank: the busiest), plus the pass:
    arrays of shape (steps, gpus) and one entry per step; `steps` gives them as Step records."""
    gpus: int = 1
    strategy: str = "ring"
    link: object = None  # links.Link or links.Topology; None: one GPU without a link (it sends nothing)
    gpu_rank: int = 0  # the GPU the single-GPU fields describe: the one with the most compute
    phases: tuple = ()  # each step's phase name
    step_send_bytes: tuple = ()  # per step, bytes each GPU sends (and receives)
    step_transfer_s: tuple = ()  # per step, the transfer's time
    compute_s: np.ndarray | None = None  # (steps, gpus): local attention and merge
    merge_bytes_by_step: np.ndarray | None = None  # (steps, gpus)
    flops_matmul_by_step: np.ndarray | None = None  # (steps, gpus)
    given_blocks: tuple = (None, None)  # (block_q, block_kv) as the caller gave them: each local call's

    @property
    def step_time_s(self):
        """Each step's length: the slowest GPU's compute, or the transfer when that is longer."""
        return np.maximum(self.compute_s.max(axis=1), self.step_transfer_s)

    @property
    def predicted_time_s(self):
        return float(self.step_time_s.sum())

    @property
    def link_send_bytes(self):
        """Bytes one GPU sends over its link in the whole pass (every GPU sends as many)."""
        return int(sum(self.step_send_bytes))

    @property
    def link_recv_bytes(self):
        return self.link_send_bytes  # each step's exchange is symmetric

    @property
    def merge_bytes(self):
        return int(self.merge_bytes_by_step[:, self.gpu_rank].sum())

    @property
    def gpu_flops_matmul(self):
        """Per GPU, its local attention's matmul FLOPs."""
        return tuple(int(x) for x in self.flops_matmul_by_step.sum(axis=0))

    @property
    def gpu_compute_s(self):
        return tuple(float(x) for x in self.compute_s.sum(axis=0))

    @property
    def overlap_margin(self):
        """min over the steps that move K/V under compute of the busiest GPU's compute / transfer (>= 1: the
        transfer hides); None when no step overlaps (ulysses, allgather)."""
        compute = self.compute_s[:, self.gpu_rank]
        ratios = [float(c / t) for c, t in zip(compute, self.step_transfer_s) if c and t]
        return min(ratios) if ratios else None

    @property
    def steps(self):
        """Step per (step, gpu), in that order."""
        times = self.step_time_s
        starts = np.concatenate([[0.0], np.cumsum(times)[:-1]])
        return tuple(Step(g, s, name, float(starts[s]), float(self.compute_s[s, g]), self.step_transfer_s[s],
                          float(times[s]), self.step_send_bytes[s], int(self.merge_bytes_by_step[s, g]),
                          int(self.flops_matmul_by_step[s, g]))
                     for s, name in enumerate(self.phases) for g in range(self.gpus))

    def to_dict(self):
        return super().to_dict() | {
            "gpus": self.gpus, "strategy": self.strategy, "link": None if self.link is None else self.link.name,
            "gpu_rank": self.gpu_rank,
            "link_send_bytes": self.link_send_bytes, "merge_bytes": self.merge_bytes,
            "overlap_margin": self.overlap_margin, "predicted_time_s": self.predicted_time_s,
        }


def simulate(algo, *, gpus=1, strategy=None, link=None, seq=None, head_dim=None, heads=None, batch=None,
             kv_heads=None, causal=False, dtype=None, gpu="A100-40GB", block_q=None, block_kv=None, **rest):
    """gpusim.simulate(algo, ..., gpus=P, strategy=..., link=...): see this module's docstring. Checks every
    argument before anything is counted; each refusal is one line."""
    algo, gpu = algo_name(algo), get_gpu(gpu)
    shape = _check(algo, gpus, strategy, link, gpu, seq, head_dim, heads, batch, kv_heads, causal, dtype, rest)
    strategy, link, head_dim = shape.pop("strategy"), shape.pop("link"), shape.pop("head_dim")  # head_dim: an int
    local = functools.partial(_local, algo, head_dim=head_dim, batch=shape["batch"], dtype=shape["dtype"], gpu=gpu,
                              block_q=block_q, block_kv=block_kv)
    phases, heads_local, peak_extra = PLANS[strategy](link=link, head_dim=head_dim, **shape)
    return _result(algo, phases, heads_local, peak_extra, local, strategy, link, shape, head_dim, gpu, block_q,
                   block_kv)


def _check(algo, gpus, strategy, link, gpu, seq, head_dim, heads, batch, kv_heads, causal, dtype, rest):
    """The arguments as numbers, or one line saying what is wrong, before anything is counted."""
    gpus = positive_int("gpus", gpus)
    if gpus > MAX_GPUS:
        raise ValueError(f"gpus={gpus:,} is more than the {MAX_GPUS:,} GPUs gpusim splits a sequence over (ring and "
                         f"zigzag keep every GPU's work at every step: gpus x gpus entries)")
    if named(algo) not in ALGOS:
        asked = ", ".join(f"{name}={value!r}" for name, value in (("gpus", gpus), ("strategy", strategy),
                                                                    ("link", link)) if value not in (1, None))
        raise ValueError(f"{asked}: context parallelism runs the forward of flash2 or hopper, not algo={algo!r}")
    strategy = "ring" if strategy is None else strategy.lower() if isinstance(strategy, str) else strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy={strategy!r}: choose one of {', '.join(STRATEGIES)}")
    link = pick_link(gpu, gpus, strategy, link)
    if seq is None or head_dim is None:
        raise ValueError("seq and head_dim are required")
    heads = 1 if heads is None else heads
    seq, head_dim, heads, kv_heads = counts(seq=seq, head_dim=head_dim, heads=heads,
                                            kv_heads=heads if kv_heads is None else kv_heads).values()
    check_groups(heads, kv_heads)
    _check_single_gpu_options(gpus, seq, rest)
    causal = flag("causal", causal)
    dtype = dtype_name("fp16" if dtype is None else dtype)
    _check_pieces(strategy, link, gpus, seq, heads, kv_heads, causal)
    return dict(strategy=strategy, link=link, gpus=gpus, seq=seq, head_dim=head_dim, heads=heads, kv_heads=kv_heads,
                batch=counts(batch=1 if batch is None else batch)["batch"], causal=causal, dtype=dtype)


def keyword(name, value=None):
    """An argument as a Python call names it: name=value, or name= (value None: the argument to give)."""
    return f"{name}=" if value is None else shown(name, value)


def pick_link(gpu, gpus, strategy, link, spell=keyword):
    """The Link or Topology a pass of `strategy` over `gpus` runs on: `link`, else the GPU's NVLink preset; None
    for one GPU without either (it sends nothing). One line, listing the names to give, where there is none, or
    usp has no topology; spell(name, value) names the arguments (keyword's; the command line's --name value)."""
    name = gpu.peer_link if link is None else link
    if name is None and strategy != "usp":
        if gpus == 1:
            return None
        raise ValueError(f"{spell('gpu', gpu.name)} has no NVLink preset: give {spell('link')} (one of "
                         f"{', '.join(LINKS)}, or a topology: {', '.join(TOPOLOGIES)})")
    link = None if name is None else get_link(name)
    if strategy == "usp" and not isinstance(link, Topology):
        raise ValueError(f"{spell('strategy', 'usp')} needs a topology: give {spell('link')} (one of "
                         f"{', '.join(TOPOLOGIES)})" + ("" if link is None else f", not the link {link.name!r}"))
    return link


def _takes(name, value, seq):
    """Whether the context model takes a single-GPU option at `value`: simulate's default (None; False for trace
    and backward), seq_kv equal to seq, or the top-left causal mask (the one it models)."""
    if name in ("trace", "backward"):
        return isinstance(value, (bool, np.bool_)) and not value
    if name == "seq_kv":
        return value is None or isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value == seq
    return value is None or name == "causal_align" and isinstance(value, str) and value == "top_left"


def _check_single_gpu_options(gpus, seq, rest):
    """One line for the first single-GPU option given that the context model does not take, and why."""
    why = {"seq_kv": f"the context model takes seq_kv equal to seq={seq} only (self-attention)",
           "causal_align": "the context model takes the top-left causal mask only (row r sees keys 0..r)"}
    for name, value in rest.items():
        if not _takes(name, value, seq):
            raise ValueError(f"{shown(name, value)} does not apply to gpus={gpus}: " + why.get(
                name, "context parallelism is the forward only (no backward, decoding or arrays), its tiles given as "
                      "block_q and block_kv"))


def _check_pieces(strategy, link, gpus, seq, heads, kv_heads, causal):
    """One line where the sequence, the heads or the nodes do not split as `strategy` cuts them over `gpus`."""
    chunks = {"zigzag": 2 * gpus}.get(strategy, gpus)  # the pieces the sequence is cut into
    if strategy == "usp":
        per_node = min(gpus, link.gpus_per_node)
        if gpus % per_node:
            raise ValueError(f"strategy='usp': gpus={gpus} is not a whole number of {per_node}-GPU nodes")
        _check_heads("usp's Ulysses degree", per_node, heads, kv_heads)
        chunks = math.lcm(gpus, 2 * gpus // per_node) if causal else gpus  # zigzag over the nodes
    if seq % chunks:
        raise ValueError(f"seq={seq} is not divisible by {chunks}: strategy={strategy!r} on gpus={gpus} cuts the "
                         f"sequence into {chunks} equal pieces")
    if strategy == "ulysses":
        _check_heads("strategy='ulysses'", gpus, heads, kv_heads)
    if isinstance(link, Topology):
        link.link_for(gpus)  # refuses more GPUs than a one-node topology has


def _check_heads(what, degree, heads, kv_heads):
    if heads % degree or kv_heads % degree:
        raise ValueError(f"{what}: heads={heads} and kv_heads={kv_heads} must both be divisible by {degree}")


@functools.lru_cache(maxsize=4096)
def _local(algo, block, heads, kv_heads, *, head_dim, batch, dtype, gpu, block_q, block_kv):
    """The single-GPU model's Result for one local call (count mode)."""
    return forward(algo, seq=block.seq, seq_kv=block.seq_kv, head_dim=head_dim, heads=heads, kv_heads=kv_heads,
                    batch=batch, causal=block.causal, dtype=dtype, gpu=gpu, block_q=block_q, block_kv=block_kv)


# ---------------------------------------------------------------------------------------------------------
# The plans: per step, each GPU's Work and the bytes each GPU sends. Each returns (phases, (heads, kv_heads)
# of the local calls, extra peak HBM per GPU over the largest local call's).

def _kv_bytes(tokens, kv_heads, head_dim, itemsize, batch):
    return 2 * tokens * kv_heads * head_dim * itemsize * batch  # one K and one V shard


def _ring_works(gpus, seq, causal, zigzag):
    """Work[step][gpu] of a ring: in step s GPU r holds the K/V shard of GPU j = (r - s) mod P."""
    c = seq // gpus  # tokens per GPU: N/P (zigzag: two chunks of N/2P)
    h = c // 2
    first = Work((Block(c, c, causal),))  # step 0: its own shard, the causal diagonal when causal
    if not causal:
        full = Work((Block(c, c, False),), c)
        return [[first] * gpus] + [[full] * gpus for _ in range(1, gpus)]
    if zigzag:  # chunks r and 2P-1-r: earlier shard j < r: both Q chunks see chunk j only; later: the late
        earlier, later = Work((Block(c, h, False),), c), Work((Block(h, c, False),), h)  # Q chunk sees both
    else:  # contiguous shards: an earlier shard whole, a later one not at all
        earlier, later = Work((Block(c, c, False),), c), Work()
    return [[first] * gpus] + [[earlier if (r - s) % gpus < r else later for r in range(gpus)]
                               for s in range(1, gpus)]


def _ring_phases(works, link, kv_heads, head_dim, itemsize, batch, tokens):
    """P steps; steps 0 .. P-2 pass the K/V shard in hand on (send 2*(N/P)*kv_heads*d per step)."""
    send = _kv_bytes(tokens, kv_heads, head_dim, itemsize, batch)
    last = len(works) - 1
    return [_Phase("attention", tuple(w), send if s < last else 0, link.send_time_s(send) if s < last else 0.0)
            for s, w in enumerate(works)]


def _plan_ring(*, link, gpus, seq, heads, kv_heads, batch, causal, dtype, head_dim, zigzag=False):
    link = link.link_for(gpus) if isinstance(link, Topology) else link
    e, c = DTYPE_BYTES[dtype], seq // gpus
    works = _ring_works(gpus, seq, causal, zigzag)
    # beside the K/V shard in use: its own (the caller's, kept while the others pass) and the one being received;
    # and the fp32 partial O and LSE the merges update
    extra = (2 * _kv_bytes(c, kv_heads, head_dim, e, batch) + batch * heads * c * (head_dim + 1) * 4) if gpus > 1 else 0
    return _ring_phases(works, link, kv_heads, head_dim, e, batch, c), (heads, kv_heads), extra


def _plan_zigzag(**shape):
    return _plan_ring(zigzag=True, **shape)


def _alltoall(link, gpus, tokens, heads, head_dim, itemsize, batch):
    """(bytes one GPU sends, time) of an all-to-all of a (batch, heads, tokens, d) shard: (P-1)/P of it."""
    return ((gpus - 1) * tokens * (heads // gpus) * head_dim * itemsize * batch,
            link.alltoall_time_s(tokens * heads * head_dim * itemsize * batch, gpus) if gpus > 1 else 0.0)


def _alltoall_phase(name, link, gpus, tokens, tensor_heads, head_dim, itemsize, batch, owners):
    """One phase of all-to-alls, one per tensor (Q, K, V or O), among groups of `gpus`; `owners` GPUs idle."""
    moves = [_alltoall(link, gpus, tokens, h, head_dim, itemsize, batch) for h in tensor_heads]
    return _Phase(name, (Work(),) * owners, sum(b for b, _ in moves), sum(t for _, t in moves))


def _plan_ulysses(*, link, gpus, seq, heads, kv_heads, batch, causal, dtype, head_dim):
    link = link.link_for(gpus) if isinstance(link, Topology) else link
    e, c = DTYPE_BYTES[dtype], seq // gpus
    phases = [_alltoall_phase("all-to-all QKV", link, gpus, c, (heads, kv_heads, kv_heads), head_dim, e, batch, gpus),
              _Phase("attention", (Work((Block(seq, seq, causal),)),) * gpus, 0, 0.0),
              _alltoall_phase("all-to-all O", link, gpus, c, (heads,), head_dim, e, batch, gpus)]
    # the sequence-split Q, K, V and O shards beside the head-split tensors of the local call
    extra = batch * c * (2 * heads + 2 * kv_heads) * head_dim * e if gpus > 1 else 0
    return phases, (heads // gpus, kv_heads // gpus), extra


def _plan_allgather(*, link, gpus, seq, heads, kv_heads, batch, causal, dtype, head_dim):
    link = link.link_for(gpus) if isinstance(link, Topology) else link
    e, c = DTYPE_BYTES[dtype], seq // gpus
    shard = _kv_bytes(c, kv_heads, head_dim, e, batch) // 2  # one of K, V
    gather = _Phase("all-gather KV", (Work(),) * gpus, 2 * (gpus - 1) * shard,
                    2 * ((gpus - 1) * shard / link.send_bytes_per_s + link.step_latency_s) if gpus > 1 else 0.0)
    if causal:  # GPU r's rows see the r shards before its own whole, its own causally: two calls, one merge
        works = tuple(Work((Block(c, c, True),)) if r == 0 else
                      Work((Block(c, r * c, False), Block(c, c, True)), c) for r in range(gpus))
    else:
        works = (Work((Block(c, seq, False),)),) * gpus
    # beside the K/V the local call reads (the gathered shards concatenated): the P shards gathered, its own among
    # them, and its own input; causal, the fp32 partial O and LSE too
    extra = ((gpus + 1) * _kv_bytes(c, kv_heads, head_dim, e, batch) +
             (batch * heads * c * (head_dim + 1) * 4 if causal else 0)) if gpus > 1 else 0
    return [gather, _Phase("attention", works, 0, 0.0)], (heads, kv_heads), extra


def _plan_usp(*, link, gpus, seq, heads, kv_heads, batch, causal, dtype, head_dim):
    """Ulysses among a node's GPUs (degree u), then a ring (zigzag when causal) over the r = P/u nodes, each GPU
    on its own inter-node link, on N/r tokens of H/u heads; then O back."""
    u = min(gpus, link.gpus_per_node)
    r, e, c = gpus // u, DTYPE_BYTES[dtype], seq // gpus
    ring_link = link.inter if r > 1 else link.intra
    first = _alltoall_phase("all-to-all QKV (node)", link.intra, u, c, (heads, kv_heads, kv_heads), head_dim, e,
                            batch, gpus)
    works = _ring_works(r, seq, causal, zigzag=causal)
    ring = _ring_phases(works, ring_link, kv_heads // u, head_dim, e, batch, seq // r)
    ring = [replace(p, work=tuple(p.work[g // u] for g in range(gpus))) for p in ring]  # GPU g: ring rank g // u
    last = _alltoall_phase("all-to-all O (node)", link.intra, u, c, (heads,), head_dim, e, batch, gpus)
    ring_tokens, local_heads = seq // r, (heads // u, kv_heads // u)
    extra = (batch * c * (2 * heads + 2 * kv_heads) * head_dim * e +
             (_kv_bytes(ring_tokens, local_heads[1], head_dim, e, batch) +
              batch * local_heads[0] * ring_tokens * (head_dim + 1) * 4 if r > 1 else 0))
    return [first, *ring, last], local_heads, extra


PLANS = {"ring": _plan_ring, "zigzag": _plan_zigzag, "ulysses": _plan_ulysses, "allgather": _plan_allgather,
         "usp": _plan_usp}


# ---------------------------------------------------------------------------------------------------------
# From the plan to the Result

def _merge_counts(rows, heads, head_dim, itemsize, batch):
    """{tensor: (read_bytes, write_bytes)} of one merge of `rows` query rows: the fp32 partial O and LSE and
    the step's O (in the dtype) and LSE read, the merged fp32 O and LSE written."""
    n = batch * heads * rows
    return {"O_partial": (n * head_dim * (4 + itemsize), n * head_dim * 4),
            "LSE_partial": (2 * n * STATS_BYTES, n * STATS_BYTES)}


def _merge_kernel(counts, rows, heads, head_dim, batch, gpu):
    """The merge as a launch: elementwise, at the GPU's copy bandwidth or its CUDA cores' and SFUs' rates."""
    n = batch * heads * rows
    read, write = (sum(rw[i] for rw in counts.values()) for i in (0, 1))
    memory_s = (read + write) / gpu.hbm_bytes_per_s
    other, exps = MERGE_OTHER_PER_ELEMENT * n * head_dim, MERGE_EXPS_PER_ROW * n
    compute_s = other / gpu.fp32_flops_per_s + exps / gpu.sfu_ops_per_s
    return KernelResult("merge", programs=n, sram_bytes_per_block=0, read_bytes=read, write_bytes=write,
                        dram_read_bytes=read, dram_write_bytes=write, flops_matmul=0, flops_other=other, exps=exps,
                        predicted_time_s=max(memory_s, compute_s) + gpu.launch_overhead_s, memory_time_s=memory_s,
                        matmul_time_s=0.0, other_time_s=compute_s, busy_fraction=1.0, blocks_per_sm=0,
                        registers_per_thread=0, limited_by="", latency_bound=False, overlap=False)


@dataclass(frozen=True)
class _Cost:
    compute_s: float  # local calls and merge
    flops_matmul: int
    results: tuple  # the local calls' Results
    merge_counts: dict  # {tensor: (read, write)}, empty without a merge
    merge: KernelResult | None

    @property
    def merge_bytes(self):
        return sum(r + w for r, w in self.merge_counts.values())


def _work_cost(work, heads, head_dim, itemsize, batch, gpu, local):
    results = tuple(local(b, *heads) for b in work.blocks)
    counts = _merge_counts(work.merge_rows, heads[0], head_dim, itemsize, batch) if work.merge_rows else {}
    merge = _merge_kernel(counts, work.merge_rows, heads[0], head_dim, batch, gpu) if counts else None
    compute = sum(r.predicted_time_s for r in results) + (merge.predicted_time_s if merge else 0.0)
    return _Cost(compute, sum(r.flops_matmul for r in results), results, counts, merge)


def _result(algo, phases, heads, peak_extra, local, strategy, link, shape, head_dim, gpu, block_q, block_kv):
    e, batch, gpus = DTYPE_BYTES[shape["dtype"]], shape["batch"], shape["gpus"]
    slots = {}  # the plans share Work objects between GPUs and steps: cost each once
    for p in phases:
        for w in p.work:
            slots.setdefault(id(w), w)
    costs = {key: _work_cost(w, heads, head_dim, e, batch, gpu, local) for key, w in slots.items()}
    table = {key: i for i, key in enumerate(costs)}
    which = np.array([[table[id(w)] for w in p.work] for p in phases])  # (steps, P): index of each GPU's Work
    columns = {"compute_s": [c.compute_s for c in costs.values()],
               "merge_bytes": [c.merge_bytes for c in costs.values()],
               "flops_matmul": [c.flops_matmul for c in costs.values()]}
    per = lambda column: np.array(columns[column])[which]  # noqa: E731  (steps, P)
    compute = per("compute_s")
    rank = int(np.argmax(compute.sum(axis=0)))
    counts, dram, kernels = {}, {}, []
    for s, p in enumerate(phases):  # the busiest GPU's launches, step by step, each named "step<s>.<n>:<kernel>"
        cost = costs[id(p.work[rank])]
        for res in cost.results:
            tag = f"step{s}.{len(kernels)}:"
            counts |= {(tag + k, t): rw for (k, t), rw in res.counts.items()}
            dram |= {(tag + k, t): rw for (k, t), rw in res.dram.items()}
            kernels += [replace(k, name=tag + k.name) for k in res.kernels]
        if cost.merge:
            tag = f"step{s}.{len(kernels)}:merge"
            counts |= {(tag, t): rw for t, rw in cost.merge_counts.items()}
            dram |= {(tag, t): rw for t, rw in cost.merge_counts.items()}  # partials are not L2-resident here
            kernels.append(replace(cost.merge, name=tag))
    biggest = max((r for c in costs.values() for r in c.results), key=lambda r: r.hbm_peak_bytes)
    cfg = make_config(algo, seq=shape["seq"], seq_kv=shape["seq"], head_dim=head_dim, heads=shape["heads"],
                      kv_heads=shape["kv_heads"], batch=batch, causal=shape["causal"], dtype=shape["dtype"], gpu=gpu,
                      block_q=biggest.config.block_q, block_kv=biggest.config.block_kv)
    return ContextResult(cfg, counts, dram, tuple(kernels), biggest.hbm_peak_bytes + peak_extra, gpus=gpus,
                         strategy=strategy, link=link, gpu_rank=rank, phases=tuple(p.name for p in phases),
                         step_send_bytes=tuple(p.send_bytes for p in phases),
                         step_transfer_s=tuple(p.transfer_s for p in phases), compute_s=compute,
                         merge_bytes_by_step=per("merge_bytes"), flops_matmul_by_step=per("flops_matmul"),
                         given_blocks=(block_q, block_kv))

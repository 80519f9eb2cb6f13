"""FLOPs, predicted time and HBM footprint.

Assumptions of the time model (a roofline per kernel), written down here because they are choices:
- A kernel's time is the larger of its memory time and its compute time. Memory time is the larger of
  the bytes the SMs move over L2 bandwidth and the bytes that reach DRAM (l2.py) over HBM bandwidth; a
  GPU with no published L2 bandwidth is charged HBM bandwidth for both (a conservative prediction).
  Compute time is matmul FLOPs over the tensor-core peak for its dtype plus the non-matmul time:
  exponentials over the special function units' rate (16 per clock per SM: 25 times fewer than the
  CUDA cores' FLOPs on an H100, the bottleneck FlashAttention-3 names), the rest over the CUDA-core fp32
  peak. Within a thread block the softmax waits for the matmul and vice versa, so the two compute terms
  add; the Hopper kernel overlaps them (FlashAttention-3's asynchronous TMA loads and warp
  specialization), so it takes their maximum.
- Thread blocks run in waves over the SMs. An SM holds as many blocks as its shared memory allows. A
  grid that leaves SMs idle in its last wave (or has fewer blocks than SMs, as FlashAttention-1 does
  with one block per batch and head) gets the busy fraction of the machine's bandwidth and FLOPs.
- Each launch costs LAUNCH_OVERHEAD_S.
- Peak rates are datasheet peaks: predictions are floors, not forecasts.
"""
import math

from .hardware import STATS_BYTES

LAUNCH_OVERHEAD_S = 3.2e-6  # an empty Triton kernel, median on the lent H200 (results/h200/ceilings.json)

def busy_fraction(gpu, n_programs, sram_bytes_per_block):
    """Share of the GPU a grid keeps busy, averaged over its waves. A wave fills every SM with as many
    blocks as fit in its shared memory; the last wave's r blocks keep min(r, SMs) SMs busy, each block
    alone on its SM getting the whole SM."""
    per_sm = max(1, gpu.sram_bytes_per_sm // max(1, sram_bytes_per_block))
    waves = math.ceil(n_programs / (gpu.sm_count * per_sm))
    last = n_programs - (waves - 1) * gpu.sm_count * per_sm
    return n_programs / (gpu.sm_count * ((waves - 1) * per_sm + math.ceil(last / gpu.sm_count)))


def kernel_time(gpu, dtype, sm_bytes, dram_bytes, matmul_flops, other_flops, exps, busy, overlap=False):
    """(predicted time, {memory_time_s, matmul_time_s, other_time_s}) of one launch: the roofline terms at
    the whole GPU's rates, then the busy fraction and the launch overhead."""
    terms = {"memory_time_s": max(sm_bytes / (gpu.l2_bytes_per_s or gpu.hbm_bytes_per_s),
                                  dram_bytes / gpu.hbm_bytes_per_s),
             "matmul_time_s": matmul_flops / gpu.matmul_flops_per_s(dtype),
             "other_time_s": (other_flops - exps) / gpu.fp32_flops_per_s + exps / gpu.sfu_ops_per_s}
    compute = (max if overlap else sum)((terms["matmul_time_s"], terms["other_time_s"]))
    return max(terms["memory_time_s"], compute) / busy + LAUNCH_OVERHEAD_S, terms


def hbm_peak_bytes(cfg):
    """Bytes allocated in HBM at the worst moment: inputs, output and every intermediate alive then.
    Naive attention frees S after the softmax, before O is allocated; S and P are allocated whole even
    when causal."""
    q = cfg.bh * cfg.seq * cfg.head_dim * cfg.itemsize
    kv = 2 * cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
    o = cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")
    stats = cfg.bh * cfg.seq * STATS_BYTES
    if cfg.algo == "naive":
        nn = cfg.bh * cfg.seq * cfg.seq_kv * cfg.itemsize  # one N x N_kv matrix, S or P
        return q + kv + max(2 * nn, nn + o)
    return q + kv + o + (2 * stats if cfg.algo == "flash1" else stats)

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

# Non-matmul FLOPs, per element of S computed and per query row each time it meets a K/V block.
PER_SCORE = {"scale": 1, "rowmax": 1, "subtract": 1, "exp": 1, "rowsum": 1}
# FlashAttention-1, per row per step (Algorithm 1, lines 11-12): m_new, two exp(a - b), l_new, the two
# coefficients l_i e^(m_i - m_new) / l_new and e^(m~ - m_new) / l_new, then 3 FLOPs per element of O_i.
FLASH1_PER_ROW_STEP = 1 + 4 + 3 + 3
FLASH1_PER_O_ELEMENT_STEP = 3
# FlashAttention-2, per row per step: m_new, alpha = exp(m_i - m_new), l_i = alpha l_i + rowsum;
# O_i is only multiplied by alpha (1 FLOP per element) and divided by l_i once at the end.
FLASH2_PER_ROW_STEP = 1 + 2 + 2
FLASH2_PER_O_ELEMENT_STEP = 1
FLASH2_PER_ROW_END = 2  # LSE = m_i + log(l_i); plus head_dim divisions O_i / l_i


def flops(cfg):
    """{kernel: (matmul_flops, other_flops, exps)} over all batches and heads; other_flops includes the
    exps (one FLOP each). Partial causal tiles are computed whole, as the kernels do; fully masked tiles
    are skipped."""
    t, d = cfg.tiling, cfg.head_dim
    tile_el = t.tile_elements  # S elements computed
    row_visits = int((t.rows_per_q_block * t.kv_blocks_per_q_block).sum())
    per_score = sum(PER_SCORE.values())
    if cfg.algo == "naive":
        exp_passes = 1 if cfg.softmax_fits else 2  # a streamed row recomputes its exponentials
        per_head = {
            "qk": (2 * d * tile_el, PER_SCORE["scale"] * tile_el, 0),
            "softmax": (0, (3 + 2 * exp_passes) * tile_el, exp_passes * tile_el),  # max, sum, divide; -, exp
            "pv": (2 * d * tile_el, 0, 0),
        }
    elif cfg.algo == "flash1":  # exp(S - m~) per score; exp(m_i - m_new), exp(m~ - m_new) per row and step
        per_row = FLASH1_PER_ROW_STEP + FLASH1_PER_O_ELEMENT_STEP * d
        per_head = {"flash1": (4 * d * tile_el, per_score * tile_el + per_row * row_visits, tile_el + 2 * row_visits)}
    else:  # flash2, hopper: exp(S - m_new) per score, alpha per row and step, log(l_i) per row
        per_row = FLASH2_PER_ROW_STEP + FLASH2_PER_O_ELEMENT_STEP * d
        end = (FLASH2_PER_ROW_END + d) * cfg.seq
        per_head = {cfg.algo: (4 * d * tile_el, per_score * tile_el + per_row * row_visits + end,
                               tile_el + row_visits + cfg.seq)}
    return {kernel: tuple(x * cfg.bh for x in counts) for kernel, counts in per_head.items()}


def programs(cfg, kernel):
    """Thread blocks in the kernel's grid."""
    t = cfg.tiling
    return cfg.bh * {"qk": t.tiles, "softmax": cfg.seq, "pv": t.n_q_blocks, "flash1": 1,
                     "flash2": t.n_q_blocks, "hopper": t.n_q_blocks}[kernel]


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

"""The Hopper kernel (FlashAttention-3 style): flash2's tiles, so flash2's bytes and FLOPs, with the K/V
loads issued ahead by TMA into STAGES buffers and the softmax overlapped with the matmuls (warp
specialization), which changes the time, not the bytes. fp8 capable (O written in fp16)."""
from . import flash2

KERNELS = ("hopper",)
TENSOR_BYTES = {}
L2_REUSE = {"hopper": ("kv_per_q_block", ("K", "V"))}
STEP_TENSORS = {"hopper": ("K", "V")}
# triton 3.6's warp specializer is right only for 128 x 128 tiles, 2 stages (kernels/hopper.py): other tiles
# run software-pipelined on 8 warps, 3 stages
WARP_SPECIALIZED = (128, 128)
STAGES = 2  # K/V buffers the Hopper kernel keeps in flight


def default_blocks(gpu, head_dim, dtype):
    return flash2.default_blocks(gpu, head_dim, dtype, kv_buffers=STAGES)


def sram_bytes(cfg, kernel, rows, keys):
    """Q_i, and K_j, V_j in STAGES buffers (TMA loads ahead of use)."""
    return flash2.sram_bytes(cfg, kernel, rows, keys, kv_buffers=STAGES)


def programs(cfg, kernel):
    return flash2.programs(cfg, kernel)


def work(cfg, kernel):
    return flash2.work(cfg, kernel)


def shared_bytes(cfg, kernel, num_stages):
    """sram_bytes holds STAGES K/V buffers; a deeper pipeline holds more."""
    return cfg.sram_bytes(kernel) + (num_stages - STAGES) * flash2.stage_bytes(cfg, kernel)


def register_tiles(cfg, kernel):
    """flash2's tiles, held by the two consumer warp groups alone (8 of the 12 warps): scaled by 12/8 so that
    spread over all the block's threads they give a consumer thread's share."""
    return flash2.register_tiles(cfg, kernel) * (3 if warp_specialized(cfg) else 2) // 2


def peak_bytes(cfg):
    return flash2.peak_bytes(cfg)


def count(cfg):
    return flash2.count(cfg, kernel="hopper")


def flops(cfg):
    return flash2.flops(cfg, kernel="hopper")


def warp_specialized(cfg):
    return (cfg.block_q, cfg.block_kv) == WARP_SPECIALIZED


def launch(cfg, kernel="hopper"):
    """Warp-specialized: a producer warp group and two consumer warp groups of 4 warps, STAGES deep.
    Otherwise 8 warps, 3 stages (kernels/hopper.py)."""
    return (12, STAGES) if warp_specialized(cfg) else (8, 3)


def streams(cfg, kernel):
    """Two consumer warp groups, 64 rows each: one's softmax overlaps the other's matmuls."""
    return 2 if warp_specialized(cfg) else 1


def execute(mem, cfg):
    flash2.execute(mem, cfg, kernel="hopper")

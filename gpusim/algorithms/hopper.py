"""The Hopper kernel (FlashAttention-3 style): flash2's tiles, so flash2's bytes and FLOPs, with the K/V
loads issued ahead by TMA into STAGES buffers and the softmax overlapped with the matmuls (warp
specialization), which changes the time, not the bytes. fp8 capable (O written in fp16)."""
from . import flash2

KERNELS = ("hopper",)
TENSOR_BYTES = {}
L2_REUSE = {"hopper": ("kv_per_q_block", ("K", "V"))}
STAGES = 2  # K/V buffers the Hopper kernel keeps in flight


def default_blocks(gpu, head_dim, dtype):
    return flash2.default_blocks(gpu, head_dim, dtype, kv_buffers=STAGES)


def sram_bytes(cfg, kernel, rows, keys):
    """Q_i, and K_j, V_j in STAGES buffers (TMA loads ahead of use)."""
    return flash2.sram_bytes(cfg, kernel, rows, keys, kv_buffers=STAGES)


def programs(cfg, kernel):
    return flash2.programs(cfg, kernel)


def count(cfg):
    return flash2.count(cfg, kernel="hopper")


def flops(cfg):
    return flash2.flops(cfg, kernel="hopper")


def launch(cfg, kernel="hopper"):
    """Two consumer warp groups of 4 warps and a producer (kernels/hopper.py), STAGES deep."""
    return 4, STAGES


def execute(mem, cfg):
    flash2.execute(mem, cfg, kernel="hopper")

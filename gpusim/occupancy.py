"""What one thread block of a kernel holds (registers, shared memory, warps) and how many blocks an SM
keeps resident at once: occupancy, computed the way CUDA's occupancy calculator does
(cudaOccupancyMaxActiveBlocksPerMultiprocessor; the rules are restated below).

Registers per thread come from the compiled kernel where the project has compiled it for the GPU's
architecture (gpusim/compiled.py, written by benchmarks/resources.py from triton's own compiler and ptxas),
and otherwise from an estimate from the tile shapes: the fp32 tiles a block keeps in registers (the score
tile S_ij, the accumulator O_i, ...) spread over its threads, plus what every kernel keeps besides (indices,
pointers, row statistics), REGISTER_BASE. tests/test_presets.py checks the estimate against the compiled
values.
"""
from dataclasses import dataclass

from .compiled import COMPILED
from .hardware import WARP
from .passes.common import REGISTER_BASE
REGISTER_ALLOCATION_UNIT = 256  # registers are allocated per warp in units of 256 (occupancy calculator)
# shared memory is allocated per block in units of 128 B from cc 8.0, of 256 B before (cuda_occupancy.h,
# cudaOccSMemAllocationGranularity)
SHARED_ALLOCATION_UNIT = {7: 256}  # by compute capability's major; 128 B where not listed
SUB_PARTITIONS = 4  # an SM's register file is split between its 4 warp schedulers


@dataclass(frozen=True)
class Resources:
    num_warps: int
    num_stages: int
    registers_per_thread: int
    shared_bytes: int  # per block: the staged tiles, Triton's scratch included where compiled
    spill_bytes_per_thread: int  # local-memory stores + loads per thread in the code, as ptxas reports them
    #                              (static: the traffic, per iteration of each loop, is pass_.spill's)
    compiled: bool  # True: read off the compiled kernel; False: estimated from the tile shapes
    loops: tuple = ()  # compiled: per loop, (instructions a warp issues per iteration but HGMMA, MUFU of them,
    #                    LDL of them: spill reloads, bytes per thread its LDL load, bytes its STL store); an
    #                    outer loop's figures include the loops nested in it
    issued: tuple = (0, 0, 0, 0, 0)  # compiled: the same over the whole kernel

    @property
    def threads(self):
        return WARP * self.num_warps


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    limits: dict  # {"registers", "shared memory", "warps", "blocks"}: blocks per SM each allows

    @property
    def limited_by(self):
        return min(self.limits, key=self.limits.get)


def resources(cfg, kernel):
    """The kernel's resources per thread block: compiled where known, else estimated."""
    pass_ = cfg.pass_
    num_warps, num_stages = pass_.options(cfg, kernel)
    key = (cfg.gpu.arch, pass_.compiled_name(cfg, kernel), pass_.compiled_shape(cfg, kernel), cfg.dtype, cfg.causal,
           *pass_.compiled_tiles(cfg, kernel), num_warps, num_stages)
    block_warps = pass_.block_warps(cfg, kernel, num_warps)
    if key in COMPILED:
        registers, spill, shared, loops, issued = COMPILED[key]
        return Resources(block_warps, num_stages, registers, shared, spill, True, loops, issued)
    shared = pass_.shared_bytes(cfg, kernel, num_stages)
    return Resources(block_warps, num_stages, estimate_registers(cfg, kernel, block_warps), shared, 0, False)


def estimate_registers(cfg, kernel, num_warps):
    """REGISTER_BASE + the fp32 tiles the block keeps in registers, over its threads (4 bytes a register)."""
    tile_bytes = cfg.pass_.register_tiles(cfg, kernel)
    return REGISTER_BASE + -(-tile_bytes // (4 * WARP * num_warps))


def occupancy(gpu, res):
    """Blocks of `res` one SM of `gpu` keeps resident: the least of what its registers, shared memory, warp
    slots and block slots allow.
    - registers: each warp gets registers_per_thread * 32 rounded up to 256; the register file is split
      into 4 sub-partitions, each holding whole warps; a block needs all its warps resident.
    - shared memory: the block's bytes plus the 1 KiB the system reserves per block (cc >= 8.0), rounded up
      to 128 B (256 B before cc 8.0), against the SM's shared memory.
    - warps and blocks: the SM's limits per compute capability.
    A block over 255 registers per thread, or one whose limits allow none, cannot run: 0."""
    per_warp = -(-res.registers_per_thread * WARP // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    warps_by_registers = (gpu.registers_per_sm // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS
    unit = SHARED_ALLOCATION_UNIT.get(int(gpu.arch[3:]) // 10, 128)
    shared = -(-(res.shared_bytes + gpu.sram_reserved_bytes_per_block) // unit) * unit
    limits = {
        "registers": warps_by_registers // res.num_warps if res.registers_per_thread <= gpu.max_registers_per_thread else 0,
        "shared memory": (gpu.sram_bytes_per_sm // shared if shared else gpu.max_blocks_per_sm)
        if res.shared_bytes <= gpu.sram_bytes_per_block else 0,
        "warps": gpu.max_warps_per_sm // res.num_warps,
        "blocks": gpu.max_blocks_per_sm,
    }
    return Occupancy(min(limits.values()), limits)


def exceeded(gpu, res, occ):
    """(what a block of `res` needs, what `gpu` allows) for a block no SM can hold (occ.blocks_per_sm == 0): its
    registers per thread, its registers per block, its warps, or its shared memory."""
    if res.registers_per_thread > gpu.max_registers_per_thread:
        source = "compiled" if res.compiled else "estimated from the fp32 tiles in registers"
        return (f"{res.registers_per_thread} registers per thread ({source})",
                f"{gpu.name} allows {gpu.max_registers_per_thread}")
    if occ.limits["registers"] == 0:
        return (f"{res.registers_per_thread * res.threads:,} registers per block ({res.threads} threads x "
                f"{res.registers_per_thread})", f"an SM of {gpu.name} has {gpu.registers_per_sm:,}")
    if occ.limits["warps"] == 0:
        return f"{res.num_warps} warps per block", f"an SM of {gpu.name} holds {gpu.max_warps_per_sm}"
    shared = f"{res.shared_bytes:,} B of shared memory per block"
    return shared, f"{gpu.name} has {gpu.sram_bytes_per_block:,} B per thread block"

"""One GPU as the simulator sees it: SMs with on-chip SRAM, an L2, and HBM.

Every preset number carries its source. "Datasheet" rates are dense (no sparsity) peaks. Capacities
in bytes are exact integers; rates are per second.
"""
import dataclasses
import difflib
import math
from dataclasses import dataclass

KiB, MiB, GiB = 1024, 1024**2, 1024**3
GRID_YZ_MOST = 65_535  # CUDA's most thread blocks along a grid's y and z axes (maxGridSize; x: 2**31 - 1)

# Latency and one SM's transfer rate, as measured on the lent H200 (H200-measured, below) and carried to the
# datasheet presets: the L2's in clock cycles and bytes per clock at each GPU's own clock, DRAM's latency in seconds
# (an assumption: both are properties of the chips' designs, not published). The H100 measured later
# (H100-measured, results/h100/) disagrees for its own chip: DRAM port 41.9 GB/s against 69 here, L2 reads 7.3e12 B/s
# against 8.1e12, DRAM latency 455 ns against 490; H100-SXM keeps the H200's, as the held-out sets were scored on it.
HOPPER_L2_LATENCY_CYCLES = 544  # 274.8 ns at 1.98 GHz (H200-measured)
HOPPER_L2_IDLE_LATENCY_CYCLES = 289  # 146 ns at 1.98 GHz: an L2 hit, idle (pointer chase, H200-measured)
HOPPER_HBM_LATENCY_S = 490e-9  # H200-measured
HOPPER_L2_PORT_BYTES_PER_CLOCK = 79  # 157 GB/s at 1.98 GHz (H200-measured)
HOPPER_HBM_PORT_BYTES_PER_CLOCK = 35  # 69 GB/s at 1.98 GHz (H200-measured)

# Bytes per element of each storage dtype. Statistics (l, m, LSE) are always fp32.
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
STATS_BYTES = 4
WARP = 32  # threads per warp (CUDA C++ Programming Guide, SIMT architecture)


INTEGER_FIELDS = ("sm_count", "sram_bytes_per_sm", "sram_bytes_per_block", "l2_bytes", "hbm_bytes", "registers_per_sm",
                  "max_registers_per_thread", "max_warps_per_sm", "max_blocks_per_sm", "sram_reserved_bytes_per_block",
                  "l2_partitions")


@dataclass(frozen=True)
class GPU:
    name: str
    sm_count: int
    sram_bytes_per_sm: int  # shared memory one SM can hand to its resident thread blocks
    sram_bytes_per_block: int  # the most one thread block may opt in to
    l2_bytes: int
    hbm_bytes: int
    hbm_bytes_per_s: float  # the datasheet's peak (datasheet presets: a copy reaches less), or a device-to-device
    #                         copy's bytes read + written over its time (measured presets)
    fp32_flops_per_s: float  # CUDA cores (an FMA counts 2): the rate of non-matmul work but exponentials
    sfu_ops_per_s: float  # special function units: exp2, log2, reciprocal results per second
    fp16_matmul_flops_per_s: float  # tensor cores, fp16 inputs, fp32 accumulate
    bf16_matmul_flops_per_s: float | None = None  # None: no bf16 tensor cores
    tf32_matmul_flops_per_s: float | None = None  # None: no TF32 tensor cores
    fp8_matmul_flops_per_s: float | None = None  # None: no fp8 tensor cores
    l2_bytes_per_s: float | None = None  # None: not published, and the L2 is priced at hbm_bytes_per_s (cost.rates)
    hbm_read_bytes_per_s: float | None = None  # a stream of reads alone; None: not measured (the copy's)
    sram_bytes_per_s: float | None = None  # all SMs together; None: not published
    # What occupancy and latency need (CUDA C++ Programming Guide, "Technical Specifications per Compute
    # Capability", unless a preset says otherwise)
    arch: str = "sm_80"  # the compiler target: selects compiled kernel resources (gpusim/compiled.py)
    clock_hz: float = 1.41e9  # SM boost clock
    registers_per_sm: int = 65536  # 64 K 32-bit registers, every compute capability here
    max_registers_per_thread: int = 255
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    sram_reserved_bytes_per_block: int = 1024  # cc >= 8.0 reserves 1 KiB of shared memory per block
    l2_latency_s: float = 200 / 1.41e9  # an L2 hit, as a block waits for it while every SM loads; each preset sets
    hbm_latency_s: float = 500 / 1.41e9  # its own (these defaults, for a GPU built by hand, are assumed cycles)
    l2_idle_latency_s: float = 289 / 1.41e9  # an L2 hit on an idle path: one load waited for (a pointer chase)
    l2_port_bytes_per_s: float | None = None  # one SM's own transfer rate from L2; None: the datasheet-level
    hbm_port_bytes_per_s: float | None = None  # estimate in port_bytes_per_s()
    # The rate at which a lone 8-warp flash2 program, pipelined 3 or 4 stages deep, copies its K/V tiles
    # (cost.lone_copy), and any flash2 program its own Q and O tiles (cost.own_copy); None: not measured, and such
    # a program waits for its whole load each step and for its Q tile at the port's rate
    lone_copy_bytes_per_s: float | None = None
    # An empty kernel launch, median, timed with CUDA events around each call (results/h200/ceilings.json). Replayed
    # from a CUDA graph it takes 0.74 us (graph_launch_s); the 3.2 us stays: docs/perf.md, "A lone program", and
    # "What a launch is made of" (launch_parts.json: it stands in for part of a lone program's cost)
    launch_overhead_s: float = 3.2e-6
    # The empty kernel, one program per SM, replayed from a CUDA graph: the launch of a kernel whose lone programs are
    # priced as they were measured in graph replays, whole (the Hopper kernel's: passes/hopper.py LONE_SETUP_S);
    # None: not measured (such a kernel launches in launch_overhead_s)
    graph_launch_s: float | None = None
    # A stream of stores alone, each program writing its tile from registers and exiting (cost.stored_after); None: not
    # measured, at hbm_bytes_per_s
    store_bytes_per_s: float | None = None
    # A training step called from Python (the trainable's forward, autograd, the backward's launches) cannot end
    # before the host has issued it: its per-call host cost, measured; 0: not measured (no floor)
    train_step_host_s: float = 0.0
    mma_efficiency: tuple = ()  # ((block_q, block_kv, head_dim, num_warps), fraction of the matmul peak)
    tensor_pipe_ratio: tuple = ()  # ((block_kv, the tensor pipe's rate over mma_efficiency's), ...): cost.pipe
    l2_partitions: int = 1  # L2 partitions, each caching what the SMs beside it read: see l2_reuse_bytes
    peer_link: str | None = None  # gpusim/links.py's link between two of these in one node; None: no NVLink

    def __post_init__(self):
        """One line naming a number no GPU can have: a count, size, rate or time that is not positive and finite
        (the fields whose 0 means "none" or "not measured" aside), a count or size in bytes that is not a whole
        number, a thread block allowed more shared memory than its SM has, or an arch that is not a compiler target."""
        for name, value in self.__dict__.items():  # the fields, not copied (dataclasses.asdict deep-copies tables)
            if name in INTEGER_FIELDS and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"GPU {self.name!r}: {name}={value!r} must be a whole number (an int)")
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 < value < math.inf and \
                    not (value == 0 and name in ("sram_reserved_bytes_per_block", "train_step_host_s")):
                raise ValueError(f"GPU {self.name!r}: {name}={value!r} must be positive and finite")
        if self.sram_bytes_per_block > self.sram_bytes_per_sm:
            raise ValueError(f"GPU {self.name!r}: sram_bytes_per_block={self.sram_bytes_per_block:,} is more than "
                             f"sram_bytes_per_sm={self.sram_bytes_per_sm:,}: a block's shared memory is its SM's")
        if not (isinstance(self.arch, str) and self.arch.startswith("sm_") and self.arch[3:].isdigit()):
            raise ValueError(f"GPU {self.name!r}: arch={self.arch!r} must be a compiler target, sm_ and a compute "
                             "capability ('sm_80', 'sm_90')")

    def dram_bytes_per_s(self, write_share):
        """DRAM bandwidth for traffic of which write_share is writes: a stream of reads alone at
        hbm_read_bytes_per_s, half writes (a copy) or more at hbm_bytes_per_s, in between on the line through
        those two measurements (nothing fitted)."""
        read = self.hbm_read_bytes_per_s or self.hbm_bytes_per_s
        return read + (self.hbm_bytes_per_s - read) * min(1.0, 2 * write_share)

    def l2_reuse_bytes(self, every_sm):
        """The L2 that data re-read can fill. With P partitions, each caching what the SMs beside it read (A100
        whitepaper: "Each L2 partition localizes and caches data for memory accesses from SMs in the GPCs
        directly connected to the partition"), a line read from every SM is held once in each partition, and
        one read from one SM at a time in its home partition plus, (P - 1) / P of the time, in the reader's:
        1 + (P - 1) / P copies. Derived, not fitted: on the lent H200 half the re-reads miss at 30.7 MiB read
        from every SM and at 42.4-43.9 MiB read from one SM at a time, against 30 and 40 MiB here
        (results/h200/l2_reuse.json)."""
        p = self.l2_partitions
        return int(self.l2_bytes / (p if every_sm else 1 + (p - 1) / p))

    def port_bytes_per_s(self, level):
        """One SM's own transfer rate from `level` ("l2" or "hbm") while it waits alone: measured where the
        preset says, else the H200's bytes per clock at this GPU's clock."""
        measured = self.l2_port_bytes_per_s if level == "l2" else self.hbm_port_bytes_per_s
        per_clock = HOPPER_L2_PORT_BYTES_PER_CLOCK if level == "l2" else HOPPER_HBM_PORT_BYTES_PER_CLOCK
        return measured or per_clock * self.clock_hz

    def matmul_flops_per_s(self, dtype):
        """Peak matmul rate for inputs of `dtype`. fp32 matmuls run in full precision on the CUDA cores, as
        the project's kernels (input_precision="ieee") and torch's default do, not in TF32."""
        check_dtype(dtype)
        if dtype == "fp32":
            return self.fp32_flops_per_s
        rate = {"fp16": self.fp16_matmul_flops_per_s, "bf16": self.bf16_matmul_flops_per_s,
                "fp8": self.fp8_matmul_flops_per_s}[dtype]
        if rate is None:
            raise ValueError(f"dtype={dtype!r}: {self.name} has no {dtype} tensor cores")
        return rate


def _a100(name, hbm_bytes, hbm_bytes_per_s):
    return GPU(
        name=name,
        sm_count=108,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 3
        sram_bytes_per_sm=164 * KiB,  # CUDA C++ Programming Guide, Technical Specifications, cc 8.0
        sram_bytes_per_block=163 * KiB,  # same table: max shared memory per thread block, cc 8.0
        l2_bytes=40 * MiB,  # A100 whitepaper: "40 MB L2 cache"
        l2_partitions=2,  # A100 whitepaper: "The L2 cache is divided into two partitions"
        hbm_bytes=hbm_bytes,
        hbm_bytes_per_s=hbm_bytes_per_s,
        fp32_flops_per_s=19.5e12,  # A100 datasheet: FP32 19.5 TFLOPS
        sfu_ops_per_s=16 * 108 * 1.41e9,  # Programming Guide throughput table: 16/clk/SM (cc 8.0); 1410 MHz boost
        tf32_matmul_flops_per_s=156e12,  # A100 datasheet: TF32 Tensor Core 156 TFLOPS (dense)
        fp16_matmul_flops_per_s=312e12,  # A100 datasheet: FP16 Tensor Core 312 TFLOPS (dense)
        bf16_matmul_flops_per_s=312e12,  # A100 datasheet: BF16 Tensor Core 312 TFLOPS (dense)
        l2_bytes_per_s=5120 * 1.41e9,  # A100 whitepaper: 5120 B/clk L2 read bandwidth, 1410 MHz boost
        sram_bytes_per_s=19e12,  # FlashAttention paper (Dao et al. 2022), Sec. 2.1: "around 19TB/s"
        arch="sm_80",
        clock_hz=1.41e9,  # A100 whitepaper: 1410 MHz boost
        max_warps_per_sm=64,  # Programming Guide, Technical Specifications: cc 8.0
        max_blocks_per_sm=32,  # same table, cc 8.0
        l2_latency_s=HOPPER_L2_LATENCY_CYCLES / 1.41e9,  # not measured here: the H200's cycles at this clock
        l2_idle_latency_s=HOPPER_L2_IDLE_LATENCY_CYCLES / 1.41e9,
        hbm_latency_s=HOPPER_HBM_LATENCY_S,  # not measured here: the H200's DRAM latency in seconds
        peer_link="nvlink3",  # A100 datasheet (SXM4): third-generation NVLink, 600 GB/s bidirectional
    )


def _hopper(name, hbm_bytes, hbm_bytes_per_s, l2_bytes):
    return GPU(
        name=name,
        sm_count=132,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5 has 132 SMs
        sram_bytes_per_sm=228 * KiB,  # CUDA C++ Programming Guide, Technical Specifications, cc 9.0
        sram_bytes_per_block=227 * KiB,  # same table: max shared memory per thread block, cc 9.0
        l2_bytes=l2_bytes,
        l2_partitions=2,  # as the A100's; the H200's L2 fabric carries sectors between them (l2_reuse.json)
        hbm_bytes=hbm_bytes,
        hbm_bytes_per_s=hbm_bytes_per_s,
        fp32_flops_per_s=67e12,  # H100 SXM datasheet: FP32 67 TFLOPS
        sfu_ops_per_s=16 * 132 * 1.98e9,  # Programming Guide throughput table: 16/clk/SM (cc 9.0); 1980 MHz boost
        tf32_matmul_flops_per_s=494.5e12,  # H100 SXM datasheet: TF32 989 TFLOPS with sparsity, halved
        fp16_matmul_flops_per_s=989.5e12,  # H100 SXM datasheet: FP16 1,979 TFLOPS with sparsity, halved
        bf16_matmul_flops_per_s=989.5e12,  # H100 SXM datasheet: BF16 1,979 TFLOPS with sparsity, halved
        fp8_matmul_flops_per_s=1979e12,  # H100 SXM datasheet: FP8 3,958 TFLOPS with sparsity, halved
        l2_bytes_per_s=8.1e12,  # not published: L2 reads measured on the lent H200 (results/h200/ceilings.json)
        arch="sm_90",
        clock_hz=1.98e9,  # nvidia-smi's max SM clock on both lent GPUs (sm_max_clock_hz, results/h{1,2}00/latency.json)
        max_warps_per_sm=64,  # Programming Guide, Technical Specifications: cc 9.0
        max_blocks_per_sm=32,  # same table, cc 9.0
        l2_latency_s=HOPPER_L2_LATENCY_CYCLES / 1.98e9,  # as measured on the lent H200 (H200-measured)
        l2_idle_latency_s=HOPPER_L2_IDLE_LATENCY_CYCLES / 1.98e9,
        hbm_latency_s=HOPPER_HBM_LATENCY_S,  # as measured on the lent H200 (H200-measured)
        peer_link="nvlink4",  # H100 SXM and H200 datasheets: fourth-generation NVLink, 900 GB/s bidirectional
    )


PRESETS = {
    gpu.name: gpu
    for gpu in [
        _a100("A100-40GB", 40 * GiB, 1555e9),  # A100 datasheet: 40GB HBM2, 1,555 GB/s
        _a100("A100-80GB", 80 * GiB, 2039e9),  # A100 datasheet: 80GB HBM2e, 2,039 GB/s (SXM)
        _hopper("H100-SXM", 80 * GiB, 3.35e12, 50 * MiB),  # H100 datasheet: 80GB, 3.35 TB/s; whitepaper: 50 MB L2
        # (datasheet capacities are nominal GiB here; the measured presets hold what torch can allocate)
        # H200 datasheet: 141GB HBM3e at 4.8 TB/s; compute is the H100 SXM's. Capacity (what torch can
        # allocate) and L2 as read on the lent H200 (results/h200/ceilings.json).
        _hopper("H200", 150_109_880_320, 4.8e12, 60 * MiB),
        GPU(
            name="RTX-4090",
            sm_count=128,  # NVIDIA Ada GPU Architecture whitepaper, Appendix A: 128 SMs
            sram_bytes_per_sm=100 * KiB,  # CUDA C++ Programming Guide, Technical Specifications, cc 8.9
            sram_bytes_per_block=99 * KiB,  # same table: max shared memory per thread block, cc 8.9
            l2_bytes=72 * MiB,  # Ada whitepaper: 72 MB L2
            hbm_bytes=24 * GiB,  # Ada whitepaper: 24 GB GDDR6X (not HBM; the same level of the hierarchy)
            hbm_bytes_per_s=1008e9,  # Ada whitepaper: 1008 GB/s
            fp32_flops_per_s=82.6e12,  # Ada whitepaper: 82.6 TFLOPS FP32
            sfu_ops_per_s=16 * 128 * 2.52e9,  # Programming Guide: 16/clk/SM (cc 8.9); Ada whitepaper: 2520 MHz
            tf32_matmul_flops_per_s=82.6e12,  # Ada whitepaper: TF32 Tensor 82.6 TFLOPS (dense)
            fp16_matmul_flops_per_s=165.2e12,  # Ada whitepaper: FP16 Tensor, FP32 accumulate, 165.2 (dense)
            bf16_matmul_flops_per_s=165.2e12,  # Ada whitepaper: BF16 Tensor, FP32 accumulate, 165.2 (dense)
            fp8_matmul_flops_per_s=330.3e12,  # Ada whitepaper: FP8 Tensor, FP32 accumulate, 330.3 (dense)
            arch="sm_89",
            clock_hz=2.52e9,  # Ada whitepaper: 2520 MHz boost
            max_warps_per_sm=48,  # Programming Guide, Technical Specifications: cc 8.9
            max_blocks_per_sm=24,  # same table, cc 8.9
            l2_latency_s=HOPPER_L2_LATENCY_CYCLES / 2.52e9,  # not measured here: the H200's cycles at this clock
            l2_idle_latency_s=HOPPER_L2_IDLE_LATENCY_CYCLES / 2.52e9,
            hbm_latency_s=HOPPER_HBM_LATENCY_S,  # not measured here: the H200's DRAM latency in seconds
        ),
        GPU(
            name="T4",
            sm_count=40,  # NVIDIA Turing GPU Architecture whitepaper: Tesla T4 has 40 SMs
            sram_bytes_per_sm=64 * KiB,  # CUDA C++ Programming Guide, Technical Specifications, cc 7.5
            sram_bytes_per_block=64 * KiB,  # same table: max shared memory per thread block, cc 7.5
            l2_bytes=4 * MiB,  # Turing whitepaper: T4 has a 4 MB L2
            hbm_bytes=16 * GiB,  # T4 datasheet: 16 GB GDDR6
            hbm_bytes_per_s=320e9,  # T4 datasheet: 320+ GB/s
            fp32_flops_per_s=8.1e12,  # T4 datasheet: 8.1 TFLOPS single precision
            sfu_ops_per_s=16 * 40 * 1.59e9,  # Programming Guide: 16/clk/SM (cc 7.5); T4 datasheet: 1590 MHz boost
            fp16_matmul_flops_per_s=65e12,  # T4 datasheet: 65 TFLOPS mixed precision (FP16/FP32)
            arch="sm_75",
            clock_hz=1.59e9,  # T4 datasheet: 1590 MHz boost
            max_warps_per_sm=32,  # Programming Guide, Technical Specifications: cc 7.5
            max_blocks_per_sm=16,  # same table, cc 7.5
            sram_reserved_bytes_per_block=0,  # the 1 KiB reservation begins with cc 8.0
            l2_latency_s=HOPPER_L2_LATENCY_CYCLES / 1.59e9,  # not measured here: the H200's cycles at this clock
            l2_idle_latency_s=HOPPER_L2_IDLE_LATENCY_CYCLES / 1.59e9,
            hbm_latency_s=HOPPER_HBM_LATENCY_S,  # not measured here: the H200's DRAM latency in seconds
        ),
    ]
}
# The lent H200 as measured, beside the datasheet preset: copy bandwidth (results/h200/ceilings.json,
# 2026-11-29, read as it is), the microbenchmarks of 2026-11-30 (results/h200/latency.json, bandwidth.json,
# matmul_tiles.json; 32 x 32 tiles from matmul_tiles_more.json, run 62) and a training step's host cost
# (host_run105.json, run 105), each constant but the copy rate derived by benchmarks/h200_constants.py, which
# tests/test_presets.py re-runs: none is fitted to attention timings.
PRESETS["H200-measured"] = dataclasses.replace(
    PRESETS["H200"], name="H200-measured",
    hbm_bytes_per_s=4.275e12,  # device-to-device copy, bytes read + written (ceilings.json)
    l2_bytes_per_s=8.378e+12,  # L2 loads with >= 64 KiB in flight per SM, median (bandwidth.json)
    hbm_read_bytes_per_s=4.597e+12,  # DRAM loads with >= 64 KiB in flight per SM, median (bandwidth.json)
    hbm_latency_s=4.897e-07,  # a block's DRAM load latency while every SM loads (bandwidth.json)
    l2_latency_s=2.748e-07,  # the same for an L2 hit
    hbm_port_bytes_per_s=6.888e+10,  # one SM's transfer rate from DRAM, alone in its wait
    l2_port_bytes_per_s=1.573e+11,  # and from L2
    lone_copy_bytes_per_s=1.883e+10,  # a lone 8-warp flash2 program's K/V bytes per step, 3-4 stages (lone_program.json)
    graph_launch_s=7.356e-07,  # an empty kernel of 132 programs replayed from a CUDA graph (lone_program.json, run 95)
    store_bytes_per_s=4.568e+12,  # stores of 4-64 KiB tiles, a program each, 2 GiB in all, median (bandwidth.json)
    sfu_ops_per_s=4.137e+12,  # exp2 results per second (matmul_tiles.json, exp2_rate)
    fp32_flops_per_s=6.151e+13,  # fp32 FMAs per second x 2 (matmul_tiles.json, fma_rate)
    fp16_matmul_flops_per_s=8.696e+14,  # the fastest tl.dot loop (matmul_tiles.json)
    bf16_matmul_flops_per_s=8.905e+14,  # the fastest bf16 tl.dot loop
    fp8_matmul_flops_per_s=1.398e+15,  # the fastest e4m3 tl.dot loop
    train_step_host_s=5.928e-04,  # flash2_train_step's per-call wall time, median of 3 small shapes (host_run105.json, run 105; run 44's: 711 us, run 37's: 522 us)
    # Nsight's tensor-pipe active cycles against gpusim's matmul time at mma_efficiency, the median over runs 128 and
    # 129's 22 flash2 forward, dK/dV and dQ launches of each block_kv (bwd_rates.json, fwd_rates.json;
    # report_steps.pipe_ratios): mma_efficiency is a loop's wall clock, its other instructions in it
    tensor_pipe_ratio=((32, 1.274), (64, 1.113), (128, 1.117)),  # block_kv: Nsight's pipe over gpusim's (runs 128, 129)
    mma_efficiency=(  # (block_q, block_kv, head_dim, num_warps): fraction of the fp16 peak (matmul_tiles.json;
        # 32 x 32: matmul_tiles_more.json, against the fastest shape measured again in its run)
        ((32, 32, 64, 4), 0.249),
        ((32, 32, 64, 8), 0.136),
        ((32, 32, 128, 4), 0.297),
        ((32, 32, 128, 8), 0.162),
        ((32, 64, 64, 4), 0.329),
        ((32, 64, 64, 8), 0.208),
        ((32, 64, 128, 4), 0.405),
        ((32, 64, 128, 8), 0.268),
        ((64, 32, 64, 4), 0.852),
        ((64, 32, 64, 8), 0.359),
        ((64, 32, 128, 4), 0.842),
        ((64, 32, 128, 8), 0.37),
        ((64, 64, 64, 4), 0.952),
        ((64, 64, 64, 8), 0.532),
        ((64, 64, 128, 4), 1.0),
        ((64, 64, 128, 8), 0.509),
        ((64, 128, 64, 4), 0.969),
        ((64, 128, 64, 8), 0.579),
        ((64, 128, 128, 4), 1.0),
        ((64, 128, 128, 8), 0.611),
        ((128, 32, 64, 4), 0.898),
        ((128, 32, 64, 8), 0.85),
        ((128, 32, 128, 4), 0.843),
        ((128, 32, 128, 8), 0.852),
        ((128, 64, 64, 4), 0.947),
        ((128, 64, 64, 8), 0.979),
        ((128, 64, 128, 4), 0.988),
        ((128, 64, 128, 8), 0.967),
        ((128, 128, 64, 4), 0.87),
        ((128, 128, 64, 8), 0.963),
        ((128, 128, 128, 4), 0.501),
        ((128, 128, 128, 8), 0.976),
        ((256, 64, 64, 4), 0.58),
        ((256, 64, 64, 8), 0.939),
        ((256, 64, 128, 4), 0.204),
        ((256, 64, 128, 8), 0.964),
    ),
)

# An H100 (NVIDIA H100 80GB HBM3, the lent kind) measured the same way, on 2026-12-06 (run 173, results/h100/): its
# capacity, L2 and launch overhead as ceilings.json reads them, every other field the H200's rule applied to its own
# microbenchmarks (benchmarks/h200_constants.py --results results/h100 --host host_run173, which tests/test_presets.py
# re-runs); what no microbenchmark of that run sets (the tensor pipe's ratio from Nsight, the Hopper SM's limits) is
# H200-measured's.
PRESETS["H100-measured"] = dataclasses.replace(
    PRESETS["H200-measured"], name="H100-measured",
    hbm_bytes=85_017_493_504,  # what torch can allocate (ceilings.json)
    l2_bytes=50 * MiB,  # ceilings.json: 52,428,800 B
    launch_overhead_s=3.968e-06,  # an empty kernel, median, CUDA events around each call (ceilings.json)
    hbm_bytes_per_s=3.018e+12,  # device-to-device copy, bytes read + written (ceilings.json)
    hbm_latency_s=4.552e-07,  # a block's DRAM load latency while every SM loads (bandwidth.json)
    hbm_port_bytes_per_s=4.189e+10,  # one SM's transfer rate from DRAM, alone in its wait
    l2_latency_s=2.753e-07,  # the same for an L2 hit
    l2_idle_latency_s=1.436e-07,  # an L2 hit, idle: the pointer chase (latency.json)
    l2_port_bytes_per_s=1.474e+11,  # and from L2
    l2_bytes_per_s=7.272e+12,  # L2 loads with >= 64 KiB in flight per SM, median (bandwidth.json)
    hbm_read_bytes_per_s=3.101e+12,  # DRAM loads with >= 64 KiB in flight per SM, median (bandwidth.json)
    sfu_ops_per_s=4.169e+12,  # exp2 results per second (matmul_tiles.json, exp2_rate)
    fp32_flops_per_s=6.204e+13,  # fp32 FMAs per second x 2 (matmul_tiles.json, fma_rate)
    fp16_matmul_flops_per_s=8.559e+14,  # the fastest tl.dot loop (matmul_tiles.json)
    bf16_matmul_flops_per_s=8.737e+14,  # the fastest bf16 tl.dot loop
    fp8_matmul_flops_per_s=1.379e+15,  # the fastest e4m3 tl.dot loop
    train_step_host_s=0.0003416,  # flash2_train_step's per-call wall time, median of 3 small shapes (host_run173.json;
    # the code the H100's held-out sets ran; with kept launches run 189's host.json has 255 us, docs/perf.md)
    lone_copy_bytes_per_s=1.803e+10,  # a lone 8-warp flash2 program's K/V bytes a step, 3-4 stages (lone_program.json)
    graph_launch_s=1.06e-06,  # an empty kernel of 132 programs replayed from a CUDA graph (lone_program.json)
    store_bytes_per_s=3.277e+12,  # stores of 4-64 KiB tiles, a program each, 2 GiB in all, median (bandwidth.json)
    mma_efficiency=(  # (block_q, block_kv, head_dim, num_warps): fraction of the fp16 peak (matmul_tiles.json;
        # 32 x 32: matmul_tiles_more.json, against matmul_tiles.PEAK measured again in its run)
        ((32, 32, 64, 4), 0.253),
        ((32, 32, 64, 8), 0.14),
        ((32, 32, 128, 4), 0.306),
        ((32, 32, 128, 8), 0.168),
        ((32, 64, 64, 4), 0.338),
        ((32, 64, 64, 8), 0.214),
        ((32, 64, 128, 4), 0.415),
        ((32, 64, 128, 8), 0.275),
        ((64, 32, 64, 4), 0.848),
        ((64, 32, 64, 8), 0.374),
        ((64, 32, 128, 4), 0.872),
        ((64, 32, 128, 8), 0.384),
        ((64, 64, 64, 4), 0.993),
        ((64, 64, 64, 8), 0.536),
        ((64, 64, 128, 4), 1.0),
        ((64, 64, 128, 8), 0.519),
        ((64, 128, 64, 4), 0.997),
        ((64, 128, 64, 8), 0.599),
        ((64, 128, 128, 4), 0.997),
        ((64, 128, 128, 8), 0.637),
        ((128, 32, 64, 4), 0.895),
        ((128, 32, 64, 8), 0.877),
        ((128, 32, 128, 4), 0.85),
        ((128, 32, 128, 8), 0.85),
        ((128, 64, 64, 4), 0.971),
        ((128, 64, 64, 8), 0.963),
        ((128, 64, 128, 4), 0.99),
        ((128, 64, 128, 8), 0.956),
        ((128, 128, 64, 4), 0.852),
        ((128, 128, 64, 8), 0.957),
        ((128, 128, 128, 4), 0.483),
        ((128, 128, 128, 8), 0.976),
        ((256, 64, 64, 4), 0.549),
        ((256, 64, 64, 8), 0.936),
        ((256, 64, 128, 4), 0.154),
        ((256, 64, 128, 8), 0.953),
    ),
)


def by_name(kind, plural, value, known, types):
    """`value` itself if it is one of `types`, else the entry of `known` of that name (case-insensitive); an
    unknown name gets one line listing the known ones and the closest."""
    if isinstance(value, types):
        return value
    by_lower = {name.lower(): name for name in known}
    if str(value).lower() in by_lower:
        return known[by_lower[str(value).lower()]]
    close = difflib.get_close_matches(str(value).lower(), list(by_lower), n=3, cutoff=0.3)  # "a100": A100-40GB too
    hint = f"; did you mean {' or '.join(by_lower[c] for c in close)}?" if close else ""
    raise ValueError(f"unknown {kind}={value!r}: known {plural} are {', '.join(known)}{hint}")


def get_gpu(gpu):
    """A GPU from a preset name (case-insensitive) or a GPU passed through."""
    return by_name("gpu", "GPUs", gpu, PRESETS, GPU)


def device_preset(name, memory_bytes=None):
    """The preset of a CUDA device by the name CUDA gives it ("NVIDIA H200"), A100s by their memory; None for a
    device without one (or an A100 whose memory is not given). A measured preset is taken only by the device it
    was measured on, named exactly: the SXM H100 ("NVIDIA H100 80GB HBM3") takes H100-measured, whose tile sweep
    (results/h100/tiles.json, run 176) has its pick the fastest tile measured in 24 of 24 groups, H100-SXM's within
    5% in 20 (docs/perf.md, "The tile each preset picks, on the H100"). Other Hopper parts keep their family's
    datasheet preset (H100 PCIe and NVL, and GH200, whose GPU is an H100: H100-SXM; H200 NVL: H200), so that the
    Hopper kernel runs on them, priced as that part: an H100 PCIe, 114 SMs, about 2.0 TB/s and 756 TFLOP/s of
    dense fp16 on its datasheet against the SXM's 132, 3.35 and 989, runs slower than its predictions; the RTX 4090 and the T4 are taken by their exact names (a laptop 4090 or a T400
    is another chip)."""
    exact = {"NVIDIA H200": "H200-measured", "NVIDIA H100 80GB HBM3": "H100-measured",
             "NVIDIA GeForce RTX 4090": "RTX-4090", "Tesla T4": "T4"}
    if name in exact:
        return exact[name]
    for key, preset in (("GH200", "H100-SXM"), ("H200", "H200"), ("H100", "H100-SXM")):
        if key in name:
            return preset
    if "A100" in name and memory_bytes:
        return "A100-80GB" if memory_bytes > 40 * GiB else "A100-40GB"
    return None


def check_dtype(dtype):
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r} is not supported: choose one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def dtype_name(dtype):
    """A storage dtype's name in any case ("FP16" is fp16, as the command line takes it), or check_dtype's line."""
    name = dtype.lower() if isinstance(dtype, str) else dtype
    check_dtype(name)
    return name

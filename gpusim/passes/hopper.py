"""The Hopper kernel (FlashAttention-3 style, kernels/hopper.py): flash2's tiles, so flash2's bytes and
FLOPs, with TMA loads issued ahead into KV_BUFFERS buffers, and, per launch, warp specialization (a producer warp
group and two consumer warp groups), the loop rotated so that a tile's softmax may run under the last one's
matmul (overlap: timed, it bought nothing, so priced as one stream), the causal mask on the diagonal blocks only,
and the longest programs first. These change the time, not the bytes. fp8 capable (O
written in fp16).

LAUNCHES is the one home of the kernel's launch table: per (head_dim, dtype, causal), the fastest correct
variant measured on the H200 (benchmarks/hopper_check.py, results/h200/hopper_variants.json); bf16 takes
fp16's. The kernel reads it; the model prices it.
"""
from ..shape import Tiles
from ..tiling import ramp_work
from .common import estimated_issue, per_step_spill
from .flash2 import PER_MASKED_SCORE, Flash2

# Per program of each launch kind (launch_kind), at each head dim: what a lone program (one an SM, one Q block, one K/V
# block or, causal, one Q block) waits besides gpusim's chain of it without a set-up, its TMA descriptors and barriers
# among it. Measured on six lone launches (LONE_LAUNCHES of benchmarks/report_launches.py:
# results/h200/hopper_waves.json, run 137; hopper_starts.json, run 138; hopper_pairs.json, run 142, the causal d = 64
# launch held to one program an SM by 6 stages): each one's wave less that chain (report_launches.lone_latency_s derives
# them; tests/test_presets.py checks).
# Priced on nothing else: docs/perf.md ("A lone Hopper program's wait, adopted") scores the other launches of runs
# 137-140.
LONE_SETUP_S = {("warp-specialized", 64): 4.038e-06, ("warp-specialized", 128): 4.144e-06,
                ("software-pipelined", 64): 1.288e-06, ("software-pipelined", 128): 1.346e-06,
                ("software-pipelined, causal", 64): 4.427e-06, ("software-pipelined, causal", 128): 1.44e-06}
# The warp-specialized launch's step, over the same step run software-pipelined (one warp group after the
# other's matmuls): results/h200/program_setup.json at 16 waves, 128 x 128 tiles, by head_dim (derived by
# benchmarks/h200_constants.py ws_step_ratio). Triton 3.6 cannot ping-pong the two consumer warp groups, so
# they hide 4-5% of a step under each other, not the half that two independent streams would.
WS_STEP_RATIO = {64: 0.956, 128: 0.946}
HEAD_DIMS = (64, 128)
# WS: warp-specialized, num_warps per warp group, one producer and two consumers, every causal block masked
# (triton 3.6's specializer takes one loop without branches). SWP: software-pipelined on 8 warps.
WS = dict(block_q=128, block_kv=128, num_stages=2, num_warps=4, warp_specialize=True, mask="every", overlap=False,
          lpt_heads=0)
SWP = dict(block_q=128, block_kv=128, num_stages=3, num_warps=8, warp_specialize=False, mask="split", overlap=False,
           lpt_heads=0)
# What a block holds in shared memory beside its Q tile and its stages of K and V, from Triton 3.6's shared-memory map
# of the compiled launches (MLIR_ENABLE_DUMP=1: the IR after allocate-shared-memory-nv), at d 64 and 128, block_q and
# block_kv 64 and 128, 2 and 3 stages, fp16 and fp8. Warp-specialized: a scratch of 64 x 64 fp16 per consumer warp
# group, through which its O tile changes layout on the way to the store (in 64-column pieces, whatever head_dim), and
# 128 B where the block makes its TMA descriptors. Rotated (overlap): one K tile more, the first, which the loop's
# prologue multiplies before the stages fill. Left out: the mbarriers (32-288 B) and, where Q's tile is aligned after
# them (causal launches of two loops), up to 1 KiB. tests/test_benchmarks.py checks every launch of
# results/sm90_resources.json (the warp-specialized ones 128 x 128 on 2 stages, the rotated ones the causal d = 64
# launches at every tile of the sweep); the other tiles and stages were compiled once (2026-12-04).
WS_SCRATCH_BYTES = 2 * 64 * 64 * 2 + 128
LAUNCHES = {
    (64, "fp16", False): WS,
    (64, "fp16", True): {**SWP, "block_kv": 64, "overlap": True, "lpt_heads": 1},
    (64, "fp8", False): SWP,
    (64, "fp8", True): {**SWP, "block_kv": 64},
    (128, "fp16", False): WS,
    (128, "fp16", True): {**SWP, "mask": "branch", "lpt_heads": 4},
    (128, "fp8", False): WS,
    (128, "fp8", True): {**SWP, "mask": "branch", "lpt_heads": 4},
}
LAUNCHES |= {(d, "bf16", causal): LAUNCHES[d, "fp16", causal] for d in HEAD_DIMS for causal in (False, True)}


def launch_options(cfg):
    """The kernel's launch for cfg: the table's, when cfg has its tiles, else software-pipelined, 8 warps; with
    the knobs a caller's Tiles sets (cfg.user_tiles: kernels/hopper.py gives every one it runs)."""
    own = LAUNCHES.get((cfg.head_dim, cfg.dtype, cfg.causal), SWP)
    if (own["block_q"], own["block_kv"]) != (cfg.block_q, cfg.block_kv):
        own = {**SWP, "block_q": cfg.block_q, "block_kv": cfg.block_kv}
    return own if cfg.user_tiles is None else {**own, **cfg.user_tiles.knobs}


def launch_kind(cfg):
    """cfg's launch kind and head dim: warp-specialized, software-pipelined, or software-pipelined and causal."""
    specialized = launch_options(cfg)["warp_specialize"]
    return ("warp-specialized" if specialized else "software-pipelined, causal" if cfg.causal else
            "software-pipelined"), cfg.head_dim


class Hopper(Flash2):
    """flash2's tiles and bytes, priced as kernels/hopper.py launches them."""
    name = "hopper"
    KERNELS = ("hopper",)
    L2_REUSE = {"hopper": ("kv_per_q_block", ("K", "V"))}
    STEP_TENSORS = {"hopper": ("K", "V")}
    TMA = True  # its tiles arrive by TMA copies, issued stages ahead
    # LONE_SETUP_S holds all that a lone program waits wave after wave in graph replays, so launch_overhead_s's 2.5 us
    # more, which stands in for part of a lone program's cost, would count it twice (docs/perf.md, "The Hopper kernel's
    # launch as a graph replays it")
    GRAPH_LAUNCH = True
    KV_BUFFERS = 2  # K/V buffers the SRAM model counts (TMA loads ahead of use)
    ARCHS = {"sm_90": "Hopper"}  # TMA and warpgroup matmuls (wgmma): Hopper only
    DTYPES = ("fp16", "bf16", "fp8")  # wgmma's 16- and 8-bit inputs (kernels/hopper.py OUT_DTYPES)
    KNOBS = ("num_warps", "num_stages", "warp_specialize", "mask", "overlap", "lpt_heads")

    def check(self, gpu, head_dim, dtype=None):
        """A Hopper GPU, one of DTYPES, and head_dim one of HEAD_DIMS (kernels/hopper.py runs those only)."""
        super().check(gpu, min(HEAD_DIMS), dtype)
        if head_dim not in HEAD_DIMS:
            runs = " and ".join(map(str, HEAD_DIMS))
            raise ValueError(f"head_dim={head_dim}: the hopper kernel runs head_dim {runs}")

    def kernel_blocks(self, head_dim, dtype, causal):
        """(block_q, block_kv) kernels/hopper.py runs when given none: its launch table's; None off the table."""
        own = LAUNCHES.get((head_dim, dtype, bool(causal)))
        return own and (own["block_q"], own["block_kv"])

    def tiles(self, cfg, kernel=None):
        """The launch kernels/hopper.py runs for cfg: its table's, or software-pipelined (launch_options)."""
        return Tiles(**launch_options(cfg))

    def setup_s(self, cfg):
        """The set-up of one program of cfg's launch: LONE_SETUP_S of its launch kind and head dim."""
        return LONE_SETUP_S[launch_kind(cfg)]

    def shared_bytes(self, cfg, kernel, num_stages):
        """sram_bytes holds KV_BUFFERS K/V buffers; a deeper pipeline holds more; warp-specialized, WS_SCRATCH_BYTES
        more; rotated, its first K tile (half a stage) more."""
        own, stage = launch_options(cfg), self.stage_bytes(cfg, kernel)
        extra = WS_SCRATCH_BYTES * own["warp_specialize"] + stage // 2 * own["overlap"]
        return cfg.sram_bytes(kernel) + (num_stages - self.KV_BUFFERS) * stage + extra

    def launch(self, cfg, kernel):
        """(num_warps, num_stages) as the kernel passes them to Triton; warp-specialized, num_warps is per warp
        group (block_warps counts the block's)."""
        own = launch_options(cfg)
        return own["num_warps"], own["num_stages"]

    def block_warps(self, cfg, kernel, num_warps):
        """The block's warps: a producer and two consumer warp groups of num_warps each (options', the launch's)
        when warp-specialized."""
        return num_warps * (3 if launch_options(cfg)["warp_specialize"] else 1)

    def streams(self, cfg, kernel):
        """Independent instruction streams in a block: two consumer warp groups when warp-specialized. The
        rotated loop (overlap=True) is one: timed against the same launch unrotated it ran 0.95-1.03x
        (results/h200/hopper_variants.json, docs/hopper.md), no more than a reordering of the same code."""
        return 2 if launch_options(cfg)["warp_specialize"] else 1

    def step_ratio(self, cfg, kernel):
        """A warp-specialized step's time over the serial step's (WS_STEP_RATIO, at the nearest head_dim
        measured); None for the other launches (one stream: gpusim/cost.py prices the serial step)."""
        if not launch_options(cfg)["warp_specialize"]:
            return None
        return WS_STEP_RATIO[min(WS_STEP_RATIO, key=lambda d: abs(d - cfg.head_dim))]

    def issue(self, cfg, kernel, res, other_flops, exps, steps, programs):
        """Estimated from the operations counted: the warp-specialized kernel's disassembly holds the producer's,
        both consumers' and the specializer's loops, which this model does not tell apart."""
        return estimated_issue(res, other_flops, exps, steps)

    def spill(self, cfg, kernel, res, steps, programs):
        """The base pass's loops in turn, not flash2's two: the warp-specialized disassembly's loops are the
        producer's, the consumers' and the specializer's (none of its compiled launches spills)."""
        return per_step_spill(res, steps, programs)

    def work(self, cfg, kernel):
        """flash2's programs; with lpt_heads, the longest Q blocks of each group of heads launch first."""
        return ramp_work(cfg.tiling, cfg.bh, self.launch_order(cfg))

    def launch_order(self, cfg):
        """Causal with lpt_heads: groups of lpt_heads heads, their longest Q blocks first (kernels/hopper.py's
        _program)."""
        lpt = launch_options(cfg)["lpt_heads"] if cfg.causal else 0
        return max(1, lpt), lpt > 0

    def register_tiles(self, cfg, kernel):
        """flash2's tiles, held by the consumer warps alone when warp-specialized (8 of the 12 warps): scaled by
        12/8 so that spread over all the block's threads they give a consumer thread's share."""
        return super().register_tiles(cfg, kernel) * (3 if launch_options(cfg)["warp_specialize"] else 2) // 2

    def flops(self, cfg):
        """flash2's, with the scores prescaled by log2(e) (one multiply fewer per score) and the mask on every
        block of a causal row when the launch masks every block."""
        (mm, other, exps), = super().flops(cfg).values()
        t, bh = cfg.tiling, cfg.bh
        other -= bh * t.tile_elements  # exp2 of prescaled scores: no multiply by log2(e)
        if launch_options(cfg)["mask"] == "every" and cfg.causal:
            other += bh * PER_MASKED_SCORE * t.unmasked_elements
        return {"hopper": (mm, other, exps)}


HOPPER = Hopper()

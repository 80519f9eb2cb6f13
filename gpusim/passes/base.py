"""The interface of a pass: what the model needs from each algorithm, written down once.

A pass is one object (an instance of a subclass of Pass) that holds one algorithm's rules: its kernels
and their grids, what each thread block stages in SRAM, the bytes each kernel moves (closed form), its
FLOPs, its tile walk on real arrays (execute mode), how it launches, and which L2 reuse pattern its
re-reads follow. A configuration (gpusim.shape: Config, Backward, DecodeLaunch) carries its pass in
`pass_`, resolved once when it is made; the pricing (gpusim/l2.py, occupancy.py, cost.py) calls the
methods below and nothing else. Every optional method has its default here, so nothing probes a pass.

Methods take the configuration `cfg` first; `kernel` is one of cfg.kernels.
"""
from ..hardware import PRESETS
from ..shape import Tiles
from .common import per_step_issue, per_step_spill


class Pass:
    """One algorithm's rules. Subclasses set the class attributes and define the methods that raise here."""
    name = ""  # what simulate() calls it: naive, flash1, flash2, hopper, split_kv, or "<algo>_backward"
    KERNELS = ()  # its launches, in order
    TENSOR_BYTES = {}  # bytes per element of the tensors whose width is not the dtype's (fp32 accumulators)
    # {kernel: (pattern, re-read tensors)}: which of gpusim/l2.py's rules finds the re-reads that hit
    # ("kv_per_q_block", "rmw_per_head", "tiles", "row_passes"), or "own": the pass's dram_reads says
    L2_REUSE = {}
    STEP_TENSORS = {}  # {kernel: tensors loaded every step of its loop}; the rest load before it or store after
    ADDRESS_TENSORS = {}  # {kernel: tensors whose loads give the step's addresses} (a paged gather's block table)
    FENCED = ()  # kernels whose steps wait for their own stores to land (a read-modify-write in HBM)
    TMA = False  # True: its tiles arrive by TMA copies issued stages ahead (Hopper's tensor memory accelerator)
    FLAT_ISSUE = ()  # kernels whose steps issue at one warp per scheduler however many warps are resident
    ISSUE_HIDING = {}  # {kernel: the issue rate one resident warp per scheduler sustains}, where not cost.py's
    MEASURED_ISSUE = {}  # {kernel: its warps' issue rate as Nsight measured it}: timed as Nsight sees it, cost.measured
    LONE_FULL_ISSUE = ()  # kernels whose lone program (one or two warps per scheduler) issues at the full rate: cost.full_issue
    OWN_COPY = ()  # kernels whose programs copy their own tiles outside the loop at one program's rate: cost.own_copy
    LONE_PIPELINED = ()  # kernels whose lone program, pipelined S > 2 stages, keeps S - 1 tiles in flight at any warp
    #                      count: cost.lone_pipeline
    LONE_COPY = ()  # kernels whose lone program, gathering its tiles through address loads, moves a step's bytes,
    #                 addresses too, at one program's copy rate: cost.lone_gather
    STORED_AFTER = {}  # {kernel: the tensor its one-step programs store after their loads and dot}: cost.stored_after
    GRAPH_LAUNCH = False  # True: its launch is priced as a CUDA graph replays an empty kernel (GPU.graph_launch_s)
    CONTENTION = {}  # {kernel: the share of the lesser of its memory and compute time in series}, where not cost.py's
    SETUP_S = 0.0  # seconds per program before its first load
    MATRICES = ""  # the N x N_kv matrices execute mode holds whole in NumPy (naive's), if any
    HEAD_DIMS = (16, 256)  # the head dims its kernel runs, least and most (kernels/launch.py checks these)
    DTYPES = ()  # the dtypes its kernel runs, where not every one gpusim counts
    ARCHS = {}  # {architecture: its name} of the GPUs its kernel runs on; {}: any
    BACKWARD_AT_FORWARD_TILES = False  # a training step's backward takes the forward's tiles when given none
    KNOBS = ("num_warps", "num_stages")  # the Tiles knobs a caller may set for its kernel (Config.user_tiles)

    # What every pass defines.
    def paper_blocks(self, gpu, head_dim, dtype):
        """(block_q, block_kv): a forward pass's paper rule for the GPU's shared memory (FlashAttention's
        Bc = ceil(M / 4d)), halved until the tiles fit; not the fastest (best_blocks). A backward pass has
        its own default_blocks instead."""
        raise NotImplementedError

    def sram_bytes(self, cfg, kernel, rows, keys):
        """Shared memory one thread block of `kernel` stages for a tile of `rows` queries and `keys` keys
        (the model's staging; shared_bytes adds the pipeline's buffers)."""
        raise NotImplementedError

    def programs(self, cfg, kernel):
        """Thread blocks in the kernel's grid."""
        raise NotImplementedError

    def work(self, cfg, kernel):
        """The steps of its programs (gpusim.tiling.Work): how many programs do how many steps, and the
        last ones launched, in launch order from the end."""
        raise NotImplementedError

    def launch_order(self, cfg):
        """(heads, longest_first): how many heads' Q blocks launch interleaved, one group of heads before the
        next, and whether a group's longest programs launch first (gpusim/l2.py's K/V working set). (1, False):
        head after head, each head's Q blocks in order."""
        return 1, False

    def count(self, cfg):
        """{(kernel, tensor): (read_bytes, write_bytes)} between the SMs and L2, over all batches and heads."""
        raise NotImplementedError

    def flops(self, cfg):
        """{kernel: (matmul_flops, other_flops, exps)}; other_flops includes the exponentials."""
        raise NotImplementedError

    def launch(self, cfg, kernel):
        """(num_warps, num_stages) as the project's kernel passes them to Triton."""
        raise NotImplementedError

    def register_tiles(self, cfg, kernel):
        """Bytes of the tiles a block keeps in registers (fp32 scores and accumulators), where nothing was
        compiled (gpusim/occupancy.py estimate_registers)."""
        raise NotImplementedError

    def peak_bytes(self, cfg):
        """HBM allocated at once by the pass's kernels."""
        raise NotImplementedError

    # What a pass may define; the defaults are the common case.
    def check(self, gpu, head_dim, dtype=None):
        """One line if the pass's kernel cannot run this head_dim, this dtype (DTYPES), or on this GPU (ARCHS)."""
        if self.ARCHS and gpu.arch not in self.ARCHS:
            names = [name for name, preset in PRESETS.items() if preset.arch in self.ARCHS]
            kinds = " or ".join(f"{kind} ({arch})" for arch, kind in self.ARCHS.items())
            raise ValueError(f"algo={self.name!r} needs a {kinds} GPU preset: {', '.join(names)}; {gpu.name} is "
                             f"{gpu.arch}")
        if self.DTYPES and dtype is not None and dtype not in self.DTYPES:
            raise ValueError(f"dtype={dtype!r}: the {self.name} kernel runs {', '.join(self.DTYPES)}")
        least, most = self.HEAD_DIMS
        if not least <= head_dim <= most:
            raise ValueError(f"head_dim={head_dim} is outside {least}..{most}, the head dims the {self.name} "
                             f"kernel runs")

    def score_row(self, cfg):
        """The elements from one row to the next of the N x N_kv matrices its kernels keep in HBM (S, P, dP,
        dS): N_kv, unless its kernels pad them."""
        return cfg.seq_kv

    def kernels_of(self, cfg):
        """The kernels cfg launches, in order: all of KERNELS (split_kv launches some)."""
        return self.KERNELS

    def execute(self, mem, cfg):
        """Walk the tiles on the arrays in `mem` (gpusim.memory.Memory), every HBM access counted."""
        raise NotImplementedError(f"{self.name} has no execute mode here")

    def execute_steps(self, cfg):
        """Steps execute mode walks in Python: a step per visited tile, one more per Q block (its epilogue)."""
        return cfg.bh * (cfg.tiling.tiles + cfg.tiling.n_q_blocks)

    def tiles(self, cfg, kernel=None):
        """The launch of `kernel` (None: the pass's main kernel) as the model prices it and the project's kernel
        runs it: cfg's tiles, num_warps, num_stages (options)."""
        return Tiles(cfg.block_q, cfg.block_kv, *self.options(cfg, kernel or self.KERNELS[0]))

    def options(self, cfg, kernel):
        """(num_warps, num_stages) of `kernel`: those a caller's Tiles sets (cfg.user_tiles), for every kernel
        of the launch; the pass's rule (launch) for the rest."""
        num_warps, num_stages = self.launch(cfg, kernel)
        given = cfg.user_tiles
        if given is None:
            return num_warps, num_stages
        return given.num_warps or num_warps, given.num_stages or num_stages

    def kernel_blocks(self, head_dim, dtype, causal):
        """(block_q, block_kv) the project's kernel runs when given none, where it has its own table; None:
        the fastest predicted (gpusim.best_blocks)."""
        return None

    def stage_bytes(self, cfg, kernel):
        """Shared memory one more software-pipeline stage takes: none where nothing is pipelined."""
        return 0

    def shared_bytes(self, cfg, kernel, num_stages):
        """Shared memory of a block: its staged tiles and a spare buffer of the loop's tiles per extra stage."""
        return cfg.sram_bytes(kernel) + (num_stages - 1) * self.stage_bytes(cfg, kernel)

    def block_warps(self, cfg, kernel, num_warps):
        """The warps of a block: num_warps (options', which the caller has: occupancy.resources), unless warp groups
        are specialized (hopper)."""
        return num_warps

    def compiled_name(self, cfg, kernel):
        """The kernel's name in gpusim/compiled.py."""
        return kernel

    def compiled_shape(self, cfg, kernel):
        """What a compiled kernel is specialised on beyond its tiles: head_dim."""
        return cfg.head_dim

    def compiled_tiles(self, cfg, kernel):
        """(block_q, block_kv) of `kernel`'s entry in gpusim/compiled.py: the tiles it was compiled at, cfg's."""
        return cfg.block_q, cfg.block_kv

    def issue(self, cfg, kernel, res, other_flops, exps, steps, programs):
        """(instructions a warp issues per step, of them MUFU, of them spill reloads, per program besides):
        from the compiled kernel's loops, one step each in turn, or estimated from the operations."""
        return per_step_issue(res, other_flops, exps, steps)

    def spill(self, cfg, kernel, res, steps, programs):
        """(L2->SM, SM->L2) bytes of the compiled kernel's spills (LDL reloads, STL stores to local memory), over
        the grid: each loop's bytes per thread times its iterations as this pass schedules the steps (one
        loop each in turn), the code outside the loops once per program; (0, 0) where nothing was compiled."""
        return per_step_spill(res, steps, programs)

    def dot_tiling(self, cfg, kernel):
        """The tiling whose whole block_q x block_kv tiles `kernel`'s dots multiply (tl.dot masks the rows and keys
        past a ragged edge, it does not skip them: results/h200/ragged_tiles.json); None: its dots are priced on
        the counted FLOPs alone."""
        return cfg.tiling

    def streams(self, cfg, kernel):
        """Independent instruction streams in a block (warp specialization): one, all warps alike."""
        return 1

    def step_ratio(self, cfg, kernel):
        """A step's measured time over its serial time where streams overlap by a measured amount; None:
        gpusim/cost.py overlaps the streams ideally."""
        return None

    def setup_s(self, cfg):
        """Seconds per program before its first load (descriptors, fences)."""
        return self.SETUP_S

    def launch_s(self, cfg, kernel):
        """Seconds the launch of `kernel` adds to its time, once: an empty kernel's, timed with CUDA events around each
        call (GPU.launch_overhead_s), or, for a pass whose launch was measured so (GRAPH_LAUNCH), replayed from a CUDA
        graph (GPU.graph_launch_s), where the GPU has that measured."""
        gpu = cfg.gpu
        return gpu.graph_launch_s if self.GRAPH_LAUNCH and gpu.graph_launch_s is not None else gpu.launch_overhead_s

    def ragged(self, cfg, kernel):
        """Whether the launch's programs take different numbers of steps because its requests differ in length (a
        ragged decode batch: cost.ragged_wave); no pass but split-KV's launches requests."""
        return False

    def step_tile_bytes(self, cfg, kernel):
        """The tile bytes a whole step of a LONE_COPY kernel loads (its addresses not counted): what cost.lone_gather
        compares with the steps measured. None: no LONE_COPY kernel here."""
        return None

    def dram_reads(self, cfg, kernel, sm_reads, flight):
        """{tensor: DRAM read bytes} for a kernel whose L2_REUSE pattern is "own"; flight: its thread blocks
        running at once."""
        raise NotImplementedError(f"{self.name}'s L2_REUSE names no rule of its own")

    def softmax_fits(self, cfg):
        """naive only: whether the softmax holds a whole row of S."""
        return False

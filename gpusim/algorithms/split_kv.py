"""Flash-Decoding (gpusim/decode.py) as the time model sees it: the kernels of kernels/decode.py, their
grids, the chunks each program walks, how they launch, and where their bytes come from. The configuration
is a DecodeLaunch; the counts and FLOPs are gpusim/decode.py's.

Kernels: "decode" (num_splits == 1: FlashAttention-2's decode path), or "split_kv" then "reduce". A
program of decode / split_kv serves one (request, K/V head, split): it reads its cache length, its query
rows, then steps through its chunks of Bc == block_kv keys; a paged cache is gathered through the block
table, whose entries must arrive before the K and V rows they point to can be asked for.
"""
import numpy as np

from .. import decode
from ..hardware import STATS_BYTES
from ..tiling import TAIL, Work, uniform_work
from .common import per_step_issue

KERNELS = ("decode", "split_kv", "reduce")
TENSOR_BYTES = {}
L2_REUSE = {kernel: ("once", ()) for kernel in KERNELS}  # dram_reads below: nothing is re-read
FENCED = ()  # kernels that wait for their stores: none
TMA = False  # its tiles arrive by TMA copies, issued stages ahead
SETUP_S = 0.0  # per program, before its first load
STEP_TENSORS = {"decode": ("K", "V", "block_table"), "split_kv": ("K", "V", "block_table"),
                "reduce": ("O_partial", "LSE_partial")}  # the reduce's one step: every split's partial row
NUM_WARPS, NUM_STAGES = 4, 3  # kernels/decode.py's launch of decode and split_kv (the reduce: 4 warps, 1 stage)
# A step of a paged cache waits for two loads, one after the other: the chunk's block-table entries, then
# the K and V rows at the pages they name (the second's addresses come from the first). gpusim/cost.py
# waits for these first; a contiguous cache (no block table) knows its addresses.
ADDRESS_TENSORS = {"decode": ("block_table",), "split_kv": ("block_table",)}
# kernels/decode.py launches the reduce as a programmatic dependent launch on Hopper (PDL: it launches while
# the split kernel runs and waits on the GPU for the partials). Measured, that saves 0.7-1.2 us per call at
# 4K-128K tokens (results/h200/decode_splits.json); the model still prices the reduce's launch overhead
# (3.2 us, an empty kernel's), which no microbenchmark here splits into what PDL hides and what it does not.


def count(launch):
    return decode.count(launch)


def flops(launch):
    return decode.flops(launch)


def chunks(launch):
    """(batch, num_splits): the K/V chunks split s of request b visits (0 for the empty splits of a short
    request), as decode.DecodeLaunch.split_chunks gives them."""
    s = np.arange(launch.num_splits)[None, :]
    per = launch.chunks_per_split[:, None]
    return np.clip(launch.chunks[:, None] - s * per, 0, per)


def work(launch, kernel):
    """decode / split_kv: a program per (K/V head, request, split) does its split's chunks; the grid
    (units, batch, splits) launches the units of a request, then the next request, then the next split.
    reduce: one step per query row."""
    if kernel == "reduce":
        return uniform_work(programs(launch, kernel), 1)
    steps, units = chunks(launch), launch.units
    values, counts = np.unique(steps, return_counts=True)
    last = steps.T.ravel()[::-1][: -(-TAIL // units)]  # launch order, backwards from its end
    tail = np.repeat(last, units)[:TAIL]
    return Work(tuple(int(v) for v in values), tuple(int(c) * units for c in counts), tuple(int(j) for j in tail))


def programs(launch, kernel):
    return decode.programs(launch, kernel)


def sram_bytes(launch, kernel):
    return decode.sram_bytes(launch, kernel)


def launch(launch, kernel):
    """(num_warps, num_stages) as kernels/decode.py launches them."""
    return (NUM_WARPS, 1) if kernel == "reduce" else (NUM_WARPS, NUM_STAGES)


def stage_bytes(launch, kernel):
    """One more pipeline stage holds another K and V chunk (d rounded up to a power of two)."""
    if kernel == "reduce":
        return 0
    return 2 * launch.block_kv * (1 << (launch.head_dim - 1).bit_length()) * launch.itemsize


def kv_buffers(launch, num_stages):
    """The K/V chunks a block keeps in shared memory, as triton 3.6 pipelines the chunk loop (its TTGIR):
    contiguous, num_stages - 1 (the copies issued that far ahead); paged, the block-table load takes the
    early stages and its copies follow it: one buffer at 3 or 4 stages, two at 5."""
    return max(1, num_stages - 3) if launch.page_size else max(1, num_stages - 1)


def shared_bytes(launch, kernel, num_stages):
    """sram_bytes holds one K and V chunk; a deeper pipeline holds more (kv_buffers)."""
    if kernel == "reduce":
        return sram_bytes(launch, kernel)
    return sram_bytes(launch, kernel) + (kv_buffers(launch, num_stages) - 1) * stage_bytes(launch, kernel)


def register_tiles(launch, kernel):
    """decode / split_kv: the fp32 accumulator (rows x d), S_ij and P_ij in fp32 (rows x Bc), and the query
    rows (the first matmul's A operand). reduce: every split's partial row of O in fp32."""
    d = 1 << (launch.head_dim - 1).bit_length()
    if kernel == "reduce":
        return launch.padded_splits * (d + 1) * STATS_BYTES
    rows = launch.padded_rows
    return (STATS_BYTES + launch.itemsize) * rows * d + 2 * STATS_BYTES * rows * launch.block_kv


def streams(launch, kernel):
    return 1


def issue(launch, kernel, res, other_flops, exps, steps, programs):
    """From the compiled kernel (benchmarks/resources.py): its chunk loop a step, the reduce whole; the
    address arithmetic of a gather and the padding of the query rows to 16 issue far more than the
    operations counted. Estimated where nothing was compiled."""
    return per_step_issue(res, other_flops, exps, steps)


def compiled_shape(launch, kernel):
    """What a compiled kernel is specialised on beyond its tiles: head_dim, and the page size (0: a
    contiguous cache) or, for the reduce, the splits padded to a power of two. Compiled at
    benchmarks.bench_decode's heads; other head counts take the same entry."""
    return launch.head_dim, launch.padded_splits if kernel == "reduce" else launch.page_size or 0


def dram_reads(launch, kernel, sm_reads):
    """Which reads reach DRAM. Each cached K and V element is read once per group (once per query head
    ungrouped) and never again: all of it comes from DRAM, as do the reduce's partial results (rule 1 of
    gpusim/l2.py: nothing stays in L2 between kernels). The query rows (re-read by every split of a
    request), the cache lengths (read by every program) and the block table (read by the programs of each
    K/V head) come from DRAM once and hit after."""
    pages = -(-launch.keys // launch.page_size) if launch.page_size else 0
    first = {"Q": launch.batch * launch.heads * launch.seq * launch.head_dim * launch.itemsize,
             "cache_seqlens": launch.batch * decode.INDEX_BYTES, "block_table": int(np.sum(pages)) * decode.INDEX_BYTES}
    return {t: min(r, first.get(t, r)) for t, r in sm_reads.items()}


def peak_bytes(launch):
    """HBM allocated at once (kernels/decode.py): q, the cache (contiguous: each request's rows up to the
    longest; paged: the pages the requests hold, and the block table), the cache lengths, O and the LSE,
    and the fp32 partial O and LSE of every split when split."""
    L, d, e, f = launch, launch.head_dim, launch.itemsize, STATS_BYTES
    rows = L.batch * L.heads * L.seq
    lengths = np.array(L.seq_kv, dtype=np.int64)
    if L.page_size is None:
        cache = 2 * L.batch * L.kv_heads * int(lengths.max()) * d * e
    else:
        pages = -(-lengths // L.page_size)
        cache = 2 * int(pages.sum()) * L.page_size * L.kv_heads * d * e + L.batch * int(pages.max()) * decode.INDEX_BYTES
    partials = L.num_splits * rows * (d + 1) * f if L.num_splits > 1 else 0
    return rows * d * e + cache + L.batch * decode.INDEX_BYTES + rows * (d * L.out_itemsize + f) + partials

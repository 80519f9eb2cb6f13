"""Flash-Decoding (gpusim/decode.py) as the time model sees it: the kernels of kernels/decode.py, their
grids, the chunks each program walks, how they launch, and where their bytes come from. The configuration
is a DecodeLaunch (gpusim/shape.py), made by gpusim/decode.py, which holds the rule for num_splits.

Kernels: "decode" (num_splits == 1: FlashAttention-2's unsplit decode), or "split_kv" then "reduce". A
program of decode / split_kv serves one (request, K/V head, split): it reads its cache length, its query
rows, then steps through its chunks of Bc == block_kv keys; a paged cache is gathered through the block
table, whose entries must arrive before the K and V rows they point to can be asked for.
"""
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES, WARP
from ..shape import INDEX_BYTES, REDUCE_SPLITS
from ..tiling import TAIL, Work, scaled
from .base import Pass
from .common import padded

# Non-matmul FLOPs in gpusim/cost.py's convention: per score (scale, row max, subtract, exp, row sum), per
# query row each time it meets a K/V chunk (m_new, alpha = exp(m_i - m_new), l_i = alpha l_i + rowsum),
# plus 1 per accumulator element for acc * alpha; per row at the end of a program: log and add for the
# LSE, and d divisions.
PER_SCORE = 5
PER_ROW_STEP = 5
PER_ROW_END = 2
# The reduce, per row per split: max, subtract, exp, sum of the weights; per element of O, w * o summed
# (2). Per row at the end: log and add for the LSE, and d divisions.
REDUCE_PER_ROW_SPLIT = 4
REDUCE_PER_ELEMENT_SPLIT = 2
NUM_WARPS, NUM_STAGES = 4, 3  # kernels/decode.py's launch of decode and split_kv
# The reduce runs on 2 warps (1 stage) up to d = 128: in the graphed serving loop (results/h200/reduce_warps.json,
# Llama-3-8B's shape, d = 128, batch 1, 4 and 8, 1K-64K tokens) it ran fastest, or within 0.3% of the fastest, of
# 1, 2 and 4 warps with PDL on or off at every point, 0.3-13% faster than on 4 (both with PDL). (reduce_warps)
REDUCE_WARPS = 2
# kernels/decode.py launches the reduce as a programmatic dependent launch on Hopper (PDL: it launches while
# the split kernel runs and waits on the GPU for the partials). Measured, that saves 0.5-1.0 us per call at batch 1,
# 4K-128K tokens, 64 splits (results/h200/decode_splits.json, the same launch with PDL on and off); over all 8 such
# pairs in that file (batch 8 too, where it saves 0.0 and loses 0.8 us) the median is 0.76 us, which the reduce's
# launch does not pay on a GPU that has PDL (sm_90 and later; kernels/decode.py dependent_launch).
PDL_HIDDEN_S = 0.76e-6
REDUCE_ROWS = 1  # query rows a reduce program merges (its grid: one program per (head, request, row))
# The chunks (block_kv) benchmarks/resources.py compiles the reduce at: decode.halvings of the default chunk (64, 32,
# 16) and the larger ones benchmarks/decode_tiles.py times (128, 256)
REDUCE_CHUNKS = (16, 32, 64, 128, 256)


def reduce_warps(head_dim):
    """The reduce's warps: REDUCE_WARPS, or NUM_WARPS where REDUCE_WARPS would hold more than 128 fp32 elements of
    its tile (REDUCE_SPLITS partial rows of d, padded) a thread: at d = 256 that is 256, past the 255 registers a
    thread has. Measured at d = 128 only (REDUCE_WARPS); smaller head dims take the same, unmeasured."""
    return REDUCE_WARPS if REDUCE_SPLITS * padded(head_dim) <= 128 * REDUCE_WARPS * WARP else NUM_WARPS


def chunks(launch):
    """(batch, num_splits): the K/V chunks split s of request b visits (0 for the empty splits of a short
    request), as DecodeLaunch.split_chunks gives them."""
    s = np.arange(launch.num_splits)[None, :]
    per = launch.chunks_per_split[:, None]
    return np.clip(launch.chunks[:, None] - s * per, 0, per)


def kv_buffers(launch, num_stages):
    """The K/V chunks a block keeps in shared memory, as triton 3.6 pipelines the chunk loop (its TTGIR):
    contiguous, num_stages - 1 (the copies issued that far ahead); paged, the block-table load takes the
    early stages and its copies follow it: one buffer at 3 or 4 stages, two at 5."""
    return max(1, num_stages - 3) if launch.page_size else max(1, num_stages - 1)


def pages_touched(launch):
    """Block-table entries one unit (K/V head, or query head ungrouped) reads per request, over its splits:
    the pages of its K_b keys, plus one for each split boundary that falls inside a page (both splits
    read that page's entry). Boundaries lie at multiples of c_b * Bc; P and Bc are powers of two."""
    P = launch.page_size
    pages = -(-launch.keys // P)
    boundaries = launch.active_splits - 1
    step = launch.chunks_per_split * launch.block_kv
    period = P // np.gcd(step, P)  # every period-th boundary lands on a page start
    return pages + boundaries - boundaries // period


def _program(mem, L, b, unit, split):
    """One program of the decode / split_kv kernel: query heads of `unit`, chunks of split `split`."""
    kernel, program = L.kernels[0], (b, unit, split)
    n_keys = int(mem.load(kernel, "cache_seqlens", b))  # read 1 int32: L_b
    first, end = L.split_chunks(b, split)
    if first == end:  # a short request's empty split: nothing more to do
        mem.step(kernel, program, (split, None), 0)
        return
    visible = n_keys if L.causal_align == "bottom_right" else min(n_keys, L.seq)  # K_b
    heads, kvh, Bc = L.query_heads(unit), L.kv_head(unit), L.block_kv
    q_i = mem.load(kernel, "Q", (b, slice(heads.start, heads.stop))).reshape(L.rows, -1)  # read G*seq*d
    row = np.arange(L.rows) % L.seq
    last = row + (n_keys - L.seq if L.causal_align == "bottom_right" else 0)  # row sees keys 0..last
    m_i = np.full(L.rows, -np.inf, q_i.dtype)  # running row max, on chip
    l_i = np.zeros(L.rows, q_i.dtype)  # running row sum of exp(s - m_i)
    acc = np.zeros_like(q_i)  # un-normalised O rows
    page = None
    for j in range(first, end):
        keys = np.arange(j * Bc, min((j + 1) * Bc, visible))
        where, page = _rows_of(mem, L, kernel, b, kvh, keys, page)
        k_j = mem.load(kernel, "K", where)  # read (keys in the chunk)*d: the real rows only
        v_j = mem.load(kernel, "V", where)  # read (keys in the chunk)*d
        s_ij = np.where(keys[None, :] <= last[:, None], q_i @ k_j.T / np.sqrt(L.head_dim), -np.inf)
        m_new = np.maximum(m_i, s_ij.max(axis=1))
        m_safe = np.where(np.isfinite(m_new), m_new, 0.0)  # a row whose keys here are all masked keeps -inf
        alpha = np.exp(m_i - m_safe)
        p_ij = np.exp(s_ij - m_safe[:, None])
        l_i = alpha * l_i + p_ij.sum(axis=1)
        acc = alpha[:, None] * acc + p_ij @ v_j
        m_i = m_new
        mem.step(kernel, program, (split, j), L.sram_bytes(kernel), m_i=m_i, l_i=l_i, rescale=alpha)
    seen = l_i > 0  # rows with no visible key in this split: partial O = 0, LSE = -inf
    o = np.divide(acc, l_i[:, None], out=np.zeros_like(acc), where=seen[:, None])
    lse = np.where(seen, m_i + np.log(np.where(seen, l_i, 1.0)), -np.inf)
    heads_of = (b, slice(heads.start, heads.stop))
    if L.num_splits == 1:
        mem.store(kernel, "O", heads_of, o.reshape(len(heads), L.seq, -1))  # write G*seq*d
        mem.store(kernel, "LSE", heads_of, lse.reshape(len(heads), L.seq))  # write G*seq (fp32)
    else:
        mem.store(kernel, "O_partial", (split, *heads_of), o.reshape(len(heads), L.seq, -1))  # write G*seq*d fp32
        mem.store(kernel, "LSE_partial", (split, *heads_of), lse.reshape(len(heads), L.seq))  # write G*seq fp32
    mem.step(kernel, program, (split, None), L.sram_bytes(kernel))


def _reduce(mem, L, b, h, i):
    """One program of the reduce kernel: query row i of head h of request b, its splits REDUCE_SPLITS at a
    time, merged online. Each split's O was divided by its own sum exp(LSE_s); weighted by exp(LSE_s - LSE) they
    add up to O, LSE = log sum_s exp(LSE_s)."""
    mem.load("reduce", "cache_seqlens", b)  # read 1 int32: how many splits request b filled
    a_b = int(L.active_splits[b])
    m, l_sum, acc = -np.inf, 0.0, 0.0
    for s0 in range(0, a_b, REDUCE_SPLITS):
        block = slice(s0, min(a_b, s0 + REDUCE_SPLITS))
        lse_s = mem.load("reduce", "LSE_partial", (block, b, h, i))  # read <= REDUCE_SPLITS (fp32)
        o_s = mem.load("reduce", "O_partial", (block, b, h, i))  # read <= REDUCE_SPLITS*d (fp32)
        m_new = max(m, lse_s.max())  # finite: split 0 holds key 0, which every row sees
        w = np.exp(lse_s - m_new)  # 0 for a split where the row saw no key (LSE_s = -inf)
        alpha = np.exp(m - m_new)
        m, l_sum, acc = m_new, l_sum * alpha + w.sum(), acc * alpha + w @ o_s
        if s0 + REDUCE_SPLITS >= a_b:  # the last block: O and LSE written
            row = (b, h, slice(i, i + 1))
            mem.store("reduce", "O", row, (acc / l_sum)[None])  # write d
            mem.store("reduce", "LSE", row, m + np.log(l_sum))  # write 1 (fp32)
        mem.step("reduce", (b, h, i), (None, None), L.sram_bytes("reduce"), m_i=[m], l_i=[l_sum], rescale=w)


def _rows_of(mem, L, kernel, b, kvh, keys, page):
    """(where the chunk's K and V rows lie, the page whose block-table entry the program holds): a contiguous
    cache's rows, or a paged one's, gathered through the block table."""
    P = L.page_size
    if P is None:
        return (b, kvh, slice(keys[0], keys[-1] + 1)), page
    if L.block_kv >= P:  # the chunk spans whole pages: read their Bc/P entries (fewer in the last chunk)
        pages = mem.load(kernel, "block_table", (b, slice(keys[0] // P, keys[-1] // P + 1)))  # read <= Bc/P
        return (pages[keys // P - keys[0] // P], keys % P, kvh), page
    if page is None or keys[0] % P == 0:  # P/Bc chunks share a page: its entry is read at the page's first
        page = int(mem.load(kernel, "block_table", (b, keys[0] // P)))  # chunk or the split's first; 1 int32
    return (page, keys % P, kvh), page


def reduce_work(L):
    """The reduce's steps: ceil(a_b / REDUCE_SPLITS) for each of request b's heads x seq programs, launched over
    the grid (heads, batch, seq), heads fastest; the tail is the last programs, the last first."""
    steps = -(-np.asarray(L.active_splits).reshape(-1) // REDUCE_SPLITS)
    values, counts = np.unique(steps, return_counts=True)
    tail = np.tile(np.repeat(steps[::-1], min(L.heads, TAIL)), min(L.seq, TAIL))[:TAIL]  # its first TAIL, whatever H
    return Work(values, scaled(counts, L.heads * L.seq), tail)


class SplitKV(Pass):
    """Flash-Decoding: split programs over a KV cache, then a reduce."""
    name = "split_kv"
    KERNELS = ("decode", "split_kv", "reduce")  # decode: one split; or split_kv then reduce
    L2_REUSE = {kernel: ("own", ()) for kernel in KERNELS}  # dram_reads below: nothing is re-read
    STEP_TENSORS = {"decode": ("K", "V", "block_table"), "split_kv": ("K", "V", "block_table"),
                    "reduce": ("O_partial", "LSE_partial")}  # the reduce's one step: every split's partial row
    # A step of a paged cache waits for two loads, one after the other: the chunk's block-table entries, then
    # the K and V rows at the pages they name (the second's addresses come from the first). gpusim/cost.py
    # waits for these first; a contiguous cache (no block table) knows its addresses.
    ADDRESS_TENSORS = {"decode": ("block_table",), "split_kv": ("block_table",)}
    # None of a decoding kernel's compute runs in series with its loads: at batch 64, 32K to 128K cached tokens, the
    # paged kernel moves the bytes gpusim counts at 4.55-4.57 TB/s (results/h200/decode.json), 99% of the DRAM read
    # plateau of bandwidth.json (4.60 TB/s), where cost.py's 0.15 (fitted on the forward's d = 64 rows) made it 7% slow.
    CONTENTION = {"decode": 0.0, "split_kv": 0.0}  # the same loop; the reduce is its own
    # A split program alone on its SM takes a step of its K/V tiles' and block table's bytes at the rate a lone program
    # copies (GPU.lone_copy_bytes_per_s), whatever its tile: results/h200/split_lone.json (run 170), 1.71-1.99 us a step
    # at 16, 32 and 64 padded rows on the H200 against 1.74 at that rate, where its compute at ISSUE_HIDING's rate then
    # the whole wait for its loads priced it 1.85-2.48 us. The unsplit decode kernel runs the same loop (_attend):
    # alone over pages it stepped within 4.2% of the split kernel at the same light load, 1.48-1.92 us at 8 programs
    # against 1.54-1.85 at 32 (split_lone_others.json, run 172). Measured over a paged cache (pages of 16), not a
    # contiguous one, which keeps the whole wait.
    LONE_COPY = ("decode", "split_kv")

    def execute(self, mem, launch):
        """Every program of the launch's kernels on the arrays in mem (gpusim/decode_execute.py sets it up):
        the split programs chunk by chunk, then the reduce, one program per query row."""
        for b, unit, split in product(range(launch.batch), range(launch.units), range(launch.num_splits)):
            _program(mem, launch, b, unit, split)
        if launch.num_splits > 1:
            for b, head, row in product(range(launch.batch), range(launch.heads), range(launch.seq)):
                _reduce(mem, launch, b, head, row)

    def kernels_of(self, launch):
        """decode (num_splits == 1: FlashAttention-2's unsplit decode), or split_kv then reduce."""
        return ("decode",) if launch.num_splits == 1 else ("split_kv", "reduce")

    def work(self, launch, kernel):
        """decode / split_kv: a program per (K/V head, request, split) does its split's chunks; the grid
        (units, batch, splits) launches the units of a request, then the next request, then the next split.
        reduce: a program per query row, a step per REDUCE_SPLITS of its request's active splits."""
        if kernel == "reduce":
            return reduce_work(launch)
        steps, units = chunks(launch), launch.units
        values, counts = np.unique(steps, return_counts=True)
        last = steps.T.ravel()[::-1][: -(-TAIL // units)]  # launch order, backwards from its end
        tail = np.repeat(last, min(units, TAIL))[:TAIL]  # its first TAIL, whatever the units
        return Work(values, scaled(counts, units), tail)

    def step_tile_bytes(self, launch, kernel):
        """A whole chunk of K and V, Bc rows each, or the longest request's rows where none holds a whole chunk (a
        request's partial last chunk loads less, and its share of the steps is not what its programs' steps are)."""
        return 2 * min(launch.block_kv, max(launch.seq_kv)) * launch.head_dim * launch.itemsize

    def ragged(self, launch, kernel):
        """A split (or decode) kernel over requests whose splits hold different numbers of chunks: a batch of requests
        of different lengths, whose long requests' programs run on after the short ones end."""
        return kernel != "reduce" and len(set(launch.chunks_per_split.tolist())) > 1

    def launch_s(self, launch, kernel):
        """An empty kernel's launch; the reduce, a programmatic dependent launch where the GPU has PDL, less what
        that hides (PDL_HIDDEN_S)."""
        pdl = kernel == "reduce" and int(launch.gpu.arch.removeprefix("sm_")) >= 90
        return launch.gpu.launch_overhead_s - (PDL_HIDDEN_S if pdl else 0.0)

    def launch(self, launch, kernel):
        """(num_warps, num_stages) as kernels/decode.py launches them."""
        return (reduce_warps(launch.head_dim), 1) if kernel == "reduce" else (NUM_WARPS, NUM_STAGES)

    def stage_bytes(self, launch, kernel):
        """One more pipeline stage holds another K and V chunk (d rounded up to a power of two)."""
        if kernel == "reduce":
            return 0
        return 2 * launch.block_kv * padded(launch.head_dim) * launch.itemsize

    def shared_bytes(self, launch, kernel, num_stages):
        """sram_bytes holds one K and V chunk; a deeper pipeline holds more (kv_buffers)."""
        if kernel == "reduce":
            return launch.sram_bytes(kernel)
        return launch.sram_bytes(kernel) + (kv_buffers(launch, num_stages) - 1) * self.stage_bytes(launch, kernel)

    def register_tiles(self, launch, kernel):
        """decode / split_kv: the fp32 accumulator (rows x d), S_ij and P_ij in fp32 (rows x Bc), and the query
        rows (the first matmul's A operand). reduce: every split's partial row of O in fp32."""
        d = padded(launch.head_dim)
        if kernel == "reduce":
            return REDUCE_SPLITS * (d + 1) * STATS_BYTES
        rows = launch.padded_rows
        return (STATS_BYTES + launch.itemsize) * rows * d + 2 * STATS_BYTES * rows * launch.block_kv

    def compiled_shape(self, launch, kernel):
        """What a compiled kernel is specialised on beyond its tiles: head_dim, and the page size (0: a
        contiguous cache) or, for the reduce, the splits it merges per step (REDUCE_SPLITS). Compiled at
        benchmarks.bench_decode's heads; other head counts take the same entry."""
        return launch.head_dim, REDUCE_SPLITS if kernel == "reduce" else launch.page_size or 0

    def compiled_tiles(self, launch, kernel):
        """(block_q, block_kv) of a kernel's compiled entry. decode / split_kv: the padded query rows of their tl.dot
        tile and the chunk. The reduce: its own, one query row a program (REDUCE_ROWS) and the chunk Bc, the one
        constant of the split kernel's it is compiled with (kernels/decode.py reduce_kernel: Bc counts the splits a
        request filled); the split kernel's padded rows are not compiled into it, so a launch of more query rows
        takes the same compiled reduce (benchmarks/resources.py compiles it at every chunk, REDUCE_CHUNKS)."""
        return (REDUCE_ROWS, launch.block_kv) if kernel == "reduce" else (launch.block_q, launch.block_kv)

    def dram_reads(self, launch, kernel, sm_reads, flight):
        """Which reads reach DRAM. Each cached K and V element is read once per group (once per query head
        ungrouped) and never again: all of it comes from DRAM, as do the reduce's partial results (rule 1 of
        gpusim/l2.py: nothing stays in L2 between kernels). The query rows (re-read by every split of a
        request), the cache lengths (read by every program) and the block table (read by the programs of each
        K/V head) come from DRAM once and hit after."""
        pages = -(-launch.keys // launch.page_size) if launch.page_size else 0
        first = {"Q": launch.batch * launch.heads * launch.seq * launch.head_dim * launch.itemsize,
                 "cache_seqlens": launch.batch * INDEX_BYTES, "block_table": int(np.sum(pages)) * INDEX_BYTES}
        return {t: min(r, first.get(t, r)) for t, r in sm_reads.items()}

    def peak_bytes(self, launch):
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
            cache = 2 * int(pages.sum()) * L.page_size * L.kv_heads * d * e + L.batch * int(pages.max()) * INDEX_BYTES
        partials = L.num_splits * rows * (d + 1) * f if L.num_splits > 1 else 0
        return rows * d * e + cache + L.batch * INDEX_BYTES + rows * (d * L.out_itemsize + f) + partials

    def count(self, launch):
        """{(kernel, tensor): (read_bytes, write_bytes)}: the bytes each kernel moves, per tensor, summed over
        requests in closed form (O(batch) work, nothing that grows with the cache length)."""
        L, e, f, d = launch, launch.itemsize, STATS_BYTES, launch.head_dim
        keys, active = launch.keys, launch.active_splits
        rows = L.heads * L.seq  # query rows per request (all programs of one split together)
        kernel = L.kernels[0]
        out = {
            (kernel, "cache_seqlens"): (INDEX_BYTES * L.batch * L.units * L.num_splits, 0),  # every program: read 1
            (kernel, "Q"): (int(active.sum()) * rows * d * e, 0),  # each active split reads its rows once
            (kernel, "K"): (int(keys.sum()) * L.units * d * e, 0),  # each unit reads its K_b keys once, over splits
            (kernel, "V"): (int(keys.sum()) * L.units * d * e, 0),
        }
        if L.page_size is not None:
            out[(kernel, "block_table")] = (int(pages_touched(launch).sum()) * L.units * INDEX_BYTES, 0)
        if L.num_splits == 1:
            return out | {(kernel, "O"): (0, L.batch * rows * d * L.out_itemsize),
                          (kernel, "LSE"): (0, L.batch * rows * f)}
        partials = int(active.sum()) * rows
        return out | {
            (kernel, "O_partial"): (0, partials * d * f),  # fp32, per active split
            (kernel, "LSE_partial"): (0, partials * f),
            ("reduce", "cache_seqlens"): (INDEX_BYTES * L.batch * rows, 0),  # every program (query row): read 1
            ("reduce", "O_partial"): (partials * d * f, 0),
            ("reduce", "LSE_partial"): (partials * f, 0),
            ("reduce", "O"): (0, L.batch * rows * d * L.out_itemsize),
            ("reduce", "LSE"): (0, L.batch * rows * f),
        }

    def flops(self, launch):
        """{kernel: (matmul_flops, other_flops, exps)} in gpusim/cost.py's convention (other includes the
        exps): real query rows only (not the padding to 16 rows), keys clipped at K_b, masked scores inside a
        chunk computed, as the kernel does."""
        L, d = launch, launch.head_dim
        rows = L.heads * L.seq
        scores = rows * int(L.keys.sum())
        row_steps = rows * int(L.chunks.sum())
        row_ends = rows * int(L.active_splits.sum())  # each active program ends with its LSE and O / l_i
        main = (4 * d * scores, PER_SCORE * scores + (PER_ROW_STEP + d) * row_steps + (PER_ROW_END + d) * row_ends,
                scores + row_steps + row_ends)
        if L.num_splits == 1:
            return {"decode": main}
        merges, outputs = row_ends, L.batch * rows
        steps = rows * int((-(-L.active_splits // REDUCE_SPLITS)).sum())  # each rescales m_i, l_i, acc: 1 exp, d + 1
        reduce = (0, (REDUCE_PER_ROW_SPLIT + REDUCE_PER_ELEMENT_SPLIT * d) * merges + (PER_ROW_END + d) * outputs +
                  (d + 2) * steps, merges + outputs + steps)
        return {"split_kv": main, "reduce": reduce}

    def dot_tiling(self, launch, kernel):
        """None: a decode step's dots are priced on its counted FLOPs (its query rows, padded to 16, are not a
        Tiling's blocks; the fitted decode sets were scored so)."""
        return None

    def programs(self, launch, kernel):
        """Thread blocks in the kernel's grid (empty splits of short requests included: they start and exit)."""
        if kernel == "reduce":
            return launch.batch * launch.heads * launch.seq
        return launch.batch * launch.units * launch.num_splits

    def sram_bytes(self, launch, kernel, rows, keys):
        """What one thread block holds: its query rows (padded to the tl.dot tile) and one K and one V chunk;
        the reduce, REDUCE_SPLITS splits' partial O and LSE of its row (one step's). Scores and
        accumulators live in registers, so they are not counted."""
        d, e = launch.head_dim, launch.itemsize
        if kernel == "reduce":
            return REDUCE_SPLITS * (d + 1) * STATS_BYTES
        return rows * d * e + 2 * keys * d * e  # rows: padded_rows; keys: block_kv


SPLIT_KV = SplitKV()

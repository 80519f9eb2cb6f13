"""Flash-Decoding: a few query rows (seq >= 1, usually the 1 new token) attend to a long KV cache, which
is split across thread blocks so that a small batch still fills the GPU.

Programs. Grouped (GQA, the default), one program per (batch, K/V head, split) serves all `group` query
heads of its K/V head: its G*seq query rows (G = group) are one tl.dot tile, so each cached K and V
element is read once per group. Ungrouped, one program per (batch, query head, split) serves seq rows
and every query head re-reads its K/V head.

Splits. Request b has L_b cached tokens (cache_seqlens). Its keys are cut into n_b = ceil(K_b / Bc)
chunks of Bc == block_kv keys (K_b: the keys its last query row sees, below); split s takes chunks
[s*c_b, (s+1)*c_b) with c_b = ceil(n_b / num_splits), as flash-attention's split-KV kernel does, so a
short request may leave its last splits empty: they read their length and exit. With num_splits == 1
this is FlashAttention-2's decode path (kernel "decode"): one program per (batch, head) writes O and the
log-sum-exp directly. With more (kernel "split_kv"), each program writes a partial O and LSE in fp32,
and kernel "reduce" (one program per query row: (batch, query head, row)) merges them and writes O
once in the input dtype. The merge is the online softmax's: each split's O was normalised by its own
sum, so it is weighted by exp(LSE_s - LSE), LSE = log sum_s exp(LSE_s); the reduce loads every split's
LSE at once, takes their max, and sums the weighted partial O in one pass.

Paged cache. With page_size = P the cache is (num_pages, P, kv_heads, d) and request b's token t lives in
page block_table[b, t // P], row t % P. A program reads one int32 block-table entry for each page its
keys touch; rows past L_b are masked, so the partly filled last page moves only its real rows.

Causal alignment. "bottom_right" (FlashAttention >= 2.1, speculative decoding): query row i of seq sees
keys 0 .. L_b - seq + i, so K_b = L_b. "top_left" (torch's is_causal): row i sees keys 0 .. i, so
K_b = min(L_b, seq) and a single new token sees only key 0: the mistake of passing is_causal=True to a
decode step. With seq == 1, bottom-right sees the whole cache.
"""
from dataclasses import dataclass

import numpy as np

from .hardware import DTYPE_BYTES, GPU, STATS_BYTES, get_gpu

INDEX_BYTES = 4  # int32: block-table entries and cache lengths
ALIGNS = ("bottom_right", "top_left")
MIN_ROWS = 16  # tl.dot's smallest tile: a program's query rows are padded up to it
MAX_SPLITS = 128  # flash-attention's cap on num_splits (csrc/flash_attn/flash_api.cpp, set_params_splitkv)
DEFAULT_BLOCK_KV = 64
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


@dataclass(frozen=True)
class DecodeLaunch:
    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    seq: int  # query rows per head (1 for plain decoding, more for speculative decoding)
    seq_kv: tuple  # cache_seqlens: one cache length per request
    num_splits: int
    block_kv: int  # Bc: the K/V chunk a program steps by
    page_size: int | None  # P tokens per page; None: a contiguous cache (B, kv_heads, S, d)
    grouped: bool
    causal_align: str
    dtype: str
    gpu: GPU

    algo = "split_kv"  # the time model's module: gpusim/algorithms/split_kv.py
    causal = True  # the cache's keys come before the query rows (aligned by causal_align)

    @property
    def block_q(self):  # Br == the rows of a program's tl.dot tile, as the time model reads a tile
        return self.padded_rows

    def sram_bytes(self, kernel):
        return sram_bytes(self, kernel)

    @property
    def group(self):  # query heads per K/V head
        return self.heads // self.kv_heads

    @property
    def units(self):  # programs per request per split
        return self.kv_heads if self.grouped else self.heads

    @property
    def rows(self):  # query rows one program serves
        return (self.group if self.grouped else 1) * self.seq

    @property
    def padded_rows(self):  # the rows of its tl.dot tile
        return max(MIN_ROWS, 1 << (self.rows - 1).bit_length())

    @property
    def padded_splits(self):  # the reduce's tile of splits
        return 1 << (self.num_splits - 1).bit_length()

    @property
    def itemsize(self):
        return DTYPE_BYTES[self.dtype]

    @property
    def out_itemsize(self):  # an fp8 cache gives an fp16 output, as FlashAttention-3 does
        return DTYPE_BYTES["fp16"] if self.dtype == "fp8" else self.itemsize

    @property
    def kernels(self):
        return ("decode",) if self.num_splits == 1 else ("split_kv", "reduce")

    @property
    def keys(self):  # K_b: the keys visited per request, shape (B,)
        lengths = np.array(self.seq_kv, dtype=np.int64)
        return lengths if self.causal_align == "bottom_right" else np.minimum(lengths, self.seq)

    @property
    def chunks(self):  # n_b = ceil(K_b / Bc)
        return -(-self.keys // self.block_kv)

    @property
    def chunks_per_split(self):  # c_b = ceil(n_b / num_splits)
        return -(-self.chunks // self.num_splits)

    @property
    def active_splits(self):  # a_b: splits that hold at least one chunk
        return -(-self.chunks // self.chunks_per_split)

    def split_chunks(self, b, s):
        """The chunks [first, end) split s of request b visits (empty past its last active split)."""
        n, c = int(self.chunks[b]), int(self.chunks_per_split[b])
        return min(s * c, n), min((s + 1) * c, n)

    def kv_head(self, unit):
        return unit if self.grouped else unit // self.group

    def query_heads(self, unit):
        return range(unit * self.group, (unit + 1) * self.group) if self.grouped else range(unit, unit + 1)


def make_launch(*, batch, heads, kv_heads, head_dim, seq_kv, seq=1, num_splits=None, block_kv=None,
                page_size=None, grouped=True, causal_align="bottom_right", dtype="fp16", gpu="H200"):
    """Validate one decode launch; every error is one line naming the value and its limit.
    seq_kv: one cache length for every request, or a sequence of one per request (cache_seqlens).
    num_splits None: the most splits whose programs fill this GPU's resident split blocks but one per SM
    (num_splits_rule, split_slots)."""
    gpu = get_gpu(gpu)
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r} is not supported: choose one of {', '.join(DTYPE_BYTES)}")
    batch, heads, kv_heads = _positive("batch", batch), _positive("heads", heads), _positive("kv_heads", kv_heads)
    head_dim, seq = _positive("head_dim", head_dim), _positive("seq", seq)
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    if causal_align not in ALIGNS:
        raise ValueError(f"causal_align={causal_align!r} is not one of {', '.join(ALIGNS)}")
    lengths = _lengths(seq_kv, batch, seq, causal_align)
    block_kv = DEFAULT_BLOCK_KV if block_kv is None else _power_of_two("block_kv", block_kv, MIN_ROWS)
    page_size = None if page_size is None else check_page_size(page_size)
    probe = DecodeLaunch(batch, heads, kv_heads, head_dim, seq, lengths, 1, block_kv, page_size, bool(grouped),
                         causal_align, dtype, gpu)
    most = int(probe.chunks.max())
    if num_splits is None:
        num_splits = num_splits_rule(batch * probe.units, split_slots(probe), most, MAX_SPLITS)
    elif isinstance(num_splits, bool) or not isinstance(num_splits, (int, np.integer)) or num_splits <= 0:
        raise ValueError(f"num_splits={num_splits!r} must be a positive integer")
    elif num_splits > most:
        raise ValueError(f"num_splits={num_splits} is more than the {most:,} K/V chunks of block_kv={block_kv} in "
                         f"the longest request ({int(probe.keys.max()):,} keys)")
    launch = DecodeLaunch(batch, heads, kv_heads, head_dim, seq, lengths, int(num_splits), block_kv, page_size,
                          bool(grouped), causal_align, dtype, gpu)
    for kernel in launch.kernels:
        need = sram_bytes(launch, kernel)
        if need > gpu.sram_bytes_per_block:
            raise ValueError(f"block_kv={block_kv}, {launch.padded_rows} query rows, head_dim={head_dim} ({dtype}) "
                             f"need {need:,} B of SRAM in the {kernel} kernel; {gpu.name} has "
                             f"{gpu.sram_bytes_per_block:,} B per thread block")
    return launch


ROW_FIELDS = ("batch", "heads", "kv_heads", "head_dim", "seq_kv", "dtype", "page_size", "num_splits")


def launch_options(row):
    """make_launch's (and simulate("split_kv")'s) keyword arguments, less the GPU, of the launch a row of
    benchmarks/bench_decode.py's results (results/h200/decode.json) timed: its shape, cache, pages and splits."""
    return {name: row[name] for name in ROW_FIELDS}


def resident_programs(launch):
    """Split programs the GPU runs at once: its SMs times the blocks of the split kernel one SM keeps
    resident (gpusim.occupancy, from the compiled kernel's registers and shared memory: 5 on an H200)."""
    from .occupancy import occupancy, resources  # occupancy imports the algorithms, which import this module
    return launch.gpu.sm_count * occupancy(launch.gpu, resources(launch, "split_kv")).blocks_per_sm


def split_slots(launch):
    """The programs the split rule places: every SM's resident split blocks but one (4 of 5 on an H200).
    Measured on the H200 (results/h200/decode_splits.json, Llama-3-8B, pages of 16): 512 programs (64 splits
    at batch 1, 8 at batch 8) ran fastest, or within 1% of it, from 4K to 128K tokens; filling all 5 slots
    (82 and 9 splits) ran 0.5-5.5% slower (runs 12 and 14), flash-attention's rule over 2 per SM (29 splits)
    1.2x slower (run 9, decode_tiles.json)."""
    return max(launch.gpu.sm_count, resident_programs(launch) - launch.gpu.sm_count)


def num_splits_rule(per_split, slots, num_n_blocks, max_splits):
    """The most splits whose programs (per_split each: batch x K/V heads) fit in `slots`, at least one and
    at most one per chunk. A count that gives the same chunks per split as one fewer is passed over: its
    last splits would hold nothing. At batch 64 (512 programs per split) nothing is split."""
    top = max(1, min(max_splits, num_n_blocks, slots // per_split))
    return next(s for s in range(top, 0, -1) if s == 1 or -(-num_n_blocks // s) != -(-num_n_blocks // (s - 1)))


def launch_for_cache(q_shape, k_shape, v_shape, cache_seqlens, *, paged, page_size=None, causal_align="bottom_right",
                     **options):
    """The launch for arrays of these shapes: q (B, H, seq, d) and a K/V cache, paged (num_pages, P,
    kv_heads, d) or contiguous (B, kv_heads, S, d). options: make_launch's tiling, alignment, dtype, gpu."""
    if len(q_shape) != 4:
        raise ValueError(f"q is {tuple(q_shape)}: expected 4 dimensions (batch, heads, seq, head_dim)")
    layout = "(num_pages, page_size, kv_heads, head_dim)" if paged else "(batch, kv_heads, seq_kv, head_dim)"
    if len(k_shape) != 4:
        raise ValueError(f"k_cache is {tuple(k_shape)}: expected 4 dimensions {layout}")
    if tuple(k_shape) != tuple(v_shape):
        raise ValueError(f"k_cache is {tuple(k_shape)} but v_cache is {tuple(v_shape)}: they must match")
    batch, heads, seq, head_dim = q_shape
    if k_shape[3] != head_dim:
        raise ValueError(f"q {tuple(q_shape)} and k_cache {tuple(k_shape)} must agree on head_dim (last dimension)")
    lengths = np.array(_lengths(cache_seqlens, batch, seq, causal_align, "cache_seqlens"), dtype=np.int64)
    if paged:
        page_size = k_shape[1] if page_size is None else check_page_size(page_size)
        if page_size != k_shape[1]:
            raise ValueError(f"page_size={page_size} but k_cache {tuple(k_shape)} has pages of {k_shape[1]} tokens")
    elif page_size is not None:
        raise ValueError(f"page_size={page_size!r} was given without a block_table: a paged cache needs both")
    elif k_shape[0] != batch:
        raise ValueError(f"q has batch {batch} but k_cache {tuple(k_shape)} holds {k_shape[0]} requests (dim 0)")
    elif lengths.max() > k_shape[2]:
        b = int(np.argmax(lengths))
        raise ValueError(f"cache_seqlens[{b}]={lengths[b]:,} is longer than the cache's {k_shape[2]:,} positions "
                         f"(k_cache dim 2)")
    return make_launch(batch=batch, heads=heads, kv_heads=k_shape[2] if paged else k_shape[1], head_dim=head_dim,
                       seq=seq, seq_kv=tuple(lengths.tolist()), page_size=page_size if paged else None,
                       causal_align=causal_align, **options)


def check_page_size(page_size):
    if isinstance(page_size, bool) or not isinstance(page_size, (int, np.integer)) or page_size <= 0:
        raise ValueError(f"page_size={page_size!r} must be a positive number of tokens per page")
    return _power_of_two("page_size", page_size, 1)


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return int(value)


def _power_of_two(name, value, least):
    value = _positive(name, value)
    if value < least or value & (value - 1):
        raise ValueError(f"{name}={value} must be a power of two >= {least}")
    return value


def _lengths(seq_kv, batch, seq, causal_align, name="seq_kv"):
    lengths = (np.asarray(seq_kv).item(),) * batch if np.ndim(seq_kv) == 0 else tuple(np.asarray(seq_kv).tolist())
    if len(lengths) != batch:
        raise ValueError(f"{name} has {len(lengths)} cache lengths but batch={batch}: give one per request")
    for b, n in enumerate(lengths):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"{name}[{b}]={n!r}: request {b} needs a positive number of cached tokens")
        if causal_align == "bottom_right" and n < seq:
            raise ValueError(f"{name}[{b}]={n} < seq={seq}: aligned bottom-right, request {b}'s query row 0 would "
                             f"see no keys")
    return lengths


def check_block_table(block_table, cache_seqlens, num_pages, page_size):
    """One line for the first bad entry of a block table (B, max_pages): too short for a request, or a page
    number outside 0 .. num_pages - 1. Only the ceil(L_b / P) entries request b uses are checked."""
    table = np.asarray(block_table)
    lengths = np.asarray(cache_seqlens, dtype=np.int64)
    if table.ndim != 2 or table.shape[0] != len(lengths) or not np.issubdtype(table.dtype, np.integer):
        raise ValueError(f"block_table is {table.dtype} {table.shape}: expected integers, one row per request "
                         f"({len(lengths)}, max_pages)")
    need = -(-lengths // page_size)
    short = np.flatnonzero(need > table.shape[1])
    if short.size:
        b = int(short[0])
        raise ValueError(f"block_table has {table.shape[1]} pages per request but request {b} "
                         f"(cache_seqlens[{b}]={lengths[b]:,}) needs {need[b]:,} pages of {page_size} tokens")
    used = np.arange(table.shape[1])[None, :] < need[:, None]
    bad = used & ((table < 0) | (table >= num_pages))
    if bad.any():
        b, j = (int(x) for x in np.argwhere(bad)[0])
        what = "is negative" if table[b, j] < 0 else "is out of range"
        raise ValueError(f"block_table[{b}, {j}]={table[b, j]} {what} for request {b}: the cache has {num_pages:,} "
                         f"pages (0..{num_pages - 1:,})")


def count(launch):
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
        return out | {(kernel, "O"): (0, L.batch * rows * d * L.out_itemsize), (kernel, "LSE"): (0, L.batch * rows * f)}
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


def flops(launch):
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
    reduce = (0, (REDUCE_PER_ROW_SPLIT + REDUCE_PER_ELEMENT_SPLIT * d) * merges + (PER_ROW_END + d) * outputs,
              merges + outputs)
    return {"split_kv": main, "reduce": reduce}


def programs(launch, kernel):
    """Thread blocks in the kernel's grid (empty splits of short requests included: they start and exit)."""
    if kernel == "reduce":
        return launch.batch * launch.heads * launch.seq
    return launch.batch * launch.units * launch.num_splits


def sram_bytes(launch, kernel):
    """What one thread block holds: its query rows (padded to the tl.dot tile) and one K and one V chunk;
    the reduce, every split's partial O and LSE of its row (splits padded to a power of two). Scores and
    accumulators live in registers, so they are not counted."""
    d, e = launch.head_dim, launch.itemsize
    if kernel == "reduce":
        return launch.padded_splits * (d + 1) * STATS_BYTES
    return launch.padded_rows * d * e + 2 * launch.block_kv * d * e

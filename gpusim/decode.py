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
this is FlashAttention-2's unsplit decode (kernel "decode"): one program per (batch, head) writes O and the
log-sum-exp directly. With more (kernel "split_kv"), each program writes a partial O and LSE in fp32,
and kernel "reduce" (one program per query row: (batch, query head, row)) merges them and writes O
once in the input dtype. The merge is the online softmax's: each split's O was normalised by its own
sum, so it is weighted by exp(LSE_s - LSE), LSE = log sum_s exp(LSE_s); the reduce loads the splits' LSE
and partial O REDUCE_SPLITS at a time and merges them online (one compiled kernel for any split count).

Paged cache. With page_size = P the cache is (num_pages, P, kv_heads, d) and request b's token t lives in
page block_table[b, t // P], row t % P. A program reads one int32 block-table entry for each page its
keys touch; rows past L_b are masked, so the partly filled last page moves only its real rows.

Causal alignment. "bottom_right" (FlashAttention >= 2.1, speculative decoding): query row i of seq sees
keys 0 .. L_b - seq + i, so K_b = L_b. "top_left" (torch's is_causal): row i sees keys 0 .. i, so
K_b = min(L_b, seq) and a single new token sees only key 0: the mistake of passing is_causal=True to a
decode step. With seq == 1, bottom-right sees the whole cache.
"""
import operator
from dataclasses import replace

import numpy as np

from .hardware import GRID_YZ_MOST, dtype_name, get_gpu
from .occupancy import exceeded, occupancy, resources
from .passes.split_kv import SPLIT_KV
from .shape import (INDEX_BYTES, MAX_SEQ, MIN_ROWS, DecodeLaunch, check_align, check_groups, counts,  # noqa: F401
                    flag, positive_int, power_of_two)

MAX_SPLITS = 128  # flash-attention's cap on num_splits (csrc/flash_attn/flash_api.cpp, set_params_splitkv)
DEFAULT_BLOCK_KV = 64  # Bc when none is given (where it fits: make_launch): the chunk kernels/decode.py launches


def make_launch(*, heads, kv_heads, head_dim, seq_kv, batch=None, seq=1, num_splits=None, block_kv=None,
                page_size=None, grouped=True, causal_align="bottom_right", dtype="fp16", gpu="H200"):
    """Validate one decode launch; every error is one line naming the value and its limit.
    seq_kv: one cache length for every request, or a sequence of one per request (cache_seqlens); batch None: one
    request per length given (1 for a single length), as the CLI's --seq-kv 1000,70000,4096 is a batch of 3.
    num_splits None: the most splits whose programs fill this GPU's resident split blocks, one fewer per SM
    (num_splits_rule, split_slots); one where no chunk's reduce kernel fits the GPU (one split needs no reduce).
    block_kv None: DEFAULT_BLOCK_KV, or where its kernels' blocks do not fit this GPU (overflow) the largest of its
    halvings down to MIN_ROWS that does."""
    gpu, dtype = get_gpu(gpu), dtype_name(dtype)
    batch = _batch(batch, seq_kv)
    heads, kv_heads, head_dim, seq = counts(heads=heads, kv_heads=kv_heads, head_dim=head_dim, seq=seq).values()
    check_grid(batch=batch, seq=seq)
    SPLIT_KV.check(gpu, head_dim)
    check_groups(heads, kv_heads)
    check_align(causal_align)
    lengths = _lengths(seq_kv, batch, seq, causal_align)
    blocks = halvings(DEFAULT_BLOCK_KV) if block_kv is None else (power_of_two("block_kv", block_kv, MIN_ROWS),)
    page_size = None if page_size is None else check_page_size(page_size)
    num_splits = None if num_splits is None else positive_int("num_splits", num_splits)
    base = DecodeLaunch(batch, heads, kv_heads, head_dim, seq, lengths, 1, blocks[0], page_size,
                        flag("grouped", grouped), causal_align, dtype, gpu, SPLIT_KV)
    launch, problem = _first_fit(base, num_splits, blocks)
    if launch is None and num_splits is None and problem and problem[0] == "reduce":  # the rule's splits, unreduced
        launch, problem = _first_fit(base, 1, blocks)  # one split needs no reduce
    if launch is None:
        raise ValueError(_refusal(base, num_splits, blocks[-1], problem))
    most = int(launch.chunks.max())
    if launch.num_splits > most:  # against the chunk that fits, which may be a halving of the default
        raise ValueError(f"num_splits={num_splits} is more than the {most:,} K/V chunks of block_kv={launch.block_kv} "
                         f"in the longest request ({int(launch.keys.max()):,} keys)")
    return launch


def _batch(batch, seq_kv):
    """batch, or where it is None the requests seq_kv gives a length for (1 for a single length)."""
    if batch is not None:
        return positive_int("batch", batch, MAX_SEQ)
    if np.ndim(seq_kv) == 0:
        return 1
    if not len(seq_kv):
        raise ValueError("seq_kv is empty: give one cache length per request")
    return len(seq_kv)


def halvings(block_kv):
    """block_kv, then its halvings down to MIN_ROWS: the chunks tried, in order."""
    return tuple(block_kv >> i for i in range((block_kv // MIN_ROWS).bit_length()))


def _first_fit(base, num_splits, blocks):
    """(The launch at the first chunk of `blocks` whose kernels fit the GPU, None), or (None, the last chunk's
    overflow: its kernel and its line; None where there is no chunk)."""
    problem = None
    for block_kv in blocks:
        launch = _split(replace(base, block_kv=block_kv), num_splits)
        problem = overflow(launch)
        if problem is None:
            return launch, None
    return None, problem


def _split(probe, num_splits):
    """The launch of the probe's chunk (num_splits == 1) with num_splits splits, or (None) the rule's."""
    if num_splits is None:
        num_splits = num_splits_rule(probe.batch * probe.units, split_slots(probe), int(probe.chunks.max()),
                                     MAX_SPLITS)
    check_grid(num_splits=int(num_splits))
    return replace(probe, num_splits=int(num_splits))


def overflow(launch):
    """(kernel, one line) for the first kernel of the launch whose thread block no SM holds, None where each fits:
    its query rows and one K and V chunk past the GPU's SRAM per block, or its blocks per SM 0 (gpusim.occupancy,
    from the compiled kernel's registers and shared memory, or their estimate: the time model's own test)."""
    gpu = launch.gpu
    head = (f"block_kv={launch.block_kv}, {launch.padded_rows} query rows, head_dim={launch.head_dim} "
            f"({launch.dtype}) need")
    for kernel in launch.kernels:
        need = launch.sram_bytes(kernel)
        if need > gpu.sram_bytes_per_block:
            return kernel, (f"{head} {need:,} B of SRAM in the {kernel} kernel; {gpu.name} has "
                            f"{gpu.sram_bytes_per_block:,} B per thread block")
        res = resources(launch, kernel)
        occ = occupancy(gpu, res)
        if occ.blocks_per_sm == 0:
            need, limit = exceeded(gpu, res, occ)
            return kernel, f"{head} {need} in the {kernel} kernel; {limit}"
    return None


def _refusal(base, num_splits, block_kv, problem):
    """The line for a launch that no chunk down to block_kv fits: block_kv's overflow (problem: its kernel and line),
    and what fits (as the CLI spells it too): a smaller block_kv, or where the reduce is what overflows, one split
    (which needs none); or that nothing does."""
    kernel, line = problem
    smaller = _first_fit(base, num_splits, halvings(block_kv)[1:])[0]
    if smaller is not None:
        return (f"{line}; a smaller block_kv fits: block_kv={smaller.block_kv} (--block-kv {smaller.block_kv} on the "
                f"command line)")
    if kernel == "reduce" and _first_fit(base, 1, halvings(block_kv))[0] is not None:
        return f"{line}; one split needs no reduce: num_splits=1 (--num-splits 1 on the command line) fits"
    return f"{line}; no block_kv of {MIN_ROWS} or more fits"


GRID_ADVICE = {"batch": "decode the batch in parts", "seq": "decode fewer query rows a request at once",
               "num_splits": "give fewer splits"}


def check_grid(**counts):
    """One line for a count the decode kernels' grids, (units, batch, num_splits) and (heads, batch, seq), put on
    their y or z axis past CUDA's GRID_YZ_MOST."""
    for name, value in counts.items():
        if value > GRID_YZ_MOST:
            raise ValueError(f"{name}={value:,}: the decode kernels' grids hold at most {GRID_YZ_MOST:,} along their y "
                             f"and z axes (batch; num_splits and seq): {GRID_ADVICE[name]}")


ROW_FIELDS = ("batch", "heads", "kv_heads", "head_dim", "seq_kv", "dtype", "page_size", "num_splits")


def launch_options(row):
    """make_launch's (and simulate("split_kv")'s) keyword arguments, less the GPU, of the launch a row of
    benchmarks/bench_decode.py's results (results/h200/decode.json) timed: its shape, cache, pages and splits."""
    return {name: row[name] for name in ROW_FIELDS}


def resident_programs(launch):
    """Split programs the GPU runs at once: its SMs times the blocks of the split kernel one SM keeps
    resident (gpusim.occupancy, from the compiled kernel's registers and shared memory: 5 on an H200)."""
    return launch.gpu.sm_count * occupancy(launch.gpu, resources(launch, "split_kv")).blocks_per_sm


def split_slots(launch):
    """The programs the split rule places: per SM one fewer than its resident split blocks (4 of 5 on an H200).
    Measured on the H200 (results/h200/decode_splits.json, Llama-3-8B's attention shape, pages of 16): 512 programs
    (64 splits at batch 1, 8 at batch 8) ran fastest, or within 1% of it, from 4K to 128K tokens; filling all 5 slots
    (82 splits at batch 1) ran 1.3-6.3% slower (run 76; runs 12 and 14 had 0.5-5.5%, and 9 splits at batch 8),
    flash-attention's rule over 2 per SM (29 splits) 1.2x slower (run 9, decode_tiles.json)."""
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
    positive_int("batch", batch)  # before the lengths: a batch of none has no longest
    if k_shape[3] != head_dim:
        raise ValueError(f"q {tuple(q_shape)} and k_cache {tuple(k_shape)} must agree on head_dim (last dimension)")
    lengths = np.array(_lengths(cache_seqlens, batch, seq, causal_align, "cache_seqlens"), dtype=np.int64)
    if paged:
        page_size = k_shape[1] if page_size is None else check_page_size(page_size)
        if page_size != k_shape[1]:
            raise ValueError(f"page_size={page_size} but k_cache {tuple(k_shape)} has pages of {k_shape[1]} tokens")
    elif page_size is not None:
        raise ValueError(f"page_size={page_size!r} was given without a block_table: a paged cache needs both")
    elif k_shape[0] != batch:  # a paged cache given without its block table reads as a contiguous one
        raise ValueError(f"q has batch {batch} but k_cache {tuple(k_shape)} holds {k_shape[0]} requests (dim 0), read "
                         f"as a contiguous cache {layout}; a paged cache (num_pages, page_size, kv_heads, head_dim) "
                         "needs its block_table=")
    elif lengths.max() > k_shape[2]:
        b = int(np.argmax(lengths))
        raise ValueError(f"cache_seqlens[{b}]={lengths[b]:,} is longer than the cache's {k_shape[2]:,} positions "
                         f"(k_cache dim 2)")
    return make_launch(batch=batch, heads=heads, kv_heads=k_shape[2] if paged else k_shape[1], head_dim=head_dim,
                       seq=seq, seq_kv=tuple(lengths.tolist()), page_size=page_size if paged else None,
                       causal_align=causal_align, **options)


def check_page_size(page_size):
    """A page of a paged cache: a positive number of tokens, a power of two."""
    return power_of_two("page_size", positive_int("page_size", page_size, what="number of tokens per page"), 1)


def _lengths(seq_kv, batch, seq, causal_align, name="seq_kv"):
    """seq_kv as one Python int per request, checked (check_lengths); each value as given, so that one float in a
    list does not make its neighbours floats, nor a length past int64 a NumPy error."""
    if np.ndim(seq_kv) == 0:
        lengths = (np.asarray(seq_kv).item(),) * batch
    elif isinstance(seq_kv, (list, tuple, range)):
        lengths = tuple(_as_given(n) for n in seq_kv)
    else:
        lengths = tuple(np.asarray(seq_kv).tolist())
    if len(lengths) != batch:
        raise ValueError(f"{name} has {len(lengths)} cache lengths but batch={batch}: give one per request")
    return check_lengths(lengths, seq, causal_align, name)


def _as_given(n):
    """One length of a list as a Python int where it is an integer of any kind (a NumPy or a 0-d torch integer:
    operator.index), else as given, for check_lengths to name (a bool, a float, a string)."""
    if isinstance(n, (bool, float, np.bool_, np.floating)):
        return n.item() if isinstance(n, np.generic) else n
    try:
        return operator.index(n)
    except TypeError:
        return n


def check_lengths(lengths, seq, causal_align, name):
    """lengths (Python ints), or one line for the first that is not an integer, not positive, more than MAX_SEQ (the
    longest sequence gpusim counts, as for seq), or (bottom-right) shorter than seq, so that its query row 0 would see
    no key. kernels/decode.py's plans check theirs here too."""
    for b, n in enumerate(lengths):
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"{name}[{b}]={n!r} must be an integer: request {b}'s number of cached tokens")
        if n <= 0:
            raise ValueError(f"{name}[{b}]={n!r}: request {b} needs a positive number of cached tokens")
        if n > MAX_SEQ:
            raise ValueError(f"{name}[{b}]={n:,} is more than the {MAX_SEQ:,} ({MAX_SEQ.bit_length() - 1} bits) "
                             f"cached tokens gpusim counts")
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
    """{(kernel, tensor): (read_bytes, write_bytes)} of the launch (gpusim/passes/split_kv.py)."""
    return launch.pass_.count(launch)


def flops(launch):
    """{kernel: (matmul_flops, other_flops, exps)} of the launch."""
    return launch.pass_.flops(launch)


def programs(launch, kernel):
    """Thread blocks in the kernel's grid."""
    return launch.pass_.programs(launch, kernel)

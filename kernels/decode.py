"""Flash-Decoding in Triton: the split-KV kernel over a paged (or contiguous) K/V cache, grouped by GQA,
and the reduce kernel that merges its partial results; with num_splits=1, FlashAttention-2's decode path.

Grouped, one program per (K/V head, request, split) serves the G = heads / kv_heads query heads of its
K/V head: their G*seq query rows are one tl.dot tile (padded to 16 rows), so each cached K and V element
is read once per group. Ungrouped, one program per (query head, request, split) serves seq rows. The
online softmax runs in fp32 (m_i, l_i, acc); the partial O and LSE are fp32. What moves, and the names,
are gpusim/decode.py's: trace_io's counts equal its closed form byte for byte.
"""
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from gpusim.decode import check_block_table, launch_for_cache

from .interpreter import INTERPRETED
from .launch import DTYPES, HEAD_DIMS, detect_gpu


@triton.jit
def _attend(Q, K, V, block_table, cache_seqlens, scale, max_pages, cache_len, num_splits,
            H: tl.constexpr, KV_HEADS: tl.constexpr, SEQ: tl.constexpr, GROUP: tl.constexpr, ROWS: tl.constexpr,
            GROUPED: tl.constexpr, BLOCK_R: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
            Bc: tl.constexpr, P: tl.constexpr, BOTTOM_RIGHT: tl.constexpr):
    """One program's chunks: (acc, m_i, l_i, its query rows' indices, row mask). P == 0: contiguous cache."""
    unit, b, split = tl.program_id(0), tl.program_id(1).to(tl.int64), tl.program_id(2)
    n_cached = tl.load(cache_seqlens + b)  # read 1 int32: L_b
    n_keys = n_cached if BOTTOM_RIGHT else tl.minimum(n_cached, SEQ)  # K_b: keys the last row sees
    n_chunks = tl.cdiv(n_keys, Bc)
    per_split = tl.cdiv(n_chunks, num_splits)  # c_b
    first = tl.minimum(split * per_split, n_chunks)
    end = tl.minimum(first + per_split, n_chunks)  # first == end: a short request's empty split
    h0 = unit * GROUP if GROUPED else unit  # first query head served
    kvh = unit if GROUPED else unit // GROUP
    r, cols = tl.arange(0, BLOCK_R), tl.arange(0, BLOCK_D)
    rows = (b * H + h0) * SEQ + r  # G*seq consecutive rows of Q's (B*H*seq, d) view
    row_ok = (r < ROWS) & (first < end)
    q_i = tl.load(Q + rows[:, None] * D + cols[None, :], mask=row_ok[:, None] & (cols < D)[None, :],
                  other=0.0)  # read G*seq*d
    last = (n_cached - SEQ + r % SEQ) if BOTTOM_RIGHT else r % SEQ  # row sees keys 0..last
    m_i = tl.full([BLOCK_R], float("-inf"), tl.float32)  # running row max
    l_i = tl.zeros([BLOCK_R], tl.float32)  # running row sum of exp(s - m_i)
    acc = tl.zeros([BLOCK_R, BLOCK_D], tl.float32)  # O rows not yet divided by l_i
    page = n_cached * 0  # the page of the chunk, when P/Bc chunks share one
    for j in range(first, end):
        keys = j * Bc + tl.arange(0, Bc)
        key_ok = keys < n_keys
        if P == 0:
            at = (b * KV_HEADS + kvh) * cache_len + keys  # row of the (B*kv_heads*S, d) cache
        else:
            if Bc >= P:  # the chunk spans Bc/P whole pages
                slots = (j * Bc) // P + tl.arange(0, Bc // P)
                pages = tl.load(block_table + b * max_pages + slots, mask=slots * P < n_keys,
                                other=0)  # read <= Bc/P int32: the pages holding keys
                page_of_key = tl.reshape(tl.broadcast_to(pages[:, None], (Bc // P, P)), (Bc,))
            else:  # P/Bc chunks share a page: read its entry at the page's first chunk or the split's first
                fresh = (j == first) | ((j * Bc) % P == 0)
                page = tl.where(fresh, tl.load(block_table + b * max_pages + (j * Bc) // P, mask=fresh, other=0),
                                page)  # read 1 int32 when fresh
                page_of_key = page
            at = (page_of_key.to(tl.int64) * P + keys % P) * KV_HEADS + kvh  # row of the (pages*P*kv_heads, d) cache
        kv_offs, kv_mask = at[:, None] * D + cols[None, :], key_ok[:, None] & (cols < D)[None, :]
        k_j = tl.load(K + kv_offs, mask=kv_mask, other=0.0)  # read (keys < K_b)*d: a partial page's real rows
        v_j = tl.load(V + kv_offs, mask=kv_mask, other=0.0)  # read (keys < K_b)*d
        s_ij = tl.dot(q_i, tl.trans(k_j), input_precision="ieee") * scale
        s_ij = tl.where(key_ok[None, :] & (keys[None, :] <= last[:, None]), s_ij, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_ij, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no visible key here stays at -inf
        alpha = tl.exp(m_i - m_safe)
        p_ij = tl.exp(s_ij - m_safe[:, None])
        l_i = alpha * l_i + tl.sum(p_ij, 1)
        acc = acc * alpha[:, None] + tl.dot(p_ij.to(v_j.dtype), v_j, input_precision="ieee")
        m_i = m_new
    return acc, m_i, l_i, rows, row_ok


@triton.jit(do_not_specialize=["max_pages", "cache_len", "num_splits"])
def decode_kernel(Q, K, V, O, LSE, block_table, cache_seqlens, scale, max_pages, cache_len, num_splits,
                  H: tl.constexpr, KV_HEADS: tl.constexpr, SEQ: tl.constexpr, GROUP: tl.constexpr,
                  ROWS: tl.constexpr, GROUPED: tl.constexpr, BLOCK_R: tl.constexpr, D: tl.constexpr,
                  BLOCK_D: tl.constexpr, Bc: tl.constexpr, P: tl.constexpr, BOTTOM_RIGHT: tl.constexpr):
    """num_splits == 1: FlashAttention-2's decode path, O and LSE written directly."""
    acc, m_i, l_i, rows, row_ok = _attend(Q, K, V, block_table, cache_seqlens, scale, max_pages, cache_len,
                                          num_splits, H, KV_HEADS, SEQ, GROUP, ROWS, GROUPED, BLOCK_R, D, BLOCK_D,
                                          Bc, P, BOTTOM_RIGHT)
    cols = tl.arange(0, BLOCK_D)
    l_i = tl.where(row_ok, l_i, 1.0)  # padding rows: nothing to divide
    tl.store(O + rows[:, None] * D + cols[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=row_ok[:, None] & (cols < D)[None, :])  # write G*seq*d
    tl.store(LSE + rows, m_i + tl.log(l_i), mask=row_ok)  # write G*seq (fp32)


@triton.jit(do_not_specialize=["max_pages", "cache_len", "num_splits"])
def split_kv_kernel(Q, K, V, O_partial, LSE_partial, block_table, cache_seqlens, scale, max_pages, cache_len,
                    num_splits, H: tl.constexpr, KV_HEADS: tl.constexpr, SEQ: tl.constexpr, GROUP: tl.constexpr,
                    ROWS: tl.constexpr, GROUPED: tl.constexpr, BLOCK_R: tl.constexpr, D: tl.constexpr,
                    BLOCK_D: tl.constexpr, Bc: tl.constexpr, P: tl.constexpr, BOTTOM_RIGHT: tl.constexpr,
                    PDL: tl.constexpr):
    """One split of the cache: partial O and LSE in fp32, (num_splits, B, H, seq, d) and (num_splits, B, H, seq).
    PDL: the reduce may launch now (programmatic dependent launch), its programs waiting on the GPU (gdc_wait)
    for these to finish, instead of launching after them."""
    if PDL:
        gdc_launch_dependents()
    acc, m_i, l_i, rows, row_ok = _attend(Q, K, V, block_table, cache_seqlens, scale, max_pages, cache_len,
                                          num_splits, H, KV_HEADS, SEQ, GROUP, ROWS, GROUPED, BLOCK_R, D, BLOCK_D,
                                          Bc, P, BOTTOM_RIGHT)
    cols = tl.arange(0, BLOCK_D)
    at = tl.program_id(2).to(tl.int64) * tl.num_programs(1) * H * SEQ + rows
    seen = l_i > 0  # a row with no visible key in this split: O = 0, LSE = -inf (weight 0 in the reduce)
    l_safe = tl.where(seen, l_i, 1.0)
    tl.store(O_partial + at[:, None] * D + cols[None, :], acc / l_safe[:, None],
             mask=row_ok[:, None] & (cols < D)[None, :])  # write G*seq*d (fp32)
    tl.store(LSE_partial + at, tl.where(seen, m_i + tl.log(l_safe), float("-inf")), mask=row_ok)  # write G*seq


@triton.jit(do_not_specialize=["num_splits"])
def reduce_kernel(O_partial, LSE_partial, O, LSE, cache_seqlens, num_splits, H: tl.constexpr, SEQ: tl.constexpr,
                  SPLITS: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr, Bc: tl.constexpr,
                  BOTTOM_RIGHT: tl.constexpr, PDL: tl.constexpr):
    """One query row (head h, request b, row i): every split's partial result at once. Split s's O was
    divided by its own sum exp(LSE_s); weighted by exp(LSE_s - LSE) they add up to O."""
    h, b, i = tl.program_id(0), tl.program_id(1).to(tl.int64), tl.program_id(2)
    n_cached = tl.load(cache_seqlens + b)  # read 1 int32: L_b, which says how many splits it filled
    n_keys = n_cached if BOTTOM_RIGHT else tl.minimum(n_cached, SEQ)
    n_chunks = tl.cdiv(n_keys, Bc)
    if PDL:  # launched early: wait until the split kernel has finished and its partials are visible
        gdc_wait()
    s = tl.arange(0, SPLITS)
    filled = s < tl.cdiv(n_chunks, tl.cdiv(n_chunks, num_splits))  # splits 0 .. a_b - 1
    cols = tl.arange(0, BLOCK_D)
    at = s * (tl.num_programs(1).to(tl.int64) * H * SEQ) + (b * H + h) * SEQ + i  # the row in each split
    lse_s = tl.load(LSE_partial + at, mask=filled, other=float("-inf"))  # read a_b (fp32)
    o_s = tl.load(O_partial + at[:, None] * D + cols[None, :], mask=filled[:, None] & (cols < D)[None, :],
                  other=0.0)  # read a_b*d (fp32)
    m = tl.max(lse_s, 0)  # finite: split 0 holds key 0, which every row sees
    w = tl.exp(lse_s - m)  # 0 for the empty splits and where the row saw no key
    l_sum = tl.sum(w, 0)
    row = (b * H + h) * SEQ + i
    tl.store(O + row * D + cols, (tl.sum(w[:, None] * o_s, 0) / l_sum).to(O.dtype.element_ty),
             mask=cols < D)  # write d
    tl.store(LSE + row, m + tl.log(l_sum))  # write 1 (fp32)


@dataclass(frozen=True)
class DecodeCall:
    """A checked launch: gpusim's DecodeLaunch and the tensors its kernels read. Build it once with
    prepare_decode (the checks copy the block table to the host); run_decode launches it."""
    launch: object  # gpusim.decode.DecodeLaunch
    q: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    cache_seqlens: torch.Tensor  # int32 (B,)
    block_table: torch.Tensor  # int32 (B, max_pages); a 1-element placeholder for a contiguous cache


def decode_attention(q, k_cache, v_cache, *, cache_seqlens, block_table=None, page_size=None, num_splits=None,
                     block_kv=None, causal_align="bottom_right", grouped=True, return_lse=False, gpu=None):
    """Attention of q (B, H, seq, d) over a K/V cache: paged (num_pages, page_size, kv_heads, d) reached
    through block_table (B, max_pages), or contiguous (B, kv_heads, S, d) without one. cache_seqlens: the
    tokens cached per request. Returns O in q's dtype (and with return_lse=True the fp32 log-sum-exp,
    (B, H, seq)). num_splits None: gpusim.decode's rule for this GPU; block_kv: the chunk (64)."""
    call = prepare_decode(q, k_cache, v_cache, cache_seqlens=cache_seqlens, block_table=block_table,
                          page_size=page_size, num_splits=num_splits, block_kv=block_kv, causal_align=causal_align,
                          grouped=grouped, gpu=gpu)
    o, lse = run_decode(call)
    return (o, lse) if return_lse else o


def prepare_decode(q, k_cache, v_cache, *, cache_seqlens, block_table=None, page_size=None, num_splits=None,
                   block_kv=None, causal_align="bottom_right", grouped=True, gpu=None):
    """Check everything before anything launches; one line per problem (gpusim.decode's messages)."""
    for name, x in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(x, torch.Tensor) or x.dim() != 4:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name} is {shape}: expected a 4-d tensor")
        if x.dtype not in DTYPES:
            raise ValueError(f"{name} has dtype {x.dtype}: supported are {', '.join(map(str, DTYPES))}")
        if x.device != q.device:
            raise ValueError(f"{name} is on {x.device} but q is on {q.device}: they must be on one device")
    if not q.dtype == k_cache.dtype == v_cache.dtype:
        raise ValueError(f"q, k_cache, v_cache have dtypes {q.dtype}, {k_cache.dtype}, {v_cache.dtype}: they must match")
    if not HEAD_DIMS[0] <= q.shape[3] <= HEAD_DIMS[1]:
        raise ValueError(f"head_dim={q.shape[3]} is outside the supported {HEAD_DIMS[0]}..{HEAD_DIMS[1]}")
    if q.device.type == "cpu" and not INTERPRETED:
        raise ValueError("q is a CPU tensor but the kernels were compiled for the GPU: set TRITON_INTERPRET=1 "
                         "before importing gpusim_kernels to run them in Triton's interpreter")
    seqlens = _indices("cache_seqlens", cache_seqlens, 1, q.device)
    launch = launch_for_cache(q.shape, k_cache.shape, v_cache.shape, seqlens.cpu().numpy(),
                              paged=block_table is not None, page_size=page_size, num_splits=num_splits,
                              block_kv=block_kv, causal_align=causal_align, grouped=grouped, dtype=DTYPES[q.dtype],
                              gpu=detect_gpu(q.device) if gpu is None else gpu)
    if block_table is None:
        table = torch.zeros(1, dtype=torch.int32, device=q.device)
    else:
        table = _indices("block_table", block_table, 2, q.device)
        check_block_table(table.cpu().numpy(), launch.seq_kv, k_cache.shape[0], launch.page_size)
    return DecodeCall(launch, q.contiguous(), k_cache.contiguous(), v_cache.contiguous(), _int32(seqlens),
                      _int32(table))


def _indices(name, x, dims, device):
    """x as an integer tensor on the device, its values as given (checked before any narrowing)."""
    x = torch.as_tensor(x, device=device)
    if x.dim() != dims or x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise ValueError(f"{name} is {x.dtype} {tuple(x.shape)}: expected {dims}-d integers")
    return x


def _int32(x):
    """What the kernels read: int32, contiguous (a copy for other integer types; values already checked)."""
    return x.to(torch.int32).contiguous()


def run_decode(call, pdl=None, **launch_options):
    """Launch the checked call: (O, LSE). launch_options (num_warps, num_stages) override the split kernel's
    launch that gpusim prices, for a sweep of them (benchmarks/decode_tiles.py). pdl: launch the reduce as a
    programmatic dependent launch (None: where the GPU has it, compute capability 9.0 and later; never in the
    interpreter)."""
    L, q = call.launch, call.q
    pdl = dependent_launch(q.device) if pdl is None else pdl
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    split = L.num_splits > 1
    if split:
        o_partial = torch.empty((L.num_splits, *q.shape), dtype=torch.float32, device=q.device)
        lse_partial = torch.empty((L.num_splits, *q.shape[:3]), dtype=torch.float32, device=q.device)
    paged = L.page_size is not None
    grid = (L.units, L.batch, L.num_splits)
    args = (call.block_table, call.cache_seqlens, L.head_dim ** -0.5, call.block_table.shape[-1],
            0 if paged else call.k_cache.shape[2], L.num_splits)
    if not split:
        decode_kernel[grid](q, call.k_cache, call.v_cache, o, lse, *args, **constants(L, "decode") | launch_options)
        return o, lse
    split_kv_kernel[grid](q, call.k_cache, call.v_cache, o_partial, lse_partial, *args,
                          **constants(L, "split_kv", pdl) | launch_options)
    reduce_kernel[(L.heads, L.batch, L.seq)](o_partial, lse_partial, o, lse, call.cache_seqlens, L.num_splits,
                                             **constants(L, "reduce", pdl), launch_pdl=pdl)
    return o, lse


def dependent_launch(device):
    """Whether the reduce can be a programmatic dependent launch: compiled for a GPU of compute capability 9.0
    or later (Hopper's griddepcontrol)."""
    return not INTERPRETED and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


def constants(L, kernel, pdl=False):
    """A kernel's compile-time constants and launch options for DecodeLaunch L, as gpusim prices them
    (gpusim/passes/split_kv.py launch); pdl: the split kernel and the reduce as run_decode's pdl."""
    num_warps, num_stages = L.pass_.launch(L, kernel)
    shared = dict(SEQ=L.seq, H=L.heads, D=L.head_dim, BLOCK_D=triton.next_power_of_2(L.head_dim), Bc=L.block_kv,
                  BOTTOM_RIGHT=L.causal_align == "bottom_right", num_warps=num_warps, num_stages=num_stages)
    if kernel == "reduce":
        return shared | dict(SPLITS=L.padded_splits, PDL=pdl)
    own = dict(KV_HEADS=L.kv_heads, GROUP=L.group, ROWS=L.rows, GROUPED=L.grouped, BLOCK_R=L.padded_rows,
               P=L.page_size or 0)
    return shared | own | ({} if kernel == "decode" else dict(PDL=pdl))

"""Flash-Decoding in Triton: the split-KV kernel over a paged (or contiguous) K/V cache, grouped by GQA,
and the reduce kernel that merges its partial results; with num_splits=1, FlashAttention-2's unsplit decode.

Grouped, one program per (K/V head, request, split) serves the G = heads / kv_heads query heads of its
K/V head: their G*seq query rows are one tl.dot tile (padded to 16 rows), so each cached K and V element
is read once per group. Ungrouped, one program per (query head, request, split) serves seq rows. The
online softmax runs in fp32 (m_i, l_i, acc); the partial O and LSE are fp32. What moves, and the names,
are gpusim/decode.py's: trace_io's counts equal its closed form byte for byte.
"""
import numbers
from dataclasses import replace
from functools import lru_cache

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from gpusim.decode import check_block_table, check_lengths, launch_for_cache, make_launch
from gpusim.shape import MIN_ROWS, REDUCE_SPLITS, Tiles, flag

from .interpreter import INTERPRETED
from .launch import (DTYPES, LAUNCH_CACHE_SIZE, as_int, check_device, check_gpu, check_head_dim, detect_gpu, keyed,
                     launch, short_repr)


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
    """num_splits == 1: FlashAttention-2's unsplit decode, O and LSE written directly."""
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
    """One query row (head h, request b, row i): its splits' partial results, SPLITS at a time, merged online
    (m, l, acc as in FlashAttention's inner loop). Split s's O was divided by its own sum exp(LSE_s); weighted by
    exp(LSE_s - LSE) they add up to O. SPLITS is fixed (gpusim.shape.REDUCE_SPLITS), so one compiled kernel
    serves every split count: a plan whose lengths grow never waits for the compiler."""
    h, b, i = tl.program_id(0), tl.program_id(1).to(tl.int64), tl.program_id(2)
    n_cached = tl.load(cache_seqlens + b)  # read 1 int32: L_b, which says how many splits it filled
    n_keys = n_cached if BOTTOM_RIGHT else tl.minimum(n_cached, SEQ)
    n_chunks = tl.cdiv(n_keys, Bc)
    a_b = tl.cdiv(n_chunks, tl.cdiv(n_chunks, num_splits))  # splits 0 .. a_b - 1 hold a chunk
    if PDL:  # launched early: wait until the split kernel has finished and its partials are visible
        gdc_wait()
    cols = tl.arange(0, BLOCK_D)
    stride = tl.num_programs(1).to(tl.int64) * H * SEQ  # one split's partials to the next's
    row = (b * H + h) * SEQ + i
    m_i = tl.full([], float("-inf"), tl.float32)
    l_i = tl.full([], 0.0, tl.float32)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for s0 in range(0, a_b, SPLITS):
        s = s0 + tl.arange(0, SPLITS)
        filled = s < a_b
        at = s * stride + row  # the row in each split
        lse_s = tl.load(LSE_partial + at, mask=filled, other=float("-inf"))  # read <= SPLITS (fp32)
        o_s = tl.load(O_partial + at[:, None] * D + cols[None, :], mask=filled[:, None] & (cols < D)[None, :],
                      other=0.0)  # read <= SPLITS*d (fp32)
        m_new = tl.maximum(m_i, tl.max(lse_s, 0))  # finite: split 0 holds key 0, which every row sees
        alpha = tl.exp(m_i - m_new)
        w = tl.exp(lse_s - m_new)  # 0 for the empty splits and where the row saw no key
        l_i = l_i * alpha + tl.sum(w, 0)
        acc = acc * alpha + tl.sum(w[:, None] * o_s, 0)
        m_i = m_new
    tl.store(O + row * D + cols, (acc / l_i).to(O.dtype.element_ty), mask=cols < D)  # write d
    tl.store(LSE + row, m_i + tl.log(l_i))  # write 1 (fp32)


DEVICES = ("cuda", "cpu")  # where the kernels run: compiled on a CUDA GPU, in Triton's interpreter on the CPU


def _device(device):
    """device as a torch.device, or one line naming it: not a device the kernels run on."""
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        parsed = None
    if parsed is None or parsed.type not in DEVICES:
        raise ValueError(f"device={device!r}: the kernels run on 'cuda', or on 'cpu' in Triton's interpreter "
                         "(TRITON_INTERPRET=1)")
    return parsed


def _indexed(device):
    """"cuda" names the current GPU, and tensors made there say "cuda:0": the plan keeps the index, so that
    run's device check compares like with like."""
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r}, but torch finds no CUDA GPU here: on CPU the kernels run in "
                         "Triton's interpreter (TRITON_INTERPRET=1, device='cpu')")
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


class DecodePlan:
    """A decode launch planned once from host-side metadata, run per layer: FlashInfer's plan/run split.

    plan = DecodePlan(cache_seqlens, heads=32, kv_heads=8, head_dim=128, dtype=torch.float16, device="cuda",
                      page_size=16, max_cache_len=131072)
    for layer in layers: o = plan.run(q, k_cache, v_cache, block_table)

    cache_seqlens: the tokens cached per request, Python ints, a CPU tensor or a NumPy array (the batch is its
    length): a plan is made on the host and never reads the device. max_cache_len: the plan's capacity, the most
    tokens a request may hold while the plan is used; paged, the block table run reads has at least
    ceil(max_cache_len / page_size) columns (the plan's `pages`); contiguous (page_size None), the cache holds
    at least max_cache_len positions per request. The plan checks everything once (one line naming the value
    and its limit), chooses num_splits (gpusim.decode's rule, for the longest request at plan time, unless
    given) and allocates the split kernel's workspace and a device copy of the lengths (`cache_seqlens`,
    int32) and, paged, of the block table (`block_table`, int32, (batch, pages), zeros unless block_table is
    given: then checked against num_pages and copied in). A paged plan made without a block table has none to
    read: each run is given one (the plan's own buffer, filled in place, serves a CUDA graph).

    run(...) checks only shapes, dtypes and devices (tuple comparisons; in Triton's interpreter, whose kernels
    run on the host, the lengths and block table's values too), launches the kernels, and never
    synchronises with the host, so a loop of runs can be captured in a CUDA graph and replayed after the
    lengths and block tables it reads are updated in place on the device. The plan's checks are what make that
    safe, for what the device cannot check cheaply; the caller guarantees, while the plan is used:
    every length is at least seq (bottom-right alignment) and at most max_cache_len, and every block-table
    entry a request uses (its first ceil(length / page_size)) is a page of the cache (0 .. num_pages - 1).
    Lengths that grow (or shrink) after the plan keep the plan's num_splits: the kernels split each request's
    chunks over them at run time, which is correct at any length within the capacity, though a plan made for
    the new lengths may choose another, faster, count. The workspace is the plan's: runs of one plan go on
    one stream, one after another.
    """

    def __init__(self, cache_seqlens, *, heads, kv_heads, head_dim, dtype, device, max_cache_len, page_size=None,
                 block_table=None, num_pages=None, seq=1, num_splits=None, block_kv=None,
                 causal_align="bottom_right", grouped=True, gpu=None, pdl=None):
        device = _indexed(_device(device))
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype}: supported are {', '.join(map(str, DTYPES))}")
        check_head_dim(head_dim)
        check_device(device)
        check_gpu(gpu)
        lengths = host_lengths(cache_seqlens)
        chunks = _longest_chunks(lengths, seq, causal_align, block_kv or MIN_ROWS)
        self.max_cache_len = _capacity(max_cache_len, lengths)
        gpu = detect_gpu(device) if gpu is None else gpu
        shape = (len(lengths), heads, kv_heads, head_dim, seq, num_splits, block_kv, page_size, grouped, causal_align,
                 DTYPES[dtype], gpu)
        try:
            self._launch = keyed(_planned_launch, *shape, chunks)
        except ValueError as err:  # refused at whole chunks' lengths: the line of those given names their keys
            raise _refusal_as_given(err, shape, lengths) from None
        L = self._launch
        self.lengths, self.dtype, self.device = lengths, dtype, device
        self.pages = -(-self.max_cache_len // page_size) if page_size else 0
        self.q_shape = (L.batch, L.heads, L.seq, L.head_dim)
        self.cache_seqlens = to_device(torch.tensor(lengths, dtype=torch.int32), device)
        self.block_table = self._table(block_table, num_pages)
        self._table_given = block_table is not None or not page_size
        self.pdl = dependent_launch(device) if pdl is None else flag("pdl", pdl)
        split = L.num_splits > 1
        self.o_partial = torch.empty((L.num_splits, *self.q_shape), dtype=torch.float32, device=device) if split else None
        self.lse_partial = torch.empty((L.num_splits, *self.q_shape[:3]), dtype=torch.float32,
                                       device=device) if split else None
        self.grids = ((L.units, L.batch, L.num_splits), (L.heads, L.batch, L.seq))
        self.constants = {kernel: constants(L, kernel, self.pdl) for kernel in L.kernels}

    @property
    def launch(self):
        """gpusim.decode's DecodeLaunch for the plan's lengths (what the model counts and prices)."""
        return replace(self._launch, seq_kv=self.lengths)

    @property
    def num_splits(self):
        return self._launch.num_splits

    def _table(self, block_table, num_pages):
        """The device block table: zeros, or block_table (host, checked against num_pages) copied in."""
        if not self._launch.page_size:
            if block_table is not None:
                raise ValueError("block_table was given without page_size: a paged cache needs both")
            return torch.zeros(1, dtype=torch.int32, device=self.device)
        if block_table is None:
            return torch.zeros((self._launch.batch, self.pages), dtype=torch.int32, device=self.device)
        host = _indices("block_table", block_table, 2)
        if host.shape[1] > self.pages:
            raise ValueError(f"block_table is {tuple(host.shape)}: expected (batch, at most {self.pages} pages)")
        if num_pages is None:
            raise ValueError("block_table was given without num_pages: the plan checks its entries against it")
        check_block_table(host.numpy(), self.lengths, num_pages, self._launch.page_size)
        table = torch.zeros((self._launch.batch, self.pages), dtype=torch.int32)
        table[:, :host.shape[1]] = host.to(torch.int32)
        return to_device(table, self.device)

    def run(self, q, k_cache, v_cache, block_table=None, cache_seqlens=None, *, return_lse=False, pdl=None,
            **launch_options):
        """O (and with return_lse=True the fp32 LSE, (B, H, seq)) of q (B, H, seq, d) over the cache: paged
        (num_pages, page_size, kv_heads, d) through block_table (int32 (B, >= pages)), or contiguous
        (B, kv_heads, >= max_cache_len, d). block_table, cache_seqlens (int32 (B,)) None: the plan's device
        copies (a paged plan's table only where the plan was given one). pdl, launch_options (num_warps,
        num_stages of the split kernel): overrides for a sweep."""
        L = self._launch
        flag("return_lse", return_lse)
        pdl = None if pdl is None else flag("pdl", pdl)
        if block_table is None and not self._table_given:
            raise ValueError("block_table is None, and this paged plan was made without one: give run the table "
                             "(plan.block_table, filled in place, serves a CUDA graph)")
        table = self.block_table if block_table is None else block_table
        lengths = self.cache_seqlens if cache_seqlens is None else cache_seqlens
        self._check(q, k_cache, v_cache, table, lengths)
        if launch_options:  # checked once per distinct set (types too: True == 1 and 2.0 == 2 are refused)
            launch_options = keyed(_run_options, tuple((n, x, type(x)) for n, x in sorted(launch_options.items())))
        o = torch.empty_like(q)
        lse = torch.empty(self.q_shape[:3], dtype=torch.float32, device=self.device)
        args = (table, lengths, L.head_dim**-0.5, table.shape[-1], 0 if L.page_size else k_cache.shape[2],
                L.num_splits)
        split, reduce = self.grids
        if L.num_splits == 1:
            launch(decode_kernel, split, q, k_cache, v_cache, o, lse, *args,
                   **self._constants("decode", self.pdl, launch_options))
        else:
            pdl = self.pdl if pdl is None else pdl
            launch(split_kv_kernel, split, q, k_cache, v_cache, self.o_partial, self.lse_partial, *args,
                   **self._constants("split_kv", pdl, launch_options))
            launch(reduce_kernel, reduce, self.o_partial, self.lse_partial, o, lse, lengths, L.num_splits,
                   **self._constants("reduce", pdl), launch_pdl=pdl)
        return (o, lse) if return_lse else o

    def _constants(self, kernel, pdl, overrides=None):
        """A kernel's constants and launch options: the plan's, merged with PDL and overrides only where they
        differ (no dictionary built per run otherwise)."""
        consts = self.constants[kernel]
        if "PDL" in consts and consts["PDL"] != pdl:
            consts = consts | dict(PDL=pdl)
        return consts | overrides if overrides else consts

    def _check(self, q, k_cache, v_cache, table, lengths):
        """run's checks: shapes, dtypes, devices and contiguity, compared with the plan's."""
        L = self._launch
        for name, x in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("block_table", table),
                        ("cache_seqlens", lengths)):
            if not isinstance(x, torch.Tensor):
                raise ValueError(f"{name} is {type(x).__name__}: run takes tensors, as the plan describes them")
        if q.shape != self.q_shape or q.dtype != self.dtype or q.device != self.device or not q.is_contiguous():
            raise ValueError(f"q is {tuple(q.shape)} {q.dtype} on {q.device}: the plan expects a contiguous "
                             f"{self.q_shape} {self.dtype} on {self.device}")
        if (q.requires_grad or k_cache.requires_grad or v_cache.requires_grad) and torch.is_grad_enabled():
            raise ValueError("q, k_cache or v_cache requires grad, but decoding is forward-only (its output would "
                             "carry no gradient): run it under torch.no_grad()")
        if L.page_size:
            fits = k_cache.dim() == 4 and k_cache.shape[1:] == (L.page_size, L.kv_heads, L.head_dim)
            cache = f"(num_pages, {L.page_size}, {L.kv_heads}, {L.head_dim})"
        else:
            fits = k_cache.dim() == 4 and k_cache.shape[:2] == (L.batch, L.kv_heads) and \
                k_cache.shape[3] == L.head_dim and k_cache.shape[2] >= self.max_cache_len
            cache = f"({L.batch}, {L.kv_heads}, >= {self.max_cache_len}, {L.head_dim})"
        for name, x in (("k_cache", k_cache), ("v_cache", v_cache)):
            if not (fits and x.shape == k_cache.shape and x.dtype == self.dtype and x.device == self.device
                    and x.is_contiguous()):
                raise ValueError(f"{name} is {tuple(x.shape)} {x.dtype} on {x.device}: the plan expects a "
                                 f"contiguous {cache} {self.dtype} on {self.device}, as k_cache")
        table_ok = table.dim() == 2 and table.shape[0] == L.batch and table.shape[1] >= self.pages if L.page_size \
            else table is self.block_table
        if not (table_ok and table.dtype == torch.int32 and table.device == self.device and table.is_contiguous()):
            expected = f"int32 ({L.batch}, >= {self.pages}) on {self.device}" if L.page_size else "none (contiguous cache)"
            raise ValueError(f"block_table is {table.dtype} {tuple(table.shape)}: the plan expects {expected}")
        if lengths.shape != (L.batch,) or lengths.dtype != torch.int32 or lengths.device != self.device:
            raise ValueError(f"cache_seqlens is {lengths.dtype} {tuple(lengths.shape)} on {lengths.device}: the "
                             f"plan expects int32 ({L.batch},) on {self.device}")
        if INTERPRETED:  # the kernels run on the host: reading the values waits for nothing; check them
            host = tuple(lengths.tolist())
            check_lengths(host, L.seq, L.causal_align, "cache_seqlens")  # each an integer, at least seq
            paged = L.page_size and self.max_cache_len == self.pages * L.page_size  # a capacity of whole pages
            held = f": {self.pages} pages of {L.page_size} tokens a request" if paged else ""
            _capacity(self.max_cache_len, host, held)
            if L.page_size:
                check_block_table(table.numpy(), host, k_cache.shape[0], L.page_size)


RUN_OPTIONS = ("num_warps", "num_stages")  # the launch options DecodePlan.run takes


@lru_cache(maxsize=64, typed=True)
def _run_options(items):
    """DecodePlan.run's launch options ((name, value, type) by name) as {name: int}, checked once per distinct set
    with gpusim's Tiles' rules: one line for an unknown name, num_warps not a power of two (at most 32 warps),
    num_stages not a positive integer."""
    unknown = [name for name, *_ in items if name not in RUN_OPTIONS]
    if unknown:
        raise ValueError(f"run takes num_warps and num_stages as launch options, not {', '.join(unknown)}")
    options = {name: value for name, value, _ in items}
    Tiles(MIN_ROWS, MIN_ROWS, **options)  # its checks, one line each: "num_warps=3 must be a power of two >= 1"
    return {name: int(value) for name, value in options.items() if value is not None}  # None: the plan's


def to_device(host, device):
    """A CPU tensor's copy on the device, made without waiting for the device: CUDA stages pageable memory
    before cudaMemcpyAsync returns, so `host` may go at once."""
    return host.to(device, non_blocking=True)


def host_lengths(cache_seqlens):
    """The plan's lengths as a tuple of Python ints, from ints, a CPU tensor or a NumPy array; a device tensor is
    refused (reading it would synchronise)."""
    given = cache_seqlens
    if not isinstance(cache_seqlens, (list, tuple, range, torch.Tensor)):  # a NumPy array, or one number
        try:
            cache_seqlens = torch.as_tensor(cache_seqlens)
        except (TypeError, RuntimeError, ValueError):
            raise ValueError(f"cache_seqlens is {type(cache_seqlens).__name__}: expected one length per request, "
                             "as Python ints, a CPU tensor or a NumPy array") from None
    if isinstance(cache_seqlens, torch.Tensor):
        if cache_seqlens.device.type != "cpu":
            raise ValueError(f"cache_seqlens is on {cache_seqlens.device}: a plan takes the lengths from the host "
                             "(Python ints or a CPU tensor)")
        if cache_seqlens.dtype.is_floating_point or cache_seqlens.dtype.is_complex or cache_seqlens.dim() != 1:
            what = (f" is {cache_seqlens.dtype} {tuple(cache_seqlens.shape)}" if given is cache_seqlens else
                    f"={short_repr(given)}")
            raise ValueError(f"cache_seqlens{what}: expected 1-d integers")
        cache_seqlens = cache_seqlens.tolist()
    if not len(cache_seqlens):
        raise ValueError("cache_seqlens is empty: a plan needs one length per request")
    return tuple(int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) else n for n in cache_seqlens)


INT32_MOST = 2**31 - 1  # the plan's lengths and block table are int32 on the device


def _capacity(max_cache_len, lengths, held=""):
    """max_cache_len, checked: a positive int that int32 lengths hold, at least the longest request's (held: what
    the capacity is, in words, for the line). A NumPy integer is taken as the equal int, as every other count is."""
    max_cache_len = as_int(max_cache_len)
    if type(max_cache_len) is not int or max_cache_len <= 0:
        raise ValueError(f"max_cache_len={max_cache_len!r} must be a positive number of tokens")
    if max_cache_len > INT32_MOST:
        raise ValueError(f"max_cache_len={max_cache_len:,} is more than the plan's int32 lengths hold "
                         f"({INT32_MOST:,})")
    longest = max(lengths, default=0)
    if longest > max_cache_len:
        b = lengths.index(longest)
        raise ValueError(f"cache_seqlens[{b}]={longest:,} is more than the plan's max_cache_len={max_cache_len:,}"
                         f"{held}")
    return max_cache_len


def _longest_chunks(lengths, seq, causal_align, block_kv):
    """The K/V chunks of the longest request, the one input of the split rule that depends on the lengths,
    after checking each length (one line naming it)."""
    check_lengths(lengths, seq, causal_align, "cache_seqlens")
    keys = max(lengths, default=1) if causal_align == "bottom_right" else min(max(lengths, default=1), seq)
    return -(-keys // block_kv) if isinstance(block_kv, int) and block_kv > 0 else 1


@lru_cache(maxsize=LAUNCH_CACHE_SIZE, typed=True)  # typed: heads=2.0 is not heads=2's plan
def _planned_launch(batch, heads, kv_heads, head_dim, seq, num_splits, block_kv, page_size, grouped, causal_align,
                    dtype, gpu, chunks):
    """gpusim.decode.make_launch for a batch whose longest request has `chunks` K/V chunks: its checks and
    split rule, once per shape and chunk count (the rule reads no other length), at lengths of whole chunks;
    DecodePlan.launch puts the real lengths in. Without a block_kv the chunks are MIN_ROWS keys: whichever chunk
    make_launch picks (its default, or a halving of it that fits the GPU) cuts these lengths into as many chunks
    as the real ones. (A bad block_kv gets 1 chunk here and make_launch's error.)"""
    seq_kv = max(chunks * (block_kv if isinstance(block_kv, int) else MIN_ROWS), seq)
    return _make_launch(batch, heads, kv_heads, head_dim, seq, num_splits, block_kv, page_size, grouped, causal_align,
                        dtype, gpu, seq_kv)


def _refusal_as_given(err, shape, lengths):
    """make_launch's refusal at the lengths given (a plan's cached launch is made at whole chunks' lengths), or err."""
    try:
        _make_launch(*shape, tuple(lengths))
    except ValueError as exact:
        return exact
    return err


def _make_launch(batch, heads, kv_heads, head_dim, seq, num_splits, block_kv, page_size, grouped, causal_align, dtype,
                 gpu, seq_kv):
    """gpusim.decode.make_launch, its arguments in _planned_launch's order."""
    return make_launch(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=head_dim, seq=seq, seq_kv=seq_kv,
                       num_splits=num_splits, block_kv=block_kv, page_size=page_size, grouped=grouped,
                       causal_align=causal_align, dtype=dtype, gpu=gpu)


PLAN_CACHE_SIZE = 8  # decode_attention's plans for lengths on the device, kept per key (each holds a workspace)
_PLANS = {}


def decode_attention(q, k_cache, v_cache, *, cache_seqlens, block_table=None, page_size=None, num_splits=None,
                     block_kv=None, causal_align="bottom_right", grouped=True, return_lse=False, gpu=None):
    """Attention of q (B, H, seq, d) over a K/V cache: paged (num_pages, page_size, kv_heads, d) reached
    through block_table (B, max_pages), or contiguous (B, kv_heads, S, d) without one. cache_seqlens: the
    tokens cached per request. Returns O in q's dtype (and with return_lse=True the fp32 log-sum-exp,
    (B, H, seq)). num_splits None: gpusim.decode's rule for this GPU; block_kv: the chunk (gpusim.decode's: 64,
    or the largest halving that fits the GPU).

    cache_seqlens a tensor on q's device (CPU in the interpreter): nothing reads the device. The call runs a
    DecodePlan kept per key (shapes, dtypes, device, stream, page size, the block table's width, options; not
    the lengths), made for the capacity (the block table's width in pages, or the contiguous cache's
    positions): its num_splits is chosen for a request of that capacity, which is correct for any lengths
    within it, though a plan for the real lengths may choose a faster count. The lengths and the block table
    are copied into the plan's device buffers (on the device; int32 contiguous ones are used as they are). As
    for DecodePlan.run, their values are not checked: the caller guarantees every length is at least seq
    (bottom-right alignment) and at most the capacity, and every block-table entry a request uses is a page
    of the cache. Calls of one key run one after another on their stream (the plan's workspace is shared).

    cache_seqlens as Python ints or a CPU tensor (q on the GPU): plan_for_cache's DecodePlan for these lengths,
    every value checked (the block table read on the host: a synchronisation when it is on the GPU), run once.
    A serving loop makes a DecodePlan itself."""
    options = dict(page_size=page_size, num_splits=num_splits, block_kv=block_kv, causal_align=causal_align,
                   grouped=grouped, gpu=gpu)
    if isinstance(q, torch.Tensor) and isinstance(cache_seqlens, torch.Tensor) and cache_seqlens.device == q.device:
        if q.dim() != 4:
            check_tensors(q, k_cache, v_cache)  # one line: q's shape
        table = None if block_table is None else _table_shaped(block_table, q.shape[0])
        plan = _kept_plan(q, k_cache, v_cache, table, options)
        lengths = _device_lengths(plan, cache_seqlens)
        if table is not None and not _as_is(table, plan.device):
            table = plan.block_table.copy_(table, non_blocking=True)
        return plan.run(q.contiguous(), k_cache.contiguous(), v_cache.contiguous(), table, lengths,
                        return_lse=return_lse)
    plan = plan_for_cache(q, k_cache, v_cache, cache_seqlens=cache_seqlens, block_table=block_table, **options)
    return plan.run(q.contiguous(), k_cache.contiguous(), v_cache.contiguous(), return_lse=return_lse)


def _kept_plan(q, k_cache, v_cache, table, options):
    """decode_attention's plan for lengths on the device: made once per key (capacity_plan), then a look-up."""
    try:
        tensors = tuple((tuple(x.shape), x.dtype, x.device) for x in (q, k_cache, v_cache))
    except AttributeError:
        check_tensors(q, k_cache, v_cache)  # one line naming what is not a tensor
        raise
    stream = torch.cuda.current_stream(q.device).cuda_stream if q.device.type == "cuda" else None
    key = (tensors, stream, None if table is None else table.shape[1], *options.items())
    try:
        return _PLANS[key]
    except KeyError:
        plan = capacity_plan(q, k_cache, v_cache, table, options)
    except TypeError:  # an option that is not hashable: the plan's checks say what is wrong with it
        return capacity_plan(q, k_cache, v_cache, table, options)
    if len(_PLANS) >= PLAN_CACHE_SIZE:
        del _PLANS[next(iter(_PLANS))]  # the oldest
    _PLANS[key] = plan
    return plan


def capacity_plan(q, k_cache, v_cache, table, options):
    """The DecodePlan for every request at the capacity (the block table's width in pages, or the contiguous
    cache's positions), its block table zeros: every check of the tensors and options, one line each."""
    check_tensors(q, k_cache, v_cache)
    paged = table is not None
    page_size = (options["page_size"] or k_cache.shape[1]) if paged else None
    capacity = table.shape[1] * page_size if paged else k_cache.shape[2]
    lengths = [capacity] * q.shape[0]
    gpu = detect_gpu(q.device) if options["gpu"] is None else options["gpu"]
    launch_for_cache(q.shape, k_cache.shape, v_cache.shape, lengths, paged=paged,
                     **options | dict(dtype=DTYPES[q.dtype], gpu=gpu))  # page_size as given: checked there
    return DecodePlan(lengths, heads=q.shape[1], kv_heads=k_cache.shape[2 if paged else 1], head_dim=q.shape[3],
                      dtype=q.dtype, device=q.device, seq=q.shape[2], max_cache_len=capacity,
                      **options | dict(page_size=page_size))


def _table_shaped(block_table, batch):
    """The block table as a tensor (a host one converted), its shape and dtype checked, not its values."""
    table = block_table if isinstance(block_table, torch.Tensor) else _indices("block_table", block_table, 2)
    if table.dim() != 2 or not _integers(table) or table.shape[0] != batch:
        raise ValueError(f"block_table is {table.dtype} {tuple(table.shape)}: expected 2-d integers, {batch} rows "
                         "(one per request)")
    return table


def _device_lengths(plan, cache_seqlens):
    """The lengths run reads, without reading them: an int32 contiguous tensor on the plan's device as it is,
    other integers copied into the plan's buffer on the device."""
    batch = plan.q_shape[0]
    if not _integers(cache_seqlens) or tuple(cache_seqlens.shape) != (batch,):
        raise ValueError(f"cache_seqlens is {cache_seqlens.dtype} {tuple(cache_seqlens.shape)}: expected an "
                         f"integer per request ({batch})")
    return cache_seqlens if _as_is(cache_seqlens, plan.device) else plan.cache_seqlens.copy_(cache_seqlens)


def _integers(x):
    """Whether x's dtype is an integer one."""
    return not (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool)


def _as_is(x, device):
    """Whether run can read x itself: int32, contiguous, on the plan's device."""
    return x.dtype == torch.int32 and x.device == device and x.is_contiguous()


def plan_for_cache(q, k_cache, v_cache, *, cache_seqlens, block_table=None, page_size=None, num_splits=None,
                   block_kv=None, causal_align="bottom_right", grouped=True, gpu=None):
    """The DecodePlan for these tensors, its capacity the cache's (the block table's width in pages, or the
    contiguous cache's positions), the block table (host or device) checked and copied into the plan: run it
    with plan.run(q, k_cache, v_cache). Every check first, one line each (gpusim.decode's messages)."""
    check_tensors(q, k_cache, v_cache)
    seqlens = _indices("cache_seqlens", cache_seqlens, 1).tolist()
    paged = block_table is not None
    launch_for_cache(q.shape, k_cache.shape, v_cache.shape, seqlens, paged=paged, page_size=page_size,
                     num_splits=num_splits, block_kv=block_kv, causal_align=causal_align, grouped=grouped,
                     dtype=DTYPES[q.dtype], gpu=detect_gpu(q.device) if gpu is None else gpu)
    table = _indices("block_table", block_table, 2) if paged else None
    page_size = (page_size or k_cache.shape[1]) if paged else None
    if paged:  # before the plan's capacity check: a table too short for a request is the table's fault
        check_block_table(table.numpy(), seqlens, k_cache.shape[0], page_size)
    return DecodePlan(seqlens, heads=q.shape[1], kv_heads=k_cache.shape[2 if paged else 1], head_dim=q.shape[3],
                      dtype=q.dtype, device=q.device, page_size=page_size, seq=q.shape[2], num_splits=num_splits,
                      block_kv=block_kv, causal_align=causal_align, grouped=grouped, gpu=gpu,
                      max_cache_len=table.shape[1] * page_size if paged else k_cache.shape[2],
                      block_table=table, num_pages=k_cache.shape[0] if paged else None)


def check_tensors(q, k_cache, v_cache):
    """decode_attention's checks of the tensors themselves: 4-d, a supported dtype, one device."""
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
    check_head_dim(q.shape[3])
    check_device(q.device)


def _indices(name, x, dims):
    """x as an integer CPU tensor, its values as given (checked before any narrowing)."""
    if isinstance(x, (list, tuple)) and not x:  # no values: integers of none (torch.as_tensor would make floats)
        x = torch.zeros((0,) * dims, dtype=torch.int64)
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, RuntimeError, ValueError, OverflowError) as err:  # None, a string, ragged rows, 2**63
            raise ValueError(f"{name} is {type(x).__name__}: expected {dims}-d integers "
                             f"({str(err).splitlines()[0]})") from None
        if x.dim() != dims or not _integers(x):  # named as given: a list of floats is not "torch.float32"
            raise ValueError(f"{name}={short_repr(x.tolist())}: expected {dims}-d integers")
    x = x.cpu()
    if x.dim() != dims or not _integers(x):
        raise ValueError(f"{name} is {x.dtype} {tuple(x.shape)}: expected {dims}-d integers")
    return x


def dependent_launch(device):
    """Whether the reduce can be a programmatic dependent launch: compiled for a GPU of compute capability 9.0
    or later (Hopper's griddepcontrol)."""
    return not INTERPRETED and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


def constants(L, kernel, pdl=False):
    """A kernel's compile-time constants and launch options for DecodeLaunch L, as gpusim prices them
    (gpusim/passes/split_kv.py launch); pdl: whether the split kernel and the reduce are a programmatic
    dependent launch (DecodePlan.pdl)."""
    num_warps, num_stages = L.pass_.launch(L, kernel)
    shared = dict(SEQ=L.seq, H=L.heads, D=L.head_dim, BLOCK_D=triton.next_power_of_2(L.head_dim), Bc=L.block_kv,
                  BOTTOM_RIGHT=L.causal_align == "bottom_right", num_warps=num_warps, num_stages=num_stages)
    if kernel == "reduce":
        return shared | dict(SPLITS=REDUCE_SPLITS, PDL=pdl)
    own = dict(KV_HEADS=L.kv_heads, GROUP=L.group, ROWS=L.rows, GROUPED=L.grouped, BLOCK_R=L.padded_rows,
               P=L.page_size or 0)
    return shared | own | ({} if kernel == "decode" else dict(PDL=pdl))

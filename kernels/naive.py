"""Standard attention (Algorithm 0 of the FlashAttention paper) as three launches, each a grid of tiled
programs: S = Q Kᵀ · scale is written to HBM, a row softmax reads S and writes P, O = P V reads P back.
The N x N_kv matrices S and P make the HBM traffic quadratic in the sequence length.

Their rows are LD = N_kv rounded up to 16 elements apart (a padded leading dimension, as BLAS's lda): Triton
specialises an integer argument divisible by 16, so every row starts 16-byte aligned and S and P move in 16-byte
vectors. With rows N_kv apart, N_kv not a multiple of 16, they moved an element at a time (docs/perf.md, "Rows
not a multiple of 16"). The LD - N_kv columns past the last key are written (S = 0, P = 0) and read like the rest.
"""
import torch
import triton
import triton.language as tl

from gpusim.passes.naive import score_row
from gpusim.shape import flag

from .launch import constants, forward_launch, in_slices, launch, op_fields, past_grid
from .tiles import kv_blocks_visited, row_offsets


@triton.jit
def qk_kernel(Q, K, S, N, N_KV, LD, scale, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    tile_product(Q, K, S, N, N_KV, LD, scale, GROUP, D, BLOCK_D, Br, Bc, CAUSAL)  # S = Q Kᵀ · scale


@triton.jit
def tile_product(A, B, C, N, N_KV, LD, scale, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
                 Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """C_ij = scale · A_i B_jᵀ for the program's tile (i, j), written whole: A is (N, d) per head, B (N_kv, d)
    per K/V head, C (N, LD) per head (0 past key N_kv). S = Q Kᵀ · scale here; dP = dO Vᵀ in
    kernels/naive_backward.py."""
    T_c = tl.cdiv(N_KV, Bc)
    i = tl.program_id(0) // T_c  # the program's tile (i, j) of C
    j = tl.program_id(0) % T_c
    bh = tl.program_id(1).to(tl.int64)  # b * H + h; its K/V head (grouped-query) is b * H_kv + h // GROUP
    if j < kv_blocks_visited(i, N, N_KV, Br, Bc, CAUSAL):  # causal: a tile right of the diagonal does nothing
        rows = i * Br + tl.arange(0, Br)
        keys = j * Bc + tl.arange(0, Bc)
        a_offs, a_mask = row_offsets(rows, N, D, BLOCK_D)
        b_offs, b_mask = row_offsets(keys, N_KV, D, BLOCK_D)
        # .cg: cached in L2 only, not L1. Programs of one row of tiles load the same A_i, and two of them resident
        # on one SM hit in its L1: before .cg, Nsight measured qk's L2 -> SM bytes up to 8.6% under the count (N = 16384,
        # d = 64, run 2; results/h200/ncu.json's qk rows are exact since). Bypassing L1, every tile's loads are
        # L2 -> SM bytes, as gpusim counts.
        a_i = tl.load(A + bh * N * D + a_offs, mask=a_mask, other=0.0, cache_modifier=".cg")  # read Br*d
        b_j = tl.load(B + (bh // GROUP) * N_KV * D + b_offs, mask=b_mask, other=0.0, cache_modifier=".cg")  # read Bc*d
        c_ij = tl.dot(a_i, tl.trans(b_j), input_precision="ieee") * scale
        c_mask = (rows < N)[:, None] & (keys < LD)[None, :]  # the whole tile: S's mask is the softmax's
        c_offs = rows.to(tl.int64)[:, None] * LD + keys[None, :]  # int64: N * LD may pass 2**31
        tl.store(C + bh * N * LD + c_offs, c_ij.to(C.dtype.element_ty), mask=c_mask)  # write Br*Bc


@triton.jit
def softmax_kernel(S, P, N, N_KV, LD, CAUSAL: tl.constexpr, PADDED: tl.constexpr, ONE_PASS: tl.constexpr,
                   BLOCK_N: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr):
    row = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    s_row = S + (bh * N + row) * LD
    p_row = P + (bh * N + row) * LD
    # The row's part of the tiles qk wrote (all LD of it unless causal), read and written whole so the loads
    # and stores stay vectorised; keys right of the diagonal, and the padding past key N_kv (PADDED: LD > N_kv),
    # are masked here, in registers, and get P = 0.
    n = tl.minimum(kv_blocks_visited(row // Br, N, N_KV, Br, Bc, CAUSAL) * Bc, LD) if CAUSAL else LD
    visible = tl.minimum(row + 1, N_KV) if CAUSAL else N_KV
    if ONE_PASS:  # the row fits in SRAM: read it once
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(s_row + cols, mask=cols < n, other=float("-inf")).to(tl.float32)  # read n
        if CAUSAL or PADDED:  # not a no-op where neither: run 2 measured it 1.5x slower on rows of 16K
            x = tl.where(cols < visible, x, float("-inf"))
        e = tl.exp(x - tl.max(x, 0))
        tl.store(p_row + cols, (e / tl.sum(e, 0)).to(P.dtype.element_ty), mask=cols < n)  # write n
    else:  # the safe softmax, streamed in chunks of Bc: 3 reads and 1 write per element
        m_row = float("-inf")
        for c in range(0, n, Bc):  # pass 1: the row max
            cols = c + tl.arange(0, Bc)
            x = tl.load(s_row + cols, mask=cols < n, other=float("-inf")).to(tl.float32)  # read Bc
            m_row = tl.maximum(m_row, tl.max(tl.where(cols < visible, x, float("-inf")), 0))
        l_row = 0.0
        for c in range(0, n, Bc):  # pass 2: the sum of exponentials
            cols = c + tl.arange(0, Bc)
            x = tl.load(s_row + cols, mask=cols < n, other=float("-inf")).to(tl.float32)  # read Bc
            l_row += tl.sum(tl.exp(tl.where(cols < visible, x, float("-inf")) - m_row), 0)
        for c in range(0, n, Bc):  # pass 3: P
            cols = c + tl.arange(0, Bc)
            x = tl.load(s_row + cols, mask=cols < n, other=float("-inf")).to(tl.float32)  # read Bc
            p = tl.exp(tl.where(cols < visible, x, float("-inf")) - m_row) / l_row
            tl.store(p_row + cols, p.to(P.dtype.element_ty), mask=cols < n)  # write Bc


@triton.jit
def pv_kernel(P, V, O, N, N_KV, LD, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
              Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    row_block_product(P, V, O, N, N_KV, LD, 1.0, GROUP, D, BLOCK_D, Br, Bc, CAUSAL)  # O = P V


@triton.jit
def row_block_product(A, B, C, N, N_KV, LD, scale, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
                      Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """C_i = scale · Σ_j A_ij B_j for the program's Q block i (Br rows), over the K/V blocks it visits: A is
    (N, LD) per head (0 past key N_kv), B (N_kv, d) per K/V head, C (N, d) per head. O = P V here; dQ = τ dS K in
    kernels/naive_backward.py."""
    i = tl.program_id(0)  # Q block: Br rows of C
    bh = tl.program_id(1).to(tl.int64)
    rows = i * Br + tl.arange(0, Br)
    acc = tl.zeros([Br, BLOCK_D], tl.float32)  # C_i / scale, in registers
    for j in range(kv_blocks_visited(i, N, N_KV, Br, Bc, CAUSAL)):
        keys = j * Bc + tl.arange(0, Bc)
        a_mask = (rows < N)[:, None] & (keys < LD)[None, :]  # P (and so dS) is 0 right of the diagonal
        a_offs = rows.to(tl.int64)[:, None] * LD + keys[None, :]
        a_ij = tl.load(A + bh * N * LD + a_offs, mask=a_mask, other=0.0)  # read Br*Bc
        b_offs, b_mask = row_offsets(keys, N_KV, D, BLOCK_D)
        # .cg, as in tile_product: every Q block's program loads B_j, and two on one SM would hit in its L1
        # (Nsight: the naive backward's dq read 2.1% under the count at N = 4096, d = 64, run 50:
        # results/h200/logs/run50_51_ncu_bwd.tar.gz)
        b_j = tl.load(B + (bh // GROUP) * N_KV * D + b_offs, mask=b_mask, other=0.0, cache_modifier=".cg")  # read Bc*d
        acc += tl.dot(a_ij, b_j, input_precision="ieee")
    c_offs, c_mask = row_offsets(rows, N, D, BLOCK_D)
    tl.store(C + bh * N * D + c_offs, (acc * scale).to(C.dtype.element_ty), mask=c_mask)  # write Br*d


def naive_attention(q, k, v, *, causal=False, block_q=None, block_kv=None, tiles=None, gpu=None, return_p=False):
    """softmax(q kᵀ / sqrt(d)) v the standard way, S and P in HBM in q's dtype. q: (B, H, N, d); k, v:
    (B, H_kv, N_kv, d), H_kv dividing H. Returns O in q's dtype. block_q, block_kv: the tiles of the two
    matmuls, Bc also the softmax's chunk when a row of S does not fit in SRAM (default: the tile gpusim
    predicts fastest), or tiles=gpusim.Tiles(...), whose num_warps, num_stages, where set, all three kernels
    take; gpu: the gpusim GPU whose shared memory the tiles must fit (default: detected). S is stored in q's
    dtype, as standard attention keeps it in HBM: in fp16 a scaled score q·k/sqrt(d) of 65,520 or more (past
    65,504, fp16's largest, by half a step) is stored as infinity, and its row of P and O is NaN (nothing is
    checked: that would read the device); flash2_attention keeps S in fp32 registers and gives the row.
    return_p=True also returns P (B, H, N, N_kv), which the backward reads (0 at masked keys of the visited
    tiles; the tiles a causal mask skips are never written): a view of the (B, H, N, LD) buffer the kernels
    write, its rows LD apart."""
    return_p = flag("return_p", return_p)
    if torch.compiler.is_compiling() and not return_p:  # one node of torch.compile's graph (kernels/ops.py)
        return torch.ops.gpusim.naive_attention(q, k, v, causal, *op_fields("naive", tiles, block_q, block_kv), gpu)
    launched = forward_launch("naive", q, k, v, causal, tiles, block_q, block_kv, gpu, _parts)
    if not launched:  # no rows, nothing to launch
        o, p = torch.empty_like(q, memory_format=torch.contiguous_format), q.new_empty((*q.shape[:3], k.shape[2]))
        return (o, p) if return_p else o
    cfg, grids, consts, _ = launched
    if past_grid(cfg):  # past CUDA's grid along y: a call per slice of the batch
        return in_slices(naive_attention, cfg, (q, k, v), dict(causal=causal, tiles=tiles, gpu=gpu,
                                                               return_p=return_p))
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    ld = score_row(cfg)
    s = torch.empty((*q.shape[:3], ld), dtype=q.dtype, device=q.device)
    launch(qk_kernel, grids["qk"], q, k, s, cfg.seq, cfg.seq_kv, ld, cfg.head_dim**-0.5, **consts["qk"])
    p = torch.empty_like(s)
    launch(softmax_kernel, grids["softmax"], s, p, cfg.seq, cfg.seq_kv, ld, **consts["softmax"])
    del s  # freed before O is allocated: the peak is Q, K, V, S and P
    o = torch.empty_like(q)
    launch(pv_kernel, grids["pv"], p, v, o, cfg.seq, cfg.seq_kv, ld, **consts["pv"])
    return (o, p[..., :cfg.seq_kv]) if return_p else o


def _parts(cfg):
    """The three launches' grids and constants (built once per shape, kernels/launch.py)."""
    t = cfg.tiling
    grids = {"qk": (t.n_q_blocks * t.n_kv_blocks, cfg.bh), "softmax": (cfg.seq, cfg.bh), "pv": (t.n_q_blocks, cfg.bh)}
    tiles = cfg.pass_.tiles(cfg, "softmax")
    ld = score_row(cfg)
    softmax = dict(CAUSAL=cfg.causal, PADDED=ld > cfg.seq_kv, ONE_PASS=cfg.softmax_fits,
                   BLOCK_N=triton.next_power_of_2(ld), Br=tiles.block_q, Bc=tiles.block_kv, num_warps=tiles.num_warps, num_stages=tiles.num_stages)
    return grids, {"qk": constants(cfg, "qk"), "softmax": softmax, "pv": constants(cfg, "pv")}

"""The tile schedule in Triton, shared by every kernel: which K/V blocks a Q block visits, which scores
survive the causal mask, and where a tile's rows lie. The rules of gpusim.tiling, so the same tiles move.

Causal masking is torch's is_causal=True: query row r sees keys 0..r, top-left aligned, also when the
query and key lengths differ. Names follow the papers: Br == block_q, Bc == block_kv.
"""
import triton
import triton.language as tl


@triton.jit
def kv_blocks_visited(i, N, N_KV, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """J_i, the K/V blocks Q block i visits: blocks 0..J_i - 1 (the loop's bound); causal, the last is the
    block holding its last row's key."""
    n_blocks = tl.cdiv(N_KV, Bc)
    if CAUSAL:
        last_row = tl.minimum((i + 1) * Br, N) - 1
        n_blocks = tl.minimum(last_row // Bc + 1, n_blocks)
    return n_blocks


@triton.jit
def first_q_block(j, N, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """The first Q block (of Br rows) that sees K/V block j (of Bc rows); the blocks after it see j too.
    Causal: the block holding row j * Bc, or cdiv(N, Br) (none) when that row is past the last query."""
    first = 0
    if CAUSAL:
        first = tl.where(j * Bc < N, (j * Bc) // Br, tl.cdiv(N, Br))
    return first


@triton.jit
def unmasked_blocks(i, N_KV, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr):
    """The first K/V blocks that every row of Q block i sees whole: whole blocks of keys, left of the block's first
    row when causal. gpusim's Tiling.unmasked_blocks_of counts (i * Br + 1) // Bc, the same for the top-left mask
    and the power-of-two tiles the kernels run (i * Br + 1 is then odd, never a multiple of Bc)."""
    n_whole = N_KV // Bc
    if CAUSAL:
        n_whole = tl.minimum(n_whole, i * Br // Bc)
    return n_whole


@triton.jit
def keep(rows, keys, N_KV, CAUSAL: tl.constexpr):
    """Which scores of the tile rows x keys exist (key < N_KV) and survive the causal mask (key <= row)."""
    kept = (keys < N_KV)[None, :]
    if CAUSAL:
        kept = kept & (keys[None, :] <= rows[:, None])
    return kept


@triton.jit
def row_offsets(rows, n_rows, D: tl.constexpr, BLOCK_D: tl.constexpr):
    """Offsets of `rows` within one head's (n_rows, D) matrix, and the mask of the elements that exist:
    row < n_rows and column < D (BLOCK_D is D rounded up to a power of two; only columns < D move)."""
    cols = tl.arange(0, BLOCK_D)
    return rows[:, None] * D + cols[None, :], (rows < n_rows)[:, None] & (cols < D)[None, :]

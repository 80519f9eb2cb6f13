"""The puzzles, by name, in the order of the course, each with its notebook and the hints its checks give
(symptom -> sentence). The shapes are small (the interpreter runs every program in Python) and not multiples
of the tiles where masks are the lesson."""
from .kinds import BackwardPuzzle, DecodePuzzle, Flash2Puzzle, LauncherPuzzle, MergePuzzle

LSE_HINT = ("lse", "The log-sum-exp is m_i + log(l_i), with the final m_i and l_i.")
ONLINE = (
    ("nan", "A NaN comes from exp(-inf - (-inf)) or 0 / 0: m_new must be the maximum of m_i and the tile's "
            "row max, and O = acc / l_i with l_i > 0."),
    ("first_block", "Even one K/V block is wrong, so the problem is not the rescaling: check p_ij = "
                    "exp(s_ij - m_new[:, None]), l_i's row sum and acc += p_ij @ v_j."),
    ("later_block", "The first block is right and a later one is wrong: that is where the running max grows. "
                    "Both l_i and acc hold sums taken under the old max: multiply them by alpha = "
                    "exp(m_i - m_new) before adding the new tile's terms."),
    LSE_HINT,
    ("more_kv", "Load each K_j and V_j once per step of the loop."),
    ("other_bytes", "Q_i is loaded once before the loop (it stays in SRAM), O_i and the LSE are stored once "
                    "after it."))
OFFSETS = (
    ("batch", "The (b, h) matrix of a (B, H, N, d) tensor starts b * H * N * d + h * N * d elements in."),
    ("head", "Within batch b, head h's N x d matrix starts h * N * d elements in (not h * d)."))
KV_ROWS = (  # flash2_forward: K and V hold N_KV keys, Q and O N query rows
    ("batch", "The (b, h) matrix of Q and O (B, H, N, d) starts b * H * N * d + h * N * d elements in; of K and V "
              "(B, H, N_KV, d), b * H * N_KV * d + h * N_KV * d."),
    ("head", "Within batch b, head h's matrix starts h * N * d elements in (not h * d) in Q and O, h * N_KV * d in K "
             "and V: each tensor steps by its own number of rows."),
    ("n_kv", "The kernel takes N, Q's rows, for N_KV, K's and V's, somewhere: the keys' loads and their scores are "
             "masked with keys < N_KV and the loop runs over tl.cdiv(N_KV, Bc) blocks; N bounds only the query "
             "rows (Q's load, O's and the LSE's stores)."))
PT_AXES = ("Pᵀ is (Br keys, Bc query rows): the keys run down its rows and the query rows along its columns, in "
           "the mask too (the last K/V block and the last Q block are partial).")
SOFTMAX = (
    ("nan", "exp overflows without the max: subtract the row max first (the padding loads as -inf, exp(-inf) = 0)."),
    ("Y", "Each row sums to 1: divide exp(x - max) by its row sum."))
# one puzzle per (name, notebook): the notebook's last section holds its cells
NOTEBOOKS = {"masked_tile": "04_tiling", "dot_tile": "04_tiling", "row_softmax": "03_online_softmax",
             "online_row_softmax": "03_online_softmax", "flash2_forward": "05_flash1_vs_flash2",
             "online_softmax": "10_write_the_kernels", "causal_skip": "10_write_the_kernels",
             "gqa_decode": "10_write_the_kernels", "dkdv": "09_training", "dq": "09_training",
             "split_kv_merge": "08_inference", "paged_decode": "08_inference", "gpu_merge": "13_beyond_one_gpu"}

PUZZLES = {p.name: p for p in [
    LauncherPuzzle("masked_tile", kind="tile", shape=(40, 50), advice=(
        ("Y", "Each program copies the tile at rows i * BLOCK .., columns j * BLOCK ..; offsets are "
              "row * N + column in a row-major (M, N) matrix."),
        ("fewer_bytes", "Every element inside X is read and written once: the mask is row < M and column < N."),
        ("more_bytes", "Mask the load as well as the store: the edge tiles' padding is not read."),
        ("loop", "the grid covers the matrix: (cdiv(M, BLOCK), cdiv(N, BLOCK)) programs, no loop needed"),
        ("padding", "the edge tiles reach past X: mask rows >= M and columns >= N, on the load and the store."))),
    LauncherPuzzle("dot_tile", kind="dot", shape=(40, 40, 24), advice=(
        ("Y", "Sum tl.dot(a, b) over every k block, with the padding of the edge tiles loaded as 0 (other=0.0)."),
        ("more_bytes", "Each program reads its row panel of A and its column panel of B once: one load of each "
                       "per k step, masked at the edges."),
        ("fewer_bytes", "Every k block must be visited: range(0, tl.cdiv(K, BLOCK))."),
        ("loop", "the k loop runs over tl.cdiv(K, BLOCK) blocks"))),
    LauncherPuzzle("row_softmax", kind="softmax", shape=(12, 50), advice=SOFTMAX + (
        ("more_bytes", "One load of the row and one store: the whole row fits in one tile."),)),
    LauncherPuzzle("online_row_softmax", kind="online", shape=(12, 50), advice=SOFTMAX + (
        ("nan", "exp overflows: keep the running max, m_new = max(m_i, the chunk's max), so that exp(m_i - m_new) and "
                "exp(x - m_new) are at most 1 (the padding loads as -inf, exp(-inf) = 0)."),
        ("Y", "When the max grows, l_i was summed under the old max: l_i * exp(m_i - m_new) before adding."),
        ("more_bytes", "The online softmax reads x twice (once for m_i and l_i together, once to write y), as "
                       "gpusim.softmax's online variant: 2 loads and 1 store per element."),
        ("loop", "both passes run over tl.cdiv(N, BLOCK) chunks"))),
    Flash2Puzzle("flash2_forward", seq=40, seq_kv=56, batch=2, heads=2, heads_arg=True, advice=ONLINE + KV_ROWS),
    Flash2Puzzle("online_softmax", advice=ONLINE + (("loop", "the loop over K/V blocks runs over "
                                                             "range(0, tl.cdiv(N_KV, Bc))"),)),
    # then K/V blocks longer than the Q blocks, and a last Q block of 8 rows: (i + 1) * Br // Bc, right where Bc
    # divides Br, visits no block at all from Q block 0 there
    Flash2Puzzle("causal_skip", causal=True, seq=96, block_q=32, block_kv=16, also=((88, 16, 32),), advice=(
        ("nan", "A row that sees no key has l_i = 0: every Q block must visit K/V block 0 and the blocks up to "
                "last_row // Bc, the one holding its last row's key (a division rounds down: (i + 1) * Br // Bc "
                "is 0 for Q block 0 where a K/V block is longer than a Q block)."),
        ("first_block", "The tile is wrong from the start: are the diagonal blocks masked (key <= row)?"),
        ("later_block", "A block that crosses the diagonal is unmasked, or one a row needs is not visited: mask "
                        "every block from n_whole = i * Br // Bc on, and visit blocks up to "
                        "((i + 1) * Br - 1) // Bc."),
        LSE_HINT,
        ("masks", "A mask costs instructions on every score of the tile: blocks 0 .. n_whole - 1, with n_whole = "
                  "i * Br // Bc (the block holding the first row's key), need none."),
        ("more_kv", "The extra tiles lie entirely right of the diagonal: the mask hides all of them, so they "
                    "cost bytes and FLOPs for nothing. Stop the loop after the block that holds the last row's "
                    "last key: n_blocks = ((i + 1) * Br - 1) // Bc + 1 (at most cdiv(N_KV, Bc))."),
        ("other_bytes", "Q_i is loaded once, O_i and the LSE are stored once."))),
    DecodePuzzle("gqa_decode", lengths=(80, 50), advice=(
        ("nan", "Rows past the group are padding: load their q with a mask and store only the group's rows."),
        ("padding", "the tile's rows past GROUP are padding: the group is rows 0 .. GROUP - 1, in_group = "
                    "tl.arange(0, BLOCK_R) < GROUP; load and store with mask=in_group."),
        ("first_block", "The group's rows are not the query heads of this K/V head: query head h reads K/V head "
                        "h // GROUP, so K/V head g serves heads g * GROUP .. g * GROUP + GROUP - 1."),
        ("later_block", "The first chunk is right and a later one is wrong: rescale l_i and acc by "
                        "exp(m_i - m_new) when the running max grows."),
        ("lse", "Store the LSE of each of the group's rows: m_i + log(l_i)."),
        ("batch", "Request b's query heads are rows b * H .. b * H + H - 1 of Q; its cache starts at K/V head "
                  "b * H_KV: the program's K/V head is pid = b * H_KV + kv_head, whose rows of K and V (B, H_KV, S, d) "
                  "start at pid * S, S the cache's positions, whatever the request's length."),
        ("head", "Query head h reads K/V head h // GROUP: K/V head g serves heads g * GROUP .. g * GROUP + "
                 "GROUP - 1."),
        ("more_kv", "Each K/V chunk is loaded more than once per program: stack the group's query rows into "
                    "one tile (BLOCK_R rows, the padding masked) and load K_j, V_j once for all of them."),
        ("other_bytes", "Each program loads its group's q rows once and stores their O and LSE once; the "
                        "padding rows must be masked off."))),
    BackwardPuzzle("dkdv", kernel="dkdv", advice=(
        ("dV", "dV_j = Σ_i P_ijᵀ dO_i, with P recomputed as exp(S - LSE) (no max, no division: the LSE holds "
               f"both). {PT_AXES}"),
        ("dK", "dK_j = τ Σ_i dS_ijᵀ Q_i with dS = P ∘ (dP - D), dP = dO Vᵀ: D is rowsum(dO ∘ O), one per query row. "
               f"{PT_AXES}"),
        ("more_bytes", "K_j and V_j are loaded once, before the loop; each step loads Q_i, dO_i, LSE_i and D_i."),
        ("fewer_bytes", "Every Q block meets every K/V block (no causal mask here).")) + OFFSETS),
    BackwardPuzzle("dq", kernel="dq", advice=(
        ("dQ", "dQ_i = τ Σ_j dS_ij K_j with dS = P ∘ (dO Vᵀ - D_i) and P = exp(S - LSE_i). P is (Br query rows, Bc "
               "keys): the keys run along its columns, in the mask too (the last K/V block is partial)."),
        ("more_bytes", "Q_i, dO_i, LSE_i and D_i are loaded once, before the loop; each step loads K_j and V_j."),
        ("fewer_bytes", "Every K/V block is visited: range(0, tl.cdiv(N, Bc)).")) + OFFSETS),
    MergePuzzle("split_kv_merge", lengths=(112, 144, 16), advice=(
        ("O", "Weight each split's O_s by exp(LSE_s - LSE): O_s was divided by its own sum exp(LSE_s)."),
        ("splits", "That is the merge of fewer splits than this request fills: how many splits hold a chunk "
                   "depends on the request's length, so count them from its n_chunks, not as a constant."),
        ("LSE", "LSE = m + log Σ_s exp(LSE_s - m), m the largest LSE_s (exp of a raw LSE overflows)."),
        ("nan", "An empty split has LSE_s = -inf: subtract the largest LSE_s, which is finite (split 0 holds "
                "key 0), and load the empty ones as -inf, not as garbage."),
        ("more_bytes", "Read only the splits that hold keys: a split takes cdiv(n_chunks, SPLITS) chunks, not one, "
                       "so split s starts at chunk s x cdiv(n_chunks, SPLITS), and a request's splits past its last "
                       "chunk are empty."))),
    DecodePuzzle("paged_decode", page_size=16, advice=(
        ("padding", "the tile's rows past GROUP are padding (in_group = tl.arange(0, BLOCK_R) < GROUP, rows 0 .. "
                    "GROUP - 1), and keys past n_keys too."),
        ("nan", "The keys of chunk j are on page block_table[b, j]: a wrong page gives a wrong row, not a NaN; "
                "a NaN comes from the padding rows (mask them) or from l_i = 0."),
        ("later_block", "The pages are in the block table's order, not the cache's: chunk j is on page "
                        "block_table[b * max_pages + j], row (page * Bc + slot) * H_KV + kv_head of the (pages, "
                        "Bc, H_KV, d) cache."),
        ("lse", "Store the LSE of each of the group's rows: m_i + log(l_i)."),
        ("batch", "Request b's query heads are rows b * H .. of Q, and its pages are row b of the block table."),
        ("more_kv", "Load each page's K and V once per chunk, for the whole group."),
        ("other_bytes", "One block-table entry per chunk (read 1 int32), the group's q rows once, O and the LSE "
                        "once."))),
    MergePuzzle("gpu_merge", gpus=2, advice=(
        ("O", "Weight each GPU's O_g by exp(LSE_g - LSE): O_g was divided by its own sum exp(LSE_g)."),
        ("LSE", "LSE = m + log(exp(LSE1 - m) + exp(LSE2 - m)), m = max(LSE1, LSE2)."),
        ("nan", "exp of a raw LSE overflows: subtract m = max(LSE1, LSE2) first."),
        ("more_bytes", "Each row reads O1, O2 (d each) and LSE1, LSE2 (1 each) once."))),
]}

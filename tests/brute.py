"""An independent byte counter: the papers' algorithms as plain loops over tiles, written from the papers
(FlashAttention, Algorithms 0 and 1; FlashAttention-2, Algorithm 1) and the kernels' traffic comments, not
from gpusim. No closed forms, no gpusim.tiling, no gpusim element widths: if gpusim's schedule skips one
tile too many or counts a tensor in the wrong dtype, the two disagree.
"""
WIDTH = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
STAT = 4  # l, m and the log-sum-exp are fp32


def tiles(n, block):
    """[(start, stop)] of the blocks of n rows."""
    return [(s, min(s + block, n)) for s in range(0, n, block)]


def score_tiles(n_kv, block):
    """[(start, stop)] of each K/V block's columns in naive's score matrices (S, P, dP, dS), whose rows are n_kv
    rounded up to 16 elements apart (kernels/naive.py), as far as the blocks reach: the last block's columns run
    to the row's end."""
    row = min(-(-n_kv // 16) * 16, tiles(n_kv, block)[-1][0] + block)
    return [(s, row if stop == n_kv else stop) for s, stop in tiles(n_kv, block)]


def visible(row, n, n_kv, causal, bottom_right):
    """Keys row `row` sees: all, or 0..row (+ n_kv - n when aligned bottom-right)."""
    if not causal:
        return n_kv
    return min(row + 1 + (n_kv - n if bottom_right else 0), n_kv)


def visited(q_tile, kv_tile, n, n_kv, causal, bottom_right):
    """A tile is computed unless every key in it is masked for every row in it."""
    return kv_tile[0] < visible(q_tile[1] - 1, n, n_kv, causal, bottom_right)


def count(algo, batch, heads, seq, seq_kv, head_dim, block_q, block_kv, causal, dtype, sram_row_bytes=None,
          bottom_right=False):
    """{(kernel, tensor): [read_bytes, write_bytes]}. sram_row_bytes: naive's softmax keeps a row of S
    in SRAM when it fits in this many bytes (None: always), else streams it three times."""
    e, d = WIDTH[dtype], head_dim
    o = 4 if algo == "flash1" else (2 if dtype == "fp8" else e)
    out = {}

    def add(kernel, tensor, rw, elements, width):
        out.setdefault((kernel, tensor), [0, 0])[rw] += elements * width * batch * heads

    qt, kt = tiles(seq, block_q), tiles(seq_kv, block_kv)
    seen = [[j for j, kv in enumerate(kt) if visited(q, kv, seq, seq_kv, causal, bottom_right)] for q in qt]
    if algo == "naive":
        st = score_tiles(seq_kv, block_kv)
        for i, (r0, r1) in enumerate(qt):
            for j in seen[i]:  # qk: one program per visited tile
                c0, c1 = kt[j]
                add("qk", "Q", 0, (r1 - r0) * d, e)
                add("qk", "K", 0, (c1 - c0) * d, e)
                add("qk", "S", 1, (r1 - r0) * (st[j][1] - st[j][0]), e)
        for i, (r0, r1) in enumerate(qt):  # softmax: each row over its visited tiles
            width = st[seen[i][-1]][1]
            passes = 1 if sram_row_bytes is None or st[-1][1] * e <= sram_row_bytes else 3
            add("softmax", "S", 0, (r1 - r0) * width * passes, e)
            add("softmax", "P", 1, (r1 - r0) * width, e)
        for i, (r0, r1) in enumerate(qt):  # pv
            for j in seen[i]:
                c0, c1 = kt[j]
                add("pv", "P", 0, (r1 - r0) * (st[j][1] - st[j][0]), e)
                add("pv", "V", 0, (c1 - c0) * d, e)
            add("pv", "O", 1, (r1 - r0) * d, o)
    elif algo == "flash1":
        add("flash1", "O", 1, seq * d, o)  # line 2: O = 0, l = 0, m = -inf
        add("flash1", "l", 1, seq, STAT)
        add("flash1", "m", 1, seq, STAT)
        for j, (c0, c1) in enumerate(kt):  # line 5: outer loop over K/V blocks
            inner = [i for i in range(len(qt)) if j in seen[i]]
            if not inner:
                continue
            add("flash1", "K", 0, (c1 - c0) * d, e)  # line 6
            add("flash1", "V", 0, (c1 - c0) * d, e)
            for i in inner:  # line 7: lines 8, 12, 13 read and write Q_i, O_i, l_i, m_i
                n = qt[i][1] - qt[i][0]
                add("flash1", "Q", 0, n * d, e)
                for tensor, elements, width in (("O", n * d, o), ("l", n, STAT), ("m", n, STAT)):
                    add("flash1", tensor, 0, elements, width)
                    add("flash1", tensor, 1, elements, width)
    else:  # flash2 and hopper: Q blocks outer, one program each
        for i, (r0, r1) in enumerate(qt):
            add(algo, "Q", 0, (r1 - r0) * d, e)
            for j in seen[i]:
                c0, c1 = kt[j]
                add(algo, "K", 0, (c1 - c0) * d, e)
                add(algo, "V", 0, (c1 - c0) * d, e)
            add(algo, "O", 1, (r1 - r0) * d, o)
            add(algo, "LSE", 1, r1 - r0, STAT)
    return {key: tuple(rw) for key, rw in out.items()}

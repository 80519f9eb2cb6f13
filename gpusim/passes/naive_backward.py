"""Standard attention's backward (Algorithm 3 of the FlashAttention paper), as kernels/naive_backward.py
runs it: five launches, one per line, each a grid of tiled programs.

    dv: dV = Pᵀ dO   one program per K/V block (Bc rows) and K/V head, a step per (query head, Q block)
    dp: dP = dO Vᵀ   one program per tile of the (Tr x Tc) grid, one step, written to HBM; a causal
                     mask's skipped tiles exit
    ds: dS = P ∘ (dP - rowsum(P ∘ dP))   one program per row: one step when its P and dP fit in SRAM,
                     else two passes over Bc chunks
    dq: dQ = τ dS K  one program per Q block, a step per K/V block it visits
    dk: dK = τ dSᵀ Q like dv
D comes from P ∘ dP, so naive attention needs no O. Grouped-query attention: dv's and dk's programs serve
one K/V head and loop over the query heads of its group, so dK and dV are summed on chip.
"""
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES
from ..tiling import TAIL, Work, ramp_work, scaled, uniform_work
from .backward_base import DEFAULT_LAUNCH, BackwardPass, column_work, group_heads, spilled, sums
from .common import padded, warps
from .naive import padded_tile, score_row, scores

PER_SCORE = 4  # ds, per score: P ∘ dP, its row sum, dP - D, times P


def _tile_work(cfg):
    """dp's grid: Tr*Tc programs per head, program p at tile (p // Tc, p % Tc); the visited tiles do one
    step, the rest (right of a causal diagonal) read their J_i and exit."""
    t = cfg.tiling
    grid = t.n_q_blocks * t.n_kv_blocks
    visited = t.tiles
    first = grid - min(grid, TAIL)  # the tail's first program; Python ints: grid may pass int64 near MAX_SEQ
    offsets = first % t.n_kv_blocks + np.arange(min(grid, TAIL))[::-1]  # the launch order, backwards from its end
    rows = first // t.n_kv_blocks + offsets // t.n_kv_blocks  # program p at tile (p // Tc, p % Tc)
    head = (offsets % t.n_kv_blocks < t.kv_blocks_at(rows)).astype(np.int64)
    values, counts = zip(*[(v, c) for v, c in ((1, visited), (0, grid - visited)) if c])
    return Work(values, scaled(counts, cfg.bh), np.resize(head, min(cfg.bh * grid, TAIL)))


def _summed_over_queries(mem, cfg, kernel, a, x, out, scale):
    """out_j = scale Σ_i a_ijᵀ x_i, one program per K/V head and block j, over the group's query heads and
    the Q blocks that see block j (naive's dv and dk kernels)."""
    t = cfg.tiling
    for b, hk, j in product(range(cfg.batch), range(cfg.kv_heads), range(t.n_kv_blocks)):
        c, cols = slice(*t.kv_rows(j)), t.score_cols(j, score_row(cfg))
        acc = np.zeros((c.stop - c.start, cfg.head_dim), mem.tensors[out].dtype)
        for h, i in product(group_heads(cfg, hk), t.q_blocks(j)):
            r = slice(*t.q_rows(i))
            a_ij = mem.load(kernel, a, (b, h, r, cols))[:, :c.stop - c.start]  # read Br*Bc
            acc += a_ij.T @ mem.load(kernel, x, (b, h, r))  # read Br*d
            mem.step(kernel, (b, hk, j), (i, j), cfg.sram_bytes(kernel))
        mem.store(kernel, out, (b, hk, c), acc * scale)  # write Bc*d; zeros for a block no query sees
        mem.step(kernel, (b, hk, j), (None, j), cfg.sram_bytes(kernel))


def _ds_row(mem, cfg, b, h, row, n):
    """dS = P ∘ (dP - rowsum(P ∘ dP)) over the row's first n entries (its visited tiles; P is 0 at masked
    keys, so dS is too). A row whose P and dP fit in SRAM is read once; a longer one in Bc chunks twice:
    a pass for the row sum, one to write dS."""
    sram = cfg.sram_bytes("ds")
    chunks = [slice(0, n)] if cfg.ds_fits else [slice(c, min(c + cfg.block_kv, n)) for c in range(0, n, cfg.block_kv)]

    def load(c):  # read a chunk of P and of dP
        return mem.load("ds", "P", (b, h, row, c)), mem.load("ds", "dP", (b, h, row, c))

    if cfg.ds_fits:
        p, dp = load(chunks[0])
        mem.store("ds", "dS", (b, h, row, chunks[0]), p * (dp - (p * dp).sum()))
        mem.step("ds", (b, h, row), (row, 0), sram)
        return
    d_row = sum((p * dp).sum() for p, dp in map(load, chunks))  # pass 1
    mem.step("ds", (b, h, row), (row, 1), sram)
    for c in chunks:  # pass 2
        p, dp = load(c)
        mem.store("ds", "dS", (b, h, row, c), p * (dp - d_row))
    mem.step("ds", (b, h, row), (row, 2), sram)


class NaiveBackward(BackwardPass):
    """Algorithm 3: dV, dP, dS, dQ, dK, one launch each, P, dP and dS in HBM."""
    name, algo = "naive_backward", "naive"
    KERNELS = ("dv", "dp", "ds", "dq", "dk")
    SAVED = ("P",)
    MATRICES = "P, dP and dS"
    L2_REUSE = {kernel: ("own", ()) for kernel in KERNELS}  # BackwardPass.dram_reads
    STEP_TENSORS = {"dv": ("P", "dO"), "dp": ("dO", "V"), "ds": ("P", "dP"), "dq": ("dS", "K"), "dk": ("dS", "Q")}
    SHARED_BY = {"dv": "kv_head", "dp": "head", "ds": "program", "dq": "head", "dk": "kv_head"}

    def start_blocks(self, gpu, head_dim, dtype):
        """128 x 128, as its forward."""
        return 128, 128

    def sram_bytes(self, cfg, kernel, rows, keys):
        """The tiles a program loads (fp32 scores and accumulators are registers)."""
        d, e = cfg.head_dim, cfg.itemsize
        return {"dv": rows * keys * e + rows * d * e, "dk": rows * keys * e + rows * d * e,  # P_ij or dS_ij; dO_i, Q_i
                "dp": rows * d * e + keys * d * e,  # dO_i, V_j
                "ds": 2 * (score_row(cfg) if cfg.ds_fits else keys) * e,  # P and dP: a row, or a chunk of each
                "dq": rows * keys * e + keys * d * e}[kernel]  # dS_ij, K_j

    def tables(self, cfg):
        d, e, n, nk = cfg.head_dim, cfg.itemsize, cfg.seq, cfg.seq_kv
        s = sums(cfg.tiling)
        rv, kr, te = s["row_visits"], s["keys_read"], scores(cfg)
        passes = 1 if cfg.ds_fits else 2
        per_q = {("dv", "P"): (te * e, 0), ("dv", "dO"): (rv * d * e, 0),  # per tile: read Br*Bc, Br*d
                 ("dp", "dO"): (rv * d * e, 0), ("dp", "V"): (kr * d * e, 0),  # per tile: read Br*d, Bc*d
                 ("dp", "dP"): (0, te * e),  # write N*LD (the visited tiles)
                 ("ds", "P"): (passes * te * e, 0), ("ds", "dP"): (passes * te * e, 0),  # each row once or twice
                 ("ds", "dS"): (0, te * e),
                 ("dq", "dS"): (te * e, 0), ("dq", "K"): (kr * d * e, 0), ("dq", "dQ"): (0, n * d * e),
                 ("dk", "dS"): (te * e, 0), ("dk", "Q"): (rv * d * e, 0)}
        per_kv = {("dv", "dV"): (0, nk * d * e), ("dk", "dK"): (0, nk * d * e)}  # every K/V block, zeros unseen
        return per_q, per_kv

    def flop_tables(self, cfg):
        """4 matmuls per score (dV, dP, dQ, dK)."""
        d, n, nk, te = cfg.head_dim, cfg.seq, cfg.seq_kv, cfg.tiling.tile_elements
        mm = (2 * d * te, 0, 0)
        per_q = {"dv": mm, "dp": mm, "ds": (0, PER_SCORE * te, 0), "dq": (2 * d * te, n * d, 0), "dk": mm}
        return per_q, {"dk": (0, nk * d, 0)}

    def footprint(self, cfg):
        """naive frees S after the softmax and dP after ds; S, P, dP, dS are allocated whole even when causal."""
        saved = self.saved_bytes(cfg)
        grads = self.gradient_bytes(cfg)
        nn, o = saved["P"], grads["dO"]
        inputs = {"Q": saved["Q"], "K": saved["K"], "V": saved["V"]}
        return [("forward: softmax", inputs | {"S": nn, "P": nn}),
                ("forward: O = P V", inputs | {"P": nn, "O": o}),
                ("backward: ds", inputs | {"P": nn, "O": o, "dO": o, "dV": grads["dV"], "dP": nn, "dS": nn}),
                ("backward: dq, dk", inputs | {"P": nn, "O": o, "dS": nn} | grads)]

    def work(self, cfg, kernel):
        t, groups = cfg.tiling, cfg.batch * cfg.kv_heads
        if kernel in ("dv", "dk"):
            return column_work(t, groups, cfg.group)
        if kernel == "dq":
            return ramp_work(t, cfg.bh)
        if kernel == "ds":
            if cfg.ds_fits:
                return uniform_work(cfg.bh * cfg.seq, 1)
            return uniform_work(cfg.bh * cfg.seq, 2 * -(-scores(cfg) // cfg.seq // cfg.block_kv))
        return _tile_work(cfg)

    def launch(self, cfg, kernel):
        """(num_warps, num_stages) as kernels/naive_backward.py launches them: the tiled kernels as naive
        attention's forward (kernels/launch.py options), one buffer per tile; ds with Triton's defaults."""
        return DEFAULT_LAUNCH if kernel == "ds" else (warps(cfg.block_q), 1)

    def register_tiles(self, cfg, kernel):
        """dv, dk: the fp32 accumulator (Bc x d); dq: Br x d; dp: the fp32 tile (Br x Bc); ds: a row of P and
        of dP in fp32 (padded to a power of two), or a Bc chunk of each: a long row spills (spilled)."""
        d = padded(cfg.head_dim)
        if kernel == "ds":
            row = padded(score_row(cfg)) if cfg.ds_fits else cfg.block_kv
            return spilled(cfg, 2 * STATS_BYTES * row, DEFAULT_LAUNCH[0])
        return STATS_BYTES * {"dv": cfg.block_kv * d, "dk": cfg.block_kv * d, "dq": cfg.block_q * d,
                              "dp": cfg.block_q * cfg.block_kv}[kernel]

    def compiled_shape(self, cfg, kernel):
        """What a compiled kernel is specialised on beyond its tiles: ds, the row it holds (LD padded)."""
        return padded(score_row(cfg)) if kernel == "ds" else cfg.head_dim

    def score_row(self, cfg):
        return score_row(cfg)

    def execute_steps(self, cfg):
        """Steps execute mode walks: the tiles of dv, dp, dq and dk (dk's counted with dv's), and one row each of ds."""
        return cfg.bh * (cfg.tiling.tiles + cfg.kv_tiling.tiles + cfg.seq)

    def execute(self, mem, cfg):
        """Algorithm 3 of the FlashAttention paper, one kernel per line, each a grid of tiled programs."""
        t, scale, ld = cfg.tiling, cfg.head_dim**-0.5, score_row(cfg)
        _summed_over_queries(mem, cfg, "dv", "P", "dO", "dV", 1.0)  # line 1: dV = Pᵀ dO
        for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # line 2: dP = dO Vᵀ
            r = slice(*t.q_rows(i))
            for j in t.kv_blocks(i):  # one program per visited tile
                c, cols = slice(*t.kv_rows(j)), t.score_cols(j, ld)
                do_i = mem.load("dp", "dO", (b, h, r))  # read Br*d
                v_j = mem.load("dp", "V", (b, h // cfg.group, c))  # read Bc*d
                mem.store("dp", "dP", (b, h, r, cols), padded_tile(do_i @ v_j.T, cols))  # write Br*Bc
                mem.step("dp", (b, h, i, j), (i, j), cfg.sram_bytes("dp"))
        for b, h, row in product(range(cfg.batch), range(cfg.heads), range(cfg.seq)):  # line 3: dS, one row each
            _ds_row(mem, cfg, b, h, row, t.score_cols(t.kv_blocks_of(row // cfg.block_q) - 1, ld).stop)
        for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # line 4: dQ = τ dS K
            r = slice(*t.q_rows(i))
            acc = 0.0
            for j in t.kv_blocks(i):
                c = slice(*t.kv_rows(j))
                ds_ij = mem.load("dq", "dS", (b, h, r, t.score_cols(j, ld)))[:, :c.stop - c.start]  # read Br*Bc
                acc = acc + ds_ij @ mem.load("dq", "K", (b, h // cfg.group, c))  # read Bc*d
                mem.step("dq", (b, h, i), (i, j), cfg.sram_bytes("dq"))
            mem.store("dq", "dQ", (b, h, r), acc * scale)  # write Br*d
            mem.step("dq", (b, h, i), (i, None), cfg.sram_bytes("dq"))
        _summed_over_queries(mem, cfg, "dk", "dS", "Q", "dK", scale)  # line 5: dK = τ dSᵀ Q


NAIVE_BACKWARD = NaiveBackward()

"""FlashAttention-2's backward as kernels/backward.py runs it: three launches.

    preprocess: D = rowsum(dO ∘ O)   one program per Q block (Br rows), one step
    dkdv:  one program per K/V block of Br == block_q rows and K/V head, a step per (query head, Q block
           of Bc == block_kv rows) that sees it: Q_i, dO_i, LSE_i, D_i streamed past K_j, V_j, dK_j and dV_j
           accumulated on chip (summed over the GQA group) and written once
    dq:    one program per Q block (Br rows), a step per K/V block (Bc rows) it visits: K_j, V_j streamed,
           S and dP recomputed a second time

The other choice is FlashAttention-2's own: fp32 atomic adds of τ dS_ij K_j into a dQ accumulator from the
dK/dV kernel, Bc*d fp32 per tile sent to the L2 as reductions (the L2 reads, adds and writes; the SM reads
nothing back), no second recompute. We take a second pass over the K/V blocks that recomputes S and dP, as
Triton's fused-attention tutorial does (there in the same launch: each of its _attn_bwd programs runs the dK/dV
loop, then the dQ loop; here in a kernel of its own): the result is deterministic (atomic adds land in a
different order every run), it needs no fp32 dQ buffer and conversion pass, and every byte it moves is a
tl.load or tl.store that trace_io counts. Tiles: the block a program holds for its whole life has Br ==
block_q rows and the block streamed past it has Bc == block_kv rows, in both kernels (the tutorial's
BLOCK_N1 = BLOCK_M2 = 128, BLOCK_M1 = BLOCK_N2 = 32): so the dK/dV kernel walks the transposed tiling.
"""
from itertools import product

import numpy as np

from ..hardware import STATS_BYTES
from ..tiling import Tiling, ramp_work, uniform_work
from .backward_base import DEFAULT_LAUNCH, BackwardPass, column_work, group_heads, sums
from .common import masked_scores, padded, pipeline_stages, warps

PER_SCORE = 5  # non-matmul FLOPs per score: scale, subtract LSE, exp, subtract D, multiply by P


def _query_rows(mem, kernel, b, h, r):
    return [mem.load(kernel, x, (b, h, r)) for x in ("Q", "dO", "LSE", "D")]


def _recompute(q_i, do_i, lse_i, d_i, k_j, v_j, keep, scale):
    """P_ij = exp(S_ij - LSE_i), recomputed from the LSE the forward saved; dS_ij = P_ij ∘ (dO_i V_jᵀ - D_i)."""
    p_ij = np.exp(masked_scores(q_i, k_j, scale, keep) - lse_i[:, None])
    return p_ij, p_ij * (do_i @ v_j.T - d_i[:, None])


class Flash2Backward(BackwardPass):
    """Three kernels: D, then dK and dV per K/V block, then dQ per Q block."""
    name, algo = "flash2_backward", "flash2"
    KERNELS = ("preprocess", "dkdv", "dq")
    KV_HELD = ("dkdv",)
    SAVED = ("O", "LSE")
    L2_REUSE = {kernel: ("own", ()) for kernel in KERNELS}  # BackwardPass.dram_reads
    STEP_TENSORS = {"preprocess": ("O", "dO"), "dkdv": ("Q", "dO", "LSE", "D"), "dq": ("K", "V")}
    SHARED_BY = {"preprocess": "program", "dkdv": "kv_head", "dq": "head"}
    # A dK/dV warp issues 0.261 instructions a cycle while the tensor pipe is idle: the median of run 128's six dK/dV
    # launches (results/h200/bwd_rates.json: d 64 and 128, 4 and 8 warps, 0.24-0.29 each; report_steps.
    # measured_warp_rate), its stalls fixed-latency waits, shared-memory reads and barriers, its loads' 0.1-0.2 cycles
    # an instruction (cost.measured). Nothing fitted; dQ's rate varies with its tile (0.29-0.44) and keeps ISSUE_HIDING.
    MEASURED_ISSUE = {"dkdv": 0.261}

    def start_blocks(self, gpu, head_dim, dtype):
        """Br = 128 held, Bc = 32 streamed (Triton's tutorial)."""
        return 128, 32

    def kv_tiling(self, cfg):
        """The dK/dV kernel holds K/V blocks of Br rows and streams Q blocks of Bc rows."""
        return Tiling(cfg.seq, cfg.seq_kv, cfg.block_kv, cfg.block_q, cfg.causal)

    def sram_bytes(self, cfg, kernel, rows, keys):
        """The tiles a program loads (fp32 scores and accumulators are registers)."""
        d, e, f, o = cfg.head_dim, cfg.itemsize, STATS_BYTES, cfg.tensor_bytes("O")
        return {"preprocess": 2 * rows * d * o,  # O_i, dO_i
                "dkdv": 2 * rows * d * e + keys * d * (e + o) + 2 * keys * f,  # K_j, V_j; Q_i, dO_i, LSE_i, D_i
                "dq": rows * d * (e + o) + 2 * rows * f + 2 * keys * d * e}[kernel]  # Q_i, dO_i, LSE_i, D_i; K_j, V_j

    def gradient_bytes(self, cfg):
        return super().gradient_bytes(cfg) | {"D": cfg.bh * cfg.seq * STATS_BYTES}

    def tables(self, cfg):
        d, e, o, f = cfg.head_dim, cfg.itemsize, cfg.tensor_bytes("O"), STATS_BYTES
        n, nk = cfg.seq, cfg.seq_kv
        kr = sums(cfg.tiling)["keys_read"]
        s2 = sums(cfg.kv_tiling)
        rv2, seen2 = s2["row_visits"], s2["kv_rows_seen"]
        per_q = {("preprocess", "O"): (n * d * o, 0), ("preprocess", "dO"): (n * d * o, 0),  # read N*d each
                 ("preprocess", "D"): (0, n * f),  # write N
                 ("dkdv", "Q"): (rv2 * d * e, 0), ("dkdv", "dO"): (rv2 * d * o, 0),  # per step: read Bc*d each
                 ("dkdv", "LSE"): (rv2 * f, 0), ("dkdv", "D"): (rv2 * f, 0),  # per step: read Bc each
                 ("dq", "Q"): (n * d * e, 0), ("dq", "dO"): (n * d * o, 0),  # once per Q block: read Br*d
                 ("dq", "LSE"): (n * f, 0), ("dq", "D"): (n * f, 0),
                 ("dq", "K"): (kr * d * e, 0), ("dq", "V"): (kr * d * e, 0),  # per step: read Bc*d each
                 ("dq", "dQ"): (0, n * d * e)}  # write Br*d once
        per_kv = {("dkdv", "K"): (seen2 * d * e, 0), ("dkdv", "V"): (seen2 * d * e, 0),  # read Br*d once
                  ("dkdv", "dK"): (0, nk * d * e), ("dkdv", "dV"): (0, nk * d * e)}  # write Br*d once
        return per_q, per_kv

    def flop_tables(self, cfg):
        """7 matmuls per score: its dq kernel recomputes S and dP."""
        d, n, nk = cfg.head_dim, cfg.seq, cfg.seq_kv
        te, te2 = cfg.tiling.tile_elements, cfg.kv_tiling.tile_elements
        per_q = {"preprocess": (0, 2 * n * d, 0), "dkdv": (8 * d * te2, PER_SCORE * te2, te2),
                 "dq": (6 * d * te, PER_SCORE * te + n * d, te)}
        return per_q, {"dkdv": (0, nk * d, 0)}

    def dot_tiling(self, cfg, kernel):
        """dK/dV's programs walk the K/V-major tiling; the others the Q-major one."""
        return cfg.kv_tiling if kernel == "dkdv" else cfg.tiling

    def work(self, cfg, kernel):
        if kernel == "dkdv":
            return column_work(cfg.kv_tiling, cfg.batch * cfg.kv_heads, cfg.group)
        if kernel == "dq":
            return ramp_work(cfg.tiling, cfg.bh)
        return uniform_work(cfg.bh * cfg.tiling.n_q_blocks, 1)

    def stage_bytes(self, cfg, kernel):
        """One more buffer of the two streamed tiles (Bc rows, d padded), as kernels/backward.py sizes it."""
        return 0 if kernel == "preprocess" else 2 * cfg.block_kv * padded(cfg.head_dim) * cfg.itemsize

    def launch(self, cfg, kernel):
        """(num_warps, num_stages) as kernels/backward.py launches them (kernels/launch.py options): the loops
        pipelined as deep as fits by the forward's rule; preprocess with Triton's defaults."""
        if kernel == "preprocess":
            return DEFAULT_LAUNCH
        return warps(cfg.block_q), pipeline_stages(cfg, kernel, self.stage_bytes(cfg, kernel))

    def register_tiles(self, cfg, kernel):
        """dkdv: dK_j and dV_j accumulated in fp32 (Br x d each); dq: dQ_i (Br x d); both: two fp32 score tiles
        live at once (P_ij, then dP_ij and dS_ij; Br x Bc). preprocess: none; the compiler streams O_i ∘ dO_i
        into its row sums (its compiles in gpusim/compiled.py keep 32-52 registers, about REGISTER_BASE)."""
        d, tile = padded(cfg.head_dim), 8 * cfg.block_q * cfg.block_kv
        return {"preprocess": 0, "dkdv": 8 * cfg.block_q * d + tile, "dq": 4 * cfg.block_q * d + tile}[kernel]

    def execute(self, mem, cfg):
        """The FlashAttention-2 backward: D = rowsum(dO ∘ O), then dK/dV with K/V blocks held, then dQ with
        Q blocks held. Both recompute P_ij = exp(S_ij - LSE_i) from the LSE the forward saved."""
        t, tk, scale = cfg.tiling, cfg.kv_tiling, cfg.head_dim**-0.5
        for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # preprocess
            r = slice(*t.q_rows(i))
            o_i, do_i = mem.load("preprocess", "O", (b, h, r)), mem.load("preprocess", "dO", (b, h, r))  # Br*d each
            mem.store("preprocess", "D", (b, h, r), (o_i * do_i).sum(axis=1))  # write Br
            mem.step("preprocess", (b, h, i), (i, None), cfg.sram_bytes("preprocess"))
        for b, hk, j in product(range(cfg.batch), range(cfg.kv_heads), range(tk.n_kv_blocks)):  # dK/dV
            c, q_blocks = slice(*tk.kv_rows(j)), tk.q_blocks(j)
            dk_j = dv_j = np.zeros((c.stop - c.start, cfg.head_dim), mem.tensors["dK"].dtype)
            if q_blocks:  # a block no query sees is not read; its dK, dV are zeros
                k_j, v_j = mem.load("dkdv", "K", (b, hk, c)), mem.load("dkdv", "V", (b, hk, c))  # read Br*d each
            for h, i in product(group_heads(cfg, hk), q_blocks):
                r = slice(*tk.q_rows(i))
                q_i, do_i, lse_i, d_i = _query_rows(mem, "dkdv", b, h, r)  # every step: read Bc*d, Bc*d, Bc, Bc
                p_ij, ds_ij = _recompute(q_i, do_i, lse_i, d_i, k_j, v_j, tk.keep(r, c), scale)
                dv_j = dv_j + p_ij.T @ do_i
                dk_j = dk_j + ds_ij.T @ q_i
                mem.step("dkdv", (b, hk, j), (i, j), cfg.sram_bytes("dkdv"))
            mem.store("dkdv", "dK", (b, hk, c), dk_j * scale)  # write Br*d
            mem.store("dkdv", "dV", (b, hk, c), dv_j)  # write Br*d
            mem.step("dkdv", (b, hk, j), (None, j), cfg.sram_bytes("dkdv"))
        for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # dQ
            r = slice(*t.q_rows(i))
            q_i, do_i, lse_i, d_i = _query_rows(mem, "dq", b, h, r)  # once: read Br*d, Br*d, Br, Br; held
            dq_i = 0.0
            for j in t.kv_blocks(i):
                c = slice(*t.kv_rows(j))
                k_j, v_j = mem.load("dq", "K", (b, h // cfg.group, c)), mem.load("dq", "V", (b, h // cfg.group, c))
                dq_i = dq_i + _recompute(q_i, do_i, lse_i, d_i, k_j, v_j, t.keep(r, c), scale)[1] @ k_j
                mem.step("dq", (b, h, i), (i, j), cfg.sram_bytes("dq"))
            mem.store("dq", "dQ", (b, h, r), dq_i * scale)  # write Br*d
            mem.step("dq", (b, h, i), (i, None), cfg.sram_bytes("dq"))


FLASH2_BACKWARD = Flash2Backward()

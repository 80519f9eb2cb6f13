"""FlashAttention-2's backward as kernels/backward.py runs it: three launches.

    preprocess: D = rowsum(dO ∘ O)   one program per Q block (Br rows), one step
    dkdv:  one program per K/V block of Br == block_q rows and K/V head, a step per (query head, Q block
           of Bc == block_kv rows) that sees it: Q_i, dO_i, LSE_i, D_i streamed past K_j, V_j, dK_j and dV_j
           accumulated on chip (summed over the GQA group) and written once
    dq:    one program per Q block (Br rows), a step per K/V block (Bc rows) it visits: K_j, V_j streamed,
           S and dP recomputed a second time

The other choice is FlashAttention-2's own: fp32 atomic adds of τ dS_ij K_j into a dQ accumulator from the
dK/dV kernel, one read and one write of Br*d fp32 per tile, no second recompute. We take the separate
kernel, as Triton's fused-attention tutorial does: the result is deterministic (atomic adds land in a
different order every run), it needs no fp32 dQ buffer and conversion pass, and every byte it moves is a
tl.load or tl.store that trace_io counts. Tiles: the block a program holds for its whole life has Br ==
block_q rows and the block streamed past it has Bc == block_kv rows, in both kernels (the tutorial's
BLOCK_N1 = BLOCK_M2 = 128, BLOCK_M1 = BLOCK_N2 = 32): so the dK/dV kernel walks the transposed tiling.
"""
from ..hardware import STATS_BYTES
from ..tiling import Tiling, ramp_work, uniform_work
from .backward_base import DEFAULT_LAUNCH, BackwardPass, column_work, sums
from .common import padded, pipeline_stages, warps

PER_SCORE = 5  # non-matmul FLOPs per score: scale, subtract LSE, exp, subtract D, multiply by P


class Flash2Backward(BackwardPass):
    """Three kernels: D, then dK and dV per K/V block, then dQ per Q block."""
    name, algo = "flash2_backward", "flash2"
    KERNELS = ("preprocess", "dkdv", "dq")
    KV_HELD = ("dkdv",)
    SAVED = ("O", "LSE")
    L2_REUSE = {kernel: ("own", ()) for kernel in KERNELS}  # BackwardPass.dram_reads
    STEP_TENSORS = {"preprocess": ("O", "dO"), "dkdv": ("Q", "dO", "LSE", "D"), "dq": ("K", "V")}
    SHARED_BY = {"preprocess": "program", "dkdv": "kv_head", "dq": "head"}

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
        into its row sums (its compiles in gpusim/compiled.py need fewer registers than REGISTER_BASE)."""
        d, tile = padded(cfg.head_dim), 8 * cfg.block_q * cfg.block_kv
        return {"preprocess": 0, "dkdv": 8 * cfg.block_q * d + tile, "dq": 4 * cfg.block_q * d + tile}[kernel]


FLASH2_BACKWARD = Flash2Backward()

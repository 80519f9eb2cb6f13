"""The backward pass of attention: HBM bytes per kernel and tensor in closed form, FLOPs, and the memory
training needs. Execute mode (the tiles walked on NumPy arrays) is gpusim/backward_execute.py.

Gradients of O = softmax(S) V with S = τ Q Kᵀ (τ = 1/sqrt(d)), given dO:
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP - D) with D = rowsum(dO ∘ O) = rowsum(P ∘ dP),
    dQ = τ dS K,  dK = τ dSᵀ Q.
The forward keeps what these need: naive attention keeps P (N x N_kv per head); FlashAttention keeps
O and the row log-sum-exp (LSE; l and m for flash1) and recomputes S and P tile by tile.

Kernels (the launches of kernels/backward.py and kernels/naive_backward.py):
- naive: Algorithm 3 of the FlashAttention paper, one launch per line: "dv" (dV = Pᵀ dO, one program per
  K/V block), "dp" (dP = dO Vᵀ, one program per tile, written to HBM), "ds" (dS = P ∘ (dP - rowsum(P ∘ dP)),
  one program per row; the row is read once when its P and dP fit in SRAM, else streamed twice), "dq"
  (dQ = τ dS K, one program per Q block), "dk" (dK = τ dSᵀ Q, one program per K/V block). D comes from
  P ∘ dP, so naive attention needs no O.
- flash1: Algorithm 4 of the FlashAttention paper, line by line, one kernel: K/V blocks outer, Q blocks
  inner; every inner step reads Q_i, O_i, dO_i, dQ_i, l_i, m_i and writes dQ_i back. dQ is an fp32
  accumulator in HBM (read-modify-written Tc times, as the forward's O is), so O, dO and dQ are fp32.
  dQ, dK, dV are zeroed in HBM first (line 5); K/V blocks no query sees are skipped.
- flash2: three kernels. "preprocess" writes D = rowsum(dO ∘ O). "dkdv": one program per K/V block holds
  K_j, V_j and accumulates dK_j, dV_j on chip while Q_i, dO_i, LSE_i, D_i stream past. "dq": one program
  per Q block holds Q_i, dO_i and accumulates dQ_i while K_j, V_j stream past, recomputing S and dP a
  second time. The other choice is FlashAttention-2's own: fp32 atomic adds of τ dS_ij K_j into a dQ
  accumulator from the dK/dV kernel, one read and one write of Br*d fp32 per tile, no second recompute.
  We take the separate kernel, as Triton's fused-attention tutorial does: the result is deterministic
  (atomic adds land in a different order every run), it needs no fp32 dQ buffer and conversion pass,
  and every byte it moves is a tl.load or tl.store that trace_io counts.
  Tiles: the block a program holds for its whole life has Br == block_q rows and the block streamed past
  it has Bc == block_kv rows, in both kernels (the tutorial's BLOCK_N1 = BLOCK_M2 = 128, BLOCK_M1 =
  BLOCK_N2 = 32): so the dK/dV kernel walks the transposed tiling, K/V blocks of Br rows, Q blocks of Bc.
- Grouped-query attention: each dK/dV-type program (naive's dv and dk, flash2's dkdv, flash1's single
  program) serves one K/V head and loops over the query heads of its group, so dK and dV are summed over
  the group on chip and written once per K/V head; K_j and V_j are read once per K/V head there.
- Causal is torch's is_causal=True (top-left); fully masked tiles are skipped, as in the forward. A K/V
  block no query sees (N_kv > N) is not read, and its dK, dV are written as zeros.

Counts are integers, {(kernel, tensor): (read_bytes, write_bytes)} over all batches and heads, written
as sums over Q blocks i (and K/V blocks j) of a Tiling: n_i rows, J_i K/V blocks visited, k_i K/V rows
in them (_sums below is the one place the per-block arrays are touched).
"""
import math
import numbers
from dataclasses import dataclass, replace
from functools import cached_property

from .config import Shape
from .hardware import DTYPE_BYTES, STATS_BYTES, get_gpu
from .tiling import Tiling

ALGOS = ("naive", "flash1", "flash2")
KERNELS = {"naive": ("dv", "dp", "ds", "dq", "dk"), "flash1": ("flash1_bwd",), "flash2": ("preprocess", "dkdv", "dq")}
TENSORS = ("Q", "K", "V", "O", "dO", "P", "dP", "dS", "LSE", "l", "m", "D", "dQ", "dK", "dV")
MIN_BLOCK = 16
# Non-matmul FLOPs per score computed: scale, subtract LSE (or m), exp, subtract D, multiply by P;
# flash1 also multiplies by 1/l_i. naive's ds: P ∘ dP, its row sum, dP - D, times P.
PER_SCORE = {"naive": 4, "flash1": 6, "flash2": 5}
# flash1, per query row per step: 1/l_i, and per element of the row D_i = rowsum(dO_i ∘ O_i) again (2)
# and dQ_i + τ (dS K)_i (2).
FLASH1_PER_ROW_STEP, FLASH1_PER_ROW_ELEMENT_STEP = 1, 4


@dataclass(frozen=True)
class Backward(Shape):

    @cached_property
    def tiling(self):
        """Q blocks of Br rows, K/V blocks of Bc rows: every kernel's tiles but flash2's dK/dV kernel's."""
        return Tiling(self.seq, self.seq_kv, self.block_q, self.block_kv, self.causal)

    @cached_property
    def kv_tiling(self):
        """flash2's dK/dV kernel holds K/V blocks of Br rows and streams Q blocks of Bc rows."""
        if self.algo != "flash2":
            return self.tiling
        return Tiling(self.seq, self.seq_kv, self.block_kv, self.block_q, self.causal)

    def tensor_bytes(self, tensor):
        if tensor in ("LSE", "l", "m", "D"):
            return STATS_BYTES
        if self.algo == "flash1" and tensor in ("O", "dO", "dQ"):
            return STATS_BYTES  # the forward's fp32 O, its gradient, and the fp32 dQ accumulator
        return self.itemsize

    @property
    def ds_fits(self):
        """naive's ds kernel holds a row of P and of dP in SRAM, or streams them in Bc chunks, twice."""
        return 2 * self.seq_kv * self.itemsize <= self.gpu.sram_bytes_per_block

    def sram_bytes(self, kernel):
        """Shared memory one program stages: the tiles it loads (fp32 scores and accumulators are registers)."""
        br, bc, d, e, f = self.block_q, self.block_kv, self.head_dim, self.itemsize, STATS_BYTES
        o = self.tensor_bytes("O")
        if self.algo == "flash1":  # K_j, V_j; Q_i, O_i, dO_i, dQ_i, l_i, m_i
            return 2 * bc * d * e + br * d * (e + 2 * o + STATS_BYTES) + 2 * br * f
        return {"dv": br * bc * e + br * d * e, "dk": br * bc * e + br * d * e,  # P_ij or dS_ij; dO_i or Q_i
                "dp": br * d * e + bc * d * e,  # dO_i, V_j
                "ds": 2 * (self.seq_kv if self.ds_fits else bc) * e,  # P and dP: a row, or a chunk of each
                "dq": br * bc * e + bc * d * e if self.algo == "naive"  # dS_ij, K_j
                else br * d * (e + o) + 2 * br * f + 2 * bc * d * e,  # Q_i, dO_i, LSE_i, D_i; K_j, V_j
                "preprocess": 2 * br * d * o,  # O_i, dO_i
                "dkdv": 2 * br * d * e + bc * d * (e + o) + 2 * bc * f}[kernel]  # K_j, V_j; Q_i, dO_i, LSE_i, D_i


def _pow2_floor(x):
    return 1 << (int(x).bit_length() - 1)


def default_blocks(algo, gpu, head_dim, dtype):
    """(block_q, block_kv) for the backward. flash1: the paper's Bc = ceil(M / 4d), Br = min(Bc, d) for an
    SRAM of M elements; flash2: Br = 128 held, Bc = 32 streamed (Triton's tutorial); naive: 128 x 128, as
    its forward. The larger is halved until every kernel fits (never below MIN_BLOCK)."""
    gpu, e = get_gpu(gpu), DTYPE_BYTES[dtype]
    big = _pow2_floor(math.ceil(gpu.sram_bytes_per_block / e / (4 * head_dim)))
    br, bc = {"flash1": (_pow2_floor(min(big, head_dim)), big), "flash2": (128, 32)}.get(algo, (128, 128))
    br, bc = max(MIN_BLOCK, br), max(MIN_BLOCK, bc)
    while max(br, bc) > MIN_BLOCK:
        probe = Backward(algo, 1, 1, 1, 1, 1, head_dim, br, bc, False, dtype, gpu)
        if all(probe.sram_bytes(k) <= gpu.sram_bytes_per_block for k in KERNELS[algo]):
            break
        br, bc = (br // 2, bc) if br > bc else (br, bc // 2)
    return br, bc


def _positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
            raise ValueError(f"{name}={value!r} must be a positive integer")
    return [int(v) for v in values.values()]


def config(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, block_q=None, block_kv=None,
           causal=False, dtype="fp16", gpu="A100-40GB"):
    """The backward of one attention call, checked once; every error is one line naming the value."""
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} has no backward model: choose one of {', '.join(ALGOS)}")
    if dtype == "fp8":
        raise ValueError("dtype='fp8': an fp8 forward has no backward here (train in fp16, bf16 or fp32)")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r} is not supported: choose one of fp16, bf16, fp32")
    gpu = get_gpu(gpu)
    gpu.matmul_flops_per_s(dtype)  # raises for a dtype the GPU's tensor cores lack
    kv_heads, seq_kv = heads if kv_heads is None else kv_heads, seq if seq_kv is None else seq_kv
    seq, head_dim, heads, batch, kv_heads, seq_kv = _positive(seq=seq, head_dim=head_dim, heads=heads, batch=batch,
                                                              kv_heads=kv_heads, seq_kv=seq_kv)
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    br, bc = default_blocks(algo, gpu, head_dim, dtype)
    block_q, block_kv = br if block_q is None else block_q, bc if block_kv is None else block_kv
    block_q, block_kv = _positive(block_q=block_q, block_kv=block_kv)
    cfg = Backward(algo, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv, bool(causal), dtype, gpu)
    for kernel in KERNELS[algo]:
        if cfg.sram_bytes(kernel) > gpu.sram_bytes_per_block:
            raise ValueError(f"block_q={block_q}, block_kv={block_kv}, head_dim={head_dim} ({dtype}) need "
                             f"{cfg.sram_bytes(kernel):,} B of SRAM in the backward's {kernel} kernel; "
                             f"{gpu.name} has {gpu.sram_bytes_per_block:,} B per thread block")
    return cfg


def _sums(t):
    """Per (batch, head) sums over the Q blocks i of Tiling t."""
    return {"row_visits": t.row_visits,  # Σ_i n_i J_i: query rows times the K/V blocks they meet
            "keys_read": t.keys_read,  # Σ_i k_i: K/V rows loaded, once per Q block
            "tile_elements": t.tile_elements,  # Σ_i n_i k_i: scores in the visited tiles
            "kv_rows_seen": t.max_keys}  # K/V rows in the blocks some Q block visits (the last visits most)


def _total(cfg, per_q, per_kv):
    """Sum per-(batch, query head) and per-(batch, K/V head) entries over all heads."""
    out = {}
    for table, copies in ((per_q, cfg.bh), (per_kv, cfg.batch * cfg.kv_heads)):
        for key, values in table.items():
            old = out.get(key, (0,) * len(values))
            out[key] = tuple(a + b * copies for a, b in zip(old, values))
    return out


def count(cfg):
    """{(kernel, tensor): (read_bytes, write_bytes)} of the backward, over all batches and heads."""
    d, e, o, f, dq = cfg.head_dim, cfg.itemsize, cfg.tensor_bytes("O"), STATS_BYTES, cfg.tensor_bytes("dQ")
    n, nk = cfg.seq, cfg.seq_kv
    s = _sums(cfg.tiling)
    rv, kr, te, seen = s["row_visits"], s["keys_read"], s["tile_elements"], s["kv_rows_seen"]
    if cfg.algo == "naive":
        passes = 1 if cfg.ds_fits else 2
        per_q = {("dv", "P"): (te * e, 0), ("dv", "dO"): (rv * d * e, 0),  # per tile: read Br*Bc, Br*d
                 ("dp", "dO"): (rv * d * e, 0), ("dp", "V"): (kr * d * e, 0),  # per tile: read Br*d, Bc*d
                 ("dp", "dP"): (0, te * e),  # write N*N_kv (the visited tiles)
                 ("ds", "P"): (passes * te * e, 0), ("ds", "dP"): (passes * te * e, 0),  # each row once or twice
                 ("ds", "dS"): (0, te * e),
                 ("dq", "dS"): (te * e, 0), ("dq", "K"): (kr * d * e, 0), ("dq", "dQ"): (0, n * d * e),
                 ("dk", "dS"): (te * e, 0), ("dk", "Q"): (rv * d * e, 0)}
        per_kv = {("dv", "dV"): (0, nk * d * e), ("dk", "dK"): (0, nk * d * e)}  # every K/V block, zeros unseen
    elif cfg.algo == "flash1":
        k = "flash1_bwd"
        per_q = {(k, "Q"): (rv * d * e, 0), (k, "O"): (rv * d * o, 0), (k, "dO"): (rv * d * o, 0),  # line 10
                 (k, "dQ"): (rv * d * dq, n * d * dq + rv * d * dq),  # line 5: zero; line 10: read, line 21: write
                 (k, "l"): (rv * f, 0), (k, "m"): (rv * f, 0)}
        per_kv = {(k, "K"): (seen * d * e, 0), (k, "V"): (seen * d * e, 0),  # line 7: each K_j, V_j once
                  (k, "dK"): (0, nk * d * e + seen * d * e), (k, "dV"): (0, nk * d * e + seen * d * e)}  # 5, 24
    else:
        s2 = _sums(cfg.kv_tiling)
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
    return _total(cfg, per_q, per_kv)


def first_touch(cfg):
    """{(kernel, tensor): (read_bytes, write_bytes)}: each tensor's bytes a kernel touches at least once,
    what reaches DRAM when L2 catches every re-read (rule 1 of gpusim/l2.py). K and V count once per K/V
    head, not once per query head."""
    d, e = cfg.head_dim, cfg.itemsize
    n, nk, te = cfg.seq, cfg.seq_kv, cfg.tiling.tile_elements
    rows = {"Q": n * d, "O": n * d, "dO": n * d, "dQ": n * d, "LSE": n, "l": n, "m": n, "D": n,
            "P": te, "dP": te, "dS": te, "dK": nk * d, "dV": nk * d}
    per_q, per_kv = {}, {}
    for (kernel, tensor), (read, write) in count(cfg).items():
        if tensor in ("K", "V"):
            seen = _sums(cfg.kv_tiling if kernel == "dkdv" else cfg.tiling)["kv_rows_seen"]
            per_kv[(kernel, tensor)] = (seen * d * e, 0)
        else:
            size = rows[tensor] * cfg.tensor_bytes(tensor)
            table = per_kv if tensor in ("dK", "dV") else per_q
            table[(kernel, tensor)] = (size if read else 0, size if write else 0)
    return _total(cfg, per_q, per_kv)


def flops(cfg):
    """{kernel: (matmul_flops, other_flops, exps)} over all batches and heads; other_flops includes the
    exps. naive runs 4 matmuls per score (dV, dP, dQ, dK), flash1 5 (S recomputed, then the four),
    flash2 7 (its dQ kernel recomputes S and dP). The τ of dQ and dK is applied once per element written."""
    d, n, nk = cfg.head_dim, cfg.seq, cfg.seq_kv
    te, per_score = cfg.tiling.tile_elements, PER_SCORE[cfg.algo]
    if cfg.algo == "naive":
        mm = (2 * d * te, 0, 0)
        per_q = {"dv": mm, "dp": mm, "ds": (0, per_score * te, 0), "dq": (2 * d * te, n * d, 0), "dk": mm}
        per_kv = {"dk": (0, nk * d, 0)}
    elif cfg.algo == "flash1":
        rv = _sums(cfg.tiling)["row_visits"]
        per_row = FLASH1_PER_ROW_STEP + FLASH1_PER_ROW_ELEMENT_STEP * d
        per_q = {"flash1_bwd": (10 * d * te, per_score * te + per_row * rv, te)}
        per_kv = {"flash1_bwd": (0, nk * d, 0)}
    else:
        te2 = cfg.kv_tiling.tile_elements
        per_q = {"preprocess": (0, 2 * n * d, 0), "dkdv": (8 * d * te2, per_score * te2, te2),
                 "dq": (6 * d * te, per_score * te + n * d, te)}
        per_kv = {"dkdv": (0, nk * d, 0)}
    out = _total(cfg, per_q, per_kv)
    return {kernel: out[kernel] for kernel in KERNELS[cfg.algo]}


def nominal_flops(batch, heads, seq, head_dim, causal, seq_kv=None):
    """The FlashAttention-2 paper's convention for TFLOP/s: the backward is 2.5 times the forward's
    4 B H N N_kv d (its two matmuls), halved when causal: five matmuls, S recomputed and dV, dP, dQ, dK."""
    return 2.5 * 4 * batch * heads * seq * (seq if seq_kv is None else seq_kv) * head_dim / (2 if causal else 1)


def saved_bytes(cfg):
    """{tensor: bytes} the forward keeps for the backward: Q, K, V and P (naive), or O and the LSE
    (flash2), or O, l and m (flash1)."""
    q = cfg.bh * cfg.seq * cfg.head_dim * cfg.itemsize
    kv = cfg.batch * cfg.kv_heads * cfg.seq_kv * cfg.head_dim * cfg.itemsize
    out = {"Q": q, "K": kv, "V": kv}
    if cfg.algo == "naive":
        return out | {"P": cfg.bh * cfg.seq * cfg.seq_kv * cfg.itemsize}
    stats = ("l", "m") if cfg.algo == "flash1" else ("LSE",)
    return out | {"O": cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")} | {s: cfg.bh * cfg.seq * STATS_BYTES
                                                                                   for s in stats}


def footprint(cfg):
    """[(moment, {tensor: bytes})]: what the project's kernels hold in HBM at the fullest moments of one
    training step of one attention call (inputs, the forward's tensors, dO, intermediates, gradients).
    naive frees S after the softmax and dP after ds; S, P, dP, dS are allocated whole even when causal."""
    saved = saved_bytes(cfg)
    q, kv, nn = saved["Q"], saved["K"], cfg.bh * cfg.seq * cfg.seq_kv * cfg.itemsize
    o = cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("O")
    grads = {"dO": o, "dQ": cfg.bh * cfg.seq * cfg.head_dim * cfg.tensor_bytes("dQ"), "dK": kv, "dV": kv}
    if cfg.algo == "naive":
        inputs = {"Q": q, "K": kv, "V": kv}
        return [("forward: softmax", inputs | {"S": nn, "P": nn}),
                ("forward: O = P V", inputs | {"P": nn, "O": o}),
                ("backward: ds", inputs | {"P": nn, "O": o, "dO": o, "dV": kv, "dP": nn, "dS": nn}),
                ("backward: dq, dk", inputs | {"P": nn, "O": o, "dS": nn} | grads)]
    extra = {"D": cfg.bh * cfg.seq * STATS_BYTES} if cfg.algo == "flash2" else {}
    return [("forward", saved), ("backward", saved | grads | extra)]


def peak_bytes(cfg):
    return max(sum(live.values()) for _, live in footprint(cfg))


def model_memory(algo, *, layers, heads, head_dim, batch, seq, dtype="fp16", kv_heads=None, causal=False,
                 gpu="A100-40GB"):
    """Attention's share of a model's training memory (no weights, optimizer state or MLP activations):
    every layer keeps what its forward saved until its backward; one layer's backward is running at a
    time, on top of that. {saved_per_layer, saved_per_model, peak_bytes, fits}."""
    cfg = config(algo, seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, causal=causal,
                 dtype=dtype, gpu=gpu)
    saved = sum(saved_bytes(cfg).values())
    peak = layers * saved + peak_bytes(cfg) - saved
    return {"saved_per_layer": saved, "saved_per_model": layers * saved, "peak_bytes": peak,
            "fits": peak <= cfg.gpu.hbm_bytes}


def max_trainable_seq(algo, *, layers, heads, head_dim, batch, gpu="A100-40GB", **shape):
    """The longest sequence whose attention training memory (model_memory) fits in the GPU's HBM; 0 if none."""
    def fits(seq):
        return model_memory(algo, layers=layers, heads=heads, head_dim=head_dim, batch=batch, seq=seq, gpu=gpu,
                            **shape)["fits"]
    lo, hi = 0, 1
    while fits(hi):  # lo fits (or is 0), hi does not
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def theorem5(seq, head_dim, sram_elements):
    """Theorem 5 of the FlashAttention paper, in elements moved by the backward: standard attention
    Θ(Nd + N²), FlashAttention Θ(N²d²/M), the forward's orders (Theorem 2). Constants 1."""
    return {"naive": seq * head_dim + seq**2, "flash": seq**2 * head_dim**2 / sram_elements}


def theorem5_counts(seq, head_dim, sram_bytes, gpu="H100-SXM", dtype="fp16"):
    """Theorem 5 shown by the counts: for each SRAM size (bytes per thread block), flash1's backward bytes
    with the paper's blocks for that SRAM, times M / (N² d²) (flat if the theorem holds), and the bytes
    naive attention's backward moves through its N x N matrices (P, dP, dS), which no SRAM changes."""
    rows = []
    for size in sram_bytes:
        g = replace(get_gpu(gpu), name=f"{size // 1024} KiB", sram_bytes_per_block=size, sram_bytes_per_sm=size)
        m = size // DTYPE_BYTES[dtype]
        flash = sum(r + w for r, w in count(config("flash1", seq=seq, head_dim=head_dim, dtype=dtype, gpu=g)).values())
        naive = count(config("naive", seq=seq, head_dim=head_dim, dtype=dtype, gpu=g))
        rows.append({"sram_bytes": size, "sram_elements": m, "flash_bytes": flash,
                     "flash_ratio": flash * m / (seq**2 * head_dim**2),
                     "naive_nxn_bytes": sum(r + w for (_, t), (r, w) in naive.items() if t in ("P", "dP", "dS"))})
    return rows

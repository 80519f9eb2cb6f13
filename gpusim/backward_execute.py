"""Execute mode of the backward: the kernels of gpusim/backward.py walked tile by tile on NumPy arrays,
every HBM access through a counted Memory, beside the float64 reference gradients they must equal.

Arrays are (B, H, N, d) for q and do, (B, H_kv, N_kv, d) for k and v. The forward's saved tensors (P, or
O and the LSE, or O, l and m) are what the forward leaves in HBM; without them they are computed here in
float64 (forward_saved). Arithmetic runs in the arrays' precision (at least float32).
"""
from dataclasses import dataclass
from itertools import product

import numpy as np

from . import backward
from .memory import Memory

EXECUTE_STEP_LIMIT = 2_000_000  # tiles (and rows) walked in Python
EXECUTE_ELEMENT_LIMIT = 1 << 27  # elements of naive attention's P, dP and dS held in NumPy


def _scores(q, k, causal):
    """τ q kᵀ in float64 with K/V heads repeated over their groups, masked keys at -inf; and the repeated k."""
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:  # top-left aligned, as torch's is_causal: row r sees keys 0..r
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    return s, k


def attention_grad_reference(q, k, v, do, *, causal=False):
    """(dq, dk, dv) of softmax(q kᵀ / sqrt(d)) v for the output gradient do, in float64, whole matrices at
    once: dV = Pᵀ dO, dS = P ∘ (dO Vᵀ - rowsum(dO ∘ O)), dQ = τ dS K, dK = τ dSᵀ Q; dK and dV summed over
    the query heads that share a K/V head."""
    q, k, v, do = (np.asarray(x, dtype=np.float64) for x in (q, k, v, do))
    b, h_kv, n_kv, d = k.shape
    s, k_rep = _scores(q, k, causal)
    v_rep = np.repeat(v, q.shape[1] // h_kv, axis=1)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = p @ v_rep
    ds = p * (do @ np.swapaxes(v_rep, -1, -2) - (do * o).sum(axis=-1, keepdims=True))
    dq = ds @ k_rep / np.sqrt(d)
    dk = (np.swapaxes(ds, -1, -2) @ q / np.sqrt(d)).reshape(b, h_kv, -1, n_kv, d).sum(axis=2)
    dv = (np.swapaxes(p, -1, -2) @ do).reshape(b, h_kv, -1, n_kv, d).sum(axis=2)
    return dq, dk, dv


def forward_saved(algo, q, k, v, causal):
    """What the forward leaves in HBM for the backward, in float64: {"P"} (naive), {"O", "LSE"} (flash2),
    {"O", "l", "m"} (flash1). P is 0 at masked keys."""
    s, _ = _scores(np.asarray(q, np.float64), np.asarray(k, np.float64), causal)
    m = s.max(axis=-1)
    l = np.exp(s - m[..., None]).sum(axis=-1)
    p = np.exp(s - m[..., None]) / l[..., None]
    if algo == "naive":
        return {"P": p}
    o = p @ np.repeat(np.asarray(v, np.float64), q.shape[1] // k.shape[1], axis=1)
    return {"O": o, "l": l, "m": m} if algo == "flash1" else {"O": o, "LSE": m + np.log(l)}


def check_executable(cfg):
    steps = cfg.bh * (cfg.tiling.tiles + cfg.kv_tiling.tiles + (cfg.seq if cfg.algo == "naive" else 0))
    if steps > EXECUTE_STEP_LIMIT:
        raise ValueError(f"the backward's execute mode would walk {steps:,} steps in Python (limit "
                         f"{EXECUTE_STEP_LIMIT:,}): use fewer heads or a shorter sequence, or count mode")
    if cfg.algo == "naive" and cfg.bh * cfg.seq * cfg.seq_kv > EXECUTE_ELEMENT_LIMIT:
        raise ValueError(f"execute mode holds naive attention's P, dP and dS in NumPy: "
                         f"{cfg.bh * cfg.seq * cfg.seq_kv:,} elements each (limit {EXECUTE_ELEMENT_LIMIT:,}): "
                         f"use count mode")


def execute(cfg, q, k, v, do, saved=None, trace=False):
    """Run cfg.algo's backward; return (dq, dk, dv, counted Memory)."""
    work = np.result_type(q.dtype, k.dtype, v.dtype, do.dtype, np.float32)
    saved = forward_saved(cfg.algo, q, k, v, cfg.causal) if saved is None else saved
    b, h, n, nk, d = cfg.batch, cfg.heads, cfg.seq, cfg.seq_kv, cfg.head_dim
    tensors = {"Q": q, "K": k, "V": v, "dO": do} | saved
    tensors = {name: np.asarray(x).astype(work) for name, x in tensors.items()}
    tensors |= {"dQ": np.zeros((b, h, n, d), work), "dK": np.zeros(k.shape, work), "dV": np.zeros(k.shape, work)}
    if cfg.algo == "naive":
        tensors |= {"dP": np.zeros((b, h, n, nk), work), "dS": np.zeros((b, h, n, nk), work)}
    elif cfg.algo == "flash2":
        tensors |= {"D": np.zeros((b, h, n), work)}
    mem = Memory(tensors, {name: cfg.tensor_bytes(name) for name in tensors}, trace)
    {"naive": _naive, "flash1": _flash1, "flash2": _flash2}[cfg.algo](mem, cfg)
    return tensors["dQ"], tensors["dK"], tensors["dV"], mem


def _group(cfg, hk):
    """The query heads that share K/V head hk."""
    return range(hk * cfg.group, (hk + 1) * cfg.group)


def _naive(mem, cfg):
    """Algorithm 3 of the FlashAttention paper, one kernel per line, each a grid of tiled programs."""
    t, scale = cfg.tiling, cfg.head_dim**-0.5
    _summed_over_queries(mem, cfg, "dv", "P", "dO", "dV", 1.0)  # line 1: dV = Pᵀ dO
    for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # line 2: dP = dO Vᵀ
        r = slice(*t.q_rows(i))
        for j in t.kv_blocks(i):  # one program per visited tile
            c = slice(*t.kv_rows(j))
            do_i = mem.load("dp", "dO", (b, h, r))  # read Br*d
            v_j = mem.load("dp", "V", (b, h // cfg.group, c))  # read Bc*d
            mem.store("dp", "dP", (b, h, r, c), do_i @ v_j.T)  # write Br*Bc
            mem.step("dp", (b, h, i, j), (i, j), cfg.sram_bytes("dp"))
    for b, h, row in product(range(cfg.batch), range(cfg.heads), range(cfg.seq)):  # line 3: dS, one row each
        _ds_row(mem, cfg, b, h, row, t.keys_of(row // cfg.block_q))
    for b, h, i in product(range(cfg.batch), range(cfg.heads), range(t.n_q_blocks)):  # line 4: dQ = τ dS K
        r = slice(*t.q_rows(i))
        acc = 0.0
        for j in t.kv_blocks(i):
            c = slice(*t.kv_rows(j))
            ds_ij = mem.load("dq", "dS", (b, h, r, c))  # read Br*Bc
            acc = acc + ds_ij @ mem.load("dq", "K", (b, h // cfg.group, c))  # read Bc*d
            mem.step("dq", (b, h, i), (i, j), cfg.sram_bytes("dq"))
        mem.store("dq", "dQ", (b, h, r), acc * scale)  # write Br*d
        mem.step("dq", (b, h, i), (i, None), cfg.sram_bytes("dq"))
    _summed_over_queries(mem, cfg, "dk", "dS", "Q", "dK", scale)  # line 5: dK = τ dSᵀ Q


def _summed_over_queries(mem, cfg, kernel, a, x, out, scale):
    """out_j = scale Σ_i a_ijᵀ x_i, one program per K/V head and block j, over the group's query heads and
    the Q blocks that see block j (naive's dv and dk kernels)."""
    t = cfg.tiling
    for b, hk, j in product(range(cfg.batch), range(cfg.kv_heads), range(t.n_kv_blocks)):
        c = slice(*t.kv_rows(j))
        acc = np.zeros((c.stop - c.start, cfg.head_dim), mem.tensors[out].dtype)
        for h, i in product(_group(cfg, hk), t.q_blocks(j)):
            r = slice(*t.q_rows(i))
            a_ij = mem.load(kernel, a, (b, h, r, c))  # read Br*Bc
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


def _flash1(mem, cfg):
    """Algorithm 4 of the FlashAttention paper, line by line: one program per (batch, K/V head), K/V blocks
    outer, the group's query heads and their Q blocks inner; dQ_i read-modify-written in HBM every step."""
    t, scale, K = cfg.tiling, cfg.head_dim**-0.5, "flash1_bwd"
    for b, hk in product(range(cfg.batch), range(cfg.kv_heads)):
        for h in _group(cfg, hk):
            mem.store(K, "dQ", (b, h), 0.0)  # line 5: write N*d (fp32)
        mem.store(K, "dK", (b, hk), 0.0)  # line 5: write N_kv*d
        mem.store(K, "dV", (b, hk), 0.0)  # line 5: write N_kv*d
        mem.step(K, (b, hk), (None, None), 0)
        for j in range(t.n_kv_blocks):  # line 6
            q_blocks = t.q_blocks(j)
            if not q_blocks:  # causal: no query sees these keys
                continue
            c = slice(*t.kv_rows(j))
            k_j = mem.load(K, "K", (b, hk, c))  # line 7: read Bc*d
            v_j = mem.load(K, "V", (b, hk, c))  # line 7: read Bc*d
            dk_j, dv_j = np.zeros_like(k_j), np.zeros_like(v_j)  # line 8, on chip
            for h, i in product(_group(cfg, hk), q_blocks):  # line 9
                r = slice(*t.q_rows(i))
                q_i, o_i, do_i, dq_i = (mem.load(K, x, (b, h, r)) for x in ("Q", "O", "dO", "dQ"))  # line 10: Br*d each
                l_i, m_i = mem.load(K, "l", (b, h, r)), mem.load(K, "m", (b, h, r))  # line 10: read Br each
                p_ij = np.exp(_tile_scores(q_i, k_j, t.keep(r, c), scale) - m_i[:, None]) / l_i[:, None]  # 11-13
                dv_j += p_ij.T @ do_i  # line 16
                dp_ij = do_i @ v_j.T  # line 17
                ds_ij = p_ij * (dp_ij - (do_i * o_i).sum(axis=1)[:, None])  # lines 19-20: D_i, dS_ij
                mem.store(K, "dQ", (b, h, r), dq_i + scale * ds_ij @ k_j)  # line 21: write Br*d (fp32)
                dk_j += scale * ds_ij.T @ q_i  # line 22
                mem.step(K, (b, hk), (i, j), cfg.sram_bytes(K))
            mem.store(K, "dK", (b, hk, c), dk_j)  # line 24: write Bc*d
            mem.store(K, "dV", (b, hk, c), dv_j)  # line 24: write Bc*d
            mem.step(K, (b, hk), (None, j), cfg.sram_bytes(K))


def _flash2(mem, cfg):
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
        for h, i in product(_group(cfg, hk), q_blocks):
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


def _query_rows(mem, kernel, b, h, r):
    return [mem.load(kernel, x, (b, h, r)) for x in ("Q", "dO", "LSE", "D")]


def _recompute(q_i, do_i, lse_i, d_i, k_j, v_j, keep, scale):
    """P_ij = exp(S_ij - LSE_i), recomputed from the LSE the forward saved; dS_ij = P_ij ∘ (dO_i V_jᵀ - D_i)."""
    p_ij = np.exp(_tile_scores(q_i, k_j, keep, scale) - lse_i[:, None])
    return p_ij, p_ij * (do_i @ v_j.T - d_i[:, None])


def _tile_scores(q_i, k_j, keep, scale):
    """S_ij = τ Q_i K_jᵀ on chip, -inf where the causal mask hides a key."""
    s_ij = q_i @ k_j.T * scale
    return s_ij if keep is None else np.where(keep, s_ij, -np.inf)


@dataclass(frozen=True)
class BackwardResult:
    config: backward.Backward
    counts: dict  # {(kernel, tensor): (read_bytes, write_bytes)}
    flops: dict  # {kernel: (matmul_flops, other_flops, exps)}
    grads: tuple | None = None  # (dq, dk, dv) in execute mode
    trace: tuple | None = None  # memory.Step, in schedule order

    @property
    def by_tensor(self):
        """{tensor: {"read_bytes", "write_bytes"}} summed over kernels, in TENSORS order."""
        out = {t: {"read_bytes": 0, "write_bytes": 0} for t in backward.TENSORS if any(k[1] == t for k in self.counts)}
        for (_, tensor), (r, w) in self.counts.items():
            out[tensor]["read_bytes"] += r
            out[tensor]["write_bytes"] += w
        return out

    @property
    def hbm_bytes(self):
        return sum(r + w for r, w in self.counts.values())


def simulate_backward(algo, *, q=None, k=None, v=None, do=None, trace=False, **shape):
    """Count (shape keywords as backward.config) or, given q, k, v and do, execute the backward."""
    arrays = [x for x in (q, k, v, do) if x is not None]
    if arrays and do is None:
        raise ValueError("the backward's execute mode needs do (the output's gradient, shaped like q) as well as "
                         "q, k, v")
    if arrays and len(arrays) < 4:
        raise ValueError("the backward's execute mode needs all of q, k, v and do")
    if arrays:
        q, k, v, do = (np.asarray(x) for x in arrays)
        if do.shape != q.shape or q.ndim != 4 or k.shape != v.shape or k.ndim != 4 or q.shape[::3] != k.shape[::3]:
            raise ValueError(f"q {q.shape}, k {k.shape}, v {v.shape}, do {do.shape}: expected q and do (B, H, N, d), "
                             f"k and v (B, H_kv, N_kv, d)")
        if not all(np.issubdtype(x.dtype, np.floating) and np.isfinite(x).all() for x in (q, k, v, do)):
            raise ValueError("q, k, v and do must be finite floating-point arrays")
        inferred = dict(batch=q.shape[0], heads=q.shape[1], seq=q.shape[2], head_dim=q.shape[3], kv_heads=k.shape[1],
                        seq_kv=k.shape[2])
        for name, value in shape.items():
            if name in inferred and value is not None and value != inferred[name]:
                raise ValueError(f"{name}={value} does not match the arrays, which have {name}={inferred[name]}")
        shape |= inferred
    cfg = backward.config(algo, **shape)
    if not arrays:
        return BackwardResult(cfg, backward.count(cfg), backward.flops(cfg))
    check_executable(cfg)
    dq, dk, dv, mem = execute(cfg, q, k, v, do, trace=trace)
    counts = {key: tuple(rw) for key, rw in mem.counts.items()}
    return BackwardResult(cfg, counts, backward.flops(cfg), (dq, dk, dv), tuple(mem.steps) if trace else None)

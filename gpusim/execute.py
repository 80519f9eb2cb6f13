"""Execute mode: a pass's tile walk (gpusim/passes/) run on NumPy arrays, every HBM access going
through a counted Memory, forward (execute) and backward (execute_backward). The float64 references
beside them take the same arrays: the output (reference_attention), the gradients
(attention_grad_reference) and what a forward leaves in HBM for its backward (forward_saved).

Arrays are shaped (B, H, N, d) as in torch's scaled_dot_product_attention; K and V may have fewer heads
(grouped-query attention). The arithmetic runs in the arrays' precision (at least float32); the modeled
`dtype` only sets how many bytes each element costs.
"""
import numpy as np

from .memory import Memory
from .shape import check_causal, check_groups

EXECUTE_STEP_LIMIT = 2_000_000  # tiles (and rows) execute mode walks in Python
EXECUTE_ELEMENT_LIMIT = 1 << 27  # elements of each N x N_kv matrix naive attention holds whole in NumPy (1 GiB)
# What execute mode costs, measured on the project's 2-core development machine (flash2 with trace=True):
# 4,160 steps of 16 x 16 tiles at d = 16 in 65 ms; 128 x 128 tiles at d = 64 and 128, 14-16 GFLOP/s of float64
# matmuls. Execute mode refuses what it estimates to take longer than EXECUTE_SECONDS_LIMIT, and reports its
# progress on stderr when it estimates more than PROGRESS_AFTER_S.
STEP_S = 16e-6
NUMPY_FLOPS_PER_S = 15e9
EXECUTE_SECONDS_LIMIT = 120
PROGRESS_AFTER_S = 10


def reference_attention(q, k, v, *, causal=False, causal_align="top_left"):
    """softmax(q kᵀ / sqrt(d)) v in float64, the whole N x N_kv matrix at once. causal: row r sees keys
    0..r (top_left, torch's is_causal) or 0..r + N_kv - N (bottom_right)."""
    q, k, v, causal = _reference_args(q, k, v, causal, causal_align)
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, N, N_kv)
    if causal:
        n, n_kv = s.shape[-2:]
        s = np.where(np.tri(n, n_kv, n_kv - n if causal_align == "bottom_right" else 0, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _reference_args(q, k, v, causal, causal_align="top_left"):
    """q, k, v in float64 and causal as a bool, checked as simulate checks its arrays: one line for each fault."""
    arrays = arrays_of(q, k, v)
    shape = shape_of(arrays)
    check_groups(shape["heads"], shape["kv_heads"])
    causal = check_causal(causal, causal_align, shape["seq"], shape["seq_kv"])
    return (*(x.astype(np.float64) for x in arrays), causal)


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
    q, k, v, causal = _reference_args(q, k, v, causal)
    do = floats("do", do).astype(np.float64)
    if do.shape != q.shape:
        raise ValueError(f"do has shape {do.shape}: expected q's, {q.shape}")
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


def forward_saved(saved, q, k, v, causal):
    """What the forward leaves in HBM for the backward, in float64: `saved` of P (naive), O and the LSE
    (flash2), or O, l and m (flash1). P is 0 at masked keys."""
    s, _ = _scores(np.asarray(q, np.float64), np.asarray(k, np.float64), causal)
    m = s.max(axis=-1)
    l = np.exp(s - m[..., None]).sum(axis=-1)
    p = np.exp(s - m[..., None]) / l[..., None]
    o = p @ np.repeat(np.asarray(v, np.float64), q.shape[1] // k.shape[1], axis=1)
    tensors = {"P": p, "O": o, "l": l, "m": m, "LSE": m + np.log(l)}
    return {name: tensors[name] for name in saved}


def floats(name, x, finite=True):
    """x as an array, or one line: not floating point, or (finite=True) not finite."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"{name} has dtype {x.dtype}: expected a floating-point array")
    if finite and not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return x


def _largest_norm(x):
    """The largest row norm of x's last axis (the arrays as execute mode reads them: finite), in float64, scaled by
    the largest |x| first so that no square overflows."""
    x = np.asarray(x, np.float64)
    top = float(np.abs(x).max(initial=0))
    return top * float(np.sqrt(np.square(x / top).sum(axis=-1)).max(initial=0)) if top else 0.0


def check_overflow(work, arrays, outputs=None):
    """One line where the arrays ({name: array}, q and k first, each as the walk reads it) could overflow the
    working precision in the scores (|q_i kᵀ_j| / sqrt(d) <= |q_i| |k_j| / sqrt(d), Cauchy-Schwarz: up to half
    its largest, as the online softmax subtracts two of them), or (outputs given) did on the way to them: never a
    silent NaN, infinity or zero."""
    if outputs is not None and all(np.isfinite(x).all() for x in outputs):
        return
    q, k = list(arrays.values())[:2]
    bound, most = _largest_norm(q) * _largest_norm(k) / np.sqrt(np.shape(q)[-1]), float(np.finfo(work).max)
    if outputs is None and bound <= most / 2:
        return
    largest = ", ".join(f"|{name}| {_largest_norm(x):.2g}" for name, x in arrays.items())  # the line's, once
    wider = ", or pass float64 arrays" if np.dtype(work) != np.float64 else ""
    raise ValueError(f"execute mode overflows {np.dtype(work).name} (it holds {most:.2g}) with these arrays: the "
                     f"largest row norms {largest}, scores up to {bound:.2g}: scale them down{wider}")


def arrays_of(q, k, v, cache=False):
    """q, k, v as floating-point arrays of 4 dimensions, each finite (cache=True: k and v, a decode step's caches,
    are checked where a request reads them: gpusim/decode_execute.py), or None where none is given."""
    given = [x is not None for x in (q, k, v)]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("execute mode needs all of q, k and v")
    arrays = [np.asarray(x) for x in (q, k, v)]
    for name, x in zip("qkv", arrays):
        if x.ndim != 4:
            raise ValueError(f"{name} has shape {x.shape}: expected 4 dimensions (batch, heads, seq, head_dim)")
    return [floats(name, x, finite=name == "q" or not cache) for name, x in zip("qkv", arrays)]


def shape_of(arrays, batch=None, heads=None, seq=None, head_dim=None, kv_heads=None, seq_kv=None):
    """{batch, heads, seq, head_dim, kv_heads, seq_kv} of the arrays; each one given must agree."""
    q, k, v = arrays
    if k.shape != v.shape:
        raise ValueError(f"k has shape {k.shape} but v has shape {v.shape}: they must match")
    if k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError(f"q {q.shape} and k {k.shape} must agree on batch (dim 0) and head_dim (dim 3)")
    inferred = dict(zip(("batch", "heads", "seq", "head_dim"), q.shape)) | dict(kv_heads=k.shape[1],
                                                                                seq_kv=k.shape[2])
    given = dict(batch=batch, heads=heads, seq=seq, head_dim=head_dim, kv_heads=kv_heads, seq_kv=seq_kv)
    for name, value in given.items():
        if value is not None and value != inferred[name]:
            raise ValueError(f"{name}={value} does not match the arrays, which have {name}={inferred[name]}")
    return inferred


def execute_seconds(cfg):
    """About how long walking cfg's tiles in Python takes: its steps, and its matmuls at NumPy's rate."""
    matmuls = sum(mm for mm, _, _ in cfg.pass_.flops(cfg).values())
    return cfg.pass_.execute_steps(cfg) * STEP_S + matmuls / NUMPY_FLOPS_PER_S


def check_executable(cfg, what="execute mode"):
    """One line where walking cfg's tiles in Python would take too long or hold too much."""
    steps, seconds = cfg.pass_.execute_steps(cfg), execute_seconds(cfg)
    if steps > EXECUTE_STEP_LIMIT:
        raise ValueError(f"{what} would walk {steps:,} steps in Python (limit {EXECUTE_STEP_LIMIT:,}): use fewer "
                         f"heads or a shorter sequence, or count mode (no arrays, no trace)")
    if seconds > EXECUTE_SECONDS_LIMIT:
        raise ValueError(f"{what} would take about {seconds:,.0f} s in Python and NumPy (limit "
                         f"{EXECUTE_SECONDS_LIMIT} s): use fewer heads or a shorter sequence, or count mode (no "
                         f"arrays, no trace)")
    held = cfg.bh * cfg.seq * cfg.pass_.score_row(cfg)
    if cfg.pass_.MATRICES and held > EXECUTE_ELEMENT_LIMIT:
        raise ValueError(f"execute mode holds naive attention's {cfg.pass_.MATRICES} in NumPy: {held:,} elements "
                         f"each (limit {EXECUTE_ELEMENT_LIMIT:,}): use count mode (no arrays)")


def _shape(cfg, tensor):
    b, h, n, nk, d = cfg.batch, cfg.heads, cfg.seq, cfg.seq_kv, cfg.head_dim
    shapes = {"O": (b, h, n, d), "dO": (b, h, n, d), "dQ": (b, h, n, d), "dK": (b, cfg.kv_heads, nk, d),
              "dV": (b, cfg.kv_heads, nk, d)}
    return shapes.get(tensor, (b, h, n, cfg.pass_.score_row(cfg)) if tensor in ("S", "P", "dP", "dS") else (b, h, n))


def _memory(cfg, arrays, work, trace):
    """HBM holding `arrays` and zeros for every other tensor the pass's kernels move (its count's keys); a score
    matrix given N_kv wide (the saved P) stored as its kernels keep it, rows score_row apart (zeros past N_kv)."""
    tensors = {name: _stored(cfg, name, np.asarray(x).astype(work)) for name, x in arrays.items()}
    for _, name in cfg.pass_.count(cfg):
        tensors.setdefault(name, np.zeros(_shape(cfg, name), work))
    progress = cfg.pass_.execute_steps(cfg) if execute_seconds(cfg) > PROGRESS_AFTER_S else None
    return tensors, Memory(tensors, {name: cfg.tensor_bytes(name) for name in tensors}, trace, progress)


def _stored(cfg, name, x):
    if name not in ("S", "P", "dP", "dS"):
        return x
    x = x[..., :cfg.seq_kv]  # N_kv wide, or as another launch's tiles padded it
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, cfg.pass_.score_row(cfg) - cfg.seq_kv)])


def execute(cfg, q, k, v, trace=False):
    """Run cfg's forward on q, k, v; return (output, counted Memory)."""
    work = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    check_overflow(work, dict(q=q, k=k, v=v))
    tensors, mem = _memory(cfg, {"Q": q, "K": k, "V": v}, work, trace)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is check_overflow's one line
        cfg.pass_.execute(mem, cfg)
    check_overflow(work, dict(q=q, k=k, v=v), [tensors["O"]])
    return tensors["O"], mem


def execute_backward(cfg, q, k, v, do, saved=None, trace=False):
    """Run the backward cfg (gpusim.shape.Backward) on q, k, v, do and what the forward saved (None: the
    float64 forward_saved); return (dq, dk, dv, counted Memory)."""
    work = np.result_type(q.dtype, k.dtype, v.dtype, do.dtype, np.float32)
    check_overflow(work, dict(q=q, k=k, v=v, do=do))
    saved = forward_saved(cfg.pass_.SAVED, q, k, v, cfg.causal) if saved is None else saved
    tensors, mem = _memory(cfg, {"Q": q, "K": k, "V": v, "dO": do} | saved, work, trace)
    with np.errstate(over="ignore", invalid="ignore"):
        cfg.pass_.execute(mem, cfg)
    check_overflow(work, dict(q=q, k=k, v=v, do=do), [tensors[name] for name in ("dQ", "dK", "dV")])
    return tensors["dQ"], tensors["dK"], tensors["dV"], mem

"""The entry point: simulate(algo, ...) counts (and optionally executes) one attention forward pass, a
training step (the forward, then the backward), or a decoding step from a KV cache (split_kv)."""
import functools
import itertools

import numpy as np

from . import backward, decode, l2, passes
from .backward_execute import check_executable as check_backward_executable, execute as execute_backward
from .config import make_config
from .decode_execute import execute as execute_decode
from .execute import execute
from .compiled import COMPILED
from .hardware import get_gpu
from .result import TENSOR_ORDER, KernelResult, Result, by_tensor, time_kernels  # noqa: F401 (gpusim.simulate's names)

EXECUTE_STEP_LIMIT = 2_000_000  # tiles (and softmax rows) execute mode walks in Python
EXECUTE_ELEMENT_LIMIT = 1 << 27  # elements of naive attention's S and P held in NumPy
TRACE_SEED = 0  # trace=True without arrays draws standard normal q, k, v from this seed


def simulate(algo, *, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_q=None,
             block_kv=None, causal=False, dtype=None, gpu="A100-40GB", causal_align=None, q=None, k=None,
             v=None, trace=False, backward=False, do=None, backward_blocks=None, num_splits=None,
             page_size=None, grouped=None, block_table=None):
    """Count the HBM traffic, FLOPs, footprint and predicted time of one attention forward pass, one
    training step (backward=True) or one decoding step (algo="split_kv").

    algo: "naive" (standard attention, 3 kernels), "flash1", "flash2" or "hopper" (FlashAttention-3 style:
    flash2's tiles, loads overlapped with compute). Shapes are (batch, heads, seq, head_dim) for Q and
    (batch, kv_heads, seq_kv, head_dim) for K and V. block_q, block_kv: the tiles (Br, Bc); None: the
    tiles the project's kernel runs when given none: the fastest predicted (best_blocks), or for "hopper" its
    launch table's (gpusim/passes/hopper.py LAUNCHES). dtype: the storage dtype whose bytes are counted
    (fp32, fp16, bf16, fp8); None: the arrays' own (float16 -> fp16, float32 -> fp32), fp16 for float64 arrays
    (exact arithmetic on a model of half-precision storage) and in count mode. causal_align: "top_left" (the
    default; torch's is_causal: row r sees keys 0..r) or "bottom_right" (row r sees keys 0..r + seq_kv - seq).

    Without arrays only the schedule is counted (count mode: closed forms, any N up to 2**40). With q, k, v
    (NumPy, any float dtype) the schedule runs on them tile by tile (execute mode) and `output` holds the
    result; the counts are the same. trace=True records every step (without arrays, q, k, v are drawn
    from a seeded standard normal).

    Training (backward=True; naive, flash1, flash2): the forward's kernels, then the backward's
    (gpusim/backward.py), each KernelResult with pass_ "forward" or "backward". backward_blocks: the
    backward's (Br, Bc); None: naive's forward tiles (its kernels share them), flash's backward defaults.
    Execute mode needs do, the output's gradient (shaped like q), and returns grads = (dq, dk, dv).

    Decoding (algo="split_kv"; gpusim/decode.py): seq query rows (default 1) per request attend to its
    cache; seq_kv is one cache length or one per request. num_splits (None: flash-attention's rule over the
    programs the GPU keeps resident, gpusim.decode.resident_programs),
    page_size (None: a contiguous cache), grouped (default True: a program serves a K/V head's whole
    group), block_kv (the chunk, 64), causal_align ("bottom_right" by default). Execute mode: q, k and v
    the caches, contiguous (batch, kv_heads, S, d) or paged (pages, page_size, kv_heads, d) with
    block_table (batch, max_pages); seq_kv the cache lengths (default: the whole contiguous cache).
    """
    names = passes.ALGOS + passes.DECODE  # a backward pass's module is not an algorithm to ask for
    if str(algo).lower() not in names:
        raise ValueError(f"algo={algo!r} is not one of {', '.join(names)}")
    decoding = dict(num_splits=num_splits, page_size=page_size, grouped=grouped, block_table=block_table)
    if str(algo).lower() in passes.DECODE:
        _only_with(f"algo={algo!r}", "the prefill and training algorithms", block_q=block_q, causal=causal or None,
                   backward=backward or None, do=do, backward_blocks=backward_blocks)
        return _decode(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv,
                       block_kv=block_kv, dtype=dtype, gpu=gpu, causal_align=causal_align or "bottom_right",
                       q=q, k=k, v=v, trace=trace, **decoding)
    _only_with(f"algo={algo!r}", "algo='split_kv' (decoding from a KV cache)", **decoding)
    if not backward:
        _only_with("backward=False", "backward=True", do=do, backward_blocks=backward_blocks)
    arrays = _arrays(q, k, v)
    if arrays:
        batch, heads, seq, head_dim, kv_heads, seq_kv = _shape_from(arrays, batch, heads, seq, head_dim,
                                                                    kv_heads, seq_kv)
        dtype = dtype or ARRAY_DTYPES.get(np.result_type(*arrays).name, "fp16")
    if seq is None or head_dim is None:
        raise ValueError("seq and head_dim are required unless q, k, v are given")
    shape = dict(seq=seq, head_dim=head_dim, heads=1 if heads is None else heads, batch=1 if batch is None else batch,
                 kv_heads=kv_heads, seq_kv=seq_kv, causal=causal, dtype=dtype or "fp16", gpu=gpu,
                 causal_align=causal_align or "top_left")
    if block_q is None or block_kv is None:  # the tiles the project's kernel runs when given none
        own = passes.get(algo).kernel_blocks(head_dim, shape["dtype"], causal)
        best = own or best_blocks(algo, **shape)
        block_q, block_kv = block_q or best[0], block_kv or best[1]
    cfg = make_config(algo, block_q=block_q, block_kv=block_kv, **shape)
    bwd = _backward_config(cfg, backward_blocks, arrays, do) if backward else None
    output = steps = mem = None
    if arrays or trace:
        _check_executable(cfg)
        if bwd:
            check_backward_executable(bwd)
        if not arrays:
            rng = np.random.default_rng(TRACE_SEED)
            arrays = [rng.standard_normal((cfg.batch, h, n, cfg.head_dim))
                      for h, n in [(cfg.heads, cfg.seq), (cfg.kv_heads, cfg.seq_kv), (cfg.kv_heads, cfg.seq_kv)]]
            do = rng.standard_normal((cfg.batch, cfg.heads, cfg.seq, cfg.head_dim)) if bwd else None
        output, mem = execute(cfg, *arrays, trace=trace)
        counts = {key: tuple(rw) for key, rw in mem.counts.items()}
        steps = tuple(mem.steps) if trace else None
        output = output if q is not None else None
    else:
        counts = cfg.pass_.count(cfg)
    dram = l2.dram(cfg, counts)
    forward = Result(cfg, counts, dram, time_kernels(cfg, counts, dram), cfg.pass_.peak_bytes(cfg),
                     output, steps)
    return _training(forward, bwd, arrays, do, mem, trace, q is not None) if bwd else forward


def _only_with(what, where, **given):
    """One line for the first option given that `what` does not take."""
    for name, value in given.items():
        if value is not None:
            shown = f"{name} (an array)" if isinstance(value, np.ndarray) else f"{name}={value!r}"
            raise ValueError(f"{shown} does not apply to {what}: it is for {where}")


def _backward_config(cfg, blocks, arrays, do):
    """The backward of cfg's forward (gpusim/backward.py), checked before anything runs."""
    if cfg.algo not in backward.ALGOS:
        raise ValueError(f"backward=True: algo={cfg.algo!r} has no backward here; naive, flash1 and flash2 do")
    if cfg.causal and cfg.tiling.offset:
        raise ValueError(f"backward=True models top-left causal masks (torch's is_causal); causal_align="
                         f"'bottom_right' with seq={cfg.seq} != seq_kv={cfg.seq_kv} has no backward here")
    if arrays and do is None:
        raise ValueError("backward=True with q, k, v needs do, the output's gradient (shaped like q)")
    blocks = blocks or ((cfg.block_q, cfg.block_kv) if cfg.algo == "naive" else (None, None))
    return backward.config(cfg.algo, seq=cfg.seq, head_dim=cfg.head_dim, heads=cfg.heads, batch=cfg.batch,
                           kv_heads=cfg.kv_heads, seq_kv=cfg.seq_kv, block_q=blocks[0], block_kv=blocks[1],
                           causal=cfg.causal, dtype=cfg.dtype, gpu=cfg.gpu)


def _training(forward, bwd, arrays, do, mem, trace, given):
    """The forward's Result with the backward's kernels after it: their counts (closed form, or run on the
    arrays with what the forward left in HBM) and times, the training step's peak and the gradients."""
    grads = steps = None
    if mem is None:
        counts = bwd.pass_.count(bwd)
    else:
        do = np.asarray(do)
        if do.shape != arrays[0].shape or not np.issubdtype(do.dtype, np.floating) or not np.isfinite(do).all():
            raise ValueError(f"do has shape {do.shape} ({do.dtype}): expected the output's gradient, finite, "
                             f"shaped like q {arrays[0].shape}")
        saved = {name: mem.tensors[name] for name in bwd.pass_.SAVED}
        *grads, bmem = execute_backward(bwd, *arrays, do, saved=saved, trace=trace)
        counts = {key: tuple(rw) for key, rw in bmem.counts.items()}
        steps = forward.trace + tuple(bmem.steps) if trace else None
        grads = tuple(grads) if given else None
    dram = l2.dram(bwd, counts)
    return Result(forward.config, forward.counts | counts, forward.dram | dram,
                  forward.kernels + time_kernels(bwd, counts, dram, "backward"), bwd.pass_.peak_bytes(bwd),
                  forward.output, steps, grads, bwd)


def _decode(*, seq, head_dim, heads, batch, kv_heads, seq_kv, block_kv, dtype, gpu, causal_align, q, k, v, trace,
            num_splits, page_size, grouped, block_table):
    """simulate() for algo="split_kv": the launch (gpusim/decode.py), its counts (closed form, or run on the
    arrays), the L2 and the time of each of its kernels."""
    options = dict(num_splits=num_splits, block_kv=block_kv, grouped=True if grouped is None else grouped,
                   causal_align=causal_align, gpu=gpu)
    arrays = _arrays(q, k, v)
    if not arrays:
        if trace:
            raise ValueError("trace=True for algo='split_kv' needs q and a K/V cache (k, v): none are drawn")
        if block_table is not None:
            raise ValueError("block_table was given without q, k, v: count mode takes page_size and seq_kv")
        if head_dim is None or seq_kv is None:
            raise ValueError("algo='split_kv' needs head_dim and seq_kv (one cache length, or one per request) "
                             "unless q and the caches are given")
        heads = 1 if heads is None else heads
        launch = decode.make_launch(batch=1 if batch is None else batch, heads=heads, head_dim=head_dim,
                                    kv_heads=heads if kv_heads is None else kv_heads, seq_kv=seq_kv,
                                    seq=1 if seq is None else seq, page_size=page_size, dtype=dtype or "fp16",
                                    **options)
        counts = launch.pass_.count(launch)
        output = steps = None
    else:
        q, k, v = arrays
        lengths = [k.shape[2]] * q.shape[0] if seq_kv is None and block_table is None else seq_kv
        if lengths is None:
            raise ValueError("a paged cache (block_table given) needs seq_kv, the cache length of each request")
        launch = decode.launch_for_cache(q.shape, k.shape, v.shape, lengths, paged=block_table is not None,
                                         page_size=page_size, dtype=dtype or ARRAY_DTYPES.get(
                                             np.result_type(*arrays).name, "fp16"), **options)
        for name, value in dict(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=head_dim, seq=seq).items():
            if value is not None and value != getattr(launch, name):
                raise ValueError(f"{name}={value} does not match the arrays, which have {name}={getattr(launch, name)}")
        if block_table is not None:
            decode.check_block_table(block_table, launch.seq_kv, k.shape[0], launch.page_size)
        output, mem = execute_decode(launch, q, k, v, block_table, trace)
        counts = {key: tuple(rw) for key, rw in mem.counts.items()}
        steps = tuple(mem.steps) if trace else None
    dram = l2.dram(launch, counts)
    return Result(launch, counts, dram, time_kernels(launch, counts, dram), launch.pass_.peak_bytes(launch), output,
                  steps)


ARRAY_DTYPES = {"float16": "fp16", "float32": "fp32"}


def candidates(algo, gpu, head_dim, dtype, causal):
    """The tiles best_blocks weighs: where the project's kernels were compiled for the GPU's architecture
    (gpusim/compiled.py), the tiles compiled for this head_dim, dtype and causality (their resources are
    known, not estimated); elsewhere every pair from BLOCKS."""
    kernel = passes.get(algo).KERNELS[0]
    known = {(k[5], k[6]) for k in COMPILED if k[:5] == (gpu.arch, kernel, head_dim, dtype, bool(causal))}
    return sorted(known) or list(itertools.product(BLOCKS, BLOCKS))
BLOCKS = (16, 32, 64, 128, 256)  # the tiles best_blocks tries: powers of two, as tl.dot takes them


@functools.lru_cache(maxsize=4096)
def best_blocks(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, causal=False, dtype="fp16",
                gpu="A100-40GB", causal_align="top_left"):
    """(block_q, block_kv): of the tiles in BLOCKS x BLOCKS that fit the GPU (SRAM, registers, a resident
    block), the one with the lowest predicted time. flash1 and flash2 take it as their default; the Hopper
    kernel runs its launch table's tiles (measured fastest per head_dim, dtype and mask)."""
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv,
                 causal=causal, dtype=dtype, gpu=gpu, causal_align=causal_align)
    make_config(algo, block_q=BLOCKS[0], block_kv=BLOCKS[0], **{**shape, "causal": bool(causal)} if isinstance(
        causal, (bool, np.bool_)) else shape)  # the shape's own errors, before any tile is tried
    times = {}
    for blocks in candidates(algo, get_gpu(gpu), head_dim, dtype, causal):
        try:
            times[blocks] = simulate(algo, block_q=blocks[0], block_kv=blocks[1], **shape).predicted_time_s
        except ValueError:  # the tile does not fit: SRAM, registers or no resident block
            continue
    if not times:
        raise ValueError(f"no tile of {BLOCKS[0]}..{BLOCKS[-1]} rows fits {algo} at head_dim={head_dim} "
                         f"({dtype}) on {get_gpu(gpu).name}")
    return min(times, key=times.get)


def _arrays(q, k, v):
    given = [x is not None for x in (q, k, v)]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("execute mode needs all of q, k and v")
    arrays = [np.asarray(x) for x in (q, k, v)]
    for name, x in zip("qkv", arrays):
        if x.ndim != 4:
            raise ValueError(f"{name} has shape {x.shape}: expected 4 dimensions (batch, heads, seq, head_dim)")
        if not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"{name} has dtype {x.dtype}: expected a floating-point array")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or infinity")
    return arrays


def _shape_from(arrays, batch, heads, seq, head_dim, kv_heads, seq_kv):
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
    return tuple(inferred[name] for name in ("batch", "heads", "seq", "head_dim", "kv_heads", "seq_kv"))


def _check_executable(cfg):
    t = cfg.tiling
    steps = cfg.bh * (t.tiles + (cfg.seq if cfg.algo == "naive" else t.n_q_blocks))
    if steps > EXECUTE_STEP_LIMIT:
        raise ValueError(f"execute mode would walk {steps:,} steps in Python (limit {EXECUTE_STEP_LIMIT:,}): "
                         f"use fewer heads or a shorter sequence, or count mode (no arrays, no trace)")
    if cfg.algo == "naive" and cfg.bh * cfg.seq * cfg.seq_kv > EXECUTE_ELEMENT_LIMIT:
        raise ValueError(f"execute mode holds naive attention's S and P in NumPy: {cfg.bh * cfg.seq * cfg.seq_kv:,} "
                         f"elements each (limit {EXECUTE_ELEMENT_LIMIT:,}): use count mode (no arrays)")

"""The entry points under simulate(): forward() (one attention forward pass), train() (a training step: the
forward, then the backward) and decode_step() (a decoding step from a KV cache). Each makes its
configuration (its pass resolved once), counts it (closed forms, or the tiles walked on arrays), and prices
it (the L2's DRAM bytes, then each kernel's time: gpusim/l2.py, gpusim/cost.py). best_blocks picks the tiles."""
import functools
import itertools

import numpy as np

from . import backward, decode, l2
from .compiled import COMPILED
from .config import at_blocks, make_config, pass_of
from .decode_execute import execute as execute_decode
from .execute import arrays_of, check_executable, execute, execute_backward, floats, shape_of
from .hardware import get_gpu
from .passes import algo_name, named
from .result import Result, predicted_times, time_kernels
from .shape import Tiles, causal_align_of, flag, given_tiles, pair, positive_int

TRACE_SEED = 0  # trace=True without arrays draws standard normal q, k, v (and do) from this seed
ARRAY_DTYPES = {"float16": "fp16", "float32": "fp32"}  # the dtype counted for arrays given without one
BLOCKS = (16, 32, 64, 128, 256)  # the tiles best_blocks tries: powers of two, as tl.dot takes them
TRAINABLE = backward.ALGOS  # the algorithms with a backward pass


def forward(algo, *, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_q=None,
            block_kv=None, causal=False, dtype=None, gpu="A100-40GB", causal_align=None, q=None, k=None, v=None,
            trace=False, tiles=None):
    """One forward pass of `algo` (naive, flash1, flash2, hopper): simulate()'s Result, its keywords."""
    algo, trace = algo_name(algo), flag("trace", trace)
    cfg, arrays = _forward_config(algo, dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads,
                                             seq_kv=seq_kv, block_q=block_q, block_kv=block_kv, causal=causal,
                                             dtype=dtype, gpu=gpu, causal_align=causal_align, tiles=tiles), (q, k, v))
    if arrays or trace:
        check_executable(cfg)
        arrays = arrays or _drawn(cfg)[:3]
    return _forward(cfg, arrays, trace, given=q is not None)[0]


def train(algo, *, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_q=None,
          block_kv=None, causal=False, dtype=None, gpu="A100-40GB", causal_align=None, q=None, k=None, v=None,
          trace=False, backward_blocks=None, do=None, tiles=None):
    """One training step of `algo` (naive, flash1, flash2): the forward's kernels, then the backward's.
    With q, k, v, do given (or trace=True) the backward runs on what the forward left in HBM."""
    algo, trace = algo_name(algo), flag("trace", trace)
    _trainable(algo)
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv,
                 block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype, gpu=gpu, causal_align=causal_align,
                 tiles=tiles)
    cfg, arrays = _forward_config(algo, shape, (q, k, v))
    shared = cfg.pass_.BACKWARD_AT_FORWARD_TILES  # naive: one tile for both passes, as its kernels run them
    rule = backward_blocks is None and not (shared and (block_q, block_kv, tiles) != (None, None, None))
    bwd = _backward_config(cfg, backward_blocks, arrays, do, rule)
    if rule and shared and (bwd.block_q, bwd.block_kv) != (cfg.block_q, cfg.block_kv):  # the rule halved it
        cfg, arrays = _forward_config(algo, shape | dict(block_q=bwd.block_q, block_kv=bwd.block_kv), (q, k, v))
    if arrays or trace:
        check_executable(cfg)
        check_executable(bwd, "the backward's execute mode")
        if not arrays:
            *arrays, do = _drawn(cfg)
    fwd, mem = _forward(cfg, arrays, trace, given=q is not None)
    if mem is None:
        (counts, dram), grads, steps = _counted(bwd), None, None
    else:
        counts, grads, steps = _backward_run(bwd, arrays, do, mem, trace)
        grads, steps = grads if q is not None else None, fwd.trace + steps if trace else None
        dram = l2.dram(bwd, counts)
    kernels = time_kernels(bwd, counts, dram, "backward")
    return Result(fwd.config, fwd.counts | counts, fwd.dram | dram, fwd.kernels + kernels,
                  bwd.pass_.peak_bytes(bwd), fwd.output, steps, grads, bwd)


def decode_step(*, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_kv=None,
                dtype=None, gpu="A100-40GB", causal_align="bottom_right", q=None, k=None, v=None, trace=False,
                num_splits=None, page_size=None, grouped=True, block_table=None):
    """One decoding step (Flash-Decoding, gpusim/decode.py): seq query rows per request over a KV cache;
    count mode from the shape (seq_kv one length, or one per request: a list sets the batch where batch is not
    given), or execute mode on q and the caches (contiguous or paged by block_table)."""
    options = dict(num_splits=num_splits, block_kv=block_kv, grouped=grouped, causal_align=causal_align, gpu=gpu)
    trace, arrays = flag("trace", trace), arrays_of(q, k, v, cache=True)
    if not arrays:
        launch = _counted_launch(seq, head_dim, heads, batch, kv_heads, seq_kv, dtype, trace, page_size,
                                 block_table, options)
        (counts, dram), output, steps = _counted(launch), None, None
    else:
        launch = _launch_for_arrays(arrays, dict(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                                                 seq=seq), seq_kv, dtype, page_size, block_table, options)
        output, mem = execute_decode(launch, *arrays, block_table, trace)
        counts, steps = _counts(mem), tuple(mem.steps) if trace else None
        dram = l2.dram(launch, counts)
    return Result(launch, counts, dram, time_kernels(launch, counts, dram), launch.pass_.peak_bytes(launch), output,
                  steps)


# More configurations than docs/perf.md's tables count: an LRU cache over a cycle it cannot hold keeps none of it.
@functools.lru_cache(maxsize=1 << 16)
def _counted_once(cfg):
    counts = cfg.pass_.count(cfg)
    return counts, l2.dram(cfg, counts)


def _counted(cfg):
    """Count mode's bytes, and the L2's split of them into the bytes that reach DRAM (gpusim/l2.py), once per
    configuration: they depend on it alone, never on the time model, so a slider that comes back to a tile, or a
    table priced again under another time model, counts once. Copies: a caller may change its Result's dicts."""
    counts, dram = _counted_once(cfg)
    return dict(counts), dict(dram)


def _counts(mem):
    return {key: tuple(rw) for key, rw in mem.counts.items()}


def _forward_config(algo, given, qkv):
    """The forward's configuration from forward()'s or train()'s keywords and arrays, and the arrays checked
    (None: count mode)."""
    arrays = arrays_of(*qkv)
    shape = {name: given[name] for name in ("batch", "heads", "seq", "head_dim", "kv_heads", "seq_kv")}
    dtype = given["dtype"]
    if arrays:
        shape = shape_of(arrays, **shape)
        dtype = _dtype_of(arrays, dtype)
    if shape["seq"] is None or shape["head_dim"] is None:
        raise ValueError("seq and head_dim are required unless q, k, v are given")
    align = given["causal_align"]
    shape |= dict(heads=1 if shape["heads"] is None else shape["heads"], batch=1 if shape["batch"] is None else
                  shape["batch"], causal=given["causal"], dtype="fp16" if dtype is None else dtype, gpu=given["gpu"],
                  causal_align="top_left" if align is None else align)
    block_q, block_kv, tiles = given_tiles(given["tiles"], given["block_q"], given["block_kv"])
    if tiles is not None:  # a caller's Tiles: its blocks, and the launch's knobs it sets
        return make_config(algo, tiles=tiles, **shape), arrays
    if block_q is None or block_kv is None:  # the tiles the project's kernel runs when given none
        own = pass_of(algo).kernel_blocks(shape["head_dim"], shape["dtype"], given["causal"])
        best = own or best_blocks(algo, **shape, block_q=block_q, block_kv=block_kv)
        block_q, block_kv = best[0] if block_q is None else block_q, best[1] if block_kv is None else block_kv
    return make_config(algo, block_q=block_q, block_kv=block_kv, **shape), arrays


def _drawn(cfg):
    """q, k, v and do for trace=True without arrays: standard normal, from TRACE_SEED."""
    rng = np.random.default_rng(TRACE_SEED)
    return [rng.standard_normal((cfg.batch, h, n, cfg.head_dim)) for h, n in
            [(cfg.heads, cfg.seq), (cfg.kv_heads, cfg.seq_kv), (cfg.kv_heads, cfg.seq_kv), (cfg.heads, cfg.seq)]]


def _forward(cfg, arrays, trace, given):
    """(the forward's Result, the counted Memory it left, None in count mode)."""
    output = steps = mem = None
    if arrays:
        output, mem = execute(cfg, *arrays, trace=trace)
        counts, steps = _counts(mem), tuple(mem.steps) if trace else None
        output, dram = output if given else None, l2.dram(cfg, counts)
    else:
        counts, dram = _counted(cfg)
    return Result(cfg, counts, dram, time_kernels(cfg, counts, dram), cfg.pass_.peak_bytes(cfg), output, steps), mem


def _backward_config(cfg, blocks, arrays, do, rule):
    """The backward of cfg's forward (gpusim/backward.py), checked before anything runs; rule: its tiles are the
    rule's (the pass's defaults, or naive's forward's where the forward's are), halved until every kernel fits."""
    if cfg.causal and cfg.tiling.offset:
        raise ValueError(f"backward=True models top-left causal masks (torch's is_causal); causal_align="
                         f"'bottom_right' with seq={cfg.seq} != seq_kv={cfg.seq_kv} has no backward here")
    if arrays and do is None:
        raise ValueError("backward=True with q, k, v needs do, the output's gradient (shaped like q)")
    if blocks is None:
        shared = cfg.user_tiles or (cfg.block_q, cfg.block_kv)  # naive's: the forward's tiles, knobs and all
        blocks = shared if cfg.pass_.BACKWARD_AT_FORWARD_TILES else (None, None)
    tiles = blocks if isinstance(blocks, Tiles) else None  # its blocks, and the knobs every backward kernel takes
    blocks = (None, None) if tiles else pair("backward_blocks", blocks)
    return backward.config(cfg.algo, seq=cfg.seq, head_dim=cfg.head_dim, heads=cfg.heads, batch=cfg.batch,
                           kv_heads=cfg.kv_heads, seq_kv=cfg.seq_kv, block_q=blocks[0], block_kv=blocks[1],
                           causal=cfg.causal, dtype=cfg.dtype, gpu=cfg.gpu, tiles=tiles, halve=rule)


def _backward_run(bwd, arrays, do, mem, trace):
    """The backward walked on the arrays and what the forward left in HBM: (counts, grads, steps)."""
    do = floats("do", do)
    if do.shape != arrays[0].shape:
        raise ValueError(f"do has shape {do.shape}: expected the output's gradient, shaped like q {arrays[0].shape}")
    saved = {name: mem.tensors[name] for name in bwd.pass_.SAVED}
    *grads, bmem = execute_backward(bwd, *arrays, do, saved=saved, trace=trace)
    return _counts(bmem), tuple(grads), tuple(bmem.steps) if trace else None


def _counted_launch(seq, head_dim, heads, batch, kv_heads, seq_kv, dtype, trace, page_size, block_table, options):
    """decode_step's launch in count mode, from the shape."""
    if trace:
        raise ValueError("trace=True for algo='split_kv' needs q and a K/V cache (k, v): none are drawn")
    if block_table is not None:
        raise ValueError("block_table was given without q, k, v: count mode takes page_size and seq_kv")
    if head_dim is None or seq_kv is None:
        raise ValueError("algo='split_kv' needs head_dim and seq_kv (one cache length, or one per request) "
                         "unless q and the caches are given")
    heads = 1 if heads is None else heads
    return decode.make_launch(batch=batch, heads=heads, head_dim=head_dim,
                              kv_heads=heads if kv_heads is None else kv_heads, seq_kv=seq_kv,
                              seq=1 if seq is None else seq, page_size=page_size,
                              dtype="fp16" if dtype is None else dtype, **options)


def _launch_for_arrays(arrays, given, seq_kv, dtype, page_size, block_table, options):
    """decode_step's launch in execute mode: the shapes of q and the caches, checked against what was given."""
    q, k, v = arrays
    lengths = [k.shape[2]] * q.shape[0] if seq_kv is None and block_table is None else seq_kv
    if lengths is None:
        raise ValueError("a paged cache (block_table given) needs seq_kv, the cache length of each request")
    launch = decode.launch_for_cache(q.shape, k.shape, v.shape, lengths, paged=block_table is not None,
                                     page_size=page_size, dtype=_dtype_of(arrays, dtype), **options)
    found = dict(batch=launch.batch, heads=launch.heads, kv_heads=launch.kv_heads, head_dim=launch.head_dim,
                 seq=launch.seq)
    for name, value in given.items():
        if value is not None and value != found[name]:
            raise ValueError(f"{name}={value} does not match the arrays, which have {name}={found[name]}")
    if block_table is not None:
        decode.check_block_table(block_table, launch.seq_kv, k.shape[0], launch.page_size)
    return launch


def candidates(algo, gpu, head_dim, dtype, causal, kernel=None):
    """The tiles best_blocks weighs: where the project's kernels were compiled for the GPU's architecture
    (gpusim/compiled.py), the tiles compiled of `kernel` (None: the pass's first) for this head_dim, dtype
    and causality (their resources are known, not estimated); elsewhere every pair from BLOCKS."""
    kernel = kernel or pass_of(algo).KERNELS[0]
    known = compiled_tiles().get((gpu.arch, kernel, head_dim, dtype, bool(causal)))
    return list(known or itertools.product(BLOCKS, BLOCKS))


@functools.cache
def compiled_tiles():
    """{(arch, kernel, head_dim, dtype, causal): the (block_q, block_kv) compiled for it, sorted}: COMPILED's keys."""
    known = {}
    for k in COMPILED:
        known.setdefault(k[:5], set()).add((k[5], k[6]))
    return {key: sorted(tiles) for key, tiles in known.items()}


def best_blocks(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, causal=False, dtype="fp16",
                gpu="A100-40GB", causal_align="top_left", backward=False, block_q=None, block_kv=None):
    """(block_q, block_kv): of the candidate tiles that fit the GPU (SRAM, registers, a resident block), the
    one with the lowest predicted time; block_q or block_kv given: the best tile with it. flash1 and flash2 take
    it as their default; the Hopper kernel runs its launch table's tiles (measured fastest per head_dim, dtype
    and mask). backward=True (naive, flash1, flash2): the backward's tiles, by the backward kernels' time alone
    (simulate(..., backward=True, backward_blocks=...)), among the tiles its kernels were compiled for where they
    were (flash2's dkdv)."""
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv,
                 causal=causal, dtype=dtype, gpu=gpu, causal_align=causal_align)
    # before the cache, whose keys take True for 1: backward=1 and block_q=True are refused as simulate refuses them
    given = tuple(None if b is None else positive_int(n, b) for n, b in (("block_q", block_q), ("block_kv", block_kv)))
    algo, backward = algo_name(algo), flag("backward", backward)
    causal_align_of(causal, causal_align)  # as simulate refuses it: no mask to align
    try:
        return _best_blocks(algo, backward, given, **shape)
    except TypeError:  # an argument the cache cannot hash (a list for seq_kv): the checks name it in one line
        _check_search(algo, backward, (block_q, block_kv), shape)
        raise


def _check_search(algo, backward, given, shape):
    """best_blocks' arguments, each error one line: the shape's (make_config's), the given block, backward. Returns
    the configuration at the smallest tile, whose shape every candidate shares."""
    cfg = make_config(algo, block_q=BLOCKS[0], block_kv=BLOCKS[0], **shape)
    for name, block in zip(("block_q", "block_kv"), given):
        if block is not None:
            positive_int(name, block)
    if flag("backward", backward):
        _trainable(algo)
    return cfg


@functools.lru_cache(maxsize=4096, typed=True)  # typed: causal=1 is not causal=True; an error is not cached
def _best_blocks(algo, backward, given, **shape):
    base = _check_search(algo, backward, given, shape)
    head_dim, dtype, gpu, causal = (shape[name] for name in ("head_dim", "dtype", "gpu", "causal"))
    kernel = "flash2_bwd_dkdv" if backward and algo == "flash2" else None
    tiles = candidates(algo, get_gpu(gpu), head_dim, dtype, causal, kernel)
    if any(given):
        tiles = [t for t in tiles if given in ((t[0], None), (None, t[1]))] or [
            (given[0] or b, given[1] or b) for b in BLOCKS]
    times = {}
    for blocks in tiles:
        try:
            times[blocks] = _tile_time(algo, blocks, shape, backward, base)
        except ValueError:  # the tile does not fit: SRAM, registers or no resident block
            continue
    if not times:
        raise ValueError(_none_fits(algo, given, shape, backward, base))
    return min(times, key=times.get)


def _none_fits(algo, given, shape, backward, base):
    """Why best_blocks found no tile: the error of the tile that needs least (with a block given, its smallest
    partner), which names what even that exceeds."""
    with_ = "".join(f" with {name}={value}" for name, value in zip(("block_q", "block_kv"), given) if value)
    line = (f"no tile of {BLOCKS[0]}..{BLOCKS[-1]} rows{with_} fits {algo} at head_dim={shape['head_dim']} "
            f"({shape['dtype']}) on {get_gpu(shape['gpu']).name}")
    try:
        _tile_time(algo, (given[0] or BLOCKS[0], given[1] or BLOCKS[0]), shape, backward, base)
    except ValueError as err:
        return f"{line}: at the smallest {'partner' if any(given) else 'tile'}, {err}"
    return line


def _clear_picks():
    """best_blocks' picks and the forwards its backward searches share (their tiles a pick too): both priced by the
    time model, so both go when it changes."""
    _best_blocks.cache_clear()
    _training_forward.cache_clear()


best_blocks.cache_clear = _clear_picks  # as an lru_cache's


def _trainable(algo):
    if named(algo) not in TRAINABLE:
        raise ValueError(f"backward=True: algo={algo!r} has no backward here; naive, flash1 and flash2 do")


def _tile_time(algo, blocks, shape, backward, base):
    """The predicted time of the forward at these tiles (forward()'s Result.predicted_time_s: its kernels' times
    added, a forward having no host floor), or of the backward's kernels at them (train()'s, the forward's tiles
    its own search's). The configurations and counts are simulate()'s (the forward's: base, the shape's checked
    configuration, at these tiles), the kernels timed as it times them, without the Results a search of 25 tiles
    would build and drop: nothing else they hold (the forward's kernels in a training step, the footprint) changes a
    time or raises."""
    if backward:
        cfg = _backward_config(_training_forward(algo, **shape), blocks, None, None, False)
    else:
        cfg = at_blocks(base, *blocks)
    return sum(predicted_times(cfg, *_counted_once(cfg)))


@functools.lru_cache(maxsize=256)  # an error is not kept: each candidate raises it again, as its own line
def _training_forward(algo, **shape):
    """The forward a backward search's candidates share: train()'s at its default tiles, made once per search."""
    return _forward_config(algo, shape | dict(block_q=None, block_kv=None, tiles=None), (None, None, None))[0]


def _dtype_of(arrays, dtype):
    """The dtype counted: dtype, or where it is None the arrays' own (ARRAY_DTYPES, fp16 for float64); one line for
    arrays of different dtypes, which have no one dtype to count (the kernels take one too)."""
    if dtype is not None:
        return dtype
    kinds = [x.dtype.name for x in arrays]
    if len(set(kinds)) > 1:
        raise ValueError(f"q, k, v are {', '.join(kinds)}: give them one dtype, or dtype= for the bytes counted")
    return ARRAY_DTYPES.get(kinds[0], "fp16")

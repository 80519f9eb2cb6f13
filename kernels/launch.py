"""What every launch shares: the checks made before it, the gpusim configuration it must match, and the
compile-time constants its kernel is specialised on.

Inputs are made contiguous (a copy, outside the counted kernels, only for inputs that are not): the
kernels address rows of d elements, and trace_io tells tensors apart by their memory ranges.

Per call, forward_launch costs a dictionary look-up: what a launch needs (gpusim's Config, the grid, the
constants) depends only on the tensors' shapes, dtypes and devices and on the options, so it is built, with
every check and the model's tile search, once per such key (cached_launch) and reused. Every kernel is then
launched through launch(), which, compiled, skips Triton's own per-launch binding once a key has compiled.
"""
import math
import operator
from dataclasses import replace
from functools import lru_cache, wraps
from typing import NamedTuple

import torch
import triton
from triton.backends.nvidia.driver import CudaLauncher
from triton.compiler.compiler import CompiledKernel
from triton.knobs import HookChain
from triton.runtime import _allocation, driver

from gpusim.hardware import GPU, GRID_YZ_MOST, PRESETS, device_preset, get_gpu
from gpusim import best_blocks
from gpusim.passes.base import Pass
from gpusim.config import MIN_BLOCK, make_config
from gpusim.passes import FORWARD
from gpusim.shape import Tiles, given_tiles, knobs_of, pair

from .interpreter import INTERPRETED

DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
HEAD_DIMS = Pass.HEAD_DIMS  # (least, most): the head dims the kernels run, as gpusim checks them
CPU_GPU = "A100-40GB"  # the GPU whose shared memory CPU runs (the interpreter) are checked against


KEY_BLOCKS = (int, type(None))  # the types of block_q, block_kv a launch's key takes as given (int_blocks)
LAUNCH_CACHE_SIZE = 512  # distinct (shapes, dtypes, devices, options) launches kept
# launch() calls Triton's CompiledKernel directly: its runner's and CUDA launcher's calling conventions are 3.6.0's
DIRECT = not INTERPRETED and triton.__version__ == "3.6.0"
_DIRECT = {}  # launch_key -> (bound(compiled, grid, device): its launch, the constexprs in parameter order, compiled)


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs), returning what that returns (compiled: Triton's CompiledKernel).

    Compiled with triton 3.6.0 (DIRECT), a launch whose launch_key an earlier one had calls the CompiledKernel
    that one returned (bound: every parameter in order, constexprs included and ignored), skipping
    JITFunction.run's binding, specialisation and cache look-up: the same binary, grid and arguments. The key
    holds all the compiled specialisation depends on. In any doubt (the interpreter, another triton, an
    argument launch_key cannot class, a grid that is not a tuple, a kernel with pre-run hooks, a parameter not
    given) the launch is kernel[grid](...)."""
    key = launch_key(kernel, grid, args, kwargs) if DIRECT else None
    try:
        runner, constexprs, compiled = _DIRECT[key]
    except KeyError:  # not kept yet
        pass
    except TypeError:  # a keyword value that cannot be hashed
        key = None
    else:
        runner(*args, *constexprs)
        return compiled
    try:
        compiled = kernel[grid](*args, **kwargs)
    except triton.runtime.OutOfResources as err:
        raise ValueError(out_of_resources(kernel, args, kwargs, err)) from None
    if key is not None and isinstance(compiled, CompiledKernel) and not kernel.pre_run_hooks:
        _remember(key, compiled, kernel, grid, len(args), kwargs)
    return compiled


USER_NAMES = {"Br": "block_q", "Bc": "block_kv", "D": "head_dim", "STAGES": "num_stages"}  # a kernel's: the user's


RESOURCES = {  # Triton's OutOfResources.name: an amount of it, and what to give less of
    "shared memory": ("{:,} B of shared memory", "give fewer num_stages or smaller tiles (gpusim.best_blocks picks "
                                                 "tiles that fit)"),
    "threads": ("{:,} threads", "give fewer num_warps"),
    "tensor memory": ("{:,} columns of tensor memory", "give smaller tiles"),
}


def out_of_resources(kernel, args, kwargs, err):
    """One line for a launch its GPU cannot hold (Triton's OutOfResources, raised when it compiles): the kernel,
    the tiles and options it was given, what it needs of which resource and the limit of the tensors' device."""
    given = ", ".join(f"{USER_NAMES.get(name, name)}={kwargs[name]}" for name in
                      ("Br", "Bc", "D", "num_warps", "num_stages", "STAGES") if name in kwargs)
    device = next((x.device for x in args if isinstance(x, torch.Tensor)), None)
    name = torch.cuda.get_device_name(device) if device is not None and device.type == "cuda" else "this device"
    amount, advice = RESOURCES.get(err.name, ("{:,} of " + str(err.name), "give smaller tiles"))
    return (f"{kernel.__name__} with {given} needs {amount.format(err.required)} per block; {name} has "
            f"{amount.format(err.limit)}: {advice}")


def _remember(key, compiled, kernel, grid, n_args, kwargs):
    """Keep compiled's launch on grid (bound) for key, with the constexprs it takes after the n_args arguments; a
    parameter that kwargs does not name (a default) keeps nothing."""
    names = kernel.arg_names[n_args:]
    if not all(name in kwargs for name in names):
        return
    if len(_DIRECT) >= 8 * LAUNCH_CACHE_SIZE:
        _DIRECT.clear()
    device = key[-2]
    _DIRECT[key] = bound(compiled, grid + (1,) * (3 - len(grid)), device), tuple(kwargs[n] for n in names), compiled


def bound(compiled, grid, device):
    """compiled's launch on grid (x, y, z) from device's current stream, taking every parameter in order: its
    launcher's C function with all but the stream, the global scratch and the arguments bound, the call Triton's
    runner (CompiledKernel[grid]) makes after looking up the device and stream through Triton's driver each time
    (docs/perf.md, "Launches kept"). Global scratch (the Hopper kernel's device-side descriptors) is allocated per
    launch from Triton's allocator, as the launcher does. The runner itself where that call would differ: a
    launcher other than CUDA's, profile scratch to allocate, a launch hook to call."""
    launcher = compiled.run if isinstance(compiled, CompiledKernel) else None
    if not isinstance(launcher, CudaLauncher) or launcher.profile_scratch_size or hooks() != (None, None):
        return compiled[grid]
    c_launch, stream_of, function = launcher.launch, driver.active.get_current_stream, compiled.function
    flags = (launcher.launch_cooperative_grid, launcher.launch_pdl)
    rest = (None, compiled.packed_metadata, None, None, None)  # profile scratch, metadata, launch metadata, hooks
    scratch_bytes = launcher.global_scratch_size * grid[0] * grid[1] * grid[2] * launcher.num_ctas
    if not scratch_bytes:
        options = (*flags, None, *rest)

        def run(*args):
            c_launch(*grid, stream_of(device), function, *options, *args)
        return run
    align = launcher.global_scratch_align

    def run_with_scratch(*args):
        stream = stream_of(device)
        scratch = _allocation._allocator.get()(scratch_bytes, align, stream)
        c_launch(*grid, stream, function, *flags, scratch, *rest, *args)
    return run_with_scratch


def launch_kept(launched, calls, launch_each):
    """launch_each (the caller's launch()) of each (kernel, name, args) of calls in turn, on launched's grid and
    constants for that name, for calls whose arguments other than tensors are launched's own (its shapes' lengths,
    its scale): what their compiled kernels depend on is then each tensor argument's class (arg_class, by position:
    one tensor may be two arguments), the device and Triton's settings, one key for all the launches (where
    launch() makes a key a launch). Once every launch of a key is kept (launch()'s direct path), the key's next
    calls go straight to them; with a launch hook set, each call goes through launch_each (which a key holds too:
    a test's recording launch is not skipped)."""
    keep = DIRECT and hooks() == (None, None)
    key = (*(arg_class(x) for _, _, args in calls for x in args if isinstance(x, torch.Tensor)), launch_each,
           triton.knobs.runtime.debug, triton.knobs.compilation.instrumentation_mode,
           torch.cuda.current_device()) if keep else None
    runs = launched.kept.get(key) if keep else None
    if runs is not None:
        for run, (_, _, args) in zip(runs, calls):
            run(*args)
        return
    for kernel, name, args in calls:
        launch_each(kernel, launched.grids[name], *args, **launched.constants[name])
    entries = [_DIRECT.get(launch_key(kernel, launched.grids[name], args, launched.constants[name]))
               for kernel, name, args in calls] if keep else [None]
    if None not in entries:
        launched.kept[key] = [with_constexprs(run, constexprs) for run, constexprs, _ in entries]


def with_constexprs(run, constexprs):
    """run(*args, *constexprs) as a function of args."""
    return lambda *args: run(*args, *constexprs)


def launch_key(kernel, grid, args, kwargs):
    """What a compiled launch depends on: the kernel, the grid, the keyword arguments (constexprs and launch
    options), Triton's debug and instrumentation settings and launch hooks, the current CUDA device and each
    argument's class (arg_class); None when the grid is not a tuple or an argument cannot be classed."""
    if type(grid) is not tuple:
        return None
    try:
        classes = tuple(map(arg_class, args))
    except TypeError:
        return None
    return (kernel, grid, tuple(kwargs.items()), triton.knobs.runtime.debug,
            triton.knobs.compilation.instrumentation_mode, hooks(), torch.cuda.current_device(), classes)


def hooks():
    """Triton's launch hooks (enter, exit), each None where no hook would run (an empty HookChain, triton 3.6.0's
    default, whose runner still calls it: two Python calls a launch)."""
    runtime = triton.knobs.runtime
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook  # every launch's key: no generator
    return (None if type(enter) is HookChain and not enter.calls else enter,
            None if type(leave) is HookChain and not leave.calls else leave)


def arg_class(x):
    """x's class in Triton 3.6.0's specialisation, or finer: a tensor's dtype and whether its address is a multiple
    of 16; an int's being 1 (a constexpr), a multiple of 16, and its type (i32, i64 or u64); a float, bool or
    None by type. Anything else: TypeError."""
    kind = type(x)
    if kind is int:
        return int, x == 1, x % 16 == 0, -2**31 <= x < 2**31, x < 2**63
    if kind in (float, bool) or x is None:
        return kind
    if isinstance(x, torch.Tensor):
        return x.dtype, x.data_ptr() % 16 == 0
    raise TypeError(f"{kind.__name__} is not classed")


def past_grid(cfg):
    """Whether cfg's grids would put more than GRID_YZ_MOST (batch x heads) programs along y (in_slices then)."""
    return cfg.bh > GRID_YZ_MOST


def in_slices(entry, cfg, tensors, options):
    """entry(*tensors, **options) on slices of the batch, for a call whose grids would put more than GRID_YZ_MOST
    (batch x heads) programs along y, CUDA's limit: each slice of at most GRID_YZ_MOST // heads requests is a call
    of its own at the whole batch's tiles (cfg's: a default tile depends on the batch), and the outputs are
    joined along the batch. The bytes moved are the same; gpusim prices one launch."""
    step = GRID_YZ_MOST // cfg.heads
    if not step:
        raise ValueError(f"heads={cfg.heads:,}: a launch's grid holds at most {GRID_YZ_MOST:,} (batch x heads) "
                         f"along its y axis")
    given = options.get("tiles")
    tiles = Tiles(cfg.block_q, cfg.block_kv) if given is None else replace(given, block_q=cfg.block_q,
                                                                             block_kv=cfg.block_kv)
    options = options | dict(tiles=tiles)
    return _joined([entry(*(x[b:b + step] for x in tensors), **options) for b in range(0, cfg.batch, step)])


def _joined(parts):
    """The slices' outputs (a tensor each, or a tuple of tensors) joined along the batch."""
    if isinstance(parts[0], torch.Tensor):
        return _cat(parts)
    return tuple(_cat(outputs) for outputs in zip(*parts))


def _cat(parts):
    """torch.cat along the batch; a view of a buffer whose rows are padded (naive's P: rows LD apart) as the same
    view of the buffers joined, which the backward reads without a copy."""
    x = parts[0]
    if x.dim() == 4 and x.stride(3) == 1 and x.stride(2) > x.shape[3]:
        return torch.cat([p.as_strided((*p.shape[:3], p.stride(2)), p.stride()) for p in parts])[..., :x.shape[3]]
    return torch.cat(parts)


class Launch(NamedTuple):
    """What a call launches, checked: gpusim's Config, each kernel's grid and its constants; kept: launch_kept's
    launches, by their key."""
    cfg: object
    grids: dict
    constants: dict
    kept: dict


def forward_launch(algo, q, k, v, causal, tiles, block_q, block_kv, gpu, parts):
    """The checked Launch of algo's kernels for q, k, v: built once per key (signature and options), then a
    look-up; None where q has no rows (after every check, on one_row's shape). tiles: a gpusim.Tiles, or None and block_q, block_kv (not both);
    parts(cfg): the kernels' grids and constants, {kernel: ...} each, their tiles and launch options gpusim's
    (constants)."""
    forward_only(algo, q, k, v)
    check_gpu(gpu)
    block_q, block_kv, tiles = given_tiles(tiles, block_q, block_kv)
    if type(block_q) not in KEY_BLOCKS or type(block_kv) not in KEY_BLOCKS:  # a NumPy integer: the int's key
        block_q, block_kv = int_blocks(block_q, block_kv)
    rows = q.numel()
    launched = keyed(cached_launch, algo, signature(dict(q=q, k=k, v=v) if rows else one_row(q, k, v)), causal,
                     tiles, block_q, block_kv, gpu, parts, INTERPRETED)
    return launched if rows else None


def one_row(q, k, v, **like_q):
    """{q, k, v, and like_q's names}: Metas of the tensors, batch, heads and N at least 1 (q's heads k's where q has
    none; like_q shaped as q, or as its rows where a name's tensor has three dimensions). A q with no rows (batch,
    heads or N 0) gets empty outputs without a launch, as SDPA's; gpusim, which counts launches, refuses such a
    shape, so the call's checks (its tensors, gpu, dtype, tiles and options, none of which depends on B, H or N) run
    on this one, after check_inputs has checked the tensors as given."""
    check_inputs(q, k, v, None, None)
    batch, kv_heads = max(q.shape[0], 1), max(k.shape[1], 1)
    shape = (batch, q.shape[1] or kv_heads, max(q.shape[2], 1), q.shape[3])
    metas = dict(q=Meta(shape, q.dtype, q.device))
    metas |= {name: Meta((batch, kv_heads, max(x.shape[2], 1), x.shape[3]), x.dtype, x.device)
              for name, x in (("k", k), ("v", v))}
    return metas | {name: Meta(shape[:len(x.shape)], x.dtype, x.device) for name, x in like_q.items()}


def keyed(cached, *key):
    """cached(*key), a functools.lru_cache look-up; for a key that cannot be hashed (an option given as a list),
    the builder itself, uncached, whose checks name the value in one line."""
    try:
        return cached(*key)
    except TypeError as err:
        if not str(err).startswith("unhashable type"):
            raise
    return cached.__wrapped__(*key)


def check_gpu(gpu):
    """One line for a gpu the launch's cache cannot key on (a dict): the entry points take None (detected), a
    preset's name or a gpusim.GPU."""
    if gpu is not None and not isinstance(gpu, (str, GPU)):
        get_gpu(gpu)  # the one line every entry point gives: the known presets


def forward_only(algo, q, k, v):
    """One line where autograd would record q, k or v but a forward-only entry point's output carries no gradient
    (inside the trainable wrappers' forward autograd records nothing, and this passes)."""
    if not (isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor) and isinstance(v, torch.Tensor)):
        check_tensors(dict(q=q, k=k, v=v))  # one line naming what is not a tensor
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        trainable = f"{algo}_attention_trainable" if algo in ("flash2", "naive") else "flash2_attention_trainable"
        raise ValueError(f"q, k or v requires grad, but {algo}_attention is forward-only (its output would carry no "
                         f"gradient): call {trainable}, or run it under torch.no_grad()")


def first_derivative_only(name):
    """A decorator for the backward of an autograd.Function (or a custom op) whose gradients come from kernels, not
    torch ops: one line where a derivative of those gradients is asked for (create_graph=True turns grad mode on
    inside backward). once_differentiable refused that only where the output's gradient itself required grad: a
    penalty on dL/dv with o.sum() as L passed, and its term was silently taken as a constant."""
    def decorate(backward):
        @wraps(backward)
        def checked(ctx, *grads):
            if torch.is_grad_enabled():
                raise RuntimeError(f"create_graph=True asks for the derivative of {name}'s gradients, which its "
                                   f"backward kernels compute outside autograd: differentiate twice through "
                                   f"softmax(q kᵀ / sqrt(d)) v written in torch ops (SDPA's math backend; its "
                                   f"flash and efficient backends have no double backward either)")
            return backward(ctx, *grads)
        return checked
    return decorate


def op_fields(algo, tiles, block_q, block_kv):
    """(block_q, block_kv, num_warps, num_stages), ints or None, of tiles or block_q, block_kv: what a torch custom
    op takes (kernels/ops.py), which no dataclass can be an argument of; one line for a knob of tiles algo's kernel
    does not take (which these four would drop)."""
    block_q, block_kv, tiles = given_tiles(tiles, block_q, block_kv)
    knobs_of(FORWARD[algo], tiles)
    if type(block_q) not in KEY_BLOCKS or type(block_kv) not in KEY_BLOCKS:  # a NumPy integer: a custom op's int
        block_q, block_kv = int_blocks(block_q, block_kv)
    return block_q, block_kv, *((None, None) if tiles is None else (tiles.num_warps, tiles.num_stages))


def op_keywords(block_q, block_kv, num_warps, num_stages):
    """op_fields back as an entry point's keywords: tiles=Tiles(...) where num_warps or num_stages is set, else
    block_q, block_kv as given."""
    if num_warps is None and num_stages is None:
        return dict(block_q=block_q, block_kv=block_kv)
    if block_q is None or block_kv is None:  # a Tiles is a whole launch: its knobs come with its blocks
        raise ValueError(f"num_warps={num_warps}, num_stages={num_stages} need block_q and block_kv too (given "
                         f"{block_q}, {block_kv}): a launch's knobs are set with its tiles")
    return dict(tiles=Tiles(block_q, block_kv, num_warps, num_stages))


def signature(tensors):
    """{name: tensor} as ((name, shape, dtype, device), ...): all a launch depends on, hashable. A non-tensor
    gets check_tensors' one line."""
    try:
        return tuple((name, x.shape, x.dtype, x.device) for name, x in tensors.items())
    except AttributeError:
        check_tensors(tensors)
        raise


def metas(sig):
    """signature's tuple back as {name: Meta}."""
    return {name: Meta(*x) for name, *x in sig}


@lru_cache(maxsize=LAUNCH_CACHE_SIZE, typed=True)  # typed: causal=1 is checked (and refused), not True's hit
def cached_launch(algo, sig, causal, tiles, block_q, block_kv, gpu, parts, interpreted):
    """forward_launch's builder: every check, the tile search and the constants, once per key (interpreted:
    the mode the CPU check was made in)."""
    cfg = checked_config(algo, *metas(sig).values(), causal=causal, block_q=block_q, block_kv=block_kv,
                         gpu=gpu, tiles=tiles)
    return Launch(cfg, *parts(cfg), {})


class Meta(NamedTuple):
    """A tensor's shape, dtype and device, which the checks read."""
    shape: tuple
    dtype: object
    device: object


def prepare(algo, q, k, v, *, causal, block_q, block_kv, gpu):
    """Check q, k, v and the tiles; return gpusim's Config for this launch and q, k, v contiguous.
    block_q, block_kv None: the tile gpusim predicts fastest on this GPU (gpusim.best_blocks), as simulate()
    picks it."""
    cfg = checked_config(algo, q, k, v, causal=causal, block_q=block_q, block_kv=block_kv, gpu=gpu)
    return cfg, q.contiguous(), k.contiguous(), v.contiguous()


def checked_config(algo, q, k, v, *, causal, block_q, block_kv, gpu, tiles=None):
    """check_inputs, then gpusim's Config (block_q, block_kv None: gpusim.best_blocks' tile; tiles: a
    gpusim.Tiles, whose blocks block_q, block_kv are, given_tiles). q, k, v: tensors or their Meta."""
    check_inputs(q, k, v, block_q, block_kv)
    shape = dict(batch=q.shape[0], heads=q.shape[1], kv_heads=k.shape[1], seq=q.shape[2], seq_kv=k.shape[2],
                 head_dim=q.shape[3], causal=causal, dtype=DTYPES[q.dtype],
                 gpu=detect_gpu(q.device) if gpu is None else gpu)
    if tiles is not None:
        return make_config(algo, tiles=tiles, **shape)
    if block_q is None or block_kv is None:
        block_q, block_kv = best_blocks(algo, **shape, block_q=block_q, block_kv=block_kv)  # one given: its best pair
    return make_config(algo, block_q=block_q, block_kv=block_kv, **shape)


EXPECTED = {"do": "the output's gradient, shaped like q", "lse": "the forward's row log-sum-exp (fp32)",
            "p": "the forward's P (naive_attention(..., return_p=True))"}


def check_tensors(tensors):
    """{name: x}: each a tensor, else one line naming what it is and what was expected."""
    for name, x in tensors.items():
        if not isinstance(x, (torch.Tensor, Meta)):
            expected = EXPECTED.get(name, "a 4-d tensor (batch, heads, seq, head_dim)")
            raise ValueError(f"{name} is {type(x).__name__}: expected {expected}")


def check_inputs(q, k, v, block_q, block_kv):
    """The checks every launch makes, forward or backward, before gpusim checks the configuration. q, k, v:
    tensors or their Meta (shape, dtype, device)."""
    check_tensors(dict(q=q, k=k, v=v))
    for name, x in zip("qkv", (q, k, v)):
        if len(x.shape) != 4:
            raise ValueError(f"{name} is {tuple(x.shape)}: expected a 4-d tensor (batch, heads, seq, head_dim)")
        if x.dtype not in DTYPES:
            raise ValueError(f"{name} has dtype {x.dtype}: supported are {', '.join(map(str, DTYPES))}")
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k, v have dtypes {q.dtype}, {k.dtype}, {v.dtype}: they must match")
    if k.shape != v.shape:
        raise ValueError(f"k has shape {tuple(k.shape)} but v has shape {tuple(v.shape)}: they must match")
    if q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree on batch (dim 0) and head_dim (dim 3)")
    heads, kv_heads = q.shape[1], k.shape[1]
    if heads % kv_heads if kv_heads else heads:  # as gpusim says it (an empty q asks gpusim nothing: no_rows)
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    check_head_dim(q.shape[3])
    if k.shape[2] == 0 and math.prod(q.shape):
        raise ValueError(f"k and v are {tuple(k.shape)}: no keys (dim 2), and each of q's rows attends to at least one")
    if not q.device == k.device == v.device:
        raise ValueError(f"q, k, v are on {q.device}, {k.device}, {v.device}: they must be on one device")
    check_device(q.device)
    if q.device.type not in ("cpu", "cuda"):
        raise ValueError(f"q is on {q.device}: the kernels run on cuda, or on cpu in Triton's interpreter")
    check_blocks(block_q, block_kv)


def check_blocks(block_q, block_kv, names=("block_q", "block_kv")):
    """Each given block a tl.dot tile (None: gpusim's choice): an integer (a NumPy one too, not a bool or a
    float), a power of two; names: how the lines name them."""
    for name, block in zip(names, (block_q, block_kv)):
        if block is None:
            continue
        value = as_int(block)
        if type(value) is not int:
            raise ValueError(f"{name}={block!r} must be an integer, a power of two >= {MIN_BLOCK} (a tl.dot tile)")
        if value < MIN_BLOCK or value & (value - 1):
            raise ValueError(f"{name}={block!r} must be a power of two >= {MIN_BLOCK} (a tl.dot tile)")


def as_int(value):
    """An integer-like value (a NumPy integer) as the equal Python int (operator.index, as gpusim's positive_int
    takes it); a bool, a float, None or anything else as it is."""
    if value is None or type(value) is int or isinstance(value, bool):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def short_repr(value, limit=60):
    """value's repr on one line, cut to about limit characters: an argument named as the caller gave it."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def int_blocks(block_q, block_kv):
    """(block_q, block_kv) with integer-likes as Python ints, before a launch's key is made of them: a NumPy
    integer gets the equal int's launch, not a second (the caches are typed)."""
    return as_int(block_q), as_int(block_kv)


def check_pair(name, blocks):
    """blocks as a (block_q, block_kv) tuple of tl.dot tiles (Python ints), or one line naming it."""
    blocks = int_blocks(*pair(name, blocks))
    check_blocks(*blocks, names=(f"{name}[0]", f"{name}[1]"))
    return blocks


def check_device(device):
    """One line if q's device is the CPU but the kernels were compiled for the GPU (not INTERPRETED)."""
    if device.type == "cpu" and not INTERPRETED:
        raise ValueError("q is a CPU tensor but the kernels were compiled for the GPU: set TRITON_INTERPRET=1 "
                         "before importing gpusim_kernels to run them in Triton's interpreter")


def check_head_dim(head_dim):
    """One line if the kernels do not run head_dim (outside HEAD_DIMS)."""
    if not HEAD_DIMS[0] <= head_dim <= HEAD_DIMS[1]:
        raise ValueError(f"head_dim={head_dim} is outside the supported {HEAD_DIMS[0]}..{HEAD_DIMS[1]}")


@lru_cache(maxsize=None)  # a device's name and properties do not change while the process runs
def detect_gpu(device):
    """The gpusim preset for a device: by CUDA device name; A100s by memory; any other CUDA GPU is the
    A100-40GB preset with the device's own shared memory per block (the limit its launches must meet)."""
    if device.type != "cuda":
        return CPU_GPU
    name, props = torch.cuda.get_device_name(device), torch.cuda.get_device_properties(device)
    return device_preset(name, props.total_memory) or replace(
        PRESETS[CPU_GPU], name=name, sram_bytes_per_block=props.shared_memory_per_block_optin)


def options(cfg, kernel):
    """Launch options (num_warps, num_stages) of kernel: gpusim's Tiles for it (cfg.pass_.tiles: a caller's
    knobs where its Tiles set them, else the pass's launch rule), which the time model prices, so that what
    runs is what is predicted. Forward or backward (cfg a Config or a Backward)."""
    tiles = cfg.pass_.tiles(cfg, kernel)
    return dict(num_warps=tiles.num_warps, num_stages=tiles.num_stages)


def constants(cfg, kernel):
    """The compile-time constants of a tiled kernel (its tiles, head_dim and its power-of-two tile width), with
    its launch options: all from gpusim's Tiles for it (cfg.pass_.tiles)."""
    tiles = cfg.pass_.tiles(cfg, kernel)
    return dict(GROUP=cfg.heads // cfg.kv_heads, D=cfg.head_dim, BLOCK_D=triton.next_power_of_2(cfg.head_dim),
                Br=tiles.block_q, Bc=tiles.block_kv, CAUSAL=cfg.causal, num_warps=tiles.num_warps,
                num_stages=tiles.num_stages)

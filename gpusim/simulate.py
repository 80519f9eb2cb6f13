"""The door: simulate(algo, ...), the one documented entry point. It checks which options apply and hands
the call to forward(), train() or decode_step() (gpusim/run.py)."""
from . import context
from .passes import DECODE, named
from .result import TENSOR_ORDER, KernelResult, Result, by_tensor  # noqa: F401 (gpusim.simulate's names)
from .run import BLOCKS, best_blocks, candidates, decode_step, forward, train  # noqa: F401 (gpusim.simulate's names)
from .shape import causal_align_of, flag, only_with, positive_int


def over_gpus(gpus, strategy, link):
    """Whether a call asks for context parallelism; one line where it gives a strategy or link without gpus."""
    if gpus is None and (strategy is not None or link is not None):
        given = ", ".join(f"{n}={v!r}" for n, v in (("strategy", strategy), ("link", link)) if v is not None)
        raise ValueError(f"{given} without gpus=: give the GPUs the sequence is split over (gpus=1 for one)")
    gpus = None if gpus is None else positive_int("gpus", gpus)  # before comparing: True is not one GPU
    return gpus not in (None, 1) or strategy is not None or link is not None


def simulate(algo, *, seq=None, head_dim=None, heads=None, batch=None, kv_heads=None, seq_kv=None, block_q=None,
             block_kv=None, causal=False, dtype=None, gpu="A100-40GB", causal_align=None, q=None, k=None,
             v=None, trace=False, backward=False, do=None, backward_blocks=None, num_splits=None,
             page_size=None, grouped=None, block_table=None, gpus=None, strategy=None, link=None, tiles=None):
    """Count the HBM traffic, FLOPs, footprint and predicted time of one attention forward pass, one
    training step (backward=True) or one decoding step (algo="split_kv").

    algo: "naive" (standard attention, 3 kernels), "flash1", "flash2" or "hopper" (FlashAttention-3 style:
    flash2's tiles, loads overlapped with compute). Shapes are (batch, heads, seq, head_dim) for Q and
    (batch, kv_heads, seq_kv, head_dim) for K and V. block_q, block_kv: the tiles (Br, Bc), any sizes (the kernels take
    powers of two >= 16); None: the fastest predicted (best_blocks; one given, the fastest other); hopper's: its launch
    table's (passes/hopper.py LAUNCHES; one given, its other). tiles: a gpusim.Tiles in their place, with the knobs it
    sets (num_warps, num_stages; hopper's warp_specialize, mask, overlap, lpt_heads), priced as launched. dtype:
    the storage dtype whose bytes are counted (fp32, fp16, bf16, fp8); None: the arrays' own (float16 -> fp16,
    float32 -> fp32), fp16 for float64 arrays (exact arithmetic on a model of half-precision storage) and in
    count mode. causal_align: "top_left" (the default; torch's is_causal: row r sees keys 0..r) or
    "bottom_right" (row r sees keys 0..r + seq_kv - seq). Without arrays only the schedule is counted (count
    mode: closed forms, any N up to 2**40). With q, k, v (NumPy) it runs on them tile by tile (execute mode:
    `output`; the same counts); trace=True records every step (without arrays on seeded standard normal q, k, v).

    Training (backward=True; naive, flash1, flash2; train()): the forward's kernels, then the backward's, each
    KernelResult with pass_ "forward" or "backward"; backward_blocks: the backward's (Br, Bc), or a gpusim.Tiles
    whose knobs every backward kernel takes (None: naive's forward tiles, flash's backward defaults, halved until
    every backward kernel's block fits an SM). Execute mode needs do (shaped like q); grads = (dq, dk, dv).

    Decoding (algo="split_kv"; decode_step(), gpusim/decode.py): seq query rows (default 1) per request attend to
    its cache of seq_kv tokens (one length, or one per request: a list sets the batch where batch is not given).
    num_splits (None: the most that fill every SM's resident split blocks less one, decode.split_slots), page_size
    (None: contiguous), grouped (default True: a program serves a K/V head's group), block_kv (the chunk: 64, or
    its largest halving that fits the GPU), causal_align ("bottom_right"). Execute mode: q and the caches k, v,
    contiguous (batch, kv_heads, S, d) or paged (pages, page_size, kv_heads, d) with block_table. Context
    parallelism (gpus > 1, strategy, link; a split over one GPU gives gpus=1): gpusim/context.py.
    """
    if over_gpus(gpus, strategy, link):  # first: locals() are just the arguments
        return context.simulate(**locals())
    algo = named(algo)  # any case ("FLASH2": flash2); a backward pass is not one
    decoding = dict(num_splits=num_splits, page_size=page_size, grouped=grouped, block_table=block_table)
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, kv_heads=kv_heads, seq_kv=seq_kv, dtype=dtype,
                 gpu=gpu, q=q, k=k, v=v, trace=trace)
    if algo in DECODE:
        only_with(f"algo={algo!r}", "the prefill and training algorithms", block_q=block_q, causal=causal or None,
                   backward=backward or None, do=do, backward_blocks=backward_blocks, tiles=tiles)
        return decode_step(**shape, block_kv=block_kv, causal_align="bottom_right" if causal_align is None else
                           causal_align, **decoding | dict(grouped=True if grouped is None else grouped))
    only_with(f"algo={algo!r}", "algo='split_kv' (decoding from a KV cache)", **decoding)
    launch = dict(block_q=block_q, block_kv=block_kv, causal=causal, causal_align=causal_align_of(causal, causal_align), tiles=tiles)
    if flag("backward", backward):
        return train(algo, **shape, **launch, backward_blocks=backward_blocks, do=do)
    only_with("backward=False", "backward=True", do=do, backward_blocks=backward_blocks)
    return forward(algo, **shape, **launch)

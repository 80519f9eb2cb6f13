"""Make one forward launch's configuration (gpusim.shape.Config), validated once: every error is one line
naming the value and the limit. The configuration resolves its pass (gpusim/passes/) here, once."""
from dataclasses import replace

from . import passes
from .hardware import dtype_name, get_gpu
from .shape import (MIN_BLOCK, Config, Tiles, check_causal, check_groups, counts, given_tiles,  # noqa: F401
                    knobs_of, positive_int)


def pass_of(algo):
    """The forward pass named algo (gpusim/passes/): the one place a forward configuration looks it up."""
    found = passes.get(algo)
    if found.name in passes.DECODE:
        raise ValueError(f"algo={algo!r} is not a forward pass ({', '.join(passes.ALGOS)}): decoding has no block_q "
                         "to choose; simulate('split_kv', ...) takes its block_kv and num_splits")
    if found.name not in passes.ALGOS:
        raise ValueError(f"algo={algo!r} is a backward pass: it runs after its forward's, simulate(..., backward=True)")
    return found


def make_config(algo, *, seq, head_dim, heads=1, batch=1, kv_heads=None, seq_kv=None, block_q=None,
                block_kv=None, causal=False, dtype="fp16", gpu="A100-40GB", causal_align="top_left", tiles=None):
    """Validate everything once; every error names the value and the limit. block_q, block_kv None: the
    algorithm's paper rule for the GPU (paper_blocks). tiles: a Tiles instead of block_q, block_kv, whose knobs
    (num_warps, ...; those of the algorithm's kernel, its pass's KNOBS) the model prices instead of its rule."""
    pass_ = pass_of(algo)
    block_q, block_kv, tiles = given_tiles(tiles, block_q, block_kv)
    user_tiles = knobs_of(pass_, tiles)
    gpu, dtype = get_gpu(gpu), dtype_name(dtype)
    gpu.matmul_flops_per_s(dtype)  # raises for a dtype the GPU's tensor cores lack
    seq, seq_kv, head_dim, heads, batch, kv_heads = counts(
        seq=seq, seq_kv=seq if seq_kv is None else seq_kv, head_dim=head_dim, heads=heads, batch=batch,
        kv_heads=heads if kv_heads is None else kv_heads).values()
    pass_.check(gpu, head_dim, dtype)
    check_groups(heads, kv_heads)
    causal = check_causal(causal, causal_align, seq, seq_kv)
    if block_q is None or block_kv is None:
        br, bc = pass_.paper_blocks(gpu, head_dim, dtype)
        block_q, block_kv = br if block_q is None else block_q, bc if block_kv is None else block_kv
    block_q, block_kv = Tiles(block_q, block_kv).blocks
    return _staged_fits(Config(pass_.name, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv,
                               bool(causal), dtype, gpu, causal_align, pass_, user_tiles))


def at_blocks(cfg, block_q, block_kv):
    """cfg at other tiles, checked as make_config checks them: what make_config makes of cfg's keywords with these
    tiles, without validating again the rest, which no tile changes (a tile search's 25 candidates share it)."""
    block_q, block_kv = Tiles(block_q, block_kv).blocks
    return _staged_fits(replace(cfg, block_q=block_q, block_kv=block_kv))


def _staged_fits(cfg):
    """cfg, or one line where a kernel's staged tiles need more shared memory than a thread block of the GPU has."""
    for kernel in cfg.kernels:
        need = cfg.sram_bytes(kernel)
        if need > cfg.gpu.sram_bytes_per_block:
            raise ValueError(
                f"block_q={cfg.block_q}, block_kv={cfg.block_kv}, head_dim={cfg.head_dim} ({cfg.dtype}) need "
                f"{need:,} B of SRAM in the {kernel} kernel; {cfg.gpu.name} has {cfg.gpu.sram_bytes_per_block:,} B "
                "per thread block")
    return cfg


def paper_blocks(algo, gpu, head_dim, dtype="fp16"):
    """(block_q, block_kv): a rule for the GPU's shared memory, halved until the tiles fit: flash1's is the
    FlashAttention paper's Algorithm 1 (Bc = ceil(M / 4d), Br = min(Bc, d)); flash2's (and hopper's) is gpusim's
    adaptation of it with the Q blocks outer (Br = ceil(M / 4d), at most 128, Bc = min(Br, d)), which no paper
    gives. Not what simulate() runs when given no tiles: that is best_blocks (the fastest predicted) or, for hopper,
    its launch table's."""
    pass_, gpu = pass_of(algo), get_gpu(gpu)
    dtype = dtype_name(dtype)
    pass_.check(gpu, positive_int("head_dim", head_dim), dtype)  # as make_config: what its kernel runs
    return pass_.paper_blocks(gpu, head_dim, dtype)

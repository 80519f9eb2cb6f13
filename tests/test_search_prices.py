"""best_blocks prices each candidate tile without building simulate()'s Result (gpusim/run.py _tile_time: the
configuration made once per shape and moved to each tile, cost.predicted_time's time alone): every price must be the
one simulate() reports for that tile, to the bit, and every pick the fastest of those, forward and backward, for each
pass a search weighs (naive's qk priced by cost.stored_after among them)."""
import itertools
import re

import pytest

import gpusim
from gpusim import run
from gpusim.config import at_blocks, make_config

SHAPE = dict(head_dim=64, heads=8, kv_heads=2, batch=2, dtype="fp16", seq_kv=None, causal_align="top_left")


def simulated(algo, blocks, shape, backward):
    """simulate()'s price of the tile: the forward's time, or the backward kernels' (what best_blocks weighs)."""
    if not backward:
        return gpusim.simulate(algo, block_q=blocks[0], block_kv=blocks[1], **shape).predicted_time_s
    r = gpusim.simulate(algo, backward=True, backward_blocks=blocks, **shape)
    return sum(k.predicted_time_s for k in r.kernels if k.pass_ == "backward")


@pytest.mark.parametrize("algo,backward", [("naive", False), ("flash1", False), ("flash2", False), ("hopper", False),
                                           ("naive", True), ("flash1", True), ("flash2", True)])
@pytest.mark.parametrize("gpu", ["A100-40GB", "H200-measured"])
@pytest.mark.parametrize("seq,causal", [(1000, True), (4096, False), (70001, True)])
def test_each_searched_price_is_simulates(algo, backward, gpu, seq, causal):
    if algo == "hopper" and gpu == "A100-40GB":
        pytest.skip("the Hopper kernel runs on sm_90 presets")
    shape = SHAPE | dict(seq=seq, causal=causal, gpu=gpu)
    base = make_config(algo, block_q=run.BLOCKS[0], block_kv=run.BLOCKS[0], **shape)
    kernel = "flash2_bwd_dkdv" if backward and algo == "flash2" else None
    times = {}
    for blocks in run.candidates(algo, gpusim.get_gpu(gpu), 64, "fp16", causal, kernel):
        try:
            times[blocks] = simulated(algo, blocks, shape, backward)
        except ValueError as err:
            with pytest.raises(ValueError, match=re.escape(str(err))):
                run._tile_time(algo, blocks, shape, backward, base)
            continue
        assert run._tile_time(algo, blocks, shape, backward, base) == times[blocks]
    assert run.best_blocks(algo, **shape, backward=backward) == min(times, key=times.get)


@pytest.mark.parametrize("algo", ["naive", "flash1", "flash2", "hopper"])
def test_a_configuration_moved_to_a_tile_is_make_configs(algo):
    """at_blocks: the same Config as make_config's at that tile (its cached tiling and dtype none of the base's), and
    the same one-line error where the tile's SRAM does not fit."""
    shape = SHAPE | dict(seq=5000, causal=True, gpu="H100-SXM")
    base = make_config(algo, block_q=16, block_kv=16, **shape)
    assert base.tiling.block_q == 16
    for bq, bkv in itertools.product(run.BLOCKS, run.BLOCKS):
        try:
            made = make_config(algo, block_q=bq, block_kv=bkv, **shape)
        except ValueError as err:
            with pytest.raises(ValueError, match=f"^{re.escape(str(err))}$"):
                at_blocks(base, bq, bkv)
            continue
        moved = at_blocks(base, bq, bkv)
        assert moved == made and moved.pass_ is made.pass_ and moved.user_tiles is made.user_tiles
        assert (moved.tiling, moved.itemsize) == (made.tiling, made.itemsize)

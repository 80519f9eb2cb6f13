"""gpusim_course.block_sliders and .block_sweep: the tiling explorer's slider policy and model sweeps, as
pure functions, against SRAM budgets and HBM traffic worked out by hand from FlashAttention-2's tiles
(SRAM holds Q_i, K_j and V_j: (Br + 2 Bc) x d elements; HBM: Q and O once, K and V once per Q block)."""
import math

import numpy as np
import pytest

import gpusim
from gpusim_course import block_sliders, block_sweep
from gpusim_course.block_sliders import BLOCKS

A100_SRAM = 166_912  # bytes one thread block may use on an A100


def config(**change):
    return dict(algo="flash2", seq=4096, head_dim=128, heads=1, batch=1, block_q=128, block_kv=64, causal=False,
                dtype="fp16", gpu="A100-40GB") | change


@pytest.mark.parametrize("n, pow2", [(1, True), (16, True), (48, False), (0, False), (-4, False), (512, True)])
def test_is_pow2(n, pow2):
    assert block_sliders.is_pow2(n) is pow2


@pytest.mark.parametrize("old, new, snapped", [(64, 80, 128), (128, 112, 64), (32, 48, 64), (64, 48, 32),
                                               (16, 32, 32), (256, 240, 128)])
def test_snap_goes_to_the_next_power_of_two_in_the_direction_moved(old, new, snapped):
    assert block_sliders.snap(old, new) == snapped


def test_config_error_is_gpusims_message_or_none():
    assert block_sliders.config_error(config()) is None
    # (128 + 2 x 512) x 128 x 2 B = 294,912 B > 166,912 B
    assert block_sliders.config_error(config(block_kv=512)) == (
        "block_q=128, block_kv=512, head_dim=128 (fp16) need 294,912 B of SRAM in the flash2 kernel; A100-40GB has "
        "166,912 B per thread block")


def largest_fitting(other_rows, weight):
    """The largest block in BLOCKS with (other_rows + weight x block) x d x 2 B within the A100's SRAM."""
    return max(b for b in BLOCKS if (other_rows + weight * b) * 128 * 2 <= A100_SRAM)


def test_fit_blocks_caps_each_slider_beside_the_other():
    fitted, caps, limits = block_sliders.fit_blocks(config())
    assert fitted == config()  # it fits: unchanged
    assert caps == {"block_q": largest_fitting(2 * 64, 1), "block_kv": largest_fitting(128, 2)} == {
        "block_q": 512, "block_kv": 256}
    assert limits == {"block_kv": (256, block_sliders.config_error(config(block_kv=512)))}


def test_fit_blocks_resets_blocks_that_do_not_fit_to_gpusims_defaults():
    fitted, caps, limits = block_sliders.fit_blocks(config(block_q=512, block_kv=512))
    assert (fitted["block_q"], fitted["block_kv"]) == gpusim.default_blocks("flash2", "A100-40GB", 128, "fp16")
    assert caps == {"block_q": largest_fitting(2 * fitted["block_kv"], 1),
                    "block_kv": largest_fitting(fitted["block_q"], 2)}
    assert set(limits) == {name for name in caps if caps[name] < BLOCKS[-1]}


def test_fit_blocks_raises_what_no_block_size_fixes():
    with pytest.raises(ValueError, match="heads=0"):
        block_sliders.fit_blocks(config(heads=0))


def test_with_sram_changes_only_the_sram():
    gpu = block_sweep.with_sram("A100-40GB", 32768)
    a100 = gpusim.get_gpu("A100-40GB")
    assert (gpu.name, gpu.sram_bytes_per_block, gpu.sram_bytes_per_sm) == ("A100-40GB, 32 KiB SRAM", 32768, 32768)
    assert (gpu.hbm_bytes_per_s, gpu.sm_count) == (a100.hbm_bytes_per_s, a100.sm_count)


def flash2_hbm_bytes(seq, head_dim, block_q, itemsize=2):
    """One head of FlashAttention-2 by hand: Q read and O written once, K and V read once per Q block, the
    log-sum-exp written in fp32."""
    return 2 * seq * head_dim * itemsize + 2 * math.ceil(seq / block_q) * seq * head_dim * itemsize + 4 * seq


def test_theorem2_curve_is_gpusim_with_the_default_blocks_of_each_sram_size():
    c = config(seq=1024, head_dim=64)
    curve = block_sweep.theorem2_curve(c)
    # The smallest tiles, 16 x 16, need (16 + 2 x 16) x 64 x 2 B = 6 KiB: 4 KiB is left out.
    assert curve["sram_bytes"] == [2**p for p in range(13, 22)]
    for m, flash in zip(curve["sram_bytes"], curve["flash"]):
        block_q, _ = gpusim.default_blocks("flash2", block_sweep.with_sram("A100-40GB", m), 64, "fp16")
        assert flash == flash2_hbm_bytes(1024, 64, block_q)
    assert all(a >= b for a, b in zip(curve["flash"], curve["flash"][1:]))  # more SRAM never means more traffic
    # Theorem 2's N²d²/M, scaled to the first point: halves each time M doubles.
    assert curve["theorem2"][0] == curve["flash"][0]
    assert [t * m for t, m in zip(curve["theorem2"], curve["sram_bytes"])] == pytest.approx(
        [curve["flash"][0] * curve["sram_bytes"][0]] * len(curve["sram_bytes"]))
    naive = gpusim.simulate(**(c | dict(algo="naive", block_q=None, block_kv=None,
                                        gpu=block_sweep.with_sram("A100-40GB", 2**21))))
    assert curve["naive"][-1] == naive.hbm_bytes


def test_block_grid_rows_are_block_q_and_unfitting_pairs_are_nan():
    c = config(seq=1024, head_dim=64)
    grid = block_sweep.block_grid(c)
    for a, bq in enumerate(BLOCKS):
        for b, bkv in enumerate(BLOCKS):
            fits = (bq + 2 * bkv) * 64 * 2 <= A100_SRAM
            assert np.isnan(grid["bytes"][a, b]) == (not fits)
            if fits:
                assert grid["bytes"][a, b] == flash2_hbm_bytes(1024, 64, bq)  # block_kv does not change it
                assert grid["sram"][a, b] == (bq + 2 * bkv) * 64 * 2
    assert np.isnan(grid["time"][-1, -1]) and not np.isnan(grid["time"][-1, -2])


def test_best_blocks_are_the_fastest_that_fit():
    grid = {"time": np.array([[3.0, np.nan], [1.0, 2.0]])}
    assert block_sweep.best_blocks(grid, blocks=(16, 32)) == (32, 16, 1.0)
    c = config(seq=2048, head_dim=64, heads=8)
    bq, bkv, seconds = block_sweep.best_blocks(block_sweep.block_grid(c))
    for q in BLOCKS:
        for kv in BLOCKS:
            if block_sliders.config_error(c | dict(block_q=q, block_kv=kv)) is None:
                assert gpusim.simulate(**(c | dict(block_q=q, block_kv=kv))).predicted_time_s >= seconds
    assert gpusim.simulate(**(c | dict(block_q=bq, block_kv=bkv))).predicted_time_s == seconds

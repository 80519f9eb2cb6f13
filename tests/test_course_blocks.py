"""gpusim_course.block_sliders and .block_sweep: the tiling explorer's slider policy and model sweeps, as
pure functions. The policy is checked on a GPU with one limit worked out by hand, and on gpusim; the sweeps
against FlashAttention-2's HBM traffic by hand (Q and O once, K and V once per Q block)."""
import math

import numpy as np
import pytest

import gpusim
from gpusim_course import block_sliders
from gpusim_course.tiling import block_sweep
from gpusim_course.block_sliders import BLOCKS

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


def fake_simulate(**config):
    """A GPU whose only limit is block_q + 2 x block_kv <= 256 (FlashAttention-2's Q_i, K_j and V_j rows)."""
    rows = config["block_q"] + 2 * config["block_kv"]
    if rows > 256:
        raise ValueError(f"block_q={config['block_q']}, block_kv={config['block_kv']}: {rows} rows > 256")


@pytest.fixture
def rows_limit(monkeypatch):
    monkeypatch.setattr(block_sliders.gpusim, "simulate", fake_simulate)
    monkeypatch.setattr(block_sliders.gpusim, "paper_blocks", lambda algo, gpu, head_dim, dtype: (32, 16))


def test_fit_blocks_caps_each_slider_beside_the_other(rows_limit):
    fitted, caps, limits = block_sliders.fit_blocks(config(block_q=64, block_kv=32))
    assert fitted == config(block_q=64, block_kv=32)  # it fits: unchanged
    # block_q + 64 <= 256: 128 (192 is no power of two); 64 + 2 x block_kv <= 256: 64 (96 is not)
    assert caps == {"block_q": 128, "block_kv": 64}
    assert limits == {"block_q": (128, "block_q=256, block_kv=32: 320 rows > 256"),
                      "block_kv": (64, "block_q=64, block_kv=128: 320 rows > 256")}


def test_fit_blocks_resets_blocks_that_do_not_fit_to_gpusims_defaults(rows_limit):
    fitted, caps, _ = block_sliders.fit_blocks(config(block_q=256, block_kv=256))
    assert (fitted["block_q"], fitted["block_kv"]) == (32, 16)
    assert caps == {"block_q": 128, "block_kv": 64}  # 128 + 32 <= 256; 32 + 128 <= 256


def test_fit_blocks_at_d_256_falls_back_to_gpusims_pick_where_the_papers_blocks_need_too_many_registers():
    """The paper's rule gives d = 256 on the A100 64 x 64, which fits the SRAM but needs 280 registers a thread:
    the sliders get gpusim.best_blocks' tile instead of an error."""
    c = config(head_dim=256, block_q=128, block_kv=128)
    paper = dict(zip(("block_q", "block_kv"), gpusim.paper_blocks("flash2", "A100-40GB", 256, "fp16")))
    assert block_sliders.config_error(c | paper)
    fitted, _, _ = block_sliders.fit_blocks(c)
    shape = {k: v for k, v in c.items() if k not in ("algo", "block_q", "block_kv")}
    assert (fitted["block_q"], fitted["block_kv"]) == gpusim.best_blocks("flash2", **shape)


def test_fit_blocks_on_gpusim_stops_each_slider_where_gpusim_refuses():
    fitted, caps, limits = block_sliders.fit_blocks(config(algo="flash1", gpu="T4", seq=1024, head_dim=256))
    for name, cap in caps.items():
        assert block_sliders.config_error(fitted | {name: cap}) is None
        if cap < BLOCKS[-1]:
            assert limits[name] == (cap, block_sliders.config_error(fitted | {name: 2 * cap}))
    assert limits


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


def test_theorem2_curve_is_gpusim_with_the_paper_blocks_of_each_sram_size():
    c = config(seq=1024, head_dim=64)
    curve = block_sweep.theorem2_curve(c)
    rule = {m: gpusim.paper_blocks("flash2", block_sweep.with_sram("A100-40GB", m), 64, "fp16")
            for m in block_sweep.SRAM_SIZES}

    def runs(algo, m):
        gpu = block_sweep.with_sram("A100-40GB", m)
        blocks = block_sweep.paper_blocks(algo, gpu, c)
        return block_sliders.config_error(c | dict(algo=algo, gpu=gpu, **blocks)) is None

    fits = [m for m in block_sweep.SRAM_SIZES if runs("flash2", m) or runs("naive", m)]
    assert curve["sram_bytes"] == fits and len(fits) >= 5
    assert runs("flash2", fits[0])  # the scaling point below (naive needs more SRAM for its rule's 16 x 16)
    flash = [flash2_hbm_bytes(1024, 64, rule[m][0]) if runs("flash2", m) else None for m in fits]
    assert [None if np.isnan(f) else f for f in curve["flash"]] == flash
    drawn = [f for f in flash if f is not None]
    assert all(a >= b for a, b in zip(drawn, drawn[1:]))  # more SRAM never means more traffic
    # Theorem 2's N²d²/M, scaled to the first point: halves each time M doubles.
    assert curve["theorem2"][0] == curve["flash"][0]
    assert [t * m for t, m in zip(curve["theorem2"], curve["sram_bytes"])] == pytest.approx(
        [curve["flash"][0] * curve["sram_bytes"][0]] * len(curve["sram_bytes"]))
    big = block_sweep.with_sram("A100-40GB", 2**21)
    naive = gpusim.simulate(**(c | dict(algo="naive", gpu=big, **block_sweep.paper_blocks("naive", big, c))))
    assert curve["naive"][-1] == naive.hbm_bytes


def test_theorem2_curve_at_d_256_has_points_where_only_one_algorithm_runs():
    """At d = 256 flash2's and naive's paper-rule blocks never fit at one SRAM size (the curve once came back empty
    and notebook 4's explorer raised an IndexError): each is drawn where it runs, NaN elsewhere."""
    c = config(seq=4096, head_dim=256)
    curve = block_sweep.theorem2_curve(c)
    flash, naive = np.array(curve["flash"]), np.array(curve["naive"])
    assert curve["sram_bytes"] and not (np.isfinite(flash) & np.isfinite(naive)).any()
    assert np.isfinite(flash).sum() >= 2 and np.isfinite(naive).sum() >= 2
    first = int(np.flatnonzero(np.isfinite(flash))[0])
    assert curve["theorem2"][first] == flash[first]


def test_block_grid_rows_are_block_q_and_unfitting_pairs_are_nan():
    c = config(seq=1024, head_dim=64)
    grid = block_sweep.block_grid(c)
    for a, bq in enumerate(BLOCKS):
        for b, bkv in enumerate(BLOCKS):
            fits = block_sliders.config_error(c | dict(block_q=bq, block_kv=bkv)) is None
            assert np.isnan(grid["bytes"][a, b]) == (not fits) == np.isnan(grid["time"][a, b])
            if fits:
                assert grid["bytes"][a, b] == flash2_hbm_bytes(1024, 64, bq)  # block_kv does not change it
                assert grid["sram"][a, b] >= (bq + 2 * bkv) * 64 * 2  # at least Q_i, K_j and V_j
    assert np.isnan(grid["time"]).any() and not np.isnan(grid["time"]).all()


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

"""Execute mode (the schedule walked tile by tile on real arrays) against count mode (closed forms) and
the float64 reference, plus counts worked out by hand."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusim
from gpusim.passes import get as algorithm
from gpusim.config import make_config
from gpusim.tiling import Tiling

from brute import count as brute_count

ALGOS = gpusim.ALGOS


@st.composite
def configs(draw):
    kv_heads, algo = draw(st.integers(1, 2)), draw(st.sampled_from(ALGOS))
    return dict(
        algo=algo,
        batch=draw(st.integers(1, 2)),
        kv_heads=kv_heads,
        heads=kv_heads * draw(st.integers(1, 3)),
        seq=draw(st.integers(1, 130)),
        seq_kv=draw(st.integers(1, 130)),
        head_dim=draw(st.sampled_from([64, 128] if algo == "hopper" else [16, 24, 32, 48])),  # what the kernels run
        block_q=draw(st.sampled_from([16, 32, 48, 64])),
        block_kv=draw(st.sampled_from([16, 24, 32, 64])),
        causal=draw(st.booleans()),
        dtype=draw(st.sampled_from(["fp16", "bf16", "fp8"] if algo == "hopper" else ["fp32", "fp16", "bf16", "fp8"])),
        gpu="H100-SXM",
    )


def arrays(cfg, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    shape_q = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["head_dim"])
    shape_kv = (cfg["batch"], cfg["kv_heads"], cfg["seq_kv"], cfg["head_dim"])
    return [rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_kv, shape_kv)]


@settings(max_examples=150, deadline=None)
@given(configs())
def test_closed_forms_equal_an_independent_tile_loop(cfg):
    # tests/brute.py walks the papers' loops without gpusim's tiling or element widths
    bottom_right = cfg["causal"] and cfg["seq_kv"] >= cfg["seq"] and cfg["block_q"] % 2 == 0  # both, where defined
    counted = gpusim.simulate(**cfg, causal_align="bottom_right" if bottom_right else "top_left")
    expected = brute_count(cfg["algo"], cfg["batch"], cfg["heads"], cfg["seq"], cfg["seq_kv"], cfg["head_dim"],
                           cfg["block_q"], cfg["block_kv"], cfg["causal"], cfg["dtype"],
                           counted.config.gpu.sram_bytes_per_block, bottom_right)
    assert counted.counts == expected


@settings(max_examples=150, deadline=None)
@given(configs())
def test_execute_counts_equal_closed_form_and_output_matches_reference(cfg):
    q, k, v = arrays(cfg)
    executed = gpusim.simulate(**cfg, q=q, k=k, v=v)
    counted = gpusim.simulate(**cfg)
    assert executed.counts == counted.counts
    assert executed.to_dict() == counted.to_dict()
    # float64 arithmetic in a different order than the reference: a few ulps of O(1) values
    np.testing.assert_allclose(executed.output, gpusim.reference_attention(q, k, v, causal=cfg["causal"]),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("algo", ALGOS)
def test_float32_arrays_run_in_float32(algo):
    cfg = dict(algo=algo, batch=1, heads=2, kv_heads=1, seq=70, seq_kv=50, head_dim=64 if algo == "hopper" else 32,
               block_q=32, block_kv=16, causal=True, gpu="H100-SXM")
    q, k, v = arrays(cfg, dtype=np.float32)
    r = gpusim.simulate(**cfg, q=q, k=k, v=v, dtype="fp16" if algo == "hopper" else None)  # hopper runs no fp32
    assert r.output.dtype == np.float32
    # float32 unit roundoff 6e-8, amplified by sums of up to 50 terms and exp: 1e-5 is generous
    np.testing.assert_allclose(r.output, gpusim.reference_attention(q, k, v, causal=True), rtol=0, atol=1e-5)


def test_flash2_matches_the_h200_hardware_counter():
    # h200-baselines.md: l1tex__m_xbar2l1tex_read_bytes = 545,259,520 B for a Triton FA2 kernel at N=4096,
    # d=64, 16 heads, Q tile 128: Q once, K and V once per Q tile.
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, heads=16, block_q=128, block_kv=64, gpu="H200")
    assert r.hbm_read_bytes == 545_259_520
    assert r.by_tensor["O"]["write_bytes"] == 4096 * 64 * 2 * 16


def test_naive_by_hand():
    n, d, e = 256, 64, 2
    r = gpusim.simulate("naive", seq=n, head_dim=d, block_q=64, block_kv=128)
    t = r.counts
    assert t[("qk", "Q")] == (2 * n * d * e, 0)  # Tc = 2 column tiles each read all of Q
    assert t[("qk", "K")] == (4 * n * d * e, 0)  # Tr = 4 row tiles each read all of K
    assert t[("qk", "S")] == (0, n * n * e)
    assert t[("softmax", "S")] == (n * n * e, 0)
    assert t[("softmax", "P")] == (0, n * n * e)
    assert t[("pv", "P")] == (n * n * e, 0)
    assert t[("pv", "V")] == (4 * n * d * e, 0)
    assert t[("pv", "O")] == (0, n * d * e)


def test_flash1_by_hand():
    n, d, e, br, bc = 256, 32, 2, 64, 128
    r = gpusim.simulate("flash1", seq=n, head_dim=d, block_q=br, block_kv=bc)
    tc = n // bc
    assert r.by_tensor["K"] == {"read_bytes": n * d * e, "write_bytes": 0}  # K_j loaded once
    assert r.by_tensor["Q"] == {"read_bytes": tc * n * d * e, "write_bytes": 0}  # Q_i once per outer step
    assert r.by_tensor["O"] == {"read_bytes": tc * n * d * 4, "write_bytes": (1 + tc) * n * d * 4}  # init + RMW
    assert r.by_tensor["m"] == {"read_bytes": tc * n * 4, "write_bytes": (1 + tc) * n * 4}


def test_causal_skips_whole_tiles_only():
    n, b = 512, 64
    full = gpusim.simulate("flash2", seq=n, head_dim=64, block_q=b, block_kv=b)
    causal = gpusim.simulate("flash2", seq=n, head_dim=64, block_q=b, block_kv=b, causal=True)
    t = n // b
    assert causal.by_tensor["K"]["read_bytes"] * t == full.by_tensor["K"]["read_bytes"] * (t + 1) // 2
    assert causal.config.tiling.tiles == t * (t + 1) // 2
    naive = gpusim.simulate("naive", seq=n, head_dim=64, block_q=b, block_kv=b, causal=True)
    assert naive.counts[("qk", "S")][1] == t * (t + 1) // 2 * b * b * 2  # visited tiles are written whole


def _unmasked_by_hand(n, n_kv, br, bc, offset):
    """Per Q block, the leading K/V blocks every one of its rows sees whole, from the mask's definition (row r
    sees keys 0 .. r + offset), block by block."""
    blocks = []
    for i in range(-(-n // br)):
        j = 0
        while (j + 1) * bc <= n_kv and (j + 1) * bc - 1 <= i * br + offset:
            j += 1
        blocks.append(j)
    return blocks


@pytest.mark.parametrize("n, n_kv, br, bc, offset", [
    (100, 163, 64, 64, 63),  # bottom-right: Q block 0's first row sees keys 0 .. 63, all of block 0
    (200, 200, 31, 16, 0),  # top-left, odd tiles: Q block 1's first row sees keys 0 .. 31, blocks 0 and 1
    (1000, 1500, 48, 24, 500), (777, 777, 16, 64, 0), (300, 4096, 64, 128, 3796),
    (70, 50, 32, 16, 0), (130, 100, 64, 16, 0)])  # top-left, a ragged last K/V block: the first Q block reaching it
def test_unmasked_blocks_are_the_blocks_every_row_sees_whole(n, n_kv, br, bc, offset):
    """The model prices these blocks' scores without the mask's cost, as a kernel's unmasked loop runs them. It
    counted one block fewer where a Q block's first row sees exactly to a block's end (i * Br + offset + 1 a
    multiple of Bc): with bottom-right alignment, or tiles no kernel runs."""
    t = Tiling(n, n_kv, br, bc, True, offset)
    hand = _unmasked_by_hand(n, n_kv, br, bc, offset)
    assert [t.unmasked_blocks_of(i) for i in range(t.n_q_blocks)] == hand
    assert t.unmasked_tiles == sum(hand)
    rows = [min(br, n - i * br) for i in range(len(hand))]
    assert t.unmasked_elements == bc * sum(r * k for r, k in zip(rows, hand))


def test_the_kernels_unmasked_rule_is_the_models_on_the_tiles_they_run():
    """kernels/tiles.py's unmasked_blocks (and kernels/hopper.py's) count min(N_kv // Bc, i * Br // Bc): top-left,
    power-of-two tiles of 16 to 256, where i * Br + 1 is odd and so never a multiple of Bc, it equals the model's."""
    for br in (16, 32, 64, 128, 256):
        for bc in (16, 32, 64, 128, 256):
            t = Tiling(4096, 4096 - 5, br, bc, True)
            assert [t.unmasked_blocks_of(i) for i in range(t.n_q_blocks)] == [
                min(t.seq_kv // bc, i * br // bc) for i in range(t.n_q_blocks)]


def test_causal_with_more_queries_than_keys():
    # top-left alignment: rows past the last key see every key, no row is empty. Q block 0 (rows 0-31)
    # visits K/V blocks 0-1 (32 keys); the others all 3 blocks, written up to the end of S's rows: 40 keys
    # rounded up to 48 columns (16-element rows, kernels/naive.py).
    r = gpusim.simulate("naive", seq=100, seq_kv=40, head_dim=16, block_q=32, block_kv=16, causal=True)
    assert r.counts[("qk", "S")][1] == (32 * 32 + 68 * 48) * 2
    assert r.config.tiling.kept_elements == 40 * 41 // 2 + 60 * 40


def test_softmax_streams_rows_that_overflow_sram():
    tiny = dataclasses.replace(gpusim.get_gpu("T4"), name="tiny", sram_bytes_per_block=8192)
    kw = dict(seq=64, seq_kv=5000, head_dim=16, block_q=16, block_kv=16, gpu=tiny)
    r = gpusim.simulate("naive", **kw)
    assert not r.config.softmax_fits
    row = 5008  # 5,000 keys, S's rows padded to a multiple of 16 elements
    assert r.counts[("softmax", "S")][0] == 3 * 64 * row * 2  # max pass, sum pass, write pass
    big = gpusim.simulate("naive", **{**kw, "gpu": "H100-SXM"})
    assert big.counts[("softmax", "S")][0] == 64 * row * 2


def test_gqa_reads_kv_per_query_head_but_stores_fewer():
    mha = gpusim.simulate("flash2", seq=1024, head_dim=64, heads=8)
    gqa = gpusim.simulate("flash2", seq=1024, head_dim=64, heads=8, kv_heads=2)
    assert gqa.counts == mha.counts  # each query head's blocks load their K/V tiles
    assert mha.hbm_peak_bytes - gqa.hbm_peak_bytes == 2 * 6 * 1024 * 64 * 2  # 6 fewer K and V heads


def test_fp8_halves_operand_bytes_and_writes_fp16_output():
    tiles = dict(block_q=128, block_kv=128)  # the same tiles: the fastest differ between the two dtypes
    f16 = gpusim.simulate("hopper", seq=2048, head_dim=128, gpu="H100-SXM", dtype="fp16", **tiles)
    f8 = gpusim.simulate("hopper", seq=2048, head_dim=128, gpu="H100-SXM", dtype="fp8", **tiles)
    for t in "QKV":
        assert 2 * f8.by_tensor[t]["read_bytes"] == f16.by_tensor[t]["read_bytes"]
    assert f8.by_tensor["O"] == f16.by_tensor["O"]


@pytest.mark.parametrize("d", [32, 64, 128])
def test_theorem2_flash_bytes_scale_as_one_over_m_naive_nxn_does_not(d):
    # Theorem 2 with the paper's tiles, Bc = M / 6d (its M / 4d, less room for gpusim's fp32 O_i, l_i, m_i) and
    # Br = min(Bc, d), for M from 32 to 256 KiB of fp16, any size (not powers of two only), inside the theorem's
    # d <= M <= N d (at M near N d the N d terms of K, V and O catch up). Bytes only (no time, no register limit).
    n = 16384
    flash, nxn = [], []
    for kib in (32, 48, 96, 160, 256):
        gpu = dataclasses.replace(gpusim.get_gpu("H100-SXM"), name=f"{kib}K", sram_bytes_per_block=kib * 1024,
                                  sram_bytes_per_sm=kib * 1024)
        m = kib * 1024 // 2  # SRAM in fp16 elements
        bc = m // (6 * d)
        cfg = make_config("flash1", seq=n, head_dim=d, block_q=min(bc, d), block_kv=bc, gpu=gpu)
        moved = sum(r + w for r, w in algorithm("flash1").count(cfg).values()) // 2  # fp16 elements (O counts 2x)
        flash.append(moved * m / (n**2 * d**2))
        naive = algorithm("naive").count(make_config("naive", seq=n, head_dim=d, block_q=64, block_kv=64, gpu=gpu))
        nxn.append(sum(naive[key][0] + naive[key][1] for key in naive if key[1] in "SP"))
    assert max(flash) / min(flash) < 1.15, flash  # bytes * M / (N^2 d^2) stays put while M grows 8x
    assert len(set(nxn)) == 1  # the N^2 term does not move at all
    assert gpusim.theorem2(n, d, 1)["naive"] == n * d + n * n


def test_trace_steps_add_up_and_follow_the_online_softmax():
    kw = dict(seq=100, head_dim=16, block_q=32, block_kv=16, causal=True)
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 1, 100, 16)) for _ in range(3))
    r = gpusim.simulate("flash2", **kw, q=q, k=k, v=v, trace=True)
    steps = r.trace
    t = r.config.tiling
    assert len(steps) == t.tiles + t.n_q_blocks  # one step per tile, one per O_i written: grows with tiles
    totals = {}
    for s in steps:
        for tensor, nbytes in s.loads:
            totals[tensor] = totals.get(tensor, 0) + nbytes
        assert s.sram_bytes <= r.config.gpu.sram_bytes_per_block
    assert totals == {k: v["read_bytes"] for k, v in r.by_tensor.items() if v["read_bytes"]}
    s = q[0, 0] @ k[0, 0].T / 4.0
    s = np.where(np.tril(np.ones((100, 100), bool)), s, -np.inf)
    last = [st_ for st_ in steps if st_.tile[1] is not None and st_.tile[0] == 0][-1]
    np.testing.assert_allclose(last.m_i, s[:32].max(axis=1))  # running max ends at the row max
    np.testing.assert_allclose(last.l_i, np.exp(s[:32] - s[:32].max(axis=1, keepdims=True)).sum(axis=1))
    assert all((st_.rescale <= 1).all() for st_ in steps if st_.rescale is not None)


def test_trace_without_arrays_draws_seeded_inputs():
    a = gpusim.simulate("flash1", seq=64, head_dim=16, block_q=16, block_kv=32, trace=True)
    b = gpusim.simulate("flash1", seq=64, head_dim=16, block_q=16, block_kv=32, trace=True)
    assert a.output is None
    np.testing.assert_array_equal(a.trace[-1].m_i, b.trace[-1].m_i)
    assert a.counts == gpusim.simulate("flash1", seq=64, head_dim=16, block_q=16, block_kv=32).counts


def test_count_mode_handles_a_million_tokens():
    r = gpusim.simulate("flash2", seq=1 << 20, head_dim=128, heads=32, causal=True, gpu="H200", block_q=16,
                        block_kv=16)
    n, d, bh = 1 << 20, 128, 32
    assert r.by_tensor["Q"]["read_bytes"] == bh * n * d * 2
    assert r.by_tensor["K"]["read_bytes"] == bh * sum(16 * (i + 1) for i in range(n // 16)) * d * 2
    assert algorithm("flash2").count(r.config) == r.counts


@pytest.mark.parametrize("algo, backward", [("naive", False), ("naive", True), ("flash1", False), ("flash1", True),
                                            ("flash2", False), ("flash2", True), ("split_kv", False)])
def test_every_pass_prices_the_longest_sequence_gpusim_counts_at_the_smallest_tiles(algo, backward):
    """N = MAX_SEQ (2**40) on 16 x 16 tiles: naive's backward launches (N / 16)**2 = 2**72 programs a head, past
    int64; the launch's tail and last wave are taken in Python's integers (a fuzz of simulate found both)."""
    from gpusim.shape import MAX_SEQ
    shape = dict(seq=1, seq_kv=MAX_SEQ, block_kv=16) if algo == "split_kv" else dict(
        seq=MAX_SEQ, block_q=16, block_kv=16, causal=True, backward=backward, **({"backward_blocks": (16, 16)}
                                                                                   if backward else {}))
    r = gpusim.simulate(algo, head_dim=64, heads=8, gpu="H200", **shape)
    assert 0 < r.predicted_time_s < math.inf and type(r.hbm_read_bytes) is int and r.hbm_read_bytes > MAX_SEQ

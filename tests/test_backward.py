"""The backward model (gpusim/backward.py, gpusim/passes/*_backward.py, run by gpusim.train): execute mode
against the closed forms and the float64 reference, an independent tile-by-tile counter written from the
papers' loops, FLOPs, training memory, Theorem 5, and bad input."""
import dataclasses
import math
from pathlib import Path
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusim
from gpusim import backward
from gpusim.execute import attention_grad_reference, forward_saved

ALGOS = backward.ALGOS


def simulate_backward(algo, *, block_q=None, block_kv=None, **kw):
    """The backward's part of gpusim.train's training step at backward tiles (block_q, block_kv): its
    configuration, counts, gradients and trace."""
    r = gpusim.train(algo, backward_blocks=None if block_q is None else (block_q, block_kv), **kw)
    kernels = r.backward_config.kernels
    return dataclasses.replace(r, config=r.backward_config, counts={key: rw for key, rw in r.counts.items()
                                                                    if key[0] in kernels},
                               trace=r.trace and tuple(s for s in r.trace if s.kernel in kernels))


@st.composite
def configs(draw):
    kv_heads = draw(st.integers(1, 2))
    return dict(algo=draw(st.sampled_from(ALGOS)), batch=draw(st.integers(1, 2)), kv_heads=kv_heads,
                heads=kv_heads * draw(st.integers(1, 3)), seq=draw(st.integers(1, 90)), seq_kv=draw(st.integers(1, 90)),
                head_dim=draw(st.sampled_from([16, 24, 32])), block_q=draw(st.sampled_from([16, 32, 48])),
                block_kv=draw(st.sampled_from([16, 24, 32])), causal=draw(st.booleans()),
                dtype=draw(st.sampled_from(["fp32", "fp16", "bf16"])), gpu="H100-SXM")


def arrays(cfg, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    q_shape = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["head_dim"])
    kv_shape = (cfg["batch"], cfg["kv_heads"], cfg["seq_kv"], cfg["head_dim"])
    return [rng.standard_normal(s).astype(dtype) for s in (q_shape, kv_shape, kv_shape, q_shape)]


def shape_of(cfg):
    return {k: v for k, v in cfg.items() if k != "algo"}


@settings(max_examples=120, deadline=None)
@given(configs())
def test_execute_counts_equal_closed_form_and_gradients_match_reference(cfg):
    q, k, v, do = arrays(cfg)
    run = simulate_backward(cfg["algo"], q=q, k=k, v=v, do=do, **shape_of(cfg))
    assert run.counts == backward.count(run.config)
    assert run.counts == simulate_backward(cfg["algo"], **shape_of(cfg)).counts
    # float64 arithmetic in another order than the reference's: a few ulps of O(1) values
    for got, expected in zip(run.grads, attention_grad_reference(q, k, v, do, causal=cfg["causal"])):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_reference_gradients_equal_torch_autograd():
    torch = pytest.importorskip("torch")
    cfg = dict(batch=2, heads=4, kv_heads=2, seq=37, seq_kv=53, head_dim=16)
    for causal in (False, True):
        q, k, v, do = arrays(cfg, seed=1)
        tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=True)
        out.backward(torch.tensor(do))
        for got, expected in zip(attention_grad_reference(q, k, v, do, causal=causal), (tq.grad, tk.grad, tv.grad)):
            np.testing.assert_allclose(got, expected.numpy(), rtol=0, atol=1e-12)


def brute_force(algo, batch, heads, kv_heads, seq, seq_kv, head_dim, block_q, block_kv, causal, e, ds_fits):
    """Bytes by walking every tile of the papers' loops (FlashAttention Algorithms 3 and 4, the
    FlashAttention-2 backward), with its own visibility rule: tile (rows, keys) is computed unless causal
    and its first key is right of its last row. Independent of Tiling and of the closed forms. naive's P, dP and dS
    have rows n_kv rounded up to 16 apart (as far as the K/V blocks reach), the last block's columns reaching it."""
    n, nk, d, group, f = seq, seq_kv, head_dim, heads // kv_heads, 4
    c = defaultdict(lambda: [0, 0])
    ld = min(-(-nk // 16) * 16, -(-nk // block_kv) * block_kv)

    def blocks(length, size):  # (start, rows) of each block
        return [(s, min(size, length - s)) for s in range(0, length, size)]

    def cols(ks, kr):  # a K/V block's columns in P, dP, dS
        return (ld if ks + kr == nk else ks + kr) - ks

    def seen(q_block, kv_start):
        return not causal or kv_start <= q_block[0] + q_block[1] - 1

    qb, kb = blocks(n, block_q), blocks(nk, block_kv)
    for b in range(batch):
        for hk in range(kv_heads):
            heads_of = range(hk * group, (hk + 1) * group)
            if algo == "naive":
                for kernel, a, x, out in (("dv", "P", "dO", "dV"), ("dk", "dS", "Q", "dK")):
                    for ks, kr in kb:
                        for _ in heads_of:
                            for qs, qr in (blk for blk in qb if seen(blk, ks)):
                                c[kernel, a][0] += qr * cols(ks, kr) * e
                                c[kernel, x][0] += qr * d * e
                        c[kernel, out][1] += kr * d * e
            if algo == "flash1":
                for _ in heads_of:
                    c["flash1_bwd", "dQ"][1] += n * d * f
                c["flash1_bwd", "dK"][1] += nk * d * e
                c["flash1_bwd", "dV"][1] += nk * d * e
                for ks, kr in kb:
                    visitors = [blk for blk in qb if seen(blk, ks)]
                    if not visitors:
                        continue
                    for t in "KV":
                        c["flash1_bwd", t][0] += kr * d * e
                    for _ in heads_of:
                        for qs, qr in visitors:
                            for t, size in (("Q", d * e), ("O", d * f), ("dO", d * f), ("dQ", d * f), ("l", f),
                                            ("m", f)):
                                c["flash1_bwd", t][0] += qr * size
                            c["flash1_bwd", "dQ"][1] += qr * d * f
                    c["flash1_bwd", "dK"][1] += kr * d * e
                    c["flash1_bwd", "dV"][1] += kr * d * e
            if algo == "flash2":  # dK/dV: K/V blocks of block_q rows held, Q blocks of block_kv rows streamed
                for ks, kr in blocks(nk, block_q):
                    visitors = [blk for blk in blocks(n, block_kv) if seen(blk, ks)]
                    for t in "KV":
                        c["dkdv", t][0] += kr * d * e if visitors else 0
                    for _ in heads_of:
                        for qs, qr in visitors:
                            for t, size in (("Q", d * e), ("dO", d * e), ("LSE", f), ("D", f)):
                                c["dkdv", t][0] += qr * size
                    c["dkdv", "dK"][1] += kr * d * e
                    c["dkdv", "dV"][1] += kr * d * e
        for h in range(heads):
            for qs, qr in qb:
                visited = [blk for blk in kb if seen((qs, qr), blk[0])]
                keys = sum(kr for _, kr in visited)
                if algo == "naive":
                    for ks, kr in visited:
                        c["dp", "dO"][0] += qr * d * e
                        c["dp", "V"][0] += kr * d * e
                        c["dp", "dP"][1] += qr * cols(ks, kr) * e
                        c["dq", "dS"][0] += qr * cols(ks, kr) * e
                        c["dq", "K"][0] += kr * d * e
                    c["dq", "dQ"][1] += qr * d * e
                    row = sum(cols(ks, kr) for ks, kr in visited)
                    for t in ("P", "dP"):  # one program per row of the block
                        c["ds", t][0] += qr * row * e * (1 if ds_fits else 2)
                    c["ds", "dS"][1] += qr * row * e
                if algo == "flash2":
                    for t in ("O", "dO"):
                        c["preprocess", t][0] += qr * d * e
                    c["preprocess", "D"][1] += qr * f
                    for t, size in (("Q", d * e), ("dO", d * e), ("LSE", f), ("D", f)):
                        c["dq", t][0] += qr * size
                    for t in "KV":
                        c["dq", t][0] += keys * d * e
                    c["dq", "dQ"][1] += qr * d * e
    return {key: tuple(rw) for key, rw in c.items()}


@pytest.mark.parametrize("seed", range(30))
def test_independent_tile_walk_equals_closed_form(seed):
    rng = np.random.default_rng(seed)
    kv_heads = int(rng.integers(1, 3))
    shape = dict(batch=int(rng.integers(1, 3)), heads=kv_heads * int(rng.integers(1, 4)), kv_heads=kv_heads,
                 seq=int(rng.integers(1, 200)), seq_kv=int(rng.integers(1, 500)), head_dim=int(rng.choice([16, 40])),
                 block_q=int(rng.choice([16, 32, 64])), block_kv=int(rng.choice([16, 32, 48])), causal=bool(seed % 2))
    gpu = "A100-40GB"
    if seed % 6 == 3:  # naive with 1.5 KiB of SRAM: 16 x 16 tiles of d = 16 fit, rows of over 384 keys stream
        shape |= dict(head_dim=16, block_q=16, block_kv=16)
        gpu = dataclasses.replace(gpusim.get_gpu(gpu), name="tiny", sram_bytes_per_block=1536)
    cfg = backward.config(ALGOS[seed % 3], **shape, dtype="fp16", gpu=gpu)
    walked = brute_force(cfg.algo, **shape, e=2, ds_fits=cfg.ds_fits)
    assert backward.count(cfg) == {key: rw for key, rw in walked.items() if rw != (0, 0)}


def test_naive_ds_streams_rows_that_overflow_sram():
    tiny = dataclasses.replace(gpusim.get_gpu("A100-40GB"), name="tiny", sram_bytes_per_block=1024)
    kw = dict(batch=1, heads=2, kv_heads=1, seq=20, seq_kv=300, head_dim=16, block_q=16, block_kv=16, gpu=tiny)
    for causal in (False, True):
        q, k, v, do = arrays(kw, seed=2)
        run = simulate_backward("naive", q=q, k=k, v=v, do=do, causal=causal, **kw)
        assert not run.config.ds_fits
        assert run.counts == backward.count(run.config)
        assert run.counts[("ds", "P")][0] == 2 * run.counts[("ds", "dS")][1]  # two passes over each row
        for got, expected in zip(run.grads, attention_grad_reference(q, k, v, do, causal=causal)):
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("algo", ALGOS)
def test_float32_arrays_run_in_float32(algo):
    kw = dict(batch=1, heads=2, kv_heads=1, seq=70, seq_kv=50, head_dim=32, block_q=32, block_kv=16, causal=True)
    q, k, v, do = arrays(kw, dtype=np.float32)
    run = simulate_backward(algo, q=q, k=k, v=v, do=do, **kw)
    assert all(g.dtype == np.float32 for g in run.grads)
    # float32 unit roundoff 6e-8, amplified by sums of up to 70 terms of O(1) and exp: 1e-4 is generous
    for got, expected in zip(run.grads, attention_grad_reference(q, k, v, do, causal=True)):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


def test_flash2_by_hand():
    n, d, e, br, bc = 256, 64, 2, 128, 32
    c = backward.count(backward.config("flash2", seq=n, head_dim=d, block_q=br, block_kv=bc))
    assert c[("dkdv", "K")] == (n * d * e, 0)  # each K_j held once
    assert c[("dkdv", "Q")] == (n // br * n * d * e, 0)  # Q streamed past each of the Tc = N / Br K/V blocks
    assert c[("dq", "K")] == (n // br * n * d * e, 0)  # K streamed past each of the N / Br Q blocks
    assert c[("dq", "Q")] == (n * d * e, 0)
    assert c[("preprocess", "D")] == (0, n * 4)


def test_flash1_by_hand():
    n, d, e, br, bc = 256, 32, 2, 64, 128
    c = backward.count(backward.config("flash1", seq=n, head_dim=d, block_q=br, block_kv=bc))
    tc = n // bc
    assert c[("flash1_bwd", "dQ")] == (tc * n * d * 4, (1 + tc) * n * d * 4)  # zeroed, then read-modify-written
    assert c[("flash1_bwd", "O")] == (tc * n * d * 4, 0)  # the forward's fp32 O, every step
    assert c[("flash1_bwd", "dK")] == (0, 2 * n * d * e)  # zeroed (line 5) and written (line 24)


def test_gqa_writes_dk_dv_once_per_kv_head():
    mha = backward.count(backward.config("flash2", seq=512, head_dim=64, heads=8))
    gqa = backward.count(backward.config("flash2", seq=512, head_dim=64, heads=8, kv_heads=2))
    assert 4 * gqa[("dkdv", "dK")][1] == mha[("dkdv", "dK")][1]
    assert 4 * gqa[("dkdv", "K")][0] == mha[("dkdv", "K")][0]  # K_j held once for the group
    assert gqa[("dq", "K")] == mha[("dq", "K")]  # every query head's dQ program streams its K/V


@pytest.mark.parametrize("algo, matmuls", [("naive", 4), ("flash1", 5), ("flash2", 7)])
def test_backward_matmul_flops(algo, matmuls):
    b, h, n, d = 2, 4, 512, 64
    for causal in (False, True):
        cfg = backward.config(algo, batch=b, heads=h, seq=n, head_dim=d, block_q=64, block_kv=64, causal=causal)
        matmul = sum(mm for mm, _, _ in backward.flops(cfg).values())
        assert matmul == matmuls * 2 * d * b * h * cfg.tiling.tile_elements  # 2d FLOPs per score per matmul
    assert backward.nominal_flops(b, h, n, d, False) == 2.5 * 4 * b * h * n * n * d
    assert backward.nominal_flops(b, h, n, d, True) == 2.5 * 2 * b * h * n * n * d


def test_exps_are_one_per_recomputed_score():
    cfg = backward.config("flash2", seq=300, head_dim=64, block_q=64, block_kv=32, causal=True)
    fl = backward.flops(cfg)
    assert fl["dkdv"][2] == cfg.kv_tiling.tile_elements and fl["dq"][2] == cfg.tiling.tile_elements
    assert backward.flops(backward.config("naive", seq=300, head_dim=64))["ds"][2] == 0  # naive reads P


def test_theorem5_flash_bytes_scale_as_one_over_m_naive_nxn_does_not():
    rows = backward.theorem5_counts(16384, 64, [kib * 1024 for kib in (128, 256, 512, 1024)])
    ratios = [r["flash_ratio"] for r in rows]
    assert max(ratios) / min(ratios) < 1.3  # bytes * M / (N² d²) stays put while M grows 8x
    assert len({r["naive_nxn_bytes"] for r in rows}) == 1
    assert backward.theorem5(1024, 64, 1) == {"naive": 1024 * 64 + 1024**2, "flash": 1024**2 * 64**2}


def test_saved_bytes_by_hand():
    b, h, n, d, e = 2, 16, 1024, 64, 2
    naive = backward.saved_bytes(backward.config("naive", batch=b, heads=h, seq=n, head_dim=d))
    flash = backward.saved_bytes(backward.config("flash2", batch=b, heads=h, seq=n, head_dim=d))
    assert naive["P"] == b * h * n * n * e
    assert (flash["O"], flash["LSE"]) == (b * h * n * d * e, b * h * n * 4)
    assert naive["Q"] == flash["Q"] == b * h * n * d * e


def test_peak_footprint_by_hand():
    b, h, n, d, e = 1, 2, 256, 64, 2
    qkv, nn = 3 * b * h * n * d * e, b * h * n * n * e
    naive = backward.config("naive", batch=b, heads=h, seq=n, head_dim=d)
    # at the ds kernel: Q, K, V, P, O, dO, dV, dP, dS
    assert backward.peak_bytes(naive) == qkv + 3 * nn + 3 * b * h * n * d * e
    flash = backward.config("flash2", batch=b, heads=h, seq=n, head_dim=d)
    # Q, K, V, O, LSE, dO, D, dQ, dK, dV
    assert backward.peak_bytes(flash) == qkv + 5 * b * h * n * d * e + 2 * b * h * n * 4


def test_naive_training_runs_out_of_hbm_first():
    shape = dict(layers=24, heads=16, head_dim=64, batch=8, gpu="A100-40GB")
    for algo in ("naive", "flash2"):
        n = backward.max_trainable_seq(algo, **shape)
        assert backward.model_memory(algo, seq=n, **{k: v for k, v in shape.items()})["fits"]
        assert not backward.model_memory(algo, seq=n + 1, **shape)["fits"]
    assert backward.max_trainable_seq("flash2", **shape) > 8 * backward.max_trainable_seq("naive", **shape)


def test_first_touch_is_at_most_the_count():
    for algo in ALGOS:
        cfg = backward.config(algo, seq=777, seq_kv=500, head_dim=64, heads=4, kv_heads=2, causal=True)
        counted, touched = backward.count(cfg), backward.first_touch(cfg)
        assert touched.keys() == counted.keys()
        assert all(touched[key][0] <= read and touched[key][1] <= write for key, (read, write) in counted.items())


def test_trace_steps_add_up_to_the_counts():
    kw = dict(seq=100, head_dim=16, block_q=32, block_kv=16, causal=True, heads=2, kv_heads=1)
    q, k, v, do = arrays(dict(kw, batch=1, seq_kv=100), seed=3)
    run = simulate_backward("flash2", q=q, k=k, v=v, do=do, trace=True, **kw)
    totals = defaultdict(lambda: [0, 0])
    for step in run.trace:
        for tensor, nbytes in step.loads:
            totals[step.kernel, tensor][0] += nbytes
        for tensor, nbytes in step.stores:
            totals[step.kernel, tensor][1] += nbytes
    assert {key: tuple(rw) for key, rw in totals.items()} == run.counts
    t = run.config.kv_tiling  # a step per tile and query head, one per K/V block written
    assert sum(s.kernel == "dkdv" for s in run.trace) == 2 * t.tiles + t.n_kv_blocks


def test_forward_saved_lse_reproduces_p():
    q, k, v, _ = arrays(dict(batch=1, heads=1, kv_heads=1, seq=30, seq_kv=40, head_dim=8))
    p = forward_saved(("P",), q, k, v, True)["P"]
    flash = forward_saved(("O", "LSE"), q, k, v, True)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(8)
    expected = np.where(np.tril(np.ones((30, 40), bool)), np.exp(s - flash["LSE"][..., None]), 0.0)
    np.testing.assert_allclose(p, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("kwargs, message", [
    (dict(dtype="fp8"), "dtype='fp8': an fp8 forward has no backward here"),
    (dict(algo="hopper"), "algo='hopper' has no backward model: choose one of naive, flash1, flash2"),
    (dict(heads=6, kv_heads=4), "heads=6 is not a multiple of kv_heads=4"),
    (dict(seq=0), "seq=0 must be a positive integer"),
    (dict(block_q=256, block_kv=256, head_dim=128, gpu="A100-40GB"),  # K_j, V_j, Q_i, dO_i: 4 x 65,536; LSE_i, D_i
     "block_q=256, block_kv=256, head_dim=128 (fp16) need 264,192 B of SRAM in the backward's dkdv kernel; "
     "A100-40GB has 166,912 B per thread block"),
    (dict(dtype="bf16", gpu="T4"), "dtype='bf16': T4 has no bf16 tensor cores"),
])
def test_bad_configuration(kwargs, message):
    kw = {"algo": "flash2", "seq": 1024, "head_dim": 64, **kwargs}
    with pytest.raises(ValueError) as err:
        backward.config(kw.pop("algo"), **kw)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_execute_mode_needs_do():
    q, k, v, do = arrays(dict(batch=1, heads=1, kv_heads=1, seq=8, seq_kv=8, head_dim=16))
    with pytest.raises(ValueError, match=r"^backward=True with q, k, v needs do, the output's gradient"):
        simulate_backward("flash2", q=q, k=k, v=v)
    with pytest.raises(ValueError, match="shaped like q"):
        simulate_backward("flash2", q=q, k=k, v=v, do=do[:, :, :4])
    with pytest.raises(ValueError, match="seq=9 does not match the arrays, which have seq=8"):
        simulate_backward("flash2", q=q, k=k, v=v, do=do, seq=9)


@pytest.mark.parametrize("algo, shape", [("flash2", dict(head_dim=256, gpu="H200")),
                                         ("flash2", dict(head_dim=200, gpu="H200-measured")),
                                         ("naive", dict(head_dim=128, gpu="RTX-4090", causal=True))])
def test_the_backwards_default_tiles_are_halved_until_every_kernel_is_resident(algo, shape):
    """The rule's tiles (flash2's 128 x 32, which fit the SRAM; naive's, its forward's) need more registers per thread
    than the GPU has at these head dims: given, they are refused; left to the rule, the larger is halved until an SM
    holds a block of every backward kernel, the first such halving."""
    from gpusim.occupancy import occupancy, resources
    r = gpusim.simulate(algo, seq=4096, backward=True, **shape)
    b = r.backward_config
    start = (gpusim.best_blocks(algo, seq=4096, **shape) if algo == "naive" else
             backward.default_blocks(algo, shape["gpu"], shape["head_dim"], "fp16"))
    with pytest.raises(ValueError, match="registers per thread"):
        gpusim.simulate(algo, seq=4096, backward=True, backward_blocks=start, **shape)
    assert all(occupancy(b.gpu, resources(b, kernel)).blocks_per_sm for kernel in b.kernels)
    larger = (2 * b.block_q, b.block_kv) if b.block_q >= b.block_kv else (b.block_q, 2 * b.block_kv)
    with pytest.raises(ValueError, match="registers per thread"):  # the halving before it did not fit
        gpusim.simulate(algo, seq=4096, backward=True, backward_blocks=larger, **shape)
    if algo == "naive":  # its kernels run both passes at one tile: the forward takes the halving too
        assert (r.config.block_q, r.config.block_kv) == (b.block_q, b.block_kv) != start


@pytest.mark.parametrize("shape", [dict(head_dim=128, heads=8, gpu="RTX-4090"),
                                   dict(head_dim=96, heads=8, gpu="RTX-4090"),
                                   dict(head_dim=80, heads=8, gpu="T4", dtype="fp32")])
def test_naives_training_step_halves_a_forward_pick_its_backward_cannot_stage(shape):
    """naive's forward pick (256 x 128 at d = 128 on the RTX 4090) needs more SRAM in the backward's dv kernel than a
    block gets: the rule's tiles were refused before they could be halved, though docs/backward.md says they are
    halved until every kernel fits. Now the larger side is halved until the SRAM fits, the forward with it."""
    r = gpusim.simulate("naive", seq=4096, backward=True, **shape)
    b, pick = r.backward_config, gpusim.best_blocks("naive", seq=4096, **shape)
    assert all(b.sram_bytes(k) <= b.gpu.sram_bytes_per_block for k in b.kernels)
    assert (r.config.block_q, r.config.block_kv) == (b.block_q, b.block_kv) != pick
    with pytest.raises(ValueError, match=f"^block_q={pick[0]}, block_kv={pick[1]}, .* of SRAM in the backward's") as err:
        gpusim.simulate("naive", seq=4096, backward=True, backward_blocks=pick, **shape)  # given: taken as it is
    if shape["head_dim"] == 128:  # docs/backward.md's example
        need = int(str(err.value).split(" need ")[1].split(" B")[0].replace(",", ""))
        text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "backward.md").read_text().split())
        assert (f"({pick[0]} × {pick[1]} at d = 128 on the RTX 4090: {need:,} of {b.gpu.sram_bytes_per_block:,} B)"
                in text)


def test_naives_forward_keeps_its_tiles_where_the_backwards_are_given_or_they_are():
    """The shared tile is halved only where both are the rule's: given backward tiles leave the forward's pick, and
    given forward tiles that do not fit the backward are refused, not halved under it."""
    shape = dict(seq=4096, head_dim=128, gpu="RTX-4090", causal=True)
    picked = gpusim.best_blocks("naive", **shape)
    r = gpusim.simulate("naive", backward=True, backward_blocks=(32, 32), **shape)
    assert (r.config.block_q, r.config.block_kv) == picked and r.backward_config.block_q == 32
    with pytest.raises(ValueError, match="registers per thread"):
        gpusim.simulate("naive", backward=True, block_q=picked[0], block_kv=picked[1], **shape)


def test_backward_blocks_as_tiles_set_every_backward_kernels_knobs():
    """backward_blocks=gpusim.Tiles(...) gives the blocks and the num_warps every backward kernel takes (a pair
    leaves the pass's launch rule, 4 warps at Br = 64): the knob moves the registers and the time."""
    from gpusim.occupancy import resources
    shape = dict(seq=4096, head_dim=128, gpu="H200-measured", backward=True)
    ruled = gpusim.simulate("flash2", backward_blocks=(64, 64), **shape)
    given = gpusim.simulate("flash2", backward_blocks=gpusim.Tiles(64, 64, num_warps=8), **shape)
    warps = [{resources(r.backward_config, k).num_warps for k in r.backward_config.kernels} for r in (ruled, given)]
    assert warps == [{4}, {8}] and (given.backward_config.block_q, given.backward_config.block_kv) == (64, 64)
    assert given.kernels[-1].predicted_time_s != ruled.kernels[-1].predicted_time_s
    with pytest.raises(ValueError, match="need 616 registers per thread"):  # 64 x 32 at d = 256 on 2 warps
        gpusim.simulate("flash2", backward_blocks=gpusim.Tiles(64, 32, num_warps=2), **shape | dict(head_dim=256))
    with pytest.raises(ValueError, match="warp_specialize=True: the flash2_backward kernel takes num_warps, num_st"):
        gpusim.simulate("flash2", backward_blocks=gpusim.Tiles(64, 32, warp_specialize=True), **shape)
    # naive's kernels run one tile for both passes, knobs too (naive_attention_trainable gives its backward the
    # forward's tiles=): the forward's Tiles reach the backward's kernels (it priced them at the rule's 4 warps)
    naive = gpusim.simulate("naive", tiles=gpusim.Tiles(32, 32, num_warps=8), **shape).backward_config
    assert {resources(naive, k).num_warps for k in naive.kernels} == {8} and (naive.block_q, naive.block_kv) == (32, 32)


def test_a_backward_that_no_halving_fits_is_refused_in_one_line():
    tiny = dataclasses.replace(gpusim.get_gpu("A100-40GB"), name="tiny", max_registers_per_thread=72)
    with pytest.raises(ValueError, match=r"^the backward's tiles, the rule's 128 x 32 halved to 16 x 16, need 76 "
                                         r"registers per thread \(estimated .*\) in its dkdv kernel at head_dim=128 "
                                         r"\(fp16\); tiny allows 72$"):
        gpusim.simulate("flash2", seq=1024, head_dim=128, gpu=tiny, backward=True)


def test_the_backwards_default_tiles_stay_the_rules_where_they_fit():
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, backward=True, gpu="H200")
    assert (r.backward_config.block_q, r.backward_config.block_kv) == backward.default_blocks("flash2", "H200", 64,
                                                                                              "fp16")

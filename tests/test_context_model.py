"""gpusim's context-parallel pass (gpusim/context.py, links.py, context_scaling.py): link bytes against formulas
derived by hand, the single-GPU model recovered at P = 1, work conserved and balanced, the overlap condition,
the Ring Attention paper's table, and every refusal in one line."""
import math

import numpy as np
import pytest

import gpusim
from gpusim import context, context_scaling, links

SHAPE = dict(head_dim=64, heads=8, kv_heads=2, batch=2, dtype="bf16", gpu="H200")
E = 2  # bf16


def run(strategy, gpus, seq, causal=False, **extra):
    return gpusim.simulate("flash2", seq=seq, causal=causal, gpus=gpus, strategy=strategy, **(SHAPE | extra))


def ring_bytes(P, N, kv_heads, d, batch):
    return (P - 1) * 2 * (N // P) * kv_heads * d * E * batch  # P-1 steps, one K and one V shard each


def ulysses_bytes(P, N, heads, kv_heads, d, batch):
    # all-to-all of Q, K, V before, O after: each GPU keeps 1/P of each (N/P)-token shard, sends the rest
    return (P - 1) * (N // P) * (2 * heads + 2 * kv_heads) // P * d * E * batch


@pytest.mark.parametrize("P", [2, 4, 8])
@pytest.mark.parametrize("causal", [False, True])
def test_link_bytes_equal_the_formulas(P, causal):
    N, d, H, Hkv, B = 8192, SHAPE["head_dim"], SHAPE["heads"], SHAPE["kv_heads"], SHAPE["batch"]
    assert run("ring", P, N, causal).link_send_bytes == ring_bytes(P, N, Hkv, d, B)
    assert run("zigzag", P, N, causal).link_send_bytes == ring_bytes(P, N, Hkv, d, B)
    assert run("allgather", P, N, causal).link_send_bytes == ring_bytes(P, N, Hkv, d, B)  # (P-1) shards forwarded
    if P <= Hkv:
        assert run("ulysses", P, N, causal).link_send_bytes == ulysses_bytes(P, N, H, Hkv, d, B)
    r = run("ring", P, N, causal)
    assert [s.send_bytes for s in r.steps if s.gpu == 0] == [ring_bytes(2, 2 * N // P, Hkv, d, B)] * (P - 1) + [0]


@pytest.mark.parametrize("P", [2, 4, 8])
def test_an_all_to_all_sends_its_p_minus_1_over_p_at_the_measured_bus_rate(P):
    """The measured link's all-to-all was 660 GB/s of a rank's buffer over the time on two ranks, half of it sent:
    330 GB/s leaving a rank. Priced as 660 GB/s of the whole buffer at any P, Ulysses at P = 8 came out faster on
    the measured link (359 GB/s send/recv) than on the nominal one (450)."""
    buffer, measured, nominal = 1 << 30, links.get_link("nvlink4-h200-measured"), links.get_link("nvlink4")
    lat = measured.step_latency_s
    assert measured.alltoall_time_s(buffer, P) == pytest.approx(buffer * (P - 1) / P / 330e9 + lat)
    assert measured.alltoall_time_s(buffer, 2) == pytest.approx(buffer / 660e9 + lat)  # as measured
    assert measured.alltoall_time_s(buffer, P) > nominal.alltoall_time_s(buffer, P)
    fast, slow = (gpusim.simulate("flash2", seq=131072, head_dim=128, heads=32, kv_heads=8, causal=True, dtype="bf16",
                                  gpu="H200", gpus=P, strategy="ulysses", link=name).predicted_time_s
                  for name in ("nvlink4", "nvlink4-h200-measured"))
    assert slow > fast


def test_usp_bytes_are_ulysses_in_a_node_and_a_ring_over_nodes():
    N, P, u, d, H, Hkv = 1 << 16, 32, 8, 128, 32, 8
    r = gpusim.simulate("flash2", seq=N, head_dim=d, heads=H, kv_heads=Hkv, dtype="bf16", gpu="H200", causal=True,
                        gpus=P, strategy="usp", link="nodes-nvlink4-ib-ndr")
    ring = (P // u - 1) * 2 * (N // (P // u)) * (Hkv // u) * d * E  # over the nodes, on H/u heads
    assert r.link_send_bytes == (u - 1) * (N // P) * (2 * H + 2 * Hkv) // u * d * E + ring


def test_one_gpu_ring_is_the_single_gpu_model():
    one = gpusim.simulate("flash2", seq=4096, causal=True, **SHAPE)
    for strategy in ("ring", "zigzag", "allgather", "ulysses"):
        r = run(strategy, 1, 4096, causal=True)
        assert r.link_send_bytes == 0 and r.merge_bytes == 0
        assert r.by_tensor == one.by_tensor and r.flops_matmul == one.flops_matmul
        assert r.predicted_time_s == pytest.approx(one.predicted_time_s, rel=1e-12)
        assert r.hbm_peak_bytes == one.hbm_peak_bytes


@pytest.mark.parametrize("strategy", ["ring", "zigzag", "allgather", "ulysses"])
def test_the_gpus_together_do_the_single_gpus_matmuls(strategy):
    """Without a mask, and with one where the chunks are whole tiles (N/2P a multiple of 64 x 64 tiles)."""
    tiles = dict(block_q=64, block_kv=64)
    for causal in (False, True):
        one = gpusim.simulate("flash2", seq=4096, causal=causal, **SHAPE, **tiles)
        r = run(strategy, 2, 4096, causal, **tiles)
        if causal and strategy == "allgather":
            continue  # its causal split puts a tile boundary at every shard: more diagonal tiles
        assert sum(r.gpu_flops_matmul) == one.flops_matmul, (strategy, causal)


def test_zigzag_balances_the_causal_work_and_plain_ring_does_not():
    for P in (2, 4, 8):
        zig, ring = (run(s, P, 16384, causal=True, block_q=64, block_kv=64).gpu_flops_matmul
                     for s in ("zigzag", "ring"))
        assert max(zig) / min(zig) < 1.02
        assert max(ring) / min(ring) > P  # GPU P-1 sees every shard; GPU 0 only its own diagonal
        ring_time, zig_time = (run(s, P, 16384, causal=True).predicted_time_s for s in ("ring", "zigzag"))
        assert zig_time < ring_time


def test_steps_record_the_timeline():
    r = run("zigzag", 4, 8192, causal=True, link="nvlink4-h200-measured")
    steps = r.steps
    assert len(steps) == 4 * 4 and {s.phase for s in steps} == {"attention"}
    for s in steps:
        assert s.time_s == max(max(t.compute_s for t in steps if t.step == s.step), s.transfer_s)
        assert s.idle_s >= 0
    assert sum(s.time_s for s in steps if s.gpu == 0) == pytest.approx(r.predicted_time_s)
    assert steps[-1].start_s + steps[-1].time_s == pytest.approx(r.predicted_time_s)


def test_the_result_keeps_every_single_gpu_field():
    r = run("ring", 4, 8192, causal=True)
    d = r.to_dict()
    for key in ("hbm_read_bytes", "hbm_write_bytes", "by_tensor", "kernels", "dram_read_bytes", "flops_matmul",
                "hbm_peak_bytes", "fits_in_hbm", "predicted_time_s", "link_send_bytes", "gpus", "strategy"):
        assert key in d
    assert r.hbm_read_bytes > 0 and r.fits_in_hbm and r.config.seq == 8192
    assert {"O_partial", "LSE_partial"} <= set(r.by_tensor)
    assert r.merge_bytes == sum(v["read_bytes"] + v["write_bytes"] for k, v in r.by_tensor.items()
                                if k in ("O_partial", "LSE_partial"))


def test_the_transfer_hides_from_the_closed_form_shard_length():
    """A link chosen so that c0 tokens per GPU is the closed form's crossover at the model's own FLOP rate
    (c = itemsize F H_kv / (2 B H)); the model's margin is then 1 at c0 and grows linearly with c."""
    P, c0, d, H, Hkv = 4, 2048, 128, 16, 4
    shape = dict(head_dim=d, heads=H, kv_heads=Hkv, dtype="bf16", gpu="H200", block_q=128, block_kv=64)
    step = gpusim.simulate("flash2", seq=c0, **shape)  # one ring step: c0 queries on c0 keys
    rate = step.flops_matmul / step.predicted_time_s
    bandwidth = E * rate * Hkv / (2 * c0 * H)
    assert context_scaling.minimal_shard_tokens(rate, bandwidth, E, H, Hkv) == pytest.approx(c0)
    link = links.Link("test", bandwidth, step_latency_s=0.0)
    margins = {c: gpusim.simulate("flash2", seq=P * c, gpus=P, strategy="ring", link=link, **shape).overlap_margin
               for c in (c0 // 2, c0, 2 * c0)}
    assert margins[c0] == pytest.approx(1.0, rel=0.05)  # the step's merge is the difference
    assert margins[c0 // 2] < 1 < margins[2 * c0]


def test_ring_attention_table_within_a_quarter():
    # Liu, Zaharia, Abbeel, "Ring Attention with Blockwise Transformers for Near-Infinite Context" (2023),
    # Table 2, "Minimal Blocksize (x1e3)": A100 NVLink 1.0, A100 InfiniBand 24.5, TPU v3 1.1, v4 1.0, v5e 1.1
    paper = {"A100 NVLink": 1.0e3, "A100 InfiniBand": 24.5e3, "TPU v3": 1.1e3, "TPU v4": 1.0e3, "TPU v5e": 1.1e3}
    ours = {device: tokens for device, tokens, _ in context_scaling.ring_paper_table()}
    assert set(ours) == set(paper)
    for device, tokens in ours.items():
        assert tokens == pytest.approx(paper[device], rel=0.25), device


def test_footprint_is_linear_and_the_longest_context_fits():
    for strategy in ("ring", "zigzag", "ulysses", "allgather"):
        a, b = (context_scaling.peak_bytes(strategy, 8, n, head_dim=128, heads=32, kv_heads=8, dtype="bf16",
                                           gpu="H200", causal=True) for n in (1 << 16, 1 << 17))
        assert b == 2 * a, strategy
        longest = context_scaling.max_context(strategy, 8, head_dim=128, heads=32, kv_heads=8, dtype="bf16")
        r = gpusim.simulate("flash2", seq=longest, head_dim=128, heads=32, kv_heads=8, dtype="bf16", gpu="H200",
                            causal=True, gpus=8, strategy=strategy)
        assert r.fits_in_hbm


def test_max_context_refuses_where_not_even_2p_tokens_fit():
    """It returned 0: 2P = 4 tokens of 2**24 heads of d 256 need about 172 GB per GPU, more than an H200's HBM."""
    shape = dict(heads=1 << 24, kv_heads=1 << 24, head_dim=256)
    need = context_scaling.peak_bytes("ring", 2, 4 * 64, gpu="H200", causal=True, **shape) / 64
    hbm = gpusim.get_gpu("H200").hbm_bytes
    assert need > hbm
    with pytest.raises(ValueError) as err:
        context_scaling.max_context("ring", 2, **shape)
    assert str(err.value) == (f"no context fits each GPU's HBM: even the shortest, 4 tokens (2 x gpus=2), needs "
                              f"{math.ceil(need):,} B per GPU, more than H200's {hbm:,} B")


def test_predictions_are_labelled_and_cover_8_64_512_gpus():
    rows = context_scaling.predictions(contexts=(1 << 17, 1 << 22))
    assert {r.gpus for r in rows} == {8, 64, 512}
    assert "Predictions of the model, not measurements" in context_scaling.ASSUMPTIONS
    assert all(r.time_s > 0 and r.link_send_bytes > 0 for r in rows)


@pytest.mark.parametrize("kwargs, says", [
    (dict(strategy="ring", gpus=3, seq=1000), "seq=1000 is not divisible by 3"),
    (dict(strategy="zigzag", gpus=4, seq=4100), "seq=4100 is not divisible by 8"),
    (dict(strategy="ulysses", gpus=4, seq=4096, heads=6, kv_heads=6), "must both be divisible by 4"),
    (dict(strategy="ulysses", gpus=4, seq=4096, heads=8, kv_heads=2), "kv_heads=2 must both be divisible by 4"),
    (dict(strategy="spiral", gpus=2, seq=4096), "unknown strategy='spiral'"),
    (dict(strategy="ring", gpus=2, seq=4096, link="nvlink9"), "unknown link='nvlink9'"),
    (dict(gpus=2, seq=4096, backward=True), "backward=True does not apply to gpus=2"),
    (dict(strategy="usp", gpus=16, seq=4096, link="nvlink4"),
     "strategy='usp' needs a topology: give link= (one of node8-nvlink4, nodes-nvlink4-ib-ndr), not the link 'nvlink4'"),
    (dict(gpus=2, seq=4096, gpu="T4"), "gpu='T4' has no NVLink preset: give link= (one of nvlink4, "
                                       "nvlink4-h200-measured, nvlink4-h200-peer-copy, nvlink3, pcie5, ib-ndr, "
                                       "ib-a100-ring-paper, tpu-v3-ici, tpu-v4-ici, tpu-v5e-ici, or a topology: "
                                       "node8-nvlink4, nodes-nvlink4-ib-ndr)"),
    (dict(strategy="ring", gpus=16, seq=4096, link="node8-nvlink4"), "one node of 8 GPUs"),
])
def test_bad_input_is_one_line(kwargs, says):
    shape = dict(head_dim=64, heads=8, kv_heads=8) | kwargs
    with pytest.raises(ValueError, match=None) as err:
        gpusim.simulate("flash2", **shape)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("extra, says", [
    (dict(grouped=False), "grouped=False does not apply to gpus=2: context parallelism is the forward only"),  # taken
    (dict(grouped=True), "grouped=True does not apply to gpus=2: context parallelism is the forward only"),
    (dict(seq_kv=2048), "seq_kv=2048 does not apply to gpus=2: the context model takes seq_kv equal to seq=4096 only"),
    (dict(causal=True, causal_align="bottom_right"), "causal_align='bottom_right' does not apply to gpus=2: the "
                                                     "context model takes the top-left causal mask only"),
    (dict(trace=True), "trace=True does not apply to gpus=2: context parallelism is the forward only"),
])
def test_a_single_gpu_option_is_refused_with_its_reason(extra, says):
    """What one GPU refuses (grouped=False for a forward) is refused over several too; seq_kv and causal_align
    say what the context model takes (it was "the forward only" for them)."""
    with pytest.raises(ValueError) as err:
        run("ring", 2, 4096, **extra)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="grouped=False does not apply to algo='flash2'"):
        gpusim.simulate("flash2", seq=4096, grouped=False, **SHAPE)


def test_what_the_context_model_is_is_taken_as_given():
    """seq_kv equal to seq, the top-left causal mask (with or without causal), and simulate's own defaults given
    (backward=False, trace=False) are the pass the model counts: the same Result as leaving them out."""
    for causal in (False, True):
        plain = run("zigzag", 2, 4096, causal).to_dict()
        for extra in (dict(seq_kv=4096), dict(causal_align="top_left"), dict(backward=False, trace=False)):
            assert run("zigzag", 2, 4096, causal, **extra).to_dict() == plain, extra


@pytest.mark.parametrize("strategy", ["ring", "zigzag", "allgather", "ulysses"])
def test_one_gpu_needs_no_link(strategy):
    """A GPU without an NVLink preset (the T4) over gpus=1 sends nothing: the single-GPU model, link None."""
    one = gpusim.simulate("flash2", seq=4096, head_dim=64, causal=True, gpu="T4")
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, causal=True, gpu="T4", gpus=1, strategy=strategy)
    assert r.link is None and r.to_dict()["link"] is None and r.link_send_bytes == 0
    assert r.predicted_time_s == pytest.approx(one.predicted_time_s, rel=1e-12)
    with pytest.raises(ValueError, match="gpu='T4' has no NVLink preset"):
        gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="T4", gpus=2, strategy=strategy)
    with pytest.raises(ValueError, match="strategy='usp' needs a topology"):  # its degrees are a topology's
        gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="T4", gpus=1, strategy="usp")


NVLINK4 = links.LINKS["nvlink4"]


@pytest.mark.parametrize("make, says", [
    (lambda: links.Link("x", 0.0), "Link 'x': send_bytes_per_s=0.0 must be a positive number"),  # ZeroDivisionError
    (lambda: links.Link("x", float("nan")), "Link 'x': send_bytes_per_s=nan must be a positive number"),  # NaN times
    (lambda: links.Link("x", float("inf")), "Link 'x': send_bytes_per_s=inf must be a positive number"),
    (lambda: links.Link("x", -5.0), "Link 'x': send_bytes_per_s=-5.0 must be a positive number"),  # negative margins
    (lambda: links.Link("x", 1e9, step_latency_s=-1), "Link 'x': step_latency_s=-1 must be a non-negative number"),
    (lambda: links.Link("x", 1e9, step_latency_s=float("nan")),
     "Link 'x': step_latency_s=nan must be a non-negative number"),
    (lambda: links.Link("x", 1e9, alltoall_bytes_per_s=0),
     "Link 'x': alltoall_bytes_per_s=0 must be a positive number"),
    (lambda: links.Topology("t", 0, NVLINK4), "Topology 't': gpus_per_node=0 must be a positive integer"),  # % by 0
    (lambda: links.Topology("t", 2.5, NVLINK4), "Topology 't': gpus_per_node=2.5 must be a positive integer"),
    (lambda: links.Topology("t", 8, "nvlink4"), "Topology 't': intra='nvlink4' must be a gpusim.links.Link"),
    (lambda: links.Topology("t", 8, NVLINK4, 5), "Topology 't': inter=5 must be a gpusim.links.Link"),
])
def test_a_hand_built_link_or_topology_is_checked_when_made(make, says):
    """Rates positive and finite, a latency zero or more and finite, a node a positive number of GPUs: was a
    ZeroDivisionError, NaN times or negative margins from simulate(..., link=...)."""
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value) == says


def test_a_hand_built_link_without_latency_or_all_to_all_rate_is_taken():
    link = links.Link("x", 1e9, step_latency_s=0.0)
    assert link.send_time_s(1e9) == 1.0 and link.alltoall_time_s(2e9, 2) == 1.0
    assert links.Topology("t", 4, link).link_for(4) is link


@pytest.mark.parametrize("algo", ["naive", "flash1", "split_kv"])
def test_other_algorithms_refuse_more_gpus(algo):
    with pytest.raises(ValueError, match="context parallelism runs the forward of flash2 or hopper"):
        gpusim.simulate(algo, seq=1024, head_dim=64, gpus=2)


def test_hopper_is_a_local_kernel_too():
    r = gpusim.simulate("hopper", seq=16384, head_dim=128, heads=16, dtype="bf16", gpu="H200", gpus=2,
                        strategy="zigzag", causal=True)
    assert r.kernels[0].name.endswith("hopper") and r.link_send_bytes == ring_bytes(2, 16384, 16, 128, 1)
    assert isinstance(r, context.ContextResult)


def test_peak_hbm_counts_the_kv_shards_each_strategy_holds_beside_its_local_call():
    """Beside the largest local call's own footprint (gpusim's single-GPU peak for that call): a ring GPU holds its
    own K/V shard (the caller's, while the others pass) and the one being received, plus the fp32 partial O and LSE;
    an all-gather GPU the P shards gathered and its own input beside their concatenation, which the call reads. The
    ring counted one shard fewer, as the project's _ring holds three from step 1 on; all-gather none."""
    P, N, H, Hkv, d, B = 8, 16384, 32, 8, 128, 1
    c = N // P
    shard = 2 * c * Hkv * d * E * B  # one K and one V shard
    partial = B * H * c * (d + 1) * 4  # fp32 O and LSE
    kw = dict(head_dim=d, heads=H, kv_heads=Hkv, batch=B, dtype="bf16", gpu="H200", causal=True, link="nvlink4")
    local = dict(head_dim=d, heads=H, kv_heads=Hkv, batch=B, dtype="bf16", gpu="H200")
    ring = gpusim.simulate("flash2", seq=N, gpus=P, strategy="ring", **kw)
    step = gpusim.simulate("flash2", seq=c, causal=True, **local)  # its own shard, the diagonal: the largest call
    assert ring.hbm_peak_bytes == step.hbm_peak_bytes + 2 * shard + partial
    gather = gpusim.simulate("flash2", seq=N, gpus=P, strategy="allgather", **kw)
    last = gpusim.simulate("flash2", seq=c, seq_kv=(P - 1) * c, **local)  # the last GPU's rows on the 7 shards before
    assert gather.hbm_peak_bytes == last.hbm_peak_bytes + (P + 1) * shard + partial


# One merge by hand, from its definition (docs/context.md; gpusim/context.py's docstrings): n = B * H * rows query
# rows of the shard; it reads the fp32 partial O so far (n d 4) and the step's O in the dtype (n d e), the fp32
# partial LSE and the step's fp32 LSE (n 4 each), and writes the merged fp32 O (n d 4) and LSE (n 4). by_tensor
# files the step's O and LSE under O_partial and LSE_partial, beside the running pair.
def merge_reads(n, d, e):
    """(O_partial, LSE_partial) read bytes of one merge of n rows."""
    return n * d * 4 + n * d * e, n * 4 + n * 4


def merge_total(n, d, e):
    o_read, lse_read = merge_reads(n, d, e)
    return o_read + n * d * 4 + lse_read + n * 4  # and the merged fp32 O and LSE written


def test_ring_merge_bytes_by_hand():
    """Ring, P = 4, N = 8192: shards of c = 2048 rows, B = 2, H = 8, d = 64, bf16 (e = 2). Without a mask every
    GPU merges all c rows in steps 1..3 (step 0 is its own shard: nothing to merge with). Causal, GPU r sees the
    shard of GPU (r - s) mod 4 in step s, earlier than its own (so merged) exactly when 1 <= s <= r: GPU 0 never
    merges, GPU 3 (the busiest) merges in steps 1, 2, 3. Fails where the step's O is read at fp32's 4 bytes only,
    or an LSE is read once."""
    P, N, B, H, d, e = 4, 8192, SHAPE["batch"], SHAPE["heads"], SHAPE["head_dim"], E
    c = N // P
    n = B * H * c  # 2 * 8 * 2048 = 32,768 rows a merge
    m = merge_total(n, d, e)
    plain = run("ring", P, N, causal=False)
    assert plain.merge_bytes_by_step.tolist() == [[0] * P] + [[m] * P for _ in range(1, P)]
    assert plain.merge_bytes == (P - 1) * m
    assert plain.by_tensor["O_partial"]["read_bytes"] == (P - 1) * merge_reads(n, d, e)[0]
    assert plain.by_tensor["LSE_partial"]["read_bytes"] == (P - 1) * merge_reads(n, d, e)[1]
    causal = run("ring", P, N, causal=True)
    assert causal.merge_bytes_by_step.tolist() == [[m if 1 <= s <= r else 0 for r in range(P)] for s in range(P)]
    assert causal.gpu_rank == P - 1 and causal.merge_bytes == (P - 1) * m
    assert causal.by_tensor["O_partial"] == {"read_bytes": (P - 1) * merge_reads(n, d, e)[0],
                                             "write_bytes": (P - 1) * n * d * 4}
    assert causal.by_tensor["LSE_partial"] == {"read_bytes": (P - 1) * merge_reads(n, d, e)[1],
                                               "write_bytes": (P - 1) * n * 4}


def test_zigzag_merge_bytes_by_hand():
    """Zigzag, P = 4, N = 8192, causal: GPU r holds chunks r and 7 - r of h = 1024 tokens (its c = 2048 rows). In step
    s it holds GPU (r - s) mod 4's K/V: an earlier GPU's (1 <= s <= r) is seen by both its Q chunks, c rows merged;
    a later one's (s > r) by its late chunk only, h rows merged. Each merge as in the ring's."""
    P, N, B, H, d, e = 4, 8192, SHAPE["batch"], SHAPE["heads"], SHAPE["head_dim"], E
    c, h = N // P, N // (2 * P)
    whole, half = merge_total(B * H * c, d, e), merge_total(B * H * h, d, e)
    r = run("zigzag", P, N, causal=True)
    expected = [[0 if s == 0 else whole if s <= gpu else half for gpu in range(P)] for s in range(P)]
    assert r.merge_bytes_by_step.tolist() == expected
    g = r.gpu_rank  # whichever GPU is reported, its merges are its column: g whole ones and 3 - g half ones
    assert r.merge_bytes == g * whole + (P - 1 - g) * half
    o_read = g * merge_reads(B * H * c, d, e)[0] + (P - 1 - g) * merge_reads(B * H * h, d, e)[0]
    lse_read = g * merge_reads(B * H * c, d, e)[1] + (P - 1 - g) * merge_reads(B * H * h, d, e)[1]
    assert (r.by_tensor["O_partial"]["read_bytes"], r.by_tensor["LSE_partial"]["read_bytes"]) == (o_read, lse_read)


@pytest.mark.parametrize("kind", [np.int32, np.int64, np.uint32])
def test_numpy_integer_arguments_give_the_ints_result(kind):
    """head_dim=np.int32(128) at batch 4 returned a negative peak and merge bytes (int32 products wrapped), and at
    batch 8 an OverflowError: the context pass used the argument as given, not as the int its check made of it."""
    shape = dict(seq=131072, head_dim=128, heads=32, kv_heads=8, batch=8, gpus=8, strategy="ring", gpu="H200")
    plain = gpusim.simulate("flash2", **shape)
    numpy = gpusim.simulate("flash2", **{k: kind(v) if isinstance(v, int) else v for k, v in shape.items()})
    assert numpy.to_dict() == plain.to_dict() and type(numpy.merge_bytes) is int and numpy.merge_bytes > 0
